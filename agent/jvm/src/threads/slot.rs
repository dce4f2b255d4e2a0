//! One profiled thread's slot: what the signal handler reads (ring, thread index, batch queue),
//! all atomics, in a pool that is never freed.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use hpm_core::batch::ThreadQueue;
use hpm_core::capture::Captured;

use crate::perf::RingPtr;

/// What the signal handler needs about one thread. Slots are never freed, only reused, so a
/// handler holding a reference can never see freed memory.
pub struct Slot {
    pub tid: AtomicI32,
    pub thread_idx: AtomicU32,
    pub queue: ThreadQueue<Captured>,
    /// Signal handlers inside this slot now; detach waits for zero before unmapping the ring.
    pub busy: AtomicU32,
    ring_meta: AtomicU64,
    ring_data: AtomicU64,
    ring_size: AtomicU64,
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            tid: AtomicI32::new(0),
            thread_idx: AtomicU32::new(0),
            queue: ThreadQueue::default(),
            busy: AtomicU32::new(0),
            ring_meta: AtomicU64::new(0),
            ring_data: AtomicU64::new(0),
            ring_size: AtomicU64::new(0),
        }
    }

    pub fn ring(&self) -> Option<RingPtr> {
        let meta = self.ring_meta.load(Ordering::Acquire);
        if meta == 0 {
            return None;
        }
        Some(RingPtr {
            meta: meta as *mut _,
            data: self.ring_data.load(Ordering::Relaxed) as *mut u8,
            size: self.ring_size.load(Ordering::Relaxed) as usize,
        })
    }

    pub(super) fn set_ring(&self, r: Option<RingPtr>) {
        match r {
            Some(r) => {
                self.ring_data.store(r.data as u64, Ordering::Relaxed);
                self.ring_size.store(r.size as u64, Ordering::Relaxed);
                self.ring_meta.store(r.meta as u64, Ordering::Release);
            }
            None => self.ring_meta.store(0, Ordering::Release),
        }
    }
}
