//! The calling context tree and the stack table (`hpm_profile::tree_feed`), bounded: every output
//! but JFR, the summary and the live queries read them.

use hpm_profile::cct::Cct;
use hpm_profile::model::{Recording, Sample};
use hpm_profile::output::format::BuiltFrom;
use hpm_profile::output::stacks::StackTable;
use hpm_profile::tree_feed::TreeFeed;

use super::{Named, ProfileSink};
use crate::processor::{Inputs, Output};

/// Nodes the session's calling context tree makes for frames at most (its nodes are ~128
/// bytes, with their memos here a few hundred): a session that meets new stacks for as long as
/// it runs (code generated all the time, a compiler's varied recursion) would otherwise grow
/// the tree without end. Past it, new paths end in a `[tree full]` node (`Cct::with_limit`);
/// the JFR output keeps their stacks whole.
pub(crate) const MAX_TREE_NODES: usize = 1 << 18;

/// Entries and frames of the session's stack table at most (pprof, JSON: a stack's entry holds
/// its frames twice, 8 bytes each, so 64 MB at most): past them a new stack is entered as one
/// `[stack table full]` frame (`StackTable::with_limit`).
pub(crate) const MAX_TABLE_ENTRIES: usize = 1 << 17;
pub(crate) const MAX_TABLE_FRAMES: usize = 4 << 20;

/// The session's tree and table, with their memos.
pub(in crate::processor) struct TreeSink {
    pub feed: TreeFeed,
}

impl TreeSink {
    /// The table is kept (filled) for `data`, for a source's stack completer (`completed`:
    /// `sampler=chain`) and for a pprof or JSON output among `outputs` (see [`TreeFeed`]).
    pub(in crate::processor) fn new(
        inputs: &Inputs,
        rec: &mut Recording,
        outputs: &[Output],
        completed: bool,
    ) -> TreeSink {
        let keep_table =
            inputs.opts.data || completed || outputs.iter().any(|o| o.format.built_from() == BuiltFrom::Table);
        let stacks = new_table(rec, keep_table);
        TreeSink { feed: TreeFeed::new(new_tree(rec), stacks, keep_table, inputs.opts.per_thread) }
    }
}

impl ProfileSink for TreeSink {
    fn add(&mut self, s: &Sample, named: &Named<'_>) {
        self.feed.add(s, named.rec, named.interner);
    }

    /// Starts the tree and the stack table again, empty, with every memo of their nodes and
    /// entries.
    fn restart(&mut self, rec: &mut Recording) {
        let stacks = new_table(rec, self.feed.keeps_table());
        self.feed.reset(new_tree(rec), stacks);
    }
}

/// The session's calling context tree, bounded.
fn new_tree(rec: &Recording) -> Cct {
    Cct::with_limit(rec.counters.clone(), MAX_TREE_NODES)
}

/// The session's stack table: bounded when the session fills it (`keep_table`).
fn new_table(rec: &mut Recording, keep_table: bool) -> StackTable {
    if !keep_table {
        return StackTable::default();
    }
    let full =
        rec.methods.intern(hpm_profile::model::MethodInfo::native(hpm_profile::output::stacks::STACK_TABLE_FULL));
    StackTable::with_limit(hpm_profile::output::stacks::TableLimit {
        entries: MAX_TABLE_ENTRIES,
        frames: MAX_TABLE_FRAMES,
        full,
    })
}
