//! `hpm phases TRACE [--weight W] [--grain G] [--top N] [--metrics FILE]`: method-level phases
//! (Georges et al.). Selects the methods whose total time exceeds W% of the run and whose time
//! per invocation exceeds G% of it, prints the estimated overhead of profiling them, and, for
//! the trace's further counters or given per-phase metrics, CoV and one-way ANOVA.

use std::path::Path;

use hpm_profile::analysis::load_trace;
use hpm_profile::analysis::phases::{parse_metric_pairs, CallGraph, MetricSummary, PhaseMetrics};

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

fn print_summary(s: &MetricSummary) {
    println!("\nmetric {}:", hpm_profile::text::terminal_safe(&s.metric));
    for (phase, n, mean, cov) in &s.per_phase {
        let cov = cov.map_or("n/a".to_string(), |c| format!("{c:.4}"));
        println!("  {:<30} n={n:<6} mean {mean:.4}  CoV {cov}", hpm_profile::text::terminal_safe(phase));
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

pub fn main(a: Args) -> Result<(), String> {
    let (file, weight, grain, top) = (&a.trace, a.weight, a.grain, a.top);
    let metrics = match &a.metrics {
        Some(m) => {
            let text = hpm_profile::infile::read_regular_text(Path::new(m)).map_err(|e| format!("{m}: {e}"))?;
            Some(parse_metric_pairs(&text).map_err(|(l, msg)| format!("{m}:{l}: {msg}"))?)
        }
        None => None,
    };
    let trace = load_trace(Path::new(file)).map_err(|e| e.to_string())?;
    if trace.events.is_empty() {
        return Err(format!("{file}: the trace has no events; expected lines `enter|exit THREAD METHOD COUNTER`"));
    }
    let graph = CallGraph::build(&trace).map_err(|(l, m)| match trace.binary {
        true => format!("{file}: record {l}: {m}"),
        false => format!("{file}:{l}: {m}"),
    })?;
    let sel = graph.select(weight, grain);
    let unit = &trace.counters[0];
    let unit = hpm_profile::text::terminal_safe(unit);
    println!("total time: {} {unit}", sel.total_time);
    println!("invocations: {}", sel.all_invocations);
    if graph.unclosed > 0 {
        println!("unclosed invocations: {} (closed at their thread's last event)", graph.unclosed);
    }
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
        for s in graph.phase_metrics(&sel).summarize() {
            print_summary(&s);
        }
    }
    if let Some(pairs) = metrics {
        let mut m = PhaseMetrics::from_pairs("from --metrics", &pairs);
        // Weigh phases found in the trace by their time, as the paper does.
        m.weigh_by_time(&stats);
        for s in m.summarize() {
            print_summary(&s);
        }
    }
    Ok(())
}
