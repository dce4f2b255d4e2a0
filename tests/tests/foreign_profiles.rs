//! Profiles other tools wrote, read by hpm as its own:
//! - the allocation events of the JDK's Flight Recorder and of async-profiler 4.6
//!   (`jdk.ObjectAllocationInNewTLAB`, `jdk.ObjectAllocationOutsideTLAB`, weighed as those tools
//!   weigh them), against a truth known by construction: tests/workloads/AllocLocks.java
//!   allocates long[], byte[] and int[] in the byte ratio 49.9 : 25.0 : 25.1, and `hpm report
//!   --event alloc` must show it;
//! - async-profiler's collapsed stacks, whose frames it names its own way
//!   (`java/lang/Thread.run_[j]`): read as hpm names them, so a report shows dotted names and
//!   `hpm diff` of an hpm recording against them has each method of the workload as one row.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use hpm_tests::*;

/// The classes AllocLocks' sites allocate, by site.
const SITE_CLASS: [(&str, &str); 3] = [("allocLarge", "long[]"), ("allocSmall", "byte[]"), ("allocInts", "int[]")];

/// `truth bytes allocLarge=N allocSmall=N allocInts=N` from AllocLocks' output: each class's
/// share of the bytes, in percent.
fn truth(stdout: &str) -> Vec<(&'static str, f64)> {
    let line =
        stdout.lines().find_map(|l| l.strip_prefix("truth bytes ")).unwrap_or_else(|| panic!("no truth: {stdout}"));
    let bytes: Vec<(&str, f64)> = line
        .split_whitespace()
        .map(|kv| {
            let (site, n) = kv.split_once('=').expect("site=bytes");
            let class = SITE_CLASS.iter().find(|s| s.0 == site).expect("a known site").1;
            (class, n.parse::<f64>().expect("bytes"))
        })
        .collect();
    let all: f64 = bytes.iter().map(|b| b.1).sum();
    bytes.into_iter().map(|(c, n)| (c, n * 100.0 / all)).collect()
}

/// `hpm report FILE --event alloc`: its text and stderr, asserting success.
fn alloc_report(file: &Path) -> (String, String) {
    let out = Command::new(hpm_bin()).arg("report").arg(file).args(["--event", "alloc"]).output().expect("hpm report");
    let (text, err) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "hpm report --event alloc {}: {err}", file.display());
    (text, err.into_owned())
}

/// From a report's method table: the self share of each of the truth's classes (as leaf
/// frames, in percent of all allocations), and the events counted (the `samples:` line).
fn class_shares(text: &str) -> (HashMap<String, f64>, u64) {
    let mut shares = HashMap::new();
    for l in text.lines() {
        let mut words = l.split_whitespace();
        let (Some(first), Some(last)) = (words.next(), l.split_whitespace().last()) else { continue };
        if let (Some(class), Some(p)) =
            (SITE_CLASS.iter().find(|t| t.1 == last), first.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()))
        {
            shares.entry(class.1.to_string()).or_insert(p);
        }
    }
    let events = text
        .lines()
        .find_map(|l| l.strip_prefix("samples:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.trim_end_matches(',').replace(',', "").parse().ok())
        .unwrap_or(0);
    (shares, events)
}

/// Asserts the classes' shares of the bytes among themselves follow the truth.
fn assert_alloc_ratio(text: &str, truth: &[(&str, f64)], what: &str) {
    let (shares, events) = class_shares(text);
    let sum: f64 = shares.values().sum();
    eprintln!("{what}: {events} allocation events, shares of all bytes {shares:?}");
    assert!(events >= 200, "{what}: only {events} allocation events:\n{text}");
    for &(class, truth) in truth {
        let got = shares.get(class).copied().unwrap_or(0.0) * 100.0 / sum.max(1e-9);
        // Each event stands for a TLAB (or async-profiler's interval): its class is drawn by
        // bytes, so a share is binomial over the events.
        let within = share_tolerance(truth, events, 3.0);
        assert!(
            (got - truth).abs() <= within,
            "{what}: {class} {got:.1}% of the bytes, truth {truth}% (within {within:.1})\n{text}"
        );
    }
}

/// A Flight Recorder settings file with the given allocation events enabled, with stacks.
fn jfc(dir: &Path, name: &str, events: &[&str]) -> std::path::PathBuf {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration version=\"2.0\">\n");
    for e in events {
        x.push_str(&format!(
            "  <event name=\"{e}\"><setting name=\"enabled\">true</setting><setting name=\"stackTrace\">true</setting></event>\n"
        ));
    }
    x.push_str("</configuration>\n");
    let path = dir.join(format!("{name}.jfc"));
    std::fs::write(&path, x).unwrap();
    path
}

const IN_TLAB: &str = "jdk.ObjectAllocationInNewTLAB";
const OUTSIDE_TLAB: &str = "jdk.ObjectAllocationOutsideTLAB";
const ALLOC_SAMPLE: &str = "jdk.ObjectAllocationSample";

/// The JDK's own recorder: TLAB events alone are read as allocations (before: "has no such
/// events"); beside its `jdk.ObjectAllocationSample` they are left out (said on stderr), not
/// counted twice. AllocLocks allocates in random order (`mixed`): the JDK takes both kinds of
/// event where a TLAB ends, and a new TLAB starts with the object that ended the last one, so
/// on the repeating pattern of `alloc` they see long[] far below its bytes whoever reads them
/// (docs/design.md).
#[test]
fn the_jdks_tlab_allocation_events_give_the_byte_ratio() {
    for jdk in jdks() {
        let dir = scratch(&format!("foreign-jdk-alloc-{}", jdk.name));
        for (name, events) in
            [("tlab", vec![IN_TLAB, OUTSIDE_TLAB]), ("both", vec![IN_TLAB, OUTSIDE_TLAB, ALLOC_SAMPLE])]
        {
            let file = dir.join(format!("{name}.jfr"));
            let rec = format!(
                "-XX:StartFlightRecording=filename={},settings={}",
                file.display(),
                jfc(&dir, name, &events).display()
            );
            let run = run_java(&jdk, None, &[&rec], "AllocLocks", &["mixed", "1"]);
            run.assert_ok("AllocLocks under JFR");
            let (text, err) = alloc_report(&file);
            assert_alloc_ratio(&text, &truth(&run.stdout), &format!("{}: JFR with {name}", jdk.name));
            assert_eq!(err.contains("TLAB allocation events"), name == "both", "{}: {name}: stderr {err}", jdk.name);
        }
    }
}

/// async-profiler's `alloc` mode writes `jdk.ObjectAllocationInNewTLAB` events weighted by its
/// sampling interval (in `tlabSize`).
#[test]
fn async_profilers_allocation_events_give_the_byte_ratio() {
    let Some(ap) = async_profiler() else { return };
    for jdk in jdks() {
        let dir = scratch(&format!("foreign-ap-alloc-{}", jdk.name));
        let file = dir.join("ap.jfr");
        let agent = format!("-agentpath:{}=start,event=alloc,file={}", ap.display(), file.display());
        let run = run_java(&jdk, None, &[&agent], "AllocLocks", &["alloc", "1"]);
        run.assert_ok("AllocLocks alloc under async-profiler");
        let (text, _) = alloc_report(&file);
        assert_alloc_ratio(&text, &truth(&run.stdout), &format!("{}: async-profiler", jdk.name));
    }
}

/// The rows of a report's or diff's method table naming `method`, as they are written (the
/// name is the line's last word).
fn rows_naming<'a>(text: &'a str, method: &str) -> Vec<&'a str> {
    // The method table only: from its title to the next section.
    let start = text.find("== Top ").or(text.find("== Methods by")).unwrap_or(0);
    let table = &text[start..];
    let end = table[3..].find("\n==").map_or(table.len(), |e| e + 3);
    table[..end]
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .last()
                .is_some_and(|w| w.starts_with(method) && w[method.len()..].chars().all(|c| "_[]ij01k".contains(c)))
        })
        .collect()
}

/// `hpm report` of `path`, asserted to succeed.
fn report_of(path: &std::path::Path) -> String {
    let out = Command::new(hpm_bin()).arg("report").arg(path).output().expect("hpm report");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The total share (first column) of `method`'s first row in a report's call tree.
fn tree_total(report: &str, method: &str) -> Option<String> {
    let tree = &report[report.find("== Call tree")?..];
    let row = tree
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("=="))
        .find(|l| l.split_whitespace().last() == Some(method))?;
    row.split_whitespace().next().map(str::to_string)
}

/// The same workload (Shares: `a`, `b`, `c` spinning in `spin`, which the JIT compiles both on
/// its own and inlined) profiled by hpm and by async-profiler with its frame types
/// (`collapsed,ann`): the report of async-profiler's file names `Shares.spin` once, without
/// the `_[j]`/`_[i]` that split it in two rows before; `hpm diff` of hpm's recording against it,
/// with names compared as read (`--exact-names`), has one row for `Shares.spin`, `Shares.a`,
/// `java.lang.Thread.run`.
#[test]
fn async_profilers_collapsed_names_read_as_hpms() {
    let Some(ap) = async_profiler() else { return };
    for jdk in jdks() {
        let dir = scratch(&format!("foreign-ap-collapsed-{}", jdk.name));
        let (ap_out, hpm_out) = (dir.join("ap.collapsed"), dir.join("hpm.jfr"));
        let ap_arg =
            format!("-agentpath:{}=start,event=cpu,interval=1ms,collapsed,ann,file={}", ap.display(), ap_out.display());
        run_java(&jdk, None, &[&ap_arg], "Shares", &["2", "1", "cpu"]).assert_ok("Shares under async-profiler");
        let hpm_opts = format!("interval=1ms,quiet,file={}", hpm_out.display());
        run_java(&jdk, Some(&hpm_opts), &[], "Shares", &["2", "1", "cpu"]).assert_ok("Shares under hpm");
        let raw = std::fs::read_to_string(&ap_out).unwrap();
        assert!(
            raw.contains("Shares.spin_[") && raw.contains("java/lang/Thread.run"),
            "async-profiler's own names expected:\n{}",
            &raw[..raw.len().min(2000)]
        );

        let out = Command::new(hpm_bin()).arg("report").arg(&ap_out).output().expect("hpm report");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let spin = rows_naming(&report, "Shares.spin");
        eprintln!("{}: report of async-profiler's file, Shares.spin rows: {spin:?}", jdk.name);
        assert_eq!(spin.len(), 1, "{}: Shares.spin as one row:\n{report}", jdk.name);
        assert!(spin[0].ends_with(" Shares.spin"), "{}: {}", jdk.name, spin[0]);
        assert!(!report.contains("_[") && !report.contains("java/lang/"), "{}: raw names left:\n{report}", jdk.name);

        let out = Command::new(hpm_bin())
            .args(["diff", "--exact-names", "--top", "1000"])
            .arg(&hpm_out)
            .arg(&ap_out)
            .output()
            .expect("hpm diff");
        let diff = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let methods = diff.split("== Calling contexts").next().unwrap();
        let hpm_report = report_of(&hpm_out);
        for m in ["Shares.spin", "Shares.a", "java.lang.Thread.run"] {
            let rows = rows_naming(methods, m);
            eprintln!("{}: diff, {m}: {rows:?}", jdk.name);
            // Read as one name, a method is one row; split, it would be two, each one side's
            // whole share. No row only where its shares are equal on both sides (the diff leaves
            // unchanged methods out): both files' call trees then give it the same total.
            assert!(rows.len() <= 1, "{}: {m} in {} rows:\n{methods}", jdk.name, rows.len());
            assert!(rows.iter().all(|r| r.ends_with(&format!(" {m}"))), "{}: {rows:?}", jdk.name);
            if rows.is_empty() {
                let (ours, theirs) = (tree_total(&hpm_report, m), tree_total(&report, m));
                assert!(
                    ours.is_some() && ours == theirs,
                    "{}: {m} left out of the diff: {ours:?} vs {theirs:?}\n{methods}",
                    jdk.name
                );
            }
        }
    }
}
