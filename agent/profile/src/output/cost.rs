//! The agent's own cost, as the session's summary states it: filled by the agent's processing
//! thread from its clocks and counters, rendered here as the summary's `hpm:` lines.

/// Where the processing thread's CPU went (ns of its thread clock).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Processing {
    /// All of it, at the end.
    pub cpu_ns: u64,
    /// When sampling began.
    pub started_ns: u64,
    /// When the last sample was resolved (0 while not yet).
    pub resolved_ns: u64,
    /// Reading what a process reads once (symbol tables, every jmethodID's slot), in all.
    pub once_ns: u64,
    /// Of which, read before sampling began.
    pub once_at_start_ns: u64,
    /// JFR chunks written while sampling, and the CPU they took.
    pub early_chunks: u64,
    pub early_chunks_ns: u64,
}

/// What the signal handler did (the session's signal statistics).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Handler {
    /// Samples taken, and the sampling period (ns when `timed`).
    pub samples: u64,
    pub period: u64,
    pub timed: bool,
    pub handler_ns: u64,
    /// Handlers preempted (other threads ran meanwhile), and their time, not counted.
    pub descheduled: u64,
    pub descheduled_ns: u64,
    /// Code blobs the walker looked up, and found in the thread's last walk or the shared cache.
    pub blob_lookups: u64,
    pub blob_memo_hits: u64,
    pub blob_hits: u64,
    /// `data`: instructions captured in the handler and the time that took.
    pub data_captures: u64,
    pub data_ns: u64,
}

/// A bound that was reached: how many samples (or methods) it cut.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bounds {
    /// Methods met past the method table's bound, and the bound.
    pub methods_past: u64,
    pub max_methods: usize,
    pub method_table_full: &'static str,
    /// Samples past the stack table's bound, and its bounds.
    pub table_cut: u64,
    pub max_table_entries: usize,
    pub max_table_frames: usize,
    pub stack_table_full: &'static str,
    /// Samples past the tree's bound, and the bound.
    pub tree_cut: u64,
    pub max_tree_nodes: usize,
    pub tree_full: &'static str,
}

/// The agent's cost for one session, with the lines other parts made (each `None` when they
/// have nothing to say), in the order the summary prints them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostReport {
    pub handler: Handler,
    pub processing: Processing,
    /// Distinct stacks and first sightings; the resolver's phase timing (with samples only).
    pub first_sightings: Option<String>,
    pub phase_timing: Option<String>,
    /// The JVM events' line; the signals' line.
    pub events: Option<String>,
    pub signals: Option<String>,
    /// Native stacks (`cstack=`): the unwind tables and where native unwinding stopped.
    pub native: Option<String>,
    /// Records resolved after later ones, and how long samples wait to be resolved (ms).
    pub late: u64,
    pub settle_ms: u64,
    pub bounds: Bounds,
    /// `stack=compare`'s line; `data`'s line; the objects' line.
    pub compare: Option<String>,
    pub data: Option<String>,
    pub objects: Option<String>,
    /// `data`: translation of addresses to objects (ns in all, addresses).
    pub translate_ns: u64,
    pub translated: u64,
    /// Frames of hpm's walker whose Method* matched no jmethodID.
    pub unnamed_frames: u64,
    /// Compiled code's instructions held for `hpm report --instructions`, the budget, and the
    /// methods not copied.
    pub code_held: usize,
    pub code_budget: usize,
    pub code_not_copied: u64,
}

impl CostReport {
    /// The summary's lines, each `hpm: ...` and a newline.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in self.lines() {
            out.push_str("hpm: ");
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// The summary's lines, without their `hpm: `.
    pub fn lines(&self) -> Vec<String> {
        let h = &self.handler;
        let mut lines = vec![self.cpu_line()];
        if h.samples > 0 {
            lines.extend(self.first_sightings.clone());
            lines.extend(self.phase_timing.clone());
        }
        lines.extend(self.events.clone());
        lines.extend(self.signals.clone());
        lines.extend(self.native.clone());
        if self.late > 0 {
            lines.push(format!(
                "late records: {} reached the processing thread after later ones were resolved (more than {} ms \
                 after they were taken) and were placed by the code map as it stood then: a compiled frame whose code \
                 was unloaded in between is left unnamed, or misnamed where other code took its place",
                self.late, self.settle_ms
            ));
        }
        let b = &self.bounds;
        if b.methods_past > 0 {
            lines.push(format!(
                "the method table reached its bound of {} methods: methods new after it (met {} times) are `{}` in \
                 every output",
                b.max_methods, b.methods_past, b.method_table_full
            ));
        }
        if b.table_cut > 0 {
            lines.push(format!(
                "the stack table (pprof, JSON) reached its bound of {} stacks or {} frames: {} samples there have the \
                 one frame `{}` (the JFR output keeps their stacks)",
                b.max_table_entries, b.max_table_frames, b.table_cut, b.stack_table_full
            ));
        }
        if b.tree_cut > 0 {
            lines.push(format!(
                "the calling context tree reached its bound of {} nodes: {} samples' stacks end in `{}` below their \
                 last frame the tree had, in the collapsed stacks, flame graphs and summary (the JFR output keeps them \
                 whole); shorter sessions keep every path",
                b.max_tree_nodes, b.tree_cut, b.tree_full
            ));
        }
        lines.extend(self.compare.clone());
        lines.extend(self.data.clone());
        lines.extend(self.objects.clone());
        if h.data_captures > 0 {
            lines.push(format!(
                "data cost: capture {:.2} us per sample in the handler ({} samples), translation {:.2} us per address",
                h.data_ns as f64 / 1e3 / h.data_captures as f64,
                h.data_captures,
                self.translate_ns as f64 / 1e3 / self.translated.max(1) as f64
            ));
        }
        if self.unnamed_frames > 0 {
            lines.push(format!(
                "{} frames of hpm's walker left out: their Method* matched no jmethodID the agent knows",
                self.unnamed_frames
            ));
        }
        lines.push(format!(
            "compiled code: {:.1} MB of instructions held for `hpm report --instructions` ({} MB at most){}",
            self.code_held as f64 / (1 << 20) as f64,
            self.code_budget >> 20,
            if self.code_not_copied > 0 {
                format!(", {} methods not copied", self.code_not_copied)
            } else {
                String::new()
            }
        ));
        lines
    }

    /// `agent CPU ...`: the handler's and the processing thread's CPU, the latter by phase.
    fn cpu_line(&self) -> String {
        let (h, p) = (&self.handler, &self.processing);
        let sampled_ms = h.samples as f64 * h.period as f64 / 1e6;
        let handler_ms = h.handler_ns as f64 / 1e6;
        let total_ms = handler_ms + p.cpu_ns as f64 / 1e6;
        let share = if h.timed && sampled_ms > 0.0 {
            format!(" ({:.2}% of the sampled CPU time)", total_ms / sampled_ms * 100.0)
        } else {
            String::new()
        };
        let samples = h.samples.max(1) as f64;
        let processing_ms = p.cpu_ns as f64 / 1e6;
        let (start_ns, resolved_ns) = (p.started_ns, p.resolved_ns);
        let start_ms = start_ns.min(p.cpu_ns) as f64 / 1e6;
        let early_ns = p.early_chunks_ns.min(resolved_ns.saturating_sub(start_ns));
        let writing_ms = (p.cpu_ns.saturating_sub(resolved_ns) + early_ns) as f64 / 1e6;
        let early = if p.early_chunks > 0 {
            format!(" ({:.0} ms of it in {} JFR chunks written while sampling)", early_ns as f64 / 1e6, p.early_chunks)
        } else {
            String::new()
        };
        // What was read once per process while resolving (a library first seen) is not a
        // sample's cost either.
        let once_later = p.once_ns.saturating_sub(p.once_at_start_ns);
        let resolving_ms =
            resolved_ns.saturating_sub(start_ns).saturating_sub(once_later).saturating_sub(early_ns) as f64 / 1e6;
        let once_ms = p.once_ns.min(p.cpu_ns) as f64 / 1e6;
        let once = if once_ms >= 0.5 {
            format!(", {once_ms:.0} ms of it reading symbol tables and method ids once per process")
        } else {
            String::new()
        };
        let per_sample = if h.samples > 0 {
            format!("; per sample {:.1} + {:.1} us", handler_ms * 1e3 / samples, resolving_ms * 1e3 / samples)
        } else {
            String::new()
        };
        let cached = if h.blob_lookups > 0 {
            let share = |n: u64| n as f64 * 100.0 / h.blob_lookups as f64;
            format!(
                "; code blobs the walker looked up found in the thread's last walk {:.0}%, in the shared cache {:.0}%",
                share(h.blob_memo_hits),
                share(h.blob_hits)
            )
        } else {
            String::new()
        };
        let preempted = if h.descheduled > 0 {
            format!(
                " (and {:.0} ms in {} handlers preempted, not counted: other threads ran)",
                h.descheduled_ns as f64 / 1e6,
                h.descheduled
            )
        } else {
            String::new()
        };
        format!(
            "agent CPU {total_ms:.0} ms{share}: signal handler {handler_ms:.0} ms{preempted}, processing \
             {processing_ms:.0} ms ({start_ms:.0} ms starting, {resolving_ms:.0} ms resolving, {writing_ms:.0} ms making \
             the outputs{early}{once}){per_sample}{cached}"
        )
    }
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
