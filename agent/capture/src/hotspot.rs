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

use std::collections::HashMap;

use crate::blob_cache::{BlobCache, FrameFacts, MemoWalk, WalkMemo, MAX_SEGMENT_LOG2};
use crate::capture::{CallFrame, RawKey, SlotKind};
use crate::native::{NativeStop, NativeTables};

#[path = "hotspot_cont.rs"]
mod cont;
pub use cont::{mounted_vthread, ContLayout, ContView, HeapRange};

/// VMStructs as read from a running JVM: field offsets, static field addresses, type sizes and
/// constants, by `Type::_field` / type name / constant name.
#[derive(Clone, Debug, Default)]
pub struct VmTable {
    pub fields: HashMap<String, u64>,
    pub statics: HashMap<String, u64>,
    pub sizes: HashMap<String, u64>,
    pub constants: HashMap<String, i64>,
    /// The C++ type of each field (`int`, `int16_t`, `address`, ...).
    pub types: HashMap<String, String>,
}

impl VmTable {
    pub fn field(&self, name: &str) -> Result<u64, String> {
        self.fields.get(name).copied().ok_or_else(|| format!("VMStructs has no {name}"))
    }
    /// A field's offset and width in bytes (1, 2, 4 or 8, from its C++ type).
    pub fn int(&self, name: &str) -> Result<Int, String> {
        let off = self.field(name)?;
        let width = match self.types.get(name).map(String::as_str) {
            Some("bool" | "u1" | "jbyte" | "char" | "CodeBlobKind" | "uint8_t" | "int8_t") => 1,
            Some("int16_t" | "uint16_t" | "u2" | "short" | "jshort") => 2,
            Some("int" | "uint" | "u4" | "jint" | "int32_t" | "uint32_t") => 4,
            Some("size_t" | "intptr_t" | "uintptr_t" | "address" | "u8" | "jlong") => 8,
            Some(t) if t.ends_with('*') => 8,
            Some(t) => return Err(format!("VMStructs gives {name} the type {t}, which hpm does not read")),
            None => 8,
        };
        Ok(Int { off, width })
    }
    pub fn stat(&self, name: &str) -> Result<u64, String> {
        self.statics.get(name).copied().ok_or_else(|| format!("VMStructs has no static {name}"))
    }
}

/// An integer field: offset and width in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int {
    pub off: u64,
    pub width: u8,
}

impl Int {
    /// The field's value from the little-endian word read at its offset, sign-extended.
    pub fn signed(self, word: u64) -> i64 {
        match self.width {
            1 => i64::from(word as u8),
            2 => i64::from(word as u16 as i16),
            4 => i64::from(word as u32 as i32),
            _ => word as i64,
        }
    }

    /// The field's value from the little-endian word read at its offset, as unsigned.
    pub fn unsigned(self, word: u64) -> u64 {
        match self.width {
            1 => word & 0xff,
            2 => word & 0xffff,
            4 => word & 0xffff_ffff,
            _ => word,
        }
    }
}

/// Where a code blob keeps its instructions: a pointer field (JDK 17) or an offset from the
/// blob (JDK 23 and later).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeStart {
    Pointer(u64),
    Offset(Int),
}

/// How to tell an nmethod from the other blobs with a frame (runtime stubs): its C++ vtable
/// (JDK 17: `CodeBlob` is polymorphic) or its kind byte (JDK 23 and later).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NmethodTest {
    Vtable(u64),
    Kind {
        field: Int,
        nmethod: i64,
    },
    /// Neither is known: frames of blobs with a frame size are recorded without a method.
    Unknown,
}

/// What the walker needs of HotSpot's layout: offsets from VMStructs, plus the x86-64 frame
/// constants of `frame_x86.hpp` where VMStructs does not export them (the defaults are the
/// values of every JDK from 8 to 25 on x86-64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    // Static field addresses, read at each walk (the code cache grows).
    pub code_heaps: u64,
    pub interpreter_code: u64,
    pub call_stub_return: u64,
    // GrowableArray<CodeHeap*>.
    pub array_len: u64,
    pub array_data: u64,
    // CodeHeap and its VirtualSpaces.
    pub heap_memory: u64,
    pub heap_segmap: u64,
    pub heap_log2_segment: Int,
    pub vs_high: u64,
    pub vs_low: u64,
    pub heap_block_size: u64,
    pub block_used: Int,
    // StubQueue (the interpreter's code).
    pub queue_buffer: u64,
    pub queue_limit: Int,
    // CodeBlob and nmethod.
    pub blob_size: Int,
    pub blob_frame_size: Int,
    pub blob_frame_complete: Int,
    pub blob_code: CodeStart,
    pub nmethod_method: u64,
    pub nmethod_test: NmethodTest,
    // JavaThread and its anchor.
    pub thread_anchor: u64,
    pub anchor_sp: u64,
    pub anchor_pc: u64,
    pub anchor_fp: u64,
    pub thread_stack_base: u64,
    pub thread_stack_size: u64,
    pub wrapper_anchor: u64,
    // Method and ConstMethod (the processor's: bytecode pointer -> index).
    pub method_const: u64,
    pub const_code_size: Int,
    pub const_size: u64,
    // x86-64 frame slots, in words from rbp.
    pub interp_sender_sp: i64,
    pub interp_method: i64,
    pub interp_bcp: i64,
    pub entry_call_wrapper: i64,
}

impl Layout {
    /// The layout from a JVM's table (`nmethod_vtable`: the address of `nmethod`'s vtable as
    /// objects point to it, from libjvm's symbols, when known); `Err` names the first thing
    /// missing.
    pub fn from_table(t: &VmTable, nmethod_vtable: Option<u64>) -> Result<Layout, String> {
        let c = |name: &str, default: i64| t.constants.get(name).copied().unwrap_or(default);
        let either = |a: &str, b: &str| t.field(a).or_else(|_| t.field(b));
        let blob_code = match t.field("CodeBlob::_code_begin") {
            Ok(o) => CodeStart::Pointer(o),
            Err(_) => CodeStart::Offset(t.int("CodeBlob::_code_offset")?),
        };
        let nmethod_test = match (t.int("CodeBlob::_kind"), t.constants.get("CodeBlobKind::Nmethod"), nmethod_vtable) {
            (Ok(field), Some(&nmethod), _) => NmethodTest::Kind { field, nmethod },
            (_, _, Some(v)) => NmethodTest::Vtable(v),
            _ => NmethodTest::Unknown,
        };
        let heap_block_size = t.sizes.get("HeapBlock").copied().ok_or("VMStructs has no size of HeapBlock")?;
        let used = t.int("HeapBlock::Header::_used")?;
        let layout = Layout {
            code_heaps: t.stat("CodeCache::_heaps")?,
            interpreter_code: t.stat("AbstractInterpreter::_code")?,
            call_stub_return: t.stat("StubRoutines::_call_stub_return_address")?,
            array_len: either("GrowableArrayBase::_len", "GenericGrowableArray::_len")?,
            array_data: t.field("GrowableArray<int>::_data")?,
            heap_memory: t.field("CodeHeap::_memory")?,
            heap_segmap: t.field("CodeHeap::_segmap")?,
            heap_log2_segment: t.int("CodeHeap::_log2_segment_size")?,
            vs_high: t.field("VirtualSpace::_high")?,
            vs_low: t.field("VirtualSpace::_low")?,
            heap_block_size,
            block_used: Int { off: t.field("HeapBlock::_header")? + used.off, width: used.width },
            queue_buffer: t.field("StubQueue::_stub_buffer")?,
            queue_limit: t.int("StubQueue::_buffer_limit")?,
            blob_size: t.int("CodeBlob::_size")?,
            blob_frame_size: t.int("CodeBlob::_frame_size")?,
            blob_frame_complete: t.int("CodeBlob::_frame_complete_offset")?,
            blob_code,
            nmethod_method: either("nmethod::_method", "CompiledMethod::_method")?,
            nmethod_test,
            thread_anchor: t.field("JavaThread::_anchor")?,
            anchor_sp: t.field("JavaFrameAnchor::_last_Java_sp")?,
            anchor_pc: t.field("JavaFrameAnchor::_last_Java_pc")?,
            anchor_fp: t.field("JavaFrameAnchor::_last_Java_fp")?,
            thread_stack_base: either("JavaThread::_stack_base", "Thread::_stack_base")?,
            thread_stack_size: either("JavaThread::_stack_size", "Thread::_stack_size")?,
            wrapper_anchor: t.field("JavaCallWrapper::_anchor")?,
            method_const: t.field("Method::_constMethod")?,
            const_code_size: t.int("ConstMethod::_code_size")?,
            const_size: t.sizes.get("ConstMethod").copied().ok_or("VMStructs has no size of ConstMethod")?,
            interp_sender_sp: c("frame::interpreter_frame_sender_sp_offset", -1),
            interp_method: c("frame::interpreter_frame_method_offset", -3),
            interp_bcp: c("frame::interpreter_frame_bcp_offset", -8),
            entry_call_wrapper: c("frame::entry_frame_call_wrapper_offset", -6),
        };
        // The walker reads a blob's header fields only when the first BLOB_HEADER bytes of
        // the blob lie in committed code.
        let ends = [
            layout.blob_size.off + u64::from(layout.blob_size.width),
            layout.blob_frame_size.off + u64::from(layout.blob_frame_size.width),
            layout.blob_frame_complete.off + u64::from(layout.blob_frame_complete.width),
            match layout.blob_code {
                CodeStart::Pointer(o) => o + 8,
                CodeStart::Offset(f) => f.off + u64::from(f.width),
            },
            layout.nmethod_method + 8,
            match layout.nmethod_test {
                NmethodTest::Kind { field, .. } => field.off + u64::from(field.width),
                _ => 8,
            },
        ];
        if let Some(end) = ends.into_iter().find(|&e| e > BLOB_HEADER) {
            return Err(format!("a code blob field ends at byte {end}, past the {BLOB_HEADER} hpm reads"));
        }
        Ok(layout)
    }
}

/// Bytes of a blob's header the walker may read (JDK 17: fields end by byte 120; JDK 25: 88).
const BLOB_HEADER: u64 = 512;

/// Reads of the walked process's memory. The walker calls these only at addresses it checked
/// first against the ranges of [`CodeView`] and [`ThreadView`] (or at addresses of the VM's
/// own permanent structures), so an implementation may read directly.
pub trait Memory {
    fn word(&self, addr: u64) -> u64;
    fn byte(&self, addr: u64) -> u8;
    fn int(&self, addr: u64, width: u8) -> i64;
}

/// One code heap: its committed instructions and its segment map.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heap {
    pub low: u64,
    pub high: u64,
    pub seg_low: u64,
    pub seg_high: u64,
    pub log2_segment: u32,
}

/// At most this many code heaps (HotSpot has 1 or 3).
pub const MAX_HEAPS: usize = 4;

/// The code cache as the walker sees it at one signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeView {
    pub heaps: [Heap; MAX_HEAPS],
    pub nheaps: usize,
    /// The interpreter's code: `[lo, hi)`.
    pub interp: (u64, u64),
    pub call_stub_return: u64,
}

impl CodeView {
    /// Reads the code cache's layout through the VM's permanent structures (`vm_word` must be
    /// able to read libjvm's statics and the CodeHeap objects they point to).
    pub fn read(l: &Layout, vm_word: impl Fn(u64) -> u64) -> CodeView {
        let int = |addr: u64, f: Int| f.signed(vm_word(addr + f.off));
        let mut v = CodeView { call_stub_return: vm_word(l.call_stub_return), ..CodeView::default() };
        let queue = vm_word(l.interpreter_code);
        if queue != 0 {
            let lo = vm_word(queue + l.queue_buffer);
            let limit = int(queue, l.queue_limit).max(0) as u64;
            v.interp = (lo, lo + limit);
        }
        let array = vm_word(l.code_heaps);
        if array != 0 {
            let len = (vm_word(array + l.array_len) as u32 as usize).min(MAX_HEAPS);
            let data = vm_word(array + l.array_data);
            for i in 0..len {
                let heap = vm_word(data + 8 * i as u64);
                if heap == 0 {
                    continue;
                }
                let mem = heap + l.heap_memory;
                let seg = heap + l.heap_segmap;
                let log2 = int(heap, l.heap_log2_segment);
                if !(4..=20).contains(&log2) {
                    continue;
                }
                v.heaps[v.nheaps] = Heap {
                    low: vm_word(mem + l.vs_low),
                    high: vm_word(mem + l.vs_high),
                    seg_low: vm_word(seg + l.vs_low),
                    seg_high: vm_word(seg + l.vs_high),
                    log2_segment: log2 as u32,
                };
                v.nheaps += 1;
            }
        }
        v
    }

    /// The code heap whose committed part holds `pc`.
    pub fn heap_of(&self, pc: u64) -> Option<&Heap> {
        self.heaps[..self.nheaps].iter().find(|h| h.low <= pc && pc < h.high)
    }

    /// Whether `pc` lies in committed code (the interpreter included).
    pub fn contains(&self, pc: u64) -> bool {
        self.heap_of(pc).is_some()
    }

    fn in_interpreter(&self, pc: u64) -> bool {
        self.interp.0 <= pc && pc < self.interp.1
    }
}

/// The walked thread: its stack and its last Java frame (all zero when it has none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadView {
    /// The stack's top (highest address, exclusive).
    pub stack_base: u64,
    /// The stack's lowest address: a stack pointer below it is not on this thread's stack (a
    /// signal handler's alternate stack, a coroutine's) and is not walked.
    pub stack_end: u64,
    pub anchor_sp: u64,
    pub anchor_pc: u64,
    pub anchor_fp: u64,
    /// The mounted continuation, if any (a virtual thread's): its frozen frames are walked
    /// across the return barrier.
    pub cont: ContView,
}

/// The registers the signal interrupted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    pub pc: u64,
    pub sp: u64,
    pub fp: u64,
    /// rbx: the `Method*` being entered while the interpreter builds its frame (x86-64 template
    /// interpreter's method entries); anything else elsewhere.
    pub method_reg: u64,
}

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

/// One physical frame as the walker records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawFrame {
    /// A pc in a blob with a frame (nmethod or runtime stub), with the nmethod's `Method*`
    /// (0 for a stub or when unknown). `interrupted`: the pc is where the signal stopped the
    /// thread; otherwise it is a return address or the anchor's pc (a call site).
    Compiled { pc: u64, method: u64, interrupted: bool },
    /// An interpreter frame: `Method*` and bytecode pointer.
    Interpreted { method: u64, bcp: u64 },
    /// A frame of native code (a library's or the JVM's own), unwound with `cstack=`:
    /// `interrupted` as for a compiled frame.
    Native { pc: u64, interrupted: bool },
}

/// Frames a walk filled, in the ASGCT-shaped arrays of a capture: a compiled frame takes two
/// slots (pc, then `Method*`), an interpreted one one slot (`Method*`, low 32 bits of the
/// bytecode pointer: with the method's bytecode start, that gives the bytecode index).
pub struct FrameSink<'a> {
    pub frames: &'a mut [CallFrame],
    /// What each of `frames` holds.
    pub slots: &'a mut [SlotKind],
    pub len: usize,
    /// `data`: which frame holds a stack address.
    pub probe: Probe,
    /// `sampler=chain`: each frame's activation address at its first slot (0: unknown), from
    /// which its stack depth (the stack base minus it) is the CallerChaining key (Inoue &
    /// Nakatani §6): a compiled frame's stack pointer once its frame is complete (fixed for the
    /// activation: HotSpot's compiled frames have a constant size), an interpreter frame's fp
    /// (its sp moves with the expression stack). `None`: not recorded.
    pub addrs: Option<&'a mut [u64]>,
    /// Blobs looked up (with a cache), and of those found in the thread's last walk
    /// ([`WalkMemo`]) and in the shared cache.
    pub blob_lookups: u32,
    pub blob_memo_hits: u32,
    pub blob_hits: u32,
    /// What the native steps did (with [`Walker::native`] only).
    pub native: NativeWalk,
}

/// What a walk's native steps did (`cstack=`): counted by the handler, so the summary says
/// where native unwinding gave up and how often the anchor took over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeWalk {
    /// Native frames recorded.
    pub frames: u16,
    /// Why the last native step that gave up did (`NoTable` or `Lost`; never `Bottom`).
    pub gave_up: Option<NativeStop>,
    /// After a step gave up, an anchor (the thread's or an entry frame's) or the rbp hop led
    /// the walk on to Java frames.
    pub fell_back: bool,
}

/// Which walked frame holds an address of the stack (`data`: "stack, and the frame"): a frame
/// spans from its stack pointer up to its caller's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// The address looked for (0: none).
    pub address: u64,
    /// The first slot (in the sink) of the frame that holds it.
    pub slot: Option<u32>,
    /// The last frame pushed: its first slot and its stack pointer.
    last: Option<(usize, u64)>,
}

impl Probe {
    pub fn new(address: u64) -> Probe {
        Probe { address, ..Probe::default() }
    }

    /// A frame whose stack pointer is `sp` starts at `slot`: the previous one spans up to it.
    fn frame(&mut self, slot: usize, sp: u64) {
        if self.address == 0 || self.slot.is_some() {
            return;
        }
        if let Some((s, psp)) = self.last {
            if psp <= self.address && self.address < sp {
                self.slot = Some(s as u32);
            }
        }
        self.last = Some((slot, sp));
    }

    /// The walk ended: the last frame spans up to the stack's base.
    pub fn finish(&mut self, stack_base: u64) {
        self.frame(usize::MAX, stack_base);
    }
}

impl<'a> FrameSink<'a> {
    /// A sink filling `frames` and `slots`, with no probe and no activation addresses.
    pub fn new(frames: &'a mut [CallFrame], slots: &'a mut [SlotKind]) -> FrameSink<'a> {
        FrameSink {
            frames,
            slots,
            len: 0,
            probe: Probe::default(),
            addrs: None,
            blob_lookups: 0,
            blob_memo_hits: 0,
            blob_hits: 0,
            native: NativeWalk::default(),
        }
    }

    /// The activation address of the frame that starts at `slot` (see [`FrameSink::addrs`]).
    fn set_addr(&mut self, slot: usize, addr: u64) {
        if let Some(a) = self.addrs.as_deref_mut().and_then(|a| a.get_mut(slot)) {
            *a = addr;
        }
    }

    /// Pushes a frame whose stack pointer is `sp`.
    fn push_at(&mut self, f: RawFrame, sp: u64) -> bool {
        let slot = self.len;
        let pushed = self.push(f);
        if pushed {
            self.probe.frame(slot, sp);
        }
        pushed
    }

    fn push(&mut self, f: RawFrame) -> bool {
        let cap = self.frames.len().min(self.slots.len());
        match f {
            RawFrame::Compiled { pc, method, interrupted } => {
                if self.len + 2 > cap {
                    return false;
                }
                self.frames[self.len] = CallFrame { lineno: i32::from(interrupted), method_id: pc };
                self.slots[self.len] = SlotKind::Pc;
                self.frames[self.len + 1] = CallFrame { lineno: 0, method_id: method };
                self.slots[self.len + 1] = SlotKind::Method;
                self.len += 2;
            }
            RawFrame::Interpreted { method, bcp } => {
                if self.len + 1 > cap {
                    return false;
                }
                self.frames[self.len] = CallFrame { lineno: bcp as u32 as i32, method_id: method };
                self.slots[self.len] = SlotKind::Interpreted;
                self.len += 1;
            }
            RawFrame::Native { pc, interrupted } => {
                if self.len + 1 > cap {
                    return false;
                }
                self.frames[self.len] = CallFrame { lineno: i32::from(interrupted), method_id: pc };
                self.slots[self.len] = SlotKind::Native;
                self.len += 1;
            }
        }
        true
    }
}

/// The key of the raw stack in a [`FrameSink`]'s filled slots, under the process's hash seed
/// ([`hpm_profile::hash::FastBuild::seed`]). A compiled frame's pc goes in one word with its
/// interrupted flag (its `Method*` slot left out: the pc names the frame, and a name rests on
/// the code at the pc staying in the map), any other slot (an interpreted frame's `Method*` and
/// bytecode pointer) in two, the second tagged apart from a pc's word. The callers' hash is
/// over the slots below the first frame; the whole's over that frame's slots and the callers'
/// hash, so a range of slots has one hash whichever stack it is the callers of, and a whole
/// stack's, made differently, is never one of them. A word per compiled frame keeps it cheap
/// enough for the signal handler, which keys the slots it just wrote, still in its cache: the
/// resolver then reads none of a known stack's slots.
pub fn raw_stack_key(seed: u64, frames: &[CallFrame], slots: &[SlotKind]) -> RawKey {
    let n = frames.len().min(slots.len());
    let leaf = leaf_slots(&slots[..n]);
    let mut interpreted = false;
    let mut h = hpm_profile::hash::Hash128::new(seed);
    key_slots(&mut h, &frames[leaf..n], &slots[leaf..n], &mut interpreted);
    let callers = h.finish();
    let mut h = hpm_profile::hash::Hash128::new(seed);
    key_slots(&mut h, &frames[..leaf], &slots[..leaf], &mut interpreted);
    h.write(callers.0);
    h.write(callers.1);
    RawKey { hash: h.finish(), callers, leaf_slots: leaf as u32, interpreted }
}

/// The key of a range of slots as the callers of some stack ([`RawKey::callers`]): the same
/// whichever stack's callers they are, so the resolver finds a stack's deeper callers by it.
pub fn slots_key(seed: u64, frames: &[CallFrame], slots: &[SlotKind]) -> (u64, u64) {
    let n = frames.len().min(slots.len());
    let mut h = hpm_profile::hash::Hash128::new(seed);
    key_slots(&mut h, &frames[..n], &slots[..n], &mut false);
    h.finish()
}

fn key_slots(h: &mut hpm_profile::hash::Hash128, frames: &[CallFrame], slots: &[SlotKind], interpreted: &mut bool) {
    for (f, &k) in frames.iter().zip(slots) {
        match k {
            SlotKind::Method => {}
            // A user-space pc is below 2^48: the top byte (1 or 2) marks the word as a pc's.
            SlotKind::Pc if f.method_id >> 48 == 0 && (f.lineno == 0 || f.lineno == 1) => {
                h.write(f.method_id | (1 + f.lineno as u64) << 56)
            }
            _ => {
                *interpreted |= k == SlotKind::Interpreted;
                h.write(f.method_id);
                h.write(u64::from(f.lineno as u32) | (k as u64) << 32 | 0xff << 56);
            }
        }
    }
}

/// The slots the first raw frame of `slots` takes (see [`raw_frames`]): a compiled frame's pc
/// and `Method*`, an interpreted or native frame's one; all of them when there is no frame.
pub fn leaf_slots(slots: &[SlotKind]) -> usize {
    match slots.iter().position(|&k| matches!(k, SlotKind::Pc | SlotKind::Interpreted | SlotKind::Native)) {
        Some(i) if slots[i] == SlotKind::Pc => i + 1 + usize::from(slots.get(i + 1) == Some(&SlotKind::Method)),
        Some(i) => i + 1,
        None => slots.len(),
    }
}

/// The raw frames of a filled capture, top first (see [`FrameSink`]); `bcp` of an interpreted
/// frame holds only the low 32 bits.
pub fn raw_frames<'a>(frames: &'a [CallFrame], slots: &'a [SlotKind]) -> impl Iterator<Item = RawFrame> + 'a {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < frames.len().min(slots.len()) {
            let k = i;
            i += 1;
            match slots[k] {
                SlotKind::Pc => {
                    let method = if i < frames.len() && slots.get(i) == Some(&SlotKind::Method) {
                        i += 1;
                        frames[i - 1].method_id
                    } else {
                        0
                    };
                    return Some(RawFrame::Compiled {
                        pc: frames[k].method_id,
                        method,
                        interrupted: frames[k].lineno == 1,
                    });
                }
                SlotKind::Interpreted => {
                    return Some(RawFrame::Interpreted {
                        method: frames[k].method_id,
                        bcp: u64::from(frames[k].lineno as u32),
                    })
                }
                SlotKind::Native => {
                    return Some(RawFrame::Native { pc: frames[k].method_id, interrupted: frames[k].lineno == 1 })
                }
                _ => {}
            }
        }
        None
    })
}

/// The `Method*`s of the interpreted frames among a filled capture's raw frames, top first
/// (what [`raw_frames`] gives as `RawFrame::Interpreted`, found from the slots alone: a
/// compiled frame's method slot is tagged apart).
pub fn interpreted_methods<'a>(frames: &'a [CallFrame], slots: &'a [SlotKind]) -> impl Iterator<Item = u64> + 'a {
    slots.iter().zip(frames).filter(|(k, _)| **k == SlotKind::Interpreted).map(|(_, f)| f.method_id)
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
        let mut section = (self.native.is_some() && t.anchor_sp >= lo && in_stack(t.anchor_sp, 8)).then_some((
            t.anchor_sp,
            t.anchor_pc,
            t.anchor_fp,
        ));
        let mut hop_used = false;
        let bound = 4 * out.frames.len() + 64;
        for _ in 0..bound {
            if exact {
                // A return into a continuation's barrier: its frozen frames, then its entry.
                match self.cross_barrier(pc, sp, out, &word) {
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
                        section = Some((asp, apc, afp));
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
                // A stub without a frame size: frameless (the return address at sp), or on rbp.
                let Some((p, s, f)) = self.unwind_stub(sp, fp, !exact, &word) else { return Stop::Lost };
                (pc, sp, fp) = (p, s, f);
                exact = true;
                continue;
            }
            if let Some(tables) = self.native {
                // Native or VM code, walked: the frame recorded, its caller from the tables.
                let slot = out.len;
                if !out.push_at(RawFrame::Native { pc, interrupted: !exact }, sp) {
                    return Stop::Full;
                }
                out.set_addr(slot, 0);
                out.native.frames = out.native.frames.saturating_add(1);
                // Under an anchor, the native frames end in the Java frame it names: a pc no
                // table covers goes to the anchor rather than the rbp rule (frame pointers
                // only: the rbp rule is all there is), and a step past the anchor's sp, or to
                // the thread's entry, would drop Java frames: refused. Without one (a VM
                // thread, a leaf call), a return address must lie in the code cache or a
                // library held (a garbage rbp chain leads elsewhere).
                let fp_rule = section.is_none() || tables.frame_pointers_only();
                let below_anchor = |s: u64| section.is_none_or(|(asp, _, _)| s <= asp);
                let believed =
                    |p: u64| section.is_some() || self.is_code(p) || tables.frame_pointers_only() || tables.covers(p);
                // Interrupted in a leaf the tables have no rule for (hand-written assembly:
                // HotSpot's SpinPause, where Parallel GC's workers spin), the return address
                // is at sp when it returns into code a table or the code cache covers.
                let stepped = match tables.step_by(pc, sp, fp, exact, fp_rule, &word) {
                    Err(e @ (NativeStop::Refused | NativeStop::NoTable)) if !exact => match word(sp) {
                        Some(r) if self.is_code(r) || tables.covers(r) => Ok((r, sp + 8, fp)),
                        _ => Err(e),
                    },
                    s => s,
                };
                let gave_up = match stepped {
                    // The thread's entry (a zero return address ends a frame-pointer chain).
                    Ok((0, _, _)) | Err(NativeStop::Bottom) if section.is_none() => return Stop::Bottom,
                    Ok((p, s, f)) if p != 0 && s > sp && in_stack(s, 0) && below_anchor(s) && believed(p) => {
                        if self.is_code(p) {
                            section = None; // back in Java: this run of native frames is done
                        }
                        (pc, sp, fp) = (p, s, f);
                        exact = true;
                        continue;
                    }
                    Ok(_) | Err(NativeStop::Bottom) => NativeStop::Lost,
                    Err(e) => e,
                };
                out.native.gave_up = Some(gave_up);
                // The frames so far stay; the anchor (or the rbp hop) leads on to Java.
                if let Some((asp, apc, afp)) = section.take().filter(|&(asp, _, _)| asp >= sp && in_stack(asp, 8)) {
                    let Some(next) = self.anchored(asp, apc, afp, &word) else { return Stop::Lost };
                    out.native.fell_back = true;
                    (pc, sp, fp) = next;
                    exact = true;
                    continue;
                }
                if !hop_used {
                    hop_used = true;
                    if let Some(next) = self.unwind_native(sp, fp, &word) {
                        out.native.fell_back = true;
                        (pc, sp, fp) = next;
                        exact = true;
                        continue;
                    }
                }
                return if found_java { Stop::Lost } else { Stop::NoJavaFrame };
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

/// The top of a thread's stack as a sample copied it (PERF_SAMPLE_STACK_USER): `bytes` from
/// `sp`, read long after the thread moved on (`sampler=chain`).
#[derive(Clone, Copy, Debug)]
pub struct StackCopy<'a> {
    pub sp: u64,
    pub bytes: &'a [u8],
}

impl StackCopy<'_> {
    /// The little-endian integer of `width` bytes at `addr`, if the copy holds it.
    fn read(&self, addr: u64, width: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let b = self.bytes.get(off..off.checked_add(width as usize)?)?;
        Some(b.iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x)))
    }
}

/// The walker's memory over a stack copy: stack addresses from the copy, everything else
/// (the code heap, its segment map, the VM's structures) from `code`.
struct CopyMemory<'a, M: Memory> {
    copy: StackCopy<'a>,
    code: &'a M,
}

impl<M: Memory> Memory for CopyMemory<'_, M> {
    fn word(&self, addr: u64) -> u64 {
        self.copy.read(addr, 8).unwrap_or_else(|| self.code.word(addr))
    }
    fn byte(&self, addr: u64) -> u8 {
        self.copy.read(addr, 1).map_or_else(|| self.code.byte(addr), |v| v as u8)
    }
    fn int(&self, addr: u64, width: u8) -> i64 {
        let sign = |v: u64| match width {
            1 => i64::from(v as u8 as i8),
            2 => i64::from(v as u16 as i16),
            4 => i64::from(v as u32 as i32),
            _ => v as i64,
        };
        self.copy.read(addr, u64::from(width.clamp(1, 8))).map_or_else(|| self.code.int(addr, width), sign)
    }
}

/// Walks the frames a stack copy holds, from the registers the sample recorded (`regs.sp`
/// must be `copy.sp`): as many frames as the copy reaches, with their activation addresses
/// when `out.addrs` is given. The stack is read from the copy only (the walk ends where it
/// does, usually `Stop::Lost`); `code` serves the code cache. No anchor: a sample in native
/// code finds Java only through rbp.
pub fn walk_copy<M: Memory>(
    layout: &Layout,
    code: &CodeView,
    code_mem: &M,
    copy: StackCopy,
    regs: Regs,
    out: &mut FrameSink,
) -> Stop {
    if regs.sp != copy.sp {
        return Stop::Lost;
    }
    let top = copy.sp.saturating_add(copy.bytes.len() as u64 & !7);
    let thread = ThreadView { stack_base: top, stack_end: copy.sp, ..ThreadView::default() };
    let mem = CopyMemory { copy, code: code_mem };
    Walker { layout, code, thread: &thread, mem: &mem, cache: None, memo: None, native: None }.walk(regs, out)
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
