use super::*;

/// Facts that tell which pc they were written for (a torn entry would mix two pcs').
#[cfg(not(loom))]
fn facts_of(pc: u64) -> FrameFacts {
    let method = pc.wrapping_mul(3) & ((1 << 48) - 1);
    FrameFacts { frame_words: pc & 0xffff, method, is_nmethod: pc & 1 == 1, complete: pc & 0x7f, valid: pc & 0xff }
}

#[cfg(not(loom))]
#[test]
fn an_entry_is_found_by_its_pc_in_the_epoch_it_was_written_in() {
    let c = BlobCache::default();
    let e = c.epoch();
    let f = FrameFacts { frame_words: 6, method: 0x7f00_1234, is_nmethod: true, complete: 0x30, valid: 0x40 };
    assert_eq!(c.get(0x1000, e), None);
    c.put(0x1000, e, f);
    assert_eq!(c.get(0x1000, e), Some(f));
    assert_eq!(c.get(0x1008, e), None, "another pc");
    c.invalidate();
    assert_ne!(c.epoch(), e);
    assert_eq!(c.get(0x1000, c.epoch()), None, "stale after an invalidation");
    // Written with the epoch a walk read before the invalidation: stale at once.
    c.put(0x1000, e, f);
    assert_eq!(c.get(0x1000, c.epoch()), None);
    c.put(0x1000, c.epoch(), f);
    assert_eq!(c.get(0x1000, c.epoch()), Some(f));
}

#[cfg(not(loom))]
#[test]
fn pc_zero_and_facts_that_do_not_fit_are_not_kept() {
    let c = BlobCache::with_entries(1);
    let e = c.epoch();
    c.put(0, e, facts_of(0));
    assert_eq!(c.get(0, e), None);
    let fits = FrameFacts { frame_words: 4, method: 1, is_nmethod: false, complete: 0, valid: 0x40 };
    c.put(0x40, e, FrameFacts { frame_words: 1 << 40, ..fits });
    assert_eq!(c.get(0x40, e), None);
    c.put(0x40, e, FrameFacts { complete: 1 << 20, ..fits });
    assert_eq!(c.get(0x40, e), None);
    c.put(0x40, e, FrameFacts { method: 1 << 48, ..fits });
    assert_eq!(c.get(0x40, e), None, "a Method* above user space");
    c.put(0x40, e, FrameFacts { valid: 1 << 16, ..fits });
    assert_eq!(c.get(0x40, e), None);
    c.put(0x40, e, fits);
    assert_eq!(c.get(0x40, e), Some(fits));
    // A fresh cache's entries (epoch 0) match no epoch a walk can read.
    assert_eq!(BlobCache::with_entries(1).get(0, 0), None);
}

#[cfg(not(loom))]
#[test]
fn a_colliding_pc_replaces_the_entry() {
    let c = BlobCache::with_entries(1);
    let e = c.epoch();
    c.put(0x1000, e, facts_of(0x1000));
    c.put(0x2000, e, facts_of(0x2000));
    assert_eq!(c.get(0x1000, e), None);
    assert_eq!(c.get(0x2000, e), Some(facts_of(0x2000)));
}

/// Four threads write and read the same two entries as fast as they can, as the handlers of
/// four threads would: every entry read is one writer's whole entry, for the pc asked.
#[cfg(not(loom))]
#[test]
fn concurrent_writers_and_readers_never_see_a_torn_entry() {
    use std::sync::Arc;
    let c = Arc::new(BlobCache::with_entries(2));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let c = c.clone();
            std::thread::spawn(move || {
                let mut hits = 0u64;
                for i in 0..200_000u64 {
                    let pc = 0x1000 + ((i * 7 + t) % 16) * 0x10 + (i & 1);
                    let e = c.epoch();
                    if c.get(pc, e).is_none() {
                        c.put(pc, e, facts_of(pc));
                    }
                    if let Some(f) = c.get(pc, e) {
                        assert_eq!(f, facts_of(pc), "a torn or foreign entry for {pc:#x}");
                        hits += 1;
                    }
                    if t == 0 && i % 5_000 == 0 {
                        c.invalidate();
                    }
                }
                hits
            })
        })
        .collect();
    let hits: u64 = threads.into_iter().map(|h| h.join().expect("no torn entry")).sum();
    assert!(hits > 0, "the entries were never found: the test would prove nothing");
}

#[cfg(loom)]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Every interleaving (up to two preemptions, 2 s; the full space takes loom beyond 15
    /// minutes) of two writers of one entry, with two pcs, and a reader: what the reader finds
    /// is one writer's whole entry. With the writers' claim relaxed (not acquiring the last
    /// writer's release) it found the second writer's pc with the first's facts.
    #[test]
    fn loom_blob_cache_reader_sees_whole_entries_only() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(|| {
            let c = Arc::new(BlobCache::with_entries(1));
            let f =
                |pc: u64| FrameFacts { frame_words: pc, method: pc * 3, is_nmethod: pc == 2, complete: pc, valid: pc };
            let writers: Vec<_> = [1u64, 2]
                .into_iter()
                .map(|pc| {
                    let c = c.clone();
                    loom::thread::spawn(move || c.put(pc, 1, f(pc)))
                })
                .collect();
            for pc in [1u64, 2] {
                if let Some(got) = c.get(pc, 1) {
                    assert_eq!(got, f(pc));
                }
            }
            for w in writers {
                w.join().unwrap();
            }
        });
    }
}

#[cfg(not(loom))]
#[test]
fn a_load_clears_the_entries_of_its_own_segments_alone() {
    let c = BlobCache::default();
    let (e, m) = (c.epoch(), c.memo_epoch());
    // A code heap of 128-byte segments.
    let low = 0x7f00_0000_0000u64;
    let seg = |k: u64| low + (k << 7);
    for k in 0..8 {
        c.put(seg(k), e, facts_of(seg(k)));
    }
    assert!((0..8).all(|k| c.get(seg(k), e).is_some()), "eight entries of their own");
    // New code from inside segment 2 to inside segment 5.
    assert!(c.forget_range(low, 7, seg(2) + 0x40, seg(5) + 0x10));
    for k in 0..8 {
        assert_eq!(c.get(seg(k), e).is_some(), !(2..=5).contains(&k), "segment {k}");
    }
    assert_eq!(c.epoch(), e, "the other entries stay valid");
    assert_ne!(c.memo_epoch(), m, "every thread's last walk is dropped");
    // What cannot be cleared here is left to a full invalidation.
    assert!(!c.forget_range(low, 7, low, low + ((ENTRIES as u64 + 1) << 7)), "more segments than entries");
    assert!(!c.forget_range(low, 7, low - 0x80, low + 0x80), "below the heap");
    let busy = c.entry(seg(6));
    busy.seq.fetch_add(1, Ordering::Relaxed); // a walk is writing it
    assert!(!c.forget_range(low, 7, seg(6), seg(7)));
    busy.seq.fetch_add(1, Ordering::Relaxed);
    assert!(c.forget_range(low, 7, seg(6), seg(7)));
    assert_eq!(c.get(seg(6), e), None);
    assert_eq!(c.get(seg(7), e), Some(facts_of(seg(7))), "the range's end is not its segment");
}

#[cfg(not(loom))]
#[test]
fn a_load_leaves_another_segments_entry_in_the_same_slot() {
    let c = BlobCache::with_entries(1);
    let e = c.epoch();
    c.put(0x1080, e, facts_of(0x1080));
    assert!(c.forget_range(0x1000, 7, 0x1000, 0x1080), "segment 0x1000 only");
    assert_eq!(c.get(0x1080, e), Some(facts_of(0x1080)), "the slot holds another segment");
}

#[cfg(not(loom))]
#[test]
fn a_walk_that_began_before_a_load_does_not_write() {
    let c = BlobCache::default();
    let (e, loads) = (c.epoch(), c.memo_epoch());
    assert!(c.forget_range(0x1000, 7, 0x9000, 0x9100));
    // Its facts were read from the code heap before the load cleared the range.
    c.put_for_walk(0x9000, e, loads, facts_of(0x9000));
    assert_eq!(c.get(0x9000, e), None);
    c.put_for_walk(0x9000, e, c.memo_epoch(), facts_of(0x9000));
    assert_eq!(c.get(0x9000, e), Some(facts_of(0x9000)), "a walk begun after it does");
}
