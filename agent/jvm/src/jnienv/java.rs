//! Calling a Java class's static members from the agent (the phases source's `Probe` and
//! `Transformer`): classes held by global references, static methods and fields, natives
//! registered, byte arrays, and a pending exception taken and described. Part of the one JNI
//! module: every call here checks for a Java exception and clears it, returning `Err`.

use std::ffi::{c_void, CStr};

use jni::sys::{
    jboolean, jbyte, jbyteArray, jclass, jfieldID, jint, jmethodID, jobject, jsize, jstring, jvalue, JNIEnv,
    JNINativeMethod, JNI_OK,
};

use super::{delete_local_ref, new_global_ref, pending_exception};

/// Longest exception description kept.
const MAX_DESCRIPTION: usize = 300;

/// `Err` with what `what` raised (the exception cleared) when one is pending.
fn raised(env: *mut JNIEnv, what: &str) -> Result<(), String> {
    match take_exception(env) {
        Some(e) => Err(format!("{what} raised {e}")),
        None => Ok(()),
    }
}

/// Clears the pending exception, if any, and returns its `toString()` (cut short), or its
/// absence as `None`.
pub fn take_exception(env: *mut JNIEnv) -> Option<String> {
    if !pending_exception(env).unwrap_or(false) {
        return None;
    }
    // SAFETY: `env` is the calling thread's JNIEnv; ExceptionOccurred/ExceptionClear may be
    // called with an exception pending, and the others only after it is cleared. A failure of
    // toString() raises again: cleared too.
    unsafe {
        let f = &**env;
        let (Some(occurred), Some(clear)) = (f.ExceptionOccurred, f.ExceptionClear) else {
            return Some("an exception".into());
        };
        let ex = occurred(env);
        clear(env);
        let class = super::object_class(env, ex);
        let text = match (f.GetMethodID, f.CallObjectMethodA) {
            (Some(get_id), Some(call)) if !class.is_null() => {
                let mid = get_id(env, class, c"toString".as_ptr(), c"()Ljava/lang/String;".as_ptr());
                let s = if mid.is_null() { std::ptr::null_mut() } else { call(env, ex, mid, std::ptr::null()) };
                clear(env);
                let text = (!s.is_null()).then(|| super::string(env, s, "an exception's text").ok()).flatten();
                delete_local_ref(env, s);
                text
            }
            _ => None,
        };
        delete_local_ref(env, class);
        delete_local_ref(env, ex);
        let mut text = text.unwrap_or_else(|| "an exception".into());
        if text.len() > MAX_DESCRIPTION {
            let mut end = MAX_DESCRIPTION;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        Some(text)
    }
}

/// The class `name` (`io/github/hpm/phases/Probe`), found through the caller's loader (on a
/// thread with no Java frame, the system class loader, which delegates to the bootstrap
/// loader), held by a global reference for the life of the process.
pub fn global_class(env: *mut JNIEnv, name: &CStr) -> Result<jclass, String> {
    let find = jfn!(env, FindClass);
    // SAFETY: valid env; `name` is a NUL-terminated JNI class name.
    let local = unsafe { find(env, name.as_ptr()) };
    raised(env, &format!("FindClass({})", name.to_string_lossy()))?;
    if local.is_null() {
        return Err(format!("class {} not found", name.to_string_lossy()));
    }
    let global = new_global_ref(env, local);
    delete_local_ref(env, local);
    global.ok_or_else(|| format!("no global reference to {}", name.to_string_lossy()))
}

/// The static method `name` of `class` with JNI signature `sig`.
pub fn static_method(env: *mut JNIEnv, class: jclass, name: &CStr, sig: &CStr) -> Result<jmethodID, String> {
    let get = jfn!(env, GetStaticMethodID);
    // SAFETY: valid env and class reference; the strings are NUL-terminated.
    let m = unsafe { get(env, class, name.as_ptr(), sig.as_ptr()) };
    raised(env, &format!("GetStaticMethodID({})", name.to_string_lossy()))?;
    if m.is_null() {
        return Err(format!("no static method {}{}", name.to_string_lossy(), sig.to_string_lossy()));
    }
    Ok(m)
}

/// The static field `name` of `class` with JNI signature `sig`.
pub fn static_field(env: *mut JNIEnv, class: jclass, name: &CStr, sig: &CStr) -> Result<jfieldID, String> {
    let get = jfn!(env, GetStaticFieldID);
    // SAFETY: valid env and class reference; the strings are NUL-terminated.
    let id = unsafe { get(env, class, name.as_ptr(), sig.as_ptr()) };
    raised(env, &format!("GetStaticFieldID({})", name.to_string_lossy()))?;
    if id.is_null() {
        return Err(format!("no static field {} {}", name.to_string_lossy(), sig.to_string_lossy()));
    }
    Ok(id)
}

/// Sets the static `boolean` field `field` of `class`.
pub fn set_static_boolean(env: *mut JNIEnv, class: jclass, field: jfieldID, value: bool) -> Result<(), String> {
    let set = jfn!(env, SetStaticBooleanField);
    // SAFETY: `field` is a static boolean field of `class` (from `static_field` with "Z").
    unsafe { set(env, class, field, value as jboolean) };
    raised(env, "SetStaticBooleanField")
}

/// Registers `natives` (name, JNI signature, function) as native methods of `class`.
pub fn register_natives(
    env: *mut JNIEnv,
    class: jclass,
    natives: &[(&CStr, &CStr, *mut c_void)],
) -> Result<(), String> {
    let register = jfn!(env, RegisterNatives);
    let methods: Vec<JNINativeMethod> = natives
        .iter()
        .map(|(name, sig, f)| JNINativeMethod {
            name: name.as_ptr() as *mut _,
            signature: sig.as_ptr() as *mut _,
            fnPtr: *f,
        })
        .collect();
    // SAFETY: valid env and class; `methods` and the strings it points at outlive the call, and
    // each function has the signature it is registered with (the caller's contract).
    let rc = unsafe { register(env, class, methods.as_ptr(), methods.len() as jint) };
    raised(env, "RegisterNatives")?;
    if rc != JNI_OK {
        return Err(format!("RegisterNatives returned {rc}"));
    }
    Ok(())
}

/// Calls the static `void` method `method` of `class` with `args`.
pub fn call_static_void(env: *mut JNIEnv, class: jclass, method: jmethodID, args: &[jvalue]) -> Result<(), String> {
    let call = jfn!(env, CallStaticVoidMethodA);
    // SAFETY: `method` is a static void method of `class` whose parameters `args` match.
    unsafe { call(env, class, method, args.as_ptr()) };
    raised(env, "the call")
}

/// Calls the static method `method` of `class` that returns an object (a local reference,
/// maybe null).
pub fn call_static_object(
    env: *mut JNIEnv,
    class: jclass,
    method: jmethodID,
    args: &[jvalue],
) -> Result<jobject, String> {
    let call = jfn!(env, CallStaticObjectMethodA);
    // SAFETY: `method` is a static method of `class` returning an object, whose parameters
    // `args` match.
    let r = unsafe { call(env, class, method, args.as_ptr()) };
    raised(env, "the call")?;
    Ok(r)
}

/// A new `byte[]` holding `bytes` (a local reference).
pub fn new_byte_array(env: *mut JNIEnv, bytes: &[u8]) -> Result<jbyteArray, String> {
    let len = jsize::try_from(bytes.len()).map_err(|_| "a byte array longer than 2 GiB")?;
    let new = jfn!(env, NewByteArray);
    let set = jfn!(env, SetByteArrayRegion);
    // SAFETY: valid env.
    let array = unsafe { new(env, len) };
    raised(env, "NewByteArray")?;
    if array.is_null() {
        return Err("NewByteArray returned null".into());
    }
    // SAFETY: `array` has `len` elements and `bytes` is readable for as many.
    unsafe { set(env, array, 0, len, bytes.as_ptr() as *const jbyte) };
    if let Err(e) = raised(env, "SetByteArrayRegion") {
        delete_local_ref(env, array);
        return Err(e);
    }
    Ok(array)
}

/// The length of the `byte[]` `array`.
pub fn array_len(env: *mut JNIEnv, array: jbyteArray) -> Result<usize, String> {
    let len = jfn!(env, GetArrayLength);
    // SAFETY: `array` is a live, non-null array reference.
    let n = unsafe { len(env, array) };
    raised(env, "GetArrayLength")?;
    Ok(n.max(0) as usize)
}

/// Copies the first `out.len()` bytes of `array` (which has at least as many) into `out`.
pub fn copy_byte_array(env: *mut JNIEnv, array: jbyteArray, out: &mut [u8]) -> Result<(), String> {
    let len = jsize::try_from(out.len()).map_err(|_| "a byte array longer than 2 GiB")?;
    let get = jfn!(env, GetByteArrayRegion);
    // SAFETY: `out` has room for `len` bytes; a shorter array raises, checked below.
    unsafe { get(env, array, 0, len, out.as_mut_ptr() as *mut jbyte) };
    raised(env, "GetByteArrayRegion")
}

/// A Java string from modified UTF-8 as the JVM gives it (a class's name in a JVMTI event).
pub fn new_string_modified_utf8(env: *mut JNIEnv, s: &CStr) -> Result<jstring, String> {
    let new = jfn!(env, NewStringUTF);
    // SAFETY: valid env; `s` is NUL-terminated modified UTF-8.
    let r = unsafe { new(env, s.as_ptr()) };
    raised(env, "NewStringUTF")?;
    Ok(r)
}

/// Whether a Java exception is pending on this thread (true when that cannot be told).
pub fn exception_pending(env: *mut JNIEnv) -> bool {
    pending_exception(env).unwrap_or(true)
}
