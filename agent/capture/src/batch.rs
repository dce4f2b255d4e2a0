//! Per-thread sample queues handed to a processing thread in batches (Chilingarova & Safonov,
//! section 3.2), built so that the producer side runs inside a signal handler.
//!
//! A [`BatchPool`] owns a bounded arena of batches, referred to by index. Every batch is owned
//! by exactly one party at a time — the free stack, the full stack, one [`ThreadQueue`], a
//! producer filling it, or the consumer holding a [`BatchHandle`] — and ownership moves only by
//! atomic operations on a single word, so contents are touched by their owner alone.
//!
//! Each profiled thread owns a [`ThreadQueue`]: the index of the batch it is filling. A producer
//! takes it with an atomic swap, appends one item and either puts it back or, once it holds
//! [`BATCH_SIZE`] items, pushes it on the full stack. The consumer takes the whole full stack at
//! once, processes and recycles the batches; it can also steal a partially filled batch from an
//! idle or ending thread with the same swap.
//!
//! The free and full stacks are Treiber stacks over indices with a 32-bit tag against ABA. Their
//! operations are lock-free *and reentrant*: a push or pop interrupted by a signal whose handler
//! pushes or pops on the same stack just retries its compare-and-swap, it never waits for the
//! interrupted operation to finish. (crossbeam's `ArrayQueue`, used before, is not: a pop in a
//! handler spins until a push it interrupted on the same thread completes, which never happens.)
//!
//! Memory is bounded by construction: the arena has a fixed capacity; batches are allocated on
//! demand by the consumer ([`BatchPool::grow`], never on the signal path) up to it; when no batch
//! is free the sample is dropped and counted. Dropping the pool frees everything.

use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The paper's threshold: a thread hands its queue over after 10 samples.
pub const BATCH_SIZE: usize = 10;

const NIL: u32 = u32::MAX;

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
    /// Every batch of the pool was in use.
    NoFreeBatch,
}

/// A batch owned by the consumer (taken from the full stack or stolen from a thread). Give it
/// back with [`BatchPool::recycle`]; a handle dropped otherwise only shrinks the pool.
#[derive(Debug, PartialEq, Eq)]
pub struct BatchHandle(u32);

/// A Treiber stack of batch indices: `(tag << 32) | top`, links in the pool's `next` array.
struct Stack {
    head: AtomicU64,
}

fn pack(tag: u64, idx: u32) -> u64 {
    (tag << 32) | u64::from(idx)
}

fn unpack(word: u64) -> (u64, u32) {
    (word >> 32, word as u32)
}

impl Stack {
    fn new() -> Stack {
        Stack { head: AtomicU64::new(pack(0, NIL)) }
    }

    /// Pushes `idx`, which the caller owns. Release: the batch's contents and link are visible
    /// to whoever pops it.
    fn push(&self, next: &[AtomicU32], idx: u32) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            let (tag, top) = unpack(head);
            next[idx as usize].store(top, Ordering::Relaxed);
            match self.head.compare_exchange_weak(
                head,
                pack(tag.wrapping_add(1), idx),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// Pops one index, which the caller then owns. If the top changes between the load and the
    /// swap (another thread, or a signal handler that interrupted this one), the tag differs and
    /// the swap retries: nothing waits for anybody.
    fn pop(&self, next: &[AtomicU32]) -> Option<u32> {
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let (tag, top) = unpack(head);
            if top == NIL {
                return None;
            }
            // May be stale if `top` was popped meanwhile: then the tag has moved on and the swap
            // fails. Links are never freed, so the read itself is always valid.
            let below = next[top as usize].load(Ordering::Relaxed);
            match self.head.compare_exchange_weak(
                head,
                pack(tag.wrapping_add(1), below),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(top),
                Err(h) => head = h,
            }
        }
    }

    /// Takes the whole stack (single consumer): the indices, top first.
    fn take_all(&self, next: &[AtomicU32], out: &mut Vec<u32>) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            let (tag, top) = unpack(head);
            if top == NIL {
                return;
            }
            match self.head.compare_exchange_weak(
                head,
                pack(tag.wrapping_add(1), NIL),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    // The taken chain is ours alone: producers only write links of batches they own.
                    let mut i = top;
                    while i != NIL {
                        out.push(i);
                        i = next[i as usize].load(Ordering::Relaxed);
                    }
                    return;
                }
                Err(h) => head = h,
            }
        }
    }
}

/// The bounded arena of batches with its free and full stacks and the drop counter.
pub struct BatchPool<T> {
    /// Batch `i`, null until [`Self::grow`] allocates it; never changed again until drop.
    batches: Box<[AtomicPtr<Batch<T>>]>,
    next: Box<[AtomicU32]>,
    free: Stack,
    full: Stack,
    /// Batches allocated so far (only the consumer allocates).
    allocated: AtomicUsize,
    free_count: AtomicUsize,
    pub dropped_no_free_batch: AtomicU64,
}

// SAFETY: batches are reached only by the party that owns their index (see the module docs),
// and ownership moves through atomics with acquire/release ordering; `T: Send` moves with it.
unsafe impl<T: Send> Sync for BatchPool<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for BatchPool<T> {}

impl<T: Default> BatchPool<T> {
    /// A pool of at most `capacity` batches, `initial` of them allocated now.
    pub fn new(initial: usize, capacity: usize) -> BatchPool<T> {
        let capacity = capacity.clamp(1, NIL as usize - 1);
        let pool = BatchPool {
            batches: (0..capacity).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            next: (0..capacity).map(|_| AtomicU32::new(NIL)).collect(),
            free: Stack::new(),
            full: Stack::new(),
            allocated: AtomicUsize::new(0),
            free_count: AtomicUsize::new(0),
            dropped_no_free_batch: AtomicU64::new(0),
        };
        pool.grow(initial);
        pool
    }

    /// Allocates up to `n` more batches, within the capacity (consumer side: allocates; call it
    /// from one thread only). Returns how many were added.
    pub fn grow(&self, n: usize) -> usize {
        self.grow_reusing(n, &mut Vec::new())
    }

    /// [`Self::grow`], taking batches from `spare` (an earlier pool's, see
    /// [`Self::take_batches`]) before allocating new ones.
    pub fn grow_reusing(&self, n: usize, spare: &mut Vec<Box<Batch<T>>>) -> usize {
        let start = self.allocated.load(Ordering::Relaxed);
        let end = (start + n).min(self.batches.len());
        for i in start..end {
            let batch = match spare.pop() {
                Some(mut b) if b.items.len() == BATCH_SIZE => {
                    b.len = 0;
                    b
                }
                _ => Batch::new(),
            };
            self.batches[i].store(Box::into_raw(batch), Ordering::Relaxed);
            self.allocated.store(i + 1, Ordering::Relaxed);
            self.free_count.fetch_add(1, Ordering::Relaxed);
            // Release in the push publishes the pointer stored above with the index.
            self.free.push(&self.next, i as u32);
        }
        end - start
    }
}

impl<T> BatchPool<T> {
    fn slot(&self, idx: u32) -> *mut Batch<T> {
        self.batches[idx as usize].load(Ordering::Relaxed)
    }

    /// The batch behind `idx`, which the caller owns.
    ///
    /// # Safety
    /// The caller owns `idx` (popped it, swapped it out of a queue, or holds its handle) and
    /// no other reference to this batch is alive.
    #[allow(clippy::mut_from_ref)]
    unsafe fn owned(&self, idx: u32) -> &mut Batch<T> {
        // SAFETY: an owned index was pushed on the free stack by `grow` after its pointer was
        // stored, and the acquire that transferred ownership makes the pointer visible; the
        // caller guarantees exclusivity.
        unsafe { &mut *self.slot(idx) }
    }

    fn pop_free(&self) -> Option<u32> {
        let i = self.free.pop(&self.next)?;
        self.free_count.fetch_sub(1, Ordering::Relaxed);
        Some(i)
    }

    fn push_free(&self, idx: u32) {
        // SAFETY: the caller gives up `idx`, which it owns.
        unsafe { self.owned(idx) }.len = 0;
        self.free_count.fetch_add(1, Ordering::Relaxed);
        self.free.push(&self.next, idx);
    }

    /// Every full batch queued so far (consumer side).
    pub fn take_full(&self) -> Vec<BatchHandle> {
        let mut v = Vec::new();
        self.full.take_all(&self.next, &mut v);
        // The stack is newest first; hand them out oldest first.
        v.into_iter().rev().map(BatchHandle).collect()
    }

    /// The contents of a batch the consumer holds.
    pub fn get(&self, h: &BatchHandle) -> &Batch<T> {
        // SAFETY: the handle proves the consumer owns the batch; the shared borrow of the
        // handle keeps it from being recycled while this reference lives.
        unsafe { &*self.slot(h.0) }
    }

    /// Gives a processed batch back to the free stack.
    pub fn recycle(&self, h: BatchHandle) {
        self.push_free(h.0);
    }

    /// Queues a batch taken from a thread (a partial one at detach): empty ones go back to the
    /// free stack.
    pub fn submit(&self, h: BatchHandle) {
        if self.get(&h).len == 0 {
            self.recycle(h);
        } else {
            self.full.push(&self.next, h.0);
        }
    }

    pub fn free_batches(&self) -> usize {
        self.free_count.load(Ordering::Relaxed)
    }

    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    pub fn capacity(&self) -> usize {
        self.batches.len()
    }

    pub fn dropped(&self) -> u64 {
        self.dropped_no_free_batch.load(Ordering::Relaxed)
    }
}

impl<T> BatchPool<T> {
    /// Every batch of the pool, for a later pool to reuse ([`Self::grow_reusing`]): `&mut self`
    /// means no party holds one any more. The pool is empty afterwards.
    pub fn take_batches(&mut self) -> Vec<Box<Batch<T>>> {
        let mut out = Vec::new();
        for p in self.batches.iter() {
            let p = p.swap(std::ptr::null_mut(), Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: as in `drop`: from `Box::into_raw` in `grow`, and no party holds it.
                out.push(unsafe { Box::from_raw(p) });
            }
        }
        self.allocated.store(0, Ordering::Relaxed);
        self.free_count.store(0, Ordering::Relaxed);
        self.free = Stack::new();
        self.full = Stack::new();
        out
    }
}

impl<T> std::ops::Drop for BatchPool<T> {
    fn drop(&mut self) {
        for p in self.batches.iter() {
            let p = p.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: every non-null pointer came from `Box::into_raw` in `grow`, and `&mut
                // self` means no party holds a batch any more.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

/// One producer's current batch (the index, or none).
pub struct ThreadQueue {
    current: AtomicU32,
}

impl Default for ThreadQueue {
    fn default() -> Self {
        ThreadQueue { current: AtomicU32::new(NIL) }
    }
}

impl ThreadQueue {
    /// Appends one item, written in place by `fill` (which returns false to discard it).
    /// Async-signal-safe and reentrant: atomics only, no allocation, no waiting. One producer
    /// per queue (the owning thread's signal handler, or the one timer thread).
    pub fn push_with<T>(&self, pool: &BatchPool<T>, fill: impl FnOnce(&mut T) -> bool) -> Result<(), Drop> {
        let taken = self.current.swap(NIL, Ordering::Acquire);
        let idx = if taken != NIL {
            taken
        } else {
            match pool.pop_free() {
                Some(i) => i,
                None => {
                    pool.dropped_no_free_batch.fetch_add(1, Ordering::Relaxed);
                    return Err(Drop::NoFreeBatch);
                }
            }
        };
        // SAFETY: the swap or the pop made this producer the owner of `idx`.
        let batch = unsafe { pool.owned(idx) };
        let i = batch.len;
        if fill(&mut batch.items[i]) {
            batch.len += 1;
        }
        if batch.len == BATCH_SIZE
            || self.current.compare_exchange(NIL, idx, Ordering::Release, Ordering::Relaxed).is_err()
        {
            // Full, or (never with one producer) another batch was put back meanwhile.
            pool.full.push(&pool.next, idx);
        }
        Ok(())
    }

    /// Takes the partially filled batch, if any (consumer side, for idle or ending threads).
    pub fn steal(&self) -> Option<BatchHandle> {
        let idx = self.current.swap(NIL, Ordering::Acquire);
        (idx != NIL).then_some(BatchHandle(idx))
    }

    /// Whether a batch is parked here (a queue must be empty before its pool goes away).
    pub fn is_empty(&self) -> bool {
        self.current.load(Ordering::Relaxed) == NIL
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
