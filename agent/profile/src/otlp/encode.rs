//! hpm's samples as an OTLP profiles request ([`super`] states the convention): the
//! [`PeriodBuilder`] interns a period's names and stacks as its chunks come and keeps each
//! sample's values; [`PeriodBuilder::finish`] makes one `Profile` per sample type of them.
//!
//! Memory: the period's distinct strings, functions, locations, stacks and attribute sets,
//! plus 40 bytes per sample, 32 per JVM event and 16 per non-zero counter value: [`PeriodBuilder::approx_bytes`].

use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development as pb;
use opentelemetry_proto::tonic::resource::v1::Resource as PbResource;

use super::dict::{AttrValue, Dict, FuncKey, Interned, LocKey};
use crate::hash::{FastBuild, IntMap};
use crate::model::{
    FrameKind, JvmEventKind, MethodIdx, PeriodUnit, Recording, Sample, SamplerKind, StackSampler, ThreadIdx,
};

/// Who sent the profile: the resource attributes (`None`, an empty service and pid 0 are
/// unknown, and left out).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resource {
    pub service: String,
    pub host: Option<String>,
    pub pid: u32,
    pub runtime_name: Option<String>,
    pub runtime_version: Option<String>,
    pub runtime_description: Option<String>,
}

/// OpenTelemetry's service name for a Java process that names none.
pub const UNKNOWN_SERVICE: &str = "unknown_service:java";

impl Resource {
    /// What a recording knows of its process: its pid and JVM, under [`UNKNOWN_SERVICE`].
    pub fn of_recording(rec: &Recording) -> Resource {
        Resource {
            service: UNKNOWN_SERVICE.into(),
            pid: rec.pid,
            runtime_description: Some(rec.jvm.clone()).filter(|j| !j.is_empty()),
            ..Resource::default()
        }
    }
}

/// Samples summed without their times (a stack table's entry): one OTLP sample with a value
/// and no timestamp, the aggregated shape the format allows.
pub struct Summed<'a> {
    /// Leaf first: (method, source line or -1).
    pub frames: &'a [(MethodIdx, i32)],
    pub thread: ThreadIdx,
    pub samples: u64,
    pub weight: u64,
    /// Aligned with the recording's counters.
    pub counters: &'a [u64],
}

/// A sample's time when it has none ([`Summed`]).
const NO_TIME: u64 = u64::MAX;

/// One sample as kept until the period ends: its interned stack and attributes and its values.
struct Obs {
    time: u64,
    stack: i32,
    attrs: u32,
    weight: u64,
    count: u64,
    /// Its non-zero counter values in `PeriodBuilder::counter_values`.
    counters: std::ops::Range<u32>,
}

/// A JVM event as kept: allocation (bytes) or lock wait (ns).
struct EventObs {
    time: u64,
    stack: i32,
    attrs: u32,
    weight: u64,
    lock: bool,
}

/// The sampling event of the period's samples, as the profiles name it.
struct EventDesc {
    name: String,
    unit: PeriodUnit,
    period: u64,
    wall: bool,
}

/// What names a sample's frames and thread, looked up once per chunk: the method table may
/// change between chunks, the interned indices do not.
#[derive(Default)]
struct ChunkMemo {
    functions: IntMap<MethodIdx, i32>,
    locations: IntMap<(MethodIdx, i32, FrameKind), i32>,
    stacks: IntMap<usize, i32>,
    threads: IntMap<(ThreadIdx, Option<u16>), u32>,
}

/// The profile of one period, built from the chunks the session writes during it.
pub struct PeriodBuilder {
    start_unix_ns: u64,
    dict: Dict,
    /// Each sample's attribute indices, interned.
    attr_sets: Interned<Box<[i32]>>,
    event: Option<EventDesc>,
    alloc_interval: u64,
    /// The counters' names, in the order first met: slots of `counter_values`.
    counters: Vec<String>,
    samples: Vec<Obs>,
    counter_values: Vec<(u32, u64)>,
    events: Vec<EventObs>,
    added: u64,
    /// The samples' and events' times, first and last (wall ns).
    times: Option<(u64, u64)>,
}

impl PeriodBuilder {
    pub fn new(start_unix_ns: u64) -> Self {
        PeriodBuilder {
            start_unix_ns,
            dict: Dict::default(),
            attr_sets: Interned::new(Box::default(), true),
            event: None,
            alloc_interval: 0,
            counters: Vec::new(),
            samples: Vec::new(),
            counter_values: Vec::new(),
            events: Vec::new(),
            added: 0,
            times: None,
        }
    }

    /// Adds a chunk's samples (and the JVM events of `rec.events`): names are interned now,
    /// so a method table that changes later does not matter. Sample times are ticks: wall ns =
    /// `rec.start_wall_ns + (time - rec.start_ticks)`.
    pub fn add(&mut self, rec: &Recording, samples: &[Sample]) {
        self.note_event(rec, !samples.is_empty());
        let slots = self.counter_slots(rec);
        let mut memo = ChunkMemo::default();
        for s in samples {
            let time = wall_ns(rec, s.time);
            self.note_time(time);
            let stack = self.stack(rec, &mut memo, &s.stack);
            let attrs = self.thread_attrs(rec, &mut memo, s.thread, s.state);
            let counters = self.counter_values(&slots, &s.counters);
            self.samples.push(Obs { time, stack, attrs, weight: s.weight, count: s.count(), counters });
            self.added = self.added.saturating_add(s.repeats());
        }
        // A pinned park is a park too: counted once.
        for e in rec.events.iter().filter(|e| e.kind != JvmEventKind::VirtualThreadPinned) {
            let time = wall_ns(rec, e.time);
            self.note_time(time);
            let stack = self.stack(rec, &mut memo, &e.stack);
            let attrs = self.thread_attrs(rec, &mut memo, e.thread, None);
            let lock = e.kind != JvmEventKind::Allocation;
            self.events.push(EventObs { time, stack, attrs, weight: e.weight, lock });
        }
    }

    /// Adds samples summed without their times (a stack table's entry: the frames' kinds are
    /// not known there: a Java method's frame is "jvm", others have no frame type).
    pub fn add_summed(&mut self, rec: &Recording, s: &Summed<'_>) {
        self.note_event(rec, true);
        let slots = self.counter_slots(rec);
        let mut memo = ChunkMemo::default();
        let mut locations = Vec::with_capacity(s.frames.len());
        for &(m, line) in s.frames {
            let kind = if rec.method(m).class_name.is_empty() { FrameKind::Unknown } else { FrameKind::JitCompiled };
            locations.push(self.location(rec, &mut memo, m, line, kind));
        }
        let stack = self.stack_of(locations);
        let attrs = self.thread_attrs(rec, &mut memo, s.thread, None);
        let counters = self.counter_values(&slots, s.counters);
        self.samples.push(Obs { time: NO_TIME, stack, attrs, weight: s.weight, count: s.samples, counters });
        self.added = self.added.saturating_add(s.samples);
    }

    /// Samples added (each counted [`Sample::repeat`] times).
    pub fn samples(&self) -> u64 {
        self.added
    }

    /// Whether no sample nor JVM event was added.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty() && self.events.is_empty()
    }

    /// Memory it holds, for bounds.
    pub fn approx_bytes(&self) -> usize {
        self.dict.approx_bytes()
            + self.attr_sets.approx_bytes()
            + self.samples.capacity() * std::mem::size_of::<Obs>()
            + self.counter_values.capacity() * std::mem::size_of::<(u32, u64)>()
            + self.events.capacity() * std::mem::size_of::<EventObs>()
            + self.counters.iter().map(|c| c.len() + 24).sum::<usize>()
    }

    /// The period's request (the builder is reset for the next period, which starts at
    /// `end_unix_ns`). The profiles span the period, widened to the samples' times if any
    /// lies outside it (a chunk's first samples may predate the period's start).
    pub fn finish(&mut self, end_unix_ns: u64, resource: &Resource) -> ExportProfilesServiceRequest {
        let mut b = std::mem::replace(self, PeriodBuilder::new(end_unix_ns));
        let (first, last) = b.times.unwrap_or((b.start_unix_ns, b.start_unix_ns));
        let start = b.start_unix_ns.min(first);
        let end = end_unix_ns.max(last.saturating_add(1)).max(start);
        let span = Span { start, duration: end - start };
        let mut profiles = Vec::new();
        if let Some(ev) = b.event.take() {
            let unit = match ev.unit {
                PeriodUnit::Nanoseconds => "nanoseconds",
                PeriodUnit::Events => "count",
            };
            let ty = match (ev.unit, ev.wall) {
                (PeriodUnit::Nanoseconds, true) => "wall",
                (PeriodUnit::Nanoseconds, false) => "cpu",
                (PeriodUnit::Events, _) => ev.name.as_str(),
            };
            let period = Some((b.dict.string(&ev.name), b.dict.string(unit), ev.period));
            profiles.push(b.profile(span, (ty, unit), period, |_, o| o.weight));
            profiles.push(b.profile(span, ("samples", "count"), period, |_, o| o.count));
            for slot in 0..b.counters.len() {
                let name = b.counters[slot].clone();
                profiles.push(b.profile(span, (&name, "count"), period, |b, o| {
                    let values = &b.counter_values[o.counters.start as usize..o.counters.end as usize];
                    values.iter().find(|(s, _)| *s as usize == slot).map_or(0, |&(_, v)| v)
                }));
            }
        }
        for lock in [false, true] {
            if b.events.iter().any(|e| e.lock == lock) {
                let (ty, unit) = if lock { ("lock", "nanoseconds") } else { ("alloc", "bytes") };
                let period =
                    (!lock && b.alloc_interval > 0).then(|| (b.dict.string(ty), b.dict.string(unit), b.alloc_interval));
                profiles.push(b.event_profile(span, (ty, unit), period, lock));
            }
        }
        let dictionary = std::mem::take(&mut b.dict).into_proto();
        ExportProfilesServiceRequest {
            resource_profiles: vec![pb::ResourceProfiles {
                resource: Some(resource_proto(resource)),
                scope_profiles: vec![pb::ScopeProfiles {
                    scope: Some(InstrumentationScope {
                        name: "hpm".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    profiles,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
            dictionary: Some(dictionary),
        }
    }

    /// The profile of one sample type of the samples: each with a non-zero `value`.
    fn profile(
        &mut self,
        span: Span,
        (ty, unit): (&str, &str),
        period: Option<(i32, i32, u64)>,
        value: impl Fn(&PeriodBuilder, &Obs) -> u64,
    ) -> pb::Profile {
        let samples = self
            .samples
            .iter()
            .filter_map(|o| {
                let v = value(self, o);
                (v > 0).then(|| self.sample(o.stack, o.attrs, v, o.time))
            })
            .collect();
        let sample_type = self.value_type(ty, unit);
        profile_of(span, sample_type, period, samples)
    }

    /// The profile of the JVM's allocations or lock waits.
    fn event_profile(
        &mut self,
        span: Span,
        (ty, unit): (&str, &str),
        period: Option<(i32, i32, u64)>,
        lock: bool,
    ) -> pb::Profile {
        let samples = self
            .events
            .iter()
            .filter(|e| e.lock == lock && e.weight > 0)
            .map(|e| self.sample(e.stack, e.attrs, e.weight, e.time))
            .collect();
        let sample_type = self.value_type(ty, unit);
        profile_of(span, sample_type, period, samples)
    }

    fn sample(&self, stack: i32, attrs: u32, value: u64, time: u64) -> pb::Sample {
        pb::Sample {
            stack_index: stack,
            attribute_indices: self.attr_sets.get(attrs).to_vec(),
            link_index: 0,
            values: vec![i64::try_from(value).unwrap_or(i64::MAX)],
            timestamps_unix_nano: if time == NO_TIME { Vec::new() } else { vec![time] },
        }
    }

    fn value_type(&mut self, ty: &str, unit: &str) -> pb::ValueType {
        pb::ValueType { type_strindex: self.dict.string(ty), unit_strindex: self.dict.string(unit) }
    }

    /// Takes the recording's sampling event (when it has one, or samples come).
    fn note_event(&mut self, rec: &Recording, samples: bool) {
        if rec.event.alloc_interval > 0 {
            self.alloc_interval = rec.event.alloc_interval;
        }
        if rec.event.sampler == StackSampler::None && !samples {
            return;
        }
        self.event = Some(EventDesc {
            name: rec.event.name.clone(),
            unit: rec.event.unit,
            period: rec.event.period,
            wall: rec.event.sampler == StackSampler::Kind(SamplerKind::Wall) || rec.event.name == "wall",
        });
    }

    fn note_time(&mut self, t: u64) {
        self.times = Some(match self.times {
            Some((a, b)) => (a.min(t), b.max(t)),
            None => (t, t),
        });
    }

    /// The slot of each of the recording's counters.
    fn counter_slots(&mut self, rec: &Recording) -> Vec<u32> {
        let mut slots = Vec::with_capacity(rec.counters.len());
        for c in &rec.counters {
            let slot = match self.counters.iter().position(|n| n == c) {
                Some(i) => i,
                None => {
                    self.counters.push(c.clone());
                    self.counters.len() - 1
                }
            };
            slots.push(slot as u32);
        }
        slots
    }

    fn counter_values(&mut self, slots: &[u32], values: &[u64]) -> std::ops::Range<u32> {
        let start = self.counter_values.len() as u32;
        for (&slot, &v) in slots.iter().zip(values) {
            if v > 0 {
                self.counter_values.push((slot, v));
            }
        }
        start..self.counter_values.len() as u32
    }

    /// The stack table's index of `frames` (leaf first, as the dictionary's stacks are).
    fn stack(&mut self, rec: &Recording, memo: &mut ChunkMemo, frames: &crate::model::Stack) -> i32 {
        let key = frames.as_ptr() as usize;
        if let Some(&i) = memo.stacks.get(&key) {
            return i;
        }
        let locations: Vec<i32> = frames.iter().map(|f| self.location(rec, memo, f.method, f.line, f.kind)).collect();
        let i = self.stack_of(locations);
        memo.stacks.insert(key, i);
        i
    }

    fn stack_of(&mut self, locations: Vec<i32>) -> i32 {
        self.dict.stacks.id(locations.into_boxed_slice())
    }

    fn location(&mut self, rec: &Recording, memo: &mut ChunkMemo, m: MethodIdx, line: i32, kind: FrameKind) -> i32 {
        if let Some(&i) = memo.locations.get(&(m, line, kind)) {
            return i;
        }
        let function = match memo.functions.get(&m) {
            Some(&f) => f,
            None => {
                let f = self.function(rec, m);
                memo.functions.insert(m, f);
                f
            }
        };
        let frame_type = match frame_type(kind) {
            Some(t) => self.dict.attribute("profile.frame.type", AttrValue::Str(t.into())),
            None => 0,
        };
        let i = self.dict.locations.id(LocKey { function, line: i64::from(line.max(0)), frame_type });
        memo.locations.insert((m, line, kind), i);
        i
    }

    /// A method's function: `java.util.HashMap.putVal`, `java/util/HashMap.putVal(...)V`,
    /// `HashMap.java`; a native symbol by its name alone.
    fn function(&mut self, rec: &Recording, m: MethodIdx) -> i32 {
        let info = rec.method(m);
        let name = self.dict.string(&info.display_name());
        let system_name = if info.class_name.is_empty() {
            0
        } else {
            self.dict.string(&format!("{}.{}{}", info.class_name.replace('.', "/"), info.name, info.descriptor))
        };
        let file = self.dict.string(info.source_file.as_deref().unwrap_or(""));
        self.dict.functions.id(FuncKey { name, system_name, file })
    }

    /// The attribute set of a sample of `thread` in `state`: its name, OS id and state, each
    /// where known.
    fn thread_attrs(&mut self, rec: &Recording, memo: &mut ChunkMemo, thread: ThreadIdx, state: Option<u16>) -> u32 {
        if let Some(&i) = memo.threads.get(&(thread, state)) {
            return i;
        }
        let mut attrs = Vec::with_capacity(3);
        if let Some(t) = rec.threads.get(thread.0 as usize) {
            let name = t.shown_name();
            if !name.is_empty() {
                attrs.push(self.dict.attribute("thread.name", AttrValue::Str(name.as_ref().into())));
            }
            if t.os_tid != 0 {
                attrs.push(self.dict.attribute("thread.id", AttrValue::Int(i64::from(t.os_tid))));
            }
        }
        if let Some(name) = state.and_then(|s| rec.states.get(usize::from(s))) {
            attrs.push(self.dict.attribute("thread.state", AttrValue::Str(name.as_str().into())));
        }
        let i = self.attr_sets.id(attrs.into_boxed_slice()) as u32;
        memo.threads.insert((thread, state), i);
        i
    }
}

/// The profiles' time range (wall ns).
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    duration: u64,
}

fn profile_of(
    span: Span,
    sample_type: pb::ValueType,
    period: Option<(i32, i32, u64)>,
    samples: Vec<pb::Sample>,
) -> pb::Profile {
    pb::Profile {
        sample_type: Some(sample_type),
        samples,
        time_unix_nano: span.start,
        duration_nano: span.duration,
        period_type: period.map(|(ty, unit, _)| pb::ValueType { type_strindex: ty, unit_strindex: unit }),
        period: period.map_or(0, |(_, _, p)| i64::try_from(p).unwrap_or(i64::MAX)),
        profile_id: profile_id(),
        ..Default::default()
    }
}

/// The `profile.frame.type` of a frame: "jvm" for Java frames, "native", "kernel"; none
/// where unknown.
fn frame_type(kind: FrameKind) -> Option<&'static str> {
    match kind {
        FrameKind::Interpreted | FrameKind::JitCompiled | FrameKind::Inlined => Some("jvm"),
        FrameKind::Native | FrameKind::Cpp => Some("native"),
        FrameKind::Kernel => Some("kernel"),
        FrameKind::Unknown => None,
    }
}

/// A sample's wall time: its ticks past the recording's start, from its wall start.
fn wall_ns(rec: &Recording, ticks: u64) -> u64 {
    rec.start_wall_ns.saturating_add(ticks.saturating_sub(rec.start_ticks)).min(NO_TIME - 1)
}

/// A random 16-byte id, never all zeroes: this process's hash seed (drawn from the OS), the
/// time and a counter, mixed.
fn profile_id() -> Vec<u8> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut h = FastBuild::default().hash128();
    h.write(now);
    h.write(u64::from(std::process::id()));
    h.write(NEXT.fetch_add(1, Ordering::Relaxed));
    let (a, b) = h.finish();
    let mut id = [a.to_le_bytes(), b.to_le_bytes()].concat();
    if id.iter().all(|&x| x == 0) {
        id[0] = 1;
    }
    id
}

fn resource_proto(r: &Resource) -> PbResource {
    let string = |key: &str, v: &str| KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(v.into())) }),
        key_strindex: 0,
    };
    let mut attributes = Vec::new();
    if !r.service.is_empty() {
        attributes.push(string("service.name", &r.service));
    }
    if let Some(h) = &r.host {
        attributes.push(string("host.name", h));
    }
    if r.pid != 0 {
        attributes.push(KeyValue {
            key: "process.pid".into(),
            value: Some(AnyValue { value: Some(any_value::Value::IntValue(i64::from(r.pid))) }),
            key_strindex: 0,
        });
    }
    for (key, v) in [
        ("process.runtime.name", &r.runtime_name),
        ("process.runtime.version", &r.runtime_version),
        ("process.runtime.description", &r.runtime_description),
    ] {
        if let Some(v) = v {
            attributes.push(string(key, v));
        }
    }
    attributes.push(string("telemetry.sdk.name", "hpm"));
    attributes.push(string("telemetry.sdk.version", env!("CARGO_PKG_VERSION")));
    PbResource { attributes, ..Default::default() }
}

/// A whole recording as one request (used by `hpm convert` and tests).
pub fn encode_recording(rec: &Recording, resource: &Resource) -> ExportProfilesServiceRequest {
    let mut b = PeriodBuilder::new(rec.start_wall_ns);
    b.add(rec, &rec.samples);
    b.finish(recording_end(rec), resource)
}

/// A recording's end (wall ns): its start plus the ticks it spans.
pub fn recording_end(rec: &Recording) -> u64 {
    rec.start_wall_ns.saturating_add(rec.end_ticks.saturating_sub(rec.start_ticks))
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
