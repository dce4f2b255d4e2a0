//! `event=wall` (issue 12, item 4): every Java thread is sampled at the interval whatever its
//! state. Four threads of `WallStates` spend the run spinning, sleeping, blocked on a monitor
//! and parked: each gets about a quarter of their samples, each sample with its state, on
//! every JDK. Read back from the JFR the agent wrote (`profiler.WallClockSample` + `hpm.Sample`).

use std::collections::HashMap;

use hpm_tests::*;

#[test]
fn wall_clock_samples_every_thread_in_every_state() {
    let want = [
        ("spin", "STATE_RUNNABLE"),
        ("sleep", "STATE_SLEEPING"),
        ("blocked", "STATE_BLOCKED_ON_MONITOR_ENTER"),
        ("park", "STATE_PARKED_TIMED"),
    ];
    for jdk in jdks() {
        let dir = scratch(&format!("wall-{}", jdk.name));
        let jfr = dir.join("wall.jfr");
        let opts = format!("event=wall,interval=10ms,quiet,file={}", jfr.display());
        run_java(&jdk, Some(&opts), &[], "WallStates", &["3"]).assert_ok("WallStates");
        let rec = hpm_core::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
        assert_eq!(rec.event.name, "wall", "{}", jdk.name);
        // Per thread name: samples per state name.
        let mut by_thread: HashMap<&str, HashMap<String, u64>> = HashMap::new();
        for s in &rec.samples {
            let name = rec.threads.get(s.thread as usize).map_or("", |t| t.name.as_str());
            let state = s.state.map_or("(none)".to_string(), |i| rec.states[i as usize].clone());
            *by_thread.entry(name).or_default().entry(state).or_default() += 1;
        }
        let count = |t: &str| by_thread.get(t).map_or(0, |m| m.values().sum::<u64>());
        let total: u64 = want.iter().map(|(t, _)| count(t)).sum();
        eprintln!("{}: {by_thread:?}", jdk.name);
        assert!(total >= 800, "{}: only {total} samples of the four threads", jdk.name);
        for (thread, state) in want {
            let n = count(thread);
            let share = 100.0 * n as f64 / total as f64;
            let within = share_tolerance(25.0, total, 1.5);
            assert!(
                (share - 25.0).abs() <= within,
                "{}: thread {thread} has {share:.1}% of {total} samples (truth 25%, within {within:.1} points)",
                jdk.name
            );
            let in_state = by_thread[thread].get(state).copied().unwrap_or(0);
            assert!(
                in_state * 10 >= n * 9,
                "{}: only {in_state} of {n} samples of {thread} are {state}: {:?}",
                jdk.name,
                by_thread[thread]
            );
        }
    }
}

/// `thread=REGEX`: only the threads whose name matches are sampled, each as often as when all
/// are (the other threads' share of the round robin goes to them: same weight per visit).
#[test]
fn wall_thread_filter_keeps_only_matching_threads() {
    for jdk in jdks() {
        let dir = scratch(&format!("wall-filter-{}", jdk.name));
        let jfr = dir.join("wall.jfr");
        let opts = format!("event=wall,interval=10ms,quiet,thread=^(spin|park)$,file={}", jfr.display());
        run_java(&jdk, Some(&opts), &[], "WallStates", &["2"]).assert_ok("WallStates");
        let rec = hpm_core::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
        let mut by_thread: HashMap<String, u64> = HashMap::new();
        for s in &rec.samples {
            let name = rec.threads.get(s.thread as usize).map_or("", |t| t.name.as_str());
            *by_thread.entry(name.to_string()).or_default() += 1;
        }
        eprintln!("{}: {by_thread:?}", jdk.name);
        let (spin, park) = (by_thread.get("spin").copied().unwrap_or(0), by_thread.get("park").copied().unwrap_or(0));
        assert!(spin >= 100 && park >= 100, "{}: spin {spin}, park {park} samples", jdk.name);
        let others: Vec<_> = by_thread.keys().filter(|t| *t != "spin" && *t != "park").collect();
        assert!(others.is_empty(), "{}: threads outside the filter were sampled: {others:?}", jdk.name);
    }
}
