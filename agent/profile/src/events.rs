//! The perf events hpm knows by name: the kernel's type and config of each, its default period,
//! whether its count is a time. The agent opens them; reports label counters with them.

/// The kernel's perf event types (`PERF_TYPE_*` in linux/perf_event.h). These numbers are
/// kernel ABI, so they live here rather than behind the perf bindings.
pub const PERF_TYPE_HARDWARE: u32 = 0;
pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_HW_CACHE: u32 = 3;
pub const PERF_TYPE_RAW: u32 = 4;

/// One perf event as the kernel knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDef {
    pub name: &'static str,
    pub type_: u32,
    pub config: u64,
    /// Its period is a time in nanoseconds (cpu-clock, task-clock).
    pub is_clock: bool,
    /// Needs a hardware PMU.
    pub hardware: bool,
    /// Samples can carry a data address (PERF_SAMPLE_ADDR is meaningful).
    pub data_address: bool,
    pub default_period: u64,
    /// A precise memory sample (PEBS load latency or stores, AMD IBS op): asks its latency,
    /// data source and the registers at the sampled instruction too.
    pub memory: bool,
    /// Defined by the kernel's PMU driver in sysfs (`/sys/bus/event_source/devices/PMU`): the
    /// PMU and its event's name there (empty: the PMU's own type, config 0). `type_` and
    /// `config` are then resolved when the event is opened ([`sysfs_config`]).
    pub sysfs: Option<(&'static str, &'static str)>,
    /// `config1` (the load-latency threshold of `mem-loads`; a uprobe's path, set when opened).
    pub config1: u64,
    /// `config2` (a uprobe's offset in its file, set when opened).
    pub config2: u64,
    /// A uprobe on a function of libjvm.so (Inoue & Nakatani §5.2's lock activity): the
    /// function's symbol names, the first found wins (JDK 17's, then later JDKs'). The
    /// `uprobe` PMU's type and the file offset are resolved when the event is opened.
    pub probe: Option<&'static [&'static str]>,
}

impl EventDef {
    /// As a `counters=` member: the period of its own overflow samples, for an event that can
    /// sample itself (a software event counted where it happens: page-faults, context-switches;
    /// a PMU event: cache-misses, branch-misses...), each sample taken at the event itself and
    /// charged to the stack it interrupts. `None`: a clock (task-clock, cpu-clock), whose count
    /// is the time between two samples and is charged, as a delta since the thread's previous
    /// sample, to the next sample's stack (interval attribution), as is any counter of
    /// `sampler=chain` (its rings are drained without a signal, long after the event).
    /// The period is the event's own default: page faults and context switches cost the
    /// kernel a microsecond or more each, so a sample (a signal, a read and a walk of a few
    /// microseconds) every 100 faults or 10 switches costs a bounded fraction of what it
    /// measures; a PMU event every 10,000 misses stays under ~1,000 samples a second.
    pub fn own_sample_period(&self) -> Option<u64> {
        (!self.is_clock && self.sysfs.is_none() && self.probe.is_none()).then_some(self.default_period.max(1))
    }
}

const fn hw_cache(cache: u64, op: u64, result: u64) -> u64 {
    cache | (op << 8) | (result << 16)
}

/// The named events, in the order `help` lists them.
pub const EVENTS: &[EventDef] = &[
    sw("cpu-clock", 0, true, false, 10_000_000),
    sw("task-clock", 1, true, false, 10_000_000),
    sw("page-faults", 2, false, true, 100),
    sw("context-switches", 3, false, false, 10),
    hw("cycles", PERF_TYPE_HARDWARE, 0, false, 10_000_000),
    hw("instructions", PERF_TYPE_HARDWARE, 1, false, 10_000_000),
    hw("cache-misses", PERF_TYPE_HARDWARE, 3, true, 10_000),
    hw("branch-misses", PERF_TYPE_HARDWARE, 5, false, 10_000),
    hw("LLC-load-misses", PERF_TYPE_HW_CACHE, hw_cache(2, 0, 1), true, 10_000),
    hw("L1-dcache-load-misses", PERF_TYPE_HW_CACHE, hw_cache(0, 0, 1), true, 100_000),
    hw("dTLB-load-misses", PERF_TYPE_HW_CACHE, hw_cache(3, 0, 1), true, 10_000),
    // Precise memory samples (Inoue & Nakatani's data-address events): Intel PEBS loads
    // slower than `ldlat` cycles (perf mem's 30) and stores, AMD IBS op.
    mem("mem-loads", "cpu", "mem-loads", 30, 10_000),
    mem("mem-stores", "cpu", "mem-stores", 0, 10_000),
    mem("ibs-op", "ibs_op", "", 0, 100_000),
    // Lock activity from uprobes on HotSpot's monitor slow paths (root or tracefs access):
    // every entry of the inflated monitor's enter, its contended path, its spin loop.
    probe("monitor-enter", &["_ZN13ObjectMonitor5enterEP10JavaThread"]),
    probe(
        "monitor-contended",
        &[
            "_ZN13ObjectMonitor6EnterIEP10JavaThread",
            "_ZN13ObjectMonitor26enter_with_contention_markEP10JavaThreadR27ObjectMonitorContentionMark",
        ],
    ),
    probe("monitor-spin", &["_ZN13ObjectMonitor7TrySpinEP10JavaThread", "_ZN13ObjectMonitor8try_spinEP10JavaThread"]),
];

const fn probe(name: &'static str, symbols: &'static [&'static str]) -> EventDef {
    EventDef { hardware: false, probe: Some(symbols), sysfs: Some(("uprobe", "")), ..sw(name, 0, false, false, 1) }
}

const fn mem(name: &'static str, pmu: &'static str, event: &'static str, ldlat: u64, period: u64) -> EventDef {
    EventDef { memory: true, sysfs: Some((pmu, event)), config1: ldlat, ..hw(name, PERF_TYPE_RAW, 0, true, period) }
}

const fn sw(name: &'static str, config: u64, is_clock: bool, addr: bool, period: u64) -> EventDef {
    EventDef {
        name,
        type_: PERF_TYPE_SOFTWARE,
        config,
        is_clock,
        hardware: false,
        data_address: addr,
        default_period: period,
        memory: false,
        sysfs: None,
        config1: 0,
        config2: 0,
        probe: None,
    }
}

/// A hardware event (the grammar makes raw `rXXXX` events with it).
pub const fn hw(name: &'static str, type_: u32, config: u64, addr: bool, period: u64) -> EventDef {
    EventDef {
        name,
        type_,
        config,
        is_clock: false,
        hardware: true,
        data_address: addr,
        default_period: period,
        memory: false,
        sysfs: None,
        config1: 0,
        config2: 0,
        probe: None,
    }
}
