//! A profiling session: one run of sampling with its own options, event, outputs, event sources and
//! processor, started and stopped within one JVM (by -agentpath at VMInit/VMDeath, by `hpm
//! attach` and by the Java bridge, through `control`). It works with the narrow [`Parts`] of the
//! agent it needs; everything it owns is released when it stops (the sink with its batches once
//! every source has stopped and the processor has drained it).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::options::{self, Options, OutputFormat};
use hpm_capture::batch::BATCH_SIZE;
use hpm_capture::pool_size::PoolSize;
use hpm_profile::model::{EventInfo, PeriodUnit};
use hpm_profile::outfile::{Clash, Target, TargetId, PART_SUFFIX};

use crate::code::CodeEvents;
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::live::Live;
use crate::os::{now_ticks, now_wall_ns};
use crate::perf::PerfSpec;
use crate::processor::{self, Finished, Inputs, Output, ProcessorHandle, Push, Written};
use crate::signal::{SignalSetup, SignalStats};
use crate::sink::{AsgctFn, Sink};
use crate::source::{self, EventSource, SourceTraits, Sources};
use crate::stack_source::{self, StackSource};
use crate::threads::Threads;

/// The parts of the agent a session works with (all alive for the process).
#[derive(Clone, Copy)]
pub struct Parts {
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub threads: &'static Threads,
    pub code: &'static CodeEvents,
    pub live: &'static Live,
    pub signals: &'static SignalSetup,
    pub stats: &'static SignalStats,
    pub asgct: Option<AsgctFn>,
    /// Where a session without a JFR file keeps its JFR for `dump`, tried in order.
    pub spill_dirs: &'static [std::path::PathBuf],
    /// `OTEL_SERVICE_NAME` as the agent read it at set-up.
    pub otel_service_name: Option<&'static str>,
}

/// What a session is configured with, checked before it starts (a bad option or an unusable
/// perf setup is an error here, so `-agentpath` can refuse to start the JVM). No file exists
/// yet: the outputs are checked targets.
pub struct Plan {
    pub opts: Options,
    /// What the selected event sources declared, together.
    pub traits: SourceTraits,
    /// The selected event sources, planned, in start order.
    pub sources: Vec<source::Planned>,
    pub event: EventInfo,
    pub spec: PerfSpec,
    /// Lines to print once (fallbacks, counters left out).
    pub notes: Vec<String>,
    pub outputs: Vec<Output>,
    pub start_wall_ns: u64,
    /// Who walks the Java stacks.
    pub stack: StackSource,
    /// `data`: the code cache's layout, to copy each sample's instruction in Java code.
    pub data: Option<crate::vmstructs::DataLayouts>,
}

/// Parses and checks `option_string`: the event sources it selects planned (perf events
/// usable, with the hardware fallback; the patched JVM's extension present), output files
/// writable without following another user's link, the stack source chosen.
pub fn plan(jvmti: &Jvmti, option_string: &str) -> Result<Plan, String> {
    let mut opts = options::parse(option_string).map_err(|e| e.to_string())?;
    let start_wall_ns = now_wall_ns();
    let traits = source::traits(&opts);
    let mut sources = source::plan(&opts, jvmti)?;
    let mut notes: Vec<String> = sources.iter_mut().flat_map(|s| std::mem::take(&mut s.notes)).collect();
    let (spec, event) = sources.iter_mut().find_map(|s| s.event.take()).ok_or("the options select no event source")?;
    // Checked last (after the options and perf); nothing is created before the session starts.
    let files: Vec<(String, OutputFormat)> =
        opts.outputs().iter().map(|f| (f.path(std::process::id(), start_wall_ns / 1_000_000_000), f.format)).collect();
    let outputs = check_outputs(files, &[])?;
    let (stack, note) = stack_source::choose(&opts, traits.stacks, crate::vmstructs::walker_layout)?;
    notes.extend(note);
    // Before any handler walks native frames: the tables of the libraries mapped now.
    crate::native_tables::start(stack.cstack());
    let data = match opts.data {
        false => None,
        true if spec.event.hardware && !spec.event.memory => {
            // Sampled with precise_ip: the record's IP is the instruction that caused the event,
            // the signal comes later, with later registers.
            notes.push(format!(
                "data: {}'s samples are precise, their registers are not the instruction's: no address \
                 decoded (use a software event such as cpu-clock, or a memory event: mem-loads, mem-stores, \
                 ibs-op)",
                spec.event.name
            ));
            opts.data = false;
            None
        }
        true => {
            let code = crate::vmstructs::walker_layout()
                .map_err(|e| format!("data needs the code cache's layout from the JVM's VMStructs: {e}"))?;
            // Before any handler decodes: the decoder builds its tables on first use.
            hpm_capture::operand::prepare();
            let precise = spec.event.memory;
            notes.push(if precise {
                format!(
                    "data addresses: {}'s own (the PMU's), with the registers at the sampled instruction, its \
                     latency and data source",
                    spec.event.name
                )
            } else {
                "data addresses: decoded from each sample's instruction in Java code (the registers it was \
                 interrupted with)"
                    .into()
            });
            // The heap's layout is read when the session starts: at load time there is no heap.
            Some(crate::vmstructs::DataLayouts { code, heap: None, precise })
        }
    };
    Ok(Plan { opts, traits, sources, event, spec, notes, outputs, start_wall_ns, stack, data })
}

/// Checks every output of one request before any is created. Two outputs that would write one
/// file are refused: the same directory (as opened: device and inode, not the path's string,
/// so `a.jfr` and `./a.jfr` are one) and name, or one's `NAME.part` the other's name (refused
/// by the format already: see `TargetId::clash`). `running` are the outputs of the session that
/// runs (`stop,file=` and `dump,file=` are checked against them too).
pub fn check_outputs(
    files: Vec<(String, OutputFormat)>,
    running: &[(String, TargetId)],
) -> Result<Vec<Output>, String> {
    let mut out: Vec<(Output, TargetId)> = Vec::with_capacity(files.len());
    for (path, format) in files {
        let target = Target::check(&path).map_err(|e| e.to_string())?;
        let id = target.id().map_err(|e| e.to_string())?;
        let given = out.iter().map(|(o, id)| (o.path.as_str(), id, ""));
        let session = running.iter().map(|(p, id)| (p.as_str(), id, "the running session's "));
        for (other, other_id, whose) in given.chain(session) {
            if let Some(clash) = id.clash(other_id) {
                return Err(clash_message(&path, other, whose, clash));
            }
        }
        out.push((Output { path, format, target }, id));
    }
    Ok(out.into_iter().map(|(o, _)| o).collect())
}

/// The one line for outputs `new` and `whose` `old` that would write one file.
fn clash_message(new: &str, old: &str, whose: &str, clash: Clash) -> String {
    match clash {
        Clash::Same => format!("file={new} and {whose}file={old} are the same file; give each output its own name"),
        Clash::PartOf => format!(
            "file={new} is where {whose}file={old} is written until it is complete ({old}{PART_SUFFIX}); choose another name"
        ),
        Clash::HasPart => format!(
            "{whose}file={old} is where file={new} is written until it is complete ({new}{PART_SUFFIX}); choose another name"
        ),
    }
}

/// A running session.
pub struct Session {
    pub opts: Options,
    /// The event actually sampled (after any fallback) and how.
    pub event: EventInfo,
    /// Output paths with `%p`/`%t` expanded.
    pub files: Vec<String>,
    /// Which files those are, for the outputs `stop` and `dump` add (see [`check_outputs`]).
    pub file_ids: Vec<(String, TargetId)>,
    pub start_ticks: u64,
    sink: Arc<Sink>,
    sources: Arc<dyn EventSource>,
    processor: ProcessorHandle,
    /// `push=`: the pusher (for `status`).
    push: Option<Arc<Push>>,
}

/// The session's sample pool, from the rate its sources bring samples
/// ([`hpm_capture::pool_size::PoolSize::for_rate`]): one per period per CPU (a thousand a second
/// per CPU for events counted, not timed), or a source's threads per tick whatever the CPUs
/// (the wall sampler's [`crate::source::wall::WALL_THREADS_PER_TICK`]), a batch each. More samples than the
/// pool holds are dropped and counted ("no free sample buffer"), except by the wall sampler,
/// which waits for the processor instead (see `wall::pace`).
fn pool_size(event: &EventInfo, traits: SourceTraits) -> PoolSize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let per_second = match (traits.threads_per_tick, event.unit) {
        // A batch per sample: a thread visited less than once a round hands its batch on with
        // its one sample (`wall::ROUND_NS`), so samples in flight take batches, not records.
        (Some(n), _) => n as u64 * (1_000_000_000 / event.period.max(10_000)) * BATCH_SIZE as u64,
        (None, PeriodUnit::Nanoseconds) => cpus * (1_000_000_000 / event.period.max(10_000)),
        (None, PeriodUnit::Events) => cpus * 1_000,
    };
    PoolSize::for_rate(per_second, processor::ROUND.as_nanos() as u64)
}

impl Session {
    /// Starts sampling: the processor first (so batches drain from the first sample), then the
    /// sources, which attach the threads.
    pub fn start(parts: Parts, mut plan: Plan) -> Result<Session, String> {
        if let Some(d) = plan.data.as_mut() {
            d.heap = match crate::vmstructs::heap_layout() {
                Ok(h) => {
                    plan.notes.push(format!(
                        "data objects: headers read at sample time in the {}; class and field named from \
                         class metadata",
                        h.describe()
                    ));
                    Some(h)
                }
                Err(e) => {
                    plan.notes.push(format!("data objects: not identified (addresses only): {e}"));
                    None
                }
            };
        }
        for n in &plan.notes {
            eprintln!("hpm: {n}");
        }
        let opts = plan.opts;
        // The pusher first: a session that cannot push does not start.
        let push = match &opts.push {
            Some(p) => {
                let resource = processor::push_resource(&parts.jvmti, p.service.as_deref(), parts.otel_service_name);
                Some(Arc::new(Push::start(p, resource, &plan.event, Some(parts.threads))?))
            }
            None => None,
        };
        let sink: Arc<Sink> = Arc::new(Sink::new(pool_size(&plan.event, plan.traits)));
        parts.stats.reset();
        // Code freed while no session ran is not looked up in the walker's cache.
        crate::vmstructs::code_changed();
        let start = source::Start {
            jvmti: parts.jvmti,
            vm: parts.vm,
            threads: parts.threads,
            code: parts.code,
            signals: parts.signals,
            stats: parts.stats,
            asgct: parts.asgct,
            opts: &opts,
            sink: &sink,
            spec: &plan.spec,
            period: plan.event.period,
            stack: plan.stack,
            data: plan.data,
            // Records hold MAX_FRAMES frames; sources that walk off the signal path keep the
            // rest apart (up to MAX_DEEP_FRAMES).
            max_depth: opts.max_depth.min(hpm_capture::capture::MAX_FRAMES as u32),
            deep_depth: opts.max_depth.min(hpm_capture::capture::MAX_DEEP_FRAMES as u32),
        };
        let built: Result<Vec<_>, String> = plan.sources.into_iter().map(|p| (p.build)(&start)).collect();
        let sources: Arc<dyn EventSource> = Arc::new(Sources(built?));
        let start_ticks = now_ticks();
        let files = plan.outputs.iter().map(|o| o.path.clone()).collect();
        let file_ids = plan.outputs.iter().filter_map(|o| Some((o.path.clone(), o.target.id().ok()?))).collect();
        let inputs = Inputs {
            opts: opts.clone(),
            traits: plan.traits,
            event: plan.event.clone(),
            counters: plan.spec.counters.iter().map(|c| c.name.to_string()).collect(),
            counter_periods: plan.spec.counter_periods.clone(),
            start_wall_ns: plan.start_wall_ns,
            start_ticks,
            sink: sink.clone(),
            sampler: sources.clone(),
            threads: parts.threads,
            code: parts.code,
            walker: plan.stack.walker(),
            heap: plan.data.and_then(|d| d.heap),
            live: parts.live,
            stats: parts.stats,
            jvmti: parts.jvmti,
            vm: parts.vm,
            spill_dirs: parts.spill_dirs,
            push: push.clone(),
        };
        let processor = processor::start(inputs, plan.outputs)?;
        if let Err(e) = sources.start() {
            sources.stop();
            let _ = processor.finish(Vec::new());
            return Err(e);
        }
        Ok(Session { opts, event: plan.event, files, file_ids, start_ticks, sink, sources, processor, push })
    }

    /// Stops sampling, then lets the processor do its last round and write the outputs (plus
    /// `extra` files) and the summary. Returns the files written and the profile (for dumps
    /// after stop).
    pub fn stop(self, extra: Vec<Output>) -> Result<(Written, Finished), String> {
        let lines = self.sources.stop();
        if !self.opts.quiet {
            for l in lines {
                eprintln!("hpm: {l}");
            }
        }
        self.processor.finish(extra)
    }

    /// Writes the profile so far.
    pub fn dump(&self, path: &str, format: OutputFormat, target: Target) -> Result<String, String> {
        self.processor.dump(path, format, target)
    }

    /// Sample batches (allocated, capacity).
    pub fn buffers(&self) -> (usize, usize) {
        (self.sink.pool.allocated(), self.sink.pool.capacity())
    }

    /// Samples resolved so far.
    pub fn resolved(&self) -> u64 {
        self.sink.resolved.load(Ordering::Relaxed)
    }

    /// `status`'s line on the push (`push=`): the last result and the totals.
    pub fn push_line(&self) -> Option<String> {
        self.push.as_ref().map(|p| p.status_line())
    }

    /// JFR kept for `dump` (a session without a JFR file): how much and where; `None` before
    /// the first chunk or with a JFR file.
    pub fn jfr_kept(&self) -> Option<hpm_profile::jfr::memory::KeptNow> {
        self.sink.jfr_kept.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
