//! [`StackKind::SharedWithPrevious`]: a record of the same stay in the kernel as the walked
//! record before it on its thread has that record's user stack, kept per thread for it.

use super::*;

/// The Java frames of the walk `shared` (the thread's kept walk, taken), pushed onto `stack`.
pub(super) fn shared_stack(shared: Option<(u64, Vec<Frame>)>, stack: &mut Vec<Frame>) -> JavaStack {
    match shared {
        Some((_, frames)) => {
            stack.extend_from_slice(&frames);
            JavaStack::Found(None)
        }
        // Its walk was let go (a batch dropped between, or the bound met).
        None => JavaStack::Missing("coalesced_signal"),
    }
}

impl SampleResolver {
    /// Keeps `frames` for the records of `thread`'s signal that share them, used last at `time`.
    /// Past [`MAX_SHARED_WALKS`] threads, the walks older than [`SHARED_WALK_AGE_NS`] are
    /// dropped (left behind), and all of them if that leaves more than half: the next bound is
    /// then at least half the bound's inserts away, so the scans cost O(1) an insert. A walk
    /// dropped while still shared makes its next records `coalesced_signal`. `thread` has no
    /// entry here: its record took it (`resolve_with_deep`).
    pub(super) fn keep_shared_walk(&mut self, thread: ThreadIdx, time: u64, frames: Vec<Frame>) {
        let walks = &mut self.shared_walks;
        if walks.len() >= MAX_SHARED_WALKS {
            walks.retain(|_, (t, _)| time.saturating_sub(*t) < SHARED_WALK_AGE_NS);
            if walks.len() > MAX_SHARED_WALKS / 2 {
                walks.clear();
            }
        }
        walks.insert(thread, (time, frames));
    }
}
