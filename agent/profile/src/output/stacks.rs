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

/// A stack's frames, leaf first: (method, source line or -1). Shared by the entries of every
/// thread (and component, data target) that ran the stack: a stack run by thousands of threads
/// is held once.
pub type Frames = std::sync::Arc<[(MethodIdx, i32)]>;

/// What makes two samples land in the same entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StackKey {
    pub frames: Frames,
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

/// An entry's key as the table finds it: the id of its frames instead of the frames.
type EntryKey = (u32, ThreadIdx, VmComponent, Option<DataKey>);

#[derive(Clone, Debug, Default)]
pub struct StackTable {
    index: IntMap<EntryKey, usize>,
    /// Distinct frames: id -> frames, and frames -> id (one hash of a stack's frames per stack).
    frames_of: Vec<Frames>,
    frame_ids: IntMap<Frames, u32>,
    pub entries: Vec<StackEntry>,
    /// Frames of the entries' keys.
    frames: usize,
    /// [`Self::with_limit`]'s bound: entries, frames and the method a stack past it becomes.
    limit: Option<TableLimit>,
}

/// Where a [`StackTable`] stops making entries for stacks.
#[derive(Clone, Copy, Debug)]
pub struct TableLimit {
    pub entries: usize,
    pub frames: usize,
    /// The method (a pseudo-frame, [`STACK_TABLE_FULL`]) a stack new past the bound becomes.
    pub full: MethodIdx,
}

/// The frame a stack new to a full table is entered as ([`StackTable::with_limit`]).
pub const STACK_TABLE_FULL: &str = "[stack table full]";

impl StackTable {
    /// A table that makes entries for stacks up to `limit` (the agent's, fed for as long as a
    /// session runs; a reader's table is bounded by its input): past its entries or frames, a
    /// stack new to the table is entered as the one frame `limit.full` with its thread and
    /// component (past twice the entries, without its thread), so the samples are all counted
    /// and the table holds at most twice the entries, plus one per component.
    pub fn with_limit(limit: TableLimit) -> StackTable {
        StackTable { limit: Some(limit), ..StackTable::default() }
    }

    /// Samples entered as [`STACK_TABLE_FULL`] ([`Self::with_limit`]).
    pub fn cut_samples(&self) -> u64 {
        let Some(l) = self.limit else { return 0 };
        self.entries.iter().filter(|e| *e.key.frames == [(l.full, -1)]).map(|e| e.samples).sum()
    }

    pub fn add(&mut self, s: &Sample) {
        let i = self.entry(s);
        self.add_to(i, s);
    }

    /// Adds `s` to entry `i`, which [`Self::entry`] gave for a sample of the same stack,
    /// thread and component: the agent finds it by the stack's shared copy, without hashing.
    pub fn add_to(&mut self, i: usize, s: &Sample) {
        self.entries[i].add(s.count(), s.weight, &s.counters);
    }

    /// The index of `s`'s entry (by its frames, thread and component), made if new.
    pub fn entry(&mut self, s: &Sample) -> usize {
        let frames: Vec<(MethodIdx, i32)> = s.stack.iter().map(|f| (f.method, f.line)).collect();
        let id = self.frames_id(&frames);
        self.entry_of(id, s.thread, s.component, DataKey::of(s))
    }

    /// The id of a stack's frames, kept if new.
    fn frames_id(&mut self, frames: &[(MethodIdx, i32)]) -> u32 {
        if let Some(&id) = self.frame_ids.get(frames) {
            return id;
        }
        let id = self.frames_of.len() as u32;
        let shared: Frames = frames.into();
        self.frames_of.push(shared.clone());
        self.frame_ids.insert(shared, id);
        id
    }

    /// The index of the entry of frames `id` for a thread, component and data key, made if new.
    fn entry_of(&mut self, id: u32, thread: ThreadIdx, component: VmComponent, data: Option<DataKey>) -> usize {
        let mut key: EntryKey = (id, thread, component, data);
        let next = self.entries.len();
        let len = self.frames_of[id as usize].len();
        if let Some(l) = self.limit.filter(|l| next >= l.entries || self.frames + len > l.frames) {
            if let Some(&i) = self.index.get(&key) {
                return i;
            }
            let thread = if next >= 2 * l.entries { ThreadIdx(u32::MAX) } else { thread };
            key = (self.frames_id(&[(l.full, -1)]), thread, component, None);
        }
        // One hash of the key, found or not (until the table is full).
        match self.index.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => *e.get(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let (id, thread, component, data) = v.key().clone();
                let frames = self.frames_of[id as usize].clone();
                self.frames += frames.len();
                let key = StackKey { frames, thread, component, data };
                self.entries.push(StackEntry { key, samples: 0, weight: 0, counters: Vec::new() });
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
            g.1 += s.repeats();
            g.2 = g.2.saturating_add(s.weight);
            if g.3.len() < s.counters.len() {
                g.3.resize(s.counters.len(), 0);
            }
            for (a, b) in g.3.iter_mut().zip(&s.counters) {
                *a = a.saturating_add(*b);
            }
        }
        let mut t = StackTable::default();
        // Each distinct stack's frames hashed once, whatever the threads that ran it.
        let mut ids: IntMap<(usize, usize), u32> = IntMap::default();
        for (first, samples, weight, counters) in groups {
            let s = &rec.samples[first];
            let id = match ids.get(&(s.stack.as_ptr() as usize, s.stack.len())) {
                Some(&id) => id,
                None => {
                    let frames: Vec<(MethodIdx, i32)> = s.stack.iter().map(|f| (f.method, f.line)).collect();
                    let id = t.frames_id(&frames);
                    ids.insert((s.stack.as_ptr() as usize, s.stack.len()), id);
                    id
                }
            };
            let i = t.entry_of(id, s.thread, s.component, DataKey::of(s));
            t.entries[i].add(samples, weight, &counters);
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
            carrier: None,
            time: 0,
            thread: ThreadIdx(thread),
            stack: frames
                .iter()
                .map(|&(m, l)| Frame { method: MethodIdx(m), bci: 0, line: l, kind: FrameKind::JitCompiled })
                .collect(),
            truncated: false,
            weight: 10,
            repeat: 1,
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

    /// Past its bound a table makes no entry for a stack: a new one is entered as the one
    /// pseudo-frame per thread and component (past twice the bound, per component), known
    /// stacks keep theirs, and every sample is counted.
    #[test]
    fn past_the_bound_new_stacks_become_one_frame() {
        let full = 99;
        let mut t = StackTable::with_limit(TableLimit { entries: 4, frames: 1000, full: MethodIdx(full) });
        let mut n = 0;
        for i in 0..100u32 {
            // Distinct stacks of 3 frames, 3 threads; the first one again every time.
            t.add(&sample(&[(i, 1), (i + 1, 2), (0, 3)], i % 3, &[]));
            t.add(&sample(&[(0, 1), (1, 2), (0, 3)], 0, &[]));
            n += 2;
            assert!(t.entries.len() <= 2 * 4 + 1, "{} entries", t.entries.len());
        }
        assert_eq!(t.total_samples(), n);
        assert_eq!(*t.entries[0].key.frames, [(MethodIdx(0), 1), (MethodIdx(1), 2), (MethodIdx(0), 3)]);
        assert_eq!(t.entries[0].samples, 101);
        assert_eq!(t.cut_samples(), 100 - 4);
        // Frames bound the table as entries do (deep stacks).
        let mut t = StackTable::with_limit(TableLimit { entries: 1000, frames: 10, full: MethodIdx(full) });
        let deep: Vec<(u32, i32)> = (0..6).map(|m| (m, 0)).collect();
        t.add(&sample(&deep, 0, &[]));
        t.add(&sample(&deep[1..], 0, &[]));
        assert_eq!(t.entries.len(), 2);
        assert_eq!(*t.entries[1].key.frames, [(MethodIdx(full), -1)]);
        assert_eq!(t.cut_samples(), 1);
    }

    #[test]
    fn source_paths_follow_packages() {
        assert_eq!(source_path("java.util.HashMap", Some("HashMap.java")).as_deref(), Some("java/util/HashMap.java"));
        assert_eq!(source_path("Main", Some("Main.java")).as_deref(), Some("Main.java"));
        assert_eq!(source_path("", Some("x.c")), None);
        assert_eq!(source_path("A", None), None);
    }
}
