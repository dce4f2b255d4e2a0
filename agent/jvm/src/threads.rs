//! Profiled threads: a fixed pool of per-thread slots the signal handler can always read, the
//! fd -> slot table it looks them up in, and the registry that attaches perf groups to threads
//! (Java threads from JVMTI ThreadStart, VM threads from scanning /proc/self/task) and detaches
//! them at thread end, so no descriptor outlives its thread.

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use hpm_core::batch::{BatchQueues, ThreadQueue};
use hpm_core::capture::Captured;
use hpm_core::model::ThreadInfo;

use crate::perf::{PerfError, PerfSpec, ThreadEvents};

mod slot;
pub use slot::Slot;

/// Threads alive at once that can be profiled; more are counted and skipped.
pub const MAX_SLOTS: usize = 4096;
/// File descriptors the handler can map to a slot.
pub const MAX_FD: usize = 1 << 16;

/// Per-reason counts of threads that could not be profiled.
#[derive(Default, Debug, Clone)]
pub struct AttachFailures {
    pub by_reason: Vec<(String, u64)>,
}

impl AttachFailures {
    fn add(&mut self, reason: String) {
        hpm_core::model::count_reason(&mut self.by_reason, &reason, 1);
    }
}

struct Live {
    slot: u32,
    events: ThreadEvents,
}

#[derive(Default)]
struct Inner {
    /// Every thread ever seen; the index is the recording's ThreadIdx.
    threads: Vec<ThreadInfo>,
    generation: u64,
    live: HashMap<i32, Live>,
    free_slots: Vec<u32>,
    next_slot: u32,
    /// Threads never to profile (the agent's own).
    excluded: HashSet<i32>,
    /// Java threads past ThreadEnd whose task may still be listed in /proc for a moment: the
    /// scan must not take them for new VM threads (their descriptors would outlive them until
    /// the next scan). Pruned by the scan once the task is gone.
    ended: HashSet<i32>,
    /// Without perf (timer samplers): thread index by kernel id and by Java id.
    by_tid: HashMap<i32, u32>,
    by_java_id: HashMap<u64, u32>,
    failures: AttachFailures,
    first_error: Option<PerfError>,
    /// The running session's perf spec and whether threads get perf groups (`None`: no session
    /// is sampling, attach only remembers Java threads).
    config: Option<(PerfSpec, bool)>,
    /// Live Java threads by kernel id (from ThreadStart), so a later session's /proc scan
    /// attaches them under their Java identity.
    java_live: HashMap<i32, ThreadInfo>,
    /// Java threads that started before the session (a late attach), by their OS name (the
    /// Java name cut to 15 bytes, as HotSpot names its threads); `None` if the name is shared.
    java_hints: HashMap<String, Option<ThreadInfo>>,
}

pub struct Threads {
    /// The timer sampler's batches (it is one thread filling samples of many).
    pub timer_queue: ThreadQueue<Captured>,
    /// Current sampling period (changes with interval=auto); new threads start with it.
    period: AtomicU64,
    pub slots: Box<[Slot]>,
    fd_table: Box<[AtomicU32]>,
    inner: Mutex<Inner>,
    pub signal: i32,
}

impl Threads {
    pub fn new(signal: i32) -> Threads {
        Threads {
            timer_queue: ThreadQueue::default(),
            period: AtomicU64::new(0),
            slots: (0..MAX_SLOTS).map(|_| Slot::new()).collect(),
            fd_table: (0..MAX_FD).map(|_| AtomicU32::new(0)).collect(),
            inner: Mutex::new(Inner::default()),
            signal,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (each step is atomic w.r.t.
        // the maps), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Signal-handler lookup: the slot whose perf group leader is `fd`.
    pub fn slot_for_fd(&self, fd: i32) -> Option<&Slot> {
        let i = self.fd_table.get(usize::try_from(fd).ok()?)?.load(Ordering::Acquire);
        if i == 0 {
            None
        } else {
            self.slots.get(i as usize - 1)
        }
    }

    /// Sets what attaching means for the session starting (`Some((spec, perf))`: perf groups
    /// when `perf`, for the timer samplers only each thread's identity) or that none is
    /// running (`None`).
    pub fn configure(&self, config: Option<(PerfSpec, bool)>) {
        let mut g = self.lock();
        if let Some((spec, _)) = &config {
            self.period.store(spec.period, Ordering::Relaxed);
        }
        g.config = config;
    }

    /// Java threads the VM lists now (names and Java ids, no kernel ids): the /proc scan
    /// matches them by OS name so they are profiled under their Java identity.
    pub fn hint_java_threads(&self, infos: Vec<ThreadInfo>) {
        let mut g = self.lock();
        g.java_hints.clear();
        for info in infos {
            let mut end = info.name.len().min(15);
            while !info.name.is_char_boundary(end) {
                end -= 1;
            }
            let key = info.name[..end].to_string();
            let shared = g.java_hints.contains_key(&key);
            g.java_hints.insert(key, (!shared).then_some(info));
        }
    }

    pub fn reset_failures(&self) {
        let mut g = self.lock();
        g.failures = AttachFailures::default();
        g.first_error = None;
    }

    pub fn exclude(&self, tid: i32) {
        self.lock().excluded.insert(tid);
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
        let Some((spec, perf)) = g.config.clone() else { return Ok(()) };
        if !perf {
            let idx = match g.by_tid.get(&tid) {
                Some(&i) => {
                    g.threads[i as usize] = info.clone();
                    i
                }
                None => {
                    g.threads.push(info.clone());
                    (g.threads.len() - 1) as u32
                }
            };
            g.by_tid.insert(tid, idx);
            if let Some(j) = info.java_id {
                g.by_java_id.insert(j, idx);
            }
            g.generation += 1;
            return Ok(());
        }
        if let Some(live) = g.live.get(&tid) {
            let idx = self.slots[live.slot as usize].thread_idx.load(Ordering::Relaxed) as usize;
            if info.is_java {
                g.threads[idx] = info;
                g.generation += 1;
            }
            return Ok(());
        }
        let slot = match g.free_slots.pop() {
            Some(s) => s,
            None if (g.next_slot as usize) < MAX_SLOTS => {
                g.next_slot += 1;
                g.next_slot - 1
            }
            None => {
                g.failures.add(format!("more than {MAX_SLOTS} live threads"));
                return Ok(());
            }
        };
        let mut spec = spec;
        spec.period = self.period.load(Ordering::Relaxed);
        let events = match ThreadEvents::open(&spec, tid, self.signal) {
            Ok(e) => e,
            Err(e) if e.errno == libc::ESRCH => {
                // The thread ended between being listed and being attached: nothing was lost.
                g.free_slots.push(slot);
                return Ok(());
            }
            Err(e) => {
                g.free_slots.push(slot);
                g.failures.add(e.to_string().split(" for thread").next().unwrap_or("").to_string() + &errno_suffix(&e));
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
        let idx = g.threads.len() as u32;
        g.threads.push(info);
        g.generation += 1;
        let s = &self.slots[slot as usize];
        s.tid.store(tid, Ordering::Relaxed);
        s.thread_idx.store(idx, Ordering::Relaxed);
        s.set_ring(Some(events.ring_parts()));
        self.fd_table[fd as usize].store(slot + 1, Ordering::Release);
        if let Err(e) = events.enable() {
            self.fd_table[fd as usize].store(0, Ordering::Release);
            s.set_ring(None);
            g.free_slots.push(slot);
            return Err(e);
        }
        g.live.insert(tid, Live { slot, events });
        Ok(())
    }

    /// Stops profiling `tid`: the group is disabled and closed, and the thread's partial batch
    /// is handed to the processor.
    pub fn detach(&self, tid: i32, queues: &BatchQueues<Captured>) {
        let mut g = self.lock();
        g.by_tid.remove(&tid);
        let Some(live) = g.live.remove(&tid) else { return };
        live.events.disable();
        self.fd_table[live.events.leader.as_raw_fd() as usize].store(0, Ordering::Release);
        let s = &self.slots[live.slot as usize];
        s.set_ring(None);
        // A handler that found the ring before it was cleared finishes before it is unmapped
        // (handlers never block, so this wait is short).
        while s.busy.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
        s.tid.store(0, Ordering::Relaxed);
        if let Some(b) = s.queue.steal() {
            if b.len > 0 {
                queues.submit(b);
            } else {
                queues.recycle(b);
            }
        }
        drop(live.events);
        g.free_slots.push(live.slot);
    }

    /// Attaches threads of the process not yet profiled (VM threads: GC workers, compiler
    /// threads) and detaches threads that are gone. Returns how many were attached. Under a
    /// timer sampler (which sees Java threads only) it registers the Java threads that started
    /// before the session, so their samples can be told apart by kernel id.
    pub fn scan(&self, queues: &BatchQueues<Captured>) -> usize {
        let java_only = match self.lock().config {
            None => return 0,
            Some((_, perf)) => !perf,
        };
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return 0 };
        let present: HashSet<i32> = dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
        let (to_attach, gone): (Vec<i32>, Vec<i32>) = {
            let mut g = self.lock();
            g.ended.retain(|t| present.contains(t));
            (
                present.iter().copied().filter(|t| !g.live.contains_key(t) && !g.excluded.contains(t)).collect(),
                g.live.keys().copied().filter(|t| !present.contains(t)).collect(),
            )
        };
        for tid in gone {
            self.detach(tid, queues);
        }
        let mut n = 0;
        for tid in to_attach {
            let known = self.lock().java_live.get(&tid).cloned();
            let info = known.unwrap_or_else(|| {
                let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap_or_default();
                let comm = comm.trim_end();
                match self.lock().java_hints.get(comm).cloned().flatten() {
                    Some(java) => ThreadInfo { os_tid: tid as u32, ..java },
                    None => ThreadInfo { os_tid: tid as u32, java_id: None, name: comm.to_string(), is_java: false },
                }
            });
            if (info.is_java || !java_only) && self.attach(tid, info).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Timer samplers: the index of the live thread with kernel id `tid`.
    pub fn index_for_tid(&self, tid: i32) -> Option<u32> {
        self.lock().by_tid.get(&tid).copied()
    }

    /// Timer samplers: the index of the thread with Java id `id`, registering it (named by
    /// `name`) if it started before the agent saw it; `None` for the agent's own threads.
    pub fn index_for_java_id(&self, id: u64, name: impl FnOnce() -> String) -> Option<u32> {
        let mut g = self.lock();
        if let Some(&i) = g.by_java_id.get(&id) {
            return (!g.threads[i as usize].name.starts_with("hpm-")).then_some(i);
        }
        let name = name();
        let idx = g.threads.len() as u32;
        g.threads.push(ThreadInfo { os_tid: 0, java_id: Some(id), is_java: true, name });
        g.by_java_id.insert(id, idx);
        g.generation += 1;
        (!g.threads[idx as usize].name.starts_with("hpm-")).then_some(idx)
    }

    /// Copies the thread list into `out` if it changed since `seen_generation`.
    pub fn sync_threads(&self, out: &mut Vec<ThreadInfo>, seen_generation: &mut u64) {
        let g = self.lock();
        if g.generation != *seen_generation {
            out.clone_from(&g.threads);
            *seen_generation = g.generation;
        }
    }

    /// Re-arms every live thread's sampling period; returns how many refused.
    pub fn set_period(&self, period: u64) -> usize {
        let g = self.lock();
        self.period.store(period, Ordering::Relaxed);
        g.live.values().filter(|l| l.events.set_period(period).is_err()).count()
    }

    pub fn failures(&self) -> AttachFailures {
        self.lock().failures.clone()
    }

    pub fn first_error(&self) -> Option<PerfError> {
        self.lock().first_error.clone()
    }

    /// Partial batches of every live thread (the processor calls this each round).
    pub fn steal_all(&self, mut f: impl FnMut(Box<hpm_core::batch::Batch<Captured>>)) {
        let g = self.lock();
        for live in g.live.values() {
            if let Some(b) = self.slots[live.slot as usize].queue.steal() {
                f(b);
            }
        }
        if let Some(b) = self.timer_queue.steal() {
            f(b);
        }
    }

    /// A Java thread ended (ThreadEnd, on the thread itself).
    pub fn thread_ended(&self, tid: i32, queues: &BatchQueues<Captured>) {
        {
            let mut g = self.lock();
            g.java_live.remove(&tid);
            g.ended.insert(tid);
        }
        self.detach(tid, queues);
    }

    /// Ends the session's sampling: no more attaching, every group stopped.
    pub fn stop_all(&self, queues: &BatchQueues<Captured>) {
        let tids: Vec<i32> = {
            let mut g = self.lock();
            g.config = None;
            g.by_tid.clear();
            g.java_hints.clear();
            g.live.keys().copied().collect()
        };
        for t in tids {
            self.detach(t, queues);
        }
    }
}

fn errno_suffix(e: &PerfError) -> String {
    format!(" ({})", std::io::Error::from_raw_os_error(e.errno))
}
