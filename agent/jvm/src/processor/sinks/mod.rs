//! Where resolved samples go: each profile sink is one implementation of [`ProfileSink`] in a
//! module of its own, all of them listed in [`Sinks::new`]. The processor hands every sink the
//! same calls in the same order and does not ask which sinks there are; the outputs read the
//! two that hold the profile (the tree and the JFR chunks) by name.
//!
//! The session's last chunk goes in two steps: first to the sinks beside the files, which then
//! end ([`ProfileSink::end`]: the push delivers or gives up), then, the session's drops updated
//! with what those lost, to the tree and the JFR chunks, whose last chunk carries them.

use hpm_profile::interned::StackInterner;
use hpm_profile::jfr::marks::Mark;
use hpm_profile::jfr::writer::ChunkTimes;
use hpm_profile::model::{DropReason, Recording, Sample};

use super::{Inputs, Output, Written};

pub(super) mod jfr;
pub(super) mod push;
pub(super) mod tree;
pub(super) mod tuner;

/// A consumer of the session's resolved samples. Every method has a default that does nothing:
/// a sink implements the moments it cares about.
pub(super) trait ProfileSink: Send {
    /// Each record's own sample as it is resolved, in time order, before it joins the
    /// profile; its stack as walked (a stack completer may still add callers above its
    /// outermost frame, never change its leaf). The sink may change the recording's event.
    fn observe(&mut self, _s: &Sample, _rec: &mut Recording) {}
    /// A sample joins the profile with its stack final (the recording's samples, the kernel
    /// time counted for them, and the JVM events of a session without a CPU event).
    fn add(&mut self, _s: &Sample, _named: &Named<'_>) {}
    /// A chunk ends: the recording's samples, events and code since the last one, with `marks`.
    fn flush(&mut self, _chunk: &Chunk<'_>) {}
    /// The session's last chunk was flushed to it: a sink that delivers beside the session's
    /// files stops here, before the files' last chunk is written (what it lost is then in the
    /// drops that chunk carries); later flushes (dumps after stop) are not for it.
    fn end(&mut self) {}
    /// The samples added so far come again (their stacks completed): forget them.
    fn restart(&mut self, _rec: &mut Recording) {}
    /// The session ends: the sink's files are completed, said in `written`.
    fn finish(&mut self, _written: &mut Written) {}
    /// Adds the samples the sink lost, by reason, to the session's drops.
    fn drops(&self, _drops: &mut Vec<(DropReason, u64)>) {}
}

/// What the samples' indexes name: the recording's tables and the stacks' interner.
pub(super) struct Named<'a> {
    pub rec: &'a Recording,
    pub interner: &'a StackInterner,
}

/// One chunk of the session: its samples are `rec.samples`.
pub(super) struct Chunk<'a> {
    pub rec: &'a Recording,
    pub marks: &'a [Mark],
    pub times: ChunkTimes,
}

/// The session's sinks: the calling context tree and the JFR chunks, which the outputs read,
/// and the others.
pub(super) struct Sinks {
    pub tree: tree::TreeSink,
    pub jfr: jfr::JfrSink,
    others: Vec<Box<dyn ProfileSink>>,
}

impl Sinks {
    /// The session's sinks; `outputs` are split between the JFR sink (its files grow from now
    /// on) and the ones written at the end, returned.
    /// `completed`: a stack completer holds the session's samples until the end.
    pub(super) fn new(
        inputs: &Inputs,
        rec: &mut Recording,
        outputs: Vec<Output>,
        completed: bool,
    ) -> (Sinks, Vec<Output>) {
        let (jfr, rest) = jfr::JfrSink::new(inputs, outputs);
        let tree = tree::TreeSink::new(inputs, rec, &rest, completed);
        let mut others: Vec<Box<dyn ProfileSink>> = Vec::new();
        others.extend(tuner::TunerSink::new(inputs).map(|t| Box::new(t) as Box<dyn ProfileSink>));
        others.extend(push::PushSink::new(inputs).map(|p| Box::new(p) as Box<dyn ProfileSink>));
        (Sinks { tree, jfr, others }, rest)
    }

    /// The session's last chunk to the sinks beside the files, which then end; the caller
    /// updates the drops, then gives the chunk to [`Sinks::flush_files`].
    pub(super) fn end_beside(&mut self, chunk: &Chunk<'_>) {
        for k in &mut self.others {
            k.flush(chunk);
            k.end();
        }
    }

    /// The session's last chunk to the tree and the JFR chunks (after [`Sinks::end_beside`]).
    pub(super) fn flush_files(&mut self, chunk: &Chunk<'_>) {
        self.tree.flush(chunk);
        self.jfr.flush(chunk);
    }

    fn all(&mut self) -> impl Iterator<Item = &mut dyn ProfileSink> {
        let named: [&mut dyn ProfileSink; 2] = [&mut self.tree, &mut self.jfr];
        named.into_iter().chain(self.others.iter_mut().map(|s| s.as_mut() as &mut dyn ProfileSink))
    }
}

impl ProfileSink for Sinks {
    fn observe(&mut self, s: &Sample, rec: &mut Recording) {
        self.all().for_each(|k| k.observe(s, rec));
    }

    fn add(&mut self, s: &Sample, named: &Named<'_>) {
        self.all().for_each(|k| k.add(s, named));
    }

    fn flush(&mut self, chunk: &Chunk<'_>) {
        self.all().for_each(|k| k.flush(chunk));
    }

    fn restart(&mut self, rec: &mut Recording) {
        self.all().for_each(|k| k.restart(rec));
    }

    fn finish(&mut self, written: &mut Written) {
        self.all().for_each(|k| k.finish(written));
    }

    fn drops(&self, drops: &mut Vec<(DropReason, u64)>) {
        self.tree.drops(drops);
        self.jfr.drops(drops);
        self.others.iter().for_each(|k| k.drops(drops));
    }
}
