//! The wall sampler's requests in hpm's signal handler: the sampler thread leaves each chosen
//! thread's state and weight in its slot and signals it with hpm's signal, sent with a value
//! (`si_code` SI_QUEUE, `si_pid` this process, the value [`WALL_TAG`] above the slot's number);
//! the handler enters that slot (only on the slot's own thread), takes the request and walks
//! the stack with the same walk CPU samples use. No VM operation, no safepoint.
//!
//! Why a value and not tgkill's SI_TKILL: the value names the slot, so the handler finds it
//! without a table by thread id; the slot's own check (its thread's id) keeps a handler out of
//! another thread's slot, as for perf notifications' `si_fd`.
//!
//! `si_pid` is no proof of origin, only a filter: the kernel lets another process of the same
//! user send SI_QUEUE with any `si_pid`. What protects is the slot's request word: a forged
//! signal finds none (counted stale, nothing walked) or takes a real one a little early (a
//! sample taken early, its weight the sampler's; the sampler's own signal then finds none).

use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use hpm_capture::capture::Captured;
use hpm_capture::perf_record::RawSample;

use super::SignalStats;
use crate::threads::{Caller, Threads};

/// The upper half of a wall request's value ("wall").
pub const WALL_TAG: u32 = 0x7761_6c6c;

/// This process's id, for the handler (set by [`arm`]: getpid is a system call).
static PID: AtomicI32 = AtomicI32::new(0);

/// What the handler met with wall requests; read by the wall sampler's summary.
#[derive(Default)]
pub struct WallHandled {
    /// Requests walked into a record (pushed, or dropped for want of a batch: the pool counts).
    pub walked: AtomicU64,
    /// Signals whose slot was not live or not this thread's (the thread's slot retired).
    pub refused: AtomicU64,
    /// Signals that found no request (taken by an earlier signal: one sent again, see
    /// `threads::Posted::Again`; or not the sampler's).
    pub stale: AtomicU64,
}

pub static HANDLED: WallHandled =
    WallHandled { walked: AtomicU64::new(0), refused: AtomicU64::new(0), stale: AtomicU64::new(0) };

impl WallHandled {
    /// (walked, refused, stale) since the last [`arm`].
    pub fn counts(&self) -> (u64, u64, u64) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        (get(&self.walked), get(&self.refused), get(&self.stale))
    }
}

/// Before a wall session signals any thread: the handler learns this process's id and the
/// counts start from zero.
pub fn arm() {
    PID.store(std::process::id() as i32, Ordering::Relaxed);
    for c in [&HANDLED.walked, &HANDLED.refused, &HANDLED.stale] {
        c.store(0, Ordering::Relaxed);
    }
}

/// The slot a signal names if it looks like a wall request from this process (SI_QUEUE, our
/// pid, hpm's tag: a filter, not a proof; see the module's doc). Async-signal-safe.
pub(super) fn request(info: *const libc::siginfo_t) -> Option<u32> {
    if info.is_null() {
        return None;
    }
    // SAFETY: the kernel passed a full siginfo_t; for SI_QUEUE its pid and value fields are
    // the sender's (read only once the code says so).
    let (pid, value) = unsafe {
        if (*info).si_code != crate::os::SI_QUEUE {
            return None;
        }
        ((*info).si_pid(), (*info).si_value().sival_ptr as u64)
    };
    let ours = pid != 0 && pid == PID.load(Ordering::Relaxed);
    (ours && value >> 32 == u64::from(WALL_TAG)).then_some(value as u32)
}

/// Handles a wall request for slot `slot` on the interrupted thread: one record with the
/// request's weight and state and the thread's stack. Returns whether the signal was ours
/// (always, once its value named a slot: a slot that refuses is counted).
pub(super) fn handle(threads: &Threads, stats: &SignalStats, slot: u32, ucontext: *mut c_void) -> bool {
    let start = crate::os::now_ticks();
    let Some(slot) = threads.slot_at(slot) else { return false };
    let mut me = Caller::current();
    let Ok(inside) = slot.enter_signalled(&mut me) else {
        HANDLED.refused.fetch_add(1, Ordering::Relaxed);
        return true;
    };
    let Some(req) = inside.take_wall_request() else {
        HANDLED.stale.fetch_add(1, Ordering::Relaxed);
        return true;
    };
    let ctx = inside.ctx();
    let mut raw = RawSample { period: req.weight, ..RawSample::default() };
    super::interrupted_at(&mut raw, ucontext, start, inside.tid());
    let thread = inside.thread_idx();
    let _ = inside.queue().push_with(&ctx.sink.pool, |c: &mut Captured| {
        c.begin_perf_sample(&raw, thread, 0);
        c.state = req.state;
        c.stack = super::walk_if_entered(ctx, stats, c, ucontext, &inside);
        if c.vthread != 0 && c.state == 0 {
            // The carrier's JVMTI state said only "carrying": the virtual thread's is its own.
            c.state = crate::vmstructs::mounted_state(inside.proven_java_thread());
        }
        true
    });
    if req.hand_on {
        // Visited less than once a round: the batch goes on now (see `WallRequest::hand_on`).
        if let Some(b) = inside.queue().steal() {
            ctx.sink.pool.submit(b);
        }
    }
    HANDLED.walked.fetch_add(1, Ordering::Relaxed);
    stats.add_handler_time(crate::os::now_ticks().saturating_sub(start));
    true
}
