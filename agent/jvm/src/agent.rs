//! The agent's state — the one global, set once in Agent_OnLoad — and its start-up: option
//! checks, the perf probe with its hardware fallback, JVMTI capabilities and events.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use hpm_core::batch::BatchQueues;
use hpm_core::capture::Captured;
use hpm_core::codemap::CodeEvent;
use hpm_core::model::{EventInfo, PeriodUnit};
use hpm_core::options::{self, EventDef, Options, OutputFormat, Sampler};
use jni::sys::{JNIEnv, JavaVM, JNI_OK, JNI_VERSION_1_6};

use crate::callbacks;
use crate::jvmti::{cap, event, Jvmti};
use crate::perf::{self, PerfSpec};
use crate::processor::ProcessorHandle;
use crate::signal::{self, AsgctFn, SignalStats};
use crate::threads::Threads;

pub struct Agent {
    pub jvmti: Jvmti,
    vm: *mut JavaVM,
    pub opts: Options,
    /// The event actually sampled (after any fallback) and how.
    pub event: EventInfo,
    pub counter_names: Vec<String>,
    pub threads: Threads,
    pub queues: BatchQueues<Captured>,
    pub asgct: Option<AsgctFn>,
    pub max_depth: u32,
    pub signal_stats: SignalStats,
    /// Code-map events from JVMTI callbacks, applied by the processor in time order.
    pub code_events: Mutex<Vec<CodeEvent>>,
    /// (is_start, time) of garbage collections.
    pub gc_events: Mutex<Vec<(bool, u64)>>,
    pub classes_loaded: AtomicU64,
    pub processor: Mutex<Option<ProcessorHandle>>,
    pub finished: AtomicBool,
    pub start_wall_ns: u64,
    pub start_ticks: u64,
    /// Output paths with `%p`/`%t` expanded.
    pub outputs: Vec<(String, OutputFormat)>,
}

// SAFETY: `vm` is the process-wide JavaVM, valid for the life of the process and usable from
// any thread; everything else is Sync on its own.
unsafe impl Sync for Agent {}
// SAFETY: as above.
unsafe impl Send for Agent {}

static AGENT: OnceLock<Agent> = OnceLock::new();

/// The agent, once Agent_OnLoad has set it up. Signal-safe: one atomic load.
pub fn get() -> Option<&'static Agent> {
    AGENT.get()
}

pub const SAMPLE_SIGNAL: i32 = libc::SIGPROF;

impl Agent {
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
}

pub fn now_ticks() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn now_wall_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Agent_OnLoad's work. `Err` is the one line to print before refusing to start.
pub fn on_load(vm: *mut JavaVM, option_string: &str) -> Result<(), String> {
    let opts = options::parse(option_string).map_err(|e| e.to_string())?;
    if opts.help {
        print!("{}", options::help_text());
        std::process::exit(0);
    }
    if opts.sampler != Sampler::Asgct {
        return Err(format!(
            "sampler={} needs the patched JVM's extension functions, which this JVM does not offer; use sampler=asgct",
            opts.sampler.name()
        ));
    }
    let pid = std::process::id();
    let start_wall_ns = now_wall_ns();
    let mut outputs = Vec::new();
    for f in opts.outputs() {
        let path = f.path(pid, start_wall_ns / 1_000_000_000);
        std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| format!("cannot write file={path}: {e}; give a path in a writable directory"))?;
        outputs.push((path, f.format));
    }

    let (spec, event, notes) = choose_events(&opts)?;
    let jvmti = Jvmti::from_vm(vm).map_err(|rc| format!("the JVM offers no JVMTI 1.2 environment (GetEnv returned {rc})"))?;
    jvmti
        .add_capabilities(&[
            cap::GET_SOURCE_FILE_NAME,
            cap::GET_LINE_NUMBERS,
            cap::GENERATE_COMPILED_METHOD_LOAD_EVENTS,
            cap::GENERATE_GARBAGE_COLLECTION_EVENTS,
        ])
        .map_err(|e| e.to_string())?;
    let asgct = signal::find_asgct();
    signal::install(SAMPLE_SIGNAL).map_err(|e| format!("cannot install the SIGPROF handler: {e}"))?;

    let counter_names = spec.counters.iter().map(|c| c.name.to_string()).collect();
    let agent = Agent {
        jvmti,
        vm,
        max_depth: opts.max_depth.min(hpm_core::capture::MAX_FRAMES as u32),
        event,
        counter_names,
        threads: Threads::new(spec, SAMPLE_SIGNAL),
        queues: BatchQueues::new(128, 4096),
        asgct,
        signal_stats: SignalStats::default(),
        code_events: Mutex::new(Vec::new()),
        gc_events: Mutex::new(Vec::new()),
        classes_loaded: AtomicU64::new(0),
        processor: Mutex::new(None),
        finished: AtomicBool::new(false),
        start_wall_ns,
        start_ticks: now_ticks(),
        outputs,
        opts,
    };
    for n in notes {
        eprintln!("hpm: {n}");
    }
    if agent.asgct.is_none() {
        eprintln!("hpm: this JVM does not export AsyncGetCallTrace; samples will carry native frames only");
    }
    if AGENT.set(agent).is_err() {
        return Err("the agent is already loaded in this JVM".into());
    }
    let agent = get().expect("just set");
    callbacks::register(agent).map_err(|e| e.to_string())?;
    Ok(())
}

/// Probes perf for the requested event and counters. A hardware event on a machine without a
/// PMU falls back to cpu-clock (sampling) or is left out (counters), with one line each;
/// permission problems are errors that say which sysctl value is needed.
fn choose_events(opts: &Options) -> Result<(PerfSpec, EventInfo, Vec<String>), String> {
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
                period = match opts.interval {
                    options::Interval::Fixed(_) | options::Interval::Auto => event.default_period,
                };
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

/// VMInit: make jmethodIDs for classes loaded so far, replay code already generated, start
/// the processor, and attach the threads that exist.
pub fn on_vm_init(agent: &'static Agent, jni: *mut JNIEnv, thread: crate::jvmti::jthread) {
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
    callbacks::attach_java_thread(agent, jni, thread);
    match crate::processor::start(agent) {
        Ok(h) => *agent.processor.lock().unwrap_or_else(|p| p.into_inner()) = Some(h),
        Err(e) => eprintln!("hpm: cannot start the processing thread: {e}; no profile will be written"),
    }
    agent.threads.scan(&agent.queues);
    if let Some(e) = agent.threads.first_error() {
        eprintln!("hpm: {e}");
    }
}

/// VMDeath: stop sampling, process what is left, write the outputs and the summary.
pub fn on_vm_death(agent: &'static Agent) {
    if agent.finished.swap(true, Ordering::AcqRel) {
        return;
    }
    let handle = agent.processor.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(h) = handle {
        crate::processor::finish(agent, h);
    }
}
