//! Method-level phases (Georges et al. 2004, sections 3.2 and 4).
//!
//! From an enter/exit trace with counter values ([`super::Trace`]), build the annotated
//! dynamic call graph — a tree of invocations per thread, each with its counter values at
//! entry and exit — and compute per method the number of calls, the total time including
//! callees and the time per invocation. A method is selected as a phase (the algorithm of
//! Huang et al. that the paper uses) if, with c_T the program's total time,
//!
//! - p_total = total / c_T > theta_weight, and
//! - average time per invocation / c_T > theta_grain.
//!
//! (Section 3.2's formula writes the average as p_average * c_m, but its worked example, and
//! the bound 1/(theta_weight * theta_grain) on profiled invocations, compare the average with
//! c_T; we follow the example.) The estimated overhead is the number of invocations of
//! selected methods over all invocations.
//!
//! Per-phase metrics: every invocation of a selected method is one observation of its phase.
//! A phase covers its method and callees minus the nested invocations of selected methods
//! (those are observations of their own phases), so phases partition the run ("coverage is
//! always 100%"). For each further counter k, the observation is delta(k) / delta(counter 0),
//! e.g. instructions per cycle. Section 4's statistics then apply: CoV per phase, CoV averaged
//! with the time spent in each phase as weight, and one-way ANOVA across phases.
//!
//! Recursion: a method's total counts only its outermost invocations (so it cannot exceed
//! c_T); its time per invocation averages over all invocations.
//!
//! The measurement run selects by name instead ([`CallGraph::select_methods`]): the methods of
//! a phase file, whatever their share.

use std::collections::HashMap;

use super::stats::{anova, cov, mean, weighted_cov, Anova};
use super::{sat_sum, Trace, TraceKind};

/// One method invocation: a node of the dynamic call graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    pub method: u32,
    pub thread: u32,
    pub parent: Option<usize>,
    /// Trace events of the entry and exit (the exit is the thread's last event if the trace
    /// ended first).
    pub enter: usize,
    pub exit: usize,
    /// Another invocation of the same method is open below it on the stack.
    pub nested: bool,
}

/// The annotated dynamic call graph.
#[derive(Clone, Debug)]
pub struct CallGraph<'t> {
    pub trace: &'t Trace,
    /// In order of entry: a parent always precedes its callees.
    pub invocations: Vec<Invocation>,
    /// Invocations still open when the trace ended, closed at their thread's last event.
    pub unclosed: usize,
    /// Exits of a method not open on their thread, skipped (binary traces): a version 2 trace
    /// starts recording when the agent switches the probes on, possibly inside instrumented
    /// methods.
    pub early_exits: usize,
    /// Invocations closed by the exit of a method open below them (binary traces): their own
    /// exit was lost, e.g. a StackOverflowError thrown inside an exit probe. Each ends at that
    /// exit's record.
    pub repaired: usize,
}

impl<'t> CallGraph<'t> {
    /// Builds the graph, checking that counters never go backwards on a thread and, in a text
    /// trace, that exits match entries. A binary trace (written by a running JVM, where a
    /// probe can fail: a StackOverflowError in the probe call, `Thread.stop`) is repaired
    /// instead: an exit of a method open deeper on the stack closes the invocations above it
    /// ([`CallGraph::repaired`]); an exit of a method not open is skipped
    /// ([`CallGraph::early_exits`]). Records cannot tell invocations of a recursive method
    /// apart: an exit closes the innermost, so lost exits show on the outer ones, which then
    /// end at the repairing exit. Each record costs amortised constant time (an invocation is
    /// closed once). Errors carry the trace line (or record).
    pub fn build(trace: &'t Trace) -> Result<CallGraph<'t>, (usize, String)> {
        let mut inv: Vec<Invocation> = Vec::new();
        let mut stacks: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut open: HashMap<(u32, u32), u32> = HashMap::new();
        let mut last: HashMap<u32, usize> = HashMap::new();
        let (mut early_exits, mut repaired) = (0, 0);
        // Traces the agent wrote are repaired; a text trace must be balanced.
        let binary = trace.binary;
        for (i, e) in trace.events.iter().enumerate() {
            let thread = &trace.threads[e.thread as usize];
            let method = &trace.methods[e.method as usize];
            if let Some(&prev) = last.get(&e.thread) {
                for (k, (a, b)) in trace.values(prev).iter().zip(trace.values(i)).enumerate() {
                    if b < a {
                        return Err((e.line, format!(
                            "{} value {b} is below the previous value {a} on thread {thread}: events must be in time order",
                            trace.counters[k]
                        )));
                    }
                }
            }
            last.insert(e.thread, i);
            let stack = stacks.entry(e.thread).or_default();
            match e.kind {
                TraceKind::Enter => {
                    let n = open.entry((e.thread, e.method)).or_default();
                    inv.push(Invocation {
                        method: e.method,
                        thread: e.thread,
                        parent: stack.last().copied(),
                        enter: i,
                        exit: i,
                        nested: *n > 0,
                    });
                    *n += 1;
                    stack.push(inv.len() - 1);
                }
                TraceKind::Exit | TraceKind::Thrown => {
                    let is_open = open.get(&(e.thread, e.method)).is_some_and(|&n| n > 0);
                    let top = stack.last().copied();
                    if binary && !is_open {
                        early_exits += 1;
                        continue;
                    }
                    let Some(top) = top else {
                        return Err((
                            e.line,
                            format!("exit of {method} on thread {thread}, but no method is open there"),
                        ));
                    };
                    if inv[top].method != e.method {
                        if !binary || !is_open {
                            let inner = &trace.methods[inv[top].method as usize];
                            return Err((
                                e.line,
                                format!(
                                    "exit of {method} on thread {thread}, but the innermost open method is {inner}"
                                ),
                            ));
                        }
                        // The method is open deeper: the invocations above it lost their exit.
                        while let Some(&id) = stack.last() {
                            if inv[id].method == e.method {
                                break;
                            }
                            stack.pop();
                            inv[id].exit = i;
                            repaired += 1;
                            if let Some(n) = open.get_mut(&(e.thread, inv[id].method)) {
                                *n -= 1;
                            }
                        }
                    }
                    let Some(top) = stack.pop() else { continue };
                    inv[top].exit = i;
                    if let Some(n) = open.get_mut(&(e.thread, e.method)) {
                        *n -= 1;
                    }
                }
            }
        }
        let mut unclosed = 0;
        for (thread, stack) in &stacks {
            for &id in stack {
                inv[id].exit = last[thread];
                unclosed += 1;
            }
        }
        Ok(CallGraph { trace, invocations: inv, unclosed, early_exits, repaired })
    }

    /// Counter `k` consumed by an invocation, callees included.
    pub fn inclusive(&self, id: usize, k: usize) -> u64 {
        let v = &self.invocations[id];
        self.trace.values(v.exit)[k] - self.trace.values(v.enter)[k]
    }

    /// The program's total time c_T: the outermost invocations of every thread.
    pub fn total_time(&self) -> u64 {
        sat_sum(
            (0..self.invocations.len()).filter(|&i| self.invocations[i].parent.is_none()).map(|i| self.inclusive(i, 0)),
        )
    }

    /// Per-method calls and times (counter 0), sorted by total time.
    pub fn method_stats(&self) -> Vec<MethodStats> {
        let mut m: Vec<MethodStats> = self
            .trace
            .methods
            .iter()
            .map(|n| MethodStats { name: n.clone(), calls: 0, total: 0, inclusive_sum: 0, self_time: 0 })
            .collect();
        for (i, v) in self.invocations.iter().enumerate() {
            let t = self.inclusive(i, 0);
            let s = &mut m[v.method as usize];
            s.calls += 1;
            s.inclusive_sum = s.inclusive_sum.saturating_add(t);
            s.self_time = s.self_time.saturating_add(t);
            if !v.nested {
                s.total = s.total.saturating_add(t);
            }
            if let Some(p) = v.parent {
                let pm = self.invocations[p].method as usize;
                m[pm].self_time = m[pm].self_time.saturating_sub(t);
            }
        }
        m.retain(|s| s.calls > 0);
        m.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
        m
    }

    /// Selects the phases with thresholds given as fractions (0.10 for 10%).
    pub fn select(&self, theta_weight: f64, theta_grain: f64) -> Selection {
        let total_time = self.total_time();
        let c_t = total_time.max(1) as f64;
        let stats = self.method_stats();
        let all_invocations = sat_sum(stats.iter().map(|s| s.calls));
        let phases: Vec<SelectedPhase> = stats
            .into_iter()
            .filter(|s| s.total as f64 / c_t > theta_weight && s.average() / c_t > theta_grain)
            .map(|s| SelectedPhase { total_share: s.total as f64 / c_t, average_share: s.average() / c_t, stats: s })
            .collect();
        let profiled_invocations = sat_sum(phases.iter().map(|p| p.stats.calls));
        Selection { total_time, phases, profiled_invocations, all_invocations }
    }

    /// The phases of a phase file: exactly `names`, in their order (a name the trace never
    /// calls is a phase with no call). The estimated overhead is that of this trace.
    pub fn select_methods(&self, names: &[String]) -> Selection {
        let total_time = self.total_time();
        let c_t = total_time.max(1) as f64;
        let stats = self.method_stats();
        let all_invocations = sat_sum(stats.iter().map(|s| s.calls));
        let by_name: HashMap<&str, &MethodStats> = stats.iter().map(|s| (s.name.as_str(), s)).collect();
        let phases: Vec<SelectedPhase> = names
            .iter()
            .map(|n| {
                let s = by_name.get(n.as_str()).map(|s| (*s).clone()).unwrap_or(MethodStats {
                    name: n.clone(),
                    calls: 0,
                    total: 0,
                    inclusive_sum: 0,
                    self_time: 0,
                });
                SelectedPhase { total_share: s.total as f64 / c_t, average_share: s.average() / c_t, stats: s }
            })
            .collect();
        let profiled_invocations = sat_sum(phases.iter().map(|p| p.stats.calls));
        Selection { total_time, phases, profiled_invocations, all_invocations }
    }

    /// Every invocation of a selected method with its phase (index into `selection.phases`)
    /// and its own counters: inclusive minus the nearest nested phase invocations. In order of
    /// entry.
    pub fn phase_own(&self, selection: &Selection) -> Vec<PhaseInvocation> {
        let width = self.trace.counters.len();
        let index: HashMap<&str, usize> =
            selection.phases.iter().enumerate().map(|(i, p)| (p.stats.name.as_str(), i)).collect();
        let by_method: Vec<Option<usize>> = self.trace.methods.iter().map(|m| index.get(m.as_str()).copied()).collect();
        let phase_of = |id: usize| by_method[self.invocations[id].method as usize];
        let mut out: Vec<PhaseInvocation> = Vec::new();
        // Per invocation, the position in `out` of its nearest enclosing phase invocation.
        let mut nearest: Vec<Option<usize>> = vec![None; self.invocations.len()];
        for id in 0..self.invocations.len() {
            let up = self.invocations[id].parent.and_then(|p| nearest[p]);
            let Some(phase) = phase_of(id) else {
                nearest[id] = up;
                continue;
            };
            let incl: Vec<u64> = (0..width).map(|k| self.inclusive(id, k)).collect();
            if let Some(a) = up {
                for (o, v) in out[a].own.iter_mut().zip(&incl) {
                    *o = o.saturating_sub(*v);
                }
            }
            nearest[id] = Some(out.len());
            out.push(PhaseInvocation { invocation: id, phase, own: incl });
        }
        out
    }

    /// Observations per selected phase: for every further counter k, delta(k)/delta(counter 0)
    /// of each invocation, with nested phases taken out.
    pub fn phase_metrics(&self, selection: &Selection) -> PhaseMetrics {
        let width = self.trace.counters.len();
        let metric_names =
            (1..width).map(|k| format!("{} per {}", self.trace.counters[k], self.trace.counters[0])).collect();
        let mut phases: Vec<PhaseObservations> = selection
            .phases
            .iter()
            .map(|p| PhaseObservations {
                phase: p.stats.name.clone(),
                weight: 0.0,
                values: vec![Vec::new(); width.saturating_sub(1)],
                totals: vec![0; width],
            })
            .collect();
        for inv in self.phase_own(selection) {
            let (p, d) = (inv.phase, &inv.own);
            phases[p].weight += d[0] as f64;
            for (t, v) in phases[p].totals.iter_mut().zip(d) {
                *t = t.saturating_add(*v);
            }
            if d[0] == 0 {
                continue;
            }
            for k in 1..width {
                phases[p].values[k - 1].push(d[k] as f64 / d[0] as f64);
            }
        }
        PhaseMetrics { metric_names, phases }
    }
}

/// One invocation of a phase, from [`CallGraph::phase_own`].
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseInvocation {
    /// Index into [`CallGraph::invocations`].
    pub invocation: usize,
    /// Index into [`Selection::phases`].
    pub phase: usize,
    /// Its own counters (nested phase invocations taken out), one per trace counter.
    pub own: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MethodStats {
    pub name: String,
    pub calls: u64,
    /// Time including callees over the outermost invocations.
    pub total: u64,
    /// Time including callees summed over all invocations.
    pub inclusive_sum: u64,
    /// Time excluding callees.
    pub self_time: u64,
}

impl MethodStats {
    /// Time per invocation, callees included.
    pub fn average(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.inclusive_sum as f64 / self.calls as f64
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SelectedPhase {
    pub stats: MethodStats,
    /// total / c_T and average / c_T.
    pub total_share: f64,
    pub average_share: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// c_T.
    pub total_time: u64,
    pub phases: Vec<SelectedPhase>,
    pub profiled_invocations: u64,
    pub all_invocations: u64,
}

impl Selection {
    /// Estimated overhead: profiled invocations over all invocations.
    pub fn overhead(&self) -> f64 {
        if self.all_invocations == 0 {
            0.0
        } else {
            self.profiled_invocations as f64 / self.all_invocations as f64
        }
    }
}

/// Observations of one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseObservations {
    pub phase: String,
    /// Weight for the weighted CoV: time spent in the phase.
    pub weight: f64,
    /// Per metric, one value per phase invocation.
    pub values: Vec<Vec<f64>>,
    /// Per trace counter, the phase's own total (empty for observations given as pairs).
    pub totals: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PhaseMetrics {
    pub metric_names: Vec<String>,
    pub phases: Vec<PhaseObservations>,
}

/// Section 4's statistics for one metric.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSummary {
    pub metric: String,
    /// (phase, observations, mean, CoV) per phase with observations.
    pub per_phase: Vec<(String, usize, f64, Option<f64>)>,
    pub weighted_cov: Option<f64>,
    pub anova: Result<Anova, String>,
}

impl PhaseMetrics {
    /// Observations given directly as `PHASE VALUE` pairs (one metric), weighted by count.
    pub fn from_pairs(metric: &str, pairs: &[(String, f64)]) -> PhaseMetrics {
        let mut phases: Vec<PhaseObservations> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (p, v) in pairs {
            let i = *index.entry(p.as_str()).or_insert_with(|| {
                phases.push(PhaseObservations {
                    phase: p.clone(),
                    weight: 0.0,
                    values: vec![Vec::new()],
                    totals: Vec::new(),
                });
                phases.len() - 1
            });
            phases[i].weight += 1.0;
            phases[i].values[0].push(*v);
        }
        PhaseMetrics { metric_names: vec![metric.to_string()], phases }
    }

    /// Weighs the phases that are methods of the trace by their total time, as the paper does.
    pub fn weigh_by_time(&mut self, stats: &[MethodStats]) {
        let total: HashMap<&str, u64> = stats.iter().map(|s| (s.name.as_str(), s.total)).collect();
        for p in &mut self.phases {
            if let Some(&t) = total.get(p.phase.as_str()) {
                p.weight = t as f64;
            }
        }
    }

    pub fn summarize(&self) -> Vec<MetricSummary> {
        (0..self.metric_names.len())
            .map(|k| {
                let groups: Vec<(&str, &[f64], f64)> = self
                    .phases
                    .iter()
                    .filter(|p| !p.values[k].is_empty())
                    .map(|p| (p.phase.as_str(), p.values[k].as_slice(), p.weight))
                    .collect();
                let per_phase = groups
                    .iter()
                    .map(|(n, xs, _)| (n.to_string(), xs.len(), mean(xs).unwrap_or(0.0), cov(xs)))
                    .collect();
                let wc: Vec<(&[f64], f64)> = groups.iter().map(|g| (g.1, g.2)).collect();
                let obs: Vec<&[f64]> = groups.iter().map(|g| g.1).collect();
                MetricSummary {
                    metric: self.metric_names[k].clone(),
                    per_phase,
                    weighted_cov: weighted_cov(&wc),
                    anova: anova(&obs),
                }
            })
            .collect()
    }
}

/// Parses `PHASE VALUE` lines (per-phase metric observations).
pub fn parse_metric_pairs(text: &str) -> Result<Vec<(String, f64)>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(f) = super::fields(line) else {
            continue;
        };
        if f.len() != 2 {
            return Err((i + 1, format!("expected `PHASE VALUE`, got {} fields", f.len())));
        }
        let v: f64 = f[1].parse().map_err(|_| (i + 1, format!("value `{}` is not a number", f[1])))?;
        if !v.is_finite() {
            return Err((i + 1, format!("value `{}` is not a finite number", f[1])));
        }
        out.push((f[0].to_string(), v));
    }
    Ok(out)
}
