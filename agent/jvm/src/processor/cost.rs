//! The processor's part of the agent's cost: its own CPU by phase, and the
//! [`CostReport`] filled from it, the signal handler's statistics and the other parts' lines.

use std::sync::atomic::Ordering;

use hpm_profile::codemap::CodeBytes;
use hpm_profile::model::{PeriodUnit, Recording};
use hpm_profile::output::cost::{Bounds, CostReport, Handler, Processing};
use hpm_profile::tree_feed::TreeFeed;
use hpm_resolve::resolve::SampleResolver;

use super::intake::{Intake, SETTLE_NS};
use super::sinks::tree::{MAX_TABLE_ENTRIES, MAX_TABLE_FRAMES, MAX_TREE_NODES};
use super::{Inputs, MAX_SESSION_METHODS};
use crate::feed::EventFeed;
use crate::methods::JvmtiMethods;
use crate::signal::SignalStats;

/// The processing thread's CPU (its thread clock, ns) by phase.
#[derive(Default)]
pub(super) struct CostClock {
    /// All of it, at the end.
    pub cpu_ns: u64,
    /// The thread's CPU when sampling began and when the last sample was resolved: the
    /// processing before the samplers ran, resolving their samples, and making the outputs
    /// (a stack completer's work included).
    pub phase_ns: [u64; 2],
    /// Of which, reading what a process reads once (symbol tables, every jmethodID's slot)
    /// and later sessions reuse.
    pub once_ns: u64,
    /// Of which, read before sampling began.
    pub once_at_start: u64,
    /// Chunks written while sampling (every `flush` seconds, and `hpm dump`s) and the CPU they
    /// took: making the outputs, though before the last sample was resolved.
    pub early_chunks: u64,
    pub early_chunks_ns: u64,
}

/// CPU spent so far reading what a process reads once (symbol tables, every jmethodID).
pub(super) fn once_so_far(resolver: &SampleResolver, methods: Option<&JvmtiMethods>) -> u64 {
    resolver.tables_ns + methods.map_or(0, JvmtiMethods::first_pull_ns)
}

/// What the report is filled from besides the clock.
pub(super) struct Seen<'a> {
    pub inputs: &'a Inputs,
    pub resolver: &'a SampleResolver,
    pub rec: &'a Recording,
    pub tree: &'a TreeFeed,
    pub intake: &'a Intake,
    pub feeds: &'a [Box<dyn EventFeed>],
}

impl CostClock {
    /// The session's cost report. Reads (and resets) the resolver's phase timing: once.
    pub(super) fn report(&self, seen: Seen<'_>) -> CostReport {
        let Seen { inputs, resolver, rec, tree, intake, feeds } = seen;
        let stats = inputs.stats;
        let load = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
        let samples = load(&stats.samples);
        let mut report = CostReport {
            handler: Handler {
                samples,
                period: inputs.event.period,
                timed: inputs.event.unit == PeriodUnit::Nanoseconds,
                handler_ns: load(&stats.handler_ns),
                descheduled: load(&stats.descheduled),
                descheduled_ns: load(&stats.descheduled_ns),
                blob_lookups: load(&stats.blob_lookups),
                blob_memo_hits: load(&stats.blob_memo_hits),
                blob_hits: load(&stats.blob_hits),
                data_captures: load(&stats.data_captures),
                data_ns: load(&stats.data_ns),
            },
            processing: Processing {
                cpu_ns: self.cpu_ns,
                started_ns: self.phase_ns[0],
                resolved_ns: self.phase_ns[1],
                once_ns: self.once_ns,
                once_at_start_ns: self.once_at_start,
                early_chunks: self.early_chunks,
                early_chunks_ns: self.early_chunks_ns,
            },
            events: feeds.iter().filter_map(|f| f.line()).reduce(|a, b| format!("{a}; {b}")),
            signals: signal_line(stats, inputs.threads.signal()),
            native: crate::native_tables::line(stats),
            late: intake.late,
            settle_ms: SETTLE_NS / 1_000_000,
            bounds: Bounds {
                methods_past: rec.methods.past_limit(),
                max_methods: MAX_SESSION_METHODS,
                method_table_full: hpm_profile::model::METHOD_TABLE_FULL,
                table_cut: tree.stacks.cut_samples(),
                max_table_entries: MAX_TABLE_ENTRIES,
                max_table_frames: MAX_TABLE_FRAMES,
                stack_table_full: hpm_profile::output::stacks::STACK_TABLE_FULL,
                tree_cut: tree.cct.cut_samples(),
                max_tree_nodes: MAX_TREE_NODES,
                tree_full: hpm_profile::cct::TREE_FULL,
            },
            compare: resolver.stats.compare.line(),
            data: resolver.stats.data.line(),
            objects: resolver.objects().and_then(|o| o.stats.line()),
            translate_ns: resolver.objects().map_or(0, |o| o.stats.translate_ns),
            translated: resolver.objects().map_or(0, |o| o.stats.spaces.iter().sum::<u64>()),
            unnamed_frames: resolver.stats.unnamed_frames,
            code_held: CodeBytes::held(),
            code_budget: hpm_profile::codemap::CODE_BYTES_BUDGET,
            code_not_copied: CodeBytes::not_copied(),
            ..Default::default()
        };
        if samples > 0 {
            // The feeds' records (`alloc`, `lock`) have stacks named as the samples' are.
            let (stacks, events) = (resolver.stacks_made(), feeds.iter().map(|f| f.records()).sum());
            report.first_sightings = Some(resolver.stats.first_sightings_line(stacks, samples, events));
            report.phase_timing = hpm_profile::phase_timing::take_line(samples);
        }
        report
    }
}

/// The signal hpm sampled with and the signals that were not its own, when either is worth a
/// line: hpm moved, or samples with another signal than its first choice, or passed signals on.
fn signal_line(stats: &SignalStats, signal: i32) -> Option<String> {
    let (foreign, moves) = (stats.foreign.load(Ordering::Relaxed), stats.moves.load(Ordering::Relaxed));
    if stats.no_signal_left.load(Ordering::Relaxed) > 0 {
        return Some(format!(
            "signals: SAMPLING STOPPED before the end: after {moves} moves no signal of {} was free; the profile \
             covers the time before only; {foreign} signals that were not hpm's ignored",
            crate::signal::SAMPLE_SIGNALS.map(crate::signal::signal_name).join(", ")
        ));
    }
    let first = crate::signal::SAMPLE_SIGNALS[0];
    if stats.signals.load(Ordering::Relaxed) == 0 && foreign == 0 && moves == 0 {
        return None;
    }
    if foreign == 0 && moves == 0 && signal == first {
        return None;
    }
    let why = if moves > 0 {
        let times = if moves == 1 { "once".to_string() } else { format!("{moves} times") };
        format!(", moved {times} (another handler took hpm's signal, or it was reset)")
    } else if signal != first {
        format!(" ({} has another handler)", crate::signal::signal_name(first))
    } else {
        String::new()
    };
    Some(format!(
        "signals: sampled with {}{why}; {foreign} signals that were not hpm's (kill, another profiler's perf \
         events) ignored",
        crate::signal::signal_name(signal)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary's signal line: quiet when nothing happened, the moves when hpm moved, and
    /// loud when sampling stopped for want of a free signal (the summary said 'none dropped').
    #[test]
    fn the_signal_line_says_when_sampling_stopped() {
        let first = crate::signal::SAMPLE_SIGNALS[0];
        let stats = SignalStats::default();
        stats.signals.store(100, Ordering::Relaxed);
        assert_eq!(signal_line(&stats, first), None);
        stats.moves.store(2, Ordering::Relaxed);
        let moved = signal_line(&stats, crate::signal::SAMPLE_SIGNALS[1]).unwrap();
        assert!(moved.contains("sampled with SIGWINCH, moved 2 times"), "{moved}");
        stats.no_signal_left.store(1, Ordering::Relaxed);
        let stopped = signal_line(&stats, first).unwrap();
        assert!(stopped.starts_with("signals: SAMPLING STOPPED before the end: after 2 moves"), "{stopped}");
        stats.reset();
        assert_eq!(signal_line(&stats, first), None);
    }
}
