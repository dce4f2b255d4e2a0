//! Every thread of the process as one of the paper's components (section 3.1.3): the GC, JIT
//! compiler and other VM threads, found by their kernel names (`/proc/self/task/*/comm`,
//! classified by `hpm_resolve::component::thread_component`), and every other thread (the
//! application's) as `[application]`, so that table 5 sets the application against the VM
//! over the same session; the agent's own threads (`hpm-*`) are in none. Each is counted by a
//! group opened with its tid and read by the writer thread every tick. A thread's interval
//! record is written only when its first counter moved since its previous one (its first
//! record is the baseline). The threads are listed again every second (a thread that lives
//! less may be missed), and at most [`MAX_THREADS`] are followed (the others counted).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hpm_profile::analysis::phases_format::{encode_record, MAX_COUNTERS, MAX_RECORD, TAG_INTERVAL};
use hpm_profile::model::VmComponent;

use super::probe::Ids;
use crate::os::TaskDir;
use crate::perf::{CountDef, CountGroup};

/// The components' method names, in the order of their ids ([`VmThreads::new`]'s `methods`).
pub const COMPONENTS: [&str; 4] = ["[GC]", "[JIT compiler]", "[VM]", "[application]"];
/// The index of `[application]` in [`COMPONENTS`].
pub const APPLICATION: usize = 3;
/// Threads followed at most (HotSpot runs a few dozen of its own on a large machine; each
/// followed thread holds one file descriptor per counter, three at most here).
pub const MAX_THREADS: usize = 512;
/// How often the threads are listed again.
pub const RESCAN: Duration = Duration::from_secs(1);

/// Which of [`COMPONENTS`] a thread of this kernel name is: the VM's by name, the agent's own
/// (`hpm-*`) in none (`None`), every other one the application's.
pub fn component_of(comm: &str) -> Option<usize> {
    const VM: [&str; 4] = ["VM Thread", "VM Periodic", "Service Thread", "Monitor Deflati"];
    match hpm_resolve::component::thread_component(comm) {
        Some(VmComponent::Gc) => Some(0),
        Some(VmComponent::JitCompiler) => Some(1),
        // HotSpot's "VM Thread" (VM operations, safepoints), "VM Periodic Task", and its
        // service threads.
        _ if VM.iter().any(|p| comm.starts_with(p)) => Some(2),
        _ if comm.starts_with("hpm-") => None,
        _ => Some(APPLICATION),
    }
}

struct VmThread {
    tid: i32,
    index: u16,
    name: String,
    method: u32,
    component: usize,
    group: CountGroup,
    /// Counter 0 at the previous record; `None` before the first.
    last: Option<u64>,
}

/// One interval record of a VM thread, for the writer: its index, its name, the record.
pub struct Interval<'a> {
    pub index: u16,
    pub name: &'a str,
    pub record: &'a [u8],
}

/// The VM threads followed, owned by the writer thread.
pub struct VmThreads {
    dir: TaskDir,
    defs: Vec<CountDef>,
    /// The method ids of [`COMPONENTS`].
    methods: [u32; COMPONENTS.len()],
    threads: Vec<VmThread>,
    /// Tids listed before that are not followed (another kind of thread, or past the bound).
    others: HashMap<i32, ()>,
    tids: Vec<i32>,
    last_scan: Option<Instant>,
    /// Groups that failed to open or to read.
    pub failures: u64,
    pub records: u64,
    /// Threads not followed because [`MAX_THREADS`] were.
    pub past_bound: u64,
}

impl VmThreads {
    pub fn new(defs: Vec<CountDef>, methods: [u32; COMPONENTS.len()]) -> std::io::Result<VmThreads> {
        Ok(VmThreads {
            dir: TaskDir::open()?,
            defs,
            methods,
            threads: Vec::new(),
            others: HashMap::new(),
            tids: Vec::new(),
            last_scan: None,
            failures: 0,
            records: 0,
            past_bound: 0,
        })
    }

    pub fn followed(&self) -> usize {
        self.threads.len()
    }

    /// Of the threads followed, the application's.
    pub fn application(&self) -> usize {
        self.threads.iter().filter(|t| t.component == APPLICATION).count()
    }

    /// Lists the threads again when [`RESCAN`] went by, reads every followed thread's
    /// counters and gives each interval record to `emit`.
    pub fn tick(&mut self, now: Instant, ids: &Ids, emit: &mut dyn FnMut(Interval<'_>)) {
        if self.last_scan.is_none_or(|t| now.duration_since(t) >= RESCAN) {
            self.last_scan = Some(now);
            self.scan(ids);
        }
        let mut rec = [0u8; MAX_RECORD];
        let mut values = [0u64; MAX_COUNTERS];
        let n = self.defs.len().min(MAX_COUNTERS);
        let mut i = 0;
        while i < self.threads.len() {
            let t = &mut self.threads[i];
            if !t.group.read(&mut values[..n]) {
                // The thread ended (its counters stop reading): no longer followed.
                self.failures += 1;
                self.threads.swap_remove(i);
                continue;
            }
            if t.last != Some(values[0]) {
                t.last = Some(values[0]);
                let len = encode_record(&mut rec, TAG_INTERVAL, t.method, &values[..n]);
                self.records += 1;
                emit(Interval { index: t.index, name: &t.name, record: &rec[..len] });
            }
            i += 1;
        }
    }

    fn scan(&mut self, ids: &Ids) {
        if self.dir.list(&mut self.tids).is_err() {
            return;
        }
        self.tids.sort_unstable();
        let listed = |tid: &i32| self.tids.binary_search(tid).is_ok();
        self.threads.retain(|t| listed(&t.tid));
        // The threads followed before this scan; those after are new.
        let known = self.threads.len();
        self.others.retain(|tid, _| listed(tid));
        for &tid in &self.tids {
            if self.others.contains_key(&tid) || self.threads.iter().any(|t| t.tid == tid) {
                continue;
            }
            self.others.insert(tid, ());
            if self.threads.len() >= MAX_THREADS {
                self.past_bound += 1;
                continue;
            }
            let Some(name) = crate::os::thread_comm(tid) else { continue };
            let Some(component) = component_of(&name) else { continue };
            let Ok(group) = CountGroup::open(&self.defs, tid, false) else {
                self.failures += 1;
                continue;
            };
            let Some(index) = ids.thread() else { continue };
            self.others.remove(&tid);
            self.threads.push(VmThread {
                tid,
                index,
                name,
                method: self.methods[component],
                component,
                group,
                last: None,
            });
        }
        // The kernel cuts names at 15 bytes: those of the threads just followed that may be
        // cut are named whole from the VM's structures, as the profile's threads are.
        let cut: Vec<(i32, String)> = self.threads[known..]
            .iter()
            .filter(|t| hpm_resolve::thread_dump::may_be_cut(&t.name))
            .map(|t| (t.tid, t.name.clone()))
            .collect();
        for (tid, name) in crate::threads::full_names::from_vm_structures(&cut) {
            if let Some(t) = self.threads[known..].iter_mut().find(|t| t.tid == tid) {
                t.name = name;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hotspot_threads_are_classified_by_their_kernel_names() {
        assert_eq!(component_of("G1 Conc#0"), Some(0));
        assert_eq!(component_of("GC Thread#3"), Some(0));
        assert_eq!(component_of("C2 CompilerThre"), Some(1));
        assert_eq!(component_of("C1 CompilerThre"), Some(1));
        assert_eq!(component_of("VM Thread"), Some(2));
        assert_eq!(component_of("VM Periodic Tas"), Some(2));
        assert_eq!(component_of("Service Thread"), Some(2));
        assert_eq!(component_of("main"), Some(APPLICATION));
        assert_eq!(component_of("java"), Some(APPLICATION));
        assert_eq!(component_of("pool-1-thread-1"), Some(APPLICATION));
        assert_eq!(component_of("hpm-phases"), None);
        assert_eq!(component_of("hpm-sampler"), None);
        assert_eq!(COMPONENTS[APPLICATION], "[application]");
    }

    #[test]
    fn a_vm_thread_of_this_process_is_found_and_measured() {
        // A thread named as HotSpot's GC workers, spinning until told to stop.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let h = std::thread::Builder::new()
            .name("GC Thread#9".into())
            .spawn(move || {
                ready_tx.send(()).unwrap();
                let mut x = 0u64;
                while !s.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            })
            .unwrap();
        ready_rx.recv().unwrap();
        let ids = Ids::default();
        let defs = crate::perf::SOFTWARE_COUNTS.to_vec();
        let Ok(mut vm) = VmThreads::new(defs, [0, 1, 2, 3]) else { return };
        let mut seen = Vec::new();
        vm.tick(Instant::now(), &ids, &mut |i| seen.push((i.name.to_string(), i.record[0], i.record[1])));
        // Only the GC-named thread here: the test harness's threads are the application's.
        seen.retain(|s| s.0 == "GC Thread#9");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap();
        if vm.failures > 0 && seen.is_empty() {
            return; // perf_event_open refused here (no perf in this sandbox): nothing to check
        }
        assert_eq!(vm.followed() - vm.application(), 1, "{seen:?}");
        assert_eq!(seen, vec![("GC Thread#9".to_string(), TAG_INTERVAL | 3, 0)]);
    }
}
