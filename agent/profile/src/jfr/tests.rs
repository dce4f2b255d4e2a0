//! Round-trip tests for the JFR writer and reader, and the sample recording they share.

use super::parser::{self, parse_chunks};
use super::*;
use crate::model::*;

/// A recording with Java frames of every kind, native frames and pseudo-frames, three
/// threads (one not Java), three counters and two drop reasons.
pub(crate) fn sample_recording() -> Recording {
    let mut rec = Recording {
        start_wall_ns: 1_700_000_000_000_000_000,
        start_ticks: 5_000_000_000,
        end_ticks: 5_000_000_000,
        pid: 4242,
        jvm: "OpenJDK 64-Bit Server VM 17.0.15".into(),
        event: EventInfo {
            name: "cycles".into(),
            requested: "cycles".into(),
            period: 1_000_003,
            unit: PeriodUnit::Events,
            fallback: None,
            sampler: "asgct".into(),
            kernel: KernelMode::Sampled,
            alloc_interval: 0,
        },
        counters: vec!["task-clock".into(), "cycles".into(), "r01c2".into()],
        ..Default::default()
    };
    rec.add_thread(ThreadInfo { os_tid: 101, java_id: Some(1), name: "main".into(), is_java: true, is_virtual: false });
    rec.add_thread(ThreadInfo {
        os_tid: 102,
        java_id: Some(15),
        name: "worker-1".into(),
        is_java: true,
        is_virtual: false,
    });
    rec.add_thread(ThreadInfo {
        os_tid: 103,
        java_id: None,
        name: "GC Thread#0".into(),
        is_java: false,
        is_virtual: false,
    });
    rec.add_drops("ring full", 3);
    rec.add_drops("no java frame", 1);
    rec
}

pub(crate) fn frame(rec: &mut Recording, m: MethodInfo, bci: i32, line: i32, kind: FrameKind) -> Frame {
    Frame { method: rec.methods.intern(m), bci, line, kind }
}

/// Samples for `sample_recording`, starting at `t0`.
pub(crate) fn sample_batch(rec: &mut Recording, t0: u64, n: usize) -> Vec<Sample> {
    let main = frame(
        rec,
        MethodInfo::java("com.example.App", "main", "([Ljava/lang/String;)V"),
        12,
        30,
        FrameKind::Interpreted,
    );
    let mut hot = MethodInfo::java("com.example.Hot", "spin", "(I)D");
    hot.modifiers = 0x9;
    let spin = frame(rec, hot, 7, 44, FrameKind::JitCompiled);
    let inl = frame(rec, MethodInfo::java("java.lang.Math", "sqrt", "(D)D"), 0, 400, FrameKind::Inlined);
    let lambda = {
        let mut m = MethodInfo::java("com.example.App$$Lambda+0x0000000800c01234", "run", "()V");
        m.hidden = true;
        frame(rec, m, 1, -1, FrameKind::JitCompiled)
    };
    let dflt = frame(rec, MethodInfo::java("NoPackage", "work", "()V"), 3, 9, FrameKind::Interpreted);
    let jni = frame(rec, MethodInfo::java("java.lang.Thread", "yield", "()V"), -1, -1, FrameKind::Native);
    let libc = frame(rec, MethodInfo::native("__sched_yield"), -1, -1, FrameKind::Native);
    let cpp = frame(rec, MethodInfo::native("G1ParScanThreadState::trim_queue()"), -1, -1, FrameKind::Cpp);
    let kernel = frame(rec, MethodInfo::native("do_syscall_64"), -1, -1, FrameKind::Kernel);
    let gc = frame(rec, MethodInfo::native("[GC]"), -1, -1, FrameKind::Unknown);
    let stacks: Vec<(ThreadIdx, Vec<Frame>, VmComponent)> = vec![
        (ThreadIdx(0), vec![inl, spin, main], VmComponent::Java),
        (ThreadIdx(0), vec![spin, main], VmComponent::Java),
        (ThreadIdx(1), vec![kernel, libc, jni, lambda, dflt], VmComponent::Kernel),
        (ThreadIdx(2), vec![cpp, gc], VmComponent::Gc),
    ];
    (0..n)
        .map(|i| {
            let (thread, stack, component) = stacks[i % stacks.len()].clone();
            Sample {
                carrier: None,
                time: t0 + i as u64 * 1_000_000,
                thread,
                stack: stack.into(),
                truncated: i % 5 == 4,
                weight: 1_000_003 + i as u64,
                repeat: 1,
                counters: vec![1_000_000 + i as u64, 2_000_000 + 3 * i as u64, i as u64 % 3],
                data_addr: if i % 2 == 0 { Some(0x7f00_0000_1000 + i as u64) } else { None },
                data: match i % 4 {
                    0 => Some(Box::new(crate::model::DataTarget {
                        space: crate::model::Space::Eden,
                        class: Some("demo.Point".into()),
                        field: Some("demo.Point.x".into()),
                        offset: 16,
                        index: None,
                        source: None,
                        latency: 0,
                    })),
                    2 => Some(Box::new(crate::model::DataTarget {
                        space: crate::model::Space::Old,
                        class: Some("int[]".into()),
                        field: Some("[]".into()),
                        offset: 16 + 4 * i as u64,
                        index: Some(i as u64),
                        source: Some("L3 hit".into()),
                        latency: 187,
                    })),
                    _ => None,
                },
                ip: 0x7f12_3456_0000 + i as u64,
                component,
                state: None,
            }
        })
        .collect()
}

pub(crate) fn times(start: u64, end: u64) -> ChunkTimes {
    ChunkTimes {
        start_ticks: start,
        end_ticks: end,
        start_wall_ns: 1_700_000_000_000_000_000 + (start - 5_000_000_000),
    }
}

/// Compares samples by content (indices may differ between the two recordings).
fn assert_same_samples(a: &Recording, b: &Recording) {
    assert_eq!(a.samples.len(), b.samples.len());
    for (x, y) in a.samples.iter().zip(&b.samples) {
        assert_eq!(x.time, y.time);
        assert_eq!(a.threads[x.thread.0 as usize], b.threads[y.thread.0 as usize]);
        assert_eq!(x.truncated, y.truncated);
        assert_eq!(x.weight, y.weight);
        assert_eq!(x.counters, y.counters);
        assert_eq!(x.data_addr, y.data_addr);
        assert_eq!(x.data, y.data);
        assert_eq!(x.ip, y.ip);
        assert_eq!(x.component, y.component);
        assert_eq!(x.stack.len(), y.stack.len());
        for (f, g) in x.stack.iter().zip(y.stack.iter()) {
            assert_eq!((f.bci, f.line, f.kind), (g.bci, g.line, g.kind));
            assert_eq!(a.method(f.method), b.method(g.method));
            assert_eq!(a.method(f.method).display_name(), b.method(g.method).display_name());
        }
    }
}

pub(crate) fn write_temp(name: &str, data: &[u8]) -> crate::scratch_tests::TempFile {
    crate::scratch_tests::TempFile::new(name, data)
}

#[test]
fn single_chunk_round_trip() {
    let mut rec = sample_recording();
    let samples = sample_batch(&mut rec, 5_000_000_000, 40);
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let p = write_temp("single.jfr", &bytes);
    let back = read_recording(&p).unwrap().recording;

    assert_eq!(back.event, rec.event);
    assert_eq!(back.counters, rec.counters);
    assert_eq!(back.drops, rec.drops);
    assert_eq!(back.pid, rec.pid);
    assert_eq!(back.jvm, rec.jvm);
    assert_eq!(back.start_wall_ns, rec.start_wall_ns);
    assert_eq!(back.start_ticks, 5_000_000_000);
    assert_eq!(back.end_ticks, 5_100_000_000);
    let expected = Recording { samples, ..rec };
    assert_same_samples(&expected, &back);
    // Pseudo-frames and native symbols keep their display names.
    let names: Vec<String> = back.methods.iter().map(|(_, m)| m.display_name()).collect();
    for n in ["[GC]", "__sched_yield", "do_syscall_64", "com.example.Hot.spin", "NoPackage.work"] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
}

/// How each counter came to its stacks survives the file: its field's description says it, and
/// a counter's own sample (weight 0) is an hpm.Sample only, counted as no sample.
#[test]
fn counter_attribution_round_trips_and_own_samples_are_no_execution_samples() {
    let mut rec = sample_recording();
    rec.counter_periods = vec![0, 10_000, 0];
    let mut samples = sample_batch(&mut rec, 5_000_000_000, 10);
    let mut own = samples[0].clone();
    (own.weight, own.counters) = (0, vec![0, 10_007, 0]);
    samples.push(own);
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let back = read_recording(&write_temp("attribution.jfr", &bytes)).unwrap().recording;
    assert_eq!(back.counter_periods, [0, 10_000, 0]);
    let counter_samples: Vec<&Sample> = back.samples.iter().filter(|s| s.is_counter_sample()).collect();
    assert_eq!(counter_samples.len(), 1);
    assert_eq!((counter_samples[0].count(), counter_samples[0].counters[1]), (0, 10_007));
    let chunk = parse_chunks(&bytes, &|_| true).unwrap().remove(0);
    assert_eq!(chunk.events_named("jdk.ExecutionSample").count(), 10, "the own sample is not a CPU sample");
    assert_eq!(chunk.events_named("hpm.Sample").count(), 11);
}

#[test]
fn several_chunks_concatenated() {
    let mut rec = sample_recording();
    let mut all = Vec::new();
    let mut file = Vec::new();
    for c in 0..3u64 {
        let t0 = 5_000_000_000 + c * 1_000_000_000;
        let batch = sample_batch(&mut rec, t0, 10 + c as usize);
        // A method that only appears from the second chunk on.
        let mut batch = batch;
        if c > 0 {
            let f = frame(&mut rec, MethodInfo::java("com.example.Late", "m", "()V"), 2, 3, FrameKind::JitCompiled);
            let mut frames = batch[0].stack.to_vec();
            frames.insert(0, f);
            batch[0].stack = frames.into();
        }
        rec.add_drops("ring full", 1);
        file.extend(encode_chunk(&rec, &batch, times(t0, t0 + 1_000_000_000)));
        all.extend(batch);
    }
    let chunks = parse_chunks(&file, &|_| true).unwrap();
    assert_eq!(chunks.len(), 3);
    let p = write_temp("multi.jfr", &file);
    let back = read_recording(&p).unwrap().recording;
    assert_eq!(back.drops, vec![("ring full".into(), 6), ("no java frame".into(), 1)]);
    assert_eq!(back.end_ticks, 8_000_000_000);
    let expected = Recording { samples: all, ..rec };
    assert_same_samples(&expected, &back);
    // Threads are deduplicated across chunks.
    assert_eq!(back.threads.len(), 3);
    // The same image read from memory (the agent's chunks, read back for a dump) is the same
    // recording; an image cut short inside a chunk is an error that names the chunk.
    let from_memory = crate::jfr::recording_from_bytes(&file, "memory").unwrap();
    assert_same_samples(&back, &from_memory);
    assert_eq!(from_memory.drops, back.drops);
    let cut = crate::jfr::recording_from_bytes(&file[..file.len() - 10], "memory").unwrap_err();
    assert!(cut.to_string().starts_with("memory: chunk 2: "), "{cut}");
    assert!(crate::jfr::recording_from_bytes(&[], "memory").is_err());
}

#[test]
fn stack_traces_are_deduplicated_in_the_pool() {
    let mut rec = sample_recording();
    let samples = sample_batch(&mut rec, 5_000_000_000, 100);
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let chunk = &parse_chunks(&bytes, &|_| true).unwrap()[0];
    let st = chunk.metadata.by_name("jdk.types.StackTrace").unwrap().id;
    // 4 distinct stacks, each truncated or not.
    assert_eq!(chunk.pools[&st].len(), 8);
    let th = chunk.metadata.by_name("java.lang.Thread").unwrap().id;
    assert_eq!(chunk.pools[&th].len(), 3);
    assert_eq!(chunk.events_named("jdk.ExecutionSample").count(), 100);
    assert_eq!(chunk.events_named("hpm.Sample").count(), 100);
    assert_eq!(chunk.events_named("hpm.Config").count(), 1);
    assert_eq!(chunk.events_named("hpm.Drops").count(), 2);
}

#[test]
fn keys_are_stable_across_chunks() {
    // The JDK reuses a previous chunk's pool entry for a known key, so a key must mean the same
    // thing in every chunk.
    let mut rec = sample_recording();
    let a = sample_batch(&mut rec, 5_000_000_000, 8);
    let late = frame(&mut rec, MethodInfo::java("z.Late", "x", "()V"), 0, 1, FrameKind::Interpreted);
    let mut b = sample_batch(&mut rec, 6_000_000_000, 8);
    let mut frames = b[1].stack.to_vec();
    frames.push(late);
    b[1].stack = frames.into();
    let c1 = encode_chunk(&rec, &a, times(5_000_000_000, 6_000_000_000));
    // A thread renamed between the chunks must not keep its key.
    rec.threads[1].name = "renamed-worker".into();
    let c2 = encode_chunk(&rec, &b[1..], times(6_000_000_000, 7_000_000_000));
    let file = [c1, c2].concat();
    let chunks = parse_chunks(&file, &|_| true).unwrap();
    // Our reader keeps one thread, with its latest name.
    let back = recording_from_chunks(&chunks).unwrap();
    assert_eq!(back.threads.len(), 3);
    assert!(back.threads.iter().any(|t| t.name == "renamed-worker" && t.os_tid == 102));
    for (type_id, pool) in &chunks[0].pools {
        if let Some(other) = chunks[1].pools.get(type_id) {
            for (k, v) in pool {
                if let Some(w) = other.get(k) {
                    assert_eq!(v, w, "type {type_id} key {k} changed meaning");
                }
            }
        }
    }
}

#[test]
fn kept_table_keys_give_the_chunks_what_a_scan_of_the_table_gives() {
    // A processor keeps the keys of its method table across chunks (and sessions): each chunk
    // must be byte for byte what numbering the table anew gives.
    let mut rec = sample_recording();
    let mut keys = TableKeys::default();
    let a = sample_batch(&mut rec, 5_000_000_000, 8);
    let kept = encode_chunk_keyed(&rec, &a, &[], times(5_000_000_000, 6_000_000_000), &mut keys);
    assert_eq!(kept, encode_chunk(&rec, &a, times(5_000_000_000, 6_000_000_000)));
    let late = frame(&mut rec, MethodInfo::java("z.Late", "x", "()V"), 0, 1, FrameKind::Interpreted);
    let mut b = sample_batch(&mut rec, 6_000_000_000, 8);
    let mut frames = b[1].stack.to_vec();
    frames.push(late);
    b[1].stack = frames.into();
    let kept = encode_chunk_keyed(&rec, &b, &[], times(6_000_000_000, 7_000_000_000), &mut keys);
    assert_eq!(kept, encode_chunk(&rec, &b, times(6_000_000_000, 7_000_000_000)));
    // Keys of another table (a copy is another table) are made anew, not reused.
    let mut other = sample_recording();
    other.methods = MethodTable::default();
    let c = sample_batch(&mut other, 5_000_000_000, 4);
    let kept = encode_chunk_keyed(&other, &c, &[], times(5_000_000_000, 6_000_000_000), &mut keys);
    assert_eq!(kept, encode_chunk(&other, &c, times(5_000_000_000, 6_000_000_000)));
    let copy = Recording { methods: rec.methods.clone(), ..sample_recording() };
    assert_ne!(copy.methods.lineage(), rec.methods.lineage());
}

#[test]
fn duplicate_counter_names_keep_their_columns() {
    let mut rec = sample_recording();
    rec.counters = vec!["cycles".into(), "task-clock".into(), "cycles".into()];
    let samples = sample_batch(&mut rec, 5_000_000_000, 6);
    let file = [
        encode_chunk(&rec, &samples[..3], times(5_000_000_000, 6_000_000_000)),
        encode_chunk(&rec, &samples[3..], times(6_000_000_000, 7_000_000_000)),
    ]
    .concat();
    let back = recording_from_chunks(&parse_chunks(&file, &|_| true).unwrap()).unwrap();
    assert_eq!(back.counters, rec.counters);
    for (a, b) in samples.iter().zip(&back.samples) {
        assert_eq!(a.counters, b.counters);
    }
}

#[test]
fn each_chunk_has_the_metadata_of_its_own_counters_when_they_change_between_chunks() {
    // The metadata is encoded once per list of counters and kept: a chunk of other counters
    // in between must not leave the first list's chunks with the second's fields.
    let lists: [&[&str]; 4] =
        [&["task-clock", "cycles", "r01c2"], &["cycles"], &["task-clock", "cycles", "r01c2"], &[]];
    for (k, list) in lists.iter().enumerate() {
        let mut rec = sample_recording();
        rec.counters = list.iter().map(|c| c.to_string()).collect();
        let start = 5_000_000_000 + k as u64 * 1_000_000_000;
        let mut samples = sample_batch(&mut rec, start, 4);
        for s in &mut samples {
            s.counters.truncate(list.len());
        }
        let bytes = encode_chunk(&rec, &samples, times(start, start + 1_000_000_000));
        let back = recording_from_chunks(&parse_chunks(&bytes, &|_| true).unwrap()).unwrap();
        assert_eq!(back.counters, rec.counters, "chunk {k}");
        for (a, b) in samples.iter().zip(&back.samples) {
            assert_eq!(a.counters, b.counters, "chunk {k}");
        }
    }
}

#[test]
fn out_of_range_indices_are_written_as_placeholders() {
    let mut rec = sample_recording();
    let mut samples = sample_batch(&mut rec, 5_000_000_000, 2);
    samples[0].thread = ThreadIdx(99);
    let mut frames = samples[0].stack.to_vec();
    frames[0].method = MethodIdx(9_999);
    samples[0].stack = frames.into();
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let back = recording_from_chunks(&parse_chunks(&bytes, &|_| true).unwrap()).unwrap();
    let s = &back.samples[0];
    assert_eq!(back.threads[s.thread.0 as usize].name, "[unknown thread]");
    assert_eq!(back.method(s.stack[0].method).display_name(), "[unknown method]");
    assert_eq!(back.stack_names_root_first(&back.samples[1]), rec.stack_names_root_first(&samples[1]));
}

#[test]
fn empty_chunk_is_valid() {
    let rec = sample_recording();
    let bytes = encode_chunk(&rec, &[], times(5_000_000_000, 5_000_000_001));
    let p = write_temp("empty.jfr", &bytes);
    let back = read_recording(&p).unwrap().recording;
    assert!(back.samples.is_empty());
    assert_eq!(back.counters, rec.counters);
}

#[test]
fn header_fields() {
    let mut rec = sample_recording();
    let samples = sample_batch(&mut rec, 5_000_000_000, 4);
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_250_000_000));
    let h = parser::parse_header(&bytes, 0).unwrap();
    assert_eq!(&bytes[..4], b"FLR\0");
    assert_eq!((h.major, h.minor), (2, 0));
    assert_eq!(h.size, bytes.len() as u64);
    assert_eq!(h.ticks_per_second, 1_000_000_000);
    assert_eq!(h.duration_nanos, 250_000_000);
    assert_eq!(h.start_ticks, 5_000_000_000);
    assert_eq!(h.features, 1);
    assert!(h.constant_pool_offset < h.metadata_offset, "metadata comes last");
}

#[test]
fn file_writer_appends_chunks_to_part_then_publishes() {
    let mut rec = sample_recording();
    let scratch = crate::scratch_tests::ScratchDir::new("jfr-writer");
    let dir = scratch.path();
    let p = dir.join("writer.jfr");
    let mut w = JfrFileWriter::create(&p).unwrap();
    let a = sample_batch(&mut rec, 5_000_000_000, 5);
    w.write_chunk(&rec, &a, times(5_000_000_000, 6_000_000_000)).unwrap();
    let b = sample_batch(&mut rec, 6_000_000_000, 7);
    w.write_chunk(&rec, &b, times(6_000_000_000, 7_000_000_000)).unwrap();
    assert_eq!(w.chunks_written(), 2);
    assert!(!p.exists(), "the final name appears only when the file is complete");
    // What a killed JVM leaves: the .part, readable up to its last chunk.
    assert_eq!(std::fs::metadata(w.part_path()).unwrap().len(), w.bytes());
    assert_eq!(read_recording(&w.part_path()).unwrap().recording.samples.len(), 12);
    w.finish().unwrap();
    assert_eq!(read_recording(&p).unwrap().recording.samples.len(), 12);
    assert!(!dir.join("writer.jfr.part").exists());
}

/// A full disk: the chunk that did not fit is cut off, the error comes once, later chunks are
/// dropped, and the file keeps every complete chunk (the failure is injected: half a chunk is
/// written, then ENOSPC).
#[test]
fn file_writer_stops_once_on_a_failed_write_and_keeps_complete_chunks() {
    let mut rec = sample_recording();
    let scratch = crate::scratch_tests::ScratchDir::new("jfr-full");
    let p = scratch.path().join("full.jfr");
    let mut w = JfrFileWriter::create(&p).unwrap();
    let a = sample_batch(&mut rec, 5_000_000_000, 5);
    w.write_chunk(&rec, &a, times(5_000_000_000, 6_000_000_000)).unwrap();
    let good = w.bytes();
    w.fail_next_write_for_test();
    let e = w.write_chunk(&rec, &a, times(6_000_000_000, 7_000_000_000)).unwrap_err();
    assert!(e.to_string().contains("stopped writing") && e.to_string().contains("complete chunks"), "{e}");
    assert!(w.write_chunk(&rec, &a, times(7_000_000_000, 8_000_000_000)).is_ok(), "reported once");
    assert_eq!(std::fs::metadata(w.part_path()).unwrap().len(), good, "the partial chunk was cut off");
    w.finish().unwrap();
    assert_eq!(read_recording(&p).unwrap().recording.samples.len(), 5);
}

#[test]
fn wall_clock_states_round_trip_and_are_wall_clock_samples() {
    let mut rec = sample_recording();
    let mut samples = sample_batch(&mut rec, 5_000_000_000, 12);
    let sleeping = rec.state_idx("STATE_SLEEPING");
    let blocked = rec.state_idx("STATE_BLOCKED_ON_MONITOR_ENTER");
    for (i, s) in samples.iter_mut().enumerate() {
        s.state = [Some(sleeping), Some(blocked), None][i % 3];
    }
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let chunks = parse_chunks(&bytes, &|_| true).unwrap();
    let c = &chunks[0];
    assert_eq!(c.events_named("profiler.WallClockSample").count(), 8, "samples with a state");
    assert_eq!(c.events_named("jdk.ExecutionSample").count(), 4, "samples without one");
    let states: Vec<String> =
        c.events_named("profiler.WallClockSample").filter_map(|e| e.str("state").map(str::to_string)).collect();
    assert!(
        states.iter().any(|s| s == "STATE_SLEEPING") && states.iter().any(|s| s == "STATE_BLOCKED_ON_MONITOR_ENTER")
    );

    let back = read_recording(&write_temp("wall.jfr", &bytes)).unwrap().recording;
    let name = |r: &Recording, s: &Sample| s.state.map(|i| r.states[i as usize].clone());
    let want: Vec<_> = samples.iter().map(|s| name(&rec, s)).collect();
    let got: Vec<_> = back.samples.iter().map(|s| name(&back, s)).collect();
    assert_eq!(got, want);
}

#[test]
fn compiled_code_round_trip_with_and_without_its_bytes() {
    let mut rec = sample_recording();
    let samples = sample_batch(&mut rec, 5_000_000_000, 4);
    let hot = samples[0].stack.iter().find(|f| f.kind == FrameKind::JitCompiled).unwrap().method;
    let bytes = vec![0x48, 0x01, 0xd8, 0xc3, 0x00, 0xff];
    rec.code.push(CompiledCode {
        method: hot,
        start: 0x7f00_1000,
        size: 6,
        loaded_at: 4_900_000_000,
        bytes: bytes.into(),
    });
    rec.code.push(CompiledCode {
        method: hot,
        start: 0x7f00_2000,
        size: 300,
        loaded_at: 5_000_000_100,
        bytes: Default::default(),
    });
    // Two chunks with the same blobs and their instructions (as files before 8b7555b had
    // them): read once.
    let mut file = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    file.extend(encode_chunk(&rec, &samples, times(5_100_000_000, 5_200_000_000)));
    let p = write_temp("code.jfr", &file);
    let back = read_recording(&p).unwrap().recording;
    assert_eq!(back.code.len(), 2);
    for (b, r) in back.code.iter().zip(&rec.code) {
        assert_eq!((b.start, b.size, b.loaded_at, &b.bytes), (r.start, r.size, r.loaded_at, &r.bytes));
        assert_eq!(back.method(b.method).display_name(), "com.example.Hot.spin");
    }
}

#[test]
fn a_blob_listed_in_several_chunks_is_read_with_the_instructions_one_of_them_has() {
    let mut rec = sample_recording();
    let samples = sample_batch(&mut rec, 5_000_000_000, 4);
    let hot = samples[0].stack.iter().find(|f| f.kind == FrameKind::JitCompiled).unwrap().method;
    let blob = |start: u64, bytes: &[u8]| CompiledCode {
        method: hot,
        start,
        size: 100,
        loaded_at: 4_900_000_000,
        bytes: bytes.to_vec().into(),
    };
    // 200 hex digits: the event's size takes two bytes.
    let (a, b) = ([0x48; 100], [0x90; 100]);
    // The agent writes a blob's instructions once a session: here `a`'s in the second chunk,
    // `b`'s in the first.
    rec.code = vec![blob(0x7f00_1000, &[]), blob(0x7f00_2000, &b)];
    let mut file = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    rec.code = vec![blob(0x7f00_1000, &a), blob(0x7f00_2000, &[])];
    file.extend(encode_chunk(&rec, &samples, times(5_100_000_000, 5_200_000_000)));
    let back = read_recording(&write_temp("code-once.jfr", &file)).unwrap().recording;
    let code: Vec<(u64, Vec<u8>)> = back.code.iter().map(|c| (c.start, c.bytes.to_vec())).collect();
    assert_eq!(code, [(0x7f00_1000, a.to_vec()), (0x7f00_2000, b.to_vec())]);
}

/// Native, C++ and kernel frames are written as async-profiler writes them (a class named by
/// their kind, `ACC_NATIVE`) and marked as not Java for the JDK's `isJavaFrame()`, which `jfr
/// view hot-methods` and `jfr print` read; Java frames, a Java `native` method's included, are
/// Java frames. hpm reads them back as the native symbols they were.
#[test]
fn native_cpp_and_kernel_frames_are_not_java_frames() {
    let mut rec = sample_recording();
    let mut samples = sample_batch(&mut rec, 5_000_000_000, 4);
    // One name found both in a library and in the JVM: a method of each class.
    let twin = frame(&mut rec, MethodInfo::native("__sched_yield"), -1, -1, FrameKind::Cpp);
    let mut s = samples[0].clone();
    s.stack = vec![twin].into();
    samples.push(s);
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let chunks = parse_chunks(&bytes, &|_| true).unwrap();
    let mut seen = Vec::new();
    for s in chunks[0].events_named("jdk.ExecutionSample") {
        let stack = s.object("stackTrace").unwrap();
        for f in stack.array("frames").unwrap() {
            let f = chunks[0].object(f).unwrap();
            let m = f.object("method").unwrap();
            let class = m.object("type").and_then(|c| c.str("name")).unwrap_or("?").to_string();
            let entry = (
                f.str("type").unwrap().to_string(),
                format!("{class}.{}", m.str("name").unwrap()),
                f.bool("javaFrame").unwrap(),
                m.i64("modifiers").unwrap() & 0x100 != 0,
            );
            if !seen.contains(&entry) {
                seen.push(entry);
            }
        }
    }
    let want = |kind: &str, name: &str, java: bool, native: bool| (kind.to_string(), name.to_string(), java, native);
    for w in [
        want("Kernel", "kernel.do_syscall_64", false, true),
        want("Native", "native.__sched_yield", false, true),
        want("C++", "libjvm.so.G1ParScanThreadState::trim_queue()", false, true),
        want("C++", "libjvm.so.__sched_yield", false, true),
        want("Unknown", ".[GC]", false, false),
        want("Native", "java/lang/Thread.yield", true, false),
        want("JIT compiled", "com/example/Hot.spin", true, false),
    ] {
        assert!(seen.contains(&w), "{w:?} not in {seen:?}");
    }
    let back = recording_from_chunks(&chunks).unwrap();
    assert_same_samples(&Recording { samples, ..rec }, &back);
}
