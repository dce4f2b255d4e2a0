//! Deep stacks: `jstackdepth` up to 4096 for the samplers that walk off the signal
//! path (`jvmti`, `wall`, and `sps` on the patched JDK), every frame kept in the outputs. The
//! truth is known by construction: `Deep` spins at the bottom of a recursion of known depth.

use hpm_tests::*;

const DEPTH: usize = 2000;

/// Samples whose leaf is `Deep.bottom`, and of them how many hold the whole recursion: exactly
/// DEPTH + 1 frames of `Deep.down` (`down(DEPTH)` to `down(0)`) with `Deep.run` below them.
fn complete(stacks: &[(Vec<String>, u64)]) -> (u64, u64) {
    let mut at_bottom = 0;
    let mut whole = 0;
    for (frames, n) in stacks {
        if frames.last().map(String::as_str) != Some("Deep.bottom") {
            continue;
        }
        at_bottom += n;
        let downs = frames.iter().filter(|f| *f == "Deep.down").count();
        if downs == DEPTH + 1 && frames.iter().any(|f| f == "Deep.run") {
            whole += n;
        }
    }
    (at_bottom, whole)
}

fn check(what: &str, stacks: &[(Vec<String>, u64)]) {
    let (at_bottom, whole) = complete(stacks);
    eprintln!("{what}: {whole} of {at_bottom} samples in Deep.bottom hold all {DEPTH} frames");
    assert!(at_bottom >= 100, "{what}: only {at_bottom} samples in Deep.bottom");
    assert!(whole as f64 >= 0.95 * at_bottom as f64, "{what}: {whole} of {at_bottom} complete");
}

fn run_deep(jdk: &Jdk, sampler: &str, name: &str) -> std::path::PathBuf {
    let dir = scratch(&format!("deep-{name}"));
    let collapsed = dir.join("deep.collapsed");
    let jfr = dir.join("deep.jfr");
    let opts =
        format!("sampler={sampler},interval=10ms,jstackdepth=4096,file={},file={}", collapsed.display(), jfr.display());
    let run = run_java(jdk, Some(&opts), &[], "Deep", &[&DEPTH.to_string(), "3"]);
    run.assert_ok(&format!("Deep under sampler={sampler}"));
    check(&format!("{name} collapsed"), &read_collapsed(&collapsed));
    // The JFR file keeps them too (read back by hpm's reader).
    let from_jfr = dir.join("from-jfr.collapsed");
    let out = hpm(&["flamegraph", jfr.to_str().unwrap(), "-o", from_jfr.to_str().unwrap()]);
    assert!(out.status.success(), "{name}: hpm flamegraph of the JFR: {out:?}");
    check(&format!("{name} JFR"), &read_collapsed(&from_jfr));
    // And the JDK's own parser reads them whole, not marked truncated.
    let jdk_view = check_jfr(jdk, &jfr, "Deep");
    let depth = jdk_view.get("max-depth").copied().unwrap_or(0);
    assert!(depth > DEPTH as u64, "{name}: the JDK's parser sees at most {depth} frames");
    assert_eq!(jdk_view.get("truncated").copied(), Some(0), "{name}: stacks marked truncated");
    collapsed
}

#[test]
fn jvmti_keeps_stacks_2000_frames_deep_on_both_jdks() {
    for jdk in jdks() {
        run_deep(&jdk, "jvmti", &format!("jvmti-{}", jdk.name));
    }
}

#[test]
fn sps_keeps_stacks_2000_frames_deep_on_the_patched_jdk() {
    let Some(jdk) = patched_jdk() else {
        eprintln!("NOT RUN: no patched JDK (jvm-patches/build.sh)");
        return;
    };
    run_deep(&jdk, "sps", "sps");
}

/// Incremental stack tracing: each sample decodes the top frames, the 2,000 below are decoded
/// once per retrieval and shared; the stacks are whole and agree with JVMTI's full walks.
#[test]
fn isps_keeps_stacks_2000_frames_deep_and_agrees_with_jvmti() {
    let Some(jdk) = patched_jdk() else {
        eprintln!("NOT RUN: no patched JDK (jvm-patches/build.sh)");
        return;
    };
    let isps = run_deep(&jdk, "isps", "isps");
    let jvmti = run_deep(&jdk, "jvmti", "jvmti-patched");
    let m = hpm_compare(&jvmti, &isps);
    let percent = |key: &str| *m.get(key).unwrap_or_else(|| panic!("no {key} in {m:?}"));
    let (overlap, coverage) = (percent("method overlap"), percent("hot-edge coverage"));
    eprintln!("Deep {DEPTH}: jvmti vs isps method overlap {overlap}%, hot-edge coverage {coverage}%");
    assert!(overlap > 90.0, "method overlap {overlap}%");
    assert!(coverage >= 100.0, "hot-edge coverage {coverage}%");
}

/// The signal samplers' records hold 512 frames: deeper stacks are cut there, marked
/// truncated, and the session says so at start.
#[test]
fn asgct_says_it_keeps_512_frames() {
    let jdk = &jdks()[0];
    let dir = scratch("deep-asgct");
    let jfr = dir.join("deep.jfr");
    let opts = format!("sampler=asgct,interval=10ms,jstackdepth=4096,file={}", jfr.display());
    let run = run_java(jdk, Some(&opts), &[], "Deep", &[&DEPTH.to_string(), "2"]);
    run.assert_ok("Deep under sampler=asgct");
    assert!(run.stderr.contains("keeps at most 512 frames"), "no note about the depth:\n{}", run.stderr);
    let check = check_jfr(jdk, &jfr, "Deep");
    eprintln!("{check:?}");
    assert!(check.get("truncated").copied().unwrap_or(0) > 0, "no stack marked truncated: {check:?}");
}
