//! The agent's JVM-level state — the one global, set once by Agent_OnLoad (-agentpath),
//! Agent_OnAttach (`hpm attach`) or the Java bridge's JNI_OnLoad — and its start-up: JVMTI
//! capabilities and events, the perf probe with its hardware fallback. Per-run state (options,
//! event, outputs, processor, timer) is a `Session` (session.rs).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use hpm_core::batch::BatchQueues;
use hpm_core::capture::Captured;
use hpm_core::codemap::CodeEvent;
use hpm_core::model::{EventInfo, PeriodUnit};
use hpm_core::options::{self, EventDef, Options, Sampler};
use jni::sys::{JNIEnv, JavaVM, JNI_OK, JNI_VERSION_1_6};

use crate::callbacks;
use crate::jvmti::{cap, event, Jvmti};
use crate::perf::{self, PerfSpec};
use crate::session::{self, Session};
use crate::signal::{self, AsgctFn, SignalStats};
use crate::threads::Threads;

pub struct Agent {
    pub jvmti: Jvmti,
    vm: *mut JavaVM,
    pub threads: Threads,
    pub queues: BatchQueues<Captured>,
    pub asgct: Option<AsgctFn>,
    pub signal_stats: SignalStats,
    /// Code-map events from JVMTI callbacks, applied by the processor in time order.
    pub code_events: Mutex<Vec<CodeEvent>>,
    /// (is_start, time) of garbage collections.
    pub gc_events: Mutex<Vec<(bool, u64)>>,
    pub classes_loaded: AtomicU64,
    /// The session sampling now or last (null before the first): the signal handler reads its
    /// record layout. Sessions are leaked, so the pointer never dangles.
    current: AtomicPtr<Session>,
    /// Serialises start/stop/dump/status, and holds whether a session is running.
    pub control: Mutex<Control>,
    signal_installed: AtomicBool,
    /// The code-map events are on (callbacks::enable_code_map): from load for a signal-sampler
    /// session, else from the first one started later.
    code_map: Mutex<bool>,
    /// The VM is dying: no session may start.
    pub dead: AtomicBool,
    /// The Java bridge's regions, phase markers and live-profile queries.
    pub live: crate::bridge::live::Live,
}

/// What the control lock guards.
#[derive(Default)]
pub struct Control {
    /// The running session, if any.
    pub running: Option<&'static Session>,
    /// `-agentpath`: the session planned at load, started at VMInit.
    pub pending: Option<&'static Session>,
    /// The last stopped session's profile, for `dump` after `stop`.
    pub last: Option<crate::processor::Finished>,
}

// SAFETY: `vm` is the process-wide JavaVM, valid for the life of the process and usable from
// any thread; everything else is Sync on its own.
unsafe impl Sync for Agent {}
// SAFETY: as above.
unsafe impl Send for Agent {}

static AGENT: OnceLock<Agent> = OnceLock::new();

/// The agent, once Agent_OnLoad / Agent_OnAttach / JNI_OnLoad has set it up. Signal-safe: one
/// atomic load.
pub fn get() -> Option<&'static Agent> {
    AGENT.get()
}

pub const SAMPLE_SIGNAL: i32 = libc::SIGPROF;

impl Agent {
    fn new(jvmti: Jvmti, vm: *mut JavaVM) -> Agent {
        Agent {
            jvmti,
            vm,
            threads: Threads::new(SAMPLE_SIGNAL),
            queues: BatchQueues::new(128, 4096),
            asgct: signal::find_asgct(),
            signal_stats: SignalStats::default(),
            code_events: Mutex::new(Vec::new()),
            gc_events: Mutex::new(Vec::new()),
            classes_loaded: AtomicU64::new(0),
            current: AtomicPtr::new(std::ptr::null_mut()),
            control: Mutex::new(Control::default()),
            signal_installed: AtomicBool::new(false),
            code_map: Mutex::new(false),
            dead: AtomicBool::new(false),
            live: Default::default(),
        }
    }

    /// This thread's JNIEnv if it is attached to the VM (AsyncGetCallTrace needs it). Called in
    /// the signal handler: HotSpot's GetEnv only reads the current thread, as async-profiler
    /// relies on too.
    pub fn current_jni_env(&self) -> Option<*mut JNIEnv> {
        let mut env: *mut c_void = std::ptr::null_mut();
        // SAFETY: `vm` is valid for the process's life; GetEnv is in the invoke interface.
        let rc = unsafe { ((**self.vm).GetEnv?)(self.vm, &mut env, JNI_VERSION_1_6) };
        (rc == JNI_OK && !env.is_null()).then_some(env as *mut JNIEnv)
    }

    pub fn vm(&self) -> *mut JavaVM {
        self.vm
    }

    /// The session sampling now or last. Signal-safe: one atomic load.
    pub fn current(&self) -> Option<&'static Session> {
        let p = self.current.load(Ordering::Acquire);
        // SAFETY: only leaked `&'static Session`s are stored (set_current).
        (!p.is_null()).then(|| unsafe { &*p })
    }

    pub fn set_current(&self, s: &'static Session) {
        self.current.store(s as *const Session as *mut Session, Ordering::Release);
    }

    /// Installs the SIGPROF handler once (at the first perf session).
    pub fn ensure_signal_handler(&self) -> Result<(), String> {
        if self.signal_installed.load(Ordering::Acquire) {
            return Ok(());
        }
        signal::install(SAMPLE_SIGNAL).map_err(|e| format!("cannot install the SIGPROF handler: {e}"))?;
        self.signal_installed.store(true, Ordering::Release);
        if self.asgct.is_none() {
            eprintln!("hpm: this JVM does not export AsyncGetCallTrace; samples will carry native frames only");
        }
        Ok(())
    }

    /// Zeroes the per-session counters (no thread is attached between sessions).
    pub fn reset_counters(&self) {
        self.signal_stats.reset();
        self.queues.dropped_no_free_batch.store(0, Ordering::Relaxed);
        self.queues.dropped_queue_full.store(0, Ordering::Relaxed);
        self.threads.reset_failures();
    }

    /// Turns the code-map events on once (the signal sampler names IPs with them). With
    /// `replay` (the live phase, on a thread attached to the VM) classes loaded and code compiled
    /// before are replayed, so the map is complete from here on; at load nothing exists yet and
    /// VMInit replays what start-up made (on_vm_init).
    pub fn ensure_code_map(&self, replay: bool) -> Result<(), String> {
        let mut on = crate::session::lock(&self.code_map);
        if *on {
            return Ok(());
        }
        let jni = if replay {
            Some(self.current_jni_env().ok_or("the calling thread is not attached to the JVM")?)
        } else {
            None
        };
        callbacks::enable_code_map(self).map_err(|e| format!("cannot enable the compiled-code events: {e}"))?;
        *on = true;
        if let Some(jni) = jni {
            load_existing(self, jni);
        }
        Ok(())
    }

    fn code_map_on(&self) -> bool {
        *crate::session::lock(&self.code_map)
    }

    pub fn lock_control(&self) -> std::sync::MutexGuard<'_, Control> {
        crate::session::lock(&self.control)
    }
}

pub fn now_ticks() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn now_wall_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Agent_OnLoad's work: check the options now (so a bad one stops the JVM), set up the agent
/// and plan the session that VMInit starts. `Err` is the one line to print before refusing to
/// start.
pub fn on_load(vm: *mut JavaVM, option_string: &str) -> Result<(), String> {
    if options::parse(option_string).map_err(|e| e.to_string())?.help {
        print!("{}", options::help_text());
        std::process::exit(0);
    }
    let jvmti =
        Jvmti::from_vm(vm).map_err(|rc| format!("the JVM offers no JVMTI 1.2 environment (GetEnv returned {rc})"))?;
    let plan = session::plan(&jvmti, option_string)?;
    jvmti.add_capabilities(&CAPABILITIES).map_err(|e| e.to_string())?;
    if AGENT.set(Agent::new(jvmti, vm)).is_err() {
        return Err("the agent is already loaded in this JVM".into());
    }
    let agent = get().expect("just set");
    callbacks::register(agent).map_err(|e| e.to_string())?;
    if plan.opts.sampler == Sampler::Asgct {
        agent.ensure_signal_handler()?;
        agent.ensure_code_map(false)?;
    }
    agent.lock_control().pending = Some(plan.into_session(agent));
    Ok(())
}

const CAPABILITIES: [u32; 4] = [
    cap::GET_SOURCE_FILE_NAME,
    cap::GET_LINE_NUMBERS,
    cap::GENERATE_COMPILED_METHOD_LOAD_EVENTS,
    cap::GENERATE_GARBAGE_COLLECTION_EVENTS,
];

/// Sets the agent up in a running VM (the live phase): from `Agent_OnAttach` (`hpm attach`)
/// and from the Java bridge's `JNI_OnLoad` (`System.load` of libhpm.so). Idempotent: returns
/// at once when the agent is already set up (by -agentpath or an earlier attach). Must run on
/// a thread attached to the VM. Starts no session: `control::execute("start,...")` does.
///
/// What a late start cannot see: samples before it, and threads' Java names for threads that
/// started earlier (they are found by the /proc scan under their OS names). Code compiled
/// earlier is replayed by GenerateEvents when the first signal-sampler session starts.
pub fn init_live(vm: *mut JavaVM) -> Result<&'static Agent, String> {
    if let Some(a) = get() {
        return Ok(a);
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
    let mut fresh = false;
    let agent = AGENT.get_or_init(|| {
        fresh = true;
        Agent::new(jvmti, vm)
    });
    if !fresh {
        return Ok(agent);
    }
    pin_library();
    callbacks::register(agent).map_err(|e| e.to_string())?;
    agent.current_jni_env().ok_or("the calling thread is not attached to the JVM")?;
    Ok(agent)
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

/// Makes jmethodIDs for classes loaded so far and replays code already generated.
fn load_existing(agent: &Agent, jni: *mut JNIEnv) {
    if let Ok(classes) = agent.jvmti.loaded_classes() {
        for c in classes {
            let _ = agent.jvmti.touch_class_methods(c);
            crate::jvmti::delete_local_ref(jni, c);
        }
    }
    for ev in [event::DYNAMIC_CODE_GENERATED, event::COMPILED_METHOD_LOAD] {
        if let Err(e) = agent.jvmti.generate_events(ev) {
            eprintln!("hpm: {e}: code compiled before start-up will show as unknown");
        }
    }
}

/// Probes perf for the requested event and counters. A hardware event on a machine without a
/// PMU falls back to cpu-clock (sampling) or is left out (counters), with one line each;
/// permission problems are errors that say which sysctl value is needed.
pub fn choose_events(opts: &Options) -> Result<(PerfSpec, EventInfo, Vec<String>), String> {
    let mut notes = Vec::new();
    let requested = opts.event;
    let mut event = opts.event;
    let mut period = opts.period();
    let mut counters: Vec<EventDef> = opts.counters.clone();
    let mut fallback = None;
    loop {
        let spec = PerfSpec::new(event, period, counters.clone());
        match perf::probe(&spec) {
            Ok(()) => {
                let info = EventInfo {
                    name: event.name.to_string(),
                    requested: requested.name.to_string(),
                    period,
                    unit: if event.is_clock { PeriodUnit::Nanoseconds } else { PeriodUnit::Events },
                    fallback,
                    sampler: opts.sampler.name().to_string(),
                };
                return Ok((spec, info, notes));
            }
            Err((_, e)) if e.is_permission() => return Err(e.to_string()),
            Err((ev, e)) if ev == event && ev.hardware && e.is_unsupported() && event != options::cpu_clock() => {
                let os = std::io::Error::from_raw_os_error(e.errno);
                event = options::cpu_clock();
                // A count for the hardware event means nothing to cpu-clock: its default period.
                period = event.default_period;
                let why = format!("no hardware PMU for {}: perf_event_open failed ({os})", ev.name);
                notes.push(format!("{why}; sampling cpu-clock every {}ms instead", period / 1_000_000));
                fallback = Some(why);
            }
            Err((ev, e)) if ev.hardware && e.is_unsupported() && counters.contains(&ev) => {
                let os = std::io::Error::from_raw_os_error(e.errno);
                notes.push(format!("counter {} is not available (no hardware PMU: {os}); it is not recorded", ev.name));
                counters.retain(|c| *c != ev);
            }
            Err((_, e)) => return Err(e.to_string()),
        }
    }
}

/// VMInit: for the code map, make jmethodIDs for classes loaded so far and replay code already
/// generated; then start the session planned at load.
pub fn on_vm_init(agent: &'static Agent, jni: *mut JNIEnv, thread: crate::jvmti::jthread) {
    if agent.code_map_on() {
        load_existing(agent, jni);
    }
    let mut control = agent.lock_control();
    if let Some(s) = control.pending.take() {
        match session::start(s) {
            Ok(()) => control.running = Some(s),
            Err(e) => eprintln!("hpm: {e}; no profile will be written"),
        }
    }
    drop(control);
    callbacks::attach_java_thread(agent, jni, thread);
}

/// VMDeath: stop the running session, process what is left, write the outputs and the summary.
pub fn on_vm_death(agent: &'static Agent) {
    agent.dead.store(true, Ordering::Release);
    let mut control = agent.lock_control();
    if let Some(s) = control.running.take() {
        if let Err(e) = session::stop(s, &[]) {
            eprintln!("hpm: {e}");
        }
        control.last = None;
    }
}
