//! Virtual threads (JDK 21+): 1,000 virtual threads at a time run two kinds of task of CPU 3:1
//! (tests/workloads/VThreads.java), yielding between rounds, so their frames are frozen into
//! stack chunks and thawed lazily. Every task sample must carry the virtual thread's own frames
//! down to `VirtualThread.run`, across `enterSpecial` and the return barrier, then the
//! carrier's (down to `ForkJoinWorkerThread.run`), and the tasks' shares must be right: with
//! CPU samples and with the signal wall sampler, which walks by the same handler. Runs on each
//! test JDK with virtual threads (Temurin 25 here); says so and passes where there is none.

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

fn check(event: &str) {
    let jdks: Vec<Jdk> = jdks().into_iter().filter(|j| feature(j).is_some_and(|v| v >= 21)).collect();
    if jdks.is_empty() {
        eprintln!(
            "NOT RUN: no test JDK has virtual threads (JDK 21+ needed; Temurin 25 is looked for under /usr/lib/jvm)"
        );
        return;
    }
    for jdk in jdks {
        let dir = scratch(&format!("vthreads-{}-{}", jdk.name, event.replace([',', '='], "-")));
        let out = dir.join("p.collapsed");
        let opts = format!("{event},interval=1ms,file={},quiet", out.display());
        // 500 tasks of each kind at once, twelve times: about 4,000 task samples, so sampling
        // noise (four standard deviations) stays within 3 points of 75/25.
        run_java(&jdk, Some(&opts), &[], "VThreads", &["500", "12"]).assert_ok("VThreads");
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
    check("event=cpu");
}

#[test]
fn virtual_threads_wall() {
    check("event=wall");
}
