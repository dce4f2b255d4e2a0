//! Robustness of the JFR reader (truncated, corrupted and unfinished files), and ignored
//! helpers for manual checks and timing.

use super::parser::{self, parse_chunks, HEADER_SIZE};
use super::tests::{sample_batch, sample_recording, times, write_temp};
use super::*;
use crate::model::*;

#[test]
fn truncated_and_corrupted_files_are_errors_not_panics() {
    let mut rec = sample_recording();
    let samples = sample_batch(&mut rec, 5_000_000_000, 12);
    let one = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let file = [one.clone(), one.clone()].concat();
    // A file cut inside its last chunk: the complete chunk is read, the cut one is named.
    let p = write_temp("cut.jfr", &file[..file.len() - 10]);
    let read = read_recording(&p).unwrap();
    assert_eq!(read.recording.samples.len(), 12);
    let lost = read.lost.expect("the cut chunk is reported");
    assert_eq!((lost.chunk, lost.offset, lost.present), (1, one.len() as u64, one.len() as u64 - 10));
    assert_eq!(lost.declared, Some(one.len() as u64));
    let m = lost.to_string();
    assert!(m.contains("chunk 1 at byte") && m.contains("incomplete") && m.contains("1 complete chunk before"), "{m}");
    // A cut inside the first chunk leaves nothing to read: an error that says so.
    let p = write_temp("cut0.jfr", &one[..one.len() / 2]);
    let e = read_recording(&p).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::NoCompleteChunk(_)), "{e}");
    assert!(e.to_string().contains("cut0.jfr") && e.to_string().contains("no complete chunk"), "{e}");

    // Every prefix of a chunk is an error; so are cuts into a second chunk.
    for cut in 1..one.len() {
        assert!(parse_chunks(&one[..cut], &|_| true).is_err(), "prefix of {cut} bytes parsed");
    }
    for cut in [1, 10, HEADER_SIZE, HEADER_SIZE + 1, one.len() / 2, one.len() - 1] {
        assert!(parse_chunks(&file[..one.len() + cut], &|_| true).is_err());
    }

    // Corrupt single bytes (every byte before the metadata event, every 16th inside it, whose
    // string table dominates the size) and random runs of bytes: must never panic.
    let meta = parser::parse_header(&one, 0).unwrap().metadata_offset as usize;
    let damaged = |bad: &[u8]| {
        let _ = parse_chunks(bad, &|_| true).map(|c| recording_from_chunks(&c));
    };
    for pos in (0..one.len()).filter(|&p| p < meta || p % 16 == 0) {
        for pattern in [0xffu8, 0x80] {
            let mut bad = one.clone();
            bad[pos] ^= pattern;
            damaged(&bad);
        }
    }
    // Extreme header values (duration, start ticks, ticks per second).
    for range in [40..48, 48..56, 56..64, 32..64] {
        for fill in [0xffu8, 0x00] {
            let mut bad = one.clone();
            bad[range.clone()].fill(fill);
            damaged(&bad);
        }
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..300 {
        let mut bad = one.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % bad.len();
            bad[i] = (x >> 32) as u8;
        }
        damaged(&bad);
    }

    // Garbage and empty files.
    let p =
        write_temp("garbage.jfr", b"this is not a flight recording, just text......................................");
    assert!(read_recording(&p).unwrap_err().to_string().contains("magic"));
    let p = write_temp("empty.jfr", b"");
    assert!(read_recording(&p).unwrap_err().to_string().contains("empty"));
    let e = read_recording(std::path::Path::new("/nonexistent/x.jfr")).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::Io(_)) && e.to_string().contains("/nonexistent/x.jfr"), "{e}");
    // A header alone.
    assert!(parse_chunks(&one[..HEADER_SIZE], &|_| true).is_err());
}

#[test]
fn unfinished_chunk_is_reported() {
    let rec = sample_recording();
    let mut bytes = encode_chunk(&rec, &[], times(5_000_000_000, 5_000_000_001));
    bytes[64] = 1; // file state: being written
    let e = parse_chunks(&bytes, &|_| true).unwrap_err();
    assert!(e.message.contains("unfinished"), "{e}");
}

#[test]
fn setting_durations_parse() {
    use super::recording::parse_duration_ns;
    assert_eq!(parse_duration_ns("10 ms"), Some(10_000_000));
    assert_eq!(parse_duration_ns("20ms"), Some(20_000_000));
    assert_eq!(parse_duration_ns("1 s"), Some(1_000_000_000));
    assert_eq!(parse_duration_ns("everyChunk"), None);
}

#[test]
#[ignore]
fn dump_metadata() {
    // JFR_DUMP=file.jfr cargo test -p hpm-profile jfr::tests::dump_metadata -- --ignored --nocapture
    let p = std::env::var("JFR_DUMP").unwrap();
    let (chunks, _) = parser::read_chunks(std::path::Path::new(&p), &|_| true).unwrap();
    for c in &chunks {
        println!("{:?}", c.header);
        println!("{}", c.metadata.root.to_xml());
        println!("events: {}", c.events.len());
    }
}

#[test]
#[ignore]
fn write_sample_file() {
    // JFR_OUT=/tmp/x.jfr cargo test -p hpm-profile jfr::tests::write_sample_file -- --ignored
    // Two chunks of 20 samples, for checking with other tools.
    let mut rec = sample_recording();
    let mut bytes = Vec::new();
    for c in 0..2 {
        let t0 = 5_000_000_000 + c * 1_000_000_000;
        let samples = sample_batch(&mut rec, t0, 20);
        bytes.extend(encode_chunk(&rec, &samples, times(t0, t0 + 1_000_000_000)));
    }
    std::fs::write(std::env::var("JFR_OUT").unwrap(), bytes).unwrap();
}

#[test]
#[ignore]
fn bench_encode_and_read() {
    // cargo test --release -p hpm-profile jfr::tests::bench -- --ignored --nocapture
    let mut rec = sample_recording();
    let methods: Vec<MethodIdx> = (0..50_000)
        .map(|i| rec.methods.intern(MethodInfo::java(&format!("p{}.C{}", i % 300, i % 5000), &format!("m{i}"), "(I)V")))
        .collect();
    let mut x = 12345u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let samples: Vec<Sample> = (0..20_000)
        .map(|i| Sample {
            carrier: None,
            time: 5_000_000_000 + i,
            thread: ThreadIdx((next() % 3) as u32),
            stack: (0..30)
                .map(|_| Frame {
                    method: methods[(next() % 2000) as usize],
                    bci: 3,
                    line: 7,
                    kind: FrameKind::JitCompiled,
                })
                .collect::<Vec<_>>()
                .into(),
            truncated: false,
            weight: 1,
            repeat: 1,
            counters: vec![1, 2, 3],
            data_addr: None,
            data: None,
            ip: 0,
            component: VmComponent::Java,
            state: None,
        })
        .collect();
    let t = std::time::Instant::now();
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 6_000_000_000));
    println!("encode: {:?} for {} bytes", t.elapsed(), bytes.len());
    let t = std::time::Instant::now();
    let chunks = parse_chunks(&bytes, &|_| true).unwrap();
    println!("parse: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let back = recording_from_chunks(&chunks).unwrap();
    println!("build: {:?} for {} samples", t.elapsed(), back.samples.len());
    let t = std::time::Instant::now();
    let _ = encode_chunk(&rec, &samples[..10], times(5_000_000_000, 6_000_000_000));
    println!("encode 10 samples with 50k methods in the table: {:?}", t.elapsed());
}
