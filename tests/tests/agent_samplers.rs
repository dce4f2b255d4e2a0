//! The timer-driven samplers (Hofer et al.'s partial safepoints). `jvmti` (GetThreadListStackTraces,
//! a global safepoint per sample) runs on every JDK; `sps` (partial safepoints with
//! self-sampling) needs the patched JDK built by `jvm-patches/build.sh`, found through
//! `HPM_SPS_JDK` or the build's default location. Without it those tests say why and stop.

use std::path::PathBuf;

use hpm_tests::*;

/// `hpm compare A B`'s overlap and hot-edge coverage, a context hot at a fifth of the hottest:
/// at a tenth, a sampler's own bias alone made one hot (on a loaded machine, jvmti's global
/// safepoints put 5% of Shares' samples in `Shares.run`'s own loop, 292 samples against a
/// threshold of 272, where sps put 0.1%), and one context of four flipped the coverage to 75%.
/// Shares' three contexts (50/30/20) are all above a fifth.
fn compare(a: &std::path::Path, b: &std::path::Path) -> (f64, f64) {
    let m = hpm_compare_with(a, b, &["--threshold", "0.2"]);
    let value = |name: &str| *m.get(name).unwrap_or_else(|| panic!("no `{name}` in {m:?}"));
    (value("overlap"), value("hot-edge coverage"))
}

fn profile(jdk: &Jdk, dir: &std::path::Path, name: &str, opts: &str, main: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(format!("{name}.collapsed"));
    let run = run_java(jdk, Some(&format!("{opts},file={}", out.display())), &[], main, args);
    run.assert_ok(name);
    assert!(total(&read_collapsed(&out)) > 0, "{name}: no samples\n{}", run.stderr);
    out
}

/// The safepoint-biased baseline finds the same hot code as the signal-time walk.
#[test]
fn jvmti_sampler_agrees_with_asgct() {
    for jdk in jdks() {
        let dir = scratch(&format!("jvmti-{}", jdk.name));
        let a = profile(&jdk, &dir, "asgct", "interval=5ms,quiet", "Shares", &["4", "2", "cpu"]);
        let j = profile(&jdk, &dir, "jvmti", "sampler=jvmti,interval=5ms,quiet", "Shares", &["4", "2", "cpu"]);
        let (overlap, coverage) = compare(&a, &j);
        eprintln!("{}: asgct vs jvmti overlap {overlap}%, hot-edge coverage {coverage}%", jdk.name);
        assert!(overlap > 70.0 && coverage > 90.0, "{}: overlap {overlap}, coverage {coverage}", jdk.name);
    }
}

#[test]
fn sps_on_a_stock_jdk_gives_the_clear_error() {
    for sampler in ["sps", "isps"] {
        let run = run_java(&jdks()[0], Some(&format!("sampler={sampler}")), &[], "Shares", &["1", "0.1"]);
        assert!(!run.status.success());
        assert!(
            run.stderr.contains(&format!("sampler={sampler} needs the patched JVM"))
                && run.stderr.contains("jvm-patches/build.sh"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn sps_agrees_with_jvmti_on_multithreaded_work() {
    let Some(jdk) = patched_jdk() else { return };
    let dir = scratch("sps-vs-jvmti");
    for (main, args) in [("Shares", vec!["4", "2", "cpu"]), ("Threads", vec!["busy", "6", "1.3"])] {
        let j = profile(&jdk, &dir, &format!("jvmti-{main}"), "sampler=jvmti,interval=5ms,quiet", main, &args);
        for sampler in ["sps", "isps"] {
            let opts = format!("sampler={sampler},interval=5ms,quiet");
            let s = profile(&jdk, &dir, &format!("{sampler}-{main}"), &opts, main, &args);
            let (overlap, coverage) = compare(&j, &s);
            eprintln!("patched JDK, {main}: jvmti vs {sampler} overlap {overlap}%, hot-edge coverage {coverage}%");
            assert!(overlap > 70.0, "{main}: {sampler} overlap {overlap}%");
            assert!(coverage > 90.0, "{main}: {sampler} hot-edge coverage {coverage}%");
        }
    }
}

#[test]
fn sps_survives_hard_cases() {
    let Some(jdk) = patched_jdk() else { return };
    let dir = scratch("sps-stress");
    // Incremental tracing also under ZGC, whose own stack watermarks run beside isps's, with
    // nmethod entry barriers deoptimising at random (a deoptimisation storm), and with
    // handshakes and safepoints forced all the time.
    const ZGC_DEOPT: &[&str] = &["-XX:+UseZGC", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DeoptimizeNMethodBarriersALot"];
    const ALOT: &[&str] = &["-XX:+UnlockDiagnosticVMOptions", "-XX:+HandshakeALot", "-XX:+SafepointALot"];
    let cells: [(&str, &[&str]); 7] = [
        ("sampler=sps,interval=1ms", &[]),
        ("sampler=sps,interval=1ms,spswaiting", &[]),
        ("sampler=jvmti,interval=1ms", &[]),
        ("sampler=isps,interval=1ms", &[]),
        ("sampler=isps,interval=1ms,spswaiting", &[]),
        ("sampler=isps,interval=1ms,spswaiting", ZGC_DEOPT),
        ("sampler=isps,interval=1ms", ALOT),
    ];
    for (opts, jvm_args) in cells {
        let out = dir.join("p.collapsed");
        let run = run_java(&jdk, Some(&format!("{opts},file={}", out.display())), jvm_args, "Stress", &["4"]);
        run.assert_ok(opts);
        assert!(run.stdout.contains("stress done"), "{opts}: {}", run.stdout);
        let stacks = read_collapsed(&out);
        let has = |m: &str| stacks.iter().any(|(f, _)| f.iter().any(|x| x == m));
        assert!(
            has("Stress.recurse") && has("Stress.throwing") && has("Stress.shapes"),
            "{opts}: busy methods missing"
        );
        eprintln!("patched JDK, {opts} {}: {} samples", jvm_args.join(" "), total(&stacks));
    }
}

#[test]
fn stock_jdk_still_works_with_stress() {
    let jdk = &jdks()[0];
    let dir = scratch("stock-stress");
    let out = dir.join("p.collapsed");
    run_java(jdk, Some(&format!("sampler=jvmti,interval=1ms,file={}", out.display())), &[], "Stress", &["3"])
        .assert_ok("jvmti stress");
    run_java(jdk, Some(&format!("interval=1ms,file={}", out.display())), &[], "Stress", &["3"])
        .assert_ok("asgct stress");
}
