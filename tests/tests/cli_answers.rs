//! Issue 12, item 5 ("answers, not just trees") run as a user would, no JVM: the report's
//! thread table, `--thread`, `--from` and `--to` on report, flamegraph and convert, on a
//! recording written with our JFR writer; `hpm diff` on collapsed stacks and recordings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hpm_core::jfr::{ChunkTimes, JfrFileWriter};
use hpm_core::model::*;

const START: u64 = 1_000_000_000;
const WALL: u64 = 1_714_564_800_000_000_000; // 2024-05-01T12:00:00Z

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hpm-cli-answers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(hpm_tests::hpm_bin()).args(args).output().expect("run hpm")
}

/// (stdout, stderr) of a command that must succeed.
fn ok(args: &[&str]) -> (String, String) {
    let out = run(args);
    let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "hpm {args:?} failed: {e}");
    (o.into_owned(), e.into_owned())
}

/// The one-line error of a command that must fail with status 2.
fn fails(args: &[&str]) -> String {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "hpm {args:?} should fail with status 2; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(err.starts_with("hpm: "), "{err}");
    err
}

/// The lines of a report section, after its header line, up to the blank line.
fn section<'a>(report: &'a str, title: &str) -> Vec<&'a str> {
    let start = report.find(title).unwrap_or_else(|| panic!("no section {title}\n{report}"));
    report[start..].lines().skip(2).take_while(|l| !l.is_empty()).collect()
}

/// Three threads over two seconds, with a task-clock counter of 1 ms a sample:
/// `main` 20 samples of `app.Main.idle` spread over both seconds, `worker-1` 30 samples of
/// `app.W.alpha` in the first second, `worker-2` 50 samples of `app.W.beta` in the second.
/// Written once for all tests.
fn threads_jfr() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(write_threads_jfr).clone()
}

fn write_threads_jfr() -> PathBuf {
    let mut rec = Recording { counters: vec!["task-clock".into()], ..Default::default() };
    let threads = [("main", 10), ("worker-1", 11), ("worker-2", 12)]
        .map(|(name, tid)| rec.add_thread(ThreadInfo { os_tid: tid, java_id: None, name: name.into(), is_java: true }));
    let run = rec.methods.intern(MethodInfo::java("java.lang.Thread", "run", "()V"));
    let methods = [("app.Main", "idle"), ("app.W", "alpha"), ("app.W", "beta")]
        .map(|(c, m)| rec.methods.intern(MethodInfo::java(c, m, "()V")));
    let mut samples = Vec::new();
    for (t, m, n, from_ms, to_ms) in [
        (threads[0], methods[0], 20, 0, 2000),
        (threads[1], methods[1], 30, 0, 1000),
        (threads[2], methods[2], 50, 1000, 2000),
    ] {
        let stack: Stack = vec![
            Frame { method: m, bci: 1, line: 10, kind: FrameKind::JitCompiled },
            Frame { method: run, bci: 2, line: 20, kind: FrameKind::Interpreted },
        ]
        .into();
        for i in 0..n {
            samples.push(Sample {
                time: START + (from_ms + (to_ms - from_ms) * i / n) * 1_000_000,
                thread: t,
                stack: stack.clone(),
                truncated: false,
                weight: 10_000_000,
                counters: vec![1_000_000],
                data_addr: None,
                ip: 0,
                component: VmComponent::Java,
                state: None,
            });
        }
    }
    samples.sort_by_key(|s| s.time);
    let path = scratch("threads.jfr");
    let mut w = JfrFileWriter::create(&path).unwrap();
    let times = ChunkTimes { start_ticks: START, end_ticks: START + 2_000_000_000, start_wall_ns: WALL };
    w.write_chunk(&rec, &samples, times).unwrap();
    w.finish().unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn report_has_a_thread_table() {
    let jfr = threads_jfr();
    let (out, _) = ok(&["report", s(&jfr)]);
    assert_eq!(
        section(&out, "== Threads =="),
        [
            "        50   50.00%      50.00%       12  worker-2",
            "        30   30.00%      30.00%       11  worker-1",
            "        20   20.00%      20.00%       10  main",
        ],
        "{out}"
    );
    assert!(!out.contains("filter:"), "no filter, no filter line: {out}");
}

#[test]
fn thread_and_time_select_the_samples_of_the_report() {
    let jfr = threads_jfr();
    let (out, err) = ok(&["report", s(&jfr), "--thread", "^worker-"]);
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("\nsamples:    80, none dropped\n"), "{out}");
    assert!(out.contains("\nfilter:     threads matching `^worker-` (2 of 3); 80 of 100 samples kept\n"), "{out}");
    assert_eq!(section(&out, "== Threads ==").len(), 2, "{out}");
    assert!(!out.contains("app.Main.idle"), "{out}");

    let (out, _) = ok(&["report", s(&jfr), "--from", "1s"]);
    assert!(out.contains("\nfilter:     from 1 s on; 60 of 100 samples kept\n"), "{out}");
    assert!(out.contains("app.W.beta") && !out.contains("app.W.alpha"), "{out}");

    let (out, _) = ok(&["report", s(&jfr), "--thread", "main", "--from", "500ms", "--to", "1.5s"]);
    assert!(
        out.contains("\nfilter:     threads matching `main` (1 of 3), from 500 ms to 1.5 s; 10 of 100 samples kept\n"),
        "{out}"
    );

    // Absolute times on the recording's wall clock: 12:00:01Z is 1 s after its start.
    let (abs, _) = ok(&["report", s(&jfr), "--from", "2024-05-01T12:00:01Z"]);
    let (rel, _) = ok(&["report", s(&jfr), "--from", "1000ms"]);
    assert_eq!(abs, rel);
}

#[test]
fn flamegraph_and_convert_take_the_same_selection() {
    let jfr = threads_jfr();
    let html = scratch("w1.html");
    let (_, err) = ok(&["flamegraph", s(&jfr), "-o", s(&html), "--thread", "worker-1"]);
    assert!(
        err.contains("(30 samples, 2 frames; threads matching `worker-1` (1 of 3); 30 of 100 samples kept)"),
        "{err}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("app.W.alpha") && !page.contains("app.W.beta"), "only worker-1's frames");
    assert!(page.contains("threads matching `worker-1` (1 of 3)"), "the subtitle says what was selected");

    let collapsed = scratch("late.collapsed");
    ok(&["flamegraph", s(&jfr), "-o", s(&collapsed), "--from", "1s", "--to", "2s"]);
    let text = std::fs::read_to_string(&collapsed).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(lines, ["java.lang.Thread.run;app.Main.idle 10", "java.lang.Thread.run;app.W.beta 50"]);

    let json = scratch("early.json");
    let (_, err) = ok(&["convert", s(&jfr), "-o", s(&json), "--to", "1s"]);
    assert!(err.contains("(40 samples, 2 distinct stacks; up to 1 s; 40 of 100 samples kept)"), "{err}");
    let doc = std::fs::read_to_string(&json).unwrap();
    assert!(doc.contains("app.W.alpha") && !doc.contains("app.W.beta"));
}

#[test]
fn selections_that_cannot_be_made_say_why_in_one_line() {
    let jfr = threads_jfr();
    let jfr = s(&jfr);
    let e = fails(&["report", jfr, "--thread", "worker-("]);
    assert!(e.contains("--thread `worker-(` is not a regular expression (unclosed group)"), "{e}");
    let e = fails(&["flamegraph", jfr, "-o", s(&scratch("x.html")), "--thread", "gc"]);
    assert!(e.contains("--thread `gc` matches no thread") && e.contains("`main`, `worker-1`, `worker-2`"), "{e}");
    let e = fails(&["convert", jfr, "-o", s(&scratch("x.json")), "--from", "5s"]);
    assert!(e.contains("no samples from 5 s on") && e.contains("lie between 0 ns and 1.98 s"), "{e}");
    let e = fails(&["report", jfr, "--thread", "worker-1", "--from", "1s"]);
    assert!(e.contains("the threads matching `worker-1` have no samples from 1 s on"), "{e}");
    let e = fails(&["report", jfr, "--from", "2s", "--to", "1s"]);
    assert!(e.contains("--from 2 s is not before --to 1 s"), "{e}");
    let e = fails(&["report", jfr, "--to", "yesterday"]);
    assert!(e.contains("--to `yesterday` is not a time") && e.contains("2.5s"), "{e}");
    let e = fails(&["report", jfr, "--from", "2024-05-01T12:00:01"]);
    assert!(e.contains("no zone"), "{e}");
    let collapsed = scratch("plain.collapsed");
    std::fs::write(&collapsed, "a;b 3\n").unwrap();
    let e = fails(&["report", s(&collapsed), "--thread", "x"]);
    assert!(e.contains("need a .jfr recording"), "{e}");
}
