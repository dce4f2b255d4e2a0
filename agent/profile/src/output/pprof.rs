//! pprof output: a gzip-compressed `perftools.profiles.Profile` (google/pprof's profile.proto),
//! encoded by hand — the format needs only varints and length-delimited fields.
//!
//! Sample values: `samples` (count), the sampling event (its period summed: nanoseconds for
//! clock events, event counts otherwise), then one value per recorded counter. The sampling
//! event is the default sample type. One location per (method, line); functions carry the
//! display name, the name with its JVM descriptor, and the package-relative source path.
//! Labels: `thread` (name), `tid`, `component` (VM component), and with the agent's `data`
//! option `data_space`, `data_class`, `data_field` (what the sample's data address touched). Lost samples per reason are
//! written as comments (`go tool pprof -comments`).

use std::collections::HashMap;
use std::io::Write;

use crate::events::EVENTS;
use crate::model::{MethodIdx, PeriodUnit, Recording};

use super::stacks::{source_path, StackEntry, StackTable};
use crate::hash::IntMap;

/// Samples written per thread list at most this many times the frames of the distinct stacks
/// (plus a million): past it, the threads' samples of a stack are written as one.
const MERGE_THREADS_PAST: usize = 4;

/// The entries with their threads left out: summed per stack, component and data target, in
/// the order first seen.
fn merge_threads(stacks: &StackTable) -> Vec<StackEntry> {
    let mut out: Vec<StackEntry> = Vec::new();
    let mut index: std::collections::HashMap<
        (usize, crate::model::VmComponent, Option<super::stacks::DataKey>),
        usize,
    > = std::collections::HashMap::new();
    for e in &stacks.entries {
        let k = (std::sync::Arc::as_ptr(&e.key.frames) as *const u8 as usize, e.key.component, e.key.data.clone());
        let i = *index.entry(k).or_insert_with(|| {
            let mut key = e.key.clone();
            key.thread = crate::model::ThreadIdx(u32::MAX);
            out.push(StackEntry { key, samples: 0, weight: 0, counters: Vec::new() });
            out.len() - 1
        });
        let m = &mut out[i];
        m.samples = m.samples.saturating_add(e.samples);
        m.weight = m.weight.saturating_add(e.weight);
        crate::model::add_counters(&mut m.counters, &e.counters);
    }
    out
}

/// Protobuf wire writer: just what profile.proto needs.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    /// A varint field; zero is the proto3 default and is left out.
    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.varint(u64::from(field) << 3);
            self.varint(v);
        }
    }
    fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.varint(u64::from(field) << 3 | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn message(&mut self, field: u32, m: Pb) {
        self.bytes(field, &m.0);
    }
    fn packed(&mut self, field: u32, vs: impl Iterator<Item = u64>) {
        let mut p = Pb::default();
        for v in vs {
            p.varint(v);
        }
        self.bytes(field, &p.0);
    }
}

#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.id(""); // string_table[0] must be "".
        s
    }
    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as i64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// Unit of a counter: a time for the clock events, a count otherwise.
fn counter_unit(name: &str) -> &'static str {
    match EVENTS.iter().find(|e| e.name == name) {
        Some(e) if e.is_clock => "nanoseconds",
        _ => "count",
    }
}

fn value_type(strings: &mut Strings, ty: &str, unit: &str) -> Pb {
    let mut m = Pb::default();
    m.int(1, strings.id(ty));
    m.int(2, strings.id(unit));
    m
}

fn label(strings: &mut Strings, key: &str, str_value: Option<&str>, num: Option<i64>) -> Pb {
    let mut m = Pb::default();
    m.int(1, strings.id(key));
    if let Some(s) = str_value {
        m.int(2, strings.id(s));
    }
    if let Some(n) = num {
        m.int(3, n);
    }
    m
}

/// The uncompressed profile.proto bytes.
pub fn encode_profile(rec: &Recording, stacks: &StackTable) -> Vec<u8> {
    let mut st = Strings::new();
    let mut p = Pb::default();
    let event_unit = match rec.event.unit {
        PeriodUnit::Nanoseconds => "nanoseconds",
        PeriodUnit::Events => "count",
    };
    // 1: sample_type
    p.message(1, value_type(&mut st, "samples", "count"));
    p.message(1, value_type(&mut st, &rec.event.name, event_unit));
    for c in &rec.counters {
        p.message(1, value_type(&mut st, c, counter_unit(c)));
    }

    let mut functions: HashMap<MethodIdx, u64> = HashMap::new();
    let mut locations: HashMap<(MethodIdx, i32), u64> = HashMap::new();
    let mut loc_msgs: Vec<Pb> = Vec::new();
    let mut fn_msgs: Vec<Pb> = Vec::new();
    // 2: sample. Each entry is a sample listing its stack's locations; when threads sharing
    // stacks would make that many times the stacks' own frames (thousands of threads in one
    // deep stack), the threads are merged: one sample per stack, component and data target.
    let listed: usize = stacks.entries.iter().map(|e| e.key.frames.len()).sum();
    let mut distinct: IntMap<usize, usize> = IntMap::default();
    for e in &stacks.entries {
        distinct.insert(std::sync::Arc::as_ptr(&e.key.frames) as *const u8 as usize, e.key.frames.len());
    }
    let stack_frames: usize = distinct.values().sum();
    let merged = listed > MERGE_THREADS_PAST.saturating_mul(stack_frames).saturating_add(1 << 20);
    let merged_entries;
    let entries: &[StackEntry] = if merged {
        merged_entries = merge_threads(stacks);
        &merged_entries
    } else {
        &stacks.entries
    };
    for e in entries {
        let mut ids = Vec::with_capacity(e.key.frames.len());
        for &(m, line) in e.key.frames.iter() {
            let next_fn = functions.len() as u64 + 1;
            let fid = *functions.entry(m).or_insert_with(|| {
                let info = rec.method(m);
                let mut f = Pb::default();
                f.uint(1, next_fn);
                f.int(2, st.id(&info.display_name()));
                f.int(3, st.id(&format!("{}{}", info.display_name(), info.descriptor)));
                let path = source_path(&info.class_name, info.source_file.as_deref());
                f.int(4, st.id(path.as_deref().unwrap_or("")));
                fn_msgs.push(f);
                next_fn
            });
            let next_loc = locations.len() as u64 + 1;
            let lid = *locations.entry((m, line)).or_insert_with(|| {
                let mut l = Pb::default();
                l.uint(1, next_loc);
                l.uint(2, 1);
                let mut ln = Pb::default();
                ln.uint(1, fid);
                ln.int(2, i64::from(line.max(0)));
                l.message(4, ln);
                loc_msgs.push(l);
                next_loc
            });
            ids.push(lid);
        }
        let mut s = Pb::default();
        s.packed(1, ids.into_iter());
        let values = [e.samples, e.weight]
            .into_iter()
            .chain((0..rec.counters.len()).map(|i| e.counters.get(i).copied().unwrap_or(0)));
        s.packed(2, values);
        if let Some(t) = rec.threads.get(e.key.thread.0 as usize).filter(|_| !merged) {
            s.message(3, label(&mut st, "thread", Some(&t.shown_name()), None));
            s.message(3, label(&mut st, "tid", None, Some(i64::from(t.os_tid))));
        }
        s.message(3, label(&mut st, "component", Some(e.key.component.name()), None));
        if let Some(d) = &e.key.data {
            s.message(3, label(&mut st, "data_space", Some(d.space.name()), None));
            if let Some(c) = &d.class {
                s.message(3, label(&mut st, "data_class", Some(c), None));
            }
            if let Some(f) = &d.field {
                s.message(3, label(&mut st, "data_field", Some(f), None));
            }
        }
        p.message(2, s);
    }
    // 3: mapping — one for all JVM code, so pprof does not try to symbolize addresses.
    let mut m = Pb::default();
    m.uint(1, 1);
    m.int(5, st.id("jvm"));
    for field in 7..=9 {
        m.uint(field, 1);
    }
    p.message(3, m);
    for l in loc_msgs {
        p.message(4, l);
    }
    for f in fn_msgs {
        p.message(5, f);
    }
    // Informational fields, and the comments; their strings must be in the table before it
    // is written.
    let mut comments = vec![format!(
        "hpm: event {} every {} {}, sampler {}",
        rec.event.name,
        rec.event.period,
        rec.event.unit.name(),
        rec.event.sampler
    )];
    if let Some(f) = &rec.event.fallback {
        comments.push(format!("hpm: requested {}: {f}", rec.event.requested));
    }
    if !rec.jvm.is_empty() {
        comments.push(format!("hpm: JVM {}", rec.jvm));
    }
    if merged {
        comments.push(format!(
            "hpm: samples of all threads merged: per thread they would list {listed} locations, over {MERGE_THREADS_PAST} \
             times the {stack_frames} frames of the distinct stacks"
        ));
    }
    for (reason, n) in &rec.drops {
        comments.push(format!("hpm: samples lost or degraded: {reason}: {n}"));
    }
    let comment_ids: Vec<i64> = comments.iter().map(|c| st.id(c)).collect();
    let period_type = value_type(&mut st, &rec.event.name, event_unit);
    let default_type = st.id(&rec.event.name);
    for s in &st.list {
        p.bytes(6, s.as_bytes());
    }
    p.int(9, rec.start_wall_ns as i64);
    p.int(10, rec.end_ticks.saturating_sub(rec.start_ticks) as i64);
    p.message(11, period_type);
    p.int(12, rec.event.period as i64);
    p.packed(13, comment_ids.into_iter().map(|c| c as u64));
    p.int(14, default_type);
    p.0
}

/// The `.pb.gz` file content: [`encode_profile`] gzip-compressed, as pprof expects on disk.
pub fn pprof_gz(rec: &Recording, stacks: &StackTable) -> Vec<u8> {
    // The fastest level: on a 100,000-frame stack the default level spent 43% of `hpm convert`'s
    // time for a file 9% smaller.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(&encode_profile(rec, stacks));
    gz.finish().unwrap_or_default()
}

#[cfg(test)]
#[path = "pprof_tests.rs"]
mod tests;
