//! `sampler=chain`'s stack completer: each resolved record's frames keyed by their stack
//! depths (`hpm_profile::analysis::chaining`), the samples held until the last round, and there
//! their stacks completed from the run's tree (the processor then rebuilds the outputs' tree
//! and tables from them).

use hpm_capture::capture::Captured;
use hpm_capture::hotspot::Stop;
use hpm_profile::analysis::chaining::{ChainRecorder, Top, Walk};
use hpm_profile::interned::StackInterner;
use hpm_profile::model::{DropReason, Sample};
use hpm_resolve::resolve::FrameGroups;

use crate::complete::StackCompleter;

/// Samples held for completion at most (about 400 MB); past it the session's JFR chunks are
/// written as usual and no stack is completed (said once).
const MAX_HELD: usize = 4 << 20;

#[derive(Default)]
pub(super) struct ChainCompleter {
    rec: ChainRecorder,
    /// The outermost key of each held sample (`Recording::samples`, same index).
    tops: Vec<Top>,
    /// The last observed record's (the kernel-time sample added before it gets none).
    next: Top,
    phys: Vec<u32>,
    abandoned: bool,
    /// Samples whose walk ended with the stack copy (before completion).
    ended_in_copy: u64,
    quiet: bool,
}

impl ChainCompleter {
    pub(super) fn new(quiet: bool) -> ChainCompleter {
        ChainCompleter { quiet, ..Default::default() }
    }

    /// Keys the frames of one resolved record; `None` for an anchor (structure only, not a
    /// sample), else the sample's outermost key (none when its walk reached the stack's
    /// bottom: complete already).
    fn key(&mut self, s: &Sample, c: &Captured, groups: Option<&FrameGroups>) -> Option<Top> {
        let raw = c.raw_walk();
        let physical = raw.map_or(0, |(_, frames, slots)| hpm_capture::hotspot::raw_frames(frames, slots).count());
        self.phys.clear();
        self.phys.extend((0..physical).map(|j| c.chain.depths.get(j).copied().unwrap_or(0)));
        let top = match (groups, raw) {
            (Some(g), Some(_)) => {
                let walk = Walk { first: g.first, groups: &g.sizes, phys: &self.phys };
                self.rec.observe(&s.stack, walk, c.chain.anchor)
            }
            _ => None,
        };
        if c.chain.anchor {
            return None;
        }
        let stop = raw.map_or(0, |(w, ..)| w.stop);
        self.ended_in_copy += u64::from(stop == Stop::Lost as u8);
        Some(if stop == Stop::Bottom as u8 { None } else { top })
    }

    /// Samples with the top of their stack only: the walk ended with the copy and the tree
    /// gave no caller (all of them until the last round completes them).
    fn partial(&self) -> u64 {
        self.ended_in_copy.saturating_sub(self.rec.counts.completed)
    }

    /// One summary line with the paper's Table 1.
    fn print_counts(&self) {
        let c = &self.rec.counts;
        let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
        // The paper's Table 1, over the leaf events alone (what CallerChaining without the
        // walks of the copies knows).
        let table = match self.rec.tree() {
            Ok((_, t)) => format!(
                "tree of {} nodes over {} methods, {} with several callers at the same depth; leaf events' \
                 callers unique for 1 level {:.1}%, for 3 levels {:.1}%",
                t.nodes,
                t.methods,
                t.ambiguous_nodes,
                pct(t.unique_1, t.events),
                pct(t.unique_3, t.events)
            ),
            Err(e) => format!("no tree statistics: {e}"),
        };
        eprintln!(
            "hpm: callerchain: {} of {} samples keyed by (method, stack depth), {} anchors; {table} (Table 1); \
             {} stacks completed by their hottest callers",
            c.keyed, c.samples, c.anchors, c.completed
        );
        if c.misaligned > 0 || c.edges_dropped > 0 {
            eprintln!(
                "hpm: callerchain: {} samples not keyed (frames not named as walked), {} edges not kept",
                c.misaligned, c.edges_dropped
            );
        }
    }
}

impl StackCompleter for ChainCompleter {
    fn needs_frame_groups(&self) -> bool {
        true
    }

    fn observe(&mut self, s: &Sample, c: &Captured, groups: Option<&FrameGroups>) -> bool {
        match self.key(s, c, groups) {
            Some(top) => {
                self.next = top;
                true
            }
            None => false,
        }
    }

    fn held(&mut self, len: usize, own: bool) {
        self.tops.resize(len.saturating_sub(1), None);
        self.tops.push(if own { self.next.take() } else { None });
    }

    /// Held samples wait to enter the tree until they are completed (or read), unless
    /// completion was given up.
    fn holds(&self) -> bool {
        !self.abandoned
    }

    /// Only past [`MAX_HELD`], which ends completion for the session.
    fn may_flush(&mut self, held: usize) -> bool {
        if held < MAX_HELD {
            return false;
        }
        if !self.abandoned {
            eprintln!(
                "hpm: sampler=chain: more than {MAX_HELD} samples held; their stacks are written as walked \
                 (not completed from the tree) from now on"
            );
        }
        self.abandoned = true;
        true
    }

    fn flushed(&mut self) {
        self.tops.clear();
    }

    /// The run's tree from its quadruples, each held sample's stack completed above its
    /// outermost frame; one summary line with the paper's Table 1.
    fn complete(&mut self, samples: &mut [Sample]) -> bool {
        if self.abandoned {
            return false;
        }
        let mut interner = StackInterner::default();
        for (s, &top) in samples.iter_mut().zip(&self.tops) {
            if let Some(frames) = self.rec.complete(&s.stack, top) {
                s.stack = interner.intern(&frames);
            }
        }
        if !self.quiet {
            self.print_counts();
        }
        true
    }

    /// The walks end where the stack copy does: their `frame_lost` is counted as the samples
    /// the completion gave no caller.
    fn drops(&self, drops: &mut Vec<(DropReason, u64)>) {
        // The walks end where the stack copy does: counted as the completion's, not the walker's.
        drops.retain(|(reason, _)| !matches!(reason, DropReason::WalkStopped(r) if r == "frame_lost"));
        drops.push((DropReason::StackCopyEnded, self.partial()));
    }
}
