//! `event=wall`: every Java thread is sampled at the interval whatever its
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
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
        assert_eq!(rec.event.name, "wall", "{}", jdk.name);
        // Per thread name: samples per state name.
        let mut by_thread: HashMap<&str, HashMap<String, u64>> = HashMap::new();
        for s in &rec.samples {
            let name = rec.threads.get(s.thread.0 as usize).map_or("", |t| t.name.as_str());
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
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
        let mut by_thread: HashMap<String, u64> = HashMap::new();
        for s in &rec.samples {
            let name = rec.threads.get(s.thread.0 as usize).map_or("", |t| t.name.as_str());
            *by_thread.entry(name.to_string()).or_default() += 1;
        }
        eprintln!("{}: {by_thread:?}", jdk.name);
        let (spin, park) = (by_thread.get("spin").copied().unwrap_or(0), by_thread.get("park").copied().unwrap_or(0));
        assert!(spin >= 100 && park >= 100, "{}: spin {spin}, park {park} samples", jdk.name);
        let others: Vec<_> = by_thread.keys().filter(|t| *t != "spin" && *t != "park").collect();
        assert!(others.is_empty(), "{}: threads outside the filter were sampled: {others:?}", jdk.name);
    }
}

/// The worker threads' samples of a wall recording, and what the agent measured: samples lost
/// because the pool had no free batch, and per worker the wall time its samples stand for
/// (their weights) against the time the recording saw the workers live (from their first
/// sample to their last, on the agent's clock).
fn kept_and_accounted(
    rec: &hpm_profile::model::Recording,
    worker: impl Fn(&str) -> bool,
) -> (u64, u64, Vec<(String, f64)>) {
    let dropped = rec
        .drops
        .iter()
        .filter(|(r, _)| *r == hpm_profile::model::DropReason::NoFreeSampleBuffer)
        .map(|(_, n)| n)
        .sum::<u64>();
    let mut per: HashMap<String, (u64, u64)> = HashMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for s in &rec.samples {
        let name = rec.threads.get(s.thread.0 as usize).map_or("", |t| t.name.as_str());
        if worker(name) {
            let e = per.entry(name.to_string()).or_default();
            e.0 += 1;
            e.1 += s.weight;
            first = first.min(s.time);
            last = last.max(s.time);
        }
    }
    let span = last.saturating_sub(first).max(1) as f64;
    let mut ratios: Vec<(String, f64)> = per.iter().map(|(t, &(_, w))| (t.clone(), w as f64 / span)).collect();
    ratios.sort_by(|a, b| a.0.cmp(&b.0));
    let kept = per.values().map(|&(n, _)| n).sum();
    (kept, dropped, ratios)
}

/// WallPool's forty threads.
fn worker(thread: &str) -> bool {
    ["spin-", "sleep-", "park-", "wait-"].iter().any(|p| thread.starts_with(p))
}

/// Asserts a 1 ms wall recording of `threads` workers kept its samples: under 1% lost for want
/// of a free batch, every worker sampled, and the workers' samples standing for the time they
/// lived: within 10% on average, 25% each (the weights are the time between visits; lost
/// samples, or ticks later than the interval counted as on time, make the sums short; which
/// ticks visit a thread makes each sum vary).
fn assert_kept(rec: &hpm_profile::model::Recording, threads: usize, worker: impl Fn(&str) -> bool, what: &str) {
    let (kept, dropped, ratios) = kept_and_accounted(rec, worker);
    let all = rec.samples.len() as u64 + dropped;
    eprintln!("{what}: {kept} worker samples, {dropped} of {all} dropped; weight/time per worker {ratios:?}");
    assert!(kept >= 20 * threads as u64, "{what}: only {kept} samples of {threads} workers");
    assert!(
        dropped * 100 < all,
        "{what}: {dropped} of {all} samples dropped for want of a free sample buffer ({:.1}%)",
        100.0 * dropped as f64 / all as f64
    );
    assert_eq!(ratios.len(), threads, "{what}: workers sampled: {ratios:?}");
    let mean = ratios.iter().map(|(_, r)| r).sum::<f64>() / threads as f64;
    assert!((0.9..=1.1).contains(&mean), "{what}: the workers' samples stand for {mean:.3} of the time they lived");
    for (t, r) in &ratios {
        assert!((0.75..=1.25).contains(r), "{what}: thread {t}'s samples stand for {r:.3} of the time it lived");
    }
}

/// `event=wall,interval=1ms` on forty threads: sixteen stacks a tick, ~16,000 a second, which
/// the session's sample pool is sized for (and the sampler waits for the processor rather than
/// drop, where it is not): nothing lost, and every thread's samples add up to its time.
#[test]
fn wall_at_1ms_on_forty_threads_keeps_its_samples() {
    for jdk in jdks() {
        let what = format!("{} WallPool", jdk.name);
        let dir = scratch(&format!("wall-pool-{}", jdk.name));
        let jfr = dir.join("wall.jfr");
        let opts = format!("event=wall,interval=1ms,file={}", jfr.display());
        let run = run_java(&jdk, Some(&opts), &[], "WallPool", &["1"]);
        run.assert_ok(&what);
        // The summary says how the pool was sized and whether the sampler had to wait.
        let line = run.stderr.lines().find(|l| l.starts_with("hpm: wall: ")).unwrap_or_default();
        eprintln!("{what}: {line}");
        assert!(line.contains("up to ") && line.contains(" 0 dropped"), "{what}: no wall line:\n{}", run.stderr);
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{what}: {e}")).recording;
        assert_kept(&rec, 40, worker, &what);
    }
}

/// The same attached to the running JVM (`hpm attach PID start,event=wall,interval=1ms`),
/// where the processor's first round also reads every method the program loaded so far.
#[test]
fn wall_at_1ms_attached_to_forty_threads_keeps_its_samples() {
    for jdk in jdks() {
        let what = format!("{} attached", jdk.name);
        let dir = scratch(&format!("wall-pool-attach-{}", jdk.name));
        let jfr = dir.join("wall.jfr");
        let mut cmd = std::process::Command::new(jdk.java());
        cmd.args(["-XX:CompileCommand=quiet", "-cp"]).arg(workloads()).args(["WallPool", "serve"]);
        let mut jvm = Attachee::spawn(cmd);
        let out = attach_ok(jvm.pid, &format!("start,event=wall,interval=1ms,quiet,file={}", jfr.display()));
        assert!(out.contains("profiling started"), "{what}: {out}");
        assert_eq!(jvm.say("work 1000"), "worked");
        attach_ok(jvm.pid, "stop");
        jvm.finish(&what);
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{what}: {e}")).recording;
        assert_kept(&rec, 40, worker, &what);
    }
}

/// A wall session's summary leaves out the VM components, which JVMTI's stacks cannot tell
/// (it said `components: Unknown 100.00%`), and gives the samples' thread states: WallStates'
/// four threads are each in one state throughout.
#[test]
fn wall_summary_gives_thread_states_not_components() {
    for jdk in jdks() {
        let what = format!("{} WallStates", jdk.name);
        let dir = scratch(&format!("wall-summary-{}", jdk.name));
        let opts = format!("event=wall,interval=10ms,file={}", dir.join("wall.jfr").display());
        let run = run_java(&jdk, Some(&opts), &[], "WallStates", &["1"]);
        run.assert_ok(&what);
        let stderr = &run.stderr;
        assert!(!stderr.contains("hpm: components:"), "{what}: a components line:\n{stderr}");
        let states = stderr.lines().find_map(|l| l.strip_prefix("hpm: thread states: ")).unwrap_or_default();
        eprintln!("{what}: {states}");
        for state in ["runnable", "sleeping", "blocked_on_monitor_enter", "parked_timed"] {
            assert!(states.contains(&format!("{state} ")), "{what}: no {state} in the states line:\n{stderr}");
        }
    }
}
