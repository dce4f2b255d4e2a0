//! One profiled thread's slot: what the signal handler reads (ring, thread index, batch queue,
//! the session's sampling context), in a pool that is never freed, so a handler holding a
//! reference never sees freed memory.
//!
//! A handler may use a slot only inside [`Slot::enter`], which succeeds only while the slot is
//! live (published by attach, retired by detach: `hpm_capture::claim`) and only on the thread the
//! slot belongs to. That makes three races impossible by construction: a
//! handler reading a ring being unmapped (retire waits for it), a delayed handler draining a
//! slot that detach+attach gave to another thread (the thread check), and a stale `si_fd` whose
//! number now names another thread's group (the same check).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

use hpm_capture::batch::ThreadQueue;
use hpm_capture::blob_cache::WalkMemo;
use hpm_capture::claim::{Claim, Inside};

use crate::perf::RingPtr;
use crate::sink::SignalCtx;

pub struct Slot {
    claim: Claim,
    tid: AtomicI32,
    thread_idx: AtomicU32,
    /// Announced as a Java thread: by its ThreadStart, or by the VM's thread list matched by
    /// name. Only where HotSpot's thread key is unknown does this let the handler call GetEnv
    /// and AsyncGetCallTrace (`Vm::may_enter_jvm_here`): a name is no proof that the JVM set
    /// the thread up (a new thread carries its parent's name at first), and GetEnv on a
    /// thread in its start-up, which holds malloc's lock while libjvm allocates its TLS block,
    /// would allocate that block too and deadlock (seen twice in the soak test).
    java: AtomicBool,
    pub queue: ThreadQueue,
    ctx: AtomicPtr<SignalCtx>,
    ring_meta: AtomicU64,
    ring_data: AtomicU64,
    ring_size: AtomicU64,
    /// Clock time (the sampling event's own count) accounted for by samples so far: written
    /// only by this slot's handler, on its own thread, so Relaxed.
    clock_accounted: AtomicU64,
    /// The HotSpot `Thread*` a JNI GetEnv in this slot's handler proved to be a JavaThread
    /// (0: none yet). Only its own thread's handler writes it, so Relaxed; reset at publish,
    /// as the slot may serve another thread since.
    java_thread: AtomicU64,
    /// The thread pointer ([`Caller`]) of the thread a handler proved by its kernel id to be
    /// the slot's, 0 if none yet: that thread's later handlers skip the system call (one per
    /// sample, ~160 ns here: the handler's only one). Only that thread's handler writes it,
    /// while inside; reset at publish, as the slot may serve another thread since. A thread
    /// pointer is reused only by a thread started after its thread ended, and a slot's
    /// notifications go to the thread id its group was opened for, never to that new thread.
    owner: AtomicU64,
    /// The registry's move count (`Threads::moves`) when this slot's thread last drained its
    /// ring, or when the slot was published: written only by its own handler after that.
    drained_at_move: AtomicU64,
    /// hpm's walker: this slot's thread's last walk (`hpm_capture::blob_cache::WalkMemo`), made
    /// at the slot's first publish (never in the handler) and kept with the slot.
    memo: OnceLock<WalkMemo>,
    /// `event=wall`: the request the wall sampler left for this slot's thread before it
    /// signalled it, 0 if none (taken by the thread's handler). See [`WallRequest`].
    wall_request: AtomicU64,
    /// `event=wall`, the sampler's side only (under the registry's lock, so Relaxed): the
    /// visits that found the request untaken since its last signal, and that signal's number.
    wall_unanswered: AtomicU32,
    wall_signal: AtomicI32,
}

/// A request still untaken at this many visits in a row is signalled again: its signal may
/// have been lost (see [`Posted::Again`]). A needless one costs a system call: hpm's signals
/// are standard ones, and the kernel merges one sent while the same is pending; a lost one
/// costs this many visits' resolution, not time (the weight adds up meanwhile). A thread the
/// kernel has not run for 8 visits (8 ms at 1 ms, more with over 16 threads) is rare, so
/// needless signals are too.
pub const WALL_RESEND_VISITS: u32 = 8;

/// What the sampler must do after posting a wall request ([`Slot::post_wall_request`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posted {
    /// None was waiting: signal the thread.
    Fresh,
    /// The previous one was still there, its weight grown by this one's; signal again, as its
    /// signal may have been lost: [`WALL_RESEND_VISITS`] visits found it untaken, or hpm moved
    /// to another signal since (those in flight went to the handler that took hpm's). Signals
    /// are lost too when the kernel runs out of queued siginfo (RLIMIT_SIGPENDING: the
    /// handler sees SI_USER and no value) or the thread ends with the signal blocked. The
    /// handler takes a request once, so a second signal that finds none is only counted stale.
    Again,
    /// The previous one was still there, its weight grown by this one's; its signal is
    /// recent and on the current signal number: no second one.
    Merged,
}

/// What the wall sampler asks of a thread's handler, in one word: the time the sample stands
/// for (ns) above the thread state code ([`hpm_capture::capture::THREAD_STATES`], below
/// [`HAND_ON`]) and whether to hand the slot's batch on at once. Never 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallRequest {
    pub weight: u64,
    pub state: u8,
    /// The thread is visited less than once per processor round: its batch goes to the
    /// processor with this sample rather than wait, partly filled, for the round's steal (with
    /// a thousand threads, a batch each held the whole pool).
    pub hand_on: bool,
}

/// The request word's bit for [`WallRequest::hand_on`].
const HAND_ON: u64 = 0x80;

impl WallRequest {
    /// The weight is kept to 56 bits (2.3 years of nanoseconds) and at least 1.
    fn word(self) -> u64 {
        let hand_on = if self.hand_on { HAND_ON } else { 0 };
        (self.weight.clamp(1, (1 << 56) - 1) << 8) | hand_on | u64::from(self.state & 0x7f)
    }

    fn from_word(w: u64) -> Option<WallRequest> {
        (w != 0).then_some(WallRequest { weight: w >> 8, state: (w & 0x7f) as u8, hand_on: w & HAND_ON != 0 })
    }
}

/// What a handler may use while inside a slot (the borrows end with it).
pub struct Entered<'a> {
    _inside: Inside<'a>,
    slot: &'a Slot,
    ring: RingPtr,
    ctx: *const SignalCtx,
    thread_idx: u32,
    java: bool,
}

impl Entered<'_> {
    pub fn queue(&self) -> &ThreadQueue {
        &self.slot.queue
    }

    pub fn ring(&self) -> &RingPtr {
        &self.ring
    }

    pub fn ctx(&self) -> &SignalCtx {
        // SAFETY: the context was published with the slot and stays valid until `retire`
        // returns, which waits for this `Entered` (its `Inside`) to be dropped; the returned
        // borrow cannot outlive `self`.
        unsafe { &*self.ctx }
    }

    pub fn thread_idx(&self) -> u32 {
        self.thread_idx
    }

    /// Kernel mode counted, not sampled: the periods of the clock event (whose count `value`
    /// includes kernel time, though samples there are not taken) that passed in the kernel
    /// since this thread's previous sample. Every record goes through here, kept or dropped,
    /// so a dropped sample is never taken for kernel time.
    pub fn kernel_periods(&self, value: u64, period: u64) -> u32 {
        let mut accounted = self.slot.clock_accounted.load(Ordering::Relaxed);
        let periods = hpm_capture::capture::kernel_periods(&mut accounted, value, period);
        self.slot.clock_accounted.store(accounted, Ordering::Relaxed);
        periods
    }

    /// Whether this is the thread's first drain since the registry's move count reached
    /// `moves` (the groups moved to another signal since its last drain); remembers it.
    pub fn first_drain_since(&self, moves: u64) -> bool {
        self.slot.drained_at_move.swap(moves, Ordering::Relaxed) != moves
    }

    /// Whether the thread's Java stack may be walked (see [`Slot`]'s `java`).
    pub fn is_java(&self) -> bool {
        self.java
    }

    /// The `Thread*` this thread's handler already proved a JavaThread (see `remember`), 0 if
    /// none. An OS thread's `Thread*` is a JavaThread or never one: HotSpot makes its own
    /// threads with their own OS threads, and attaching always makes a JavaThread.
    pub fn proven_java_thread(&self) -> u64 {
        self.slot.java_thread.load(Ordering::Relaxed)
    }

    /// Remembers that JNI GetEnv, on this thread, found `thread` to be a JavaThread.
    pub fn remember_java_thread(&self, thread: u64) {
        self.slot.java_thread.store(thread, Ordering::Relaxed);
    }

    /// The thread's last walk, for its next one: only this handler uses it while inside (a
    /// handler runs on the slot's own thread, with the signal blocked).
    pub fn walk_memo(&self) -> Option<&WalkMemo> {
        self.slot.memo.get()
    }

    /// The slot's thread's kernel id (proven: the handler runs on it).
    pub fn tid(&self) -> i32 {
        self.slot.tid.load(Ordering::Relaxed)
    }

    /// Takes the wall sampler's request for this thread, if one waits.
    pub fn take_wall_request(&self) -> Option<WallRequest> {
        WallRequest::from_word(self.slot.wall_request.swap(0, Ordering::AcqRel))
    }
}

/// The thread a handler runs on: its thread pointer, and its kernel id, asked of the kernel
/// only when a slot needs it.
pub struct Caller {
    pointer: u64,
    tid: Option<i32>,
}

impl Caller {
    /// The calling thread. Async-signal-safe.
    pub fn current() -> Caller {
        Caller { pointer: crate::os::thread_pointer(), tid: None }
    }

    /// Its kernel thread id (a system call, the first time).
    pub fn tid(&mut self) -> i32 {
        *self.tid.get_or_insert_with(crate::os::gettid)
    }
}

/// Why a handler could not use a slot.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not live: detached, or never attached.
    Retired,
    /// Live, but another thread's (a stale or reused descriptor number).
    OtherThread,
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            claim: Claim::default(),
            tid: AtomicI32::new(0),
            thread_idx: AtomicU32::new(0),
            java: AtomicBool::new(false),
            queue: ThreadQueue::default(),
            ctx: AtomicPtr::new(std::ptr::null_mut()),
            ring_meta: AtomicU64::new(0),
            ring_data: AtomicU64::new(0),
            ring_size: AtomicU64::new(0),
            clock_accounted: AtomicU64::new(0),
            java_thread: AtomicU64::new(0),
            owner: AtomicU64::new(0),
            drained_at_move: AtomicU64::new(0),
            memo: OnceLock::new(),
            wall_request: AtomicU64::new(0),
            wall_unanswered: AtomicU32::new(0),
            wall_signal: AtomicI32::new(0),
        }
    }

    /// Owner side: fills the slot for thread `tid` and makes it live. `ctx` must stay valid
    /// until [`Self::retire`] returns.
    /// `moves`: the registry's move count now.
    pub(super) fn publish(
        &self,
        tid: i32,
        thread_idx: u32,
        java: bool,
        ring: RingPtr,
        ctx: *const SignalCtx,
        moves: u64,
    ) {
        debug_assert!(!self.claim.is_live());
        self.tid.store(tid, Ordering::Relaxed);
        self.java.store(java, Ordering::Relaxed);
        self.thread_idx.store(thread_idx, Ordering::Relaxed);
        self.ctx.store(ctx as *mut SignalCtx, Ordering::Relaxed);
        self.ring_data.store(ring.data as u64, Ordering::Relaxed);
        self.ring_size.store(ring.size as u64, Ordering::Relaxed);
        self.ring_meta.store(ring.meta as u64, Ordering::Relaxed);
        self.clock_accounted.store(0, Ordering::Relaxed);
        self.java_thread.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::Relaxed);
        self.drained_at_move.store(moves, Ordering::Relaxed);
        self.memo.get_or_init(WalkMemo::default);
        self.wall_request.store(0, Ordering::Relaxed);
        self.wall_unanswered.store(0, Ordering::Relaxed);
        self.wall_signal.store(0, Ordering::Relaxed);
        // Release: a handler that enters sees every store above.
        self.claim.publish();
    }

    /// The thread turned out to be a started Java thread (its ThreadStart ran, on that thread).
    pub(super) fn set_java(&self) {
        self.java.store(true, Ordering::Relaxed);
    }

    /// Owner side: no handler enters from now on; returns once none is inside. The ring may be
    /// unmapped and the context freed afterwards.
    pub(super) fn retire(&self) {
        self.claim.retire();
        self.ctx.store(std::ptr::null_mut(), Ordering::Relaxed);
        self.ring_meta.store(0, Ordering::Relaxed);
        self.tid.store(0, Ordering::Relaxed);
    }

    /// Handler side, on thread `caller`: the slot's ring and context, if the slot is live,
    /// has a ring (a perf group's) and belongs to that thread. Async-signal-safe.
    pub fn enter(&self, caller: &mut Caller) -> Result<Entered<'_>, Refused> {
        self.enter_as(caller, true)
    }

    /// Handler side, for a wall request: as [`Self::enter`], for a slot published without a
    /// ring (`event=wall`: signalled by the wall sampler, no perf group). Async-signal-safe.
    pub fn enter_signalled(&self, caller: &mut Caller) -> Result<Entered<'_>, Refused> {
        self.enter_as(caller, false)
    }

    fn enter_as(&self, caller: &mut Caller, ringed: bool) -> Result<Entered<'_>, Refused> {
        let inside = self.claim.enter().ok_or(Refused::Retired)?;
        // Acquire in `enter` pairs with the release in `publish`: these are the published values.
        if caller.pointer == 0 || self.owner.load(Ordering::Relaxed) != caller.pointer {
            if self.tid.load(Ordering::Relaxed) != caller.tid() {
                return Err(Refused::OtherThread);
            }
            self.owner.store(caller.pointer, Ordering::Relaxed);
        }
        let ctx = self.ctx.load(Ordering::Relaxed);
        let ring = RingPtr {
            meta: self.ring_meta.load(Ordering::Relaxed) as *mut _,
            data: self.ring_data.load(Ordering::Relaxed) as *mut u8,
            size: self.ring_size.load(Ordering::Relaxed) as usize,
        };
        // A perf notification never uses a ring-less slot, nor a wall request a ringed one.
        if ctx.is_null() || ring.meta.is_null() == ringed {
            return Err(Refused::Retired);
        }
        Ok(Entered {
            _inside: inside,
            slot: self,
            ring,
            ctx,
            thread_idx: self.thread_idx.load(Ordering::Relaxed),
            java: self.java.load(Ordering::Relaxed),
        })
    }

    /// The wall sampler's side: leaves `req` for the slot's thread, to be taken by the handler
    /// of a signal `signal`. When the previous request is still there (its signal not handled
    /// yet), its weight grows by this one's, so the time stays whole, and a second signal is
    /// asked for only if the first may have been lost ([`Posted`]). Called by one thread at a
    /// time (the registry's lock).
    pub fn post_wall_request(&self, req: WallRequest, signal: i32) -> Posted {
        let mut cur = self.wall_request.load(Ordering::Acquire);
        let fresh = loop {
            let (next, fresh) = match WallRequest::from_word(cur) {
                None => (req.word(), true),
                Some(old) => (WallRequest { weight: old.weight.saturating_add(req.weight), ..req }.word(), false),
            };
            match self.wall_request.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break fresh,
                Err(now) => cur = now,
            }
        };
        let unanswered = self.wall_unanswered.load(Ordering::Relaxed).saturating_add(1);
        let moved = self.wall_signal.load(Ordering::Relaxed) != signal;
        if !fresh && !moved && unanswered < WALL_RESEND_VISITS {
            self.wall_unanswered.store(unanswered, Ordering::Relaxed);
            return Posted::Merged;
        }
        self.wall_unanswered.store(0, Ordering::Relaxed);
        self.wall_signal.store(signal, Ordering::Relaxed);
        if fresh {
            Posted::Fresh
        } else {
            Posted::Again
        }
    }

    /// Whether a wall request waits for this slot's thread (the sampler's count of requests in
    /// flight: `Threads::wall_pending`).
    pub fn has_wall_request(&self) -> bool {
        self.wall_request.load(Ordering::Acquire) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set, never read: `enter` only checks that a published slot has them.
    fn ring() -> RingPtr {
        RingPtr { meta: std::ptr::NonNull::dangling().as_ptr(), data: std::ptr::null_mut(), size: 0 }
    }

    fn ctx() -> *const SignalCtx {
        std::ptr::NonNull::dangling().as_ptr()
    }

    #[test]
    fn a_slot_admits_its_own_thread_alone_and_forgets_it_when_published_again() {
        let slot = Slot::new();
        let me = crate::os::gettid();
        slot.publish(me, 0, false, ring(), ctx(), 0);
        assert!(slot.enter(&mut Caller::current()).is_ok());
        assert_eq!(slot.owner.load(Ordering::Relaxed), Caller::current().pointer, "proven once");
        let mut again = Caller::current();
        assert!(slot.enter(&mut again).is_ok());
        assert_eq!(again.tid, None, "admitted again by its thread pointer, without asking the kernel");
        let other = std::thread::scope(|s| s.spawn(|| slot.enter(&mut Caller::current()).map(|_| ())).join());
        assert_eq!(other.expect("the other thread ran"), Err(Refused::OtherThread));
        slot.retire();
        assert_eq!(slot.enter(&mut Caller::current()).map(|_| ()), Err(Refused::Retired));
        // Another thread's now: the thread pointer proven for the last owner no longer admits.
        slot.publish(me.wrapping_add(1), 0, false, ring(), ctx(), 0);
        assert_eq!(slot.enter(&mut Caller::current()).map(|_| ()), Err(Refused::OtherThread));
        slot.retire();
    }

    fn no_ring() -> RingPtr {
        RingPtr { meta: std::ptr::null_mut(), data: std::ptr::null_mut(), size: 0 }
    }

    #[test]
    fn a_ringless_slot_admits_wall_requests_only_and_a_ringed_one_perf_only() {
        let slot = Slot::new();
        let me = crate::os::gettid();
        slot.publish(me, 7, true, no_ring(), ctx(), 0);
        assert_eq!(slot.enter(&mut Caller::current()).map(|_| ()), Err(Refused::Retired), "no ring to drain");
        let inside = slot.enter_signalled(&mut Caller::current()).expect("its own thread");
        assert_eq!((inside.thread_idx(), inside.tid()), (7, me));
        drop(inside);
        slot.retire();
        slot.publish(me, 7, true, ring(), ctx(), 0);
        assert_eq!(slot.enter_signalled(&mut Caller::current()).map(|_| ()), Err(Refused::Retired));
        slot.retire();
    }

    const SIG: i32 = libc::SIGURG;

    #[test]
    fn a_wall_request_is_taken_once_and_an_untaken_one_adds_up() {
        let slot = Slot::new();
        slot.publish(crate::os::gettid(), 0, true, no_ring(), ctx(), 0);
        let a = WallRequest { weight: 10_000_000, state: 3, hand_on: false };
        assert_eq!(slot.post_wall_request(a, SIG), Posted::Fresh, "nothing waited: signal");
        let b = WallRequest { weight: 5_000_000, state: 8, hand_on: true };
        assert_eq!(slot.post_wall_request(b, SIG), Posted::Merged, "still waiting: no second signal");
        let inside = slot.enter_signalled(&mut Caller::current()).expect("its own thread");
        let merged = WallRequest { weight: 15_000_000, state: 8, hand_on: true };
        assert_eq!(inside.take_wall_request(), Some(merged), "time whole, the latest state");
        assert_eq!(inside.take_wall_request(), None, "taken once");
        drop(inside);
        let zero = WallRequest { weight: 0, state: 0, hand_on: false };
        assert_eq!(slot.post_wall_request(zero, SIG), Posted::Fresh, "a zero weight is still a request");
        slot.retire();
        slot.publish(crate::os::gettid(), 0, true, no_ring(), ctx(), 0);
        let inside = slot.enter_signalled(&mut Caller::current()).expect("its own thread");
        assert_eq!(inside.take_wall_request(), None, "published again: the old request is gone");
        drop(inside);
        slot.retire();
    }

    #[test]
    fn a_lost_wall_signal_is_sent_again_at_the_eighth_untaken_visit_and_at_once_after_a_move() {
        let slot = Slot::new();
        slot.publish(crate::os::gettid(), 0, true, no_ring(), ctx(), 0);
        let visit = WallRequest { weight: 1_000_000, state: 3, hand_on: false };
        // The first signal is lost: its request stays untaken visit after visit.
        let posts: Vec<Posted> = (0..=2 * WALL_RESEND_VISITS).map(|_| slot.post_wall_request(visit, SIG)).collect();
        let again: Vec<usize> = (0..posts.len()).filter(|&i| posts[i] == Posted::Again).collect();
        assert_eq!(posts[0], Posted::Fresh);
        let k = WALL_RESEND_VISITS as usize;
        assert_eq!(again, [k, 2 * k], "signalled again at every {k}th visit that found it untaken: {posts:?}");
        assert!(slot.has_wall_request(), "in flight until taken");
        let inside = slot.enter_signalled(&mut Caller::current()).expect("its own thread");
        let all = u64::try_from(posts.len()).unwrap() * visit.weight;
        assert_eq!(inside.take_wall_request().map(|r| r.weight), Some(all), "no time lost meanwhile");
        drop(inside);
        assert!(!slot.has_wall_request(), "taken: no longer in flight");
        // Taken: the next visit starts afresh, and counts its own visits.
        assert_eq!(slot.post_wall_request(visit, SIG), Posted::Fresh);
        assert_eq!(slot.post_wall_request(visit, SIG), Posted::Merged);
        // hpm moved to another signal: what was in flight went elsewhere; sent again at once,
        // then merged as before on the new signal.
        assert_eq!(slot.post_wall_request(visit, libc::SIGWINCH), Posted::Again);
        assert_eq!(slot.post_wall_request(visit, libc::SIGWINCH), Posted::Merged);
        slot.retire();
        slot.publish(crate::os::gettid(), 0, true, no_ring(), ctx(), 0);
        assert!(!slot.has_wall_request(), "published again: nothing in flight");
        slot.retire();
    }

    #[test]
    fn a_threads_first_drain_after_a_move_is_told_apart_once() {
        let slot = Slot::new();
        slot.publish(crate::os::gettid(), 0, false, ring(), ctx(), 3);
        let inside = slot.enter(&mut Caller::current()).expect("its own thread");
        assert!(!inside.first_drain_since(3), "published after the third move");
        assert!(inside.first_drain_since(4), "the first drain after the fourth");
        assert!(!inside.first_drain_since(4), "once");
        drop(inside);
        slot.retire();
    }
}
