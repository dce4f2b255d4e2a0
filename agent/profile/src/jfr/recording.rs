//! Reader: builds a [`Recording`] from any JFR file, chunk by chunk.
//!
//! Samples come from `hpm.Sample` in chunks that declare it (our files: weight, counters, data
//! address, ip and component survive the round trip), otherwise from `jdk.ExecutionSample`
//! (recordings made by the JDK itself; `jdk.NativeMethodSample` is left out, since it stands
//! for threads waiting in native code rather than using the CPU).
//!
//! What the file names by reference is read once per chunk and shared: stacks, methods and
//! threads by their pool key, strings by their place in the chunk ([`ByPlace`]). A string named
//! by thousands of methods, events or markers is one copy, converted and hashed once, so the
//! recording's size and the time to build it follow the file's size.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::by_place::ByPlace;
use super::error::{LostTail, ReadError, ReadErrorKind};
use super::parser::for_each_chunk;
use super::pools::NATIVE_DESCRIPTOR;
use super::schema::{HPM_SAMPLE_FIXED_FIELDS, SOURCE_FILE_TYPE};
use super::value::{Chunk, ObjectView, Value};
use super::virtual_bound::{ThreadKey, VirtualBound};
use crate::duration::{parse_duration, Accept};
use crate::hash::IntMap;
use crate::limits::{
    checked_sum, LimitError, MAX_CODE_BYTES, MAX_FILE_COUNTERS, MAX_NAME_BYTES, MAX_STACK_DEPTH, MAX_THREAD_NAME_BYTES,
    NAME_BYTES_PER_FILE_BYTE, NAME_BYTES_SLACK,
};
use crate::model::Space;
use crate::model::*;

const WANTED: &[&str] = &[
    "hpm.Sample",
    "hpm.Config",
    "hpm.Drops",
    "jdk.ExecutionSample",
    "jdk.ActiveSetting",
    "jdk.JVMInformation",
    "jdk.ObjectAllocationSample",
    "jdk.JavaMonitorEnter",
    "jdk.ThreadPark",
    "jdk.VirtualThreadPinned",
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    super::schema::COMPILED_CODE_EVENT,
];

/// Event name used for recordings made by the JDK's own sampler.
pub const JDK_EVENT_NAME: &str = "jfr-execution-sample";

/// A recording read from a file, and the incomplete last chunk, if the file ends in one.
#[derive(Clone, Debug)]
pub struct ReadRecording {
    pub recording: Recording,
    pub lost: Option<LostTail>,
    /// What the reader left out and why, for the user (TLAB allocation events beside the
    /// JDK's allocation samples).
    pub notes: Vec<String>,
}

/// Reads a whole `.jfr` file (every complete chunk) into a [`Recording`]. A last chunk cut
/// short is not an error: [`ReadRecording::lost`] says what was lost.
pub fn read_recording(path: &Path) -> Result<ReadRecording, ReadError> {
    let mut b = Builder::default();
    let read =
        for_each_chunk(path, &|t| WANTED.contains(&&*t.name), |c| b.add_chunk(&c).map_err(ReadErrorKind::Limit))?;
    let (recording, notes) = b.finish_noted();
    Ok(ReadRecording { recording, lost: read.lost, notes })
}

/// [`read_recording`] of a file image in memory (`name` for errors), chunk by chunk: the
/// agent's JFR chunks kept in memory, read back for a pprof or JSON dump.
pub fn recording_from_bytes(data: &[u8], name: &str) -> Result<Recording, ReadError> {
    let err = |chunk, kind| ReadError { path: name.to_string(), chunk, kind };
    if data.is_empty() {
        return Err(err(None, ReadErrorKind::Empty));
    }
    let mut b = Builder::default();
    super::parser::for_each_chunk_in(data, &|t| WANTED.contains(&&*t.name), |_, c| {
        b.add_chunk(&c).map_err(ReadErrorKind::Limit)
    })
    .map_err(|(n, kind)| err(Some(n), kind))?;
    Ok(b.finish())
}

/// Builds a [`Recording`] from parsed chunks (in file order).
pub fn recording_from_chunks<'a>(chunks: impl IntoIterator<Item = &'a Chunk>) -> Result<Recording, LimitError> {
    let mut b = Builder::default();
    for c in chunks {
        b.add_chunk(c)?;
    }
    Ok(b.finish())
}

/// [`recording_from_chunks`] keeping at most `max_virtual` virtual threads apart, with the
/// reader's notes.
#[cfg(test)]
pub(crate) fn recording_bounded<'a>(
    chunks: impl IntoIterator<Item = &'a Chunk>,
    max_virtual: usize,
) -> Result<(Recording, Vec<String>), LimitError> {
    let mut b = Builder { virtuals: VirtualBound::with_max(max_virtual), ..Default::default() };
    for c in chunks {
        b.add_chunk(c)?;
    }
    Ok(b.finish_noted())
}

#[derive(Default)]
struct Builder {
    rec: Recording,
    chunks: usize,
    threads: HashMap<ThreadKey, ThreadIdx>,
    virtuals: VirtualBound,
    saw_config: bool,
    jdk_period_ns: Option<u64>,
    /// Running totals, so that no later sum over samples can overflow.
    weight_total: u64,
    counter_totals: Vec<u64>,
    /// Compiled code read: (address, install time) of each blob -> its index in `rec.code`,
    /// and the bytes decoded.
    code_seen: std::collections::HashMap<(u64, u64), usize>,
    code_bytes: usize,
    /// Bytes of the chunks read so far, and of the names of the distinct methods read.
    file_bytes: u64,
    name_bytes: u64,
    /// Drop reasons and thread states -> their index in `rec.drops` and `rec.states`.
    drop_index: HashMap<String, usize>,
    state_index: HashMap<String, StateIdx>,
    /// Allocations read from TLAB events ([`super::jvmevents::TLAB_EVENTS`]): kept only if the
    /// recording has no `jdk.ObjectAllocationSample`, which estimates the same bytes.
    tlab_events: Vec<JvmEvent>,
}

/// Per-chunk caches: pool key -> interned index, and what was made of a string by its place
/// ([`ByPlace`]). A stack is read once per chunk and shared by every sample that refers to it.
#[derive(Default)]
struct ChunkCache<'c> {
    methods: IntMap<u64, MethodIdx>,
    stacks: IntMap<u64, (Stack, bool)>,
    threads: IntMap<u64, ThreadIdx>,
    /// Class key -> source file, from hpm's `hpm.types.SourceFile` pool.
    source_files: HashMap<u64, Arc<str>>,
    /// Names (methods, descriptors, data targets, source files), one shared copy each.
    names: ByPlace<'c, Arc<str>>,
    /// Class names as the file has them (`a/b/C`) in Java form (`a.b.C`): methods' classes
    /// and the JVM events' classes (whose arrays are descriptors).
    classes: ByPlace<'c, Arc<str>>,
    event_classes: ByPlace<'c, Arc<str>>,
    /// Index in `rec.drops` and `rec.states` of a reason and a state.
    drops: ByPlace<'c, usize>,
    states: ByPlace<'c, StateIdx>,
    /// The bytes of a compiled blob's hex string, decoded once (None: not `size` bytes of hex).
    code: ByPlace<'c, Option<Arc<[u8]>>>,
}

/// A sample's `data` fields (None when it has no data space).
fn data_target<'c>(e: &ObjectView<'c>, cache: &mut ChunkCache<'c>) -> Option<Box<DataTarget>> {
    let space = Space::by_name(e.str("dataSpace").filter(|s| !s.is_empty())?)?;
    let mut name = |field: &str| -> Option<Arc<str>> {
        let s = e.str(field).filter(|s| !s.is_empty())?;
        Some(cache.names.get(s, Arc::from))
    };
    let (class, field, source) = (name("dataClass"), name("dataField"), name("dataSource"));
    let index = e.i64("dataIndex").filter(|i| (0..=i64::from(i32::MAX)).contains(i)).map(|i| i as u64);
    let (offset, latency) = (e.i64("dataOffset").unwrap_or(0) as u64, e.i64("dataLatency").unwrap_or(0) as u64);
    Some(Box::new(DataTarget { space, class, field, offset, index, source, latency }))
}

impl Builder {
    fn add_chunk(&mut self, c: &Chunk) -> Result<(), LimitError> {
        let h = &c.header;
        let start = h.ticks_to_nanos(h.start_ticks);
        if self.chunks == 0 {
            self.rec.start_wall_ns = h.start_nanos;
            self.rec.start_ticks = start;
        }
        self.rec.start_ticks = self.rec.start_ticks.min(start);
        self.rec.end_ticks = self.rec.end_ticks.max(start.saturating_add(h.duration_nanos));
        self.chunks += 1;
        self.file_bytes = self.file_bytes.saturating_add(h.size);

        // One configuration per chunk: the last (a chunk has one; more would say the same).
        if let Some(e) = c.events_named("hpm.Config").last() {
            self.config(&e);
        }
        let mut cache = ChunkCache::default();
        for e in c.events_named("hpm.Drops") {
            let count = e.i64("count").unwrap_or(0) as u64;
            let slot = match e.str("reason") {
                Some(reason) => cache.drops.get(reason, |r| self.drop_slot(r)),
                None => self.drop_slot(""),
            };
            self.rec.drops[slot].1 = count; // cumulative: the latest value wins
        }
        if !self.saw_config {
            self.jdk_info(c);
        }

        cache.source_files = source_files(c, &mut cache.names)?;
        if let Some(t) = c.metadata.by_name("hpm.Sample") {
            // Map this chunk's counter fields to `rec.counters` by their label (the name).
            let mut counter_slots = Vec::new();
            for f in t.fields.iter().filter(|f| !HPM_SAMPLE_FIXED_FIELDS.contains(&&*f.name)) {
                let name = c.metadata.annotation_value(&f.annotations, "jdk.jfr.Label").unwrap_or(&f.name);
                // The first slot of that name not taken yet (a counter may be listed twice).
                let free = (0..self.rec.counters.len())
                    .find(|&i| self.rec.counters[i] == name && !counter_slots.iter().any(|(_, s)| *s == i));
                let slot = match free {
                    Some(i) => i,
                    None => {
                        // Every sample holds every counter of the file: chunks of counters
                        // of their own would multiply them.
                        if self.rec.counters.len() == MAX_FILE_COUNTERS {
                            return Err(LimitError::TooManyCounters { counters: MAX_FILE_COUNTERS + 1 });
                        }
                        self.rec.counters.push(name_of(Some(name))?.to_string());
                        self.rec.counters.len() - 1
                    }
                };
                let how = c.metadata.annotation_value(&f.annotations, "jdk.jfr.Description").unwrap_or("");
                if self.rec.counter_periods.len() <= slot {
                    self.rec.counter_periods.resize(slot + 1, 0);
                }
                self.rec.counter_periods[slot] = crate::jfr::schema::counter_period_of(how);
                counter_slots.push((f.name.clone(), slot));
            }
            for e in c.events_named("hpm.Sample") {
                let mut s = self.sample(c, &e, &mut cache, h.ticks_to_nanos(e.i64("startTime").unwrap_or(0) as u64))?;
                s.weight = e.i64("period").unwrap_or(0) as u64;
                s.data_addr = e.i64("dataAddress").filter(|&a| a != 0).map(|a| a as u64);
                s.ip = e.i64("ip").unwrap_or(0) as u64;
                s.component = VmComponent::from_name(e.str("component").unwrap_or(""));
                s.state = e.str("state").filter(|n| !n.is_empty()).map(|n| cache.states.get(n, |n| self.state_idx(n)));
                s.data = data_target(&e, &mut cache);
                // The sampled thread itself (or null) for a platform thread's sample.
                s.carrier = match (e.raw("carrierThread"), e.raw("sampledThread")) {
                    (Some(Value::Ref { key, .. }), Some(Value::Ref { key: own, .. })) if key == own => None,
                    (Some(v @ Value::Ref { key, .. }), _) if *key != 0 => Some(self.thread(c, Some(v), &mut cache)),
                    _ => None,
                };
                for (field, slot) in &counter_slots {
                    if s.counters.len() <= *slot {
                        s.counters.resize(*slot + 1, 0);
                    }
                    s.counters[*slot] = e.i64(field).unwrap_or(0) as u64;
                }
                self.push(s)?;
            }
        } else {
            let weight = self.jdk_period_ns.unwrap_or(0);
            for e in c.events_named("jdk.ExecutionSample") {
                let mut s = self.sample(c, &e, &mut cache, h.ticks_to_nanos(e.i64("startTime").unwrap_or(0) as u64))?;
                s.weight = weight;
                s.component = match s.stack.first().map(|f| f.kind) {
                    Some(k) if k.is_java() => VmComponent::Java,
                    Some(FrameKind::Native) => VmComponent::Native,
                    Some(FrameKind::Cpp) => VmComponent::Runtime,
                    Some(FrameKind::Kernel) => VmComponent::Kernel,
                    _ => VmComponent::Unknown,
                };
                self.push(s)?;
            }
        }
        for e in c.events_named(super::schema::COMPILED_CODE_EVENT) {
            let method = self.method(c, e.raw("method"), &mut cache)?;
            let (start, size) = (e.i64("address").unwrap_or(0) as u64, e.i64("size").unwrap_or(0) as u64);
            if start.checked_add(size).is_none() {
                continue; // not code anywhere: a corrupt or forged event
            }
            let hex = e.str("code").unwrap_or("");
            // Bytes that are not `size` bytes of hex, or past the file's budget, are left out:
            // the blob is still known. A blob listed again by a later chunk is read once, with
            // its instructions from whichever chunk has them (the agent writes them once).
            let loaded_at = h.ticks_to_nanos(e.i64("startTime").unwrap_or(0) as u64);
            let known = self.code_seen.get(&(start, loaded_at)).copied();
            if known.is_some_and(|i| hex.is_empty() || !self.rec.code[i].bytes.is_empty()) {
                continue;
            }
            // The size of the entry kept (a forged later event could give another).
            let size = known.map_or(size, |i| self.rec.code[i].size);
            let bytes = if hex.len() as u64 == size.saturating_mul(2) {
                // Decoded once per string, however many events name it; the budget counts
                // what is decoded.
                let budget = &mut self.code_bytes;
                cache.code.get(hex, |hex| {
                    let fits = budget.saturating_add(hex.len() / 2) <= MAX_CODE_BYTES;
                    let b = if fits { crate::text::parse_hex(hex.as_bytes()) } else { None };
                    *budget += b.as_ref().map_or(0, Vec::len);
                    b.map(Into::into)
                })
            } else {
                None
            };
            let bytes = bytes.unwrap_or_else(|| Arc::from(&[][..]));
            match known {
                Some(i) => self.rec.code[i].bytes = bytes,
                None => {
                    self.code_seen.insert((start, loaded_at), self.rec.code.len());
                    self.rec.code.push(CompiledCode { method, start, size, loaded_at, bytes });
                }
            }
        }
        for kind in JvmEventKind::ALL {
            for e in c.events_named(kind.jfr_name()) {
                let thread = self.thread(c, e.raw("eventThread"), &mut cache);
                let (stack, truncated) = self.stack(c, e.raw("stackTrace"), &mut cache)?;
                let mut ev = JvmEvent::of(kind, stack);
                ev.thread = thread;
                ev.truncated = truncated;
                super::jvmevents::event_fields(kind, &e, |t| h.ticks_to_nanos(t), &mut cache.event_classes, &mut ev);
                self.weight_total = checked_sum(self.weight_total, ev.weight, "event weights")?;
                self.rec.events.push(ev);
            }
        }
        for name in super::jvmevents::TLAB_EVENTS {
            for e in c.events_named(name) {
                let thread = self.thread(c, e.raw("eventThread"), &mut cache);
                let (stack, truncated) = self.stack(c, e.raw("stackTrace"), &mut cache)?;
                let mut ev = JvmEvent::of(JvmEventKind::Allocation, stack);
                ev.thread = thread;
                ev.truncated = truncated;
                let kind = JvmEventKind::Allocation;
                super::jvmevents::event_fields(kind, &e, |t| h.ticks_to_nanos(t), &mut cache.event_classes, &mut ev);
                let size = |f: &str| e.i64(f).unwrap_or(0);
                ev.weight = super::jvmevents::tlab_weight(name, size("allocationSize"), size("tlabSize"));
                self.weight_total = checked_sum(self.weight_total, ev.weight, "event weights")?;
                self.tlab_events.push(ev);
            }
        }
        Ok(())
    }

    /// Adds a sample, keeping the totals of weights and counters within 64 bits: every sum an
    /// output or analysis forms over samples is then bounded by these.
    fn push(&mut self, s: Sample) -> Result<(), LimitError> {
        self.weight_total = checked_sum(self.weight_total, s.weight, "sample weights (periods)")?;
        if self.counter_totals.len() < s.counters.len() {
            self.counter_totals.resize(s.counters.len(), 0);
        }
        for (i, v) in s.counters.iter().enumerate() {
            let what = || format!("values of counter `{}`", self.rec.counters.get(i).map_or("?", String::as_str));
            self.counter_totals[i] =
                self.counter_totals[i].checked_add(*v).ok_or_else(|| LimitError::SumOverflow { what: what() })?;
        }
        self.rec.samples.push(s);
        Ok(())
    }

    /// The index in `rec.drops` of `reason`, added with count 0 if new.
    fn drop_slot(&mut self, reason: &str) -> usize {
        if let Some(&i) = self.drop_index.get(reason) {
            return i;
        }
        self.rec.drops.push((DropReason::from_name(reason), 0));
        self.drop_index.insert(reason.to_string(), self.rec.drops.len() - 1);
        self.rec.drops.len() - 1
    }

    /// [`Recording::state_idx`], found by a hash rather than a search of the states.
    fn state_idx(&mut self, name: &str) -> StateIdx {
        if let Some(&i) = self.state_index.get(name) {
            return i;
        }
        let i = self.rec.state_idx(name);
        self.state_index.insert(name.to_string(), i);
        i
    }

    fn config(&mut self, e: &ObjectView) {
        self.saw_config = true;
        let s = |name: &str| e.str(name).unwrap_or("").to_string();
        self.rec.event = EventInfo {
            name: s("event"),
            requested: s("requestedEvent"),
            period: e.i64("period").unwrap_or(0) as u64,
            unit: if s("periodUnit") == PeriodUnit::Events.name() {
                PeriodUnit::Events
            } else {
                PeriodUnit::Nanoseconds
            },
            fallback: Some(s("fallback")).filter(|f| !f.is_empty()),
            sampler: StackSampler::from_name(&s("sampler")),
            kernel: KernelMode::from_name(&s("kernel")),
            alloc_interval: e.i64("allocInterval").unwrap_or(0).max(0) as u64,
        };
        self.rec.jvm = s("jvm");
        self.rec.pid = e.i64("pid").unwrap_or(0) as u32;
        // Cumulative: the largest count wins.
        self.rec.threads_seen = self.rec.threads_seen.max(e.i64("threadsSeen").unwrap_or(0).max(0) as u64);
        let v = &mut self.rec.virtual_live;
        let long = |name: &str| e.i64(name).unwrap_or(0).max(0) as u64;
        v.thread_ns = v.thread_ns.max(long("virtualThreadNs"));
        v.span_ns = v.span_ns.max(long("virtualThreadSpanNs"));
        v.max = v.max.max(long("virtualThreadMax"));
        v.mounted_ns = v.mounted_ns.max(long("virtualThreadMountedNs"));
    }

    /// Event info, JVM and pid for recordings made by the JDK.
    fn jdk_info(&mut self, c: &Chunk) {
        let exec_id = c.metadata.by_name("jdk.ExecutionSample").map(|t| t.id as i64);
        for e in c.events_named("jdk.ActiveSetting") {
            if e.i64("id") == exec_id && e.str("name") == Some("period") {
                // A duration is a few characters; a long value is no period (and not parsed).
                if let Some(p) = e.str("value").filter(|v| v.len() <= 64).and_then(parse_duration_ns) {
                    self.jdk_period_ns = Some(p);
                }
            }
        }
        // One per chunk: the last (more would say the same).
        if let Some(e) = c.events_named("jdk.JVMInformation").last() {
            let name = e.str("jvmName").unwrap_or("");
            let version = e.str("jvmVersion").unwrap_or("");
            self.rec.jvm = format!("{name} {version}").trim().to_string();
            self.rec.pid = e.i64("pid").unwrap_or(0) as u32;
        }
        self.rec.event = EventInfo {
            name: JDK_EVENT_NAME.into(),
            requested: JDK_EVENT_NAME.into(),
            period: self.jdk_period_ns.unwrap_or(0),
            unit: PeriodUnit::Nanoseconds,
            fallback: None,
            sampler: StackSampler::Jfr,
            // The JDK's sampler walks Java threads at a timer; kernel time is not separated.
            kernel: KernelMode::Excluded,
            alloc_interval: 0,
        };
    }

    /// Time, thread and stack of a sample event; the rest is filled by the caller.
    fn sample<'c>(
        &mut self,
        c: &'c Chunk,
        e: &ObjectView<'c>,
        cache: &mut ChunkCache<'c>,
        time: u64,
    ) -> Result<Sample, LimitError> {
        let thread = self.thread(c, e.raw("sampledThread"), cache);
        let (stack, truncated) = self.stack(c, e.raw("stackTrace"), cache)?;
        Ok(Sample {
            carrier: None,
            time,
            thread,
            stack,
            truncated,
            weight: 0,
            repeat: 1,
            counters: Vec::new(),
            data_addr: None,
            data: None,
            ip: 0,
            component: VmComponent::Unknown,
            state: None,
        })
    }

    fn thread(&mut self, c: &Chunk, v: Option<&Value>, cache: &mut ChunkCache) -> ThreadIdx {
        let key = match v {
            Some(Value::Ref { key, .. }) => Some(*key),
            _ => None,
        };
        if let Some(&t) = key.and_then(|k| cache.threads.get(&k)) {
            return t;
        }
        let mut info = match v.and_then(|v| c.object(v)) {
            Some(t) => {
                let java_name = t.str("javaName");
                let java_id = t.i64("javaThreadId").unwrap_or(0) as u64;
                ThreadInfo {
                    os_tid: t.i64("osThreadId").unwrap_or(0) as u32,
                    java_id: Some(java_id).filter(|&i| i != 0),
                    name: thread_name(java_name.or(t.str("osName")).unwrap_or("")),
                    is_java: java_name.is_some(),
                    is_virtual: t.bool("virtual").unwrap_or(false),
                }
            }
            None => ThreadInfo { name: "[unknown thread]".into(), ..Default::default() },
        };
        // A virtual thread's Java id is its own, never a platform thread's: the key tells them
        // apart all the same (the entry standing for many has neither id).
        let mut id = (info.os_tid as u64, info.java_id.unwrap_or(0), info.is_virtual);
        if !self.threads.contains_key(&id) {
            (id, info) = self.virtuals.admit(id, info);
        }
        let idx = match self.threads.get(&id) {
            Some(&i) => {
                // Same thread, renamed since: keep the latest name.
                let t = &mut self.rec.threads[i.0 as usize];
                if !info.name.is_empty() && t.name != info.name {
                    t.name = info.name;
                    t.is_java |= info.is_java;
                }
                i
            }
            None => {
                let i = self.rec.add_thread(info);
                self.threads.insert(id, i);
                i
            }
        };
        if let Some(k) = key {
            cache.threads.insert(k, idx);
        }
        idx
    }

    fn stack<'c>(
        &mut self,
        c: &'c Chunk,
        v: Option<&'c Value>,
        cache: &mut ChunkCache<'c>,
    ) -> Result<(Stack, bool), LimitError> {
        let key = match v {
            Some(Value::Ref { key, .. }) => Some(*key),
            _ => None,
        };
        if let Some(s) = key.and_then(|k| cache.stacks.get(&k)) {
            return Ok(s.clone());
        }
        let mut frames = Vec::new();
        let mut truncated = false;
        if let Some(st) = v.and_then(|v| c.object(v)) {
            truncated = st.bool("truncated").unwrap_or(false);
            let all = st.array("frames").unwrap_or(&[]);
            if all.len() > MAX_STACK_DEPTH {
                return Err(LimitError::StackTooDeep { frames: all.len() as u64 });
            }
            frames.reserve_exact(all.len());
            for f in all {
                let Some(f) = c.object(f) else { continue };
                frames.push(Frame {
                    method: self.method(c, f.raw("method"), cache)?,
                    bci: f.i64("bytecodeIndex").unwrap_or(-1) as i32,
                    line: f.i64("lineNumber").unwrap_or(-1) as i32,
                    kind: FrameKind::from_jfr_name(f.str("type").unwrap_or("")),
                });
            }
        }
        let stack: Stack = frames.into();
        if let Some(k) = key {
            cache.stacks.insert(k, (stack.clone(), truncated));
        }
        Ok((stack, truncated))
    }

    fn method<'c>(
        &mut self,
        c: &'c Chunk,
        v: Option<&'c Value>,
        cache: &mut ChunkCache<'c>,
    ) -> Result<MethodIdx, LimitError> {
        let key = match v {
            Some(Value::Ref { key, .. }) => Some(*key),
            _ => None,
        };
        if let Some(&m) = key.and_then(|k| cache.methods.get(&k)) {
            return Ok(m);
        }
        let info = match v.and_then(|v| c.object(v)) {
            Some(m) => method_info(&m, cache)?,
            None => MethodInfo::native("[unknown method]"),
        };
        let (before, len) = (self.rec.methods.len(), info.class_name.len() + info.name.len() + info.descriptor.len());
        let idx = self.rec.methods.intern(info);
        if self.rec.methods.len() > before {
            // Every output names each method: thousands of methods named by one long string
            // would be cheap to write and costly to show.
            self.name_bytes += len as u64;
            let allowed = self.file_bytes.saturating_mul(NAME_BYTES_PER_FILE_BYTE).saturating_add(NAME_BYTES_SLACK);
            if self.name_bytes > allowed {
                return Err(LimitError::MethodNamesTooLong { bytes: self.name_bytes, file_bytes: self.file_bytes });
            }
        }
        if let Some(k) = key {
            cache.methods.insert(k, idx);
        }
        Ok(idx)
    }

    fn finish(self) -> Recording {
        self.finish_noted().0
    }

    /// The recording, and what was left out of it for the user to know. TLAB allocation
    /// events join the allocations only where no `jdk.ObjectAllocationSample` is there: both
    /// estimate the same bytes (the JDK's `profile` settings of some versions record both),
    /// and the allocation sample is the JDK's own unbiased estimate.
    fn finish_noted(mut self) -> (Recording, Vec<String>) {
        let mut notes = Vec::new();
        notes.extend(self.virtuals.note());
        let tlab = std::mem::take(&mut self.tlab_events);
        if self.rec.events.iter().any(|e| e.kind == JvmEventKind::Allocation) {
            if !tlab.is_empty() {
                notes.push(format!(
                    "{} TLAB allocation events (jdk.ObjectAllocationInNewTLAB/OutsideTLAB) left out: \
                     the recording's jdk.ObjectAllocationSample events estimate the same allocations",
                    crate::text::group(tlab.len() as u64)
                ));
            }
        } else if !tlab.is_empty() {
            self.rec.events.extend(tlab);
            self.rec.alloc_source = "jdk.ObjectAllocationInNewTLAB/OutsideTLAB".into();
        }
        (self.finish_samples(), notes)
    }

    fn finish_samples(mut self) -> Recording {
        let n = self.rec.counters.len();
        for s in &mut self.rec.samples {
            s.counters.resize(n, 0);
        }
        self.rec
    }
}

fn name_of(v: Option<&str>) -> Result<&str, LimitError> {
    let s = v.unwrap_or("");
    if s.len() > MAX_NAME_BYTES {
        return Err(LimitError::NameTooLong { bytes: s.len() });
    }
    Ok(s)
}

/// A method from its pool entry; its strings shared through `cache` (a class names all its
/// methods, a symbol may name many).
/// The descriptor async-profiler writes for a kernel function.
const KERNEL_DESCRIPTOR: &str = "(Lk;)L;";

fn method_info<'c>(m: &ObjectView<'c>, cache: &mut ChunkCache<'c>) -> Result<MethodInfo, LimitError> {
    let class = m.object("type");
    let class_name = name_of(class.and_then(|c| c.str("name")))?;
    let class_name = cache.classes.get(class_name, |n| n.replace('/', ".").into());
    let descriptor = name_of(m.str("descriptor"))?;
    let source_file = match m.raw("type") {
        Some(Value::Ref { key, .. }) => cache.source_files.get(key).cloned(),
        _ => None,
    };
    let name = name_of(m.str("name"))?;
    // A native symbol: hpm writes it in a class named by its kind (`libjvm.so`, `kernel`),
    // async-profiler in its library's, the kernel's with `(Lk;)L;`. Read back as hpm names
    // native symbols everywhere else: no class, no descriptor, no modifiers.
    if descriptor == NATIVE_DESCRIPTOR || descriptor == KERNEL_DESCRIPTOR {
        return Ok(MethodInfo {
            name: cache.names.get(name, Arc::from),
            hidden: m.bool("hidden").unwrap_or(false),
            ..MethodInfo::default()
        });
    }
    Ok(MethodInfo {
        class_name,
        name: cache.names.get(name, Arc::from),
        descriptor: cache.names.get(descriptor, Arc::from),
        source_file,
        modifiers: m.i64("modifiers").unwrap_or(0) as u32,
        hidden: m.bool("hidden").unwrap_or(false),
    })
}

/// A thread's name as kept: at most [`MAX_THREAD_NAME_BYTES`], cut at a character with `...`.
fn thread_name(s: &str) -> String {
    if s.len() <= MAX_THREAD_NAME_BYTES {
        return s.to_string();
    }
    let mut end = MAX_THREAD_NAME_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// Class key -> source file name, from the `hpm.types.SourceFile` pool hpm writes (JFR's own
/// types have no source file). Files of other producers have no such pool.
fn source_files<'c>(c: &'c Chunk, names: &mut ByPlace<'c, Arc<str>>) -> Result<HashMap<u64, Arc<str>>, LimitError> {
    let mut out = HashMap::new();
    let Some(t) = c.metadata.by_name(SOURCE_FILE_TYPE) else {
        return Ok(out);
    };
    for v in c.pools.get(&t.id).into_iter().flat_map(|p| p.values()) {
        let Some(o) = c.object(v) else { continue };
        let (Some(Value::Ref { key, .. }), Some(file)) = (o.raw("type"), o.str("sourceFile")) else {
            continue;
        };
        if !file.is_empty() {
            out.insert(*key, names.get(name_of(Some(file))?, Arc::from));
        }
    }
    Ok(out)
}

/// Parses a JFR setting duration such as `10 ms`, `20ms`, `1 s` ([`crate::duration`]'s
/// grammar, a unit required); `None` for other settings (`everyChunk`) and for more
/// nanoseconds than 64 bits hold.
pub fn parse_duration_ns(s: &str) -> Option<u64> {
    parse_duration(s, Accept::UNIT_REQUIRED).ok()
}
