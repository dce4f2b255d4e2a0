//! A profiling session: one run of sampling with its own options, event, outputs, sampler and
//! processor, started and stopped within one JVM (by -agentpath at VMInit/VMDeath, by `hpm
//! attach` and by the Java bridge, through `control`). It works with the narrow [`Parts`] of the
//! agent it needs; everything it owns is released when it stops (the sink with its batches once
//! every sampler has stopped and the processor has drained it).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use hpm_core::model::{EventInfo, KernelMode, PeriodUnit};
use hpm_core::options::{self, Options, OutputFormat, Sampler as SamplerKind, StackWalker};
use hpm_core::outfile::{Clash, Target, TargetId, PART_SUFFIX};
use hpm_core::pool_size::PoolSize;

use crate::code::CodeEvents;
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::live::Live;
use crate::os::{now_ticks, now_wall_ns};
use crate::perf::{self, PerfSpec};
use crate::processor::{self, Finished, Inputs, Output, ProcessorHandle, Written};
use crate::signal::{SignalSetup, SignalStats};
use crate::sink::{AsgctFn, SignalCtx, Sink};
use crate::source::asgct::AsgctSampler;
use crate::source::chain::ChainSampler;
use crate::source::isps::{self, Isps};
use crate::source::timer::{self, Kind, Sps, TimerSampler};
use crate::source::Sampler;
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
    pub events: &'static crate::source::jvmevents::JvmEvents,
    /// Where a session without a JFR file keeps its JFR for `dump`, tried in order.
    pub spill_dirs: &'static [std::path::PathBuf],
}

/// What a session is configured with, checked before it starts (a bad option or an unusable
/// perf setup is an error here, so `-agentpath` can refuse to start the JVM). No file exists
/// yet: the outputs are checked targets.
pub struct Plan {
    pub opts: Options,
    pub event: EventInfo,
    pub spec: PerfSpec,
    pub sps: Option<Sps>,
    pub isps: Option<Isps>,
    /// Lines to print once (fallbacks, counters left out).
    pub notes: Vec<String>,
    pub outputs: Vec<Output>,
    pub start_wall_ns: u64,
    /// hpm's own stack walker's layout, when it walks the Java stacks (`stack=vm`).
    pub walker: Option<&'static hpm_core::hotspot::Layout>,
    /// `data`: the code cache's layout, to copy each sample's instruction in Java code.
    pub data: Option<crate::vmstructs::DataLayouts>,
}

/// Parses and checks `option_string`: output files writable without following another user's
/// link, perf events usable (with the hardware fallback), the sps extension present.
pub fn plan(jvmti: &Jvmti, option_string: &str) -> Result<Plan, String> {
    let mut opts = options::parse(option_string).map_err(|e| e.to_string())?;
    let start_wall_ns = now_wall_ns();
    let sps = match opts.sampler {
        SamplerKind::Sps => Some(timer::find_sps(jvmti)?),
        _ => None,
    };
    let isps = match opts.sampler {
        SamplerKind::Isps => Some(isps::find_isps(jvmti)?),
        _ => None,
    };
    let (spec, event, mut notes) = if !opts.cpu {
        // event=alloc / event=lock alone: no sampling event at all.
        let info = EventInfo {
            name: "none".into(),
            requested: "none".into(),
            period: 0,
            unit: PeriodUnit::Nanoseconds,
            fallback: None,
            sampler: "none".into(),
            kernel: KernelMode::Excluded,
            alloc_interval: 0,
        };
        (PerfSpec::new(opts.event, opts.period(), Vec::new(), KernelMode::Excluded), info, Vec::new())
    } else if matches!(opts.sampler, SamplerKind::Asgct | SamplerKind::Chain) {
        perf::choose_events(&opts)?
    } else {
        // Timer samplers: no perf groups; the "event" is the sampling clock.
        let name = if opts.sampler == SamplerKind::Wall { "wall" } else { "timer" };
        let info = EventInfo {
            name: name.into(),
            requested: name.into(),
            period: opts.period(),
            unit: PeriodUnit::Nanoseconds,
            fallback: None,
            sampler: opts.sampler.name().to_string(),
            // A timer picks threads by their JVM state; kernel time is not told apart.
            kernel: KernelMode::Excluded,
            alloc_interval: 0,
        };
        (PerfSpec::new(opts.event, opts.period(), Vec::new(), KernelMode::Excluded), info, Vec::new())
    };
    if opts.max_depth as usize > hpm_core::capture::MAX_FRAMES {
        let max = hpm_core::capture::MAX_FRAMES;
        let signal_path = opts.cpu && matches!(opts.sampler, SamplerKind::Asgct | SamplerKind::Chain);
        if signal_path {
            notes.push(format!(
                "jstackdepth={}: sampler={} keeps at most {max} frames per sample (sampler=jvmti, sps or wall \
                 walk off the signal path and keep up to {})",
                opts.max_depth,
                opts.sampler.name(),
                hpm_core::capture::MAX_DEEP_FRAMES
            ));
        }
        if opts.alloc.is_some() || opts.lock.is_some() {
            notes.push(format!("jstackdepth={}: the alloc and lock events keep at most {max} frames", opts.max_depth));
        }
    }
    // Checked last (after the options and perf); nothing is created before the session starts.
    let files: Vec<(String, OutputFormat)> =
        opts.outputs().iter().map(|f| (f.path(std::process::id(), start_wall_ns / 1_000_000_000), f.format)).collect();
    let outputs = check_outputs(files, &[])?;
    let walker = match (opts.sampler, opts.stack) {
        (SamplerKind::Asgct, StackWalker::Vm | StackWalker::Compare) => match crate::vmstructs::walker_layout() {
            Ok(l) if opts.stack == StackWalker::Compare => {
                notes.push("Java stacks: hpm's own walker, and AsyncGetCallTrace on every sample to compare".into());
                Some(l)
            }
            Ok(l) => {
                notes.push(
                    "Java stacks: hpm's own walker over HotSpot's frames (stack=asgct: AsyncGetCallTrace)".into(),
                );
                Some(l)
            }
            Err(e) => {
                notes.push(format!("Java stacks: AsyncGetCallTrace; hpm's own walker cannot read this JVM ({e})"));
                None
            }
        },
        (SamplerKind::Chain, _) => match crate::vmstructs::walker_layout() {
            Ok(l) => {
                notes.push(
                    "Java stacks: no walk in the sampled thread; the processor walks each sample's copy of the top \
                     of the stack and completes it from the frames' stack depths (sampler=chain)"
                        .into(),
                );
                Some(l)
            }
            Err(e) => return Err(format!("sampler=chain needs hpm's own walker, which cannot read this JVM ({e})")),
        },
        (SamplerKind::Asgct, StackWalker::Asgct) => {
            notes.push("Java stacks: AsyncGetCallTrace (stack=asgct)".into());
            None
        }
        _ => None,
    };
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
            hpm_core::operand::prepare();
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
    Ok(Plan { opts, event, spec, sps, isps, notes, outputs, start_wall_ns, walker, data })
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
    sampler: Arc<dyn Sampler>,
    processor: ProcessorHandle,
    /// `alloc` / `lock`: turned off at stop, before the processor's last round.
    events: Option<(&'static crate::source::jvmevents::JvmEvents, Jvmti)>,
}

/// The session's sample pool, from the rate its sampler brings samples
/// ([`hpm_core::pool_size::PoolSize::for_rate`]): the signal samplers one per period per CPU
/// (a thousand a second per CPU for events counted, not timed), the wall sampler up to
/// [`timer::WALL_THREADS_PER_TICK`] stacks per tick, whatever the CPUs. More samples than the
/// pool holds are dropped and counted ("no free sample buffer"), except by the wall sampler,
/// which waits for the processor instead (see `timer::pace`).
fn pool_size(event: &EventInfo, sampler: SamplerKind) -> PoolSize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let per_second = match (sampler, event.unit) {
        (SamplerKind::Wall, _) => timer::WALL_THREADS_PER_TICK as u64 * (1_000_000_000 / event.period.max(10_000)),
        (_, PeriodUnit::Nanoseconds) => cpus * (1_000_000_000 / event.period.max(10_000)),
        (_, PeriodUnit::Events) => cpus * 1_000,
    };
    PoolSize::for_rate(per_second, processor::ROUND.as_nanos() as u64)
}

impl Session {
    /// Starts sampling: the processor first (so batches drain from the first sample), then the
    /// sampler, which attaches the threads.
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
        // The signal samplers' and the JVM events' records hold MAX_FRAMES frames; the timer
        // samplers walk off the signal path and keep the rest apart (up to MAX_DEEP_FRAMES).
        let max_depth = opts.max_depth.min(hpm_core::capture::MAX_FRAMES as u32);
        let timer_depth = opts.max_depth.min(hpm_core::capture::MAX_DEEP_FRAMES as u32);
        let sink: Arc<Sink> = Arc::new(Sink::new(pool_size(&plan.event, opts.sampler)));
        parts.stats.reset();
        // Code freed while no session ran is not looked up in the walker's cache.
        crate::vmstructs::code_changed();
        // The perf samplers' context, published with each thread's slot.
        let signal_ctx = |asgct, compare, data| {
            Arc::new(SignalCtx {
                sink: sink.clone(),
                layout: plan.spec.layout,
                kernel: plan.spec.kernel,
                max_depth,
                asgct,
                walker: plan.walker,
                compare,
                vm: parts.vm,
                data,
            })
        };
        let sampler: Arc<dyn Sampler> = match opts.sampler {
            _ if !opts.cpu => Arc::new(crate::source::Idle {
                threads: parts.threads,
                code: parts.code,
                jvmti: parts.jvmti,
                vm: parts.vm,
            }),
            SamplerKind::Asgct => Arc::new(AsgctSampler {
                threads: parts.threads,
                code: parts.code,
                setup: parts.signals,
                stats: parts.stats,
                jvmti: parts.jvmti,
                vm: parts.vm,
                spec: plan.spec.clone(),
                ctx: signal_ctx(parts.asgct, opts.stack == StackWalker::Compare, plan.data),
            }),
            SamplerKind::Chain => Arc::new(ChainSampler {
                threads: parts.threads,
                code: parts.code,
                jvmti: parts.jvmti,
                vm: parts.vm,
                spec: plan.spec.clone(),
                // Published with the slots, never used by a handler: no ASGCT, no data.
                ctx: signal_ctx(None, false, None),
                sink: sink.clone(),
                walker: plan.walker,
                state: Default::default(),
                signal_stats: parts.stats,
                stats: Default::default(),
            }),
            SamplerKind::Jvmti | SamplerKind::Sps | SamplerKind::Isps | SamplerKind::Wall => {
                Arc::new(TimerSampler::new(timer::Parts {
                    threads: parts.threads,
                    jvmti: parts.jvmti,
                    vm: parts.vm,
                    sink: sink.clone(),
                    kind: match (plan.sps, plan.isps, opts.sampler) {
                        (Some(sps), ..) => Kind::Sps { sps, threads: opts.sps_threads, waiting: opts.sps_waiting },
                        (_, Some(isps), _) => Kind::Isps { isps, threads: opts.sps_threads, waiting: opts.sps_waiting },
                        (.., SamplerKind::Wall) => Kind::Wall,
                        _ => Kind::Jvmti,
                    },
                    period: plan.event.period,
                    max_depth: timer_depth,
                    quiet: opts.quiet,
                    thread_filter: opts
                        .thread_filter
                        .as_deref()
                        .map(|p| hpm_core::filter::compile_thread_pattern_for("thread=", p))
                        .transpose()?,
                }))
            }
        };
        let start_ticks = now_ticks();
        let files = plan.outputs.iter().map(|o| o.path.clone()).collect();
        let file_ids = plan.outputs.iter().filter_map(|o| Some((o.path.clone(), o.target.id().ok()?))).collect();
        let inputs = Inputs {
            opts: opts.clone(),
            event: plan.event.clone(),
            counters: plan.spec.counters.iter().map(|c| c.name.to_string()).collect(),
            counter_periods: plan.spec.counter_periods.clone(),
            start_wall_ns: plan.start_wall_ns,
            start_ticks,
            sink: sink.clone(),
            sampler: sampler.clone(),
            threads: parts.threads,
            code: parts.code,
            walker: plan.walker,
            heap: plan.data.and_then(|d| d.heap),
            live: parts.live,
            stats: parts.stats,
            jvmti: parts.jvmti,
            vm: parts.vm,
            events: parts.events,
            spill_dirs: parts.spill_dirs,
        };
        let processor = processor::start(inputs, plan.outputs)?;
        let started = sampler.start().and_then(|()| {
            if opts.alloc.is_none() && opts.lock.is_none() {
                return Ok(());
            }
            let with = crate::source::jvmevents::Setup {
                jvmti: &parts.jvmti,
                threads: parts.threads,
                vm: parts.vm,
                jni: parts.vm.env(),
                asgct: parts.asgct,
                walker: crate::vmstructs::walker_layout().ok(),
            };
            let notes = parts.events.start(with, opts.alloc, opts.lock, max_depth)?;
            if !opts.quiet {
                for n in notes {
                    eprintln!("hpm: {n}");
                }
            }
            Ok(())
        });
        if let Err(e) = started {
            parts.events.stop(&parts.jvmti);
            sampler.stop();
            let _ = processor.finish(Vec::new());
            return Err(e);
        }
        let events = (opts.alloc.is_some() || opts.lock.is_some()).then_some((parts.events, parts.jvmti));
        Ok(Session { opts, event: plan.event, files, file_ids, start_ticks, sink, sampler, processor, events })
    }

    /// Stops sampling, then lets the processor do its last round and write the outputs (plus
    /// `extra` files) and the summary. Returns the files written and the profile (for dumps
    /// after stop).
    pub fn stop(self, extra: Vec<Output>) -> Result<(Written, Finished), String> {
        if let Some((events, jvmti)) = self.events {
            events.stop(&jvmti);
        }
        let lines = self.sampler.stop();
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

    /// JFR kept for `dump` (a session without a JFR file): how much and where; `None` before
    /// the first chunk or with a JFR file.
    pub fn jfr_kept(&self) -> Option<hpm_core::jfr::memory::KeptNow> {
        self.sink.jfr_kept.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
