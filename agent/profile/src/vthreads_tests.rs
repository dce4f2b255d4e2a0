use std::sync::Arc;

use super::*;
use crate::model::{Frame, FrameKind, MethodIdx, Sample, VirtualLive};

/// A carrier (`ForkJoinPool-1-worker-1`), `main`, and virtual threads #21 (3 samples) and #22
/// (1 sample) carried by the worker; `main` has 2 samples.
fn recording() -> Recording {
    let mut rec = Recording::default();
    let worker = rec.add_thread(ThreadInfo {
        os_tid: 10,
        java_id: Some(30),
        name: "ForkJoinPool-1-worker-1".into(),
        is_java: true,
        is_virtual: false,
    });
    let main = rec.add_thread(ThreadInfo {
        os_tid: 11,
        java_id: Some(1),
        name: "main".into(),
        is_java: true,
        is_virtual: false,
    });
    let v21 = rec.add_thread(ThreadInfo::virtual_thread(21, String::new()));
    let v22 = rec.add_thread(ThreadInfo::virtual_thread(22, "task-22".into()));
    let stack: Arc<[Frame]> =
        Arc::from(vec![Frame { method: MethodIdx(0), bci: 0, line: 1, kind: FrameKind::JitCompiled }]);
    let sample = |thread, carrier| Sample { thread, carrier, ..Sample::of_stack(stack.clone()) };
    for (thread, carrier, n) in [(v21, Some(worker), 3), (v22, Some(worker), 1), (main, None, 2)] {
        for _ in 0..n {
            rec.samples.push(sample(thread, carrier));
        }
    }
    rec
}

/// Samples per thread name.
fn by_name(rec: &Recording) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for s in &rec.samples {
        let name = rec.threads[s.thread.0 as usize].shown_name().into_owned();
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => out.push((name, 1)),
        }
    }
    out
}

fn names(v: &[(&str, usize)]) -> Vec<(String, usize)> {
    v.iter().map(|(n, c)| (n.to_string(), *c)).collect()
}

#[test]
fn folded_virtual_threads_are_one_row_that_says_how_many() {
    let mut rec = recording();
    let s = regroup(&mut rec, Grouping::Fold).unwrap();
    assert_eq!(by_name(&rec), names(&[("virtual threads (2)", 4), ("main", 2)]));
    assert_eq!((s.threads, s.samples, s.merged, s.all_samples), (2, 4, 0, 6));
    assert_eq!(s.line(), "2 sampled (66.67% of the samples), folded into one row (--vthreads each|carrier)");
    assert!(rec.samples.iter().take(4).all(|s| s.carrier == Some(ThreadIdx(0))), "the carrier is kept");
}

#[test]
fn each_virtual_thread_keeps_its_row_named_by_its_id_when_unnamed() {
    let mut rec = recording();
    regroup(&mut rec, Grouping::Each).unwrap();
    assert_eq!(by_name(&rec), names(&[("virtual thread #21", 3), ("task-22", 1), ("main", 2)]));
}

#[test]
fn by_carrier_the_samples_go_to_the_platform_thread_that_ran_them() {
    let mut rec = recording();
    regroup(&mut rec, Grouping::Carrier).unwrap();
    assert_eq!(by_name(&rec), names(&[("ForkJoinPool-1-worker-1", 4), ("main", 2)]));
    assert!(rec.samples.iter().all(|s| s.carrier.is_none()));
}

#[test]
fn a_recording_without_virtual_threads_is_left_as_it_is() {
    let mut rec = recording();
    rec.samples.retain(|s| s.carrier.is_none());
    let before = rec.clone();
    assert_eq!(regroup(&mut rec, Grouping::Fold), None);
    assert_eq!((rec.threads, rec.samples), (before.threads, before.samples));
}

#[test]
fn samples_past_the_bound_are_counted_as_merged() {
    let mut rec = recording();
    let other = rec.add_thread(ThreadInfo::other_virtual());
    rec.samples.push(Sample { thread: other, carrier: Some(ThreadIdx(0)), ..rec.samples[0].clone() });
    let s = summary(&rec, Grouping::Each).unwrap();
    assert_eq!((s.threads, s.samples, s.merged), (3, 5, 1));
    assert!(s.line().contains("1 samples of those past 65,536 under `[other virtual threads]`"), "{}", s.line());
}

#[test]
fn groupings_parse_by_name_and_refuse_others_in_one_line() {
    for g in [Grouping::Fold, Grouping::Each, Grouping::Carrier] {
        assert_eq!(Grouping::parse(g.name()), Ok(g));
    }
    assert_eq!(Grouping::parse("all").unwrap_err(), "`all`: give fold, each or carrier");
}

#[test]
fn live_virtual_threads_less_the_mounted_ones_are_the_unmounted_ones() {
    let mut v = VirtualLive::default();
    assert_eq!((v.averages(), live_line(&v)), (None, None), "not counted");
    // 1,000 live for a second, then 500 for a second; mounted: 4 on average (8 s of samples).
    v.add(1000, 1_000_000_000);
    v.add(500, 1_000_000_000);
    v.mounted_ns = 8_000_000_000;
    assert_eq!(v.averages(), Some((750.0, 4.0, 746.0)));
    assert_eq!(
        live_line(&v).unwrap(),
        "750.0 live on average (at most 1,000): 4.0 mounted, 746.0 unmounted (parked, sleeping or waiting for a carrier)"
    );
    // Samples standing for more time than the live threads had (a count begun late): none unmounted.
    v.mounted_ns = u64::MAX;
    assert_eq!(v.averages(), Some((750.0, 750.0, 0.0)));
}

#[test]
fn a_recording_whose_virtual_threads_never_ran_still_says_how_many_were_live() {
    let mut rec = recording();
    rec.samples.retain(|s| s.carrier.is_none());
    rec.virtual_live.add(10, 1_000_000_000);
    let s = summary(&rec, Grouping::Fold).unwrap();
    assert_eq!((s.threads, s.samples), (0, 0));
    assert_eq!(s.live.max, 10);
    assert_eq!(s.line(), "none sampled");
}
