//! The agent's life in the JVM, in one place: load (`-agentpath`: Agent_OnLoad), attach
//! (`hpm attach`: Agent_OnAttach; the Java bridge: JNI_OnLoad), VMInit and VMDeath. It sets up
//! the global agent, its JVMTI capabilities and callbacks, and hands sessions to `control`.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use hpm_core::options::{self, Sampler};
use jni::sys::{jint, JNIEnv, JavaVM, JNI_ERR, JNI_OK};

use crate::agent::{self, Agent};
use crate::callbacks;
use crate::jnienv::Vm;
use crate::jvmti::{cap, event, jthread, EventCallbacks, Jvmti, JvmtiEnvPtr};
use crate::{code, control, session};

const CAPABILITIES: [u32; 4] = [
    cap::GET_SOURCE_FILE_NAME,
    cap::GET_LINE_NUMBERS,
    cap::GENERATE_COMPILED_METHOD_LOAD_EVENTS,
    cap::GENERATE_GARBAGE_COLLECTION_EVENTS,
];

/// Agent_OnLoad's work: check the options now (so a bad one stops the JVM), set up the agent
/// and plan the session that VMInit starts. `Err` is the one line to print before refusing to
/// start.
pub fn on_load(vm: *mut JavaVM, option_string: &str) -> Result<(), String> {
    if options::parse(option_string).map_err(|e| e.to_string())?.help {
        print!("{}", options::help_text());
        std::process::exit(0);
    }
    if let Some(other) = other_agent() {
        return Err(format!("another copy of the hpm agent is loaded in this JVM ({other}); give -agentpath once"));
    }
    let jvmti =
        Jvmti::from_vm(vm).map_err(|rc| format!("the JVM offers no JVMTI 1.2 environment (GetEnv returned {rc})"))?;
    let plan = session::plan(&jvmti, option_string)?;
    jvmti.add_capabilities(&CAPABILITIES).map_err(|e| e.to_string())?;
    add_event_capabilities(&jvmti);
    let agent =
        agent::install(jvmti, Vm::new(vm)).map_err(|_| "the agent is already loaded in this JVM".to_string())?;
    register(agent).map_err(|e| e.to_string())?;
    if plan.opts.sampler == Sampler::Asgct {
        // The code-map events from the start; VMInit replays what start-up made before.
        agent.code.enable(&agent.jvmti, None).map_err(|e| format!("cannot enable the compiled-code events: {e}"))?;
    }
    agent.sessions.plan_at_load(plan);
    Ok(())
}

/// Agent_OnAttach's work (HotSpot's `load` attach command, `hpm attach`): set the agent up if
/// this is the first attach, then run the command (see `control`; none or bare options mean
/// `start`). Returns the JNI code and the answer text.
pub fn on_attach(vm: *mut JavaVM, command: &str) -> (jint, String) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let agent = init_live(vm)?;
        control::execute(&agent.sessions, agent.parts(), command)
    }))
    .unwrap_or_else(|_| Err("internal error while running the command; the JVM continues without it".into()));
    match result {
        Ok(m) => (JNI_OK, m),
        Err(e) => (JNI_ERR, format!("error: {e}")),
    }
}

/// Sets the agent up in a running VM (the live phase): from `Agent_OnAttach` (`hpm attach`)
/// and from the Java bridge's `JNI_OnLoad` (`System.load` of libhpm.so). Idempotent: returns
/// at once when the agent is already set up (by -agentpath or an earlier attach). Must run on
/// a thread attached to the VM. Starts no session: `control::execute("start,...")` does.
///
/// What a late start cannot see: samples before it, and threads' Java names for threads that
/// started earlier (they are found by the /proc scan under their OS names). Code compiled
/// earlier is replayed by GenerateEvents when the first signal-sampler session starts.
pub fn init_live(vm: *mut JavaVM) -> Result<&'static Agent, String> {
    if let Some(a) = agent::get() {
        return Ok(a);
    }
    // Another copy of libhpm.so (another path, another build) would profile beside this one:
    // two signal handlers, two sessions and a `status` that knows neither.
    if let Some(other) = other_agent() {
        return Err(format!(
            "another copy of the hpm agent runs in this JVM ({other}); use that one: `hpm attach --lib {other} PID ...`"
        ));
    }
    let jvmti =
        Jvmti::from_vm(vm).map_err(|rc| format!("the JVM offers no JVMTI 1.2 environment (GetEnv returned {rc})"))?;
    // In the live phase HotSpot grants only some capabilities; line numbers and compiled-code
    // events are always available, GC events may not be (then GC time is not marked).
    for c in CAPABILITIES {
        if let Err(e) = jvmti.add_capabilities(&[c]) {
            if c != cap::GENERATE_GARBAGE_COLLECTION_EVENTS {
                return Err(format!(
                    "{e}: this JVM does not grant the capability late; start it with -agentpath instead"
                ));
            }
            eprintln!(
                "hpm: {e}: no GC start/finish events after a late attach; the VM thread's GC work counts as VM runtime"
            );
        }
    }
    add_event_capabilities(&jvmti);
    let agent = match agent::install(jvmti, Vm::new(vm)) {
        Ok(a) => a,
        Err(existing) => return Ok(existing),
    };
    pin_library();
    register(agent).map_err(|e| e.to_string())?;
    agent.vm.env().ok_or("the calling thread is not attached to the JVM")?;
    agent.vm.learn_thread_key();
    Ok(agent)
}

/// The capabilities of `alloc` and `lock` (HotSpot grants them at load and in the live phase;
/// tags name the classes of allocation samples: see `sampler::jvmevents::class_name`).
/// Held from the start: neither costs anything until a session enables its events. A JVM that
/// refuses one makes the option fail with its own message when asked for.
fn add_event_capabilities(jvmti: &Jvmti) {
    for c in [cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS, cap::GENERATE_MONITOR_EVENTS, cap::TAG_OBJECTS] {
        let _ = jvmti.add_capabilities(&[c]);
    }
}

/// Keeps libhpm.so mapped for the life of the process: once callbacks and threads run its code,
/// the JVM must not unload it (some JDKs unload an attached agent whose Agent_OnAttach failed).
fn pin_library() {
    // SAFETY: dladdr on an address inside this library fills `info` with its path, valid while
    // the library is loaded; dlopen with RTLD_NOLOAD only takes another reference to it.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(pin_library as *const c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
        }
    }
}

/// The path of another copy of libhpm.so loaded in this process (one that exports
/// [`crate::hpm_agent_marker`] from another file than this library's), if any. Each copy has its
/// own globals, so without this check each would set itself up as the agent.
fn other_agent() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let own = own_path(&maps)?;
    let mut seen = std::collections::HashSet::new();
    // The sixth field of a file mapping is its path; `seen` keeps each library to one look.
    let paths = maps.lines().filter_map(|l| l.split_whitespace().nth(5)).filter(|p| p.starts_with('/'));
    for path in paths.filter(|p| *p != own && p.contains(".so")) {
        if seen.insert(path) && exports_marker(path) {
            return Some(path.to_string());
        }
    }
    None
}

/// This library's path as `maps` (/proc/self/maps) shows it: the mapping holding this function.
fn own_path(maps: &str) -> Option<&str> {
    let here = own_path as fn(&str) -> Option<&str> as usize as u64;
    maps.lines().find_map(|l| {
        let (range, rest) = l.split_once(' ')?;
        let (lo, hi) = range.split_once('-')?;
        let (lo, hi) = (u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?);
        (lo <= here && here < hi).then(|| rest.split_whitespace().nth(4)).flatten()
    })
}

/// Whether the loaded library at `path` exports hpm's marker (nothing is loaded: `RTLD_NOLOAD`).
fn exports_marker(path: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(path) else { return false };
    // SAFETY: `c` is a NUL-terminated path; RTLD_NOLOAD returns a handle only for a library
    // already loaded (taking a reference, released below) and never loads or runs anything.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return false;
    }
    // SAFETY: `handle` is the live handle from dlopen above; the name is NUL-terminated.
    let found = !unsafe { libc::dlsym(handle, c"hpm_agent_marker".as_ptr()) }.is_null();
    // SAFETY: releases the reference dlopen took; the library stays loaded for its other users.
    unsafe { libc::dlclose(handle) };
    found
}

/// Sets every callback (the lifecycle's own and callbacks.rs's) and enables the events that are
/// always on; the code-map events are turned on by `code::CodeEvents::enable` when needed.
fn register(agent: &Agent) -> Result<(), crate::jvmti::JvmtiError> {
    let mut cb = EventCallbacks::default();
    cb.set(event::VM_INIT, vm_init as *const c_void);
    cb.set(event::VM_DEATH, vm_death as *const c_void);
    callbacks::fill(&mut cb);
    agent.jvmti.set_event_callbacks(&cb)?;
    for ev in [event::VM_INIT, event::VM_DEATH].into_iter().chain(callbacks::ALWAYS_ON) {
        agent.jvmti.set_event(true, ev)?;
    }
    Ok(())
}

/// VMInit: for the code map, make jmethodIDs for classes loaded so far and replay code already
/// generated; then start the session planned at load, and attach the main thread.
unsafe extern "C" fn vm_init(_env: JvmtiEnvPtr, jni: *mut JNIEnv, thread: jthread) {
    let Some(a) = agent::get() else { return };
    let r = catch_unwind(AssertUnwindSafe(|| {
        if a.code.enabled() {
            code::replay(&a.jvmti, jni, &a.code);
        }
        a.sessions.start_pending(a.parts());
        callbacks::attach_java_thread(&a.jvmti, &a.threads, a.vm, jni, thread);
    }));
    if r.is_err() {
        eprintln!("hpm: internal error in the VMInit callback; continuing");
    }
}

/// VMDeath: stop the running session, process what is left, write the outputs and the summary.
unsafe extern "C" fn vm_death(_env: JvmtiEnvPtr, _jni: *mut JNIEnv) {
    let Some(a) = agent::get() else { return };
    if catch_unwind(AssertUnwindSafe(|| a.sessions.shutdown())).is_err() {
        eprintln!("hpm: internal error in the VMDeath callback; continuing");
    }
}
