//! Agent options: `-agentpath:libhpm.so=event=cpu-clock,interval=1ms,file=profile.jfr`.
//!
//! Parsing is JVM-free so every error message is unit-tested. Each error is one line that
//! names the problem and the valid choices; the agent prints it and refuses to start.

use std::fmt;

use hpm_capture::perf_record::MAX_COUNTERS;
use hpm_profile::duration::{Accept, DurationError};
use hpm_profile::events::hw;
use hpm_profile::output::format::Txt;

mod phases;
mod push;
pub use phases::{PhasesOptions, JAR_NAME as PHASES_JAR_NAME};
pub use push::PushOptions;

/// The perf event table, for the agent's modules that name events through the grammar.
pub use hpm_profile::events::{
    EventDef, EVENTS, PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW, PERF_TYPE_SOFTWARE,
};

/// Resolves a sysfs event description (`event=0xcd,umask=0x1,ldlat=3`) with its PMU's format
/// files (`format(term)`: `config:0-7`, `config1:0-15`, `config:21`) into `(config, config1)`.
/// `ldlat` (when nonzero) overrides the description's own threshold. Errors name the term.
pub fn sysfs_config(desc: &str, ldlat: u64, format: impl Fn(&str) -> Option<String>) -> Result<(u64, u64), String> {
    let (mut config, mut config1) = (0u64, 0u64);
    for term in desc.trim().split(',').filter(|t| !t.is_empty()) {
        let (name, value) = term.split_once('=').unwrap_or((term, "1"));
        let value = if name == "ldlat" && ldlat != 0 { ldlat } else { parse_number(value)? };
        let f = format(name).ok_or_else(|| format!("the PMU has no format for `{name}`"))?;
        let (field, bits) = f.trim().split_once(':').ok_or_else(|| format!("format `{f}` of `{name}`"))?;
        let mut v = value;
        let mut placed = 0u64;
        for range in bits.split(',') {
            let (lo, hi) = match range.split_once('-') {
                Some((l, h)) => (parse_number(l)?, parse_number(h)?),
                None => (parse_number(range)?, parse_number(range)?),
            };
            if lo > hi || hi > 63 {
                return Err(format!("format `{f}` of `{name}`"));
            }
            let width = hi - lo + 1;
            let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
            placed |= (v & mask) << lo;
            v = if width == 64 { 0 } else { v >> width };
        }
        match field {
            "config" => config |= placed,
            "config1" => config1 |= placed,
            other => return Err(format!("`{name}` is a {other} term, which hpm does not set")),
        }
    }
    Ok((config, config1))
}

fn parse_number(s: &str) -> Result<u64, String> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("`{s}` is not a number"))
}

/// The software event the agent falls back to when the PMU is missing.
pub fn cpu_clock() -> EventDef {
    EVENTS[0]
}

fn valid_event_list() -> String {
    let mut s: Vec<&str> = EVENTS.iter().map(|e| e.name).collect();
    s.push("rXXXX (raw PMU encoding, hex)");
    s.join(", ")
}

/// Distinct raw event names one process keeps (each is made `'static` once).
pub const MAX_RAW_EVENT_NAMES: usize = 256;

/// The name of a raw event, kept for the life of the process (an `EventDef` holds a `'static`
/// name): each distinct name once, at most [`MAX_RAW_EVENT_NAMES`]. It used to leak a copy per
/// parse, so options parsed again and again (sessions through attach or the bridge) grew the
/// heap without bound (found by the options fuzz target).
fn raw_name(name: &str) -> Result<&'static str, OptionError> {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    keep_name(&NAMES, name, MAX_RAW_EVENT_NAMES)
}

fn keep_name(names: &std::sync::Mutex<Vec<&'static str>>, name: &str, max: usize) -> Result<&'static str, OptionError> {
    let mut names = names.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return Ok(n);
    }
    if names.len() >= max {
        return Err(OptionError(format!(
            "event `{name}`: more than {max} distinct raw events in one process; reuse one"
        )));
    }
    let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(kept);
    Ok(kept)
}

/// Looks an event up by name; `rXXXX` is a raw hardware encoding.
pub fn parse_event(name: &str) -> Result<EventDef, OptionError> {
    if let Some(e) = EVENTS.iter().find(|e| e.name.eq_ignore_ascii_case(name)) {
        return Ok(*e);
    }
    if let Some(hex) = name.strip_prefix('r') {
        if !hex.is_empty() && hex.len() <= 16 {
            if let Ok(config) = u64::from_str_radix(hex, 16) {
                return Ok(hw(raw_name(name)?, PERF_TYPE_RAW, config, true, 100_000));
            }
        }
    }
    Err(OptionError(format!("unknown event `{name}`; valid events: {}", valid_event_list())))
}

/// The format of a `file=` ([`hpm_profile::output::format`]'s table).
pub use hpm_profile::output::format::Format as OutputFormat;

/// The format `file=PATH` names; `.txt` could be any text, and is refused.
pub fn output_format(path: &str) -> Result<OutputFormat, OptionError> {
    OutputFormat::of_path(path, Txt::Refused).ok_or_else(|| {
        OptionError(format!(
            "file={path}: cannot tell the format from the extension; use .jfr, .collapsed, .html, .svg, .pb.gz (pprof) or .json"
        ))
    })
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFile {
    /// The path as given, with `%p`/`%t` still in it.
    pub pattern: String,
    pub format: OutputFormat,
}

impl OutputFile {
    /// Expands `%p` (pid) and `%t` (start time, `YYYYMMDD-HHMMSS` UTC).
    pub fn path(&self, pid: u32, start_unix_secs: u64) -> String {
        self.pattern.replace("%p", &pid.to_string()).replace("%t", &format_timestamp(start_unix_secs))
    }
}

/// `YYYYMMDD-HHMMSS` in UTC from Unix seconds (civil-from-days, no time zone database needed).
pub fn format_timestamp(secs: u64) -> String {
    let (y, m, d, rem) = hpm_profile::text::civil_utc(secs);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The stack sampler a session runs: its kinds and names are the model's, one list for the
/// option grammar, the outputs and the recordings.
pub use hpm_profile::model::SamplerKind;

/// Whether `sampler=NAME` chooses a kind: every kind but the one `event=wall` chooses.
fn by_sampler_option(kind: SamplerKind) -> bool {
    kind != SamplerKind::Wall
}

/// `kernel=`: whether kernel-mode time is sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kernel {
    /// Sampled with kernel call chains where perf allows it, else counted at the user stack
    /// (clock events) or left out with a note.
    #[default]
    Auto,
    /// Sampled, or the session does not start (no permission is an error).
    On,
    /// User mode only.
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Nanoseconds for clock events, an event count otherwise.
    Fixed(u64),
    /// Self-tuning (Chilingarova & Safonov section 3.3), starting from the event's default.
    Auto,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub event: EventDef,
    pub interval: Interval,
    pub counters: Vec<EventDef>,
    pub files: Vec<OutputFile>,
    pub per_thread: bool,
    pub quiet: bool,
    pub help: bool,
    pub sampler: SamplerKind,
    /// Maximum Java frames per sample.
    pub max_depth: u32,
    /// Seconds between JFR chunk flushes.
    pub flush_secs: u64,
    /// `sampler=sps`: running threads sampled per tick (0 = number of CPUs).
    pub sps_threads: u32,
    /// `sampler=sps`: also sample waiting/blocked/native threads in proportion to their share.
    pub sps_waiting: bool,
    /// `kernel=auto|on|off`.
    pub kernel: Kernel,
    /// `stack=vm|asgct`: who walks the Java stack in the perf signal (sampler=asgct).
    pub stack: StackWalker,
    /// `cstack=dwarf|fp|no`: how hpm's walker unwinds native and VM frames.
    pub cstack: CStack,
    /// `thread=REGEX` (event=wall): only threads whose name matches are sampled.
    pub thread_filter: Option<String>,
    /// `data`: each sample's data address from its instruction.
    pub data: bool,
    /// Whether the sampling event (CPU, or what `event=` names) runs: false for `event=alloc`
    /// or `event=lock` alone.
    pub cpu: bool,
    /// `alloc[=BYTES]`: allocations sampled every BYTES on average (JVMTI SampledObjectAlloc).
    pub alloc: Option<u64>,
    /// `lock[=DURATION]`: contended monitor enters and parks that waited at least this many ns.
    pub lock: Option<u64>,
    /// `push=URL` (with `chunk=`, `pushformat=`, `service=`, `labels=`): each period's profile
    /// sent to a fleet backend.
    pub push: Option<PushOptions>,
    /// `phases=TRACE` (with `select=`, `phasesjar=`, `phasesmax=`): method-level phases, the
    /// application's methods instrumented beside the sampling.
    pub phases: Option<PhasesOptions>,
}

/// `alloc` without a size: async-profiler's default interval.
pub const DEFAULT_ALLOC_INTERVAL: u64 = 512 * 1024;
/// `lock` without a duration: waits shorter than this are not recorded (each recorded one
/// costs a stack walk; async-profiler's users found 10 us removes its overhead on uncontended
/// code and keeps the waits worth seeing).
pub const DEFAULT_LOCK_THRESHOLD_NS: u64 = 10_000;
/// The largest `alloc=` interval (SetHeapSamplingInterval takes a 32-bit int).
pub const MAX_ALLOC_INTERVAL: u64 = 1 << 30;

// The ranges of the options that are times or counts. A value outside is refused with one line
// naming its range, so nothing computed from an option later (a timer's next tick, a period
// times a count, nanoseconds from seconds) can wrap: `interval=18446744073709551615` once made
// the timer's next tick wrap into the past and sample without pause.
/// `interval=` of a clock event: the kernel delivers no timer samples more often than 10 us...
pub const MIN_CLOCK_INTERVAL_NS: u64 = 10_000;
/// ... and a profile with less than a sample a minute says nothing.
pub const MAX_CLOCK_INTERVAL_NS: u64 = 60_000_000_000;
/// `interval=` of a counting event: events between two samples (10^12 cycles are minutes of a
/// CPU).
pub const MAX_COUNT_INTERVAL: u64 = 1_000_000_000_000;
/// `flush=`: from a second to an hour between JFR chunks.
pub const MIN_FLUSH_NS: u64 = 1_000_000_000;
pub const MAX_FLUSH_NS: u64 = 3_600_000_000_000;
/// `lock=`: the shortest wait recorded, at most a minute.
pub const MAX_LOCK_THRESHOLD_NS: u64 = 60_000_000_000;
/// `spsthreads=`: running threads sampled per tick.
pub const MAX_SPS_THREADS: u64 = 4096;
/// `jstackdepth=`: frames per sample (the timer samplers keep this many, the capture's
/// `MAX_DEEP_FRAMES`; the others 512). Written out, not imported: the capture's modules read
/// this one's counter bound (a test keeps the two equal).
pub const MAX_STACK_DEPTH: u64 = 4096;

/// Who walks the Java stack in the signal handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackWalker {
    /// hpm's own walker over HotSpot's frames (`hotspot`), from VMStructs.
    Vm,
    /// HotSpot's AsyncGetCallTrace.
    Asgct,
    /// Both on every sample, hpm's kept, and how often they agree printed at the end: a
    /// measurement, not for production (twice the walking cost).
    Compare,
}

/// How hpm's walker unwinds native and VM frames (`cstack=`), in the signal handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CStack {
    /// Each library's DWARF call-frame information (`.eh_frame`), as tables built off the
    /// signal path; the frame pointer where no table covers the pc.
    Dwarf,
    /// The frame pointer only (libjvm and libc keep none: their callers are lost).
    Fp,
    /// Not unwound: native code is crossed through the thread's frame anchor (the leaf only).
    No,
}

impl CStack {
    pub fn name(self) -> &'static str {
        match self {
            CStack::Dwarf => "dwarf",
            CStack::Fp => "fp",
            CStack::No => "no",
        }
    }
}

impl StackWalker {
    pub fn name(self) -> &'static str {
        match self {
            StackWalker::Vm => "vm",
            StackWalker::Asgct => "asgct",
            StackWalker::Compare => "compare",
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            event: cpu_clock(),
            interval: Interval::Fixed(cpu_clock().default_period),
            counters: Vec::new(),
            files: Vec::new(),
            per_thread: false,
            quiet: false,
            help: false,
            sampler: SamplerKind::Asgct,
            max_depth: 256,
            flush_secs: 5,
            sps_threads: 0,
            sps_waiting: false,
            kernel: Kernel::Auto,
            stack: StackWalker::Vm,
            cstack: CStack::Dwarf,
            thread_filter: None,
            data: false,
            cpu: true,
            alloc: None,
            lock: None,
            push: None,
            phases: None,
        }
    }
}

impl Options {
    /// The period actually programmed into perf for the sampling event.
    pub fn period(&self) -> u64 {
        match self.interval {
            Interval::Fixed(p) => p,
            Interval::Auto => self.event.default_period,
        }
    }

    /// The output files; `profile.jfr` in the working directory when none was given.
    pub fn outputs(&self) -> Vec<OutputFile> {
        if self.files.is_empty() {
            vec![OutputFile { pattern: "hpm-%p.jfr".into(), format: OutputFormat::Jfr }]
        } else {
            self.files.clone()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError(pub String);

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OptionError {}

const KEYS: &str = "event, interval, counters, file, threads, quiet, help, sampler, jstackdepth, flush, spsthreads, \
                    spswaiting, kernel, stack, cstack, thread, data, alloc, lock, push, chunk, pushformat, service, \
                    labels, phases, select, phasesjar, phasesmax";

/// Parses the agent option string (may be empty).
pub fn parse(s: &str) -> Result<Options, OptionError> {
    let mut o = Options::default();
    let mut interval_text: Option<String> = None;
    let mut push_text = push::PushText::default();
    let mut phases_text = phases::PhasesText::default();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        match key {
            "event" if value == Some("wall") => o.sampler = SamplerKind::Wall,
            "event" if value == Some("alloc") => {
                o.cpu = false;
                o.alloc.get_or_insert(DEFAULT_ALLOC_INTERVAL);
            }
            "event" if value == Some("lock") => {
                o.cpu = false;
                o.lock.get_or_insert(DEFAULT_LOCK_THRESHOLD_NS);
            }
            "event" if value == Some("cpu") => o.event = cpu_clock(),
            "event" => o.event = parse_event(need_value(key, value)?)?,
            "interval" => interval_text = Some(need_value(key, value)?.to_string()),
            "counters" => {
                o.counters =
                    need_value(key, value)?.split('+').map(|c| parse_event(c.trim())).collect::<Result<_, _>>()?;
                if o.counters.len() > MAX_COUNTERS {
                    return Err(OptionError(format!(
                        "counters: at most {MAX_COUNTERS} counters fit in one group, got {}",
                        o.counters.len()
                    )));
                }
            }
            "file" => {
                let path = need_value(key, value)?;
                o.files.push(OutputFile { pattern: path.to_string(), format: output_format(path)? });
            }
            "threads" => o.per_thread = flag(key, value)?,
            "quiet" => o.quiet = flag(key, value)?,
            "data" => o.data = flag(key, value)?,
            "alloc" => o.alloc = Some(value.map_or(Ok(DEFAULT_ALLOC_INTERVAL), parse_bytes)?),
            "lock" => {
                o.lock = Some(match value {
                    None => DEFAULT_LOCK_THRESHOLD_NS,
                    Some("0") => 0,
                    Some(v) => parse_duration(v).filter(|&ns| ns <= MAX_LOCK_THRESHOLD_NS).ok_or_else(|| {
                        OptionError(format!(
                            "lock={v}: expected the shortest wait to record, from 0 to 60s, such as 10us, 1ms or 0"
                        ))
                    })?,
                })
            }
            "help" => o.help = true,
            "push" | "chunk" | "pushformat" | "service" | "labels" => push_text.take(key, need_value(key, value)?),
            "phases" | "select" | "phasesjar" | "phasesmax" => phases_text.take(key, need_value(key, value)?),
            "sampler" => {
                let name = need_value(key, value)?;
                o.sampler = SamplerKind::from_name(name).filter(|&k| by_sampler_option(k)).ok_or_else(|| {
                    let valid: Vec<&str> =
                        SamplerKind::ALL.into_iter().filter(|&k| by_sampler_option(k)).map(SamplerKind::name).collect();
                    OptionError(format!("unknown sampler `{name}`; valid samplers: {}", valid.join(", ")))
                })?
            }
            "kernel" => {
                o.kernel = match need_value(key, value)? {
                    "auto" => Kernel::Auto,
                    "on" | "yes" | "true" => Kernel::On,
                    "off" | "no" | "false" => Kernel::Off,
                    other => return Err(OptionError(format!("kernel={other}: expected auto, on or off"))),
                }
            }
            "stack" => {
                o.stack = match need_value(key, value)? {
                    "vm" => StackWalker::Vm,
                    "asgct" => StackWalker::Asgct,
                    "compare" => StackWalker::Compare,
                    other => return Err(OptionError(format!("stack={other}: expected vm, asgct or compare"))),
                }
            }
            "cstack" => {
                o.cstack = match need_value(key, value)? {
                    "dwarf" => CStack::Dwarf,
                    "fp" => CStack::Fp,
                    "no" | "off" => CStack::No,
                    other => {
                        return Err(OptionError(format!(
                            "cstack={other}: expected dwarf (DWARF unwind tables), fp (frame pointers) or no"
                        )))
                    }
                }
            }
            "thread" => {
                let p = need_value(key, value)?;
                hpm_profile::filter::compile_thread_pattern_for("thread=", p).map_err(OptionError)?;
                o.thread_filter = Some(p.to_string());
            }
            "spsthreads" => o.sps_threads = parse_count(key, need_value(key, value)?, MAX_SPS_THREADS)? as u32,
            "spswaiting" => o.sps_waiting = flag(key, value)?,
            "jstackdepth" => {
                o.max_depth = parse_count(key, need_value(key, value)?, MAX_STACK_DEPTH)? as u32;
            }
            "flush" => {
                let ns = parse_duration(need_value(key, value)?)
                    .filter(|ns| (MIN_FLUSH_NS..=MAX_FLUSH_NS).contains(ns))
                    .ok_or_else(|| {
                        OptionError(format!(
                            "flush={}: expected a time from 1s to 1h, such as 5s or 30s",
                            value.unwrap_or("")
                        ))
                    })?;
                o.flush_secs = ns / 1_000_000_000;
            }
            other => return Err(OptionError(format!("unknown option `{other}`; valid options: {KEYS}"))),
        }
    }
    o.interval = match interval_text {
        None => Interval::Fixed(o.event.default_period),
        Some(ref t) => parse_interval(t, &o.event)?,
    };
    o.push = push_text.finish(o.sampler, &mut o.flush_secs)?;
    o.phases = phases_text.finish()?;
    if o.thread_filter.is_some() && o.sampler != SamplerKind::Wall {
        return Err(OptionError(
            "thread=REGEX selects the threads event=wall samples; for a CPU profile, keep every thread and select \
             with `hpm report --thread REGEX`"
                .into(),
        ));
    }
    if o.sampler == SamplerKind::Wall && (o.event != cpu_clock() || !o.counters.is_empty()) {
        return Err(OptionError("event=wall samples on a timer; it takes no other event= and no counters=".into()));
    }
    if !o.cpu && (o.data || !o.counters.is_empty() || interval_text.is_some()) {
        return Err(OptionError(
            "event=alloc and event=lock sample no CPU event, so they take no data, counters= or interval=; \
             to have both, name the CPU event too: event=cpu,alloc or event=cpu,lock"
                .into(),
        ));
    }
    if o.data && o.sampler != SamplerKind::Asgct {
        return Err(OptionError(format!(
            "data reads the address each sample's instruction touches from the registers the perf signal \
             interrupted; sampler={} has none: use the default sampler",
            o.sampler.name()
        )));
    }
    // The chain sampler is a perf sampler too: any event, counters and interval=auto.
    if !matches!(o.sampler, SamplerKind::Asgct | SamplerKind::Chain) {
        if !o.event.is_clock || !o.counters.is_empty() {
            return Err(OptionError(format!(
                "sampler={} samples on a timer; event= and counters= need sampler=asgct",
                o.sampler.name()
            )));
        }
        if o.interval == Interval::Auto {
            return Err(OptionError(format!("interval=auto needs sampler=asgct, not sampler={}", o.sampler.name())));
        }
    }
    Ok(o)
}

fn need_value<'a>(key: &str, v: Option<&'a str>) -> Result<&'a str, OptionError> {
    v.filter(|v| !v.is_empty())
        .ok_or_else(|| OptionError(format!("option `{key}` needs a value, e.g. {}", example(key))))
}

fn example(key: &str) -> &'static str {
    match key {
        "event" => "event=cpu-clock",
        "interval" => "interval=1ms",
        "counters" => "counters=task-clock+page-faults",
        "file" => "file=profile.jfr",
        "sampler" => "sampler=asgct",
        "jstackdepth" => "jstackdepth=256",
        "flush" => "flush=5s",
        "kernel" => "kernel=auto",
        "stack" => "stack=vm",
        "cstack" => "cstack=dwarf",
        "thread" => "thread=worker-.*",
        "push" => "push=http://127.0.0.1:4318",
        "chunk" => "chunk=60s",
        "pushformat" => "pushformat=otlp",
        "service" => "service=orders",
        "labels" => "labels=env=prod;region=eu",
        "phases" => "phases=run.hpmtrace",
        "select" => "select=phases.txt",
        "phasesjar" => "phasesjar=/path/hpm-phases.jar",
        "phasesmax" => "phasesmax=2g",
        _ => "key=value",
    }
}

fn flag(key: &str, value: Option<&str>) -> Result<bool, OptionError> {
    match value {
        None | Some("true") | Some("yes") | Some("1") => Ok(true),
        Some("false") | Some("no") | Some("0") => Ok(false),
        Some(v) => Err(OptionError(format!("option `{key}` is a flag; got `{v}`, use `{key}` or `{key}=false`"))),
    }
}

/// A whole number from 1 to `max`.
fn parse_count(key: &str, v: &str, max: u64) -> Result<u64, OptionError> {
    v.parse::<u64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| OptionError(format!("{key}={v}: expected a whole number from 1 to {max}")))
}

/// `512k`, `1m`, `4096` (bytes) for `alloc=`.
fn parse_bytes(v: &str) -> Result<u64, OptionError> {
    let lower = v.to_ascii_lowercase();
    let (num, mult) = match lower.trim_end_matches('b').char_indices().last() {
        Some((i, 'k')) => (&lower[..i], 1u64 << 10),
        Some((i, 'm')) => (&lower[..i], 1 << 20),
        Some((i, 'g')) => (&lower[..i], 1 << 30),
        _ => (lower.trim_end_matches('b'), 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| (1..=MAX_ALLOC_INTERVAL).contains(n))
        .ok_or_else(|| {
            OptionError(format!("alloc={v}: expected an interval in bytes from 1 to 1g, such as 512k or 1m"))
        })
}

/// A time option's value (`hpm_profile::duration`'s grammar, a unit required) in nanoseconds,
/// `None` for zero or no duration; more than 64 bits hold is `u64::MAX`, which every option's
/// range refuses (so the message names the range, not the syntax).
fn parse_duration(t: &str) -> Option<u64> {
    match hpm_profile::duration::parse_duration(t, Accept::UNIT_REQUIRED) {
        Ok(ns) => Some(ns).filter(|&ns| ns > 0),
        Err(DurationError::TooLong) => Some(u64::MAX),
        Err(DurationError::Syntax) => None,
    }
}

fn parse_interval(t: &str, event: &EventDef) -> Result<Interval, OptionError> {
    if t == "auto" {
        return Ok(Interval::Auto);
    }
    let has_unit = t.ends_with('s') || t.ends_with('m');
    if event.is_clock {
        // A time, or a number of nanoseconds (at least 10us of them; too many for 64 bits are
        // over the range too).
        let digits = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let ns = parse_duration(t).or_else(|| match t.parse::<u64>() {
            Ok(n) => Some(n).filter(|&n| n >= MIN_CLOCK_INTERVAL_NS),
            Err(_) => digits.then_some(u64::MAX),
        });
        if let Some(ns) = ns {
            if ns < MIN_CLOCK_INTERVAL_NS {
                return Err(OptionError(format!(
                    "interval={t} is below 10us, which the kernel cannot deliver; use 10us or more"
                )));
            }
            if ns > MAX_CLOCK_INTERVAL_NS {
                return Err(OptionError(format!("interval={t} is over 60s; give a time from 10us to 60s")));
            }
            return Ok(Interval::Fixed(ns));
        }

        Err(OptionError(format!(
            "interval={t}: {} is a clock event; give a time such as 10ms, 1ms or 100us (or auto)",
            event.name
        )))
    } else if has_unit {
        Err(OptionError(format!(
            "interval={t} is a time, but {} counts events; give a count such as interval={} (or auto)",
            event.name, event.default_period
        )))
    } else {
        parse_count("interval", t, MAX_COUNT_INTERVAL).map(Interval::Fixed)
    }
}

/// The text `help` prints.
pub fn help_text() -> String {
    let mut s = String::from(
        "hpm agent options (comma-separated key=value): -agentpath:/path/libhpm.so=OPTIONS\n\
         \n  event=NAME        sampling event (default cpu-clock); wall = every Java thread at the interval, any state\n\
         \x20 interval=N        period: a time for clock events (10ms, 1ms, 100us; 10us to 60s), a count otherwise\n\
         \x20                   (1 to 1000000000000); auto = self-tuning\n\
         \x20 counters=A+B+...  counting events read in one perf group with every sample (e.g. cycles+instructions)\n\
         \x20 file=PATH         output; format from the extension: .jfr .collapsed .html .svg .pb.gz .json; %p = pid, %t = time; repeatable\n\
         \x20 threads           separate stacks per thread\n\
         \x20 sampler=asgct     stack sampler: asgct (default), jvmti (global safepoint baseline), sps (patched JVM),\n\
         \x20                   isps (patched JVM, incremental stack tracing),\n\
         \x20                   chain (CallerChaining: no stack walk in the thread, contexts from stack depths)\n\
         \x20 spsthreads=N      sampler=sps/isps: running threads per sample, 1 to 4096 (default: number of CPUs)\n\
         \x20 spswaiting        sampler=sps/isps: also sample waiting threads in proportion to their share\n\
         \x20 kernel=auto       kernel time: auto = sampled with kernel frames where perf allows it, else counted at the\n\
         \x20                   user stack as [kernel] (clock events); on = sampled or refuse to start; off = user mode only\n\
         \x20 stack=vm          Java stack walker in the signal: vm = hpm's own over HotSpot's frames (default),\n\
         \x20                   asgct = AsyncGetCallTrace (when the JVM exports no frame layout, the default falls back to it);\n\
         \x20                   compare = both on every sample, agreement printed at exit (a measurement: twice the cost)\n\
         \x20 cstack=dwarf      native and VM frames (JNI libraries, GC and compiler threads) with stack=vm: dwarf =\n\
         \x20                   unwind tables from each library's .eh_frame (default), fp = frame pointers only, no = the\n\
         \x20                   native leaf alone under the Java frames\n\
         \x20 thread=REGEX      event=wall: only the threads whose name matches (e.g. thread=worker-.*)\n\
         \x20 data              each sample's data address, decoded from its instruction in Java code (any event)\n\
         \x20 alloc[=BYTES]     allocation profile: a sample every BYTES allocated on average (default 512k), with its\n\
         \x20                   class and stack (jdk.ObjectAllocationSample; hpm report --event alloc)\n\
         \x20 lock[=DURATION]   lock profile: contended monitor enters and parks that waited at least DURATION (default\n\
         \x20                   10us, at most 60s; intercepts Unsafe.park: the JVM warns once), as jdk.JavaMonitorEnter and\n\
         \x20                   jdk.ThreadPark (hpm report --event lock); event=alloc or event=lock: these without CPU samples\n\
         \x20 jstackdepth=256   maximum Java frames per sample, 1 to 4096 (past 512 with jvmti, sps, wall only)\n\
         \x20 flush=5s          JFR chunk flush period, 1s to 1h (a killed JVM keeps what was flushed)\n\
         \x20 push=URL          every period's profile sent to a fleet backend, never blocking the application:\n\
         \x20                   http://HOST[:PORT][/PATH] of an OpenTelemetry Collector (OTLP profiles; path default\n\
         \x20                   /v1development/profiles) or of Pyroscope; no TLS: push to a collector on the host\n\
         \x20 chunk=60s         push: the period, 1s to 1h in whole seconds (flush= becomes at most this)\n\
         \x20 pushformat=otlp   push: otlp (default) or pyroscope (the period's JFR to /ingest)\n\
         \x20 service=NAME      push: service.name / Pyroscope's application (default: $OTEL_SERVICE_NAME, else the\n\
         \x20                   main class or jar)\n\
         \x20 labels=K=V;K2=V2  pushformat=pyroscope: the application's labels\n\
         \x20 phases=TRACE      method-level phases: application methods over 50 bytes of bytecode or with a loop\n\
         \x20                   instrumented (hpm-phases.jar, from the class file load hook), their enter and exit\n\
         \x20                   with the thread's counters written to TRACE (%p, %t expanded), beside the sampling\n\
         \x20 select=FILE       phases: instrument exactly the methods of FILE (from hpm phases TRACE --out FILE)\n\
         \x20 phasesjar=FILE    phases: the bytecode rewriter (default: hpm-phases.jar beside libhpm.so)\n\
         \x20 phasesmax=SIZE    phases: the trace stops growing at SIZE, 1m to 1t (default 2g)\n\
         \x20 quiet             no summary at exit\n\
         \x20 help              this text; the JVM then exits\n\nevents:\n",
    );
    for e in EVENTS {
        let kind = match (e.memory, e.hardware) {
            _ if e.probe.is_some() => "uprobe on HotSpot's monitor code, the monitor's class with each sample (root)",
            (true, _) => "precise memory samples (PEBS/IBS: address, latency, source)",
            (false, true) => "hardware",
            (false, false) => "software",
        };
        let period =
            if e.is_clock { format!("{}ms", e.default_period / 1_000_000) } else { e.default_period.to_string() };
        s.push_str(&format!("  {:<24}{kind}, default interval {period}\n", e.name));
    }
    s.push_str("  rXXXX                   raw PMU event encoding (hex), hardware\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deepest_stack_asked_for_is_the_deepest_the_capture_keeps() {
        assert_eq!(MAX_STACK_DEPTH, hpm_capture::capture::MAX_DEEP_FRAMES as u64);
    }

    #[test]
    fn data_needs_the_signal_sampler() {
        assert!(parse("data").unwrap().data);
        assert!(!parse("").unwrap().data, "off by default");
        for other in ["sampler=jvmti,data", "event=wall,data"] {
            let e = parse(other).unwrap_err().0;
            assert!(e.contains("use the default sampler"), "{other}: {e}");
        }
    }

    #[test]
    fn event_wall_is_the_wall_clock_sampler() {
        let o = parse("event=wall,interval=20ms").unwrap();
        assert_eq!((o.sampler, o.period()), (SamplerKind::Wall, 20_000_000));
        let e = parse("event=wall,counters=task-clock").unwrap_err().0;
        assert!(e.contains("event=wall"), "{e}");
        assert!(parse("event=wall,interval=auto").is_err());
    }

    #[test]
    fn thread_filter_is_for_wall_and_a_valid_expression() {
        let o = parse("event=wall,thread=worker-[0-9]+").unwrap();
        assert_eq!(o.thread_filter.as_deref(), Some("worker-[0-9]+"));
        let e = parse("thread=main").unwrap_err().0;
        assert!(e.contains("event=wall") && e.contains("--thread"), "{e}");
        let e = parse("event=wall,thread=(").unwrap_err().0;
        assert!(e.starts_with("thread= `(` is not a regular expression"), "{e}");
    }

    #[test]
    fn stack_option_takes_vm_or_asgct() {
        assert_eq!(parse("").unwrap().stack, StackWalker::Vm);
        assert_eq!(parse("stack=asgct").unwrap().stack, StackWalker::Asgct);
        assert_eq!(parse("").unwrap().cstack, CStack::Dwarf);
        assert_eq!(parse("cstack=fp").unwrap().cstack, CStack::Fp);
        assert_eq!(parse("cstack=no").unwrap().cstack, CStack::No);
        let e = parse("cstack=vm").unwrap_err().0;
        assert_eq!(e, "cstack=vm: expected dwarf (DWARF unwind tables), fp (frame pointers) or no");
        let e = parse("stack=frames").unwrap_err().0;
        assert!(e.contains("vm, asgct or compare"), "{e}");
    }

    #[test]
    fn kernel_option_takes_auto_on_off() {
        assert_eq!(parse("").unwrap().kernel, Kernel::Auto);
        assert_eq!(parse("kernel=on").unwrap().kernel, Kernel::On);
        assert_eq!(parse("kernel=off").unwrap().kernel, Kernel::Off);
        let e = parse("kernel=maybe").unwrap_err().0;
        assert!(e.contains("auto, on or off"), "{e}");
    }

    #[test]
    fn defaults_are_cpu_clock_10ms_jfr() {
        let o = parse("").unwrap();
        assert_eq!(o.event.name, "cpu-clock");
        assert_eq!(o.period(), 10_000_000);
        assert_eq!(o.outputs()[0].format, OutputFormat::Jfr);
    }

    #[test]
    fn full_option_string() {
        let o =
            parse("event=task-clock,interval=1ms,counters=task-clock+page-faults,file=a.jfr,file=b.html,threads,quiet")
                .unwrap();
        assert_eq!(o.event.name, "task-clock");
        assert_eq!(o.interval, Interval::Fixed(1_000_000));
        assert_eq!(o.counters.iter().map(|c| c.name).collect::<Vec<_>>(), ["task-clock", "page-faults"]);
        assert_eq!(o.files.len(), 2);
        assert_eq!(o.files[1].format, OutputFormat::Html);
        assert!(o.per_thread && o.quiet);
    }

    #[test]
    fn counts_for_count_events_and_raw_events() {
        let o = parse("event=page-faults,interval=10").unwrap();
        assert_eq!(o.interval, Interval::Fixed(10));
        let o = parse("event=r01c2,interval=5000").unwrap();
        assert_eq!((o.event.type_, o.event.config), (PERF_TYPE_RAW, 0x1c2));
        assert!(o.event.hardware);
        assert_eq!(parse("interval=auto").unwrap().interval, Interval::Auto);
    }

    #[test]
    fn a_raw_event_name_is_kept_once_and_their_number_is_bounded() {
        let a = parse_event("r0abc").unwrap().name;
        let b = parse_event("r0abc").unwrap().name;
        assert!(std::ptr::eq(a, b), "the same raw name was kept twice");
        let names = std::sync::Mutex::new(Vec::new());
        for i in 0..3 {
            keep_name(&names, &format!("r{i}"), 3).unwrap();
        }
        let e = keep_name(&names, "r9", 3).unwrap_err().0;
        assert!(e.contains("distinct raw events"), "{e}");
        assert!(keep_name(&names, "r1", 3).is_ok(), "a name already kept still works");
    }

    #[test]
    fn errors_name_the_problem_and_the_choices() {
        let e = parse("event=cyclez").unwrap_err().0;
        assert!(
            e.contains("unknown event `cyclez`") && e.contains("cpu-clock") && e.contains("dTLB-load-misses"),
            "{e}"
        );
        let e = parse("bogus=1").unwrap_err().0;
        assert!(e.contains("unknown option `bogus`") && e.contains("interval"), "{e}");
        let e = parse("event=page-faults,interval=1ms").unwrap_err().0;
        assert!(e.contains("is a time, but page-faults counts events"), "{e}");
        let e = parse("interval=fast").unwrap_err().0;
        assert!(e.contains("cpu-clock is a clock event"), "{e}");
        let e = parse("file=out.txt").unwrap_err().0;
        assert!(e.contains(".jfr, .collapsed, .html, .svg, .pb.gz (pprof) or .json"), "{e}");
        assert_eq!(output_format("out/p.pb.gz").unwrap(), OutputFormat::Pprof);
        assert_eq!(output_format("p.pprof").unwrap(), OutputFormat::Pprof);
        assert_eq!(output_format("p.json").unwrap(), OutputFormat::Json);
        assert!(output_format("p.gz").is_err());
        let e = parse("sampler=jvmti,event=page-faults").unwrap_err().0;
        assert!(e.contains("samples on a timer"), "{e}");
        let o = parse("sampler=sps,interval=1ms,spsthreads=4,spswaiting").unwrap();
        assert_eq!((o.sampler, o.sps_threads, o.sps_waiting), (SamplerKind::Sps, 4, true));
        let o = parse("sampler=isps,interval=1ms,spsthreads=2,jstackdepth=4096").unwrap();
        assert_eq!((o.sampler, o.sps_threads, o.max_depth), (SamplerKind::Isps, 2, 4096));
        let e = parse("sampler=magic").unwrap_err().0;
        assert!(e.contains("asgct, jvmti, sps"), "{e}");
        let e = parse("interval=1us").unwrap_err().0;
        assert!(e.contains("below 10us"), "{e}");
        let e = parse("event=").unwrap_err().0;
        assert!(e.contains("needs a value"), "{e}");
    }

    /// `sampler=` takes every kind's name but `wall` (chosen by `event=wall`), and the error
    /// lists exactly those names.
    #[test]
    fn sampler_names_are_the_kinds_names() {
        for (text, kind) in [
            ("", SamplerKind::Asgct),
            ("sampler=asgct", SamplerKind::Asgct),
            ("sampler=jvmti", SamplerKind::Jvmti),
            ("sampler=sps", SamplerKind::Sps),
            ("sampler=isps", SamplerKind::Isps),
            ("sampler=chain", SamplerKind::Chain),
            ("event=wall", SamplerKind::Wall),
        ] {
            assert_eq!(parse(text).unwrap().sampler, kind, "{text}");
        }
        for name in ["magic", "wall", "none", "jfr", ""] {
            let e = parse(&format!("sampler={name}")).unwrap_err().0;
            let want = if name.is_empty() {
                "option `sampler` needs a value".to_string()
            } else {
                format!("unknown sampler `{name}`; valid samplers: asgct, jvmti, sps, isps, chain")
            };
            assert!(e.contains(&want), "{e}");
        }
    }

    /// Every option that is a time or a count is refused outside its range, with one line that
    /// names the range; the ends of each range are taken. `sampler=jvmti,interval=2^64-1` used
    /// to be taken, and its timer's next tick wrapped into the past.
    #[test]
    fn times_and_counts_are_refused_outside_their_range() {
        let clock = "from 10us to 60s";
        for (bad, range) in [
            ("sampler=jvmti,interval=18446744073709551615", clock),
            ("interval=99999999999999999999", clock),
            ("interval=61s", clock),
            ("interval=2m", clock),
            ("event=wall,interval=99999999999999999999s", clock),
            ("event=page-faults,interval=18446744073709551615", "from 1 to 1000000000000"),
            ("event=cycles,interval=1000000000001", "from 1 to 1000000000000"),
            ("flush=500ms", "from 1s to 1h"),
            ("flush=61m", "from 1s to 1h"),
            ("flush=18446744073709551615s", "from 1s to 1h"),
            ("lock=61s", "from 0 to 60s"),
            ("lock=99999999999999999999ms", "from 0 to 60s"),
            ("sampler=sps,spsthreads=4097", "from 1 to 4096"),
            ("jstackdepth=4097", "from 1 to 4096"),
            ("jstackdepth=0", "from 1 to 4096"),
        ] {
            let e = parse(bad).unwrap_err().0;
            assert!(e.contains(range) && !e.contains('\n'), "{bad}: {e}");
        }
        let o = parse("sampler=jvmti,interval=60s,flush=60m,lock=60s,jstackdepth=4096").unwrap();
        assert_eq!((o.period(), o.flush_secs, o.lock, o.max_depth), (60_000_000_000, 3600, Some(60_000_000_000), 4096));
        let o = parse("interval=10us,flush=1s,jstackdepth=1").unwrap();
        assert_eq!((o.period(), o.flush_secs, o.max_depth), (10_000, 1, 1));
        assert_eq!(parse("event=cycles,interval=1000000000000").unwrap().period(), 1_000_000_000_000);
        assert_eq!(parse("sampler=sps,spsthreads=4096").unwrap().sps_threads, 4096);
    }

    #[test]
    fn path_patterns_expand() {
        let f = OutputFile { pattern: "p-%p-%t.jfr".into(), format: OutputFormat::Jfr };
        assert_eq!(f.path(42, 0), "p-42-19700101-000000.jfr");
        // 2026-11-22 02:05:39 UTC
        assert_eq!(format_timestamp(1_795_313_139), "20261122-020539");
    }

    #[test]
    fn help_lists_every_event() {
        let h = help_text();
        for e in EVENTS {
            assert!(h.contains(e.name));
        }
    }

    /// Every option the parser takes (the list its error gives) has a line of its own in the
    /// help, as `  KEY`, `  KEY=` or `  KEY[=`.
    #[test]
    fn help_lists_every_option() {
        let h = help_text();
        for key in KEYS.split(", ") {
            let listed = h.lines().any(|l| {
                l.strip_prefix("  ")
                    .and_then(|l| l.strip_prefix(key))
                    .is_some_and(|rest| rest.starts_with([' ', '=', '[']))
            });
            assert!(listed, "`{key}` is not in the help");
        }
    }
}

#[cfg(test)]
mod sysfs_tests {
    use super::*;

    /// Intel's `cpu` PMU format files (as a Skylake exposes them).
    fn intel(term: &str) -> Option<String> {
        Some(
            match term {
                "event" => "config:0-7",
                "umask" => "config:8-15",
                "ldlat" => "config1:0-15",
                "inv" => "config:23",
                "cmask" => "config:24-31",
                _ => return None,
            }
            .to_string(),
        )
    }

    #[test]
    fn alloc_and_lock_modes_alone_and_beside_the_cpu_event() {
        let o = parse("event=alloc").unwrap();
        assert_eq!((o.cpu, o.alloc, o.lock), (false, Some(DEFAULT_ALLOC_INTERVAL), None));
        let o = parse("event=cpu,alloc=1m,lock").unwrap();
        assert_eq!((o.cpu, o.alloc, o.lock), (true, Some(1 << 20), Some(DEFAULT_LOCK_THRESHOLD_NS)));
        assert_eq!(o.event.name, "cpu-clock");
        let o = parse("event=lock,lock=1ms,alloc=4096").unwrap();
        assert_eq!((o.cpu, o.alloc, o.lock), (false, Some(4096), Some(1_000_000)));
        assert_eq!(parse("lock=0").unwrap().lock, Some(0));
        for bad in ["alloc=0", "alloc=2g", "alloc=lots", "lock=soon"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
        let e = parse("event=alloc,interval=1ms").unwrap_err().to_string();
        assert!(e.contains("event=cpu,alloc"), "{e}");
    }

    #[test]
    fn pebs_events_resolve_from_their_sysfs_description() {
        // /sys/bus/event_source/devices/cpu/events/mem-loads and mem-stores.
        assert_eq!(sysfs_config("event=0xcd,umask=0x1,ldlat=3", 0, intel), Ok((0x01cd, 3)));
        assert_eq!(sysfs_config("event=0xcd,umask=0x1,ldlat=3", 30, intel), Ok((0x01cd, 30)), "hpm's threshold");
        assert_eq!(sysfs_config("event=0xd0,umask=0x82", 0, intel), Ok((0x82d0, 0)));
        assert_eq!(sysfs_config("event=0x3c,inv,cmask=1", 0, intel), Ok((0x3c | 1 << 23 | 1 << 24, 0)));
        // A split field (AMD's event select: config:0-7,32-35).
        let amd = |t: &str| (t == "event").then(|| "config:0-7,32-35".to_string());
        assert_eq!(sysfs_config("event=0x1c0", 0, amd), Ok((0xc0 | 1 << 32, 0)));
        assert!(sysfs_config("event=0xcd,frontend=0x1", 0, intel).unwrap_err().contains("no format for `frontend`"));
        assert!(sysfs_config("event=zz", 0, intel).unwrap_err().contains("not a number"));
    }

    #[test]
    fn memory_events_are_named_and_precise() {
        for name in ["mem-loads", "mem-stores", "ibs-op"] {
            let e = parse_event(name).unwrap();
            assert!(e.memory && e.hardware && e.data_address && e.sysfs.is_some(), "{name}");
        }
        assert_eq!(parse_event("mem-loads").unwrap().config1, 30);
    }
}

/// The fuzzing target of the grammar (`fuzz/fuzz_targets/options.rs`): any string is parsed or
/// refused, never a panic.
pub fn fuzz(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = parse(s);
    }
}

/// Every committed fuzzing input of the grammar (`fuzz/corpus/options/*`, `fuzz/regressions/options/*`)
/// runs through [`fuzz`] on stable, so a finding stays fixed without a nightly toolchain.
#[cfg(test)]
mod fuzz_replay {
    #[test]
    fn every_committed_input_passes_the_options_target() {
        let fuzz = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        let mut n = 0;
        for kind in ["corpus", "regressions"] {
            let Ok(dir) = std::fs::read_dir(fuzz.join(kind).join("options")) else { continue };
            for entry in dir {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let r = std::panic::catch_unwind(|| super::fuzz(&data));
                assert!(r.is_ok(), "fuzz target options fails on {}", path.display());
                n += 1;
            }
        }
        assert!(n > 0, "no committed input for fuzz target options");
    }
}
