//! Virtual threads (JDK 21+) with `event=wall`, on each JDK 21+ found (Temurin 25 here):
//! `VThreadsWall` runs 1,000 virtual threads that sleep 3 s and two that spin as long.
//! - The live count (JVMTI VirtualThreadStart/End) sees all 1,002 at once, and the unmounted
//!   ones, on average, are the live ones less at most the two spinners.
//! - The spinners' samples are charged to virtual threads carried by a platform thread
//!   (`Captured::vthread`, filled by the walker), written as the JDK writes them
//!   (`jdk.ExecutionSample`'s thread virtual) and shown folded in one row by `hpm report`.
//!
//! JDK 17 has no virtual threads: the workload is not run there.

use hpm_tests::*;

/// The JDKs with virtual threads (21+), by `java -version`.
fn jdks_with_virtual_threads() -> Vec<Jdk> {
    let v: Vec<Jdk> = jdks()
        .into_iter()
        .filter(|j| {
            let out = std::process::Command::new(j.java()).arg("-version").output().expect("run java -version");
            let text = String::from_utf8_lossy(&out.stderr).to_string();
            let major = text.split('"').nth(1).and_then(|v| v.split('.').next()?.parse::<u32>().ok());
            major.is_some_and(|m| m >= 21)
        })
        .collect();
    if v.is_empty() {
        println!("NOTE: no JDK 21+ found: virtual threads not tested on this machine");
    }
    v
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
        // Two spinners at most are mounted (plus what a sample's weight rounds).
        assert!(mounted <= 2.5 && unmounted >= live - 2.5, "{}: {mounted:.1} mounted of {live:.1}", jdk.name);
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
