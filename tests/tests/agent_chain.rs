//! `sampler=chain` (CallerChaining, Inoue & Nakatani §6): no walk in the sampled thread, the
//! processor walks each sample's copy of the top of the stack and completes the rest from the
//! (method, stack depth) keys of the whole run. The truth is known by construction (`Chain`:
//! one method doing equal work in four contexts chosen in known proportions) or is the
//! signal-time walk of the same workloads (`sampler=asgct`).

use hpm_tests::*;

/// `Chain`'s contexts of `Chain.leaf`, root side first from `Chain.work`, with their shares
/// of leaf's samples by construction.
fn contexts() -> Vec<(String, f64)> {
    let path = |mid: Vec<String>| {
        let mut p = vec!["Chain.work".to_string()];
        p.extend(mid);
        p.push("Chain.leaf".to_string());
        p.join(";")
    };
    vec![
        (path(vec!["Chain.p1".into()]), 50.0),
        (path(vec!["Chain.q1".into(), "Chain.q2".into()]), 25.0),
        (path((0..40).map(|i| format!("Chain.d{i}")).collect()), 12.5),
        (path(vec!["Chain.rec".to_string(); 25]), 12.5),
    ]
}

#[test]
fn chain_rebuilds_a_known_call_tree_on_both_jdks() {
    for jdk in jdks() {
        let dir = scratch(&format!("chain-tree-{}", jdk.name));
        let out = dir.join("chain.collapsed");
        let run =
            run_java(&jdk, Some(&format!("sampler=chain,interval=1ms,file={}", out.display())), &[], "Chain", &["3"]);
        run.assert_ok("Chain under sampler=chain");
        assert!(run.stderr.contains("hpm: callerchain:"), "{}: no CallerChaining line:\n{}", jdk.name, run.stderr);
        let stacks = read_collapsed(&out);
        let leaf: u64 = stacks.iter().filter(|(f, _)| f.last().is_some_and(|m| m == "Chain.leaf")).map(|s| s.1).sum();
        assert!(leaf >= 1_000, "{}: {leaf} samples in Chain.leaf\n{}", jdk.name, run.stderr);
        for (path, want) in contexts() {
            // The whole path from main: nothing missing, nothing added.
            let full = format!("Chain.main;{path}");
            let n: u64 = stacks.iter().filter(|(f, _)| f.join(";") == full).map(|s| s.1).sum();
            let got = n as f64 * 100.0 / leaf as f64;
            let within = share_tolerance(want, leaf, 1.0);
            eprintln!("{}: {:.1}% (truth {want}%) under {}", jdk.name, got, &path[..path.len().min(60)]);
            assert!(
                (got - want).abs() <= within,
                "{}: {got:.1}% instead of {want}% (within {within:.1}) under {path}",
                jdk.name
            );
        }
    }
}

/// Method-level overlap with the signal-time walk of the same workload (`hpm compare`).
fn method_overlap(a: &std::path::Path, b: &std::path::Path) -> f64 {
    let m = hpm_compare(a, b);
    *m.get("method overlap").unwrap_or_else(|| panic!("no method overlap in {m:?}"))
}

#[test]
fn chain_agrees_with_asgct_and_keeps_the_known_shares() {
    let jdk = &jdks()[0];
    let dir = scratch("chain-vs-asgct");
    for (main, args) in [("Shares", vec!["2", "3", "cpu"]), ("Threads", vec!["busy", "4", "1.5"])] {
        let mut files = Vec::new();
        for sampler in ["asgct", "chain"] {
            let out = dir.join(format!("{main}-{sampler}.collapsed"));
            let opts = format!("sampler={sampler},interval=1ms,quiet,file={}", out.display());
            run_java(jdk, Some(&opts), &[], main, &args).assert_ok(&format!("{main} under sampler={sampler}"));
            files.push(out);
        }
        let overlap = method_overlap(&files[0], &files[1]);
        eprintln!("{main}: method overlap asgct vs chain {overlap}%");
        assert!(overlap >= 90.0, "{main}: method overlap {overlap}%");
        if main == "Shares" {
            // a 50%, b 30%, c 20% of the time in spin, by construction.
            let (n, shares) =
                total_shares(&read_collapsed(&files[1]), "Shares.spin", &["Shares.a", "Shares.b", "Shares.c"]);
            for (m, want) in [("Shares.a", 50.0), ("Shares.b", 30.0), ("Shares.c", 20.0)] {
                let got = shares.get(m).copied().unwrap_or(0.0);
                let within = share_tolerance(want, n, 1.0);
                assert!((got - want).abs() <= within, "{m}: {got:.1}% of {n} instead of {want}% (within {within:.1})");
            }
        }
    }
}

#[test]
fn chain_says_why_it_cannot_run_without_the_walker_and_refuses_data() {
    let run = run_java(&jdks()[0], Some("sampler=chain,data"), &[], "Shares", &["1", "0.1"]);
    assert!(!run.status.success());
    assert!(run.stderr.contains("sampler=chain has none"), "{}", run.stderr);
}

/// The process's CPU time (utime + stime over every thread) from /proc, in ms.
fn process_cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest.split_whitespace().skip(11).take(2).map(|v| v.parse().unwrap()).collect();
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    (f[0] + f[1]) * 1000 / hz
}

/// `sampler=chain` adds its held samples to the tree only when something reads it: a dump
/// while sampling shows the profile so far, and the session's file at the end counts every
/// sample once (no more than the CPU time sampled). Two sessions in one JVM: one with a
/// collapsed dump only (the tree is rebuilt from the completed samples at the end), one that
/// also dumps JFR (the held samples are written then, and stay in the tree as walked).
#[test]
fn chain_dumps_while_sampling_and_counts_each_sample_once() {
    let jdk = &jdks()[0];
    let dir = scratch("chain-dump");
    let mut jvm = Attachee::start(jdk);
    let pid = jvm.pid;
    for jfr_dump in [false, true] {
        let what = if jfr_dump { "chain, collapsed and JFR dumps" } else { "chain, a collapsed dump" };
        let session = dir.join(format!("session-{jfr_dump}.collapsed"));
        let cpu0 = process_cpu_ms(pid);
        attach_ok(pid, &format!("sampler=chain,interval=1ms,quiet,file={}", session.display()));
        assert_eq!(jvm.say("work 2000"), "worked");
        let dump = dir.join(format!("dump-{jfr_dump}.collapsed"));
        attach_ok(pid, &format!("dump,file={}", dump.display()));
        let n = assert_known_shares(&read_collapsed(&dump), "Attachee.work", 500, 3.0, &format!("{what}: dump"));
        if jfr_dump {
            let jfr = dir.join("dump.jfr");
            attach_ok(pid, &format!("dump,file={}", jfr.display()));
        }
        assert_eq!(jvm.say("work 1000"), "worked");
        let out = attach_ok(pid, "stop");
        let cpu_ms = process_cpu_ms(pid) - cpu0;
        assert!(out.contains("profiling stopped"), "{out}");
        let stacks = read_collapsed(&session);
        let all = total(&stacks);
        eprintln!("{what}: dump {n} samples, session {all} samples, {cpu_ms} ms of CPU");
        assert!(all > n, "{what}: the session file ({all}) has no more samples than the dump ({n})");
        // One sample per 1 ms of a thread's CPU at most (cpu-clock): a sample counted twice
        // (in the tree for the dump, then again at the end) would exceed it.
        assert!(all as f64 <= cpu_ms as f64 * 1.05 + 50.0, "{what}: {all} samples in {cpu_ms} ms of CPU");
        assert_known_shares(&stacks, "Attachee.work", n, 3.0, &format!("{what}: session"));
    }
    assert!(jvm.say("exit").starts_with("done"));
    assert!(jvm.child.wait().unwrap().success());
}
