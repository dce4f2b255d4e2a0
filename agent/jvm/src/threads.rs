//! Profiled threads: a fixed pool of per-thread slots the signal handler can always read, the
//! fd -> slot table it finds them by, and the registry that gives each thread its index in the
//! running session and, for the signal sampler, a perf group (Java threads from JVMTI
//! ThreadStart, VM threads from scanning /proc/self/task), detached at thread end so no
//! descriptor outlives its thread.
//!
//! Bounded by construction: the registry holds live threads and the running
//! session's thread list only (reset when a session starts); the processor copies the entries
//! that changed since its last round, not the whole list.

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hpm_capture::batch::BatchHandle;
use hpm_profile::model::ThreadInfo;

use crate::perf::{PerfError, PerfSpec, ThreadEvents};
use crate::sink::SignalCtx;

pub mod full_names;
mod hotspot_names;
mod slot;
mod virtual_index;
pub use slot::{Caller, Entered, Posted, Refused, Slot, WallRequest, WALL_RESEND_VISITS};
pub use virtual_index::LiveCount;

/// Threads alive at once that can be profiled; more are counted and skipped.
pub const MAX_SLOTS: usize = 4096;
/// File descriptors the handler can map to a slot.
pub const MAX_FD: usize = 1 << 16;
/// An `fd_table` entry: the slot's index + 1 in the low bits, and above [`SOURCE_SHIFT`] which
/// event of the group the descriptor is (0 the leader, `k` a member that samples itself).
const SOURCE_SHIFT: u32 = 24;
const SLOT_MASK: u32 = (1 << SOURCE_SHIFT) - 1;
const _: () = assert!(MAX_SLOTS < SLOT_MASK as usize);

/// How long after a thread's group is closed a perf notification naming its descriptor, received
/// by that same thread, is still taken as hpm's: a signal generated just before the group was
/// disabled may be delivered after (it waits until its thread runs again), and is dropped,
/// counted. Another profiler's perf notifications never reach hpm's handler (hpm's signal is
/// its own: `signal.rs`), so none is taken for one.
pub const RETIRED_FD_GRACE_SECS: u64 = 5;
/// `sampler=chain`: threads profiled at once (each has up to 256 KB of locked rings), and
/// those of them with an anchor event.
pub const MAX_DRAINED_THREADS: usize = 512;
pub const ANCHORED_THREADS: usize = 256;
/// Threads one session can name; more are counted and not profiled.
pub const MAX_SESSION_THREADS: usize = 1 << 20;

/// How the running session samples threads.
pub enum Mode {
    /// No session samples: attaching only remembers live Java threads.
    Off,
    /// Timer samplers: each thread gets an index in the session, no perf group.
    Identity,
    /// The wall sampler: each Java thread gets an index and a slot without a perf group, which
    /// the handler of the sampler's signal enters ([`Threads::request_wall`]). The context
    /// stays alive (held here) while any slot is published with it.
    Signalled { ctx: Arc<SignalCtx> },
    /// The signal sampler: each thread gets a perf group whose overflow signals reach its slot.
    /// The context stays alive (held here) while any slot is published with it.
    Perf { spec: Box<PerfSpec>, ctx: Arc<SignalCtx> },
}

impl Mode {
    /// The sampling context its slots are published with.
    fn ctx(&self) -> Option<Arc<SignalCtx>> {
        match self {
            Mode::Perf { ctx, .. } | Mode::Signalled { ctx } => Some(ctx.clone()),
            Mode::Off | Mode::Identity => None,
        }
    }
}

/// Per-reason counts of threads that could not be profiled.
#[derive(Default, Debug, Clone)]
pub struct AttachFailures {
    pub by_reason: Vec<(String, u64)>,
}

impl AttachFailures {
    fn add(&mut self, reason: String) {
        hpm_profile::model::count_reason(&mut self.by_reason, &reason, 1);
    }
}

/// Ended threads whose index is kept for late samples (a few hundred bytes of map).
const MAX_ENDED_KEPT: usize = 4096;

struct LiveThread {
    idx: u32,
    perf: Option<(u32, ThreadEvents)>,
    /// `Mode::Signalled`: the thread's slot.
    signalled: Option<u32>,
}

/// Why the wall sampler could not ask a thread for a sample ([`Threads::request_wall`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WallMiss {
    /// The thread has no slot in this session (not attached: ended, hpm's own, or no slot
    /// left).
    NoSlot,
    /// Its previous request is not taken yet (the thread did not run since): this one's time
    /// was added to it, and its signal not sent again (see [`Posted::Merged`]).
    Pending,
    /// The signal could not be sent (the thread ended meanwhile).
    Gone,
}

struct Inner {
    mode: Mode,
    /// The session's threads; the index is the recording's ThreadIdx.
    infos: Vec<ThreadInfo>,
    /// Indices whose entry changed since the processor's last sync.
    dirty: Vec<u32>,
    /// Threads with an index in this session, by kernel id.
    live: HashMap<i32, LiveThread>,
    /// Timer samplers: index by Java thread id (this session).
    by_java_id: HashMap<u64, u32>,
    free_slots: Vec<u32>,
    next_slot: u32,
    /// The agent's own threads, never profiled (removed when they end).
    excluded: HashSet<i32>,
    /// Java threads past ThreadEnd whose task may still be listed in /proc for a moment: the
    /// scan must not take them for new VM threads. Pruned by the scan (perf mode only).
    ended: HashSet<i32>,
    /// Indices of this session's threads that ended, by kernel id: samples that reach the
    /// processor after their thread ended (`isps` completes traces every 100 ms) still have a
    /// thread. Bounded; a live thread with a reused id comes first.
    ended_idx: HashMap<i32, u32>,
    failures: AttachFailures,
    first_error: Option<PerfError>,
    /// Live Java threads by kernel id (from ThreadStart), so a later session's /proc scan
    /// attaches them under their Java identity.
    java_live: HashMap<i32, ThreadInfo>,
    /// Java threads that started before the session (a late attach), by their OS name (the
    /// Java name cut to 15 bytes, as HotSpot names its threads); `None` if the name is shared.
    /// Only those whose kernel id the VM did not tell (see `java_by_tid`).
    java_hints: HashMap<String, Option<ThreadInfo>>,
    /// Java threads that started before the session, by the kernel id the VM's structures
    /// gave: named whole, where OS names (15 bytes) often are not told apart
    /// (`ForkJoinPool.commonPool-worker-1` and `-2` are both `ForkJoinPool.co`).
    java_by_tid: HashMap<i32, ThreadInfo>,
    /// Drained rings (`sampler=chain`): groups of threads that ended, kept until the processor
    /// has read what their rings still hold (`with_rings`).
    retired: Vec<(i32, u32, ThreadEvents)>,
    /// Threads the scan attached under a kernel name of 15 bytes, which the kernel may have cut
    /// (`C2 CompilerThre`): taken by [`Threads::take_maybe_cut`] to be named in full.
    maybe_cut: Vec<i32>,
    /// This session's virtual threads' entries (samples of mounted virtual threads).
    virtual_threads: virtual_index::VirtualIndex,
}

pub struct Threads {
    /// Current sampling period (changes with interval=auto); new threads start with it.
    period: AtomicU64,
    slots: Box<[Slot]>,
    fd_table: Box<[AtomicU32]>,
    /// For each descriptor number, when it last stopped naming a slot and whose slot it was, in
    /// one word: CLOCK_MONOTONIC seconds << 32 | the thread's kernel id (0: never).
    fd_retired: Box<[AtomicU64]>,
    inner: Mutex<Inner>,
    /// The signal new perf groups notify with (`signal::SignalSetup` chooses it).
    signal: AtomicI32,
    /// How many times the groups were moved to another signal ([`Self::retarget`]): a slot
    /// whose thread drained its ring at an older count drains, next, what was sampled while
    /// the notifications went elsewhere.
    moves: AtomicU64,
    /// `/proc/self/task`, opened at the first scan and kept, with what its last listing saw.
    tasks: Mutex<TaskList>,
    /// Live virtual threads (`event=wall` on JDK 21+).
    pub virtual_live: LiveCount,
}

/// The kept `/proc/self/task` (None until the first scan, or after a listing failed: opened
/// again at the next) and what its last listing saw.
#[derive(Default)]
struct TaskList {
    dir: Option<crate::os::TaskDir>,
    /// The directory's link count just before the last listing.
    listed_links: Option<u64>,
    /// Checks since the last listing.
    quiet: u32,
}

/// Periodic checks that may find the thread count unchanged before the tasks are listed
/// anyway (5 checks of 200 ms: a second).
const QUIET_CHECKS: u32 = 4;

/// Whether the periodic scan lists the tasks: when their count (the link count `links` now,
/// `listed` at the last listing) changed or cannot be read, or after `quiet` checks.
fn list_again(links: Option<u64>, listed: Option<u64>, quiet: u32) -> bool {
    links.is_none() || links != listed || quiet >= QUIET_CHECKS
}

impl Threads {
    pub fn new(signal: i32) -> Threads {
        Threads {
            period: AtomicU64::new(0),
            slots: (0..MAX_SLOTS).map(|_| Slot::new()).collect(),
            fd_table: (0..MAX_FD).map(|_| AtomicU32::new(0)).collect(),
            fd_retired: (0..MAX_FD).map(|_| AtomicU64::new(0)).collect(),
            tasks: Mutex::new(TaskList::default()),
            inner: Mutex::new(Inner {
                mode: Mode::Off,
                infos: Vec::new(),
                dirty: Vec::new(),
                maybe_cut: Vec::new(),
                live: HashMap::new(),
                by_java_id: HashMap::new(),
                free_slots: Vec::new(),
                next_slot: 0,
                excluded: HashSet::new(),
                ended: HashSet::new(),
                ended_idx: HashMap::new(),
                failures: AttachFailures::default(),
                first_error: None,
                java_live: HashMap::new(),
                java_hints: HashMap::new(),
                java_by_tid: HashMap::new(),
                retired: Vec::new(),
                virtual_threads: Default::default(),
            }),
            signal: AtomicI32::new(signal),
            moves: AtomicU64::new(0),
            virtual_live: LiveCount::default(),
        }
    }

    /// The signal the perf groups opened from now on notify with.
    pub fn set_signal(&self, signal: i32) {
        let _g = self.lock();
        self.signal.store(signal, Ordering::Relaxed);
    }

    /// Moves every live perf group's notifications, and those of the groups opened from now
    /// on, to `signal`. The move is counted first: a thread's next handler on the new signal
    /// sees it, and whatever the thread's ring holds then was sampled before.
    pub fn retarget(&self, signal: i32) {
        let g = self.lock();
        self.moves.fetch_add(1, Ordering::Release);
        self.signal.store(signal, Ordering::Relaxed);
        for (tid, l) in &g.live {
            if let Some((_, ev)) = &l.perf {
                if let Err(e) = ev.set_signal(signal) {
                    eprintln!("hpm: thread {tid}: {e}");
                }
            }
        }
    }

    /// The signal the perf groups notify with.
    pub fn signal(&self) -> i32 {
        self.signal.load(Ordering::Relaxed)
    }

    /// How many times the groups moved to another signal. Async-signal-safe.
    pub fn moves(&self) -> u64 {
        self.moves.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Each step keeps the maps consistent, so a lock poisoned by a panic is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Signal-handler lookup: the slot whose perf group `fd` belongs to, and which of its
    /// events it is (0 the leader, `k` the `k`-th member, a counter that samples itself).
    /// Async-signal-safe.
    pub fn slot_for_fd(&self, fd: i32) -> Option<(&Slot, u8)> {
        let v = self.fd_table.get(usize::try_from(fd).ok()?)?.load(Ordering::Acquire);
        let (i, source) = (v & SLOT_MASK, (v >> SOURCE_SHIFT) as u8);
        if i == 0 {
            None
        } else {
            self.slots.get(i as usize - 1).map(|s| (s, source))
        }
    }

    /// Whether `fd` named the slot of thread `tid` until less than [`RETIRED_FD_GRACE_SECS`]
    /// before `now_ns`: a late notification of that thread's group, closed since. Async-signal-
    /// safe; the retirement is stored before the slot is unlinked, so a handler that found the
    /// slot unlinked sees it.
    pub fn retired_from(&self, fd: i32, tid: i32, now_ns: u64) -> bool {
        let Some(v) = usize::try_from(fd).ok().and_then(|i| self.fd_retired.get(i)) else { return false };
        let v = v.load(Ordering::Acquire);
        let (secs, owner) = (v >> 32, v as u32);
        v != 0 && owner == tid as u32 && (now_ns / 1_000_000_000).saturating_sub(secs) < RETIRED_FD_GRACE_SECS
    }

    /// A session starts sampling with `mode` (not `Off`: [`Self::stop_all`] ends it). Its thread
    /// list starts empty.
    pub fn begin(&self, mode: Mode) {
        let mut g = self.lock();
        if let Mode::Perf { spec, .. } = &mode {
            self.period.store(spec.period, Ordering::Relaxed);
        }
        g.mode = mode;
        g.infos.clear();
        g.dirty.clear();
        g.maybe_cut.clear();
        g.by_java_id.clear();
        g.virtual_threads.clear();
        g.ended.clear();
        g.ended_idx.clear();
        g.failures = AttachFailures::default();
        g.first_error = None;
        // A previous session's undrained groups (none when its sampler drained at stop).
        g.retired.clear();
    }

    /// Java threads the VM lists now (names and Java ids, kernel ids where known): the /proc
    /// scan matches them by kernel id, else by OS name, so they are profiled under their Java
    /// identity.
    pub fn hint_java_threads(&self, infos: Vec<ThreadInfo>) {
        let mut g = self.lock();
        g.java_hints.clear();
        g.java_by_tid.clear();
        for info in infos {
            if info.os_tid != 0 {
                g.java_by_tid.insert(info.os_tid as i32, info);
                continue;
            }
            let mut end = info.name.len().min(15);
            while !info.name.is_char_boundary(end) {
                end -= 1;
            }
            let key = info.name[..end].to_string();
            let shared = g.java_hints.contains_key(&key);
            g.java_hints.insert(key, (!shared).then_some(info));
        }
    }

    /// The agent's own thread `tid` is never profiled (until [`Self::include`]).
    pub fn exclude(&self, tid: i32) {
        self.lock().excluded.insert(tid);
    }

    /// The agent's thread `tid` ended.
    pub fn include(&self, tid: i32) {
        self.lock().excluded.remove(&tid);
    }

    fn new_index(g: &mut Inner, info: ThreadInfo) -> Option<u32> {
        if g.infos.len() >= MAX_SESSION_THREADS {
            g.failures.add(format!("more than {MAX_SESSION_THREADS} threads in one session"));
            return None;
        }
        g.infos.push(info);
        let idx = (g.infos.len() - 1) as u32;
        g.dirty.push(idx);
        Some(idx)
    }

    /// Starts profiling `tid` (idempotent). For a thread already attached, updates what is
    /// known about it (a VM-scan name replaced by the Java name, say).
    pub fn attach(&self, tid: i32, info: ThreadInfo) -> Result<(), PerfError> {
        let mut g = self.lock();
        if g.excluded.contains(&tid) || (!info.is_java && g.ended.contains(&tid)) {
            return Ok(());
        }
        if info.is_java {
            g.ended.remove(&tid);
            g.java_live.insert(tid, info.clone());
        }
        let (spec, ctx) = match &g.mode {
            Mode::Off => return Ok(()),
            Mode::Identity => (None, None),
            Mode::Signalled { ctx } => (None, Some(ctx.clone())),
            Mode::Perf { spec, ctx } => (Some(spec.clone()), Some(ctx.clone())),
        };
        if let Some(live) = g.live.get(&tid) {
            let idx = live.idx;
            if let (true, Some(slot)) = (info.is_java, live.perf.as_ref().map(|p| p.0).or(live.signalled)) {
                self.slots[slot as usize].set_java();
            }
            let known = &g.infos[idx as usize];
            if info.is_java && !(known.is_java && known.java_id == info.java_id && known.name == info.name) {
                if let Some(j) = info.java_id {
                    g.by_java_id.insert(j, idx);
                }
                g.infos[idx as usize] = info;
                g.dirty.push(idx);
            }
            return Ok(());
        }
        if let (None, Some(ctx)) = (&spec, &ctx) {
            return self.attach_signalled(&mut g, tid, info, ctx);
        }
        let (Some(spec), Some(ctx)) = (spec, ctx) else {
            // Timer samplers: an index only.
            let java_id = info.java_id;
            let Some(idx) = Self::new_index(&mut g, info) else { return Ok(()) };
            if let Some(j) = java_id {
                g.by_java_id.insert(j, idx);
            }
            g.live.insert(tid, LiveThread { idx, perf: None, signalled: None });
            return Ok(());
        };
        // `sampler=chain`'s rings hold 100 ms of samples and 16 KB anchors (up to 256 KB a
        // thread, locked): bounded in threads, anchors only for the first ones.
        let drained = if spec.signal { 0 } else { g.live.values().filter(|l| l.perf.is_some()).count() };
        if drained >= MAX_DRAINED_THREADS {
            g.failures
                .add(format!("more than {MAX_DRAINED_THREADS} threads at once under sampler=chain (ring memory)"));
            return Ok(());
        }
        let Some(slot) = Self::take_slot(&mut g) else { return Ok(()) };
        let mut spec = spec;
        spec.period = self.period.load(Ordering::Relaxed);
        if drained >= ANCHORED_THREADS {
            spec.anchor = None;
        }
        let events = match ThreadEvents::open(&spec, tid, self.signal.load(Ordering::Relaxed)) {
            Ok(e) => e,
            Err(e) if e.errno == libc::ESRCH => {
                // The thread ended between being listed and being attached: nothing was lost.
                g.free_slots.push(slot);
                return Ok(());
            }
            Err(e) => {
                g.free_slots.push(slot);
                g.failures.add(e.reason());
                if g.first_error.is_none() {
                    g.first_error = Some(e.clone());
                }
                return Err(e);
            }
        };
        let fd = events.leader.as_raw_fd();
        if fd as usize >= MAX_FD {
            g.free_slots.push(slot);
            g.failures.add(format!("descriptor number above {MAX_FD}"));
            return Ok(());
        }
        let java = info.is_java;
        let Some(idx) = Self::new_index(&mut g, info) else {
            g.free_slots.push(slot);
            return Ok(());
        };
        let s = &self.slots[slot as usize];
        debug_assert!(s.queue.is_empty());
        s.publish(tid, idx, java, events.ring_parts(), Arc::as_ptr(&ctx), self.moves());
        let sampled: Vec<(u8, i32)> = events.sampled_members().filter(|&(_, f)| (f as usize) < MAX_FD).collect();
        self.fd_table[fd as usize].store(slot + 1, Ordering::Release);
        for &(k, f) in &sampled {
            self.fd_table[f as usize].store((slot + 1) | (u32::from(k) << SOURCE_SHIFT), Ordering::Release);
        }
        if let Err(e) = events.enable() {
            self.fd_table[fd as usize].store(0, Ordering::Release);
            for &(_, f) in &sampled {
                self.fd_table[f as usize].store(0, Ordering::Release);
            }
            s.retire();
            g.free_slots.push(slot);
            return Err(e);
        }
        g.live.insert(tid, LiveThread { idx, perf: Some((slot, events)), signalled: None });
        Ok(())
    }

    /// A free slot, counted when none is left.
    fn take_slot(g: &mut Inner) -> Option<u32> {
        match g.free_slots.pop() {
            Some(s) => Some(s),
            None if (g.next_slot as usize) < MAX_SLOTS => {
                g.next_slot += 1;
                Some(g.next_slot - 1)
            }
            None => {
                g.failures.add(format!("more than {MAX_SLOTS} live threads"));
                None
            }
        }
    }

    /// `Mode::Signalled`: an index and a ring-less slot for the new thread `tid`.
    fn attach_signalled(
        &self,
        g: &mut Inner,
        tid: i32,
        info: ThreadInfo,
        ctx: &Arc<SignalCtx>,
    ) -> Result<(), PerfError> {
        let (java, java_id) = (info.is_java, info.java_id);
        let Some(slot) = Self::take_slot(g) else { return Ok(()) };
        let Some(idx) = Self::new_index(g, info) else {
            g.free_slots.push(slot);
            return Ok(());
        };
        if let Some(j) = java_id {
            g.by_java_id.insert(j, idx);
        }
        let s = &self.slots[slot as usize];
        debug_assert!(s.queue.is_empty());
        let none = crate::perf::RingPtr { meta: std::ptr::null_mut(), data: std::ptr::null_mut(), size: 0 };
        s.publish(tid, idx, java, none, Arc::as_ptr(ctx), self.moves());
        g.live.insert(tid, LiveThread { idx, perf: None, signalled: Some(slot) });
        Ok(())
    }

    /// The wall sampler: leaves `req` in the slot of thread `tid` and signals the thread with
    /// `signal`, the slot's number in the signal's value ([`crate::os::signal_thread`]), unless
    /// an earlier request waits whose signal need not be sent again ([`Posted`]); the handler
    /// takes the request. Under the registry's lock, so the slot is not given to another
    /// thread in between. Returns whether a signal was sent: [`Posted::Fresh`] or
    /// [`Posted::Again`].
    pub fn request_wall(&self, tid: i32, req: WallRequest, signal: i32, tag: u32) -> Result<Posted, WallMiss> {
        let g = self.lock();
        let slot = g.live.get(&tid).and_then(|l| l.signalled).ok_or(WallMiss::NoSlot)?;
        let posted = self.slots[slot as usize].post_wall_request(req, signal);
        if posted == Posted::Merged {
            return Err(WallMiss::Pending);
        }
        let value = u64::from(tag) << 32 | u64::from(slot);
        crate::os::signal_thread(tid, signal, value).map_err(|_| WallMiss::Gone)?;
        Ok(posted)
    }

    /// The wall requests in flight: live threads' slots whose request is not taken yet (at
    /// most one each, so at most the live threads).
    pub fn wall_pending(&self) -> usize {
        let g = self.lock();
        g.live.values().filter_map(|l| l.signalled).filter(|&s| self.slots[s as usize].has_wall_request()).count()
    }

    /// The slot numbered `i` (a wall request's). Async-signal-safe.
    pub fn slot_at(&self, i: u32) -> Option<&Slot> {
        self.slots.get(i as usize)
    }

    /// Whether `tid` has an index in the running session.
    pub fn is_live(&self, tid: i32) -> bool {
        self.lock().live.contains_key(&tid)
    }

    /// Stops profiling `tid`: the group is disabled, no handler uses its slot any more, its
    /// partial batch goes to the processor, and the descriptors are closed.
    pub fn detach(&self, tid: i32) {
        let mut g = self.lock();
        let ctx = g.mode.ctx();
        self.detach_locked(&mut g, tid, ctx.as_deref());
    }

    fn detach_locked(&self, g: &mut Inner, tid: i32, ctx: Option<&SignalCtx>) {
        let Some(live) = g.live.remove(&tid) else { return };
        if g.ended_idx.len() >= MAX_ENDED_KEPT {
            g.ended_idx.clear();
        }
        g.ended_idx.insert(tid, live.idx);
        if let Some(slot) = live.signalled {
            let s = &self.slots[slot as usize];
            // Waits for a handler still inside; none enters afterwards.
            s.retire();
            if let (Some(b), Some(ctx)) = (s.queue.steal(), ctx) {
                ctx.sink.pool.submit(b);
            }
            g.free_slots.push(slot);
            return;
        }
        let Some((slot, events)) = live.perf else { return };
        events.disable();
        let fd = events.leader.as_raw_fd() as usize;
        let secs = crate::os::now_ticks() / 1_000_000_000;
        let fds = std::iter::once(fd).chain(events.sampled_members().map(|(_, f)| f as usize));
        for fd in fds.filter(|&f| f < MAX_FD) {
            self.fd_retired[fd].store(secs << 32 | u64::from(tid as u32), Ordering::Release);
            self.fd_table[fd].store(0, Ordering::Release);
        }
        let s = &self.slots[slot as usize];
        // Waits for a handler still inside (handlers never block, so this is short); none
        // enters afterwards, so the ring can be unmapped below.
        s.retire();
        // The partial batch goes to the processor (a slot is only published with a context).
        if let (Some(b), Some(ctx)) = (s.queue.steal(), ctx) {
            ctx.sink.pool.submit(b);
        }
        if matches!(&g.mode, Mode::Perf { spec, .. } if !spec.signal) {
            // Its ring's last samples are still to be read (`with_rings` drops it after).
            g.retired.push((tid, live.idx, events));
        } else {
            drop(events);
        }
        g.free_slots.push(slot);
    }

    /// `sampler=chain`: every profiled thread's rings, `f(tid, thread index, ring, is_anchor)`,
    /// under the registry's lock (no ring is unmapped meanwhile); the groups of threads that
    /// ended are closed after this last reading.
    pub fn with_rings(&self, mut f: impl FnMut(i32, u32, &crate::perf::RingPtr, bool)) {
        let mut visit = |tid: i32, idx: u32, ev: &ThreadEvents| {
            f(tid, idx, &ev.ring_parts(), false);
            if let Some(r) = ev.anchor_ring() {
                f(tid, idx, &r, true);
            }
        };
        let mut g = self.lock();
        for (&tid, l) in &g.live {
            if let Some((_, ev)) = &l.perf {
                visit(tid, l.idx, ev);
            }
        }
        for (tid, idx, ev) in std::mem::take(&mut g.retired) {
            visit(tid, idx, &ev);
        }
    }

    /// The process's tasks now, through the kept `/proc/self/task`.
    fn tasks_now(&self) -> Option<HashSet<i32>> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        let t = &mut *tasks;
        let dir = match &mut t.dir {
            Some(d) => d,
            None => t.dir.insert(crate::os::TaskDir::open().ok()?),
        };
        // Read before the listing: a thread that comes during it changes the count after.
        let links = dir.links();
        let mut ids = Vec::new();
        if dir.list(&mut ids).is_err() {
            *t = TaskList::default();
            return None;
        }
        t.listed_links = links;
        t.quiet = 0;
        Some(ids.into_iter().collect())
    }

    /// [`Self::scan`], the periodic one: only when the process's thread count changed since
    /// the last listing, or after [`QUIET_CHECKS`] checks that found it unchanged (a thread
    /// that started as another ended). A listing cost ~40-90 us here (the kernel makes an
    /// entry per thread), 0.2-0.5 us per sample at 1 ms; the count is one fstat. Java threads
    /// are announced by ThreadStart: what waits is a new VM thread (GC worker, compiler) that
    /// came as another thread ended, until the fifth check (1-1.25 s); otherwise none waits.
    pub fn scan_if_changed(&self) -> usize {
        let changed = {
            let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
            let links = tasks.dir.as_ref().and_then(crate::os::TaskDir::links);
            let changed = list_again(links, tasks.listed_links, tasks.quiet);
            tasks.quiet += 1;
            changed
        };
        if changed {
            self.scan()
        } else {
            0
        }
    }

    /// Attaches threads of the process not yet profiled (VM threads: GC workers, compiler
    /// threads) and detaches threads that are gone. Returns how many were attached. Under a
    /// timer sampler (which sees Java threads only) it registers the Java threads that started
    /// before the session, so their samples can be told apart by kernel id.
    pub fn scan(&self) -> usize {
        let java_only = match self.lock().mode {
            Mode::Off => return 0,
            Mode::Identity | Mode::Signalled { .. } => true,
            Mode::Perf { .. } => false,
        };
        let Some(present) = self.tasks_now() else { return 0 };
        let (to_attach, gone): (Vec<i32>, Vec<i32>) = {
            let mut g = self.lock();
            g.ended.retain(|t| present.contains(t));
            (
                present.iter().copied().filter(|t| !g.live.contains_key(t) && !g.excluded.contains(t)).collect(),
                g.live.keys().copied().filter(|t| !present.contains(t)).collect(),
            )
        };
        for tid in gone {
            self.detach(tid);
        }
        let mut n = 0;
        for tid in to_attach {
            let known = {
                let mut g = self.lock();
                let by_tid = g.java_by_tid.remove(&tid);
                g.java_live.get(&tid).cloned().or(by_tid)
            };
            let info = known.unwrap_or_else(|| {
                let comm = crate::os::thread_comm(tid).unwrap_or_default();
                let comm = comm.as_str();
                // Each hint names one thread: taken by the first task of that name (the thread
                // itself, listed since before the session), so a new thread still carrying its
                // parent's name is not taken for it.
                let hint = match self.lock().java_hints.get_mut(comm) {
                    Some(h) => h.take(),
                    None => None,
                };
                match hint {
                    Some(java) => ThreadInfo { os_tid: tid as u32, ..java },
                    None => ThreadInfo {
                        os_tid: tid as u32,
                        java_id: None,
                        name: comm.to_string(),
                        is_java: false,
                        is_virtual: false,
                    },
                }
            });
            let cut = !info.is_java && hpm_resolve::thread_dump::may_be_cut(&info.name);
            if (info.is_java || !java_only) && self.attach(tid, info).is_ok() {
                n += 1;
                if cut {
                    self.lock().maybe_cut.push(tid);
                }
            }
        }
        // The kernel ids the VM gave held for the tasks present now: a thread listed that has
        // ended since must not name a later task given its id.
        self.lock().java_by_tid.clear();
        n
    }

    /// The live threads attached since the last call whose kernel name may be cut (15 bytes),
    /// with that name; empty for a JVM whose threads all have short names.
    pub fn take_maybe_cut(&self) -> Vec<(i32, String)> {
        let mut g = self.lock();
        let Inner { maybe_cut, live, infos, .. } = &mut *g;
        maybe_cut
            .drain(..)
            .filter_map(|tid| live.get(&tid).map(|l| (tid, infos[l.idx as usize].name.clone())))
            .collect()
    }

    /// Names the live VM thread `tid` `name` (its full name, where the kernel's was cut).
    pub fn rename_vm_thread(&self, tid: i32, name: String) {
        let mut g = self.lock();
        let Some(idx) = g.live.get(&tid).map(|l| l.idx) else { return };
        let info = &mut g.infos[idx as usize];
        if !info.is_java && info.name != name {
            info.name = name;
            g.dirty.push(idx);
        }
    }

    /// The session index of the live thread with kernel id `tid`.
    pub fn index_for_tid(&self, tid: i32) -> Option<u32> {
        let g = self.lock();
        g.live.get(&tid).map(|l| l.idx).or_else(|| g.ended_idx.get(&tid).copied())
    }

    /// Timer samplers: the index of the thread with Java id `id`, registering it (named by
    /// `name`) if it started before the agent saw it; `None` for the agent's own threads or
    /// when no session runs.
    pub fn index_for_java_id(&self, id: u64, name: impl FnOnce() -> String) -> Option<u32> {
        let mut g = self.lock();
        if matches!(g.mode, Mode::Off) {
            return None;
        }
        if let Some(&i) = g.by_java_id.get(&id) {
            return (!g.infos[i as usize].name.starts_with("hpm-")).then_some(i);
        }
        let name = name();
        let own = name.starts_with("hpm-");
        let idx = Self::new_index(
            &mut g,
            ThreadInfo { os_tid: 0, java_id: Some(id), is_java: true, name, is_virtual: false },
        )?;
        g.by_java_id.insert(id, idx);
        (!own).then_some(idx)
    }

    /// The session index of the mounted virtual thread of id `id` (a sample's
    /// `Captured::vthread`), listed on first sight (past the bound, one entry for all the others:
    /// [`virtual_index::VirtualIndex`]); `None` when no session runs or its list is full.
    pub fn index_for_virtual(&self, id: u64) -> Option<u32> {
        let mut g = self.lock();
        if matches!(g.mode, Mode::Off) {
            return None;
        }
        let mut index = std::mem::take(&mut g.virtual_threads);
        let idx = index.index(id, |info| Self::new_index(&mut g, info));
        g.virtual_threads = index;
        idx
    }

    /// A virtual thread started (VirtualThreadStart): `name` for the virtual thread of Java id
    /// `id()` when it has one (asked only then, before the lock: a JNI call may wait for a
    /// safepoint).
    pub fn virtual_started(&self, name: String, id: impl FnOnce() -> Option<u64>) {
        self.virtual_live.started();
        if name.is_empty() {
            return;
        }
        if let Some(id) = id() {
            let mut g = self.lock();
            self.virtual_live.set_named(g.virtual_threads.named(id, name));
        }
    }

    /// A virtual thread ended (VirtualThreadEnd). Most are unnamed: the lock is taken, and the
    /// Java id `id()` asked (before it), only while some live virtual thread has a name.
    pub fn virtual_ended(&self, id: impl FnOnce() -> Option<u64>) {
        self.virtual_live.ended();
        if !self.virtual_live.any_named() {
            return;
        }
        if let Some(id) = id() {
            let mut g = self.lock();
            self.virtual_live.set_named(g.virtual_threads.unnamed(id));
        }
    }

    /// Brings `out` (the recording's thread list) up to date with the entries that changed since
    /// the last call.
    /// Whether a thread's name in `out` changed (one listed only now counts: samples of its
    /// index may have been added before its entry existed).
    pub fn sync(&self, out: &mut Vec<ThreadInfo>) -> bool {
        let mut g = self.lock();
        let Inner { infos, dirty, .. } = &mut *g;
        let mut renamed = false;
        for idx in dirty.drain(..) {
            let i = idx as usize;
            if out.len() <= i {
                out.resize(i + 1, ThreadInfo::default());
            }
            renamed |= out[i].name != infos[i].name;
            out[i].clone_from(&infos[i]);
        }
        renamed
    }

    /// Re-arms every live thread's sampling period; returns how many refused.
    pub fn set_period(&self, period: u64) -> usize {
        let g = self.lock();
        self.period.store(period, Ordering::Relaxed);
        g.live.values().filter_map(|l| l.perf.as_ref()).filter(|(_, ev)| ev.set_period(period).is_err()).count()
    }

    pub fn failures(&self) -> AttachFailures {
        self.lock().failures.clone()
    }

    pub fn first_error(&self) -> Option<PerfError> {
        self.lock().first_error.clone()
    }

    /// Partial batches of every live thread (the processor calls this each round).
    pub fn steal_all(&self, mut f: impl FnMut(BatchHandle)) {
        let g = self.lock();
        for slot in g.live.values().filter_map(|l| l.perf.as_ref().map(|p| p.0).or(l.signalled)) {
            if let Some(b) = self.slots[slot as usize].queue.steal() {
                f(b);
            }
        }
    }

    /// A Java thread ended (ThreadEnd, on the thread itself).
    pub fn thread_ended(&self, tid: i32) {
        let mut g = self.lock();
        g.java_live.remove(&tid);
        let ctx = g.mode.ctx();
        if matches!(g.mode, Mode::Perf { .. }) {
            g.ended.insert(tid);
        }
        self.detach_locked(&mut g, tid, ctx.as_deref());
    }

    /// Ends the session's sampling: no more attaching, every group stopped and every slot
    /// retired; the session's sampling context is released.
    pub fn stop_all(&self) {
        let mut g = self.lock();
        let ctx = g.mode.ctx();
        // Detached in the session's mode: drained rings stay readable (`with_rings`).
        let tids: Vec<i32> = g.live.keys().copied().collect();
        for t in tids {
            self.detach_locked(&mut g, t, ctx.as_deref());
        }
        g.mode = Mode::Off;
        g.live.clear();
        g.by_java_id.clear();
        g.java_hints.clear();
        g.java_by_tid.clear();
        g.ended.clear();
    }

    /// (live threads in the session, Java threads known, excluded, slots in use): for the soak
    /// check that nothing grows.
    pub fn sizes(&self) -> (usize, usize, usize, usize) {
        let g = self.lock();
        (g.live.len(), g.java_live.len(), g.excluded.len(), g.next_slot as usize - g.free_slots.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_periodic_scan_lists_the_tasks_when_their_count_changed_and_every_fifth_check() {
        // Unchanged: skipped four times, listed at the fifth check.
        let skipped: Vec<bool> = (0..=QUIET_CHECKS).map(|q| list_again(Some(30), Some(30), q)).collect();
        assert_eq!(skipped, [false, false, false, false, true]);
        assert!(list_again(Some(31), Some(30), 0), "a thread came");
        assert!(list_again(Some(29), Some(30), 0), "a thread went");
        assert!(list_again(None, Some(30), 0), "the count could not be read");
        assert!(list_again(Some(30), None, 0), "never listed");
    }

    #[test]
    fn a_virtual_thread_asks_its_id_only_if_named_and_never_under_the_lock() {
        let t = &Threads::new(0);
        let asked = &std::cell::Cell::new(0);
        let id = move |v: u64| {
            move || {
                asked.set(asked.get() + 1);
                assert!(t.inner.try_lock().is_ok(), "asked with the lock held");
                Some(v)
            }
        };
        t.virtual_started(String::new(), id(1));
        t.virtual_ended(id(1));
        assert_eq!(asked.get(), 0, "no name, no id asked");
        t.virtual_started("task-2".into(), id(2));
        t.virtual_started(String::new(), id(3));
        t.virtual_ended(id(3));
        assert_eq!(asked.get(), 2, "while one is named, every end asks");
        t.virtual_ended(id(2));
        assert!(!t.virtual_live.any_named());
        t.virtual_ended(id(4));
        assert_eq!(asked.get(), 3, "the named one ended: ends ask nothing again");
    }
}
