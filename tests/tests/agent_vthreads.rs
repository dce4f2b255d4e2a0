//! Virtual threads (JDK 21+): 1,000 virtual threads at a time run two kinds of task of CPU 3:1
//! (tests/workloads/VThreads.java), yielding between rounds, so their frames are frozen into
//! stack chunks and thawed lazily. Every task sample must carry the virtual thread's own frames
//! down to `VirtualThread.run`, across `enterSpecial` and the return barrier, then the
//! carrier's (down to `ForkJoinWorkerThread.run`), and the tasks' shares must be right: with
//! CPU samples and with the signal wall sampler, which walks by the same handler. Runs on each
//! test JDK with virtual threads (Temurin 25 here); says so and passes where there is none.
//!
//! With `event=wall` also (`VThreadsWall`: 1,000 virtual threads sleeping 3 s, two spinning):
//! - the live count (JVMTI VirtualThreadStart/End) sees all 1,002 at once, and the unmounted
//!   ones, on average, are the live ones less at most the two spinners;
//! - the spinners' samples are charged to virtual threads carried by a platform thread
//!   (`Captured::vthread`), written as the JDK writes them (`jdk.ExecutionSample`'s thread
//!   virtual) and shown folded in one row by `hpm report`.

use hpm_tests::*;

/// The JDK's feature release, from its `release` file (`JAVA_VERSION="25.0.3"`).
fn feature(jdk: &Jdk) -> Option<u32> {
    let text = std::fs::read_to_string(jdk.home.join("release")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("JAVA_VERSION="))?;
    line.trim_matches('"').split(['.', '-', '+']).next()?.parse().ok()
}

/// The frames from the root, with the names only (no annotations).
fn names(frames: &[String]) -> Vec<&str> {
    frames.iter().map(|f| f.split("_[").next().unwrap_or(f)).collect()
}

/// The carrier's frames from the root, then the virtual thread's from its entry, in order.
const ORDER: [&str; 4] = [
    "java.util.concurrent.ForkJoinWorkerThread.run",
    "jdk.internal.vm.Continuation.enterSpecial",
    "java.lang.VirtualThread.run",
    "VThreads$$Lambda.run",
];

/// Whether `frames` hold each of `ORDER` in order.
fn reaches_entry(frames: &[&str]) -> bool {
    let mut at = 0;
    ORDER.iter().all(|want| match frames[at..].iter().position(|f| f == want) {
        Some(i) => {
            at += i + 1;
            true
        }
        None => false,
    })
}

/// The test JDKs with virtual threads (21+); says so in one line where there is none.
fn jdks_with_virtual_threads() -> Vec<Jdk> {
    let jdks: Vec<Jdk> = jdks().into_iter().filter(|j| feature(j).is_some_and(|v| v >= 21)).collect();
    if jdks.is_empty() {
        eprintln!(
            "NOT RUN: no test JDK has virtual threads (JDK 21+ needed; Temurin 25 is looked for under /usr/lib/jvm)"
        );
    }
    jdks
}

/// `rounds`: how many times the 1,000 tasks run (wall samples come with the ticks the sampler
/// gets, fewer on a busy machine than CPU samples, which come with the tasks' CPU time).
fn check(event: &str, rounds: &str) {
    for jdk in jdks_with_virtual_threads() {
        let dir = scratch(&format!("vthreads-{}-{}", jdk.name, event.replace([',', '='], "-")));
        let out = dir.join("p.collapsed");
        let opts = format!("{event},interval=1ms,file={},quiet", out.display());
        // 500 tasks of each kind at once, `rounds` times: 2,500-4,000 task samples, so sampling
        // noise (four standard deviations) stays within 3 points of 75/25.
        run_java(&jdk, Some(&opts), &[], "VThreads", &["500", rounds]).assert_ok("VThreads");
        let (mut heavy, mut light, mut reached) = (0u64, 0u64, 0u64);
        let mut missed: Vec<(String, u64)> = Vec::new();
        for (frames, n) in read_collapsed(&out) {
            let names = names(&frames);
            match (names.contains(&"VThreads.heavy"), names.contains(&"VThreads.light")) {
                (true, false) => heavy += n,
                (false, true) => light += n,
                _ => continue,
            }
            if reaches_entry(&names) {
                reached += n;
            } else {
                missed.push((frames.join(";"), n));
            }
        }
        let n = heavy + light;
        let what = format!("{} {event}", jdk.name);
        assert!(n >= 2_000, "{what}: only {n} task samples");
        let share = 100.0 * heavy as f64 / n as f64;
        let reach = 100.0 * reached as f64 / n as f64;
        missed.sort_by_key(|m| std::cmp::Reverse(m.1));
        eprintln!(
            "{what}: {n} task samples, heavy {share:.1}%, {reach:.2}% reach VirtualThread.run with the carrier below"
        );
        let within = share_tolerance(75.0, n, 0.0);
        assert!(
            (share - 75.0).abs() <= within,
            "{what}: heavy tasks have {share:.1}% of {n} samples, truth 75% (within {within:.1})"
        );
        assert!(
            reach >= 99.0,
            "{what}: {reach:.2}% of task samples reach VirtualThread.run; most missed: {:?}",
            &missed[..missed.len().min(3)]
        );
    }
}

#[test]
fn virtual_threads_cpu() {
    check("event=cpu", "12");
}

#[test]
fn virtual_threads_wall() {
    check("event=wall", "24");
}

/// A wall recording of `VThreadsWall 1000 3`, read back.
fn record(jdk: &Jdk, name: &str) -> (hpm_profile::model::Recording, std::path::PathBuf) {
    let dir = scratch(&format!("vthreads-{name}-{}", jdk.name));
    let jfr = dir.join("wall.jfr");
    let opts = format!("event=wall,interval=10ms,quiet,file={}", jfr.display());
    run_java(jdk, Some(&opts), &[], "VThreadsWall", &["1000", "3"]).assert_ok("VThreadsWall");
    let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
    (rec, jfr)
}

#[test]
fn wall_counts_live_virtual_threads_and_the_unmounted_ones() {
    for jdk in jdks_with_virtual_threads() {
        let (rec, jfr) = record(&jdk, "live");
        let v = rec.virtual_live;
        let (live, mounted, unmounted) = v.averages().unwrap_or_else(|| panic!("{}: not counted: {v:?}", jdk.name));
        eprintln!("{}: {v:?}: live {live:.1}, mounted {mounted:.1}, unmounted {unmounted:.1}", jdk.name);
        assert_eq!(v.max, 1002, "{}: all the virtual threads are live at once", jdk.name);
        // The two spinners are mounted all along (a descheduled carrier keeps its virtual
        // thread mounted), give or take what sampling rounds.
        assert!(
            (1.0..=2.5).contains(&mounted) && unmounted >= live - 2.5,
            "{}: {mounted:.1} mounted of {live:.1}",
            jdk.name
        );
        let report = String::from_utf8(
            std::process::Command::new(hpm_bin()).arg("report").arg(&jfr).output().expect("run hpm").stdout,
        )
        .unwrap();
        assert!(report.contains(" unmounted (parked, sleeping or waiting for a carrier)"), "{}:\n{report}", jdk.name);
    }
}

/// Needs the walker's virtual thread id (`Captured::vthread`).
#[test]
fn wall_samples_of_mounted_virtual_threads_are_theirs_and_name_their_carrier() {
    for jdk in jdks_with_virtual_threads() {
        let (rec, jfr) = record(&jdk, "mounted");
        let of_virtual: Vec<_> = rec.samples.iter().filter(|s| rec.threads[s.thread.0 as usize].is_virtual).collect();
        eprintln!("{}: {} of {} samples of virtual threads", jdk.name, of_virtual.len(), rec.samples.len());
        assert!(of_virtual.len() >= 100, "{}: {} samples of virtual threads", jdk.name, of_virtual.len());
        for s in &of_virtual {
            let carrier = s.carrier.map(|c| &rec.threads[c.0 as usize]);
            assert!(carrier.is_some_and(|c| !c.is_virtual && c.os_tid != 0), "{}: carrier {carrier:?}", jdk.name);
        }
        // They spin: running, by their own state (JVMTI calls their carriers only "waiting").
        let runnable = of_virtual
            .iter()
            .filter(|s| s.state.is_some_and(|i| rec.states[usize::from(i)] == "STATE_RUNNABLE"))
            .count();
        let share = 100.0 * runnable as f64 / of_virtual.len() as f64;
        assert!(share >= 90.0, "{}: {share:.1}% of the spinners' samples runnable", jdk.name);
        // The JDK's own reader sees the sample's thread as virtual.
        let printed = std::process::Command::new(jdk.tool("jfr"))
            .args(["print", "--events", "jdk.ExecutionSample,profiler.WallClockSample"])
            .arg(&jfr)
            .output()
            .expect("run jfr");
        let text = String::from_utf8_lossy(&printed.stdout);
        assert!(text.contains(", virtual)"), "{}: no virtual sampled thread in `jfr print`", jdk.name);
        let report = String::from_utf8(
            std::process::Command::new(hpm_bin()).arg("report").arg(&jfr).output().expect("run hpm").stdout,
        )
        .unwrap();
        assert!(report.contains("  virtual threads ("), "{}: no folded row:\n{report}", jdk.name);
    }
}
