//! The hand-over between a signal handler and the thread that retires what the handler uses:
//! a profiled thread's slot (its perf ring, batch queue, session context) is
//! entered by that thread's handler and torn down by whoever detaches the thread.
//!
//! Both facts the two sides must see of each other — "the slot is live" and "a handler is
//! inside" — live in one atomic word, so there is no store-load race between two locations
//! (which acquire/release alone does not order): a handler enters with one compare-and-swap
//! that succeeds only while the slot is live; [`Claim::retire`] clears the live bit and then waits
//! until the count inside drops to zero. Every handler that got in finishes before `retire`
//! returns, and none gets in afterwards, so the slot's memory can be unmapped or reused then.
//! Handlers never block, so the wait is as short as one handler.

use crate::sync::{spin, AtomicU64, Ordering};

const LIVE: u64 = 1 << 63;

#[derive(Debug)]
pub struct Claim {
    /// `LIVE` bit | handlers inside.
    state: AtomicU64,
}

impl Default for Claim {
    fn default() -> Self {
        Claim { state: AtomicU64::new(0) }
    }
}

/// A handler inside the slot; leaves on drop.
#[must_use]
pub struct Inside<'a>(&'a Claim);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        // Release: the handler's reads of the slot happen before a retire that sees it leave.
        self.0.state.fetch_sub(1, Ordering::Release);
    }
}

impl Claim {
    /// Handler side: enters if the slot is live. Async-signal-safe (one CAS loop, no waiting).
    pub fn enter(&self) -> Option<Inside<'_>> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & LIVE == 0 {
                return None;
            }
            match self.state.compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => return Some(Inside(self)),
                Err(x) => s = x,
            }
        }
    }

    /// Owner side: makes the slot live. Release: everything written to the slot before is seen
    /// by handlers that enter afterwards.
    pub fn publish(&self) {
        self.state.fetch_or(LIVE, Ordering::Release);
    }

    /// Owner side: no handler enters from now on; returns once the last one inside has left.
    /// Must not be called from a signal handler.
    pub fn retire(&self) {
        self.state.fetch_and(!LIVE, Ordering::AcqRel);
        while self.state.load(Ordering::Acquire) != 0 {
            spin();
        }
    }

    pub fn is_live(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LIVE != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_only_while_live() {
        let c = Claim::default();
        assert!(c.enter().is_none());
        c.publish();
        let a = c.enter().unwrap();
        let b = c.enter().unwrap();
        drop((a, b));
        c.retire();
        assert!(c.enter().is_none());
        assert!(!c.is_live());
    }

    /// Handlers racing a retire: once `retire` returns nobody is inside and nobody enters.
    #[cfg(not(loom))]
    #[test]
    fn retire_waits_for_every_handler_inside() {
        use std::sync::atomic::{AtomicBool, AtomicU32};
        use std::sync::Arc;
        for _ in 0..200 {
            let c = Arc::new(Claim::default());
            // What the slot protects: 1 while mapped, 0 once "unmapped".
            let mapped = Arc::new(AtomicU32::new(1));
            let stop = Arc::new(AtomicBool::new(false));
            c.publish();
            let handlers: Vec<_> = (0..3)
                .map(|_| {
                    let (c, mapped, stop) = (c.clone(), mapped.clone(), stop.clone());
                    std::thread::spawn(move || {
                        let mut entered = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            if let Some(_g) = c.enter() {
                                assert_eq!(mapped.load(Ordering::Relaxed), 1, "a handler saw the slot retired");
                                entered += 1;
                            }
                        }
                        entered
                    })
                })
                .collect();
            std::thread::yield_now();
            c.retire();
            mapped.store(0, Ordering::Relaxed);
            assert!(c.enter().is_none());
            stop.store(true, Ordering::Relaxed);
            for h in handlers {
                h.join().unwrap();
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicU32;
    use loom::sync::Arc;

    /// Every interleaving of one handler with a retire: the handler never reads the slot after
    /// the owner tore it down.
    #[test]
    fn loom_handler_never_sees_a_retired_slot() {
        loom::model(|| {
            let c = Arc::new(Claim::default());
            let mapped = Arc::new(AtomicU32::new(1));
            c.publish();
            let h = {
                let (c, mapped) = (c.clone(), mapped.clone());
                loom::thread::spawn(move || {
                    if let Some(_g) = c.enter() {
                        assert_eq!(mapped.load(Ordering::Relaxed), 1);
                    }
                })
            };
            c.retire();
            mapped.store(0, Ordering::Relaxed);
            h.join().unwrap();
        });
    }

    /// The protocol used before (threads/slot.rs at db95885): the ring pointer and the count of
    /// handlers inside in two words, ordered by acquire/release only. The detacher stores "no
    /// ring" then loads the count; the handler bumps the count then loads the ring: a store-load
    /// pair on two locations, which acquire/release does not order, so both may miss the other's
    /// write. Loom finds that interleaving; the single-word `Claim` above has none.
    #[test]
    #[should_panic(expected = "read a retired ring")]
    fn loom_the_old_two_word_protocol_lets_a_handler_read_a_retired_ring() {
        loom::model(|| {
            let ring = Arc::new(AtomicU32::new(1));
            let busy = Arc::new(AtomicU32::new(0));
            let mapped = Arc::new(AtomicU32::new(1));
            let h = {
                let (ring, busy, mapped) = (ring.clone(), busy.clone(), mapped.clone());
                loom::thread::spawn(move || {
                    busy.fetch_add(1, Ordering::AcqRel);
                    if ring.load(Ordering::Acquire) != 0 {
                        assert_eq!(mapped.load(Ordering::Relaxed), 1, "read a retired ring");
                    }
                    busy.fetch_sub(1, Ordering::AcqRel);
                })
            };
            ring.store(0, Ordering::Release);
            while busy.load(Ordering::Acquire) != 0 {
                loom::thread::yield_now();
            }
            mapped.store(0, Ordering::Relaxed);
            h.join().unwrap();
        });
    }
}
