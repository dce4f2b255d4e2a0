//! Virtual threads (JDK 21+): the walk across a continuation's return barrier.
//!
//! A mounted virtual thread runs on its carrier's stack above `Continuation.enterSpecial`,
//! whose frame holds a `ContinuationEntry`. After a yield, HotSpot thaws only the top frames
//! back onto the stack (`continuationFreezeThaw.cpp`, "lazy copy"): the bottom thawed frame
//! returns into `StubRoutines::cont_returnBarrier`, and its callers stay frozen in the heap,
//! in the continuation's `tail` stack chunk, laid out as on a stack. This module recognises
//! the barrier by where the bottom thawed frame ends (the entry's `bottom_sender_sp`, where
//! no other frame can end: the entry frame's own return pc is the only other one there),
//! walks the chunk's frames (compiled, and interpreted ones whose metadata freeze stored
//! relative to their fp), then resumes the walk at the entry frame, so the virtual thread's
//! frames reach `VirtualThread.run` and the carrier's follow. A sample inside the
//! continuation stubs (thaw, the barrier) goes to the chunk at once; a continuation nested in
//! another's is followed through its entry's `_parent`. [`mounted_vthread`] names the virtual
//! thread a sample ran in.
//!
//! Heap memory is read only after the address was proven inside a committed part of the heap
//! ([`ContView::heap`]); every loop is bounded. What cannot be read or proven ends the chunk's
//! walk: the frames found stay, the walk goes on at the entry.

use super::{FrameSink, Memory, RawFrame, Stop, Walker};

/// Where the VM keeps a continuation's state: offsets (from libjvm's symbols and VMStructs)
/// and the compressed-oop encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContLayout {
    /// `JavaThread::_cont_entry`.
    pub thread_cont_entry: u64,
    /// Address of the static `ContinuationEntry::_return_pc` (set when `enterSpecial` is
    /// generated, so read at each walk).
    pub return_pc_addr: u64,
    /// Address of the static `StubRoutines::_cont_returnBarrier` (0: unknown): the return
    /// barrier, in the blob of the continuation stubs (thaw, the barrier, preemption).
    pub barrier_addr: u64,
    /// Fields of `jdk.internal.vm.Continuation` and `jdk.internal.vm.StackChunk`.
    pub cont_tail: u64,
    pub chunk_parent: u64,
    pub chunk_size: u64,
    pub chunk_sp: u64,
    pub chunk_bottom: u64,
    /// The injected `pc` field: the top frame's pc.
    pub chunk_pc: u64,
    /// Where a chunk's stack starts in the object (`InstanceStackChunkKlass::_offset_of_stack`).
    pub chunk_stack: u64,
    /// Oop fields are 32-bit `base + (v << shift)` (None: full pointers).
    pub narrow: Option<(u64, u32)>,
    /// `JavaThread::_vthread` and `_threadObj` (OopHandles: the address of an oop slot), and
    /// `java.lang.Thread.tid`'s offset in a Thread object: the mounted virtual thread's id
    /// ([`mounted_vthread`]); 0 where unknown.
    pub thread_vthread: u64,
    pub thread_obj: u64,
    pub thread_tid: u64,
    /// `JavaThread::_thread_state` (a 4-byte `JavaThreadState`): a mounted virtual thread's
    /// state in a wall sample ([`mounted_state`]); 0 where unknown.
    pub thread_state: u64,
}

/// `ContinuationEntry`'s fields on x86-64 (product builds: the empty platform part padded to
/// a word; `continuationEntry.hpp`).
const ENTRY_PARENT: u64 = 8;
const ENTRY_CONT: u64 = 16;
const ENTRY_ARGSIZE: u64 = 32 + 4;
/// `ContinuationEntry::size()`: the entry frame's fp is just above it.
const ENTRY_SIZE: u64 = 64;
/// The `ContinuationEntry` size these offsets are for: the agent crosses no continuation
/// where VMStructs gives another.
pub const CONTINUATION_ENTRY_SIZE: u64 = ENTRY_SIZE;
/// Continuations nested in one another followed through the entries' `_parent`.
const MAX_NESTED: usize = 8;
/// Chunks followed through `parent` (a thawed chunk may be empty, its callers in the parent).
const MAX_CHUNKS: usize = 4;
/// A chunk holds at most this many words (HotSpot's chunks are far smaller).
const MAX_CHUNK_WORDS: i64 = 1 << 20;

/// The `java.lang.Thread` id of the virtual thread `thread` (a `JavaThread*`) has mounted, 0
/// when none is or anything is unproven: a continuation is mounted (`_cont_entry`), the
/// thread's `_vthread` oop is not its own `_threadObj` (a platform thread running a bare
/// continuation has them equal, as a carrier has between its virtual threads), and the id is
/// read from that oop only inside a committed heap range. `mem` reads the thread and its two
/// OopHandles' slots directly: the caller's own, live, thread. Signal-safe: no allocation.
pub fn mounted_vthread(mem: &impl Memory, l: &ContLayout, thread: u64, heap: HeapRange) -> u64 {
    (|| {
        if thread == 0 || l.thread_vthread == 0 || l.thread_obj == 0 || l.thread_tid == 0 {
            return None;
        }
        if mem.word(thread.checked_add(l.thread_cont_entry)?) == 0 {
            return None;
        }
        let oop = |off: u64| -> Option<u64> {
            let handle = mem.word(thread.checked_add(off)?);
            (handle != 0 && handle.is_multiple_of(8)).then(|| mem.word(handle)).filter(|&o| o != 0)
        };
        let vthread = oop(l.thread_vthread)?;
        if Some(vthread) == oop(l.thread_obj) {
            return None;
        }
        heap_word(mem, heap(vthread)?, vthread.checked_add(l.thread_tid)?)
    })()
    .unwrap_or(0)
}

/// The [`THREAD_STATES`](crate::capture::THREAD_STATES) code of a carrier running a mounted
/// virtual thread, from its own `JavaThread::_thread_state` (JVMTI names such a carrier only
/// "waiting": the virtual thread's state is the carrier thread's): in Java or the VM (and
/// their transitions) running, in a native method `STATE_IN_NATIVE`; blocked (a pinned park,
/// a monitor) or unknown 0, no state. `mem` reads the caller's own, live, thread.
pub fn mounted_state(mem: &impl Memory, l: &ContLayout, thread: u64) -> u8 {
    match java_thread_state(mem, l, thread) {
        Some(IN_NATIVE | IN_NATIVE_TRANS) => 2,
        Some(IN_VM..=IN_JAVA_TRANS) => 1,
        _ => 0,
    }
}

/// HotSpot's `JavaThreadState` values (`globalDefinitions.hpp`): each state, then its
/// transition out.
const IN_NATIVE: i64 = 4;
const IN_NATIVE_TRANS: i64 = 5;
const IN_VM: i64 = 6;
const IN_JAVA_TRANS: i64 = 9;

/// `thread`'s `JavaThread::_thread_state` (the caller's own, live, thread); None where the
/// field is unknown.
fn java_thread_state(mem: &impl Memory, l: &ContLayout, thread: u64) -> Option<i64> {
    if thread == 0 || l.thread_state == 0 {
        return None;
    }
    Some(mem.int(thread.checked_add(l.thread_state)?, 4))
}

/// Whether `thread` (the caller's own `JavaThread*`) holds off every stop-the-world
/// collection now: in Java code or the VM, or in a transition out of them (a safepoint waits
/// for such a thread). Only then can objects it reads not move or be freed under the read; in
/// a native method or blocked, a collection may run meanwhile. Unknown: false.
pub fn holds_off_collections(mem: &impl Memory, l: &ContLayout, thread: u64) -> bool {
    matches!(java_thread_state(mem, l, thread), Some(IN_VM..=IN_JAVA_TRANS))
}

/// The committed heap range `[low, high)` holding an address, if it is in one.
pub type HeapRange = fn(u64) -> Option<(u64, u64)>;

/// A thread's current continuation, as one signal sees it (`entry` 0: none mounted).
#[derive(Clone, Copy, Debug, Default)]
pub struct ContView {
    pub layout: ContLayout,
    /// The innermost `ContinuationEntry` (on the thread's stack).
    pub entry: u64,
    /// `ContinuationEntry::_return_pc`: where `enterSpecial`'s callee returns.
    pub return_pc: u64,
    /// `StubRoutines::_cont_returnBarrier` (0: unknown).
    pub barrier: u64,
    /// The committed heap range holding an address, `[low, high)`; None: no heap is read.
    pub heap: Option<HeapRange>,
}

impl PartialEq for ContView {
    /// The same continuation seen the same way (the heap reader is not compared).
    fn eq(&self, o: &ContView) -> bool {
        (self.layout, self.entry, self.return_pc, self.barrier, self.heap.is_some())
            == (o.layout, o.entry, o.return_pc, o.barrier, o.heap.is_some())
    }
}

impl Eq for ContView {}

impl<M: Memory> Walker<'_, M> {
    /// At a frame that returned to `(pc, sp)`: when that is the return barrier of the mounted
    /// continuation, the frozen frames of its chunk are pushed and the walk goes on at the
    /// entry frame (`Some(Ok(pc, sp, fp))`); `Some(Err)` when the sink filled; None when this
    /// is no barrier.
    pub(super) fn cross_barrier(
        &self,
        entry: u64,
        pc: u64,
        sp: u64,
        out: &mut FrameSink,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<Result<(u64, u64, u64), Stop>> {
        let c = &self.thread.cont;
        if entry == 0 || c.return_pc == 0 || pc == c.return_pc || sp > entry {
            return None;
        }
        let argsize = word(entry + (ENTRY_ARGSIZE & !7)).map(|w| (w >> 32) as u32 as i32)?;
        let extension = if argsize > 0 { u64::from(argsize as u32) } else { 0 };
        let bottom_sender_sp = entry.checked_sub(extension * 8)? & !15;
        if sp != bottom_sender_sp {
            return None;
        }
        self.chunks_then_entry(c, entry, out, word)
    }

    /// The continuation entry the walk at `sp` is under: `entry` while sp has not passed it,
    /// else its parent's (`ContinuationEntry::_parent`: a continuation run inside another's),
    /// up to [`MAX_NESTED`] of them; 0 past the outermost.
    pub(super) fn entry_under(&self, mut entry: u64, sp: u64, word: &impl Fn(u64) -> Option<u64>) -> u64 {
        for _ in 0..MAX_NESTED {
            if entry == 0 || sp <= entry {
                return entry;
            }
            // Parents lie further down the stack (higher): anything else ends the chain.
            entry = word(entry + ENTRY_PARENT).filter(|&p| p > entry).unwrap_or(0);
        }
        0
    }

    /// In the blob starting at `blob_start`, a stub without a frame: when it is the blob of the
    /// continuation stubs (interrupted in thaw or the return barrier, or their native callees
    /// returning there), the mounted continuation's frames are all in its chunks (those thaw
    /// already copied back but did not yet jump to are missed: a short window), so they are
    /// pushed and the walk goes on at the entry frame, as [`Walker::cross_barrier`] does.
    pub(super) fn in_cont_stubs(
        &self,
        entry: u64,
        blob_start: u64,
        out: &mut FrameSink,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<Result<(u64, u64, u64), Stop>> {
        let c = &self.thread.cont;
        if entry == 0 || c.return_pc == 0 || c.barrier == 0 || self.blob(c.barrier)?.start != blob_start {
            return None;
        }
        self.chunks_then_entry(c, entry, out, word)
    }

    /// Pushes the frames of the continuation of `entry` from its chunks, then gives where the
    /// walk goes on: the entry frame (`enterSpecial`'s return pc, its sp and fp); `Some(Err)`
    /// when the sink filled; None when the entry's continuation cannot be read.
    fn chunks_then_entry(
        &self,
        c: &ContView,
        entry: u64,
        out: &mut FrameSink,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<Result<(u64, u64, u64), Stop>> {
        if let Err(stop) = self.walk_chunks(c, word(entry + ENTRY_CONT)?, out) {
            return Some(Err(stop));
        }
        Some(Ok((c.return_pc, entry, entry + ENTRY_SIZE)))
    }

    /// Pushes the frames of the continuation's chunks, top first; Err when the sink filled.
    /// Stops quietly at anything it cannot read or prove.
    fn walk_chunks(&self, c: &ContView, cont: u64, out: &mut FrameSink) -> Result<(), Stop> {
        let Some(heap) = c.heap else { return Ok(()) };
        let l = &c.layout;
        let oop_field = |obj: u64, off: u64| -> Option<u64> {
            let v = heap_word(self.mem, heap(obj)?, obj.checked_add(off)?)?;
            let o = match l.narrow {
                Some((base, shift)) => base.wrapping_add(u64::from(v as u32) << shift),
                None => v,
            };
            (o != 0 && o != l.narrow.map_or(0, |n| n.0)).then_some(o)
        };
        let mut chunk = oop_field(cont, l.cont_tail);
        for _ in 0..MAX_CHUNKS {
            let Some(ch) = chunk else { return Ok(()) };
            if !self.walk_chunk(l, heap, ch, out)? {
                return Ok(());
            }
            chunk = oop_field(ch, l.chunk_parent);
        }
        Ok(())
    }

    /// Pushes one chunk's frames, top first, as HotSpot's `StackChunkFrameStream` walks them
    /// (`stackChunkFrameStream_x86.inline.hpp`): a frame's pc is the word below its sp, the
    /// word below that its fp, relative to its own slot (in words) when the frame is
    /// interpreted. A compiled frame ends `frame_words` above its unextended sp; an
    /// interpreted one at fp + 2, its caller's unextended sp and its locals stored relative to
    /// fp (freeze's `relativize_interpreted_frame_metadata`). Ok(true): the chunk's bottom was
    /// reached (its parent holds the callers).
    fn walk_chunk(&self, l: &ContLayout, heap: HeapRange, ch: u64, out: &mut FrameSink) -> Result<bool, Stop> {
        let Some(range) = heap(ch) else { return Ok(false) };
        let int = |off: u64| heap_word(self.mem, range, ch.checked_add(off)?).map(|w| i64::from(w as u32 as i32));
        let (Some(size), Some(sp), Some(bottom)) = (int(l.chunk_size), int(l.chunk_sp), int(l.chunk_bottom)) else {
            return Ok(false);
        };
        if !(0..=MAX_CHUNK_WORDS).contains(&size) || sp < 0 || sp > bottom || bottom > size {
            return Ok(false);
        }
        let Some(stack) = ch.checked_add(l.chunk_stack) else { return Ok(false) };
        let end = stack + bottom as u64 * 8;
        if end > range.1 {
            return Ok(false);
        }
        if sp == bottom {
            return Ok(true); // empty: thawed whole, its callers in the parent
        }
        // A word of this chunk's stack.
        let cw = |a: u64| (a >= stack && a < end).then(|| heap_word(self.mem, range, a)).flatten();
        // A word read as a relative address: `base` plus that many words.
        let rel = |base: u64, a: u64| cw(a).map(|w| base.wrapping_add((w as i64).wrapping_mul(8) as u64));
        let slot = |fp: u64, off: i64| fp.wrapping_add(off.wrapping_mul(8) as u64);
        let locals_off = self.layout.interp_bcp + 1; // locals sit just above the bcp (frame_x86.hpp)
        let mut sp = stack + sp as u64 * 8;
        // The top frame's pc is the chunk's (`StackChunk.pc`, injected by the VM).
        let Some(mut pc) = heap_word(self.mem, range, ch.checked_add(l.chunk_pc).unwrap_or(0)) else {
            return Ok(false);
        };
        let mut unextended = sp;
        for _ in 0..out.frames.len() {
            if sp >= end {
                return Ok(true);
            }
            let slot_at = out.len;
            let next = if self.code.in_interpreter(pc) {
                let Some(fp) = rel(sp - 16, sp - 16).filter(|&fp| fp >= sp.saturating_sub(16) && fp < end) else {
                    return Ok(false);
                };
                let (Some(method), Some(bcp), Some(locals)) = (
                    cw(slot(fp, self.layout.interp_method)),
                    cw(slot(fp, self.layout.interp_bcp)),
                    rel(fp, slot(fp, locals_off)),
                ) else {
                    return Ok(false);
                };
                if method == 0 {
                    return Ok(false);
                }
                if !out.push(RawFrame::Interpreted { method, bcp }) {
                    return Err(Stop::Full);
                }
                out.set_addr(slot_at, 0); // not on the thread's stack: no depth
                if locals.wrapping_add(8) >= end {
                    return Ok(true); // the chunk's bottom frame
                }
                let Some(sender) = rel(fp, slot(fp, self.layout.interp_sender_sp)) else { return Ok(false) };
                unextended = sender;
                fp + 16
            } else {
                let Some(b) = self.blob(pc).filter(|b| b.frame_words > 0) else { return Ok(false) };
                if !out.push(RawFrame::Compiled { pc, method: b.method, interrupted: false }) {
                    return Err(Stop::Full);
                }
                out.set_addr(slot_at, 0);
                let Some(next) = b.frame_words.checked_mul(8).and_then(|n| unextended.checked_add(n)) else {
                    return Ok(false);
                };
                if next >= end.saturating_sub(16) {
                    return Ok(true);
                }
                unextended = next;
                next
            };
            if next <= sp {
                return Ok(false);
            }
            sp = next;
            let Some(ret) = cw(sp - 8) else { return Ok(false) };
            pc = ret;
        }
        Ok(false)
    }
}

/// A word of the heap, when it lies in the committed range `range` (a chunk and its frames lie
/// in one G1 region or one space).
fn heap_word(mem: &impl Memory, range: (u64, u64), a: u64) -> Option<u64> {
    (a >= range.0 && a.is_multiple_of(4) && a.checked_add(8)? <= range.1).then(|| mem.word(a))
}
