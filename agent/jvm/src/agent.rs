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
use crate::timer_sampler::{self, Sps, TimerHandle};

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
    /// The patched JVM's partial-safepoint sampler (`sampler=sps`).
    pub sps: Option<Sps>,
    /// The timer sampling thread (`sampler=jvmti` / `sps`).
    pub timer: Mutex<Option<TimerHandle>>,
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

    let jvmti = Jvmti::from_vm(vm).map_err(|rc| format!("the JVM offers no JVMTI 1.2 environment (GetEnv returned {rc})"))?;
    let sps = match opts.sampler {
        Sampler::Sps => Some(timer_sampler::find_sps(&jvmti)?),
        _ => None,
    };
    let (spec, event, notes) = if opts.sampler == Sampler::Asgct {
        choose_events(&opts)?
    } else {
        // Timer samplers: no perf groups; the "event" is the sampling clock.
        let info = EventInfo {
            name: "timer".into(),
            requested: "timer".into(),
            period: opts.period(),
            unit: PeriodUnit::Nanoseconds,
            fallback: None,
            sampler: opts.sampler.name().to_string(),
        };
        (PerfSpec::new(opts.event, opts.period(), Vec::new()), info, Vec::new())
    };
    jvmti
        .add_capabilities(&[
            cap::GET_SOURCE_FILE_NAME,
            cap::GET_LINE_NUMBERS,
            cap::GENERATE_COMPILED_METHOD_LOAD_EVENTS,
            cap::GENERATE_GARBAGE_COLLECTION_EVENTS,
        ])
        .map_err(|e| e.to_string())?;
    let asgct = signal::find_asgct();
    let perf = opts.sampler == Sampler::Asgct;
    if perf {
        signal::install(SAMPLE_SIGNAL).map_err(|e| format!("cannot install the SIGPROF handler: {e}"))?;
    }

    let counter_names = spec.counters.iter().map(|c| c.name.to_string()).collect();
    let agent = Agent {
        jvmti,
        vm,
        max_depth: opts.max_depth.min(hpm_core::capture::MAX_FRAMES as u32),
        event,
        counter_names,
        threads: Threads::new(spec, SAMPLE_SIGNAL, perf),
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
        sps,
        timer: Mutex::new(None),
        opts,
    };
    for n in notes {
        eprintln!("hpm: {n}");
    }
    if agent.asgct.is_none() && perf {
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
    if agent.opts.sampler != Sampler::Asgct {
        match timer_sampler::start(agent, agent.sps) {
            Ok(h) => *agent.timer.lock().unwrap_or_else(|p| p.into_inner()) = Some(h),
            Err(e) => eprintln!("hpm: cannot start the sampling thread: {e}; no samples will be taken"),
        }
    }
}

/// VMDeath: stop sampling, process what is left, write the outputs and the summary.
pub fn on_vm_death(agent: &'static Agent) {
    if agent.finished.swap(true, Ordering::AcqRel) {
        return;
    }
    let timer = agent.timer.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(t) = timer {
        let mut lat = t.stop();
        if !agent.opts.quiet && !lat.is_empty() {
            lat.sort_unstable();
            let q = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize] as f64 / 1000.0;
            eprintln!(
                "hpm: sampler={}: {} stacks, latency per sample median {:.1} us, p95 {:.1} us, max {:.1} us",
                agent.opts.sampler.name(),
                lat.len(),
                q(0.5),
                q(0.95),
                q(1.0)
            );
        }
    }
    let handle = agent.processor.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(h) = handle {
        crate::processor::finish(agent, h);
    }
}
