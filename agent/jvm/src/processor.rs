//! The background processing thread (Chilingarova & Safonov's "manager"): it drains sample
//! batches, resolves them in time order against the code map, feeds the calling context tree,
//! flushes JFR chunks periodically, and writes the outputs at the end. One runs per profiling
//! session, with the narrow [`Inputs`] the session gives it. It answers `dump` requests while it
//! runs, does the session's last round and writes its files on its own thread (the one attached
//! to the VM for the JVMTI calls that name methods), and its finished profile answers dumps
//! after `stop`.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hpm_core::analysis::tuner::{SelfTuner, TunerConfig};
use hpm_core::batch::BatchHandle;
use hpm_core::cct::Cct;
use hpm_core::codemap::{CodeBytes, CodeEvent};
use hpm_core::jfr::memory::{ChunkMemory, Spill};
use hpm_core::jfr::writer::{ChunkTimes, JfrFileWriter};
use hpm_core::jfr::TableKeys;
use hpm_core::model::{EventInfo, PeriodUnit, Recording, Sample};
use hpm_core::options::{Interval, Options, OutputFormat};
use hpm_core::outfile::Target;
use hpm_core::output::stacks::StackTable;
use hpm_core::resolve::SampleResolver;
use hpm_core::tree_feed::TreeFeed;

use crate::code::CodeEvents;
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::live::Live;
use crate::methods::JvmtiMethods;
use crate::os::{now_ticks, thread_cpu_ns};
use crate::signal::SignalStats;
use crate::sink::Sink;
use crate::source::EventSource;
use crate::threads::Threads;

mod chain;
mod events;
mod write;

/// Samples younger than this wait a round, so late code events (JVMTI posts them from the
/// service thread) are applied before the samples that need them.
const SETTLE_NS: u64 = 100_000_000;
pub(crate) const ROUND: Duration = Duration::from_millis(50);
/// Rounds are at most this many [`ROUND`]s long (see [`round_units`]).
const MAX_ROUND_UNITS: u64 = 4;
/// The samplers look for new threads at most this many [`ROUND`]s apart (listing the
/// process's tasks costs ~35 us).
const SCAN_UNITS: u64 = 4;
/// A round is stretched only if it can bring at most this many samples, and only while more
/// batches than it can bring are free: each sample may be the only one of its thread's batch
/// (the batches are taken from every thread at each round). Where the pool (at least 128
/// batches) cannot keep that many free beside the samples held back for [`SETTLE_NS`], the
/// rounds stay at [`ROUND`].
const STRETCH_SAMPLES: usize = 2 * POOL_STEP;
/// JFR kept for `dump,file=X.jfr` when the session writes no JFR file (in an unlinked file on
/// disk where one can be made, else in the heap): at most this much, the oldest chunks dropped
/// first (and said so).
pub const JFR_MEMORY_LIMIT: usize = 64 << 20;
/// Batches allocated when a session starts at least, and added at a time
/// ([`hpm_core::pool_size::to_grow`]).
const POOL_STEP: usize = hpm_core::pool_size::STEP;

/// One output of the session: its path (as the user wrote it, expanded), format and the checked
/// target (the JFR one is created at start as `PATH.part`, the others at the end).
pub struct Output {
    pub path: String,
    pub format: OutputFormat,
    pub target: Target,
}

/// Everything the processor works with, and nothing else.
pub struct Inputs {
    pub opts: Options,
    pub event: EventInfo,
    pub counters: Vec<String>,
    /// Per counter: its own samples' period, 0 if interval-attributed (`PerfSpec`).
    pub counter_periods: Vec<u64>,
    pub start_wall_ns: u64,
    pub start_ticks: u64,
    pub sink: Arc<Sink>,
    pub sampler: Arc<dyn EventSource>,
    pub threads: &'static Threads,
    pub code: &'static CodeEvents,
    /// hpm's own stack walker's layout, when it walks this session's stacks.
    pub walker: Option<&'static hpm_core::hotspot::Layout>,
    /// `data` with the heap's layout: samples' objects are identified.
    pub heap: Option<&'static hpm_core::javaheap::HeapLayout>,
    pub live: &'static Live,
    pub stats: &'static SignalStats,
    pub jvmti: Jvmti,
    pub vm: Vm,
    /// `alloc` / `lock`: the JVM's events queued by the callbacks.
    pub events: &'static crate::source::jvmevents::JvmEvents,
    /// Where a session without a JFR file keeps its JFR for `dump`, tried in order.
    pub spill_dirs: &'static [std::path::PathBuf],
}

enum Request {
    /// Write the profile so far to `path` in `format`; the reply says what was written.
    Dump { path: String, format: OutputFormat, target: Target, reply: Sender<Result<String, String>> },
    /// The samplers have stopped: last round, outputs (and `extra` files), then end.
    Finish { extra: Vec<Output>, reply: Sender<(Written, Finished)> },
}

pub struct ProcessorHandle {
    requests: Sender<Request>,
    join: JoinHandle<()>,
}

impl ProcessorHandle {
    /// Asks the running processor to write the profile so far (samples up to ~100 ms ago).
    pub fn dump(&self, path: &str, format: OutputFormat, target: Target) -> Result<String, String> {
        let (tx, rx) = mpsc::channel();
        self.requests
            .send(Request::Dump { path: path.to_string(), format, target, reply: tx })
            .map_err(|_| "the processing thread has ended; stop the session and start a new one".to_string())?;
        self.join.thread().unpark();
        rx.recv().map_err(|_| "the processing thread ended before writing the dump".to_string())?
    }

    /// Ends the processor once the samplers have stopped: its last round, the session's outputs
    /// and `extra`. Returns the files written and the profile (for dumps after stop).
    pub fn finish(self, extra: Vec<Output>) -> Result<(Written, Finished), String> {
        let (tx, rx) = mpsc::channel();
        let sent = self.requests.send(Request::Finish { extra, reply: tx });
        self.join.thread().unpark();
        let result = rx.recv();
        let _ = self.join.join();
        match (sent, result) {
            (Ok(()), Ok(r)) => Ok(r),
            _ => Err("the processing thread failed; no profile written".into()),
        }
    }
}

/// The outputs a session wrote at its end, and why the others were not written.
#[derive(Default)]
pub struct Written {
    pub files: Vec<String>,
    /// One line per output not written (the error, naming it).
    pub failed: Vec<String>,
}

impl Written {
    /// `wrote A, B` (or `wrote nothing`), then each failure after a `; `.
    pub fn line(&self) -> String {
        let mut line =
            format!("wrote {}", if self.files.is_empty() { "nothing".to_string() } else { self.files.join(", ") });
        for f in &self.failed {
            line.push_str("; ");
            line.push_str(f);
        }
        line
    }
}

/// A stopped session's profile, kept for `dump` after `stop` (no JVM access any more).
pub struct Finished(Processor);

impl Finished {
    pub fn dump(&mut self, path: &str, format: OutputFormat, target: Target) -> Result<String, String> {
        self.0.dump(path, format, target)
    }

    /// Samples in the profile.
    pub fn samples(&self) -> u64 {
        self.0.tree.cct.total_samples()
    }

    /// The JFR the session kept for `dump` when it had no JFR file: how much, and where.
    pub fn jfr_kept(&self) -> Option<hpm_core::jfr::memory::KeptNow> {
        self.0.jfr_mem.as_ref().map(|m| m.now())
    }
}

struct Processor {
    /// Free batches a round leaves in the pool when rounds are stretched (0: they are not).
    stretched_free: usize,
    rec: Recording,
    /// The calling context tree and the stack table, with their memos.
    tree: TreeFeed,
    resolver: SampleResolver,
    /// Method names and lines through JVMTI; only on the processor thread, dropped at the end.
    methods: Option<JvmtiMethods>,
    pending: Vec<(BatchHandle, usize)>,
    jfr: Vec<JfrFileWriter>,
    /// JFR files completed at stop (renamed from `.part`, or not if their name was taken),
    /// kept open for dumps after stop.
    jfr_done: Vec<JfrFileWriter>,
    /// The session's other outputs, written at the end.
    outputs: Vec<Output>,
    chunk_start: u64,
    /// Records (samples, and `sampler=chain`'s anchors) resolved after a later one (their batch
    /// came after the watermark passed them): said in the summary.
    late: u64,
    /// The time of the latest sample resolved.
    last_resolved: u64,
    /// `interval=auto`: Chilingarova & Safonov's self-tuning controller.
    tuner: Option<SelfTuner>,
    /// CPU the processing thread used (its own cost, reported in the summary).
    cpu_ns: u64,
    /// The thread's CPU when sampling began and when the last sample was resolved: the
    /// processing before the samplers ran, resolving their samples, and making the outputs
    /// (`sampler=chain`'s completion included).
    phase_ns: [u64; 2],
    /// Of which, reading what a process reads once (symbol tables, every jmethodID's slot)
    /// and later sessions reuse.
    once_ns: u64,
    /// Of which, read before sampling began.
    once_at_start: u64,
    /// Chunks written while sampling (every `flush` seconds, and `hpm dump`s) and the CPU they
    /// took: making the outputs, though before the last sample was resolved.
    early_chunks: u64,
    early_chunks_ns: u64,
    /// The JFR keys of the method table's strings, kept across chunks and sessions with the
    /// table they number.
    jfr_keys: TableKeys,
    /// JFR chunks kept when the session writes no JFR file, so `dump,file=X.jfr` can still
    /// write one: at most [`JFR_MEMORY_LIMIT`] bytes, oldest dropped first.
    jfr_mem: Option<ChunkMemory>,
    /// JFR chunks written (to files or memory).
    chunks: u64,
    /// Regions and phase markers from the Java bridge, written with the next chunk.
    marks: Vec<hpm_core::jfr::marks::Mark>,
    code_events: Vec<CodeEvent>,
    gc_events: Vec<(bool, u64)>,
    /// `alloc` / `lock`: a record to resolve the JVM events' stacks through (as the timer
    /// samplers' stacks are), class names shared, and totals per kind for the summary.
    events: events::EventState,
    /// `sampler=chain`: the run's quadruples and each held sample's outermost key.
    chain: Option<chain::ChainState>,
    inputs: Arc<Inputs>,
}

/// Nodes the session's calling context tree makes for frames at most (its nodes are ~128
/// bytes, with their memos here a few hundred): a session that meets new stacks for as long as
/// it runs (code generated all the time, a compiler's varied recursion) would otherwise grow
/// the tree without end. Past it, new paths end in a `[tree full]` node (`Cct::with_limit`);
/// the JFR output keeps their stacks whole.
const MAX_TREE_NODES: usize = 1 << 18;

/// Methods a session names at most (a few hundred bytes each with their names, ~64 MB): past
/// it a new method is `[method table full]` (`MethodTable::set_limit`). A session names a few
/// thousand (docs/benchmarks.md); a program that generates code all the time, without end.
const MAX_SESSION_METHODS: usize = 1 << 17;

/// Entries and frames of the session's stack table at most (pprof, JSON: a stack's entry holds
/// its frames twice, 8 bytes each, so 64 MB at most): past them a new stack is entered as one
/// `[stack table full]` frame (`StackTable::with_limit`).
const MAX_TABLE_ENTRIES: usize = 1 << 17;
const MAX_TABLE_FRAMES: usize = 4 << 20;

/// The session's calling context tree, bounded.
fn new_tree(rec: &Recording) -> Cct {
    Cct::with_limit(rec.counters.clone(), MAX_TREE_NODES)
}

/// The session's stack table: bounded when the session fills it (`keep_table`).
fn new_table(rec: &mut Recording, keep_table: bool) -> StackTable {
    if !keep_table {
        return StackTable::default();
    }
    let full = rec.methods.intern(hpm_core::model::MethodInfo::native(hpm_core::output::stacks::STACK_TABLE_FULL));
    StackTable::with_limit(hpm_core::output::stacks::TableLimit {
        entries: MAX_TABLE_ENTRIES,
        frames: MAX_TABLE_FRAMES,
        full,
    })
}

/// Starts the processing thread of a session, which writes `outputs` (the JFR ones from now on).
pub fn start(inputs: Inputs, outputs: Vec<Output>) -> Result<ProcessorHandle, String> {
    let inputs = Arc::new(inputs);
    let (requests, inbox) = mpsc::channel::<Request>();
    let (started_tx, started_rx) = mpsc::channel();
    let join = std::thread::Builder::new()
        .name("hpm-processor".into())
        .spawn(move || run(inputs, outputs, inbox, started_tx))
        .map_err(|e| format!("cannot start the processing thread: {e}"))?;
    match started_rx.recv() {
        Ok(Ok(())) => Ok(ProcessorHandle { requests, join }),
        Ok(Err(e)) => {
            let _ = join.join();
            Err(e)
        }
        Err(_) => Err("the processing thread failed to start".into()),
    }
}

/// How many [`ROUND`]s each of the processing thread's rounds may last: 1, 2 or 4. A round
/// has a cost of its own, whatever it finds: waking the thread, syncing threads and code
/// events, looking for samples (~60 us here, an idle JVM at 10 ms: mostly the futex wake-up on
/// this VM). At 10 ms under the signal sampler that was most of what the processing thread
/// spent while a program ran. So where samples come slowly a round lasts longer: under the
/// signal sampler with CPU samples only (`alloc` and `lock` events have queues of their own)
/// at a fixed clock interval, as long as every sample a round can bring (one per period per
/// CPU) finds a free batch of its own: at most [`STRETCH_SAMPLES`]. The other samplers keep [`ROUND`]:
/// `sampler=chain`'s rings, the timer samplers' queues and `interval=auto`'s changing rate are
/// sized for it.
fn round_units(opts: &Options, period: u64, unit: PeriodUnit, cpus: u64) -> u64 {
    let slow_clock = opts.cpu
        && opts.alloc.is_none()
        && opts.lock.is_none()
        && crate::source::traits(opts).stretch_rounds
        && matches!(opts.interval, Interval::Fixed(_))
        && unit == PeriodUnit::Nanoseconds;
    let mut units = if slow_clock { MAX_ROUND_UNITS } else { 1 };
    while units > 1 && round_samples(units, period, cpus) > STRETCH_SAMPLES {
        units /= 2;
    }
    units
}

/// The most samples a clock event with `period` (ns) brings in `units` rounds on `cpus` CPUs.
fn round_samples(units: u64, period: u64, cpus: u64) -> usize {
    (cpus.saturating_mul(units * ROUND.as_nanos() as u64) / period.max(1)) as usize
}

fn run(inputs: Arc<Inputs>, outputs: Vec<Output>, inbox: Receiver<Request>, started: Sender<Result<(), String>>) {
    // Never profile ourselves: excluded before start() returns and before the VM sees us.
    let tid = crate::os::gettid();
    inputs.threads.exclude(tid);
    let attached = match inputs.vm.attach_daemon(c"hpm-processor") {
        Ok(a) => a,
        Err(e) => {
            inputs.threads.include(tid);
            let _ = started.send(Err(e));
            return;
        }
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let units = round_units(&inputs.opts, inputs.event.period, inputs.event.unit, cpus);
    let mut p = Processor::new(inputs.clone(), outputs, &attached);
    // Stretched rounds keep a free batch for each sample a round may bring, with a margin: a
    // round may sleep longer than asked, and each thread's clock carries part of a period
    // over from the last round.
    if units > 1 {
        p.stretched_free = round_samples(units + 1, inputs.event.period, cpus) + POOL_STEP / 2;
    }
    p.phase_ns[0] = thread_cpu_ns();
    p.once_at_start = p.once_so_far();
    let _ = started.send(Ok(()));
    inputs.live.served_by(Some(std::thread::current()));
    // Rounds are counted in 50 ms units since the start, by the clock (a request or a live
    // query may wake the thread early); `scanned`: the unit of the last thread scan.
    let start = now_ticks();
    let mut scanned = 0u64;
    let mut full_names = crate::threads::full_names::FullNames::default();
    let finish = loop {
        // Stretched while the pool has a free batch for every sample the round may bring
        // (each round grows it so; at its capacity, rounds stay short).
        let stretch = p.stretched_free > 0 && inputs.sink.pool.free_batches() >= p.stretched_free;
        let now_units = if stretch { units } else { 1 };
        std::thread::park_timeout(ROUND * now_units as u32);
        let round = now_ticks().saturating_sub(start) / ROUND.as_nanos() as u64;
        let scan = round >= scanned + SCAN_UNITS;
        if scan {
            scanned = round;
        }
        inputs.sampler.tick(round, scan);
        full_names.round(inputs.threads, attached.env());
        p.round(false);
        let mut finish = None;
        while let Ok(r) = inbox.try_recv() {
            match r {
                Request::Dump { path, format, target, reply } => {
                    let _ = reply.send(p.dump(&path, format, target));
                }
                Request::Finish { extra, reply } => finish = Some((extra, reply)),
            }
        }
        if let Some(f) = finish {
            break f;
        }
    };
    let (extra, reply) = finish;
    inputs.live.served_by(None);
    // The samplers have stopped: everything they wrote is in the pool now.
    p.round(true);
    let mut written = p.write_outputs();
    for o in extra {
        match p.dump(&o.path, o.format, o.target) {
            Ok(_) => written.files.push(o.path),
            Err(e) => {
                eprintln!("hpm: {e}");
                written.failed.push(e);
            }
        }
    }
    inputs.code.end_session(std::mem::take(&mut p.resolver.timeline));
    inputs.code.keep_native(p.resolver.take_native());
    let keys = std::mem::take(&mut p.jfr_keys);
    inputs.code.keep_java(p.resolver.take_java(&mut p.rec.methods).map(|n| (n, keys)));
    p.once_ns = p.once_so_far();
    p.methods = None;
    p.cpu_ns = thread_cpu_ns();
    p.print_cost();
    drop(attached);
    inputs.threads.include(tid);
    let _ = reply.send((written, Finished(p)));
}

/// The signal hpm sampled with and the signals that were not its own, when either is worth a
/// line: hpm moved, or samples with another signal than its first choice, or passed signals on.
fn signal_line(stats: &SignalStats, signal: i32) -> Option<String> {
    let (foreign, moves) = (stats.foreign.load(Ordering::Relaxed), stats.moves.load(Ordering::Relaxed));
    if stats.no_signal_left.load(Ordering::Relaxed) > 0 {
        return Some(format!(
            "signals: SAMPLING STOPPED before the end: after {moves} moves no signal of {} was free; the profile \
             covers the time before only; {foreign} signals that were not hpm's ignored",
            crate::signal::SAMPLE_SIGNALS.map(crate::signal::signal_name).join(", ")
        ));
    }
    let first = crate::signal::SAMPLE_SIGNALS[0];
    if stats.signals.load(Ordering::Relaxed) == 0 && foreign == 0 && moves == 0 {
        return None;
    }
    if foreign == 0 && moves == 0 && signal == first {
        return None;
    }
    let why = if moves > 0 {
        let times = if moves == 1 { "once".to_string() } else { format!("{moves} times") };
        format!(", moved {times} (another handler took hpm's signal, or it was reset)")
    } else if signal != first {
        format!(" ({} has another handler)", crate::signal::signal_name(first))
    } else {
        String::new()
    };
    Some(format!(
        "signals: sampled with {}{why}; {foreign} signals that were not hpm's (kill, another profiler's perf \
         events) ignored",
        crate::signal::signal_name(signal)
    ))
}

/// The controller for `interval=auto`: bounds suit the event (10us..1s for clock events).
fn tuner_for(inputs: &Inputs) -> Option<SelfTuner> {
    let mut cfg = TunerConfig::default();
    let period = inputs.event.period;
    if inputs.event.unit != PeriodUnit::Nanoseconds {
        cfg.min_interval = (period / 100).max(1);
        cfg.max_interval = period.saturating_mul(100);
    }
    match SelfTuner::new(cfg, period) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("hpm: interval=auto disabled: {e}");
            None
        }
    }
}

impl Processor {
    fn new(inputs: Arc<Inputs>, all_outputs: Vec<Output>, attached: &crate::jnienv::AttachedThread) -> Processor {
        let mut rec = Recording {
            start_wall_ns: inputs.start_wall_ns,
            start_ticks: inputs.start_ticks,
            end_ticks: inputs.start_ticks,
            pid: std::process::id(),
            jvm: inputs.jvmti.system_property("java.vm.version").map(|v| format!("HotSpot {v}")).unwrap_or_default(),
            event: EventInfo { alloc_interval: inputs.opts.alloc.unwrap_or(0), ..inputs.event.clone() },
            counters: inputs.counters.clone(),
            counter_periods: inputs.counter_periods.clone(),
            ..Default::default()
        };
        let mut resolver = SampleResolver::default();
        resolver.counter_periods = inputs.counter_periods.clone();
        resolver.cpu_clock = Some(thread_cpu_ns);
        resolver.data_addresses = inputs.opts.event.data_address && crate::source::traits(&inputs.opts).data_addresses;
        resolver.decode_instructions = inputs.opts.data;
        // A uprobe on ObjectMonitor: the monitors' objects are named, with or without `data`.
        let probe = inputs.opts.event.probe.is_some() && inputs.event.name == inputs.opts.event.name;
        resolver.monitor_object = probe
            .then(|| crate::vmstructs::table().ok().and_then(|t| t.fields.get("ObjectMonitor::_object").copied()))
            .flatten();
        let heap = inputs.heap.or_else(|| probe.then(|| crate::vmstructs::heap_layout().ok()).flatten());
        resolver.objects = heap.and_then(|h| {
            let narrow_oops = crate::vmstructs::flag("UseCompressedOops").unwrap_or(0) != 0;
            let t = crate::vmstructs::table().ok()?;
            match hpm_core::objects::ClassLayout::from_table(t, narrow_oops) {
                Ok(c) => Some(hpm_core::objects::Identifier::new(h.header, c)),
                Err(e) => {
                    eprintln!("hpm: data objects: not identified: {e}");
                    None
                }
            }
        });
        resolver.set_native(inputs.code.take_native());
        resolver.symbolizer.refresh_unless(crate::os::loader_counts(), now_ticks());
        let (timeline, gc_open) = inputs.code.begin_session();
        resolver.set_timeline(timeline);
        if let Some(t) = gc_open {
            resolver.gc_start(t);
        }
        // The JFR files grow as PATH.part from now on; the other outputs wait for the end.
        let mut jfr = Vec::new();
        let mut outputs = Vec::new();
        for o in all_outputs {
            if o.format == OutputFormat::Jfr {
                match JfrFileWriter::from_target(o.target) {
                    Ok(w) => jfr.push(w),
                    Err(e) => eprintln!("hpm: {e}"),
                }
            } else {
                outputs.push(o);
            }
        }
        let jfr_mem = jfr
            .is_empty()
            .then(|| ChunkMemory::new(JFR_MEMORY_LIMIT, Spill::open(inputs.spill_dirs, JFR_MEMORY_LIMIT)));
        let keep_table = inputs.opts.data
            || crate::source::traits(&inputs.opts).completes_stacks
            || outputs.iter().any(|o| matches!(o.format, OutputFormat::Pprof | OutputFormat::Json));
        let tuner = (inputs.opts.interval == Interval::Auto).then(|| tuner_for(&inputs)).flatten();
        let walker = inputs.walker.map(|l| (inputs.code, l));
        let mut methods = JvmtiMethods::new(inputs.jvmti, attached.env(), walker);
        // Before the sampler starts (the session waits for it): a first round that read them
        // instead took ~150 ms while the threads' samples filled the pool.
        resolver.preload(inputs.event.kernel == hpm_core::model::KernelMode::Sampled);
        methods.preload();
        let methods = Some(methods);
        inputs.sink.grow(inputs.sink.start_batches.max(POOL_STEP));
        let chain = crate::source::traits(&inputs.opts).completes_stacks.then(|| {
            resolver.chain_groups = Some(Default::default());
            chain::ChainState::default()
        });
        let mut jfr_keys = TableKeys::default();
        // After `chain_groups` is set: stacks named for another grouping are not reused.
        if let Some((names, keys)) = inputs.code.take_java() {
            rec.methods = resolver.set_java(names);
            jfr_keys = keys;
        }
        rec.methods.set_limit(MAX_SESSION_METHODS);
        let stacks = new_table(&mut rec, keep_table);
        Processor {
            stretched_free: 0,
            tree: TreeFeed::new(new_tree(&rec), stacks, keep_table, inputs.opts.per_thread),
            rec,
            resolver,
            methods,
            pending: Vec::new(),
            jfr,
            jfr_done: Vec::new(),
            outputs,
            chunk_start: inputs.start_ticks,
            late: 0,
            last_resolved: 0,
            tuner,
            cpu_ns: 0,
            phase_ns: [0; 2],
            once_ns: 0,
            early_chunks: 0,
            early_chunks_ns: 0,
            once_at_start: 0,
            jfr_mem,
            chunks: 0,
            marks: Vec::new(),
            code_events: Vec::new(),
            gc_events: Vec::new(),
            events: events::EventState::default(),
            chain,
            jfr_keys,
            inputs,
        }
    }

    fn round(&mut self, last: bool) {
        let inputs = self.inputs.clone();
        // Before the thread sync: a mark's thread is registered before the mark is queued.
        self.marks.extend(inputs.live.take_marks().into_iter().filter(|m| m.time() >= inputs.start_ticks));
        if inputs.threads.sync(&mut self.rec.threads) && inputs.opts.per_thread {
            // Per-thread roots are named by the thread: a renamed thread's stacks hang anew.
            self.tree.forget_stacks();
        }
        inputs.code.drain(&mut self.code_events, &mut self.gc_events);
        for ev in self.code_events.drain(..) {
            self.resolver.timeline.push(ev);
        }
        for (start, t) in self.gc_events.drain(..) {
            if start {
                self.resolver.gc_start(t);
            } else {
                self.resolver.gc_finish(t);
                if let Some(m) = &mut self.methods {
                    hpm_core::resolve::JavaMethods::collected(m);
                }
            }
        }
        let pool = &inputs.sink.pool;
        let before = self.pending.len();
        self.pending.extend(pool.take_full().into_iter().map(|h| (h, 0)));
        inputs.threads.steal_all(|h| self.pending.push((h, 0)));
        if let Some(h) = inputs.sink.timer_queue.steal() {
            self.pending.push((h, 0));
        }
        let taken = self.pending.len() - before;
        // While this round resolves, the samplers must find batches.
        if pool.free_batches() < POOL_STEP / 2 {
            inputs.sink.grow(POOL_STEP);
        }
        let now = now_ticks();
        let watermark = if last { u64::MAX } else { now.saturating_sub(SETTLE_NS) };
        self.resolve_up_to(watermark);
        // Code events wait for the samples they are ordered with, and none comes older than
        // the watermark (a late one meets the code map as it stands, as after any later
        // sample): a session without samples (`event=lock` in a program that never contends)
        // kept every code load, with its scopes, until its end.
        self.resolver.timeline.advance_to(watermark);
        // Resolved batches are free again: what is missing for a stretched round is added, and
        // for a round that brings as many batches as this one (a sampler faster than the
        // start's allocation, the wall sampler on many threads, finds them within a round).
        let free = pool.free_batches();
        if free < self.stretched_free && !last {
            inputs.sink.grow(self.stretched_free - free);
        }
        let grow = hpm_core::pool_size::to_grow(pool.free_batches(), taken);
        if grow > 0 && !last {
            inputs.sink.grow(grow);
        }
        self.add_jvm_events();
        // Another agent may have taken Unsafe.park from hpm's function since the last round.
        if inputs.opts.lock.is_some() && !last {
            if let Some(note) = inputs.vm.env().and_then(|env| inputs.events.keep_park(env)) {
                if !inputs.opts.quiet {
                    eprintln!("hpm: {note}");
                }
            }
        }
        // Debug files found but refused while naming native frames (once per library).
        for note in self.resolver.symbolizer.take_notes() {
            if !inputs.opts.quiet {
                eprintln!("hpm: native names: {note}");
            }
        }
        if inputs.live.wanted() {
            self.tree_ready();
            inputs.live.serve(&self.tree.cct);
        }
        self.rec.end_ticks = now;
        if last {
            // Every sample is resolved: what follows makes the outputs.
            self.phase_ns[1] = thread_cpu_ns();
            self.complete_chain();
        }
        // `sampler=chain` holds its samples until their stacks are completed at the end.
        let due = now.saturating_sub(self.chunk_start) >= inputs.opts.flush_secs.saturating_mul(1_000_000_000)
            && self.chain.as_mut().is_none_or(|c| c.may_flush(self.rec.samples.len()));
        if last || due {
            self.flush_chunk(now);
        }
    }

    /// Adds a resolved sample to the recording, the calling context tree and the stack table.
    /// `sampler=chain` adds held samples to the tree only when something reads it (a live
    /// query, a dump, a flush): their stacks are completed, and the tree rebuilt, at the end.
    fn add(&mut self, s: Sample) {
        let deferred = self.chain.as_ref().is_some_and(chain::ChainState::defers_tree);
        if !deferred {
            self.tree.add(&s, &self.rec, self.resolver.interner());
        }
        self.rec.samples.push(s);
        if let Some(c) = &mut self.chain {
            c.held(self.rec.samples.len(), !deferred);
        }
    }

    /// The tree as the outputs and queries read it: every sample in it, the totals filled
    /// (each sample adds to its leaf alone: [`Cct::add_self_at`]).
    fn tree_ready(&mut self) {
        self.tree_catch_up();
        self.tree.cct.fill_totals();
    }

    /// Adds the held samples the tree lacks (`sampler=chain`), as walked so far.
    fn tree_catch_up(&mut self) {
        let Some(from) = self.chain.as_ref().map(chain::ChainState::in_tree) else { return };
        if from >= self.rec.samples.len() {
            return;
        }
        for s in &self.rec.samples[from..] {
            self.tree.add(s, &self.rec, self.resolver.interner());
        }
        if let Some(c) = &mut self.chain {
            c.tree_has(self.rec.samples.len());
        }
    }

    /// Starts the tree and the stack table again, empty, with every memo of their nodes and
    /// entries.
    fn reset_tree(&mut self) {
        let stacks = new_table(&mut self.rec, self.tree.keeps_table());
        self.tree.reset(new_tree(&self.rec), stacks);
    }

    /// Resolves pending samples stamped at or before `watermark`, oldest first. Each batch is
    /// in time order (one thread's samples), so what is resolved of it is a prefix.
    fn resolve_up_to(&mut self, watermark: u64) {
        let inputs = self.inputs.clone();
        let pool = &inputs.sink.pool;
        let mut order: Vec<(u64, usize, usize)> = Vec::new();
        for (bi, (h, done)) in self.pending.iter().enumerate() {
            for (j, c) in pool.get(h).filled().iter().enumerate().skip(*done) {
                if c.raw.time <= watermark {
                    order.push((c.raw.time, bi, j));
                }
            }
        }
        order.sort_unstable();
        // Taken out for the loop (resolving borrows it while the recording grows).
        let Some(mut methods) = self.methods.take() else { return };
        let captures = order.iter().map(|&(_, bi, j)| &pool.get(&self.pending[bi].0).filled()[j]);
        self.resolver.prefetch_methods(&mut methods, captures);
        for (k, &(t, bi, j)) in order.iter().enumerate() {
            // The next record's first lines come in while this one is resolved.
            if let Some(&(_, nb, nj)) = order.get(k + 1) {
                pool.get(&self.pending[nb].0).filled()[nj].prefetch();
            }
            if t < self.last_resolved {
                self.late += 1;
            }
            self.last_resolved = self.last_resolved.max(t);
            let c = &pool.get(&self.pending[bi].0).filled()[j];
            let s = if c.deep == 0 {
                self.resolver.resolve(&mut self.rec, &mut methods, c)
            } else {
                let deep = inputs.sink.take_deep(c.deep);
                self.resolver.resolve_deep(&mut self.rec, &mut methods, c, &deep)
            };
            let mut top = None;
            if let Some(ch) = &mut self.chain {
                match ch.observe(&s, c, self.resolver.chain_groups.as_ref()) {
                    Some(t) => top = t,
                    None => {
                        // An anchor: the tree's structure only.
                        self.pending[bi].1 = self.pending[bi].1.max(j + 1);
                        continue;
                    }
                }
            }
            if c.kernel_periods > 0 {
                // Kernel time counted, not sampled: one sample per period spent there.
                let k = self.resolver.kernel_time_sample(&mut self.rec, &s);
                for _ in 0..c.kernel_periods {
                    self.add(k.clone());
                }
            }
            if let (Some(t), Some(top)) = (self.tuner.as_mut(), s.stack.first()) {
                if let Some(change) = t.observe(u64::from(s.thread), u64::from(top.method)) {
                    let refused = inputs.sampler.set_period(change.new);
                    self.rec.event.period = change.new;
                    if !inputs.opts.quiet {
                        let kept = if refused > 0 {
                            format!(" ({refused} threads kept the old period)")
                        } else {
                            String::new()
                        };
                        eprintln!("hpm: interval=auto: {change}{kept}");
                    }
                }
            }
            if let Some(ch) = &mut self.chain {
                ch.next = top;
            }
            self.add(s);
            inputs.sink.resolved.fetch_add(1, Ordering::Relaxed);
            self.pending[bi].1 = self.pending[bi].1.max(j + 1);
        }
        self.methods = Some(methods);
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].1 >= pool.get(&self.pending[i].0).len {
                let (h, _) = self.pending.swap_remove(i);
                pool.recycle(h);
            } else {
                i += 1;
            }
        }
    }

    fn update_drops(&mut self) {
        let inputs = &self.inputs;
        let s = inputs.stats;
        let mut drops: Vec<(String, u64)> = vec![
            ("no free sample buffer".into(), inputs.sink.pool.dropped()),
            (
                format!("{}deep frames waiting over the bound", hpm_core::model::PARTIAL_PREFIX),
                inputs.sink.deep_refused.load(Ordering::Relaxed),
            ),
            ("kernel ring overflow".into(), s.kernel_lost.load(Ordering::Relaxed)),
            ("corrupt ring record".into(), s.corrupt_ring.load(Ordering::Relaxed)),
            ("signal for a detached thread".into(), s.no_slot.load(Ordering::Relaxed)),
            ("counter overflow whose group could not be read".into(), s.counter_unread.load(Ordering::Relaxed)),
            ("hpm's signal taken by another handler".into(), s.taken_lost.load(Ordering::Relaxed)),
            ("bridge marks dropped (queue full)".into(), inputs.live.dropped.load(Ordering::Relaxed)),
            ("JVM events dropped (queue full)".into(), inputs.events.dropped.load(Ordering::Relaxed)),
        ];
        for (reason, n) in &self.resolver.stats.failed {
            drops.push((format!("{}{reason}", hpm_core::model::KEPT_PREFIX), *n));
        }
        for (reason, n) in &self.resolver.stats.partial {
            // `sampler=chain`'s walks end where the stack copy does: counted below, after the
            // completion from the tree.
            if self.chain.is_some() && reason == "frame_lost" {
                continue;
            }
            drops.push((format!("{}{reason}", hpm_core::model::PARTIAL_PREFIX), *n));
        }
        if let Some(c) = &self.chain {
            drops.push((format!("{}stack copy ended, no caller known", hpm_core::model::PARTIAL_PREFIX), c.partial()));
        }
        for (reason, n) in inputs.threads.failures().by_reason {
            drops.push((format!("thread not profiled: {reason}"), n));
        }
        drops.retain(|(_, n)| *n > 0);
        self.rec.drops = drops;
    }

    fn flush_chunk(&mut self, now: u64) {
        // Before the last sample is resolved, the chunk's CPU is counted apart from resolving.
        let early = (self.phase_ns[1] == 0).then(thread_cpu_ns);
        self.write_chunk(now);
        if let Some(t) = early {
            self.early_chunks += 1;
            self.early_chunks_ns += thread_cpu_ns().saturating_sub(t);
        }
    }

    fn write_chunk(&mut self, now: u64) {
        // The samples leave the recording: the tree keeps what they count.
        self.tree_catch_up();
        self.update_drops();
        let times = ChunkTimes {
            start_ticks: self.chunk_start,
            end_ticks: now.max(self.chunk_start),
            start_wall_ns: self.rec.start_wall_ns + (self.chunk_start - self.rec.start_ticks),
        };
        if !self.jfr.is_empty() || self.jfr_mem.is_some() {
            let data =
                hpm_core::jfr::encode_chunk_keyed(&self.rec, &self.rec.samples, &self.marks, times, &mut self.jfr_keys);
            for w in &mut self.jfr {
                if let Err(e) = w.write_encoded(&data) {
                    eprintln!("hpm: {e}");
                }
            }
            if let Some(m) = &mut self.jfr_mem {
                m.push(data);
                *self.inputs.sink.jfr_kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(m.now());
            }
            self.chunks += 1;
        }
        self.rec.samples.clear();
        if let Some(c) = &mut self.chain {
            c.flushed();
        }
        self.rec.events.clear();
        self.rec.code.clear();
        self.resolver.chunk_written();
        self.marks.clear();
        self.chunk_start = now;
    }

    /// CPU spent so far reading what a process reads once (symbol tables, every jmethodID).
    fn once_so_far(&self) -> u64 {
        self.resolver.tables_ns + self.methods.as_ref().map_or(0, JvmtiMethods::first_pull_ns)
    }

    /// The agent's own cost, printed with the summary.
    fn print_cost(&self) {
        let inputs = &self.inputs;
        if inputs.opts.quiet {
            return;
        }
        let stats = inputs.stats;
        let sampled_ms = stats.samples.load(Ordering::Relaxed) as f64 * inputs.event.period as f64 / 1e6;
        let handler_ms = stats.handler_ns.load(Ordering::Relaxed) as f64 / 1e6;
        let total_ms = handler_ms + self.cpu_ns as f64 / 1e6;
        let share = if inputs.event.unit == PeriodUnit::Nanoseconds && sampled_ms > 0.0 {
            format!(" ({:.2}% of the sampled CPU time)", total_ms / sampled_ms * 100.0)
        } else {
            String::new()
        };
        let samples = stats.samples.load(Ordering::Relaxed).max(1) as f64;
        let processing_ms = self.cpu_ns as f64 / 1e6;
        let [start_ns, resolved_ns] = self.phase_ns;
        let start_ms = start_ns.min(self.cpu_ns) as f64 / 1e6;
        let early_ns = self.early_chunks_ns.min(resolved_ns.saturating_sub(start_ns));
        let writing_ms = (self.cpu_ns.saturating_sub(resolved_ns) + early_ns) as f64 / 1e6;
        let early = if self.early_chunks > 0 {
            format!(
                " ({:.0} ms of it in {} JFR chunks written while sampling)",
                early_ns as f64 / 1e6,
                self.early_chunks
            )
        } else {
            String::new()
        };
        // What was read once per process while resolving (a library first seen) is not a
        // sample's cost either.
        let once_later = self.once_ns.saturating_sub(self.once_at_start);
        let resolving_ms =
            resolved_ns.saturating_sub(start_ns).saturating_sub(once_later).saturating_sub(early_ns) as f64 / 1e6;
        let once_ms = self.once_ns.min(self.cpu_ns) as f64 / 1e6;
        let once = if once_ms >= 0.5 {
            format!(", {once_ms:.0} ms of it reading symbol tables and method ids once per process")
        } else {
            String::new()
        };
        let per_sample = if stats.samples.load(Ordering::Relaxed) > 0 {
            format!("; per sample {:.1} + {:.1} us", handler_ms * 1e3 / samples, resolving_ms * 1e3 / samples)
        } else {
            String::new()
        };
        let lookups = stats.blob_lookups.load(Ordering::Relaxed);
        let cached = if lookups > 0 {
            let share = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed) as f64 * 100.0 / lookups as f64;
            format!(
                "; code blobs the walker looked up found in the thread's last walk {:.0}%, in the shared cache {:.0}%",
                share(&stats.blob_memo_hits),
                share(&stats.blob_hits)
            )
        } else {
            String::new()
        };
        let descheduled = stats.descheduled.load(Ordering::Relaxed);
        let preempted = if descheduled > 0 {
            format!(
                " (and {:.0} ms in {descheduled} handlers preempted, not counted: other threads ran)",
                stats.descheduled_ns.load(Ordering::Relaxed) as f64 / 1e6
            )
        } else {
            String::new()
        };
        eprintln!(
            "hpm: agent CPU {total_ms:.0} ms{share}: signal handler {handler_ms:.0} ms{preempted}, processing \
             {processing_ms:.0} ms ({start_ms:.0} ms starting, {resolving_ms:.0} ms resolving, {writing_ms:.0} ms making \
             the outputs{early}{once}){per_sample}{cached}"
        );
        if stats.samples.load(Ordering::Relaxed) > 0 {
            // The JVM's events (`alloc`, `lock`) have stacks named as the samples' are.
            let (stacks, events) = (self.resolver.stacks_made(), self.events.count());
            let line = self.resolver.stats.first_sightings_line(stacks, samples as u64, events);
            eprintln!("hpm: {line}");
            if let Some(line) = hpm_core::phase_timing::take_line(samples as u64) {
                eprintln!("hpm: {line}");
            }
        }
        if let Some(line) = self.events_line() {
            eprintln!("hpm: {line}");
        }
        if let Some(line) = signal_line(stats, inputs.threads.signal()) {
            eprintln!("hpm: {line}");
        }
        if self.late > 0 {
            eprintln!(
                "hpm: late records: {} reached the processing thread after later ones were resolved (more than {} ms \
                 after they were taken) and were placed by the code map as it stood then: a compiled frame whose code \
                 was unloaded in between is left unnamed, or misnamed where other code took its place",
                self.late,
                SETTLE_NS / 1_000_000
            );
        }
        let past = self.rec.methods.past_limit();
        if past > 0 {
            eprintln!(
                "hpm: the method table reached its bound of {MAX_SESSION_METHODS} methods: methods new after it (met \
                 {past} times) are `{}` in every output",
                hpm_core::model::METHOD_TABLE_FULL
            );
        }
        let cut = self.tree.stacks.cut_samples();
        if cut > 0 {
            eprintln!(
                "hpm: the stack table (pprof, JSON) reached its bound of {MAX_TABLE_ENTRIES} stacks or {MAX_TABLE_FRAMES} \
                 frames: {cut} samples there have the one frame `{}` (the JFR output keeps their stacks)",
                hpm_core::output::stacks::STACK_TABLE_FULL
            );
        }
        let cut = self.tree.cct.cut_samples();
        if cut > 0 {
            eprintln!(
                "hpm: the calling context tree reached its bound of {MAX_TREE_NODES} nodes: {cut} samples' stacks end in \
                 `{}` below their last frame the tree had, in the collapsed stacks, flame graphs and summary (the JFR \
                 output keeps them whole); shorter sessions keep every path",
                hpm_core::cct::TREE_FULL
            );
        }
        if let Some(line) = self.resolver.stats.compare.line() {
            eprintln!("hpm: {line}");
        }
        if let Some(line) = self.resolver.stats.data.line() {
            eprintln!("hpm: {line}");
        }
        if let Some(line) = self.resolver.objects.as_ref().and_then(|o| o.stats.line()) {
            eprintln!("hpm: {line}");
        }
        let captures = stats.data_captures.load(Ordering::Relaxed);
        if captures > 0 {
            let ns = stats.data_ns.load(Ordering::Relaxed) as f64;
            let translate = self.resolver.objects.as_ref().map_or(0, |o| o.stats.translate_ns);
            let translated = self.resolver.objects.as_ref().map_or(0, |o| o.stats.spaces.iter().sum::<u64>());
            eprintln!(
                "hpm: data cost: capture {:.2} us per sample in the handler ({} samples), translation {:.2} us per address",
                ns / 1e3 / captures as f64,
                captures,
                translate as f64 / 1e3 / translated.max(1) as f64
            );
        }
        if self.resolver.stats.unnamed_frames > 0 {
            eprintln!(
                "hpm: {} frames of hpm's walker left out: their Method* matched no jmethodID the agent knows",
                self.resolver.stats.unnamed_frames
            );
        }
        let not_copied = CodeBytes::not_copied();
        eprintln!(
            "hpm: compiled code: {:.1} MB of instructions held for `hpm report --instructions` ({} MB at most){}",
            CodeBytes::held() as f64 / (1 << 20) as f64,
            hpm_core::codemap::CODE_BYTES_BUDGET >> 20,
            if not_copied > 0 { format!(", {not_copied} methods not copied") } else { String::new() }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_stretch_where_every_sample_of_a_round_finds_a_batch_of_its_own() {
        let (ns, events) = (PeriodUnit::Nanoseconds, PeriodUnit::Events);
        let cases = [
            // 2 CPUs: up to 64 samples a round.
            ("interval=1ms", 1_000_000, ns, 2, 1),
            ("interval=100us", 100_000, ns, 2, 1),
            ("interval=2ms", 2_000_000, ns, 2, 1),
            ("interval=4ms", 4_000_000, ns, 2, 2),
            ("interval=10ms", 10_000_000, ns, 2, 4),
            ("interval=1s", 1_000_000_000, ns, 2, 4),
            // More CPUs bring more samples a round.
            ("interval=10ms", 10_000_000, ns, 16, 1),
            ("interval=100ms", 100_000_000, ns, 16, 4),
            ("interval=10ms", 10_000_000, ns, 1, 4),
            // Others keep 50 ms rounds: a count-based event, a changing period, the samplers
            // whose rings and queues are sized for them, JVM events with their own queue.
            ("event=page-faults,interval=10", 10, events, 2, 1),
            ("interval=auto", 10_000_000, ns, 2, 1),
            ("sampler=chain,interval=10ms", 10_000_000, ns, 2, 1),
            ("sampler=jvmti,interval=10ms", 10_000_000, ns, 2, 1),
            ("event=wall,interval=10ms", 10_000_000, ns, 2, 1),
            ("event=alloc", 10_000_000, ns, 2, 1),
            ("event=cpu,alloc,interval=10ms", 10_000_000, ns, 2, 1),
            ("event=cpu,lock,interval=10ms", 10_000_000, ns, 2, 1),
        ];
        for (options, period, unit, cpus, want) in cases {
            let opts = hpm_core::options::parse(options).expect(options);
            assert_eq!(round_units(&opts, period, unit, cpus), want, "{options} on {cpus} CPUs");
        }
    }

    /// The summary's signal line: quiet when nothing happened, the moves when hpm moved, and
    /// loud when sampling stopped for want of a free signal (the summary said 'none dropped').
    #[test]
    fn the_signal_line_says_when_sampling_stopped() {
        let first = crate::signal::SAMPLE_SIGNALS[0];
        let stats = SignalStats::default();
        stats.signals.store(100, Ordering::Relaxed);
        assert_eq!(signal_line(&stats, first), None);
        stats.moves.store(2, Ordering::Relaxed);
        let moved = signal_line(&stats, crate::signal::SAMPLE_SIGNALS[1]).unwrap();
        assert!(moved.contains("sampled with SIGWINCH, moved 2 times"), "{moved}");
        stats.no_signal_left.store(1, Ordering::Relaxed);
        let stopped = signal_line(&stats, first).unwrap();
        assert!(stopped.starts_with("signals: SAMPLING STOPPED before the end: after 2 moves"), "{stopped}");
        stats.reset();
        assert_eq!(signal_line(&stats, first), None);
    }
}
