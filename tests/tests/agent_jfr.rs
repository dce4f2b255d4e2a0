//! The agent's JFR file, read by the JDK's own tools: `jfr summary`, `jfr print` and
//! jdk.jfr.consumer.RecordingFile accept it; events, stacks (lines, bytecode indexes, frame
//! types incl. inlined) and the custom counter fields are present and agree with the collapsed
//! output of the same run. `hpm report` reads it too.

use std::process::Command;

use hpm_tests::*;

#[test]
fn jfr_is_read_by_the_jdk_and_matches_collapsed() {
    for jdk in jdks() {
        let dir = scratch(&format!("jfr-{}", jdk.name));
        let (jfr, collapsed) = (dir.join("p.jfr"), dir.join("p.collapsed"));
        let opts = format!(
            "interval=1ms,counters=task-clock+page-faults,flush=1s,file={},file={},quiet",
            jfr.display(),
            collapsed.display()
        );
        // Each worker runs for 3 s of its own CPU time, not of wall time: on a loaded machine a
        // wall-clock run could end before C2 had compiled run() with a, b and c inlined (the
        // Inlined frame type below was missing once).
        run_java(&jdk, Some(&opts), &[], "Shares", &["2", "3", "cpu"]).assert_ok("Shares");

        for args in [vec!["summary"], vec!["print", "--events", "hpm.Sample"]] {
            let out = Command::new(jdk.tool("jfr")).args(&args).arg(&jfr).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{}: jfr {args:?} failed: {text}", jdk.name);
            // The tool reports problems as `jfr print: ...` or `Error: ...` lines (sometimes with
            // exit status 0), exceptions, or error text on stderr; stack frames in the output may
            // legitimately name methods like `java.lang.Error.<init>` or `VMError::is_error_reported`.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let errors: Vec<&str> = text
                .lines()
                .filter(|l| {
                    let l = l.trim_start();
                    l.starts_with("jfr ") || l.to_lowercase().starts_with("error") || l.contains("Exception in thread")
                })
                .collect();
            assert!(
                errors.is_empty() && !stderr.contains("rror"),
                "{}: jfr {args:?} reported an error: {errors:?} {stderr}",
                jdk.name
            );
        }

        let r = check_jfr(&jdk, &jfr, "Shares");
        let stacks = read_collapsed(&collapsed);
        let samples = r["count jdk.ExecutionSample"];
        eprintln!("{}: {samples} ExecutionSample events, {} collapsed samples", jdk.name, total(&stacks));
        assert_eq!(samples, total(&stacks), "{}: JFR and collapsed disagree", jdk.name);
        // hpm.Sample has each CPU sample, and page-faults' own overflow samples (period 0).
        assert_eq!(r["count hpm.Sample"] - r["own-samples"], samples, "{}", jdk.name);
        assert!(r["count hpm.Config"] >= 2, "{}: expected several flushed chunks", jdk.name);
        for field in
            ["event", "period", "component", "dataAddress", "taskClock", "pageFaults", "stackTrace", "sampledThread"]
        {
            assert!(r.contains_key(&format!("field hpm.Sample.{field}")), "{}: hpm.Sample lacks {field}", jdk.name);
        }
        // task-clock deltas add up to about the sampled CPU time (1 ms per sample).
        let task_ms = r["sum hpm.Sample.taskClock"] as f64 / 1e6;
        assert!(
            task_ms > 0.7 * samples as f64 && task_ms < 1.3 * samples as f64,
            "{}: task-clock {task_ms} ms for {samples} samples",
            jdk.name
        );
        // Top frames agree with the collapsed leaves.
        let spin_top = r.get("top Shares.spin").copied().unwrap_or(0);
        let spin_leaf: u64 = stacks.iter().filter(|(f, _)| f.last().unwrap() == "Shares.spin").map(|(_, n)| n).sum();
        assert_eq!(spin_top, spin_leaf, "{}", jdk.name);
        assert!(spin_top * 10 >= samples * 8, "{}: Shares.spin on top in {spin_top} of {samples}", jdk.name);
        // Line numbers and frame types.
        // Every frame of the workload's class has its line and bytecode index.
        assert!(r["class-lines-total"] > samples, "{}: {r:?}", jdk.name);
        assert_eq!(r["class-lines-positive"], r["class-lines-total"], "{}: frames without lines", jdk.name);
        assert!(r.get("frametype Inlined").copied().unwrap_or(0) > 0, "{}: no inlined frames: {r:?}", jdk.name);
        assert!(r.get("frametype JIT_compiled").copied().unwrap_or(0) > 0, "{}: no compiled frames", jdk.name);

        let report = Command::new(hpm_bin()).arg("report").arg(&jfr).output().unwrap();
        let text = String::from_utf8_lossy(&report.stdout);
        assert!(report.status.success(), "hpm report failed: {}", String::from_utf8_lossy(&report.stderr));
        assert!(text.contains("Shares.spin") && text.contains("task-clock"), "{text}");
    }
}

/// A JVM killed with SIGKILL leaves the chunks flushed so far, readable, in `NAME.part` (the
/// final name appears only when the file is complete).
#[test]
fn killed_jvm_leaves_a_readable_file() {
    let jdk = &jdks()[0];
    let dir = scratch("killed");
    let jfr = dir.join("p.jfr");
    let part = dir.join("p.jfr.part");
    let opts = format!("interval=1ms,flush=1s,file={},quiet", jfr.display());
    let mut child = Command::new(jdk.java())
        .arg(format!("-agentpath:{}={opts}", agent_path().display()))
        .arg("-cp")
        .arg(workloads())
        .args(["Linger"])
        .arg(&part)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Linger prints "flushed" once the file has a chunk in it.
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "flushed");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!jfr.exists(), "the final name is only written once the profile is complete");
    let r = check_jfr(jdk, &part, "Shares");
    assert!(r.get("count jdk.ExecutionSample").copied().unwrap_or(0) > 0, "{r:?}");
    // hpm's own readers take it as it is, as the README and the next run's refusal say.
    let report = Command::new(hpm_bin()).arg("report").arg(&part).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "hpm report X.part: {}", String::from_utf8_lossy(&report.stderr));
    assert!(text.contains("Linger"), "{text}");
    let svg = dir.join("p.svg");
    let fg = Command::new(hpm_bin()).arg("flamegraph").arg(&part).arg("-o").arg(&svg).output().unwrap();
    assert!(fg.status.success(), "hpm flamegraph X.part: {}", String::from_utf8_lossy(&fg.stderr));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("Linger"));
}
