//! The agent's life in the JVM, in one place: load (`-agentpath`: Agent_OnLoad), attach
//! (`hpm attach`: Agent_OnAttach; the Java bridge: JNI_OnLoad), VMInit and VMDeath. It sets up
//! the global agent, its JVMTI capabilities and callbacks, and hands sessions to `control`.

use std::ffi::{c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::options;
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
        return Err(format!("another copy of the hpm agent runs in this JVM ({other}); give -agentpath once"));
    }
    let jvmti =
        Jvmti::from_vm(vm).map_err(|rc| format!("the JVM offers no JVMTI 1.2 environment (GetEnv returned {rc})"))?;
    let plan = session::plan(&jvmti, option_string)?;
    jvmti.add_capabilities(&CAPABILITIES).map_err(|e| e.to_string())?;
    add_event_capabilities(&jvmti);
    let agent =
        agent::install(jvmti, Vm::new(vm)).map_err(|_| "the agent is already loaded in this JVM".to_string())?;
    register(agent).map_err(|e| e.to_string())?;
    if plan.opts.cpu && plan.opts.sampler == crate::options::SamplerKind::Wall {
        // How many virtual threads wait unmounted: counted from the start, or not at all.
        callbacks::count_virtual_threads(&agent.jvmti, &agent.threads);
    }
    if plan.traits.code_at_load {
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
/// What a late start cannot see: samples before it (threads that started earlier are named by
/// the kernel ids their `JavaThread`s hold, else by OS name: `source::java_threads`). Code
/// compiled earlier is replayed by GenerateEvents when the first signal-sampler session starts.
pub fn init_live(vm: *mut JavaVM) -> Result<&'static Agent, String> {
    if let Some(a) = agent::get() {
        return Ok(a);
    }
    // Another copy of libhpm.so (another path, another build) would profile beside this one:
    // two signal handlers, two sessions and a `status` that knows neither.
    if let Some(other) = other_agent() {
        return Err(format!(
            "another copy of the hpm agent runs in this JVM ({other}{}); use that one: `hpm attach --lib {other} PID \
             ...`, or for the Java bridge -Dhpm.agent.path={other}",
            gone_note(&other)
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
    crate::vmstructs::prepare_continuations();
    Ok(agent)
}

/// The capabilities of `alloc` and `lock` (HotSpot grants them at load and in the live phase;
/// tags name the classes of allocation samples: see `source::jvmevents::class_name`).
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

/// Loaded objects looked at, at most, for another copy of the agent.
const MAX_OBJECTS: usize = 4096;

/// The path of another copy of libhpm.so (another file: another build, a renamed copy) that
/// runs as the agent in this process, if any: each copy has its own globals, so without this
/// check each would set itself up as the agent. The loaded objects are listed by the dynamic
/// loader (`dl_iterate_phdr`) and asked by the names it keeps for them, so `dlopen` with
/// `RTLD_NOLOAD` finds each among those loaded and opens no file; a copy that is loaded but
/// does not run (it refused, or a failed attach left it) does not count.
fn other_agent() -> Option<String> {
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: `collect_name` matches dl_iterate_phdr's callback type and only reads the
    // `dl_phdr_info` it is handed, during the call; `data` is `names`, alive and not otherwise
    // used until dl_iterate_phdr returns.
    unsafe { libc::dl_iterate_phdr(Some(collect_name), (&mut names as *mut Vec<CString>).cast()) };
    let own = crate::hpm_agent_running as extern "C" fn() -> bool as usize;
    names.iter().find(|n| other_copy_runs(n, own)).map(|n| n.to_string_lossy().into_owned())
}

/// dl_iterate_phdr's callback: copies each loaded object's name (the main program's is empty)
/// into the `Vec<CString>` at `data`, up to [`MAX_OBJECTS`].
unsafe extern "C" fn collect_name(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: dl_iterate_phdr passes a valid `info` for the call's length and `data` as
        // given by `other_agent`: its `Vec<CString>`, used by nothing else meanwhile.
        let (name, names) = unsafe { ((*info).dlpi_name, &mut *data.cast::<Vec<CString>>()) };
        if !name.is_null() && names.len() < MAX_OBJECTS {
            // SAFETY: a non-null `dlpi_name` is a NUL-terminated string the loader keeps.
            let name = unsafe { CStr::from_ptr(name) };
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
    }));
    0
}

/// Whether the loaded object `name` (as the loader names it) is another copy of this library
/// that runs as the agent: it exports [`crate::hpm_agent_running`], at another address than
/// this copy's (`own`), and that says so.
fn other_copy_runs(name: &CStr, own: usize) -> bool {
    // SAFETY: `name` is a name the loader keeps for a loaded object, so RTLD_NOLOAD finds it
    // among those loaded (taking a reference, released below) and neither opens a file nor
    // runs anything.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return false;
    }
    // SAFETY: `handle` is the live handle from dlopen above; the symbol name is NUL-terminated.
    let sym = unsafe { libc::dlsym(handle, c"hpm_agent_running".as_ptr()) };
    let runs = !sym.is_null() && sym as usize != own && {
        // SAFETY: an object exporting `hpm_agent_running` is a copy of this library, where it
        // is `extern "C" fn() -> bool` (lib.rs): it reads that copy's global, never panics,
        // and the copy stays loaded while the reference taken above is held.
        let f: extern "C" fn() -> bool = unsafe { std::mem::transmute(sym) };
        f()
    };
    // SAFETY: releases the reference dlopen took; the object stays loaded for its other users.
    unsafe { libc::dlclose(handle) };
    runs
}

/// The refusal's words for another copy's `path`: whether its file is still there to be named.
fn gone_note(path: &str) -> &'static str {
    if std::path::Path::new(path).exists() {
        ""
    } else {
        ", whose file was deleted since: restart the JVM to profile with another copy"
    }
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
        // Before any session's handler walks: virtual threads' continuations are crossed.
        crate::vmstructs::prepare_continuations();
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
