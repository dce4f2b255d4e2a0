//! Virtual threads (JDK 21+): the walk across a continuation's return barrier.
//!
//! A mounted virtual thread runs on its carrier's stack above `Continuation.enterSpecial`,
//! whose frame holds a `ContinuationEntry`. After a yield, HotSpot thaws only the top frames
//! back onto the stack (`continuationFreezeThaw.cpp`, "lazy copy"): the bottom thawed frame
//! returns into `StubRoutines::cont_returnBarrier`, and its callers stay frozen in the heap,
//! in the continuation's `tail` stack chunk, laid out as on a stack. This module recognises
//! the barrier by where the bottom thawed frame ends (the entry's `bottom_sender_sp`, where
//! no other frame can end: the entry frame's own return pc is the only other one there),
//! walks the chunk's compiled frames, then resumes the walk at the entry frame, so the
//! virtual thread's frames reach `VirtualThread.run` and the carrier's follow.
//!
//! Heap memory is read only after the address was proven inside a committed part of the heap
//! ([`ContView::heap`]); every loop is bounded. Interpreted frames in a chunk (their metadata
//! is stored relative to their fp) end the chunk's walk: the frames found stay, the walk goes
//! on at the entry.

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
}

/// `ContinuationEntry`'s fields on x86-64 (product builds: the empty platform part padded to
/// a word; `continuationEntry.hpp`).
const ENTRY_CONT: u64 = 16;
const ENTRY_ARGSIZE: u64 = 32 + 4;
/// `ContinuationEntry::size()`: the entry frame's fp is just above it.
const ENTRY_SIZE: u64 = 64;
/// Chunks followed through `parent` (a thawed chunk may be empty, its callers in the parent).
const MAX_CHUNKS: usize = 4;
/// A chunk holds at most this many words (HotSpot's chunks are far smaller).
const MAX_CHUNK_WORDS: i64 = 1 << 20;

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
    /// The committed heap range holding an address, `[low, high)`; None: no heap is read.
    pub heap: Option<HeapRange>,
}

impl PartialEq for ContView {
    /// The same continuation seen the same way (the heap reader is not compared).
    fn eq(&self, o: &ContView) -> bool {
        (self.layout, self.entry, self.return_pc, self.heap.is_some())
            == (o.layout, o.entry, o.return_pc, o.heap.is_some())
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
        pc: u64,
        sp: u64,
        out: &mut FrameSink,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<Result<(u64, u64, u64), Stop>> {
        let c = &self.thread.cont;
        if c.entry == 0 || c.return_pc == 0 || pc == c.return_pc || sp > c.entry {
            return None;
        }
        let argsize = word(c.entry + (ENTRY_ARGSIZE & !7)).map(|w| (w >> 32) as u32 as i32)?;
        let extension = if argsize > 0 { u64::from(argsize as u32) } else { 0 };
        let bottom_sender_sp = c.entry.checked_sub(extension * 8)? & !15;
        if sp != bottom_sender_sp {
            return None;
        }
        if let Err(stop) = self.walk_chunks(c, word(c.entry + ENTRY_CONT)?, out) {
            return Some(Err(stop));
        }
        Some(Ok((c.return_pc, c.entry, c.entry + ENTRY_SIZE)))
    }

    /// Pushes the compiled frames of the continuation's chunks, top first; Err when the sink
    /// filled. Stops quietly at anything it cannot read.
    fn walk_chunks(&self, c: &ContView, cont: u64, out: &mut FrameSink) -> Result<(), Stop> {
        let Some(heap) = c.heap else { return Ok(()) };
        let l = &c.layout;
        // One committed range at a time: a chunk and its frames lie in one region or space.
        let hword = |range: (u64, u64), a: u64| -> Option<u64> {
            (a >= range.0 && a.is_multiple_of(4) && a.checked_add(8)? <= range.1).then(|| self.mem.word(a))
        };
        let oop_field = |obj: u64, off: u64| -> Option<u64> {
            let range = heap(obj)?;
            let v = hword(range, obj + off)?;
            let o = match l.narrow {
                Some((base, shift)) => base.wrapping_add(u64::from(v as u32) << shift),
                None => v,
            };
            (o != 0 && o != l.narrow.map_or(0, |n| n.0)).then_some(o)
        };
        let mut chunk = oop_field(cont, l.cont_tail);
        for _ in 0..MAX_CHUNKS {
            let Some(ch) = chunk else { return Ok(()) };
            let Some(range) = heap(ch) else { return Ok(()) };
            let int = |off: u64| hword(range, ch + off).map(|w| i64::from(w as u32 as i32));
            let (Some(size), Some(sp), Some(bottom)) = (int(l.chunk_size), int(l.chunk_sp), int(l.chunk_bottom)) else {
                return Ok(());
            };
            if !(0..=MAX_CHUNK_WORDS).contains(&size) || sp < 1 || sp > bottom || bottom > size {
                return Ok(());
            }
            let stack = ch + l.chunk_stack;
            let end = stack + bottom as u64 * 8;
            if end > range.1 {
                return Ok(());
            }
            if sp < bottom {
                // The top frame's pc is the chunk's (`StackChunk.pc`, injected by the VM).
                let mut fsp = stack + sp as u64 * 8;
                let Some(mut pc) = hword(range, ch + l.chunk_pc) else { return Ok(()) };
                for _ in 0..out.frames.len() {
                    if fsp >= end {
                        break;
                    }
                    let Some(b) = self.blob(pc).filter(|b| b.frame_words > 0) else { return Ok(()) };
                    if !out.push_at(RawFrame::Compiled { pc, method: b.method, interrupted: false }, fsp) {
                        return Err(Stop::Full);
                    }
                    out.set_addr(out.len - 2, 0);
                    fsp += b.frame_words * 8;
                    let Some(ret) = hword(range, fsp - 8) else { return Ok(()) };
                    pc = ret;
                }
                if fsp != end {
                    return Ok(());
                }
            }
            chunk = oop_field(ch, l.chunk_parent);
        }
        Ok(())
    }
}
