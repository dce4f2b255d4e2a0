//! `event=wall`: every Java thread is sampled at the interval whatever its
//! state, by signals (no VM operation per tick). Four threads of `WallStates` spend the run spinning, sleeping, blocked on a monitor
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

/// A wall session's summary gives the samples' thread states (WallStates' four threads are
/// each in one state throughout) and, its stacks walked by hpm's walker, VM components that
/// are classified (with JVMTI's stacks it said `components: Unknown 100.00%`).
#[test]
fn wall_summary_gives_thread_states_and_classified_components() {
    for jdk in jdks() {
        let what = format!("{} WallStates", jdk.name);
        let dir = scratch(&format!("wall-summary-{}", jdk.name));
        let opts = format!("event=wall,interval=10ms,file={}", dir.join("wall.jfr").display());
        let run = run_java(&jdk, Some(&opts), &[], "WallStates", &["1"]);
        run.assert_ok(&what);
        let stderr = &run.stderr;
        assert!(!stderr.contains("hpm: components: Unknown 100"), "{what}: unclassified components:\n{stderr}");
        let states = stderr.lines().find_map(|l| l.strip_prefix("hpm: thread states: ")).unwrap_or_default();
        eprintln!("{what}: {states}");
        for state in ["runnable", "sleeping", "blocked_on_monitor_enter", "parked_timed"] {
            assert!(states.contains(&format!("{state} ")), "{what}: no {state} in the states line:\n{stderr}");
        }
    }
}

/// WallMix's seven threads and the state each spends its life in (Process.waitFor waits in
/// Object.wait on JDK 17, parked on a lock's condition on later JDKs).
const MIX: [(&str, &str); 7] = [
    ("spin", "STATE_RUNNABLE"),
    ("sleep", "STATE_SLEEPING"),
    ("blocked", "STATE_BLOCKED_ON_MONITOR_ENTER"),
    ("park", "STATE_PARKED"),
    ("socket", "STATE_IN_NATIVE"),
    ("process", "STATE_IN_OBJECT_WAIT|STATE_PARKED"),
    ("select", "STATE_IN_NATIVE"),
];

/// The safepoint operations a `-Xlog:safepoint` file names, with their counts.
fn safepoint_ops(log: &std::path::Path) -> HashMap<String, u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut ops = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.split_once("Safepoint \"").map(|(_, r)| r) {
            let name = rest.split('"').next().unwrap_or_default().to_string();
            *ops.entry(name).or_default() += 1;
        }
    }
    ops
}

/// WallMix ROUNDS WAIT_MS on `jdk`, with the safepoint log in `dir`: its run, and per thread
/// kind how long it lived (ms) by its own clock.
fn run_mix(jdk: &Jdk, dir: &std::path::Path, name: &str, opts: Option<&str>) -> (Run, HashMap<String, f64>) {
    let log = dir.join(format!("{name}.safepoints"));
    let xlog = format!("-Xlog:safepoint:file={}", log.display());
    let run = run_java(jdk, opts, &[&xlog], "WallMix", &["3", "1500"]);
    let lived = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ok "))
        .filter_map(|l| l.split_once(' ').and_then(|(k, ms)| Some((k.to_string(), ms.parse().ok()?))))
        .collect();
    (run, lived)
}

/// `event=wall` by signals at 1 ms, on threads that spin, sleep, wait for a monitor, park, read
/// a socket, wait for a process and wait in a Selector: every wait ends as it should (the signal
/// wakes blocking system calls; hpm's handler has SA_RESTART, which restarts read and waitpid;
/// Thread.sleep and park loop in the JVM until their time is up, on condition waits that never
/// end in EINTR; Selector.select retries epoll_wait with the time left: no exception, no early
/// return, checked by the workload itself); no safepoint of hpm's in `-Xlog:safepoint` (the
/// operations against the same program without hpm: none that takes stacks, GetThreadListStack-
/// Traces before); each thread's samples in its state (>= 90%), and its share of the wall time
/// within 5 points of its share of the threads' lives.
#[test]
fn wall_by_signals_keeps_waits_whole_adds_no_safepoint_and_gets_states_and_shares() {
    for jdk in jdks() {
        let what = format!("{} WallMix", jdk.name);
        let dir = scratch(&format!("wall-mix-{}", jdk.name));
        let (bare, _) = run_mix(&jdk, &dir, "bare", None);
        bare.assert_ok(&format!("{what} without hpm"));
        let jfr = dir.join("wall.jfr");
        let opts = format!("event=wall,interval=1ms,file={}", jfr.display());
        let (run, lived) = run_mix(&jdk, &dir, "hpm", Some(&opts));
        run.assert_ok(&what);
        eprintln!("{what}: {}", run.stdout.trim());
        for (kind, _) in MIX {
            assert!(lived.contains_key(kind), "{what}: {kind}'s waits did not all end as they should:\n{}", run.stdout);
        }
        // Safepoints: hpm's would be operations the bare run does not have.
        let (without, with) = (safepoint_ops(&dir.join("bare.safepoints")), safepoint_ops(&dir.join("hpm.safepoints")));
        eprintln!("{what}: safepoints without hpm {without:?}, with hpm {with:?}");
        let taking_stacks: Vec<_> =
            with.keys().filter(|op| op.contains("StackTrace") || op.contains("ThreadDump")).collect();
        assert!(taking_stacks.is_empty(), "{what}: safepoints that take stacks: {taking_stacks:?}");
        let added: u64 = with.iter().filter(|(op, _)| !without.contains_key(*op)).map(|(_, n)| n).sum();
        let total = |m: &HashMap<String, u64>| m.values().sum::<u64>();
        assert!(
            added <= 5 && total(&with) <= total(&without) + 10,
            "{what}: hpm added safepoints: {} with, {} without, {added} of operations the bare run has not",
            total(&with),
            total(&without)
        );
        // States and shares.
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{what}: {e}")).recording;
        let mut weight: HashMap<&str, u64> = HashMap::new();
        let mut states: HashMap<&str, HashMap<String, u64>> = HashMap::new();
        for s in &rec.samples {
            let name = rec.threads.get(s.thread.0 as usize).map_or("", |t| t.name.as_str());
            if let Some(&(kind, _)) = MIX.iter().find(|(k, _)| *k == name) {
                *weight.entry(kind).or_default() += s.weight;
                let state = s.state.map_or("(none)".to_string(), |i| rec.states[i as usize].clone());
                *states.entry(kind).or_default().entry(state).or_default() += 1;
            }
        }
        eprintln!("{what}: states {states:?}");
        let all_weight: u64 = weight.values().sum();
        let all_lived: f64 = MIX.iter().map(|(k, _)| lived[*k]).sum();
        for (kind, state) in MIX {
            let per = states.get(kind).cloned().unwrap_or_default();
            let n: u64 = per.values().sum();
            let right: u64 = state.split('|').map(|s| per.get(s).copied().unwrap_or(0)).sum();
            assert!(n >= 200, "{what}: only {n} samples of {kind}");
            assert!(right * 10 >= n * 9, "{what}: only {right} of {n} samples of {kind} are {state}: {per:?}");
            let share = 100.0 * weight.get(kind).copied().unwrap_or(0) as f64 / all_weight.max(1) as f64;
            let truth = 100.0 * lived[kind] / all_lived;
            assert!(
                (share - truth).abs() <= 5.0,
                "{what}: {kind} has {share:.1}% of the wall time sampled, truth {truth:.1}% (its life's share)"
            );
        }
    }
}

/// Signals get lost: here the program takes hpm's signal (sun.misc.Signal for SIGURG) while
/// hpm samples at 1 ms, so the requests sent until hpm sees it and moves to another signal go
/// to the program's handler. Each such request stays untaken in its slot; the sampler signals
/// it again on the new signal, so the busy thread keeps being sampled after the move (before
/// re-sending, a thread whose request was lost was never signalled again). LateSigprof's busy
/// thread spins 1 s of CPU time before the handler and 1 s after: at 1 ms and fewer than 16
/// threads it is visited every tick, so its samples in after() are at least one per ms of its
/// CPU time less what the slow ticks of a loaded machine and the move cost; a third is kept.
#[test]
fn wall_keeps_sampling_a_thread_whose_signal_was_lost_to_another_handler() {
    use std::io::Write;
    for jdk in jdks() {
        let what = format!("{} wall, SIGURG taken", jdk.name);
        let dir = scratch(&format!("wall-lost-{}", jdk.name));
        let collapsed = dir.join("p.collapsed");
        let mut cmd = std::process::Command::new(jdk.java());
        cmd.arg(format!("-agentpath:{}=event=wall,interval=1ms,file={}", agent_path().display(), collapsed.display()))
            .arg("-cp")
            .arg(workloads())
            .args(["LateSigprof", "1", "URG"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let _one_jvm = jvm_lock();
        let mut child = cmd.spawn().expect("run java");
        // Read once the handler is installed: busy then spins its second second, and the
        // program ends.
        child.stdin.take().expect("stdin").write_all(b"stop\n").expect("write stop");
        let out = child.wait_with_output().expect("wait for java");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{what}: the JVM failed:\n{stdout}\n{stderr}");
        assert!(stderr.contains("hpm moved to SIG"), "{what}: hpm did not move:\n{stderr}");
        let after_ms = stdout
            .lines()
            .find_map(|l| l.strip_prefix("cpu "))
            .and_then(|l| l.split(' ').nth(1)?.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{what}: no cpu line:\n{stdout}"))
            / 1e6;
        let lost = stdout.lines().find_map(|l| l.strip_prefix("done ")?.parse::<u64>().ok()).unwrap_or(0);
        let line = stderr.lines().find(|l| l.starts_with("hpm: wall: ")).unwrap_or_default();
        let stacks = read_collapsed(&collapsed);
        let after: u64 =
            stacks.iter().filter(|(s, _)| s.iter().any(|f| f == "LateSigprof.after")).map(|(_, n)| n).sum();
        eprintln!("{what}: {after} samples in after() over {after_ms:.0} ms of its CPU time; {lost} of hpm's signals lost to the program's handler; {line}");
        assert!(after as f64 >= after_ms / 3.0, "{what}: only {after} samples in after() over {after_ms:.0} ms");
        if lost > 0 {
            let again = line.split(" sent, ").nth(1).and_then(|r| r.split(' ').next()).unwrap_or_default();
            assert!(again != "0" && !again.is_empty(), "{what}: {lost} signals lost, none sent again: {line}");
        }
    }
}
