//! The measurement run's report (Georges et al., tables 3, 5 and 6, as our own), from a trace,
//! its call graph and the selected phases, as text and as one JSON document.
//!
//! - Table 3: static phases (selected methods), dynamic phases (their invocations), the
//!   trace's invocations and size, and the estimated overhead: the profiling run's invocations
//!   of the selected methods over all its invocations, when that trace is given.
//! - Table 5: counter 0 of the application against each VM component, as shares of their sum.
//!   The agent measures every thread of the process per tick: the VM's threads as their
//!   components, the others as the component [`APPLICATION`], so both cover the same session.
//!   A trace without that component (text, version 1, older agents) falls back to the Java
//!   threads' spans: last minus first event of each thread.
//! - Table 6: per phase (its own counters, nested phases taken out), the rest of the
//!   application's span ("outside phases"), each VM component and the program average: share
//!   of counter 0, then each further counter per unit of counter 0 ([`Ratio`]).
//! - Section 4's statistics over the phases only (CoV per phase, weighted CoV, one-way ANOVA),
//!   as the paper's Fig. 5 and Table 4; the components' intervals as their own block (CoV per
//!   component, each interval with counter 0 moving one observation), never in the ANOVA.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::{json, Value};

use super::phases::{CallGraph, MetricSummary, PhaseMetrics, PhaseObservations, Selection};
use super::{sat_sum, Trace};
use crate::text::terminal_safe;

/// The component name of the application's threads (every thread the agent does not
/// classify as the VM's).
pub const APPLICATION: &str = "[application]";

/// Where table 5's application comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppSource {
    /// The [`APPLICATION`] component's intervals.
    Intervals,
    /// The Java threads' spans in the trace.
    Spans,
}

/// How a further counter is shown per unit of counter 0 in table 6.
#[derive(Clone, Debug, PartialEq)]
pub enum Ratio {
    /// Cycles per instruction (counter 0 cycles, counter 1 instructions).
    Cpi,
    /// Counter k per 1,000 instructions (counter 1).
    PerKiloInstructions(usize),
    /// Counter k per millisecond of task-clock (counter 0, in ns).
    PerMs(usize),
    /// Counter k per unit of counter 0.
    Per0(usize),
}

impl Ratio {
    /// The columns of a trace with these counters: the paper's on a PMU trace (cycles and
    /// instructions), per ms on task-clock, per unit of counter 0 otherwise.
    pub fn columns(counters: &[String]) -> Vec<Ratio> {
        let name = |k: usize| counters.get(k).map(String::as_str);
        if name(0) == Some("cycles") && name(1) == Some("instructions") {
            std::iter::once(Ratio::Cpi).chain((2..counters.len()).map(Ratio::PerKiloInstructions)).collect()
        } else if name(0) == Some("task-clock") {
            (1..counters.len()).map(Ratio::PerMs).collect()
        } else {
            (1..counters.len()).map(Ratio::Per0).collect()
        }
    }

    pub fn title(&self, counters: &[String]) -> String {
        match self {
            Ratio::Cpi => "CPI".into(),
            Ratio::PerKiloInstructions(k) => format!("{} per 1,000 instructions", counters[*k]),
            Ratio::PerMs(k) => format!("{} per ms", counters[*k]),
            Ratio::Per0(k) => format!("{} per {}", counters[*k], counters[0]),
        }
    }

    /// Its value for these counter totals; `None` when the denominator is 0.
    pub fn value(&self, totals: &[u64]) -> Option<f64> {
        let (num, den, scale) = match self {
            Ratio::Cpi => (totals[0], totals[1], 1.0),
            Ratio::PerKiloInstructions(k) => (totals[*k], totals[1], 1000.0),
            Ratio::PerMs(k) => (totals[*k], totals[0], 1e6),
            Ratio::Per0(k) => (totals[*k], totals[0], 1.0),
        };
        (den > 0).then(|| num as f64 / den as f64 * scale)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Phase,
    Outside,
    Component,
    Average,
}

impl RowKind {
    fn name(self) -> &'static str {
        match self {
            RowKind::Phase => "phase",
            RowKind::Outside => "outside",
            RowKind::Component => "component",
            RowKind::Average => "average",
        }
    }
}

/// One row of table 6.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub name: String,
    pub kind: RowKind,
    /// Counter totals, one per trace counter.
    pub totals: Vec<u64>,
    /// Counter 0 over the application's and the VM components' sum.
    pub share: f64,
    /// One per [`Report::columns`].
    pub values: Vec<Option<f64>>,
}

/// A VM component's intervals.
#[derive(Clone, Debug, PartialEq)]
pub struct Component {
    pub name: String,
    pub intervals: usize,
    /// Counter totals over its intervals.
    pub totals: Vec<u64>,
}

/// What the report needs besides the graph and the selection.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReportInput {
    /// Size of the trace file.
    pub trace_bytes: u64,
    /// The profiling run's (invocations of the selected methods, all invocations).
    pub profile: Option<(u64, u64)>,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub counters: Vec<String>,
    pub selection: Selection,
    pub input: ReportInput,
    /// Counter totals of the application (see [`AppSource`]).
    pub application: Vec<u64>,
    pub app_source: AppSource,
    /// The VM's components ([`APPLICATION`] is not one of them).
    pub components: Vec<Component>,
    pub columns: Vec<Ratio>,
    pub rows: Vec<Row>,
    /// Section 4's statistics over the phases.
    pub metrics: Vec<MetricSummary>,
    /// The components' own block (per component; their ANOVA is not the paper's and unused).
    pub component_metrics: Vec<MetricSummary>,
    pub unclosed: usize,
    pub early_exits: usize,
    /// What the agent said it could not record (the trace's notes).
    pub notes: Vec<String>,
    pub repaired: usize,
}

/// Per counter, the Java threads' spans: last minus first event of each thread.
fn application_spans(trace: &Trace) -> Vec<u64> {
    let mut ends: HashMap<u32, (usize, usize)> = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        ends.entry(e.thread).and_modify(|x| x.1 = i).or_insert((i, i));
    }
    (0..trace.counters.len())
        .map(|k| sat_sum(ends.values().map(|&(a, b)| trace.values(b)[k].saturating_sub(trace.values(a)[k]))))
        .collect()
}

/// The VM components as phases: per component its totals and, per further counter, one
/// observation per interval with counter 0 moving.
fn component_observations(trace: &Trace) -> (Vec<Component>, Vec<PhaseObservations>) {
    let w = trace.counters.len();
    let mut comps: Vec<Component> =
        trace.components.iter().map(|n| Component { name: n.clone(), intervals: 0, totals: vec![0; w] }).collect();
    let mut obs: Vec<PhaseObservations> = trace
        .components
        .iter()
        .map(|n| PhaseObservations {
            phase: n.clone(),
            weight: 0.0,
            values: vec![Vec::new(); w.saturating_sub(1)],
            totals: vec![0; w],
        })
        .collect();
    for (i, d) in trace.interval_deltas() {
        let c = trace.intervals[i].component as usize;
        comps[c].intervals += 1;
        for (t, v) in comps[c].totals.iter_mut().zip(&d) {
            *t = t.saturating_add(*v);
        }
        obs[c].weight += d[0] as f64;
        if d[0] > 0 {
            for k in 1..w {
                obs[c].values[k - 1].push(d[k] as f64 / d[0] as f64);
            }
        }
    }
    obs.iter_mut().zip(&comps).for_each(|(o, c)| o.totals.clone_from(&c.totals));
    (comps, obs)
}

impl Report {
    pub fn build(graph: &CallGraph, selection: &Selection, input: ReportInput) -> Report {
        let trace = graph.trace;
        let w = trace.counters.len();
        let columns = Ratio::columns(&trace.counters);
        let metrics: PhaseMetrics = graph.phase_metrics(selection);
        let (mut components, mut comp_obs) = component_observations(trace);
        let (application, app_source) = match components.iter().position(|c| c.name == APPLICATION) {
            Some(i) => {
                comp_obs.remove(i);
                (components.remove(i).totals, AppSource::Intervals)
            }
            None => (application_spans(trace), AppSource::Spans),
        };
        let vm0 = sat_sum(components.iter().map(|c| c.totals[0]));
        let all0 = application.first().copied().unwrap_or(0).saturating_add(vm0).max(1) as f64;
        let row = |name: &str, kind, totals: Vec<u64>| Row {
            name: name.to_string(),
            kind,
            share: totals.first().copied().unwrap_or(0) as f64 / all0,
            values: columns.iter().map(|c| c.value(&totals)).collect(),
            totals,
        };
        let mut rows: Vec<Row> =
            metrics.phases.iter().map(|p| row(&p.phase, RowKind::Phase, p.totals.clone())).collect();
        let outside: Vec<u64> = (0..w)
            .map(|k| application[k].saturating_sub(sat_sum(metrics.phases.iter().map(|p| p.totals[k]))))
            .collect();
        if outside.first().is_some_and(|&t| t > 0) {
            rows.push(row("(outside phases)", RowKind::Outside, outside));
        }
        rows.extend(components.iter().map(|c| row(&c.name, RowKind::Component, c.totals.clone())));
        let average: Vec<u64> = (0..w).map(|k| sat_sum(rows.iter().map(|r| r.totals[k]))).collect();
        rows.push(row("program average", RowKind::Average, average));
        let component_metrics =
            PhaseMetrics { metric_names: metrics.metric_names.clone(), phases: comp_obs }.summarize();
        Report {
            counters: trace.counters.clone(),
            selection: selection.clone(),
            input,
            application,
            app_source,
            components,
            columns,
            rows,
            metrics: metrics.summarize(),
            component_metrics,
            unclosed: graph.unclosed,
            early_exits: graph.early_exits,
            notes: graph.trace.notes.clone(),
            repaired: graph.repaired,
        }
    }

    /// Step 1's invocations of the selected methods over all its invocations.
    pub fn estimated_overhead(&self) -> Option<f64> {
        self.input.profile.map(|(p, all)| if all == 0 { 0.0 } else { p as f64 / all as f64 })
    }

    fn vm_total(&self) -> u64 {
        sat_sum(self.components.iter().map(|c| c.totals[0]))
    }

    /// Tables 3, 5 and 6 as text (names made terminal-safe).
    pub fn tables_text(&self) -> String {
        let mut s = String::new();
        let sel = &self.selection;
        let unit = terminal_safe(&self.counters[0]);
        let _ = writeln!(s, "table 3 (phases of the run):");
        let _ = writeln!(s, "  static phases: {}", sel.phases.len());
        let _ = writeln!(s, "  dynamic phases: {}", sel.profiled_invocations);
        let _ = writeln!(s, "  invocations: {}", sel.all_invocations);
        let _ = writeln!(s, "  trace size: {} bytes", self.input.trace_bytes);
        match (self.estimated_overhead(), self.input.profile) {
            (Some(o), Some((p, all))) => {
                let _ = writeln!(s, "  estimated overhead: {:.4}% ({p} of {all} profiling-run invocations)", o * 100.0);
            }
            _ => {
                let _ = writeln!(s, "  estimated overhead: n/a (give the profiling run's trace with --profile)");
            }
        }
        let app = self.application.first().copied().unwrap_or(0);
        let total = app.saturating_add(self.vm_total()).max(1) as f64;
        let from = match self.app_source {
            AppSource::Intervals => "every application thread measured per tick",
            AppSource::Spans => "the Java threads' spans in the trace",
        };
        let _ = writeln!(s, "\ntable 5 ({unit}: application against the VM's components; application: {from}):");
        let _ = writeln!(s, "  {:<32} {:>16} {:>8.2}%", "application", app, app as f64 / total * 100.0);
        for c in &self.components {
            let t = c.totals[0];
            let _ = writeln!(s, "  {:<32} {:>16} {:>8.2}%", terminal_safe(&c.name), t, t as f64 / total * 100.0);
        }
        let _ = writeln!(s, "\ntable 6 (per phase: share of {unit}, then per unit of it):");
        let mut head = format!("  {:<40} {:>8}", "phase", "share");
        for c in &self.columns {
            let _ = write!(head, "  {:>24}", terminal_safe(&c.title(&self.counters)));
        }
        let _ = writeln!(s, "{head}");
        for r in &self.rows {
            let _ = write!(s, "  {:<40} {:>7.2}%", terminal_safe(&r.name), r.share * 100.0);
            for v in &r.values {
                let _ = write!(s, "  {:>24}", v.map_or("n/a".to_string(), |v| format!("{v:.4}")));
            }
            s.push('\n');
        }
        s
    }

    /// The report as one JSON document (fields in docs/analysis.md).
    pub fn to_json(&self) -> Value {
        let sel = &self.selection;
        let app = self.application.first().copied().unwrap_or(0);
        let total = app.saturating_add(self.vm_total()).max(1) as f64;
        let phases: Vec<Value> = sel
            .phases
            .iter()
            .map(|p| {
                json!({"name": p.stats.name, "calls": p.stats.calls, "total": p.stats.total,
                       "total_share": p.total_share, "average_share": p.average_share})
            })
            .collect();
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| json!({"name": r.name, "kind": r.kind.name(), "totals": r.totals, "share": r.share, "values": r.values}))
            .collect();
        let per = |m: &MetricSummary| -> Vec<Value> {
            m.per_phase.iter().map(|(n, k, mean, cov)| json!({"name": n, "n": k, "mean": mean, "cov": cov})).collect()
        };
        let component_metrics: Vec<Value> =
            self.component_metrics.iter().map(|m| json!({"metric": m.metric, "components": per(m)})).collect();
        let metrics: Vec<Value> = self
            .metrics
            .iter()
            .map(|m| {
                let per = per(m);
                let anova = match &m.anova {
                    Ok(a) => json!({"f": a.f, "df": [a.df.0, a.df.1], "p": a.p}),
                    Err(e) => json!({"error": e}),
                };
                json!({"metric": m.metric, "phases": per, "weighted_cov": m.weighted_cov, "anova": anova})
            })
            .collect();
        let components: Vec<Value> = self
            .components
            .iter()
            .map(|c| json!({"name": c.name, "intervals": c.intervals, "totals": c.totals}))
            .collect();
        let table5: Vec<Value> = self
            .components
            .iter()
            .map(|c| json!({"name": c.name, "time": c.totals[0], "share": c.totals[0] as f64 / total}))
            .collect();
        json!({
            "counters": self.counters,
            "selection": {
                "total_time": sel.total_time,
                "phases": phases,
                "profiled_invocations": sel.profiled_invocations,
                "all_invocations": sel.all_invocations,
            },
            "table3": {
                "static_phases": sel.phases.len(),
                "dynamic_phases": sel.profiled_invocations,
                "invocations": sel.all_invocations,
                "trace_bytes": self.input.trace_bytes,
                "estimated_overhead": self.estimated_overhead(),
            },
            "table5": {
                "application": app,
                "application_from": match self.app_source {
                    AppSource::Intervals => "intervals",
                    AppSource::Spans => "spans",
                },
                "application_share": app as f64 / total,
                "components": table5,
            },
            "table6": {
                "columns": self.columns.iter().map(|c| c.title(&self.counters)).collect::<Vec<_>>(),
                "rows": rows,
            },
            "metrics": metrics,
            "components": components,
            "component_metrics": component_metrics,
            "unclosed": self.unclosed,
            "early_exits": self.early_exits,
            "notes": self.notes,
            "repaired": self.repaired,
        })
    }
}
