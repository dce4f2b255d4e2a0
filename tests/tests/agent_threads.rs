//! Many threads: every busy thread is sampled; thousands of short-lived threads leave no
//! descriptor behind and do not crash the JVM.

use hpm_tests::*;

#[test]
fn every_busy_thread_is_sampled() {
    for jdk in jdks() {
        let dir = scratch(&format!("busy-{}", jdk.name));
        let out = dir.join("p.collapsed");
        let jfr = dir.join("p.jfr");
        let opts = format!("interval=1ms,threads,file={},file={},quiet", out.display(), jfr.display());
        // Each thread spins 0.6 s of its CPU time: the same number of cpu-clock samples each,
        // however the scheduler spread them.
        let run = run_java(&jdk, Some(&opts), &[], "Threads", &["busy", "10", "0.6"]);
        run.assert_ok("Threads busy");
        // The profile's Java thread ids are the JVM's own (`Thread.getId()`).
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
        let ids: Vec<(&str, &str)> =
            run.stdout.lines().filter_map(|l| l.strip_prefix("thread ")?.split_once(" id=")).collect();
        assert_eq!(ids.len(), 10, "{}: {}", jdk.name, run.stdout);
        for (name, id) in ids {
            let t = rec.threads.iter().find(|t| t.name == name);
            assert_eq!(
                t.and_then(|t| t.java_id),
                id.parse().ok(),
                "{}: {name}'s Java id in the profile ({t:?})",
                jdk.name
            );
        }
        let stacks = read_collapsed(&out);
        let per_thread: Vec<u64> = (0..10)
            .map(|i| {
                let prefix = format!("[busy-{i} tid=");
                stacks.iter().filter(|(f, _)| f[0].starts_with(&prefix)).map(|(_, n)| n).sum()
            })
            .collect();
        let mean = per_thread.iter().sum::<u64>() as f64 / 10.0;
        eprintln!("{}: samples per busy thread {per_thread:?}", jdk.name);
        for (i, n) in per_thread.iter().enumerate() {
            assert!(*n as f64 >= 0.8 * mean, "{}: busy-{i} has {n} samples, mean {mean:.0}", jdk.name);
        }
    }
}

#[test]
fn short_lived_threads_leak_no_descriptors() {
    for jdk in jdks() {
        let dir = scratch(&format!("churn-{}", jdk.name));
        let out = dir.join("p.jfr");
        let opts = format!("interval=1ms,counters=task-clock+page-faults,file={}", out.display());
        let run = run_java(&jdk, Some(&opts), &[], "Threads", &["churn", "2000"]);
        run.assert_ok("Threads churn");
        let line = run.stdout.lines().find(|l| l.starts_with("fds before=")).expect("fd line");
        let nums: Vec<i64> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|s| s.parse().ok()).collect();
        let (before, after, perf_after, tasks) = (nums[0], nums[1], nums[3], nums[4]);
        eprintln!("{}: {line}", jdk.name);
        // Each profiled thread holds 3 perf descriptors (leader + 2 counters). Java threads give
        // theirs back at ThreadEnd; VM threads that exit (idle compiler threads, GC workers)
        // are found gone by the next 100 ms scan, so a few may still be counted here. 2000
        // leaking threads would leave 6000.
        let lagging_vm_threads = 10;
        assert!(
            perf_after <= 3 * (tasks + lagging_vm_threads),
            "{}: {perf_after} perf descriptors for {tasks} live threads",
            jdk.name
        );
        assert!(after - before < 100, "{}: descriptors grew from {before} to {after}", jdk.name);
        let seen = run.stderr.lines().find(|l| l.starts_with("hpm: threads: ")).expect("summary threads line");
        // `threads: 30 sampled (17 Java, 13 VM) of 2,020 seen by the session`: the number seen,
        // digit groups joined.
        let of = seen.rsplit_once(" of ").expect("`of N seen`").1.replace(',', "");
        let n: u64 = of.split(' ').next().and_then(|s| s.parse().ok()).unwrap();
        assert!(n >= 2000, "{}: {seen}", jdk.name);
    }
}

/// Threads JVMTI does not list are found in /proc, whose names the kernel cuts at 15 bytes
/// (`C2 CompilerThre`); the recording and the report name them as the VM does, read from the
/// VM's structures: no thread dump, so no safepoint for them in `-Xlog:safepoint` (a
/// `Thread.print` is three: PrintThreads, PrintJNI, FindDeadlocks).
#[test]
fn vm_threads_are_named_in_full() {
    for jdk in jdks() {
        let dir = scratch(&format!("vm-names-{}", jdk.name));
        let jfr = dir.join("p.jfr");
        let opts = format!("interval=1ms,file={},quiet", jfr.display());
        let log = dir.join("safepoints.log");
        let xlog = format!("-Xlog:safepoint:file={}", log.display());
        // Two threads each spin 0.3 s of their CPU time: the JIT compiles, so compiler threads
        // run (and a JVM always has one from its start).
        let run = run_java(&jdk, Some(&opts), &[&xlog], "Threads", &["busy", "2", "0.3"]);
        run.assert_ok("Threads busy");
        let safepoints = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let dumps: Vec<&str> = safepoints
            .lines()
            .filter(|l| ["\"PrintThreads\"", "\"PrintJNI\"", "\"FindDeadlocks\""].iter().any(|op| l.contains(op)))
            .collect();
        assert!(dumps.is_empty(), "{}: safepoints of a thread dump {dumps:#?}", jdk.name);
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
        let names: Vec<&str> = rec.threads.iter().map(|t| t.name.as_str()).collect();
        assert!(
            names.iter().any(|n| *n == "C2 CompilerThread0" || *n == "C1 CompilerThread0"),
            "{}: no compiler thread named in full among {names:?}",
            jdk.name
        );
        let cut: Vec<&&str> =
            names.iter().filter(|n| ["C2 CompilerThre", "C1 CompilerThre", "VM Periodic Tas"].contains(n)).collect();
        assert!(cut.is_empty(), "{}: names cut by the kernel {cut:?} among {names:?}", jdk.name);
        // The report's thread table names them as the recording does: C2 compiles `spin` (its
        // compilation runs milliseconds, sampled every 1 ms).
        let out = hpm(&["report", jfr.to_str().unwrap()]);
        let report = String::from_utf8_lossy(&out.stdout);
        let table: Vec<&str> =
            report.lines().skip_while(|l| *l != "== Threads ==").take_while(|l| !l.is_empty()).collect();
        assert!(
            table.iter().any(|l| l.ends_with("  C2 CompilerThread0")),
            "{}: no `C2 CompilerThread0` in the report's thread table {table:#?}",
            jdk.name
        );
        assert!(!table.iter().any(|l| l.ends_with("CompilerThre")), "{}: {table:#?}", jdk.name);
    }
}
