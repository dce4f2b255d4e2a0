//! An event source's own records, fed to the processor: a source whose events are not
//! `Captured` records in the sample pool (the JVM's `alloc` and `lock` events, queued by their
//! callbacks) gives the processor an [`EventFeed`]. Each round, and once more in the last one,
//! the processor lends it a [`FeedCtx`]: the feed resolves its pending events' stacks through
//! the session's resolver into the recording, and hands the sinks what they should count. The
//! processor knows no more of a feed than this trait, so a new source with records of its own
//! plugs in without editing it.

use hpm_profile::interned::StackInterner;
use hpm_profile::model::{DropReason, Recording, Sample};
use hpm_resolve::resolve::{JavaMethods, SampleResolver};

/// What a feed works with while it drains: the processor's parts, lent for one call.
pub struct FeedCtx<'a> {
    /// When the session started: events stamped before it are not the session's.
    pub start_ticks: u64,
    pub resolver: &'a mut SampleResolver,
    pub methods: &'a mut dyn JavaMethods,
    /// The chunk being made: the feed's events join it.
    pub rec: &'a mut Recording,
    /// Gives the profile sinks (tree, stack table, tuner) a sample, named with the recording's
    /// tables and the resolver's stacks.
    pub sinks: &'a mut dyn FnMut(&Sample, &Recording, &StackInterner),
}

/// A source's records as the processor drains them.
pub trait EventFeed: Send {
    /// Takes the events pending since the last call into `ctx`'s recording.
    fn drain(&mut self, ctx: &mut FeedCtx<'_>);
    /// The events taken so far, whose stacks the resolver named (for the summary's count of
    /// stacks first seen).
    fn records(&self) -> u64;
    /// Adds its drop reasons, with their counts, for the summary and the recording.
    fn drops(&self, _drops: &mut Vec<(DropReason, u64)>) {}
    /// The summary's line for its events, if it has one.
    fn line(&self) -> Option<String> {
        None
    }
}
