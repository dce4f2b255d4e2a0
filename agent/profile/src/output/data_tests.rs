use std::sync::Arc;

use super::*;
use crate::model::{Frame, FrameKind, MethodInfo};

fn target(space: Space, class: Option<&str>, field: Option<&str>) -> Option<Box<DataTarget>> {
    Some(Box::new(DataTarget {
        space,
        class: class.map(Into::into),
        field: field.map(Into::into),
        offset: 16,
        index: None,
        source: None,
        latency: 0,
    }))
}

fn recording() -> Recording {
    let mut rec = Recording { counters: vec!["cycles".into()], ..Default::default() };
    let hot = rec.methods.intern(MethodInfo::java("demo.Chase", "run", "()V"));
    let other = rec.methods.intern(MethodInfo::java("demo.Other", "touch", "()V"));
    let frame = |m| Frame { method: m, bci: 0, line: -1, kind: FrameKind::JitCompiled };
    let stack = |m| -> Arc<[Frame]> { vec![frame(m)].into() };
    let mut add = |m, data, cycles| {
        let mut s = Sample::of_stack(stack(m));
        s.data = data;
        s.counters = vec![cycles];
        rec.samples.push(s);
    };
    for _ in 0..6 {
        add(hot, target(Space::Eden, Some("demo.Node"), Some("demo.Node.next")), 10);
    }
    for _ in 0..2 {
        add(other, target(Space::Old, Some("demo.Node"), Some("demo.Node.value")), 30);
    }
    add(hot, target(Space::Old, Some("int[]"), Some("[]")), 5);
    add(other, target(Space::Eden, None, None), 1);
    add(other, target(Space::Stack, None, None), 1);
    add(hot, None, 100);
    rec
}

#[test]
fn samples_group_by_class_field_and_space() {
    let rec = recording();
    let t = DataTallies::of(&rec);
    assert_eq!((t.samples, t.heap, t.identified), (11, 10, 9));
    let keys = |by| t.rows(by).iter().map(|r| (r.key.as_str(), r.samples)).collect::<Vec<_>>();
    assert_eq!(keys(DataBy::Class), [("demo.Node", 8), ("(not identified)", 1), ("(stack)", 1), ("int[]", 1)]);
    assert_eq!(
        keys(DataBy::Field),
        [("demo.Node.next", 6), ("demo.Node.value", 2), ("(not identified)", 1), ("(stack)", 1), ("int[] element", 1)]
    );
    assert_eq!(keys(DataBy::Space), [("eden", 7), ("old", 3), ("stack", 1)]);
    let node = &t.by_class[0];
    assert_eq!(node.counters, [120]);
    assert_eq!(node.methods, [(MethodIdx(0), 6), (MethodIdx(1), 2)], "the leaf methods, most samples first");
}

#[test]
fn the_table_shows_shares_spaces_and_methods() {
    let rec = recording();
    let t = DataTallies::of(&rec);
    let mut out = String::new();
    data_table(&mut out, &rec, &t, DataBy::Class, 2);
    assert!(
        out.contains(
            "top 2 classes by samples (11 samples with a data address; 9 of 10 in the heap identified, 90.00%)"
        ),
        "{out}"
    );
    let row = out.lines().find(|l| l.contains("demo.Node")).unwrap();
    assert!(row.contains("72.73%") && row.contains("eden 75.00%"), "{row}");
    assert!(row.contains("demo.Chase.run 75.00%, demo.Other.touch 25.00%"), "{row}");
    assert!(out.contains("(2 more)"), "{out}");
    let mut none = String::new();
    data_table(&mut none, &rec, &DataTallies::default(), DataBy::Class, 2);
    assert!(none.is_empty());
}

#[test]
fn the_flame_graph_by_class_has_the_class_as_root() {
    let rec = recording();
    let cct = cct_by(&rec, DataBy::Class);
    let mut roots: Vec<(String, u64)> =
        cct.root().children.iter().map(|&c| (cct.node(c).name.to_string(), cct.node(c).total_samples)).collect();
    roots.sort();
    assert_eq!(
        roots,
        [
            ("[class demo.Node]".to_string(), 8),
            ("[class int[]]".to_string(), 1),
            ("[no data address]".to_string(), 1),
            ("[not identified]".to_string(), 1),
            ("[stack]".to_string(), 1)
        ]
    );
    let node = cct.root().children.iter().find(|&&c| &*cct.node(c).name == "[class demo.Node]").unwrap();
    let under: Vec<&str> = cct.node(*node).children.iter().map(|&c| &*cct.node(c).name).collect();
    assert_eq!(under, ["demo.Chase.run", "demo.Other.touch"]);
}

/// A method run by the interpreter: its accesses outside the heap (bytecode, constant pool,
/// locals in its frame) are the interpreter's, in a row of their own; its heap accesses stay in
/// the object's row.
#[test]
fn the_interpreters_own_accesses_are_set_apart() {
    let mut rec = Recording::default();
    let m = rec.methods.intern(MethodInfo::java("demo.SyncCache", "price", "()V"));
    let stack: Arc<[Frame]> = vec![Frame { method: m, bci: 3, line: -1, kind: FrameKind::Interpreted }].into();
    let mut add = |space, class, component| {
        let mut s = Sample::of_stack(stack.clone());
        s.data = target(space, class, None);
        s.component = component;
        rec.samples.push(s);
    };
    for _ in 0..4 {
        add(Space::Old, Some("long[]"), VmComponent::Interpreter);
    }
    add(Space::Metadata, None, VmComponent::Interpreter);
    add(Space::Stack, None, VmComponent::Interpreter);
    add(Space::Native, None, VmComponent::Interpreter);
    add(Space::Stack, None, VmComponent::Java);
    let t = DataTallies::of(&rec);
    let keys = |by| t.rows(by).iter().map(|r| (r.key.as_str(), r.samples)).collect::<Vec<_>>();
    assert_eq!(keys(DataBy::Class), [("long[]", 4), (INTERPRETER_INTERNAL, 3), ("(stack)", 1)]);
    assert_eq!(keys(DataBy::Field)[1], (INTERPRETER_INTERNAL, 3));
    assert_eq!(keys(DataBy::Space), [("old", 4), ("stack", 2), ("metadata", 1), ("native", 1)], "spaces stay spaces");
    let mut out = String::new();
    data_table(&mut out, &rec, &t, DataBy::Class, 5);
    assert!(out.contains("(interpreter internal)") && out.contains("space: where the address lies"), "{out}");
}
