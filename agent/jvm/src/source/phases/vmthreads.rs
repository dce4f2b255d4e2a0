//! The VM's own threads as the paper's components (section 3.1.3): the process's GC, JIT
//! compiler and other VM threads, found by their kernel names (`/proc/self/task/*/comm`,
//! classified by `hpm_resolve::component::thread_component`), each counted by a group opened
//! with its tid and read by the writer thread every tick. A thread's interval record is
//! written only when its first counter moved since its previous one (its first record is the
//! baseline). The threads are listed again every second, and at most [`MAX_VM_THREADS`] are
//! followed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hpm_profile::analysis::phases_format::{encode_record, MAX_COUNTERS, MAX_RECORD, TAG_INTERVAL};
use hpm_profile::model::VmComponent;

use super::probe::Ids;
use crate::os::TaskDir;
use crate::perf::{CountDef, CountGroup};

/// The components' method names, in the order of their ids ([`VmThreads::new`]'s `methods`).
pub const COMPONENTS: [&str; 3] = ["[GC]", "[JIT compiler]", "[VM]"];
/// VM threads followed at most (HotSpot runs a few dozen on a large machine).
pub const MAX_VM_THREADS: usize = 256;
/// How often the threads are listed again.
pub const RESCAN: Duration = Duration::from_secs(1);

/// Which of [`COMPONENTS`] a thread of this kernel name is, `None` for any other thread.
pub fn component_of(comm: &str) -> Option<usize> {
    match hpm_resolve::component::thread_component(comm) {
        Some(VmComponent::Gc) => Some(0),
        Some(VmComponent::JitCompiler) => Some(1),
        // HotSpot's "VM Thread" (VM operations, safepoints) and "VM Periodic Task".
        _ if comm.starts_with("VM Thread") || comm.starts_with("VM Periodic") => Some(2),
        _ => None,
    }
}

struct VmThread {
    tid: i32,
    index: u16,
    name: String,
    method: u32,
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
    methods: [u32; 3],
    threads: Vec<VmThread>,
    /// Tids listed before that are not followed (another kind of thread, or past the bound).
    others: HashMap<i32, ()>,
    tids: Vec<i32>,
    last_scan: Option<Instant>,
    /// Groups that failed to open or to read.
    pub failures: u64,
    pub records: u64,
}

impl VmThreads {
    pub fn new(defs: Vec<CountDef>, methods: [u32; 3]) -> std::io::Result<VmThreads> {
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
        })
    }

    pub fn followed(&self) -> usize {
        self.threads.len()
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
        self.others.retain(|tid, _| listed(tid));
        for &tid in &self.tids {
            if self.others.contains_key(&tid) || self.threads.iter().any(|t| t.tid == tid) {
                continue;
            }
            self.others.insert(tid, ());
            if self.threads.len() >= MAX_VM_THREADS {
                continue;
            }
            let Ok(comm) = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")) else { continue };
            let name = comm.trim_end().to_string();
            let Some(component) = component_of(&name) else { continue };
            let Ok(group) = CountGroup::open(&self.defs, tid, false) else {
                self.failures += 1;
                continue;
            };
            let Some(index) = ids.thread() else { continue };
            self.others.remove(&tid);
            self.threads.push(VmThread { tid, index, name, method: self.methods[component], group, last: None });
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
        assert_eq!(component_of("main"), None);
        assert_eq!(component_of("hpm-phases"), None);
        assert_eq!(COMPONENTS.len(), 3);
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
        let Ok(mut vm) = VmThreads::new(defs, [0, 1, 2]) else { return };
        let mut seen = Vec::new();
        vm.tick(Instant::now(), &ids, &mut |i| seen.push((i.name.to_string(), i.record[0], i.record[1])));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap();
        if vm.failures > 0 && seen.is_empty() {
            return; // perf_event_open refused here (no perf in this sandbox): nothing to check
        }
        assert_eq!(vm.followed(), 1, "{seen:?}");
        assert_eq!(seen, vec![("GC Thread#9".to_string(), TAG_INTERVAL | 3, 0)]);
    }
}
