//! `hpm phases TRACE [--weight W] [--grain G] [--top N] [--metrics FILE] [--out PHASEFILE]`:
//! method-level phases (Georges et al.). Selects the methods whose total time exceeds W% of
//! the run and whose time per invocation exceeds G% of it, prints the estimated overhead of
//! profiling them, and, for the trace's further counters or given per-phase metrics, CoV and
//! one-way ANOVA; `--out` writes the selection as a phase file for the measurement run.
//!
//! `hpm phases TRACE --select PHASEFILE [--profile STEP1TRACE]`: the measurement run's report,
//! the phases being exactly the file's methods: tables 3, 5 and 6 and the statistics.
//! `--json` prints either report as one JSON document; `--svg FILE` plots a counter ratio.

use std::path::Path;

use hpm_profile::analysis::load_trace;
use hpm_profile::analysis::phases::{parse_metric_pairs, CallGraph, MetricSummary, PhaseMetrics, Selection};
use hpm_profile::analysis::phases_format::{parse_phase_file, write_phase_file};
use hpm_profile::analysis::phases_report::{Report, ReportInput};
use hpm_profile::analysis::{phases_svg, Trace};

use crate::values::{percent_fraction, positive};

#[derive(clap::Args)]
pub struct Args {
    /// Lines `enter|exit THREAD METHOD COUNTER [COUNTER...]` in time order, or a binary HPMTRACE file
    trace: String,
    /// theta_weight: percent of the total time a phase must exceed
    #[arg(long, value_name = "W", default_value = "10", value_parser = percent_fraction)]
    weight: f64,
    /// theta_grain: percent of the total time its average invocation must exceed
    #[arg(long, value_name = "G", default_value = "5", value_parser = percent_fraction)]
    grain: f64,
    /// Rows of the method table
    #[arg(long, default_value_t = 20, value_parser = positive::<usize>)]
    top: usize,
    /// Lines `PHASE VALUE`: per-phase observations for CoV and ANOVA
    #[arg(long, value_name = "FILE")]
    metrics: Option<String>,
    /// Write the selected phases as a phase file (the agent's `select=`)
    #[arg(long, value_name = "PHASEFILE")]
    out: Option<String>,
    /// Replace an existing --out file
    #[arg(long, requires = "out")]
    force: bool,
    /// The measurement run: the phases are exactly this phase file's methods (no thresholds)
    #[arg(long, value_name = "PHASEFILE", conflicts_with_all = ["weight", "grain"])]
    select: Option<String>,
    /// The profiling run's trace, for the estimated overhead of the selected phases
    #[arg(long, value_name = "STEP1TRACE", requires = "select")]
    profile: Option<String>,
    /// Print the report as one JSON document instead of text
    #[arg(long)]
    json: bool,
    /// Plot a counter ratio of the busiest thread over time with the phases (SVG)
    #[arg(long, value_name = "FILE")]
    svg: Option<String>,
    /// The counter plotted per counter 0 (default: the trace's second counter)
    #[arg(long, value_name = "COLUMN", requires = "svg")]
    svg_metric: Option<String>,
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// Shares as small as the paper's thresholds (1e-6 %) stay readable.
fn pct_precise(x: f64) -> String {
    let p = x * 100.0;
    if p == 0.0 || p >= 0.01 {
        format!("{p:.3}%")
    } else {
        format!("{p:.3e}%")
    }
}

/// Four significant digits, so a rate per nanosecond (page faults per ns of task-clock) does
/// not print as 0.0000.
fn significant(x: f64) -> String {
    if x == 0.0 || (1e-3..1e6).contains(&x.abs()) {
        format!("{x:.4}")
    } else {
        format!("{x:.4e}")
    }
}

fn print_summary(s: &MetricSummary) {
    println!("\nmetric {}:", hpm_profile::text::terminal_safe(&s.metric));
    for (phase, n, mean, cov) in &s.per_phase {
        let cov = cov.map_or("n/a".to_string(), |c| format!("{c:.4}"));
        println!("  {:<30} n={n:<6} mean {}  CoV {cov}", hpm_profile::text::terminal_safe(phase), significant(*mean));
    }
    match s.weighted_cov {
        Some(c) => println!("  weighted CoV: {c:.4}"),
        None => println!("  weighted CoV: n/a"),
    }
    match &s.anova {
        Ok(a) => println!("  ANOVA: F={:.4} df=({}, {}) p={:.4e}", a.f, a.df.0, a.df.1, a.p),
        Err(m) => println!("  ANOVA: n/a ({m})"),
    }
}

fn load_graph_input(file: &str) -> Result<Trace, String> {
    let trace = load_trace(Path::new(file)).map_err(|e| e.to_string())?;
    if trace.events.is_empty() {
        return Err(format!("{file}: the trace has no events; expected lines `enter|exit THREAD METHOD COUNTER`"));
    }
    Ok(trace)
}

fn build<'t>(file: &str, trace: &'t Trace) -> Result<CallGraph<'t>, String> {
    CallGraph::build(trace).map_err(|(l, m)| match trace.binary {
        true => format!("{file}: record {l}: {m}"),
        false => format!("{file}:{l}: {m}"),
    })
}

/// The counter column `--svg-metric` names (default the second).
fn svg_column(trace: &Trace, metric: Option<&str>) -> Result<usize, String> {
    let Some(m) = metric else { return Ok(1) };
    match trace.counters.iter().position(|c| c == m) {
        Some(k) if k > 0 => Ok(k),
        Some(_) => {
            Err(format!("--svg-metric {m} is counter 0, the time axis; name another of {:?}", &trace.counters[1..]))
        }
        None => Err(format!("--svg-metric {m}: the trace's counters are {:?}", trace.counters)),
    }
}

/// The phase file's text for a selection made by thresholds.
fn phase_file(a: &Args, sel: &Selection, unit: &str) -> String {
    let names: Vec<&str> = sel.phases.iter().map(|p| p.stats.name.as_str()).collect();
    let comment = format!(
        "hpm phases {} --weight {} --grain {}: c_T {} {unit}, estimated overhead {} ({} of {} invocations)",
        a.trace,
        (a.weight * 1e8).round() / 1e6,
        (a.grain * 1e8).round() / 1e6,
        sel.total_time,
        pct_precise(sel.overhead()),
        sel.profiled_invocations,
        sel.all_invocations
    );
    write_phase_file(&comment, &names)
}

fn write_out(path: &str, bytes: &[u8], force: bool) -> Result<(), String> {
    if !force && std::fs::symlink_metadata(path).is_ok() {
        return Err(format!("{path} exists; give --force to replace it"));
    }
    hpm_profile::outfile::write(path, bytes).map_err(|e| e.to_string())
}

pub fn main(a: Args) -> Result<(), String> {
    let file = &a.trace;
    let metrics = match &a.metrics {
        Some(m) => {
            let text = hpm_profile::infile::read_regular_text(Path::new(m)).map_err(|e| format!("{m}: {e}"))?;
            Some(parse_metric_pairs(&text).map_err(|(l, msg)| format!("{m}:{l}: {msg}"))?)
        }
        None => None,
    };
    let names = match &a.select {
        Some(p) => {
            let text = hpm_profile::infile::read_regular_text(Path::new(p)).map_err(|e| format!("{p}: {e}"))?;
            Some(parse_phase_file(&text).map_err(|(l, m)| format!("{p}:{l}: {m}"))?)
        }
        None => None,
    };
    let trace = load_graph_input(file)?;
    let graph = build(file, &trace)?;
    let sel = match &names {
        Some(n) => graph.select_methods(n),
        None => graph.select(a.weight, a.grain),
    };
    let profile = match (&a.profile, &names) {
        (Some(p), Some(n)) => {
            let t = load_graph_input(p)?;
            let s = build(p, &t)?.select_methods(n);
            Some((s.profiled_invocations, s.all_invocations))
        }
        // A selection by thresholds: this trace is the profiling run.
        (_, None) => Some((sel.profiled_invocations, sel.all_invocations)),
        _ => None,
    };
    let trace_bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    let report = Report::build(&graph, &sel, ReportInput { trace_bytes, profile });
    let svg = match &a.svg {
        Some(_) => Some(phases_svg::plot(&graph, &sel, svg_column(&trace, a.svg_metric.as_deref())?)?),
        None => None,
    };
    if let Some(out) = &a.out {
        let text = phase_file(&a, &sel, &trace.counters[0]);
        // What the agent's `select=` and `--select` would refuse is refused here.
        parse_phase_file(&text).map_err(|(_, m)| format!("{out} not written: {m}"))?;
        write_out(out, text.as_bytes(), a.force)?;
    }
    if let (Some(path), Some(svg)) = (&a.svg, svg) {
        hpm_profile::outfile::write(path, svg.as_bytes()).map_err(|e| e.to_string())?;
    }
    if a.json {
        println!("{}", report.to_json());
        return Ok(());
    }
    if names.is_none() {
        classic(&a, &graph, &sel, &report, metrics);
        return Ok(());
    }
    let unit = hpm_profile::text::terminal_safe(&trace.counters[0]);
    println!(
        "phases (from {}): {}",
        hpm_profile::text::terminal_safe(a.select.as_deref().unwrap_or("")),
        sel.phases.len()
    );
    for p in &sel.phases {
        println!(
            "  {:<40} total {:>8}  calls {}",
            hpm_profile::text::terminal_safe(&p.stats.name),
            pct(p.total_share),
            p.stats.calls
        );
    }
    println!("total time: {} {unit}", sel.total_time);
    print_repairs(&graph);
    println!();
    print!("{}", report.tables_text());
    print_statistics(&report);
    Ok(())
}

/// What the call graph closed or skipped to stay balanced, when it did, and what the agent
/// said it could not record.
fn print_repairs(graph: &CallGraph) {
    for n in &graph.trace.notes {
        println!("the trace is not whole: {}", hpm_profile::text::terminal_safe(n));
    }
    if graph.unclosed > 0 || graph.early_exits > 0 || graph.repaired > 0 {
        println!(
            "unclosed invocations: {} (closed at their thread's last event), exits of methods not open: {} \
             (skipped: probes switched on mid-call), invocations repaired: {} (their exit lost, e.g. a \
             StackOverflowError in a probe; closed at an outer exit)",
            graph.unclosed, graph.early_exits, graph.repaired
        );
    }
}

/// The phases' statistics, then the components' own block (not in the ANOVA).
fn print_statistics(report: &Report) {
    for s in &report.metrics {
        print_summary(s);
    }
    for s in report.component_metrics.iter().filter(|s| !s.per_phase.is_empty()) {
        println!("\ncomponents, {} (each interval one observation):", hpm_profile::text::terminal_safe(&s.metric));
        for (name, n, mean, cov) in &s.per_phase {
            let cov = cov.map_or("n/a".to_string(), |c| format!("{c:.4}"));
            println!(
                "  {:<30} n={n:<6} mean {}  CoV {cov}",
                hpm_profile::text::terminal_safe(name),
                significant(*mean)
            );
        }
    }
}

/// Selection by thresholds, as text.
fn classic(a: &Args, graph: &CallGraph, sel: &Selection, report: &Report, metrics: Option<Vec<(String, f64)>>) {
    let (weight, grain, top, trace) = (a.weight, a.grain, a.top, graph.trace);
    let unit = &trace.counters[0];
    let unit = hpm_profile::text::terminal_safe(unit);
    println!("total time: {} {unit}", sel.total_time);
    println!("invocations: {}", sel.all_invocations);
    print_repairs(graph);
    let stats = graph.method_stats();
    println!("\nmethods (total {unit} including callees, per invocation, calls):");
    for s in stats.iter().take(top) {
        println!(
            "  {:<30} {:>14} {:>14.1} {:>10}",
            hpm_profile::text::terminal_safe(&s.name),
            s.total,
            s.average(),
            s.calls
        );
    }
    println!(
        "\nphases (theta_weight {}, theta_grain {}): {}",
        pct_precise(weight),
        pct_precise(grain),
        sel.phases.len()
    );
    for p in &sel.phases {
        println!(
            "  {:<30} total {:>8}  average {:>8}  calls {}",
            hpm_profile::text::terminal_safe(&p.stats.name),
            pct(p.total_share),
            pct(p.average_share),
            p.stats.calls
        );
    }
    println!(
        "estimated overhead: {} ({} of {} invocations profiled)",
        pct_precise(sel.overhead()),
        sel.profiled_invocations,
        sel.all_invocations
    );
    if trace.counters.len() > 1 && !sel.phases.is_empty() {
        print_statistics(report);
    }
    if let Some(pairs) = metrics {
        let mut m = PhaseMetrics::from_pairs("from --metrics", &pairs);
        // Weigh phases found in the trace by their time, as the paper does.
        m.weigh_by_time(&stats);
        for s in m.summarize() {
            print_summary(&s);
        }
    }
}
