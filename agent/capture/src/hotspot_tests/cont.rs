//! Virtual threads: the walk across a continuation's return barrier into its stack chunks in
//! the (fake) Java heap, then on at `enterSpecial`'s frame and the carrier's frames.

use super::*;

const M_ES: u64 = 0x0800_0300; // Continuation.enterSpecial
const M_P: u64 = 0x0800_0400;
const BCP_P: u64 = 0x7f12_0000_0123;

/// The ContinuationEntry on the carrier's stack (16-aligned, as enterSpecial's sp is).
const ENTRY: u64 = SP + 0x200;
/// The Continuation object and its chunks, in the committed heap; `FAR`: in the heap's
/// reserved but uncommitted part.
const CONT: u64 = JHEAP_LO + 0x100;
const TAIL: u64 = JHEAP_LO + 0x200;
const PARENT: u64 = JHEAP_LO + 0x800;
const FAR: u64 = JHEAP_COMMITTED + 0x100;
/// Where a chunk's stack starts in the object.
const STACK_OFF: u64 = 0x40;

fn cont_layout(narrow: Option<(u64, u32)>) -> ContLayout {
    ContLayout {
        thread_cont_entry: 0x600,
        return_pc_addr: 0,
        barrier_addr: 0,
        cont_tail: 0x10,
        chunk_parent: 0x28,
        chunk_size: 0x10,
        chunk_sp: 0x14,
        chunk_bottom: 0x18,
        chunk_pc: 0x20,
        chunk_stack: STACK_OFF,
        narrow,
        thread_vthread: 0,
        thread_obj: 0,
        thread_tid: 0,
        thread_state: 0,
    }
}

/// The committed range of the fake heap: one region.
fn committed(a: u64) -> Option<(u64, u64)> {
    (JHEAP_LO..JHEAP_COMMITTED).contains(&a).then_some((JHEAP_LO, JHEAP_COMMITTED))
}

/// Word `i` of a chunk's stack.
fn w(ch: u64, i: u64) -> u64 {
    ch + STACK_OFF + i * 8
}

/// A mounted virtual thread: an interrupted compiled leaf (`M_A`) whose caller is the return
/// barrier (its frame ends at the entry's bottom sender sp for `argsize`), the entry in
/// enterSpecial's frame (`M_ES`), and an interpreted carrier frame under it.
struct Scene {
    f: Fake,
    regs: Regs,
    /// The continuation stubs' blob, holding the barrier.
    stubs: u64,
    leaf: RawFrame,
    enter_special: RawFrame,
}

impl Scene {
    fn new(argsize: u32) -> Scene {
        Scene::returning(argsize, None)
    }

    /// As `new`, the leaf returning to `ret` (None: into the barrier).
    fn returning(argsize: u32, ret: Option<u64>) -> Scene {
        let mut f = Fake::new();
        let leaf = f.nmethod(4, M_A);
        let barrier = f.blob(KIND_STUB, 0, 0, 0);
        let es = f.nmethod(10, M_ES);
        let return_pc = es + BODY;
        let leaf_sp = ((ENTRY - u64::from(argsize) * 8) & !15) - 4 * 8;
        f.compiled_frame(leaf_sp, 4, ret.unwrap_or(barrier + 0x10), 0x1234);
        f.put(ENTRY + 16, CONT);
        f.put(ENTRY + 32, u64::from(argsize) << 32);
        let carrier_sp = ENTRY + 10 * 8;
        f.compiled_frame(ENTRY, 10, INTERP_RET, carrier_sp + INTERP_FP);
        f.interp_bottom(carrier_sp);
        f.thread.cont = ContView {
            layout: cont_layout(None),
            entry: ENTRY,
            return_pc,
            barrier: barrier + 0x10,
            heap: Some(committed),
        };
        f.put(CONT + 0x10, TAIL);
        Scene {
            f,
            regs: regs(leaf + BODY, leaf_sp, 0),
            stubs: barrier,
            leaf: compiled(leaf + BODY, M_A, true),
            enter_special: compiled(return_pc, M_ES, false),
        }
    }

    /// A chunk's header: its size, sp and bottom (words), its top frame's pc, its parent.
    fn chunk(&mut self, ch: u64, sp: i32, bottom: i32, pc: u64, parent: u64) {
        self.f.put_bytes(ch + 0x10, &bottom.to_le_bytes());
        self.f.put_bytes(ch + 0x14, &sp.to_le_bytes());
        self.f.put_bytes(ch + 0x18, &bottom.to_le_bytes());
        self.f.put(ch + 0x20, pc);
        self.f.put(ch + 0x28, parent);
    }

    /// A chunk holding one compiled frame (`words` words at sp 2) of a new nmethod of
    /// `method`; returns the frame.
    fn compiled_chunk(&mut self, ch: u64, method: u64, parent: u64) -> RawFrame {
        let pc = self.f.nmethod(4, method) + BODY;
        self.chunk(ch, 2, 6, pc, parent);
        compiled(pc, method, false)
    }

    /// The walk, its frames expected as `leaf, chunks.., enterSpecial, carrier`.
    fn expect(&self, chunks: &[RawFrame]) {
        let mut want = vec![self.leaf];
        want.extend_from_slice(chunks);
        want.extend([self.enter_special, bottom()]);
        assert_eq!(self.f.walk(self.regs, 64), (want, Stop::Bottom));
    }
}

#[test]
fn compiled_and_interpreted_frames_of_two_chunks() {
    let mut s = Scene::new(0);
    // The tail: B (compiled, the top) called by J (interpreted) called by C (compiled, the
    // bottom). Freeze stored J's fp link relative to its slot, its sender's sp and its locals
    // relative to its fp.
    let b = s.f.nmethod(4, M_B) + BODY;
    let c = s.f.nmethod(4, M_C) + BODY;
    s.chunk(TAIL, 2, 23, b, PARENT);
    s.f.put(w(TAIL, 5), INTERP_RET); // B's return address
    s.f.put(w(TAIL, 4), 16 - 4); // J's fp (word 16), relative
    s.f.put(w(TAIL, 16 - 3), M_J);
    s.f.put(w(TAIL, 16 - 8), BCP_J);
    s.f.put(w(TAIL, 16 - 7), 2); // locals at word 18
    s.f.put(w(TAIL, 16 - 1), 3); // C's unextended sp at word 19
    s.f.put(w(TAIL, 17), c); // J's return address
                             // The parent: P (interpreted) alone, the top frame: its fp relative at sp - 2.
    s.chunk(PARENT, 4, 17, INTERP_RET, 0);
    s.f.put(w(PARENT, 2), 14 - 2);
    s.f.put(w(PARENT, 14 - 3), M_P);
    s.f.put(w(PARENT, 14 - 8), BCP_P);
    s.f.put(w(PARENT, 14 - 7), 2); // locals at word 16: the chunk's bottom frame
    s.expect(&[compiled(b, M_B, false), interpreted(M_J, BCP_J), compiled(c, M_C, false), interpreted(M_P, BCP_P)]);
}

#[test]
fn an_empty_tail_leads_to_its_parent() {
    let mut s = Scene::new(0);
    s.chunk(TAIL, 8, 8, 0, PARENT);
    let c = s.compiled_chunk(PARENT, M_C, 0);
    s.expect(&[c]);
}

#[test]
fn stack_arguments_move_the_barrier_down() {
    // With 3 words of stack arguments the bottom thawed frame ends 32 bytes below the entry
    // (aligned down to 16).
    let mut s = Scene::new(3);
    let c = s.compiled_chunk(TAIL, M_C, 0);
    s.expect(&[c]);
}

#[test]
fn narrow_oops_are_decoded() {
    let mut s = Scene::new(0);
    let base = JHEAP_LO - 0x1000;
    s.f.thread.cont.layout = cont_layout(Some((base, 3)));
    s.f.put(CONT + 0x10, (TAIL - base) >> 3);
    s.chunk(TAIL, 8, 8, 0, 0);
    s.f.put(TAIL + 0x28, (PARENT - base) >> 3);
    let c = s.compiled_chunk(PARENT, M_C, 0);
    s.expect(&[c]);
}

#[test]
fn a_chunk_outside_the_committed_heap_is_not_read() {
    // The walk goes on at the entry without the chunk's frames, reading nothing uncommitted.
    let mut s = Scene::new(0);
    s.f.put(CONT + 0x10, FAR);
    s.expect(&[]);
    // Its parent uncommitted: the tail's frames, then the entry.
    s.f.put(CONT + 0x10, TAIL);
    let c = s.compiled_chunk(TAIL, M_C, FAR);
    s.expect(&[c]);
    // No heap reader (ZGC, Shenandoah): no chunk.
    s.f.thread.cont.heap = None;
    s.expect(&[]);
}

#[test]
fn a_frame_returning_into_enter_special_is_no_barrier() {
    // Thawed whole: the leaf returns to enterSpecial itself; the chunk is not walked.
    let mut s = Scene::new(0);
    let ret = s.f.thread.cont.return_pc;
    let mut s2 = Scene::returning(0, Some(ret));
    s2.compiled_chunk(TAIL, M_C, 0);
    s2.expect(&[]);
    // No continuation mounted: the same stack is walked through rbp's chain only.
    s.f.thread.cont.entry = 0;
    let (frames, _) = s.f.walk(s.regs, 64);
    assert!(!frames.contains(&s.enter_special), "{frames:?}");
}

#[test]
fn hostile_chunks_end_their_walk() {
    // A chunk its own parent: followed a bounded number of times.
    let mut s = Scene::new(0);
    let c = s.compiled_chunk(TAIL, M_C, TAIL);
    s.expect(&[c; 4]);
    // An interpreted frame whose fp leaves the chunk, or does not move: the walk goes on at
    // the entry with the frames found.
    for link in [1 << 40, (-2i64) as u64, 0] {
        let b = s.f.nmethod(4, M_B) + BODY;
        s.chunk(TAIL, 2, 23, b, 0);
        s.f.put(w(TAIL, 5), INTERP_RET);
        s.f.put(w(TAIL, 4), link);
        s.expect(&[compiled(b, M_B, false)]);
    }
    // Sizes past the chunk's bounds, or sp past bottom.
    for (sp, bottom) in [(2, 1 << 21), (7, 6), (-1, 6)] {
        let mut s = Scene::new(0);
        let pc = s.f.nmethod(4, M_C) + BODY;
        s.chunk(TAIL, sp, bottom, pc, 0);
        s.expect(&[]);
    }
}

#[test]
fn a_full_sink_in_a_chunk_stops_the_walk() {
    let mut s = Scene::new(0);
    s.compiled_chunk(TAIL, M_C, 0);
    // The leaf takes 2 slots, the chunk's compiled frame 2 more.
    let (frames, stop) = s.f.walk(s.regs, 3);
    assert_eq!((frames, stop), (vec![s.leaf], Stop::Full));
}

#[test]
fn the_mounted_virtual_threads_id() {
    let mut f = Fake::new();
    // A JavaThread, its two OopHandles' slots, and the Thread objects in the heap.
    let thread = STACK_LO + 0x3000;
    let l = ContLayout { thread_vthread: 0x40, thread_obj: 0x38, thread_tid: 0x18, ..cont_layout(None) };
    let (vt, carrier) = (JHEAP_LO + 0x1000, JHEAP_LO + 0x1100);
    let (vt_slot, carrier_slot) = (thread + 0x100, thread + 0x108);
    f.put(thread + l.thread_cont_entry, ENTRY);
    f.put(thread + 0x40, vt_slot);
    f.put(thread + 0x38, carrier_slot);
    f.put(vt_slot, vt);
    f.put(carrier_slot, carrier);
    f.put(vt + 0x18, 4242);
    f.put(carrier + 0x18, 17);
    let id = |f: &Fake, l: &ContLayout| mounted_vthread(&f.mem, l, thread, committed);
    assert_eq!(id(&f, &l), 4242);
    // Between virtual threads the carrier is its own `_vthread`: none.
    f.put(vt_slot, carrier);
    assert_eq!(id(&f, &l), 0);
    // A virtual thread object outside the committed heap: not read.
    f.put(vt_slot, FAR);
    assert_eq!(id(&f, &l), 0);
    f.put(vt_slot, vt);
    // No continuation mounted, a null handle, offsets unknown: none.
    f.put(thread + l.thread_cont_entry, 0);
    assert_eq!(id(&f, &l), 0);
    f.put(thread + l.thread_cont_entry, ENTRY);
    f.put(thread + 0x40, 0);
    assert_eq!(id(&f, &l), 0);
    f.put(thread + 0x40, vt_slot);
    for unknown in
        [ContLayout { thread_tid: 0, ..l }, ContLayout { thread_vthread: 0, ..l }, ContLayout { thread_obj: 0, ..l }]
    {
        assert_eq!(id(&f, &unknown), 0);
    }
    assert_eq!(id(&f, &l), 4242);
    assert_eq!(f.mem.violations.borrow().clone(), vec![], "reads outside the thread and the committed heap");
}

#[test]
fn a_mounted_virtual_threads_state_is_its_carriers() {
    let mut f = Fake::new();
    let thread = STACK_LO + 0x3000;
    let l = ContLayout { thread_state: 0x2a0, ..cont_layout(None) };
    // In Java, in the VM (and the transitions), in native, blocked, garbage.
    for (word, code) in [(8u64, 1u8), (9, 1), (6, 1), (7, 1), (4, 2), (5, 2), (10, 0), (11, 0), (77, 0)] {
        // The high half is another field: only the 4-byte state is read.
        f.put(thread + 0x2a0, 0xdead_0000_0000 | word);
        assert_eq!(mounted_state(&f.mem, &l, thread), code, "state word {word}");
    }
    // Only in Java or the VM (and their transitions) does it hold collections off.
    for (word, holds) in
        [(8u64, true), (9, true), (6, true), (7, true), (4, false), (5, false), (10, false), (0, false)]
    {
        f.put(thread + 0x2a0, word);
        assert_eq!(holds_off_collections(&f.mem, &l, thread), holds, "state word {word}");
    }
    f.put(thread + 0x2a0, 8);
    assert!(!holds_off_collections(&f.mem, &ContLayout { thread_state: 0, ..l }, thread), "offset unknown");
    assert_eq!(mounted_state(&f.mem, &ContLayout { thread_state: 0, ..l }, thread), 0, "offset unknown");
    assert_eq!(mounted_state(&f.mem, &l, 0), 0, "no thread");
}

#[test]
fn interrupted_in_the_continuation_stubs() {
    // In thaw's stub (the blob holding the barrier), its frame somewhere below the entry: the
    // chunk's frames, then the entry frame.
    let mut s = Scene::new(0);
    let c = s.compiled_chunk(TAIL, M_C, 0);
    let sp = ENTRY - 0x40;
    let at = |pc| s.f.walk(regs(pc, sp, 0x1234), 64);
    assert_eq!(at(s.stubs + 0x80), (vec![c, s.enter_special, bottom()], Stop::Bottom));
    // Another frameless stub is no continuation stub; nor is any without a barrier known.
    let other = s.f.blob(KIND_STUB, 0, 0, 0);
    s.f.put(sp, INTERP_RET);
    let (frames, _) = s.f.walk(regs(other + 0x20, sp, 0x1234), 64);
    assert!(!frames.contains(&c), "{frames:?}");
    s.f.thread.cont.barrier = 0;
    let (frames, _) = s.f.walk(regs(s.stubs + 0x80, sp, 0x1234), 64);
    assert!(!frames.contains(&c), "{frames:?}");
}

#[test]
fn nested_continuations_are_crossed_through_their_parents() {
    // Inside the outer continuation's frames, X (compiled) called enterSpecial of an inner
    // one; X returns into the outer barrier: the outer chunk, then the outer entry.
    let mut s = Scene::new(0);
    let inner = s.compiled_chunk(TAIL, M_C, 0);
    let x = s.f.nmethod(4, M_B);
    let x_sp = ENTRY + 10 * 8;
    let outer_entry = x_sp + 4 * 8;
    s.f.compiled_frame(ENTRY, 10, x + BODY, 0);
    s.f.compiled_frame(x_sp, 4, s.stubs + 0x10, 0);
    s.f.put(ENTRY + 8, outer_entry); // the inner entry's _parent
    let outer_cont = CONT + 0x40;
    s.f.put(outer_entry + 16, outer_cont);
    s.f.put(outer_entry + 32, 0);
    let carrier_sp = outer_entry + 10 * 8;
    s.f.compiled_frame(outer_entry, 10, INTERP_RET, carrier_sp + INTERP_FP);
    s.f.interp_bottom(carrier_sp);
    let outer_tail = JHEAP_LO + 0x1000;
    s.f.put(outer_cont + 0x10, outer_tail);
    let outer = s.compiled_chunk(outer_tail, M_P, 0);
    let want = vec![s.leaf, inner, s.enter_special, compiled(x + BODY, M_B, false), outer, s.enter_special, bottom()];
    assert_eq!(s.f.walk(s.regs, 64), (want, Stop::Bottom));
    // A parent link that does not lead down the stack ends the chain: X's return is then no
    // barrier the walk knows.
    s.f.put(ENTRY + 8, ENTRY - 0x100);
    let (frames, _) = s.f.walk(s.regs, 64);
    assert!(!frames.contains(&outer), "{frames:?}");
}
