//! The measurement run's tables on the two-thread version 2 trace, computed by hand.

use super::parse_binary_trace;
use super::phases::CallGraph;
use super::phases_format::TAG_INTERVAL as IV;
use super::phases_report::{AppSource, Ratio, Report, ReportInput, RowKind};
use super::phases_v2_tests::{two_threads, V2};

const MAIN: &str = "A.main([Ljava/lang/String;)V";

fn report() -> Report {
    let t = parse_binary_trace(&two_threads()).unwrap();
    let g = CallGraph::build(&t).unwrap();
    let names = [MAIN.to_string(), "C.f(I)J".into(), "Never.called()V".into()];
    let sel = g.select_methods(&names);
    Report::build(&g, &sel, ReportInput { trace_bytes: 123, profile: Some((4, 40)) })
}

#[test]
fn table3_counts_static_and_dynamic_phases() {
    let r = report();
    let j = r.to_json();
    assert_eq!(j["table3"]["static_phases"], 3);
    assert_eq!(j["table3"]["dynamic_phases"], 4);
    assert_eq!(j["table3"]["invocations"], 4);
    assert_eq!(j["table3"]["trace_bytes"], 123);
    assert_eq!(j["table3"]["estimated_overhead"], 0.1);
    assert_eq!(j["selection"]["phases"][2]["calls"], 0);
    assert!(r.tables_text().contains("estimated overhead: 10.0000% (4 of 40 profiling-run invocations)"));
}

#[test]
fn table5_sets_the_java_threads_spans_against_the_vm_components() {
    let r = report();
    // Threads main (0..500) and worker (5..405); GC 1000 + 500, JIT 700.
    assert_eq!(r.application, [900, 45, 2]);
    let j = r.to_json();
    assert_eq!(j["table5"]["application"], 900);
    let comps = &j["table5"]["components"];
    assert_eq!((comps[0]["name"].as_str(), comps[0]["time"].as_u64()), (Some("[GC]"), Some(1500)));
    assert!((comps[1]["share"].as_f64().unwrap() - 700.0 / 3100.0).abs() < 1e-12);
    assert_eq!(j["components"][0]["intervals"], 2);
}

#[test]
fn table6_gives_own_counters_per_phase_and_the_program_average() {
    let r = report();
    assert_eq!(r.columns, [Ratio::PerMs(1), Ratio::PerMs(2)]);
    let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap();
    // main's own part: its 500 minus f's 200 and 100 (f nested twice).
    assert_eq!(row(MAIN).totals, [200, 2, 0]);
    assert_eq!(row("C.f(I)J").totals, [700, 43, 2]);
    assert!(r.rows.iter().all(|x| x.kind != RowKind::Outside), "the phases cover the Java threads");
    let avg = r.rows.last().unwrap();
    assert_eq!((avg.kind, avg.totals.clone()), (RowKind::Average, vec![3100, 57, 9]));
    assert!((row("[GC]").share - 1500.0 / 3100.0).abs() < 1e-12);
    // page-faults per ms of task-clock (ns): 43 per 700 ns.
    assert!((row("C.f(I)J").values[0].unwrap() - 43.0 / 700.0 * 1e6).abs() < 1e-6);
    assert_eq!(row("Never.called()V").values, [None, None]);
    let j = r.to_json();
    assert_eq!(j["table6"]["columns"][0], "page-faults per ms");
}

#[test]
fn the_statistics_are_over_the_phases_and_the_components_apart() {
    let r = report();
    let m = &r.metrics[0];
    assert_eq!(m.metric, "page-faults per task-clock");
    let n: Vec<(&str, usize)> = m.per_phase.iter().map(|p| (p.0.as_str(), p.1)).collect();
    assert_eq!(n, [(MAIN, 1), ("C.f(I)J", 3)]);
    assert_eq!(m.anova.as_ref().unwrap().df, (1, 2));
    let c = &r.component_metrics[0];
    let n: Vec<(&str, usize)> = c.per_phase.iter().map(|p| (p.0.as_str(), p.1)).collect();
    assert_eq!(n, [("[GC]", 2), ("[JIT compiler]", 1)]);
    let j = r.to_json();
    assert_eq!(j["metrics"][0]["phases"].as_array().unwrap().len(), 2);
    assert_eq!(j["component_metrics"][0]["components"][0]["name"], "[GC]");
}

#[test]
fn table5_takes_the_application_from_its_intervals_when_the_trace_has_them() {
    // Two application threads measured per tick, from the session's start: 2000 and 600.
    let mut t = V2 { out: two_threads() };
    t.method(11, "[application]").thread(5, "main").thread(6, "worker");
    t.block(5, &[(IV, 11, &[1200, 40, 1])]).block(6, &[(IV, 11, &[600, 30, 2])]).block(5, &[(IV, 11, &[2000, 50, 1])]);
    let t = parse_binary_trace(&t.out).unwrap();
    let g = CallGraph::build(&t).unwrap();
    let sel = g.select_methods(&[MAIN.to_string()]);
    let r = Report::build(&g, &sel, ReportInput::default());
    assert_eq!((r.application.clone(), r.app_source), (vec![2600, 80, 3], AppSource::Intervals));
    let names: Vec<&str> = r.components.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["[GC]", "[JIT compiler]"]);
    // Outside the phases: the application's 2600 minus main's 500 (f is not a phase here).
    let outside = r.rows.iter().find(|x| x.kind == RowKind::Outside).unwrap();
    assert_eq!(outside.totals, [2100, 75, 2]);
    let avg = r.rows.last().unwrap();
    assert_eq!(avg.totals[0], 2600 + 1500 + 700);
    let j = r.to_json();
    assert_eq!(
        (j["table5"]["application"].as_u64(), j["table5"]["application_from"].as_str()),
        (Some(2600), Some("intervals"))
    );
    assert!(r.tables_text().contains("application: every application thread measured per tick"));
    assert_eq!(report().app_source, AppSource::Spans);
}

#[test]
fn ratio_columns_follow_the_counters() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let pmu = names(&["cycles", "instructions", "cache-misses"]);
    let c = Ratio::columns(&pmu);
    assert_eq!(c, [Ratio::Cpi, Ratio::PerKiloInstructions(2)]);
    assert_eq!(c[0].value(&[300, 100, 5]), Some(3.0));
    assert_eq!(c[1].value(&[300, 100, 5]), Some(50.0));
    assert_eq!(c[1].title(&pmu), "cache-misses per 1,000 instructions");
    assert_eq!(c[0].value(&[300, 0, 5]), None);
    assert_eq!(Ratio::columns(&names(&["counter", "x"])), [Ratio::Per0(1)]);
}
