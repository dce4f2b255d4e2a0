//! OTLP profiles messages into one [`Recording`] per service, as hpm's convention writes them
//! and as other producers (async-profiler 4.6) do.
//!
//! Of each scope's profiles (one per sample type, all of the same samples), one is the
//! recording's event: `cpu` or `wall`, else the one whose type is its period type's (a count
//! event), else the first that is not `samples`, `alloc` or `lock`. The `samples`/`count`
//! profile, if any, says how many samples each one is; without it a `count` event profile is
//! the samples counted (async-profiler), and a time profile's value over its period. The other
//! `count` profiles are counters, matched to the event's samples by position when both list the
//! same samples in the same order (hpm's encoder does), else by stack, attributes and
//! timestamps (exact for distinct samples; equal ones take their values in order).
//! A recording is of one event: the first scope's sets it, scopes of another event (a `wall`
//! profile beside a `cpu` one, `cycles` beside `cpu`) are counted, not merged, and make the
//! read an error naming each event.
//! Sample times are the samples' timestamps, or the profile's start when they have none; the
//! recording's clock is wall-clock nanoseconds (start ticks = start wall time).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::profiles::v1development::{Profile, ProfilesDictionary, Sample as OtlpSample};

use super::dict::{Dict, Val};
use super::{format_err, Fleet, Problem};
use crate::limits::{LimitError, MAX_FILE_COUNTERS, MAX_NAME_BYTES, MAX_STACK_DEPTH, MAX_THREAD_NAME_BYTES};
use crate::model::{
    EventInfo, Frame, FrameKind, MethodIdx, MethodInfo, PeriodUnit, Recording, Sample, Stack, StackSampler, StateIdx,
    ThreadIdx, ThreadInfo, VmComponent,
};

use super::budget::{check_counter_values, Budget};
use super::process::{listed, listed_names, Process};

pub use crate::filter::Selection;

/// What was merged into the recording.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Merged {
    /// The service's whole name.
    pub service: String,
    /// Processes told apart by host, `process.pid` and runtime (a producer that sends no pid,
    /// as async-profiler, counts one per host).
    pub processes: usize,
    /// Named hosts (resources without `host.name` are not counted).
    pub hosts: usize,
    pub messages: u64,
}

impl Merged {
    /// `3 JVMs of service A on 2 hosts` (the service's name clipped).
    pub fn describe(&self) -> String {
        let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let service = crate::text::clip(&self.service, MAX_THREAD_NAME_BYTES);
        let mut s = format!("{} of service {service}", plural(self.processes, "JVM", "JVMs"));
        if self.hosts > 0 {
            s.push_str(&format!(" on {}", plural(self.hosts, "host", "hosts")));
        }
        s
    }
}

/// The roles of a scope's profiles, naming their types by the message's strings (copied
/// only where kept, each copy charged to the message's [`Budget`]).
struct Roles<'d> {
    main: usize,
    /// The `samples`/`count` profile.
    counts: Option<usize>,
    /// The main profile's values are samples counted (no `samples` profile beside it).
    main_counts_samples: bool,
    counters: Vec<(usize, &'d str)>,
    /// The types (type, unit) of the profiles hpm does not read, and how many profiles each.
    left_out: BTreeMap<(&'d str, &'d str), u64>,
    /// The event's name, and whether its period is in nanoseconds.
    event: &'d str,
    event_ns: bool,
}

impl<'d> Roles<'d> {
    fn of(dict: &Dict<'d>, profiles: &[Profile]) -> Result<Option<Roles<'d>>, Problem> {
        let vt = |v: Option<&opentelemetry_proto::tonic::profiles::v1development::ValueType>| -> Result<(&'d str, &'d str), Problem> {
            let Some(v) = v else { return Ok(("", "")) };
            let (t, u) = (dict.string(v.type_strindex)?, dict.string(v.unit_strindex)?);
            match t.len().max(u.len()) {
                n if n > MAX_NAME_BYTES => Err(Problem::Limit(LimitError::NameTooLong { bytes: n })),
                _ => Ok((t, u)),
            }
        };
        let types: Vec<(&str, &str)> = profiles.iter().map(|p| vt(p.sample_type.as_ref())).collect::<Result<_, _>>()?;
        let periods: Vec<(&str, &str)> =
            profiles.iter().map(|p| vt(p.period_type.as_ref())).collect::<Result<_, _>>()?;
        let is_event = |t: &str| !matches!(t, "samples" | "alloc" | "lock");
        let counts = types.iter().position(|&(t, u)| t == "samples" && u == "count");
        let main = types
            .iter()
            .position(|&(t, _)| t == "cpu" || t == "wall")
            .or_else(|| {
                (0..types.len())
                    .find(|&i| is_event(types[i].0) && !periods[i].0.is_empty() && types[i].0 == periods[i].0)
            })
            .or_else(|| types.iter().position(|&(t, _)| is_event(t)))
            .or(counts);
        let Some(main) = main else {
            return Ok(None);
        };
        let is_time = |u: &str| matches!(u, "nanoseconds" | "ns");
        let main_counts_samples = main == counts.unwrap_or(usize::MAX)
            || (counts.is_none() && types[main].1 == "count" && is_time(periods[main].1));
        let (mut counters, mut left_out) = (Vec::new(), BTreeMap::new());
        for (i, &(t, u)) in types.iter().enumerate() {
            if i == main || Some(i) == counts {
                continue;
            }
            if u == "count" && is_event(t) {
                counters.push((i, t));
            } else {
                *left_out.entry((t, u)).or_default() += 1;
            }
        }
        let event = if periods[main].0.is_empty() { types[main].0 } else { periods[main].0 };
        let event_ns = is_time(periods[main].1) || is_time(types[main].1);
        Ok(Some(Roles { main, counts, main_counts_samples, counters, left_out, event, event_ns }))
    }

    /// The recording's event as the main profile `p` says it, its name charged to `budget`.
    fn event_info(&self, p: &Profile, budget: &mut Budget) -> Result<EventInfo, Problem> {
        budget.names(2 * self.event.len())?;
        Ok(EventInfo {
            name: self.event.to_string(),
            requested: self.event.to_string(),
            period: u64::try_from(p.period).unwrap_or(0),
            unit: if self.event_ns { PeriodUnit::Nanoseconds } else { PeriodUnit::Events },
            sampler: StackSampler::Other("otlp".into()),
            ..EventInfo::default()
        })
    }
}

impl Roles<'_> {
    /// The samples the profiles stand for, as merging would count them (negative values as 0).
    fn samples(&self, profiles: &[Profile]) -> u64 {
        let sum = |p: &Profile| {
            p.samples.iter().flat_map(|s| &s.values).map(|&v| v.max(0) as u64).fold(0u64, u64::saturating_add)
        };
        match self.counts {
            _ if self.main_counts_samples => sum(&profiles[self.main]),
            Some(c) => sum(&profiles[c]),
            None => profiles[self.main].samples.iter().filter(|s| !s.values.is_empty()).count() as u64,
        }
    }
}

/// What identifies a sample across the profiles of one scope.
type Key<'a> = (i32, &'a [i32], &'a [u64]);

fn key(s: &OtlpSample) -> Key<'_> {
    (s.stack_index, &s.attribute_indices, &s.timestamps_unix_nano)
}

/// Another profile's values for the main profile's samples: by position when both list the
/// same samples in order, else by key.
enum Column<'a> {
    ByPosition(&'a [OtlpSample]),
    ByKey(HashMap<Key<'a>, VecDeque<&'a [i64]>>),
}

impl<'a> Column<'a> {
    fn new(main: &[OtlpSample], other: &'a [OtlpSample]) -> Column<'a> {
        if main.len() == other.len() && main.iter().zip(other).all(|(a, b)| key(a) == key(b)) {
            return Column::ByPosition(other);
        }
        let mut m: HashMap<Key<'a>, VecDeque<&'a [i64]>> = HashMap::new();
        for s in other {
            m.entry(key(s)).or_default().push_back(&s.values);
        }
        Column::ByKey(m)
    }

    fn take(&mut self, i: usize, s: &'a OtlpSample) -> Option<&'a [i64]> {
        match self {
            Column::ByPosition(o) => o.get(i).map(|s| s.values.as_slice()),
            Column::ByKey(m) => m.get_mut(&key(s)).and_then(VecDeque::pop_front),
        }
    }
}

/// The value of point `j` of a sample's values: per timestamp when there are as many, else
/// their sum (checked).
fn point_value(values: &[i64], points: usize, j: usize) -> Result<u64, Problem> {
    let v = if points > 1 {
        values.get(j).copied().unwrap_or(0)
    } else {
        values.iter().try_fold(0i64, |a, &v| a.checked_add(v)).ok_or_else(sum_overflow)?
    };
    u64::try_from(v).map_err(|_| format_err(format!("a sample value of {v} is negative; the file is damaged")))
}

fn sum_overflow() -> Problem {
    Problem::Limit(LimitError::SumOverflow { what: "values of one sample".into() })
}

/// One service's recording as it is merged.
#[derive(Default)]
struct Group {
    rec: Recording,
    processes: Vec<Process>,
    /// Each process's number in `processes`: a message may hold thousands of resources.
    process_no: HashMap<Process, usize>,
    threads: HashMap<(usize, String, Option<i64>), ThreadIdx>,
    hosts: BTreeSet<String>,
    messages: u64,
    samples: u64,
    unmatched: u64,
    left_out: BTreeMap<String, u64>,
    span: Option<(u64, u64)>,
    /// The event merged (name, in nanoseconds), set by the first scope, and the samples of
    /// scopes of other events, not merged: a recording is of one event.
    event: Option<(String, bool)>,
    other_events: BTreeMap<String, u64>,
}

/// The per-message caches of a group's scope and the message's budget.
struct Scope<'d, 'b> {
    dict: &'d Dict<'d>,
    proc_no: usize,
    methods: HashMap<(i32, Option<FrameKind>), (MethodIdx, FrameKind)>,
    stacks: HashMap<i32, (Stack, bool, VmComponent)>,
    threads: HashMap<&'d [i32], (ThreadIdx, Option<StateIdx>)>,
    budget: &'b mut Budget,
}

impl Group {
    fn widen(&mut self, lo: u64, hi: u64) {
        let (a, b) = self.span.unwrap_or((lo, hi));
        self.span = Some((a.min(lo), b.max(hi)));
    }

    fn add_scope<'d>(
        &mut self,
        sc: &mut Scope<'d, '_>,
        profiles: &'d [Profile],
        roles: &Roles<'d>,
    ) -> Result<(), Problem> {
        match &self.event {
            Some((name, ns)) if (name.as_str(), *ns) == (roles.event, roles.event_ns) => {}
            // Once samples of one event are in, a scope of another is only counted.
            Some(_) if self.samples > 0 => {
                let n = roles.samples(profiles);
                if n > 0 {
                    if let Some(c) = self.other_events.get_mut(roles.event) {
                        *c = c.saturating_add(n);
                    } else {
                        sc.budget.names(roles.event.len())?;
                        self.other_events.insert(roles.event.to_string(), n);
                    }
                }
                return Ok(());
            }
            _ => {
                self.rec.event = roles.event_info(&profiles[roles.main], sc.budget)?;
                self.event = Some((self.rec.event.name.clone(), roles.event_ns));
            }
        }
        for ((t, u), n) in &roles.left_out {
            sc.budget.names(t.len() + u.len() + 3)?;
            *self.left_out.entry(format!("{t} ({u})")).or_default() += n;
        }
        let main = &profiles[roles.main];
        self.widen(main.time_unix_nano, main.time_unix_nano.saturating_add(main.duration_nano));
        let mut counts =
            roles.counts.filter(|&c| c != roles.main).map(|c| Column::new(&main.samples, &profiles[c].samples));
        let mut counters = Vec::with_capacity(roles.counters.len());
        for (i, name) in &roles.counters {
            let slot = match self.rec.counters.iter().position(|c| c == name) {
                Some(s) => s,
                None if self.rec.counters.len() >= MAX_FILE_COUNTERS => {
                    return Err(Problem::Limit(LimitError::TooManyCounters { counters: self.rec.counters.len() + 1 }))
                }
                None => {
                    sc.budget.names(name.len())?;
                    self.rec.counters.push(name.to_string());
                    self.rec.counter_periods.push(0);
                    self.rec.counters.len() - 1
                }
            };
            counters.push((slot, Column::new(&main.samples, &profiles[*i].samples)));
        }
        let period = u64::try_from(main.period).unwrap_or(0);
        for (i, s) in main.samples.iter().enumerate() {
            let count_values = counts.as_mut().map(|c| c.take(i, s));
            let counter_values: Vec<(usize, Option<&[i64]>)> =
                counters.iter_mut().map(|(slot, c)| (*slot, c.take(i, s))).collect();
            // A sample without a value is nothing (its values in the other profiles were
            // taken above, so that equal samples after it take theirs).
            if s.values.is_empty() {
                continue;
            }
            let (stack, has_java, component) = self.stack(sc, s.stack_index)?;
            let (thread, state) = self.thread(sc, &s.attribute_indices)?;
            if has_java {
                self.rec.threads[thread.0 as usize].is_java = true;
            }
            let ts = &s.timestamps_unix_nano;
            let points = if ts.len() > 1 && s.values.len() == ts.len() { ts.len() } else { 1 };
            // Each sample holds values up to the last counter it has; `finish` makes them all
            // as long, within the input's budget of counter values.
            let width = counter_values.iter().filter(|(_, v)| v.is_some()).map(|(slot, _)| slot + 1).max().unwrap_or(0);
            // A sample missing from a counter's profile had 0 there (producers leave zero values
            // out, hpm's encoder among them); one missing from the count profile is one sample.
            if count_values.is_some_and(|v| v.is_none()) {
                self.unmatched += 1;
            }
            for j in 0..points {
                let value = point_value(&s.values, points, j)?;
                let (repeat, weight) = if roles.main_counts_samples {
                    (value, value.checked_mul(period.max(1)).ok_or_else(sum_overflow)?)
                } else {
                    let repeat = match count_values {
                        Some(Some(v)) => point_value(v, points, j)?,
                        Some(None) => 1,
                        None if period > 0 => (value / period).max(1),
                        None => 1,
                    };
                    (repeat, value)
                };
                if repeat == 0 {
                    continue;
                }
                let repeat = u32::try_from(repeat).map_err(|_| {
                    format_err(format!(
                    "a sample stands for {repeat} samples, more than hpm reads as one (2^32 - 1); the file is damaged"
                ))
                })?;
                sc.budget.sample(width)?;
                let mut values = vec![0u64; width];
                for (slot, v) in &counter_values {
                    if let Some(v) = v {
                        values[*slot] = point_value(v, points, j)?;
                    }
                }
                let time = ts.get(j).copied().unwrap_or(main.time_unix_nano);
                self.widen(time, time);
                self.samples = self.samples.saturating_add(u64::from(repeat));
                let mut sample = Sample::of_stack(stack.clone());
                sample.time = time;
                sample.thread = thread;
                sample.weight = weight;
                sample.repeat = repeat;
                sample.counters = values;
                sample.component = component;
                sample.state = state;
                self.rec.samples.push(sample);
            }
        }
        Ok(())
    }

    /// The thread of a sample's attributes, one per name and id per process; its state.
    fn thread<'d>(
        &mut self,
        sc: &mut Scope<'d, '_>,
        attrs: &'d [i32],
    ) -> Result<(ThreadIdx, Option<StateIdx>), Problem> {
        if let Some(&t) = sc.threads.get(attrs) {
            return Ok(t);
        }
        let (mut name, mut tid, mut state) = (None, None, None);
        for &a in attrs {
            let kv = sc.dict.attr(a)?;
            let v = sc.dict.value(kv.value.as_ref())?;
            match sc.dict.string(kv.key_strindex)? {
                "thread.name" => name = v.text().map(|n| crate::text::clip(&n, MAX_THREAD_NAME_BYTES)),
                "thread.id" => tid = v.int(),
                "thread.state" => state = v.text().map(|s| crate::text::clip(&s, MAX_THREAD_NAME_BYTES)),
                _ => {}
            }
        }
        let name = name.unwrap_or_else(|| "[no thread attributes]".to_string());
        let key = (sc.proc_no, name, tid);
        let thread = match self.threads.get(&key) {
            Some(&t) => t,
            None => {
                let t = self.rec.add_thread(ThreadInfo {
                    os_tid: tid.and_then(|t| u32::try_from(t).ok()).unwrap_or(0),
                    java_id: None,
                    name: key.1.clone(),
                    is_java: false,
                    is_virtual: false,
                });
                self.threads.insert(key, t);
                t
            }
        };
        let state = state.map(|s| self.rec.state_idx(&s));
        sc.threads.insert(attrs, (thread, state));
        Ok((thread, state))
    }

    /// A stack of the dictionary as frames (leaf first), whether it holds Java code, and the
    /// component of its leaf; each built once per message.
    fn stack(&mut self, sc: &mut Scope<'_, '_>, i: i32) -> Result<(Stack, bool, VmComponent), Problem> {
        if let Some(s) = sc.stacks.get(&i) {
            return Ok(s.clone());
        }
        let st = sc.dict.stack(i)?;
        let mut frames = Vec::new();
        for &li in &st.location_indices {
            let loc = sc.dict.location(li)?;
            let mut hint = None;
            for &a in &loc.attribute_indices {
                let kv = sc.dict.attr(a)?;
                if sc.dict.string(kv.key_strindex)? == "profile.frame.type" {
                    hint = match sc.dict.value(kv.value.as_ref())? {
                        Val::Str("jvm") => Some(FrameKind::JitCompiled),
                        Val::Str("native") => Some(FrameKind::Native),
                        Val::Str("kernel") => Some(FrameKind::Kernel),
                        _ => None,
                    };
                }
            }
            let n = loc.lines.len();
            if frames.len() + n > MAX_STACK_DEPTH {
                return Err(Problem::Limit(LimitError::StackTooDeep { frames: (frames.len() + n) as u64 }));
            }
            sc.budget.frames(n)?;
            for (k, line) in loc.lines.iter().enumerate() {
                let (method, mut kind) = self.method(sc, line.function_index, hint)?;
                // Lines before a location's last are inlined into it.
                if k + 1 < n && kind.is_java() {
                    kind = FrameKind::Inlined;
                }
                let line = i32::try_from(line.line).ok().filter(|&l| l > 0).unwrap_or(-1);
                frames.push(Frame { method, bci: -1, line, kind });
            }
        }
        let has_java = frames.iter().any(|f| f.kind.is_java());
        let component = match frames.first().map(|f| f.kind) {
            Some(k) if k.is_java() => VmComponent::Java,
            Some(FrameKind::Kernel) => VmComponent::Kernel,
            Some(FrameKind::Native) => VmComponent::Native,
            Some(FrameKind::Cpp) => VmComponent::Runtime,
            _ => VmComponent::Unknown,
        };
        let out = (Stack::from(frames), has_java, component);
        sc.stacks.insert(i, out.clone());
        Ok(out)
    }

    fn method(
        &mut self,
        sc: &mut Scope<'_, '_>,
        f: i32,
        hint: Option<FrameKind>,
    ) -> Result<(MethodIdx, FrameKind), Problem> {
        if let Some(&m) = sc.methods.get(&(f, hint)) {
            return Ok(m);
        }
        let func = sc.dict.function(f)?;
        let name = sc.dict.string(func.name_strindex)?;
        let system = sc.dict.string(func.system_name_strindex)?;
        let file = sc.dict.string(func.filename_strindex)?;
        for s in [name, system, file] {
            if s.len() > MAX_NAME_BYTES {
                return Err(Problem::Limit(LimitError::NameTooLong { bytes: s.len() }));
            }
        }
        let (mut info, kind) = method_info(name, system, hint);
        if !file.is_empty() {
            info.source_file = Some(Arc::from(file));
        }
        let len = info.class_name.len()
            + info.name.len()
            + info.descriptor.len()
            + info.source_file.as_ref().map_or(0, |f| f.len());
        let before = self.rec.methods.len();
        let out = (self.rec.methods.intern(info), kind);
        if self.rec.methods.len() > before {
            // Every output names each method: thousands of functions named by one long string
            // would be cheap to send and costly to show.
            sc.budget.names(len)?;
        }
        sc.methods.insert((f, hint), out);
        Ok(out)
    }
}

/// A function as hpm names it, and the kind of code it is: the JVM form of the system name
/// (`java/util/HashMap.putVal(Ljava/lang/Object;)V`) when it has one, else the name as written
/// in Java form or JVM form, with async-profiler's type suffixes (`_[k]`, `_[j]`, ...) read as
/// the kind. OTLP says only `jvm` of Java frames: they read as JIT compiled.
pub(super) fn method_info(name: &str, system: &str, hint: Option<FrameKind>) -> (MethodInfo, FrameKind) {
    use crate::output::{frame_family, FrameFamily};
    if let (Some((head, desc)), None | Some(FrameKind::JitCompiled)) = (system.split_once('('), hint) {
        if let Some((class, method)) = head.rsplit_once('.') {
            let class = crate::model::java_class_name(class);
            return (MethodInfo::java(&class, method, &format!("({desc}")), FrameKind::JitCompiled);
        }
    }
    let family = frame_family(name);
    let (plain, _) = crate::output::collapsed_frame(name);
    let kind = match (hint, family) {
        (Some(FrameKind::Native), FrameFamily::Cpp) => FrameKind::Cpp,
        (Some(k), _) => k,
        (None, FrameFamily::Kernel) => FrameKind::Kernel,
        (None, FrameFamily::Interpreted) => FrameKind::Interpreted,
        (None, FrameFamily::Inlined) => FrameKind::Inlined,
        (None, FrameFamily::Jit | FrameFamily::Java) => FrameKind::JitCompiled,
        (None, FrameFamily::Cpp) => FrameKind::Cpp,
        (None, _) => FrameKind::Native,
    };
    if kind.is_java() {
        if let Some((class, method)) = plain.rsplit_once('.') {
            return (MethodInfo::java(class, method, ""), kind);
        }
    }
    (MethodInfo::native(&plain), kind)
}

/// The services' recordings as messages are added.
pub(super) struct Merger {
    sel: Selection,
    /// The first service selected, merged.
    group: Option<(String, Group)>,
    /// Samples of the other services selected: with them the read is an error that lists
    /// them, so they are only counted.
    also: BTreeMap<String, u64>,
    /// Samples (OTLP sample records) of the services and hosts not selected.
    others: BTreeMap<String, u64>,
    hosts_seen: BTreeSet<String>,
    /// Bytes of the messages added, and of the names copied out of them.
    input: u64,
    names_spent: u64,
}

impl Merger {
    pub(super) fn new(sel: Selection) -> Merger {
        Merger {
            sel,
            group: None,
            also: BTreeMap::new(),
            others: BTreeMap::new(),
            hosts_seen: BTreeSet::new(),
            input: 0,
            names_spent: 0,
        }
    }

    /// Adds a message of `bytes` bytes.
    pub(super) fn add(&mut self, req: &ExportProfilesServiceRequest, bytes: usize) -> Result<(), Problem> {
        let empty = ProfilesDictionary::default();
        let dict = Dict(req.dictionary.as_ref().unwrap_or(&empty));
        self.input = self.input.saturating_add(bytes as u64);
        let mut budget = Budget::for_message(bytes, self.input, self.names_spent);
        let mut counted = false;
        for rp in &req.resource_profiles {
            let proc = Process::of(&dict, rp.resource.as_ref(), &mut budget)?;
            if let Some(h) = &proc.host {
                self.hosts_seen.insert(h.clone());
            }
            let selected = self.sel.service.as_ref().is_none_or(|s| *s == proc.service)
                && self.sel.host.as_ref().is_none_or(|h| Some(h) == proc.host.as_ref());
            for sp in &rp.scope_profiles {
                let Some(roles) = Roles::of(&dict, &sp.profiles)? else { continue };
                if !selected {
                    *self.others.entry(proc.service.clone()).or_default() += roles.samples(&sp.profiles);
                    continue;
                }
                let g = match &mut self.group {
                    Some((s, g)) if *s == proc.service => g,
                    Some(_) => {
                        *self.also.entry(proc.service.clone()).or_default() += roles.samples(&sp.profiles);
                        continue;
                    }
                    None => &mut self.group.insert((proc.service.clone(), Group::default())).1,
                };
                if !counted {
                    counted = true;
                    g.messages += 1;
                }
                let proc_no = match g.process_no.get(&proc) {
                    Some(&i) => i,
                    None => {
                        g.processes.push(proc.clone());
                        g.process_no.insert(proc.clone(), g.processes.len() - 1);
                        g.processes.len() - 1
                    }
                };
                if let Some(h) = &proc.host {
                    g.hosts.insert(h.clone());
                }
                let mut sc = Scope {
                    dict: &dict,
                    proc_no,
                    methods: HashMap::new(),
                    stacks: HashMap::new(),
                    threads: HashMap::new(),
                    budget: &mut budget,
                };
                g.add_scope(&mut sc, &sp.profiles, &roles)?;
            }
        }
        self.names_spent += budget.names_spent();
        Ok(())
    }

    /// The one service's recording, or why there is none.
    pub(super) fn finish(self) -> Result<Fleet, Problem> {
        if let (Some((s, g)), false) = (&self.group, self.also.is_empty()) {
            let mut counts = self.also;
            counts.insert(s.clone(), g.samples);
            return Err(Problem::Selection(format!(
                "profiles of {} services: {}; pick one with --service NAME",
                counts.len(),
                listed(&counts)
            )));
        }
        let Some((service, mut g)) = self.group else {
            if self.sel.is_empty() || self.others.is_empty() {
                return Err(format_err("holds no OTLP profiles"));
            }
            let mut want = self.sel.service.as_ref().map(|s| format!("service {s}")).unwrap_or_default();
            if let Some(h) = &self.sel.host {
                want.push_str(&format!("{}host {h}", if want.is_empty() { "" } else { " on " }));
            }
            let hosts = listed_names(self.hosts_seen.iter().map(String::as_str), self.hosts_seen.len());
            return Err(Problem::Selection(format!(
                "no profiles of {want}; the input holds {}{}",
                listed(&self.others),
                if hosts.is_empty() { String::new() } else { format!(" from hosts {hosts}") }
            )));
        };
        if !g.other_events.is_empty() {
            let mut events = std::mem::take(&mut g.other_events);
            events.insert(g.rec.event.name.clone(), g.samples);
            return Err(Problem::Selection(format!(
                "profiles of {} events for service {}: {}; hpm reads one event at a time: read the files of each \
                 event apart",
                events.len(),
                crate::text::clip(&service, MAX_THREAD_NAME_BYTES),
                listed(&events)
            )));
        }
        let merged = Merged { service, processes: g.processes.len(), hosts: g.hosts.len(), messages: g.messages };
        let (lo, hi) = g.span.unwrap_or((0, 0));
        let rec = &mut g.rec;
        rec.start_wall_ns = lo;
        rec.start_ticks = lo;
        rec.end_ticks = hi;
        let runtimes: BTreeSet<&str> = g.processes.iter().filter_map(|p| p.runtime.as_deref()).collect();
        rec.jvm = merged.describe();
        if !runtimes.is_empty() {
            let shown: Vec<&str> = runtimes.iter().take(3).copied().collect();
            rec.jvm.push_str(&format!(" ({}{})", shown.join(", "), if runtimes.len() > 3 { ", ..." } else { "" }));
        }
        if let [p] = g.processes.as_slice() {
            rec.pid = p.pid.unwrap_or(0);
        }
        if let Some(sdk) = g.processes.iter().find_map(|p| p.sdk.clone()) {
            rec.event.sampler = StackSampler::Other(format!("otlp from {sdk}"));
        }
        let n = rec.counters.len();
        check_counter_values(rec.samples.len(), n, self.input)?;
        for s in &mut rec.samples {
            s.counters.resize(n, 0);
        }
        let mut notes = Vec::new();
        for (what, times) in &g.left_out {
            notes.push(format!(
                "profiles of type {what} left out ({times} of them): hpm reads the samples and counters"
            ));
        }
        if g.unmatched > 0 {
            notes.push(format!(
                "{} samples had no sample of the same stack, thread and time in the \"samples\" profile: each \
                 is counted once",
                g.unmatched
            ));
        }
        Ok(Fleet { recording: g.rec, merged, notes })
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
