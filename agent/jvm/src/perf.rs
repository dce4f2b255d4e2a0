//! The one module that calls perf_event_open, mmap and the perf ioctls. Per thread: a group
//! whose leader is the sampling event (ring buffer, overflow signal sent to that very thread)
//! and whose members are the counting events read with every sample.

use std::fmt;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::options::{self, EventDef, Kernel, Options};
use hpm_capture::perf_record::{Layout, MAX_KERNEL_FRAMES};
use hpm_profile::model::{EventInfo, KernelMode, PeriodUnit};
use perf_event_open_sys as sys;

/// Data pages of each thread's ring (plus one metadata page). Small on purpose: the signal
/// handler empties it at every overflow, and locked perf memory is limited per user.
pub const RING_DATA_PAGES: usize = 2;

#[derive(Clone, Debug)]
pub struct PerfSpec {
    pub event: EventDef,
    pub period: u64,
    pub counters: Vec<EventDef>,
    /// Per counter: the period of its own overflow samples (a counter that samples itself,
    /// `EventDef::own_sample_period`: the overflow signals its thread, whose handler reads the
    /// group and walks the stack there), or 0 for a counter read with the leader's samples
    /// only (interval-attributed: clocks, and every counter of `sampler=chain`).
    pub counter_periods: Vec<u64>,
    /// Sampled: kernel mode too, with the kernel call chain; otherwise user mode only.
    pub kernel: KernelMode,
    /// Kernel frames asked for per sample: [`MAX_KERNEL_FRAMES`], or less where the kernel's
    /// `perf_event_max_stack` is lower (more is refused with EOVERFLOW).
    pub max_stack: u16,
    pub layout: Layout,
    /// Test hook (`HPM_TEST_PERF_ERRNO`): make perf_event_open fail with this errno.
    pub inject_errno: Option<i32>,
    /// Overflow signals to the sampled thread (the signal sampler); without them the rings are
    /// drained by the processor (`sampler=chain`).
    pub signal: bool,
    /// Data pages of each thread's ring.
    pub ring_pages: usize,
    /// `sampler=chain`'s anchor event beside the group: (user stack bytes, period).
    pub anchor: Option<(u32, u64)>,
}

/// `sampler=chain`: user stack bytes copied with each sample. 512 bytes hold the leaf's frame
/// and, with C2's compact frames, the return addresses of the next few callers.
pub const CHAIN_STACK: u32 = 512;
/// `sampler=chain`: the anchor event copies this much stack (a full walk of most Java stacks,
/// the kernel stops at the stack's end) once every [`ANCHOR_EVERY`] periods of the clock.
pub const ANCHOR_STACK: u32 = 16 << 10;
pub const ANCHOR_EVERY: u64 = 16;
/// ... and at most this far apart (every other period at 10 ms).
pub const ANCHOR_MAX_NS: u64 = 20_000_000;
/// Processor rounds' length the chain rings must hold samples for (with a margin for a late
/// round): see `ring_pages_for`.
const CHAIN_DRAIN_NS: u64 = 100_000_000;

/// The tests' `HPM_TEST_PERF_ERRNO`: an errno every perf_event_open of the process fails with.
/// Read once, at the first session (the environment is not read again from the JVM's threads,
/// whose native libraries may `setenv`).
fn injected_errno() -> Option<i32> {
    static ERRNO: std::sync::OnceLock<Option<i32>> = std::sync::OnceLock::new();
    *ERRNO.get_or_init(|| std::env::var("HPM_TEST_PERF_ERRNO").ok().and_then(|v| v.parse().ok()))
}

impl PerfSpec {
    pub fn new(event: EventDef, period: u64, counters: Vec<EventDef>, kernel: KernelMode) -> PerfSpec {
        let mut layout = Layout::standard(!counters.is_empty());
        match kernel {
            KernelMode::Sampled => layout = layout.with_kernel_chain(),
            // The clock's own count says how many periods went by in the kernel.
            KernelMode::Counted => layout = layout.with_read(),
            KernelMode::Excluded => {}
        }
        if event.type_ == crate::options::PERF_TYPE_SOFTWARE && !event.is_clock {
            layout = layout.without_period();
        }
        if event.memory {
            layout = layout.with_memory_sample();
        }
        if event.probe.is_some() {
            layout = layout.with_intr_regs();
        }
        // Only a sampled kernel has a chain to bound (the sysctl is read for nothing otherwise).
        let limit = match kernel {
            KernelMode::Sampled => std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .unwrap_or(MAX_KERNEL_FRAMES),
            _ => MAX_KERNEL_FRAMES,
        };
        let counter_periods = counters.iter().map(|c| c.own_sample_period().unwrap_or(0)).collect();
        PerfSpec {
            event,
            period,
            counters,
            counter_periods,
            kernel,
            max_stack: limit.clamp(1, MAX_KERNEL_FRAMES) as u16,
            layout,
            inject_errno: injected_errno(),
            signal: true,
            ring_pages: RING_DATA_PAGES,
            anchor: None,
        }
    }

    /// `sampler=chain`: each sample also carries [`CHAIN_STACK`] bytes of the user stack; no
    /// signal: the processor drains rings sized for [`CHAIN_DRAIN_NS`] of samples; an anchor
    /// event (clock events only) copies [`ANCHOR_STACK`] bytes every [`ANCHOR_EVERY`] periods.
    pub fn for_chain(mut self) -> PerfSpec {
        self.layout = self.layout.with_user_stack(CHAIN_STACK);
        self.signal = false;
        // No signal: a counter's overflow would be read long after, where the thread went on.
        self.counter_periods.fill(0);
        let record = 256 + u64::from(CHAIN_STACK) + 16 * self.counters.len() as u64;
        // A count-based event: assume up to one sample per 100 us.
        let per_drain = if self.event.is_clock { CHAIN_DRAIN_NS / self.period.max(1) } else { 2_000 };
        self.ring_pages = ring_pages_for(per_drain.saturating_mul(record));
        // At long intervals an anchor every 16 periods is too rare for a session's tree: at
        // most ANCHOR_MAX_NS apart.
        self.anchor = self
            .event
            .is_clock
            .then(|| (ANCHOR_STACK, self.period.saturating_mul(ANCHOR_EVERY).min(ANCHOR_MAX_NS.max(self.period))));
        self
    }

    /// The anchor event's records: the group's without the group's values (it is alone), with
    /// its larger stack copy.
    pub fn anchor_layout(&self) -> Option<Layout> {
        let (bytes, _) = self.anchor?;
        let mut l = self.layout.with_user_stack(bytes);
        l.sample_type &= !hpm_capture::perf_record::SAMPLE_READ;
        Some(l)
    }
}

/// Data pages (a power of two, 2 to 64) holding `bytes` of records.
fn ring_pages_for(bytes: u64) -> usize {
    (bytes.div_ceil(4096) as usize).next_power_of_two().clamp(2, 64)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfError {
    pub what: String,
    pub errno: i32,
}

pub fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

impl PerfError {
    /// The event does not exist on this machine (no PMU, or not this PMU's event).
    pub fn is_unsupported(&self) -> bool {
        matches!(self.errno, libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL)
    }

    pub fn is_permission(&self) -> bool {
        matches!(self.errno, libc::EACCES | libc::EPERM)
    }

    /// What failed and why, without the thread: a drop reason shared by every thread it hit.
    pub fn reason(&self) -> String {
        let what = self.what.split(" for thread").next().unwrap_or("");
        format!("{what} ({})", std::io::Error::from_raw_os_error(self.errno))
    }
}

impl fmt::Display for PerfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let os = std::io::Error::from_raw_os_error(self.errno);
        match self.errno {
            libc::EACCES | libc::EPERM if paranoid_level().is_some_and(|l| l <= 2) => write!(
                f,
                "{} was denied ({os}) although kernel.perf_event_paranoid is {}; a container or seccomp \
                 policy is blocking perf_event_open (allow it, e.g. docker --cap-add PERFMON, or run on the host)",
                self.what,
                paranoid_level().unwrap_or(2)
            ),
            libc::EACCES | libc::EPERM => {
                let level = paranoid_level().map_or("unknown".to_string(), |l| l.to_string());
                write!(
                    f,
                    "{} was denied ({os}); kernel.perf_event_paranoid is {level} and hpm needs it at 2 or lower \
                     (run `sudo sysctl kernel.perf_event_paranoid=2`), or run as root / with CAP_PERFMON",
                    self.what
                )
            }
            libc::EMFILE | libc::ENFILE => {
                write!(f, "{} failed ({os}): too many open files; raise the limit with `ulimit -n`", self.what)
            }
            libc::ENOSYS => {
                write!(f, "{} failed ({os}): this kernel or container does not offer perf_event_open", self.what)
            }
            _ => write!(f, "{} failed ({os})", self.what),
        }
    }
}

// fcntl commands for per-thread signal routing (linux/fcntl.h); not exported by the libc crate.
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
struct FOwnerEx {
    type_: libc::c_int,
    pid: libc::pid_t,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Attributes shared by the leader and the members. Every member of a group must use the
/// leader's clock, or the kernel refuses it (EINVAL).
fn base_attr(ev: &EventDef, spec: &PerfSpec) -> sys::bindings::perf_event_attr {
    let mut a = sys::bindings::perf_event_attr {
        type_: ev.type_,
        size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
        config: ev.config,
        read_format: spec.layout.read_format,
        __bindgen_anon_3: sys::bindings::perf_event_attr__bindgen_ty_3 { config1: ev.config1 },
        __bindgen_anon_4: sys::bindings::perf_event_attr__bindgen_ty_4 { config2: ev.config2 },
        ..Default::default()
    };
    a.set_exclude_hv(1);
    // Kernel mode needs perf_event_paranoid <= 1, CAP_PERFMON or root (see `choose_events`).
    a.set_exclude_kernel(u64::from(spec.kernel != KernelMode::Sampled));
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    a
}

/// The sampling leader: starts disabled, wakes (signals) at every sample.
fn leader_attr(spec: &PerfSpec) -> sys::bindings::perf_event_attr {
    let mut attr = base_attr(&spec.event, spec);
    attr.__bindgen_anon_1.sample_period = spec.period;
    attr.sample_type = spec.layout.sample_type;
    attr.sample_regs_user = spec.layout.regs_mask;
    attr.sample_regs_intr = spec.layout.intr_mask;
    attr.sample_stack_user = spec.layout.stack_user;
    // The signal sampler wakes (signals) at every sample; drained rings wake no one.
    attr.__bindgen_anon_2.wakeup_events = u32::from(spec.signal);
    attr.set_disabled(1);
    if spec.kernel == KernelMode::Sampled {
        // The user part of the chain is the Java stack, walked in the handler.
        attr.set_exclude_callchain_user(1);
        attr.sample_max_stack = spec.max_stack;
    }
    // AMD's IBS is precise by construction (its PMU takes no precise_ip); a precise memory
    // sample on Intel needs PEBS, as precise as the PMU allows (3 on recent cores).
    if spec.event.memory && spec.event.sysfs.is_some_and(|(pmu, _)| pmu == "cpu") {
        attr.set_precise_ip(3);
    } else if spec.event.hardware && !spec.event.memory {
        attr.set_precise_ip(2);
    }
    attr
}

/// Resolves an event the kernel's PMU driver defines in sysfs (`mem-loads`: the `cpu` PMU's
/// `events/mem-loads` with its `format/` terms; `ibs-op`: the `ibs_op` PMU's own type). `Err`
/// says what is missing, for the one line of the fallback.
pub fn resolve_sysfs(ev: EventDef) -> Result<EventDef, String> {
    let Some((pmu, name)) = ev.sysfs else { return Ok(ev) };
    let dir = std::path::Path::new("/sys/bus/event_source/devices").join(pmu);
    let read = |p: std::path::PathBuf| std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()));
    let type_: u32 =
        read(dir.join("type"))?.trim().parse().map_err(|_| format!("{}/type is not a number", dir.display()))?;
    let (config, config1) = if name.is_empty() {
        (0, 0)
    } else {
        let desc = read(dir.join("events").join(name))?;
        crate::options::sysfs_config(&desc, ev.config1, |term| read(dir.join("format").join(term)).ok())
            .map_err(|e| format!("{}/events/{name}: {e}", dir.display()))?
    };
    Ok(EventDef { type_, config, config1, ..ev })
}

/// Resolves a uprobe event ([`EventDef::probe`]): libjvm.so's path (kept for the life of the
/// process: `config1` points at it) and the file offset of the first of its symbols found in
/// the library's symbol table. `Err` says what is missing.
pub fn resolve_probe(ev: EventDef) -> Result<EventDef, String> {
    let Some(symbols) = ev.probe else { return Ok(ev) };
    static PATH: std::sync::OnceLock<Option<std::ffi::CString>> = std::sync::OnceLock::new();
    let path = PATH
        .get_or_init(|| crate::vmstructs::libjvm_file().and_then(|p| std::ffi::CString::new(p).ok()))
        .as_ref()
        .ok_or("libjvm.so's path is unknown")?;
    let file = std::path::Path::new(path.to_str().map_err(|_| "libjvm.so's path is not UTF-8")?);
    let offset = symbols.iter().find_map(|s| hpm_resolve::symbols::symbol_file_offset(file, s)).ok_or_else(|| {
        format!("{} has none of {} in its symbol table (a stripped JVM)", file.display(), symbols.join(", "))
    })?;
    Ok(EventDef { config1: path.as_ptr() as u64, config2: offset, ..ev })
}

/// Opens the leader and the counting members for `tid`.
/// An event that failed to open, and why (boxed: an `EventDef` is large).
type OpenError = Box<(EventDef, PerfError)>;

fn open_group(spec: &PerfSpec, tid: i32) -> Result<(OwnedFd, Vec<OwnedFd>), OpenError> {
    let mut attr = leader_attr(spec);
    let leader = match open(&mut attr, tid, -1, spec, spec.event.name) {
        Err(e) if spec.event.memory && attr.precise_ip() > 2 && matches!(e.errno, libc::EOPNOTSUPP | libc::EINVAL) => {
            // An older PEBS: precise_ip 2 still samples the instruction itself.
            attr.set_precise_ip(2);
            open(&mut attr, tid, -1, spec, spec.event.name)
        }
        Err(e) if attr.precise_ip() > 0 && !spec.event.memory && matches!(e.errno, libc::EOPNOTSUPP | libc::EINVAL) => {
            // Not every PMU event supports precise sampling: retry without it.
            attr.set_precise_ip(0);
            open(&mut attr, tid, -1, spec, spec.event.name)
        }
        r => r,
    }
    .map_err(|e| Box::new((spec.event, e)))?;
    let mut members = Vec::with_capacity(spec.counters.len());
    for (i, c) in spec.counters.iter().enumerate() {
        let mut m = base_attr(c, spec);
        if let Some(&p) = spec.counter_periods.get(i).filter(|&&p| p > 0) {
            // It samples itself: its overflow notifies the thread (routed in `open`). No
            // record: it has no ring, and the handler reads the group's values itself.
            // (PERF_SAMPLE_PERIOD would make a software event overflow at every occurrence.)
            m.__bindgen_anon_1.sample_period = p;
            m.sample_type = 0;
        }
        members.push(open(&mut m, tid, leader.as_raw_fd(), spec, c.name).map_err(|e| Box::new((*c, e)))?);
    }
    Ok((leader, members))
}

fn open(
    attr: &mut sys::bindings::perf_event_attr,
    tid: i32,
    group: RawFd,
    spec: &PerfSpec,
    name: &str,
) -> Result<OwnedFd, PerfError> {
    let what = format!("perf_event_open({name}) for thread {tid}");
    if let Some(e) = spec.inject_errno {
        return Err(PerfError { what, errno: e });
    }
    // SAFETY: `attr` is a fully initialised perf_event_attr whose `size` field matches the struct.
    let fd =
        unsafe { sys::perf_event_open(attr, tid, -1, group, sys::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong) };
    if fd < 0 {
        return Err(PerfError { what, errno: errno() });
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One mapping of a perf ring: a metadata page and `pages` data pages; unmapped on drop.
struct MappedRing {
    ptr: *mut u8,
    len: usize,
    page: usize,
}

impl MappedRing {
    fn map(fd: &OwnedFd, pages: usize, tid: i32) -> Result<MappedRing, PerfError> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = page * (1 + pages);
        // SAFETY: mapping a perf fd with a length of 1 + 2^n pages is the documented ring setup.
        let ring = unsafe {
            libc::mmap(ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        if ring == libc::MAP_FAILED {
            let e = errno();
            let hint =
                if e == libc::EPERM { " (locked perf memory exhausted: raise kernel.perf_event_mlock_kb)" } else { "" };
            return Err(PerfError { what: format!("mmap of the perf ring for thread {tid}{hint}"), errno: e });
        }
        Ok(MappedRing { ptr: ring.cast(), len, page })
    }

    fn parts(&self) -> RingPtr {
        RingPtr {
            meta: self.ptr.cast(),
            // SAFETY: the mapping is one metadata page and then the data pages.
            data: unsafe { self.ptr.add(self.page) },
            size: self.len - self.page,
        }
    }
}

impl Drop for MappedRing {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `map`; its owner disabled the event
        // and nothing reads the ring any more (see `ThreadEvents`).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One thread's perf group and its ring (and `sampler=chain`'s anchor event with its own).
/// Closing (drop) disables the events, unmaps the rings and closes every descriptor.
pub struct ThreadEvents {
    pub leader: OwnedFd,
    members: Vec<OwnedFd>,
    /// Of `members`, those that sample themselves: (group index, 1 for the first member).
    sampled: Vec<u8>,
    ring: MappedRing,
    anchor: Option<(OwnedFd, MappedRing)>,
}

// SAFETY: the mappings belong to this value alone; they are read by the owning thread's
// signal handler through raw pointers handed out before, which stop being used once the
// descriptor is removed from the fd table (the registry does that before dropping), or by the
// processor under the registry's lock (`sampler=chain`).
unsafe impl Send for ThreadEvents {}

impl ThreadEvents {
    /// Opens the group for thread `tid`, maps its ring, and routes overflow signals `signal`
    /// to that thread when the spec has them. The group starts disabled: call [`Self::enable`].
    pub fn open(spec: &PerfSpec, tid: i32, signal: i32) -> Result<ThreadEvents, PerfError> {
        let (leader, members) = open_group(spec, tid).map_err(|b| b.1)?;
        let ring = MappedRing::map(&leader, spec.ring_pages, tid)?;
        let anchor = match spec.anchor {
            Some((bytes, period)) => {
                let mut attr = leader_attr(spec);
                let layout = spec.anchor_layout().unwrap_or(spec.layout);
                attr.sample_type = layout.sample_type;
                attr.sample_stack_user = layout.stack_user;
                attr.__bindgen_anon_1.sample_period = period;
                let fd = open(&mut attr, tid, -1, spec, "anchor")?;
                // The anchors of a drain period, with room to spare (two at least).
                let per_drain = if spec.event.is_clock { CHAIN_DRAIN_NS / period.max(1) } else { 4 };
                let pages = ring_pages_for((per_drain + 2) * u64::from(bytes));
                let r = MappedRing::map(&fd, pages, tid)?;
                Some((fd, r))
            }
            None => None,
        };
        let sampled = (0..members.len())
            .filter(|&i| spec.signal && spec.counter_periods.get(i).is_some_and(|&p| p > 0))
            .map(|i| (i + 1) as u8)
            .collect();
        let ev = ThreadEvents { leader, members, ring, anchor, sampled };
        if spec.signal {
            ev.route_signal(ev.leader.as_raw_fd(), tid, signal)?;
            for (_, fd) in ev.sampled_members() {
                ev.route_signal(fd, tid, signal)?;
            }
        }
        Ok(ev)
    }

    /// The members that sample themselves: (group index, descriptor). Their notifications come
    /// with their own descriptor, which the registry maps to the thread's slot and the index.
    pub fn sampled_members(&self) -> impl Iterator<Item = (u8, RawFd)> + '_ {
        self.sampled.iter().map(|&k| (k, self.members[usize::from(k) - 1].as_raw_fd()))
    }

    fn route_signal(&self, fd: RawFd, tid: i32, signal: i32) -> Result<(), PerfError> {
        let owner = FOwnerEx { type_: F_OWNER_TID, pid: tid };
        // SAFETY: plain fcntl calls on a descriptor we own; `owner` outlives the call.
        let ok = unsafe {
            libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
                && libc::fcntl(fd, F_SETSIG, signal) == 0
                && libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) == 0
        };
        if ok {
            Ok(())
        } else {
            Err(PerfError { what: format!("routing perf signals to thread {tid}"), errno: errno() })
        }
    }

    /// Sends the group's overflow notifications as `signal` from now on (to the same thread).
    pub fn set_signal(&self, signal: i32) -> Result<(), PerfError> {
        let fds = std::iter::once(self.leader.as_raw_fd()).chain(self.sampled_members().map(|(_, fd)| fd));
        for fd in fds {
            // SAFETY: a plain fcntl call on a descriptor we own.
            if unsafe { libc::fcntl(fd, F_SETSIG, signal) } != 0 {
                return Err(PerfError { what: "moving perf notifications to another signal".into(), errno: errno() });
            }
        }
        Ok(())
    }

    pub fn enable(&self) -> Result<(), PerfError> {
        // SAFETY: ioctl on a perf descriptor we own; the argument is a plain flag.
        let mut rc = unsafe { sys::ioctls::ENABLE(self.leader.as_raw_fd(), sys::bindings::PERF_IOC_FLAG_GROUP) };
        if let (Some((fd, _)), true) = (&self.anchor, rc >= 0) {
            // SAFETY: as above, on the anchor's descriptor.
            rc = unsafe { sys::ioctls::ENABLE(fd.as_raw_fd(), 0) };
        }
        if rc < 0 {
            return Err(PerfError { what: "enabling perf events".into(), errno: errno() });
        }
        Ok(())
    }

    /// Changes the sampling period (self-tuning interval).
    pub fn set_period(&self, period: u64) -> Result<(), PerfError> {
        // The kernel reads the new period through a pointer (PERF_EVENT_IOC_PERIOD is
        // `_IOW('$', 4, __u64)`); perf-event-open-sys types the argument as a plain u64, so the
        // address is what we pass.
        let p = period;
        // SAFETY: ioctl on a perf descriptor we own; `p` lives across the call.
        let rc = unsafe { sys::ioctls::PERIOD(self.leader.as_raw_fd(), &p as *const u64 as u64) };
        if rc < 0 {
            return Err(PerfError { what: "changing the sampling period".into(), errno: errno() });
        }
        Ok(())
    }

    pub fn disable(&self) {
        // SAFETY: as in `enable`.
        unsafe { sys::ioctls::DISABLE(self.leader.as_raw_fd(), sys::bindings::PERF_IOC_FLAG_GROUP) };
        if let Some((fd, _)) = &self.anchor {
            // SAFETY: as in `enable`.
            unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
        }
    }

    /// The ring, for the signal handler: (metadata page, data area, data size).
    pub fn ring_parts(&self) -> RingPtr {
        self.ring.parts()
    }

    /// `sampler=chain`'s anchor ring, if the spec has one.
    pub fn anchor_ring(&self) -> Option<RingPtr> {
        self.anchor.as_ref().map(|(_, r)| r.parts())
    }
}

impl Drop for ThreadEvents {
    fn drop(&mut self) {
        // Disabled before the fields (rings, then descriptors) are dropped.
        self.disable();
    }
}

/// Raw view of one ring for the signal handler.
#[derive(Clone, Copy)]
pub struct RingPtr {
    pub meta: *mut sys::bindings::perf_event_mmap_page,
    pub data: *mut u8,
    pub size: usize,
}

impl RingPtr {
    fn head_tail(&self) -> (&AtomicU64, &AtomicU64) {
        // SAFETY: `meta` points at the live metadata page; data_head/data_tail are naturally
        // aligned u64 fields shared with the kernel, accessed atomically as the ABI requires.
        unsafe {
            (
                &*(ptr::addr_of_mut!((*self.meta).data_head) as *const AtomicU64),
                &*(ptr::addr_of_mut!((*self.meta).data_tail) as *const AtomicU64),
            )
        }
    }

    /// Records between tail and head: (tail, head, data bytes). Acquire pairs with the kernel's
    /// write of data_head, so the bytes before head are visible.
    pub fn pending(&self) -> (u64, u64, &[u8]) {
        let (head, tail) = self.head_tail();
        let h = head.load(Ordering::Acquire);
        let t = tail.load(Ordering::Relaxed);
        // SAFETY: the data area is `size` bytes of the live mapping.
        let data = unsafe { std::slice::from_raw_parts(self.data, self.size) };
        (t, h, data)
    }

    /// Hands the bytes up to `pos` back to the kernel (release: our reads happen before).
    pub fn consume_to(&self, pos: u64) {
        self.head_tail().1.store(pos, Ordering::Release);
    }
}

/// Reads the group of the member `fd` (the leader's value first, then the members', with the
/// enabled/running times) into `raw`, for a counter's own overflow sample: one read(2) of a
/// buffer on the stack, async-signal-safe. `read_format` is the group's (`Layout::read_format`:
/// group, ids, both times). False if the read failed or the format was not that.
pub fn read_group(fd: RawFd, read_format: u64, raw: &mut hpm_capture::perf_record::RawSample) -> bool {
    use hpm_capture::perf_record::{
        FORMAT_GROUP, FORMAT_ID, FORMAT_TOTAL_TIME_ENABLED, FORMAT_TOTAL_TIME_RUNNING, MAX_COUNTERS,
    };
    const ALL: u64 = FORMAT_GROUP | FORMAT_ID | FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING;
    if read_format != ALL {
        return false;
    }
    // { nr, time_enabled, time_running, { value, id } [nr] }
    let mut buf = [0u64; 3 + 2 * (MAX_COUNTERS + 1)];
    // SAFETY: reading at most the buffer's size into it from a perf descriptor of the thread's
    // group, which stays open while its slot is entered.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
    let Ok(n) = usize::try_from(n) else { return false };
    let nr = (buf[0] as usize).min(MAX_COUNTERS + 1).min(raw.values.len());
    if n < 8 * (3 + 2 * nr) {
        return false;
    }
    (raw.time_enabled, raw.time_running) = (buf[1], buf[2]);
    for i in 0..nr {
        raw.values[i] = buf[3 + 2 * i];
    }
    raw.nvalues = nr as u32;
    true
}

/// Checks that the group opens for the calling thread exactly as it will for every profiled
/// thread (same attributes), without a ring or signals. Returns the first failure.
pub fn probe(spec: &PerfSpec) -> Result<(), OpenError> {
    open_group(spec, crate::os::gettid()).map(|_| ())
}

/// Counting events of the calling thread for the Java bridge (`Hpm.counters()`, regions):
/// each event on its own descriptor (no ring, no signal), enabled at once, read with read(2).
pub struct Counting {
    events: Vec<(EventDef, OwnedFd)>,
}

impl Counting {
    /// Opens what it can of `events` for the calling thread; the others come back with why.
    pub fn open(events: &[EventDef]) -> (Counting, Vec<(EventDef, PerfError)>) {
        let mut ok = Vec::new();
        let mut failed = Vec::new();
        for ev in events {
            let mut a = sys::bindings::perf_event_attr {
                type_: ev.type_,
                size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
                config: ev.config,
                ..Default::default()
            };
            a.set_exclude_hv(1);
            // Kernel mode counted too where perf allows it (as `perf stat` counts), else user
            // mode only (`perf stat` as an unprivileged user at perf_event_paranoid 2).
            let mut fd = -1;
            for exclude_kernel in [0, 1] {
                a.set_exclude_kernel(exclude_kernel);
                // SAFETY: `a` is a fully initialised perf_event_attr whose `size` matches the
                // struct; pid 0 / cpu -1 is the calling thread on any CPU.
                fd = unsafe {
                    sys::perf_event_open(&mut a, 0, -1, -1, sys::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong)
                };
                if fd >= 0 || !matches!(errno(), libc::EACCES | libc::EPERM) {
                    break;
                }
            }
            if fd < 0 {
                failed.push((
                    *ev,
                    PerfError { what: format!("perf_event_open({}) for counting", ev.name), errno: errno() },
                ));
            } else {
                // SAFETY: the kernel returned a new descriptor that nothing else owns.
                ok.push((*ev, unsafe { OwnedFd::from_raw_fd(fd) }));
            }
        }
        (Counting { events: ok }, failed)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.events.iter().map(|(e, _)| e.name).collect()
    }

    /// The current value of every open event, in [`Self::names`] order, appended to `out`.
    pub fn read(&self, out: &mut Vec<u64>) -> Result<(), PerfError> {
        for (ev, fd) in &self.events {
            let mut v = 0u64;
            // SAFETY: reading 8 bytes into a u64 from a perf descriptor we own (read_format 0).
            let n = unsafe { libc::read(fd.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
            if n != 8 {
                return Err(PerfError { what: format!("reading counter {}", ev.name), errno: errno() });
            }
            out.push(v);
        }
        Ok(())
    }
}

/// Probes perf for the requested event and counters. A hardware event on a machine without a
/// PMU falls back to cpu-clock (sampling) or is left out (counters), with one line each;
/// permission problems are errors that say which sysctl value is needed. Kernel mode is
/// sampled where perf allows it (`kernel=auto`); where it does not, a clock event counts it
/// at the user stack (`KernelMode::Counted`). One line says which is in force. `ring`: the
/// rings are drained by the processor, without signals ([`PerfSpec::for_chain`]).
pub fn choose_events(opts: &Options, ring: bool) -> Result<(PerfSpec, EventInfo, Vec<String>), String> {
    let mut notes = Vec::new();
    let requested = opts.event;
    let mut event = opts.event;
    let mut period = opts.period();
    let mut fallback = None;
    if event.sysfs.is_some() {
        match resolve_sysfs(event).and_then(resolve_probe) {
            Ok(e) => event = e,
            Err(why) => {
                let why = if event.probe.is_some() {
                    format!("no uprobe for {} ({why})", event.name)
                } else {
                    format!("no PMU for {} precise memory samples ({why})", event.name)
                };
                event = options::cpu_clock();
                period = event.default_period;
                notes.push(format!("{why}; sampling cpu-clock every {}ms instead", period / 1_000_000));
                fallback = Some(why);
            }
        }
    }
    let mut counters: Vec<EventDef> = opts.counters.clone();
    // Counters whose own sampling perf refused: read with the samples only.
    let mut interval_only: Vec<EventDef> = Vec::new();
    // A uprobe's samples are all in user mode, at the probed function.
    let mut sample_kernel = opts.kernel != Kernel::Off && event.probe.is_none();
    let mut kernel_denied = None;
    loop {
        let kernel = if sample_kernel {
            KernelMode::Sampled
        } else if event.is_clock && opts.kernel != Kernel::Off {
            KernelMode::Counted
        } else {
            KernelMode::Excluded
        };
        let mut spec = PerfSpec::new(event, period, counters.clone(), kernel);
        for (c, p) in spec.counters.iter().zip(spec.counter_periods.iter_mut()) {
            if interval_only.contains(c) {
                *p = 0;
            }
        }
        if ring {
            spec = spec.for_chain();
        }
        match probe(&spec).map_err(|b| *b) {
            Ok(()) => {
                notes.push(kernel_note(kernel, &event, kernel_denied.as_ref()));
                let info = EventInfo {
                    name: event.name.to_string(),
                    requested: requested.name.to_string(),
                    period,
                    unit: if event.is_clock { PeriodUnit::Nanoseconds } else { PeriodUnit::Events },
                    fallback,
                    sampler: opts.sampler.into(),
                    kernel,
                    alloc_interval: 0,
                };
                return Ok((spec, info, notes));
            }
            Err((_, e)) if e.is_permission() && sample_kernel && opts.kernel == Kernel::Auto => {
                // Try user mode only: perf_event_paranoid 2 allows it to any user.
                sample_kernel = false;
                kernel_denied = Some(e);
            }
            Err((ev, e))
                if sample_kernel
                    && opts.kernel == Kernel::Auto
                    && !(ev.hardware && e.is_unsupported() && (ev == event || counters.contains(&ev))) =>
            {
                // Kernel call chains refused for another reason (an older kernel without
                // `sample_max_stack`, say): count kernel time instead, and say why.
                sample_kernel = false;
                kernel_denied = Some(e);
            }
            Err((_, e)) if e.is_permission() && sample_kernel => {
                return Err(format!(
                    "kernel=on: {}; use kernel=auto to count kernel time without sampling it",
                    kernel_denial(&e)
                ))
            }
            Err((_, e)) if e.is_permission() => return Err(e.to_string()),
            Err((ev, e)) if ev == event && ev.hardware && e.is_unsupported() && event != options::cpu_clock() => {
                let os = std::io::Error::from_raw_os_error(e.errno);
                event = options::cpu_clock();
                // A count for the hardware event means nothing to cpu-clock: its default period.
                period = event.default_period;
                let why = format!("no hardware PMU for {}: perf_event_open failed ({os})", ev.name);
                notes.push(format!("{why}; sampling cpu-clock every {}ms instead", period / 1_000_000));
                fallback = Some(why);
            }
            Err((ev, e))
                if e.is_unsupported()
                    && counters.contains(&ev)
                    && ev.own_sample_period().is_some()
                    && !interval_only.contains(&ev) =>
            {
                // A PMU event that counts but cannot overflow (or a kernel that refuses it):
                // counted with the samples, charged by the interval, and said so.
                let os = std::io::Error::from_raw_os_error(e.errno);
                notes.push(format!(
                    "counter {} cannot sample itself ({os}); it is charged by the interval (the delta since the \
                     thread's previous sample goes to the next sample's stack)",
                    ev.name
                ));
                interval_only.push(ev);
            }
            Err((ev, e)) if ev.hardware && e.is_unsupported() && counters.contains(&ev) => {
                let os = std::io::Error::from_raw_os_error(e.errno);
                // One line for it: not the line of the try without its own samples.
                let tried = format!("counter {} cannot sample itself", ev.name);
                notes.retain(|n| !n.starts_with(&tried));
                notes.push(format!("counter {} is not available (no hardware PMU: {os}); it is not recorded", ev.name));
                counters.retain(|c| *c != ev);
            }
            Err((_, e)) => return Err(e.to_string()),
        }
    }
}

/// Why kernel mode may not be sampled, and what allows it.
fn kernel_denial(e: &PerfError) -> String {
    if !e.is_permission() {
        return format!("sampling kernel mode failed ({})", std::io::Error::from_raw_os_error(e.errno));
    }
    let level = paranoid_level().map_or("unknown".to_string(), |l| l.to_string());
    format!(
        "sampling kernel mode was denied ({}; kernel.perf_event_paranoid is {level}: it needs 1 or lower, \
         CAP_PERFMON or root)",
        std::io::Error::from_raw_os_error(e.errno)
    )
}

/// The start-up line saying how kernel time is in the profile.
fn kernel_note(kernel: KernelMode, event: &EventDef, denied: Option<&PerfError>) -> String {
    let why = denied.map(kernel_denial).unwrap_or_default();
    match kernel {
        KernelMode::Sampled => {
            "kernel time: sampled, with kernel call chains named from /proc/kallsyms (kernel=off: user mode only)"
                .to_string()
        }
        KernelMode::Counted => format!(
            "kernel time: counted, not sampled: {why}; each {} period spent in the kernel is a sample of the user \
             stack under [kernel]",
            event.name
        ),
        KernelMode::Excluded if denied.is_some() => {
            format!("kernel time: not in the profile: {why}; {} counts user mode only", event.name)
        }
        KernelMode::Excluded => "kernel time: not in the profile (kernel=off)".to_string(),
    }
}

mod count;
pub use count::{CountDef, CountGroup, MAX_COUNT_GROUP, PMU_COUNTS, SOFTWARE_COUNTS};
