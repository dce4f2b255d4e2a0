//! `hpm report`, `flamegraph`, `diff` and `convert` on what a fleet pushed through an
//! OpenTelemetry Collector (the file exporter's `format: proto` and `format: json`), against
//! inputs checked in under tests/data/otlp/:
//! - `fleet/monday.pb`, `fleet/today.jsonl`, `one.otlp`: made by hpm-profile's reader tests
//!   (`the_checked_in_fleet_files_are_what_the_builder_makes`), so their content is known:
//!   service A on hosts h1 (pid 100) and h2 (pid 200), service B on h1; monday A has 2 samples
//!   in `Main.work` and 1 in `read`, today A has 1 in `Main.work` and 2 in `read`;
//! - `async-profiler-4.6.pb`/`.json`: a real collector's output of async-profiler 4.6 pushing
//!   OTLP (`event=cpu,interval=10ms,otlp,loop=2s`, OTEL_SERVICE_NAME=apdemo) for
//!   tests/workloads/Shares.java, whose time is nearly all in `Shares.spin`.
//!
//! No JVM.

use std::path::PathBuf;
use std::process::{Command, Output};

use hpm_tests::{hpm_bin, scratch, workspace_root};

fn data(name: &str) -> String {
    workspace_root().join("tests/data/otlp").join(name).display().to_string()
}

fn hpm(args: &[&str]) -> Output {
    Command::new(hpm_bin()).args(args).output().expect("run hpm")
}

fn ok(args: &[&str]) -> (String, String) {
    let out = hpm(args);
    let (so, se) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "hpm {args:?}: {se}");
    (so, se)
}

fn fails(args: &[&str]) -> String {
    let out = hpm(args);
    assert!(!out.status.success(), "hpm {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn several_services_need_service_and_the_error_lists_them() {
    let e = fails(&["report", &data("fleet/monday.pb")]);
    assert!(e.contains("profiles of 2 services: A (3 samples), B (3 samples); pick one with --service NAME"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let e = fails(&["report", &data("fleet/monday.pb"), "--service", "C"]);
    assert!(e.contains("no profiles of service C"), "{e}");
}

#[test]
fn the_report_says_what_it_merged_and_proto_and_json_read_alike() {
    let (report, notes) = ok(&["report", &data("fleet/monday.pb"), "--service", "A"]);
    assert!(
        report.contains("jvm:        2 JVMs of service A on 2 hosts (OpenJDK Runtime Environment 17.0.19)"),
        "{report}"
    );
    assert!(report.contains("counters:   cycles"), "{report}");
    assert!(notes.contains("2 JVMs of service A on 2 hosts merged from 1 message"), "{notes}");
    let row = report.lines().find(|l| l.ends_with("Main.work (Main.java)")).expect("Main.work's row");
    assert!(row.contains("66.67%"), "{row}");
    // The bare request of the same period reads as the same report.
    let (bare, _) = ok(&["report", &data("one.otlp"), "--service", "A"]);
    assert_eq!(bare, report);
    // JSON lines: B, one JVM on one host, its pid.
    let (b, _) = ok(&["report", &data("fleet/today.jsonl"), "--service", "B", "--host", "h1"]);
    assert!(
        b.contains("jvm:        1 JVM of service B on 1 host (OpenJDK Runtime Environment 17.0.19), pid 300"),
        "{b}"
    );
}

#[test]
fn a_directory_merges_its_files_and_from_to_select_a_period() {
    let dir = data("fleet");
    let (all, _) = ok(&["report", &dir, "--service", "A"]);
    assert!(all.contains("samples:    6,"), "{all}");
    // Today's period starts 10 s after monday's (the fleet's wall clock).
    let (later, _) = ok(&["report", &dir, "--service", "A", "--from", "5s"]);
    assert!(later.contains("3 of 6"), "{later}");
    let row = later.lines().find(|l| l.trim_end().ends_with(" read")).expect("read's row");
    assert!(row.contains("66.67%"), "{row}");
}

#[test]
fn flamegraph_diff_and_convert_take_fleet_files() {
    let out = scratch("cli_otlp");
    let collapsed = out.join("a.collapsed").display().to_string();
    ok(&["flamegraph", &data("fleet/monday.pb"), "--service", "A", "-o", &collapsed]);
    let text = std::fs::read_to_string(&collapsed).unwrap();
    assert!(text.lines().any(|l| l == "Main.main;Main.work 2"), "{text}");
    // Monday against today, both of A: `read` grew.
    let (d, _) = ok(&["diff", &data("fleet/monday.pb"), &data("fleet/today.jsonl"), "--service", "A"]);
    let row = d.lines().find(|l| l.trim_end().ends_with(" read")).expect("read's row");
    assert!(row.contains("+33.3"), "{d}");
    // Each side its own service.
    ok(&["diff", &data("one.otlp"), &data("one.otlp"), "--service", "A", "--service-b", "B"]);
    let json: PathBuf = out.join("b.json");
    let (_, said) = ok(&["convert", &data("one.otlp"), "--service", "B", "-o", &json.display().to_string()]);
    assert!(said.contains("(3 samples"), "{said}");
    let e =
        fails(&["report", &workspace_root().join("tests/data/demo/demo.jfr").display().to_string(), "--service", "A"]);
    assert!(e.contains("--service and --host select profiles of OTLP input"), "{e}");
}

#[test]
fn async_profilers_otlp_through_a_real_collector_reads_in_both_formats() {
    for f in ["async-profiler-4.6.pb", "async-profiler-4.6.json"] {
        let (report, _) = ok(&["report", &data(f)]);
        assert!(report.contains("jvm:        1 JVM of service apdemo"), "{report}");
        let top = report.lines().skip_while(|l| !l.starts_with("== Top")).nth(2).unwrap_or_default();
        assert!(top.ends_with("Shares.spin") && top.trim_start().starts_with("98."), "{f}: {top}");
    }
}
