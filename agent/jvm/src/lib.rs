//! libhpm.so — the JVMTI agent. Only JVM and kernel glue and the option grammar live here;
//! the profile model, formats and analyses are in `hpm-profile`, what runs in a signal handler
//! in `hpm-capture`, the resolving of captured records in `hpm-resolve`.
//!
//! Modules, from the leaves up (no module imports one above it; docs/design.md has the picture):
//! - leaves: `options` (the option grammar, JVM-free; public for fuzz/), `os` (clocks, thread
//!   id, checked reads of our own memory), `jnienv` (every JNI call), `jvmti` (every JVMTI
//!   call), `perf` (every perf syscall), `vmstructs` (every read of HotSpot's own structures:
//!   VMStructs, and the stack walker's reads in the signal);
//! - `threads` (slots, fd table, registry), `signal` (the handler), `code` (code and GC events),
//!   `live` (the bridge's marks and queries), `methods` (names and lines for the processor);
//! - `sampler` (one module per sampler behind one trait), `processor`, `session`, `control`;
//! - `agent` (the one global), `callbacks` and `lifecycle` (the JVMTI trampolines and the
//!   agent's life), `bridge` (the Java bridge's natives), and the entry points below.
//!
//! Entry points catch every panic: nothing unwinds into the JVM.

mod agent;
mod bridge;
mod callbacks;
mod code;
mod complete;
mod control;
mod feed;
mod heap;
mod jnienv;
mod jvmti;
mod lifecycle;
mod live;
mod methods;
mod native_tables;
pub mod options;
mod os;
mod perf;
mod processor;
mod session;
mod signal;
mod sink;
mod source;
mod stack_source;
mod threads;
mod vmstructs;

use std::ffi::{c_char, c_void, CStr};
use std::panic::catch_unwind;

use jni::sys::{jint, JavaVM, JNI_ERR, JNI_OK};

/// The agent's allocations are counted (heap.rs), for `status` and the soak test.
#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

fn options_text(options: *const c_char) -> String {
    if options.is_null() {
        String::new()
    } else {
        // SAFETY: the JVM passes the NUL-terminated text after `=` in -agentpath.
        unsafe { CStr::from_ptr(options) }.to_string_lossy().into_owned()
    }
}

/// Whether this copy of libhpm.so runs as the JVM's agent: a second copy loaded into the same
/// JVM (another file) asks the first by this symbol and refuses to set itself up beside it.
#[no_mangle]
pub extern "C" fn hpm_agent_running() -> bool {
    agent::get().is_some()
}

/// `-agentpath:libhpm.so=OPTIONS`: set up; on a bad option or an unusable perf setup, print
/// one line and make the JVM refuse to start.
#[no_mangle]
pub extern "C" fn Agent_OnLoad(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    let text = options_text(options);
    match catch_unwind(|| lifecycle::on_load(vm, &text)) {
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

/// `hpm attach PID [COMMAND]` (the JVM's attach mechanism, `load` command): sets the agent up
/// in the running VM if this is the first attach, then runs COMMAND (see `control`; no command
/// or bare options mean `start`). Loading the same library again calls this again, so later
/// attaches run their command against the same agent. The text answer goes to the file named by
/// a `reply=PATH` item (which `hpm attach` adds and reads; created new, never through a link or
/// over an existing file), else to the JVM's stderr. Returns 0, or JNI_ERR when the command
/// failed.
#[no_mangle]
pub extern "C" fn Agent_OnAttach(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    let text = options_text(options);
    let (command, reply) = split_reply(&text);
    let (code, message) = lifecycle::on_attach(vm, &command);
    let delivered = reply.is_some_and(|path| {
        catch_unwind(|| {
            use std::io::Write;
            hpm_profile::outfile::create_new(path)
                .ok()
                .is_some_and(|mut f| f.write_all(format!("{}\n", message.trim_end()).as_bytes()).is_ok())
        })
        .unwrap_or(false)
    });
    if !delivered {
        eprintln!("hpm: {}", message.trim_end());
    }
    code
}

/// Splits the `reply=PATH` item (added by `hpm attach`) from the command.
fn split_reply(text: &str) -> (String, Option<&str>) {
    let mut reply = None;
    let mut items = Vec::new();
    for item in text.split(',') {
        match item.trim().strip_prefix("reply=") {
            Some(p) if !p.is_empty() => reply = Some(p),
            _ => items.push(item),
        }
    }
    (items.join(","), reply)
}

#[no_mangle]
pub extern "C" fn Agent_OnUnload(_vm: *mut JavaVM) {}

/// `System.load` of libhpm.so from the Java bridge (`io.github.hpm.Hpm`): start the agent in
/// the live phase unless it already runs (-agentpath, or an earlier load).
#[no_mangle]
pub extern "system" fn JNI_OnLoad(vm: *mut JavaVM, _reserved: *mut c_void) -> jint {
    bridge::on_jni_load(vm);
    jni::sys::JNI_VERSION_1_8
}
