//! Virtual threads through the JFR writer and reader: the sample's thread is the virtual
//! thread, as the JDK's recorder writes it, and hpm's own event keeps the carrier.

use super::parser::parse_chunks;
use super::tests::{sample_batch, sample_recording, times};
use super::writer::encode_chunk;
use crate::model::*;

/// `sample_recording` with virtual threads #77 (unnamed) and #78 (`task-78`) and the entry
/// for those past the bound, their samples carried by `worker-1` (thread 1); 12 samples.
fn with_virtual_threads() -> (Recording, Vec<Sample>) {
    let mut rec = sample_recording();
    let v77 = rec.add_thread(ThreadInfo::virtual_thread(77, String::new()));
    let v78 = rec.add_thread(ThreadInfo::virtual_thread(78, "task-78".into()));
    let other = rec.add_thread(ThreadInfo::other_virtual());
    let mut samples = sample_batch(&mut rec, 5_000_000_000, 12);
    for (i, vt) in [(0, v77), (1, v77), (4, v78), (5, other)] {
        samples[i].carrier = Some(ThreadIdx(1));
        samples[i].thread = vt;
    }
    (rec, samples)
}

#[test]
fn virtual_threads_and_their_carriers_survive_the_round_trip() {
    let (mut rec, samples) = with_virtual_threads();
    rec.virtual_live = VirtualLive { thread_ns: 7_000_000_000, span_ns: 100_000_000, max: 90, mounted_ns: 300_000_000 };
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let back = crate::jfr::recording_from_bytes(&bytes, "memory").unwrap();
    assert_eq!(back.samples.len(), samples.len());
    for (a, b) in samples.iter().zip(&back.samples) {
        assert_eq!(rec.threads[a.thread.0 as usize], back.threads[b.thread.0 as usize]);
        let carrier = |r: &Recording, s: &Sample| s.carrier.map(|c| r.threads[c.0 as usize].name.clone());
        assert_eq!(carrier(&rec, a), carrier(&back, b));
    }
    let v77 = &back.threads[back.samples[0].thread.0 as usize];
    assert_eq!((v77.os_tid, v77.java_id, v77.name.as_str(), v77.is_virtual), (0, Some(77), "", true));
    assert_eq!(back.samples[1].thread, back.samples[0].thread, "one entry per virtual thread");
    assert!(back.threads[back.samples[5].thread.0 as usize].is_virtual_group());
    assert_eq!(back.samples[2].carrier, None, "a platform thread's sample has no carrier");
    assert_eq!(back.virtual_live, rec.virtual_live);
}

/// A thread as the JDK's tools show it: OS name and id, Java name and id, virtual.
type Shown = (Option<String>, i64, Option<String>, i64, bool);

#[test]
fn the_execution_sample_names_the_virtual_thread_as_the_jdk_writes_it() {
    let (rec, samples) = with_virtual_threads();
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let chunk = parse_chunks(&bytes, &|_| true).unwrap().remove(0);
    let threads: Vec<Shown> = chunk
        .events_named("jdk.ExecutionSample")
        .take(3)
        .map(|e| {
            let t = e.object("sampledThread").unwrap();
            let s = |f: &str| t.str(f).map(str::to_string);
            (
                s("osName"),
                t.i64("osThreadId").unwrap(),
                s("javaName"),
                t.i64("javaThreadId").unwrap(),
                t.bool("virtual").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        threads,
        [
            (None, 0, Some(String::new()), 77, true),
            (None, 0, Some(String::new()), 77, true),
            (Some("worker-1".into()), 102, Some("worker-1".into()), 15, false),
        ]
    );
}

#[test]
fn past_the_bound_the_reader_charges_further_virtual_threads_to_one_entry() {
    let mut rec = sample_recording();
    let platform = rec.threads.len();
    let v: Vec<ThreadIdx> =
        (101..=105).map(|id| rec.add_thread(ThreadInfo::virtual_thread(id, format!("task-{id}")))).collect();
    let mut samples = sample_batch(&mut rec, 5_000_000_000, 12);
    // Threads 101..=105 in turn, then 101 and 105 again.
    for (s, t) in samples.iter_mut().zip(v.iter().chain([&v[0], &v[4]])) {
        s.thread = *t;
    }
    let bytes = encode_chunk(&rec, &samples, times(5_000_000_000, 5_100_000_000));
    let chunks = parse_chunks(&bytes, &|_| true).unwrap();
    let (back, notes) = super::recording::recording_bounded(&chunks, 3).unwrap();

    let name = |i: usize| back.threads[back.samples[i].thread.0 as usize].shown_name();
    assert_eq!([name(0), name(1), name(2), name(5)], ["task-101", "task-102", "task-103", "task-101"]);
    let other = back.samples[3].thread;
    assert!(back.threads[other.0 as usize].is_virtual_group());
    assert_eq!([back.samples[4].thread, back.samples[6].thread], [other, other]);
    assert_eq!(back.threads.len(), platform + 3 + 1, "three kept, one for the rest");
    assert_eq!(
        notes,
        ["2 more virtual threads (counted once per chunk) charged to `[other virtual threads]`: hpm keeps 3 apart"]
    );
    let summary = crate::vthreads::summary(&back, crate::vthreads::Grouping::Each).unwrap();
    assert_eq!((summary.threads, summary.merged), (4, 3));

    let (_, notes) = super::recording::recording_bounded(&chunks, 5).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
}
