//! A profiling session: one run of sampling with its own options, event, outputs, processor and
//! timer, started and stopped within one JVM (by -agentpath at VMInit/VMDeath, by `hpm attach`
//! and by the Java bridge through `control`). JVM-level state (JVMTI, callbacks, code events,
//! thread slots) stays in the `Agent`.
//!
//! Sessions are leaked (a few hundred bytes each, a handful per JVM): the signal handler and the
//! sampling threads hold `&'static Session`, and a handler interrupted at the wrong moment may
//! still read the previous one.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use hpm_core::model::{EventInfo, PeriodUnit, ThreadInfo};
use hpm_core::options::{self, Options, OutputFormat, Sampler};

use crate::agent::{now_ticks, now_wall_ns, Agent};
use crate::jvmti::Jvmti;
use crate::perf::PerfSpec;
use crate::processor::{Finished, ProcessorHandle};
use crate::timer_sampler::{self, Sps, TimerHandle};

/// What a session is configured with, checked before it starts (a bad option or an unusable
/// perf setup is an error here, so `-agentpath` can refuse to start the JVM).
pub struct Plan {
    pub opts: Options,
    pub event: EventInfo,
    pub spec: PerfSpec,
    pub sps: Option<Sps>,
    /// Lines to print once (fallbacks, counters left out).
    pub notes: Vec<String>,
    pub outputs: Vec<(String, OutputFormat)>,
    pub start_wall_ns: u64,
}

pub struct Session {
    pub agent: &'static Agent,
    pub opts: Options,
    /// The event actually sampled (after any fallback) and how.
    pub event: EventInfo,
    pub counter_names: Vec<String>,
    pub spec: PerfSpec,
    /// Threads get perf groups (sampler=asgct); the timer samplers need none.
    pub perf: bool,
    pub max_depth: u32,
    pub start_wall_ns: u64,
    pub start_ticks: u64,
    /// Output paths with `%p`/`%t` expanded.
    pub outputs: Vec<(String, OutputFormat)>,
    /// The patched JVM's partial-safepoint sampler (`sampler=sps`).
    pub sps: Option<Sps>,
    pub processor: Mutex<Option<ProcessorHandle>>,
    pub timer: Mutex<Option<TimerHandle>>,
    /// Samples the processor has resolved so far (for `status`).
    pub resolved: AtomicU64,
    pub stopped: AtomicBool,
}

/// The session's JVM-level state (JVMTI, threads, queues) is the agent's.
impl Deref for Session {
    type Target = Agent;
    fn deref(&self) -> &Agent {
        self.agent
    }
}

/// Parses and checks `option_string`: output files writable, perf events usable (with the
/// hardware fallback), the sps extension present when asked for.
pub fn plan(jvmti: &Jvmti, option_string: &str) -> Result<Plan, String> {
    let opts = options::parse(option_string).map_err(|e| e.to_string())?;
    let pid = std::process::id();
    let start_wall_ns = now_wall_ns();
    let outputs: Vec<_> =
        opts.outputs().iter().map(|f| (f.path(pid, start_wall_ns / 1_000_000_000), f.format)).collect();
    let sps = match opts.sampler {
        Sampler::Sps => Some(timer_sampler::find_sps(jvmti)?),
        _ => None,
    };
    let (spec, event, notes) = if opts.sampler == Sampler::Asgct {
        crate::agent::choose_events(&opts)?
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
    // Checked last (after the options and perf); nothing is created before the session starts.
    for (path, _) in &outputs {
        create_output(path)?;
    }
    Ok(Plan { opts, event, spec, sps, notes, outputs, start_wall_ns })
}

/// Checks that an output can be written (no file is created: a start refused for another
/// reason touches nothing); the file itself is made as `PATH.part` and renamed at the end.
pub fn create_output(path: &str) -> Result<(), String> {
    hpm_core::outfile::Target::check(path).map(|_| ()).map_err(|e| e.to_string())
}

impl Plan {
    pub fn into_session(self, agent: &'static Agent) -> &'static Session {
        for n in &self.notes {
            eprintln!("hpm: {n}");
        }
        let perf = self.opts.sampler == Sampler::Asgct;
        Box::leak(Box::new(Session {
            agent,
            max_depth: self.opts.max_depth.min(hpm_core::capture::MAX_FRAMES as u32),
            counter_names: self.spec.counters.iter().map(|c| c.name.to_string()).collect(),
            perf,
            event: self.event,
            spec: self.spec,
            start_wall_ns: self.start_wall_ns,
            start_ticks: now_ticks(),
            outputs: self.outputs,
            sps: self.sps,
            processor: Mutex::new(None),
            timer: Mutex::new(None),
            resolved: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            opts: self.opts,
        }))
    }
}

/// Starts sampling: threads get the session's perf spec, the processor starts, every existing
/// thread is attached (the /proc scan finds Java and VM threads alike), then the timer sampler.
/// The caller holds the agent's control lock.
pub fn start(s: &'static Session) -> Result<(), String> {
    let agent = s.agent;
    if s.perf {
        agent.ensure_signal_handler()?;
        // Sessions start at VMInit or later: what was loaded and compiled before is replayed.
        agent.ensure_code_map(true)?;
    }
    agent.reset_counters();
    agent.set_current(s);
    agent.threads.configure(Some((s.spec.clone(), s.perf)));
    match crate::processor::start(s) {
        Ok(h) => *lock(&s.processor) = Some(h),
        Err(e) => {
            agent.threads.configure(None);
            return Err(format!("cannot start the processing thread: {e}"));
        }
    }
    agent.threads.hint_java_threads(java_threads(agent));
    agent.threads.scan(&agent.queues);
    if let Some(e) = agent.threads.first_error() {
        eprintln!("hpm: {e}");
    }
    if s.opts.sampler != Sampler::Asgct {
        match timer_sampler::start(s, s.sps) {
            Ok(h) => *lock(&s.timer) = Some(h),
            Err(e) => eprintln!("hpm: cannot start the sampling thread: {e}; no samples will be taken"),
        }
    }
    Ok(())
}

/// Stops sampling, processes what is left and writes the outputs (plus `extra` files) and the
/// summary. Returns the files written and the profile (for dumps after stop). The caller holds
/// the agent's control lock.
pub fn stop(s: &'static Session, extra: &[(String, OutputFormat)]) -> Result<(Vec<String>, Finished), String> {
    if s.stopped.swap(true, Ordering::AcqRel) {
        return Err("the session was already stopped".into());
    }
    let timer = lock(&s.timer).take();
    if let Some(t) = timer {
        let lat = t.stop();
        if !s.opts.quiet && !lat.is_empty() {
            let us = |ns: u64| ns as f64 / 1000.0;
            eprintln!(
                "hpm: sampler={}: {} stacks, latency per sample median {:.1} us, p95 {:.1} us, max {:.1} us",
                s.opts.sampler.name(),
                lat.len(),
                us(lat.quantile(0.5)),
                us(lat.quantile(0.95)),
                us(lat.max())
            );
        }
    }
    let handle = lock(&s.processor).take();
    match handle {
        Some(h) => crate::processor::finish(s, h, extra),
        None => Err("the session had no processing thread; nothing to write".into()),
    }
}

/// The Java threads alive now, named as the VM knows them (for threads that started before a
/// late attach or before this session, which got no ThreadStart while it ran).
fn java_threads(agent: &Agent) -> Vec<ThreadInfo> {
    let (Some(jni), Ok(threads)) = (agent.current_jni_env(), agent.jvmti.all_threads()) else { return Vec::new() };
    let mut out = Vec::new();
    for t in threads {
        if let Ok(name) = agent.jvmti.thread_name(t) {
            out.push(ThreadInfo { os_tid: 0, java_id: crate::jvmti::java_thread_id(jni, t), name, is_java: true });
        }
        crate::jvmti::delete_local_ref(jni, t);
    }
    out
}

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
