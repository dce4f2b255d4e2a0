//! What the walker knows of one JVM and one signal: the VM's layout ([`Layout`], from its
//! VMStructs [`VmTable`]), the code cache ([`CodeView`]), the walked thread ([`ThreadView`])
//! and its registers ([`Regs`]), and the [`Memory`] they are read through.

use std::collections::HashMap;

use super::ContView;

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
pub(super) const BLOB_HEADER: u64 = 512;

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

    pub(super) fn in_interpreter(&self, pc: u64) -> bool {
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
