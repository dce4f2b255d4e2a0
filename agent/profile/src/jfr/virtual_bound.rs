//! How many virtual threads the reader keeps apart. The JDK records every virtual thread a
//! program starts, millions of them maybe (and a hostile file may name as many): past
//! [`MAX_VIRTUAL_THREADS`] each further one is charged to [`ThreadInfo::other_virtual`], as
//! the agent does, and the reader's notes say how many.

use crate::model::ThreadInfo;
use crate::vthreads::{MAX_VIRTUAL_THREADS, OTHER_VIRTUAL_THREADS};

/// A thread's key in the reader's list: OS thread id, Java id, virtual.
pub(super) type ThreadKey = (u64, u64, bool);

/// The key of [`ThreadInfo::other_virtual`] (it has neither id).
const OTHER_KEY: ThreadKey = (0, 0, true);

pub(super) struct VirtualBound {
    max: usize,
    kept: usize,
    /// Virtual threads charged to the shared entry, once per chunk naming them (a thread
    /// merged is not remembered: that would be the unbounded map again).
    merged: u64,
}

impl Default for VirtualBound {
    fn default() -> Self {
        VirtualBound::with_max(MAX_VIRTUAL_THREADS)
    }
}

impl VirtualBound {
    /// At most `max` virtual threads apart ([`MAX_VIRTUAL_THREADS`] but in tests).
    pub(super) fn with_max(max: usize) -> Self {
        VirtualBound { max, kept: 0, merged: 0 }
    }

    /// The key and entry of a thread not listed yet: its own, or for a virtual thread past the
    /// bound the shared entry's.
    pub(super) fn admit(&mut self, key: ThreadKey, info: ThreadInfo) -> (ThreadKey, ThreadInfo) {
        if !info.is_virtual || info.is_virtual_group() {
            return (key, info);
        }
        if self.kept < self.max {
            self.kept += 1;
            return (key, info);
        }
        self.merged = self.merged.saturating_add(1);
        (OTHER_KEY, ThreadInfo::other_virtual())
    }

    /// For the reader's notes: how many virtual threads went to the shared entry, if any.
    pub(super) fn note(&self) -> Option<String> {
        (self.merged > 0).then(|| {
            format!(
                "{} more virtual threads (counted once per chunk) charged to `{OTHER_VIRTUAL_THREADS}`: hpm keeps {} \
                 apart",
                crate::text::group(self.merged),
                crate::text::group(self.max as u64)
            )
        })
    }
}
