//! Per-thread sample queues handed to a global queue in batches (Chilingarova & Safonov,
//! section 3.2), built so that the producer side runs inside a signal handler.
//!
//! Each profiled thread owns a [`ThreadQueue`]: an atomic pointer to the batch it is filling.
//! A producer takes the batch out with an atomic swap (so it owns it exclusively), appends one
//! item, and either puts it back or, once it holds [`BATCH_SIZE`] items, pushes it onto the
//! global full queue. Empty batches come from a preallocated free pool. The manager thread pops
//! full batches, processes them and recycles them; it can also steal a partially filled batch
//! from an idle thread with the same swap. No step allocates, locks or blocks: when no free
//! batch is left or the full queue is full, the sample is dropped and counted.

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use crossbeam::queue::ArrayQueue;

/// The paper's threshold: a thread hands its queue over after 10 samples.
pub const BATCH_SIZE: usize = 10;

pub struct Batch<T> {
    pub len: usize,
    pub items: Box<[T]>,
}

impl<T: Default> Batch<T> {
    fn new() -> Box<Batch<T>> {
        Box::new(Batch { len: 0, items: (0..BATCH_SIZE).map(|_| T::default()).collect() })
    }
}

impl<T> Batch<T> {
    pub fn filled(&self) -> &[T] {
        &self.items[..self.len]
    }
}

/// Why a sample was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// Every preallocated batch was in use.
    NoFreeBatch,
    /// The manager is behind: the global queue is full.
    QueueFull,
}

/// The global side: the free pool, the full queue and drop counters.
pub struct BatchQueues<T> {
    free: ArrayQueue<Box<Batch<T>>>,
    full: ArrayQueue<Box<Batch<T>>>,
    allocated: AtomicUsize,
    pub dropped_no_free_batch: AtomicU64,
    pub dropped_queue_full: AtomicU64,
}

impl<T: Default> BatchQueues<T> {
    /// Preallocates `initial` batches; the pool may grow to `capacity` through [`Self::grow`].
    pub fn new(initial: usize, capacity: usize) -> BatchQueues<T> {
        let capacity = capacity.max(initial).max(1);
        let q = BatchQueues {
            free: ArrayQueue::new(capacity),
            full: ArrayQueue::new(capacity),
            allocated: AtomicUsize::new(0),
            dropped_no_free_batch: AtomicU64::new(0),
            dropped_queue_full: AtomicU64::new(0),
        };
        q.grow(initial);
        q
    }

    /// Adds up to `n` empty batches to the pool (manager side; allocates).
    pub fn grow(&self, n: usize) -> usize {
        let mut added = 0;
        for _ in 0..n {
            if self.allocated.load(Ordering::Relaxed) >= self.free.capacity() {
                break;
            }
            if self.free.push(Batch::new()).is_err() {
                break;
            }
            self.allocated.fetch_add(1, Ordering::Relaxed);
            added += 1;
        }
        added
    }
}

impl<T> BatchQueues<T> {
    /// Next full batch, if any (manager side).
    pub fn pop_full(&self) -> Option<Box<Batch<T>>> {
        self.full.pop()
    }

    /// Returns a processed batch to the free pool (manager side).
    pub fn recycle(&self, mut b: Box<Batch<T>>) {
        b.len = 0;
        // The pool's capacity is the number of batches that can exist, so this cannot fail.
        let _ = self.free.push(b);
    }

    /// Queues a batch taken from a thread (at thread end); counted as dropped if the full
    /// queue has no room.
    pub fn submit(&self, b: Box<Batch<T>>) {
        if let Err(mut b) = self.full.push(b) {
            self.dropped_queue_full.fetch_add(b.len as u64, Ordering::Relaxed);
            b.len = 0;
            let _ = self.free.push(b);
        }
    }

    pub fn free_batches(&self) -> usize {
        self.free.len()
    }

    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    pub fn dropped(&self) -> u64 {
        self.dropped_no_free_batch.load(Ordering::Relaxed) + self.dropped_queue_full.load(Ordering::Relaxed)
    }
}

/// One thread's current batch.
pub struct ThreadQueue<T> {
    current: AtomicPtr<Batch<T>>,
}

impl<T> Default for ThreadQueue<T> {
    fn default() -> Self {
        ThreadQueue { current: AtomicPtr::new(std::ptr::null_mut()) }
    }
}

impl<T> ThreadQueue<T> {
    /// Appends one item, written in place by `fill` (which returns false to discard it).
    /// Async-signal-safe: atomics and lock-free queue operations only.
    pub fn push_with(&self, q: &BatchQueues<T>, fill: impl FnOnce(&mut T) -> bool) -> Result<(), Drop> {
        let taken = self.current.swap(std::ptr::null_mut(), Ordering::AcqRel);
        let mut batch = if taken.is_null() {
            match q.free.pop() {
                Some(b) => b,
                None => {
                    q.dropped_no_free_batch.fetch_add(1, Ordering::Relaxed);
                    return Err(Drop::NoFreeBatch);
                }
            }
        } else {
            // SAFETY: non-null pointers in `current` always come from `Box::into_raw` below,
            // and the swap made this producer their only owner.
            unsafe { Box::from_raw(taken) }
        };
        let i = batch.len;
        if fill(&mut batch.items[i]) {
            batch.len += 1;
        }
        if batch.len == BATCH_SIZE {
            if let Err(mut b) = q.full.push(batch) {
                q.dropped_queue_full.fetch_add(b.len as u64, Ordering::Relaxed);
                b.len = 0;
                let _ = q.free.push(b);
                return Err(Drop::QueueFull);
            }
        } else {
            // Only the owning thread stores into `current`; the manager only swaps it out, so the
            // slot is still null here.
            self.current.store(Box::into_raw(batch), Ordering::Release);
        }
        Ok(())
    }

    /// Takes the partially filled batch, if any (manager side, for idle or ending threads).
    pub fn steal(&self) -> Option<Box<Batch<T>>> {
        let p = self.current.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if p.is_null() {
            None
        } else {
            // SAFETY: as in `push_with`: the pointer came from `Box::into_raw` and the swap
            // transferred ownership to this caller.
            Some(unsafe { Box::from_raw(p) })
        }
    }
}

impl<T> std::ops::Drop for ThreadQueue<T> {
    fn drop(&mut self) {
        drop(self.steal());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn batches_are_handed_over_at_the_threshold() {
        let q: BatchQueues<u64> = BatchQueues::new(4, 4);
        let t = ThreadQueue::default();
        for i in 0..(BATCH_SIZE as u64 - 1) {
            t.push_with(&q, |x| {
                *x = i;
                true
            })
            .unwrap();
        }
        assert!(q.pop_full().is_none(), "not full yet");
        t.push_with(&q, |x| {
            *x = 99;
            true
        })
        .unwrap();
        let b = q.pop_full().expect("a full batch after 10 items");
        assert_eq!(b.filled().len(), BATCH_SIZE);
        assert_eq!(b.filled()[9], 99);
        q.recycle(b);
        assert_eq!(q.free_batches(), 4);
    }

    #[test]
    fn discarded_fills_do_not_count() {
        let q: BatchQueues<u64> = BatchQueues::new(1, 1);
        let t = ThreadQueue::default();
        t.push_with(&q, |_| false).unwrap();
        assert_eq!(t.steal().unwrap().len, 0);
    }

    #[test]
    fn exhausted_pool_drops_and_counts() {
        let q: BatchQueues<u64> = BatchQueues::new(1, 1);
        let a = ThreadQueue::default();
        let b = ThreadQueue::default();
        a.push_with(&q, |_| true).unwrap();
        assert_eq!(b.push_with(&q, |_| true), Err(Drop::NoFreeBatch));
        assert_eq!(q.dropped(), 1);
        assert_eq!(q.grow(5), 0, "capacity is fixed");
    }

    #[test]
    fn stealing_returns_partial_batches() {
        let q: BatchQueues<u64> = BatchQueues::new(2, 2);
        let t = ThreadQueue::default();
        for _ in 0..3 {
            t.push_with(&q, |_| true).unwrap();
        }
        let b = t.steal().unwrap();
        assert_eq!(b.len, 3);
        assert!(t.steal().is_none());
        q.recycle(b);
    }

    /// Producers and a stealing manager race; every item is either processed or counted as
    /// dropped, none is lost or seen twice.
    #[test]
    fn concurrent_producers_and_manager_conserve_items() {
        let q: Arc<BatchQueues<u64>> = Arc::new(BatchQueues::new(8, 8));
        let queues: Arc<Vec<ThreadQueue<u64>>> = Arc::new((0..4).map(|_| ThreadQueue::default()).collect());
        let done = Arc::new(AtomicBool::new(false));
        let per_thread = 20_000u64;
        let producers: Vec<_> = (0..4)
            .map(|t| {
                let (q, queues) = (q.clone(), queues.clone());
                std::thread::spawn(move || {
                    for i in 0..per_thread {
                        let _ = queues[t].push_with(&q, |x| {
                            *x = (t as u64) << 32 | i;
                            true
                        });
                    }
                })
            })
            .collect();
        let manager = {
            let (q, queues, done) = (q.clone(), queues.clone(), done.clone());
            std::thread::spawn(move || {
                let mut seen = std::collections::HashSet::new();
                loop {
                    let finished = done.load(Ordering::Acquire);
                    while let Some(b) = q.pop_full() {
                        for &x in b.filled() {
                            assert!(seen.insert(x), "item {x:#x} seen twice");
                        }
                        q.recycle(b);
                    }
                    for tq in queues.iter() {
                        if let Some(b) = tq.steal() {
                            for &x in b.filled() {
                                assert!(seen.insert(x), "item {x:#x} seen twice");
                            }
                            q.recycle(b);
                        }
                    }
                    if finished {
                        return seen.len() as u64;
                    }
                }
            })
        };
        for p in producers {
            p.join().unwrap();
        }
        done.store(true, Ordering::Release);
        let processed = manager.join().unwrap();
        assert_eq!(processed + q.dropped(), 4 * per_thread);
        assert!(processed > 0);
    }
}
