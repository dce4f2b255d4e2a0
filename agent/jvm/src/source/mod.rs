//! Event sources: each is one module that plans itself from the options and the VM
//! ([`SourceDef`], listed once in [`SOURCES`]), declares what the session and the processor must
//! know about it in one value ([`SourceTraits`]), and once started writes `Captured` records into
//! the session's sink, which the processor drains ([`EventSource`]). A source may also give the
//! processor parts of its own: a feed of its own records ([`crate::feed::EventFeed`]) and a
//! stack completer ([`crate::complete::StackCompleter`]); the processor knows them by their
//! traits alone. A session runs every
//! source its options select: one for the CPU event and the JVM's own events beside it.
//! - `asgct`: perf overflow signals per thread, the stack walked in the handler (signal.rs);
//! - `chain`: perf samples with a copy of the top of the stack and no signal, drained and
//!   walked by the processor (CallerChaining);
//! - `timer`: a sampling thread on a timer: `jvmti` (GetThreadListStackTraces at a global
//!   safepoint) or `sps` (the patched JVM's partial safepoints); `isps`: the same thread with
//!   incremental stack tracing;
//! - `wall`: every Java thread, any state: a sampling thread signals threads in turn, each
//!   walks its own stack in hpm's handler (no VM operation);
//! - `idle`: no CPU event (`event=alloc` / `event=lock` alone): the threads named only;
//! - `jvmevents`: the JVM's own events with their stacks (`alloc`, `lock`);
//! - `phases`: the application's methods instrumented, their enter and exit recorded with
//!   the thread's counters (`phases=`), beside the CPU source.
//!
//! A uprobe (`event=probe:...`) is a perf event like any other, sampled by `asgct` or `chain`.
//! Who walks the stacks is the other axis: [`crate::stack_source`].

use std::sync::Arc;

use crate::options::Options;
use hpm_profile::model::{EventInfo, ThreadInfo};

use crate::code::CodeEvents;
use crate::complete::StackCompleter;
use crate::feed::EventFeed;
use crate::jnienv::{self, Vm};
use crate::jvmti::Jvmti;
use crate::perf::PerfSpec;
use crate::signal::{SignalSetup, SignalStats};
use crate::sink::{AsgctFn, SignalCtx, Sink};
use crate::stack_source::{StackSite, StackSource};
use crate::threads::Threads;

pub mod asgct;
pub mod chain;
pub mod extension;
pub mod idle;
pub mod isps;
pub mod jvmevents;
pub mod phases;
mod sampler_thread;
#[cfg(test)]
mod test_source;
pub mod timer;
pub mod wall;

/// Every event source, one line each, in the order they start (and stop in reverse: the JVM's
/// events stop before the CPU source).
pub const SOURCES: &[SourceDef] = &[
    asgct::SOURCE,     // perf overflow signals, stacks walked in the handler
    chain::SOURCE,     // perf rings without signals, stacks walked by the processor
    timer::SOURCE,     // a timer thread: jvmti, sps, isps (incremental stack tracing)
    wall::SOURCE,      // event=wall: a thread signals threads in turn, stacks walked in the handler
    idle::SOURCE,      // no CPU event: the threads named only
    jvmevents::SOURCE, // alloc, lock
    phases::SOURCE,    // method-level phases: instrumented methods, beside the CPU source
    #[cfg(test)]
    test_source::SOURCE, // synthetic samples, for tests
];

/// One event source as the session finds it.
pub struct SourceDef {
    /// What the source declares, when the options select it. Needs no VM, so the processor
    /// reads it from the options too ([`traits`]).
    pub traits: fn(&Options) -> Option<SourceTraits>,
    /// Checks what the source needs of the VM and the system (perf events, the patched JVM's
    /// extension) and says how to build it; nothing starts. `Err` is the line for the user.
    pub plan: fn(&Options, &Jvmti) -> Result<Planned, String>,
}

/// What a session and its processor must know about a source, declared by the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceTraits {
    /// Its samples come only through the batch pool, at most one per period per CPU: the
    /// processor may stretch its rounds (`processor::round_units`).
    pub stretch_rounds: bool,
    /// Its records carry the sampled instruction's registers: data addresses are decoded.
    pub data_addresses: bool,
    /// The compiled-code events are on from the JVM's load (VMInit replays only start-up's).
    pub code_at_load: bool,
    /// Samples a tick brings: `None` one per period per CPU, `Some(n)` up to n threads a tick
    /// whatever the CPUs (the pool is sized by it).
    pub threads_per_tick: Option<u32>,
    /// Where its stacks are taken, which decides the stack source.
    pub stacks: StackSite,
}

impl SourceTraits {
    /// A source that asks nothing of the processor, with stacks taken at `stacks`.
    pub const fn plain(stacks: StackSite) -> SourceTraits {
        SourceTraits {
            stretch_rounds: false,
            data_addresses: false,
            code_at_load: false,
            threads_per_tick: None,
            stacks,
        }
    }

    /// The traits of two sources running together (`self` first).
    fn and(self, other: SourceTraits) -> SourceTraits {
        SourceTraits {
            stretch_rounds: self.stretch_rounds && other.stretch_rounds,
            data_addresses: self.data_addresses || other.data_addresses,
            code_at_load: self.code_at_load || other.code_at_load,
            threads_per_tick: self.threads_per_tick.or(other.threads_per_tick),
            stacks: self.stacks,
        }
    }
}

/// The traits of the sources `opts` selects, together: the first source's stack site, rounds
/// stretched only where every source allows it.
pub fn traits(opts: &Options) -> SourceTraits {
    let mut selected = SOURCES.iter().filter_map(|d| (d.traits)(opts));
    let first = selected.next().unwrap_or(SourceTraits::plain(StackSite::InThread));
    selected.fold(first, SourceTraits::and)
}

/// Plans every source `opts` selects, in [`SOURCES`] order; the first failure said.
pub fn plan(opts: &Options, jvmti: &Jvmti) -> Result<Vec<Planned>, String> {
    SOURCES.iter().filter(|d| (d.traits)(opts).is_some()).map(|d| (d.plan)(opts, jvmti)).collect()
}

/// A planned source: what it found, and how to build it when the session starts.
pub struct Planned {
    /// The event it samples on, after any fallback, with its perf setup; `None` for the
    /// sources of the JVM's own events.
    pub event: Option<(PerfSpec, EventInfo)>,
    /// Lines to print once at start (fallbacks, limits).
    pub notes: Vec<String>,
    pub build: Builder,
}

/// Builds a planned source when the session starts (before the processor runs).
pub type Builder = Box<dyn FnOnce(&Start) -> Result<Arc<dyn EventSource>, String> + Send>;

/// What a source is built with: the agent's parts and the session's sink and choices.
pub struct Start<'a> {
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub threads: &'static Threads,
    pub code: &'static CodeEvents,
    pub signals: &'static SignalSetup,
    pub stats: &'static SignalStats,
    pub asgct: Option<AsgctFn>,
    pub opts: &'a Options,
    pub sink: &'a Arc<Sink>,
    /// The sampled event's perf setup and period (the sampling clock's for a timer).
    pub spec: &'a PerfSpec,
    pub period: u64,
    pub stack: StackSource,
    /// `data`: the layouts the handler decodes with.
    pub data: Option<crate::vmstructs::DataLayouts>,
    /// `jstackdepth` within a record ([`hpm_capture::capture::MAX_FRAMES`]), and within what a
    /// source walking off the signal path keeps ([`hpm_capture::capture::MAX_DEEP_FRAMES`]).
    pub max_depth: u32,
    pub deep_depth: u32,
}

impl Start<'_> {
    /// The context a perf source publishes with each thread's slot: `asgct` and `data` for the
    /// handler that walks, none for a source that walks nowhere in the thread.
    pub fn signal_ctx(&self, asgct: Option<AsgctFn>, data: Option<crate::vmstructs::DataLayouts>) -> Arc<SignalCtx> {
        Arc::new(SignalCtx {
            sink: self.sink.clone(),
            layout: self.spec.layout,
            kernel: self.spec.kernel,
            max_depth: self.max_depth,
            asgct,
            walker: self.stack.walker(),
            compare: self.stack.compares(),
            native: crate::native_tables::for_walks(self.stack.cstack()),
            vm: self.vm,
            data,
        })
    }
}

/// A running event source.
pub trait EventSource: Send + Sync {
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
    /// The feeds of its own records, which the processor drains each round (asked once, when
    /// the processor starts).
    fn feeds(&self) -> Vec<Box<dyn EventFeed>> {
        Vec::new()
    }
    /// The part that completes its samples' stacks at the end, if they need one (asked once,
    /// when the processor starts: its samples are then held, and the stack table kept, until
    /// completion).
    fn completer(&self) -> Option<Box<dyn StackCompleter>> {
        None
    }
    /// Stops sampling: when this returns nothing writes into the sink any more. Returns lines
    /// for the summary.
    fn stop(&self) -> Vec<String>;
}

/// A session's sources as one: started in order, stopped in reverse.
pub struct Sources(pub Vec<Arc<dyn EventSource>>);

impl EventSource for Sources {
    fn start(&self) -> Result<(), String> {
        self.0.iter().try_for_each(|s| s.start())
    }

    fn tick(&self, round: u64, scan: bool) {
        for s in &self.0 {
            s.tick(round, scan);
        }
    }

    fn set_period(&self, period: u64) -> usize {
        self.0.iter().map(|s| s.set_period(period)).sum()
    }

    fn feeds(&self) -> Vec<Box<dyn EventFeed>> {
        self.0.iter().flat_map(|s| s.feeds()).collect()
    }

    /// The first source's that has one.
    fn completer(&self) -> Option<Box<dyn StackCompleter>> {
        self.0.iter().find_map(|s| s.completer())
    }

    fn stop(&self) -> Vec<String> {
        self.0.iter().rev().flat_map(|s| s.stop()).collect()
    }
}

/// The note of a source whose records hold at most [`hpm_capture::capture::MAX_FRAMES`] frames,
/// when `jstackdepth` asks for more.
pub fn depth_note(opts: &Options) -> Option<String> {
    let max = hpm_capture::capture::MAX_FRAMES;
    (opts.max_depth as usize > max).then(|| {
        format!(
            "jstackdepth={}: sampler={} keeps at most {max} frames per sample (sampler=jvmti or sps walk off \
             the signal path and keep up to {})",
            opts.max_depth,
            opts.sampler.name(),
            hpm_capture::capture::MAX_DEEP_FRAMES
        )
    })
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
            out.push(ThreadInfo {
                os_tid,
                java_id: jnienv::java_thread_id(jni, t),
                name,
                is_java: true,
                is_virtual: false,
            });
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

/// The event of a sampler that picks threads by the clock on a thread of its own (`timer`,
/// `wall`): the period as asked, in nanoseconds, kernel time not told apart.
pub(crate) fn thread_clock_event(opts: &Options, name: &str) -> (PerfSpec, EventInfo) {
    let info = EventInfo {
        name: name.into(),
        requested: name.into(),
        period: opts.period(),
        unit: hpm_profile::model::PeriodUnit::Nanoseconds,
        fallback: None,
        sampler: opts.sampler.into(),
        kernel: hpm_profile::model::KernelMode::Excluded,
        alloc_interval: 0,
    };
    let spec = PerfSpec::new(opts.event, opts.period(), Vec::new(), hpm_profile::model::KernelMode::Excluded);
    (spec, info)
}
