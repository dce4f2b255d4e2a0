//! libhpm.so — the JVMTI agent. Only JVM and kernel glue lives here; the profile model,
//! formats and analyses are in `hpm-core`.
//!
//! Entry points catch every panic: nothing unwinds into the JVM.

mod agent;
mod callbacks;
mod control;
mod jvmti;
mod methods;
mod perf;
mod processor;
mod signal;
mod threads;
mod timer_sampler;

use std::ffi::{c_char, c_void, CStr};
use std::panic::catch_unwind;

use jni::sys::{jint, JavaVM, JNI_ERR, JNI_OK};

fn options_text(options: *const c_char) -> String {
    if options.is_null() {
        String::new()
    } else {
        // SAFETY: the JVM passes the NUL-terminated text after `=` in -agentpath.
        unsafe { CStr::from_ptr(options) }.to_string_lossy().into_owned()
    }
}

/// `-agentpath:libhpm.so=OPTIONS`: set up; on a bad option or an unusable perf setup, print
/// one line and make the JVM refuse to start.
#[no_mangle]
pub extern "C" fn Agent_OnLoad(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    let text = options_text(options);
    match catch_unwind(|| agent::on_load(vm, &text)) {
        Ok(Ok(())) => JNI_OK,
        Ok(Err(msg)) => {
            eprintln!("hpm: {msg}");
            JNI_ERR
        }
        Err(_) => {
            eprintln!("hpm: internal error while starting; the JVM will not start with the agent");
            JNI_ERR
        }
    }
}

#[no_mangle]
pub extern "C" fn Agent_OnUnload(_vm: *mut JavaVM) {}
