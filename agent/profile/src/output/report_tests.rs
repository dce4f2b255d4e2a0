use super::*;
use crate::model::{EventInfo, Frame, FrameKind, KernelMode, MethodInfo, PeriodUnit, Sample, ThreadIdx, ThreadInfo};
use crate::output::threads::SampledThreads;

/// A recording with `counters`; each stack spec is (root-first methods, thread, count,
/// counter deltas per sample, component).
fn recording(counters: &[&str]) -> Recording {
    let mut rec = Recording {
        event: EventInfo {
            name: "cpu-clock".into(),
            requested: "cycles".into(),
            period: 1_000_000,
            unit: PeriodUnit::Nanoseconds,
            fallback: Some("perf_event_paranoid is 3".into()),
            sampler: "asgct".into(),
            kernel: KernelMode::Counted,
            alloc_interval: 0,
        },
        counters: counters.iter().map(|s| s.to_string()).collect(),
        start_ticks: 1_000,
        end_ticks: 2_500_001_000,
        pid: 4242,
        ..Default::default()
    };
    let t0 = rec.add_thread(ThreadInfo {
        os_tid: 10,
        java_id: Some(1),
        name: "main".into(),
        is_java: true,
        is_virtual: false,
    });
    let t1 = rec.add_thread(ThreadInfo {
        os_tid: 11,
        java_id: None,
        name: "GC Thread#0".into(),
        is_java: false,
        is_virtual: false,
    });
    let main = rec.methods.intern(MethodInfo::java("app.Main", "main", "([Ljava/lang/String;)V"));
    let hot = rec.methods.intern(MethodInfo::java("app.Hot", "loop", "()V"));
    let get =
        rec.methods.intern(MethodInfo::java("java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;"));
    let gc = rec.methods.intern(MethodInfo::native("[GC]"));
    let f = |m, kind| Frame { method: m, bci: -1, line: -1, kind };
    let n = counters.len();
    let mut push = |stack: Vec<Frame>, thread, count: usize, per: Vec<u64>, component| {
        for _ in 0..count {
            rec.samples.push(Sample {
                carrier: None,
                time: 0,
                thread,
                stack: stack.clone().into(),
                truncated: false,
                weight: 1_000_000,
                repeat: 1,
                counters: per[..n].to_vec(),
                data_addr: None,
                data: None,
                ip: 0,
                component,
                state: None,
            });
        }
    };
    // Leaf first.
    push(
        vec![f(hot, FrameKind::JitCompiled), f(main, FrameKind::Interpreted)],
        t0,
        60,
        vec![300, 100, 0],
        VmComponent::Java,
    );
    push(
        vec![f(get, FrameKind::Inlined), f(hot, FrameKind::JitCompiled), f(main, FrameKind::Interpreted)],
        t0,
        25,
        vec![100, 100, 1],
        VmComponent::Java,
    );
    push(vec![f(main, FrameKind::Interpreted)], t0, 5, vec![10, 10, 2], VmComponent::Interpreter);
    push(vec![f(gc, FrameKind::Cpp)], t1, 10, vec![50, 0, 3], VmComponent::Gc);
    rec.add_drops("ring full", 7);
    rec.add_drops("no java frame", 3);
    rec
}

fn table_rows<'a>(report: &'a str, section: &str) -> Vec<&'a str> {
    let start = report.find(section).unwrap_or_else(|| panic!("no section {section}\n{report}"));
    report[start..].lines().skip(2).take_while(|l| !l.is_empty()).collect()
}

fn pct_value(cell: &str) -> f64 {
    cell.trim_end_matches('%').parse().unwrap()
}

#[test]
fn self_percentages_add_up_to_100() {
    let rec = recording(&["cycles", "instructions"]);
    let cct = Cct::from_recording(&rec, false);
    let r = full_report(Some(&rec), &cct, &Tallies::of(&rec), &ReportOptions { top: 100, ..Default::default() });
    let rows = table_rows(&r, "== Top 100 methods");
    assert_eq!(rows.len(), 4, "{r}");
    let sum: f64 = rows.iter().map(|l| pct_value(l.split_whitespace().next().unwrap())).sum();
    assert!((sum - 100.0).abs() < 0.02, "{sum}\n{r}");
    // Counter share columns also add up, per counter.
    let cyc: f64 = rows.iter().map(|l| pct_value(l.split_whitespace().nth(4).unwrap())).sum();
    assert!((cyc - 100.0).abs() < 0.02, "{cyc}\n{r}");
    assert!(rows[0].ends_with("app.Hot.loop"), "{}", rows[0]);
    assert!(rows[0].starts_with("  60.00%"), "{}", rows[0]);
}

#[test]
fn cpi_only_with_cycles_and_instructions() {
    let rec = recording(&["cycles", "instructions"]);
    let cct = Cct::from_recording(&rec, false);
    let r = full_report(Some(&rec), &cct, &Tallies::default(), &ReportOptions::default());
    assert!(r.contains("== CPI profile"), "{r}");
    // app.Hot.loop: 60*300 cycles / 60*100 instructions.
    let hot = table_rows(&r, "== CPI profile").into_iter().find(|l| l.ends_with("app.Hot.loop")).unwrap();
    assert!(hot.contains(" 3.00 "), "{hot}");
    // [GC] has cycles but no instructions: CPI is undefined, not 0 or infinite.
    let gc = table_rows(&r, "== CPI profile").into_iter().find(|l| l.ends_with("[GC]")).unwrap();
    assert!(gc.contains(" - "), "{gc}");

    let rec = recording(&["cycles"]);
    let cct = Cct::from_recording(&rec, false);
    let r = full_report(Some(&rec), &cct, &Tallies::default(), &ReportOptions::default());
    assert!(!r.contains("CPI"), "{r}");
    assert!(r.contains("cycles%"));

    let rec = recording(&[]);
    let cct = Cct::from_recording(&rec, false);
    let r = full_report(Some(&rec), &cct, &Tallies::default(), &ReportOptions::default());
    assert!(!r.contains("CPI") && !r.contains("Counters per method"), "{r}");
    assert!(r.contains("counters:   none"));
}

#[test]
fn other_counters_get_totals_and_per_sample() {
    let rec = recording(&["task-clock", "page-faults", "minor"]);
    let cct = Cct::from_recording(&rec, false);
    let r = full_report(Some(&rec), &cct, &Tallies::default(), &ReportOptions::default());
    assert!(!r.contains("CPI"));
    let rows = table_rows(&r, "== Counters per method");
    let get = rows.iter().find(|l| l.ends_with("java.util.HashMap.get")).unwrap();
    // 25 samples x 100 task-clock: 2,500 total, 100 per sample.
    assert!(get.contains("2,500") && get.contains(" 100.0 "), "{get}");
    let all = rows.last().unwrap();
    assert!(all.ends_with("(all)"));
}

#[test]
fn header_components_tree_and_drops() {
    let rec = recording(&["cycles", "instructions"]);
    let cct = Cct::from_recording(&rec, false);
    let comps = component_counts(&rec.samples);
    assert_eq!(comps, vec![(VmComponent::Java, 85), (VmComponent::Interpreter, 5), (VmComponent::Gc, 10)]);
    let tallies = Tallies { components: comps, ..Tallies::of(&rec) };
    let r = full_report(Some(&rec), &cct, &tallies, &ReportOptions { min_percent: 8.0, ..Default::default() });
    assert!(r.contains("event:      cpu-clock, interval 1 ms, sampler asgct"), "{r}");
    assert!(r.contains("fallback:   requested `cycles` could not be used (perf_event_paranoid is 3)"));
    assert!(r.contains("duration:   2.5 s"));
    assert!(r.contains("samples:    100, 10 dropped (ring full: 7, no java frame: 3)"));
    assert!(r.contains("threads:    2 sampled (1 Java, 1 VM) of 2 seen by the session"), "{r}");
    let comp = table_rows(&r, "== VM components");
    assert_eq!(comp[0].split_whitespace().collect::<Vec<_>>(), ["Java", "85", "85.00%"]);
    assert_eq!(comp[1].split_whitespace().collect::<Vec<_>>(), ["GC", "10", "10.00%"]);
    let tree = table_rows(&r, "== Call tree");
    assert!(tree[0].ends_with("  all"));
    assert!(tree.iter().any(|l| l.ends_with("      java.util.HashMap.get")), "{tree:?}");
    // app.Main.main's 5 self samples stay; nothing under 8% is listed, but it is summarised.
    let drops = table_rows(&r, "== Dropped samples");
    assert_eq!(drops.len(), 3);
    assert!(drops[0].starts_with("ring full") && drops[0].contains("6.36%"), "{}", drops[0]);
    let threads = table_rows(&r, "== Threads");
    assert_eq!(
        threads,
        [
            "        90   90.00%   97.62%       100.00%   2.40       10  main",
            "        10   10.00%    2.38%         0.00%      -       11  GC Thread#0"
        ]
    );
}

#[test]
fn a_filter_is_said_in_the_header_and_drops_stay_shares_of_the_run() {
    let mut rec = recording(&[]);
    let applied = crate::filter::SampleFilter::new(Some("^GC"), None, None).unwrap().apply(&mut rec).unwrap();
    let cct = Cct::from_recording(&rec, false);
    let opts = ReportOptions { filtered: applied, ..Default::default() };
    let r = full_report(Some(&rec), &cct, &Tallies::of(&rec), &opts);
    assert!(r.contains("samples:    10 of 100 (filter below); in the whole recording 10 dropped"), "{r}");
    assert!(r.contains("\nfilter:     threads matching `^GC` (1 of 2); 10 of 100 samples kept\n"), "{r}");
    assert_eq!(table_rows(&r, "== Threads"), ["        10  100.00%       11  GC Thread#0"]);
    // 7 of the run's 110 attempted samples (100 taken, 10 lost), not of the 10 kept plus 10 lost.
    let drops = table_rows(&r, "== Dropped samples");
    assert!(drops[0].starts_with("ring full") && drops[0].contains("6.36%"), "{}", drops[0]);
}

#[test]
fn tree_cut_is_summarised() {
    let mut cct = Cct::default();
    cct.add_stack(&["main", "big"], 95, 95, &[]);
    cct.add_stack(&["main", "small1"], 3, 3, &[]);
    cct.add_stack(&["main", "small2"], 2, 2, &[]);
    let r = full_report(None, &cct, &Tallies::default(), &ReportOptions { min_percent: 5.0, ..Default::default() });
    assert!(r.contains("source:     collapsed stacks"), "{r}");
    assert!(!r.contains("event:") && !r.contains("Dropped"), "{r}");
    let tree = table_rows(&r, "== Call tree");
    assert_eq!(tree.len(), 4, "{tree:?}");
    assert!(tree[3].trim_start().starts_with("5.00%") && tree[3].ends_with("(2 more callees below 5%)"), "{}", tree[3]);
    assert!(r.contains("(not recorded in this profile)"));
}

#[test]
fn per_thread_tree_leaves_threads_out_of_method_tables() {
    let rec = recording(&[]);
    let cct = Cct::from_recording(&rec, true);
    let r = full_report(
        Some(&rec),
        &cct,
        &Tallies::default(),
        &ReportOptions { top: 100, threads: true, ..Default::default() },
    );
    let rows = table_rows(&r, "== Top 100 methods");
    assert!(rows.iter().all(|l| !l.contains("tid=")), "{rows:?}");
    let tree = table_rows(&r, "== Call tree per thread");
    assert!(tree[1].ends_with("  [main tid=10]"), "{tree:?}");
}

#[test]
fn summary_is_short_and_complete() {
    let rec = recording(&["cycles", "instructions"]);
    let cct = Cct::from_recording(&rec, false);
    let s = summary(&rec, &cct, &component_counts(&rec.samples), &SampledThreads::of(&rec));
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines.len() <= 20, "{s}");
    assert!(lines.iter().all(|l| l.starts_with("hpm: ")));
    assert_eq!(lines[0], "hpm: event cpu-clock, interval 1 ms, sampler asgct");
    assert!(lines[1].contains("requested `cycles` could not be used"));
    assert_eq!(lines[2], "hpm: 100 samples, 10 dropped (ring full: 7, no java frame: 3)");
    assert_eq!(lines[3], "hpm: threads: 2 sampled (1 Java, 1 VM) of 2 seen by the session");
    assert!(lines[5].contains("60.00%") && lines[5].ends_with("app.Hot.loop"), "{s}");
    assert_eq!(lines.last().unwrap(), &"hpm: components: Java 85.00%, GC 10.00%, Interpreter 5.00%");
    assert_eq!(s, summary(&rec, &cct, &component_counts(&rec.samples), &SampledThreads::of(&rec)));
}

#[test]
fn summary_without_extras_prints_no_made_up_lines() {
    let mut rec = Recording::default();
    rec.event.fallback = None;
    let mut cct = Cct::default();
    for i in 0..15 {
        cct.add_stack(&[format!("m{i:02}")], 1 + i, 0, &[]);
    }
    let s = summary(&rec, &cct, &[], &SampledThreads::default());
    assert!(!s.contains("threads") && !s.contains("components") && !s.contains("requested"), "{s}");
    assert_eq!(s.lines().filter(|l| l.contains("  m")).count(), 10, "{s}");
    assert!(s.contains("hpm: 120 samples, none dropped"), "{s}");
}

/// A wall-clock profile's samples are unclassified (JVMTI does not say how a frame runs): its
/// summary leaves the components out, where it said `Unknown 100.00%`, and gives the samples'
/// thread states instead.
#[test]
fn a_wall_summary_gives_thread_states_not_unclassified_components() {
    let mut rec = Recording::default();
    rec.event.name = "wall".into();
    let sleeping = rec.state_idx("STATE_SLEEPING");
    let runnable = rec.state_idx("STATE_RUNNABLE");
    let mut cct = Cct::default();
    cct.add_stack(&["java.lang.Thread.sleep".to_string()], 4, 0, &[]);
    let s = summary(&rec, &cct, &[(VmComponent::Unknown, 4)], &SampledThreads::default());
    assert!(!s.contains("components"), "{s}");
    let states = [(runnable, 1), (sleeping, 2), (sleeping, 1)];
    assert_eq!(
        crate::output::states_line(&rec, &states).as_deref(),
        Some("sleeping 75.00%, runnable 25.00%"),
        "largest first, without JFR's prefix, merged"
    );
    assert_eq!(crate::output::states_line(&rec, &[]), None, "a CPU profile has no states");
    // A profile with classified samples keeps its line, its unclassified ones in it.
    let s = summary(&rec, &cct, &[(VmComponent::Unknown, 1), (VmComponent::Java, 3)], &SampledThreads::default());
    assert!(s.contains("hpm: components: Java 75.00%, Unknown 25.00%"), "{s}");
}

/// `cargo test -p hpm-profile print_example_report -- --ignored --nocapture` shows the layout.
#[test]
#[ignore]
fn print_example_report() {
    for counters in [&["cycles", "instructions"][..], &["task-clock", "page-faults"][..]] {
        let rec = recording(counters);
        let cct = Cct::from_recording(&rec, false);
        let comps = component_counts(&rec.samples);
        println!("{}", summary(&rec, &cct, &comps, &SampledThreads::of(&rec)));
        println!("{}", full_report(Some(&rec), &cct, &Tallies::of(&rec), &ReportOptions::default()));
    }
}

/// The JVM's events (`--event lock`) are counted by what they weigh, as the flame graphs and
/// pprof count them: two long waits outweigh six short ones.
#[test]
fn events_are_counted_by_weight_when_asked() {
    let mut cct = Cct::default();
    cct.add_stack(&["main", "FutureTask"], 2, 2_992_000_000, &[]);
    cct.add_stack(&["main", "int[]"], 6, 60_000_000, &[]);
    let by_weight = ReportOptions { by: Measure::Weight, ..Default::default() };
    let r = full_report(None, &cct, &Tallies::default(), &by_weight);
    let top = table_rows(&r, "== Top 20 methods by self weight");
    assert!(top[0].ends_with("FutureTask") && top[0].trim_start().starts_with("98.03%"), "{r}");
    assert!(top[1].ends_with("int[]") && top[1].trim_start().starts_with("1.97%"), "{r}");
    let tree = table_rows(&r, "== Call tree: frames with at least 1% of weight");
    assert!(tree[2].trim_end().ends_with("FutureTask") && tree[3].trim_end().ends_with("int[]"), "{tree:?}");
    // By samples, as for CPU samples, the six come first.
    let r = full_report(None, &cct, &Tallies::default(), &ReportOptions::default());
    let top = table_rows(&r, "== Top 20 methods by self samples");
    assert!(top[0].ends_with("int[]") && top[0].trim_start().starts_with("75.00%"), "{r}");
}

#[test]
fn threads_with_samples_of_those_seen() {
    let mut rec = recording(&[]);
    // A third thread seen, without samples; a JFR file says it saw 5.
    rec.add_thread(ThreadInfo { os_tid: 12, java_id: Some(2), name: "idle".into(), is_java: true, is_virtual: false });
    let cct = Cct::from_recording(&rec, false);
    let r = full_report(Some(&rec), &cct, &Tallies::of(&rec), &ReportOptions::default());
    assert!(r.contains("\nthreads:    2 sampled (1 Java, 1 VM) of 3 seen by the session\n"), "{r}");
    rec.threads_seen = 5;
    let r = full_report(Some(&rec), &cct, &Tallies::of(&rec), &ReportOptions::default());
    assert!(r.contains("\nthreads:    2 sampled (1 Java, 1 VM) of 5 seen by the session\n"), "{r}");
}

#[test]
fn a_filtered_header_counts_what_the_filter_kept_of_all() {
    let rec = recording(&[]);
    let cct = Cct::from_recording(&rec, false);
    let filtered = crate::filter::Applied {
        samples_before: 250,
        samples_kept: 100,
        threads: None,
        from_ns: None,
        to_ns: None,
        phase: Some("steady".into()),
    };
    let opts = ReportOptions { filtered: Some(filtered), ..Default::default() };
    let r = full_report(Some(&rec), &cct, &Tallies::of(&rec), &opts);
    assert!(r.contains("\nsamples:    100 of 250 (filter below); in the whole recording 10 dropped"), "{r}");
    assert!(r.contains("\nfilter:     from phase `steady` on; 100 of 250 samples kept\n"), "{r}");
}

#[test]
fn sampling_line_says_what_a_session_samples() {
    let cpu = EventInfo {
        name: "cpu-clock".into(),
        period: 10_000_000,
        unit: PeriodUnit::Nanoseconds,
        sampler: "asgct".into(),
        ..Default::default()
    };
    assert_eq!(sampling_line(&cpu, None, None), "event cpu-clock every 10 ms, sampler asgct");
    // The agent's session without a sampling event (`event=alloc` alone).
    let none = EventInfo { name: "none".into(), sampler: "none".into(), period: 0, ..Default::default() };
    assert_eq!(sampling_line(&none, Some(512 * 1024), None), "alloc every 512 KiB allocated");
    assert_eq!(sampling_line(&none, None, Some(10_000_000)), "lock waits of 10 ms or more");
    assert_eq!(
        sampling_line(&cpu, Some(1000), Some(0)),
        "event cpu-clock every 10 ms, sampler asgct + alloc every 1,000 bytes allocated + every lock wait"
    );
    let cycles = EventInfo { name: "cycles".into(), period: 1_000_003, unit: PeriodUnit::Events, ..cpu };
    assert!(sampling_line(&cycles, None, None).starts_with("event cycles every 1,000,003 events"));
}

#[test]
fn virtual_threads_fold_into_one_row_and_have_a_header_line_of_their_own() {
    // main's 90 samples become those of two virtual threads carried by `main`'s kernel thread.
    let mut rec = recording(&[]);
    let v1 = rec.add_thread(ThreadInfo::virtual_thread(21, String::new()));
    let v2 = rec.add_thread(ThreadInfo::virtual_thread(22, String::new()));
    for (i, s) in rec.samples.iter_mut().filter(|s| s.thread == ThreadIdx(0)).enumerate() {
        s.carrier = Some(s.thread);
        s.thread = if i % 3 == 0 { v2 } else { v1 };
    }
    let vthreads = crate::vthreads::regroup(&mut rec, crate::vthreads::Grouping::Fold);
    let cct = Cct::from_recording(&rec, false);
    let tallies = Tallies { vthreads, ..Tallies::of(&rec) };
    let r = full_report(Some(&rec), &cct, &tallies, &ReportOptions::default());
    assert!(r.contains("\nthreads:    1 sampled (0 Java, 1 VM) of 2 seen by the session\n"), "{r}");
    assert!(
        r.contains("\nvirtual:    2 sampled (90.00% of the samples), folded into one row (--vthreads each|carrier)\n"),
        "{r}"
    );
    let rows = table_rows(&r, "== Threads ==");
    assert!(rows[0].ends_with("        -  virtual threads (2)"), "{}", rows[0]);
    assert!(rows[0].trim_start().starts_with("90 "), "{}", rows[0]);
}
