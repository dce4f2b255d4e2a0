//! Labels that agree: `hpm attach PID start,event=alloc` says what the
//! session samples (not `event none every 0ms`); the report's `samples:` line counts what
//! `--thread`, `--from` and `--from-phase` kept, of how many; its `threads:` line counts those
//! with samples of the threads seen, in the words of the agent's exit summary, which says the
//! same line for the same recording. The truth: a recording
//! written with our JFR writer (threads and samples by construction), and a real JVM's own
//! summary beside the report of its recording.

use std::path::PathBuf;

use hpm_profile::jfr::{ChunkTimes, JfrFileWriter};
use hpm_profile::model::*;
use hpm_tests::*;

const START: u64 = 1_000_000_000;

/// Five threads seen, three with samples: `main` (Java) 20 samples in the first second,
/// `worker-1` (Java) 30 in the second, `C2 CompilerThread0` (VM) 10 over both; `idle-1` (Java)
/// and `VM Thread` (VM) none.
fn five_threads_jfr() -> PathBuf {
    let mut rec = Recording::default();
    let mut thread = |name: &str, tid: u32, is_java: bool| {
        rec.add_thread(ThreadInfo { os_tid: tid, java_id: None, name: name.into(), is_java, is_virtual: false })
    };
    let main = thread("main", 10, true);
    let worker = thread("worker-1", 11, true);
    let c2 = thread("C2 CompilerThread0", 12, false);
    thread("idle-1", 13, true);
    thread("VM Thread", 14, false);
    let m = rec.methods.intern(MethodInfo::java("app.Main", "spin", "()V"));
    let stack: Stack = vec![Frame { method: m, bci: 1, line: 10, kind: FrameKind::JitCompiled }].into();
    let mut samples = Vec::new();
    for (t, n, from_ms, to_ms) in [(main, 20, 0, 1000), (worker, 30, 1000, 2000), (c2, 10, 0, 2000)] {
        for i in 0..n {
            samples.push(Sample {
                time: START + (from_ms + (to_ms - from_ms) * i / n) * 1_000_000,
                thread: t,
                weight: 10_000_000,
                ..Sample::of_stack(stack.clone())
            });
        }
    }
    samples.sort_by_key(|s| s.time);
    let path = scratch("cli_labels").join("five.jfr");
    let mut w = JfrFileWriter::create(&path).unwrap();
    let times = ChunkTimes { start_ticks: START, end_ticks: START + 2_000_000_000, start_wall_ns: 0 };
    w.write_chunk(&rec, &samples, times).unwrap();
    w.finish().unwrap();
    path
}

/// The value of the report header's `key:` line.
fn header<'a>(report: &'a str, key: &str) -> &'a str {
    let prefix = format!("{key}:");
    report
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{key}:` in the header:\n{report}"))
        .trim()
}

fn report(args: &[&str]) -> String {
    let out = hpm(args);
    assert!(out.status.success(), "hpm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn report_counts_threads_with_samples_of_those_seen() {
    let jfr = five_threads_jfr();
    let jfr = jfr.to_str().unwrap();
    let all = report(&["report", jfr]);
    eprintln!("{}", all.lines().take(12).collect::<Vec<_>>().join("\n"));
    assert_eq!(header(&all, "threads"), "3 sampled (2 Java, 1 VM) of 5 seen by the session", "{all}");
    assert_eq!(header(&all, "samples"), "60, none dropped");

    let worker = report(&["report", jfr, "--thread", "worker"]);
    assert_eq!(header(&worker, "threads"), "1 sampled (1 Java, 0 VM) of 5 seen by the session", "{worker}");
    assert!(header(&worker, "samples").starts_with("30 of 60 "), "{worker}");

    let late = report(&["report", jfr, "--from", "1s"]);
    eprintln!("{}", late.lines().take(12).collect::<Vec<_>>().join("\n"));
    // worker-1's 30 and C2's last 5 are from 1 s on.
    assert!(header(&late, "samples").starts_with("35 of 60 "), "{late}");
    assert_eq!(header(&late, "threads"), "2 sampled (1 Java, 1 VM) of 5 seen by the session", "{late}");
}

/// The agent's summary and the report of its recording say the same `threads:` line: the same
/// threads sampled, of the same threads seen.
#[test]
fn summary_and_report_agree_on_threads_seen() {
    for jdk in jdks() {
        summary_and_report_agree_on(&jdk);
    }
}

fn summary_and_report_agree_on(jdk: &Jdk) {
    let dir = scratch(&format!("cli_labels_agent_{}", jdk.name));
    let jfr = dir.join("t.jfr");
    let run =
        run_java(jdk, Some(&format!("interval=1ms,file={}", jfr.display())), &[], "Threads", &["busy", "4", "0.3"]);
    run.assert_ok("Threads busy");
    let said = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("hpm: threads: "))
        .unwrap_or_else(|| panic!("no `threads:` in the summary:\n{}", run.stderr))
        .to_string();
    let r = report(&["report", jfr.to_str().unwrap()]);
    let line = header(&r, "threads");
    eprintln!("{}: summary: threads: {said}; report: threads: {line}", jdk.name);
    assert_eq!(line, said, "the summary and the report of its recording");
}

/// `start,event=alloc` by attach: the answer names allocations, not an event `none`.
#[test]
fn attach_start_says_what_it_samples() {
    for jdk in jdks() {
        attach_start_says_what_it_samples_on(&jdk);
    }
}

fn attach_start_says_what_it_samples_on(jdk: &Jdk) {
    let dir = scratch(&format!("cli_labels_attach_{}", jdk.name));
    let jvm = Attachee::start(jdk);
    let out = attach_ok(jvm.pid, &format!("start,event=alloc,quiet,file={}", dir.join("a.jfr").display()));
    eprintln!("{out}");
    assert!(out.contains("profiling started: alloc every "), "{out}");
    assert!(!out.contains("none") && !out.contains("0ms"), "{out}");
    let out = attach_ok(jvm.pid, "stop");
    assert!(out.contains("profiling stopped"), "{out}");
    let out = attach_ok(jvm.pid, &format!("start,interval=5ms,quiet,file={}", dir.join("b.jfr").display()));
    eprintln!("{out}");
    assert!(out.contains("profiling started: event cpu-clock every 5 ms, sampler asgct"), "{out}");
    attach_ok(jvm.pid, "stop");
    jvm.finish(&jdk.name);
}
