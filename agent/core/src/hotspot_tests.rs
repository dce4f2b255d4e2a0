//! The frame walker over a synthetic process: a fake stack, a fake code heap with its segment
//! map and a fake interpreter range, laid out with JDK 17's offsets (x86-64). The fake memory
//! records every read outside what the walker may read (the stack between the interrupted sp
//! and the stack base, the code heap, the segment map), so each test also checks that.

use super::*;
use std::cell::{Cell, RefCell};

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
const SENTINEL_KIND: FrameKind = FrameKind::Kernel;

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
    stop: Stop,
    len: usize,
    violations: Vec<(u64, u64)>,
    reads: u64,
}

/// A process to walk: memory, layout, code cache and thread.
struct Fake {
    mem: FakeMem,
    layout: Layout,
    code: CodeView,
    thread: ThreadView,
    next_seg: u64,
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
            ],
            floor: Cell::new(STACK_LO),
            top: Cell::new(STACK_BASE),
            violations: RefCell::new(Vec::new()),
            reads: Cell::new(0),
        };
        let mut code = CodeView { nheaps: 1, interp: (INTERP_LO, INTERP_HI), ..CodeView::default() };
        code.heaps[0] = Heap { low: HEAP_LO, high: HEAP_HI, seg_low: SEG_LO, seg_high: SEG_HI, log2_segment: LOG2_SEG };
        let thread = ThreadView { stack_base: STACK_BASE, stack_end: STACK_LO, ..ThreadView::default() };
        let mut f = Fake { mem, layout: layout(), code, thread, next_seg: 0 };
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
        let walker = Walker { layout: &self.layout, code: &self.code, thread: &self.thread, mem: &self.mem };
        let mut sink = FrameSink { frames: &mut frames, kinds: &mut kinds, len: 0 };
        let stop = walker.walk(regs, &mut sink);
        let len = sink.len;
        assert!(len <= cap, "{len} slots filled of {cap}");
        assert!(frames[len..].iter().all(|f| *f == SENTINEL), "a slot past the frames was written");
        assert!(kinds[len..].iter().all(|k| *k == SENTINEL_KIND), "a kind past the frames was written");
        let tags = [FrameKind::JitCompiled, FrameKind::Unknown, FrameKind::Interpreted];
        assert!(kinds[..len].iter().all(|k| tags.contains(k)), "kinds {:?}", &kinds[..len]);
        Outcome {
            frames: raw_frames(&frames[..len], &kinds[..len]).collect(),
            stop,
            len,
            violations: self.mem.violations.borrow().clone(),
            reads: self.mem.reads.get(),
        }
    }

    /// A walk that must read nothing it may not.
    fn walk(&self, regs: Regs, cap: usize) -> (Vec<RawFrame>, Stop) {
        let o = self.run(regs, cap);
        assert_eq!(o.violations, vec![], "reads outside the stack and the code cache");
        (o.frames, o.stop)
    }

    fn blob_of(&self, pc: u64) -> Option<Blob> {
        Walker { layout: &self.layout, code: &self.code, thread: &self.thread, mem: &self.mem }.blob(pc)
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

// 1. A compiled frame after its prologue, called by the interpreter, called by the call stub.

#[test]
fn compiled_then_interpreted_then_entry_frame() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    let ifp = f.interp_bottom(isp);
    assert_eq!(ifp, SP + 4 * 8 + INTERP_FP);
    let pc = a + BODY;
    let (frames, stop) = f.walk(regs(pc, SP, 0x1234), 64);
    assert_eq!(frames, vec![compiled(pc, M_A, true), bottom()]);
    assert_eq!(stop, Stop::Bottom);
    // The bytecode pointer keeps its low 32 bits; the sink took 2 + 1 slots.
    assert_eq!(frames[1], RawFrame::Interpreted { method: M_I, bcp: 0x3456_789a });
    assert_eq!(f.run(regs(pc, SP, 0x1234), 64).len, 3);
}

#[test]
fn compiled_frame_with_vtable_or_unknown_nmethod_test() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let pc = a + BODY;
    // JDK 17 without the kind byte: nmethods are told by their vtable.
    let vtable = 0x7f00_0000_1010;
    f.put(a - CODE_OFF, vtable);
    f.layout.nmethod_test = NmethodTest::Vtable(vtable);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom));
    f.layout.nmethod_test = NmethodTest::Vtable(vtable + 8);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, 0, true), bottom()], Stop::Bottom));
    f.layout.nmethod_test = NmethodTest::Unknown;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, 0, true), bottom()], Stop::Bottom));
}

// 2. Prologue: before the frame is complete, the instruction at pc says where the return
// address is.

#[test]
fn prologue_at_push_rbp() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let pc = a + 0x10;
    f.put_bytes(pc, &[0x55]);
    // Nothing pushed yet: the return address at [sp], rbp still the caller's.
    f.put(SP, INTERP_RET);
    let ifp = f.interp_bottom(SP + 8);
    let (frames, stop) = f.walk(regs(pc, SP, ifp), 64);
    assert_eq!(frames, vec![compiled(pc, M_A, true), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn prologue_after_push_rbp() {
    // At `sub rsp, imm8`, `sub rsp, imm32` (after `push rbp`) and at `mov rbp, rsp`: the saved
    // rbp at [sp], the return address at [sp+8]; rbp in the register is not the caller's.
    for code in [&[0x48, 0x83, 0xec, 0x30][..], &[0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00], &[0x48, 0x89, 0xe5]] {
        let mut f = Fake::new();
        let a = f.nmethod(8, M_A);
        let pc = a + 0x11;
        f.put_bytes(pc - 1, &[0x55]);
        f.put_bytes(pc, code);
        let ifp = f.interp_bottom(SP + 16);
        f.put(SP, ifp);
        f.put(SP + 8, INTERP_RET);
        let (frames, stop) = f.walk(regs(pc, SP, 0x4321), 64);
        assert_eq!(frames, vec![compiled(pc, M_A, true), bottom()], "{code:x?}");
        assert_eq!(stop, Stop::Bottom);
    }
}

#[test]
fn prologue_is_only_for_the_interrupted_frame() {
    // A return address before frame_complete (a call in a prologue, e.g. the stack bang's
    // slow path) is a call site in a whole frame: its frame size counts, not the bytes at pc.
    let mut f = Fake::new();
    let a = f.nmethod(2, M_A);
    let b = f.nmethod(4, M_B);
    let ret = b + 0x08;
    f.put_bytes(ret, &[0x55]);
    let bsp = f.compiled_frame(SP, 2, ret, 0);
    let isp = f.compiled_frame(bsp, 4, INTERP_RET, bsp + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let pc = a + BODY;
    let (frames, stop) = f.walk(regs(pc, SP, 0), 64);
    assert_eq!(frames, vec![compiled(pc, M_A, true), compiled(ret, M_B, false), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

// 3. Epilogue: after the frame was torn down.

#[test]
fn epilogue_at_ret_and_return_poll() {
    // `ret`, `cmp rsp, [r15+d8]` (the return poll), `ja` to the poll stub followed by `ret`:
    // the return address at [sp], rbp already the caller's.
    for code in [&[0xc3][..], &[0x49, 0x3b, 0x67, 0x20], &[0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0xc3]] {
        let mut f = Fake::new();
        let a = f.nmethod(6, M_A);
        let pc = a + 0x80;
        f.put_bytes(pc, code);
        f.put(SP, INTERP_RET);
        let ifp = f.interp_bottom(SP + 8);
        let (frames, stop) = f.walk(regs(pc, SP, ifp), 64);
        assert_eq!(frames, vec![compiled(pc, M_A, true), bottom()], "{code:x?}");
        assert_eq!(stop, Stop::Bottom);
    }
}

#[test]
fn epilogue_at_pop_rbp() {
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let pc = a + 0x80;
    f.put_bytes(pc, &[0x5d]);
    let ifp = f.interp_bottom(SP + 16);
    f.put(SP, ifp);
    f.put(SP + 8, INTERP_RET);
    let (frames, stop) = f.walk(regs(pc, SP, 0x4321), 64);
    assert_eq!(frames, vec![compiled(pc, M_A, true), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn whole_frame_at_add_rsp_and_at_a_ja_without_ret() {
    // `add rsp, n` (the frame is still whole) and a `ja` that is not the return poll's: the
    // frame size counts.
    for code in [&[0x48, 0x83, 0xc4, 0x20][..], &[0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0x90]] {
        let mut f = Fake::new();
        let a = f.nmethod(6, M_A);
        let pc = a + 0x80;
        f.put_bytes(pc, code);
        let isp = f.compiled_frame(SP, 6, INTERP_RET, SP + 6 * 8 + INTERP_FP);
        f.interp_bottom(isp);
        let (frames, stop) = f.walk(regs(pc, SP, 0), 64);
        assert_eq!(frames, vec![compiled(pc, M_A, true), bottom()], "{code:x?}");
        assert_eq!(stop, Stop::Bottom);
    }
}

// 4. Stubs without a frame size.

#[test]
fn frameless_stub() {
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, ret);
    let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    // The stub itself leaves no frame.
    let (frames, stop) = f.walk(regs(stub + 0x10, SP, 0), 64);
    assert_eq!(frames, vec![compiled(ret, M_B, false), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn stub_on_rbp() {
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    f.put(SP, 0x4242); // not code
    let fp = SP + 4 * 8;
    let ifp = f.interp_bottom(fp + 16);
    f.put(fp, ifp);
    f.put(fp + 8, INTERP_RET);
    let (frames, stop) = f.walk(regs(stub + 0x10, SP, fp), 64);
    assert_eq!(frames, vec![bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn stub_with_nothing_to_return_to() {
    // No return address at sp, rbp below sp or far above it, no code address above sp: lost.
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    f.put(SP, 0x4242);
    f.put(SP + 4104, SP);
    f.put(SP + 4112, INTERP_RET);
    for fp in [SP - 16, SP + 4104] {
        assert_eq!(f.walk(regs(stub + 0x10, SP, fp), 64), (vec![], Stop::Lost), "fp {fp:#x}");
    }
}

#[test]
fn interrupted_stub_that_saved_registers() {
    // Interrupted in a stub that pushed registers and keeps no frame on rbp: the return
    // address is the first code address a few words above sp.
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, 0x11);
    f.put(SP + 8, SP + 0x400); // a saved register holding a stack address
    f.put(SP + 16, ret);
    let isp = f.compiled_frame(SP + 24, 4, INTERP_RET, SP + 24 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let (frames, stop) = f.walk(regs(stub + 0x10, SP, 0x99), 64);
    assert_eq!(frames, vec![compiled(ret, M_B, false), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

// 5. Native code.

#[test]
fn native_with_anchor() {
    for anchor_pc_known in [true, false] {
        let mut f = Fake::new();
        let b = f.nmethod(4, M_B);
        let call = b + BODY;
        let asp = SP + 0x100;
        let isp = f.compiled_frame(asp, 4, INTERP_RET, asp + 4 * 8 + INTERP_FP);
        f.interp_bottom(isp);
        f.thread.anchor_sp = asp;
        f.thread.anchor_fp = 0x99;
        if anchor_pc_known {
            f.thread.anchor_pc = call;
        } else {
            f.put(asp - 8, call);
        }
        // Garbage between: the native frames are not followed.
        f.put(SP, b + 0x44);
        let (frames, stop) = f.walk(regs(NATIVE_PC, SP, SP + 8), 64);
        assert_eq!(frames, vec![compiled(call, M_B, false), bottom()], "anchor pc known: {anchor_pc_known}");
        assert_eq!(stop, Stop::Bottom);
    }
}

#[test]
fn anchor_below_sp_is_not_used() {
    // The anchor names a frame below the interrupted sp: stale; the native frames are walked.
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    f.thread.anchor_sp = SP - 0x100;
    f.thread.anchor_pc = b + BODY;
    let ret = b + 0x48;
    f.put(SP, ret);
    let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let (frames, stop) = f.walk(regs(NATIVE_PC, SP, 0), 64);
    assert_eq!(frames, vec![compiled(ret, M_B, false), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn native_without_anchor_through_rbp() {
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    // Two native frames on rbp, the second returns into compiled code.
    let fp1 = SP + 0x20;
    let fp2 = SP + 0x60;
    f.put(SP, 0x77); // not code: the leaf pushed something
    f.put(fp1, fp2);
    f.put(fp1 + 8, NATIVE_PC + 0x500);
    f.put(fp2, 0x1111);
    f.put(fp2 + 8, ret);
    let isp = f.compiled_frame(fp2 + 16, 4, INTERP_RET, fp2 + 16 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let (frames, stop) = f.walk(regs(NATIVE_PC, SP, fp1), 64);
    assert_eq!(frames, vec![compiled(ret, M_B, false), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn native_leaf_without_anchor() {
    // A leaf that pushed nothing: the return address at sp.
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, ret);
    let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let (frames, stop) = f.walk(regs(NATIVE_PC, SP, 0), 64);
    assert_eq!(frames, vec![compiled(ret, M_B, false), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn native_without_java() {
    let mut f = Fake::new();
    // rbp chain of native frames that never returns into code, then a frame pointer going down.
    let fp1 = SP + 0x20;
    f.put(fp1, SP + 0x40);
    f.put(fp1 + 8, NATIVE_PC);
    f.put(SP + 0x40, SP);
    f.put(SP + 0x48, NATIVE_PC);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, fp1), 64), (vec![], Stop::NoJavaFrame));
    // A thread with no stack at all.
    assert_eq!(f.walk(regs(NATIVE_PC, SP, 0), 64), (vec![], Stop::NoJavaFrame));
}

#[test]
fn native_hop_only_once() {
    // Native code whose rbp chain returns into compiled code whose caller is native again:
    // one hop only (the second native region has no anchor of its own).
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, ret);
    f.compiled_frame(SP + 8, 4, NATIVE_PC + 8, 0);
    let (frames, stop) = f.walk(regs(NATIVE_PC, SP, 0), 64);
    assert_eq!(frames, vec![compiled(ret, M_B, false)]);
    assert_eq!(stop, Stop::Lost);
}

// 6. Entry frames with Java below.

#[test]
fn entry_frame_with_java_below() {
    for anchor_pc_known in [true, false] {
        let mut f = Fake::new();
        let a = f.nmethod(4, M_A);
        let c = f.nmethod(6, M_C);
        let call = c + BODY;
        // A (interrupted) <- interpreter (M_J) <- call stub (entry 1) ... VM frames ... <- C
        // <- interpreter (M_I) <- call stub (entry 2, bottom).
        let isp1 = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
        let esp1 = isp1 + INTERP_FP + 16;
        let asp = esp1 + 0x100;
        let anchor = (asp, if anchor_pc_known { call } else { 0 }, 0x5151);
        let efp1 = f.entry_frame(esp1, anchor);
        let ret = f.code.call_stub_return;
        f.interp_frame(isp1, M_J, BCP_J, ret, efp1);
        if !anchor_pc_known {
            f.put(asp - 8, call);
        }
        let isp2 = f.compiled_frame(asp, 6, INTERP_RET, asp + 6 * 8 + INTERP_FP);
        f.interp_bottom(isp2);
        let pc = a + BODY;
        let (frames, stop) = f.walk(regs(pc, SP, 0), 64);
        assert_eq!(
            frames,
            vec![compiled(pc, M_A, true), interpreted(M_J, BCP_J), compiled(call, M_C, false), bottom()],
            "anchor pc known: {anchor_pc_known}"
        );
        assert_eq!(stop, Stop::Bottom);
    }
}

#[test]
fn compiled_code_called_by_the_call_stub() {
    // Java called from the VM straight into compiled code: the compiled frame's saved rbp is
    // the call stub's.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let esp = SP + 4 * 8;
    let efp = f.entry_frame(esp, (0, 0, 0));
    let ret = f.code.call_stub_return;
    f.compiled_frame(SP, 4, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Bottom));
}

#[test]
fn entry_frame_wrapper_off_the_stack() {
    // A JavaCallWrapper pointer that is not on this stack: nothing below.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let esp = SP + 4 * 8;
    let efp = esp + 0x40;
    f.put(efp - 48, 0x1234_5678);
    let ret = f.code.call_stub_return;
    f.compiled_frame(SP, 4, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Bottom));
    // The wrapper's own slot off the stack: lost.
    f.compiled_frame(SP, 4, ret, STACK_BASE + 0x100);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

// 7. Safety and bounds.

/// xorshift64: a seeded pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A value a stack slot or a register may hold: garbage, or an address the walker may take
/// for something (stack, code, a blob's body, the interpreter, the call stub, native code).
fn value(rng: &mut Rng, f: &Fake, codes: &[u64], top: u64) -> u64 {
    match rng.below(12) {
        0 => 0,
        1 => rng.next(),
        2 | 3 => STACK_LO + rng.below(STACK_SIZE / 8) * 8,
        4 => top + rng.below(0x400) * 8,
        5 | 6 => codes[rng.below(codes.len() as u64) as usize] + rng.below(0x100),
        7 => HEAP_LO + rng.below(HEAP_HI - HEAP_LO),
        8 => INTERP_LO + rng.below(INTERP_HI - INTERP_LO + 0x10),
        9 => f.code.call_stub_return,
        10 => NATIVE_PC + rng.below(0x1000),
        _ => rng.below(0x1_0000),
    }
}

/// Instructions the walker decodes, to plant in random code.
const PATTERNS: [&[u8]; 9] = [
    &[0x55],
    &[0x48, 0x83, 0xec, 0x30],
    &[0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00],
    &[0x48, 0x89, 0xe5],
    &[0x48, 0x8b, 0xec],
    &[0x5d],
    &[0xc3],
    &[0x49, 0x3b, 0x67, 0x20],
    &[0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0xc3],
];

/// A random process: code bytes, blobs with random headers, a sometimes corrupt segment map,
/// random stack words and anchor, random registers.
fn random_case(seed: u64) -> (Fake, Regs, usize) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut f = Fake::with_code(|_| rng.next() as u8);
    let mut codes = vec![f.code.call_stub_return];
    for _ in 0..1 + rng.below(12) {
        let kind = match rng.below(4) {
            0 | 1 => KIND_NMETHOD,
            2 => KIND_STUB,
            _ => rng.next() as u8,
        };
        let words = match rng.below(5) {
            0 => 0,
            1 | 2 => 1 + rng.below(12) as i32,
            3 => rng.next() as i32,
            _ => (1 << 16) + 3,
        };
        let complete = match rng.below(4) {
            0 => -1,
            1 => rng.next() as i32,
            _ => rng.below(0x80) as i32,
        };
        let method = value(&mut rng, &f, &codes, SP);
        let code = f.blob(kind, words, complete, method);
        codes.push(code);
        for _ in 0..rng.below(16) {
            let p = PATTERNS[rng.below(PATTERNS.len() as u64) as usize];
            let at = code + rng.below(0x200);
            f.put_bytes(at, p);
        }
    }
    for _ in 0..rng.below(4) {
        let s = rng.below(SEGS);
        let v = rng.next() as u8;
        f.put_bytes(SEG_LO + s, &[v]);
    }
    if rng.chance(10) {
        f.layout.nmethod_test = NmethodTest::Vtable(value(&mut rng, &f, &codes, SP));
    }
    if rng.chance(10) {
        f.thread.stack_base = STACK_BASE - rng.below(0x100) * 8;
    }
    let sp = match rng.below(20) {
        0 => value(&mut rng, &f, &codes, SP),
        1 => STACK_BASE - rng.below(4) * 8,
        _ => STACK_LO + 0x800 + rng.below(0x100) * 8,
    };
    for a in (STACK_LO..STACK_BASE).step_by(8) {
        let v = value(&mut rng, &f, &codes, sp);
        f.put(a, v);
    }
    if rng.chance(50) {
        f.thread.anchor_sp = value(&mut rng, &f, &codes, sp);
        f.thread.anchor_pc = if rng.chance(50) { 0 } else { value(&mut rng, &f, &codes, sp) };
        f.thread.anchor_fp = value(&mut rng, &f, &codes, sp);
    }
    // Mostly a pc in a blob or the interpreter, where the walk has something to do.
    let pc = match rng.below(4) {
        0 | 1 => codes[rng.below(codes.len() as u64) as usize] + rng.below(0x200),
        2 => INTERP_LO + rng.below(0x1000),
        _ => value(&mut rng, &f, &codes, sp),
    };
    let fp = value(&mut rng, &f, &codes, sp);
    (f, regs(pc, sp, fp), rng.below(48) as usize)
}

#[test]
fn fuzz_reads_stay_in_bounds() {
    let mut stops = [0usize; 5];
    let mut with_frames = 0;
    for seed in 1..=3000 {
        let (f, regs, cap) = random_case(seed);
        let o = f.run(regs, cap);
        assert_eq!(o.violations, vec![], "seed {seed}: reads outside the stack and the code cache, {regs:x?}");
        assert!(o.len <= cap && o.frames.len() <= cap, "seed {seed}");
        // Every loop is bounded: a walk is a few reads per frame.
        assert!(o.reads < 20_000, "seed {seed}: {} reads", o.reads);
        stops[o.stop as usize] += 1;
        with_frames += usize::from(!o.frames.is_empty());
    }
    // The cases reach the walker's paths, not only its first checks.
    assert!(with_frames > 500, "{with_frames} walks with frames; stops {stops:?}");
    assert!(stops.iter().filter(|&&n| n > 0).count() >= 4, "stops {stops:?}");
}

#[test]
fn fuzz_well_formed_stacks_with_garbage_below() {
    // A valid top (compiled, interpreted) over a random rest: frames come out in order and the
    // walk never reads out of bounds.
    for seed in 1..=1000 {
        let (mut f, _, cap) = random_case(seed);
        f.layout.nmethod_test = layout().nmethod_test;
        f.thread.stack_base = STACK_BASE;
        let a = f.nmethod(4, M_A);
        f.put_bytes(a + BODY, &[0x90; 8]);
        let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
        let ifp = isp + INTERP_FP;
        let garbage_fp = f.mem.read(ifp, 8);
        let garbage_ret = f.mem.read(ifp + 8, 8);
        let ret =
            if f.code.contains(garbage_ret) || f.code.in_interpreter(garbage_ret) { garbage_ret } else { INTERP_RET };
        f.interp_frame(isp, M_I, BCP_I, ret, garbage_fp);
        let pc = a + BODY;
        let o = f.run(regs(pc, SP, 0), cap.max(3));
        assert_eq!(o.violations, vec![], "seed {seed}");
        assert_eq!(o.frames[..2], [compiled(pc, M_A, true), bottom()], "seed {seed}");
    }
}

/// Frame sizes of the nmethods of a generated stack.
const FRAME_WORDS: [u64; 3] = [2, 5, 12];

/// A saved rbp nothing reads: somewhere low in the address space.
fn garbage(rng: &mut Rng) -> u64 {
    0x1000 + rng.below(0x1000) * 8
}

/// One frame of a generated stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gen {
    /// An nmethod's frame: which of the stack's nmethods (`FRAME_WORDS` gives its size).
    Compiled(usize),
    Interp,
    /// A stub without a frame size, the return address at its sp.
    Stub,
    /// The call stub with Java below (the next frame through its wrapper's anchor), or at the
    /// bottom (the last frame) without.
    Entry,
}

/// A random well-formed stack: frames of every kind from the top down, each return address
/// and saved rbp what its caller needs, the top reached from the registers directly or
/// through native code (an anchor, or a leaf's return address). Returns the process, the
/// registers and the frames the walk must give (all of them, room permitting).
fn random_stack(rng: &mut Rng) -> (Fake, Regs, Vec<RawFrame>) {
    let mut f = Fake::new();
    let nmethods: Vec<(u64, u64)> =
        FRAME_WORDS.iter().zip(0..).map(|(&w, i)| (f.nmethod(w as i32, M_A + i), M_A + i)).collect();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    // The frames from the top; the last one is the bottom entry frame.
    let n = 1 + rng.below(16) as usize;
    let mut kinds = Vec::new();
    for i in 0..n {
        let after_entry = i > 0 && kinds[i - 1] == Gen::Entry;
        let after_stub = i > 0 && kinds[i - 1] == Gen::Stub;
        let k = match rng.below(10) {
            0..=3 => Gen::Compiled(rng.below(FRAME_WORDS.len() as u64) as usize),
            4..=6 => Gen::Interp,
            7 | 8 if !after_entry && !after_stub => Gen::Stub,
            _ if i > 0 && !after_entry => Gen::Entry,
            _ => Gen::Interp,
        };
        kinds.push(k);
    }
    kinds.push(Gen::Entry);
    // Each frame's sp, fp (interpreter and entry frames), pc and entry-frame gap.
    let native = rng.below(3); // 0: none, 1: through the anchor, 2: a native leaf
    if native == 1 && !matches!(kinds[0], Gen::Compiled(..) | Gen::Interp) {
        kinds[0] = Gen::Interp;
    }
    let mut sps = vec![STACK_LO + 0x200];
    for (i, k) in kinds.iter().enumerate() {
        let sp = sps[i];
        let next = match *k {
            Gen::Compiled(m) => sp + FRAME_WORDS[m] * 8,
            Gen::Interp => sp + INTERP_FP + 16,
            Gen::Stub => sp + 8,
            Gen::Entry => sp + 0xa0 + rng.below(0x20) * 8,
        };
        sps.push(next);
    }
    assert!(sps[kinds.len()] + 0x100 < STACK_BASE);
    let fps: Vec<Option<u64>> = kinds
        .iter()
        .zip(&sps)
        .map(|(k, &sp)| match k {
            Gen::Interp => Some(sp + INTERP_FP),
            Gen::Entry => Some(sp + 8 * 8),
            _ => None,
        })
        .collect();
    // The fp each frame must be reached with: its own, or its caller's through a stub.
    let mut need = vec![None; kinds.len() + 1];
    for i in (0..kinds.len()).rev() {
        need[i] = if kinds[i] == Gen::Stub { need[i + 1] } else { fps[i] };
    }
    let pcs: Vec<u64> = kinds
        .iter()
        .map(|k| match *k {
            Gen::Compiled(m) => nmethods[m].0 + BODY + rng.below(0x100),
            Gen::Interp => INTERP_LO + rng.below(0x1000),
            Gen::Stub => stub + rng.below(0x100),
            Gen::Entry => f.code.call_stub_return,
        })
        .collect();
    let mut expected = Vec::new();
    let last = kinds.len() - 1;
    for (i, k) in kinds.iter().enumerate() {
        let (sp, caller_pc) = (sps[i], pcs.get(i + 1).copied().unwrap_or(0));
        let link = need[i + 1].unwrap_or_else(|| garbage(rng));
        match *k {
            Gen::Compiled(m) => {
                f.compiled_frame(sp, FRAME_WORDS[m], caller_pc, link);
                expected.push(compiled(pcs[i], nmethods[m].1, i == 0 && native == 0));
            }
            Gen::Interp => {
                let method = M_I + i as u64;
                let bcp = 0x7f00_0000_0000 + rng.below(1 << 40);
                f.interp_frame(sp, method, bcp, caller_pc, link);
                expected.push(interpreted(method, bcp));
            }
            Gen::Stub => f.put(sp, caller_pc),
            Gen::Entry if i == last => {
                f.entry_frame(sp, (0, 0, 0));
            }
            Gen::Entry => {
                let asp = sps[i + 1];
                let apc = if rng.chance(50) { caller_pc } else { 0 };
                if apc == 0 {
                    f.put(asp - 8, caller_pc);
                }
                f.entry_frame(sp, (asp, apc, need[i + 1].unwrap_or_else(|| garbage(rng))));
            }
        }
    }
    // The top frame's bytes at pc are a nop: a compiled frame there is whole.
    let regs = match native {
        0 => regs(pcs[0], sps[0], need[0].unwrap_or_else(|| garbage(rng))),
        1 => {
            f.thread.anchor_sp = sps[0];
            f.thread.anchor_fp = need[0].unwrap_or_else(|| garbage(rng));
            if rng.chance(50) {
                f.thread.anchor_pc = pcs[0];
            } else {
                f.put(sps[0] - 8, pcs[0]);
            }
            regs(NATIVE_PC, sps[0] - 0x40, garbage(rng))
        }
        _ => {
            f.put(sps[0] - 8, pcs[0]);
            regs(NATIVE_PC, sps[0] - 8, need[0].unwrap_or_else(|| garbage(rng)))
        }
    };
    (f, regs, expected)
}

/// The frames a sink of `cap` slots keeps of `all`, and how the walk stops.
fn fitting(all: &[RawFrame], cap: usize) -> (Vec<RawFrame>, Stop) {
    let mut used = 0;
    for (i, fr) in all.iter().enumerate() {
        used += if matches!(fr, RawFrame::Compiled { .. }) { 2 } else { 1 };
        if used > cap {
            return (all[..i].to_vec(), Stop::Full);
        }
    }
    (all.to_vec(), Stop::Bottom)
}

#[test]
fn fuzz_well_formed_stacks() {
    for seed in 1..=3000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
        let (f, regs, all) = random_stack(&mut rng);
        let cap = rng.below(2 * all.len() as u64 + 4) as usize;
        let o = f.run(regs, cap);
        assert_eq!(o.violations, vec![], "seed {seed}");
        assert_eq!((o.frames, o.stop), fitting(&all, cap), "seed {seed}: {regs:x?}, cap {cap}");
    }
}

#[test]
fn fuzz_corrupted_stacks() {
    // Well-formed stacks with a few words, code bytes or segment-map entries overwritten: no
    // read out of bounds, no write past the sink, a bounded walk.
    let mut stops = [0usize; 5];
    for seed in 1..=3000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (mut f, regs, all) = random_stack(&mut rng);
        let codes = [f.code.call_stub_return, HEAP_LO + CODE_OFF + 16 * 64];
        for _ in 0..1 + rng.below(6) {
            let a = regs.sp + rng.below(0x800) * 8;
            if a < STACK_BASE {
                let v = value(&mut rng, &f, &codes, regs.sp);
                f.put(a, v);
            }
        }
        if rng.chance(20) {
            let a = HEAP_LO + rng.below(HEAP_HI - HEAP_LO);
            let b = rng.next() as u8;
            f.put_bytes(a, &[b]);
        }
        if rng.chance(10) {
            let s = rng.below(SEGS);
            let v = rng.next() as u8;
            f.put_bytes(SEG_LO + s, &[v]);
        }
        let cap = rng.below(2 * all.len() as u64 + 4) as usize;
        let o = f.run(regs, cap);
        assert_eq!(o.violations, vec![], "seed {seed}");
        assert!(o.len <= cap, "seed {seed}");
        assert!(o.reads < 20_000, "seed {seed}: {} reads", o.reads);
        stops[o.stop as usize] += 1;
    }
    let reached = [Stop::Bottom, Stop::Full, Stop::Lost].map(|s| stops[s as usize]);
    assert!(reached.iter().all(|&n| n > 0), "stops {stops:?}");
}

#[test]
fn interpreter_frame_pointing_down_is_lost() {
    // The interpreter frame's saved rbp points below it, into the frame just walked.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    f.interp_frame(isp, M_I, BCP_I, INTERP_RET, isp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Lost));
    // ... and to itself.
    f.interp_frame(isp, M_I, BCP_I, INTERP_RET, isp + INTERP_FP);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Lost));
}

#[test]
fn interpreter_sender_sp_pointing_down_is_lost() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    let ifp = f.interp_bottom(isp);
    f.put(ifp - 8, ifp - 16);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

#[test]
fn interpreter_entry_being_built() {
    // Interrupted in the interpreter before its frame is built: the Method* being entered is
    // in rbx, the return address the first code address above sp.
    let with_rbx = |pc, sp, fp| Regs { pc, sp, fp, method_reg: M_J };
    let entering = interpreted(M_J, 0);
    // Called from compiled code (rbp is not a frame pointer there).
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, 5); // a local
    f.put(SP + 8, 0x0800_0000); // a reference
    f.put(SP + 16, ret);
    let isp = f.compiled_frame(SP + 24, 4, INTERP_RET, SP + 24 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let r = with_rbx(INTERP_LO + 0x10, SP, 0x99);
    assert_eq!(f.walk(r, 64), (vec![entering, compiled(ret, M_B, false), bottom()], Stop::Bottom));
    // The sink full at that frame.
    assert_eq!(f.walk(r, 0), (vec![], Stop::Full));
    // Called from the interpreter, after `push rbp; mov rbp, rsp`: the caller's fp is the word
    // rbp points at.
    let mut f = Fake::new();
    f.put(SP, 5);
    f.put(SP + 16, INTERP_RET);
    let ifp = f.interp_bottom(SP + 24);
    f.put(SP + 8, ifp);
    assert_eq!(f.walk(with_rbx(INTERP_LO + 0x10, SP, SP + 8), 64), (vec![entering, bottom()], Stop::Bottom));
    // No code address above sp: not set up.
    let f = Fake::new();
    assert_eq!(f.walk(with_rbx(INTERP_LO + 0x10, SP, SP - 8), 64), (vec![], Stop::BadInterpreterFrame));
}

#[test]
fn entry_frame_anchor_pointing_down_is_lost() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    let esp = isp + INTERP_FP + 16;
    // The wrapper's anchor names the top frame again: a loop if followed.
    let efp = f.entry_frame(esp, (SP, a + BODY, 0));
    let ret = f.code.call_stub_return;
    f.interp_frame(isp, M_I, BCP_I, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Lost));
}

#[test]
fn stub_with_rbp_below_sp_is_lost() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    // A returns into a frameless-looking stub whose rbp points back down.
    let ssp = f.compiled_frame(SP, 4, stub + 0x10, SP);
    f.put(ssp, 0x4242);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

#[test]
fn bad_registers() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let pc = a + BODY;
    for sp in [0, SP + 4, STACK_BASE, STACK_BASE + 8] {
        assert_eq!(f.walk(regs(pc, sp, 0), 64), (vec![], Stop::Lost), "sp {sp:#x}");
    }
    // A frame running past the stack base.
    f.thread.stack_base = SP + 16;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

#[test]
fn sp_off_the_thread_stack_is_not_walked() {
    // A stack pointer below the thread's stack (an alternate signal stack, a coroutine's):
    // nothing is read, though [sp, stack_base) would look like a stack.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let o = f.run(regs(a + BODY, STACK_LO - 0x1000, 0), 64);
    assert_eq!((o.frames, o.stop, o.reads), (vec![], Stop::Lost, 0));
    assert_eq!(o.violations, vec![]);
}

#[test]
fn huge_frame_size_is_no_frame_size() {
    // A frame size past any real frame (or negative) is taken as none: a stub.
    for words in [1 << 16, -4, i32::MAX] {
        let mut f = Fake::new();
        let a = f.blob(KIND_NMETHOD, words, COMPLETE as i32, M_A);
        let b = f.nmethod(4, M_B);
        f.put(SP, b + BODY);
        let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
        f.interp_bottom(isp);
        let (frames, stop) = f.walk(regs(a + BODY, SP, 0), 64);
        assert_eq!(frames, vec![compiled(b + BODY, M_B, false), bottom()], "words {words}");
        assert_eq!(stop, Stop::Bottom);
    }
}

// 8. The sink's capacity.

/// `n` compiled frames of 4 words from SP, all in one nmethod (recursion), under the
/// interpreter frame of `interp_bottom`.
fn deep(n: u64) -> (Fake, u64, u64) {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let mut sp = SP;
    for i in 0..n {
        let last = i + 1 == n;
        let ret = if last { INTERP_RET } else { a + BODY + 4 };
        let link = if last { sp + 4 * 8 + INTERP_FP } else { 0 };
        sp = f.compiled_frame(sp, 4, ret, link);
    }
    f.interp_bottom(sp);
    (f, a + BODY, a + BODY + 4)
}

#[test]
fn full_sink() {
    let (f, pc, ret) = deep(20);
    let r = regs(pc, SP, 0);
    // 5 slots: two compiled frames (4 slots); the third does not fit in the last one.
    let (frames, stop) = f.walk(r, 5);
    assert_eq!(frames, vec![compiled(pc, M_A, true), compiled(ret, M_A, false)]);
    assert_eq!(stop, Stop::Full);
    assert_eq!(f.walk(r, 0), (vec![], Stop::Full));
    assert_eq!(f.walk(r, 1), (vec![], Stop::Full));
    // Room for all: 20 compiled frames and the interpreter's.
    let (frames, stop) = f.walk(r, 41);
    assert_eq!(frames.len(), 21);
    assert_eq!(frames[20], bottom());
    assert_eq!(stop, Stop::Bottom);
    assert_eq!(f.walk(r, 40).1, Stop::Full);
}

#[test]
fn interpreted_frame_takes_the_last_slot() {
    let (f, pc, ret) = deep(2);
    let r = regs(pc, SP, 0);
    let all = vec![compiled(pc, M_A, true), compiled(ret, M_A, false), bottom()];
    assert_eq!(f.walk(r, 5), (all.clone(), Stop::Bottom));
    assert_eq!(f.walk(r, 4), (all[..2].to_vec(), Stop::Full));
}

#[test]
fn deep_stack_of_many_frames() {
    // The walk's step bound does not cut a real stack short: 300 frames into 600 slots.
    let (f, pc, _) = deep(300);
    let (frames, stop) = f.walk(regs(pc, SP, 0), 601);
    assert_eq!(frames.len(), 301);
    assert_eq!(stop, Stop::Bottom);
}

// 9. raw_frames.

#[test]
fn raw_frames_round_trip() {
    let mut frames = [SENTINEL; 8];
    let mut kinds = [SENTINEL_KIND; 8];
    let mut sink = FrameSink { frames: &mut frames, kinds: &mut kinds, len: 0 };
    let pushed = [
        compiled(0x1000_0040, M_A, true),
        RawFrame::Interpreted { method: M_I, bcp: 0x7f00_8000_0010 },
        compiled(0x1000_0444, 0, false),
    ];
    for f in pushed {
        assert!(sink.push(f));
    }
    assert_eq!(sink.len, 5);
    // Three slots left: a compiled frame, then only an interpreted one.
    assert!(sink.push(compiled(1, 2, false)));
    assert_eq!(sink.len, 7);
    assert!(!sink.push(compiled(3, 4, false)));
    assert!(sink.push(interpreted(5, 6)));
    assert!(!sink.push(interpreted(7, 8)));
    assert_eq!(sink.len, 8);
    assert_eq!(
        kinds[..5],
        [
            FrameKind::JitCompiled,
            FrameKind::Unknown,
            FrameKind::Interpreted,
            FrameKind::JitCompiled,
            FrameKind::Unknown
        ]
    );
    assert_eq!(frames[0], CallFrame { lineno: 1, method_id: 0x1000_0040 });
    assert_eq!(frames[1], CallFrame { lineno: 0, method_id: M_A });
    // The bytecode pointer keeps its low 32 bits (here with the sign bit set).
    assert_eq!(frames[2], CallFrame { lineno: 0x8000_0010_u32 as i32, method_id: M_I });
    let back: Vec<RawFrame> = raw_frames(&frames[..5], &kinds[..5]).collect();
    assert_eq!(
        back,
        vec![
            compiled(0x1000_0040, M_A, true),
            RawFrame::Interpreted { method: M_I, bcp: 0x8000_0010 },
            compiled(0x1000_0444, 0, false),
        ]
    );
    let back: Vec<RawFrame> = raw_frames(&frames, &kinds).collect();
    assert_eq!(back.len(), 5);
    assert_eq!(back[3], compiled(1, 2, false));
    assert_eq!(back[4], interpreted(5, 6));
}

#[test]
fn raw_frames_of_odd_slots() {
    let f = |m: u64| CallFrame { lineno: 0, method_id: m };
    // A pc slot without its method slot (at the end, or followed by another pc), and slots of
    // other kinds, which are skipped.
    let frames = [f(1), f(2), f(3), f(4), f(5), f(6)];
    let kinds = [
        FrameKind::Native,
        FrameKind::JitCompiled,
        FrameKind::JitCompiled,
        FrameKind::Unknown,
        FrameKind::Unknown,
        FrameKind::JitCompiled,
    ];
    let back: Vec<RawFrame> = raw_frames(&frames, &kinds).collect();
    assert_eq!(back, vec![compiled(2, 0, false), compiled(3, 4, false), compiled(6, 0, false)]);
    // Kinds shorter than frames: only the slots with both.
    let back: Vec<RawFrame> = raw_frames(&frames, &kinds[..3]).collect();
    assert_eq!(back, vec![compiled(2, 0, false), compiled(3, 0, false)]);
    assert_eq!(raw_frames(&[], &[]).count(), 0);
}

// 10. The layout from VMStructs.

/// A JDK 17 table: `CodeBlob::_code_begin`, `CompiledMethod::_method`, `Thread::_stack_base`,
/// no kind field.
fn table17() -> VmTable {
    let mut t = VmTable::default();
    let mut field = |name: &str, off: u64, ty: &str| {
        t.fields.insert(name.to_string(), off);
        t.types.insert(name.to_string(), ty.to_string());
    };
    field("GrowableArrayBase::_len", 0, "int");
    field("GrowableArray<int>::_data", 8, "int*");
    field("CodeHeap::_memory", 0x10, "VirtualSpace");
    field("CodeHeap::_segmap", 0x60, "VirtualSpace");
    field("CodeHeap::_log2_segment_size", 0xb0, "int");
    field("VirtualSpace::_low", 0x10, "char*");
    field("VirtualSpace::_high", 0x18, "char*");
    field("HeapBlock::_header", 0, "HeapBlock::Header");
    field("HeapBlock::Header::_used", 8, "bool");
    field("StubQueue::_stub_buffer", 8, "address");
    field("StubQueue::_buffer_limit", 0x14, "int");
    field("CodeBlob::_size", 12, "int");
    field("CodeBlob::_frame_complete_offset", 20, "int");
    field("CodeBlob::_frame_size", 28, "int");
    field("CodeBlob::_code_begin", 32, "address");
    field("CompiledMethod::_method", 112, "Method*");
    field("JavaThread::_anchor", 0x2f0, "JavaFrameAnchor");
    field("JavaFrameAnchor::_last_Java_sp", ANCHOR_SP, "intptr_t*");
    field("JavaFrameAnchor::_last_Java_pc", ANCHOR_PC, "address");
    field("JavaFrameAnchor::_last_Java_fp", ANCHOR_FP, "intptr_t*");
    field("Thread::_stack_base", 0x1b8, "address");
    field("Thread::_stack_size", 0x1c0, "size_t");
    field("JavaCallWrapper::_anchor", WRAPPER_ANCHOR, "JavaFrameAnchor");
    field("Method::_constMethod", 8, "ConstMethod*");
    field("ConstMethod::_code_size", 0x2c, "u2");
    t.statics.insert("CodeCache::_heaps".into(), 0x6000_0000);
    t.statics.insert("AbstractInterpreter::_code".into(), 0x6000_0008);
    t.statics.insert("StubRoutines::_call_stub_return_address".into(), 0x6000_0010);
    t.sizes.insert("HeapBlock".into(), 16);
    t.sizes.insert("ConstMethod".into(), 0x38);
    t
}

/// A JDK 25 table: the code as an offset, the kind byte with its constant, the stack on
/// JavaThread, `nmethod::_method`.
fn table25() -> VmTable {
    let mut t = table17();
    for old in ["CodeBlob::_code_begin", "CompiledMethod::_method", "Thread::_stack_base", "Thread::_stack_size"] {
        t.fields.remove(old);
        t.types.remove(old);
    }
    let mut field = |name: &str, off: u64, ty: &str| {
        t.fields.insert(name.to_string(), off);
        t.types.insert(name.to_string(), ty.to_string());
    };
    field("CodeBlob::_code_offset", 36, "int");
    field("CodeBlob::_kind", 9, "CodeBlobKind");
    field("nmethod::_method", 96, "Method*");
    field("JavaThread::_stack_base", 0x1f0, "address");
    field("JavaThread::_stack_size", 0x1f8, "size_t");
    t.constants.insert("CodeBlobKind::Nmethod".into(), 1);
    t
}

#[test]
fn layout_from_jdk17_table() {
    let t = table17();
    assert_eq!(Layout::from_table(&t, None), Ok(Layout { nmethod_test: NmethodTest::Unknown, ..layout() }));
    let with_vtable = Layout::from_table(&t, Some(0x7f00_0000_1010)).unwrap();
    assert_eq!(with_vtable.nmethod_test, NmethodTest::Vtable(0x7f00_0000_1010));
    assert_eq!(with_vtable.blob_code, CodeStart::Pointer(32));
    // The older names of the same fields.
    let mut t = table17();
    let len = t.fields.remove("GrowableArrayBase::_len").unwrap();
    t.fields.insert("GenericGrowableArray::_len".into(), len);
    assert_eq!(Layout::from_table(&t, None).unwrap().array_len, 0);
    // Frame constants from the table override the defaults.
    t.constants.insert("frame::entry_frame_call_wrapper_offset".into(), -7);
    t.constants.insert("frame::interpreter_frame_bcp_offset".into(), -9);
    let l = Layout::from_table(&t, None).unwrap();
    assert_eq!((l.entry_call_wrapper, l.interp_bcp, l.interp_method, l.interp_sender_sp), (-7, -9, -3, -1));
}

#[test]
fn layout_from_jdk25_table() {
    let l = Layout::from_table(&table25(), Some(0x7f00_0000_1010)).unwrap();
    // The kind byte wins over the vtable.
    assert_eq!(l.nmethod_test, NmethodTest::Kind { field: Int { off: 9, width: 1 }, nmethod: 1 });
    assert_eq!(l.blob_code, CodeStart::Offset(Int { off: 36, width: 4 }));
    assert_eq!(l.nmethod_method, 96);
    assert_eq!((l.thread_stack_base, l.thread_stack_size), (0x1f0, 0x1f8));
    assert_eq!(l.block_used, Int { off: 8, width: 1 });
    assert_eq!(l.const_code_size, Int { off: 0x2c, width: 2 });
    // The kind field without its constant: the vtable, or nothing.
    let mut t = table25();
    t.constants.remove("CodeBlobKind::Nmethod");
    assert_eq!(Layout::from_table(&t, Some(8)).unwrap().nmethod_test, NmethodTest::Vtable(8));
    assert_eq!(Layout::from_table(&t, None).unwrap().nmethod_test, NmethodTest::Unknown);
}

#[test]
fn layout_names_what_is_missing() {
    let missing = |t: &VmTable| Layout::from_table(t, None).unwrap_err();
    for name in ["JavaCallWrapper::_anchor", "CodeBlob::_frame_size", "HeapBlock::Header::_used"] {
        let mut t = table17();
        t.fields.remove(name);
        assert!(missing(&t).contains(name), "{name}: {}", missing(&t));
    }
    // Neither name of the stack base: the error names one of them.
    let mut t = table17();
    t.fields.remove("Thread::_stack_base");
    assert!(missing(&t).contains("_stack_base"), "{}", missing(&t));
    // Neither the code pointer nor the code offset.
    let mut t = table25();
    t.fields.remove("CodeBlob::_code_offset");
    assert!(missing(&t).contains("CodeBlob::_code_offset"), "{}", missing(&t));
    let mut t = table17();
    t.statics.remove("StubRoutines::_call_stub_return_address");
    assert!(missing(&t).contains("static StubRoutines::_call_stub_return_address"), "{}", missing(&t));
    let mut t = table17();
    t.sizes.remove("HeapBlock");
    assert!(missing(&t).contains("size of HeapBlock"), "{}", missing(&t));
    // An integer type hpm does not read.
    let mut t = table17();
    t.types.insert("CodeBlob::_frame_size".into(), "float".into());
    let e = missing(&t);
    assert!(e.contains("CodeBlob::_frame_size") && e.contains("float"), "{e}");
}

#[test]
fn int_widths_from_types() {
    let mut t = VmTable::default();
    for (i, ty) in ["bool", "u2", "int", "size_t", "Foo*", "uint8_t", "jshort", "uint32_t", "jlong"].iter().enumerate()
    {
        t.fields.insert(format!("F::_{i}"), i as u64);
        t.types.insert(format!("F::_{i}"), ty.to_string());
    }
    t.fields.insert("F::_untyped".into(), 99);
    let widths: Vec<u8> = (0..9).map(|i| t.int(&format!("F::_{i}")).unwrap().width).collect();
    assert_eq!(widths, [1, 2, 4, 8, 8, 1, 2, 4, 8]);
    assert_eq!(t.int("F::_untyped"), Ok(Int { off: 99, width: 8 }));
    assert!(t.int("F::_none").is_err());
}

// The code cache and its blobs.

#[test]
fn code_view_from_the_vm() {
    let l = layout();
    let mut vm: HashMap<u64, u64> = HashMap::new();
    let (array, data, queue) = (0x6100_0000, 0x6100_1000, 0x6100_2000);
    vm.insert(l.call_stub_return, 0x1000_0440);
    vm.insert(l.interpreter_code, queue);
    vm.insert(queue + l.queue_buffer, INTERP_LO);
    // The limit is an int: the high half of the word is another field.
    vm.insert(queue + l.queue_limit.off, 0xffff_ffff_0001_0000);
    vm.insert(l.code_heaps, array);
    vm.insert(array + l.array_len, 0x7_0000_0006); // 6 heaps: only 4 read
    vm.insert(array + l.array_data, data);
    let heaps = [0x6200_0000, 0, 0x6300_0000, 0x6400_0000, 0x6500_0000, 0x6600_0000];
    for (i, &h) in heaps.iter().enumerate() {
        vm.insert(data + 8 * i as u64, h);
        if h == 0 {
            continue;
        }
        let k = i as u64;
        vm.insert(h + l.heap_memory + l.vs_low, 0x1000_0000 * (k + 1));
        vm.insert(h + l.heap_memory + l.vs_high, 0x1000_0000 * (k + 1) + 0x8000);
        vm.insert(h + l.heap_segmap + l.vs_low, 0x2000_0000 * (k + 1));
        vm.insert(h + l.heap_segmap + l.vs_high, 0x2000_0000 * (k + 1) + 0x200);
        // The third heap's segment size is out of range: skipped.
        vm.insert(h + l.heap_log2_segment.off, if i == 2 { 30 } else { 6 + k });
    }
    let read = RefCell::new(Vec::new());
    let v = CodeView::read(&l, |a| {
        read.borrow_mut().push(a);
        vm.get(&a).copied().unwrap_or(0)
    });
    assert_eq!(v.call_stub_return, 0x1000_0440);
    assert_eq!(v.interp, (INTERP_LO, INTERP_LO + 0x1_0000));
    assert_eq!(v.nheaps, 2);
    assert_eq!(
        v.heaps[..2],
        [
            Heap { low: 0x1000_0000, high: 0x1000_8000, seg_low: 0x2000_0000, seg_high: 0x2000_0200, log2_segment: 6 },
            Heap { low: 0x4000_0000, high: 0x4000_8000, seg_low: 0x8000_0000, seg_high: 0x8000_0200, log2_segment: 9 },
        ]
    );
    assert!(!read.borrow().contains(&(data + 32)), "a heap past MAX_HEAPS was read");
    assert!(v.contains(0x1000_0000) && v.contains(0x4000_7fff));
    assert!(!v.contains(0x1000_8000) && !v.contains(0x3000_0000) && !v.contains(INTERP_LO));
    assert!(v.in_interpreter(INTERP_LO) && !v.in_interpreter(INTERP_LO + 0x1_0000));
    // A VM without the statics set yet.
    let empty = CodeView::read(&l, |a| if a == l.call_stub_return { 5 } else { 0 });
    assert_eq!(empty, CodeView { call_stub_return: 5, ..CodeView::default() });
}

#[test]
fn blob_lookup_through_the_segment_map() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let start = a - CODE_OFF;
    let blob = Blob { start, frame_words: 4, frame_complete: a + COMPLETE, method: M_A, is_nmethod: true };
    // Any pc of the blob, through hops back.
    for pc in [a, a + 1, start + 15 * 64, start + (BLOB_SEGS << LOG2_SEG) - 17] {
        assert_eq!(f.blob_of(pc), Some(blob), "pc {pc:#x}");
    }
    // Past the blob's size; in a free segment; outside the heap.
    assert_eq!(f.blob_of(start + (BLOB_SEGS << LOG2_SEG) - 16), None);
    assert_eq!(f.blob_of(HEAP_LO + (100 << LOG2_SEG)), None);
    assert_eq!(f.blob_of(HEAP_HI), None);
    assert_eq!(f.blob_of(HEAP_LO - 1), None);
    // A long blob: hops of up to 254 segments.
    let first = 100;
    let long = f.blob_at(first, 400, KIND_STUB, 6, 0x10, 0);
    for seg in [1, 253, 254, 255, 300, 399] {
        let b = f.blob_of(HEAP_LO + ((first + seg) << LOG2_SEG) + 5).unwrap();
        assert_eq!((b.start, b.frame_words, b.is_nmethod, b.method), (long, 6, false, 0), "segment {seg}");
    }
    // A block not in use.
    f.put_bytes(start - 8, &[0]);
    assert_eq!(f.blob_of(a), None);
    f.put_bytes(start - 8, &[1]);
    // A segment map hopping back past the heap's start, or through a free segment.
    f.put_bytes(SEG_LO + 17, &[200]);
    assert_eq!(f.blob_of(HEAP_LO + (17 << LOG2_SEG)), None);
    f.put_bytes(SEG_LO + 17, &[1]);
    f.put_bytes(SEG_LO + 16, &[FREE_SEGMENT]);
    assert_eq!(f.blob_of(HEAP_LO + (17 << LOG2_SEG)), None);
    assert!(f.mem.violations.borrow().is_empty());
}

#[test]
fn blob_header_checks() {
    let mut f = Fake::new();
    // Too near the heap's end for its header to be read whole.
    let start = f.blob_at(SEGS - 8, 8, KIND_NMETHOD, 4, 0, M_A);
    assert_eq!(f.blob_of(start + CODE_OFF), None);
    // Size zero or negative.
    let a = f.nmethod(4, M_A);
    let start = a - CODE_OFF;
    for size in [0_i32, -5] {
        f.put_bytes(start + 12, &size.to_le_bytes());
        assert_eq!(f.blob_of(a), None);
    }
    // A blob smaller than its block: pcs past its size are not in it.
    f.put_bytes(start + 12, &500_i32.to_le_bytes());
    assert!(f.blob_of(start + 499).is_some());
    assert_eq!(f.blob_of(start + 500), None);
    f.put_bytes(start + 12, &1000_i32.to_le_bytes());
    // No frame_complete offset: complete from the code's start.
    f.put_bytes(start + 20, &(-1_i32).to_le_bytes());
    assert_eq!(f.blob_of(a).unwrap().frame_complete, a);
    // JDK 23 and later: the code as an int offset from the blob.
    f.layout.blob_code = CodeStart::Offset(Int { off: 40, width: 4 });
    f.put_bytes(start + 40, &0x120_i32.to_le_bytes());
    f.put_bytes(start + 20, &0x10_i32.to_le_bytes());
    assert_eq!(f.blob_of(a).unwrap().frame_complete, start + 0x130);
    assert!(f.mem.violations.borrow().is_empty());
}

#[test]
fn stop_codes() {
    for (i, s) in Stop::ALL.iter().enumerate() {
        assert_eq!(*s as u8, i as u8);
        assert_eq!(Stop::from_u8(i as u8), *s);
    }
    assert_eq!(Stop::from_u8(200), Stop::Lost);
    assert_eq!(Stop::Bottom as u8, 0);
    let names: std::collections::HashSet<&str> = Stop::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(names.len(), 5);
}

// Found bugs: each test states what HotSpot emits and what the walk should give.

#[test]
fn c2_prologue_without_stack_bang_at_sub() {
    // MacroAssembler::verified_entry, stack_bang_size == 0 (a method without Java calls and
    // a small frame): `sub rsp, framesize-8` (forced imm32: 48 81 ec), `mov [rsp+framesize-16],
    // rbp` (48 89 6c 24 d8), no `push rbp`. Frame of 6 words.
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let sub = a + 0x10;
    f.put_bytes(sub, &[0x48, 0x81, 0xec, 0x28, 0x00, 0x00, 0x00]);
    f.put_bytes(sub + 7, &[0x48, 0x89, 0x6c, 0x24, 0x20]);
    // At the sub: nothing pushed, the return address at [sp], rbp the caller's.
    let ifp = f.interp_bottom(SP + 8);
    f.put(SP, INTERP_RET);
    f.put(SP + 8, 0x4444); // [sp+8]: the top of the caller's expression stack
    assert_eq!(f.walk(regs(sub, SP, ifp), 64), (vec![compiled(sub, M_A, true), bottom()], Stop::Bottom));
}

#[test]
fn c2_prologue_without_stack_bang_at_mov_rbp() {
    // At the mov: the frame is allocated (5 words below the return address), rbp not saved.
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let mov = a + 0x17;
    f.put_bytes(mov, &[0x48, 0x89, 0x6c, 0x24, 0x20]);
    let ifp = f.interp_bottom(SP + 6 * 8);
    f.put(SP + 5 * 8, INTERP_RET);
    f.put(SP, 0x4444);
    assert_eq!(f.walk(regs(mov, SP, ifp), 64), (vec![compiled(mov, M_A, true), bottom()], Stop::Bottom));
}

#[test]
fn nmethod_entry_barrier_in_prologue() {
    // C1 build_frame / C2 verified_entry: push rbp; sub rsp, n; then the entry barrier
    // `cmp dword [r15+d8], 0` (41 81 7f d8 imm32) and its jne, all before frame_complete.
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let pc = a + 0x18;
    f.put_bytes(a + 0x10, &[0x55, 0x48, 0x83, 0xec, 0x20]);
    f.put_bytes(pc, &[0x41, 0x81, 0x7f, 0x20, 0x00, 0x00, 0x00, 0x00]);
    let isp = f.compiled_frame(SP, 6, INTERP_RET, SP + 6 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    f.put(SP, 0x4444); // a spill slot
    assert_eq!(f.walk(regs(pc, SP, 0x1234), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom));
}

#[test]
fn step_bound_is_not_a_full_sink() {
    // Every word from sp returns into a frameless stub: each step climbs 8 bytes and records
    // nothing, until the bound (4 * slots + 64 steps).
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    for a in (SP..STACK_BASE).step_by(8) {
        f.put(a, stub + 0x10);
    }
    let (frames, stop) = f.walk(regs(stub + 0x10, SP, 0), 8);
    assert_eq!(frames, vec![]);
    assert_ne!(stop, Stop::Full);
}

#[test]
fn garbage_near_the_top_of_the_address_space() {
    // At eb7be29, `fp + 8`, `fp + 16` and `anchor + anchor_fp` overflowed here (a panic in a
    // build with overflow checks); the walker now wraps and the reads fail the stack check.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let top: u64 = !7;
    // Interrupted in the interpreter with rbp at the top of the address space.
    assert_eq!(f.walk(regs(INTERP_LO, SP, top), 64), (vec![], Stop::BadInterpreterFrame));
    // Native code without an anchor, rbp there.
    f.put(SP, 0x77);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, top), 64), (vec![], Stop::NoJavaFrame));
    // An entry frame whose JavaCallWrapper pointer is there.
    let esp = SP + 4 * 8;
    let efp = esp + 0x40;
    f.put(efp - 48, u64::MAX - 40);
    let ret = f.code.call_stub_return;
    f.compiled_frame(SP, 4, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Bottom));
}
