//! `sampler=chain` in the processor: each resolved record's frames keyed by their stack
//! depths (`hpm_core::analysis::chaining`), the samples held until the last round, and there
//! their stacks completed from the run's tree and the outputs' tree and tables rebuilt.

use hpm_core::analysis::chaining::{ChainRecorder, Top, Walk};
use hpm_core::capture::Captured;
use hpm_core::hotspot::Stop;
use hpm_core::interned::StackInterner;
use hpm_core::model::Sample;
use hpm_core::resolve::ChainGroups;

use super::Processor;

/// Samples held for completion at most (about 400 MB); past it the session's JFR chunks are
/// written as usual and no stack is completed (said once).
const MAX_HELD: usize = 4 << 20;

#[derive(Default)]
pub(super) struct ChainState {
    rec: ChainRecorder,
    /// The outermost key of each held sample (`Recording::samples`, same index).
    tops: Vec<Top>,
    /// The next added sample's (the kernel-time samples added before it get none).
    pub(super) next: Top,
    phys: Vec<u32>,
    abandoned: bool,
    /// Samples whose walk ended with the stack copy (before completion).
    ended_in_copy: u64,
    /// Held samples (a prefix) already in the calling context tree and stack table, as walked.
    in_tree: usize,
    /// Samples written (flushed) are in the tree as walked: the end cannot rebuild it.
    flushed_in_tree: bool,
}

impl ChainState {
    /// Keys the frames of one resolved record; `None` for an anchor (structure only, not a
    /// sample), else the sample's outermost key (none when its walk reached the stack's
    /// bottom: complete already).
    pub(super) fn observe(&mut self, s: &Sample, c: &Captured, groups: Option<&ChainGroups>) -> Option<Top> {
        let raw = c.raw_walk();
        let physical = raw.map_or(0, |(_, frames, slots)| hpm_core::hotspot::raw_frames(frames, slots).count());
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
    pub(super) fn partial(&self) -> u64 {
        self.ended_in_copy.saturating_sub(self.rec.counts.completed)
    }

    /// A sample was added: it is the `len`-th held (and in the tree if `in_tree`).
    pub(super) fn held(&mut self, len: usize, in_tree: bool) {
        self.tops.resize(len.saturating_sub(1), None);
        self.tops.push(self.next.take());
        if in_tree {
            self.in_tree = len;
        }
    }

    /// Whether held samples wait to enter the tree (until they are completed, or read).
    pub(super) fn defers_tree(&self) -> bool {
        !self.abandoned
    }

    /// Held samples already in the tree.
    pub(super) fn in_tree(&self) -> usize {
        self.in_tree
    }

    /// The first `n` held samples are in the tree.
    pub(super) fn tree_has(&mut self, n: usize) {
        self.in_tree = n;
    }

    /// Whether a periodic flush may write the held samples: only past [`MAX_HELD`], which ends
    /// completion for the session.
    pub(super) fn may_flush(&mut self, held: usize) -> bool {
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

    /// The held samples were written (after they entered the tree).
    pub(super) fn flushed(&mut self) {
        self.tops.clear();
        self.flushed_in_tree |= self.in_tree > 0;
        self.in_tree = 0;
    }
}

impl Processor {
    /// The last round: the run's tree from its quadruples, each held sample's stack completed
    /// above its outermost frame, the calling context tree and stack table rebuilt from them;
    /// one summary line with the paper's Table 1.
    pub(super) fn complete_chain(&mut self) {
        let Some(ch) = self.chain.as_mut() else { return };
        let quiet = self.inputs.opts.quiet;
        if ch.abandoned {
            return;
        }
        let mut interner = StackInterner::default();
        for (s, &top) in self.rec.samples.iter_mut().zip(&ch.tops) {
            if let Some(frames) = ch.rec.complete(&s.stack, top) {
                s.stack = interner.intern(&frames);
            }
        }
        if !quiet {
            let c = &ch.rec.counts;
            let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
            // The paper's Table 1, over the leaf events alone (what CallerChaining without the
            // walks of the copies knows).
            let table = match ch.rec.tree() {
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
        // Built from the completed samples; rebuilt if some were added as walked for a reader
        // (unless samples written before are in it: those stay as walked, and so do the held
        // ones already added with them).
        if !ch.flushed_in_tree {
            ch.in_tree = 0;
            self.reset_tree();
        }
        self.tree_catch_up();
    }
}
