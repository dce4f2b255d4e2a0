//! Samples aggregated by their exact stack: every frame's method *and* source line, plus the
//! thread and the VM component. The calling context tree keeps names only; the tool outputs
//! (pprof, JSON) need file and line per frame, so they are built from this table instead.
//!
//! The agent feeds it sample by sample (its samples are dropped after each JFR chunk); the CLI
//! builds it from a recording read back from a `.jfr` file.

use std::collections::HashMap;

use crate::hash::IntMap;
use crate::model::Space;
use crate::model::{MethodIdx, Recording, Sample, ThreadIdx, VmComponent};

/// What a sample's data address touched, as outputs label it (`data`): the space, the class
/// and the field (offsets and indices are left out: one entry per field, not per element).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataKey {
    pub space: Space,
    pub class: Option<std::sync::Arc<str>>,
    pub field: Option<std::sync::Arc<str>>,
}

impl DataKey {
    pub fn of(s: &Sample) -> Option<DataKey> {
        s.data.as_deref().map(|d| DataKey { space: d.space, class: d.class.clone(), field: d.field.clone() })
    }
}

/// What makes two samples land in the same entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StackKey {
    /// Leaf first: (method, source line or -1).
    pub frames: Vec<(MethodIdx, i32)>,
    pub thread: ThreadIdx,
    pub component: VmComponent,
    pub data: Option<DataKey>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StackEntry {
    pub key: StackKey,
    pub samples: u64,
    /// Sum of the sampling event's weight (period) of the samples.
    pub weight: u64,
    /// Sums of counter deltas, aligned with [`Recording::counters`].
    pub counters: Vec<u64>,
}

impl StackEntry {
    fn add(&mut self, samples: u64, weight: u64, counters: &[u64]) {
        self.samples = self.samples.saturating_add(samples);
        self.weight = self.weight.saturating_add(weight);
        crate::model::add_counters(&mut self.counters, counters);
    }
}

#[derive(Clone, Debug, Default)]
pub struct StackTable {
    index: IntMap<StackKey, usize>,
    pub entries: Vec<StackEntry>,
}

impl StackTable {
    pub fn add(&mut self, s: &Sample) {
        let i = self.entry(s);
        self.add_to(i, s);
    }

    /// Adds `s` to entry `i`, which [`Self::entry`] gave for a sample of the same stack,
    /// thread and component: the agent finds it by the stack's shared copy, without hashing.
    pub fn add_to(&mut self, i: usize, s: &Sample) {
        self.entries[i].add(1, s.weight, &s.counters);
    }

    /// Adds `samples` samples with `s`'s stack, thread and component and the given sums.
    fn add_sums(&mut self, s: &Sample, samples: u64, weight: u64, counters: &[u64]) {
        let i = self.entry(s);
        self.entries[i].add(samples, weight, counters);
    }

    /// The index of `s`'s entry (by its frames, thread and component), made if new.
    pub fn entry(&mut self, s: &Sample) -> usize {
        let key = StackKey {
            frames: s.stack.iter().map(|f| (f.method, f.line)).collect(),
            thread: s.thread,
            component: s.component,
            data: DataKey::of(s),
        };
        // One hash of the key, found or not.
        let next = self.entries.len();
        match self.index.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => *e.get(),
            std::collections::hash_map::Entry::Vacant(v) => {
                self.entries.push(StackEntry { key: v.key().clone(), samples: 0, weight: 0, counters: Vec::new() });
                v.insert(next);
                next
            }
        }
    }

    /// The table of a recording. Samples that share a stack (as read from a file) are summed
    /// per (stack, thread, component, data key) first, so each distinct stack is hashed once.
    pub fn from_recording(rec: &Recording) -> StackTable {
        type Group = (usize, usize, ThreadIdx, VmComponent, Option<DataKey>);
        let mut index: HashMap<Group, usize> = HashMap::new();
        let mut groups: Vec<(usize, u64, u64, Vec<u64>)> = Vec::new();
        for (i, s) in rec.samples.iter().enumerate() {
            let key = (s.stack.as_ptr() as usize, s.stack.len(), s.thread, s.component, DataKey::of(s));
            let g = *index.entry(key).or_insert_with(|| {
                groups.push((i, 0, 0, Vec::new()));
                groups.len() - 1
            });
            let g = &mut groups[g];
            g.1 += 1;
            g.2 = g.2.saturating_add(s.weight);
            if g.3.len() < s.counters.len() {
                g.3.resize(s.counters.len(), 0);
            }
            for (a, b) in g.3.iter_mut().zip(&s.counters) {
                *a = a.saturating_add(*b);
            }
        }
        let mut t = StackTable::default();
        for (first, samples, weight, counters) in groups {
            t.add_sums(&rec.samples[first], samples, weight, &counters);
        }
        t
    }

    pub fn total_samples(&self) -> u64 {
        self.entries.iter().map(|e| e.samples).sum()
    }
}

/// Package-relative source path of a Java method (`java/util/HashMap.java`), the way source
/// roots and IDEs find the file; the bare source file for classes in the default package.
/// `None` when the class file has no SourceFile attribute or the frame is not Java.
pub fn source_path(class_name: &str, source_file: Option<&str>) -> Option<String> {
    let file = source_file.filter(|f| !f.is_empty())?;
    if class_name.is_empty() {
        return None;
    }
    Some(match class_name.rsplit_once('.') {
        Some((pkg, _)) => format!("{}/{file}", pkg.replace('.', "/")),
        None => file.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Frame, FrameKind};

    pub(crate) fn sample(frames: &[(u32, i32)], thread: u32, counters: &[u64]) -> Sample {
        Sample {
            time: 0,
            thread,
            stack: frames
                .iter()
                .map(|&(m, l)| Frame { method: m, bci: 0, line: l, kind: FrameKind::JitCompiled })
                .collect(),
            truncated: false,
            weight: 10,
            counters: counters.to_vec(),
            data_addr: None,
            data: None,
            ip: 0,
            component: VmComponent::Java,
            state: None,
        }
    }

    #[test]
    fn equal_stacks_merge_and_lines_split() {
        let mut t = StackTable::default();
        t.add(&sample(&[(1, 5), (0, 2)], 0, &[3]));
        t.add(&sample(&[(1, 5), (0, 2)], 0, &[4]));
        t.add(&sample(&[(1, 6), (0, 2)], 0, &[1]));
        t.add(&sample(&[(1, 5), (0, 2)], 1, &[1]));
        assert_eq!(t.entries.len(), 3);
        assert_eq!(t.entries[0].samples, 2);
        assert_eq!(t.entries[0].weight, 20);
        assert_eq!(t.entries[0].counters, vec![7]);
        assert_eq!(t.total_samples(), 4);
    }

    #[test]
    fn source_paths_follow_packages() {
        assert_eq!(source_path("java.util.HashMap", Some("HashMap.java")).as_deref(), Some("java/util/HashMap.java"));
        assert_eq!(source_path("Main", Some("Main.java")).as_deref(), Some("Main.java"));
        assert_eq!(source_path("", Some("x.c")), None);
        assert_eq!(source_path("A", None), None);
    }
}
