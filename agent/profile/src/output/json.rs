//! JSON export for IDE plugins and scripts: schema `hpm-profile/1`, described in docs/json.md
//! and checked by docs/schema/hpm-profile-1.schema.json.
//!
//! Per method: name, class, descriptor, source file and package-relative path, per-line sample
//! counts, self and total samples, event weight, counter sums and ratios (CPI only where both
//! `cycles` and `instructions` were recorded; `null` when the divisor is zero — never made up).
//! The calling context tree is a flat array of nodes in depth-first order, each naming its
//! parent, so no reader needs deep recursion for 500-frame stacks.

use std::collections::HashSet;

use crate::hash::{FastBuild, IntMap};
use std::fmt::Write;

use crate::events::EVENTS;
use crate::model::{DropClass, MethodIdx, Recording};

use super::cpi_counters;
use super::stacks::{source_path, StackTable};
use crate::text::push_json_string;

/// The `schema` value; bumped on any incompatible change (added fields are compatible).
pub const SCHEMA: &str = "hpm-profile/1";

#[derive(Clone, Default)]
struct Sums {
    samples: u64,
    weight: u64,
    counters: Vec<u64>,
}

impl Sums {
    fn add(&mut self, samples: u64, weight: u64, counters: &[u64]) {
        self.samples = self.samples.saturating_add(samples);
        self.weight = self.weight.saturating_add(weight);
        crate::model::add_counters(&mut self.counters, counters);
    }
}

#[derive(Default)]
struct MethodAgg {
    self_: Sums,
    total: Sums,
    /// line -> (self samples, total samples)
    lines: IntMap<i32, (u64, u64)>,
}

struct Node {
    parent: Option<usize>,
    method: Option<MethodIdx>,
    self_: Sums,
    total: Sums,
    children: Vec<usize>,
}

fn str_lit(s: &str) -> String {
    let mut out = String::new();
    push_json_string(&mut out, s);
    out
}

fn opt_str(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_string(), str_lit)
}

fn sums_json(out: &mut String, s: &Sums, counters: &[String]) {
    let _ = write!(out, "{{\"samples\":{},\"weight\":{},\"counters\":{{", s.samples, s.weight);
    for (i, name) in counters.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}:{}", str_lit(name), s.counters.get(i).copied().unwrap_or(0));
    }
    out.push_str("},\"ratios\":{");
    if let Some((c, i)) = cpi_counters(counters) {
        let cyc = s.counters.get(c).copied().unwrap_or(0);
        let ins = s.counters.get(i).copied().unwrap_or(0);
        if ins == 0 {
            out.push_str("\"CPI\":null");
        } else {
            let _ = write!(out, "\"CPI\":{}", cyc as f64 / ins as f64);
        }
    }
    out.push_str("}}");
}

/// The JSON document for a recording's metadata and its aggregated stacks.
pub fn to_json(rec: &Recording, stacks: &StackTable) -> String {
    let mut methods: IntMap<MethodIdx, MethodAgg> = IntMap::default();
    let mut nodes =
        vec![Node { parent: None, method: None, self_: Sums::default(), total: Sums::default(), children: Vec::new() }];
    let mut child_of: IntMap<(usize, MethodIdx), usize> = IntMap::default();
    // The entries of one stack (its threads, components, data targets) summed first, so that
    // each distinct stack's frames are walked once, however many threads ran it.
    let mut by_stack: Vec<(&[(MethodIdx, i32)], Sums)> = Vec::new();
    let mut slot: IntMap<usize, usize> = IntMap::default();
    for e in &stacks.entries {
        let i = *slot.entry(std::sync::Arc::as_ptr(&e.key.frames) as *const u8 as usize).or_insert_with(|| {
            by_stack.push((&e.key.frames[..], Sums::default()));
            by_stack.len() - 1
        });
        by_stack[i].1.add(e.samples, e.weight, &e.counters);
    }
    for (frames, sums) in &by_stack {
        let (n, w, c) = (sums.samples, sums.weight, &sums.counters[..]);
        let mut seen_m: HashSet<MethodIdx, FastBuild> = HashSet::default();
        let mut seen_l: HashSet<(MethodIdx, i32), FastBuild> = HashSet::default();
        for &(m, line) in frames.iter() {
            let agg = methods.entry(m).or_default();
            if seen_m.insert(m) {
                agg.total.add(n, w, c);
            }
            if seen_l.insert((m, line)) {
                let l = agg.lines.entry(line).or_default();
                l.1 = l.1.saturating_add(n);
            }
        }
        if let Some(&(m, line)) = frames.first() {
            let agg = methods.entry(m).or_default();
            agg.self_.add(n, w, c);
            let l = agg.lines.entry(line).or_default();
            l.0 = l.0.saturating_add(n);
        }
        let mut cur = 0;
        nodes[0].total.add(n, w, c);
        for &(m, _) in frames.iter().rev() {
            cur = *child_of.entry((cur, m)).or_insert_with(|| {
                nodes.push(Node {
                    parent: Some(cur),
                    method: Some(m),
                    self_: Sums::default(),
                    total: Sums::default(),
                    children: Vec::new(),
                });
                let id = nodes.len() - 1;
                nodes[cur].children.push(id);
                id
            });
            nodes[cur].total.add(n, w, c);
        }
        nodes[cur].self_.add(n, w, c);
    }

    // Methods ordered by self, then total samples, then name: ids are positions.
    let mut order: Vec<(MethodIdx, &MethodAgg, String)> =
        methods.iter().map(|(&m, a)| (m, a, rec.method(m).display_name())).collect();
    order.sort_by(|a, b| {
        (b.1.self_.samples, b.1.total.samples)
            .cmp(&(a.1.self_.samples, a.1.total.samples))
            .then_with(|| a.2.cmp(&b.2))
            .then(a.0.cmp(&b.0))
    });
    let id_of: IntMap<MethodIdx, usize> = order.iter().enumerate().map(|(i, (m, _, _))| (*m, i)).collect();

    let mut out = String::new();
    let _ =
        write!(out, "{{\"schema\":\"{SCHEMA}\",\"generator\":\"hpm {}\",\n\"recording\":{{", env!("CARGO_PKG_VERSION"));
    let _ = write!(
        out,
        "\"pid\":{},\"jvm\":{},\"startTimeNanos\":{},\"durationNanos\":{},",
        rec.pid,
        str_lit(&rec.jvm),
        rec.start_wall_ns,
        rec.end_ticks.saturating_sub(rec.start_ticks)
    );
    let ev = &rec.event;
    let _ = write!(
        out,
        "\"event\":{{\"name\":{},\"requested\":{},\"period\":{},\"unit\":\"{}\",\"sampler\":{},\"fallback\":{}}},",
        str_lit(&ev.name),
        str_lit(&ev.requested),
        ev.period,
        ev.unit.name(),
        str_lit(ev.sampler.name()),
        opt_str(ev.fallback.as_deref())
    );
    out.push_str("\"counters\":[");
    for (i, c) in rec.counters.iter().enumerate() {
        let unit = if EVENTS.iter().any(|e| e.name == c && e.is_clock) { "ns" } else { "events" };
        let _ = write!(out, "{}{{\"name\":{},\"unit\":\"{unit}\"}}", if i > 0 { "," } else { "" }, str_lit(c));
    }
    let _ = write!(out, "],\"samples\":{},\"drops\":[", stacks.total_samples());
    for (i, (reason, n)) in rec.drops.iter().enumerate() {
        let kept = reason.class() != DropClass::Lost;
        let _ = write!(
            out,
            "{}{{\"reason\":{},\"count\":{n},\"kept\":{kept}}}",
            if i > 0 { "," } else { "" },
            str_lit(&reason.name())
        );
    }
    out.push_str("]},\n\"ratios\":[");
    if cpi_counters(&rec.counters).is_some() {
        out.push_str("{\"name\":\"CPI\",\"numerator\":\"cycles\",\"denominator\":\"instructions\"}");
    }
    out.push_str("],\n\"methods\":[");
    for (i, (m, agg, _)) in order.iter().enumerate() {
        let info = rec.method(*m);
        let kind = if !info.class_name.is_empty() {
            "java"
        } else if info.name.starts_with('[') && info.name.ends_with(']') {
            "pseudo"
        } else {
            "native"
        };
        out.push_str(if i > 0 { ",\n" } else { "\n" });
        let _ = write!(
            out,
            "{{\"id\":{i},\"name\":{},\"class\":{},\"descriptor\":{},\"displayName\":{},\"kind\":\"{kind}\",\"sourceFile\":{},\"sourcePath\":{},\"lines\":[",
            str_lit(&info.name),
            if info.class_name.is_empty() { "null".to_string() } else { str_lit(&info.class_name) },
            if info.descriptor.is_empty() { "null".to_string() } else { str_lit(&info.descriptor) },
            str_lit(&info.display_name()),
            opt_str(info.source_file.as_deref()),
            opt_str(source_path(&info.class_name, info.source_file.as_deref()).as_deref()),
        );
        let mut lines: Vec<(i32, (u64, u64))> =
            agg.lines.iter().filter(|(l, _)| **l >= 0).map(|(l, v)| (*l, *v)).collect();
        lines.sort_unstable();
        for (j, (line, (s, t))) in lines.iter().enumerate() {
            let _ = write!(
                out,
                "{}{{\"line\":{line},\"selfSamples\":{s},\"totalSamples\":{t}}}",
                if j > 0 { "," } else { "" }
            );
        }
        out.push_str("],\"self\":");
        sums_json(&mut out, &agg.self_, &rec.counters);
        out.push_str(",\"total\":");
        sums_json(&mut out, &agg.total, &rec.counters);
        out.push('}');
    }
    out.push(']');
    data_json(&mut out, rec, stacks);
    out.push_str(",\n\"tree\":[");
    // Depth-first, heaviest child first; node ids are positions in this order.
    let mut emitted: IntMap<usize, usize> = IntMap::default();
    let mut stack = vec![0usize];
    let mut first = true;
    while let Some(n) = stack.pop() {
        let id = emitted.len();
        emitted.insert(n, id);
        let node = &nodes[n];
        out.push_str(if first { "\n" } else { ",\n" });
        first = false;
        let parent = node.parent.map_or("null".to_string(), |p| emitted[&p].to_string());
        let method = node.method.map_or("null".to_string(), |m| id_of[&m].to_string());
        let _ = write!(out, "{{\"id\":{id},\"parent\":{parent},\"method\":{method},\"self\":");
        sums_json(&mut out, &node.self_, &rec.counters);
        out.push_str(",\"total\":");
        sums_json(&mut out, &node.total, &rec.counters);
        out.push('}');
        let mut kids = node.children.clone();
        kids.sort_by(|&a, &b| {
            nodes[a].total.samples.cmp(&nodes[b].total.samples).then(
                id_of[&nodes[b].method.unwrap_or(MethodIdx(0))].cmp(&id_of[&nodes[a].method.unwrap_or(MethodIdx(0))]),
            )
        });
        stack.extend(kids); // lightest pushed first, so the heaviest is popped next
    }
    out.push_str("\n]}\n");
    out
}

/// `"data"`: samples per class, field and space their data address touched (option `data`),
/// heaviest first; left out when no sample has one.
fn data_json(out: &mut String, rec: &Recording, stacks: &StackTable) {
    use super::data::{DataBy, DataTallies};
    let t = DataTallies::from_stacks(stacks, rec.counters.len());
    if t.samples == 0 {
        return;
    }
    let _ = write!(out, ",\n\"data\":{{\"samples\":{}", t.samples);
    for (name, by) in [("byClass", DataBy::Class), ("byField", DataBy::Field), ("bySpace", DataBy::Space)] {
        let _ = write!(out, ",\"{name}\":[");
        for (i, row) in t.rows(by).iter().enumerate() {
            let _ = write!(out, "{}{{\"name\":{},\"sums\":", if i > 0 { ",\n" } else { "\n" }, str_lit(&row.key));
            let sums = Sums { samples: row.samples, weight: row.weight, counters: row.counters.clone() };
            sums_json(out, &sums, &rec.counters);
            let mut spaces: Vec<(&str, u64)> = crate::model::Space::ALL
                .iter()
                .filter(|s| row.spaces[**s as usize] > 0)
                .map(|s| (s.name(), row.spaces[*s as usize]))
                .collect();
            spaces.sort();
            out.push_str(",\"spaces\":{");
            for (j, (s, n)) in spaces.iter().enumerate() {
                let _ = write!(out, "{}\"{s}\":{n}", if j > 0 { "," } else { "" });
            }
            out.push_str("}}");
        }
        out.push(']');
    }
    out.push('}');
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
