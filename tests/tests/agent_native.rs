//! Native stacks (`cstack=`): a JNI library of the tests' own, built without frame pointers
//! (tests/native/jnichain.c: `JniChain.run -> nA -> nB -> nC -> JniChain.callback`), reads in
//! that order with `cstack=dwarf`; GC and compiler threads' samples reach their thread's
//! entry; the GC threads' hottest C++ functions agree with those `perf record --call-graph
//! dwarf` finds in the same run. The truth: the chain's order is the program's; the entry is where
//! every thread starts (`clone3` / `start_thread` / `thread_native_entry`); perf is the
//! kernel's own sampler with its own DWARF unwinder.

use std::process::{Command, Stdio};

use hpm_tests::*;

/// The chain, root first, as the collapsed stacks name it.
const CHAIN: [&str; 5] = ["JniChain.run", "JniChain.nA", "Java_JniChain_nA", "nB", "nC"];

/// Where each of `names` is in `frames` (root first), if all are there in that order.
fn in_order(frames: &[String], names: &[&str]) -> bool {
    let mut at = 0;
    names.iter().all(|n| match frames[at..].iter().position(|f| f == n) {
        Some(i) => {
            at += i + 1;
            true
        }
        None => false,
    })
}

fn run_chain(jdk: &Jdk, cstack: &str) -> Vec<(Vec<String>, u64)> {
    let dir = scratch(&format!("native-chain-{cstack}-{}", jdk.name));
    let out = dir.join("p.collapsed");
    let opts = format!("interval=1ms,cstack={cstack},quiet,file={}", out.display());
    let lib = native_lib("jnichain");
    // 1.5 s of the main thread's CPU time: about 1,500 samples, a quarter in the callback.
    let run = run_java(jdk, Some(&opts), &[], "JniChain", &[lib.to_str().unwrap(), "1.5"]);
    run.assert_ok("JniChain");
    read_collapsed(&out)
}

#[test]
fn a_jni_chain_reads_java_native_chain_callback_in_order() {
    for jdk in jdks() {
        let stacks = run_chain(&jdk, "dwarf");
        let callback: Vec<&(Vec<String>, u64)> =
            stacks.iter().filter(|(f, _)| f.iter().any(|x| x == "JniChain.callback")).collect();
        let n = callback.iter().map(|(_, n)| n).sum::<u64>();
        let mut order: Vec<&str> = CHAIN.to_vec();
        order.push("JniChain.callback");
        let ordered: u64 = callback.iter().filter(|(f, _)| in_order(f, &order)).map(|(_, n)| n).sum();
        for (f, c) in callback.iter().filter(|(f, _)| !in_order(f, &order)).take(5) {
            eprintln!("{}: out of order: {} {c}", jdk.name, f.join(";"));
        }
        eprintln!("{}: {ordered} of {n} callback samples read the chain in order", jdk.name);
        assert!(n >= 100, "{}: only {n} samples in the callback", jdk.name);
        assert!(ordered * 100 >= 90 * n, "{}: {ordered} of {n} callback samples in order", jdk.name);
        // Samples in nC's own work (not in the callback): nB and nA under it, named.
        let in_nc: Vec<&(Vec<String>, u64)> = stacks
            .iter()
            .filter(|(f, _)| f.iter().any(|x| x == "nC") && !f.iter().any(|x| x == "JniChain.callback"))
            .collect();
        let n = in_nc.iter().map(|(_, n)| n).sum::<u64>();
        let under: u64 = in_nc.iter().filter(|(f, _)| in_order(f, &CHAIN)).map(|(_, n)| n).sum();
        eprintln!("{}: {under} of {n} samples in nC have the chain under them", jdk.name);
        assert!(n >= 100, "{}: only {n} samples in nC", jdk.name);
        assert!(under * 100 >= 90 * n, "{}: {under} of {n} samples in nC have nB, nA under them", jdk.name);
    }
}

/// Without native unwinding, the shape the chain has: its leaf sits right under the Java
/// native method (no caller of it named), and the callback right under the native method.
/// Printed, not asserted beyond the samples being there: it is what `cstack=no` is.
#[test]
fn without_native_unwinding_the_chain_shows_its_leaf_only() {
    for jdk in jdks() {
        let stacks = run_chain(&jdk, "no");
        let under: u64 = stacks.iter().filter(|(f, _)| f.iter().any(|x| x == "JniChain.nA")).map(|(_, n)| n).sum();
        let mut shapes: Vec<(String, u64)> = stacks
            .iter()
            .filter_map(|(f, n)| {
                let i = f.iter().position(|x| x == "JniChain.nA")?;
                Some((f[i..].join(";"), *n))
            })
            .collect();
        shapes.sort_by_key(|s| std::cmp::Reverse(s.1));
        eprintln!("{}: cstack=no, {under} samples under JniChain.nA: {:#?}", jdk.name, &shapes[..shapes.len().min(6)]);
        assert!(under >= 100, "{}: only {under} samples under JniChain.nA", jdk.name);
    }
}

/// The VM threads whose samples must reach their entry: GC workers and compiler threads.
fn vm_thread_kind(root: &str) -> Option<&'static str> {
    let name = root.strip_prefix('[')?;
    if ["GC Thread#", "ParGC Thread#", "G1 Conc#", "G1 Refine#"].iter().any(|p| name.starts_with(p)) {
        Some("GC")
    } else if name.starts_with("C2 CompilerThread") || name.starts_with("C1 CompilerThread") {
        Some("compiler")
    } else {
        None
    }
}

/// The root-most native frame of a per-thread collapsed stack: the first after the
/// pseudo-frames (`[GC Thread#0 tid=..]`, `[GC]`).
fn root_native(frames: &[String]) -> Option<&str> {
    frames.iter().find(|f| !f.starts_with('[')).map(String::as_str)
}

const ENTRIES: [&str; 3] = ["clone3", "start_thread", "thread_native_entry"];

#[test]
fn gc_and_compiler_threads_reach_their_entry() {
    for jdk in jdks() {
        for gc in ["G1", "Parallel"] {
            let dir = scratch(&format!("native-vm-{gc}-{}", jdk.name));
            let out = dir.join("p.collapsed");
            let opts = format!("interval=1ms,cstack=dwarf,threads,quiet,file={}", out.display());
            // GcHeavy's allocation keeps two GC workers busy for most of its 2 s; its warm-up
            // compiles (C1, then C2) run beside.
            let flag = format!("-XX:+Use{gc}GC");
            let run = run_java(&jdk, Some(&opts), &[&flag, "-XX:ParallelGCThreads=2"], "GcHeavy", &["2"]);
            run.assert_ok("GcHeavy");
            let stacks = read_collapsed(&out);
            for kind in ["GC", "compiler"] {
                let of_kind: Vec<&(Vec<String>, u64)> =
                    stacks.iter().filter(|(f, _)| vm_thread_kind(&f[0]) == Some(kind)).collect();
                let n: u64 = of_kind.iter().map(|(_, n)| n).sum();
                let rooted: u64 = of_kind
                    .iter()
                    .filter(|(f, _)| root_native(f).is_some_and(|r| ENTRIES.contains(&r)))
                    .map(|(_, n)| n)
                    .sum();
                for (f, c) in
                    of_kind.iter().filter(|(f, _)| !root_native(f).is_some_and(|r| ENTRIES.contains(&r))).take(3)
                {
                    eprintln!("{} {gc} {kind}: not rooted: {} {c}", jdk.name, f.join(";"));
                }
                eprintln!("{} {gc}: {rooted} of {n} {kind}-thread samples reach their entry", jdk.name);
                // The compilers' work is the warm-up's, fixed (19 to 60 samples at 1 ms here);
                // the GC's grows with the run.
                let least = if kind == "GC" { 20 } else { 10 };
                assert!(n >= least, "{} {gc}: only {n} {kind}-thread samples", jdk.name);
                assert!(rooted * 100 >= 90 * n, "{} {gc}: {rooted} of {n} {kind}-thread samples rooted", jdk.name);
            }
        }
    }
}

/// A leaf function as perf knows it: its file and the address it starts at (the sample's
/// address less its offset in the symbol), so two names of one function are one key.
type FnKey = (String, u64);

/// A library's PLT stubs, one entry: perf names each (`memcpy@plt`), hpm names them all
/// `[PLT stub]` (a stub has no symbol of its own).
const PLT: &str = "(PLT stubs)";

/// The GC threads' samples as `perf script` prints them, leaf first: per sample, its frames
/// down to the thread's entry as (file, start address, name); frames perf could not name are
/// `None`. perf's DWARF unwinder goes on past `start_thread` into whatever the stack's base
/// holds (`clock_gettime`, `os::javaTimeNanos`): those frames are cut off.
fn perf_samples(data: &std::path::Path, tids: &[&str]) -> Vec<Vec<Option<(FnKey, String)>>> {
    let out = Command::new("perf")
        .args(["script", "--no-inline", "-F", "tid,ip,sym,symoff,dso", "--tid", &tids.join(","), "-i"])
        .arg(data)
        .output()
        .expect("run perf script");
    assert!(out.status.success(), "perf script failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut samples: Vec<Vec<Option<(FnKey, String)>>> = Vec::new();
    let mut past_entry = false;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if !line.starts_with('\t') {
            if !line.trim().is_empty() {
                samples.push(Vec::new());
                past_entry = false;
            }
            continue;
        }
        let Some(sample) = samples.last_mut() else { continue };
        if past_entry {
            continue;
        }
        // `\t  16d80f __memmove_avx512_unaligned_erms+0xf (/usr/lib/x86_64-linux-gnu/libc.so.6)`
        let frame = (|| {
            let (ip, rest) = line.trim().split_once(' ')?;
            let (sym, dso) = rest.rsplit_once(" (")?;
            let (name, off) = sym.rsplit_once("+0x")?;
            let start = u64::from_str_radix(ip, 16).ok()? - u64::from_str_radix(off, 16).ok()?;
            // `clock_gettime@@GLIBC_2.17`: the symbol's version is no part of its name.
            let name = name.split("@@").next()?;
            let name = if name.ends_with("@plt") { PLT } else { name }.to_string();
            Some(((dso.trim_end_matches(')').to_string(), start), name))
        })();
        past_entry = frame.as_ref().is_some_and(|(_, n)| ENTRIES.contains(&n.as_str()));
        sample.push(frame);
    }
    samples
}

/// The address of `name` in `file`'s symbol tables or in its debug file (found by build id,
/// as perf and hpm find it), for a name perf gave another alias: `nm` prints the symbols
/// unmangled, so only C names (glibc's `__memcpy_*` = `__memmove_*`) are found this way.
fn address_in(file: &str, name: &str) -> Option<u64> {
    let notes = Command::new("readelf").args(["-n", file]).output().ok()?;
    let id = String::from_utf8_lossy(&notes.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string));
    let mut files = vec![file.to_string()];
    if let Some(id) = id.filter(|id| id.len() > 2) {
        files.push(format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]));
    }
    files.iter().find_map(|f| {
        let nm = Command::new("nm").args(["--defined-only", f]).output().ok()?;
        String::from_utf8_lossy(&nm.stdout).lines().find_map(|l| {
            let mut w = l.split_whitespace();
            let (addr, _, sym) = (w.next()?, w.next()?, w.next()?);
            (sym == name).then(|| u64::from_str_radix(addr, 16).ok()).flatten()
        })
    })
}

/// Samples per function, most first (ties by name), with the samples counted.
type Ranked = (Vec<(String, u64)>, u64);

fn ranked(by: std::collections::HashMap<String, u64>) -> Ranked {
    let n = by.values().sum();
    let mut v: Vec<(String, u64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (v, n)
}

/// Three standard errors of the difference of two shares `p` and `q` of one multinomial
/// sample of `n`: how far a function's share may sit from the fifth place's and still be a
/// tie for it.
fn tie_tolerance(p: f64, q: f64, n: u64) -> f64 {
    3.0 * ((p + q - (p - q).powi(2)) / n as f64).sqrt()
}

/// The functions of `a`'s top 5 that are not in `b`'s and are not a tie for `b`'s fifth place
/// either (their share in `b` is below the fifth's by more than [`tie_tolerance`]).
fn clearly_missing(a: &Ranked, b: &Ranked) -> Vec<String> {
    let share = |r: &Ranked, f: &str| r.0.iter().find(|(g, _)| g == f).map_or(0, |x| x.1) as f64 / r.1 as f64;
    let top_b: Vec<&str> = b.0.iter().take(5).map(|(f, _)| f.as_str()).collect();
    let fifth = b.0.get(4).map_or(0.0, |x| x.1 as f64 / b.1 as f64);
    a.0.iter()
        .take(5)
        .map(|(f, _)| f)
        .filter(|f| !top_b.contains(&f.as_str()))
        .filter(|f| {
            let p = share(b, f);
            fifth - p > tie_tolerance(p, fifth, b.1)
        })
        .cloned()
        .collect()
}

#[test]
fn tie_rule_accepts_a_near_tie_and_rejects_a_clear_miss() {
    let r = |v: &[(&str, u64)]| -> Ranked {
        (v.iter().map(|(f, n)| (f.to_string(), *n)).collect(), v.iter().map(|x| x.1).sum())
    };
    let a = r(&[("a", 400), ("b", 300), ("c", 100), ("d", 60), ("e", 20), ("f", 18), ("g", 2)]);
    // f and e swapped places: 18 against 20 of 900 is a tie.
    let b = r(&[("a", 400), ("b", 300), ("c", 100), ("d", 60), ("f", 20), ("e", 18), ("g", 2)]);
    assert!(clearly_missing(&a, &b).is_empty() && clearly_missing(&b, &a).is_empty());
    // g took b's place: b at 2 of 900 against a fifth of 20 is no tie.
    let c = r(&[("a", 400), ("g", 300), ("c", 100), ("d", 60), ("e", 20), ("f", 18), ("b", 2)]);
    assert_eq!(clearly_missing(&a, &c), ["b"]);
    assert_eq!(clearly_missing(&c, &a), ["g"]);
}

/// One G1 run under hpm (`kernel=off`: user frames only) and `perf record -e cpu-clock:u
/// --call-graph dwarf`: the GC threads' five hottest functions (self samples) are the same for
/// both. Functions are compared by address where perf and hpm name one function by two of its
/// aliases: glibc's `__memmove_avx512_unaligned_erms` and `__memcpy_avx512_unaligned_erms` are
/// one function at one address, and perf picks the first name where hpm picks the second (perf
/// report's `--comms` filter also loses it: it keeps a merged entry by its first sample's
/// thread, here `java`'s). Samples in libjvm's PLT stubs (`memcpy@plt`, 8 of 1,721 on Temurin
/// 25) hpm names `[PLT stub]`: both count as one [`PLT`] entry. perf
/// also samples hpm's own signal handler on the GC threads (a stack holding libhpm.so above
/// the signal frame: 1 to 10 of 1,100 to 2,200 samples per run), which hpm by construction
/// does not sample: those are left out. The vdso's clock stays: there it is the JVM's own
/// (`os::javaTimeNanos`). The fifth place is often a near tie (2 against 3 samples):
/// [`clearly_missing`] states the rule.
#[test]
fn gc_threads_top_functions_agree_with_perf() {
    for tool in ["perf", "nm", "readelf"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("NOT RUN: no {tool} on PATH (apt-get install linux-perf binutils)");
            return;
        }
    }
    // Whether perf may sample here at all (perf_event_paranoid above 2 for a user, a
    // container's seccomp filter): a one-command probe, the same event and call graph.
    let probe = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock:u", "--call-graph", "dwarf", "-o", "/dev/null", "--", "true"])
        .output()
        .expect("run perf record");
    if !probe.status.success() {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
        let why = String::from_utf8_lossy(&probe.stderr);
        let why = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        eprintln!("NOT RUN: perf record cannot sample here (perf_event_paranoid {}): {why}", paranoid.trim());
        return;
    }
    for jdk in jdks() {
        let dir = scratch(&format!("native-perf-{}", jdk.name));
        let out = dir.join("p.collapsed");
        let data = dir.join("perf.data");
        let opts = format!("interval=1ms,cstack=dwarf,kernel=off,threads,quiet,file={}", out.display());
        let _guard = jvm_lock();
        // The JVM started under perf: perf follows every thread it starts (`-p PID` follows
        // only the threads present when it attaches, before the GC's).
        let status = Command::new("perf")
            .args(["record", "-q", "-e", "cpu-clock:u", "--call-graph", "dwarf", "-o"])
            .arg(&data)
            .arg("--")
            .arg(jdk.java())
            .args(["-XX:+UseG1GC", "-XX:ParallelGCThreads=2"])
            .arg(format!("-agentpath:{}={opts}", agent_path().display()))
            .arg("-cp")
            .arg(workloads())
            .args(["GcHeavy", "3"])
            .stdout(Stdio::null())
            .status()
            .expect("run perf record");
        assert!(status.success(), "{}: perf record of GcHeavy failed", jdk.name);
        // The GC threads are chosen by their ids, as hpm's stacks name them (perf knows some
        // only by the name of the `java` that started them).
        let stacks = read_collapsed(&out);
        let gc: Vec<&(Vec<String>, u64)> = stacks.iter().filter(|(f, _)| vm_thread_kind(&f[0]) == Some("GC")).collect();
        let mut tids: Vec<&str> =
            gc.iter().filter_map(|(f, _)| f[0].rsplit_once("tid=")?.1.strip_suffix(']')).collect();
        tids.sort_unstable();
        tids.dedup();
        let samples = perf_samples(&data, &tids);
        let own = |f: &Option<(FnKey, String)>| f.as_ref().is_some_and(|((dso, _), _)| dso.ends_with("/libhpm.so"));
        let (theirs, hpms): (Vec<_>, Vec<_>) = samples.iter().partition(|s| !s.iter().any(own));
        let mut names: std::collections::HashMap<FnKey, String> = Default::default();
        let mut by: std::collections::HashMap<String, u64> = Default::default();
        let mut unnamed = 0;
        for s in &theirs {
            match s.first() {
                Some(Some((key, name))) => {
                    let name = names.entry(key.clone()).or_insert_with(|| name.clone());
                    *by.entry(name.clone()).or_default() += 1;
                }
                _ => unnamed += 1,
            }
        }
        eprintln!(
            "{}: perf: {} GC-thread samples of tids {tids:?}; {} in hpm's handler left out, {unnamed} unnamed",
            jdk.name,
            samples.len(),
            hpms.len()
        );
        let perf = ranked(by);
        // hpm's leaves, each named as perf named the function at its address where perf gave
        // it another of its names.
        let files: std::collections::BTreeSet<&str> = names.keys().map(|(f, _)| f.as_str()).collect();
        let mut by: std::collections::HashMap<String, u64> = Default::default();
        for (f, n) in &gc {
            let leaf = f.last().unwrap();
            let name = if leaf == "[PLT stub]" {
                PLT.to_string()
            } else if names.values().any(|v| v == leaf) {
                leaf.clone()
            } else {
                files
                    .iter()
                    .find_map(|file| names.get(&(file.to_string(), address_in(file, leaf)?)))
                    .cloned()
                    .unwrap_or_else(|| leaf.clone())
            };
            *by.entry(name).or_default() += n;
        }
        let hpm = ranked(by);
        eprintln!("{}: GC threads' top 6: hpm {:?} of {}", jdk.name, &hpm.0[..hpm.0.len().min(6)], hpm.1);
        eprintln!("{}: GC threads' top 6: perf {:?} of {}", jdk.name, &perf.0[..perf.0.len().min(6)], perf.1);
        assert!(
            hpm.1 >= 100 && perf.1 >= 100,
            "{}: too few GC-thread samples: hpm {}, perf {}",
            jdk.name,
            hpm.1,
            perf.1
        );
        // The same five, but for a tie for the fifth place.
        for (a, b, who) in [(&hpm, &perf, "hpm"), (&perf, &hpm, "perf")] {
            let missing = clearly_missing(a, b);
            assert!(missing.is_empty(), "{}: {who}'s top 5 has {missing:?}, clearly not in the other's", jdk.name);
        }
    }
}
