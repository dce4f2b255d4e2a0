//! The one module that reads HotSpot's own description of itself (leaf): the VMStructs tables
//! libjvm.so exports for the Serviceability Agent (`gHotSpotVMStructs`, `gHotSpotVMTypes`,
//! `gHotSpotVMIntConstants`, `gHotSpotVMLongConstants`, each with its entry layout exported
//! beside it). Read once, off any signal path, into a table the frame walker's layout is built
//! from (`hpm_capture::hotspot::Layout::from_table`): what a JVM does not export leaves the walker
//! off, with one line, instead of guessing.

use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

mod checked;
pub use checked::Checked;
use checked::HeapChecked;

use hpm_capture::blob_cache::{BlobCache, WalkMemo};
use hpm_capture::capture::DataCapture;
use hpm_capture::hotspot::{
    CodeView, ContLayout, ContView, FrameSink, HeapRange, Layout, Memory, Regs, Stop, ThreadView, VmTable, Walker,
};
use hpm_capture::javaheap::HeapLayout;
use hpm_capture::native::NativeTables;

/// libjvm.so's handle (already loaded: the agent runs inside the JVM).
fn libjvm() -> *mut c_void {
    // SAFETY: dlopen with RTLD_NOLOAD only returns a handle to a library already loaded.
    unsafe { libc::dlopen(c"libjvm.so".as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) }
}

/// The address of an exported libjvm symbol.
fn symbol(lib: *mut c_void, name: &CStr) -> Option<*const c_void> {
    // SAFETY: dlsym on a handle from dlopen (or RTLD_DEFAULT) with a NUL-terminated name.
    let p = unsafe {
        let p = if lib.is_null() { std::ptr::null_mut() } else { libc::dlsym(lib, name.as_ptr()) };
        if p.is_null() {
            libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr())
        } else {
            p
        }
    };
    (!p.is_null()).then_some(p as *const c_void)
}

/// The value of an exported `uint64_t` (the tables' strides and offsets).
fn exported_u64(lib: *mut c_void, name: &CStr) -> Option<u64> {
    // SAFETY: these symbols are `uint64_t` variables in libjvm.so's data, set at load.
    symbol(lib, name).map(|p| unsafe { *(p as *const u64) })
}

/// The value of an exported pointer variable (the tables themselves).
fn exported_ptr(lib: *mut c_void, name: &CStr) -> Option<*const u8> {
    // SAFETY: `gHotSpotVM*` are pointer variables in libjvm.so's data, set at load.
    symbol(lib, name).map(|p| unsafe { *(p as *const *const u8) }).filter(|p| !p.is_null())
}

/// The string a `const char*` field at `off` of an entry points at, or None when null.
///
/// # Safety
/// `e + off` holds a pointer that is null or points at a NUL-terminated string.
unsafe fn text_at(e: *const u8, off: u64) -> Option<String> {
    let p = *(e.add(off as usize) as *const *const c_char);
    (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// The value of type `T` at `off` of an entry.
///
/// # Safety
/// `e + off` holds a `T`.
unsafe fn value_at<T: Copy>(e: *const u8, off: u64) -> T {
    *(e.add(off as usize) as *const T)
}

/// Entries are bounded: HotSpot 17 exports ~2,500 fields; a table without its terminator is
/// not read past this.
const MAX_ENTRIES: usize = 100_000;

/// Calls `f` with each entry of a VMStructs table (`stride` bytes apart) and its name (the
/// string field at `name`), up to the terminating entry, whose name is null.
///
/// # Safety
/// `base` is such a table and `name` the offset of its entries' name field.
unsafe fn each_entry(base: *const u8, stride: u64, name: u64, mut f: impl FnMut(*const u8, String)) {
    for i in 0..MAX_ENTRIES {
        let e = base.add(i * stride as usize);
        let Some(n) = text_at(e, name) else { break };
        f(e, n);
    }
}

/// Reads the four tables. `Err` names what is missing.
pub fn read() -> Result<VmTable, String> {
    let lib = libjvm();
    let mut t = VmTable::default();
    let need = |name: &CStr| exported_u64(lib, name).ok_or_else(|| format!("libjvm.so exports no {name:?}"));

    let base = exported_ptr(lib, c"gHotSpotVMStructs").ok_or("libjvm.so exports no gHotSpotVMStructs")?;
    let (tn, fname, tstr, stat, off, addr, stride) = (
        need(c"gHotSpotVMStructEntryTypeNameOffset")?,
        need(c"gHotSpotVMStructEntryFieldNameOffset")?,
        need(c"gHotSpotVMStructEntryTypeStringOffset")?,
        need(c"gHotSpotVMStructEntryIsStaticOffset")?,
        need(c"gHotSpotVMStructEntryOffsetOffset")?,
        need(c"gHotSpotVMStructEntryAddressOffset")?,
        need(c"gHotSpotVMStructEntryArrayStride")?,
    );
    // SAFETY: the struct table with its exported entry layout (type name, field name, type
    // string: `const char*`; static flag: int32; offset and address: 64 bits).
    unsafe {
        each_entry(base, stride, tn, |e, type_name| {
            let Some(field) = text_at(e, fname) else { return };
            let key = format!("{type_name}::{field}");
            if let Some(ty) = text_at(e, tstr) {
                t.types.insert(key.clone(), ty);
            }
            if value_at::<i32>(e, stat) != 0 {
                t.statics.insert(key, value_at::<u64>(e, addr));
            } else {
                t.fields.insert(key, value_at::<u64>(e, off));
            }
        })
    };

    let base = exported_ptr(lib, c"gHotSpotVMTypes").ok_or("libjvm.so exports no gHotSpotVMTypes")?;
    let (tn, size, stride) = (
        need(c"gHotSpotVMTypeEntryTypeNameOffset")?,
        need(c"gHotSpotVMTypeEntrySizeOffset")?,
        need(c"gHotSpotVMTypeEntryArrayStride")?,
    );
    // SAFETY: the type table with its exported entry layout (size: 64 bits).
    unsafe {
        each_entry(base, stride, tn, |e, type_name| {
            t.sizes.insert(type_name, value_at::<u64>(e, size));
        })
    };

    for (table, name_off, value_off, stride_name, long) in [
        (
            c"gHotSpotVMIntConstants",
            c"gHotSpotVMIntConstantEntryNameOffset",
            c"gHotSpotVMIntConstantEntryValueOffset",
            c"gHotSpotVMIntConstantEntryArrayStride",
            false,
        ),
        (
            c"gHotSpotVMLongConstants",
            c"gHotSpotVMLongConstantEntryNameOffset",
            c"gHotSpotVMLongConstantEntryValueOffset",
            c"gHotSpotVMLongConstantEntryArrayStride",
            true,
        ),
    ] {
        let Some(base) = exported_ptr(lib, table) else { continue };
        let (no, vo, stride) = (need(name_off)?, need(value_off)?, need(stride_name)?);
        // SAFETY: the constant tables with their exported entry layout (int32 or int64 values).
        unsafe {
            each_entry(base, stride, no, |e, name| {
                let v = if long { value_at::<i64>(e, vo) } else { i64::from(value_at::<i32>(e, vo)) };
                t.constants.insert(name, v);
            })
        };
    }
    Ok(t)
}

/// The JVM's tables, read once.
pub fn table() -> Result<&'static VmTable, String> {
    static TABLE: OnceLock<Result<VmTable, String>> = OnceLock::new();
    TABLE.get_or_init(read).as_ref().map_err(Clone::clone)
}

/// The frame walker's layout of this JVM, read once; `Err` says what is missing.
pub fn walker_layout() -> Result<&'static Layout, String> {
    static LAYOUT: OnceLock<Result<Layout, String>> = OnceLock::new();
    let layout = LAYOUT.get_or_init(|| Layout::from_table(table()?, nmethod_vtable())).as_ref().map_err(Clone::clone);
    if layout.is_ok() {
        // Made here, before any handler walks: the handler only reads it.
        BLOB_CACHE.get_or_init(BlobCache::default);
    }
    layout
}

/// Where the VM keeps virtual threads' continuations, read once, at VMInit (or when the agent
/// loads into a running VM): the heap exists and the VM computed its classes' field offsets by
/// then. Not made where this JVM has none (JDK 17) or a symbol or the heap's layout is missing;
/// then continuations are not crossed and samples carry no virtual thread. Each try maps
/// libjvm for its symbols: hence once, not with each code load.
pub fn prepare_continuations() {
    static TRIED: std::sync::Once = std::sync::Once::new();
    TRIED.call_once(|| {
        if let Some(c) = cont_layout() {
            let _ = CONT.set(c);
        }
    });
}

fn cont_layout() -> Option<ContLayout> {
    let t = table().ok()?;
    // JDK 17 has no continuations: nothing else is read there.
    let thread_cont_entry = *t.fields.get("JavaThread::_cont_entry")?;
    // The entry's fields are not in VMStructs: their offsets are a product build's on x86-64,
    // trusted only where the entry's size is theirs (a debug build adds a cookie).
    if t.sizes.get("ContinuationEntry") != Some(&hpm_capture::hotspot::CONTINUATION_ENTRY_SIZE) {
        return None;
    }
    heap_layout().ok()?;
    // The pid `os::read_checked` uses, cached before any handler reads through it.
    crate::os::pid();
    let (path, base) = libjvm_loaded()?;
    let path = std::path::Path::new(&path);
    let sym = |name: &str| hpm_resolve::symbols::symbol_address(path, name).map(|v| v + base);
    let int = |name: &str| -> Option<u64> {
        let v = vm_word(sym(name)?) as u32 as i32;
        (v > 0).then_some(v as u64)
    };
    let narrow = if flag("UseCompressedOops").unwrap_or(0) != 0 {
        let b = vm_word(*t.statics.get("CompressedOops::_base")?);
        let s = vm_word(*t.statics.get("CompressedOops::_shift")?) as u32;
        Some((b, s))
    } else {
        None
    };
    Some(ContLayout {
        thread_cont_entry,
        return_pc_addr: sym("_ZN17ContinuationEntry10_return_pcE")?,
        barrier_addr: sym("_ZN12StubRoutines19_cont_returnBarrierE").unwrap_or(0),
        cont_tail: int("_ZN28jdk_internal_vm_Continuation12_tail_offsetE")?,
        chunk_parent: int("_ZN26jdk_internal_vm_StackChunk14_parent_offsetE")?,
        chunk_size: int("_ZN26jdk_internal_vm_StackChunk12_size_offsetE")?,
        chunk_sp: int("_ZN26jdk_internal_vm_StackChunk10_sp_offsetE")?,
        chunk_bottom: int("_ZN26jdk_internal_vm_StackChunk14_bottom_offsetE")?,
        chunk_pc: int("_ZN26jdk_internal_vm_StackChunk10_pc_offsetE")?,
        chunk_stack: int("_ZN23InstanceStackChunkKlass16_offset_of_stackE")?,
        narrow,
        // The virtual thread's id: without these, samples name no virtual thread.
        thread_vthread: t.fields.get("JavaThread::_vthread").copied().unwrap_or(0),
        thread_obj: t.fields.get("JavaThread::_threadObj").copied().unwrap_or(0),
        thread_tid: int("_ZN16java_lang_Thread11_tid_offsetE").unwrap_or(0),
        thread_state: t.fields.get("JavaThread::_thread_state").copied().unwrap_or(0),
    })
}

/// [`prepare_continuations`]' layout (the handler reads it, never makes it).
static CONT: OnceLock<ContLayout> = OnceLock::new();

/// The committed heap range holding `a` (for the walk of a continuation's chunk).
/// Async-signal-safe once [`CONT`] is made (the heap's layout is then made too).
fn heap_committed(a: u64) -> Option<(u64, u64)> {
    let h = heap_layout().ok()?;
    // SAFETY: `committed` reads only the VM's region table, its region objects and the
    // spaces: permanent structures, mapped.
    let mem = unsafe { Direct::new() };
    h.committed(&mem, a)
}

/// What the handlers' walks learnt of the code blobs they walked through (`hpm_capture::blob_cache`).
static BLOB_CACHE: OnceLock<BlobCache> = OnceLock::new();

/// Code may have been freed or reused (an unload, a collection's end, a session's start): the
/// walker's cached blobs are looked up again (a load clears its own range: [`code_loaded`]).
pub fn code_changed() {
    if let Some(c) = BLOB_CACHE.get() {
        c.invalidate();
    }
}

/// New code at `start..start + size` (CompiledMethodLoad, DynamicCodeGenerated): the walker's
/// cached blobs of that range are looked up again, and every thread's last walk; all of them
/// where the range is not in a code heap the walker knows.
pub fn code_loaded(start: u64, size: u64) {
    let Some(c) = BLOB_CACHE.get() else { return };
    let view = walker_layout().ok().map(code_view);
    let heap = view.as_ref().and_then(|v| v.heap_of(start));
    if !heap.is_some_and(|h| c.forget_range(h.low, h.log2_segment, start, start.saturating_add(size))) {
        c.invalidate();
    }
}

/// The value of an integral `-XX` flag (booleans 0 or 1), from the VM's flag table
/// (`JVMFlag::flags`); None for other types.
pub fn flag(name: &str) -> Option<u64> {
    let t = table().ok()?;
    let flags = vm_word(*t.statics.get("JVMFlag::flags")?);
    let count = vm_word(*t.statics.get("JVMFlag::numFlags")?).min(10_000);
    let stride = *t.sizes.get("JVMFlag")?;
    let (name_off, addr_off) = (*t.fields.get("JVMFlag::_name")?, *t.fields.get("JVMFlag::_addr")?);
    if flags == 0 {
        return None;
    }
    for i in 0..count {
        let e = (flags + i * stride) as *const u8;
        // SAFETY: entries of the VM's static flag table (numFlags of them, `stride` apart), whose
        // name field is null (the terminator) or a NUL-terminated string.
        let n = unsafe { text_at(e, name_off) };
        if n.as_deref() == Some(name) {
            // SAFETY: the entry's address field points at the flag's value in libjvm's data.
            let v = unsafe { value_at::<*const u8>(e, addr_off) };
            if v.is_null() {
                return None;
            }
            // The flag's C++ type (`JVMFlag::_type`'s names are not exported; the VM's own
            // sizes of its value types are): booleans are one byte, sizes and counts eight.
            let ty = t.fields.get("JVMFlag::_type").map(|&o| {
                // SAFETY: the entry's type field is an int.
                unsafe { value_at::<i32>(e, o) }
            });
            // JVMFlag::FlagType (JDK 15 on): bool, int, uint, intx, uintx, uint64_t, size_t, ...
            // SAFETY: the value has the width of its type.
            return unsafe {
                match ty {
                    Some(0) | None => Some(u64::from(*v)),
                    Some(1 | 2) => Some(u64::from(*(v as *const u32))),
                    Some(3..=6) => Some(*(v as *const u64)),
                    Some(_) => None,
                }
            };
        }
    }
    None
}

/// What the signal handler needs for `data`: the code cache's layout and, when the heap's
/// could be read, the heap's.
#[derive(Clone, Copy, Debug)]
pub struct DataLayouts {
    pub code: &'static Layout,
    pub heap: Option<&'static HeapLayout>,
    /// A precise memory event: each record's own registers and address (`capture_record`).
    pub precise: bool,
}

/// The heap's layout for `data` (kept once read; `Err` until the heap exists, or for good
/// when this JVM does not export what is needed).
pub fn heap_layout() -> Result<&'static HeapLayout, String> {
    static HEAP: OnceLock<HeapLayout> = OnceLock::new();
    if let Some(h) = HEAP.get() {
        return Ok(h);
    }
    let h = HeapLayout::read(table()?, vm_word, flag)?;
    Ok(HEAP.get_or_init(|| h))
}

/// Where nmethods' vtable pointer points (JDK 17: `CodeBlob` is polymorphic): `_ZTV7nmethod`
/// from libjvm's symbol table, past its offset-to-top and RTTI words.
fn nmethod_vtable() -> Option<u64> {
    let (path, base) = libjvm_loaded()?;
    let vaddr = hpm_resolve::symbols::symbol_address(std::path::Path::new(&path), "_ZTV7nmethod")?;
    Some(base + vaddr + 16)
}

/// libjvm.so's path and load address.
fn libjvm_loaded() -> Option<(String, u64)> {
    let anchor = symbol(libjvm(), c"JNI_CreateJavaVM")?;
    crate::os::loaded_object(anchor as u64)
}

/// The file libjvm.so was loaded from (uprobes are set on the file).
pub fn libjvm_file() -> Option<String> {
    libjvm_loaded().map(|(p, _)| p)
}

/// Where a libjvm symbol (from its symbol table: a static VMStructs does not export) is in
/// memory. Maps the library's file: off the signal path, once per symbol.
pub fn libjvm_symbol(name: &str) -> Option<u64> {
    let (path, base) = libjvm_loaded()?;
    hpm_resolve::symbols::symbol_address(std::path::Path::new(&path), name).map(|v| base + v)
}

/// Direct reads, for the two readers that prove every address mapped before they read: the
/// walker (the thread's stack and the code cache's committed ranges: see
/// `hpm_capture::hotspot::Memory`) and `javaheap::capture` (the VM's permanent structures and
/// committed heap around the address: see its module comment).
///
/// A `Memory` that dereferences whatever address it is given: reading an unmapped one faults.
/// Hence it is `unsafe` to make ([`Direct::new`]): the one who makes it answers for every read
/// through it.
struct Direct {
    _proof: (),
}

impl Direct {
    /// # Safety
    ///
    /// Every address read through the value (by `word`, `byte` or `int`, for the widths they
    /// read) must be mapped and readable for as long as it is used: the reader it is handed
    /// to must check each address against memory it knows is mapped (a thread's live stack,
    /// the code cache's committed ranges, the heap's committed regions) before reading it.
    unsafe fn new() -> Direct {
        Direct { _proof: () }
    }
}

impl Memory for Direct {
    fn word(&self, addr: u64) -> u64 {
        // SAFETY: whoever made this `Direct` vouched for every address read through it
        // (`Direct::new`): the walker reads only inside the interrupted thread's stack
        // (between its stack pointer and its base) or committed code-cache memory;
        // `javaheap::capture` only the region table, region and space objects, and a heap
        // region or space in use (or the page the interrupted instruction is about to
        // touch): all mapped. A field of a heap object may be only 4-byte aligned (a stack
        // chunk's `size` and `bottom`): read unaligned there, as `read_volatile` needs alignment.
        unsafe {
            if addr.is_multiple_of(8) {
                std::ptr::read_volatile(addr as *const u64)
            } else {
                std::ptr::read_unaligned(addr as *const u64)
            }
        }
    }
    fn byte(&self, addr: u64) -> u8 {
        // SAFETY: as above (code-cache and segment-map bytes inside their committed ranges).
        unsafe { std::ptr::read_volatile(addr as *const u8) }
    }
    fn int(&self, addr: u64, width: u8) -> i64 {
        // SAFETY: as above; `addr` is a field of a blob header inside committed code, of a
        // region object, of a heap object inside a committed range, or of the calling
        // thread's own JavaThread.
        unsafe {
            match width {
                1 => i64::from(std::ptr::read_volatile(addr as *const u8)),
                2 => i64::from(std::ptr::read_unaligned(addr as *const i16)),
                4 => i64::from(std::ptr::read_unaligned(addr as *const i32)),
                _ => std::ptr::read_unaligned(addr as *const i64),
            }
        }
    }
}

/// Reads a word of the VM's permanent structures: libjvm's statics and the CodeHeap and
/// StubQueue objects they point to (allocated once at start-up, never freed).
fn vm_word(addr: u64) -> u64 {
    if addr == 0 {
        return 0;
    }
    // SAFETY: callers pass static-field addresses from VMStructs or fields of the permanent
    // objects those point to (non-null checked above).
    unsafe { std::ptr::read_volatile(addr as *const u64) }
}

/// The code cache as it is now (read at each signal: the cache grows), for the walk and the
/// data capture of one sample. Async-signal-safe.
pub fn code_view(layout: &Layout) -> CodeView {
    CodeView::read(layout, vm_word)
}

/// The thread a walk is of: its HotSpot `Thread*`, whether that is a `JavaThread*` (proven by
/// a JNIEnv), and the native tables when native frames are walked (`cstack=`).
#[derive(Clone, Copy)]
pub struct Walked {
    pub thread: u64,
    pub java: bool,
    pub native: Option<&'static NativeTables>,
}

/// Walks the stack of the calling thread, interrupted at `ucontext`, with hpm's own walker:
/// a `JavaThread`'s Java frames from the registers and its frame anchor, another HotSpot
/// thread's (GC, VM thread) native frames alone, within the stack its `Thread` records (the
/// stack's fields are `Thread`'s; the anchor, a `JavaThread`'s, is not read). `code` is the
/// cache's [`code_view`], `memo` its last walk when only this walk uses it (the signal
/// handler's slot). Async-signal-safe: no allocation, no lock, bounded.
pub fn walk_here(
    layout: &Layout,
    code: &CodeView,
    walked: Walked,
    ucontext: *const c_void,
    memo: Option<&WalkMemo>,
    out: &mut FrameSink,
) -> Stop {
    let Walked { thread, java, native } = walked;
    if thread == 0 || ucontext.is_null() || (!java && native.is_none()) {
        return Stop::NoJavaFrame;
    }
    let regs = regs(ucontext);
    let stack_base = vm_word(thread + layout.thread_stack_base);
    let mut view = ThreadView {
        stack_base,
        stack_end: stack_base.saturating_sub(vm_word(thread + layout.thread_stack_size)),
        ..ThreadView::default()
    };
    let mut heap_safe = true;
    if java {
        let anchor = thread + layout.thread_anchor;
        view.anchor_sp = vm_word(anchor + layout.anchor_sp);
        view.anchor_pc = vm_word(anchor + layout.anchor_pc);
        view.anchor_fp = vm_word(anchor + layout.anchor_fp);
        if let Some(c) = CONT.get() {
            // SAFETY: one field of the calling thread's own JavaThread, mapped while it lives.
            let own = unsafe { Direct::new() };
            // A thread in native or blocked may meet a collection moving the chunk or
            // uncommitting its memory under the read: its heap reads go through the kernel.
            heap_safe = hpm_capture::hotspot::holds_off_collections(&own, c, thread);
            view.cont = ContView {
                layout: *c,
                entry: vm_word(thread + c.thread_cont_entry),
                return_pc: vm_word(c.return_pc_addr),
                barrier: vm_word(c.barrier_addr),
                heap: Some(heap_committed as HeapRange),
            };
        }
    }
    // SAFETY: the walker reads only inside the thread's stack (between its stack pointer and
    // `view.stack_base`), the code cache's committed ranges and (a continuation's chunks)
    // committed heap ranges, checking each address first; the native tables' step reads the
    // stack through the walker's checked reader too. Heap reads are direct only while the
    // thread holds collections off (`view.cont.heap` was made for that); else `HeapChecked`
    // reads the heap through the kernel.
    let mem = unsafe { Direct::new() };
    let cache = BLOB_CACHE.get();
    let stop = if heap_safe {
        Walker { layout, code, thread: &view, mem: &mem, cache, memo, native }.walk(regs, out)
    } else {
        let mem = HeapChecked::new(mem, heap_layout().map_or((0, 0), |h| (h.start, h.end)));
        Walker { layout, code, thread: &view, mem: &mem, cache, memo, native }.walk(regs, out)
    };
    out.probe.finish(view.stack_base);
    stop
}

/// The `java.lang.Thread` id of the virtual thread mounted on `thread` (the calling thread's
/// proven `JavaThread*`), 0 for none or unknown (`hpm_capture::hotspot::mounted_vthread`).
/// Async-signal-safe.
pub fn mounted_vthread(thread: u64) -> u64 {
    let Some(c) = CONT.get() else { return 0 };
    // SAFETY: reads the calling thread's own JavaThread and the slots of its two live
    // OopHandles (mapped while the thread lives), then the heap only inside committed ranges,
    // which stay so while the thread holds collections off.
    let mem = unsafe { Direct::new() };
    if hpm_capture::hotspot::holds_off_collections(&mem, c, thread) {
        hpm_capture::hotspot::mounted_vthread(&mem, c, thread, heap_committed)
    } else {
        // In native or blocked, a collection may move the Thread object or uncommit its
        // space meanwhile: every read checked by the kernel (a moved object's old copy keeps
        // the same id until its memory is reused).
        hpm_capture::hotspot::mounted_vthread(&Checked, c, thread, heap_committed)
    }
}

/// A wall sample's state for the virtual thread mounted on `thread` (the calling thread's
/// proven `JavaThread*`): its carrier's own state word (`hpm_capture::hotspot::mounted_state`).
/// Async-signal-safe.
pub fn mounted_state(thread: u64) -> u8 {
    let Some(c) = CONT.get() else { return 0 };
    // SAFETY: reads one field of the calling thread's own JavaThread, mapped while it lives.
    let mem = unsafe { Direct::new() };
    hpm_capture::hotspot::mounted_state(&mem, c, thread)
}

/// `sampler=chain`: walks the frames a sample's stack copy holds
/// (`hpm_capture::hotspot::walk_copy`), on the processor thread long after the sample: the stack
/// is read from the copy only, the code cache in place (its committed ranges stay mapped; a
/// blob freed since gives a wrong frame, never a fault).
pub fn walk_copy(
    layout: &Layout,
    code: &CodeView,
    copy: hpm_capture::hotspot::StackCopy,
    regs: Regs,
    out: &mut FrameSink,
) -> Stop {
    // SAFETY: `walk_copy` reads the stack from the copy only and, through this, the code
    // cache's committed ranges, which stay mapped.
    let mem = unsafe { Direct::new() };
    hpm_capture::hotspot::walk_copy(layout, code, &mem, copy, regs, out)
}

/// A `JavaThread*`'s kernel thread id and stack base (the highest address), read without
/// faulting: the thread may be ending and its structure freed.
pub fn java_thread_stack(layout: &Layout, thread: u64) -> Option<(i32, u64)> {
    let tid = java_thread_tid(thread)?;
    let base = read_word(thread.checked_add(layout.thread_stack_base)?)?;
    (base != 0).then_some((tid, base))
}

/// A `JavaThread*`'s kernel thread id (its `OSThread`'s), read without faulting: the thread
/// may be ending and its structure freed.
pub fn java_thread_tid(thread: u64) -> Option<i32> {
    let t = table().ok()?;
    let osthread = t.fields.get("JavaThread::_osthread").or_else(|| t.fields.get("Thread::_osthread"))?;
    let tid_field = t.fields.get("OSThread::_thread_id")?;
    let os = read_word(thread.checked_add(*osthread)?).filter(|&o| o != 0)?;
    let mut b = [0u8; 4];
    if !crate::os::read_checked(os.checked_add(*tid_field)?, &mut b) {
        return None;
    }
    Some(i32::from_le_bytes(b)).filter(|&tid| tid > 0)
}

/// The 8 bytes at `addr`, read without faulting.
fn read_word(addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    crate::os::read_checked(addr, &mut b).then(|| u64::from_le_bytes(b))
}

/// `data`: the bytes of the instruction the calling thread was interrupted at (`ucontext`) and
/// its general registers, when that instruction is the sample's (`ip`: the signal's registers
/// are a record's only if it was taken in user mode at the IP the signal interrupted) and in
/// the code cache (Java code, the interpreter, stubs); bytes only up to the end of its page,
/// which is committed code. With `heap`, the address the instruction touches is computed here
/// and the words an object header can be found in copied (`hpm_capture::javaheap::capture`:
/// objects cannot move while this thread runs Java code). `thread`: its `JavaThread*` when
/// proven one (its stack then tells stack addresses), else 0. Async-signal-safe: no
/// allocation, no lock, bounded.
#[cfg(target_arch = "x86_64")]
pub fn capture_instruction(
    code: &CodeView,
    heap: Option<&HeapLayout>,
    ucontext: *const c_void,
    ip: u64,
    thread: u64,
    out: &mut DataCapture,
) {
    out.code_len = 0;
    out.heap.space = 0;
    if ucontext.is_null() {
        return;
    }
    // SAFETY: `ucontext` is the ucontext_t the kernel passed to the signal handler.
    let g = unsafe { &(*(ucontext as *const libc::ucontext_t)).uc_mcontext.gregs };
    let pc = g[libc::REG_RIP as usize] as u64;
    if pc != ip {
        return;
    }
    let Some(n) = copy_code(code, pc, out) else { return };
    // Hardware order: rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8 ... r15.
    let order = [
        libc::REG_RAX,
        libc::REG_RCX,
        libc::REG_RDX,
        libc::REG_RBX,
        libc::REG_RSP,
        libc::REG_RBP,
        libc::REG_RSI,
        libc::REG_RDI,
        libc::REG_R8,
        libc::REG_R9,
        libc::REG_R10,
        libc::REG_R11,
        libc::REG_R12,
        libc::REG_R13,
        libc::REG_R14,
        libc::REG_R15,
    ];
    for (slot, r) in out.regs.0.iter_mut().zip(order) {
        *slot = g[r as usize] as u64;
    }
    let Some(heap) = heap else { return };
    let Some(e) = hpm_capture::operand::effective_address(&out.code[..n], pc, &out.regs) else { return };
    let stack = hpm_capture::javaheap::ThreadRanges::of(heap, thread, vm_word);
    // SAFETY: `javaheap::capture` reads only the VM's permanent structures and the committed
    // heap around the address, each checked against the layout's committed ranges first.
    let mem = unsafe { Direct::new() };
    hpm_capture::javaheap::capture(heap, &mem, code, &e, stack, true, &mut out.heap);
}

/// `data` for a precise memory sample (PEBS, IBS): the record's own instruction address, data
/// address and registers at that instruction (PERF_SAMPLE_REGS_INTR), not the signal's, which
/// come later. The instruction's bytes are copied while its code is installed; the address is
/// the PMU's, split into object and offset by decoding the instruction when the decoding
/// agrees. Async-signal-safe as [`capture_instruction`].
#[cfg(target_arch = "x86_64")]
pub fn capture_record(
    code: &CodeView,
    heap: Option<&HeapLayout>,
    raw: &hpm_capture::perf_record::RawSample,
    thread: u64,
    out: &mut DataCapture,
) {
    out.code_len = 0;
    out.heap.space = 0;
    if raw.intr_abi == 0 {
        return;
    }
    let Some(n) = copy_code(code, raw.ip, out) else { return };
    out.regs.0 = raw.intr;
    let (Some(heap), true) = (heap, raw.addr != 0) else { return };
    let decoded = hpm_capture::operand::effective_address(&out.code[..n], raw.ip, &out.regs);
    let e = match decoded {
        Some(d) if d.address == raw.addr => d,
        _ => hpm_capture::operand::Effective { address: raw.addr, ..Default::default() },
    };
    let stack = hpm_capture::javaheap::ThreadRanges::of(heap, thread, vm_word);
    // SAFETY: `javaheap::capture` reads only the VM's permanent structures and the committed
    // heap around the address, each checked against the layout's committed ranges first.
    let mem = unsafe { Direct::new() };
    hpm_capture::javaheap::capture(heap, &mem, code, &e, stack, false, &mut out.heap);
}

#[cfg(not(target_arch = "x86_64"))]
pub fn capture_record(
    _: &CodeView,
    _: Option<&HeapLayout>,
    _: &hpm_capture::perf_record::RawSample,
    _: u64,
    out: &mut DataCapture,
) {
    out.code_len = 0;
    out.heap.space = 0;
}

/// Copies the instruction bytes at `pc` into `out` when `pc` lies in the committed code
/// cache: up to 16, not past the end of its page; their number, or None outside the cache.
fn copy_code(code: &CodeView, pc: u64, out: &mut DataCapture) -> Option<usize> {
    if !code.contains(pc) {
        return None;
    }
    let n = (4096 - (pc & 4095)).min(out.code.len() as u64) as usize;
    // SAFETY: [pc, pc + n) lies in the page of `pc`, inside the committed code cache (checked
    // above), which is mapped readable; `out.code` has room for n <= 16 bytes.
    unsafe { std::ptr::copy_nonoverlapping(pc as *const u8, out.code.as_mut_ptr(), n) };
    out.code_len = n as u8;
    Some(n)
}

#[cfg(not(target_arch = "x86_64"))]
pub fn capture_instruction(
    _: &CodeView,
    _: Option<&HeapLayout>,
    _: *const c_void,
    _: u64,
    _: u64,
    out: &mut DataCapture,
) {
    out.code_len = 0;
    out.heap.space = 0;
}

/// The interrupted registers of a signal handler's `ucontext`.
pub fn context_regs(ucontext: *const c_void) -> Regs {
    regs(ucontext)
}

#[cfg(target_arch = "x86_64")]
fn regs(ucontext: *const c_void) -> Regs {
    // SAFETY: `ucontext` is the ucontext_t the kernel passed to the signal handler.
    let g = unsafe { &(*(ucontext as *const libc::ucontext_t)).uc_mcontext.gregs };
    Regs {
        pc: g[libc::REG_RIP as usize] as u64,
        sp: g[libc::REG_RSP as usize] as u64,
        fp: g[libc::REG_RBP as usize] as u64,
        method_reg: g[libc::REG_RBX as usize] as u64,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn regs(_: *const c_void) -> Regs {
    Regs::default()
}
