//! Inputs made to be hard on the readers and analyses: deep stacks, many distinct stacks, huge
//! counts and weights, chunks cut short. Used by the unit tests, the end-to-end tests and the
//! readers' benchmark (`cargo run --release -p hpm-tests --bin bench-readers`), so that all
//! three exercise the same shapes.
//!
//! Everything is deterministic: the same arguments give the same bytes. [`hostile`] holds the
//! `.jfr` files built by hand to be multiplied by a naive reader, [`hostile_otlp`] the OTLP
//! profiles files.

use std::fmt::Write;

use crate::jfr::{encode_chunk, ChunkTimes};
use crate::model::*;

pub mod hostile;
pub mod hostile_otlp;

/// How the frames of a generated stack are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// Every level its own method: `gen.C<level % 1000>.m<level>`.
    Distinct,
    /// One method calling itself at every level: `gen.Rec.f`.
    Recursive,
}

fn method_name(level: usize, names: Names) -> (String, String) {
    match names {
        Names::Distinct => (format!("gen.C{}", level % 1000), format!("m{level}")),
        Names::Recursive => ("gen.Rec".to_string(), "f".to_string()),
    }
}

/// A recording's metadata: one Java thread, the `cpu-clock` event, two counters.
pub fn recording() -> Recording {
    let mut rec = Recording {
        start_ticks: 1_000_000_000,
        end_ticks: 2_000_000_000,
        pid: 1,
        jvm: "generated".into(),
        counters: vec!["task-clock".into(), "page-faults".into()],
        ..Default::default()
    };
    rec.add_thread(ThreadInfo { os_tid: 1, java_id: Some(1), name: "main".into(), is_java: true, is_virtual: false });
    rec
}

/// A stack of `depth` frames, leaf first (the root is level 0), interned into `rec`; every
/// method gets the source file of its class.
pub fn stack(rec: &mut Recording, depth: usize, names: Names) -> Stack {
    let frames: Vec<Frame> = (0..depth)
        .rev()
        .map(|level| {
            let (class, name) = method_name(level, names);
            let file = format!("{}.java", class.rsplit('.').next().unwrap_or("X"));
            let m = MethodInfo { source_file: Some(file.into()), ..MethodInfo::java(&class, &name, "()V") };
            Frame {
                method: rec.methods.intern(m),
                bci: (level % 100) as i32,
                line: level as i32 + 1,
                kind: FrameKind::JitCompiled,
            }
        })
        .collect();
    frames.into()
}

/// `n` samples 1 ms apart from `t0`, all of them sharing `stack`.
pub fn samples_of(stack: &Stack, n: usize, t0: u64, weight: u64, counters: &[u64]) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            carrier: None,
            repeat: 1,
            time: t0 + i as u64 * 1_000_000,
            thread: ThreadIdx(0),
            stack: stack.clone(),
            truncated: false,
            weight,
            counters: counters.to_vec(),
            data_addr: None,
            data: None,
            ip: 0,
            component: VmComponent::Java,
            state: None,
        })
        .collect()
}

fn chunk_times(i: u64) -> ChunkTimes {
    let start = 1_000_000_000 + i * 1_000_000_000;
    ChunkTimes {
        start_ticks: start,
        end_ticks: start + 1_000_000_000,
        start_wall_ns: 1_700_000_000_000_000_000 + start,
    }
}

/// A `.jfr` file of one chunk: `samples` samples that all have one stack of `depth` frames.
/// The stack is stored once, so the file is small: about 6 bytes a frame and 30 a sample.
pub fn deep_jfr(depth: usize, samples: usize, names: Names) -> Vec<u8> {
    let mut rec = recording();
    let s = stack(&mut rec, depth, names);
    encode_chunk(&rec, &samples_of(&s, samples, 1_000_000_000, 1_000_000, &[1_000_000, 1]), chunk_times(0))
}

/// A `.jfr` file of one chunk with `stacks` distinct stacks of `depth` frames each, every one
/// sampled once: a common root path, then a different leaf method per stack.
pub fn many_stacks_jfr(stacks: usize, depth: usize) -> Vec<u8> {
    let mut rec = recording();
    let base = stack(&mut rec, depth.saturating_sub(1), Names::Distinct);
    let mut samples = Vec::with_capacity(stacks);
    for i in 0..stacks {
        let leaf = rec.methods.intern(MethodInfo::java("gen.Leaf", &format!("l{i}"), "()V"));
        let mut frames = vec![Frame { method: leaf, bci: 0, line: 1, kind: FrameKind::JitCompiled }];
        frames.extend_from_slice(&base);
        samples.extend(samples_of(&frames.into(), 1, 1_000_000_000 + i as u64, 1_000_000, &[1_000_000, 0]));
    }
    encode_chunk(&rec, &samples, chunk_times(0))
}

/// A `.jfr` file whose sample weights add up to more than 2^64: two samples of weight
/// `u64::MAX / 2 + 1`.
pub fn huge_weights_jfr() -> Vec<u8> {
    let mut rec = recording();
    let s = stack(&mut rec, 3, Names::Distinct);
    encode_chunk(&rec, &samples_of(&s, 2, 1_000_000_000, u64::MAX / 2 + 1, &[1, 1]), chunk_times(0))
}

/// A `.jfr` file of `chunks` complete chunks of 10 samples each, and one more chunk of which only
/// the first `keep` bytes (fewer than its size) are present: a file cut while it was written.
/// Returns the bytes and the offset of the cut chunk.
pub fn truncated_jfr(chunks: usize, keep: usize) -> (Vec<u8>, usize) {
    let mut rec = recording();
    let s = stack(&mut rec, 20, Names::Distinct);
    let mut out = Vec::new();
    for c in 0..chunks as u64 {
        out.extend(encode_chunk(
            &rec,
            &samples_of(&s, 10, chunk_times(c).start_ticks, 1_000_000, &[1, 0]),
            chunk_times(c),
        ));
    }
    let at = out.len();
    let last = encode_chunk(
        &rec,
        &samples_of(&s, 10, chunk_times(chunks as u64).start_ticks, 1, &[1, 0]),
        chunk_times(chunks as u64),
    );
    out.extend_from_slice(&last[..keep.min(last.len() - 1)]);
    (out, at)
}

/// Collapsed stacks: `lines` lines, each a stack of `depth` frames (the lines differ in their
/// leaf), with count `count`.
pub fn deep_collapsed(depth: usize, lines: usize, count: u64, names: Names) -> String {
    let mut path = String::new();
    for level in 0..depth.saturating_sub(1) {
        let (class, name) = method_name(level, names);
        let _ = write!(path, "{class}.{name};");
    }
    let mut out = String::with_capacity((path.len() + 24) * lines);
    for i in 0..lines {
        let _ = writeln!(out, "{path}gen.Leaf.l{i} {count}");
    }
    out
}

/// Collapsed stacks whose counts add up to more than 2^64.
pub fn huge_counts_collapsed() -> String {
    format!("main;a {}\nmain;b 1\n", u64::MAX)
}

/// CallerChaining quadruples of one call chain `depth` calls deep (`f<i> i f<i+1> i+1 1`).
pub fn deep_quads(depth: usize) -> String {
    let mut out = String::with_capacity(depth * 24);
    for i in 0..depth {
        let _ = writeln!(out, "f{i} {i} f{} {} 1", i + 1, i + 1);
    }
    out
}

/// An enter/exit trace of one thread nesting `depth` invocations, then leaving them all.
pub fn deep_trace(depth: usize) -> String {
    let mut out = String::with_capacity(depth * 40);
    out.push_str("# counters: cycles instructions\n");
    for i in 0..depth {
        let _ = writeln!(out, "enter main f{i} {} {}", 10 * i, 20 * i);
    }
    for i in (0..depth).rev() {
        let t = 10 * depth + 10 * (depth - i);
        let _ = writeln!(out, "exit main f{i} {t} {}", 2 * t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jfr::parser::parse_chunks;
    use crate::jfr::recording_from_chunks;

    #[test]
    fn generated_files_read_back() {
        let bytes = deep_jfr(300, 40, Names::Distinct);
        let rec = recording_from_chunks(&parse_chunks(&bytes, &|_| true).unwrap()).unwrap();
        assert_eq!(rec.samples.len(), 40);
        assert_eq!(rec.samples[0].stack.len(), 300);
        let (bytes, at) = truncated_jfr(2, 100);
        assert!(parse_chunks(&bytes[..at], &|_| true).unwrap().len() == 2);
        let c = crate::load::parse_collapsed(&deep_collapsed(50, 3, 7, Names::Recursive)).unwrap();
        assert_eq!(c.total_samples(), 21);
    }
}
