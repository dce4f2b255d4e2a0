//! `sampler=isps`: the patched JVM's incremental stack tracing (Hofer, Gnedt & Mössenböck §5;
//! jvm-patches/hpm_sps.h, interface version 3). Each tick requests samples of up to N threads,
//! which decode only their top frames; every [`ISPS_RETRIEVE_NS`] the JVM completes the pending
//! traces (the rest of each stack, once for all of its traces) and hands them out as trees,
//! which are expanded here into ordinary stacks for the processor. Driven by the timer source's
//! thread (`timer::Kind::Isps`), which plans it.

use std::ffi::c_void;

use hpm_capture::latency::Histogram;
use hpm_profile::model::FrameKind;

use super::extension;
use crate::jvmti::{Jvmti, JvmtiEnvPtr};
use crate::os::now_ticks;
use crate::threads::Threads;

pub const ISPS_SAMPLE_ID: &str = "com.github.hpm.sps.IspsSample";
pub const ISPS_RETRIEVE_ID: &str = "com.github.hpm.sps.IspsRetrieve";
pub const ISPS_STATS_ID: &str = "com.github.hpm.sps.IspsStats";
/// `HPM_ISPS_MAX_FRAMES` / `HPM_ISPS_MAX_TRACES`: IspsRetrieve's arrays hold at least this many.
const ISPS_MAX_FRAMES: usize = 1 << 18;
const ISPS_MAX_TRACES: usize = 1 << 14;
/// How often `isps` completes and collects its traces: each thread's stack below its samples'
/// top frames is decoded once per retrieval (at most), whatever the number of samples.
const ISPS_RETRIEVE_NS: u64 = 100_000_000;

/// `hpm_isps_frame` / `hpm_isps_trace` from jvm-patches/hpm_sps.h.
#[repr(C)]
#[derive(Clone, Copy)]
struct IspsFrame {
    method: jni::sys::jmethodID,
    bci: i32,
    type_: i32,
    parent: i32,
    reserved: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IspsTrace {
    os_tid: i64,
    time_ns: i64,
    latency_ns: i64,
    state: i32,
    top: i32,
    truncated: i32,
    reserved: i32,
}

type IspsSampleFn = unsafe extern "C" fn(JvmtiEnvPtr, i32, u8, *mut i32) -> u32;
type IspsRetrieveFn = unsafe extern "C" fn(
    JvmtiEnvPtr,
    u8,
    *mut IspsFrame,
    i32,
    *mut IspsTrace,
    i32,
    *mut i32,
    *mut i32,
    *mut i32,
) -> u32;
type IspsStatsFn = unsafe extern "C" fn(JvmtiEnvPtr, *mut i64, i32) -> u32;

/// The patched JVM's incremental-tracing functions, found and version-checked.
#[derive(Clone, Copy)]
pub struct Isps {
    sample: IspsSampleFn,
    retrieve: IspsRetrieveFn,
    stats: IspsStatsFn,
}

/// Finds the incremental-tracing extension (interface version 3); the error says what to do.
pub fn find_isps(jvmti: &Jvmti) -> Result<Isps, String> {
    let fns = extension::functions(jvmti, "isps", 3)?;
    let (sample, retrieve, stats) = (
        extension::function(&fns, ISPS_SAMPLE_ID)?,
        extension::function(&fns, ISPS_RETRIEVE_ID)?,
        extension::function(&fns, ISPS_STATS_ID)?,
    );
    // SAFETY: the three ids' functions have the signatures of IspsSampleFn, IspsRetrieveFn and
    // IspsStatsFn (hpm_sps.h, version 3, checked above).
    unsafe {
        Ok(Isps {
            sample: std::mem::transmute::<*const c_void, IspsSampleFn>(sample),
            retrieve: std::mem::transmute::<*const c_void, IspsRetrieveFn>(retrieve),
            stats: std::mem::transmute::<*const c_void, IspsStatsFn>(stats),
        })
    }
}

/// A stack frame as the processor takes it: method id, bci, kind.
pub type Frame = (u64, i32, FrameKind);
/// Hands one stack to the processor: (thread index, kernel id, time, frames leaf first, cut).
pub type PushStack<'a> = dyn Fn(u32, u32, u64, &[Frame], bool) + 'a;

/// What the isps calls need of the session: the JVM, the thread registry, the kept depth, and
/// where stacks go.
pub struct Ctx<'a> {
    pub jvmti: &'a Jvmti,
    pub threads: &'a Threads,
    pub max_depth: u32,
    pub quiet: bool,
    /// Hands one stack (leaf first) to the processor: thread index, kernel id, time, frames
    /// (method, bci, kind), and whether frames are missing.
    pub push: &'a PushStack<'a>,
}

/// The arrays IspsRetrieve fills (6.7 MB), and when traces were last collected.
pub struct IspsBuffers {
    frames: Vec<IspsFrame>,
    traces: Vec<IspsTrace>,
    retrieved_at: u64,
    /// Traces with no Java frame (the thread was sampled outside Java code).
    empty: u64,
    /// Java frames of each completed stack (before `jstackdepth` cuts it).
    depths: Histogram,
    /// When this session's sampler started (CLOCK_MONOTONIC, the JVM's clock): traces taken
    /// before belong to an earlier session (requested in its last ticks, completed after it).
    since: u64,
}

impl IspsBuffers {
    pub fn new() -> IspsBuffers {
        let frame = IspsFrame { method: std::ptr::null_mut(), bci: 0, type_: 0, parent: -1, reserved: 0 };
        IspsBuffers {
            frames: vec![frame; ISPS_MAX_FRAMES],
            traces: vec![IspsTrace::default(); ISPS_MAX_TRACES],
            retrieved_at: now_ticks(),
            empty: 0,
            depths: Histogram::default(),
            since: now_ticks(),
        }
    }

    /// One tick: request samples of up to N threads (the JVM returns without waiting for the
    /// running ones), and every [`ISPS_RETRIEVE_NS`] collect the traces completed since.
    pub fn sample(&mut self, cx: &Ctx, f: Isps, running: i32, waiting: bool, lat: &mut Histogram) {
        let mut count = 0i32;
        // SAFETY: IspsSample(jvmtiEnv*, jint, jboolean, jint*) per hpm_sps.h; `count` outlives it.
        let _rc = unsafe { (f.sample)(cx.jvmti.raw(), running, u8::from(waiting), &mut count) };
        if now_ticks().saturating_sub(self.retrieved_at) >= ISPS_RETRIEVE_NS {
            self.retrieve(cx, f, false, lat);
        }
    }

    /// One IspsRetrieve: (frames, traces) written into the arrays and the traces the JVM
    /// still holds, or None if it refused.
    fn call_retrieve(&mut self, cx: &Ctx, f: Isps, wait: bool) -> Option<(usize, usize, i32)> {
        self.retrieved_at = now_ticks();
        let (mut nf, mut nt, mut pending) = (0i32, 0i32, 0i32);
        // SAFETY: IspsRetrieve's signature per hpm_sps.h; the arrays have the lengths passed
        // (at least HPM_ISPS_MAX_FRAMES / HPM_ISPS_MAX_TRACES) and outlive the call, which
        // writes only within them.
        let rc = unsafe {
            (f.retrieve)(
                cx.jvmti.raw(),
                u8::from(wait),
                self.frames.as_mut_ptr(),
                self.frames.len() as i32,
                self.traces.as_mut_ptr(),
                self.traces.len() as i32,
                &mut nf,
                &mut nt,
                &mut pending,
            )
        };
        (rc == 0).then(|| {
            ((nf.max(0) as usize).min(self.frames.len()), (nt.max(0) as usize).min(self.traces.len()), pending)
        })
    }

    /// Collects what is complete; with `wait`, the JVM first completes every thread's pending
    /// traces (the running ones at their next poll, while this thread waits). Returns the
    /// traces still held by the JVM.
    pub fn retrieve(&mut self, cx: &Ctx, f: Isps, wait: bool, lat: &mut Histogram) -> i32 {
        let Some((nf, nt, pending)) = self.call_retrieve(cx, f, wait) else { return 0 };
        let frames = &self.frames[..nf];
        let mut stack: Vec<Frame> = Vec::new();
        for t in &self.traces[..nt] {
            if (t.time_ns.max(0) as u64) < self.since {
                continue;
            }
            lat.record(t.latency_ns.max(0) as u64);
            if t.top < 0 {
                self.empty += 1;
                continue;
            }
            let Some(thread) = cx.threads.index_for_tid(t.os_tid as i32) else { continue };
            // Leaf first, along the callers; one frame more than kept says whether it went on.
            // Callers always come later in the array, so the walk ends (a bad index ends it too).
            stack.clear();
            let mut at = t.top;
            let mut depth = 0u64;
            while at >= 0 && (at as usize) < frames.len() {
                let fr = &frames[at as usize];
                if stack.len() <= cx.max_depth as usize {
                    stack.push((fr.method as u64, fr.bci, extension::frame_kind(fr.type_)));
                }
                depth += 1;
                at = if fr.parent > at { fr.parent } else { -1 };
            }
            self.depths.record(depth);
            let cut = stack.len() > cx.max_depth as usize || t.truncated != 0;
            stack.truncate(cx.max_depth as usize);
            (cx.push)(thread, t.os_tid as u32, t.time_ns.max(0) as u64, &stack, cut);
        }
        pending
    }

    /// At stop: completes and collects every trace taken (a few rounds if they do not fit one).
    pub fn finish(&mut self, cx: &Ctx, f: Isps, lat: &mut Histogram) {
        for _ in 0..16 {
            if self.retrieve(cx, f, true, lat) == 0 {
                break;
            }
        }
        let mut c = [0i64; 7];
        // SAFETY: IspsStats(jvmtiEnv*, jlong*, jint) per hpm_sps.h writes `c.len()` counters.
        let rc = unsafe { (f.stats)(cx.jvmti.raw(), c.as_mut_ptr(), c.len() as i32) };
        if rc == 0 && !cx.quiet {
            let [samples, refused, eager, lazy, finish, out, dropped] = c;
            let per = |n: i64| if samples > 0 { n as f64 / samples as f64 } else { 0.0 };
            eprintln!(
                "hpm: sampler=isps (totals of this JVM so far): {samples} samples, frames decoded per sample: {:.1} at the sample, {:.1} on returns, \
                 {:.1} to complete them; {out} traces out, {refused} not taken (budget full), {dropped} dropped; \
                 this session: {} traces without a Java frame, completed stacks {} Java frames deep (median), \
                 p95 {}, max {}",
                per(eager),
                per(lazy),
                per(finish),
                self.empty,
                self.depths.quantile(0.5),
                self.depths.quantile(0.95),
                self.depths.max()
            );
        }
    }
}
