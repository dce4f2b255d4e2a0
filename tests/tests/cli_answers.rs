//! Answers, not just trees, run as a user would, no JVM: the report's
//! thread table, `--thread`, `--from` and `--to` on report, flamegraph and convert, on a
//! recording written with our JFR writer; `hpm diff` on collapsed stacks and recordings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hpm_profile::jfr::{ChunkTimes, JfrFileWriter};
use hpm_profile::model::*;

const START: u64 = 1_000_000_000;
const WALL: u64 = 1_714_564_800_000_000_000; // 2024-05-01T12:00:00Z

fn scratch(name: &str) -> PathBuf {
    hpm_tests::shared_scratch("cli-answers").join(name)
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
    hpm_tests::hpm_fails(args)
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
    let threads = [("main", 10), ("worker-1", 11), ("worker-2", 12)].map(|(name, tid)| {
        rec.add_thread(ThreadInfo { os_tid: tid, java_id: None, name: name.into(), is_java: true, is_virtual: false })
    });
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
                carrier: None,
                time: START + (from_ms + (to_ms - from_ms) * i / n) * 1_000_000,
                thread: t,
                stack: stack.clone(),
                truncated: false,
                weight: 10_000_000,
                repeat: 1,
                counters: vec![1_000_000],
                data_addr: None,
                data: None,
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
    assert!(out.contains("\nsamples:    80 of 100 (filter below); in the whole recording none dropped\n"), "{out}");
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

fn analysis(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/analysis").join(name).display().to_string()
}

/// The method column of a diff's method table, in order.
fn diff_methods(out: &str) -> Vec<String> {
    section(out, "== Methods by")
        .iter()
        .filter(|l| !l.starts_with('('))
        .map(|l| l.split_whitespace().last().unwrap().to_string())
        .collect()
}

#[test]
fn diff_lists_what_grew_and_shrank_and_draws_it() {
    let (a, b) = (analysis("ours.collapsed"), analysis("other.collapsed"));
    let html = scratch("diff.html");
    let (out, err) = ok(&["diff", &a, &b, "-o", s(&html)]);
    assert!(out.starts_with("== hpm diff ==\n"), "{out}");
    assert!(out.contains("(50 samples)") && out.contains("(30 samples)"), "{out}");
    let rows = section(&out, "== Methods by change in share (the larger of self and total) ==");
    assert_eq!(
        rows,
        [
            " +100.00  +100.00    0.00%  100.00%    0.00%  100.00%  Other.task",
            "  -10.00  -100.00   10.00%    0.00%  100.00%    0.00%  Main.work",
            "  -90.00   -90.00   90.00%    0.00%   90.00%    0.00%  Main.hot",
        ],
        "{out}"
    );
    let contexts = section(&out, "== Calling contexts by change in self share ==");
    assert_eq!(contexts[0], " +100.00    0.00%  100.00%  java.lang.Thread.run > Other.task", "{out}");
    assert!(err.contains("wrote") && err.contains("1 frames only in A, 1 of them listed"), "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Only in A, not drawn: 1 frames")
            && page.contains("<li>java.lang.Thread.run &gt; Main.work (100.00% of A)</li>")
    );
    assert!(page.contains("<title>hpm diff: ours.collapsed -&gt; other.collapsed</title>"), "default title");
    // The page's script, run against a fake DOM when Node is installed: colours and tooltips.
    if Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/output/flame_dom_check.js");
        let check = Command::new("node").arg(js).arg(&html).arg("diff").output().unwrap();
        assert!(
            check.status.success(),
            "flame.js in node:\n{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }
    let svg = scratch("diff.svg");
    ok(&["diff", &a, &b, "-o", s(&svg), "--title", "before/after"]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("before/after") && text.contains("rgb(255,50,50)") && text.contains("</tspan> shrank"));
    // Swapped: the signs turn; Other.task and Main.work tie at 100 points, and Other.task's
    // own samples moved by more.
    let (back, _) = ok(&["diff", &b, &a]);
    assert_eq!(diff_methods(&back), ["Other.task", "Main.work", "Main.hot"]);
    assert!(back.contains(" -100.00  -100.00  100.00%    0.00%  100.00%    0.00%  Other.task"), "{back}");
}

#[test]
fn diff_orders_by_what_is_asked_and_reads_async_profiler_names() {
    let (a, b) = (analysis("ours.collapsed"), analysis("other.collapsed"));
    let (by_self, _) = ok(&["diff", &a, &b, "--by", "self", "--top", "2"]);
    assert!(by_self.contains("== Methods by change in self share =="), "{by_self}");
    assert_eq!(diff_methods(&by_self), ["Other.task", "Main.hot"]);
    assert!(by_self.contains("(1 more methods changed less)"), "{by_self}");
    let (by_total, _) = ok(&["diff", &a, &b, "--by", "total"]);
    assert_eq!(diff_methods(&by_total), ["Other.task", "Main.work", "Main.hot"]);
    // async-profiler's names against ours: nothing changed but the names.
    let (same, _) = ok(&["diff", &analysis("async-profiler.collapsed"), &a]);
    assert!(same.contains("(no method's share changed)"), "{same}");
    // Read as hpm names them: alike even with the names as read.
    let (raw, _) = ok(&["diff", &analysis("async-profiler.collapsed"), &a, "--exact-names"]);
    assert!(raw.contains("(no method's share changed)") && !raw.contains("_[j]"), "{raw}");
}

#[test]
fn diff_of_recordings_takes_the_selection_of_both() {
    let jfr = threads_jfr();
    // The first second against the second: worker-1's alpha gone, worker-2's beta come.
    let (out, _) = ok(&["diff", s(&jfr), s(&jfr), "--thread", "worker"]);
    assert!(out.contains("(no method's share changed)"), "a recording against itself: {out}");
    let early = scratch("early.collapsed");
    ok(&["flamegraph", s(&jfr), "-o", s(&early), "--to", "1s"]);
    let (out, _) = ok(&["diff", s(&early), s(&jfr), "--by", "self"]);
    assert_eq!(diff_methods(&out), ["app.W.beta", "app.W.alpha", "app.Main.idle"], "{out}");
    let e = fails(&["diff", s(&early), s(&jfr), "--from", "1s"]);
    assert!(e.contains("need a .jfr recording"), "{e}");
}

#[test]
fn diff_refuses_in_one_line_and_explains_itself() {
    let a = analysis("ours.collapsed");
    let e = fails(&["diff", &a, &a, "-o", s(&scratch("d.collapsed"))]);
    assert!(e.contains("a differential flame graph is .html (interactive) or .svg (static)"), "{e}");
    let e = fails(&["diff", &a, &a, "-o", s(&scratch("d.png"))]);
    assert!(e.contains(".png") && e.contains(".html"), "{e}");
    let empty = scratch("empty.collapsed");
    std::fs::write(&empty, "# nothing\n").unwrap();
    assert!(fails(&["diff", &a, s(&empty)]).contains("empty.collapsed: the profile has no samples"));
    assert!(fails(&["diff", &a, "no/such.jfr"]).contains("no/such.jfr"));
    assert!(hpm_tests::usage_error(&["diff", &a]).contains("<B>"));
    assert!(hpm_tests::usage_error(&["diff", &a, &a, "--by", "size"]).contains("change, self, total"));
    let help = run(&["help", "diff"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for words in ["percentage points", "differential flame graph", "red where its share", "--by <BY>"] {
        assert!(help.contains(words), "`hpm help diff` lacks `{words}`:\n{help}");
    }
}

/// Control characters in text: anything but newline and tab.
fn controls(text: &str) -> Vec<char> {
    text.chars().filter(|&c| c.is_control() && c != '\n' && c != '\t').collect()
}

/// Names in a profile are the file's, whoever wrote it: the report, the diff and the errors that
/// quote them show their control characters as `\xNN`, so a recording cannot set the terminal's
/// title or colours or clear it (they were printed raw).
#[test]
fn names_with_control_characters_are_shown_not_obeyed() {
    let mut rec = Recording::default();
    let thread = rec.add_thread(ThreadInfo {
        os_tid: 10,
        java_id: None,
        name: "w\x1b]0;owned\x07".into(),
        is_java: true,
        is_virtual: false,
    });
    let m = rec.methods.intern(MethodInfo::java("app.\x1b[31mRed\u{9b}2J", "run", "()V"));
    let stack: Stack = vec![Frame { method: m, bci: 1, line: 10, kind: FrameKind::JitCompiled }].into();
    let samples: Vec<Sample> = (0..10)
        .map(|i| Sample {
            carrier: None,
            time: START + i * 1_000_000,
            thread,
            stack: stack.clone(),
            truncated: false,
            weight: 10_000_000,
            repeat: 1,
            counters: vec![],
            data_addr: None,
            data: None,
            ip: 0,
            component: VmComponent::Java,
            state: None,
        })
        .collect();
    let jfr = scratch("controls.jfr");
    let mut w = JfrFileWriter::create(&jfr).unwrap();
    let times = ChunkTimes { start_ticks: START, end_ticks: START + 1_000_000_000, start_wall_ns: WALL };
    w.write_chunk(&rec, &samples, times).unwrap();
    w.finish().unwrap();

    let (out, _) = ok(&["report", s(&jfr), "--threads"]);
    assert_eq!(controls(&out), [], "{out}");
    assert!(out.contains(r"w\x1b]0;owned\x07") && out.contains(r"app.\x1b[31mRed\x9b2J.run"), "{out}");
    let e = fails(&["report", s(&jfr), "--thread", "nomatch"]);
    assert_eq!(controls(&e), [], "{e}");
    assert!(e.contains(r"`w\x1b]0;owned\x07`"), "{e}");

    let collapsed = scratch("controls.collapsed");
    std::fs::write(&collapsed, "main;evil\x1b[2J\x08 5\nmain;good 5\n").unwrap();
    for args in [&["report", s(&collapsed)][..], &["diff", s(&collapsed), s(&jfr)]] {
        let (out, _) = ok(args);
        assert_eq!(controls(&out), [], "{args:?}: {out}");
    }
}
