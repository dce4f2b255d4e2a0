//! The perf overflow signal handler: empties the thread's ring, walks the Java stack with
//! AsyncGetCallTrace straight into a preallocated batch slot, and hands full batches to the
//! processor. It never allocates, locks or blocks; whatever cannot be recorded is counted.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use hpm_core::capture::{CallFrame, Captured, MAX_FRAMES, WALK_NOT_ATTEMPTED};
use hpm_core::perf_record::{Record, Ring};

use crate::agent::Agent;

/// `ASGCT_CallTrace` from HotSpot's forte.cpp.
#[repr(C)]
pub struct CallTrace {
    pub env_id: *mut jni::sys::JNIEnv,
    pub num_frames: c_int,
    pub frames: *mut CallFrame,
}

pub type AsgctFn = unsafe extern "C" fn(*mut CallTrace, c_int, *mut c_void);

/// Looks up `AsyncGetCallTrace` in the already-loaded libjvm.so.
pub fn find_asgct() -> Option<AsgctFn> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; the symbol, when present, has
    // the ASGCT signature (exported by HotSpot for profilers since JDK 6).
    unsafe {
        let mut p = libc::dlsym(libc::RTLD_DEFAULT, c"AsyncGetCallTrace".as_ptr());
        if p.is_null() {
            let h = libc::dlopen(c"libjvm.so".as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
            if !h.is_null() {
                p = libc::dlsym(h, c"AsyncGetCallTrace".as_ptr());
            }
        }
        (!p.is_null()).then(|| std::mem::transmute::<*mut c_void, AsgctFn>(p))
    }
}

/// Counters the handler bumps; read by the summary.
#[derive(Default)]
pub struct SignalStats {
    pub signals: AtomicU64,
    pub samples: AtomicU64,
    pub no_slot: AtomicU64,
    pub kernel_lost: AtomicU64,
    pub corrupt_ring: AtomicU64,
    pub throttled: AtomicU64,
    /// Time spent inside the handler, by the monotonic clock at entry and exit (vDSO, ~30 ns;
    /// the thread CPU clock is a ~0.7 us system call here and disagreed with it). A handler of
    /// a few microseconds is rarely preempted, so this is close to its CPU cost.
    pub handler_ns: AtomicU64,
}

impl SignalStats {
    /// Zeroes every counter (between sessions, when no thread is sampled).
    pub fn reset(&self) {
        for c in [
            &self.signals,
            &self.samples,
            &self.no_slot,
            &self.kernel_lost,
            &self.corrupt_ring,
            &self.throttled,
            &self.handler_ns,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Installs `handler` for `sig` with SA_SIGINFO | SA_RESTART.
pub fn install(sig: c_int) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is a valid starting point; the handler has the SA_SIGINFO
    // signature; sigemptyset initialises the mask.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `si_fd` of a SIGPOLL-style siginfo (F_SETSIG fills it): after si_signo, si_errno, si_code
/// and padding comes the union, whose sigpoll member is `{ long si_band; int si_fd; }`.
fn si_fd(info: *const libc::siginfo_t) -> c_int {
    // SAFETY: the kernel passed a full siginfo_t; offset 24 lies within it on x86_64/aarch64.
    unsafe { *(info as *const u8).add(24).cast::<c_int>() }
}

extern "C" fn on_signal(_sig: c_int, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    // A panic must not unwind into the interrupted frame; nothing here is expected to panic.
    let _ = std::panic::catch_unwind(|| {
        if let Some(agent) = crate::agent::get() {
            let start = crate::agent::now_ticks();
            handle(agent, si_fd(info), ucontext);
            agent.signal_stats.handler_ns.fetch_add(crate::agent::now_ticks().saturating_sub(start), Ordering::Relaxed);
        }
    });
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

fn handle(agent: &Agent, fd: c_int, ucontext: *mut c_void) {
    let stats = &agent.signal_stats;
    stats.signals.fetch_add(1, Ordering::Relaxed);
    let Some(slot) = agent.threads.slot_for_fd(fd) else {
        stats.no_slot.fetch_add(1, Ordering::Relaxed);
        return;
    };
    // Detach waits for `busy` to drop before unmapping the ring (threads.rs).
    slot.busy.fetch_add(1, Ordering::AcqRel);
    drain(agent, slot, ucontext);
    slot.busy.fetch_sub(1, Ordering::AcqRel);
}

fn drain(agent: &Agent, slot: &crate::threads::Slot, ucontext: *mut c_void) {
    let stats = &agent.signal_stats;
    // A slot with a ring belongs to the running session (threads are detached before a
    // session ends and the next one is published).
    let (Some(ring), Some(session)) = (slot.ring(), agent.current()) else {
        stats.no_slot.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let (mut tail, head, data) = ring.pending();
    let view = Ring::new(data);
    let thread = slot.thread_idx.load(Ordering::Relaxed);
    while tail < head {
        let Some((rec, size)) = view.record_at(tail, &session.spec.layout) else {
            // Unreadable: skip everything the kernel has written so far.
            stats.corrupt_ring.fetch_add(1, Ordering::Relaxed);
            tail = head;
            break;
        };
        let last = tail + size >= head;
        tail += size;
        match rec {
            Record::Sample(raw) => {
                stats.samples.fetch_add(1, Ordering::Relaxed);
                let _ = slot.queue.push_with(&agent.queues, |c: &mut Captured| {
                    c.raw = raw;
                    c.thread = thread;
                    c.exact_kinds = false;
                    // The signal's context is the state at the latest overflow only.
                    c.num_frames = if last { walk(agent, session.max_depth, c, ucontext) } else { WALK_NOT_ATTEMPTED };
                    true
                });
            }
            Record::Lost(n) => {
                stats.kernel_lost.fetch_add(n, Ordering::Relaxed);
            }
            Record::Throttle => {
                stats.throttled.fetch_add(1, Ordering::Relaxed);
            }
            Record::Unthrottle | Record::Other(_) => {}
        }
    }
    ring.consume_to(tail);
}

fn walk(agent: &Agent, max_depth: u32, c: &mut Captured, ucontext: *mut c_void) -> i32 {
    let Some(asgct) = agent.asgct else { return WALK_NOT_ATTEMPTED };
    let Some(env) = agent.current_jni_env() else {
        return -3; // ticks_unknown_not_Java: not a Java thread
    };
    let mut trace = CallTrace { env_id: env, num_frames: 0, frames: c.frames.as_mut_ptr() };
    let depth = (max_depth as usize).min(MAX_FRAMES) as c_int;
    // SAFETY: `trace.frames` points at MAX_FRAMES >= depth preallocated frames; `ucontext` is
    // the context the kernel passed to this handler; ASGCT is designed to run in signal
    // handlers of the thread it walks.
    unsafe { asgct(&mut trace, depth, ucontext) };
    c.walk_from_caller = false;
    if matches!(trace.num_frames, -5 | -6) {
        // unknown_Java / not_walkable_Java: typically a frameless stub (arraycopy) or a
        // compiled method's prologue, where the return address is still at the stack pointer.
        // Walk again from the caller, on a copy of the context (the kernel restores the
        // original on return).
        if let Some(n) = walk_from_caller(asgct, &mut trace, depth, ucontext) {
            c.walk_from_caller = true;
            return n;
        }
    }
    trace.num_frames
}

#[cfg(target_arch = "x86_64")]
fn walk_from_caller(asgct: AsgctFn, trace: &mut CallTrace, depth: c_int, ucontext: *mut c_void) -> Option<c_int> {
    if ucontext.is_null() {
        return None;
    }
    // SAFETY: `ucontext` is the handler's ucontext_t; we read it into a stack copy (no
    // allocation). The stack pointer of the interrupted thread points into its own mapped
    // stack, so reading the word there is valid.
    unsafe {
        let mut uc: libc::ucontext_t = std::ptr::read(ucontext as *const libc::ucontext_t);
        let sp = uc.uc_mcontext.gregs[libc::REG_RSP as usize] as u64;
        if sp == 0 || !sp.is_multiple_of(8) {
            return None;
        }
        let ret = *(sp as *const u64);
        uc.uc_mcontext.gregs[libc::REG_RIP as usize] = ret as i64;
        uc.uc_mcontext.gregs[libc::REG_RSP as usize] = (sp + 8) as i64;
        trace.num_frames = 0;
        asgct(trace, depth, &mut uc as *mut libc::ucontext_t as *mut c_void);
    }
    (trace.num_frames > 0).then_some(trace.num_frames)
}

#[cfg(not(target_arch = "x86_64"))]
fn walk_from_caller(_: AsgctFn, _: &mut CallTrace, _: c_int, _: *mut c_void) -> Option<c_int> {
    None
}
