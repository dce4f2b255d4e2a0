//! The background processing thread (Chilingarova & Safonov's "manager"): one runs per
//! profiling session, with the narrow [`Inputs`] the session gives it. It is a pipeline of
//! parts, each in its own module: the [`intake`] takes the sample batches and hands their
//! records on in time order up to a watermark; the resolver (`hpm_resolve::resolve`, built from
//! its config here) names them against the code map; the feeds of the sources' own records
//! ([`crate::feed`]) join the recording through it; a stack completer ([`crate::complete`]),
//! when a source gives one, may hold the samples to complete their stacks at the end; the
//! [`sinks`] (calling context tree, JFR chunks, the self-tuner) take the samples; at the end
//! the outputs are written ([`write`]) and the agent's cost is reported ([`cost`]). It answers
//! `dump` requests while it runs, does the session's last round and writes its files on its
//! own thread (the one attached to the VM for the JVMTI calls that name methods), and its
//! finished profile answers dumps after `stop`.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::options::{Options, OutputFormat};
use hpm_profile::codemap::CodeEvent;
use hpm_profile::jfr::writer::ChunkTimes;
use hpm_profile::model::{EventInfo, Recording, Sample, ThreadIdx};
use hpm_profile::outfile::Target;
use hpm_resolve::resolve::{ResolverConfig, SampleResolver};

use crate::code::CodeEvents;
use crate::complete::StackCompleter;
use crate::feed::{EventFeed, FeedCtx};
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::live::Live;
use crate::methods::JvmtiMethods;
use crate::os::{now_ticks, thread_cpu_ns};
use crate::signal::SignalStats;
use crate::sink::Sink;
use crate::source::{EventSource, SourceTraits};
use crate::threads::Threads;

mod cost;
mod intake;
mod sinks;
mod write;

pub(crate) use intake::ROUND;
use intake::{Intake, POOL_STEP, SETTLE_NS};
pub use sinks::jfr::JFR_MEMORY_LIMIT;
pub use sinks::push::{resource as push_resource, Push};
use sinks::{Chunk, Named, ProfileSink, Sinks};

/// Methods a session names at most (a few hundred bytes each with their names, ~64 MB): past
/// it a new method is `[method table full]` (`MethodTable::set_limit`). A session names a few
/// thousand (docs/benchmarks.md); a program that generates code all the time, without end.
const MAX_SESSION_METHODS: usize = 1 << 17;

/// The samplers look for new threads at most this many [`ROUND`]s apart (listing the
/// process's tasks costs ~35 us).
const SCAN_UNITS: u64 = 4;

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
    /// What the session's event sources declared, together (the session's plan).
    pub traits: SourceTraits,
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
    pub walker: Option<&'static hpm_capture::hotspot::Layout>,
    /// `data` with the heap's layout: samples' objects are identified.
    pub heap: Option<&'static hpm_capture::javaheap::HeapLayout>,
    pub live: &'static Live,
    pub stats: &'static SignalStats,
    pub jvmti: Jvmti,
    pub vm: Vm,
    /// Where a session without a JFR file keeps its JFR for `dump`, tried in order.
    pub spill_dirs: &'static [std::path::PathBuf],
    /// `push=`: the session's pusher, which the push sink offers each period to.
    pub push: Option<Arc<Push>>,
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
        self.0.sinks.tree.feed.cct.total_samples()
    }

    /// The JFR the session kept for `dump` when it had no JFR file: how much, and where.
    pub fn jfr_kept(&self) -> Option<hpm_profile::jfr::memory::KeptNow> {
        self.0.sinks.jfr.memory.as_ref().map(|m| m.now())
    }
}

/// The session's pipeline and the recording its parts share.
struct Processor {
    intake: Intake,
    resolver: SampleResolver,
    /// Method names and lines through JVMTI; only on the processor thread, dropped at the end.
    methods: Option<JvmtiMethods>,
    /// The sources' stack completer (`sampler=chain`'s): completes the held samples' stacks at
    /// the end.
    completer: Option<Box<dyn StackCompleter>>,
    /// The samples, events and code of the chunk being made, and the session's tables.
    rec: Recording,
    /// The chunk's samples (a prefix) the sinks took with [`ProfileSink::add`]; and whether a
    /// chunk written had some (their stacks cannot be completed any more).
    released: usize,
    released_flushed: bool,
    sinks: Sinks,
    /// The session's other outputs, written at the end.
    outputs: Vec<Output>,
    chunk_start: u64,
    /// Regions and phase markers from the Java bridge, written with the next chunk.
    marks: Vec<hpm_profile::jfr::marks::Mark>,
    /// The sources' feeds of their own records (`alloc` / `lock`), drained each round.
    feeds: Vec<Box<dyn EventFeed>>,
    cost: cost::CostClock,
    inputs: Arc<Inputs>,
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
    let units = intake::round_units(&inputs.opts, inputs.traits, inputs.event.period, inputs.event.unit, cpus);
    let mut p = Processor::new(inputs.clone(), outputs, &attached);
    // Stretched rounds keep a free batch for each sample a round may bring, with a margin: a
    // round may sleep longer than asked, and each thread's clock carries part of a period
    // over from the last round.
    if units > 1 {
        p.intake.stretched_free = intake::round_samples(units + 1, inputs.event.period, cpus) + POOL_STEP / 2;
    }
    p.cost.phase_ns[0] = thread_cpu_ns();
    p.cost.once_at_start = cost::once_so_far(&p.resolver, p.methods.as_ref());
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
        let stretched_free = p.intake.stretched_free;
        let stretch = stretched_free > 0 && inputs.sink.pool.free_batches() >= stretched_free;
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
    let keys = std::mem::take(&mut p.sinks.jfr.keys);
    inputs.code.keep_java(p.resolver.take_java(&mut p.rec.methods).map(|n| (n, keys)));
    p.cost.once_ns = cost::once_so_far(&p.resolver, p.methods.as_ref());
    p.methods = None;
    p.cost.cpu_ns = thread_cpu_ns();
    if !inputs.opts.quiet {
        eprint!("{}", p.cost_report().render());
    }
    drop(attached);
    inputs.threads.include(tid);
    let _ = reply.send((written, Finished(p)));
}

/// The sample of a record's kernel time counted (`kernel=counted`): `k`, its stack below
/// `[kernel]` and its weight one period's, made to stand for `periods` of them.
fn kernel_time(mut k: Sample, periods: u32) -> Sample {
    k.weight = k.weight.saturating_mul(u64::from(periods));
    k.repeat = periods.max(1);
    k
}

/// The resolver's config for the session (`frame_groups` when its stack completer needs them).
fn resolver_config(inputs: &Inputs, frame_groups: bool) -> ResolverConfig {
    // A uprobe on ObjectMonitor: the monitors' objects are named, with or without `data`.
    let probe = inputs.opts.event.probe.is_some() && inputs.event.name == inputs.opts.event.name;
    let monitor_object = probe
        .then(|| crate::vmstructs::table().ok().and_then(|t| t.fields.get("ObjectMonitor::_object").copied()))
        .flatten();
    let heap = inputs.heap.or_else(|| probe.then(|| crate::vmstructs::heap_layout().ok()).flatten());
    let objects = heap.and_then(|h| {
        let narrow_oops = crate::vmstructs::flag("UseCompressedOops").unwrap_or(0) != 0;
        let t = crate::vmstructs::table().ok()?;
        match hpm_resolve::objects::ClassLayout::from_table(t, narrow_oops) {
            Ok(c) => Some(hpm_resolve::objects::Identifier::new(h.header, c)),
            Err(e) => {
                eprintln!("hpm: data objects: not identified: {e}");
                None
            }
        }
    });
    ResolverConfig {
        counter_periods: inputs.counter_periods.clone(),
        cpu_clock: Some(thread_cpu_ns),
        data_addresses: inputs.opts.event.data_address && inputs.traits.data_addresses,
        decode_instructions: inputs.opts.data,
        objects,
        monitor_object,
        frame_groups,
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
        let completer = inputs.sampler.completer();
        let frame_groups = completer.as_ref().is_some_and(|c| c.needs_frame_groups());
        let mut resolver = SampleResolver::new(resolver_config(&inputs, frame_groups));
        resolver.set_native(inputs.code.take_native());
        resolver.symbolizer.refresh_unless(crate::os::loader_counts(), now_ticks());
        let (timeline, gc_open) = inputs.code.begin_session();
        resolver.set_timeline(timeline);
        if let Some(t) = gc_open {
            resolver.gc_start(t);
        }
        let walker = inputs.walker.map(|l| (inputs.code, l));
        let mut methods = JvmtiMethods::new(inputs.jvmti, attached.env(), walker);
        // Before the sampler starts (the session waits for it): a first round that read them
        // instead took ~150 ms while the threads' samples filled the pool.
        resolver.preload(inputs.event.kernel == hpm_profile::model::KernelMode::Sampled);
        methods.preload();
        inputs.sink.grow(inputs.sink.start_batches.max(POOL_STEP));
        // After the config's frame groups: stacks named with other groups are not reused.
        let carried = inputs.code.take_java();
        let carried_keys = carried.map(|(names, keys)| {
            rec.methods = resolver.set_java(names);
            keys
        });
        rec.methods.set_limit(MAX_SESSION_METHODS);
        // The JFR files grow as PATH.part from now on; the other outputs wait for the end.
        let (mut sinks, outputs) = Sinks::new(&inputs, &mut rec, all_outputs, completer.is_some());
        if let Some(keys) = carried_keys {
            sinks.jfr.keys = keys;
        }
        // The live virtual threads are counted over this session from here.
        let _ = inputs.threads.virtual_live.look(now_ticks());
        Processor {
            intake: Intake::default(),
            resolver,
            methods: Some(methods),
            completer,
            rec,
            released: 0,
            released_flushed: false,
            sinks,
            outputs,
            chunk_start: inputs.start_ticks,
            marks: Vec::new(),
            feeds: inputs.sampler.feeds(),
            cost: cost::CostClock::default(),
            inputs,
        }
    }

    fn round(&mut self, last: bool) {
        let inputs = self.inputs.clone();
        // Before the thread sync: a mark's thread is registered before the mark is queued.
        self.marks.extend(inputs.live.take_marks().into_iter().filter(|m| m.time() >= inputs.start_ticks));
        if inputs.threads.sync(&mut self.rec.threads) && inputs.opts.per_thread {
            // Per-thread roots are named by the thread: a renamed thread's stacks hang anew.
            self.sinks.tree.feed.forget_stacks();
        }
        self.code_events();
        // Libraries loaded since the last look get their native unwind tables (`cstack=dwarf`):
        // the symbolizer reads the maps again only when the loader's counts changed.
        if crate::native_tables::due() {
            self.resolver.symbolizer.refresh_unless(crate::os::loader_counts(), now_ticks());
            crate::native_tables::add_new(self.resolver.symbolizer.mappings());
        }
        let taken = self.intake.take(&inputs.sink, inputs.threads);
        let now = now_ticks();
        let watermark = if last { u64::MAX } else { now.saturating_sub(SETTLE_NS) };
        self.resolve_up_to(watermark);
        if let Some((live, ns)) = inputs.threads.virtual_live.look(now) {
            self.rec.virtual_live.add(live, ns);
        }
        // Code events wait for the samples they are ordered with, and none comes older than
        // the watermark (a late one meets the code map as it stands, as after any later
        // sample): a session without samples (`event=lock` in a program that never contends)
        // kept every code load, with its scopes, until its end.
        self.resolver.timeline.advance_to(watermark);
        // Resolved batches are free again: the pool is grown for the next rounds.
        if !last {
            self.intake.refill(&inputs.sink, taken);
        }
        self.drain_feeds();
        // Debug files found but refused while naming native frames (once per library).
        for note in self.resolver.symbolizer.take_notes() {
            if !inputs.opts.quiet {
                eprintln!("hpm: native names: {note}");
            }
        }
        if inputs.live.wanted() {
            self.tree_ready();
            inputs.live.serve(&self.sinks.tree.feed.cct);
        }
        self.rec.end_ticks = now;
        if last {
            // Every sample is resolved: what follows makes the outputs.
            self.cost.phase_ns[1] = thread_cpu_ns();
            self.complete();
        }
        // A stack completer may hold its samples until their stacks are completed at the end.
        let due = now.saturating_sub(self.chunk_start) >= inputs.opts.flush_secs.saturating_mul(1_000_000_000)
            && self.completer.as_mut().is_none_or(|c| c.may_flush(self.rec.samples.len()));
        if last || due {
            self.flush_chunk(now, last);
        }
    }

    /// Applies the code and collection events the JVM posted since the last round.
    fn code_events(&mut self) {
        let (mut code, mut gc): (Vec<CodeEvent>, Vec<(bool, u64)>) = Default::default();
        self.inputs.code.drain(&mut code, &mut gc);
        for ev in code {
            self.resolver.timeline.push(ev);
        }
        for (start, t) in gc {
            if start {
                self.resolver.gc_start(t);
            } else {
                self.resolver.gc_finish(t);
                if let Some(m) = &mut self.methods {
                    hpm_resolve::resolve::JavaMethods::collected(m);
                }
            }
        }
    }

    /// Takes the sources' own records pending since the last round into the recording.
    fn drain_feeds(&mut self) {
        let Some(methods) = self.methods.as_mut() else { return };
        let sinks = &mut self.sinks;
        let mut add = |s: &Sample, rec: &Recording, interner: &hpm_profile::interned::StackInterner| {
            sinks.add(s, &Named { rec, interner })
        };
        let mut ctx = FeedCtx {
            start_ticks: self.inputs.start_ticks,
            resolver: &mut self.resolver,
            methods,
            rec: &mut self.rec,
            sinks: &mut add,
        };
        for feed in &mut self.feeds {
            feed.drain(&mut ctx);
        }
    }

    /// Resolves the pending records stamped at or before `watermark`, oldest first, and adds
    /// their samples.
    fn resolve_up_to(&mut self, watermark: u64) {
        let inputs = self.inputs.clone();
        // Taken out for the loop (resolving borrows it while the recording grows).
        let Some(mut methods) = self.methods.take() else { return };
        let mut intake = std::mem::take(&mut self.intake);
        let due = intake.due(&inputs.sink, watermark);
        self.resolver.prefetch_methods(&mut methods, intake.records(&inputs.sink, &due));
        intake.drain(&inputs.sink, due, |c| {
            let mut s = if c.deep() == 0 {
                self.resolver.resolve(&mut self.rec, &mut methods, c)
            } else {
                let deep = inputs.sink.take_deep(c.deep());
                self.resolver.resolve_with_deep(&mut self.rec, &mut methods, c, &deep)
            };
            if let Some(completer) = &mut self.completer {
                if !completer.observe(&s, c, self.resolver.frame_groups()) {
                    // Structure for the completer only.
                    return;
                }
            }
            if c.vthread != 0 {
                self.mount(&mut s, c.vthread);
            }
            if c.kernel_periods > 0 {
                // Kernel time counted, not sampled: one sample standing for each period spent
                // there (`Sample::repeat`), the weight theirs together.
                let k = self.resolver.kernel_time_sample(&mut self.rec, &s);
                self.add(kernel_time(k, c.kernel_periods), false);
            }
            self.sinks.observe(&s, &mut self.rec);
            self.add(s, true);
            inputs.sink.resolved.fetch_add(1, Ordering::Relaxed);
        });
        self.intake = intake;
        self.methods = Some(methods);
    }

    /// Makes `s`, a sample of a carrier running virtual thread `vthread`, the virtual thread's,
    /// carried by the sampled thread. A virtual thread seen for the first time is listed in the
    /// recording at once, before any sink or chunk names it. Left on the carrier when the
    /// session's thread list is full.
    fn mount(&mut self, s: &mut Sample, vthread: u64) {
        let threads = self.inputs.threads;
        let Some(v) = threads.index_for_virtual(vthread) else { return };
        if v as usize >= self.rec.threads.len() && threads.sync(&mut self.rec.threads) && self.inputs.opts.per_thread {
            self.sinks.tree.feed.forget_stacks();
        }
        s.carrier = Some(s.thread);
        s.thread = ThreadIdx(v);
        if self.inputs.opts.sampler == crate::options::SamplerKind::Wall {
            // Its weight is wall time this virtual thread was mounted.
            let v = &mut self.rec.virtual_live;
            v.mounted_ns = v.mounted_ns.saturating_add(s.weight);
        }
    }

    /// Adds a resolved sample to the recording, and to the sinks unless a stack completer
    /// holds it (`own`: the record's own sample, else kernel time derived from it).
    fn add(&mut self, s: Sample, own: bool) {
        let held = self.completer.as_ref().is_some_and(|c| c.holds());
        if !held {
            self.sinks.add(&s, &Named { rec: &self.rec, interner: self.resolver.interner() });
        }
        self.rec.samples.push(s);
        if !held {
            self.released = self.rec.samples.len();
        }
        if let Some(c) = &mut self.completer {
            c.held(self.rec.samples.len(), own);
        }
    }

    /// The tree as the outputs and queries read it: every sample in it, the totals filled
    /// (each sample adds to its leaf alone: [`hpm_profile::cct::Cct::add_self_at`]).
    fn tree_ready(&mut self) {
        self.release_held();
        self.sinks.tree.feed.cct.fill_totals();
    }

    /// Gives the sinks the held samples they lack, as walked so far.
    fn release_held(&mut self) {
        let len = self.rec.samples.len();
        if self.released >= len {
            return;
        }
        let named = Named { rec: &self.rec, interner: self.resolver.interner() };
        for s in &self.rec.samples[self.released..] {
            self.sinks.add(s, &named);
        }
        self.released = len;
    }

    /// The last round's completion of the held samples' stacks: the sinks take them again,
    /// completed (unless samples written before went to them as walked: those stay so, and
    /// the held ones added with them too).
    fn complete(&mut self) {
        let Some(c) = &mut self.completer else { return };
        if c.complete(&mut self.rec.samples) && !self.released_flushed {
            self.released = 0;
            self.sinks.restart(&mut self.rec);
        }
        self.release_held();
    }

    fn update_drops(&mut self) {
        let inputs = &self.inputs;
        let s = inputs.stats;
        use hpm_profile::model::DropReason;
        let mut drops: Vec<(DropReason, u64)> = vec![
            (DropReason::NoFreeSampleBuffer, inputs.sink.pool.dropped()),
            (DropReason::DeepFramesOverBound, inputs.sink.deep_refused.load(Ordering::Relaxed)),
            (DropReason::KernelRingOverflow, s.kernel_lost.load(Ordering::Relaxed)),
            (DropReason::CorruptRingRecord, s.corrupt_ring.load(Ordering::Relaxed)),
            (DropReason::SignalForDetachedThread, s.no_slot.load(Ordering::Relaxed)),
            (DropReason::CounterGroupUnread, s.counter_unread.load(Ordering::Relaxed)),
            (DropReason::SignalTaken, s.taken_lost.load(Ordering::Relaxed)),
            (DropReason::BridgeMarksDropped, inputs.live.dropped.load(Ordering::Relaxed)),
        ];
        for feed in &self.feeds {
            feed.drops(&mut drops);
        }
        for (reason, n) in &self.resolver.stats.failed {
            drops.push((DropReason::NoJavaStack(reason.clone()), *n));
        }
        for (reason, n) in &self.resolver.stats.partial {
            drops.push((DropReason::WalkStopped(reason.clone()), *n));
        }
        if let Some(c) = &self.completer {
            c.drops(&mut drops);
        }
        self.sinks.drops(&mut drops);
        for (reason, n) in inputs.threads.failures().by_reason {
            drops.push((DropReason::ThreadNotProfiled(reason), n));
        }
        drops.retain(|(_, n)| *n > 0);
        self.rec.drops = drops;
    }

    /// Writes the chunk ending `now`; `last`: the session's.
    fn flush_chunk(&mut self, now: u64, last: bool) {
        // Before the last sample is resolved, the chunk's CPU is counted apart from resolving.
        let early = (self.cost.phase_ns[1] == 0).then(thread_cpu_ns);
        self.write_chunk(now, last);
        if let Some(t) = early {
            self.cost.early_chunks += 1;
            self.cost.early_chunks_ns += thread_cpu_ns().saturating_sub(t);
        }
    }

    fn write_chunk(&mut self, now: u64, last: bool) {
        // The samples leave the recording: the sinks keep what they count.
        self.release_held();
        self.update_drops();
        let times = ChunkTimes {
            start_ticks: self.chunk_start,
            end_ticks: now.max(self.chunk_start),
            start_wall_ns: self.rec.start_wall_ns + (self.chunk_start - self.rec.start_ticks),
        };
        if last {
            // The sinks beside the files end first (the push delivers its last period or gives
            // up within its grace): the drops the files' last chunk carries are then final.
            self.sinks.end_beside(&Chunk { rec: &self.rec, marks: &self.marks, times });
            self.update_drops();
            self.sinks.flush_files(&Chunk { rec: &self.rec, marks: &self.marks, times });
        } else {
            self.sinks.flush(&Chunk { rec: &self.rec, marks: &self.marks, times });
        }
        self.rec.samples.clear();
        self.released_flushed |= self.released > 0;
        self.released = 0;
        if let Some(c) = &mut self.completer {
            c.flushed();
        }
        self.rec.events.clear();
        self.rec.code.clear();
        self.resolver.chunk_written();
        self.marks.clear();
        self.chunk_start = now;
    }

    /// The profile as the outputs read it.
    fn profile(&self) -> write::Profile<'_> {
        write::Profile { rec: &self.rec, tree: &self.sinks.tree.feed, cpu: self.inputs.opts.cpu }
    }

    /// Writes the session's outputs and prints the summary; returns the files written and why
    /// the others were not.
    fn write_outputs(&mut self) -> Written {
        self.tree_ready();
        let mut written = Written::default();
        self.sinks.finish(&mut written);
        // What the sinks lost at their end (a push not delivered) is in the summary.
        self.update_drops();
        let outputs = std::mem::take(&mut self.outputs);
        self.profile().write_outputs(outputs, self.inputs.opts.quiet, &mut written);
        written
    }

    /// Writes the profile so far to `target`; returns a line saying what was written.
    fn dump(&mut self, path: &str, format: OutputFormat, target: Target) -> Result<String, String> {
        self.tree_ready();
        if self.profile().dump_reads_jfr(format) && (!self.rec.samples.is_empty() || self.sinks.jfr.chunks == 0) {
            self.flush_chunk(now_ticks(), false);
        }
        self.profile().dump(path, format, target, &self.sinks.jfr)
    }

    /// The agent's cost, for the summary.
    fn cost_report(&self) -> hpm_profile::output::cost::CostReport {
        self.cost.report(cost::Seen {
            inputs: &self.inputs,
            resolver: &self.resolver,
            rec: &self.rec,
            tree: &self.sinks.tree.feed,
            intake: &self.intake,
            feeds: &self.feeds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record with the most kernel periods counted adds one sample for them, not one each.
    #[test]
    fn kernel_periods_are_one_sample_that_counts_them() {
        let periods = hpm_capture::capture::MAX_KERNEL_PERIODS;
        let mut own = Sample::of_stack(std::sync::Arc::from(Vec::new()));
        own.weight = 1_000_000;
        let mut rec = Recording::default();
        rec.samples.push(kernel_time(own.clone(), periods));
        rec.samples.push(own);
        assert_eq!(rec.samples.len(), 2);
        let k = &rec.samples[0];
        assert_eq!((k.count(), k.weight, k.weight_each()), (u64::from(periods), 1_000_000 << 16, 1_000_000));
    }
}
