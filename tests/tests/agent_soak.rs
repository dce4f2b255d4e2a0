//! The long-running-service case: sessions on and off for a while, with
//! threads, classes and compiled code coming and going all the time (tests/workloads/Soak.java).
//! The agent's own heap (counted by its allocator, `status`) and the process's descriptors must
//! stay flat after warm-up; resident memory is reported and checked loosely (it also holds the
//! JVM's own growth; MALLOC_ARENA_MAX=2 keeps glibc's per-thread arenas from adding to it).
//!
//! CI runs one minute on JDK 17. The soak of docs/design.md:
//! `HPM_SOAK_SECONDS=1800 HPM_SOAK_PERIOD=60 cargo test -p hpm-tests --test agent_soak -- --nocapture`;
//! `HPM_SOAK_ON=0` runs the same churn with no session at all (the control: what the JVM's own
//! resident memory does).

use std::process::Command;

use hpm_tests::*;

struct Sample {
    t: u64,
    rss_kb: u64,
    fds: u64,
    heap_kb: u64,
}

fn parse(stdout: &str) -> Vec<Sample> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["sample", t, "rss", rss, "fds", fds, "heap", heap] => Some(Sample {
                    t: t.parse().ok()?,
                    rss_kb: rss.parse().ok()?,
                    fds: fds.parse().ok()?,
                    heap_kb: heap.parse().ok()?,
                }),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn agent_memory_and_descriptors_stay_flat_under_churn() {
    let seconds: u64 = std::env::var("HPM_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let period: u64 = std::env::var("HPM_SOAK_PERIOD").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let on: u64 = std::env::var("HPM_SOAK_ON").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let off: u64 = 4;
    let jdk = &jdks()[0];
    let dir = scratch(&format!("soak-on{on}"));
    let out = Command::new(jdk.java())
        .env("MALLOC_ARENA_MAX", "2")
        .arg(format!("-Dhpm.agent.path={}", agent_path().display()))
        .args(["-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch", "-XX:CompileCommand=quiet", "-cp"])
        .arg(workloads())
        .args(["Soak", &seconds.to_string(), &on.to_string(), &off.to_string(), &period.to_string()])
        .arg(&dir)
        .output()
        .expect("run java");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the soak JVM failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(!stderr.contains("internal error") && !stderr.contains("panicked"), "{stderr}");
    let samples = parse(&stdout);
    assert!(samples.len() >= 9, "too few samples:\n{stdout}");
    for s in &samples {
        eprintln!("t={:>5}s rss={:>7} KB fds={:>3} agent heap={:>6} KB", s.t, s.rss_kb, s.fds, s.heap_kb);
    }
    let value = |key: &str| -> u64 {
        stdout.lines().find_map(|l| l.strip_prefix(key)?.trim().parse().ok()).unwrap_or_else(|| panic!("no {key}"))
    };
    eprintln!("{} threads started and ended, {} classes loaded and dropped", value("threads "), value("classes "));
    assert!(value("threads ") >= seconds * 20, "the churn did not run: {} threads", value("threads "));
    assert!(value("classes ") >= seconds, "the class churn did not run: {} classes", value("classes "));
    // Warm-up is the first third, and at least the first two sessions with their pauses (the
    // second one already meets what the first left for later sessions: names, the code map):
    // the rest must not grow beyond it.
    let two_cycles = 2 * (on + off);
    let warm_len = (samples.len() / 3).max(samples.iter().take_while(|s| s.t <= two_cycles).count());
    assert!(warm_len < samples.len() * 2 / 3, "the run is too short for its sessions: {} samples", samples.len());
    let (warm, rest) = samples.split_at(warm_len);
    let max = |s: &[Sample], f: fn(&Sample) -> u64| s.iter().map(f).max().unwrap_or(0);
    let (heap_warm, heap_rest) = (max(warm, |s| s.heap_kb), max(rest, |s| s.heap_kb));
    assert!(
        heap_rest <= heap_warm + heap_warm / 4 + 1024,
        "agent heap grew: {heap_warm} KB in warm-up, {heap_rest} KB after"
    );
    let (fds_warm, fds_rest) = (max(warm, |s| s.fds), max(rest, |s| s.fds));
    assert!(fds_rest <= fds_warm + 4, "descriptors grew: {fds_warm} in warm-up, {fds_rest} after");
    let (middle, last) = rest.split_at(rest.len() / 2);
    let (rss_mid, rss_last) = (max(middle, |s| s.rss_kb), max(last, |s| s.rss_kb));
    assert!(rss_last <= rss_mid + 32 * 1024, "resident memory grew: {rss_mid} KB, then {rss_last} KB");
}
