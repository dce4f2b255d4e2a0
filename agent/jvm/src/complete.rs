//! A stack completer: a part that learns from the resolved records and, at the session's end,
//! completes the stacks of the samples it held (callers added above their outermost frame).
//! The event source whose stacks need one gives it to the processor
//! (`source::EventSource::completer`); `sampler=chain`'s is `source::chain::complete`.
//! While it holds samples, the sinks that need final stacks take them only when something
//! reads the profile or a chunk is written; the processor knows no more of it than this trait.

use hpm_capture::capture::Captured;
use hpm_profile::model::Sample;
use hpm_resolve::resolve::FrameGroups;

pub trait StackCompleter: Send {
    /// Whether the resolver must keep each walk's [`FrameGroups`] for [`Self::observe`].
    fn needs_frame_groups(&self) -> bool {
        false
    }
    /// One resolved record (`groups`: how its walk was named). False when it is no sample
    /// (structure for the completer only): it does not join the profile.
    fn observe(&mut self, s: &Sample, c: &Captured, groups: Option<&FrameGroups>) -> bool;
    /// A sample joined the recording: it is the `len`-th of the chunk; `own` when it is the
    /// last observed record's own sample (else one derived from it: kernel time).
    fn held(&mut self, len: usize, own: bool);
    /// Whether the samples wait for completion before the sinks that need final stacks
    /// take them.
    fn holds(&self) -> bool;
    /// Whether a periodic flush may write the held samples now (they are then written as
    /// walked).
    fn may_flush(&mut self, held: usize) -> bool;
    /// The chunk's samples were written.
    fn flushed(&mut self);
    /// The session's last round: completes the held samples' stacks (the chunk's `samples`);
    /// true when it did, and the sinks must take them again.
    fn complete(&mut self, samples: &mut [Sample]) -> bool;
    /// Edits the drop reasons for the summary (after the resolver's).
    fn drops(&self, drops: &mut Vec<(hpm_profile::model::DropReason, u64)>);
}
