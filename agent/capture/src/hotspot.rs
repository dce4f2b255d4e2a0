//! hpm's own walker over HotSpot's frames: from the registers a signal
//! interrupted, the Java frames of the thread, without AsyncGetCallTrace.
//!
//! AsyncGetCallTrace walks with HotSpot's own `frame::sender`, which assumes a frame that is
//! walkable the way a safepoint leaves it: it gives up in compiled-method prologues and
//! epilogues, in stubs that keep no frame (arraycopy, vtable stubs) and in VM code called from
//! Java without a frame anchor. This walker unwinds physical frames the way the code was laid
//! out instead (x86-64, `frame_x86.hpp`):
//! - a blob of the code cache (nmethod, runtime stub) with its `_frame_size`: once its frame is
//!   complete, the caller's stack pointer is `sp + frame_size` and the return address is just
//!   below it; before (prologue) or after the frame was torn down (epilogue), the instruction
//!   at pc says where the return address is;
//! - the interpreter: a frame on `rbp`, with the `Method*` and bytecode pointer in fixed slots
//!   and the sender's stack pointer saved;
//! - a stub without a frame size (arraycopy, vtable and itable stubs): on `rbp` when it set one
//!   up, else the return address at the stack pointer;
//! - native or VM code: the thread's last Java frame (the anchor the VM sets on every
//!   transition out of Java), or, for a leaf call that sets none, the `rbp` chain of the native
//!   code (HotSpot keeps frame pointers) up to the first return into the code cache;
//! - the call stub (an entry frame): the Java frames further down, under VM code that called
//!   into Java again, from the anchor saved in its `JavaCallWrapper`.
//!
//! With native tables (`cstack=`, [`Walker::native`]) native and VM code is not crossed but
//! walked: each native frame is recorded ([`RawFrame::Native`]) and its caller found by
//! [`NativeTables::step`], so a return into the code cache or the interpreter resumes the Java
//! walk; below an entry frame the VM's and a JNI library's frames are walked from the call
//! stub's caller down to the Java frame that called them; a thread without Java frames (a VM
//! thread) is walked to its entry. Where a step gives up, the anchor (the thread's, or the
//! entry frame's) or the rbp hop takes over as without tables, and the sink says so
//! ([`NativeWalk`]).
//!
//! It records raw frames (a pc in compiled code, or `Method*` and bytecode pointer in the
//! interpreter); the processor names them later, off the signal path, with the code map's
//! inline scopes and the VM's jmethodIDs (`resolve`). Every read goes through [`Memory`] at an
//! address the walker first checked to lie in the thread's stack (above the interrupted stack
//! pointer) or in a committed part of the code cache, so a wrong guess costs a frame, never a
//! fault; every loop is bounded.

use crate::blob_cache::{BlobCache, FrameFacts, MemoWalk, WalkMemo, MAX_SEGMENT_LOG2};
use crate::native::NativeTables;

#[path = "hotspot_cont.rs"]
mod cont;
#[path = "hotspot_copy.rs"]
mod copy;
#[path = "hotspot_layout.rs"]
mod layout;
#[path = "hotspot_native.rs"]
mod native;
#[path = "hotspot_sink.rs"]
mod sink;
pub use cont::{
    holds_off_collections, mounted_state, mounted_vthread, ContLayout, ContView, HeapRange, CONTINUATION_ENTRY_SIZE,
};
pub use copy::{walk_copy, StackCopy};
use layout::BLOB_HEADER;
pub use layout::{CodeStart, CodeView, Heap, Int, Layout, Memory, NmethodTest, Regs, ThreadView, VmTable, MAX_HEAPS};
pub use sink::{
    interpreted_methods, leaf_slots, raw_frames, raw_stack_key, slots_key, FrameSink, NativeWalk, Probe, RawFrame,
};

/// A blob of the code cache found by pc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Blob {
    /// Where the blob starts (what the segment map led to).
    start: u64,
    /// Where it ends (its header's size past its start).
    end: u64,
    frame_words: u64,
    /// The first pc at which the frame is complete.
    frame_complete: u64,
    /// The `Method*` when the blob is an nmethod (0 when it is not, or unknown).
    method: u64,
    is_nmethod: bool,
}

/// Segment-map entries of a free segment (HotSpot's `free_sentinel`).
const FREE_SEGMENT: u8 = 0xFF;
/// Hops back through the segment map are bounded (each covers up to 254 segments).
const MAX_SEGMENT_HOPS: usize = 4096;
/// A frame is at most this big (HotSpot limits compiled frames far lower).
const MAX_FRAME_WORDS: u64 = 1 << 16;
/// Words a frameless stub may have pushed above its return address (saved registers).
const MAX_SAVED_WORDS: u64 = 16;
/// Words above sp searched for the return address of an interpreter activation being built.
const MAX_ENTRY_WORDS: u64 = 256;
/// Native frames followed up the rbp chain to reach Java from a leaf call without an anchor.
const MAX_NATIVE_HOPS: usize = 32;

/// How the walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stop {
    /// The bottom: an entry frame with no Java below, or a thread without Java frames.
    Bottom,
    /// The frame buffer is full.
    Full,
    /// An interpreter frame that was not set up yet (or not one at all).
    BadInterpreterFrame,
    /// A return address or frame pointer outside the stack or the code.
    Lost,
    /// Native code with no Java frame found above it.
    NoJavaFrame,
}

impl Stop {
    pub const ALL: [Stop; 5] = [Stop::Bottom, Stop::Full, Stop::BadInterpreterFrame, Stop::Lost, Stop::NoJavaFrame];

    pub fn from_u8(v: u8) -> Stop {
        Stop::ALL.get(usize::from(v)).copied().unwrap_or(Stop::Lost)
    }

    /// The reason a sample without a Java frame is counted under.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Bottom => "no_Java_frame",
            Stop::Full => "stack_full",
            Stop::BadInterpreterFrame => "interpreter_frame_not_set_up",
            Stop::Lost => "frame_lost",
            Stop::NoJavaFrame => "no_Java_frame_above_native",
        }
    }
}

/// The walker: a layout, the code cache and one thread's stack.
pub struct Walker<'a, M: Memory> {
    pub layout: &'a Layout,
    pub code: &'a CodeView,
    pub thread: &'a ThreadView,
    pub mem: &'a M,
    /// What earlier walks found of the blobs they walked through (see [`BlobCache`]); `None`:
    /// every blob is looked up in the code heap.
    pub cache: Option<&'a BlobCache>,
    /// The walking thread's last walk (with a cache only; see [`WalkMemo`]).
    pub memo: Option<&'a WalkMemo>,
    /// `cstack=`: native frames are unwound with these tables and recorded
    /// ([`RawFrame::Native`]); `None`: native code is crossed through the thread's anchor.
    pub native: Option<&'a NativeTables>,
}

impl<M: Memory> Walker<'_, M> {
    /// Walks from the interrupted registers; returns how it stopped (`Stop::Bottom` when it
    /// reached the bottom of the Java stack).
    pub fn walk(&self, regs: Regs, out: &mut FrameSink) -> Stop {
        // The cache's epoch and its loads' (the thread's last walk's epoch), read once.
        let epochs = self.cache.map(|c| (c.epoch(), c.memo_epoch()));
        let mut memo = self.memo.zip(epochs).map(|(m, (_, loads))| m.start(loads));
        let stop = self.walk_frames(regs, out, epochs, &mut memo);
        if let Some(m) = memo {
            m.finish();
        }
        stop
    }

    fn walk_frames(
        &self,
        regs: Regs,
        out: &mut FrameSink,
        epochs: Option<(u32, u32)>,
        memo: &mut Option<MemoWalk>,
    ) -> Stop {
        let lo = regs.sp;
        let hi = self.thread.stack_base;
        if lo == 0 || hi <= lo || !lo.is_multiple_of(8) || lo < self.thread.stack_end {
            return Stop::Lost;
        }
        let in_stack =
            |a: u64, size: u64| a >= lo && a.is_multiple_of(8) && a.checked_add(size).is_some_and(|e| e <= hi);
        let word = |a: u64| -> Option<u64> { in_stack(a, 8).then(|| self.mem.word(a)) };
        let (mut pc, mut sp, mut fp) = (regs.pc, regs.sp, regs.fp);
        // The interrupted frame may be half built or half torn down; frames reached through a
        // return address or an anchor are complete.
        let mut exact = false;
        let mut anchor_used = false;
        let mut found_java = false;
        // With native tables: the anchor of the current run of native frames (the thread's for
        // the first run, an entry frame's below it): no step passes its sp, and a step that
        // gives up falls back to it; and whether the rbp hop was tried.
        let t = self.thread;
        let mut run = native::NativeRun {
            section: (self.native.is_some() && t.anchor_sp >= lo && in_stack(t.anchor_sp, 8)).then_some((
                t.anchor_sp,
                t.anchor_pc,
                t.anchor_fp,
            )),
            hop_used: false,
        };
        let bound = 4 * out.frames.len() + 64;
        // The innermost mounted continuation's entry the walk has not passed yet.
        let mut entry = t.cont.entry;
        for _ in 0..bound {
            entry = self.entry_under(entry, sp, &word);
            if exact {
                // A return into a continuation's barrier: its frozen frames, then its entry.
                match self.cross_barrier(entry, pc, sp, out, &word) {
                    Some(Ok(next)) => {
                        (pc, sp, fp) = next;
                        found_java = true;
                        continue;
                    }
                    Some(Err(stop)) => return stop,
                    None => {}
                }
            }
            if self.code.in_interpreter(pc) {
                // fp is the interpreter frame's: Method*, bcp and the sender's sp in fixed
                // slots, the return address and the caller's fp above it. The sender's sp is
                // above fp (usually above the return address too; a call through the
                // interpreter's method-handle entries leaves it at the return address).
                let slot = |off: i64| fp.wrapping_add((off * 8) as u64);
                let frame = match (
                    word(slot(self.layout.interp_method)),
                    word(slot(self.layout.interp_bcp)),
                    word(slot(self.layout.interp_sender_sp)),
                    word(fp.wrapping_add(8)),
                    word(fp),
                ) {
                    (Some(method), Some(bcp), Some(sender_sp), Some(ret), Some(link))
                        if fp >= sp && sender_sp > fp && in_stack(sender_sp, 0) && method != 0 && self.is_code(ret) =>
                    {
                        Some((method, bcp, sender_sp, ret, link))
                    }
                    _ => None,
                };
                let Some((method, bcp, sender_sp, ret, link)) = frame else {
                    if exact {
                        return if found_java { Stop::Lost } else { Stop::BadInterpreterFrame };
                    }
                    // Interrupted while the interpreter enters a method (its frame not built
                    // yet) or leaves one: the method being entered is in rbx (the processor
                    // keeps it only if it is a method the JVM has an id for), and the return
                    // address is the first word above sp that points into code.
                    let Some((p, s, f)) = self.unwind_interpreter_entry(sp, fp, &word) else {
                        return Stop::BadInterpreterFrame;
                    };
                    let slot = out.len;
                    if !out.push_at(RawFrame::Interpreted { method: regs.method_reg, bcp: 0 }, sp) {
                        return Stop::Full;
                    }
                    out.set_addr(slot, 0); // its fp is not set up: no depth
                    found_java = true;
                    (pc, sp, fp) = (p, s, f);
                    exact = true;
                    continue;
                };
                let slot = out.len;
                if !out.push_at(RawFrame::Interpreted { method, bcp }, sp) {
                    return Stop::Full;
                }
                out.set_addr(slot, fp);
                found_java = true;
                (pc, sp, fp) = (ret, sender_sp, link);
                exact = true;
                continue;
            }
            if pc == self.code.call_stub_return && pc != 0 {
                // An entry frame: Java called from the VM. The Java frames under it hang off
                // the anchor its JavaCallWrapper saved.
                let Some(wrapper) = word(fp.wrapping_add((self.layout.entry_call_wrapper * 8) as u64)) else {
                    return Stop::Lost;
                };
                let anchor = wrapper.wrapping_add(self.layout.wrapper_anchor);
                let (Some(asp), Some(apc), Some(afp)) = (
                    word(anchor.wrapping_add(self.layout.anchor_sp)),
                    word(anchor.wrapping_add(self.layout.anchor_pc)),
                    word(anchor.wrapping_add(self.layout.anchor_fp)),
                ) else {
                    return Stop::Bottom; // the wrapper is not on this stack: nothing below
                };
                if asp == 0 {
                    return Stop::Bottom;
                }
                if asp <= sp || !in_stack(asp, 8) {
                    return Stop::Lost;
                }
                if self.native.is_some() && fp >= sp {
                    // The call stub's frame is on rbp: its caller is the VM's C++ (JavaCalls),
                    // walked natively down to the Java frame that called into the VM (a JNI
                    // library's frames included); the wrapper's anchor if a step gives up.
                    if let (Some(ret), Some(link)) = (word(fp.wrapping_add(8)), word(fp)) {
                        run.section = Some((asp, apc, afp));
                        (pc, sp, fp) = (ret, fp.wrapping_add(16), link);
                        exact = true;
                        continue;
                    }
                }
                // The VM frames between are C++: from the anchor on, a native hop is allowed
                // again (a leaf call out of the Java frames below is not possible).
                let Some(next) = self.anchored(asp, apc, afp, &word) else { return Stop::Lost };
                (pc, sp, fp) = next;
                exact = true;
                continue;
            }
            if let Some(b) = self.cached_blob(pc, sp, exact, epochs, memo, out) {
                if b.frame_words > 0 {
                    let slot = out.len;
                    if !out.push_at(RawFrame::Compiled { pc, method: b.method, interrupted: !exact }, sp) {
                        return Stop::Full;
                    }
                    found_java |= b.is_nmethod;
                    let next = if !exact && pc < b.frame_complete {
                        self.unwind_prologue(pc, sp, fp, b.frame_words, &word)
                    } else if !exact {
                        self.unwind_epilogue(pc, sp, fp, &word).or_else(|| self.unwind_sized(sp, b.frame_words, &word))
                    } else {
                        self.unwind_sized(sp, b.frame_words, &word)
                    };
                    // The complete frame's sp: where the walk came through a return address,
                    // sp itself; in a prologue or epilogue, its sender's sp less the frame.
                    let addr = match next {
                        _ if exact => sp,
                        Some((_, s, _)) => s.wrapping_sub(8 * b.frame_words),
                        None if pc >= b.frame_complete => sp,
                        None => 0,
                    };
                    out.set_addr(slot, addr);
                    let Some((p, s, f)) = next else { return Stop::Lost };
                    if s <= sp {
                        return Stop::Lost;
                    }
                    (pc, sp, fp) = (p, s, f);
                    exact = true;
                    continue;
                }
                // In the continuation stubs (thaw, the return barrier): the mounted
                // continuation's frames are in its chunk, its entry on the stack.
                match self.in_cont_stubs(entry, b.start, out, &word) {
                    Some(Ok(next)) => {
                        (pc, sp, fp) = next;
                        found_java = true;
                        exact = true;
                        continue;
                    }
                    Some(Err(stop)) => return stop,
                    None => {}
                }
                // A stub without a frame size: frameless (the return address at sp), or on rbp.
                let Some((p, s, f)) = self.unwind_stub(sp, fp, !exact, &word) else { return Stop::Lost };
                (pc, sp, fp) = (p, s, f);
                exact = true;
                continue;
            }
            if let Some(tables) = self.native {
                // Native or VM code, walked: the frame recorded, its caller from the tables.
                match self.native_step(tables, (pc, sp, fp), exact, found_java, &mut run, out, &in_stack, &word) {
                    native::Step::Next(p, s, f) => {
                        (pc, sp, fp) = (p, s, f);
                        exact = true;
                        continue;
                    }
                    native::Step::End(stop) => return stop,
                }
            }
            // Native or VM code. The thread's anchor, set on every transition out of Java,
            // names its last Java frame; a leaf call from Java sets none, and there the native
            // frames lead back to Java through rbp.
            if !anchor_used {
                anchor_used = true;
                if t.anchor_sp != 0 && t.anchor_sp >= sp && in_stack(t.anchor_sp, 8) {
                    let Some(next) = self.anchored(t.anchor_sp, t.anchor_pc, t.anchor_fp, &word) else {
                        return Stop::Lost;
                    };
                    (pc, sp, fp) = next;
                    exact = true;
                    continue;
                }
                if let Some((p, s, f)) = self.unwind_native(sp, fp, &word) {
                    (pc, sp, fp) = (p, s, f);
                    exact = true;
                    continue;
                }
            }
            return if found_java { Stop::Lost } else { Stop::NoJavaFrame };
        }
        // Out of steps (pathological stacks only): not a full sink.
        if found_java {
            Stop::Lost
        } else {
            Stop::NoJavaFrame
        }
    }

    /// The caller of an interpreter activation that is being built or torn down: the first
    /// word above sp that returns into code (the words below it are locals and arguments the
    /// entry pushed: values, references, never code addresses in practice), at most
    /// [`MAX_ENTRY_WORDS`] up. The caller's fp is rbp, or the word rbp points at when the
    /// entry already saved it just below the return address.
    fn unwind_interpreter_entry(
        &self,
        sp: u64,
        fp: u64,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<(u64, u64, u64)> {
        for i in 0..MAX_ENTRY_WORDS {
            let a = sp.checked_add(8 * i)?;
            let v = word(a)?;
            if self.is_code(v) {
                let caller_fp = if fp.wrapping_add(8) == a { word(fp)? } else { fp };
                return Some((v, a + 8, caller_fp));
            }
        }
        None
    }

    /// Whether a return address points into code the walker can continue from (the call
    /// stub's return address included).
    fn is_code(&self, pc: u64) -> bool {
        self.code.contains(pc) || self.code.in_interpreter(pc) || (pc == self.code.call_stub_return && pc != 0)
    }

    /// The caller of a frame that has pushed nothing (or popped everything): the return
    /// address at sp, rbp untouched.
    fn popped(&self, sp: u64, fp: u64, word: &impl Fn(u64) -> Option<u64>) -> Option<(u64, u64, u64)> {
        Some((word(sp)?, sp + 8, fp))
    }

    /// The caller of a frame that has pushed rbp and nothing more: the saved rbp at sp, the
    /// return address above it.
    fn pushed(&self, sp: u64, word: &impl Fn(u64) -> Option<u64>) -> Option<(u64, u64, u64)> {
        Some((word(sp + 8)?, sp + 16, word(sp)?))
    }

    /// The first Java frame under an anchor (the thread's, or an entry frame's saved one): at
    /// its pc, or, where the anchor keeps none, at the return address just below its sp.
    fn anchored(&self, sp: u64, pc: u64, fp: u64, word: &impl Fn(u64) -> Option<u64>) -> Option<(u64, u64, u64)> {
        let pc = if pc != 0 { pc } else { word(sp - 8)? };
        Some((pc, sp, fp))
    }

    /// The blob at `pc` (with `exact`, a return address or an anchor's pc at stack address
    /// `sp`), from the thread's last walk or the shared cache when an earlier walk of this
    /// epoch (the cache's and its loads', `epochs`, read at the walk's start) kept it; else
    /// from the code heap, and kept.
    fn cached_blob(
        &self,
        pc: u64,
        sp: u64,
        exact: bool,
        epochs: Option<(u32, u32)>,
        memo: &mut Option<MemoWalk>,
        out: &mut FrameSink,
    ) -> Option<Blob> {
        let (Some(cache), Some((epoch, loads))) = (self.cache, epochs) else { return self.blob(pc) };
        let h = self.code.heap_of(pc)?;
        if h.log2_segment > MAX_SEGMENT_LOG2 {
            return self.blob(pc);
        }
        let segment = h.low + (((pc - h.low) >> h.log2_segment) << h.log2_segment);
        out.blob_lookups += 1;
        let remembered = if exact { memo.as_mut().and_then(|m| m.find(sp, pc)) } else { None };
        // A pc in the segment past the blob's end (padding) is no blob's, as `blob` finds.
        let shared = || cache.get(segment, epoch).filter(|f| pc - segment < f.valid);
        let facts = if let Some(f) = remembered {
            out.blob_memo_hits += 1;
            f
        } else if let Some(f) = shared() {
            out.blob_hits += 1;
            f
        } else {
            let b = self.blob(pc)?;
            let seg_size = 1 << h.log2_segment;
            let complete = b.frame_complete.saturating_sub(segment).min(seg_size);
            let valid = b.end.saturating_sub(segment).min(seg_size);
            let (frame_words, method, is_nmethod) = (b.frame_words, b.method, b.is_nmethod);
            let f = FrameFacts { frame_words, method, is_nmethod, complete, valid };
            cache.put_for_walk(segment, epoch, loads, f);
            f
        };
        if let (true, Some(m)) = (exact, memo.as_mut()) {
            m.record(sp, pc, FrameFacts { complete: 0, ..facts });
        }
        Some(Blob {
            start: segment,
            end: segment + facts.valid.min(1 << h.log2_segment),
            frame_words: facts.frame_words,
            frame_complete: segment + facts.complete,
            method: facts.method,
            is_nmethod: facts.is_nmethod,
        })
    }

    /// The blob containing `pc`, through its code heap's segment map (`CodeHeap::find_start`).
    fn blob(&self, pc: u64) -> Option<Blob> {
        let l = self.layout;
        let h = self.code.heap_of(pc)?;
        let mut idx = (pc - h.low) >> h.log2_segment;
        if h.seg_low.checked_add(idx).is_none_or(|a| a >= h.seg_high) {
            return None;
        }
        let mut hops = 0;
        loop {
            let v = self.mem.byte(h.seg_low + idx);
            if v == FREE_SEGMENT {
                return None;
            }
            if v == 0 {
                break;
            }
            hops += 1;
            if hops > MAX_SEGMENT_HOPS || u64::from(v) > idx {
                return None;
            }
            idx -= u64::from(v);
        }
        let block = h.low + (idx << h.log2_segment);
        let start = block + l.heap_block_size;
        let header_end = start.wrapping_add(BLOB_HEADER);
        if header_end > h.high || self.mem.int(block + l.block_used.off, l.block_used.width) == 0 {
            return None;
        }
        let int = |f: Int| self.mem.int(start.wrapping_add(f.off), f.width);
        let size = int(l.blob_size);
        if size <= 0 || pc >= start.wrapping_add(size as u64) {
            return None;
        }
        let code = match l.blob_code {
            CodeStart::Pointer(o) => self.mem.word(start.wrapping_add(o)),
            CodeStart::Offset(f) => start.wrapping_add(int(f) as u64),
        };
        let frame = int(l.blob_frame_size);
        let complete = int(l.blob_frame_complete);
        let is_nmethod = match l.nmethod_test {
            NmethodTest::Vtable(v) => self.mem.word(start) == v,
            NmethodTest::Kind { field, nmethod } => int(field) == nmethod,
            NmethodTest::Unknown => false,
        };
        Some(Blob {
            start,
            end: start.wrapping_add(size as u64),
            frame_words: if (0..MAX_FRAME_WORDS as i64).contains(&frame) { frame as u64 } else { 0 },
            frame_complete: if complete >= 0 { code.wrapping_add(complete as u64) } else { code },
            method: if is_nmethod { self.mem.word(start.wrapping_add(l.nmethod_method)) } else { 0 },
            is_nmethod,
        })
    }

    /// A complete frame of `words` words (return address and saved rbp included).
    fn unwind_sized(&self, sp: u64, words: u64, word: &impl Fn(u64) -> Option<u64>) -> Option<(u64, u64, u64)> {
        let sender_sp = sp.checked_add(words * 8)?;
        let ret = word(sender_sp.checked_sub(8)?)?;
        let link = word(sender_sp - 16)?;
        Some((ret, sender_sp, link))
    }

    /// Before the frame is complete. HotSpot's prologues on x86-64 (C1 `build_frame`, C2
    /// `verified_entry`) are either a stack bang (`mov [rsp-n], eax`), `push rbp`, optionally
    /// `mov rbp, rsp`, then `sub rsp, n`; or, for a small C2 frame without a bang,
    /// `sub rsp, imm32` first and `mov [rsp+n-8], rbp` after; then possibly an nmethod entry
    /// barrier (JDK 21+, or ZGC/Shenandoah) with the frame already built. The instruction at pc
    /// says where the return address is; at any other instruction, the first of: the whole
    /// frame, the return address at sp, one word up, whose return address points into code.
    fn unwind_prologue(
        &self,
        pc: u64,
        sp: u64,
        fp: u64,
        words: u64,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<(u64, u64, u64)> {
        let b = |i: u64| self.code_byte(pc.wrapping_add(i));
        let before = |i: u64| self.code_byte(pc.wrapping_sub(i));
        let at_sp = || self.popped(sp, fp, word);
        let pushed = || self.pushed(sp, word);
        let after_push = before(1) == Some(0x55)
            || matches!(
                (before(3), before(2), before(1)),
                (Some(0x48), Some(0x89), Some(0xe5)) | (Some(0x48), Some(0x8b), Some(0xec))
            );
        match (b(0), b(1), b(2), b(3)) {
            // push rbp; the stack bang
            (Some(0x55), ..) | (Some(0x89), Some(0x84), Some(0x24), _) => at_sp(),
            // sub rsp, imm8 (after push rbp)
            (Some(0x48), Some(0x83), Some(0xec), _) => pushed(),
            // sub rsp, imm32: after push rbp, or first (no bang)
            (Some(0x48), Some(0x81), Some(0xec), _) => {
                if after_push {
                    pushed()
                } else {
                    at_sp()
                }
            }
            // mov rbp, rsp (after push rbp)
            (Some(0x48), Some(0x89), Some(0xe5), _) | (Some(0x48), Some(0x8b), Some(0xec), _) => pushed(),
            // mov [rsp+d], rbp (no bang: the frame is allocated, rbp not saved yet)
            (Some(0x48), Some(0x89), Some(0x6c), Some(0x24)) => {
                let d = u64::try_from(b(4)? as i8).ok()?;
                let slot = sp.checked_add(d + 8)?;
                Some((word(slot)?, slot + 8, fp))
            }
            (Some(0x48), Some(0x89), Some(0xac), Some(0x24)) => {
                let d = u32::from_le_bytes([b(4)?, b(5)?, b(6)?, b(7)?]);
                let slot = sp.checked_add(u64::from(d) + 8)?;
                Some((word(slot)?, slot + 8, fp))
            }
            _ => {
                let ok = |r: &Option<(u64, u64, u64)>| r.is_some_and(|(p, _, _)| self.is_code(p));
                [self.unwind_sized(sp, words, word), at_sp(), pushed()].into_iter().find(ok).flatten()
            }
        }
    }

    /// After the frame was torn down: at `pop rbp`, at the return poll (`cmp rsp, [r15+d]`,
    /// its `ja`) or at `ret`. None when the instruction at pc is none of these (the frame is
    /// whole).
    fn unwind_epilogue(
        &self,
        pc: u64,
        sp: u64,
        fp: u64,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<(u64, u64, u64)> {
        let b = |i: u64| self.code_byte(pc + i);
        match (b(0), b(1), b(2)) {
            (Some(0x5d), _, _) => self.pushed(sp, word),
            (Some(0xc3), _, _) | (Some(0x49), Some(0x3b), Some(0x67 | 0xa7)) => self.popped(sp, fp, word),
            (Some(0x0f), Some(0x87), _) if b(6) == Some(0xc3) => self.popped(sp, fp, word),
            _ => None,
        }
    }

    /// A stub with no frame size: frameless when the word at sp returns into code; else on
    /// rbp when rbp is just above sp and its saved return address returns into code.
    /// `interrupted`: the stub was interrupted (not returned to), so it may have pushed
    /// registers it saves (C1's runtime stubs without a frame do): then the return address is
    /// the first of the next few words that points into code.
    fn unwind_stub(
        &self,
        sp: u64,
        fp: u64,
        interrupted: bool,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Option<(u64, u64, u64)> {
        if let Some(caller) = self.popped(sp, fp, word).filter(|&(p, _, _)| self.is_code(p)) {
            return Some(caller);
        }
        if fp >= sp && fp - sp <= 4096 {
            let ret = word(fp.wrapping_add(8))?;
            if self.is_code(ret) {
                return Some((ret, fp.wrapping_add(16), word(fp)?));
            }
        }
        if interrupted {
            for i in 1..MAX_SAVED_WORDS {
                let a = sp.checked_add(8 * i)?;
                let v = word(a)?;
                if self.is_code(v) {
                    return Some((v, a + 8, fp));
                }
            }
        }
        None
    }

    /// From native code called by Java without an anchor: up the rbp chain to the first
    /// return address into the code cache.
    fn unwind_native(&self, sp: u64, fp: u64, word: &impl Fn(u64) -> Option<u64>) -> Option<(u64, u64, u64)> {
        // A leaf function that pushed nothing: the return address at sp.
        if let Some(caller) = self.popped(sp, fp, word).filter(|&(p, _, _)| self.is_code(p)) {
            return Some(caller);
        }
        let mut fp = fp;
        let mut last = sp;
        for _ in 0..MAX_NATIVE_HOPS {
            if fp < last {
                return None;
            }
            let ret = word(fp.wrapping_add(8))?;
            let link = word(fp)?;
            if self.is_code(ret) {
                return Some((ret, fp.wrapping_add(16), link));
            }
            last = fp.wrapping_add(16);
            fp = link;
        }
        None
    }

    /// A byte of committed code (prologue and epilogue checks), None outside it.
    fn code_byte(&self, a: u64) -> Option<u8> {
        self.code.contains(a).then(|| self.mem.byte(a))
    }
}

/// For other modules' tests: fills a sink as the walker does.
#[cfg(any(test, feature = "test-support"))]
pub mod tests_support {
    pub fn push(sink: &mut super::FrameSink, f: super::RawFrame) -> bool {
        sink.push(f)
    }
}

#[cfg(test)]
#[path = "hotspot_tests/mod.rs"]
mod tests;
