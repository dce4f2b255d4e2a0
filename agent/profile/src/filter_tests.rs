use super::*;
use crate::model::ThreadIdx;
use crate::model::{Frame, FrameKind, MethodInfo, Sample, ThreadInfo};

const START: u64 = 5_000_000_000;
const WALL: u64 = 1_714_564_800_000_000_000; // 2024-05-01T12:00:00Z

/// Threads `main`, `worker-1`, `worker-2`; thread i has a sample every 100 ms from 0 to 900 ms
/// after the start (10 each, 30 in all).
fn recording() -> Recording {
    let mut rec =
        Recording { start_ticks: START, end_ticks: START + 1_000_000_000, start_wall_ns: WALL, ..Default::default() };
    for (i, name) in ["main", "worker-1", "worker-2"].iter().enumerate() {
        rec.add_thread(ThreadInfo {
            os_tid: 100 + i as u32,
            java_id: Some(i as u64),
            name: name.to_string(),
            is_java: true,
            is_virtual: false,
        });
    }
    let m = rec.methods.intern(MethodInfo::java("A", "f", "()V"));
    let stack: crate::model::Stack = vec![Frame { method: m, bci: 0, line: 1, kind: FrameKind::JitCompiled }].into();
    for k in 0..10u64 {
        for t in 0..3u32 {
            rec.samples.push(Sample {
                time: START + k * 100_000_000,
                thread: ThreadIdx(t),
                ..Sample::of_stack(stack.clone())
            });
        }
    }
    rec
}

fn apply(thread: Option<&str>, from: Option<&str>, to: Option<&str>) -> Result<(Recording, Option<Applied>), String> {
    let mut rec = recording();
    let applied = SampleFilter::new(thread, from, to)?.apply(&mut rec)?;
    Ok((rec, applied))
}

#[test]
fn times_parse_in_every_unit() {
    assert_eq!(parse_time("2.5s"), Ok(TimePoint::Offset(2_500_000_000)));
    assert_eq!(parse_time("1500ms"), Ok(TimePoint::Offset(1_500_000_000)));
    assert_eq!(parse_time("250us"), Ok(TimePoint::Offset(250_000)));
    assert_eq!(parse_time("100ns"), Ok(TimePoint::Offset(100)));
    assert_eq!(parse_time("2m"), Ok(TimePoint::Offset(120_000_000_000)));
    assert_eq!(parse_time("3"), Ok(TimePoint::Offset(3_000_000_000)));
    assert_eq!(parse_time(" 0.5 s "), Ok(TimePoint::Offset(500_000_000)));
    for bad in ["", "s", "2.5h", "-1s", "1e3s", "1.2.3s", "abc"] {
        let e = parse_time(bad).unwrap_err();
        assert!(e.contains("is not a time") && e.contains("2.5s"), "{bad}: {e}");
    }
    assert!(parse_time("99999999999s").unwrap_err().contains("later than any recording"));
    assert!(parse_time(&"1".repeat(100)).unwrap_err().contains("too long"));
}

#[test]
fn iso_times_parse_with_their_zone() {
    assert_eq!(parse_time("2024-05-01T12:00:00Z"), Ok(TimePoint::Wall(WALL)));
    assert_eq!(parse_time("2024-05-01T12:00:02.5Z"), Ok(TimePoint::Wall(WALL + 2_500_000_000)));
    assert_eq!(parse_time("2024-05-01 14:00:02.25+02:00"), Ok(TimePoint::Wall(WALL + 2_250_000_000)));
    assert_eq!(parse_time("2024-05-01T11:30-0030"), Ok(TimePoint::Wall(WALL)));
    assert_eq!(parse_time("1970-01-01T00:00:00.000000001Z"), Ok(TimePoint::Wall(1)));
    assert_eq!(parse_time("2000-02-29T00:00:00Z"), Ok(TimePoint::Wall(951_782_400_000_000_000)));
    let e = parse_time("2024-05-01T12:00:00").unwrap_err();
    assert!(e.contains("no zone") && e.contains("Z"), "{e}");
    assert!(parse_time("2023-02-29T00:00:00Z").unwrap_err().contains("no such date"));
    assert!(parse_time("2024-05-01T25:00:00Z").unwrap_err().contains("no such time"));
    assert!(parse_time("2024-05-01T12:00:00+5").unwrap_err().contains("zone"));
    assert!(parse_time("1969-12-31T23:59:59Z").unwrap_err().contains("before 1970"));
}

#[test]
fn threads_are_selected_by_name() {
    let (rec, a) = apply(Some("^worker-"), None, None).unwrap();
    assert_eq!(rec.samples.len(), 20);
    assert!(rec.samples.iter().all(|s| s.thread != ThreadIdx(0)));
    let a = a.unwrap();
    assert_eq!((a.samples_before, a.samples_kept), (30, 20));
    assert_eq!(a.describe(), "threads matching `^worker-` (2 of 3); 20 of 30 samples kept");
}

#[test]
fn a_time_range_is_half_open_from_the_start() {
    let (rec, a) = apply(None, Some("200ms"), Some("0.5s")).unwrap();
    // Samples at 200, 300 and 400 ms of each of 3 threads; the one at 500 ms is not kept.
    assert_eq!(rec.samples.len(), 9);
    assert_eq!(a.unwrap().describe(), "from 200 ms to 500 ms; 9 of 30 samples kept");
    let (rec, a) = apply(Some("main"), Some("700ms"), None).unwrap();
    assert_eq!(rec.samples.len(), 3);
    assert_eq!(a.unwrap().describe(), "threads matching `main` (1 of 3), from 700 ms on; 3 of 30 samples kept");
    let (rec, _) = apply(None, None, Some("100ms")).unwrap();
    assert_eq!(rec.samples.len(), 3);
}

#[test]
fn absolute_times_use_the_wall_clock_start() {
    let (rec, a) = apply(None, Some("2024-05-01T12:00:00.8Z"), Some("2024-05-01T14:00:00.9+02:00")).unwrap();
    assert_eq!(rec.samples.len(), 3);
    assert_eq!(a.unwrap().describe(), "from 800 ms to 900 ms; 3 of 30 samples kept");
    // Before the start: everything from the start on.
    let (rec, _) = apply(None, Some("2024-05-01T11:00:00Z"), None).unwrap();
    assert_eq!(rec.samples.len(), 30);
    // A recording without a wall-clock start cannot place them.
    let mut rec = recording();
    rec.start_wall_ns = 0;
    let e = SampleFilter::new(None, Some("2024-05-01T12:00:00Z"), None).unwrap().apply(&mut rec).unwrap_err();
    assert!(e.contains("no wall-clock start") && e.contains("2.5s"), "{e}");
}

#[test]
fn an_empty_filter_changes_nothing() {
    let (rec, a) = apply(None, None, None).unwrap();
    assert_eq!((rec.samples.len(), a), (30, None));
}

#[test]
fn nothing_left_is_an_error_that_says_why() {
    let e = apply(Some("gc"), None, None).unwrap_err();
    assert!(e.contains("--thread `gc` matches no thread") && e.contains("`main`, `worker-1`, `worker-2`"), "{e}");
    let e = apply(None, Some("5s"), None).unwrap_err();
    assert!(e.contains("no samples from 5 s on") && e.contains("lie between 0 ns and 900 ms"), "{e}");
    let mut rec = recording();
    rec.samples.retain(|s| s.thread != ThreadIdx(1) || s.time < START + 300_000_000);
    let e = SampleFilter::new(Some("worker-1"), Some("500ms"), None).unwrap().apply(&mut rec).unwrap_err();
    assert!(e.contains("threads matching `worker-1` have no samples from 500 ms on") && e.contains("200 ms"), "{e}");
    // An empty recording is not an error: there was nothing to select from.
    let mut empty = Recording::default();
    assert!(SampleFilter::new(Some("x"), None, None).unwrap().apply(&mut empty).unwrap().is_some());
}

#[test]
fn bad_flags_are_one_line_errors() {
    let e = SampleFilter::new(Some("worker-("), None, None).unwrap_err();
    assert!(e.starts_with("--thread `worker-(` is not a regular expression (unclosed group)"), "{e}");
    assert_eq!(e.lines().count(), 1);
    let e = SampleFilter::new(Some(&"a".repeat(MAX_PATTERN_BYTES + 1)), None, None).unwrap_err();
    assert!(e.contains("longer than hpm takes"), "{e}");
    let e = SampleFilter::new(Some("\\w{1000}{1000}"), None, None).unwrap_err();
    assert!(e.contains("compiles to more than"), "{e}");
    let e = SampleFilter::new(None, Some("2s"), Some("1s")).unwrap_err();
    assert_eq!(e, "--from 2 s is not before --to 1 s; give a range");
    assert!(SampleFilter::new(None, Some("soon"), None).unwrap_err().starts_with("--from `soon` is not a time"));
    assert!(SampleFilter::new(None, None, Some("x")).unwrap_err().starts_with("--to `x`"));
}

#[test]
fn lock_class_keeps_the_matching_lock_waits_and_every_allocation() {
    use crate::model::{JvmEvent, JvmEventKind};
    let mut rec = Recording::default();
    let stack: crate::model::Stack = std::sync::Arc::from(Vec::new());
    for (kind, class) in [
        (JvmEventKind::MonitorEnter, Some("app.PriceCache")),
        (JvmEventKind::ThreadPark, Some("java.util.concurrent.locks.ReentrantLock$NonfairSync")),
        (JvmEventKind::ThreadPark, None),
        (JvmEventKind::Allocation, Some("byte[]")),
    ] {
        let mut e = JvmEvent::of(kind, stack.clone());
        e.class = class.map(Into::into);
        rec.events.push(e);
    }
    let f = SampleFilter::new(None, None, None).unwrap().with_lock_class(Some("PriceCache|no blocker")).unwrap();
    assert_eq!(f.keep_lock_classes(&mut rec), Some(1));
    let kept: Vec<Option<&str>> = rec.events.iter().map(|e| e.class.as_deref()).collect();
    assert_eq!(kept, [Some("app.PriceCache"), None, Some("byte[]")]);
    assert!(SampleFilter::new(None, None, None)
        .unwrap()
        .with_lock_class(Some("("))
        .unwrap_err()
        .starts_with("--lock-class"));
    assert_eq!(SampleFilter::default().keep_lock_classes(&mut rec), None);
}
