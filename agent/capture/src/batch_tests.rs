use super::*;

fn push(q: &ThreadQueue, pool: &BatchPool<u64>, v: u64) -> Result<(), Drop> {
    q.push_with(pool, |x| {
        *x = v;
        true
    })
}

#[cfg(not(loom))]
mod unit {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn batches_are_handed_over_at_the_threshold() {
        let pool: BatchPool<u64> = BatchPool::new(4, 4);
        let t = ThreadQueue::default();
        for i in 0..(BATCH_SIZE as u64 - 1) {
            push(&t, &pool, i).unwrap();
        }
        assert!(pool.take_full().is_empty(), "not full yet");
        push(&t, &pool, 99).unwrap();
        let full = pool.take_full();
        assert_eq!(full.len(), 1);
        let b = pool.get(&full[0]);
        assert_eq!(b.filled().len(), BATCH_SIZE);
        assert_eq!(b.filled()[9], 99);
        for h in full {
            pool.recycle(h);
        }
        assert_eq!(pool.free_batches(), 4);
        assert!(t.is_empty());
    }

    #[test]
    fn a_later_pool_reuses_an_earlier_pools_batches_emptied() {
        let mut first: BatchPool<u64> = BatchPool::new(3, 3);
        let t = ThreadQueue::default();
        for i in 0..(BATCH_SIZE as u64 + 4) {
            push(&t, &first, i).unwrap();
        }
        // A partial batch left in the queue and a full one not taken: `&mut` means the
        // producers are gone; every batch comes out.
        let mut spare = first.take_batches();
        assert_eq!(spare.len(), 3);
        assert_eq!((first.allocated(), first.free_batches()), (0, 0));
        let addresses: Vec<*const Batch<u64>> = spare.iter().map(|b| &**b as *const _).collect();
        let second: BatchPool<u64> = BatchPool::new(0, 4);
        assert_eq!(second.grow_reusing(4, &mut spare), 4, "three reused, one new");
        assert!(spare.is_empty());
        let t = ThreadQueue::default();
        for i in 0..(2 * BATCH_SIZE as u64) {
            push(&t, &second, 100 + i).unwrap();
        }
        let full = second.take_full();
        assert_eq!(full.len(), 2);
        for h in &full {
            let b = second.get(h);
            assert_eq!(b.filled().len(), BATCH_SIZE, "reused batches start empty");
            assert!(b.filled().iter().all(|&v| v >= 100));
        }
        assert!(full.iter().any(|h| addresses.contains(&(second.get(h) as *const _))));
    }

    #[test]
    fn full_batches_come_out_oldest_first() {
        let pool: BatchPool<u64> = BatchPool::new(4, 4);
        let t = ThreadQueue::default();
        for i in 0..(3 * BATCH_SIZE as u64) {
            push(&t, &pool, i).unwrap();
        }
        let firsts: Vec<u64> = pool.take_full().iter().map(|h| pool.get(h).filled()[0]).collect();
        assert_eq!(firsts, [0, 10, 20]);
    }

    #[test]
    fn discarded_fills_do_not_count() {
        let pool: BatchPool<u64> = BatchPool::new(1, 1);
        let t = ThreadQueue::default();
        t.push_with(&pool, |_| false).unwrap();
        let h = t.steal().unwrap();
        assert_eq!(pool.get(&h).len, 0);
        pool.submit(h);
        assert!(pool.take_full().is_empty(), "an empty batch goes back to the free stack");
        assert_eq!(pool.free_batches(), 1);
    }

    #[test]
    fn exhausted_pool_drops_and_counts_and_never_grows_past_its_capacity() {
        let pool: BatchPool<u64> = BatchPool::new(1, 2);
        let a = ThreadQueue::default();
        let b = ThreadQueue::default();
        push(&a, &pool, 1).unwrap();
        assert_eq!(push(&b, &pool, 2), Err(Drop::NoFreeBatch));
        assert_eq!(pool.dropped(), 1);
        assert_eq!(pool.grow(5), 1, "one more up to the capacity");
        assert_eq!(pool.grow(5), 0);
        push(&b, &pool, 2).unwrap();
        assert_eq!(pool.allocated(), 2);
        assert_eq!(pool.capacity(), 2);
    }

    #[test]
    fn stealing_returns_partial_batches() {
        let pool: BatchPool<u64> = BatchPool::new(2, 2);
        let t = ThreadQueue::default();
        for _ in 0..3 {
            push(&t, &pool, 7).unwrap();
        }
        let h = t.steal().unwrap();
        assert_eq!(pool.get(&h).len, 3);
        assert!(t.steal().is_none());
        pool.submit(h);
        assert_eq!(pool.take_full().len(), 1);
    }

    /// Producers and a consumer race; every item is either processed or counted as dropped,
    /// none is lost or seen twice.
    #[test]
    fn concurrent_producers_and_consumer_conserve_items() {
        let pool: Arc<BatchPool<u64>> = Arc::new(BatchPool::new(8, 8));
        let queues: Arc<Vec<ThreadQueue>> = Arc::new((0..4).map(|_| ThreadQueue::default()).collect());
        let done = Arc::new(AtomicBool::new(false));
        let per_thread = 20_000u64;
        let producers: Vec<_> = (0..4)
            .map(|t| {
                let (pool, queues) = (pool.clone(), queues.clone());
                std::thread::spawn(move || {
                    for i in 0..per_thread {
                        let _ = push(&queues[t], &pool, (t as u64) << 32 | i);
                    }
                })
            })
            .collect();
        let consumer = {
            let (pool, queues, done) = (pool.clone(), queues.clone(), done.clone());
            std::thread::spawn(move || {
                let mut seen = std::collections::HashSet::new();
                let mut take = |h: BatchHandle| {
                    for &x in pool.get(&h).filled() {
                        assert!(seen.insert(x), "item {x:#x} seen twice");
                    }
                    pool.recycle(h);
                };
                loop {
                    let finished = done.load(Ordering::Acquire);
                    for h in pool.take_full() {
                        take(h);
                    }
                    for tq in queues.iter() {
                        if let Some(h) = tq.steal() {
                            take(h);
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
        let processed = consumer.join().unwrap();
        assert_eq!(processed + pool.dropped(), 4 * per_thread);
        assert!(processed > 0);
        assert_eq!(pool.free_batches(), 8, "every batch back");
    }
}

/// The agent's situation: a signal handler produces samples on a thread that is itself inside a
/// pool operation (here the consumer loop: taking, recycling, stealing). Signals are sent to
/// that thread as fast as possible; the handler must always finish (with the crossbeam queue
/// used before, a handler interrupting a push on its own thread spun forever) and every item
/// must be processed or counted as dropped.
#[cfg(not(loom))]
mod reentrancy {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64};
    use std::sync::mpsc;
    use std::time::Duration;

    struct Shared {
        pool: BatchPool<u64>,
        queue: ThreadQueue,
        produced: AtomicU64,
    }

    static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

    extern "C" fn handler(_: libc::c_int) {
        let p = SHARED.load(Ordering::Acquire);
        if p.is_null() {
            return;
        }
        // SAFETY: the test keeps `Shared` alive (leaked) while signals may arrive.
        let s = unsafe { &*p };
        let n = s.produced.fetch_add(1, Ordering::Relaxed);
        let _ = s.queue.push_with(&s.pool, |x| {
            *x = n;
            true
        });
    }

    #[test]
    fn a_handler_interrupting_its_own_threads_pool_operation_always_finishes() {
        let shared: &'static Shared = Box::leak(Box::new(Shared {
            pool: BatchPool::new(4, 4),
            queue: ThreadQueue::default(),
            produced: AtomicU64::new(0),
        }));
        SHARED.store(shared as *const Shared as *mut Shared, Ordering::Release);
        let sig = libc::SIGRTMIN() + 5;
        // SAFETY: installing a plain handler for a real-time signal nothing else in this test
        // binary uses; the handler only touches atomics and the lock-free pool.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
        }
        let stop = &*Box::leak(Box::new(AtomicBool::new(false)));
        // Signals the kernel accepted (real-time signals queue, none is merged): the consumer
        // runs until it has handled all of them, so a busy machine only makes the test slower.
        let sent = &*Box::leak(Box::new(AtomicU64::new(0)));
        let (tid_tx, tid_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        let consumer = std::thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            tid_tx.send(unsafe { libc::pthread_self() } as u64).unwrap();
            let mut consumed = 0u64;
            let mut rounds = 0u64;
            loop {
                for h in shared.pool.take_full() {
                    consumed += shared.pool.get(&h).len as u64;
                    shared.pool.recycle(h);
                }
                rounds += 1;
                if stop.load(Ordering::Acquire)
                    && shared.produced.load(Ordering::Relaxed) >= sent.load(Ordering::Relaxed)
                {
                    break;
                }
            }
            done_tx.send((consumed, rounds)).unwrap();
        });
        let target = tid_rx.recv().unwrap() as libc::pthread_t;
        let signals = 200_000;
        let mut accepted = 0;
        for _ in 0..signals {
            // SAFETY: the consumer thread is alive until it has handled every accepted signal.
            if unsafe { libc::pthread_kill(target, sig) } == 0 {
                accepted += 1;
            }
        }
        sent.store(accepted, Ordering::Relaxed);
        stop.store(true, Ordering::Release);
        // A watchdog, not a synchronisation: a handler stuck in its own thread's pool operation
        // never lets the consumer finish.
        let (mut consumed, rounds) = done_rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the consumer thread is stuck: a signal handler waited on its own thread's pool operation");
        consumer.join().unwrap();
        SHARED.store(std::ptr::null_mut(), Ordering::Release);
        for h in shared.pool.take_full() {
            consumed += shared.pool.get(&h).len as u64;
            shared.pool.recycle(h);
        }
        if let Some(h) = shared.queue.steal() {
            consumed += shared.pool.get(&h).len as u64;
            shared.pool.recycle(h);
        }
        let produced = shared.produced.load(Ordering::Relaxed);
        assert!(produced == accepted && produced > 1000 && rounds > 0, "{produced} of {accepted} signals handled");
        assert_eq!(consumed + shared.pool.dropped(), produced, "items lost or duplicated");
        assert_eq!(shared.pool.free_batches(), 4, "every batch back");
    }
}

#[cfg(loom)]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// One producer filling and handing over, one consumer taking and stealing: in every
    /// interleaving each item is seen once or dropped, and every batch comes back.
    #[test]
    fn loom_producer_and_consumer_conserve_items_and_batches() {
        loom::model(|| {
            let pool: Arc<BatchPool<u64>> = Arc::new(BatchPool::new(2, 2));
            let q = Arc::new(ThreadQueue::default());
            let n = BATCH_SIZE as u64 + 1;
            let producer = {
                let (pool, q) = (pool.clone(), q.clone());
                loom::thread::spawn(move || {
                    for i in 0..n {
                        let _ = push(&q, &pool, i);
                    }
                })
            };
            let drain = |seen: &mut Vec<_>| {
                let full = pool.take_full();
                for h in full.into_iter().chain(q.steal()) {
                    seen.extend_from_slice(pool.get(&h).filled());
                    pool.recycle(h);
                }
            };
            let mut seen = Vec::new();
            drain(&mut seen);
            producer.join().unwrap();
            drain(&mut seen);
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len() as u64 + pool.dropped(), n);
            assert_eq!(pool.free_batches(), 2);
        });
    }

    /// Two threads pushing and popping the same free stack (what a signal handler does to an
    /// operation it interrupted): no index is handed out twice.
    #[test]
    fn loom_free_stack_hands_each_batch_to_one_owner() {
        loom::model(|| {
            let pool: Arc<BatchPool<u64>> = Arc::new(BatchPool::new(2, 2));
            let other = {
                let pool = pool.clone();
                loom::thread::spawn(move || {
                    let a = pool.pop_free();
                    if let Some(a) = a {
                        pool.push_free(a);
                    }
                    pool.pop_free()
                })
            };
            let mine = pool.pop_free();
            let theirs = other.join().unwrap();
            if let (Some(a), Some(b)) = (mine, theirs) {
                assert_ne!(a, b, "one batch, two owners");
            }
        });
    }
}
