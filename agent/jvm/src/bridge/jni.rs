//! The bridge's only raw JNI calls: strings and arrays in and out, and throwing
//! `io.github.hpm.HpmException`. Each helper checks for a pending Java exception and returns
//! `Err` with a message instead of continuing.

use std::ffi::CString;

use jni::sys::{jint, jlong, jlongArray, jobjectArray, jsize, jstring, JNIEnv, JNI_TRUE};

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
