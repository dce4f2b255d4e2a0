//! The one module that calls JNI (leaf): the invocation interface (`Vm`: this thread's
//! JNIEnv, attaching the agent's own threads and detaching them when they end), the thread id
//! and local references JVMTI callers need, and the Java bridge's strings, arrays and
//! `io.github.hpm.HpmException`. Each env helper checks for a pending Java exception and returns
//! `Err` with a message instead of continuing.

use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use jni::sys::{
    jint, jlong, jlongArray, jobject, jobjectArray, jsize, jstring, JNIEnv, JavaVM, JavaVMAttachArgs, JNI_OK, JNI_TRUE,
    JNI_VERSION_1_6,
};

/// glibc's PTHREAD_KEYS_MAX.
const PTHREAD_KEYS: libc::pthread_key_t = 1024;
/// The JNIEnv is a field of HotSpot's JavaThread, well inside its first 16 KB (JDK 17 and 25).
const MAX_ENV_OFFSET: usize = 0x4000;
const NO_KEY: libc::pthread_key_t = libc::pthread_key_t::MAX;
/// HotSpot's pthread key holding the current `Thread*` (see [`Vm::learn_thread_key`]).
static THREAD_KEY: AtomicU32 = AtomicU32::new(NO_KEY);

/// The process's JavaVM (valid for the life of the process, usable from any thread).
#[derive(Clone, Copy)]
pub struct Vm(*mut JavaVM);

// SAFETY: the JavaVM pointer is process-wide and its invocation interface may be called from any
// thread; this type never writes through it.
unsafe impl Send for Vm {}
// SAFETY: as above.
unsafe impl Sync for Vm {}

impl Vm {
    pub fn new(vm: *mut JavaVM) -> Vm {
        Vm(vm)
    }

    /// This thread's JNIEnv if it is attached to the VM. Async-signal-safe in HotSpot (GetEnv
    /// only reads the current thread, as async-profiler relies on too).
    pub fn env(&self) -> Option<*mut JNIEnv> {
        let mut env: *mut c_void = std::ptr::null_mut();
        // SAFETY: the JavaVM is valid for the process's life; GetEnv is in its invoke interface.
        let rc = unsafe { ((**self.0).GetEnv?)(self.0, &mut env, JNI_VERSION_1_6) };
        (rc == JNI_OK && !env.is_null()).then_some(env as *mut JNIEnv)
    }

    /// Learns which pthread key HotSpot keeps each VM thread's `Thread*` in, from the calling
    /// Java thread (HotSpot stores it there besides libjvm's own TLS, for its signal handlers).
    /// Idempotent and cheap once learnt; leaves it unknown unless exactly one key fits.
    pub fn learn_thread_key(&self) {
        if THREAD_KEY.load(Ordering::Relaxed) != NO_KEY {
            return;
        }
        let Some(env) = self.env() else { return };
        let mut found = None;
        for key in 0..PTHREAD_KEYS {
            // SAFETY: glibc's pthread_getspecific accepts any key below PTHREAD_KEYS_MAX and
            // returns null for one never created or deleted since.
            let v = unsafe { libc::pthread_getspecific(key) } as usize;
            // JNIEnv is a field of the JavaThread: the key's value is a little below it.
            if v != 0 && (env as usize).wrapping_sub(v) < MAX_ENV_OFFSET {
                if found.is_some() {
                    return; // ambiguous: stay unknown
                }
                found = Some(key);
            }
        }
        if let Some(key) = found {
            THREAD_KEY.store(key, Ordering::Relaxed);
        }
    }

    /// Whether the JVM has set the calling thread up (its libjvm TLS block exists), so GetEnv
    /// and AsyncGetCallTrace are safe in a signal handler on it; false when unknown.
    /// Async-signal-safe: pthread_getspecific reads the thread's own descriptor, never allocates.
    pub fn set_up_here(&self) -> bool {
        let key = THREAD_KEY.load(Ordering::Relaxed);
        // SAFETY: `key` was a live HotSpot key when learnt; HotSpot never deletes it.
        key != NO_KEY && !unsafe { libc::pthread_getspecific(key) }.is_null()
    }

    /// Whether a signal handler on the calling thread may call into libjvm (GetEnv,
    /// AsyncGetCallTrace): with the thread key known, exactly when the JVM has set the thread
    /// up ([`Vm::set_up_here`]); without it, when `announced` (ThreadStart or the VM's thread
    /// list said it is a Java thread). Async-signal-safe.
    pub fn may_enter_jvm_here(&self, announced: bool) -> bool {
        if THREAD_KEY.load(Ordering::Relaxed) == NO_KEY {
            announced
        } else {
            self.set_up_here()
        }
    }

    /// The calling thread's HotSpot `Thread*` (0 when unknown or not set up); with a JNIEnv
    /// ([`Vm::env`]) it is a `JavaThread*`. Async-signal-safe, as [`Vm::set_up_here`].
    pub fn current_vm_thread(&self) -> u64 {
        let key = THREAD_KEY.load(Ordering::Relaxed);
        if key == NO_KEY {
            return 0;
        }
        // SAFETY: `key` was a live HotSpot key when learnt; HotSpot never deletes it.
        unsafe { libc::pthread_getspecific(key) as u64 }
    }

    /// Attaches the calling native thread as a daemon named `name`; the returned guard
    /// detaches it when dropped (on that same thread), so the agent's threads never outlive
    /// their work as zombie JavaThreads.
    pub fn attach_daemon(&self, name: &CStr) -> Result<AttachedThread, String> {
        let mut env: *mut c_void = std::ptr::null_mut();
        let mut args =
            JavaVMAttachArgs { version: JNI_VERSION_1_6, name: name.as_ptr() as *mut _, group: std::ptr::null_mut() };
        // SAFETY: valid JavaVM; AttachCurrentThreadAsDaemon is in its invoke interface and `args`
        // outlives the call.
        let rc = unsafe {
            let f = (**self.0).AttachCurrentThreadAsDaemon.ok_or("AttachCurrentThreadAsDaemon is missing")?;
            f(self.0, &mut env, &mut args as *mut _ as *mut c_void)
        };
        if rc != JNI_OK || env.is_null() {
            return Err(format!("cannot attach {} to the JVM (JNI error {rc})", name.to_string_lossy()));
        }
        Ok(AttachedThread { vm: *self, env: env as *mut JNIEnv, _not_send: std::marker::PhantomData })
    }
}

/// The calling thread, attached to the VM by [`Vm::attach_daemon`] until this is dropped.
pub struct AttachedThread {
    vm: Vm,
    env: *mut JNIEnv,
    /// Detaching must happen on the attached thread: not Send.
    _not_send: std::marker::PhantomData<*mut ()>,
}

impl AttachedThread {
    pub fn env(&self) -> *mut JNIEnv {
        self.env
    }
}

impl Drop for AttachedThread {
    fn drop(&mut self) {
        // SAFETY: this thread attached itself in `attach_daemon` and is still attached (the guard
        // is not Send, so this runs on it); DetachCurrentThread is in the invoke interface.
        unsafe {
            if let Some(f) = (**self.vm.0).DetachCurrentThread {
                f(self.vm.0);
            }
        }
    }
}

/// The Java id of a thread object (JVMTI has no call for it): `java.lang.Thread.tid`, read
/// with a field id looked up once per process (every thread start asks: calling `getId()`
/// through JNI, its method looked up each time, was a fifth of what setting up a new thread's
/// sampling cost, and ran a subclass's override inside a JVMTI callback). `getId()` where
/// the field is missing (another JVM).
pub fn java_thread_id(env: *mut JNIEnv, thread: jobject) -> Option<u64> {
    if env.is_null() || thread.is_null() {
        return None;
    }
    if let Some(fid) = thread_long_field(env, &TID_FIELD, c"tid") {
        return thread_long(env, thread, fid);
    }
    // SAFETY: `env` is the current thread's JNIEnv (from a JVMTI callback or an attached
    // thread) and `thread` a live local reference; every JNI function used is present in JNI
    // 1.2+ and checked for null.
    unsafe {
        let f = &**env;
        let class = (f.GetObjectClass?)(env, thread);
        let mid = (f.GetMethodID?)(env, class, c"getId".as_ptr(), c"()J".as_ptr());
        (f.DeleteLocalRef?)(env, class);
        if mid.is_null() {
            (f.ExceptionClear?)(env);
            return None;
        }
        let id = (f.CallLongMethodA?)(env, thread, mid, std::ptr::null());
        if (f.ExceptionCheck?)(env) != 0 {
            (f.ExceptionClear?)(env);
            return None;
        }
        Some(id as u64)
    }
}

/// The field ids of `java.lang.Thread.tid` and `.eetop`: `usize::MAX` where there is none, 0
/// until looked up.
static TID_FIELD: AtomicUsize = AtomicUsize::new(0);
static EETOP_FIELD: AtomicUsize = AtomicUsize::new(0);

/// The id of `long` field `name` of `java.lang.Thread`, looked up once per process and kept in
/// `cache` (java.lang.Thread is never unloaded, so the id stays valid; threads asking at once
/// may both look: they find the same id); None where the field is missing (another JVM).
fn thread_long_field(env: *mut JNIEnv, cache: &AtomicUsize, name: &CStr) -> Option<jni::sys::jfieldID> {
    let mut fid = cache.load(Ordering::Acquire);
    if fid == 0 {
        // SAFETY: `env` is the current thread's JNIEnv; FindClass, GetFieldID, DeleteLocalRef
        // and ExceptionClear are in JNI 1.1 and checked for null; a missing class or field
        // raises an exception, cleared here.
        fid = unsafe {
            let f = &**env;
            match (f.FindClass, f.GetFieldID, f.DeleteLocalRef, f.ExceptionClear) {
                (Some(find), Some(field), Some(delete), Some(clear)) => {
                    let class = find(env, c"java/lang/Thread".as_ptr());
                    if class.is_null() {
                        clear(env);
                        usize::MAX
                    } else {
                        let id = field(env, class, name.as_ptr(), c"J".as_ptr());
                        delete(env, class);
                        if id.is_null() {
                            clear(env);
                            usize::MAX
                        } else {
                            id as usize
                        }
                    }
                }
                _ => usize::MAX,
            }
        };
        cache.store(fid, Ordering::Release);
    }
    (fid != usize::MAX).then_some(fid as jni::sys::jfieldID)
}

/// `thread`'s value of the `long` field `fid` of java.lang.Thread.
fn thread_long(env: *mut JNIEnv, thread: jobject, fid: jni::sys::jfieldID) -> Option<u64> {
    // SAFETY: `env` is the current thread's JNIEnv and `thread` a live local reference to a
    // java.lang.Thread, whose class declares the field `fid` names ([`thread_long_field`]);
    // GetLongField is in JNI 1.1.
    unsafe { (**env).GetLongField.map(|get| get(env, thread, fid) as u64) }
}

/// The `JavaThread*` of a started, not yet ended thread: `java.lang.Thread.eetop`, which
/// HotSpot sets when the thread starts and clears when it ends (0 then, or on other JVMs).
pub fn java_thread_ptr(env: *mut JNIEnv, thread: jobject) -> u64 {
    if env.is_null() || thread.is_null() {
        return 0;
    }
    thread_long_field(env, &EETOP_FIELD, c"eetop").and_then(|fid| thread_long(env, thread, fid)).unwrap_or(0)
}

/// Deletes a JNI local reference (classes and threads JVMTI handed out).
pub fn delete_local_ref(env: *mut JNIEnv, obj: jobject) {
    if env.is_null() || obj.is_null() {
        return;
    }
    // SAFETY: `env` is the current thread's JNIEnv and `obj` a local reference it owns.
    unsafe {
        if let Some(f) = (**env).DeleteLocalRef {
            f(env, obj)
        }
    }
}

/// A global reference to `obj` (kept across native frames), None when the VM refuses.
pub fn new_global_ref(env: *mut JNIEnv, obj: jobject) -> Option<jobject> {
    if env.is_null() || obj.is_null() {
        return None;
    }
    // SAFETY: `env` is the current thread's JNIEnv and `obj` a live reference it holds.
    let g = unsafe { ((**env).NewGlobalRef?)(env, obj) };
    (!g.is_null()).then_some(g)
}

/// Deletes a global reference from [`new_global_ref`].
pub fn delete_global_ref(env: *mut JNIEnv, obj: jobject) {
    if env.is_null() || obj.is_null() {
        return;
    }
    // SAFETY: `env` is the current thread's JNIEnv and `obj` a global reference not yet deleted.
    unsafe {
        if let Some(f) = (**env).DeleteGlobalRef {
            f(env, obj)
        }
    }
}

pub const EXCEPTION_CLASS: &std::ffi::CStr = c"io/github/hpm/HpmException";

/// A function of the JNI table, or an error naming it.
macro_rules! jfn {
    ($env:expr, $name:ident) => {
        // SAFETY: `env` is the JNIEnv the JVM passed to the native method, valid on this
        // thread for the call; its function table is filled by the JVM.
        unsafe { (**$env).$name }.ok_or(concat!("JNI function ", stringify!($name), " is missing"))?
    };
}

fn pending_exception(env: *mut JNIEnv) -> Result<bool, String> {
    let check = jfn!(env, ExceptionCheck);
    // SAFETY: valid env on its own thread; ExceptionCheck may be called at any time.
    Ok(unsafe { check(env) } == JNI_TRUE)
}

fn checked(env: *mut JNIEnv, what: &str) -> Result<(), String> {
    if pending_exception(env)? {
        return Err(format!("{what} raised a Java exception"));
    }
    Ok(())
}

/// Throws `HpmException(message)` unless an exception is already pending (that one wins).
pub fn throw(env: *mut JNIEnv, message: &str) {
    let _ = try_throw(env, message);
}

fn try_throw(env: *mut JNIEnv, message: &str) -> Result<(), &'static str> {
    if pending_exception(env).unwrap_or(true) {
        return Ok(());
    }
    let find = jfn!(env, FindClass);
    let throw_new = jfn!(env, ThrowNew);
    let text = CString::new(message.replace('\0', " ")).map_err(|_| "message")?;
    // SAFETY: valid env; the class name is a NUL-terminated JNI binary name.
    let class = unsafe { find(env, EXCEPTION_CLASS.as_ptr()) };
    if class.is_null() {
        return Err("HpmException class not found"); // FindClass left NoClassDefFoundError pending.
    }
    // SAFETY: `class` is a Throwable subclass with a (String) constructor; `text` outlives the call.
    unsafe { throw_new(env, class, text.as_ptr()) };
    Ok(())
}

/// The Java string's content (modified UTF-8 decoded lossily), or `Err` for null.
pub fn string(env: *mut JNIEnv, s: jstring, what: &str) -> Result<String, String> {
    if s.is_null() {
        return Err(format!("{what} must not be null"));
    }
    let get = jfn!(env, GetStringUTFChars);
    let release = jfn!(env, ReleaseStringUTFChars);
    // SAFETY: `s` is a live jstring reference passed by the JVM.
    let chars = unsafe { get(env, s, std::ptr::null_mut()) };
    if chars.is_null() {
        checked(env, "GetStringUTFChars")?;
        return Err("out of memory reading a string".into());
    }
    // SAFETY: GetStringUTFChars returned a NUL-terminated buffer, valid until released.
    let text = unsafe { std::ffi::CStr::from_ptr(chars) }.to_string_lossy().into_owned();
    // SAFETY: releasing exactly the buffer obtained above.
    unsafe { release(env, s, chars) };
    Ok(text)
}

/// A new Java string (a local reference).
pub fn new_string(env: *mut JNIEnv, s: &str) -> Result<jstring, String> {
    let new = jfn!(env, NewStringUTF);
    let text = CString::new(s.replace('\0', " ")).map_err(|e| e.to_string())?;
    // SAFETY: valid env; `text` is NUL-terminated and outlives the call. Non-ASCII text is
    // standard UTF-8, which modified UTF-8 reads the same except for NUL and 4-byte forms.
    let r = unsafe { new(env, text.as_ptr()) };
    checked(env, "NewStringUTF")?;
    Ok(r)
}

/// A new `String[]` (a local reference).
pub fn new_string_array(env: *mut JNIEnv, items: &[String]) -> Result<jobjectArray, String> {
    let find = jfn!(env, FindClass);
    let new_array = jfn!(env, NewObjectArray);
    let set = jfn!(env, SetObjectArrayElement);
    let delete = jfn!(env, DeleteLocalRef);
    // SAFETY: valid env; a constant class name.
    let class = unsafe { find(env, c"java/lang/String".as_ptr()) };
    checked(env, "FindClass(String)")?;
    // SAFETY: valid env and class; the length fits jsize (callers pass short lists).
    let array = unsafe { new_array(env, items.len() as jsize, class, std::ptr::null_mut()) };
    checked(env, "NewObjectArray")?;
    for (i, item) in items.iter().enumerate() {
        let s = new_string(env, item)?;
        // SAFETY: `array` is a String[] of this length; `s` is a String.
        unsafe { set(env, array, i as jsize, s) };
        checked(env, "SetObjectArrayElement")?;
        // SAFETY: `s` is a local reference we made and no longer need.
        unsafe { delete(env, s) };
    }
    Ok(array)
}

/// A new `long[]` (a local reference).
pub fn new_long_array(env: *mut JNIEnv, values: &[i64]) -> Result<jlongArray, String> {
    let new = jfn!(env, NewLongArray);
    let set = jfn!(env, SetLongArrayRegion);
    // SAFETY: valid env.
    let array = unsafe { new(env, values.len() as jsize) };
    checked(env, "NewLongArray")?;
    // SAFETY: `array` has exactly `values.len()` elements; `values` is readable for that length.
    unsafe { set(env, array, 0, values.len() as jsize, values.as_ptr() as *const jlong) };
    checked(env, "SetLongArrayRegion")?;
    Ok(array)
}

/// The content of a `long[]`, or `Err` for null.
pub fn long_array(env: *mut JNIEnv, array: jlongArray, what: &str) -> Result<Vec<i64>, String> {
    if array.is_null() {
        return Err(format!("{what} must not be null"));
    }
    let len = jfn!(env, GetArrayLength);
    let get = jfn!(env, GetLongArrayRegion);
    // SAFETY: `array` is a live long[] reference.
    let n: jint = unsafe { len(env, array) };
    let mut out = vec![0i64; n.max(0) as usize];
    // SAFETY: `out` has room for `n` elements.
    unsafe { get(env, array, 0, n, out.as_mut_ptr()) };
    checked(env, "GetLongArrayRegion")?;
    Ok(out)
}

/// `obj`'s class, as a local reference (null when `obj` is null).
pub fn object_class(env: *mut JNIEnv, obj: jobject) -> jobject {
    if env.is_null() || obj.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `env` is the current thread's JNIEnv and `obj` a live reference; GetObjectClass
    // cannot throw.
    unsafe { (**env).GetObjectClass.map_or(std::ptr::null_mut(), |f| f(env, obj)) }
}

/// The object in the reference field `field` of `obj` (a local reference, null if the field is
/// null or absent). `class` is `obj`'s class or a superclass declaring the field.
pub fn object_field(env: *mut JNIEnv, class: jobject, obj: jobject, field: &CStr, sig: &CStr) -> jobject {
    if env.is_null() || class.is_null() || obj.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `env` is the current thread's JNIEnv, `class` and `obj` live references; a
    // missing field raises NoSuchFieldError, cleared here.
    unsafe {
        let f = &**env;
        let (Some(get_id), Some(get), Some(clear)) = (f.GetFieldID, f.GetObjectField, f.ExceptionClear) else {
            return std::ptr::null_mut();
        };
        let id = get_id(env, class, field.as_ptr(), sig.as_ptr());
        if id.is_null() {
            clear(env);
            return std::ptr::null_mut();
        }
        get(env, obj, id)
    }
}

/// Finds `class` (`jdk/internal/misc/Unsafe`) and registers `function` as its native method
/// `name` with signature `sig`. The caller keeps the function's previous entry to call on.
pub fn register_native(
    env: *mut JNIEnv,
    class: &CStr,
    name: &CStr,
    sig: &CStr,
    function: *mut c_void,
) -> Result<(), String> {
    // SAFETY: `env` is the current thread's JNIEnv; the strings are NUL-terminated and live for
    // the call; a failure raises an exception, checked and cleared here.
    unsafe {
        let f = &**env;
        let c = (f.FindClass.ok_or("no FindClass")?)(env, class.as_ptr());
        if c.is_null() {
            (f.ExceptionClear.ok_or("no ExceptionClear")?)(env);
            return Err(format!("class {} not found", class.to_string_lossy()));
        }
        let m = jni::sys::JNINativeMethod {
            name: name.as_ptr() as *mut _,
            signature: sig.as_ptr() as *mut _,
            fnPtr: function,
        };
        let rc = (f.RegisterNatives.ok_or("no RegisterNatives")?)(env, c, &m, 1);
        delete_local_ref(env, c);
        if rc != JNI_OK {
            (f.ExceptionClear.ok_or("no ExceptionClear")?)(env);
            return Err(format!("RegisterNatives returned {rc}"));
        }
        Ok(())
    }
}

/// The jmethodID of `class.name(sig)` (an instance method), for reading its native entry.
pub fn method_id(env: *mut JNIEnv, class: &CStr, name: &CStr, sig: &CStr) -> Option<u64> {
    // SAFETY: as in `register_native`; lookups that fail raise exceptions, cleared here.
    unsafe {
        let f = &**env;
        let c = (f.FindClass?)(env, class.as_ptr());
        if c.is_null() {
            (f.ExceptionClear?)(env);
            return None;
        }
        let m = (f.GetMethodID?)(env, c, name.as_ptr(), sig.as_ptr());
        delete_local_ref(env, c);
        if m.is_null() {
            (f.ExceptionClear?)(env);
            return None;
        }
        Some(m as u64)
    }
}

/// The name of class loader `loader` (`ClassLoader.name`: `app`, `platform`), None for an
/// unnamed loader. Read from `java.lang.ClassLoader`'s own field, which a subclass's field of
/// the same name cannot hide; no Java code runs.
pub fn loader_name(env: *mut JNIEnv, loader: jobject) -> Option<String> {
    if env.is_null() || loader.is_null() {
        return None;
    }
    // SAFETY: `env` is the current thread's JNIEnv; a failed lookup raises an exception,
    // cleared here.
    let base = unsafe {
        let f = &**env;
        let c = (f.FindClass?)(env, c"java/lang/ClassLoader".as_ptr());
        if c.is_null() {
            (f.ExceptionClear?)(env);
            return None;
        }
        c
    };
    let name = object_field(env, base, loader, c"name", c"Ljava/lang/String;");
    delete_local_ref(env, base);
    let text = (!name.is_null()).then(|| string(env, name, "a class loader's name").ok()).flatten();
    delete_local_ref(env, name);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread is taken to be set up by the JVM's own thread key, not by what it was called:
    /// announced (say, by a name it inherited) but without the key's value, it may not call in.
    #[test]
    fn only_a_thread_the_jvm_set_up_may_enter_it_from_a_handler() {
        let vm = Vm::new(std::ptr::null_mut());
        assert!(vm.may_enter_jvm_here(true) && !vm.may_enter_jvm_here(false), "no key: the announcement");
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: creates a key with no destructor, deleted below.
        assert_eq!(unsafe { libc::pthread_key_create(&mut key, None) }, 0);
        THREAD_KEY.store(key, Ordering::Relaxed);
        assert!(!vm.may_enter_jvm_here(true), "announced, but not set up");
        let mut slot = 0u64;
        // SAFETY: sets this thread's value of the key created above.
        unsafe { libc::pthread_setspecific(key, &mut slot as *mut u64 as *mut c_void) };
        assert!(vm.may_enter_jvm_here(false), "set up, announced or not");
        THREAD_KEY.store(NO_KEY, Ordering::Relaxed);
        // SAFETY: the key created above; no thread uses it any more.
        unsafe { libc::pthread_key_delete(key) };
    }
}

/// Why [`diagnostic_command`] gave no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcmdError {
    /// libjvm exports no `JVM_GetManagement`, or it has no management interface of the one
    /// layout read here (JMM versions 3 and 4: JDK 14 to 25), or the interface lacks the command.
    NoInterface,
    /// The VM raised a Java exception running the command (cleared) or returned no output.
    Raised,
    /// A JNI call the command needs failed.
    Jni(String),
}

impl std::fmt::Display for DcmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DcmdError::NoInterface => f.write_str(
                "this JVM has no management interface hpm can call (JVM_GetManagement, JMM versions 3 and 4)",
            ),
            DcmdError::Raised => f.write_str("the JVM refused the diagnostic command (it raised an exception)"),
            DcmdError::Jni(e) => write!(f, "a JNI call failed: {e}"),
        }
    }
}

/// The management interface versions whose `JmmInterface` layout is known, with the slot of
/// `ExecuteDiagnosticCommand` in each: `JMM_VERSION_4` (JDK 21 and later, which put
/// `GetTotalThreadAllocatedMemory` at slot 9) and `JMM_VERSION_3` (JDK 14 to 20 and 17u, which
/// put it in a reserved slot, 32). `JVM_GetManagement` returns the interface only for the exact
/// version it was built with. Read from include/jmm.h and checked against the libjvm.so of JDK
/// 17 and Temurin 25 (the relocations of `jmm_interface`; see docs/design.md).
const JMM_LAYOUTS: [(jint, usize); 2] = [(0x2004_0000, 39), (0x2003_0000, 38)];
/// The slot of `GetVersion` (after two reserved pointers), the same in every version.
const JMM_GET_VERSION_SLOT: usize = 2;

type GetManagement = unsafe extern "C" fn(jint) -> *mut c_void;
type ExecuteDcmd = unsafe extern "system" fn(*mut JNIEnv, jstring) -> jstring;
type GetVersion = unsafe extern "system" fn(*mut JNIEnv) -> jint;

/// Runs the diagnostic command `command` (`Thread.print`, as `jcmd PID Thread.print` does)
/// through the VM's management interface and returns at most `max_chars` UTF-16 units of its
/// output (the rest is not copied). On a Java thread (the processor), never in a signal handler:
/// the VM runs the command, which may stop every thread at a safepoint.
pub fn diagnostic_command(env: *mut JNIEnv, command: &str, max_chars: usize) -> Result<String, DcmdError> {
    let jni = |e: String| DcmdError::Jni(e);
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; libjvm is loaded globally by
    // the launcher (and by any JNI_CreateJavaVM host, which linked it).
    let get = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"JVM_GetManagement".as_ptr()) };
    if get.is_null() {
        return Err(DcmdError::NoInterface);
    }
    // SAFETY: libjvm's `void* JVM_GetManagement(jint version)` (jvm.h).
    let get: GetManagement = unsafe { std::mem::transmute::<*mut c_void, GetManagement>(get) };
    // SAFETY: any version may be asked; HotSpot returns null for one it was not built with.
    let found = JMM_LAYOUTS.iter().map(|&(v, slot)| (v, slot, unsafe { get(v) } as *const *const c_void));
    let Some((asked, slot, jmm)) = found.into_iter().find(|(_, _, p)| !p.is_null()) else {
        return Err(DcmdError::NoInterface);
    };
    // SAFETY: a non-null `JmmInterface*` of a version in JMM_LAYOUTS is a static table of more
    // than `slot` + 1 pointers (include/jmm.h), valid for the process's life.
    let (version, execute) = unsafe { (*jmm.add(JMM_GET_VERSION_SLOT), *jmm.add(slot)) };
    if version.is_null() || execute.is_null() {
        return Err(DcmdError::NoInterface);
    }
    // SAFETY: the slots hold `jint GetVersion(JNIEnv*)` and `jstring ExecuteDiagnosticCommand(
    // JNIEnv*, jstring)` (include/jmm.h); both non-null.
    let (version, execute) = unsafe {
        (
            std::mem::transmute::<*const c_void, GetVersion>(version),
            std::mem::transmute::<*const c_void, ExecuteDcmd>(execute),
        )
    };
    // SAFETY: `env` is this thread's JNIEnv; GetVersion only returns the VM's constant.
    if unsafe { version(env) } != asked {
        return Err(DcmdError::NoInterface);
    }
    let cmd = new_string(env, command).map_err(jni)?;
    // SAFETY: `env` is this thread's JNIEnv (a Java thread, in native); `cmd` a live local ref.
    let out = unsafe { execute(env, cmd) };
    delete_local_ref(env, cmd);
    if pending_exception(env).map_err(jni)? {
        let clear = jfn_dcmd(env)?;
        // SAFETY: valid env; clears the exception the command raised, so later calls run.
        unsafe { clear(env) };
        if !out.is_null() {
            delete_local_ref(env, out);
        }
        return Err(DcmdError::Raised);
    }
    if out.is_null() {
        return Err(DcmdError::Raised);
    }
    let text = string_prefix(env, out, max_chars);
    delete_local_ref(env, out);
    text.map_err(jni)
}

fn jfn_dcmd(env: *mut JNIEnv) -> Result<unsafe extern "system" fn(*mut JNIEnv), DcmdError> {
    // SAFETY: `env` is this thread's JNIEnv; its function table is filled by the JVM.
    unsafe { (**env).ExceptionClear }.ok_or(DcmdError::Jni("JNI function ExceptionClear is missing".into()))
}

/// The first `max_chars` UTF-16 units of `s` (a live local ref), decoded lossily.
fn string_prefix(env: *mut JNIEnv, s: jstring, max_chars: usize) -> Result<String, String> {
    let len = jfn!(env, GetStringLength);
    let region = jfn!(env, GetStringRegion);
    // SAFETY: valid env; `s` is a live jstring reference.
    let n = (unsafe { len(env, s) }.max(0) as usize).min(max_chars);
    let mut buf = vec![0u16; n];
    // SAFETY: `buf` holds `n` units and `n` is at most the string's length.
    unsafe { region(env, s, 0, n as jsize, buf.as_mut_ptr()) };
    checked(env, "GetStringRegion")?;
    Ok(String::from_utf16_lossy(&buf))
}

/// Calling Java classes' static members (the phases source's classes).
pub mod java;
