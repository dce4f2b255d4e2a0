//! `hpm report --from-phase`: a recording with the Java bridge's `hpm.Phase` markers (written
//! with our JFR writer, as the agent writes them) is cut at an iteration, so warm-up samples are
//! left out. No JVM needed.

use std::path::PathBuf;
use std::process::Command;

use hpm_profile::jfr::marks::Mark;
use hpm_profile::jfr::{encode_chunk_with_marks, ChunkTimes};
use hpm_profile::model::*;

fn recording_with_phases() -> PathBuf {
    let mut rec = Recording { start_ticks: 1_000, end_ticks: 1_000, counters: Vec::new(), ..Default::default() };
    rec.add_thread(ThreadInfo { os_tid: 7, java_id: Some(1), name: "main".into(), is_java: true, is_virtual: false });
    let warm = rec.methods.intern(MethodInfo::java("Warm", "up", "()V"));
    let steady = rec.methods.intern(MethodInfo::java("Steady", "run", "()V"));
    let sample = |time: u64, method: MethodIdx| Sample {
        carrier: None,
        time,
        thread: ThreadIdx(0),
        stack: vec![Frame { method, bci: 0, line: 1, kind: FrameKind::JitCompiled }].into(),
        truncated: false,
        weight: 1_000_000,
        repeat: 1,
        counters: Vec::new(),
        data_addr: None,
        data: None,
        ip: 0,
        component: VmComponent::Java,
        state: None,
    };
    // Iteration 0 (warm-up) runs Warm.up 30 times; iterations 1 and 2 run Steady.run 10 times each.
    let mut samples: Vec<Sample> = (0..30).map(|i| sample(2_000 + i, warm)).collect();
    samples.extend((0..20).map(|i| sample(3_000 + i, steady)));
    let phases = [(0, 1_999), (1, 2_999), (2, 3_010)].map(|(index, time)| Mark::Phase {
        time,
        thread: ThreadIdx(0),
        name: "iteration".into(),
        index,
    });
    let times = ChunkTimes { start_ticks: 1_000, end_ticks: 4_000, start_wall_ns: 1_700_000_000_000_000_000 };
    let bytes = encode_chunk_with_marks(&rec, &samples, &phases, times);
    let dir = hpm_tests::scratch("cli-phase-cut");
    let path = dir.join("phases.jfr");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn report(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(hpm_tests::hpm_bin()).arg("report").args(args).output().expect("run hpm");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn report_from_an_iteration_leaves_warm_up_out() {
    let jfr = recording_with_phases();
    let jfr = jfr.to_str().unwrap();

    let (ok, all, _) = report(&[jfr]);
    assert!(ok && all.contains("Warm.up") && all.contains("Steady.run"), "{all}");

    let (ok, cut, err) = report(&[jfr, "--from-phase", "iteration=1"]);
    assert!(ok, "{err}");
    assert!(cut.contains("Steady.run") && !cut.contains("Warm.up"), "{cut}");
    assert!(err.contains("20 samples kept, 30 before it left out"), "{err}");
    // The header counts what the phase kept, of all.
    assert!(cut.contains("\nsamples:    20 of 50 (filter below); in the whole recording none dropped\n"), "{cut}");
    assert!(cut.contains("\nfilter:     from phase `iteration=1` on; 20 of 50 samples kept\n"), "{cut}");

    let (ok, _, err) = report(&[jfr, "--from-phase=iteration=2"]);
    assert!(ok && err.contains("10 samples kept"), "{err}");

    let (ok, _, err) = report(&[jfr, "--from-phase", "iteration=9"]);
    assert!(
        !ok && err.contains("no phase marker `iteration=9`") && err.contains("iteration=0, iteration=1, iteration=2"),
        "{err}"
    );
}

#[test]
fn from_phase_needs_a_jfr_recording() {
    let dir = hpm_tests::scratch("cli-phase-cut-collapsed");
    let collapsed = dir.join("x.collapsed");
    std::fs::write(&collapsed, "a;b 3\n").unwrap();
    let (ok, _, err) = report(&[collapsed.to_str().unwrap(), "--from-phase", "steady"]);
    assert!(!ok && err.contains("needs a .jfr recording"), "{err}");
}
