//! The one module that calls JVMTI. Each function is looked up by its number in the
//! `jvmtiInterface_1` table (1-based, as numbered in the JDK's jvmti.h), called, and its error
//! code turned into a `Result`; JVMTI-allocated memory is copied and deallocated here.
//!
//! Why not the `jvmti-rs` crate: see docs/design.md (it pins jni 0.19, keeps its callbacks in a
//! `static mut` table, and allocates in its wrappers; we need a few dozen calls, all checked).

use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::ptr;

use jni::sys::{jclass, jint, jlong, jmethodID, jobject, JavaVM};

#[allow(non_camel_case_types)]
pub type jthread = jobject;

pub type JvmtiEnvPtr = *mut *const *const c_void;
pub type JvmtiErrorCode = u32;

pub const JVMTI_VERSION_1_2: jint = 0x3001_0200;
pub const JVMTI_ENABLE: jint = 1;
pub const JVMTI_DISABLE: jint = 0;

/// Events hpm uses (jvmtiEvent numbers).
pub mod event {
    pub const VM_INIT: u32 = 50;
    pub const VM_DEATH: u32 = 51;
    pub const THREAD_START: u32 = 52;
    pub const THREAD_END: u32 = 53;
    pub const CLASS_FILE_LOAD_HOOK: u32 = 54;
    pub const CLASS_LOAD: u32 = 55;
    pub const CLASS_PREPARE: u32 = 56;
    pub const COMPILED_METHOD_LOAD: u32 = 68;
    pub const COMPILED_METHOD_UNLOAD: u32 = 69;
    pub const DYNAMIC_CODE_GENERATED: u32 = 70;
    pub const MONITOR_CONTENDED_ENTER: u32 = 75;
    pub const MONITOR_CONTENDED_ENTERED: u32 = 76;
    pub const GARBAGE_COLLECTION_START: u32 = 81;
    pub const GARBAGE_COLLECTION_FINISH: u32 = 82;
    pub const SAMPLED_OBJECT_ALLOC: u32 = 86;
    /// JDK 21+ (with `cap::SUPPORT_VIRTUAL_THREADS`).
    pub const VIRTUAL_THREAD_START: u32 = 87;
    pub const VIRTUAL_THREAD_END: u32 = 88;
    pub const FIRST: u32 = 50;
    pub const LAST: u32 = 88;
}

/// Capability bit positions in `jvmtiCapabilities` (declaration order in jvmti.h).
pub mod cap {
    pub const TAG_OBJECTS: u32 = 0;
    pub const GET_SOURCE_FILE_NAME: u32 = 11;
    pub const GET_LINE_NUMBERS: u32 = 12;
    pub const GENERATE_ALL_CLASS_HOOK_EVENTS: u32 = 26;
    pub const GENERATE_COMPILED_METHOD_LOAD_EVENTS: u32 = 27;
    pub const GENERATE_MONITOR_EVENTS: u32 = 28;
    pub const GENERATE_GARBAGE_COLLECTION_EVENTS: u32 = 31;
    pub const RETRANSFORM_CLASSES: u32 = 37;
    pub const GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS: u32 = 43;
    /// JDK 21+.
    pub const SUPPORT_VIRTUAL_THREADS: u32 = 44;
}

/// `jvmtiEventCallbacks`: one function pointer per event from VM_INIT (50) to 88 (JDK 21's
/// length; an older JVM copies the part it knows: `SetEventCallbacks` takes the size).
#[repr(C)]
pub struct EventCallbacks {
    pub slots: [*const c_void; (event::LAST - event::FIRST + 1) as usize],
}

impl Default for EventCallbacks {
    fn default() -> Self {
        EventCallbacks { slots: [ptr::null(); (event::LAST - event::FIRST + 1) as usize] }
    }
}

impl EventCallbacks {
    pub fn set(&mut self, ev: u32, f: *const c_void) {
        self.slots[(ev - event::FIRST) as usize] = f;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct JvmtiError {
    pub code: JvmtiErrorCode,
    pub call: &'static str,
}

impl fmt::Display for JvmtiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.code {
            15 => "THREAD_NOT_ALIVE",
            21 => "CLASS_NOT_PREPARED",
            23 => "INVALID_METHODID",
            60 => "INVALID_CLASS_FORMAT",
            62 => "UNMODIFIABLE_CLASS",
            98 => "NOT_AVAILABLE",
            99 => "MUST_POSSESS_CAPABILITY",
            101 => "ABSENT_INFORMATION",
            112 => "WRONG_PHASE",
            115 => "UNATTACHED_THREAD",
            116 => "INVALID_ENVIRONMENT",
            _ => "",
        };
        write!(f, "JVMTI {} failed: error {}{}{}", self.call, self.code, if name.is_empty() { "" } else { " " }, name)
    }
}

impl fmt::Debug for JvmtiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

pub type Result<T> = std::result::Result<T, JvmtiError>;

/// `jvmtiFrameInfo`: a frame's method and location (bytecode index; -1 in a native method).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FrameInfo {
    pub method: jmethodID,
    pub location: jlong,
}

impl Default for FrameInfo {
    fn default() -> Self {
        FrameInfo { method: ptr::null_mut(), location: 0 }
    }
}

/// A JVMTI environment. JVMTI environments may be used from any thread attached to the VM.
#[derive(Clone, Copy)]
pub struct Jvmti(JvmtiEnvPtr);

// SAFETY: JVMTI environment pointers are valid for the life of the VM and JVMTI functions are
// callable from any attached thread; the pointer itself is never written through here.
unsafe impl Send for Jvmti {}
// SAFETY: as above; JVMTI does its own synchronisation.
unsafe impl Sync for Jvmti {}

macro_rules! call {
    ($self:ident, $num:expr, $name:literal, fn($($t:ty),*) $(, $arg:expr)*) => {{
        // SAFETY: the function table of a live JVMTI environment has entry `$num` with exactly
        // this signature (jvmti.h, JDK 17 and later); arguments are valid for the call.
        let code = unsafe {
            let table = *$self.0;
            let f: unsafe extern "C" fn(JvmtiEnvPtr $(, $t)*) -> JvmtiErrorCode =
                std::mem::transmute(*table.add($num - 1));
            f($self.0 $(, $arg)*)
        };
        if code == 0 { Ok(()) } else { Err(JvmtiError { code, call: $name }) }
    }};
}

impl Jvmti {
    /// Gets a JVMTI 1.2 environment from the VM.
    pub fn from_vm(vm: *mut JavaVM) -> std::result::Result<Jvmti, jint> {
        let mut env: *mut c_void = ptr::null_mut();
        // SAFETY: `vm` is the JavaVM the JVM passed to Agent_OnLoad/OnAttach; GetEnv is in its
        // invoke interface.
        let rc = unsafe { ((**vm).GetEnv.expect("GetEnv"))(vm, &mut env, JVMTI_VERSION_1_2) };
        if rc != 0 || env.is_null() {
            return Err(rc);
        }
        Ok(Jvmti(env as JvmtiEnvPtr))
    }

    pub fn add_capabilities(&self, bits: &[u32]) -> Result<()> {
        let mut caps = [0u32; 4];
        for &b in bits {
            caps[(b / 32) as usize] |= 1 << (b % 32);
        }
        call!(self, 142, "AddCapabilities", fn(*const u32), caps.as_ptr())
    }

    pub fn set_event_callbacks(&self, cb: &EventCallbacks) -> Result<()> {
        let size = std::mem::size_of::<EventCallbacks>() as jint;
        call!(self, 122, "SetEventCallbacks", fn(*const EventCallbacks, jint), cb, size)
    }

    pub fn set_event(&self, enable: bool, ev: u32) -> Result<()> {
        let mode = if enable { JVMTI_ENABLE } else { JVMTI_DISABLE };
        call!(self, 2, "SetEventNotificationMode", fn(jint, u32, jthread), mode, ev, ptr::null_mut())
    }

    /// Replays CompiledMethodLoad / DynamicCodeGenerated for code that exists already.
    pub fn generate_events(&self, ev: u32) -> Result<()> {
        call!(self, 123, "GenerateEvents", fn(u32), ev)
    }

    fn deallocate(&self, p: *mut c_void) {
        if !p.is_null() {
            let _ = call!(self, 47, "Deallocate", fn(*mut c_void), p);
        }
    }

    /// Copies and frees a JVMTI-allocated array of `n` elements.
    fn take_array<T: Copy>(&self, p: *mut T, n: jint) -> Vec<T> {
        let out = if p.is_null() {
            Vec::new()
        } else {
            // SAFETY: JVMTI returned `p` pointing at `n` initialised elements, alive until freed below.
            unsafe { std::slice::from_raw_parts(p, n.max(0) as usize) }.to_vec()
        };
        self.deallocate(p.cast());
        out
    }

    /// Copies and frees a JVMTI-allocated C string.
    fn take_string(&self, p: *mut c_char) -> Option<String> {
        if p.is_null() {
            return None;
        }
        // SAFETY: JVMTI returned a NUL-terminated modified-UTF-8 string it allocated.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        self.deallocate(p.cast());
        Some(s)
    }

    /// (name, descriptor) of a method.
    pub fn method_name(&self, m: jmethodID) -> Result<(String, String)> {
        let (mut name, mut sig) = (ptr::null_mut(), ptr::null_mut());
        call!(
            self,
            64,
            "GetMethodName",
            fn(jmethodID, *mut *mut c_char, *mut *mut c_char, *mut *mut c_char),
            m,
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok((self.take_string(name).unwrap_or_default(), self.take_string(sig).unwrap_or_default()))
    }

    pub fn method_declaring_class(&self, m: jmethodID) -> Result<jclass> {
        let mut c: jclass = ptr::null_mut();
        call!(self, 65, "GetMethodDeclaringClass", fn(jmethodID, *mut jclass), m, &mut c)?;
        Ok(c)
    }

    pub fn method_modifiers(&self, m: jmethodID) -> Result<i32> {
        let mut mods: jint = 0;
        call!(self, 66, "GetMethodModifiers", fn(jmethodID, *mut jint), m, &mut mods)?;
        Ok(mods)
    }

    /// Whether `m` is an obsolete method: a version a redefinition replaced by a different
    /// one, still running in some frame.
    pub fn is_method_obsolete(&self, m: jmethodID) -> Result<bool> {
        let mut yes: u8 = 0;
        call!(self, 91, "IsMethodObsolete", fn(jmethodID, *mut u8), m, &mut yes)?;
        Ok(yes != 0)
    }

    /// The loader of class `c`, a local reference; null for the bootstrap loader's classes.
    pub fn class_loader(&self, c: jclass) -> Result<jobject> {
        let mut l: jobject = ptr::null_mut();
        call!(self, 57, "GetClassLoader", fn(jclass, *mut jobject), c, &mut l)?;
        Ok(l)
    }

    /// Class signature, e.g. `Ljava/lang/String;`.
    pub fn class_signature(&self, c: jclass) -> Result<String> {
        let mut sig = ptr::null_mut();
        call!(
            self,
            48,
            "GetClassSignature",
            fn(jclass, *mut *mut c_char, *mut *mut c_char),
            c,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok(self.take_string(sig).unwrap_or_default())
    }

    pub fn source_file_name(&self, c: jclass) -> Result<String> {
        let mut name = ptr::null_mut();
        call!(self, 50, "GetSourceFileName", fn(jclass, *mut *mut c_char), c, &mut name)?;
        Ok(self.take_string(name).unwrap_or_default())
    }

    /// (start bci, line) pairs.
    pub fn line_number_table(&self, m: jmethodID) -> Result<Vec<(i64, i32)>> {
        #[repr(C)]
        struct Entry {
            start: jlong,
            line: jint,
        }
        let (mut n, mut table): (jint, *mut Entry) = (0, ptr::null_mut());
        call!(self, 70, "GetLineNumberTable", fn(jmethodID, *mut jint, *mut *mut Entry), m, &mut n, &mut table)?;
        let out = (0..n.max(0) as usize)
            // SAFETY: JVMTI returned an array of `n` entries.
            .map(|i| unsafe { ((*table.add(i)).start, (*table.add(i)).line) })
            .collect();
        self.deallocate(table.cast());
        Ok(out)
    }

    /// Creates the jmethodIDs of a class's methods (AsyncGetCallTrace needs them to exist)
    /// and returns them.
    pub fn touch_class_methods(&self, c: jclass) -> Result<Vec<jmethodID>> {
        let (mut n, mut methods): (jint, *mut jmethodID) = (0, ptr::null_mut());
        call!(self, 52, "GetClassMethods", fn(jclass, *mut jint, *mut *mut jmethodID), c, &mut n, &mut methods)?;
        Ok(self.take_array(methods, n))
    }

    /// All loaded classes, as local references of the calling thread.
    pub fn loaded_classes(&self) -> Result<Vec<jclass>> {
        let (mut n, mut classes): (jint, *mut jclass) = (0, ptr::null_mut());
        call!(self, 78, "GetLoadedClasses", fn(*mut jint, *mut *mut jclass), &mut n, &mut classes)?;
        Ok(self.take_array(classes, n))
    }

    /// The thread's name.
    pub fn thread_name(&self, t: jthread) -> Result<String> {
        #[repr(C)]
        struct ThreadInfo {
            name: *mut c_char,
            priority: jint,
            is_daemon: u8,
            thread_group: jobject,
            context_class_loader: jobject,
        }
        let mut info = ThreadInfo {
            name: ptr::null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: ptr::null_mut(),
            context_class_loader: ptr::null_mut(),
        };
        call!(self, 9, "GetThreadInfo", fn(jthread, *mut ThreadInfo), t, &mut info)?;
        Ok(self.take_string(info.name).unwrap_or_default())
    }

    pub fn raw(&self) -> JvmtiEnvPtr {
        self.0
    }

    /// (id, function) of every extension function the JVM offers.
    pub fn extension_functions(&self) -> Result<Vec<(String, *const c_void)>> {
        #[repr(C)]
        struct ParamInfo {
            name: *mut c_char,
            kind: jint,
            base_type: jint,
            null_ok: u8,
        }
        #[repr(C)]
        struct FunctionInfo {
            func: *const c_void,
            id: *mut c_char,
            short_description: *mut c_char,
            param_count: jint,
            params: *mut ParamInfo,
            error_count: jint,
            errors: *mut u32,
        }
        let (mut n, mut infos): (jint, *mut FunctionInfo) = (0, ptr::null_mut());
        call!(self, 124, "GetExtensionFunctions", fn(*mut jint, *mut *mut FunctionInfo), &mut n, &mut infos)?;
        let mut out = Vec::new();
        for i in 0..n.max(0) as usize {
            // SAFETY: JVMTI returned `n` entries, each with JVMTI-allocated strings and arrays,
            // which the caller must deallocate (JVMTI spec, GetExtensionFunctions).
            let f = unsafe { &*infos.add(i) };
            if let Some(id) = self.take_string(f.id) {
                out.push((id, f.func));
            }
            self.deallocate(f.short_description.cast());
            for k in 0..f.param_count.max(0) as usize {
                // SAFETY: `params` has `param_count` entries.
                self.deallocate(unsafe { (*f.params.add(k)).name }.cast());
            }
            self.deallocate(f.params.cast());
            self.deallocate(f.errors.cast());
        }
        self.deallocate(infos.cast());
        Ok(out)
    }

    /// The tag of `obj` (0: none). Needs `can_tag_objects`.
    pub fn tag(&self, obj: jobject) -> Result<jlong> {
        let mut t: jlong = 0;
        call!(self, 106, "GetTag", fn(jobject, *mut jlong), obj, &mut t)?;
        Ok(t)
    }

    pub fn set_tag(&self, obj: jobject, tag: jlong) -> Result<()> {
        call!(self, 107, "SetTag", fn(jobject, jlong), obj, tag)
    }

    /// SampledObjectAlloc's mean interval in bytes (0: every allocation).
    pub fn set_heap_sampling_interval(&self, bytes: jint) -> Result<()> {
        call!(self, 156, "SetHeapSamplingInterval", fn(jint), bytes)
    }

    /// The calling thread's stack, leaf first, into `out` as (jmethodID, location) pairs: at
    /// most `out.len()` frames; returns how many. Location -1 is a native frame.
    pub fn own_stack_trace(&self, out: &mut [FrameInfo]) -> Result<usize> {
        let mut n: jint = 0;
        let max = out.len().min(i32::MAX as usize) as jint;
        call!(
            self,
            104,
            "GetStackTrace",
            fn(jthread, jint, jint, *mut FrameInfo, *mut jint),
            ptr::null_mut(),
            0,
            max,
            out.as_mut_ptr(),
            &mut n
        )?;
        Ok(n.clamp(0, max) as usize)
    }

    /// Every module of the JVM, as local references of the calling thread.
    pub fn all_modules(&self) -> Result<Vec<jobject>> {
        let (mut n, mut modules): (jint, *mut jobject) = (0, ptr::null_mut());
        call!(self, 3, "GetAllModules", fn(*mut jint, *mut *mut jobject), &mut n, &mut modules)?;
        Ok(self.take_array(modules, n))
    }

    /// Makes `module` read `to` (both `java.lang.Module` references).
    pub fn add_module_reads(&self, module: jobject, to: jobject) -> Result<()> {
        call!(self, 94, "AddModuleReads", fn(jobject, jobject), module, to)
    }

    /// The calling thread, as a local reference.
    pub fn current_thread(&self) -> Result<jthread> {
        let mut t: jthread = ptr::null_mut();
        call!(self, 18, "GetCurrentThread", fn(*mut jthread), &mut t)?;
        Ok(t)
    }

    /// A thread's JVMTI state bits (GetThreadState: read from the thread's own fields, no
    /// safepoint, no VM operation).
    pub fn thread_state(&self, t: jthread) -> Result<i32> {
        let mut state: jint = 0;
        call!(self, 17, "GetThreadState", fn(jthread, *mut jint), t, &mut state)?;
        Ok(state)
    }

    /// Every live Java thread, as local references of the calling thread.
    pub fn all_threads(&self) -> Result<Vec<jthread>> {
        let (mut n, mut threads): (jint, *mut jthread) = (0, ptr::null_mut());
        call!(self, 4, "GetAllThreads", fn(*mut jint, *mut *mut jthread), &mut n, &mut threads)?;
        Ok(self.take_array(threads, n))
    }

    /// Stacks of `threads` (one VM operation at a global safepoint in HotSpot): per thread its
    /// reference, JVMTI thread state and (jmethodID, location) frames, leaf first.
    #[allow(clippy::type_complexity)]
    pub fn thread_list_stack_traces(
        &self,
        threads: &[jthread],
        max_frames: i32,
    ) -> Result<Vec<(jthread, i32, Vec<(u64, i64)>)>> {
        #[repr(C)]
        struct FrameInfo {
            method: jmethodID,
            location: jlong,
        }
        #[repr(C)]
        struct StackInfo {
            thread: jthread,
            state: jint,
            frame_buffer: *mut FrameInfo,
            frame_count: jint,
        }
        let mut info: *mut StackInfo = ptr::null_mut();
        let n = threads.len() as jint;
        call!(
            self,
            101,
            "GetThreadListStackTraces",
            fn(jint, *const jthread, jint, *mut *mut StackInfo),
            n,
            threads.as_ptr(),
            max_frames,
            &mut info
        )?;
        let mut out = Vec::with_capacity(threads.len());
        for i in 0..threads.len() {
            // SAFETY: JVMTI returned one StackInfo per requested thread, each with
            // `frame_count` frames, all in the one allocation freed below.
            let s = unsafe { &*info.add(i) };
            let frames = (0..s.frame_count.max(0) as usize)
                .map(|k| {
                    // SAFETY: k < frame_count, within this StackInfo's frame buffer.
                    let f = unsafe { &*s.frame_buffer.add(k) };
                    (f.method as u64, f.location)
                })
                .collect();
            out.push((s.thread, s.state, frames));
        }
        self.deallocate(info.cast());
        Ok(out)
    }

    /// Whether `c` may be retransformed (false for arrays, primitives and hidden classes).
    pub fn is_modifiable_class(&self, c: jclass) -> Result<bool> {
        let mut yes: u8 = 0;
        call!(self, 45, "IsModifiableClass", fn(jclass, *mut u8), c, &mut yes)?;
        Ok(yes != 0)
    }

    /// `size` bytes of JVMTI memory, for what the JVM frees itself (a ClassFileLoadHook's new
    /// class file).
    pub fn allocate(&self, size: usize) -> Result<*mut u8> {
        let mut p: *mut u8 = ptr::null_mut();
        call!(self, 46, "Allocate", fn(jlong, *mut *mut u8), size as jlong, &mut p)?;
        Ok(p)
    }

    /// Appends a jar to the bootstrap class loader's search path.
    pub fn add_to_bootstrap_class_loader_search(&self, jar: &str) -> Result<()> {
        let path = CString::new(jar.replace('\0', " ")).expect("NULs replaced");
        call!(self, 149, "AddToBootstrapClassLoaderSearch", fn(*const c_char), path.as_ptr())
    }

    /// Retransforms `classes` (ClassFileLoadHook sees each again, from its original class
    /// file); one VM operation, all or none. Needs `can_retransform_classes`.
    pub fn retransform_classes(&self, classes: &[jclass]) -> Result<()> {
        let n = classes.len().min(i32::MAX as usize) as jint;
        call!(self, 152, "RetransformClasses", fn(jint, *const jclass), n, classes.as_ptr())
    }

    pub fn system_property(&self, name: &str) -> Result<String> {
        let key = CString::new(name).expect("property names have no NUL");
        let mut value = ptr::null_mut();
        call!(self, 131, "GetSystemProperty", fn(*const c_char, *mut *mut c_char), key.as_ptr(), &mut value)?;
        Ok(self.take_string(value).unwrap_or_default())
    }
}

/// `Lcom/foo/Bar;` -> `com.foo.Bar`; hidden-class address suffixes (`+0x...`) are dropped so
/// lambdas aggregate across runs. Returns (name, hidden).
pub fn class_name_from_signature(sig: &str) -> (String, bool) {
    let body = sig.strip_prefix('L').and_then(|s| s.strip_suffix(';')).unwrap_or(sig);
    let (body, hidden) = match body.find("+0x").or_else(|| body.find("/0x")).or_else(|| body.find(".0x")) {
        Some(i) => (&body[..i], true),
        None => (body, false),
    };
    (body.replace('/', "."), hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names() {
        assert_eq!(class_name_from_signature("Ljava/lang/String;"), ("java.lang.String".into(), false));
        assert_eq!(class_name_from_signature("LMain$$Lambda$14+0x0000000800c03000;"), ("Main$$Lambda$14".into(), true));
        assert_eq!(class_name_from_signature("LDemo$$Lambda$4.0x00007fa98c009a30;"), ("Demo$$Lambda$4".into(), true));
        assert_eq!(class_name_from_signature("[I"), ("[I".into(), false));
    }

    #[test]
    fn callbacks_cover_every_event_slot() {
        // JDK 21's jvmtiEventCallbacks: VM_INIT (50) to VIRTUAL_THREAD_END (88).
        assert_eq!(std::mem::size_of::<EventCallbacks>(), 39 * 8);
    }
}
