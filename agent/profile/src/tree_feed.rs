//! A session's calling context tree and stack table, fed one resolved sample at a time: the
//! agent's processing thread adds each sample here as it resolves it (`sampler=chain`'s once
//! their stacks are completed) and each JVM event of a session without a CPU event, and the
//! outputs and live queries read the tree and the table.
//!
//! Each distinct stack is looked up by its frames once: its later samples go straight to its
//! leaf node and table entry, found by the shared stack's address ([`ByStack`]). A new stack
//! made above a shared stack of its callers ([`StackInterner::intern_above`]), as most new
//! stacks of hpm's walker are, is entered from the nearest of those bases that has a node, and
//! only its frames above that base are looked up; the bases it passes on the way learn their
//! nodes. Whatever the way in, a sample lands on the node its frames' names lead to from the
//! root (or, past the tree's bound, on the `[tree full]` node below the deepest of them the tree
//! has: [`Cct::with_limit`]), as [`Cct::add_sample`] would put it.

use crate::cct::{Cct, NodeId, PathHint};
use crate::hash::IntMap;
use crate::interned::{ByStack, StackInterner};
use crate::model::{Frame, Recording, Sample, StateIdx, VmComponent};
use crate::output::stacks::StackTable;
use crate::output::threads::SampledThreads;

/// Threads whose last new stack's path is kept at most ([`TreeFeed::path_hints`]).
const MAX_PATH_HINTS: usize = 1024;

/// Bases a new stack's tree entry passes at most looking for one with a node (a whole's base,
/// its callers, then the stack those were made above, ...).
const MAX_BASES_PASSED: usize = 8;

/// What the samples of a session add up to: its calling context tree and stack table, with the
/// memos that feed them.
pub struct TreeFeed {
    /// The calling context tree (self sums only until [`Cct::fill_totals`]).
    pub cct: Cct,
    /// Samples by exact stack (methods and lines), thread and component: the pprof and JSON
    /// outputs are built from it. Filled only when `keep_table`.
    pub stacks: StackTable,
    /// Samples per VM component, in the order first met.
    pub components: Vec<(VmComponent, u64)>,
    /// Samples per thread state (wall-clock samples have one), in the order first met.
    pub states: Vec<(StateIdx, u64)>,
    /// The threads with samples (the summary's `threads:` line).
    pub sampled_threads: SampledThreads,
    /// How the samples found their tree node (see [`Entered`]).
    pub entered: Entered,
    /// Whether `stacks` is filled: when a pprof or JSON output was asked for at the start, or
    /// with `data` (the table keys entries by data target too) or `sampler=chain` (which
    /// rebuilds it). A pprof or JSON dump of any other session is built from its JFR chunks,
    /// read back as `hpm convert` does: dumps are rare, and the table cost every sample ~5% of
    /// its processing.
    keep_table: bool,
    /// Each stack hangs below a `[thread name tid=N]` node.
    per_thread: bool,
    /// The tree's name id of each method (by method index), so the tree is fed without hashing
    /// names; emptied with the tree.
    name_ids: Vec<u32>,
    /// The tree's leaf node and the stack table's entry of each shared stack (with thread and
    /// component where they matter) already added.
    seen: ByStack<(NodeId, usize)>,
    /// The tree node of each shared stack met as the callers below a new stack's leaf frames
    /// ([`StackInterner::base_of`]), by the same key as `seen`: the next stack above them
    /// starts there.
    base_nodes: ByStack<NodeId>,
    /// Per thread, the path its last new stack took through the tree (emptied with the tree).
    path_hints: IntMap<u32, PathHint>,
}

/// How samples found their tree node: by their stack met before, above a base with a node,
/// or from the root (or their thread's root).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entered {
    pub known: u64,
    pub above: u64,
    pub root: u64,
}

impl TreeFeed {
    /// Feeds `cct` and `stacks` (the table only when `keep_table`); with `per_thread`, each
    /// stack below its thread's root.
    pub fn new(cct: Cct, stacks: StackTable, keep_table: bool, per_thread: bool) -> TreeFeed {
        TreeFeed {
            cct,
            stacks,
            components: Vec::new(),
            states: Vec::new(),
            sampled_threads: SampledThreads::default(),
            entered: Entered::default(),
            keep_table,
            per_thread,
            name_ids: Vec::new(),
            seen: ByStack::default(),
            base_nodes: ByStack::default(),
            path_hints: IntMap::default(),
        }
    }

    /// Whether the stack table is filled.
    pub fn keeps_table(&self) -> bool {
        self.keep_table
    }

    /// Starts again with `cct` and `stacks`, empty, with every memo of their nodes and entries
    /// (node ids of the old tree must not reach the new one).
    pub fn reset(&mut self, cct: Cct, stacks: StackTable) {
        *self = TreeFeed::new(cct, stacks, self.keep_table, self.per_thread);
    }

    /// Forgets which node each stack has (the nodes stay): a thread renamed hangs its stacks
    /// below a new per-thread root.
    pub fn forget_stacks(&mut self) {
        self.seen.clear();
        self.base_nodes.clear();
    }

    /// Adds a resolved sample of `rec` (whose method table names its frames) to the tree and the
    /// stack table; `bases` is the interner that made its stack (its bases are found there).
    pub fn add(&mut self, s: &Sample, rec: &Recording, bases: &StackInterner) {
        let n = s.repeats();
        match self.components.iter_mut().find(|(k, _)| *k == s.component) {
            Some(e) => e.1 += n,
            None => self.components.push((s.component, n)),
        }
        self.sampled_threads.mark(s.thread, rec);
        if let Some(state) = s.state {
            match self.states.iter_mut().find(|(k, _)| *k == state) {
                Some(e) => e.1 += n,
                None => self.states.push((state, n)),
            }
        }
        // The thread and component are part of the key only where the node or entry depends on
        // them (a tree with thread roots, the stack table): a program that starts a thread per
        // task (ecj's parser thread per compile) met every known stack anew in each. Not a
        // sample with a data target: the stack table keys its entries by the target's class
        // and field too.
        let extra = match (self.keep_table, self.per_thread) {
            (true, _) => u64::from(s.thread.0) | (s.component as u64) << 32,
            (false, true) => u64::from(s.thread.0),
            (false, false) => 0,
        };
        let memo = s.data.is_none();
        let timer = crate::phase_timing::Timer::start();
        if let Some((leaf, entry)) = self.seen.get(&s.stack, extra).filter(|_| memo) {
            self.entered.known += 1;
            self.cct.add_self_at(leaf, s.count(), s.weight, &s.counters);
            if self.keep_table {
                self.stacks.add_to(entry, s);
            }
            timer.stop(crate::phase_timing::Phase::TreeKnown);
            return;
        }
        // From the nearest base with a node, only the frames above it are looked up; the bases
        // passed on the way learn their nodes.
        let (seen, base_nodes) = (&self.seen, &self.base_nodes);
        let (found, passed) = bases.nearest_base(&s.stack, MAX_BASES_PASSED, |b| {
            seen.get(b, extra).map(|(n, _)| n).or_else(|| base_nodes.get(b, extra))
        });
        let above_callers = found.is_some();
        let leaf = match found {
            Some((b, node)) => {
                self.entered.above += 1;
                let above = &s.stack[..s.stack.len() - b.len()];
                self.name_frames(above, rec);
                self.cct.add_sample_above(node, above, &self.name_ids, s)
            }
            None => {
                self.entered.root += 1;
                self.name_frames(&s.stack, rec);
                let thread_root = self.per_thread.then(|| crate::cct::thread_frame_name(rec, s.thread));
                // A hint is a shortcut only: a process that starts thread after thread (the
                // soak test: 18,000 in a minute) would otherwise keep one per thread forever.
                if self.path_hints.len() >= MAX_PATH_HINTS && !self.path_hints.contains_key(&s.thread.0) {
                    self.path_hints.clear();
                }
                let hint = self.path_hints.entry(s.thread.0).or_default();
                self.cct.add_sample_ids(s, thread_root.as_deref(), &self.name_ids, hint)
            }
        };
        // A path cut at the tree's bound ends above its depth: its ancestors are not its bases'
        // nodes.
        if !self.cct.is_cut(leaf) {
            for b in &passed {
                let node = self.cct.ancestor(leaf, s.stack.len() - b.len());
                self.base_nodes.insert(b, extra, node);
            }
        }
        let entry = if self.keep_table {
            let e = self.stacks.entry(s);
            self.stacks.add_to(e, s);
            e
        } else {
            usize::MAX
        };
        if memo {
            self.seen.insert(&s.stack, extra, (leaf, entry));
        }
        timer.stop(if above_callers {
            crate::phase_timing::Phase::TreeAbove
        } else {
            crate::phase_timing::Phase::TreeNew
        });
    }

    /// Gives the tree's name id to each method of `frames` that has none yet: only the methods
    /// the session's samples use (the method table starts with the earlier sessions').
    fn name_frames(&mut self, frames: &[Frame], rec: &Recording) {
        let len = rec.methods.len();
        if self.name_ids.len() < len {
            self.name_ids.resize(len, u32::MAX);
        }
        for f in frames {
            if let Some(id) = self.name_ids.get_mut(f.method.0 as usize).filter(|id| **id == u32::MAX) {
                *id = self.cct.name_id(&rec.method(f.method).display_name());
            }
        }
    }
}

#[cfg(test)]
#[path = "tree_feed_tests.rs"]
mod tests;
