//! `sampler=jvmti`, `sps` and `isps`: a sampling thread on a timer instead of perf overflow
//! signals (Hofer, Gnedt & Mössenböck 2015):
//! - `jvmti`: GetThreadListStackTraces of every live thread at each tick. HotSpot takes all
//!   the stacks in one VM operation at a global safepoint: every thread stops for every sample
//!   (the paper's baseline).
//! - `sps`: the patched JVM's partial-safepoint extension: only N running threads are sampled,
//!   each walking its own stack at its next safepoint poll; no other thread stops, and this
//!   thread does not wait either: each round it collects the traces that threads published
//!   since the last one (slots of a shared array, see jvm-patches/hpm_sps.h) and requests new
//!   ones.
//!
//! Both produce the same `Captured` records as the signal path, so everything downstream (the
//! processor, the tree, the outputs, `hpm compare`) is shared.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::options::{Options, SamplerKind};
use hpm_capture::capture::{CallFrame, Captured, JvmFrames, StackKind, BCI_NATIVE_FRAME, MAX_FRAMES};
use hpm_capture::latency::Histogram;
use hpm_profile::model::FrameKind;
use jni::sys::{jobject, JNIEnv};

use super::extension;
use super::isps::{self, Isps, IspsBuffers};
use super::sampler_thread::SamplerThread;
use super::{EventSource, Planned, SourceDef, SourceTraits, Start};
use crate::jnienv::{self, Vm};
use crate::jvmti::{Jvmti, JvmtiEnvPtr};
use crate::os::now_ticks;
use crate::sink::Sink;
use crate::stack_source::StackSite;
use crate::threads::{Mode, Threads};

/// `sampler=jvmti` and `sps` (`isps` is its own source on this thread; `event=wall` is
/// [`super::wall`]).
pub const SOURCE: SourceDef = SourceDef {
    traits: |opts| {
        (opts.cpu && matches!(opts.sampler, SamplerKind::Jvmti | SamplerKind::Sps | SamplerKind::Isps))
            .then_some(SourceTraits::plain(StackSite::Jvm))
    },
    plan,
};

fn plan(opts: &Options, jvmti: &Jvmti) -> Result<Planned, String> {
    let kind = match opts.sampler {
        SamplerKind::Sps => Kind::Sps { sps: find_sps(jvmti)?, threads: opts.sps_threads, waiting: opts.sps_waiting },
        SamplerKind::Isps => {
            Kind::Isps { isps: isps::find_isps(jvmti)?, threads: opts.sps_threads, waiting: opts.sps_waiting }
        }
        _ => Kind::Jvmti,
    };
    Ok(planned(opts, kind))
}

/// A timer source of `kind` planned: its "event" is the sampling clock.
fn planned(opts: &Options, kind: Kind) -> Planned {
    // A timer picks threads by their JVM state; kernel time is not told apart.
    let (spec, info) = super::thread_clock_event(opts, "timer");
    let build = move |s: &Start| {
        Ok(Arc::new(TimerSampler::new(Parts {
            threads: s.threads,
            jvmti: s.jvmti,
            vm: s.vm,
            sink: s.sink.clone(),
            kind,
            period: s.period,
            max_depth: s.deep_depth,
            quiet: s.opts.quiet,
        })) as Arc<dyn EventSource>)
    };
    Planned { event: Some((spec, info)), notes: Vec::new(), build: Box::new(build) }
}

pub const SPS_SAMPLE_ID: &str = "com.github.hpm.sps.Sample";

// Slot status, `hpm_sps_trace.status`.
const SLOT_FREE: i32 = 0;
const SLOT_PENDING: i32 = 1;
const SLOT_DONE: i32 = 2;
const SLOT_ABANDONED: i32 = 3;

/// `hpm_sps_frame` / `hpm_sps_trace` from jvm-patches/hpm_sps.h.
#[repr(C)]
#[derive(Clone, Copy)]
struct SpsFrame {
    method: jni::sys::jmethodID,
    bci: i32,
    type_: i32,
}

#[repr(C)]
struct SpsTrace {
    os_tid: i64,
    state: i32,
    num_frames: i32,
    truncated: i32,
    /// Written by sampled threads while this thread reads it: only through `status()`.
    status: i32,
    latency_ns: i64,
    frames: *mut SpsFrame,
    time_ns: i64,
    thread: *mut c_void,
}

type SpsSampleFn = unsafe extern "C" fn(JvmtiEnvPtr, i32, u8, i32, *mut SpsTrace, i32, *mut i32) -> u32;

/// The patched JVM's sample function, found and version-checked.
#[derive(Clone, Copy)]
pub struct Sps {
    sample: SpsSampleFn,
}

/// Finds the partial-safepoint extension; the error says what to do.
pub fn find_sps(jvmti: &Jvmti) -> Result<Sps, String> {
    let fns = extension::functions(jvmti, "sps", 2)?;
    let sample = extension::function(&fns, SPS_SAMPLE_ID)?;
    // SAFETY: SPS_SAMPLE_ID's function has the signature of `SpsSampleFn` (hpm_sps.h).
    Ok(Sps { sample: unsafe { std::mem::transmute::<*const c_void, SpsSampleFn>(sample) } })
}

/// How the timer thread samples.
#[derive(Clone, Copy)]
pub enum Kind {
    /// GetThreadListStackTraces of every thread at a global safepoint.
    Jvmti,
    /// The patched JVM's partial safepoints: `threads` running threads per tick (0: the CPUs),
    /// `waiting` also samples waiting threads.
    Sps { sps: Sps, threads: u32, waiting: bool },
    /// The same partial safepoints with incremental stack tracing: each sample decodes the top
    /// frames, the rest as the thread returns into them; traces are collected every
    /// [`super::isps`]'s `ISPS_RETRIEVE_NS`.
    Isps { isps: Isps, threads: u32, waiting: bool },
}

/// The parts the timer sampler works with.
pub struct Parts {
    pub threads: &'static Threads,
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub sink: Arc<Sink>,
    pub kind: Kind,
    pub period: u64,
    pub max_depth: u32,
    pub quiet: bool,
}

/// `sampler=jvmti` and `sampler=sps`: one attached daemon thread sampling on a timer.
pub struct TimerSampler {
    parts: Arc<Parts>,
    running: SamplerThread<Histogram>,
}

impl TimerSampler {
    pub fn new(parts: Parts) -> TimerSampler {
        TimerSampler { parts: Arc::new(parts), running: SamplerThread::new() }
    }

    fn name(&self) -> &'static str {
        match self.parts.kind {
            Kind::Jvmti => "jvmti",
            Kind::Sps { .. } => "sps",
            Kind::Isps { .. } => "isps",
        }
    }
}

impl EventSource for TimerSampler {
    fn start(&self) -> Result<(), String> {
        let p = &self.parts;
        // Java threads only, by kernel id (sps) and Java id (jvmti); the ones running now are
        // registered first, so samples of threads started before the session are kept.
        p.threads.begin(Mode::Identity);
        p.threads.hint_java_threads(super::java_threads(&p.jvmti, p.vm));
        p.threads.scan();
        let parts = p.clone();
        self.running.start(move |stop| run(&parts, stop))
    }

    fn stop(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(lat) = self.running.stop() {
            if !lat.is_empty() {
                let us = |ns: u64| ns as f64 / 1000.0;
                lines.push(format!(
                    "sampler={}: {} stacks, latency per sample median {:.1} us, p95 {:.1} us, max {:.1} us",
                    self.name(),
                    lat.len(),
                    us(lat.quantile(0.5)),
                    us(lat.quantile(0.95)),
                    us(lat.max())
                ));
            }
        }
        self.parts.threads.stop_all();
        lines
    }
}

/// The sampling thread: attached to the VM (and detached when it ends), excluded from its
/// own samples. Returns the time taken to obtain each sample (per thread for sps, per round
/// for jvmti).
fn run(p: &Parts, stop: &AtomicBool) -> Histogram {
    let mut lat = Histogram::default();
    let tid = crate::os::gettid();
    p.threads.exclude(tid);
    let attached = match p.vm.attach_daemon(c"hpm-sampler") {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hpm: {e}; no samples will be taken");
            p.threads.include(tid);
            return lat;
        }
    };
    let jni = attached.env();
    let period = p.period;
    // The slots the patched JVM writes: sps only (up to 4 MB at jstackdepth=4096).
    let mut buf = Buffers::new(if matches!(p.kind, Kind::Sps { .. }) { p.max_depth as usize } else { 0 });
    // N running threads per round: the CPUs this process may use, found once (the JVM's own
    // default re-reads the cgroup files every 20 ms).
    let running = match p.kind {
        Kind::Sps { threads: 0, .. } | Kind::Isps { threads: 0, .. } | Kind::Jvmti => {
            std::thread::available_parallelism().map_or(1, |n| n.get()) as i32
        }
        Kind::Sps { threads, .. } | Kind::Isps { threads, .. } => threads as i32,
    };
    let mut isps = matches!(p.kind, Kind::Isps { .. }).then(IspsBuffers::new);
    let push_isps = |thread: u32, tid: u32, time: u64, frames: &[(u64, i32, FrameKind)], cut: bool| {
        push(p, thread, tid, time, (p.period, 0), frames.iter().copied(), cut)
    };
    let cx =
        isps::Ctx { jvmti: &p.jvmti, threads: p.threads, max_depth: p.max_depth, quiet: p.quiet, push: &push_isps };
    let mut next = now_ticks().saturating_add(period);
    while !stop.load(Ordering::Acquire) {
        let now = now_ticks();
        if now < next {
            std::thread::park_timeout(Duration::from_nanos(next - now));
            continue;
        }
        next = next_tick(next, now, period);
        match p.kind {
            Kind::Sps { sps, waiting, .. } => sample_sps(p, sps, running, waiting, &mut buf, &mut lat),
            Kind::Isps { isps: f, waiting, .. } => {
                if let Some(b) = isps.as_mut() {
                    b.sample(&cx, f, running, waiting, &mut lat);
                }
            }
            Kind::Jvmti => sample_jvmti(p, jni, &mut lat),
        }
    }
    if let (Some(b), Kind::Isps { isps: f, .. }) = (isps.as_mut(), p.kind) {
        b.finish(&cx, f, &mut lat);
    }
    buf.collect(p, &mut lat);
    if buf.abandoned > 0 && !p.quiet {
        eprintln!("hpm: sampler=sps: {} requested samples were not taken: their threads ended first", buf.abandoned);
    }
    buf.release();
    drop(attached);
    p.threads.include(tid);
    lat
}

/// The tick after the one due at `next`, taken at `now`: a period later, or a period from now
/// if the sampler fell behind (a long safepoint), resuming the rhythm instead of bursting.
/// Saturating: a tick past the clock's range is never due, where a wrapped one (a period near
/// 2^64 ns) was always due, and the sampler took samples without pause.
pub(super) fn next_tick(next: u64, now: u64, period: u64) -> u64 {
    let after = next.saturating_add(period);
    if after > now {
        after
    } else {
        now.saturating_add(period)
    }
}

/// The slots shared with the patched JVM. Sampled threads write their slot (trace and frames)
/// whenever they reach a poll, so after construction the slots are only touched through raw
/// pointers, and their memory is leaked rather than freed while any slot is still pending.
struct Buffers {
    traces: Vec<SpsTrace>,
    frames: Vec<SpsFrame>,
    base: *mut SpsTrace,
    depth: usize,
    /// Requests whose thread ended before it sampled itself.
    abandoned: u64,
}

impl Buffers {
    fn new(depth: usize) -> Buffers {
        let depth = depth.min(hpm_capture::capture::MAX_DEEP_FRAMES);
        let cap = 64;
        let mut frames = vec![SpsFrame { method: std::ptr::null_mut(), bci: 0, type_: 0 }; cap * depth];
        let mut traces: Vec<SpsTrace> = (0..cap)
            .map(|i| SpsTrace {
                os_tid: 0,
                state: 0,
                num_frames: 0,
                truncated: 0,
                status: SLOT_FREE,
                latency_ns: 0,
                frames: frames[i * depth..].as_mut_ptr(),
                time_ns: 0,
                thread: std::ptr::null_mut(),
            })
            .collect();
        let base = traces.as_mut_ptr();
        Buffers { traces, frames, base, depth, abandoned: 0 }
    }

    fn status(&self, i: usize) -> &AtomicI32 {
        // SAFETY: i < traces.len(); the field is an aligned i32 that the JVM accesses only
        // atomically (Atomic::load_acquire / release_store / cmpxchg), as this side does.
        unsafe { AtomicI32::from_ptr(std::ptr::addr_of_mut!((*self.base.add(i)).status)) }
    }

    fn any_pending(&self) -> bool {
        (0..self.traces.len()).any(|i| self.status(i).load(Ordering::Acquire) == SLOT_PENDING)
    }

    /// Hands every published trace to the processor and frees its slot.
    fn collect(&mut self, p: &Parts, lat: &mut Histogram) {
        for i in 0..self.traces.len() {
            match self.status(i).load(Ordering::Acquire) {
                SLOT_DONE => {
                    // SAFETY: a DONE slot is no longer written by the JVM (it release-stored
                    // DONE after the trace, and our acquire load saw it); it stays ours until
                    // we store FREE below.
                    let t = unsafe { std::ptr::read(self.base.add(i)) };
                    lat.record(t.latency_ns.max(0) as u64);
                    let n = (t.num_frames.max(0) as usize).min(self.depth);
                    // SAFETY: the JVM wrote `num_frames` (<= depth) frames into this slot's buffer.
                    let frames = unsafe { std::slice::from_raw_parts(t.frames, n) };
                    if let Some(thread) = p.threads.index_for_tid(t.os_tid as i32) {
                        let frames = frames.iter().map(|f| (f.method as u64, f.bci, extension::frame_kind(f.type_)));
                        let time = t.time_ns.max(0) as u64;
                        push(p, thread, t.os_tid as u32, time, (p.period, 0), frames, t.truncated != 0);
                    }
                }
                SLOT_ABANDONED => self.abandoned += 1,
                _ => continue,
            }
            self.status(i).store(SLOT_FREE, Ordering::Release);
        }
    }

    /// Releases the slots: freed if no thread still owes a trace, otherwise leaked, because a
    /// thread may still write its slot at its next poll.
    fn release(self) {
        if self.any_pending() {
            std::mem::forget(self.traces);
            std::mem::forget(self.frames);
        }
    }
}

/// One `sps` round: collect what threads published since the last round, then ask the
/// patched JVM for samples of up to N running threads (it returns without waiting for them).
fn sample_sps(p: &Parts, sps: Sps, running: i32, waiting: bool, b: &mut Buffers, lat: &mut Histogram) {
    b.collect(p, lat);
    let mut count = 0i32;
    // SAFETY: the arguments match hpm_sps.h: `base` has `traces.len()` slots whose `frames`
    // point at `depth` entries each; both vectors live until `release`, which leaks them
    // while a slot is pending.
    let _rc = unsafe {
        (sps.sample)(
            p.jvmti.raw(),
            running,
            u8::from(waiting),
            b.depth as i32,
            b.base,
            b.traces.len() as i32,
            &mut count,
        )
    };
}

/// One `jvmti` round: every thread's stack, taken at a global safepoint; threads that are
/// running Java code are kept (a CPU profile, comparable to the other samplers). JVMTI calls a
/// thread blocked inside a native method RUNNABLE (the Reference Handler waiting for pending
/// references, say), so threads whose top frame is native are left out too.
fn sample_jvmti(p: &Parts, jni: *mut JNIEnv, lat: &mut Histogram) {
    let Ok(threads) = p.jvmti.all_threads() else { return };
    let start = now_ticks();
    let stacks = p.jvmti.thread_list_stack_traces(&threads, p.max_depth as i32 + 1);
    let time = now_ticks();
    lat.record(time - start);
    if let Ok(stacks) = stacks {
        for (thread, state, frames) in stacks {
            const RUNNABLE: i32 = 0x0004;
            const IN_NATIVE: i32 = 0x0040_0000;
            let top_is_native = frames.first().is_some_and(|&(_, location)| location < 0);
            if state & RUNNABLE == 0 || state & IN_NATIVE != 0 || top_is_native {
                continue;
            }
            push_jvmti_stack(p, jni, thread, time, (p.period, 0), &frames);
        }
    }
    for t in threads {
        jnienv::delete_local_ref(jni, t);
    }
}

/// Hands a stack from GetThreadListStackTraces to the processor, for the registry's entry of
/// `thread` (none for hpm's own threads, which the registry excludes: nothing is pushed).
fn push_jvmti_stack(p: &Parts, jni: *mut JNIEnv, thread: jobject, time: u64, weight: (u64, u8), frames: &[(u64, i64)]) {
    let Some(id) = jnienv::java_thread_id(jni, thread) else { return };
    let Some(idx) = p.threads.index_for_java_id(id, || p.jvmti.thread_name(thread).unwrap_or_default()) else {
        return;
    };
    // JVMTI does not say how a frame runs (and these sessions keep no code map to guess it
    // from): Java frames are of unknown kind, native ones native.
    let kind = |loc: i64| if loc < 0 { FrameKind::Native } else { FrameKind::Unknown };
    // One frame more than kept is asked for: it says whether the stack went on.
    let keep = frames.len().min(p.max_depth as usize);
    let cut = frames.len() > keep;
    push(p, idx, 0, time, weight, frames[..keep].iter().map(|&(m, loc)| (m, loc as i32, kind(loc))), cut);
}

/// Hands one stack (leaf first) to the processor as a captured record; `weight` = (the time the
/// sample stands for, its thread state code).
fn push(
    p: &Parts,
    thread: u32,
    tid: u32,
    time: u64,
    (period, state): (u64, u8),
    frames: impl Iterator<Item = (u64, i32, FrameKind)>,
    cut: bool,
) {
    let _ = p.sink.timer_queue.push_with(&p.sink.pool, |c: &mut Captured| {
        c.raw = Default::default();
        c.raw.time = time;
        c.raw.tid = tid;
        c.raw.period = period;
        c.thread = thread;
        c.shares_walk = false;
        c.kernel_periods = 0;
        c.state = state;
        c.vthread = 0;
        let frame = |(m, bci, kind): (u64, i32, FrameKind)| {
            let native = kind == FrameKind::Native || bci < 0;
            (CallFrame { lineno: if native { BCI_NATIVE_FRAME } else { bci }, method_id: m }, kind)
        };
        let mut frames = frames.map(frame);
        let mut n = 0;
        for (f, kind) in frames.by_ref().take(MAX_FRAMES) {
            c.frames[n] = f;
            c.kinds[n] = kind;
            n += 1;
        }
        let mut jvm = JvmFrames { n: n as u16, depth_cut: cut, deep: 0 };
        // Deeper stacks (`jstackdepth` past MAX_FRAMES): the rest waits in the sink.
        let deep: Vec<_> = frames.collect();
        if !deep.is_empty() {
            match p.sink.put_deep(deep) {
                Some(key) => jvm.deep = key,
                None => jvm.depth_cut = true,
            }
        }
        c.stack = StackKind::JvmFrames(jvm);
        n > 0
    });
}

#[cfg(test)]
mod tests {
    use super::next_tick;

    #[test]
    fn the_next_tick_is_a_period_on_and_never_wraps_into_the_past() {
        assert_eq!(next_tick(100, 105, 10), 110);
        assert_eq!(next_tick(100, 150, 10), 160, "fell behind: a period from now");
        let now = 1_000_000_000;
        assert_eq!(next_tick(now, now, u64::MAX), u64::MAX);
        assert_eq!(next_tick(u64::MAX, u64::MAX, 1), u64::MAX);
    }
}
