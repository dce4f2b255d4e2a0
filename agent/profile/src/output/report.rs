//! The text report of `hpm report` (and, via [`summary`], the agent's exit summary).
//!
//! The report needs only the recording's metadata, a calling context tree and per-component
//! sample counts, never `Recording::samples`: the agent drains samples into the tree as it
//! goes. Counters that were not recorded are simply absent; ratios whose divisor is zero
//! print as `-`.

use crate::hash::IntMap;
use std::borrow::Cow;
use std::fmt::Write;

use crate::cct::{Cct, Measure, NodeId, ROOT};
use crate::filter::Applied;
use crate::model::{DropClass, Recording, VmComponent};

use super::cpi_counters;
use super::data::{data_table, DataBy, DataTallies};
use super::methods::{method_rows, Row};
pub use super::summary::{component_counts, event_line, sampling_line, summary};
use super::summary::{drops_line, fallback_line, kernel_line, sorted_components, threads_line};
use super::threads::{thread_rows, thread_table, ThreadRow};
use super::vm_functions::{component_functions, functions_table, ComponentFunctions};
use crate::text::{duration_ns, group, pct, ratio, Unit};

#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Rows in the method tables.
    pub top: usize,
    /// Call-tree frames below this share of all samples are summarised, not listed.
    pub min_percent: f64,
    /// The tree was built per thread: its first level are `[name tid=N]` frames, which the
    /// method tables leave out.
    pub threads: bool,
    /// What `--thread`, `--from` and `--to` kept, said in the header.
    pub filtered: Option<Applied>,
    /// What the method tables and the call tree count: samples, or (`--event`: the JVM's
    /// events) what they weigh, bytes or ns waited.
    pub by: Measure,
    /// What a weight is (`--event`: bytes allocated, ns waited), for the titles and cells.
    pub unit: Unit,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            top: 20,
            min_percent: 1.0,
            threads: false,
            filtered: None,
            by: Measure::Samples,
            unit: Unit::Samples,
        }
    }
}

impl ReportOptions {
    /// What the tables count, in their titles.
    fn counted(&self) -> &'static str {
        match (self.by, self.unit) {
            (Measure::Samples, _) => "samples",
            (Measure::Weight, Unit::Samples) => "weight",
            (Measure::Weight, u) => u.noun(),
        }
    }

    /// A table cell of what the tables count: a time for ns waited.
    fn cell(&self, v: u64) -> String {
        match self.by {
            Measure::Samples => group(v),
            Measure::Weight => self.unit.cell(v),
        }
    }
}

fn counter_at(v: &[u64], i: usize) -> u64 {
    v.get(i).copied().unwrap_or(0)
}

/// What the report counts per sample besides the tree: samples per VM component and per
/// thread. Taken from the samples before they are dropped (the report never needs them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tallies {
    pub components: Vec<(VmComponent, u64)>,
    pub threads: Vec<ThreadRow>,
    /// What the samples' data addresses touched (`data`).
    pub data: DataTallies,
    /// The VM components' top functions (where native stacks were unwound).
    pub functions: Vec<ComponentFunctions>,
    /// The virtual threads of the recording's samples, before `--vthreads` regrouped them
    /// (the loader sets it: [`crate::vthreads::regroup`]).
    pub vthreads: Option<crate::vthreads::VirtualSummary>,
}

impl Tallies {
    pub fn of(rec: &Recording) -> Tallies {
        Tallies {
            components: component_counts(&rec.samples),
            threads: thread_rows(rec),
            data: DataTallies::of(rec),
            functions: component_functions(rec),
            vthreads: None,
        }
    }
}

/// The report's header and one data table (`hpm report --by class|field|space`).
pub fn data_report(rec: &Recording, cct: &Cct, tallies: &Tallies, by: DataBy, opts: &ReportOptions) -> String {
    let mut out = String::new();
    header(&mut out, Some(rec), cct, tallies, opts);
    if tallies.data.samples == 0 {
        out.push_str("\n(no sample has a data address: record with the agent's `data` option)\n");
    }
    data_table(&mut out, rec, &tallies.data, by, opts.top);
    out
}

/// The full report. `rec` is `None` for sources without metadata (collapsed stacks).
pub fn full_report(rec: Option<&Recording>, cct: &Cct, tallies: &Tallies, opts: &ReportOptions) -> String {
    let mut out = String::new();
    header(&mut out, rec, cct, tallies, opts);
    // Source files, where the recording has them (hpm's own files do): `name (File.java)`.
    let mut sources: IntMap<String, &str> = IntMap::default();
    for (_, m) in rec.iter().flat_map(|r| r.methods.iter()) {
        if let Some(f) = m.source_file.as_deref().filter(|f| !f.is_empty()) {
            sources.entry(m.display_name()).or_insert(f);
        }
    }
    // The tables count the tree's samples: by weight, a copy whose samples are its weight
    // (the header above keeps the samples' count).
    let weighed;
    let cct = match opts.by {
        Measure::Samples => cct,
        Measure::Weight => {
            weighed = cct.clone().counted_by(Measure::Weight);
            &weighed
        }
    };
    // Per-method totals and their order once, for both method tables.
    let rows = method_rows(cct, opts.threads);
    top_methods(&mut out, cct, &rows, opts, &sources);
    counter_tables(&mut out, cct, &rows, opts);
    if let Some(rec) = rec {
        let weighed;
        let threads = match opts.by {
            Measure::Samples => &tallies.threads,
            Measure::Weight => {
                weighed = super::threads::by_weight(&tallies.threads);
                &weighed
            }
        };
        thread_table(&mut out, threads, &rec.counters, &rec.states, opts.top, opts.counted());
    }
    component_table(&mut out, &tallies.components);
    functions_table(&mut out, &tallies.functions);
    if let Some(rec) = rec {
        data_table(&mut out, rec, &tallies.data, DataBy::Class, opts.top);
    }
    call_tree(&mut out, cct, opts);
    if let Some(rec) = rec {
        // Drops are counted for the whole run: their share is of all the run's samples.
        let taken = opts.filtered.as_ref().map_or(cct.total_samples(), |f| f.samples_before);
        drop_table(&mut out, rec, taken);
    }
    out
}

/// The `== hpm report ==` block; `tallies.threads` are the per-thread rows of the samples shown.
fn header(out: &mut String, rec: Option<&Recording>, cct: &Cct, tallies: &Tallies, opts: &ReportOptions) {
    let threads = &tallies.threads;
    let filtered = opts.filtered.as_ref();
    out.push_str("== hpm report ==\n");
    let mut kv = |k: &str, v: String| {
        // An empty key continues the line above.
        let key = if k.is_empty() { String::new() } else { format!("{k}:") };
        let _ = writeln!(out, "{key:<11} {v}");
    };
    match rec {
        Some(rec) => {
            kv("event", event_line(rec));
            if let Some(f) = fallback_line(rec) {
                kv("fallback", f);
            }
            if let Some(k) = kernel_line(rec) {
                kv("kernel", k);
            }
            let counters = if cct.counters.is_empty() { "none".to_string() } else { counters_line(rec) };
            kv("counters", counters);
            for line in attributions(rec) {
                kv("", line);
            }
            if rec.start_wall_ns != 0 {
                // What --from and --to take as a wall-clock time.
                kv("start", crate::text::iso_utc(rec.start_wall_ns));
            }
            if rec.end_ticks > rec.start_ticks {
                kv("duration", duration_ns(rec.end_ticks - rec.start_ticks));
            }
            if !rec.jvm.is_empty() || rec.pid != 0 {
                let mut v = rec.jvm.clone();
                if rec.pid != 0 {
                    let _ = write!(v, "{}pid {}", if v.is_empty() { "" } else { ", " }, rec.pid);
                }
                kv("jvm", v);
            }
            // The JVM's events as samples: counted as events, with what they weigh.
            let counted = |n: u64| match opts.unit {
                Unit::Bytes | Unit::NsWaited => {
                    format!("{} events ({})", group(n), opts.unit.amount(cct.root().total_weight))
                }
                _ => group(n),
            };
            let samples = match filtered {
                // What the filters kept, of what they were given; drops are the whole run's.
                Some(f) => format!(
                    "{} of {} (filter below); in the whole recording {}",
                    counted(f.samples_kept),
                    group(f.samples_before),
                    drops_line(rec)
                ),
                None => format!("{}, {}", counted(cct.total_samples()), drops_line(rec)),
            };
            kv("samples", samples);
            if let Some(f) = filtered {
                kv("filter", f.describe());
            }
            // The agent's exit summary says the same line, counted the same.
            // Platform threads: the virtual ones have their own line.
            let java = threads.iter().filter(|r| r.is_java && !r.is_virtual).count() as u64;
            let vm = threads.iter().filter(|r| !r.is_java).count() as u64;
            if let Some(t) = threads_line(rec, (java, vm)) {
                kv("threads", t);
            }
            if let Some(v) = &tallies.vthreads {
                kv("virtual", v.line());
                if let Some(l) = crate::vthreads::live_line(&v.live) {
                    kv("", l);
                }
            }
        }
        None => {
            kv("source", "collapsed stacks (no event, counter or thread metadata)".into());
            if !cct.counters.is_empty() {
                kv("counters", cct.counters.join(", "));
            }
            kv("samples", group(cct.total_samples()));
        }
    }
}

/// The counters, each marked with how its values came to their stacks: `sampled every N`
/// (its own overflows) or `interval` (the delta since the thread's previous sample).
fn counters_line(rec: &Recording) -> String {
    let period = |i: usize| rec.counter_periods.get(i).copied().unwrap_or(0);
    let mark = |i: usize| match period(i) {
        0 => "interval".to_string(),
        p => format!("sampled every {p}"),
    };
    rec.counters.iter().enumerate().map(|(i, c)| format!("{c} [{}]", mark(i))).collect::<Vec<_>>().join(", ")
}

/// One line per kind of attribution in use, saying what its mark means.
fn attributions(rec: &Recording) -> Vec<String> {
    let period = |i: usize| rec.counter_periods.get(i).copied().unwrap_or(0);
    let mut out = Vec::new();
    if (0..rec.counters.len()).any(|i| period(i) > 0) {
        out.push(
            "[sampled every N]: the counter's own overflow every N events interrupts the thread, and the count \
             since its previous overflow is charged to the stack it interrupts"
                .to_string(),
        );
    }
    if (0..rec.counters.len()).any(|i| period(i) == 0) {
        out.push(format!(
            "[interval]: {}",
            crate::model::counter_attribution(0).replacen("interval-attributed: ", "", 1)
        ));
    }
    out
}

fn top_methods(out: &mut String, cct: &Cct, rows: &[Row], opts: &ReportOptions, sources: &IntMap<String, &str>) {
    let total = cct.total_samples();
    let cpi = cpi_counters(&cct.counters);
    let roots = &cct.root().total_counters;
    let shown: Vec<&Row> = rows.iter().filter(|r| r.t.self_samples > 0).take(opts.top).collect();
    let _ = writeln!(out, "\n== Top {} methods by self {} ==", opts.top, opts.counted());
    if shown.is_empty() {
        out.push_str("(no samples)\n");
        return;
    }
    let widths: Vec<usize> = cct.counters.iter().map(|c| (c.len() + 1).max(8)).collect();
    // Weights (bytes, ns waited) run to more digits than sample counts.
    let n = if opts.by == Measure::Weight { 16 } else { 10 };
    let mut h = format!("{:>8} {:>n$} {:>8} {:>n$}", "self%", "self", "total%", "total");
    for (c, w) in cct.counters.iter().zip(&widths) {
        let _ = write!(h, " {:>w$}", format!("{c}%"));
    }
    if cpi.is_some() {
        let _ = write!(h, " {:>6}", "CPI");
    }
    h.push_str("  method");
    let _ = writeln!(out, "{h}");
    for r in &shown {
        let t = &r.t;
        let mut l = format!(
            "{:>8} {:>n$} {:>8} {:>n$}",
            pct(t.self_samples, total),
            opts.cell(t.self_samples),
            pct(t.total_samples, total),
            opts.cell(t.total_samples)
        );
        for (i, w) in widths.iter().enumerate() {
            let _ = write!(l, " {:>w$}", pct(counter_at(&t.self_counters, i), counter_at(roots, i)));
        }
        if let Some((c, i)) = cpi {
            let _ = write!(l, " {:>6}", ratio(counter_at(&t.self_counters, c), counter_at(&t.self_counters, i)));
        }
        match sources.get(r.name) {
            Some(file) => {
                let _ = writeln!(out, "{l}  {} ({file})", r.name);
            }
            None => {
                let _ = writeln!(out, "{l}  {}", r.name);
            }
        }
    }
    let rest: Vec<&Row> = rows.iter().filter(|r| r.t.self_samples > 0).skip(opts.top).collect();
    if !rest.is_empty() {
        let s: u64 = rest.iter().map(|r| r.t.self_samples).sum();
        let _ = writeln!(out, "{:>8} {:>n$}  ({} more methods)", pct(s, total), opts.cell(s), group(rest.len() as u64));
    }
}

/// Per-counter tables: the CPI profile when both `cycles` and `instructions` were recorded
/// (as in the appendix of Inoue & Nakatani), and totals plus per-sample values for the others.
fn counter_tables(out: &mut String, cct: &Cct, rows: &[Row], opts: &ReportOptions) {
    if cct.counters.is_empty() {
        return;
    }
    let roots = &cct.root().total_counters;
    let cpi = cpi_counters(&cct.counters);
    if let Some((c, i)) = cpi {
        let mut by_cycles: Vec<&Row> = rows.iter().filter(|r| counter_at(&r.t.self_counters, c) > 0).collect();
        by_cycles.sort_by(|a, b| {
            counter_at(&b.t.self_counters, c).cmp(&counter_at(&a.t.self_counters, c)).then(a.name.cmp(b.name))
        });
        let _ = writeln!(out, "\n== CPI profile: top {} methods by cycles ==", opts.top);
        let _ = writeln!(
            out,
            "{:>8} {:>16} {:>8} {:>16} {:>6} {:>10}  method",
            "cycles%", "cycles", "instr%", "instructions", "CPI", "samples"
        );
        for r in by_cycles.iter().take(opts.top) {
            let (cv, iv) = (counter_at(&r.t.self_counters, c), counter_at(&r.t.self_counters, i));
            let _ = writeln!(
                out,
                "{:>8} {:>16} {:>8} {:>16} {:>6} {:>10}  {}",
                pct(cv, counter_at(roots, c)),
                group(cv),
                pct(iv, counter_at(roots, i)),
                group(iv),
                ratio(cv, iv),
                group(r.t.self_samples),
                r.name
            );
        }
        let (ct, it) = (counter_at(roots, c), counter_at(roots, i));
        let _ = writeln!(
            out,
            "{:>8} {:>16} {:>8} {:>16} {:>6} {:>10}  (all)",
            "",
            group(ct),
            "",
            group(it),
            ratio(ct, it),
            group(cct.total_samples())
        );
    }
    let others: Vec<usize> =
        (0..cct.counters.len()).filter(|&k| !matches!(cpi, Some((c, i)) if k == c || k == i)).collect();
    if others.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n== Counters per method (self), top {} methods by self samples ==", opts.top);
    let mut h = String::new();
    let widths: Vec<usize> = others.iter().map(|&k| cct.counters[k].len().max(8) + 7).collect();
    for (&k, w) in others.iter().zip(&widths) {
        let name = &cct.counters[k];
        let _ = write!(h, "{:>w$} {:>8} {:>12} ", name, "%", "per sample");
    }
    let _ = writeln!(out, "{h} method");
    let line = |out: &mut String, self_counters: &[u64], samples: u64, name: &str| {
        let mut l = String::new();
        for (&k, w) in others.iter().zip(&widths) {
            let v = counter_at(self_counters, k);
            let _ = write!(l, "{:>w$} {:>8} {:>12} ", group(v), pct(v, counter_at(roots, k)), ratio(v, samples));
        }
        let _ = writeln!(out, "{l} {name}");
    };
    for r in rows.iter().filter(|r| r.t.self_samples > 0).take(opts.top) {
        line(out, &r.t.self_counters, r.t.self_samples, r.name);
    }
    line(out, roots, cct.total_samples(), "(all)");
}

fn component_table(out: &mut String, components: &[(VmComponent, u64)]) {
    let v = sorted_components(components);
    out.push_str("\n== VM components ==\n");
    if v.is_empty() {
        out.push_str("(not recorded in this profile)\n");
        return;
    }
    if v.iter().all(|(c, _)| *c == VmComponent::Unknown) {
        let _ = writeln!(out, "(not recorded: all {} samples unclassified)", group(v[0].1));
        return;
    }
    let all: u64 = v.iter().map(|(_, n)| n).sum();
    let _ = writeln!(out, "{:<14} {:>10} {:>8}", "component", "samples", "%");
    for (c, n) in &v {
        let _ = writeln!(out, "{:<14} {:>10} {:>8}", c.name(), group(*n), pct(*n, all));
    }
    let _ = writeln!(out, "{:<14} {:>10} {:>8}", "total", group(all), pct(all, all));
}

const MAX_INDENT: usize = 40;

fn call_tree(out: &mut String, cct: &Cct, opts: &ReportOptions) {
    let total = cct.total_samples();
    let _ = writeln!(
        out,
        "\n== Call tree{}: frames with at least {}% of {} ==",
        if opts.threads { " per thread" } else { "" },
        opts.min_percent,
        opts.counted()
    );
    let _ = writeln!(out, "{:>8} {:>8}  frame", "total%", "self%");
    if total == 0 {
        out.push_str("(no samples)\n");
        return;
    }
    let keep = |id: NodeId| cct.node(id).total_samples as f64 * 100.0 >= opts.min_percent * total as f64;
    enum Item {
        Node(NodeId, usize),
        Omitted { depth: usize, frames: u64, samples: u64 },
    }
    let mut stack = vec![Item::Node(ROOT, 0)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Node(id, depth) => {
                let n = cct.node(id);
                let _ = writeln!(
                    out,
                    "{:>8} {:>8}  {}{}",
                    pct(n.total_samples, total),
                    pct(n.self_samples, total),
                    indent(depth),
                    n.name
                );
                let mut kids: Vec<NodeId> =
                    n.children.iter().copied().filter(|&c| cct.node(c).total_samples > 0).collect();
                kids.sort_by(|&a, &b| {
                    let (x, y) = (cct.node(a), cct.node(b));
                    y.total_samples.cmp(&x.total_samples).then(x.name.cmp(&y.name))
                });
                let (shown, cut): (Vec<NodeId>, Vec<NodeId>) = kids.into_iter().partition(|&c| keep(c));
                if !cut.is_empty() {
                    let samples = cut.iter().map(|&c| cct.node(c).total_samples).sum();
                    stack.push(Item::Omitted { depth: depth + 1, frames: cut.len() as u64, samples });
                }
                for &c in shown.iter().rev() {
                    stack.push(Item::Node(c, depth + 1));
                }
            }
            Item::Omitted { depth, frames, samples } => {
                let _ = writeln!(
                    out,
                    "{:>8} {:>8}  {}({} more {} below {}%)",
                    pct(samples, total),
                    "",
                    indent(depth),
                    group(frames),
                    if frames == 1 { "callee" } else { "callees" },
                    opts.min_percent
                );
            }
        }
    }
}

/// Two spaces per level; beyond [`MAX_INDENT`] levels the depth is written out instead.
fn indent(depth: usize) -> String {
    if depth <= MAX_INDENT {
        "  ".repeat(depth)
    } else {
        format!("{}[depth {depth}] ", "  ".repeat(MAX_INDENT))
    }
}

fn drop_table(out: &mut String, rec: &Recording, taken: u64) {
    let (lost, kept) = rec.lost_and_kept();
    let attempted = taken + lost;
    // Samples lost, then samples kept without their Java stack: two tables, since only the
    // first are missing from the profile.
    let partial = rec.drops_of(DropClass::Partial);
    for (title, class, sum) in [
        ("Dropped samples", DropClass::Lost, lost),
        ("Samples kept without Java stack", DropClass::KeptWithoutJavaStack, kept),
    ] {
        let want_kept = class == DropClass::KeptWithoutJavaStack;
        let rows: Vec<(Cow<str>, u64)> =
            rec.drops.iter().filter(|(r, n)| *n > 0 && r.class() == class).map(|(r, n)| (r.label(), *n)).collect();
        let _ = writeln!(out, "\n== {title} ==");
        if rows.is_empty() {
            out.push_str("(none)\n");
            continue;
        }
        let width = rows.iter().map(|(r, _)| r.chars().count()).max().unwrap_or(0).max(6);
        let _ = writeln!(
            out,
            "{:<width$} {:>10} {:>12}",
            "reason",
            "samples",
            if want_kept { "% taken" } else { "% attempted" }
        );
        let base = if want_kept { taken } else { attempted };
        for (reason, n) in &rows {
            let _ = writeln!(out, "{:<width$} {:>10} {:>12}", reason, group(*n), pct(*n, base));
        }
        let _ = writeln!(out, "{:<width$} {:>10} {:>12}", "total", group(sum), pct(sum, base));
    }
    if partial > 0 {
        let _ = writeln!(out, "\n== Samples with the top of their Java stack only ==");
        let _ = writeln!(out, "{:<32} {:>10} {:>12}", "walk stopped at", "samples", "% taken");
        for (r, n) in rec.drops.iter().filter(|(r, _)| r.class() == DropClass::Partial) {
            let _ = writeln!(out, "{:<32} {:>10} {:>12}", r.label(), group(*n), pct(*n, taken));
        }
    }
    if rec.drops_of(DropClass::NotPushed) > 0 {
        let _ = writeln!(out, "\n== Samples in the profile, not delivered to the push's backend ==");
        for (r, n) in rec.drops.iter().filter(|(r, _)| r.class() == DropClass::NotPushed) {
            let _ = writeln!(out, "{:<48} {:>10} {:>12}", r.label(), group(*n), pct(*n, taken));
        }
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
