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

/// The lines of `jfr ARGS FILE` (stdout), failing on an error.
fn jfr_lines(jdk: &Jdk, args: &[&str], file: &std::path::Path) -> Vec<String> {
    let out = Command::new(jdk.tool("jfr")).args(args).arg(file).output().unwrap();
    assert!(out.status.success(), "{}: jfr {args:?}: {}", jdk.name, String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// (frame type, class name, javaFrame) of every frame of `jfr print --json` of `event`, read
/// line by line: a frame's method's class name is the first `"name"` after `"type": {`, the
/// frame's type the `"type": "..."` after it, `javaFrame` (absent: None) the line after that.
fn json_frames(jdk: &Jdk, file: &std::path::Path, event: &str) -> Vec<(String, String, Option<bool>)> {
    let lines = jfr_lines(jdk, &["print", "--json", "--stack-depth", "64", "--events", event], file);
    let value = |l: &str| l.split_once(": ").map(|(_, v)| v.trim_end_matches([',', ' ']).trim_matches('"').to_string());
    let (mut frames, mut class, mut in_class) = (Vec::new(), String::new(), false);
    for (i, l) in lines.iter().enumerate() {
        let l = l.trim();
        if l == "\"type\": {" {
            in_class = true;
        } else if in_class && l.starts_with("\"name\": ") {
            class = value(l).unwrap_or_default();
            in_class = false;
        } else if l.starts_with("\"type\": \"") && l.trim_end_matches([',', ' ']).ends_with('"') {
            let java = lines
                .get(i + 1)
                .map(|n| n.trim())
                .filter(|n| n.starts_with("\"javaFrame\""))
                .map(|n| n.contains("true"));
            frames.push((value(l).unwrap_or_default(), class.clone(), java));
        }
    }
    frames
}

/// Native, C++ and kernel frames as the JDK's tools read them: hpm wrote a
/// native symbol's method in a class with no name, which `jfr print` showed as
/// `.__memset_avx2_unaligned_erms()`, and JDK 25's `jfr view hot-methods` ("Java Methods that
/// Execute the Most") listed libc's and the kernel's functions as Java methods. Now they are in
/// a class named by their kind (`native`, `libjvm.so`, `kernel`, as async-profiler names them
/// by library) and marked as not Java frames (`javaFrame`, which the JDK's `isJavaFrame()`
/// reads): `jfr print` shows the Java frames, as for the JDK's own recordings (its `--json`
/// all of them), and hot-methods lists the Java methods that call into libc (LibcCalls:
/// FileOutputStream.write, Deflater.reset).
#[test]
fn native_frames_are_named_and_not_taken_for_java_methods() {
    for jdk in jdks() {
        let dir = scratch(&format!("jfr-native-{}", jdk.name));
        let jfr = dir.join("p.jfr");
        let opts = format!("interval=1ms,file={}", jfr.display());
        run_java(&jdk, Some(&opts), &[], "LibcCalls", &["2"]).assert_ok("LibcCalls");

        let frames = json_frames(&jdk, &jfr, "jdk.ExecutionSample");
        let symbols: Vec<&(String, String, Option<bool>)> = frames
            .iter()
            .filter(|f| f.0 == "C++" || f.0 == "Kernel" || (f.0 == "Native" && f.2 != Some(true)))
            .collect();
        let named = |f: &&(String, String, Option<bool>)| {
            let class = match f.0.as_str() {
                "C++" => "libjvm.so",
                "Kernel" => "kernel",
                _ => "native",
            };
            f.1 == class && f.2 == Some(false)
        };
        let wrong: Vec<_> = symbols.iter().filter(|f| !named(f)).take(5).collect();
        eprintln!(
            "{}: {} frames, {} of native symbols; not as written now: {wrong:?}",
            jdk.name,
            frames.len(),
            symbols.len()
        );
        assert!(symbols.len() >= 1000, "{}: only {} frames of native symbols", jdk.name, symbols.len());
        assert!(
            wrong.is_empty(),
            "{}: native frames in a class not of their kind, or Java frames: {wrong:?}",
            jdk.name
        );

        // `jfr view` came with JDK 21.
        let probe = Command::new(jdk.tool("jfr")).args(["view", "hot-methods"]).arg(&jfr).output().unwrap();
        if !probe.status.success() {
            eprintln!("{}: no `jfr view` (JDK 21+), hot-methods not checked", jdk.name);
            continue;
        }
        let view = jfr_lines(&jdk, &["view", "--width", "200", "hot-methods"], &jfr);
        let rows: Vec<&str> = view
            .iter()
            .skip_while(|l| !l.starts_with("---"))
            .skip(1)
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        eprintln!("{}: hot-methods:\n  {}", jdk.name, rows.iter().take(5).copied().collect::<Vec<_>>().join("\n  "));
        let not_java: Vec<&&str> = rows
            .iter()
            .filter(|r| ["native.", "kernel.", "libjvm.so.", "."].iter().any(|p| r.starts_with(p)))
            .collect();
        assert!(not_java.is_empty(), "{}: hot-methods lists native frames: {not_java:?}", jdk.name);
        assert!(
            rows.iter().take(2).all(|r| r.starts_with("java.io.FileOutputStream.") || r.starts_with("java.util.zip.")),
            "{}: the Java callers of libc lead hot-methods: {rows:?}",
            jdk.name
        );
    }
}

/// Lock events write what hpm knows and leave out what it cannot: the
/// monitor's class has its loader (the application's, `app`; hpm wrote null), and the JDK's
/// previous owner and monitor address, which JVMTI's contended-enter events do not give, are
/// left out (hpm wrote them as `N/A` and 0, which read as known).
#[test]
fn lock_events_have_no_made_up_owner_or_address() {
    for jdk in jdks() {
        let dir = scratch(&format!("jfr-lock-{}", jdk.name));
        let jfr = dir.join("l.jfr");
        let opts = format!("event=lock,file={}", jfr.display());
        run_java(&jdk, Some(&opts), &[], "AllocLocks", &["handoff", "50"]).assert_ok("AllocLocks handoff");
        let print = jfr_lines(&jdk, &["print", "--events", "jdk.JavaMonitorEnter"], &jfr);
        let events = print.iter().filter(|l| l.starts_with("jdk.JavaMonitorEnter")).count();
        let class = print.iter().find(|l| l.trim().starts_with("monitorClass = AllocLocks$HotLock")).cloned();
        eprintln!("{}: {events} monitor enters; {}", jdk.name, class.as_deref().unwrap_or("no HotLock").trim());
        assert!(events >= 50, "{}: only {events} monitor enters", jdk.name);
        let loader = class.as_deref().is_some_and(|c| c.trim().ends_with("(classLoader = app)"));
        assert!(loader, "{}: the monitor's class without the application's loader: {class:?}", jdk.name);
        for field in ["previousOwner = ", "address = "] {
            let made_up = print.iter().filter(|l| l.trim().starts_with(field)).count();
            assert_eq!(made_up, 0, "{}: {made_up} events with {field}", jdk.name);
        }
    }
}
