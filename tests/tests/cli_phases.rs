//! `hpm phases` on version 2 traces as the agent writes them (built here with the agent's own
//! encoder, `phases_format`), through the three steps: selection written with `--out`, the
//! measurement run's report with `--select` (text and `--json`), and the `--svg` plot. The
//! truth is the trace's construction: three phases of known counter profiles. No JVM needed.

use std::path::PathBuf;
use std::process::{Command, Output};

use hpm_profile::analysis::phases_format as fmt;

fn scratch(name: &str) -> PathBuf {
    hpm_tests::shared_scratch("cli-phases").join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(hpm_tests::hpm_bin()).args(args).output().expect("run hpm")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && e.is_empty(), "hpm {args:?} failed: {e}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const CPU: &str = "W.cpu(I)J";
const FAULTS: &str = "W.faults(I)V";
const SYS: &str = "W.sys(I)V";
const SMALL: &str = "W.small()V";

/// Thread 1 runs each phase twice (1 ms of task-clock each; cpu without faults or switches,
/// faults with 500 page faults, sys with 200 context switches) and, in the profiling run,
/// `small` 100 times (1 µs each). A GC thread adds two intervals.
fn trace(profiling: bool) -> Vec<u8> {
    let mut out = fmt::header().to_vec();
    for (i, c) in ["task-clock", "page-faults", "context-switches"].iter().enumerate() {
        fmt::counter_name(&mut out, i as u8, c);
    }
    for (id, m) in [(1, CPU), (2, FAULTS), (3, SYS), (4, SMALL), (9, "[GC]")] {
        fmt::method_name(&mut out, id, m);
    }
    fmt::thread_name(&mut out, 1, "main");
    fmt::thread_name(&mut out, 2, "GC Thread#0");
    let mut body = Vec::new();
    let mut rec = |tag, id, c: [u64; 3]| {
        let mut b = [0u8; fmt::MAX_RECORD];
        let n = fmt::encode_record(&mut b, tag, id, &c);
        body.extend_from_slice(&b[..n]);
    };
    let (mut t, mut pf, mut cs) = (0u64, 0u64, 0u64);
    for _ in 0..2 {
        for (id, dpf, dcs) in [(1, 0, 0), (2, 500, 0), (3, 0, 200)] {
            rec(fmt::TAG_ENTER, id, [t, pf, cs]);
            (t, pf, cs) = (t + 1_000_000, pf + dpf, cs + dcs);
            rec(fmt::TAG_EXIT, id, [t, pf, cs]);
        }
        if profiling {
            for _ in 0..50 {
                rec(fmt::TAG_ENTER, 4, [t, pf, cs]);
                t += 1_000;
                rec(fmt::TAG_EXIT, 4, [t, pf, cs]);
            }
        }
    }
    out.extend(fmt::block_header(1, body.len() as u32));
    out.extend(body);
    let mut gc = Vec::new();
    for c in [[300_000u64, 10, 1], [600_000, 20, 2]] {
        let mut b = [0u8; fmt::MAX_RECORD];
        let n = fmt::encode_record(&mut b, fmt::TAG_INTERVAL, 9, &c);
        gc.extend_from_slice(&b[..n]);
    }
    out.extend(fmt::block_header(2, gc.len() as u32));
    out.extend(gc);
    out
}

fn write(name: &str, bytes: &[u8]) -> String {
    let p = scratch(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

#[test]
fn the_three_steps_select_report_and_plot_the_phases() {
    let step1 = write("step1.hpmtrace", &trace(true));
    let step3 = write("step3.hpmtrace", &trace(false));
    let phases = scratch("w.phases").display().to_string();
    // Step 2: the three phases, not `small` (0.1% of the run per 100 calls).
    ok(&["phases", &step1, "--weight", "10", "--grain", "5", "--out", &phases]);
    let text = std::fs::read_to_string(&phases).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines, [CPU, FAULTS, SYS], "{text}");
    assert!(text.starts_with("# hpm phases ") && text.contains("--weight 10 --grain 5"), "{text}");
    let err = hpm_tests::hpm_fails(&["phases", &step1, "--out", &phases]);
    assert!(err.contains("exists; give --force to replace it"), "{err}");
    ok(&["phases", &step1, "--out", &phases, "--force"]);

    // Step 3: the tables, the estimated overhead from the profiling run.
    let out = ok(&["phases", &step3, "--select", &phases, "--profile", &step1]);
    assert!(out.contains("estimated overhead: 5.6604% (6 of 106 profiling-run invocations)"), "{out}");
    assert!(out.contains("static phases: 3") && out.contains("dynamic phases: 6"), "{out}");
    assert!(out.contains("[GC]") && out.contains("program average"), "{out}");

    let j: serde_json::Value = serde_json::from_str(&ok(&["phases", &step3, "--select", &phases, "--json"])).unwrap();
    assert_eq!(j["table3"]["static_phases"], 3);
    assert_eq!(j["table3"]["trace_bytes"], std::fs::metadata(&step3).unwrap().len());
    assert_eq!(j["table5"]["application"], 6_000_000);
    assert_eq!(j["table5"]["components"][0]["time"], 600_000);
    assert_eq!(j["table6"]["columns"], serde_json::json!(["page-faults per ms", "context-switches per ms"]));
    let row = |name: &str| j["table6"]["rows"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
    // Built: faults has 500 page faults per ms, sys 200 context switches per ms, cpu none.
    assert_eq!(row(FAULTS)["values"][0], 500.0);
    assert_eq!(row(SYS)["values"][1], 200.0);
    assert_eq!(row(CPU)["values"], serde_json::json!([0.0, 0.0]));
    assert_eq!(row("[GC]")["kind"], "component");
    let m = &j["metrics"][0];
    assert_eq!(m["metric"], "page-faults per task-clock");
    assert_eq!(m["phases"].as_array().unwrap().len(), 3, "the three phases, [GC] apart");
    assert!(m["anova"]["p"].as_f64().unwrap() < 1e-3, "{m}");
    assert_eq!(j["component_metrics"][0]["components"][0]["name"], "[GC]");
    // Text and JSON give the same statistics.
    let df = &m["anova"]["df"];
    assert!(out.contains(&format!("df=({}, {})", df[0], df[1])), "{m}\n{out}");
    assert!(out.contains("components, page-faults per task-clock"), "{out}");

    // The plot: the busiest thread, its phases in the legend.
    let svg = scratch("w.svg").display().to_string();
    ok(&["phases", &step3, "--select", &phases, "--svg", &svg, "--svg-metric", "context-switches"]);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.contains(FAULTS) && s.contains("context-switches per ms of task-clock"));
    let err = hpm_tests::hpm_fails(&["phases", &step3, "--select", &phases, "--svg", &svg, "--svg-metric", "cycles"]);
    assert!(err.contains("the trace's counters are"), "{err}");
}

#[test]
fn a_phase_file_that_cannot_select_is_refused() {
    let step3 = write("refuse.hpmtrace", &trace(false));
    let bad = write("bad.phases", b"# nothing selected\n");
    let err = hpm_tests::hpm_fails(&["phases", &step3, "--select", &bad]);
    assert!(err.contains("selects no method"), "{err}");
    // Names of a text trace are no methods the agent could select.
    let t = write("text.trace", b"enter t main 0\nexit t main 10\n");
    let out = scratch("text.phases").display().to_string();
    let err = hpm_tests::hpm_fails(&["phases", &t, "--out", &out]);
    assert!(err.contains("not written") && err.contains("pkg.Class.method(descriptor)"), "{err}");
    assert!(!scratch("text.phases").exists());
    assert!(hpm_tests::usage_error(&["phases", &step3, "--profile", &step3]).contains("--select"));
}
