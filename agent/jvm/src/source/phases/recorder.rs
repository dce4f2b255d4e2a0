//! The phases recorder of a session: opens the trace (version 2 of
//! `hpm_profile::analysis::phases_format`), chooses the counters, starts the writer thread,
//! and gives the JNI natives of `io.github.hpm.phases.Probe`. The natives find the running
//! recorder through one static (set by [`Recorder::start`], cleared by [`Recorder::stop`]): a
//! probe before the start or after the stop records nothing. A thread's first probe sets up
//! its state ([`ThreadState`]: a counting group, two buffers), bounded by the thread indexes
//! (65,536) and a total buffer budget ([`MAX_BUFFER_BYTES`]); threads past them are counted,
//! not traced. A thread's end hands its partial buffer over (a thread-local's destructor); the
//! stop hands over every live thread's.

use std::cell::RefCell;
use std::ffi::{c_void, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hpm_profile::analysis::phases_format::{self as format, TAG_ENTER, TAG_EXIT, TAG_EXIT_THROW};
use jni::sys::{jclass, jint, jstring, JNIEnv};

use super::probe::{Ids, ProbeStats, ThreadState, ToWriter, BUFFER};
use super::vmthreads::{VmThreads, COMPONENTS};
use super::writer::Writer;
use crate::jvmti::Jvmti;
use crate::perf::{CountDef, CountGroup, PMU_COUNTS, SOFTWARE_COUNTS};

/// All threads' buffers together at most (two of [`BUFFER`] per thread: 512 threads).
pub const MAX_BUFFER_BYTES: u64 = 128 << 20;
/// A method's name is cut at this length (a phase file's lines are not longer).
pub const MAX_METHOD_NAME: usize = format::MAX_PHASE_LINE;
/// How long the stop waits for the writer to close the trace.
const STOP_WAIT: Duration = Duration::from_secs(30);

pub struct RecorderConfig {
    pub path: PathBuf,
    /// The trace's size bound: the writer writes nothing past it.
    pub max_bytes: u64,
}

/// What the probes share: the counters, the channel to the writer, the ids, the threads.
struct Shared {
    counters: Vec<CountDef>,
    user_reads: bool,
    tx: Sender<ToWriter>,
    ids: Arc<Ids>,
    stats: ProbeStats,
    budget: AtomicU64,
    over_budget: AtomicU64,
    over_index: AtomicU64,
    no_counters: AtomicU64,
    methods_over: AtomicU64,
    traced: AtomicU64,
    /// The traced threads alive; `None` once the stop took them (no thread joins after).
    threads: Mutex<Option<Vec<Arc<ThreadState>>>>,
    jvmti: OnceLock<Jvmti>,
}

/// The running recorder's generation (0: none), read by every probe.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);
/// The running recorder, for a thread's first probe and `register0`.
static CURRENT: Mutex<Option<(u64, Arc<Shared>)>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One session's recorder.
pub struct Recorder {
    shared: Arc<Shared>,
    generation: u64,
    writer: Mutex<Option<JoinHandle<()>>>,
    stopped: AtomicBool,
    /// What one probe's counter read costs here, and how it reads.
    cost: String,
}

impl Recorder {
    /// Opens the trace (never through a link, never over a file before every check passed),
    /// chooses the counters (cycles and instructions on a PMU, else task-clock, page-faults
    /// and context-switches), writes the header and the counter names, starts the writer
    /// thread `hpm-phases`. Returns the notes for the start (which counters, how read, what
    /// one read costs here).
    pub fn start(cfg: RecorderConfig) -> Result<(Arc<Recorder>, Vec<String>), String> {
        let what = |e: &dyn std::fmt::Display| format!("phases={}: {e}", cfg.path.display());
        // Held to the end: one recorder at a time.
        let mut current = lock(&CURRENT);
        if current.is_some() {
            return Err("phases: a recording is already running in this JVM".into());
        }
        let target = hpm_profile::outfile::Target::check(&cfg.path).map_err(|e| what(&e))?;
        let (counters, group, why) = choose_counters()?;
        let cost = read_cost(&group);
        let how = if group.user_reads() { "rdpmc, no system call" } else { "one read(2) of the group" };
        let names: Vec<&str> = counters.iter().map(|c| c.name).collect();
        let user_reads = group.user_reads();
        let note =
            format!("phases: counting {} per thread{why}, read with {how}: {cost} ns per probe here", names.join(", "));
        drop(group);

        let ids = Arc::new(Ids::default());
        let mut head = format::header().to_vec();
        for (i, c) in counters.iter().enumerate() {
            format::counter_name(&mut head, i as u8, c.name);
        }
        let mut methods = [0u32; COMPONENTS.len()];
        for (m, name) in methods.iter_mut().zip(COMPONENTS) {
            *m = ids.method().unwrap_or(u32::MAX);
            format::method_name(&mut head, *m, name);
        }
        let mut part = target.create_part().map_err(|e| what(&e))?;
        if let Err(e) = std::io::Write::write_all(part.file(), &head) {
            let err = what(&e);
            part.discard();
            return Err(err);
        }
        let vm = VmThreads::new(counters.clone(), methods).ok();
        let writer = Writer::new(Box::new(part), head.len() as u64, cfg.max_bytes, vm, ids.clone());
        let (tx, rx) = channel();
        let shared = Arc::new(Shared {
            counters,
            user_reads,
            tx,
            ids,
            stats: ProbeStats::default(),
            budget: AtomicU64::new(0),
            over_budget: AtomicU64::new(0),
            over_index: AtomicU64::new(0),
            no_counters: AtomicU64::new(0),
            methods_over: AtomicU64::new(0),
            traced: AtomicU64::new(0),
            threads: Mutex::new(Some(Vec::new())),
            jvmti: OnceLock::new(),
        });
        let handle = std::thread::Builder::new()
            .name("hpm-phases".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| format!("phases: cannot start the writer thread ({e})"))?;
        let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
        *current = Some((generation, shared.clone()));
        GENERATION.store(generation, Ordering::Release);
        let rec = Recorder {
            shared,
            generation,
            writer: Mutex::new(Some(handle)),
            stopped: AtomicBool::new(false),
            cost: format!("{cost} ns per probe here ({})", if user_reads { "rdpmc" } else { "read(2)" }),
        };
        Ok((Arc::new(rec), vec![note]))
    }

    /// Names traced threads as the VM does (else by their kernel names, cut at 15 bytes).
    pub fn set_jvmti(&self, jvmti: Jvmti) {
        let _ = self.shared.jvmti.set(jvmti);
    }

    /// The JNI natives of `io.github.hpm.phases.Probe` for RegisterNatives: (name,
    /// signature, function).
    pub fn natives() -> Vec<(&'static CStr, &'static CStr, *mut c_void)> {
        vec![
            (c"enter0", c"(I)V", enter0 as *mut c_void),
            (c"exit0", c"(I)V", exit0 as *mut c_void),
            (c"thrown0", c"(I)V", thrown0 as *mut c_void),
            (c"register0", c"(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)I", register0 as *mut c_void),
        ]
    }

    /// Stops recording: later probes record nothing; every thread's partial buffer is
    /// written, the writer closes the trace (renamed into place). Returns the summary lines.
    pub fn stop(&self) -> Vec<String> {
        self.stop_keeping(true)
    }

    /// Stops a session that failed to start: as [`Self::stop`], but the trace is removed.
    pub fn abandon(&self) {
        self.stop_keeping(false);
    }

    fn stop_keeping(&self, keep: bool) -> Vec<String> {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return Vec::new();
        }
        {
            let mut current = lock(&CURRENT);
            if current.as_ref().is_some_and(|(g, _)| *g == self.generation) {
                GENERATION.store(0, Ordering::Release);
                *current = None;
            }
        }
        let sh = &self.shared;
        let threads = lock(&sh.threads).take().unwrap_or_default();
        for t in &threads {
            t.finish(&sh.tx, &sh.stats);
        }
        // What the probes could not record goes into the trace too (the first line is the
        // cost; waits lose nothing).
        let probe_lines = self.probe_lines();
        for l in probe_lines.iter().skip(1).filter(|l| !l.contains("waited for the writer")) {
            let _ = sh.tx.send(ToWriter::Note(l.trim_start_matches("phases: ").to_string()));
        }
        let (reply_tx, reply_rx) = channel();
        let msg = if keep { ToWriter::Stop(reply_tx) } else { ToWriter::Abandon(reply_tx) };
        let mut lines = match sh.tx.send(msg).ok().and_then(|_| reply_rx.recv_timeout(STOP_WAIT).ok()) {
            Some(lines) => {
                if let Some(h) = lock(&self.writer).take() {
                    let _ = h.join();
                }
                lines
            }
            None => vec![format!("phases: the writer did not close the trace within {}s", STOP_WAIT.as_secs())],
        };
        lines.extend(probe_lines);
        lines
    }

    fn probe_lines(&self) -> Vec<String> {
        let sh = &self.shared;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut lines =
            vec![format!("{} threads traced; {}", get(&sh.traced), self.cost.trim_start_matches("phases: "))];
        let waits = get(&sh.stats.waits);
        if waits > 0 {
            let counted: Vec<String> =
                sh.counters.iter().zip(&sh.stats.waited).map(|(c, w)| format!("{} {}", get(w), c.name)).collect();
            lines.push(format!(
                "{waits} probes waited for the writer ({:.1} ms in all); what they counted ({}) is in no phase",
                get(&sh.stats.wait_ns) as f64 / 1e6,
                counted.join(", ")
            ));
        }
        let untraced = [
            (get(&sh.over_budget), format!("past the buffer budget of {} MiB", MAX_BUFFER_BYTES >> 20)),
            (get(&sh.over_index), "past 65,536 thread indexes".to_string()),
            (get(&sh.no_counters), "whose counters did not open".to_string()),
        ];
        for (n, why) in untraced.iter().filter(|(n, _)| *n > 0) {
            lines.push(format!("{n} threads not traced: {why}"));
        }
        let dropped = [
            (
                get(&sh.methods_over),
                format!("methods not recorded: more than {} registered", super::probe::MAX_METHODS),
            ),
            (get(&sh.stats.read_failures), "counter reads failed (the previous values repeated)".to_string()),
            (get(&sh.stats.lost), "records lost: the writer was gone".to_string()),
        ];
        for (n, why) in dropped.iter().filter(|(n, _)| *n > 0) {
            lines.push(format!("{n} {why}"));
        }
        lines.into_iter().map(|l| if l.starts_with("phases:") { l } else { format!("phases: {l}") }).collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The counters for this machine and a group of them open on the calling thread, with the
/// reason of a fallback for the note.
fn choose_counters() -> Result<(Vec<CountDef>, CountGroup, String), String> {
    match CountGroup::open(&PMU_COUNTS, 0, true) {
        Ok(g) => Ok((PMU_COUNTS.to_vec(), g, String::new())),
        Err(e) if e.is_permission() => Err(format!("phases: {e}")),
        Err(_) => {
            let g = CountGroup::open(&SOFTWARE_COUNTS, 0, false).map_err(|e| format!("phases: {e}"))?;
            Ok((SOFTWARE_COUNTS.to_vec(), g, " (no hardware PMU)".to_string()))
        }
    }
}

/// Nanoseconds one read of `group` takes here (the median of 16 rounds of 256 reads).
fn read_cost(group: &CountGroup) -> u64 {
    let mut values = [0u64; crate::perf::MAX_COUNT_GROUP];
    let n = group.len();
    let mut rounds: Vec<u64> = (0..16)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..256 {
                group.read(&mut values[..n]);
            }
            t0.elapsed().as_nanos() as u64 / 256
        })
        .collect();
    rounds.sort_unstable();
    rounds[rounds.len() / 2]
}

impl Shared {
    /// The calling thread's state at its first probe, `None` when it is not traced (counted).
    fn new_thread(&self, env: *mut JNIEnv) -> Option<Arc<ThreadState>> {
        let need = 2 * BUFFER as u64;
        let reserved = self
            .budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| (b + need <= MAX_BUFFER_BYTES).then_some(b + need));
        if reserved.is_err() {
            self.over_budget.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let Some(index) = self.ids.thread() else {
            self.budget.fetch_sub(need, Ordering::Relaxed);
            self.over_index.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let Ok(group) = CountGroup::open(&self.counters, 0, self.user_reads) else {
            self.budget.fetch_sub(need, Ordering::Relaxed);
            self.no_counters.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let name = thread_name(self.jvmti.get(), env);
        let state = ThreadState::new(index, name, Some(group), self.counters.len(), BUFFER);
        // Registered under the lock the stop takes them with: a thread that comes after the
        // stop's flush is not traced (its buffers could not reach the writer).
        lock(&self.threads).as_mut()?.push(state.clone());
        self.traced.fetch_add(1, Ordering::Relaxed);
        Some(state)
    }

    /// The thread ended: its partial buffer to the writer, its budget back.
    fn thread_ended(&self, state: &Arc<ThreadState>) {
        state.finish(&self.tx, &self.stats);
        let mut threads = lock(&self.threads);
        let Some(threads) = threads.as_mut() else { return };
        let before = threads.len();
        threads.retain(|t| !Arc::ptr_eq(t, state));
        if threads.len() < before {
            self.budget.fetch_sub(2 * BUFFER as u64, Ordering::Relaxed);
        }
    }
}

/// The calling thread's name: the VM's, else the kernel's.
fn thread_name(jvmti: Option<&Jvmti>, env: *mut JNIEnv) -> String {
    if let (Some(j), false) = (jvmti, env.is_null()) {
        if let Ok(t) = j.current_thread() {
            let name = j.thread_name(t);
            crate::jnienv::delete_local_ref(env, t);
            if let Some(n) = name.ok().filter(|n| !n.is_empty()) {
                return n;
            }
        }
    }
    let tid = crate::os::gettid();
    crate::os::thread_comm(tid).unwrap_or_else(|| format!("tid {tid}"))
}

/// The calling thread's recorder state for this generation.
struct Local {
    generation: u64,
    state: Option<(Arc<Shared>, Arc<ThreadState>)>,
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some((sh, st)) = self.state.take() {
            sh.thread_ended(&st);
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Local> = const { RefCell::new(Local { generation: 0, state: None }) };
}

/// One probe of the calling thread: nothing unless a recorder runs; the thread's state set
/// up at its first probe of this recorder.
fn probe(env: *mut JNIEnv, tag: u8, id: jint) {
    let generation = GENERATION.load(Ordering::Acquire);
    if generation == 0 || id < 0 {
        return;
    }
    let _ = LOCAL.try_with(|l| {
        let Ok(mut l) = l.try_borrow_mut() else { return };
        if l.generation != generation {
            if let Some((sh, st)) = l.state.take() {
                sh.thread_ended(&st);
            }
            l.generation = generation;
            let shared = lock(&CURRENT).as_ref().filter(|(g, _)| *g == generation).map(|(_, s)| s.clone());
            l.state = shared.and_then(|sh| sh.new_thread(env).map(|st| (sh, st)));
        }
        if let Some((sh, st)) = &l.state {
            st.record(tag, id as u32, &sh.tx, &sh.stats);
        }
    });
}

extern "system" fn enter0(env: *mut JNIEnv, _class: jclass, id: jint) {
    let _ = std::panic::catch_unwind(|| probe(env, TAG_ENTER, id));
}

extern "system" fn exit0(env: *mut JNIEnv, _class: jclass, id: jint) {
    let _ = std::panic::catch_unwind(|| probe(env, TAG_EXIT, id));
}

extern "system" fn thrown0(env: *mut JNIEnv, _class: jclass, id: jint) {
    let _ = std::panic::catch_unwind(|| probe(env, TAG_EXIT_THROW, id));
}

/// `register0(className, methodName, descriptor)`: the method's id, its name
/// (`className.methodName` + descriptor) queued for the writer; -1 (`u32::MAX`: not recorded)
/// without a recorder, past [`super::probe::MAX_METHODS`] or for a null argument.
extern "system" fn register0(env: *mut JNIEnv, _class: jclass, class: jstring, method: jstring, desc: jstring) -> jint {
    std::panic::catch_unwind(|| {
        let Some(sh) = lock(&CURRENT).as_ref().map(|(_, s)| s.clone()) else { return -1 };
        let part = |s, what| crate::jnienv::string(env, s, what);
        let (Ok(c), Ok(m), Ok(d)) = (part(class, "className"), part(method, "methodName"), part(desc, "descriptor"))
        else {
            return -1;
        };
        let Some(id) = sh.ids.method() else {
            sh.methods_over.fetch_add(1, Ordering::Relaxed);
            return -1;
        };
        let mut name = format!("{c}.{m}{d}");
        if name.len() > MAX_METHOD_NAME {
            let mut end = MAX_METHOD_NAME;
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            name.truncate(end);
        }
        let _ = sh.tx.send(ToWriter::Method(id, name));
        id as jint
    })
    .unwrap_or(-1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::phases::writer::tests::decode;

    /// The recorder as the natives drive it, without a JVM: threads that end before the stop
    /// (their thread-local hands the buffer over) and threads alive at the stop (flushed by it).
    #[test]
    fn probes_of_ended_and_live_threads_all_reach_the_trace() {
        let path = std::env::temp_dir().join(format!("hpm-recorder-test-{}.hpmtrace", std::process::id()));
        let Ok((rec, notes)) = Recorder::start(RecorderConfig { path: path.clone(), max_bytes: 1 << 30 }) else {
            return; // perf_event_open refused here: nothing to record with
        };
        assert!(notes[0].contains(" ns per probe here"), "{notes:?}");
        assert!(Recorder::start(RecorderConfig { path: path.clone(), max_bytes: 1 }).is_err(), "one at a time");
        let method = lock(&CURRENT).as_ref().unwrap().1.ids.method().unwrap();
        let run = move |n: u32| {
            for _ in 0..n {
                probe(std::ptr::null_mut(), TAG_ENTER, method as jint);
                probe(std::ptr::null_mut(), TAG_EXIT, method as jint);
            }
        };
        let ended = std::thread::spawn(move || run(10_000));
        ended.join().unwrap();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (done, recorded) = std::sync::mpsc::channel();
        let live = std::thread::spawn(move || {
            run(3);
            done.send(()).unwrap();
            let _ = wait.recv(); // alive until the stop is over
            run(5); // after the stop: nothing
        });
        recorded.recv().unwrap();
        let lines = rec.stop();
        go.send(()).unwrap();
        live.join().unwrap();
        assert!(rec.stop().is_empty(), "a second stop does nothing");
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let d = decode(&bytes);
        assert_eq!(d.methods.get(&method), None, "registered without a name here");
        assert_eq!(d.methods.get(&0).map(String::as_str), Some("[GC]"));
        assert!(d.counters.len() >= 2, "{:?}", d.counters);
        let mut per_thread: Vec<usize> = d
            .records
            .values()
            .map(|r| r.iter().filter(|(tag, m, _)| *m == method && (*tag == TAG_ENTER || *tag == TAG_EXIT)).count())
            .filter(|&n| n > 0)
            .collect();
        per_thread.sort_unstable();
        assert_eq!(per_thread, vec![6, 20_000], "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("2 threads traced")), "{lines:?}");
    }
}
