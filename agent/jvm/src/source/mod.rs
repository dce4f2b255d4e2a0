//! Samplers: each is one module behind [`Sampler`], built by the session with the narrow parts
//! it needs, writing `Captured` records into the session's sink, which the processor drains.
//! - `asgct`: perf overflow signals per thread, AsyncGetCallTrace in the handler (signal.rs);
//! - `timer`: a sampling thread on a timer: `jvmti` (GetThreadListStackTraces at a global
//!   safepoint) or `sps` (the patched JVM's partial safepoints);
//! - `chain`: perf samples with a copy of the top of the stack and no signal, drained and
//!   walked by the processor (CallerChaining).
//!
//! - `jvmevents`: not a sampler of threads but the JVM's own events with their stacks
//!   (`alloc`, `lock`), beside any of the above or alone ([`Idle`] then samples nothing).

use hpm_core::model::ThreadInfo;

use crate::jnienv::{self, Vm};
use crate::jvmti::Jvmti;

pub mod asgct;
pub mod chain;
pub mod extension;
pub mod isps;
pub mod jvmevents;
pub mod timer;

pub trait Sampler: Send + Sync {
    /// Starts sampling into the session's sink. The processor is already running.
    fn start(&self) -> Result<(), String>;
    /// Called by the processor after a round's wait: `round` counts 50 ms units since the
    /// session started (a round lasts 1 to 4 of them); `scan` asks to attach the threads that
    /// appeared (every 200 ms; see `Threads::scan_if_changed`).
    fn tick(&self, _round: u64, _scan: bool) {}
    /// `interval=auto` changed the period; returns how many threads kept the old one.
    fn set_period(&self, _period: u64) -> usize {
        0
    }
    /// Stops sampling: when this returns nothing writes into the sink any more. Returns lines
    /// for the summary.
    fn stop(&self) -> Vec<String>;
}

/// The Java threads alive now, named as the VM knows them (for threads that started before a
/// late attach or before this session, which got no ThreadStart while it ran), with their
/// kernel ids where the VM's structures tell them (`Thread.eetop`, then VMStructs; else 0).
pub fn java_threads(jvmti: &Jvmti, vm: Vm) -> Vec<ThreadInfo> {
    let (Some(jni), Ok(threads)) = (vm.env(), jvmti.all_threads()) else { return Vec::new() };
    let mut out = Vec::new();
    for t in threads {
        if let Ok(name) = jvmti.thread_name(t) {
            let ptr = jnienv::java_thread_ptr(jni, t);
            let os_tid = (ptr != 0).then(|| crate::vmstructs::java_thread_tid(ptr)).flatten().unwrap_or(0) as u32;
            out.push(ThreadInfo { os_tid, java_id: jnienv::java_thread_id(jni, t), name, is_java: true });
        }
        jnienv::delete_local_ref(jni, t);
    }
    out
}

/// What a perf sampler (`asgct`, `chain`) does at start: the code events on (what was loaded
/// and compiled before the session is replayed), a perf group per thread in `spec`'s mode, the
/// Java threads alive now named, the process's threads attached; the first failure said.
pub fn start_perf_groups(
    threads: &crate::threads::Threads,
    code: &crate::code::CodeEvents,
    jvmti: &Jvmti,
    vm: Vm,
    spec: &crate::perf::PerfSpec,
    ctx: &std::sync::Arc<crate::sink::SignalCtx>,
) -> Result<(), String> {
    let jni = vm.env().ok_or("the calling thread is not attached to the JVM")?;
    code.enable(jvmti, Some(jni)).map_err(|e| format!("cannot enable the compiled-code events: {e}"))?;
    threads.begin(crate::threads::Mode::Perf { spec: Box::new(spec.clone()), ctx: ctx.clone() });
    threads.hint_java_threads(java_threads(jvmti, vm));
    threads.scan();
    if let Some(e) = threads.first_error() {
        eprintln!("hpm: {e}");
    }
    Ok(())
}

/// The sampler of `event=alloc` / `event=lock` alone: no CPU samples; threads get indices so
/// the JVM events of each are told apart.
pub struct Idle {
    pub threads: &'static crate::threads::Threads,
    pub code: &'static crate::code::CodeEvents,
    pub jvmti: Jvmti,
    pub vm: Vm,
}

impl Sampler for Idle {
    fn start(&self) -> Result<(), String> {
        // The events' stacks, walked by hpm's walker, name methods by the ids the code-map
        // events make the JVM create (as the signal sampler's do).
        let jni = self.vm.env().ok_or("the calling thread is not attached to the JVM")?;
        self.code.enable(&self.jvmti, Some(jni)).map_err(|e| format!("cannot enable the compiled-code events: {e}"))?;
        self.threads.begin(crate::threads::Mode::Identity);
        self.threads.hint_java_threads(java_threads(&self.jvmti, self.vm));
        self.threads.scan();
        Ok(())
    }

    fn stop(&self) -> Vec<String> {
        self.threads.stop_all();
        Vec::new()
    }
}
