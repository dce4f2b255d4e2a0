//! The blob cache and the thread's memo: blobs taken from them on the next walks, the same
//! frames, fewer reads; an invalidation makes the walker look again.

use super::*;

/// A leaf in nmethod A, called from nmethod B, called from nmethod C, called from the
/// interpreter: two return addresses into the code cache (B's and C's).
fn three_compiled(f: &mut Fake) -> (Regs, [u64; 3]) {
    let (a, b, c) = (f.nmethod(4, M_A), f.nmethod(6, M_B), f.nmethod(2, M_C));
    let b_sp = f.compiled_frame(SP, 4, b + BODY, 0);
    let c_sp = f.compiled_frame(b_sp, 6, c + BODY, 0);
    let i_sp = f.compiled_frame(c_sp, 2, INTERP_RET, c_sp + 2 * 8 + INTERP_FP);
    f.interp_bottom(i_sp);
    (regs(a + BODY, SP, 0), [a, b, c])
}

#[test]
fn return_addresses_blobs_come_from_the_cache_on_the_next_walk() {
    let mut f = Fake::new();
    let (r, [a, b, c]) = three_compiled(&mut f);
    let want =
        vec![compiled(a + BODY, M_A, true), compiled(b + BODY, M_B, false), compiled(c + BODY, M_C, false), bottom()];
    let uncached = f.run(r, 64);
    assert_eq!(uncached.frames, want);
    f.cache = Some(BlobCache::default());
    let first = f.run(r, 64);
    let second = f.run(r, 64);
    for o in [&first, &second] {
        assert_eq!((&o.frames, o.stop, &o.violations), (&want, Stop::Bottom, &vec![]));
    }
    assert_eq!(first.reads, uncached.reads, "the first walk reads what an uncached one does");
    // The segment map, block and blob headers and `Method*` of A, B and C are not read again.
    assert!(second.reads + 8 <= first.reads, "{} reads, then {}", first.reads, second.reads);
    // A's (interrupted) segment, B's and C's return addresses.
    assert_eq!((second.blob_lookups, second.blob_hits), (3, 3));
    assert_eq!((first.blob_lookups, first.blob_hits), (3, 0));
}

/// [`three_compiled`] walked once with a cache (and the thread's memo with `memo`), then B
/// freed and another nmethod (D's, same frame size, method J) in its place; and B.
fn b_replaced_after_a_walk(memo: bool) -> (Fake, Regs, u64) {
    let mut f = Fake::new();
    let (r, [_, b, _]) = three_compiled(&mut f);
    f.cache = Some(BlobCache::default());
    f.memo = memo.then(WalkMemo::default);
    f.run(r, 64);
    f.put(b - CODE_OFF + 112, M_J);
    (f, r, b)
}

#[test]
fn an_invalidated_cache_looks_the_blobs_up_again() {
    // Until the agent invalidates the cache (on B's unload event), the walker keeps B's facts.
    let (f, r, b) = b_replaced_after_a_walk(false);
    assert_eq!(f.run(r, 64).frames[1], compiled(b + BODY, M_B, false));
    f.cache.as_ref().expect("a cache").invalidate();
    let o = f.run(r, 64);
    assert_eq!(o.frames[1], compiled(b + BODY, M_J, false));
    assert_eq!((o.blob_lookups, o.blob_hits), (3, 0));
}

#[test]
fn a_load_makes_the_walker_look_up_its_own_range_again_and_drops_the_memo() {
    // D's load: the cache forgets B's code alone, the thread's last walk goes.
    let (f, r, b) = b_replaced_after_a_walk(true);
    assert!(f.cache.as_ref().expect("a cache").forget_range(HEAP_LO, LOG2_SEG, b, b + BODY + 1));
    let o = f.run(r, 64);
    assert_eq!(o.frames[1], compiled(b + BODY, M_J, false));
    assert_eq!((o.blob_lookups, o.blob_memo_hits, o.blob_hits), (3, 0, 2), "A's and C's from the cache");
}

#[test]
fn an_interrupted_frame_s_prologue_is_told_from_its_segment_s_facts() {
    // Every pc of A's first 0x60 bytes (its prologue ends at COMPLETE, inside a segment):
    // walked from a cache that a walk at another pc of the same segment filled, the same
    // frames as without a cache.
    let mut f = Fake::new();
    let (_, [a, ..]) = three_compiled(&mut f);
    for off in [0u64, 1, 4, 0x10, COMPLETE - 1, COMPLETE, COMPLETE + 1, 0x3f, BODY, 0x5f] {
        for fill in [0u64, 0x3f, BODY] {
            f.cache = None;
            let r = regs(a + off, SP, 0);
            let want = f.run(r, 64);
            f.cache = Some(BlobCache::default());
            f.run(regs(a + fill, SP, 0), 64);
            let o = f.run(r, 64);
            assert_eq!((&o.frames, o.stop), (&want.frames, want.stop), "at +{off:#x}, cache filled at +{fill:#x}");
        }
    }
}

#[test]
fn the_thread_s_last_walk_gives_the_frames_it_shares_with_this_one() {
    let mut f = Fake::new();
    let (r, [_, b, c]) = three_compiled(&mut f);
    f.cache = Some(BlobCache::default());
    f.memo = Some(WalkMemo::default());
    let first = f.run(r, 64);
    assert_eq!((first.blob_lookups, first.blob_memo_hits, first.blob_hits), (3, 0, 0));
    let second = f.run(r, 64);
    assert_eq!(second.frames, first.frames);
    // B's and C's return addresses from the memo, A's interrupted pc from the shared cache.
    assert_eq!((second.blob_lookups, second.blob_memo_hits, second.blob_hits), (3, 2, 1));
    // Interrupted in B itself (A returned): B's frame, at the same sp as A's was, is the
    // interrupted one; C's return address at the same stack address comes from the memo.
    let b_sp = SP + 4 * 8;
    let o = f.run(regs(b + BODY + 8, b_sp, 0), 64);
    assert_eq!(o.frames[..2], [compiled(b + BODY + 8, M_B, true), compiled(c + BODY, M_C, false)]);
    assert_eq!((o.blob_lookups, o.blob_memo_hits, o.blob_hits), (2, 1, 1));
    // The same return address at another stack address (a deeper call of the same code) is
    // not the memo's: the shared cache has it.
    let mut g = Fake::new();
    let (r2, _) = three_compiled(&mut g);
    g.cache = Some(BlobCache::default());
    g.memo = Some(WalkMemo::default());
    g.run(r2, 64);
    let moved = Regs { sp: r2.sp - 0x100, ..r2 };
    // The whole stack, moved down by 0x100 bytes: same pcs, other stack pointers.
    for i in 0..(0x300 / 8) {
        let w = g.mem.read(SP + i * 8, 8);
        g.put(SP - 0x100 + i * 8, w);
    }
    let o = g.run(moved, 64);
    assert_eq!(o.frames[..3], first.frames[..3]);
    assert_eq!((o.blob_lookups, o.blob_memo_hits, o.blob_hits), (3, 0, 3));
}

#[test]
fn an_invalidation_empties_the_memo_too() {
    let (f, r, b) = b_replaced_after_a_walk(true);
    f.cache.as_ref().expect("a cache").invalidate();
    let o = f.run(r, 64);
    assert_eq!(o.frames[1], compiled(b + BODY, M_J, false));
    assert_eq!((o.blob_lookups, o.blob_memo_hits, o.blob_hits), (3, 0, 0));
}

#[test]
fn a_prologue_ending_in_a_later_segment_is_told_apart_in_each_segment() {
    // A prologue 0x60 bytes long: it ends in the segment after the code's first (segments of
    // 64 bytes here, code starting 16 bytes into one). Each pc before and after its end, walked
    // from a cache filled at another pc of the same segment, walks as without a cache.
    let mut f = Fake::new();
    let long = 0x60;
    let a = f.blob(KIND_NMETHOD, 4, long, M_A);
    let b = f.nmethod(6, M_B);
    let b_sp = f.compiled_frame(SP, 4, b + BODY, 0);
    let i_sp = f.compiled_frame(b_sp, 6, INTERP_RET, b_sp + 6 * 8 + INTERP_FP);
    f.interp_bottom(i_sp);
    let segment_of = |pc: u64| (pc - HEAP_LO) >> LOG2_SEG;
    assert_ne!(segment_of(a), segment_of(a + long as u64), "the prologue spans two segments");
    for off in [0u64, 0x08, 0x2f, 0x30, 0x50, 0x5f, 0x60, 0x61, 0x6f] {
        let pc = a + off;
        for other in (0..0x70u64).map(|o| a + o).filter(|&p| p != pc && segment_of(p) == segment_of(pc)).take(3) {
            f.cache = None;
            let want = f.run(regs(pc, SP, 0), 64);
            f.cache = Some(BlobCache::default());
            f.run(regs(other, SP, 0), 64);
            let o = f.run(regs(pc, SP, 0), 64);
            assert_eq!(o.blob_hits, 2, "A's segment and B's return address from the cache");
            assert_eq!((&o.frames, o.stop), (&want.frames, want.stop), "at +{off:#x}, filled at {:#x}", other - a);
        }
    }
}

#[test]
fn a_pc_in_the_padding_after_a_cached_blob_is_no_blob_s() {
    // A ends 24 bytes into its last segment; the rest of that segment is padding. A walk at a
    // pc of A in that segment fills the segment's entry; one at a pc of the padding then finds
    // what an uncached walk finds there, not A.
    let mut f = Fake::new();
    let (r, [a, _, _]) = three_compiled(&mut f);
    let start = a - CODE_OFF;
    let last = start - 16 + ((BLOB_SEGS - 1) << LOG2_SEG);
    f.put_bytes(start + 12, &((last + 24 - start) as i32).to_le_bytes());
    let inside = Regs { pc: last + 8, ..r };
    let padding = Regs { pc: last + 40, ..r };
    let uncached = (f.run(inside, 64), f.run(padding, 64));
    assert_eq!(uncached.0.frames[0], compiled(last + 8, M_A, true));
    f.cache = Some(BlobCache::default());
    let filled = f.run(inside, 64);
    let cached = f.run(padding, 64);
    assert_eq!(filled.frames, uncached.0.frames);
    assert_eq!((&cached.frames, cached.stop), (&uncached.1.frames, uncached.1.stop));
    assert_eq!(filled.blob_hits, 0);
}
