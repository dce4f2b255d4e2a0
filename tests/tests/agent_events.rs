//! Allocation and lock profiles from the JVM's events (`alloc`, `lock`), against a
//! truth known by construction (tests/workloads/AllocLocks.java): the bytes each allocation
//! site allocates (counted by the program), and monitor waits whose shares follow from the
//! threads per monitor (each monitor always held by one thread while the others wait: four
//! threads on HotLock, two on ColdLock, so 3 : 1 of the wait time). One recording per JDK has
//! all three modes at once (`event=cpu,alloc,lock`); the JDK's own reader must count what
//! hpm's reader counts.

use std::collections::HashMap;

use hpm_profile::model::{JvmEventKind, Recording};
use hpm_tests::*;

/// `truth bytes allocLarge=N allocSmall=N allocInts=N` from the program's output, as shares.
fn truth_shares(stdout: &str) -> HashMap<String, f64> {
    let line = stdout.lines().find(|l| l.starts_with("truth bytes ")).unwrap_or_else(|| panic!("no truth in {stdout}"));
    let bytes: Vec<(String, f64)> = line["truth bytes ".len()..]
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("name=bytes");
            (k.to_string(), v.parse::<f64>().expect("bytes"))
        })
        .collect();
    let total: f64 = bytes.iter().map(|b| b.1).sum();
    bytes.into_iter().map(|(k, v)| (format!("AllocLocks.{k}"), v * 100.0 / total)).collect()
}

/// Allocated bytes (event weights) per site method, as shares.
fn alloc_shares(rec: &Recording) -> HashMap<String, f64> {
    let mut by: HashMap<String, f64> = HashMap::new();
    for e in rec.events.iter().filter(|e| e.kind == JvmEventKind::Allocation) {
        let site = e.stack.first().map(|f| rec.method(f.method).display_name()).unwrap_or_default();
        *by.entry(site).or_default() += e.weight as f64;
    }
    let total: f64 = by.values().sum();
    by.values_mut().for_each(|v| *v = *v * 100.0 / total);
    by
}

#[test]
fn allocation_and_lock_profiles_match_the_truth_on_both_jdks() {
    for jdk in jdks() {
        let dir = scratch(&format!("events-{}", jdk.name));
        let file = dir.join("both.jfr");
        let opts = format!("event=cpu,alloc,lock,file={}", file.display());
        let run = run_java(&jdk, Some(&opts), &[], "AllocLocks", &["both", "4"]);
        run.assert_ok("AllocLocks both");
        let (rec, _) = hpm_profile::load::load_recording(&file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name));
        let count = |k: JvmEventKind| rec.events.iter().filter(|e| e.kind == k).count() as u64;

        // Allocations: bytes per site within 5 points of what the program counted.
        let truth = truth_shares(&run.stdout);
        let got = alloc_shares(&rec);
        eprintln!("{}: allocation bytes per site: truth {truth:.1?}, hpm {got:.1?}", jdk.name);
        assert!(
            count(JvmEventKind::Allocation) >= 1_000,
            "{}: {} allocation samples",
            jdk.name,
            count(JvmEventKind::Allocation)
        );
        for (site, share) in &truth {
            let g = got.get(site).copied().unwrap_or(0.0);
            assert!((g - share).abs() <= 5.0, "{}: {site}: {g:.1}% of the bytes, truth {share:.1}%", jdk.name);
        }

        // Monitors: wait time by the monitor's class, 75 / 25.
        let mut wait: HashMap<String, f64> = HashMap::new();
        for e in rec.events.iter().filter(|e| e.kind == JvmEventKind::MonitorEnter) {
            *wait.entry(e.class.as_deref().unwrap_or("?").to_string()).or_default() += e.duration as f64;
        }
        let total: f64 = wait.values().sum();
        let hot = wait.get("AllocLocks$HotLock").copied().unwrap_or(0.0) * 100.0 / total.max(1.0);
        let cold = wait.get("AllocLocks$ColdLock").copied().unwrap_or(0.0) * 100.0 / total.max(1.0);
        eprintln!(
            "{}: monitor wait {:.1} s: HotLock {hot:.1}%, ColdLock {cold:.1}% (truth 75 / 25); {} parks",
            jdk.name,
            total / 1e9,
            count(JvmEventKind::ThreadPark)
        );
        assert!((hot - 75.0).abs() <= 5.0 && (cold - 25.0).abs() <= 5.0, "{}: {wait:?}", jdk.name);
        // Every monitor is always held while others wait: the waits add up to about
        // (4 - 1) + (2 - 1) thread-seconds per second.
        assert!(total / 1e9 >= 4.0 * 4.0 * 0.7, "{}: only {:.1} s of monitor waits", jdk.name, total / 1e9);

        // Parks on the ReentrantLock, named by its synchronizer, from the locker's own method.
        let parks: Vec<_> = rec
            .events
            .iter()
            .filter(|e| {
                e.kind == JvmEventKind::ThreadPark && e.class.as_deref().is_some_and(|c| c.contains("ReentrantLock"))
            })
            .collect();
        assert!(parks.len() >= 100, "{}: {} parks on the ReentrantLock", jdk.name, parks.len());
        let site = hpm_profile::output::jvmevents::site(&rec, parks[0]);
        assert!(site.starts_with("AllocLocks.parkOn"), "{}: park site {site}", jdk.name);

        // The CPU event beside them, and the JDK's reader counting the same events.
        assert!(!rec.samples.is_empty(), "{}: no CPU samples beside the JVM events", jdk.name);
        let jdk_counts = check_jfr(&jdk, &file, "");
        for k in JvmEventKind::ALL {
            let theirs = jdk_counts.get(&format!("count {}", k.jfr_name())).copied().unwrap_or(0);
            assert_eq!(theirs, count(k), "{}: {} read by the JDK", jdk.name, k.jfr_name());
        }
    }
}

#[test]
fn report_and_flame_graph_show_the_events_by_bytes_and_time() {
    let jdk = &jdks()[0];
    let dir = scratch("events-report");
    let (jfr, html) = (dir.join("alloc.jfr"), dir.join("alloc.collapsed"));
    let opts = format!("event=alloc,alloc=256k,file={}", jfr.display());
    run_java(jdk, Some(&opts), &[], "AllocLocks", &["alloc", "1"]).assert_ok("AllocLocks alloc");
    let out = std::process::Command::new(hpm_bin()).arg("report").arg(&jfr).output().expect("hpm report");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Allocations (jdk.ObjectAllocationSample)"), "{text}");
    for site in ["AllocLocks.allocLarge", "AllocLocks.allocSmall", "AllocLocks.allocInts"] {
        assert!(text.contains(site), "{site} missing:\n{text}");
    }
    let out = std::process::Command::new(hpm_bin())
        .args(["flamegraph", "--event", "alloc"])
        .arg(&jfr)
        .arg("-o")
        .arg(&html)
        .output()
        .expect("hpm flamegraph");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Widths are bytes: long[] (8 KiB each) about half of everything.
    let stacks = read_collapsed(&html);
    let all = total(&stacks) as f64;
    let long =
        stacks.iter().filter(|(s, _)| s.last().map(String::as_str) == Some("long[]")).map(|(_, n)| *n).sum::<u64>();
    assert!((long as f64 / all - 0.5).abs() < 0.05, "long[] {long} of {all} bytes");
    let err = hpm_fails(&["report", "--event", "lock", jfr.to_str().unwrap()]);
    assert!(err.contains("has no such events"), "{err}");
}

/// The software twin of the paper's object-creation profile: `data` samples that interrupted
/// the store of a new object's class word name that class from the value stored (the header is
/// not written yet). Every creation sample must name a class the loop allocates; how far its
/// shares are from the allocation samples' (the paper's overlap) is printed, not asserted: a
/// timer samples the stores in proportion to the time they take, not to their number
/// (docs/design.md, "Allocation and lock profiles").
#[test]
fn creation_samples_name_the_classes_being_allocated() {
    for jdk in jdks() {
        let dir = scratch(&format!("events-creation-{}", jdk.name));
        let file = dir.join("creation.jfr");
        let opts = format!("event=cpu,interval=200us,data,alloc,file={}", file.display());
        run_java(&jdk, Some(&opts), &[], "AllocLocks", &["alloc", "3"]).assert_ok("AllocLocks alloc with data");
        let (rec, _) = hpm_profile::load::load_recording(&file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name));
        let c = hpm_profile::output::jvmevents::Creation::of(&rec);
        eprintln!("{}: {}", jdk.name, c.report(5));
        let [samples, allocs] = c.samples;
        assert!(samples >= 20, "{}: {samples} creation samples", jdk.name);
        assert!(allocs >= 1_000, "{}: {allocs} allocation samples", jdk.name);
        let ours: f64 = c.by_class[0]
            .iter()
            .filter(|(k, _)| ["byte[]", "int[]", "long[]"].contains(&k.as_str()))
            .map(|(_, n)| n)
            .sum();
        assert!(ours >= samples as f64 * 0.95, "{}: creation classes {:?}", jdk.name, c.by_class[0]);
    }
}

/// The paper's lock activity from probes at the monitor slow path (§5.2), here uprobes on
/// HotSpot's contended enter (`ObjectMonitor::EnterI`, JDK 25 `enter_with_contention_mark`),
/// sampled at every hit: the class of each monitor's object is read through `this`. HotSpot
/// posts JVMTI's MonitorContendedEnter once before each such call, so with `lock=0` in the
/// same run the two counts per class must agree. `AllocLocks handoff` makes a known number of
/// contended enters whatever the machine's load (a timed run made 85 to 117 here, idle). Needs
/// root (uprobes).
#[test]
fn uprobes_on_the_contended_monitor_path_count_what_jvmti_reports() {
    if !is_root() {
        eprintln!("skipped: uprobes need root");
        return;
    }
    const ROUNDS: u64 = 150;
    for jdk in jdks() {
        let dir = scratch(&format!("events-uprobe-{}", jdk.name));
        let file = dir.join("probe.jfr");
        let opts = format!("event=monitor-contended,lock=0,file={}", file.display());
        let run = run_java(&jdk, Some(&opts), &[], "AllocLocks", &["handoff", &ROUNDS.to_string()]);
        run.assert_ok("AllocLocks handoff with a uprobe");
        let (rec, _) = hpm_profile::load::load_recording(&file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name));
        assert_eq!(rec.event.name, "monitor-contended", "{}: fell back:\n{}", jdk.name, run.stderr);
        let mut probes: HashMap<String, u64> = HashMap::new();
        let mut jvmti: HashMap<String, u64> = HashMap::new();
        for s in &rec.samples {
            let class = s.data.as_deref().and_then(|d| d.class.as_deref()).unwrap_or("?");
            *probes.entry(class.to_string()).or_default() += 1;
            // The program's own monitors are entered in `handoff`; the JDK's (a ThreadGroup's,
            // as the workers end together) may be contended too, elsewhere.
            if class.starts_with("AllocLocks$") {
                let java = s.stack.iter().find(|f| f.kind.is_java()).map(|f| rec.method(f.method).display_name());
                assert_eq!(java.as_deref(), Some("AllocLocks.handoff"), "{}: a probe sample's Java site", jdk.name);
            }
        }
        for e in rec.events.iter().filter(|e| e.kind == JvmEventKind::MonitorEnter) {
            *jvmti.entry(e.class.as_deref().unwrap_or("?").to_string()).or_default() += 1;
        }
        // Probe samples the processor had no room for are counted (the summary's and the JFR's
        // drops), not per class: they may make up a class's shortfall, never an excess.
        let lost: u64 = rec.drops.iter().map(|(_, n)| n).sum();
        eprintln!("{}: contended enters per class: uprobe {probes:?} ({lost} lost), JVMTI {jvmti:?}", jdk.name);
        for class in ["AllocLocks$HotLock", "AllocLocks$ColdLock"] {
            let (p, j) = (probes.get(class).copied().unwrap_or(0), jvmti.get(class).copied().unwrap_or(0));
            // Every entry of a pair but its first is contended by construction.
            assert!(j >= 2 * ROUNDS - 1, "{}: {class}: JVMTI saw {j} contended enters of {}", jdk.name, 2 * ROUNDS - 1);
            assert!(
                p * 50 <= j * 51 && (p + lost) * 50 >= j * 49,
                "{}: {class}: uprobe {p} ({lost} lost), JVMTI {j}",
                jdk.name
            );
            assert!(p >= 20, "{}: {class}: {p} probe samples kept", jdk.name);
        }
    }
}

/// Parks beside async-profiler's lock mode. async-profiler re-registers
/// `Unsafe.park` with its own hook at every start, calling the JVM's own function, which it
/// found by tracing `Unsafe.registerNatives` (lockTracer.cpp): loaded after hpm, it took the
/// park from hpm's hook without a word, and hpm recorded 0 parks. hpm now sees the takeover and
/// takes the park back, calling the other agent's hook inside its own, and says so in the
/// summary; loaded before hpm, it is found at hpm's start and called the same way. Truth by
/// construction (AllocLocks `lock`): two threads take turns on a ReentrantLock holding it 1 ms,
/// so one of them is nearly always parked: the parks add up to most of the run's wall time.
/// async-profiler must keep its own lock samples too.
#[test]
fn parks_are_recorded_beside_async_profilers_lock_mode_in_either_order() {
    let Some(ap) = async_profiler() else { return };
    const SECONDS: f64 = 3.0;
    for jdk in jdks() {
        let dir = scratch(&format!("parks-beside-async-profiler-{}", jdk.name));
        for order in ["hpm-first", "ap-first"] {
            let (ap_out, hpm_out) = (dir.join(format!("{order}-ap.collapsed")), dir.join(format!("{order}.jfr")));
            let ap_arg =
                format!("-agentpath:{}=start,event=lock,lock=0,collapsed,file={}", ap.display(), ap_out.display());
            let hpm_arg = format!("-agentpath:{}=event=lock,lock=0,file={}", agent_path().display(), hpm_out.display());
            let agents = if order == "hpm-first" { [hpm_arg, ap_arg] } else { [ap_arg, hpm_arg] };
            let mut cmd = std::process::Command::new(jdk.java());
            cmd.args(&agents).arg("-cp").arg(workloads()).args(["AllocLocks", "lock", &SECONDS.to_string()]);
            let run = run_command(cmd);
            run.assert_ok(&format!("{}: AllocLocks beside async-profiler, {order}", jdk.name));
            let (rec, _) = hpm_profile::load::load_recording(&hpm_out).unwrap_or_else(|e| panic!("{}: {e}", jdk.name));
            let parked: f64 = rec
                .events
                .iter()
                .filter(|e| {
                    e.kind == JvmEventKind::ThreadPark
                        && e.class.as_deref().is_some_and(|c| c.contains("ReentrantLock"))
                })
                .map(|e| e.duration as f64 / 1e9)
                .sum();
            let ap_samples = if ap_out.exists() { total(&read_collapsed(&ap_out)) } else { 0 };
            let said: Vec<&str> =
                run.stderr.lines().filter(|l| l.contains("Unsafe.park") && l.contains("another agent")).collect();
            eprintln!(
                "{}: {order}: hpm {parked:.2} s parked on the ReentrantLock of {SECONDS} s; async-profiler {ap_samples} \
                 lock samples; hpm said {said:?}",
                jdk.name
            );
            assert!(
                parked >= 0.5 * SECONDS,
                "{}: {order}: hpm recorded {parked:.2} s of parks beside async-profiler's lock mode, truth ~{SECONDS} s\n{}",
                jdk.name,
                run.stderr
            );
            assert!(ap_samples > 0, "{}: {order}: async-profiler lost its lock samples\n{}", jdk.name, run.stderr);
            assert!(
                !said.is_empty(),
                "{}: {order}: hpm did not say who else hooks Unsafe.park\n{}",
                jdk.name,
                run.stderr
            );
        }
    }
}
