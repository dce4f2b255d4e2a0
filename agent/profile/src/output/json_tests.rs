use super::*;
use crate::model::ThreadIdx;
use crate::model::{EventInfo, Frame, FrameKind, MethodInfo, Sample, VmComponent};

fn rec_with(counters: &[&str]) -> Recording {
    let mut rec = Recording {
        event: EventInfo::default(),
        counters: counters.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    let main = rec
        .methods
        .intern(MethodInfo { source_file: Some("Main.java".into()), ..MethodInfo::java("p.Main", "main", "()V") });
    let f = rec
        .methods
        .intern(MethodInfo { source_file: Some("Main.java".into()), ..MethodInfo::java("p.Main", "f", "(I)I") });
    let frame = |method, line| Frame { method, bci: 0, line, kind: FrameKind::Interpreted };
    let mut push = |stack: Vec<Frame>, c: &[u64]| {
        rec.samples.push(Sample {
            carrier: None,
            time: 0,
            thread: ThreadIdx(0),
            stack: stack.into(),
            truncated: false,
            weight: 10,
            repeat: 1,
            counters: c.to_vec(),
            data_addr: None,
            data: None,
            ip: 0,
            component: VmComponent::Java,
            state: None,
        })
    };
    let c = |a: u64, b: u64| -> Vec<u64> { [a, b].into_iter().take(counters.len()).collect() };
    // f recursive under main: f(7) <- f(5) <- main(3), three times; main alone once.
    for _ in 0..3 {
        push(vec![frame(f, 7), frame(f, 5), frame(main, 3)], &c(300, 100));
    }
    push(vec![frame(main, 4)], &c(50, 0));
    rec
}

fn json_of(rec: &Recording) -> String {
    to_json(rec, &StackTable::from_recording(rec))
}

#[test]
fn methods_have_self_total_lines_and_paths() {
    let j = json_of(&rec_with(&[]));
    assert!(j.starts_with("{\"schema\":\"hpm-profile/1\""), "{j}");
    // f: self 3, total 3 (recursion counted once), lines 5 and 7.
    assert!(j.contains("{\"id\":0,\"name\":\"f\",\"class\":\"p.Main\",\"descriptor\":\"(I)I\",\"displayName\":\"p.Main.f\",\"kind\":\"java\",\"sourceFile\":\"Main.java\",\"sourcePath\":\"p/Main.java\",\"lines\":[{\"line\":5,\"selfSamples\":0,\"totalSamples\":3},{\"line\":7,\"selfSamples\":3,\"totalSamples\":3}],\"self\":{\"samples\":3,\"weight\":30,\"counters\":{},\"ratios\":{}},\"total\":{\"samples\":3,"), "{j}");
    assert!(j.contains("\"name\":\"main\""));
    assert!(j.contains("\"ratios\":[]"), "no ratio without counters");
}

#[test]
fn tree_is_flat_depth_first_with_parents() {
    let j = json_of(&rec_with(&[]));
    let tree = &j[j.find("\"tree\":[").unwrap()..];
    let ids: Vec<&str> = tree.match_indices("{\"id\":").map(|(i, _)| &tree[i..i + 40]).collect();
    assert_eq!(ids.len(), 4, "root, main, f, f: {tree}");
    assert!(ids[0].starts_with("{\"id\":0,\"parent\":null,\"method\":null"));
    assert!(ids[1].starts_with("{\"id\":1,\"parent\":0,\"method\":1"), "main is method 1: {}", ids[1]);
    assert!(ids[2].starts_with("{\"id\":2,\"parent\":1,\"method\":0"));
    assert!(ids[3].starts_with("{\"id\":3,\"parent\":2,\"method\":0"));
    assert!(tree.contains("\"parent\":null,\"method\":null,\"self\":{\"samples\":0,\"weight\":0,\"counters\":{},\"ratios\":{}},\"total\":{\"samples\":4"));
}

#[test]
fn cpi_only_with_cycles_and_instructions_and_null_on_zero() {
    let j = json_of(&rec_with(&["cycles", "instructions"]));
    assert!(j.contains("{\"name\":\"CPI\",\"numerator\":\"cycles\",\"denominator\":\"instructions\"}"));
    assert!(j.contains("\"counters\":{\"cycles\":900,\"instructions\":300},\"ratios\":{\"CPI\":3}"), "{j}");
    // main's self sample has instructions 0: the ratio is null, not invented.
    assert!(j.contains("\"counters\":{\"cycles\":50,\"instructions\":0},\"ratios\":{\"CPI\":null}"), "{j}");
    let j = json_of(&rec_with(&["task-clock"]));
    assert!(j.contains("\"counters\":[{\"name\":\"task-clock\",\"unit\":\"ns\"}]"));
    assert!(!j.contains("CPI"));
}

#[test]
fn names_are_escaped() {
    let mut rec = rec_with(&[]);
    rec.jvm = "a\"b\\c\n".into();
    let j = json_of(&rec);
    assert!(j.contains("\"jvm\":\"a\\\"b\\\\c\\n\""));
}

#[test]
fn data_targets_are_tabled_by_class_field_and_space() {
    let mut rec = rec_with(&[]);
    assert!(!json_of(&rec).contains("\"data\""), "no data section without data addresses");
    for (i, s) in rec.samples.iter_mut().enumerate() {
        s.data = Some(Box::new(crate::model::DataTarget {
            space: if i < 3 { crate::model::Space::Old } else { crate::model::Space::Stack },
            class: (i < 3).then(|| "demo.Node".into()),
            field: (i < 3).then(|| "demo.Node.next".into()),
            offset: 12,
            index: None,
            source: None,
            latency: 0,
        }));
    }
    let j = json_of(&rec);
    assert!(
        j.contains("\"data\":{\"samples\":4,\"byClass\":[\n{\"name\":\"demo.Node\",\"sums\":{\"samples\":3,"),
        "{j}"
    );
    assert!(j.contains("\"spaces\":{\"old\":3}}"), "{j}");
    assert!(j.contains("\"byField\":[\n{\"name\":\"demo.Node.next\""), "{j}");
    assert!(j.contains("{\"name\":\"(stack)\""), "{j}");
    assert!(j.contains("\"bySpace\":[\n{\"name\":\"old\""), "{j}");
}
