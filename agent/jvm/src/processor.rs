//! The background processing thread (Chilingarova & Safonov's "manager"): it drains sample
//! batches, resolves them in time order against the code map, feeds the calling context
//! tree, flushes JFR chunks periodically, and attaches VM threads as they appear. One runs per
//! profiling session; `agent` in this file is the session (which derefs to the Agent). It
//! answers `dump` requests while it runs, and its finished profile answers them after `stop`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hpm_core::analysis::tuner::{SelfTuner, TunerConfig};
use hpm_core::batch::Batch;
use hpm_core::capture::Captured;
use hpm_core::cct::Cct;
use hpm_core::jfr::writer::{ChunkTimes, JfrFileWriter};
use hpm_core::model::{Recording, VmComponent};
use hpm_core::options::Interval;
use hpm_core::options::OutputFormat;
use hpm_core::output::stacks::StackTable;
use hpm_core::resolve::SampleResolver;
use jni::sys::{JNIEnv, JavaVMAttachArgs, JNI_OK, JNI_VERSION_1_6};

use crate::agent::{now_ticks, Agent};
use crate::methods::JvmtiMethods;
use crate::session::Session;

mod write;

/// Samples younger than this wait a round, so late code events (JVMTI posts them from the
/// service thread) are applied before the samples that need them.
const SETTLE_NS: u64 = 100_000_000;
const ROUND: Duration = Duration::from_millis(50);

pub struct ProcessorHandle {
    stop: Arc<AtomicBool>,
    join: JoinHandle<Option<Processor>>,
    requests: Sender<DumpRequest>,
}

/// Write the profile so far to `path` in `format`; the reply says what was written.
struct DumpRequest {
    path: String,
    format: OutputFormat,
    reply: Sender<Result<String, String>>,
}

impl ProcessorHandle {
    /// Asks the running processor to write the profile so far (samples up to ~100 ms ago).
    pub fn dump(&self, path: &str, format: OutputFormat) -> Result<String, String> {
        let (tx, rx) = mpsc::channel();
        self.requests
            .send(DumpRequest { path: path.to_string(), format, reply: tx })
            .map_err(|_| "the processing thread has ended; stop the session and start a new one".to_string())?;
        self.join.thread().unpark();
        rx.recv().map_err(|_| "the processing thread ended before writing the dump".to_string())?
    }
}

/// A stopped session's profile, kept for `dump` after `stop`.
pub struct Finished(Processor);

impl Finished {
    pub fn dump(&mut self, path: &str, format: OutputFormat) -> Result<String, String> {
        self.0.dump(path, format)
    }
}

/// CPU time the calling thread has used, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct Processor {
    rec: Recording,
    cct: Cct,
    components: Vec<(VmComponent, u64)>,
    resolver: SampleResolver,
    methods: JvmtiMethods,
    pending: Vec<(Box<Batch<Captured>>, usize)>,
    jfr: Vec<JfrFileWriter>,
    /// JFR files completed at stop (renamed from `.part`), for dumps after stop.
    jfr_done: Vec<std::path::PathBuf>,
    chunk_start: u64,
    thread_generation: u64,
    late: u64,
    last_resolved: u64,
    /// `interval=auto`: Chilingarova & Safonov's self-tuning controller.
    tuner: Option<SelfTuner>,
    /// CPU the processing thread used (its own cost, reported in the summary).
    cpu_ns: u64,
    /// Display names by method index, so the calling context tree is fed without allocating.
    names: Vec<String>,
    /// Samples by exact stack (methods and lines), thread and component: the pprof and JSON
    /// outputs are built from it (they may also be asked for when a session stops).
    stacks: StackTable,
    /// Every JFR chunk written so far, kept when the session writes no JFR file itself, so
    /// `dump,file=X.jfr` can still write one.
    jfr_mem: Option<Vec<u8>>,
    /// JFR chunks written (to files or memory).
    chunks: u64,
    session: &'static Session,
    /// Regions and phase markers from the Java bridge, written with the next chunk.
    marks: Vec<hpm_core::jfr::marks::Mark>,
}

pub fn start(agent: &'static Session) -> std::io::Result<ProcessorHandle> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let (requests, inbox) = mpsc::channel::<DumpRequest>();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let join = std::thread::Builder::new().name("hpm-processor".into()).spawn(move || {
        // Never profile ourselves: excluded before start() returns and before the VM sees us.
        agent.threads.exclude(crate::perf::gettid());
        let _ = tid_tx.send(());
        let jni = attach_daemon(agent, c"hpm-processor")?;
        let mut p = Processor::new(agent, jni);
        let mut round = 0u64;
        while !flag.load(Ordering::Acquire) {
            std::thread::park_timeout(ROUND);
            round += 1;
            // New VM threads get perf groups; the timer samplers sample only Java threads,
            // which ThreadStart announces.
            if agent.perf && round.is_multiple_of(2) {
                agent.threads.scan(&agent.queues);
            }
            p.round(agent, false);
            answer_dumps(&mut p, &inbox);
        }
        answer_dumps(&mut p, &inbox);
        p.cpu_ns = thread_cpu_ns();
        Some(p)
    })?;
    let _ = tid_rx.recv();
    Ok(ProcessorHandle { stop, join, requests })
}

fn answer_dumps(p: &mut Processor, inbox: &Receiver<DumpRequest>) {
    while let Ok(r) = inbox.try_recv() {
        let _ = r.reply.send(p.dump(&r.path, r.format));
    }
}

/// Attaches the calling native thread to the VM as a daemon, so it may call JVMTI.
pub fn attach_daemon(agent: &Agent, name: &std::ffi::CStr) -> Option<*mut JNIEnv> {
    let vm = agent.vm();
    let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
    let mut args =
        JavaVMAttachArgs { version: JNI_VERSION_1_6, name: name.as_ptr() as *mut _, group: std::ptr::null_mut() };
    // SAFETY: `vm` is the live JavaVM; AttachCurrentThreadAsDaemon is in its invoke interface
    // and `args` outlives the call.
    let rc = unsafe { ((**vm).AttachCurrentThreadAsDaemon?)(vm, &mut env, &mut args as *mut _ as *mut _) };
    if rc != JNI_OK {
        eprintln!("hpm: cannot attach {} to the JVM (error {rc}); no profile will be written", name.to_string_lossy());
        return None;
    }
    Some(env as *mut JNIEnv)
}

/// Stops the processor and the session's sampling, writes every output and `extra` files, and
/// returns the files written and the profile (for later dumps).
pub fn finish(
    agent: &Session,
    h: ProcessorHandle,
    extra: &[(String, OutputFormat)],
) -> Result<(Vec<String>, Finished), String> {
    h.stop.store(true, Ordering::Release);
    h.join.thread().unpark();
    let Ok(Some(mut p)) = h.join.join() else {
        agent.threads.stop_all(&agent.queues);
        return Err("the processing thread failed; no profile written".into());
    };
    agent.threads.stop_all(&agent.queues);
    let before = thread_cpu_ns();
    p.round(agent, true);
    let mut files = p.write_outputs(agent);
    for (path, format) in extra {
        match p.dump(path, *format) {
            Ok(_) => files.push(path.clone()),
            Err(e) => eprintln!("hpm: {e}"),
        }
    }
    p.cpu_ns += thread_cpu_ns().saturating_sub(before);
    if !agent.opts.quiet {
        let sampled_ms = agent.signal_stats.samples.load(Ordering::Relaxed) as f64 * agent.event.period as f64 / 1e6;
        let share = if agent.event.unit == hpm_core::model::PeriodUnit::Nanoseconds && sampled_ms > 0.0 {
            format!(" ({:.2}% of the sampled CPU time)", p.cpu_ns as f64 / 1e6 / sampled_ms * 100.0)
        } else {
            String::new()
        };
        let handler_ms = agent.signal_stats.handler_ns.load(Ordering::Relaxed) as f64 / 1e6;
        let total_ms = handler_ms + p.cpu_ns as f64 / 1e6;
        let share = if share.is_empty() {
            share
        } else {
            format!(" ({:.2}% of the sampled CPU time)", total_ms / sampled_ms * 100.0)
        };
        eprintln!(
            "hpm: agent CPU {total_ms:.0} ms{share}: signal handler {handler_ms:.0} ms, processing {:.0} ms",
            p.cpu_ns as f64 / 1e6
        );
    }
    Ok((files, Finished(p)))
}

/// The controller for `interval=auto`: bounds suit the event (10us..1s for clock events).
fn tuner_for(agent: &Session) -> Option<SelfTuner> {
    let mut cfg = TunerConfig::default();
    if !agent.spec.event.is_clock {
        let p = agent.spec.period;
        cfg.min_interval = (p / 100).max(1);
        cfg.max_interval = p.saturating_mul(100);
    }
    match SelfTuner::new(cfg, agent.spec.period) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("hpm: interval=auto disabled: {e}");
            None
        }
    }
}

impl Processor {
    fn new(agent: &'static Session, jni: *mut JNIEnv) -> Processor {
        let rec = Recording {
            start_wall_ns: agent.start_wall_ns,
            start_ticks: agent.start_ticks,
            end_ticks: agent.start_ticks,
            pid: std::process::id(),
            jvm: agent.jvmti.system_property("java.vm.version").map(|v| format!("HotSpot {v}")).unwrap_or_default(),
            event: agent.event.clone(),
            counters: agent.counter_names.clone(),
            ..Default::default()
        };
        let mut resolver = SampleResolver::default();
        resolver.data_addresses = agent.spec.event.data_address;
        resolver.symbolizer.refresh();
        let jfr = agent
            .outputs
            .iter()
            .filter(|(_, f)| *f == OutputFormat::Jfr)
            .filter_map(|(path, _)| match JfrFileWriter::create(std::path::Path::new(path)) {
                Ok(w) => Some(w),
                Err(e) => {
                    eprintln!("hpm: cannot write {path}: {e}");
                    None
                }
            })
            .collect::<Vec<_>>();
        let jfr_is_empty = jfr.is_empty();
        Processor {
            cct: Cct::new(rec.counters.clone()),
            rec,
            components: Vec::new(),
            resolver,
            methods: JvmtiMethods::new(agent.jvmti, jni),
            pending: Vec::new(),
            jfr,
            jfr_done: Vec::new(),
            chunk_start: agent.start_ticks,
            thread_generation: u64::MAX,
            late: 0,
            last_resolved: 0,
            tuner: (agent.opts.interval == Interval::Auto).then(|| tuner_for(agent)).flatten(),
            cpu_ns: 0,
            names: Vec::new(),
            stacks: StackTable::default(),
            jfr_mem: jfr_is_empty.then(Vec::new),
            chunks: 0,
            session: agent,
            marks: Vec::new(),
        }
    }

    fn round(&mut self, agent: &Session, last: bool) {
        // Before the thread sync: a mark's thread is registered before the mark is queued.
        self.marks.extend(agent.live.take_marks().into_iter().filter(|m| m.time() >= agent.start_ticks));
        agent.threads.sync_threads(&mut self.rec.threads, &mut self.thread_generation);
        for ev in std::mem::take(&mut *agent.code_events.lock().unwrap_or_else(|p| p.into_inner())) {
            self.resolver.timeline.push(ev);
        }
        for (start, t) in std::mem::take(&mut *agent.gc_events.lock().unwrap_or_else(|p| p.into_inner())) {
            if start {
                self.resolver.gc_start(t);
            } else {
                self.resolver.gc_finish(t);
            }
        }
        while let Some(b) = agent.queues.pop_full() {
            self.pending.push((b, 0));
        }
        agent.threads.steal_all(|b| self.pending.push((b, 0)));
        if agent.queues.free_batches() < 32 {
            agent.queues.grow(128);
        }
        let now = now_ticks();
        let watermark = if last { u64::MAX } else { now.saturating_sub(SETTLE_NS) };
        self.resolve_up_to(agent, watermark);
        agent.live.serve(&self.cct);
        self.rec.end_ticks = now;
        if last || now.saturating_sub(self.chunk_start) >= agent.opts.flush_secs * 1_000_000_000 {
            self.flush_chunk(agent, now);
        }
    }

    /// Resolves pending samples stamped at or before `watermark`, oldest first. Each batch is
    /// in time order (one thread's samples), so what is resolved of it is a prefix.
    fn resolve_up_to(&mut self, agent: &Session, watermark: u64) {
        let mut order: Vec<(u64, usize, usize)> = Vec::new();
        for (bi, (b, done)) in self.pending.iter().enumerate() {
            for (j, c) in b.filled().iter().enumerate().skip(*done) {
                if c.raw.time <= watermark {
                    order.push((c.raw.time, bi, j));
                }
            }
        }
        order.sort_unstable();
        for &(t, bi, j) in &order {
            if t < self.last_resolved {
                self.late += 1;
            }
            self.last_resolved = self.last_resolved.max(t);
            let c = &self.pending[bi].0.filled()[j];
            let s = self.resolver.resolve(&mut self.rec, &mut self.methods, c);
            match self.components.iter_mut().find(|(k, _)| *k == s.component) {
                Some(e) => e.1 += 1,
                None => self.components.push((s.component, 1)),
            }
            if let (Some(t), Some(top)) = (self.tuner.as_mut(), s.stack.first()) {
                if let Some(change) = t.observe(u64::from(s.thread), u64::from(top.method)) {
                    let refused = agent.threads.set_period(change.new);
                    self.rec.event.period = change.new;
                    if !agent.opts.quiet {
                        eprintln!(
                            "hpm: interval=auto: {change}{}",
                            if refused > 0 {
                                format!(" ({refused} threads kept the old period)")
                            } else {
                                String::new()
                            }
                        );
                    }
                }
            }
            while self.names.len() < self.rec.methods.len() {
                self.names.push(self.rec.method(self.names.len() as u32).display_name());
            }
            let thread_root = agent.opts.per_thread.then(|| hpm_core::cct::thread_frame_name(&self.rec, s.thread));
            self.cct.add_sample_named(&s, thread_root.as_deref(), &self.names);
            self.stacks.add(&s);
            self.rec.samples.push(s);
            agent.resolved.fetch_add(1, Ordering::Relaxed);
            self.pending[bi].1 = self.pending[bi].1.max(j + 1);
        }
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].1 >= self.pending[i].0.len {
                let (b, _) = self.pending.swap_remove(i);
                agent.queues.recycle(b);
            } else {
                i += 1;
            }
        }
    }

    fn update_drops(&mut self, agent: &Agent) {
        let s = &agent.signal_stats;
        let mut drops: Vec<(String, u64)> = vec![
            ("no free sample buffer".into(), agent.queues.dropped_no_free_batch.load(Ordering::Relaxed)),
            ("processing queue full".into(), agent.queues.dropped_queue_full.load(Ordering::Relaxed)),
            ("kernel ring overflow".into(), s.kernel_lost.load(Ordering::Relaxed)),
            ("corrupt ring record".into(), s.corrupt_ring.load(Ordering::Relaxed)),
            ("signal for a detached thread".into(), s.no_slot.load(Ordering::Relaxed)),
        ];
        for (reason, n) in &self.resolver.stats.failed {
            drops.push((format!("{}{reason}", hpm_core::model::KEPT_PREFIX), *n));
        }
        for (reason, n) in agent.threads.failures().by_reason {
            drops.push((format!("thread not profiled: {reason}"), n));
        }
        drops.retain(|(_, n)| *n > 0);
        self.rec.drops = drops;
    }

    fn flush_chunk(&mut self, agent: &Agent, now: u64) {
        self.update_drops(agent);
        let times = ChunkTimes {
            start_ticks: self.chunk_start,
            end_ticks: now.max(self.chunk_start),
            start_wall_ns: self.rec.start_wall_ns + (self.chunk_start - self.rec.start_ticks),
        };
        if !self.jfr.is_empty() || self.jfr_mem.is_some() {
            let data = hpm_core::jfr::writer::encode_chunk_with_marks(&self.rec, &self.rec.samples, &self.marks, times);
            for w in &mut self.jfr {
                if let Err(e) = w.write_encoded(&data) {
                    eprintln!("hpm: writing {}: {e}", w.path().display());
                }
            }
            if let Some(m) = &mut self.jfr_mem {
                m.extend_from_slice(&data);
            }
            self.chunks += 1;
        }
        self.rec.samples.clear();
        self.marks.clear();
        self.chunk_start = now;
    }
}
