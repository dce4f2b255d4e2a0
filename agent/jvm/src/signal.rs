//! The perf overflow signal handler: empties the thread's ring, walks the Java stack (with
//! hpm's own walker, or AsyncGetCallTrace without one) straight into a preallocated batch
//! slot, and hands full batches to the processor. It never allocates, locks or blocks;
//! whatever cannot be recorded is counted.
//!
//! Which signal: one nobody else holds ([`SAMPLE_SIGNALS`], SIGURG first), never shared. Two users
//! of perf notifications on one standard signal lose each other's: a notification that finds the
//! signal pending on its thread merges with it, and a profiler that re-arms its event in its
//! handler (async-profiler's PERF_EVENT_IOC_REFRESH) never samples that thread again
//! (async-profiler kept a tenth of its samples or less when hpm shared its SIGPROF). A handler
//! installed after hpm's on hpm's signal (the program's sun.misc.Signal, a profiler loaded later)
//! keeps it: the processing thread checks every round ([`SignalSetup::check`]), moves hpm's perf
//! groups to the next free signal and says so in one line; what was sampled meanwhile is counted.
//!
//! Which signals are ours: the perf groups deliver the signal through F_SETSIG,
//! which the kernel sends with `si_code` POLL_IN..POLL_HUP and `si_fd` set. One from anything else
//! (kill(2), a timer, another profiler's perf events) fails that test or names no slot of this
//! thread, and is ignored, counted (no handler held the signal before hpm's, and ignored it is
//! rather than killing the JVM). One exception: a notification generated just before a thread's
//! group was disabled and delivered after names a descriptor hpm closed a moment ago (its number
//! maybe reused since); received by the thread whose group it was, it is still hpm's and is
//! dropped, counted: see `threads::RETIRED_FD_GRACE_SECS`.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use hpm_capture::capture::{Asgct, AsgctError, Captured, NotJava, RawWalk, StackKind, COMPARE_SPLIT, MAX_FRAMES};
use hpm_capture::hotspot::{CodeView, FrameSink, Probe};
use hpm_capture::perf_record::is_kernel_address;
use hpm_capture::perf_record::{RawSample, Record, Ring};
use hpm_profile::model::KernelMode;

use crate::sink::{AsgctFn, CallTrace, SignalCtx};
use crate::threads::{Caller, Entered, Refused, Threads};

pub mod wall;

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
    /// Signals that were not ours (si_code or fd): ignored (see `on_signal`).
    pub foreign: AtomicU64,
    pub kernel_lost: AtomicU64,
    pub corrupt_ring: AtomicU64,
    pub throttled: AtomicU64,
    /// Moves to another signal because another handler took hpm's ([`SignalSetup::check`]),
    /// and the samples the kernel could not keep meanwhile (their notifications went to that
    /// handler, the rings filled): the lost records of each thread's first drain after a move.
    pub moves: AtomicU64,
    pub taken_lost: AtomicU64,
    /// Sessions whose sampling stopped because no signal was free to move to.
    pub no_signal_left: AtomicU64,
    /// Time spent inside the handler, by the monotonic clock at entry and exit (vDSO, ~30 ns),
    /// of the handlers that stayed on the CPU: its CPU cost. (The thread CPU clock is a system
    /// call whose scheduler update preempts a thread past its slice there and then: read in
    /// every handler, it made 7,766 handlers of xalan wait 8 s.)
    pub handler_ns: AtomicU64,
    /// Handlers that took longer than [`DESCHEDULED_NS`] and their time: the thread was
    /// preempted inside (another thread ran), which is not the handler's cost. On xalan at
    /// 1 ms, 4 threads on 2 CPUs: 1-16 of 7,000-11,000 handlers a run, 4-8 ms each on average,
    /// from a tenth to two thirds of the clock's total.
    pub descheduled: AtomicU64,
    pub descheduled_ns: AtomicU64,
    /// `data`: of that, the time spent copying instructions and heap words (same clock), and
    /// the captures.
    pub data_ns: AtomicU64,
    pub data_captures: AtomicU64,
    /// hpm's walker: blobs looked up, and of those found in the thread's last walk and in the
    /// shared cache (`hpm_capture::blob_cache`).
    pub blob_lookups: AtomicU64,
    pub blob_memo_hits: AtomicU64,
    pub blob_hits: AtomicU64,
    /// Counters that sample themselves: their overflow samples, and the overflows whose
    /// group could not be read (no sample).
    pub counter_samples: AtomicU64,
    pub counter_unread: AtomicU64,
    /// `cstack=`: walks that met native frames, those where a native step gave up (no table
    /// covered the pc; a word or frame out of place) and those the anchor then led on to Java.
    pub native_walks: AtomicU64,
    pub native_no_table: AtomicU64,
    pub native_lost: AtomicU64,
    pub native_fell_back: AtomicU64,
}

/// The signals hpm samples with, in order of preference: the first one no other handler holds.
/// Standard signals: a notification that finds another of the same signal pending on its thread
/// merges with it instead of queueing, which costs hpm nothing (the next handler drains the
/// whole ring), where real-time signals queue, and a full queue makes the kernel send SIGIO,
/// which ends the process. SIGURG first: ignored by default (a notification that arrives after
/// someone reset it to the default does no harm), unused in a JVM, passed on silently by gdb,
/// and lower-numbered than the signals other profilers take (SIGPROF, SIGVTALRM; see
/// [`install`] for why that matters). Then SIGWINCH, ignored by default too though above them;
/// then three whose default ends the process, in case both are taken: on those a reset to the
/// default by another party kills the JVM at hpm's next sample, before a round can move hpm.
pub const SAMPLE_SIGNALS: [c_int; 6] =
    [libc::SIGURG, libc::SIGWINCH, libc::SIGSTKFLT, libc::SIGVTALRM, libc::SIGPROF, libc::SIGPWR];

/// A signal's name, for the lines that tell which one hpm uses.
pub fn signal_name(sig: c_int) -> String {
    match sig {
        libc::SIGURG => "SIGURG".into(),
        libc::SIGWINCH => "SIGWINCH".into(),
        libc::SIGSTKFLT => "SIGSTKFLT".into(),
        libc::SIGVTALRM => "SIGVTALRM".into(),
        libc::SIGPROF => "SIGPROF".into(),
        libc::SIGPWR => "SIGPWR".into(),
        n => format!("signal {n}"),
    }
}

/// Which signal hpm's handler holds (`None` before the first signal-sampler session).
#[derive(Default)]
pub struct SignalSetup {
    current: Mutex<Option<c_int>>,
}

/// The handler's only way to the agent (it gets no user data): set before it is installed.
static THREADS: std::sync::OnceLock<&'static Threads> = std::sync::OnceLock::new();
static STATS: std::sync::OnceLock<&'static SignalStats> = std::sync::OnceLock::new();

/// Who holds a signal now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// hpm's handler.
    Hpm,
    /// Nobody: SIG_DFL or SIG_IGN.
    Free,
    /// Another handler (the program's, another profiler's).
    Other,
}

/// The signal hpm should sample with: the first of `candidates` that hpm holds already or
/// nobody does (`holder` tells). Another handler's signal is never taken: sharing one signal
/// with another user of perf notifications loses its signals whenever both are pending at once.
pub fn choose_signal(candidates: &[c_int], holder: impl Fn(c_int) -> Holder) -> Option<c_int> {
    candidates.iter().copied().find(|&s| holder(s) != Holder::Other)
}

/// Who holds `sig` now (one sigaction call).
fn holder(sig: c_int) -> Holder {
    // SAFETY: sigaction with a null new action only reads the current one into `cur`.
    let cur = unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut cur) != 0 {
            return Holder::Other;
        }
        cur
    };
    match cur.sa_sigaction {
        h if h == on_signal as *const () as usize => Holder::Hpm,
        libc::SIG_DFL | libc::SIG_IGN => Holder::Free,
        _ => Holder::Other,
    }
}

/// What [`SignalSetup::check`] found: another handler took hpm's signal, or hpm's handler was
/// removed (reset to SIG_DFL or SIG_IGN).
pub struct Moved {
    /// The signal hpm sampled with.
    pub from: c_int,
    /// Whether another handler holds it (else it was reset).
    pub taken: bool,
    /// The signal hpm samples with now, `None` if no signal was free (sampling stopped).
    pub to: Option<c_int>,
}

impl Moved {
    /// The one line said when it happens.
    pub fn line(&self) -> String {
        let from = signal_name(self.from);
        let what = if self.taken {
            format!(
                "another {from} handler was installed while hpm sampled with {from} (sun.misc.Signal, another \
                 profiler or agent)"
            )
        } else {
            format!("hpm's {from} handler was reset to the default while hpm sampled with {from}")
        };
        match self.to {
            Some(to) if to == self.from => format!(
                "{what}: hpm installed its handler again; what it sampled in between is counted in the summary's drops"
            ),
            Some(to) => format!(
                "{what}: hpm moved to {}; what it sampled in between is counted in the summary's drops",
                signal_name(to)
            ),
            None => {
                format!("{what}, and none of {} is free: sampling stopped for this session", names(&SAMPLE_SIGNALS))
            }
        }
    }
}

fn names(sigs: &[c_int]) -> String {
    sigs.iter().map(|&s| signal_name(s)).collect::<Vec<_>>().join(", ")
}

impl SignalSetup {
    /// Makes sure hpm's handler holds a signal (at every signal-sampler session's start): the
    /// one it holds, else the first free one of [`SAMPLE_SIGNALS`]; the thread registry routes
    /// new perf groups' notifications to it. `threads` and `stats` are the agent's, alive for
    /// the process.
    pub fn ensure_installed(&self, threads: &'static Threads, stats: &'static SignalStats) -> Result<c_int, String> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let _ = THREADS.set(threads);
        let _ = STATS.set(stats);
        if let Some(sig) = *current {
            if holder(sig) == Holder::Hpm {
                return Ok(sig);
            }
        }
        let sig = choose_signal(&SAMPLE_SIGNALS, holder).ok_or_else(|| {
            format!(
                "cannot sample with signals: {} all have another handler (the program's, another profiler's); use \
                 sampler=jvmti",
                names(&SAMPLE_SIGNALS)
            )
        })?;
        install(sig).map_err(|e| format!("cannot install the {} handler: {e}", signal_name(sig)))?;
        threads.set_signal(sig);
        *current = Some(sig);
        Ok(sig)
    }

    /// Checked by the processing thread every round while a signal sampler runs (one
    /// sigaction call), never in the handler: whether another handler replaced hpm's on its
    /// signal (or the signal was reset to its default). If so, hpm moves to the first free
    /// signal of [`SAMPLE_SIGNALS`] (the perf groups' notifications retargeted; `threads`
    /// numbers the move, so each thread's first drain after it counts what was sampled in
    /// between) and leaves the other handler its signal: its own signals (kill, timers) reach
    /// it, and hpm's no longer do. With none free, every group is stopped.
    pub fn check(&self, threads: &Threads) -> Option<Moved> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let from = (*current)?;
        let taken = match holder(from) {
            Holder::Hpm => return None,
            Holder::Other => true,
            // Its notifications would be ignored, or end the process: hpm's handler goes back.
            Holder::Free => false,
        };
        if let Some(stats) = STATS.get() {
            stats.moves.fetch_add(1, Ordering::Relaxed);
        }
        let to = choose_signal(&SAMPLE_SIGNALS, holder).filter(|&s| install(s).is_ok());
        match to {
            Some(sig) => threads.retarget(sig),
            None => {
                threads.stop_all();
                if let Some(stats) = STATS.get() {
                    stats.no_signal_left.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        *current = to;
        Some(Moved { from, taken, to })
    }
}

/// Installs `on_signal` for `sig` (a free one: [`choose_signal`]) with SA_SIGINFO | SA_RESTART,
/// unless it is installed already.
///
/// The handler blocks the signals profilers use ([`SAMPLE_SIGNALS`]) while it runs. Two
/// profilers' clock events on one thread often overflow in the same tick; the kernel then sets
/// up the lower-numbered signal's handler first and, unless that handler's mask blocks the
/// other, the other's at once on top of it: that one runs first and finds the first one's
/// entry point where the program's code should be (another profiler sampled at 1 ms beside hpm
/// found it in half of its samples). Blocked, the other signal waits until hpm's handler has
/// returned and finds the program's code. Hence also hpm's low-numbered signals: set up first.
fn install(sig: c_int) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is a valid starting point; the handler has the SA_SIGINFO
    // signature; sigemptyset initialises the mask; `old` receives the previous action.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if old.sa_sigaction == on_signal as *const () as usize {
            return Ok(());
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        for s in SAMPLE_SIGNALS {
            libc::sigaddset(&mut sa.sa_mask, s);
        }
        if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// si_code values of a SIGIO-style notification (F_SETSIG): POLL_IN (1) .. POLL_HUP (6).
const POLL_IN: c_int = 1;
const POLL_HUP: c_int = 6;

/// `si_fd` of a SIGPOLL-style siginfo (F_SETSIG fills it): after si_signo, si_errno, si_code
/// and padding comes the union, whose sigpoll member is `{ long si_band; int si_fd; }`.
fn si_fd(info: *const libc::siginfo_t) -> c_int {
    // SAFETY: the kernel passed a full siginfo_t; offset 24 lies within it on x86_64/aarch64.
    unsafe { *(info as *const u8).add(24).cast::<c_int>() }
}

/// The perf descriptor a signal is for, if it is a perf notification at all.
fn perf_fd(info: *const libc::siginfo_t) -> Option<c_int> {
    if info.is_null() {
        return None;
    }
    // SAFETY: the kernel passed a full siginfo_t.
    let code = unsafe { (*info).si_code };
    (POLL_IN..=POLL_HUP).contains(&code).then(|| si_fd(info))
}

/// The trampoline: the only code of this module that reaches the agent's statics.
extern "C" fn on_signal(_sig: c_int, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    // A panic must not unwind into the interrupted frame; nothing here is expected to panic.
    let ours = std::panic::catch_unwind(|| match (THREADS.get(), STATS.get(), perf_fd(info)) {
        (Some(threads), Some(stats), Some(fd)) => {
            let start = crate::os::now_ticks();
            let ours = handle(threads, stats, fd, ucontext);
            stats.add_handler_time(crate::os::now_ticks().saturating_sub(start));
            ours
        }
        // The wall sampler's request (`wall`).
        (Some(threads), Some(stats), None) => {
            wall::request(info).is_some_and(|s| wall::handle(threads, stats, s, ucontext))
        }
        _ => false,
    })
    .unwrap_or(true);
    // Not ours: ignored, counted. hpm takes only a signal no handler held (SIG_DFL, SIG_IGN),
    // so there is none to pass it to.
    if !ours {
        if let Some(stats) = STATS.get() {
            stats.foreign.fetch_add(1, Ordering::Relaxed);
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Returns false when the signal is not for a slot of this thread.
fn handle(threads: &Threads, stats: &SignalStats, fd: c_int, ucontext: *mut c_void) -> bool {
    stats.signals.fetch_add(1, Ordering::Relaxed);
    let mut me = Caller::current();
    // A notification of this thread's group, closed a moment ago (sent before it was disabled,
    // delivered after), is ours: dropped and counted.
    let late = |me: &mut Caller| {
        let ours = threads.retired_from(fd, me.tid(), crate::os::now_ticks());
        if ours {
            stats.no_slot.fetch_add(1, Ordering::Relaxed);
        }
        ours
    };
    let Some((slot, source)) = threads.slot_for_fd(fd) else {
        return late(&mut me);
    };
    let inside = match slot.enter(&mut me) {
        Ok(e) => e,
        Err(Refused::Retired) => {
            stats.no_slot.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        // The number now names another thread's group: a late notification of this thread's
        // closed group whose number was reused, or not ours.
        Err(Refused::OtherThread) => return late(&mut me),
    };
    let ctx = inside.ctx();
    let ring = inside.ring();
    // The thread's first drain since hpm moved to another signal: what it finds was sampled
    // while the notifications went to the handler that took the signal; no walk was made then.
    let after_move = inside.first_drain_since(threads.moves());
    let unwalked = if after_move { StackKind::SignalTaken } else { StackKind::NotWalked };
    let (mut tail, head, data) = ring.pending();
    let view = Ring::new(data);
    let thread = inside.thread_idx();
    let walks = plan_walks(&view, tail, head, ctx);
    let mut index = 0u32;
    // The walked record's virtual thread, for the records of the stay that share its walk: a
    // carrier cannot change mounts while it is in the kernel.
    let mut vthread = 0u64;
    while tail < head {
        let Some((rec, size)) = view.record_at(tail, &ctx.layout) else {
            // Unreadable: skip everything the kernel has written so far.
            stats.corrupt_ring.fetch_add(1, Ordering::Relaxed);
            tail = head;
            break;
        };
        tail += size;
        match rec {
            Record::Sample(raw) => {
                stats.samples.fetch_add(1, Ordering::Relaxed);
                let i = index;
                index += 1;
                // Before the push: a sample dropped for want of a buffer still accounts for
                // its clock time, so it is never taken for kernel time.
                let kernel_periods = if ctx.kernel == KernelMode::Counted && raw.nvalues > 0 {
                    inside.kernel_periods(raw.values[0], raw.period)
                } else {
                    0
                };
                let _ = inside.queue().push_with(&ctx.sink.pool, |c: &mut Captured| {
                    c.begin_perf_sample(&raw, thread, kernel_periods);
                    // The signal's context is the user state at delivery: that of the last
                    // sample, and of every sample of the stay in the kernel it ends.
                    // A thread the JVM has not set up yet must not reach GetEnv (see
                    // `Slot::java`): with HotSpot's thread key known, only one whose key is
                    // set may (its libjvm TLS block exists). A name is no proof: a thread
                    // just cloned carries its parent's name until the JVM renames it, and
                    // one taken for a Java thread by that name deadlocked the soak test
                    // (the handler's GetEnv allocated the TLS block while the interrupted
                    // start-up held malloc's lock). Without the key, ThreadStart's word or
                    // the VM's list is all there is.
                    c.stack = if i < walks.at {
                        unwalked
                    } else if i > walks.at {
                        // More records of the stay after this one: the resolver keeps the walk
                        // for them, and lets it go with the last.
                        c.shares_walk = i < walks.last;
                        c.vthread = vthread;
                        StackKind::SharedWithPrevious
                    } else if ctx.vm.may_enter_jvm_here(inside.is_java()) {
                        c.shares_walk = walks.at < walks.last;
                        // One view of the code cache for the data capture and the walk.
                        let code = ctx.walker.or(ctx.data.map(|d| d.code)).map(crate::vmstructs::code_view);
                        if let (Some(d), Some(code)) = (ctx.data.filter(|d| !d.precise), code.as_ref()) {
                            // Before the walk, which then finds the frame of a stack address.
                            timed_capture(stats, || {
                                let thread = proven_thread(ctx, &inside);
                                crate::vmstructs::capture_instruction(
                                    code,
                                    d.heap,
                                    ucontext,
                                    c.raw.ip,
                                    thread,
                                    &mut c.data,
                                )
                            });
                        }
                        let stack = walk(ctx, stats, c, ucontext, &inside, code.as_ref());
                        vthread = c.vthread;
                        stack
                    } else {
                        StackKind::NotJava(NotJava::NotEntered) // a VM thread, or one not yet set up
                    };
                    if let Some(d) = ctx.data.filter(|d| d.precise) {
                        // Every record has its own instruction, address and registers.
                        timed_capture(stats, || {
                            let code = crate::vmstructs::code_view(d.code);
                            let thread = proven_thread(ctx, &inside);
                            crate::vmstructs::capture_record(&code, d.heap, &c.raw, thread, &mut c.data)
                        });
                    }
                    true
                });
            }
            Record::Lost(n) if after_move => {
                stats.taken_lost.fetch_add(n, Ordering::Relaxed);
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
    if source > 0 {
        let tid = me.tid();
        counter_sample(ctx, stats, &inside, (fd, source, tid), ucontext);
    }
    true
}

/// A counter's own overflow (`source`: the group's member of descriptor `fd`, thread `tid`):
/// one sample of the stack it interrupted, with the group's values read now; the resolver
/// charges that counter's count since its previous own sample to this stack
/// (`hpm_resolve::resolve::counter_deltas`). After the ring's records: a notification of the
/// leader merged into this one (one standard signal pending) left them there.
fn counter_sample(
    ctx: &SignalCtx,
    stats: &SignalStats,
    inside: &Entered,
    (fd, source, tid): (c_int, u8, i32),
    ucontext: *mut c_void,
) {
    let mut raw = RawSample::default();
    if !crate::perf::read_group(fd, ctx.layout.read_format, &mut raw) {
        stats.counter_unread.fetch_add(1, Ordering::Relaxed);
        return;
    }
    stats.counter_samples.fetch_add(1, Ordering::Relaxed);
    raw.source = source;
    interrupted_at(&mut raw, ucontext, crate::os::now_ticks(), tid);
    let thread = inside.thread_idx();
    let _ = inside.queue().push_with(&ctx.sink.pool, |c: &mut Captured| {
        c.begin_perf_sample(&raw, thread, 0);
        c.stack = walk_if_entered(ctx, stats, c, ucontext, inside);
        true
    });
}

/// A sample the handler takes itself (a counter's overflow, a wall request): `raw`'s time,
/// thread and registers from the interrupted context, as a perf record's would be.
/// Async-signal-safe.
pub(crate) fn interrupted_at(raw: &mut RawSample, ucontext: *mut c_void, time: u64, tid: i32) {
    let regs = crate::vmstructs::context_regs(ucontext);
    raw.time = time;
    raw.tid = tid as u32;
    (raw.ip, raw.user_ip, raw.sp, raw.bp) = (regs.pc, regs.pc, regs.sp, regs.fp);
    raw.regs_abi = u64::from(regs.pc != 0) * 2; // PERF_SAMPLE_REGS_ABI_64
}

/// The interrupted thread's stack into `c` when the handler may enter the JVM on it (as for
/// CPU samples: only a thread the JVM has set up reaches GetEnv, see `Slot::java`), else
/// `NotEntered`. Async-signal-safe.
pub(crate) fn walk_if_entered(
    ctx: &SignalCtx,
    stats: &SignalStats,
    c: &mut Captured,
    ucontext: *mut c_void,
    inside: &Entered,
) -> StackKind {
    if ctx.vm.may_enter_jvm_here(inside.is_java()) {
        let code = ctx.walker.map(crate::vmstructs::code_view);
        walk(ctx, stats, c, ucontext, inside, code.as_ref())
    } else {
        StackKind::NotJava(NotJava::NotEntered)
    }
}

/// Which sample records of one signal get the stack walk (numbered in ring order).
struct Walks {
    /// The walked record: the last sample, or with kernel mode sampled the first of the
    /// samples in the kernel that end the batch (one stay in the kernel: the signal is
    /// delivered on its return to user mode, so they all have the user stack walked now).
    at: u32,
    /// The last sample record.
    last: u32,
}

fn plan_walks(view: &Ring, mut pos: u64, head: u64, ctx: &SignalCtx) -> Walks {
    let (mut index, mut kernel_run) = (0u32, None);
    while pos < head {
        // Only each record's kind and IP: the loop that follows decodes them.
        let Some((ip, size)) = view.peek_ip(pos, &ctx.layout) else { break };
        pos += size;
        if let Some(ip) = ip {
            let in_kernel = ctx.kernel == KernelMode::Sampled && is_kernel_address(ip);
            kernel_run = if in_kernel { kernel_run.or(Some(index)) } else { None };
            index += 1;
        }
    }
    let last = index.saturating_sub(1);
    Walks { at: kernel_run.unwrap_or(last), last }
}

/// The calling thread's `JavaThread*` when a GetEnv of an earlier walk proved it one (its
/// stack and `JavaThread` then tell the data capture's stack and thread addresses), else 0.
fn proven_thread(ctx: &SignalCtx, slot: &Entered) -> u64 {
    let t = ctx.vm.current_vm_thread();
    if t != 0 && t == slot.proven_java_thread() {
        t
    } else {
        0
    }
}

/// Runs one `data` capture, its time (monotonic clock) and count added to `stats`.
fn timed_capture(stats: &SignalStats, capture: impl FnOnce()) {
    let start = crate::os::now_ticks();
    capture();
    stats.data_ns.fetch_add(crate::os::now_ticks().saturating_sub(start), Ordering::Relaxed);
    stats.data_captures.fetch_add(1, Ordering::Relaxed);
}

/// Walks the interrupted thread's Java stack into `c`'s frames; returns what they hold.
/// `slot`: the thread's slot, which remembers the `Thread*` a GetEnv proved to be a JavaThread;
/// `code`: the code cache's view (present whenever hpm's walker is); `stats` counts its blob
/// cache's hits.
fn walk(
    ctx: &SignalCtx,
    stats: &SignalStats,
    c: &mut Captured,
    ucontext: *mut c_void,
    slot: &Entered,
    code: Option<&CodeView>,
) -> StackKind {
    // A JNIEnv makes the thread's HotSpot Thread* a JavaThread*. GetEnv costs ~0.4 us per sample
    // (TLS lookups and a thread-kind check), so hpm's walker asks it once per thread: a
    // `Thread*` it proved is remembered, and the key's value is compared with it after. (The
    // slot's `java` flag is no proof: it can come from matching names with the VM's thread
    // list, and a VM thread walked as a JavaThread would be read past its end.) Without the
    // thread key (not learnt: see `Vm::learn_thread_key`) ASGCT walks.
    //
    // A HotSpot thread without a JNIEnv (GC, VM thread) has no Java frames: with `cstack=` its
    // native frames are walked, bounded by its `Thread`'s stack, with no anchor.
    let thread = ctx.vm.current_vm_thread();
    if let (Some(layout), Some(code)) = (ctx.walker.filter(|_| thread != 0), code) {
        let mut vm_thread = false;
        if thread != slot.proven_java_thread() {
            if ctx.vm.env().is_none() {
                if ctx.native.is_none() {
                    return StackKind::NotJava(NotJava::NoEnv);
                }
                vm_thread = true;
            } else {
                slot.remember_java_thread(thread);
            }
        }
        let depth = (ctx.max_depth as usize).min(if ctx.compare { COMPARE_SPLIT } else { MAX_FRAMES });
        let mut compared = None;
        if ctx.compare {
            if let (Some(asgct), Some(env)) = (ctx.asgct, ctx.vm.env()) {
                let upper = &mut c.frames[COMPARE_SPLIT..];
                let mut trace = CallTrace { env_id: env, num_frames: 0, frames: upper.as_mut_ptr() };
                let n = (ctx.max_depth as usize).min(upper.len()) as c_int;
                // SAFETY: as in the ASGCT walk below, on the upper half of the frames.
                unsafe { asgct(&mut trace, n, ucontext) };
                compared = Some(Asgct::from_num_frames(trace.num_frames, false, false));
            }
        }
        // `data`: the walk notes which frame holds the sampled address, if it is on the stack.
        let probe = if c.data.heap.space != 0 { Probe::new(c.data.heap.address) } else { Probe::default() };
        let mut sink = FrameSink { probe, ..FrameSink::new(&mut c.frames[..depth], &mut c.slots[..depth]) };
        let walked = crate::vmstructs::Walked { thread, java: !vm_thread, native: ctx.native };
        let stop = crate::vmstructs::walk_here(layout, code, walked, ucontext, slot.walk_memo(), &mut sink);
        if !vm_thread {
            c.vthread = crate::vmstructs::mounted_vthread(thread);
        }
        let (len, slot) = (sink.len, sink.probe.slot);
        if sink.blob_lookups > 0 {
            stats.blob_lookups.fetch_add(u64::from(sink.blob_lookups), Ordering::Relaxed);
            stats.blob_memo_hits.fetch_add(u64::from(sink.blob_memo_hits), Ordering::Relaxed);
            stats.blob_hits.fetch_add(u64::from(sink.blob_hits), Ordering::Relaxed);
        }
        count_native(stats, &sink.native);
        c.data.stack_slot = slot;
        // Keyed here, over the slots just written (still in this CPU's cache), not by the
        // processing thread reading them all again; not before any hasher was made (the
        // seed is made once, outside a signal handler).
        let key = hpm_profile::hash::seed_if_made()
            .map(|seed| hpm_capture::hotspot::raw_stack_key(seed, &c.frames[..len], &c.slots[..len]));
        let walk = RawWalk { slots: len as u16, stop: stop as u8, key, depth_cut: false };
        return match compared {
            Some(asgct) => StackKind::Compare { walk, asgct },
            None => StackKind::RawWalk(walk),
        };
    }
    let Some(env) = ctx.vm.env() else {
        return StackKind::NotJava(NotJava::NoEnv);
    };
    let Some(asgct) = ctx.asgct else { return StackKind::NotWalked };
    let mut trace = CallTrace { env_id: env, num_frames: 0, frames: c.frames.as_mut_ptr() };
    let depth = (ctx.max_depth as usize).min(MAX_FRAMES) as c_int;
    // SAFETY: `trace.frames` points at MAX_FRAMES >= depth preallocated frames; `ucontext` is
    // the context the kernel passed to this handler; ASGCT is designed to run in signal
    // handlers of the thread it walks.
    unsafe { asgct(&mut trace, depth, ucontext) };
    if matches!(AsgctError::from_code(trace.num_frames), AsgctError::UnknownJava | AsgctError::NotWalkableJava) {
        // unknown_Java / not_walkable_Java: typically a frameless stub (arraycopy) or a
        // compiled method's prologue, where the return address is still at the stack pointer.
        // Walk again from the caller, on a copy of the context (the kernel restores the
        // original on return).
        if let Some(n) = walk_from_caller(asgct, &mut trace, depth, ucontext) {
            return StackKind::Asgct(Asgct::from_num_frames(n, true, n >= depth));
        }
    }
    // Every frame asked for filled: the stack is cut at `jstackdepth` (or ends just there).
    StackKind::Asgct(Asgct::from_num_frames(trace.num_frames, false, trace.num_frames >= depth))
}

/// Counts what a walk's native steps did (`cstack=`).
fn count_native(stats: &SignalStats, n: &hpm_capture::hotspot::NativeWalk) {
    if n.frames == 0 {
        return;
    }
    stats.native_walks.fetch_add(1, Ordering::Relaxed);
    let gave_up = match n.gave_up {
        Some(hpm_capture::native::NativeStop::NoTable) => &stats.native_no_table,
        Some(_) => &stats.native_lost,
        None => return,
    };
    gave_up.fetch_add(1, Ordering::Relaxed);
    if n.fell_back {
        stats.native_fell_back.fetch_add(1, Ordering::Relaxed);
    }
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

/// A handler that takes longer than this by the clock was off the CPU for most of it: the
/// deepest walk (512 frames at ~0.3 us each) with a data capture takes well under it.
pub const DESCHEDULED_NS: u64 = 1_000_000;

impl SignalStats {
    /// Adds one handler's time by the clock: to its CPU cost, or, past [`DESCHEDULED_NS`], to
    /// the time preempted handlers took.
    pub fn add_handler_time(&self, ns: u64) {
        if ns > DESCHEDULED_NS {
            self.descheduled.fetch_add(1, Ordering::Relaxed);
            self.descheduled_ns.fetch_add(ns, Ordering::Relaxed);
        } else {
            self.handler_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }

    /// Zeroes every counter (between sessions, when no thread is sampled).
    pub fn reset(&self) {
        for c in [
            &self.signals,
            &self.samples,
            &self.no_slot,
            &self.foreign,
            &self.kernel_lost,
            &self.corrupt_ring,
            &self.throttled,
            &self.moves,
            &self.taken_lost,
            &self.no_signal_left,
            &self.handler_ns,
            &self.descheduled,
            &self.descheduled_ns,
            &self.data_ns,
            &self.data_captures,
            &self.blob_lookups,
            &self.blob_memo_hits,
            &self.blob_hits,
            &self.counter_samples,
            &self.counter_unread,
            &self.native_walks,
            &self.native_no_table,
            &self.native_lost,
            &self.native_fell_back,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpm_takes_the_first_signal_it_holds_or_nobody_does_and_never_another_handlers() {
        let all = SAMPLE_SIGNALS;
        let held_by = |others: &'static [c_int], hpm: Option<c_int>| {
            move |s: c_int| {
                if Some(s) == hpm {
                    Holder::Hpm
                } else if others.contains(&s) {
                    Holder::Other
                } else {
                    Holder::Free
                }
            }
        };
        assert_eq!(choose_signal(&all, held_by(&[], None)), Some(libc::SIGURG));
        // The program's sun.misc.Signal, a profiler loaded first (async-profiler takes SIGPROF).
        assert_eq!(choose_signal(&all, held_by(&[libc::SIGURG], None)), Some(libc::SIGWINCH));
        assert_eq!(choose_signal(&all, held_by(&[libc::SIGPROF], None)), Some(libc::SIGURG));
        // Its own stays its own; past it, one nobody holds.
        assert_eq!(choose_signal(&all, held_by(&[libc::SIGURG], Some(libc::SIGPROF))), Some(libc::SIGWINCH));
        assert_eq!(choose_signal(&all[3..], held_by(&[], Some(libc::SIGPROF))), Some(libc::SIGVTALRM));
        assert_eq!(
            choose_signal(&all, held_by(&[libc::SIGURG, libc::SIGWINCH, libc::SIGSTKFLT], Some(libc::SIGVTALRM))),
            Some(libc::SIGVTALRM)
        );
        assert_eq!(choose_signal(&all, held_by(&SAMPLE_SIGNALS, None)), None, "all held: none");
    }

    #[test]
    fn hpms_signals_are_standard_ones_below_the_real_time_range() {
        // A real-time signal queues, and a full queue makes the kernel send SIGIO.
        for s in SAMPLE_SIGNALS {
            assert!(s > 0 && s < libc::SIGRTMIN(), "{s}");
        }
        assert_eq!(signal_name(libc::SIGURG), "SIGURG");
    }

    #[test]
    fn a_preempted_handler_is_not_counted_as_its_cost() {
        let s = SignalStats::default();
        s.add_handler_time(4_000);
        s.add_handler_time(DESCHEDULED_NS + 1);
        s.add_handler_time(DESCHEDULED_NS);
        assert_eq!(s.handler_ns.load(Ordering::Relaxed), 4_000 + DESCHEDULED_NS);
        assert_eq!(
            (s.descheduled.load(Ordering::Relaxed), s.descheduled_ns.load(Ordering::Relaxed)),
            (1, DESCHEDULED_NS + 1)
        );
        s.reset();
        assert_eq!(s.descheduled_ns.load(Ordering::Relaxed), 0);
    }
}
