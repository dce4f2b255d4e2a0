//! Threads spend 50% / 30% / 20% of their CPU in Shares.a / b / c. The profile's total shares
//! must be within four standard deviations of sampling noise (3.5 points or less) of that, with the methods JIT-compiled separately and inlined, at
//! 10ms and 1ms, on every JDK.

use hpm_tests::*;

fn check(interval: &str, seconds: &str, inlined: bool) {
    for jdk in jdks() {
        let dir = scratch(&format!("shares-{}-{interval}-{inlined}", jdk.name));
        let out = dir.join("p.collapsed");
        let opts = format!("interval={interval},file={},quiet", out.display());
        let mut jvm = vec!["-XX:CompileCommand=quiet"];
        if !inlined {
            jvm.push("-XX:CompileCommand=dontinline,Shares::*");
        }
        // CPU seconds per thread: the sample count does not depend on how loaded the machine is.
        run_java(&jdk, Some(&opts), &jvm, "Shares", &["2", seconds, "cpu"]).assert_ok("Shares");
        // Enough samples that sampling noise alone (the tolerance: four standard deviations)
        // stays within 3.5 points.
        let what = format!("{} interval={interval} inlined={inlined}", jdk.name);
        assert_known_shares(&read_collapsed(&out), "Shares.run", 2_000, 0.0, &what);
    }
}

#[test]
fn shares_jit_compiled_10ms() {
    check("10ms", "16", false);
}

#[test]
fn shares_inlined_10ms() {
    check("10ms", "16", true);
}

#[test]
fn shares_jit_compiled_1ms() {
    check("1ms", "2", false);
}

#[test]
fn shares_inlined_1ms() {
    check("1ms", "2", true);
}
