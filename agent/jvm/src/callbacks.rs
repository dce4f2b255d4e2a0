//! JVMTI event callbacks (all but VMInit/VMDeath, which are lifecycle.rs's). Each is an
//! `extern "C"` trampoline that finds the agent, catches any panic (none may cross into the
//! JVM), and hands the event to the part it concerns: threads are attached or detached, code
//! and GC events are recorded with their time for the processor.

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use hpm_profile::codemap::{CodeBlob, CodeBytes, CodeEvent, PcScope};
use hpm_profile::model::ThreadInfo;
use jni::sys::{jclass, jint, jlong, jmethodID, jobject, JNIEnv};

use crate::agent::{self, Agent};
use crate::jnienv::{self, Vm};
use crate::jvmti::{event, jthread, EventCallbacks, Jvmti, JvmtiEnvPtr};
use crate::os::{gettid, now_ticks};
use crate::source::jvmevents;
use crate::threads::Threads;

/// Events on from the start (the code-map ones are turned on by `CodeEvents::enable`).
pub const ALWAYS_ON: [u32; 5] = [
    event::THREAD_START,
    event::THREAD_END,
    event::CLASS_LOAD,
    event::GARBAGE_COLLECTION_START,
    event::GARBAGE_COLLECTION_FINISH,
];

/// Runs `f` with the agent, swallowing panics (reported on stderr).
fn guarded(name: &str, f: impl FnOnce(&'static Agent)) {
    let Some(a) = agent::get() else { return };
    if catch_unwind(AssertUnwindSafe(|| f(a))).is_err() {
        eprintln!("hpm: internal error in the {name} callback; continuing");
    }
}

/// Puts this module's trampolines into `cb`.
pub fn fill(cb: &mut EventCallbacks) {
    cb.set(event::THREAD_START, thread_start as *const c_void);
    cb.set(event::THREAD_END, thread_end as *const c_void);
    cb.set(event::CLASS_LOAD, class_load as *const c_void);
    cb.set(event::CLASS_PREPARE, class_prepare as *const c_void);
    cb.set(event::COMPILED_METHOD_LOAD, compiled_method_load as *const c_void);
    cb.set(event::COMPILED_METHOD_UNLOAD, compiled_method_unload as *const c_void);
    cb.set(event::DYNAMIC_CODE_GENERATED, dynamic_code_generated as *const c_void);
    cb.set(event::GARBAGE_COLLECTION_START, gc_start as *const c_void);
    cb.set(event::GARBAGE_COLLECTION_FINISH, gc_finish as *const c_void);
    cb.set(event::SAMPLED_OBJECT_ALLOC, sampled_object_alloc as *const c_void);
    cb.set(event::MONITOR_CONTENDED_ENTER, monitor_contended_enter as *const c_void);
    cb.set(event::MONITOR_CONTENDED_ENTERED, monitor_contended_entered as *const c_void);
    cb.set(event::CLASS_FILE_LOAD_HOOK, crate::source::phases::hook::class_file_load_hook as *const c_void);
    cb.set(event::VIRTUAL_THREAD_START, virtual_thread_start as *const c_void);
    cb.set(event::VIRTUAL_THREAD_END, virtual_thread_end as *const c_void);
}

/// Counts live virtual threads for `event=wall` on JDK 21+ (see [`crate::threads::LiveCount`]),
/// from the JVM's start (Agent_OnLoad): the capability, then the two events once the callbacks
/// are set. Each event is one call per virtual thread's start or end, nothing per mount (the
/// mount/unmount extension events stay off). A JVM without virtual threads refuses the
/// capability: nothing is counted and the report has no such line.
pub fn count_virtual_threads(jvmti: &Jvmti, threads: &Threads) {
    if jvmti.add_capabilities(&[crate::jvmti::cap::SUPPORT_VIRTUAL_THREADS]).is_err() {
        return;
    }
    let on = [event::VIRTUAL_THREAD_START, event::VIRTUAL_THREAD_END].map(|ev| jvmti.set_event(true, ev).is_ok());
    if on == [true, true] {
        threads.virtual_live.start();
    } else {
        let _ = [event::VIRTUAL_THREAD_START, event::VIRTUAL_THREAD_END].map(|ev| jvmti.set_event(false, ev));
    }
}

unsafe extern "C" fn virtual_thread_start(_env: JvmtiEnvPtr, jni: *mut JNIEnv, vthread: jthread) {
    guarded("VirtualThreadStart", |a| {
        // GetThreadInfo on every start (one small JVMTI allocation for the name, freed at
        // once): whether the name is empty is not known without reading it, and the only
        // cheaper read is the private field `Thread.name` through JNI, which would tie the
        // agent to the JDK's internals. Next to a virtual thread's own start (its
        // continuation and stack on the Java heap) the call is small; the lock and the id
        // are only for named ones.
        let name = a.jvmti.thread_name(vthread).unwrap_or_default();
        a.threads.virtual_started(name, || jnienv::java_thread_id(jni, vthread));
    });
}

unsafe extern "C" fn virtual_thread_end(_env: JvmtiEnvPtr, jni: *mut JNIEnv, vthread: jthread) {
    guarded("VirtualThreadEnd", |a| a.threads.virtual_ended(|| jnienv::java_thread_id(jni, vthread)));
}

/// Attaches the calling Java thread (ThreadStart, and the main thread at VMInit).
pub fn attach_java_thread(jvmti: &Jvmti, threads: &Threads, vm: Vm, jni: *mut JNIEnv, thread: jthread) {
    vm.learn_thread_key();
    let tid = gettid();
    let name = jvmti.thread_name(thread).unwrap_or_default();
    let info = ThreadInfo {
        os_tid: tid as u32,
        java_id: jnienv::java_thread_id(jni, thread),
        name,
        is_java: true,
        is_virtual: false,
    };
    // Failures are counted per reason and the first one is printed at exit.
    let _ = threads.attach(tid, info);
}

unsafe extern "C" fn thread_start(_env: JvmtiEnvPtr, jni: *mut JNIEnv, thread: jthread) {
    guarded("ThreadStart", |a| attach_java_thread(&a.jvmti, &a.threads, a.vm, jni, thread));
}

unsafe extern "C" fn thread_end(_env: JvmtiEnvPtr, _jni: *mut JNIEnv, _thread: jthread) {
    guarded("ThreadEnd", |a| a.threads.thread_ended(gettid()));
}

unsafe extern "C" fn class_load(_env: JvmtiEnvPtr, _jni: *mut JNIEnv, _thread: jthread, _klass: jclass) {
    guarded("ClassLoad", |a| {
        a.code.classes_loaded.fetch_add(1, Ordering::Relaxed);
    });
}

unsafe extern "C" fn class_prepare(_env: JvmtiEnvPtr, _jni: *mut JNIEnv, _thread: jthread, klass: jclass) {
    // AsyncGetCallTrace reports jmethodIDs, which exist only once someone asked for them.
    guarded("ClassPrepare", |a| {
        if let Ok(ids) = a.jvmti.touch_class_methods(klass) {
            a.code.add_method_ids(&ids);
        }
    });
}

/// jvmtiCompiledMethodLoadRecordHeader / InlineRecord / PCStackInfo (jvmticmlr.h).
#[repr(C)]
struct RecordHeader {
    kind: u32,
    major: jint,
    minor: jint,
    next: *const RecordHeader,
}

#[repr(C)]
struct InlineRecord {
    header: RecordHeader,
    numpcs: jint,
    pcinfo: *const PcStackInfo,
}

#[repr(C)]
struct PcStackInfo {
    pc: *const c_void,
    numstackframes: jint,
    methods: *const jmethodID,
    bcis: *const jint,
}

const CMLR_INLINE_INFO: u32 = 2;

/// Reads the inline scopes from CompiledMethodLoad's `compile_info`.
///
/// # Safety
/// `info` is null or the record chain HotSpot passed to CompiledMethodLoad, valid during it.
unsafe fn inline_scopes(info: *const c_void) -> Vec<PcScope> {
    let mut out = Vec::new();
    let mut h = info as *const RecordHeader;
    while !h.is_null() {
        if (*h).kind == CMLR_INLINE_INFO {
            let r = &*(h as *const InlineRecord);
            for i in 0..r.numpcs.max(0) as usize {
                let pc = &*r.pcinfo.add(i);
                let frames = (0..pc.numstackframes.max(0) as usize)
                    .map(|k| (*pc.methods.add(k) as u64, *pc.bcis.add(k)))
                    .collect();
                out.push(PcScope { pc: pc.pc as u64, frames });
            }
        }
        h = (*h).next;
    }
    out
}

unsafe extern "C" fn compiled_method_load(
    _env: JvmtiEnvPtr,
    method: jmethodID,
    code_size: jint,
    code_addr: *const c_void,
    _map_length: jint,
    _map: *const c_void,
    compile_info: *const c_void,
) {
    let time = now_ticks();
    // New code may sit where code freed without an unload event was (an upcall stub, say), or
    // whose unload event is still queued: the walker's cached blobs of its range are looked up
    // again.
    crate::vmstructs::code_loaded(code_addr as u64, code_size.max(0) as u64);
    guarded("CompiledMethodLoad", |a| {
        // SAFETY: `compile_info` is the record chain of this event, valid during the callback.
        let scopes = unsafe { inline_scopes(compile_info) };
        let size = code_size.max(0) as usize;
        // The instructions as installed, for `hpm report --instructions`: the code cache
        // reuses the addresses once the method is unloaded (bounded by the copies' budget).
        let code = (size > 0 && !code_addr.is_null()).then(|| {
            // SAFETY: CompiledMethodLoad's `code_addr` and `code_size` describe the method's
            // installed instructions; HotSpot keeps the nmethod alive while its load event is
            // posted, and the slice is only read during the callback.
            CodeBytes::copy(unsafe { std::slice::from_raw_parts(code_addr as *const u8, size) })
        });
        let blob =
            CodeBlob::compiled(method as u64, code_addr as u64, size as u64, scopes, time).with_code(code.flatten());
        a.code.push(CodeEvent::Load(blob));
    });
}

unsafe extern "C" fn compiled_method_unload(_env: JvmtiEnvPtr, _method: jmethodID, code_addr: *const c_void) {
    let time = now_ticks();
    // Before anything else: the blob's memory may be reused from now on.
    crate::vmstructs::code_changed();
    guarded("CompiledMethodUnload", |a| a.code.push(CodeEvent::Unload { time, start: code_addr as u64 }));
}

unsafe extern "C" fn dynamic_code_generated(
    _env: JvmtiEnvPtr,
    name: *const c_char,
    address: *const c_void,
    length: jint,
) {
    let time = now_ticks();
    // New code in the code cache may sit where freed code was.
    crate::vmstructs::code_loaded(address as u64, length.max(0) as u64);
    guarded("DynamicCodeGenerated", |a| {
        let name = if name.is_null() {
            String::from("[stub]")
        } else {
            // SAFETY: JVMTI passes a NUL-terminated name valid during the callback.
            unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
        };
        a.code.push(CodeEvent::Load(CodeBlob::dynamic(&name, address as u64, length.max(0) as u64, time)));
    });
}

// GC callbacks run inside the collection: no JVMTI or JNI calls, just the time.
unsafe extern "C" fn gc_start(_env: JvmtiEnvPtr) {
    let time = now_ticks();
    guarded("GarbageCollectionStart", |a| a.code.gc(true, time));
}

unsafe extern "C" fn gc_finish(_env: JvmtiEnvPtr) {
    let time = now_ticks();
    // A collection may have unlinked and freed compiled code (JDK 21+ frees it after class
    // unloading, without a sweeper).
    crate::vmstructs::code_changed();
    guarded("GarbageCollectionFinish", |a| a.code.gc(false, time));
}

unsafe extern "C" fn sampled_object_alloc(
    _env: JvmtiEnvPtr,
    jni: *mut JNIEnv,
    thread: jthread,
    _object: jobject,
    klass: jclass,
    size: jlong,
) {
    guarded("SampledObjectAlloc", |a| {
        jvmevents::allocated(&jvmevents::EVENTS, &a.jvmti, &a.threads, jni, thread, klass, size.max(0) as u64)
    });
}

unsafe extern "C" fn monitor_contended_enter(_env: JvmtiEnvPtr, jni: *mut JNIEnv, _thread: jthread, object: jobject) {
    guarded("MonitorContendedEnter", |a| jvmevents::monitor_waiting(&jvmevents::EVENTS, &a.jvmti, jni, object));
}

unsafe extern "C" fn monitor_contended_entered(_env: JvmtiEnvPtr, jni: *mut JNIEnv, thread: jthread, _object: jobject) {
    guarded("MonitorContendedEntered", |a| {
        jvmevents::monitor_entered(&jvmevents::EVENTS, &a.jvmti, &a.threads, jni, thread)
    });
}
