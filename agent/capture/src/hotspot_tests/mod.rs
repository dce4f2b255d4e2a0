//! The frame walker over a synthetic process: a fake stack, a fake code heap with its segment
//! map and a fake interpreter range, laid out with JDK 17's offsets (x86-64). The fake memory
//! records every read outside what the walker may read (the stack between the interrupted sp
//! and the stack base, the code heap, the segment map, the committed part of a fake Java heap),
//! so each test also checks that.

use super::*;
use crate::blob_cache::WalkMemo;
use crate::capture::{CallFrame, RawKey, SlotKind};
use crate::native::NativeStop;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

// The fake address space.
const STACK_LO: u64 = 0x7fff_0000_0000;
const STACK_SIZE: u64 = 0x4000;
const STACK_BASE: u64 = STACK_LO + STACK_SIZE;
const LOG2_SEG: u32 = 6;
const SEGS: u64 = 512;
const HEAP_LO: u64 = 0x1000_0000;
const HEAP_HI: u64 = HEAP_LO + (SEGS << LOG2_SEG);
const SEG_LO: u64 = 0x2000_0000;
const SEG_HI: u64 = SEG_LO + SEGS;
const INTERP_LO: u64 = 0x3000_0000;
const INTERP_HI: u64 = INTERP_LO + 0x1_0000;
/// The Java heap (virtual threads' stack chunks): committed up to `JHEAP_COMMITTED`.
const JHEAP_LO: u64 = 0x4000_0000;
const JHEAP_COMMITTED: u64 = JHEAP_LO + 0x2000;
const JHEAP_HI: u64 = JHEAP_LO + 0x4000;
/// A pc in native code (outside the code cache and the interpreter).
const NATIVE_PC: u64 = 0x5555_0000_1000;

// Blobs as `Fake::blob` lays them out (JDK 17 offsets, see `layout`).
const BLOB_SEGS: u64 = 16;
const CODE_OFF: u64 = 256;
const KIND_NMETHOD: u8 = 1;
const KIND_STUB: u8 = 2;
/// frame_complete_offset of the nmethods `Fake::nmethod` places.
const COMPLETE: u64 = 0x20;
/// A pc in an nmethod's body, after its prologue.
const BODY: u64 = 0x40;

// JavaCallWrapper and JavaFrameAnchor offsets.
const WRAPPER_ANCHOR: u64 = 32;
const ANCHOR_SP: u64 = 0;
const ANCHOR_PC: u64 = 8;
const ANCHOR_FP: u64 = 16;

/// An interpreter frame's fp is this far above its expression stack top (`Fake::interp_frame`).
const INTERP_FP: u64 = 10 * 8;

// Methods, bytecode pointers, pcs in the interpreter.
const M_A: u64 = 0x0800_00a0;
const M_B: u64 = 0x0800_00b0;
const M_C: u64 = 0x0800_00c0;
const M_I: u64 = 0x0800_0100;
const M_J: u64 = 0x0800_0200;
const BCP_I: u64 = 0x7f12_3456_789a;
const BCP_J: u64 = 0x7f12_0000_0044;
const INTERP_RET: u64 = INTERP_LO + 0x234;

/// Unwritten slots of a sink keep these, so a test sees any write past `len`.
const SENTINEL: CallFrame = CallFrame { lineno: -77, method_id: 0xdead_beef };
/// (A method tag: a pc or interpreted tag past `len` is a write past it.)
const SENTINEL_KIND: SlotKind = SlotKind::Method;

/// JDK 17's layout (the offsets the fake is built with).
fn layout() -> Layout {
    Layout {
        code_heaps: 0x6000_0000,
        interpreter_code: 0x6000_0008,
        call_stub_return: 0x6000_0010,
        array_len: 0,
        array_data: 8,
        heap_memory: 0x10,
        heap_segmap: 0x60,
        heap_log2_segment: Int { off: 0xb0, width: 4 },
        vs_high: 0x18,
        vs_low: 0x10,
        heap_block_size: 16,
        block_used: Int { off: 8, width: 1 },
        queue_buffer: 8,
        queue_limit: Int { off: 0x14, width: 4 },
        blob_size: Int { off: 12, width: 4 },
        blob_frame_size: Int { off: 28, width: 4 },
        blob_frame_complete: Int { off: 20, width: 4 },
        blob_code: CodeStart::Pointer(32),
        nmethod_method: 112,
        nmethod_test: NmethodTest::Kind { field: Int { off: 8, width: 1 }, nmethod: i64::from(KIND_NMETHOD) },
        thread_anchor: 0x2f0,
        anchor_sp: ANCHOR_SP,
        anchor_pc: ANCHOR_PC,
        anchor_fp: ANCHOR_FP,
        thread_stack_base: 0x1b8,
        thread_stack_size: 0x1c0,
        wrapper_anchor: WRAPPER_ANCHOR,
        method_const: 8,
        const_code_size: Int { off: 0x2c, width: 2 },
        const_size: 0x38,
        interp_sender_sp: -1,
        interp_method: -3,
        interp_bcp: -8,
        entry_call_wrapper: -6,
    }
}

struct Region {
    lo: u64,
    bytes: Vec<u8>,
}

/// The walked process's memory: the stack, the code heap and its segment map. Reads outside
/// `[floor, top)` of the stack, the heap or the segment map are recorded, not served.
struct FakeMem {
    regions: Vec<Region>,
    floor: Cell<u64>,
    top: Cell<u64>,
    violations: RefCell<Vec<(u64, u64)>>,
    reads: Cell<u64>,
}

impl FakeMem {
    fn allowed(&self, a: u64, n: u64) -> bool {
        let inside = |lo: u64, hi: u64| a >= lo && a.checked_add(n).is_some_and(|e| e <= hi);
        inside(self.floor.get().max(STACK_LO), self.top.get().min(STACK_BASE))
            || inside(HEAP_LO, HEAP_HI)
            || inside(SEG_LO, SEG_HI)
            || inside(JHEAP_LO, JHEAP_COMMITTED)
    }

    /// `n` bytes at `a`, little-endian.
    fn read(&self, a: u64, n: u64) -> u64 {
        self.reads.set(self.reads.get() + 1);
        if !self.allowed(a, n) {
            self.violations.borrow_mut().push((a, n));
            return 0;
        }
        let r = self.regions.iter().find(|r| a >= r.lo && a + n <= r.lo + r.bytes.len() as u64).expect("backed");
        let off = (a - r.lo) as usize;
        r.bytes[off..off + n as usize].iter().rev().fold(0, |v, &b| (v << 8) | u64::from(b))
    }

    fn write(&mut self, a: u64, bytes: &[u8]) {
        let r = self
            .regions
            .iter_mut()
            .find(|r| a >= r.lo && a + bytes.len() as u64 <= r.lo + r.bytes.len() as u64)
            .unwrap_or_else(|| panic!("the fake has no memory at {a:#x}"));
        let off = (a - r.lo) as usize;
        r.bytes[off..off + bytes.len()].copy_from_slice(bytes);
    }
}

impl Memory for FakeMem {
    fn word(&self, addr: u64) -> u64 {
        self.read(addr, 8)
    }
    fn byte(&self, addr: u64) -> u8 {
        self.read(addr, 1) as u8
    }
    fn int(&self, addr: u64, width: u8) -> i64 {
        match width {
            1 => i64::from(self.read(addr, 1) as u8),
            2 => i64::from(self.read(addr, 2) as u16 as i16),
            4 => i64::from(self.read(addr, 4) as u32 as i32),
            _ => self.read(addr, 8) as i64,
        }
    }
}

/// What one walk gave.
struct Outcome {
    frames: Vec<RawFrame>,
    /// Each frame's activation address (`FrameSink::addrs`).
    addrs: Vec<u64>,
    stop: Stop,
    len: usize,
    violations: Vec<(u64, u64)>,
    reads: u64,
    /// The sink's blob lookups, and of those found in the memo and in the cache.
    blob_lookups: u32,
    blob_memo_hits: u32,
    blob_hits: u32,
    /// What the native steps did (`Fake::native`).
    native: NativeWalk,
}

/// A process to walk: memory, layout, code cache and thread.
struct Fake {
    mem: FakeMem,
    layout: Layout,
    code: CodeView,
    thread: ThreadView,
    next_seg: u64,
    /// The walker's blob cache and the thread's memo, when a test gives them.
    cache: Option<BlobCache>,
    memo: Option<WalkMemo>,
    /// `cstack=`: native frames walked with these tables (none added: frame pointers only).
    native: Option<NativeTables>,
}

impl Fake {
    /// An empty stack, a code heap of nops holding only the call stub.
    fn new() -> Fake {
        Fake::with_code(|_| 0x90)
    }

    /// As `new`, with the code heap's bytes from `fill` (blob headers are written over them).
    fn with_code(mut fill: impl FnMut(u64) -> u8) -> Fake {
        let heap = (HEAP_LO..HEAP_HI).map(&mut fill).collect();
        let mem = FakeMem {
            regions: vec![
                Region { lo: STACK_LO, bytes: vec![0; STACK_SIZE as usize] },
                Region { lo: HEAP_LO, bytes: heap },
                Region { lo: SEG_LO, bytes: vec![FREE_SEGMENT; SEGS as usize] },
                Region { lo: JHEAP_LO, bytes: vec![0; (JHEAP_HI - JHEAP_LO) as usize] },
            ],
            floor: Cell::new(STACK_LO),
            top: Cell::new(STACK_BASE),
            violations: RefCell::new(Vec::new()),
            reads: Cell::new(0),
        };
        let mut code = CodeView { nheaps: 1, interp: (INTERP_LO, INTERP_HI), ..CodeView::default() };
        code.heaps[0] = Heap { low: HEAP_LO, high: HEAP_HI, seg_low: SEG_LO, seg_high: SEG_HI, log2_segment: LOG2_SEG };
        let thread = ThreadView { stack_base: STACK_BASE, stack_end: STACK_LO, ..ThreadView::default() };
        let mut f = Fake { mem, layout: layout(), code, thread, next_seg: 0, cache: None, memo: None, native: None };
        // The call stub lives in a buffer blob without a frame size; Java returns into it here.
        let stub = f.blob(KIND_STUB, 0, 0, 0);
        f.code.call_stub_return = stub + 0x40;
        f
    }

    fn put(&mut self, a: u64, v: u64) {
        self.mem.write(a, &v.to_le_bytes());
    }

    fn put_bytes(&mut self, a: u64, bytes: &[u8]) {
        self.mem.write(a, bytes);
    }

    /// A blob of `nsegs` segments from segment `first`: its HeapBlock, its header and a segment
    /// map marking it used (0 at its first segment, then hops back of at most 254). Returns
    /// the blob's start (after the HeapBlock).
    fn blob_at(&mut self, first: u64, nsegs: u64, kind: u8, frame_words: i32, complete: i32, method: u64) -> u64 {
        for i in 0..nsegs {
            let hop = if i == 0 { 0 } else { (i - 1) % 254 + 1 };
            self.put_bytes(SEG_LO + first + i, &[hop as u8]);
        }
        let block = HEAP_LO + (first << LOG2_SEG);
        self.put(block, nsegs); // HeapBlock::_header._length
        self.put_bytes(block + 8, &[1]); // _used
        let start = block + 16;
        let size = (nsegs << LOG2_SEG) - 16;
        self.put_bytes(start + 8, &[kind]);
        self.put_bytes(start + 12, &(size as i32).to_le_bytes());
        self.put_bytes(start + 20, &complete.to_le_bytes());
        self.put_bytes(start + 28, &frame_words.to_le_bytes());
        self.put(start + 32, start + CODE_OFF);
        self.put(start + 112, method);
        start
    }

    /// The next free 16 segments as a blob; returns its code start.
    fn blob(&mut self, kind: u8, frame_words: i32, complete: i32, method: u64) -> u64 {
        let first = self.next_seg;
        self.next_seg += BLOB_SEGS;
        assert!(self.next_seg <= SEGS, "the fake code heap is full");
        self.blob_at(first, BLOB_SEGS, kind, frame_words, complete, method) + CODE_OFF
    }

    /// An nmethod with a frame of `words` words, complete at `code + COMPLETE`.
    fn nmethod(&mut self, words: i32, method: u64) -> u64 {
        self.blob(KIND_NMETHOD, words, COMPLETE as i32, method)
    }

    /// A whole compiled frame of `words` words at `sp` (return address and saved rbp at its
    /// top); returns its sender's sp.
    fn compiled_frame(&mut self, sp: u64, words: u64, ret: u64, link: u64) -> u64 {
        let sender = sp + words * 8;
        self.put(sender - 8, ret);
        self.put(sender - 16, link);
        sender
    }

    /// An interpreter frame whose expression stack's top is `sp` (fp = sp + INTERP_FP, the
    /// sender's sp just above the return address); returns its fp.
    fn interp_frame(&mut self, sp: u64, method: u64, bcp: u64, ret: u64, link: u64) -> u64 {
        let fp = sp + INTERP_FP;
        self.put(fp - 3 * 8, method);
        self.put(fp - 8 * 8, bcp);
        self.put(fp - 8, fp + 16);
        self.put(fp, link);
        self.put(fp + 8, ret);
        fp
    }

    /// An entry frame (the call stub's) at `sp`, its JavaCallWrapper in the VM frame above it,
    /// the wrapper's anchor `(last_Java_sp, last_Java_pc, last_Java_fp)`; returns its fp. It
    /// takes the stack up to `sp + 0x98`.
    fn entry_frame(&mut self, sp: u64, anchor: (u64, u64, u64)) -> u64 {
        let fp = sp + 8 * 8;
        let wrapper = fp + 4 * 8;
        self.put(fp - 48, wrapper);
        let a = wrapper + WRAPPER_ANCHOR;
        self.put(a + ANCHOR_SP, anchor.0);
        self.put(a + ANCHOR_PC, anchor.1);
        self.put(a + ANCHOR_FP, anchor.2);
        fp
    }

    /// An interpreter frame at `sp` (method `M_I`, `BCP_I`) called from the call stub, with no
    /// Java below: the usual bottom of a test's stack. Returns its fp.
    fn interp_bottom(&mut self, sp: u64) -> u64 {
        let fp = sp + INTERP_FP;
        let entry_fp = self.entry_frame(fp + 16, (0, 0, 0));
        let ret = self.code.call_stub_return;
        self.interp_frame(sp, M_I, BCP_I, ret, entry_fp)
    }

    fn run(&self, regs: Regs, cap: usize) -> Outcome {
        let mut frames = vec![SENTINEL; cap];
        let mut kinds = vec![SENTINEL_KIND; cap];
        self.mem.floor.set(regs.sp);
        self.mem.top.set(self.thread.stack_base);
        self.mem.violations.borrow_mut().clear();
        self.mem.reads.set(0);
        let walker = Walker {
            layout: &self.layout,
            code: &self.code,
            thread: &self.thread,
            mem: &self.mem,
            cache: self.cache.as_ref(),
            memo: self.memo.as_ref(),
            native: self.native.as_ref(),
        };
        let mut addrs = vec![u64::MAX; cap];
        let mut sink = FrameSink { addrs: Some(&mut addrs), ..FrameSink::new(&mut frames, &mut kinds) };
        let stop = walker.walk(regs, &mut sink);
        let (len, blob_lookups, blob_memo_hits, blob_hits, native) =
            (sink.len, sink.blob_lookups, sink.blob_memo_hits, sink.blob_hits, sink.native);
        assert!(len <= cap, "{len} slots filled of {cap}");
        assert!(frames[len..].iter().all(|f| *f == SENTINEL), "a slot past the frames was written");
        assert!(kinds[len..].iter().all(|k| *k == SENTINEL_KIND), "a kind past the frames was written");
        let tags = [SlotKind::Pc, SlotKind::Method, SlotKind::Interpreted, SlotKind::Native];
        assert!(kinds[..len].iter().all(|k| tags.contains(k)), "kinds {:?}", &kinds[..len]);
        // Each frame's activation address sits at its first slot; the others stay unwritten.
        let firsts: Vec<usize> = (0..len).filter(|&i| kinds[i] != SlotKind::Method).collect();
        assert!(
            (0..cap).all(|i| firsts.contains(&i) || addrs[i] == u64::MAX),
            "an address was written outside a frame's first slot"
        );
        Outcome {
            addrs: firsts.iter().map(|&i| addrs[i]).collect(),
            frames: raw_frames(&frames[..len], &kinds[..len]).collect(),
            stop,
            len,
            violations: self.mem.violations.borrow().clone(),
            reads: self.mem.reads.get(),
            blob_lookups,
            blob_memo_hits,
            blob_hits,
            native,
        }
    }

    /// A walk that must read nothing it may not.
    fn walk(&self, regs: Regs, cap: usize) -> (Vec<RawFrame>, Stop) {
        let o = self.run(regs, cap);
        assert_eq!(o.violations, vec![], "reads outside the stack and the code cache");
        (o.frames, o.stop)
    }

    fn blob_of(&self, pc: u64) -> Option<Blob> {
        Walker {
            layout: &self.layout,
            code: &self.code,
            thread: &self.thread,
            mem: &self.mem,
            cache: None,
            memo: None,
            native: None,
        }
        .blob(pc)
    }
}

fn compiled(pc: u64, method: u64, interrupted: bool) -> RawFrame {
    RawFrame::Compiled { pc, method, interrupted }
}

fn interpreted(method: u64, bcp: u64) -> RawFrame {
    RawFrame::Interpreted { method, bcp: bcp & 0xffff_ffff }
}

/// The bottom interpreter frame of `Fake::interp_bottom`.
fn bottom() -> RawFrame {
    interpreted(M_I, BCP_I)
}

fn regs(pc: u64, sp: u64, fp: u64) -> Regs {
    Regs { pc, sp, fp, ..Regs::default() }
}

/// Where the tests' stacks start (their top frame's sp).
const SP: u64 = STACK_LO + 0x1000;

// The tests, by what they cover.
mod cache;
mod chain;
mod cont;
mod frames;
mod layout;
mod native;
mod safety;
mod sink;
