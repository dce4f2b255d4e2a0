//! `event=wall`: every Java thread sampled at the interval whatever its state, without a VM
//! operation. A sampling thread picks up to [`WALL_THREADS_PER_TICK`] Java threads a tick, in
//! turn (with `thread=REGEX` only those whose name matches), reads each one's state
//! (JVMTI GetThreadState: the thread's own fields, no safepoint), leaves state and weight in
//! its slot and signals it (`Threads::request_wall`); the thread's handler walks its own stack
//! as for a CPU sample (`signal::wall`). A thread in a blocking system call is woken by the
//! signal; hpm's handler is installed with SA_RESTART, and the JVM's and libc's waits retry
//! on EINTR.
//!
//! Each sample stands for the wall time between two visits of its thread (its weight); a
//! request its thread has not taken by the next visit (it did not run) gets that visit's time
//! added, so the time stays whole. Signals get lost (hpm moved to another signal, the kernel
//! out of queued siginfo, the thread ending with it blocked): a request still untaken after
//! [`WALL_RESEND_VISITS`] visits, or after a move, is signalled again (`threads::Posted`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hpm_capture::capture::state_from_jvmti;
use hpm_profile::model::ThreadInfo;
use jni::sys::{jobject, JNIEnv};

use super::sampler_thread::SamplerThread;
use super::{EventSource, Planned, SourceDef, SourceTraits, Start};
use crate::code::CodeEvents;
use crate::jnienv::{self, Vm};
use crate::jvmti::Jvmti;
use crate::options::{Options, SamplerKind};
use crate::os::now_ticks;
use crate::signal::wall::WALL_TAG;
use crate::signal::{SignalSetup, SignalStats};
use crate::sink::{SignalCtx, Sink};
use crate::stack_source::StackSite;
use crate::threads::{Mode, Posted, Threads, WallMiss, WallRequest, WALL_RESEND_VISITS};

pub const SOURCE: SourceDef = SourceDef {
    traits: |opts| {
        (opts.cpu && opts.sampler == SamplerKind::Wall).then_some(SourceTraits {
            // Stacks walked by hpm's walker: the code map's events from the start.
            code_at_load: true,
            threads_per_tick: Some(WALL_THREADS_PER_TICK as u32),
            ..SourceTraits::plain(StackSite::InThread)
        })
    },
    plan,
};

/// Java threads sampled per tick at most: with thousands of idle threads the cost of a tick
/// stays that of 16 signals (async-profiler's wall mode also samples a subset per tick). With
/// more threads than this, each is sampled every `threads / 16` ticks and its samples stand
/// for that much time.
pub const WALL_THREADS_PER_TICK: usize = 16;

/// The thread list is read again after this long: a thread started since is sampled from then
/// on, one that ended is skipped (no longer ALIVE) until then. Names are matched again too.
const WALL_LIST_NS: u64 = 100_000_000;

/// The longest a tick waits for free batches ([`pace`]): four processor rounds. Past it the
/// tick goes on (a sample that then finds no batch is dropped, counted): the batches it waited
/// for may be held by threads that do not run, and sampling must not stop silently.
const MAX_PACE_NS: u64 = 4 * ROUND_NS;

/// The processor's round (`processor::ROUND`): a thread visited less often than this hands
/// its batch on with each sample (`WallRequest::hand_on`), so the pool holds a batch per
/// sample in flight, not one per thread visited.
const ROUND_NS: u64 = 50_000_000;

fn plan(opts: &Options, _: &Jvmti) -> Result<Planned, String> {
    // Threads are picked by the clock whatever they run; kernel time is not told apart.
    let (spec, info) = super::thread_clock_event(opts, "wall");
    let build = move |s: &Start| {
        let thread_filter = s
            .opts
            .thread_filter
            .as_deref()
            .map(|p| hpm_profile::filter::compile_thread_pattern_for("thread=", p))
            .transpose()?;
        Ok(Arc::new(WallSampler {
            parts: Arc::new(Parts {
                threads: s.threads,
                jvmti: s.jvmti,
                vm: s.vm,
                sink: s.sink.clone(),
                period: s.period,
                thread_filter,
            }),
            code: s.code,
            setup: s.signals,
            stats: s.stats,
            ctx: s.signal_ctx(s.asgct, None),
            running: SamplerThread::new(),
        }) as Arc<dyn EventSource>)
    };
    Ok(Planned {
        event: Some((spec, info)),
        notes: super::depth_note(opts).into_iter().collect(),
        build: Box::new(build),
    })
}

/// What the sampling thread works with.
struct Parts {
    threads: &'static Threads,
    jvmti: Jvmti,
    vm: Vm,
    sink: Arc<Sink>,
    period: u64,
    /// `thread=REGEX`: the threads sampled.
    thread_filter: Option<regex::Regex>,
}

pub struct WallSampler {
    parts: Arc<Parts>,
    code: &'static CodeEvents,
    setup: &'static SignalSetup,
    stats: &'static SignalStats,
    /// Published with every thread's slot (held by the registry while the session samples).
    ctx: Arc<SignalCtx>,
    running: SamplerThread<WallSummary>,
}

impl EventSource for WallSampler {
    fn start(&self) -> Result<(), String> {
        let p = &self.parts;
        self.setup.ensure_installed(p.threads, self.stats)?;
        let jni = p.vm.env().ok_or("the calling thread is not attached to the JVM")?;
        // Sessions start at VMInit or later: what was loaded and compiled before is replayed.
        self.code.enable(&p.jvmti, Some(jni)).map_err(|e| format!("cannot enable the compiled-code events: {e}"))?;
        crate::signal::wall::arm();
        // Java threads only, each with a slot its handler enters; the ones running now are
        // registered first (the sampler attaches any it meets later).
        p.threads.begin(Mode::Signalled { ctx: self.ctx.clone() });
        p.threads.hint_java_threads(super::java_threads(&p.jvmti, p.vm));
        p.threads.scan();
        let parts = p.clone();
        self.running.start(move |stop| run(&parts, stop))
    }

    fn tick(&self, _round: u64, _scan: bool) {
        // Another handler took hpm's signal: hpm moves to another; the sampler signals with
        // the registry's signal, so its next tick uses the new one.
        if let Some(moved) = self.setup.check(self.parts.threads) {
            eprintln!("hpm: {}", moved.line());
        }
    }

    fn stop(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(seen) = self.running.stop() {
            lines.push(seen.line(self.parts.period, &self.parts.sink));
        }
        // Every slot retired (a handler still inside is waited for): nothing writes after.
        self.parts.threads.stop_all();
        lines
    }
}

/// The sampling thread: attached to the VM (and detached when it ends), never sampled itself.
fn run(p: &Parts, stop: &AtomicBool) -> WallSummary {
    let tid = crate::os::gettid();
    p.threads.exclude(tid);
    let mut w = WallState::default();
    let attached = match p.vm.attach_daemon(c"hpm-sampler") {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hpm: {e}; no samples will be taken");
            p.threads.include(tid);
            return w.seen;
        }
    };
    let jni = attached.env();
    let mut next = now_ticks().saturating_add(p.period);
    while !stop.load(Ordering::Acquire) {
        let now = now_ticks();
        if now < next {
            std::thread::park_timeout(Duration::from_nanos(next - now));
            continue;
        }
        next = super::timer::next_tick(next, now, p.period);
        pace(p, &mut w, stop);
        sample(p, jni, &mut w);
    }
    w.release(jni);
    drop(attached);
    p.threads.include(tid);
    w.seen
}

/// What the sampler keeps between ticks: the threads it samples in turn (global references
/// with their kernel ids, listed again every [`WALL_LIST_NS`]: a tick touches only the threads
/// it samples), where its round robin is, and which threads are kept, by Java thread id.
#[derive(Default)]
struct WallState {
    threads: Vec<(jobject, i32)>,
    listed_at: Option<u64>,
    next: usize,
    keep: HashMap<u64, bool>,
    /// When the last tick's requests were sent: the next tick's stand for the time since.
    last_tick: Option<u64>,
    seen: WallSummary,
}

impl WallState {
    /// Lists the Java threads again when the list is due: those kept (not hpm's own; with
    /// `thread=REGEX` those whose name matches) and started (their kernel id known), each
    /// given a slot if it has none yet.
    fn refresh(&mut self, p: &Parts, jni: *mut JNIEnv, now: u64) {
        if self.listed_at.is_some_and(|t| now.saturating_sub(t) < WALL_LIST_NS) {
            return;
        }
        self.listed_at = Some(now);
        let Ok(all) = p.jvmti.all_threads() else { return };
        self.release(jni);
        if self.keep.len() > 4 * all.len() + 64 {
            self.keep.clear();
        }
        for t in all {
            if let Some((id, tid)) = self.kept(p, jni, t) {
                if !p.threads.is_live(tid) {
                    let name = p.jvmti.thread_name(t).unwrap_or_default();
                    let _ = p.threads.attach(
                        tid,
                        ThreadInfo { os_tid: tid as u32, java_id: Some(id), name, is_java: true, is_virtual: false },
                    );
                }
                if let Some(g) = jnienv::new_global_ref(jni, t) {
                    self.threads.push((g, tid));
                }
            }
            // This thread never returns to Java: its local references must be freed by hand.
            jnienv::delete_local_ref(jni, t);
        }
    }

    /// Thread `t`'s Java id and kernel id, if it is sampled.
    fn kept(&mut self, p: &Parts, jni: *mut JNIEnv, t: jobject) -> Option<(u64, i32)> {
        let id = jnienv::java_thread_id(jni, t)?;
        let keep = *self.keep.entry(id).or_insert_with(|| {
            let name = p.jvmti.thread_name(t).unwrap_or_default();
            !name.starts_with("hpm-") && p.thread_filter.as_ref().is_none_or(|re| re.is_match(&name))
        });
        let ptr = jnienv::java_thread_ptr(jni, t);
        let tid = (ptr != 0).then(|| crate::vmstructs::java_thread_tid(ptr)).flatten();
        keep.then_some((id, tid?))
    }

    fn release(&mut self, jni: *mut JNIEnv) {
        for (g, _) in self.threads.drain(..) {
            jnienv::delete_global_ref(jni, g);
        }
    }
}

/// What the wall sampler's ticks met, for the summary.
#[derive(Clone, Copy, Default)]
struct WallSummary {
    /// The most threads sampled in turn.
    most_threads: usize,
    /// Ticks that waited for free batches ([`pace`]), and how long they waited in all.
    paced: u64,
    paced_ns: u64,
    /// Requests sent (signals), requests signalled again (see `threads::Posted::Again`), and
    /// those not sent: by reason.
    sent: u64,
    resent: u64,
    pending: u64,
    no_slot: u64,
    ended: u64,
}

impl WallSummary {
    /// The summary's line: `wall: up to 47 threads, 16 a tick every 1 ms, by signals (16,000
    /// sent, 2 again; 3 still pending at the next visit, 0 without a slot, 0 ended; 15,990 walked);
    /// sample pool 96 of 544 batches (8.4 of 47.8 MiB); never paced, 0 dropped`.
    fn line(&self, period: u64, sink: &Sink) -> String {
        let group = hpm_profile::text::group;
        let mib = |batches: usize| {
            let bytes =
                batches * hpm_capture::batch::BATCH_SIZE * std::mem::size_of::<hpm_capture::capture::Captured>();
            format!("{:.1}", bytes as f64 / f64::from(1 << 20))
        };
        let (used, cap) = (sink.pool.allocated(), sink.pool.capacity());
        let paced = match self.paced {
            0 => "never paced".to_string(),
            n => format!(
                "paced {} {} ({} in all, waiting for the processor to free batches)",
                group(n),
                if n == 1 { "time" } else { "times" },
                hpm_profile::text::duration_ns(self.paced_ns)
            ),
        };
        let (walked, refused, stale) = crate::signal::wall::HANDLED.counts();
        let mut handled = format!("{} walked", group(walked));
        if refused + stale > 0 {
            handled.push_str(&format!(", {} refused by a retired slot, {} stale", group(refused), group(stale)));
        }
        format!(
            "wall: up to {} threads, {} a tick every {}, by signals ({} sent, {} again (untaken at the {}th visit or \
             after a signal move); {} still pending at the next visit, \
             {} without a slot, {} ended; {handled}); sample pool {used} of {cap} batches ({} of {} MiB); {paced}, \
             {} dropped",
            self.most_threads,
            self.most_threads.min(WALL_THREADS_PER_TICK),
            hpm_profile::text::duration_ns(period),
            group(self.sent),
            group(self.resent),
            WALL_RESEND_VISITS,
            group(self.pending),
            group(self.no_slot),
            group(self.ended),
            mib(used),
            mib(cap),
            group(sink.pool.dropped())
        )
    }
}

/// Before a tick: waits, a period at a time, until the pool has a free batch for each thread
/// the tick signals (each fills its own slot's batch) and for each request in flight (sent
/// before, its handler not run yet: a thread not scheduled since), or the session stops, or
/// [`MAX_PACE_NS`] passed. The sampler is an ordinary thread: where a handler would drop a
/// sample, it may wait. Its next tick's samples then stand for the time waited too
/// ([`WallState::last_tick`]).
fn pace(p: &Parts, w: &mut WallState, stop: &AtomicBool) {
    let (sampled, capacity) = (w.threads.len(), p.sink.pool.capacity());
    // Counting the slots with a request takes the registry's lock: only when it may matter.
    if p.sink.pool.free_batches() >= need(sampled, capacity) {
        return;
    }
    let enough = || p.sink.pool.free_batches() >= need(p.threads.wall_pending(), capacity);
    if enough() {
        return;
    }
    let start = now_ticks();
    while !enough() && !stop.load(Ordering::Acquire) && now_ticks().saturating_sub(start) < MAX_PACE_NS {
        std::thread::park_timeout(Duration::from_nanos(p.period));
    }
    w.seen.paced += 1;
    w.seen.paced_ns += now_ticks().saturating_sub(start);
}

/// The free batches a tick waits for with `in_flight` requests untaken: one per request and
/// one per thread it signals, never more than the pool's `capacity`. The requests in flight
/// are counted from the slots (each holds at most one, so at most the threads sampled), never
/// from counts of signals sent and handled: a lost signal would stay in those for good.
fn need(in_flight: usize, capacity: usize) -> usize {
    WALL_THREADS_PER_TICK.saturating_add(in_flight).min(capacity)
}

/// The `k` threads of `n` a tick visits from `start` on, in turn, and where the next begins.
fn pick(start: usize, n: usize, k: usize) -> (impl Iterator<Item = usize>, usize) {
    let start = if n == 0 { 0 } else { start % n };
    ((0..k).map(move |i| (start + i) % n), if n == 0 { 0 } else { (start + k) % n })
}

/// One tick: the next [`WALL_THREADS_PER_TICK`] threads in turn, each asked for a sample.
fn sample(p: &Parts, jni: *mut JNIEnv, w: &mut WallState) {
    w.refresh(p, jni, now_ticks());
    let n = w.threads.len();
    if n == 0 {
        return;
    }
    let k = n.min(WALL_THREADS_PER_TICK);
    let (visits, next) = pick(w.next, n, k);
    w.next = next;
    w.seen.most_threads = w.seen.most_threads.max(n);
    let time = now_ticks();
    // Each sample stands for the wall time between two visits of its thread: `n / k` ticks,
    // each as long as this one was (late ticks, a wait for free batches).
    let tick = w.last_tick.map_or(p.period, |last| time.saturating_sub(last));
    w.last_tick = Some(time);
    let weight = tick.saturating_mul(n as u64) / k as u64;
    let hand_on = (n as u64).saturating_mul(p.period) > (k as u64).saturating_mul(ROUND_NS);
    let signal = p.threads.signal();
    for i in visits {
        let (thread, tid) = w.threads[i];
        const ALIVE: i32 = 0x1;
        let state = match p.jvmti.thread_state(thread) {
            Ok(s) if s & ALIVE != 0 => s,
            _ => {
                w.seen.ended += 1;
                continue;
            }
        };
        match p.threads.request_wall(
            tid,
            WallRequest { weight, state: state_from_jvmti(state), hand_on },
            signal,
            WALL_TAG,
        ) {
            Ok(Posted::Again) => w.seen.resent += 1,
            Ok(_) => w.seen.sent += 1,
            Err(WallMiss::Pending) => w.seen.pending += 1,
            Err(WallMiss::NoSlot) => w.seen.no_slot += 1,
            Err(WallMiss::Gone) => w.seen.ended += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{need, pick, WALL_THREADS_PER_TICK};

    #[test]
    fn a_tick_waits_for_a_batch_per_request_in_flight_and_never_for_more_than_the_pool() {
        assert_eq!(need(0, 544), WALL_THREADS_PER_TICK);
        assert_eq!(need(30, 544), WALL_THREADS_PER_TICK + 30);
        assert_eq!(need(10_000, 544), 544, "a pool smaller than the threads in flight: its capacity");
        assert_eq!(need(usize::MAX, 32), 32);
    }

    #[test]
    fn a_tick_visits_the_next_threads_in_turn_and_wraps() {
        let (v, next) = pick(0, 40, 16);
        assert_eq!(v.collect::<Vec<_>>(), (0..16).collect::<Vec<_>>());
        assert_eq!(next, 16);
        let (v, next) = pick(32, 40, 16);
        assert_eq!(v.collect::<Vec<_>>(), [32, 33, 34, 35, 36, 37, 38, 39, 0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(next, 8);
        let (v, next) = pick(7, 3, 3);
        assert_eq!((v.collect::<Vec<_>>(), next), (vec![1, 2, 0], 1), "fewer threads than a tick: each once");
        let (v, next) = pick(5, 0, 0);
        assert_eq!((v.count(), next), (0, 0));
    }
}
