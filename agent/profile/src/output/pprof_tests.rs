use std::io::Read;

use super::*;
use crate::model::ThreadIdx;
use crate::model::{EventInfo, Frame, FrameKind, MethodInfo, Sample, ThreadInfo, VmComponent};

/// A field as read back: number and either a varint or the bytes of a length-delimited field.
#[derive(Debug, Clone)]
enum Val {
    Int(u64),
    Bytes(Vec<u8>),
}

fn varint(b: &[u8], pos: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Decodes one message into (field, value) pairs; only wire types 0 and 2 are expected.
fn fields(b: &[u8]) -> Vec<(u32, Val)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let tag = varint(b, &mut pos);
        let field = (tag >> 3) as u32;
        match tag & 7 {
            0 => out.push((field, Val::Int(varint(b, &mut pos)))),
            2 => {
                let n = varint(b, &mut pos) as usize;
                out.push((field, Val::Bytes(b[pos..pos + n].to_vec())));
                pos += n;
            }
            w => panic!("unexpected wire type {w}"),
        }
    }
    out
}

fn get(fs: &[(u32, Val)], f: u32) -> Vec<Val> {
    fs.iter().filter(|(n, _)| *n == f).map(|(_, v)| v.clone()).collect()
}

fn int(fs: &[(u32, Val)], f: u32) -> u64 {
    match get(fs, f).first() {
        Some(Val::Int(v)) => *v,
        None => 0,
        other => panic!("field {f}: {other:?}"),
    }
}

fn bytes(v: &Val) -> &[u8] {
    match v {
        Val::Bytes(b) => b,
        Val::Int(_) => panic!("expected bytes"),
    }
}

fn packed(fs: &[(u32, Val)], f: u32) -> Vec<u64> {
    let mut out = Vec::new();
    for v in get(fs, f) {
        let b = bytes(&v);
        let mut pos = 0;
        while pos < b.len() {
            out.push(varint(b, &mut pos));
        }
    }
    out
}

fn recording() -> Recording {
    let mut rec = Recording {
        event: EventInfo::default(),
        counters: vec!["task-clock".into(), "page-faults".into()],
        start_wall_ns: 1_700_000_000_000_000_000,
        start_ticks: 100,
        end_ticks: 2_000_000_100,
        ..Default::default()
    };
    let main = rec.methods.intern(MethodInfo {
        source_file: Some("Main.java".into()),
        ..MethodInfo::java("com.example.Main", "main", "([Ljava/lang/String;)V")
    });
    let hot = rec.methods.intern(MethodInfo {
        source_file: Some("Main.java".into()),
        ..MethodInfo::java("com.example.Main", "hot", "(I)J")
    });
    let gc = rec.methods.intern(MethodInfo::native("[GC]"));
    rec.add_thread(ThreadInfo { os_tid: 42, java_id: Some(1), name: "main".into(), is_java: true, is_virtual: false });
    let frame = |method, line| Frame { method, bci: 3, line, kind: FrameKind::JitCompiled };
    let sample = |stack: Vec<Frame>, counters: Vec<u64>, component| Sample {
        carrier: None,
        time: 0,
        thread: ThreadIdx(0),
        stack: stack.into(),
        truncated: false,
        weight: 10_000_000,
        repeat: 1,
        counters,
        data_addr: None,
        data: None,
        ip: 0,
        component,
        state: None,
    };
    for _ in 0..3 {
        rec.samples.push(sample(vec![frame(hot, 12), frame(main, 30)], vec![9_000_000, 1], VmComponent::Java));
    }
    rec.samples.push(sample(vec![frame(hot, 13), frame(main, 30)], vec![8_000_000, 0], VmComponent::Java));
    rec.samples.push(sample(vec![frame(gc, -1)], vec![7_000_000, 2], VmComponent::Gc));
    rec.add_drops("kernel ring overflow", 4);
    rec
}

#[test]
fn profile_decodes_with_types_values_and_lines() {
    let rec = recording();
    let gz = pprof_gz(&rec, &StackTable::from_recording(&rec));
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut raw).unwrap();
    let p = fields(&raw);
    let strings: Vec<String> = get(&p, 6).iter().map(|v| String::from_utf8(bytes(v).to_vec()).unwrap()).collect();
    assert_eq!(strings[0], "");
    let s = |i: u64| strings[i as usize].as_str();

    let types: Vec<(String, String)> = get(&p, 1)
        .iter()
        .map(|v| {
            let f = fields(bytes(v));
            (s(int(&f, 1)).to_string(), s(int(&f, 2)).to_string())
        })
        .collect();
    let want =
        [("samples", "count"), ("cpu-clock", "nanoseconds"), ("task-clock", "nanoseconds"), ("page-faults", "count")];
    assert_eq!(types, want.map(|(a, b)| (a.to_string(), b.to_string())));
    assert_eq!(s(int(&p, 14)), "cpu-clock", "default sample type");
    assert_eq!(int(&p, 12), 10_000_000, "period");
    assert_eq!(int(&p, 10), 2_000_000_000, "duration");

    // Functions and locations by id.
    let funcs: HashMap<u64, (String, String)> = get(&p, 5)
        .iter()
        .map(|v| {
            let f = fields(bytes(v));
            (int(&f, 1), (s(int(&f, 2)).to_string(), s(int(&f, 4)).to_string()))
        })
        .collect();
    let locs: HashMap<u64, (u64, u64)> = get(&p, 4)
        .iter()
        .map(|v| {
            let l = fields(bytes(v));
            assert_eq!(int(&l, 2), 1, "every location is in the JVM mapping");
            let line = fields(bytes(&get(&l, 4)[0]));
            (int(&l, 1), (int(&line, 1), int(&line, 2)))
        })
        .collect();
    assert_eq!(locs.len(), 4, "hot:12, hot:13, main:30, [GC]");

    let mut seen = Vec::new();
    for v in get(&p, 2) {
        let f = fields(bytes(&v));
        let frames: Vec<String> = packed(&f, 1)
            .iter()
            .map(|id| {
                let (fid, line) = locs[id];
                let (name, file) = &funcs[&fid];
                format!("{name}@{file}:{line}")
            })
            .collect();
        let values = packed(&f, 2);
        assert_eq!(values.len(), 4, "one value per sample type");
        let labels: Vec<String> = get(&f, 3)
            .iter()
            .map(|l| {
                let l = fields(bytes(l));
                let v = if int(&l, 2) != 0 { s(int(&l, 2)).to_string() } else { int(&l, 3).to_string() };
                format!("{}={v}", s(int(&l, 1)))
            })
            .collect();
        seen.push((frames.join(" < "), values, labels.join(",")));
    }
    seen.sort();
    assert_eq!(seen[0].0, "[GC]@:0");
    assert_eq!(seen[0].1, vec![1, 10_000_000, 7_000_000, 2]);
    assert_eq!(seen[0].2, "thread=main,tid=42,component=GC");
    assert_eq!(
        seen[1].0,
        "com.example.Main.hot@com/example/Main.java:12 < com.example.Main.main@com/example/Main.java:30"
    );
    assert_eq!(seen[1].1, vec![3, 30_000_000, 27_000_000, 3]);
    assert_eq!(seen[2].1, vec![1, 10_000_000, 8_000_000, 0]);

    let comments: Vec<&str> = packed(&p, 13).into_iter().map(s).collect();
    assert!(comments.contains(&"hpm: samples lost or degraded: kernel ring overflow: 4"), "{comments:?}");
}

#[test]
fn empty_profile_still_has_types_and_mapping() {
    let rec = Recording::default();
    let raw = encode_profile(&rec, &StackTable::default());
    let p = fields(&raw);
    assert_eq!(get(&p, 1).len(), 2, "samples and the event");
    assert_eq!(get(&p, 2).len(), 0);
    assert_eq!(get(&p, 3).len(), 1);
}

#[test]
fn varints_round_trip() {
    for v in [0u64, 1, 127, 128, 300, u64::MAX] {
        let mut pb = Pb::default();
        pb.varint(v);
        assert_eq!(varint(&pb.0, &mut 0), v);
    }
}

#[test]
fn data_targets_are_labels() {
    let mut rec = recording();
    rec.samples[0].data = Some(Box::new(crate::model::DataTarget {
        space: crate::model::Space::Eden,
        class: Some("demo.Node".into()),
        field: Some("demo.Node.next".into()),
        offset: 12,
        index: None,
        source: None,
        latency: 0,
    }));
    let raw = encode_profile(&rec, &StackTable::from_recording(&rec));
    let p = fields(&raw);
    let strings: Vec<String> = get(&p, 6).iter().map(|v| String::from_utf8(bytes(v).to_vec()).unwrap()).collect();
    let labelled: Vec<Vec<String>> = get(&p, 2)
        .iter()
        .map(|v| {
            get(&fields(bytes(v)), 3)
                .iter()
                .map(|l| {
                    let l = fields(bytes(l));
                    format!("{}={}", strings[int(&l, 1) as usize], strings[int(&l, 2) as usize])
                })
                .filter(|l| l.starts_with("data_"))
                .collect()
        })
        .filter(|l: &Vec<String>| !l.is_empty())
        .collect();
    assert_eq!(labelled, [["data_space=eden", "data_class=demo.Node", "data_field=demo.Node.next"]]);
}
