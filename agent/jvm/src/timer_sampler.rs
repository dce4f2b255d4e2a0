//! Samplers driven by a timer thread instead of perf overflow signals (Hofer, Gnedt &
//! Mössenböck 2015):
//! - `jvmti`: GetThreadListStackTraces of every live thread at each tick. HotSpot takes all
//!   the stacks in one VM operation at a global safepoint: every thread stops for every sample
//!   (the paper's baseline).
//! - `sps`: the patched JVM's partial-safepoint extension: only N running threads are sampled,
//!   each walking its own stack at its next safepoint poll; no other thread stops.
//!
//! Both produce the same `Captured` records as the signal path, so everything downstream (the
//! processor, the tree, the outputs, `hpm compare`) is shared.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hpm_core::capture::{CallFrame, Captured, BCI_NATIVE_FRAME, MAX_FRAMES};
use hpm_core::model::FrameKind;
use hpm_core::options::Sampler;
use jni::sys::JNIEnv;

use crate::agent::now_ticks;
// The timer samplers run inside a profiling session, which derefs to the Agent.
use crate::session::Session as Agent;
use crate::jvmti::{self, Jvmti, JvmtiEnvPtr};

pub const SPS_VERSION_ID: &str = "com.github.hpm.sps.Version";
pub const SPS_SAMPLE_ID: &str = "com.github.hpm.sps.Sample";
pub const SPS_VERSION: i32 = 1;

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
    latency_ns: i64,
    frames: *mut SpsFrame,
}

type SpsSampleFn = unsafe extern "C" fn(JvmtiEnvPtr, i32, u8, i32, *mut SpsTrace, i32, *mut i32) -> u32;

/// The patched JVM's sample function, found and version-checked.
#[derive(Clone, Copy)]
pub struct Sps {
    sample: SpsSampleFn,
}

/// Finds the partial-safepoint extension; the error says what to do.
pub fn find_sps(jvmti: &Jvmti) -> Result<Sps, String> {
    let fns = jvmti.extension_functions().map_err(|e| e.to_string())?;
    let get = |id: &str| fns.iter().find(|(i, _)| i == id).map(|(_, f)| *f);
    let (Some(version), Some(sample)) = (get(SPS_VERSION_ID), get(SPS_SAMPLE_ID)) else {
        return Err(format!(
            "sampler=sps needs the patched JVM's extension functions ({SPS_SAMPLE_ID}), which this JVM does not offer; \
             build it with `bash jvm-patches/build.sh` and run with its java, or use sampler=asgct"
        ));
    };
    let mut v: i32 = 0;
    // SAFETY: the extension registered under SPS_VERSION_ID takes (jvmtiEnv*, jint*), per
    // jvm-patches/hpm_sps.h; `v` outlives the call.
    let rc = unsafe {
        let f: unsafe extern "C" fn(JvmtiEnvPtr, *mut i32) -> u32 = std::mem::transmute(version);
        f(jvmti.raw(), &mut v)
    };
    if rc != 0 || v != SPS_VERSION {
        return Err(format!("the JVM's partial-safepoint extension speaks version {v} (error {rc}); this agent understands {SPS_VERSION}: rebuild the patched JDK from this checkout"));
    }
    // SAFETY: SPS_SAMPLE_ID's function has the signature of `SpsSampleFn` (hpm_sps.h).
    Ok(Sps { sample: unsafe { std::mem::transmute::<*const c_void, SpsSampleFn>(sample) } })
}

pub struct TimerHandle {
    stop: Arc<AtomicBool>,
    join: JoinHandle<()>,
    /// Time to obtain each sample (per thread for sps, per round for jvmti), nanoseconds.
    pub latencies: Arc<Mutex<Vec<u64>>>,
}

impl TimerHandle {
    pub fn stop(self) -> Vec<u64> {
        self.stop.store(true, Ordering::Release);
        self.join.thread().unpark();
        let _ = self.join.join();
        std::mem::take(&mut *self.latencies.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Starts the sampling thread (an attached daemon, excluded from its own samples).
pub fn start(agent: &'static Agent, sps: Option<Sps>) -> std::io::Result<TimerHandle> {
    let stop = Arc::new(AtomicBool::new(false));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let (flag, lat) = (stop.clone(), latencies.clone());
    let join = std::thread::Builder::new().name("hpm-sampler".into()).spawn(move || {
        agent.threads.exclude(crate::perf::gettid());
        let Some(jni) = crate::processor::attach_daemon(agent, c"hpm-sampler") else { return };
        let period = agent.event.period;
        let mut buf = Buffers::new(agent.max_depth as usize);
        let mut next = now_ticks() + period;
        while !flag.load(Ordering::Acquire) {
            let now = now_ticks();
            if now < next {
                std::thread::park_timeout(Duration::from_nanos(next - now));
                continue;
            }
            // Fell behind (a long safepoint): resume the rhythm instead of bursting.
            next = if next + period > now { next + period } else { now + period };
            let mut l = Vec::new();
            match (agent.opts.sampler, sps) {
                (Sampler::Sps, Some(s)) => sample_sps(agent, s, &mut buf, &mut l),
                _ => sample_jvmti(agent, jni, &mut l),
            }
            lat.lock().unwrap_or_else(|p| p.into_inner()).extend(l);
        }
    })?;
    Ok(TimerHandle { stop, join, latencies })
}

struct Buffers {
    traces: Vec<SpsTrace>,
    frames: Vec<SpsFrame>,
    depth: usize,
}

impl Buffers {
    fn new(depth: usize) -> Buffers {
        let depth = depth.min(MAX_FRAMES);
        let cap = 64;
        let frames = vec![SpsFrame { method: std::ptr::null_mut(), bci: 0, type_: 0 }; cap * depth];
        let traces = (0..cap)
            .map(|_| SpsTrace { os_tid: 0, state: 0, num_frames: 0, truncated: 0, latency_ns: 0, frames: std::ptr::null_mut() })
            .collect();
        Buffers { traces, frames, depth }
    }
}

/// One `sps` round: the patched JVM samples up to N running threads.
fn sample_sps(agent: &Agent, sps: Sps, b: &mut Buffers, lat: &mut Vec<u64>) {
    let depth = b.depth;
    for (i, t) in b.traces.iter_mut().enumerate() {
        t.frames = b.frames[i * depth..].as_mut_ptr();
        t.num_frames = 0;
    }
    let mut count = 0i32;
    // SAFETY: the arguments match hpm_sps.h: `traces` has `capacity` entries whose `frames`
    // point at `depth` entries each, all owned by `b` and alive during the call.
    let rc = unsafe {
        (sps.sample)(
            agent.jvmti.raw(),
            agent.opts.sps_threads as i32,
            u8::from(agent.opts.sps_waiting),
            depth as i32,
            b.traces.as_mut_ptr(),
            b.traces.len() as i32,
            &mut count,
        )
    };
    if rc != 0 {
        return;
    }
    let time = now_ticks();
    for t in &b.traces[..count.clamp(0, b.traces.len() as i32) as usize] {
        lat.push(t.latency_ns.max(0) as u64);
        let n = (t.num_frames.max(0) as usize).min(depth);
        // SAFETY: the JVM wrote `num_frames` (<= depth) frames into this trace's buffer.
        let frames = unsafe { std::slice::from_raw_parts(t.frames, n) };
        let thread = agent.threads.index_for_tid(t.os_tid as i32);
        let Some(thread) = thread else { continue };
        push(agent, thread, t.os_tid as u32, time, frames.iter().map(|f| (f.method as u64, f.bci, Some(sps_kind(f.type_)))));
    }
}

fn sps_kind(t: i32) -> FrameKind {
    match t {
        0 => FrameKind::Interpreted,
        1 => FrameKind::JitCompiled,
        2 => FrameKind::Inlined,
        3 => FrameKind::Native,
        _ => FrameKind::Unknown,
    }
}

/// One `jvmti` round: every thread's stack, taken at a global safepoint; threads that are
/// running Java code are kept (a CPU profile, comparable to the other samplers). JVMTI calls a
/// thread blocked inside a native method RUNNABLE (the Reference Handler waiting for pending
/// references, say), so threads whose top frame is native are left out too.
fn sample_jvmti(agent: &Agent, jni: *mut JNIEnv, lat: &mut Vec<u64>) {
    let Ok(threads) = agent.jvmti.all_threads() else { return };
    let start = now_ticks();
    let stacks = agent.jvmti.thread_list_stack_traces(&threads, agent.max_depth.min(MAX_FRAMES as u32) as i32);
    let time = now_ticks();
    lat.push(time - start);
    if let Ok(stacks) = stacks {
        for (thread, state, frames) in stacks {
            const RUNNABLE: i32 = 0x0004;
            const IN_NATIVE: i32 = 0x0040_0000;
            let top_is_native = frames.first().is_some_and(|&(_, location)| location < 0);
            if state & RUNNABLE == 0 || state & IN_NATIVE != 0 || top_is_native {
                continue;
            }
            let java_id = jvmti::java_thread_id(jni, thread);
            let Some(idx) = java_id.map(|id| agent.threads.index_for_java_id(id, || agent.jvmti.thread_name(thread).unwrap_or_default())) else { continue };
            let Some(idx) = idx else { continue };
            push(agent, idx, 0, time, frames.iter().map(|&(m, loc)| (m, loc as i32, None)));
        }
    }
    for t in threads {
        jvmti::delete_local_ref(jni, t);
    }
}

/// Hands one stack (leaf first) to the processor as a captured record.
fn push(agent: &Agent, thread: u32, tid: u32, time: u64, frames: impl Iterator<Item = (u64, i32, Option<FrameKind>)>) {
    let _ = agent.threads.timer_queue.push_with(&agent.queues, |c: &mut Captured| {
        c.raw = Default::default();
        c.raw.time = time;
        c.raw.tid = tid;
        c.raw.period = agent.event.period;
        c.thread = thread;
        c.walk_from_caller = false;
        c.exact_kinds = true;
        let mut n = 0;
        for (m, bci, kind) in frames.take(MAX_FRAMES) {
            let native = kind == Some(FrameKind::Native) || bci < 0;
            c.frames[n] = CallFrame { lineno: if native { BCI_NATIVE_FRAME } else { bci }, method_id: m };
            match kind {
                Some(k) => c.kinds[n] = k,
                None => c.exact_kinds = false,
            }
            n += 1;
        }
        c.num_frames = n as i32;
        n > 0
    });
}
