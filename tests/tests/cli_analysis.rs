//! `hpm compare`, `hpm ccmap`, `hpm callerchain` and `hpm phases` run on files as a user would:
//! the papers' examples from `tests/data/analysis`, a recording written with our JFR writer,
//! a binary trace, and bad input. No JVM needed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `hpm` binary, built once for all end-to-end tests (hpm_tests::hpm_bin).
fn hpm() -> PathBuf {
    hpm_tests::hpm_bin()
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/analysis").join(name).display().to_string()
}

fn scratch(name: &str) -> PathBuf {
    hpm_tests::shared_scratch("cli-analysis").join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(hpm()).args(args).output().expect("run hpm")
}

/// Stdout of a command that must succeed.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "hpm {args:?} failed: {e}");
    assert!(e.is_empty(), "hpm {args:?} wrote to stderr: {e}");
    o.into_owned()
}

/// The one-line error of a command that must fail with status 2.
fn fails(args: &[&str]) -> String {
    hpm_tests::hpm_fails(args)
}

/// `name: value` lines as a map.
fn values(out: &str) -> HashMap<String, String> {
    out.lines().filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn compare_prints_the_three_metrics_first_and_matches_async_profiler_names() {
    let out = ok(&["compare", &data("async-profiler.collapsed"), &data("ours.collapsed")]);
    let first: Vec<&str> = out.lines().take(3).collect();
    assert_eq!(first, ["overlap: 100.00%", "hot-edge coverage: 100.00%", "method correlation: 1.0000"]);
    assert_eq!(values(&out)["samples"], "100 50");
    // The reader names async-profiler's frames as hpm's: alike even with the names as read.
    let raw = values(&ok(&["compare", &data("async-profiler.collapsed"), &data("ours.collapsed"), "--exact-names"]));
    assert_eq!(raw["overlap"], "100.00%");
}

#[test]
fn compare_is_symmetric_total_for_identical_and_zero_for_disjoint() {
    let (a, b) = (data("figure2.collapsed"), data("ours.collapsed"));
    let same = values(&ok(&["compare", &a, &a]));
    assert_eq!((same["overlap"].as_str(), same["hot-edge coverage"].as_str()), ("100.00%", "100.00%"));
    let disjoint = values(&ok(&["compare", &a, &b]));
    assert_eq!((disjoint["overlap"].as_str(), disjoint["hot-edge coverage"].as_str()), ("0.00%", "0.00%"));
    let (x, y) = (data("ours.collapsed"), data("other.collapsed"));
    let xy = values(&ok(&["compare", &x, &y, "--inclusive"]));
    let yx = values(&ok(&["compare", &y, &x, "--inclusive"]));
    assert_eq!(xy["overlap"], yx["overlap"]);
    assert_eq!(xy["overlap"], "34.48%"); // Thread.run: min(50/145, 30/60) of the inclusive weights
                                         // A higher threshold leaves fewer hot edges.
    let t = |v: &str| values(&ok(&["compare", &a, &a, "--threshold", v]))["hot edges"].clone();
    assert_eq!((t("0.1").as_str(), t("50%").as_str()), ("4 4", "2 2"));
}

#[test]
fn ccmap_answers_figure2_and_round_trips_its_dump() {
    let fig2 = data("figure2.collapsed");
    let dump = scratch("figure2.ccmap");
    let out = ok(&["ccmap", &fig2, "--dump", dump.to_str().unwrap()]);
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let at = lines.iter().position(|l| *l == "8  B -> C -> D").expect(&out);
    assert_eq!(lines[at + 1], "below: A 5, E 1, no caller seen 2");
    assert!(lines.contains(&"6  E -> B -> C -> F"), "{out}");
    assert!(lines.contains(&"5  A > B > C -> D"), "{out}");
    // The dump loads back to the same map: same report.
    assert_eq!(ok(&["ccmap", dump.to_str().unwrap()]), ok(&["ccmap", &fig2]));
    let pruned = ok(&["ccmap", &fig2, "--min-count", "2"]);
    assert!(pruned.contains("below: A 5, no caller seen 3"), "{pruned}");
}

#[test]
fn callerchain_reproduces_figure6_and_flags_figure7() {
    let out = ok(&["callerchain", &data("figure6.quads")]);
    assert!(out.starts_with("A @10\n  B @50  10 samples\n    D @90  20 samples\n      E @100  80 samples\n  C @40  10 samples\n    D @80  40 samples\n    E @50  10 samples\n"), "{out}");
    let v = values(&out);
    assert_eq!(v["nodes"], "7");
    assert_eq!(v["nodes with several callers at the same depth"], "0 (0.0%)");
    let ev = values(&ok(&["callerchain", &data("figure6.quads"), "--events", &data("figure6.events")]));
    assert_eq!(ev["events mapped"], "45 (100.0%), by fitting: 5");
    for fig in ["figure7a.quads", "figure7b.quads"] {
        let out = ok(&["callerchain", &data(fig)]);
        assert_eq!(out.matches("[2 callers at this depth").count(), 2, "{out}");
        let v = values(&out);
        assert!(v["nodes with several callers at the same depth"].starts_with("2 "), "{out}");
        assert_ne!(v["callers uniquely identified for >= 3 levels"], "100.0%");
    }
}

fn phases_of(out: &str) -> Vec<String> {
    let start = out.lines().position(|l| l.starts_with("phases (")).expect(out);
    out.lines()
        .skip(start + 1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn phases_selects_figure3_main_read_data_sort_data() {
    let out = ok(&["phases", &data("figure3.trace"), "--weight", "10", "--grain", "5"]);
    assert_eq!(phases_of(&out), ["main", "sortData", "readData"]);
    assert!(out.contains("estimated overhead: 0.457% (3 of 656 invocations profiled)"), "{out}");
    assert!(out.contains("total time: 1800 counter"), "{out}");
}

#[test]
fn phases_reports_cov_and_anova() {
    let out = ok(&["phases", &data("counters.trace"), "--weight", "20", "--grain", "2"]);
    assert_eq!(phases_of(&out), ["main", "work"]);
    assert!(out.contains("metric instructions per cycles:"), "{out}");
    assert!(out.contains("ANOVA: F=90.9091 df=(1, 20)"), "{out}");
    let out = ok(&["phases", &data("figure3.trace"), "--metrics", &data("plantgrowth.metrics")]);
    assert!(out.contains("ANOVA: F=4.8461 df=(2, 27) p=1.5910e-2"), "{out}");
}

/// Encodes a text trace in the binary format of docs/analysis.md.
fn to_binary(text: &str) -> Vec<u8> {
    let mut b = b"HPMTRACE\x01".to_vec();
    let mut methods: HashMap<String, u32> = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let n = methods.len() as u32;
        let id = *methods.entry(f[2].to_string()).or_insert(n);
        b.push(if f[0] == "enter" { 0x11 } else { 0x21 });
        b.extend(7u16.to_le_bytes());
        b.extend(id.to_le_bytes());
        b.extend(f[3].parse::<u64>().unwrap().to_le_bytes());
    }
    for (name, id) in methods {
        b.push(0x80);
        b.extend(id.to_le_bytes());
        b.extend((name.len() as u16).to_le_bytes());
        b.extend(name.as_bytes());
    }
    b
}

#[test]
fn phases_reads_binary_traces_too() {
    let text = std::fs::read_to_string(data("figure3.trace")).unwrap();
    let bin = scratch("figure3.bin");
    std::fs::write(&bin, to_binary(&text)).unwrap();
    let out = ok(&["phases", bin.to_str().unwrap()]);
    assert_eq!(phases_of(&out), ["main", "sortData", "readData"]);
    let mut bytes = to_binary(&text);
    bytes.truncate(bytes.len() - 2);
    std::fs::write(&bin, bytes).unwrap();
    let err = fails(&["phases", bin.to_str().unwrap()]);
    assert!(err.contains("figure3.bin: record") && err.contains("cut short"), "{err}");
}

#[test]
fn a_recording_gives_call_sites_and_compares_with_its_collapsed_stacks() {
    use hpm_profile::jfr::{ChunkTimes, JfrFileWriter};
    use hpm_profile::model::*;
    let mut rec = Recording::default();
    rec.add_thread(ThreadInfo { os_tid: 7, java_id: Some(1), name: "main".into(), is_java: true, is_virtual: false });
    let run = rec.methods.intern(MethodInfo::java("p.Main", "run", "()V"));
    let (f, g) = (
        rec.methods.intern(MethodInfo::java("p.A", "f", "()V")),
        rec.methods.intern(MethodInfo::java("p.B", "g", "()V")),
    );
    let frame = |method, bci| Frame { method, bci, line: -1, kind: FrameKind::JitCompiled };
    for (i, (callee, site)) in [(f, 5), (g, 9), (f, 5), (f, 5)].into_iter().enumerate() {
        rec.samples.push(Sample {
            carrier: None,
            time: 1_000 + i as u64,
            thread: ThreadIdx(0),
            stack: vec![frame(callee, 0), frame(run, site)].into(),
            truncated: false,
            weight: 10_000_000,
            repeat: 1,
            counters: vec![],
            data_addr: None,
            data: None,
            ip: 0,
            component: VmComponent::Java,
            state: None,
        });
    }
    let jfr = scratch("sites.jfr");
    let mut w = JfrFileWriter::create(&jfr).unwrap();
    w.write_chunk(&rec, &rec.samples, ChunkTimes { start_ticks: 0, end_ticks: 2_000, start_wall_ns: 0 }).unwrap();
    w.finish().unwrap();
    let jfr = jfr.to_str().unwrap();
    let out = ok(&["ccmap", jfr]);
    assert!(out.contains("3  p.Main.run@5 -> p.A.f"), "{out}");
    assert!(out.contains("1  p.Main.run@9 -> p.B.g"), "{out}");
    let collapsed = scratch("sites.collapsed");
    std::fs::write(&collapsed, "p.Main.run;p.A.f 3\np.Main.run;p.B.g 1\n").unwrap();
    let v = values(&ok(&["compare", jfr, collapsed.to_str().unwrap()]));
    assert_eq!((v["overlap"].as_str(), v["samples"].as_str()), ("100.00%", "4 4"));
}

#[test]
fn bad_input_names_file_line_and_problem() {
    let write = |name: &str, text: &str| {
        let p = scratch(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let q = write("bad.quads", "A 10 B 50 1\nA 10 B x 1\n");
    assert!(fails(&["callerchain", &q]).contains("bad.quads:2: callee depth `x` is not a whole number"));
    let q = write("shallow.quads", "A 50 B 40 1\n");
    assert!(fails(&["callerchain", &q]).contains("shallow.quads:1: callee depth 40 is not deeper"));
    let t = write("bad.trace", "enter t main 0\nexit t other 5\n");
    assert!(fails(&["phases", &t])
        .contains("bad.trace:2: exit of other on thread t, but the innermost open method is main"));
    let t = write("back.trace", "enter t main 10\nexit t main 5\n");
    assert!(fails(&["phases", &t]).contains("back.trace:2: counter value 5 is below the previous value 10"));
    let c = write("bad.collapsed", "main;a 1\nmain;b many\n");
    assert!(fails(&["compare", &c, &c]).contains("bad.collapsed:2:"));
    assert!(fails(&["ccmap", &c]).contains("bad.collapsed:2:"));
    let d = write("bad.ccmap", "# hpm ccmap 1\nN 1 0\nM 0 1 1 a\nS 0 3 -1\n");
    assert!(fails(&["ccmap", &d]).contains("bad.ccmap:4: caller refers to a node that does not exist"));
    let m = write("bad.metrics", "a 1\nb one\n");
    assert!(fails(&["phases", &data("figure3.trace"), "--metrics", &m])
        .contains("bad.metrics:2: value `one` is not a number"));
    let e = write("empty.collapsed", "# nothing\n");
    assert!(fails(&["compare", &e, &c]).contains("empty.collapsed: the profile has no samples"));
    let n = write("binary.junk", "\u{0}\u{1}\u{2}\u{ff}");
    fails(&["phases", &n]);
    assert!(hpm_tests::usage_error(&["compare", &data("ours.collapsed")]).contains("<B>"));
    assert!(hpm_tests::usage_error(&["phases", &data("figure3.trace"), "--weight", "150"])
        .contains("'150' for '--weight <W>'"));
    assert!(hpm_tests::usage_error(&["compare", &c, &c, "--threshold", "0"]).contains("--threshold"));
    assert!(hpm_tests::usage_error(&["callerchain", &data("figure6.quads"), "--frobnicate"]).contains("'--frobnicate'"));
    fails(&["ccmap", "/nonexistent/x.collapsed"]);
    // Absurd counts saturate instead of overflowing.
    let max = u64::MAX;
    let q = write("huge.quads", &format!("A 10 B 50 {max}\nA 10 B 50 {max}\nB 50 C 60 {max}\n"));
    assert!(ok(&["callerchain", &q]).contains(&format!("B @50  {max} samples")));
    let t = write("huge.trace", &format!("enter t a 0\nexit t a {max}\nenter t b {max}\nexit t b {max}\n"));
    assert!(ok(&["phases", &t]).contains(&format!("total time: {max} counter")));
}
