//! Calling context tree: samples aggregated by their call path (root first), per method.
//!
//! Nodes are keyed by a string frame name so that trees from different sources (our JFR, the
//! JDK's JFR, async-profiler's collapsed stacks) can be merged and compared. Each node keeps
//! sample counts, event weight and counter sums, both total (including callees) and self.

use std::sync::Arc;

use crate::hash::IntMap;
use crate::model::{Frame, FrameKind, Recording, Sample, ThreadIdx};

pub type NodeId = u32;
pub const ROOT: NodeId = 0;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CctNode {
    /// Shared with every other node of the same name: memory grows with the distinct names,
    /// not with nodes times name length.
    pub name: Arc<str>,
    pub parent: NodeId,
    pub children: Vec<NodeId>,
    /// Totals (callees included): in a tree the agent fills, set by [`Cct::fill_totals`].
    pub total_samples: u64,
    pub self_samples: u64,
    pub total_weight: u64,
    pub self_weight: u64,
    /// Sums of counter deltas of the samples whose stack passes through (total) / ends at (self)
    /// this node, aligned with [`Cct::counters`].
    pub total_counters: Vec<u64>,
    pub self_counters: Vec<u64>,
    /// The kinds of code the node's frames ran as (interpreted, JIT compiled, inlined, native,
    /// kernel...), one bit each ([`kind_bit`]); 0 where the source names frames only
    /// (collapsed stacks). Flame graphs colour by it.
    pub kinds: u8,
}

impl CctNode {
    /// What the node's own frame carries (its self samples and weight).
    pub fn self_amounts(&self) -> Amounts {
        Amounts { samples: self.self_samples, weight: self.self_weight }
    }

    /// What the node carries with its callees.
    pub fn total_amounts(&self) -> Amounts {
        Amounts { samples: self.total_samples, weight: self.total_weight }
    }
}

/// What a node, or a sample, carries besides its counters: samples, and the weight they stand
/// for (the sampling period in ns or events, bytes allocated, ns waited). Read through a
/// [`Measure`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amounts {
    pub samples: u64,
    pub weight: u64,
}

/// What the user asked to weigh by: which of the [`Amounts`] a frame's width, a collapsed
/// line's count or a table's cell shows. Every output reads a tree through one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Measure {
    /// Number of samples.
    #[default]
    Samples,
    /// Event weight: the sampling period the samples stand for (ns for clock events), or
    /// what the JVM's events weigh (bytes, ns waited).
    Weight,
}

impl Measure {
    pub fn name(self) -> &'static str {
        match self {
            Measure::Samples => "samples",
            Measure::Weight => "weight",
        }
    }

    /// The amount this measure reads.
    pub fn of(self, a: Amounts) -> u64 {
        match self {
            Measure::Samples => a.samples,
            Measure::Weight => a.weight,
        }
    }
}

/// The path the last stack of one thread took through a [`Cct`] (see [`Cct::add_sample_ids`]):
/// the node it hangs under and, root first, each frame's name id and node.
#[derive(Clone, Debug, Default)]
pub struct PathHint {
    base: Option<NodeId>,
    names: Vec<u32>,
    nodes: Vec<NodeId>,
}

/// The bit of `k` in [`CctNode::kinds`].
pub fn kind_bit(k: FrameKind) -> u8 {
    1 << FrameKind::ALL.iter().position(|&x| x == k).unwrap_or(FrameKind::ALL.len() - 1)
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cct {
    pub nodes: Vec<CctNode>,
    /// Counter names, as in the recording the tree was built from.
    pub counters: Vec<String>,
    /// Frame names interned, so finding a child allocates nothing.
    name_ids: IntMap<Arc<str>, u32>,
    /// The interned names by id.
    names: Vec<Arc<str>>,
    /// Name id of every node (the root's is `u32::MAX`).
    node_names: Vec<u32>,
    child_index: IntMap<(NodeId, u32), NodeId>,
    /// Nodes made at most for frames ([`Self::with_limit`]); past it a new path continues in
    /// one [`TREE_FULL`] node under its last existing node.
    max_nodes: usize,
}

/// The frame a path continues as once the tree holds its [`Cct::with_limit`] nodes: the
/// samples below it are counted there, their frames beyond the existing nodes left out.
pub const TREE_FULL: &str = "[tree full]";

impl Default for Cct {
    fn default() -> Self {
        Cct::new(Vec::new())
    }
}

impl Cct {
    /// A tree without a bound on its nodes (a reader's: bounded by its input).
    pub fn new(counters: Vec<String>) -> Cct {
        Cct::with_limit(counters, usize::MAX)
    }

    /// A tree that makes at most `max_nodes` nodes for frames (the agent's, fed for as long as
    /// a session runs): a path new past that continues in one [`TREE_FULL`] node under the
    /// deepest of its nodes that exists, one such node per existing node at most, so the
    /// tree never holds more than twice `max_nodes`. Totals stay exact; what is cut is the
    /// frames below.
    pub fn with_limit(counters: Vec<String>, max_nodes: usize) -> Cct {
        let n = counters.len();
        let root =
            CctNode { name: "all".into(), total_counters: vec![0; n], self_counters: vec![0; n], ..Default::default() };
        Cct {
            nodes: vec![root],
            counters,
            name_ids: IntMap::default(),
            names: Vec::new(),
            node_names: vec![u32::MAX],
            child_index: IntMap::default(),
            max_nodes,
        }
    }

    /// Samples whose path was cut at the bound ([`Self::with_limit`]): the self samples of
    /// the [`TREE_FULL`] nodes.
    pub fn cut_samples(&self) -> u64 {
        let Some(full) = self.full_name_id() else { return 0 };
        self.node_names.iter().zip(&self.nodes).filter(|(&n, _)| n == full).map(|(_, node)| node.self_samples).sum()
    }

    /// Whether `id` is a [`TREE_FULL`] node: the end of paths cut at the bound, which ends
    /// above their depth (its ancestors are not their callers' nodes).
    pub fn is_cut(&self, id: NodeId) -> bool {
        self.full_name_id().is_some_and(|full| self.node_names.get(id as usize) == Some(&full))
    }

    /// The name id of [`TREE_FULL`], once a path was cut.
    fn full_name_id(&self) -> Option<u32> {
        self.name_ids.get(TREE_FULL).copied()
    }

    pub fn node(&self, id: NodeId) -> &CctNode {
        &self.nodes[id as usize]
    }

    pub fn root(&self) -> &CctNode {
        &self.nodes[ROOT as usize]
    }

    /// Samples in the tree. As every total, kept by each add except [`Self::add_self_at`] and
    /// [`Self::add_sample_ids`]: a tree filled by those has them after [`Self::fill_totals`].
    pub fn total_samples(&self) -> u64 {
        self.root().total_samples
    }

    /// The tree with `measure` as its samples, for the analyses that count samples (method
    /// tables, call tree, diff): by weight, each node's samples become its weight (the JVM's
    /// events, `--event`: bytes or ns waited).
    pub fn counted_by(mut self, measure: Measure) -> Cct {
        for n in &mut self.nodes {
            (n.self_samples, n.total_samples) = (measure.of(n.self_amounts()), measure.of(n.total_amounts()));
        }
        self
    }

    /// The id of `name` among the tree's frame names, interned if new.
    pub fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.name_ids.get(name) {
            return n;
        }
        let n = self.names.len() as u32;
        let k: Arc<str> = name.into();
        self.name_ids.insert(k.clone(), n);
        self.names.push(k);
        n
    }

    /// Number of distinct frame names (ids are `0..name_count()`).
    pub fn name_count(&self) -> usize {
        self.names.len()
    }

    /// The name id of node `id` (the root's is `u32::MAX`).
    pub fn node_name_id(&self, id: NodeId) -> u32 {
        self.node_names[id as usize]
    }

    /// Child of `parent` named `name`, created if missing.
    pub fn child(&mut self, parent: NodeId, name: &str) -> NodeId {
        let name_id = self.name_id(name);
        self.child_by_name_id(parent, name_id)
    }

    /// Child of `parent` whose name has id `name_id` (from [`Self::name_id`]), created if
    /// missing: one integer lookup, no string hashed.
    pub fn child_by_name_id(&mut self, parent: NodeId, name_id: u32) -> NodeId {
        if let Some(&id) = self.child_index.get(&(parent, name_id)) {
            return id;
        }
        if self.nodes.len() > self.max_nodes {
            // Full: the path goes on in `parent`'s one TREE_FULL child (itself, if it is one).
            let full = self.name_id(TREE_FULL);
            if self.node_names[parent as usize] == full {
                return parent;
            }
            if let Some(&id) = self.child_index.get(&(parent, full)) {
                return id;
            }
            return self.new_child(parent, full);
        }
        self.new_child(parent, name_id)
    }

    fn new_child(&mut self, parent: NodeId, name_id: u32) -> NodeId {
        let id = self.nodes.len() as NodeId;
        let n = self.counters.len();
        self.nodes.push(CctNode {
            name: self.names[name_id as usize].clone(),
            parent,
            total_counters: vec![0; n],
            self_counters: vec![0; n],
            ..Default::default()
        });
        self.node_names.push(name_id);
        self.nodes[parent as usize].children.push(id);
        self.child_index.insert((parent, name_id), id);
        id
    }

    /// Adds one stack (root first) with its sample count, weight and counter deltas.
    /// Returns the leaf node. Sums saturate instead of wrapping; the readers refuse inputs whose
    /// totals do not fit in 64 bits, so with them no sum ever reaches the bound.
    pub fn add_stack<S: AsRef<str>>(
        &mut self,
        root_first: &[S],
        samples: u64,
        weight: u64,
        counters: &[u64],
    ) -> NodeId {
        self.add_path(root_first.iter().map(AsRef::as_ref), samples, weight, counters)
    }

    /// [`Self::add_stack`] over any sequence of names, root first.
    pub fn add_path<'a>(
        &mut self,
        root_first: impl Iterator<Item = &'a str>,
        samples: u64,
        weight: u64,
        counters: &[u64],
    ) -> NodeId {
        self.add_path_kinds(root_first.map(|n| (n, 0)), samples, weight, counters)
    }

    /// [`Self::add_path`] with each frame's kind bits ([`kind_bit`]; 0 for none).
    pub fn add_path_kinds<'a>(
        &mut self,
        root_first: impl Iterator<Item = (&'a str, u8)>,
        samples: u64,
        weight: u64,
        counters: &[u64],
    ) -> NodeId {
        let mut cur = ROOT;
        self.bump(cur, samples, weight, counters);
        for (name, kinds) in root_first {
            let parent = cur;
            cur = self.child(cur, name);
            self.nodes[cur as usize].kinds |= kinds;
            // A path cut at the bound stays in its `[tree full]` node: counted there once.
            if cur != parent {
                self.bump(cur, samples, weight, counters);
            }
        }
        let leaf = &mut self.nodes[cur as usize];
        leaf.self_samples = leaf.self_samples.saturating_add(samples);
        leaf.self_weight = leaf.self_weight.saturating_add(weight);
        for (s, c) in leaf.self_counters.iter_mut().zip(counters) {
            *s = s.saturating_add(*c);
        }
        cur
    }

    /// Adds samples ending at the existing node `leaf` (returned by an earlier add of the same
    /// path): its self sums only, nothing looked up by name. The totals of the nodes on its
    /// path wait for [`Self::fill_totals`]: the agent's path for a stack it has seen before,
    /// constant work where bumping every node up to the root cost a cache miss per frame.
    pub fn add_self_at(&mut self, leaf: NodeId, samples: u64, weight: u64, counters: &[u64]) {
        let n = &mut self.nodes[leaf as usize];
        n.self_samples = n.self_samples.saturating_add(samples);
        n.self_weight = n.self_weight.saturating_add(weight);
        for (s, c) in n.self_counters.iter_mut().zip(counters) {
            *s = s.saturating_add(*c);
        }
    }

    /// Sets every node's totals to the sums of the self sums in its subtree, for a tree
    /// filled by [`Self::add_sample_ids`] and [`Self::add_self_at`] (which leave them); a
    /// no-op on any other (each add there keeps them). One pass from the last node to the
    /// first: a node's parent is always created before it.
    pub fn fill_totals(&mut self) {
        for n in &mut self.nodes {
            n.total_samples = n.self_samples;
            n.total_weight = n.self_weight;
            n.total_counters.clone_from(&n.self_counters);
        }
        for id in (1..self.nodes.len()).rev() {
            let (before, from) = self.nodes.split_at_mut(id);
            let n = &from[0];
            // Always below `id` (see above); a tree that broke it would lose only these sums.
            let Some(p) = before.get_mut(n.parent as usize) else { continue };
            p.total_samples = p.total_samples.saturating_add(n.total_samples);
            p.total_weight = p.total_weight.saturating_add(n.total_weight);
            for (t, c) in p.total_counters.iter_mut().zip(&n.total_counters) {
                *t = t.saturating_add(*c);
            }
        }
    }

    fn bump(&mut self, id: NodeId, samples: u64, weight: u64, counters: &[u64]) {
        let n = &mut self.nodes[id as usize];
        n.total_samples = n.total_samples.saturating_add(samples);
        n.total_weight = n.total_weight.saturating_add(weight);
        for (s, c) in n.total_counters.iter_mut().zip(counters) {
            *s = s.saturating_add(*c);
        }
    }

    /// Adds the recording's samples. With `per_thread`, each stack hangs below a
    /// `[thread name tid=N]` node. Samples that share a stack (as a reader builds them) are
    /// summed first and their path walked once: the work grows with the distinct stacks, not
    /// with samples times depth. Each method's name is made and hashed once, not once per frame.
    pub fn add_recording(&mut self, rec: &Recording, per_thread: bool) {
        let mut names = MethodNames::default();
        for g in group_samples(&rec.samples, per_thread) {
            let s = &rec.samples[g.first];
            self.bump(ROOT, g.samples, g.weight, &g.counters);
            let under = match per_thread {
                true => self.child_bumped(ROOT, &thread_frame_name(rec, s.thread), g.samples, g.weight, &g.counters),
                false => ROOT,
            };
            self.add_frames(under, rec, s, &mut names, g.samples, g.weight, &g.counters);
        }
    }

    pub fn add_sample(&mut self, rec: &Recording, s: &Sample, per_thread: bool) {
        let root = per_thread.then(|| thread_frame_name(rec, s.thread));
        self.add_sample_at(rec, s, root.as_deref(), s.count(), s.weight, &s.counters, &mut MethodNames::default());
    }

    /// Adds `samples` samples of `s`'s stack (their weight and counters summed) under a root
    /// frame `root` of their own, if any (a name with no kind of code). `names`: the method
    /// names of this tree so far, for a caller adding many.
    #[allow(clippy::too_many_arguments)]
    pub fn add_sample_at(
        &mut self,
        rec: &Recording,
        s: &Sample,
        root: Option<&str>,
        samples: u64,
        weight: u64,
        counters: &[u64],
        names: &mut MethodNames,
    ) -> NodeId {
        self.bump(ROOT, samples, weight, counters);
        let under = match root {
            Some(r) => self.child_bumped(ROOT, r, samples, weight, counters),
            None => ROOT,
        };
        self.add_frames(under, rec, s, names, samples, weight, counters)
    }

    /// The child `name` of `parent`, its totals bumped.
    fn child_bumped(&mut self, parent: NodeId, name: &str, samples: u64, weight: u64, counters: &[u64]) -> NodeId {
        let id = self.child(parent, name);
        if id != parent {
            self.bump(id, samples, weight, counters);
        }
        id
    }

    /// Adds `s`'s frames below `under` (whose totals are counted already), root first, and the
    /// self sums at the last. A path that reaches a full tree's [`TREE_FULL`] node ends there:
    /// its frames beyond are not looked at.
    #[allow(clippy::too_many_arguments)]
    fn add_frames(
        &mut self,
        under: NodeId,
        rec: &Recording,
        s: &Sample,
        names: &mut MethodNames,
        samples: u64,
        weight: u64,
        counters: &[u64],
    ) -> NodeId {
        let mut cur = under;
        // Root first; a path cut at the bound stays in its `[tree full]` node, which gets the
        // kinds of the frames left out (found once per stack, not walked per sample).
        let mut rest = 0;
        while rest < s.stack.len() {
            if self.nodes.len() > self.max_nodes && self.is_cut(cur) {
                self.nodes[cur as usize].kinds |= names.kinds_from(&s.stack, rest);
                break;
            }
            let f = &s.stack[s.stack.len() - 1 - rest];
            let name = names.id(self, rec, f.method);
            let parent = cur;
            cur = self.child_by_name_id(cur, name);
            self.nodes[cur as usize].kinds |= kind_bit(f.kind);
            if cur != parent {
                self.bump(cur, samples, weight, counters);
            }
            rest += 1;
        }
        let leaf = &mut self.nodes[cur as usize];
        leaf.self_samples = leaf.self_samples.saturating_add(samples);
        leaf.self_weight = leaf.self_weight.saturating_add(weight);
        for (s, c) in leaf.self_counters.iter_mut().zip(counters) {
            *s = s.saturating_add(*c);
        }
        cur
    }

    /// Adds a sample whose frames are named by `name_ids` (indexed by method: each method's
    /// [`Self::name_id`] in this tree), with an optional per-thread root: no string hashed and
    /// no allocation once the nodes exist. The agent's hot path. `hint`: the path the last
    /// stack of this thread took (one hint per thread, for this tree only), whose nodes serve
    /// the frames this stack shares with it from the root without a lookup each; updated to
    /// this stack's path. Self sums only, as [`Self::add_self_at`]: the totals wait for
    /// [`Self::fill_totals`].
    pub fn add_sample_ids(
        &mut self,
        s: &Sample,
        thread_root: Option<&str>,
        name_ids: &[u32],
        hint: &mut PathHint,
    ) -> NodeId {
        let mut cur = ROOT;
        if let Some(t) = thread_root {
            cur = match hint.base {
                Some(b) if b != ROOT && self.node_name_is(b, t) => b,
                _ => self.child(cur, t),
            };
        }
        if hint.base != Some(cur) {
            *hint = PathHint { base: Some(cur), ..PathHint::default() };
        }
        let mut shared = true;
        for (i, f) in s.stack.iter().rev().enumerate() {
            let id = self.frame_name_id(f, name_ids);
            shared &= hint.names.get(i) == Some(&id);
            if shared {
                cur = hint.nodes[i];
            } else {
                cur = self.child_by_name_id(cur, id);
                hint.names.truncate(i);
                hint.nodes.truncate(i);
                hint.names.push(id);
                hint.nodes.push(cur);
            }
            self.nodes[cur as usize].kinds |= kind_bit(f.kind);
        }
        // The hint may go on past this stack: its frames beyond are still a path from there.
        self.add_self_at(cur, s.count(), s.weight, &s.counters);
        cur
    }

    /// A frame's name id by `name_ids` (see [`Self::add_sample_ids`]).
    fn frame_name_id(&mut self, f: &Frame, name_ids: &[u32]) -> u32 {
        match name_ids.get(f.method.0 as usize).copied().filter(|&n| (n as usize) < self.names.len()) {
            Some(n) => n,
            None => self.name_id("[?]"),
        }
    }

    /// Adds a sample whose stack is `leaf` (leaf first) above its callers' node `base` (the
    /// node [`Self::add_sample_ids`] or this gave a stack of those callers, or their
    /// [`Self::ancestor`] in a stack above them): only the leaf frames are looked up. Self sums
    /// only, as [`Self::add_sample_ids`].
    pub fn add_sample_above(&mut self, base: NodeId, leaf: &[Frame], name_ids: &[u32], s: &Sample) -> NodeId {
        let mut cur = base;
        for f in leaf.iter().rev() {
            let id = self.frame_name_id(f, name_ids);
            cur = self.child_by_name_id(cur, id);
            self.nodes[cur as usize].kinds |= kind_bit(f.kind);
        }
        self.add_self_at(cur, s.count(), s.weight, &s.counters);
        cur
    }

    /// The node `up` levels above `id`, or the root.
    pub fn ancestor(&self, mut id: NodeId, up: usize) -> NodeId {
        for _ in 0..up {
            if id == ROOT {
                break;
            }
            id = self.nodes[id as usize].parent;
        }
        id
    }

    fn node_name_is(&self, id: NodeId, name: &str) -> bool {
        self.nodes.get(id as usize).is_some_and(|n| &*n.name == name && n.parent == ROOT)
    }

    /// Adds a sample under a root frame of its own (`root`: a name with no kind of code).
    pub fn add_sample_under(&mut self, rec: &Recording, s: &Sample, root: &str) {
        self.add_sample_at(rec, s, Some(root), s.count(), s.weight, &s.counters, &mut MethodNames::default());
    }

    /// The tree of a recording; with `per_thread`, one subtree per thread, bounded by
    /// [`split_tree_limit`].
    pub fn from_recording(rec: &Recording, per_thread: bool) -> Cct {
        let mut cct = match per_thread {
            true => Cct::with_limit(rec.counters.clone(), split_tree_limit(rec)),
            false => Cct::new(rec.counters.clone()),
        };
        cct.add_recording(rec, per_thread);
        cct
    }

    /// Path of names from the root's child down to `id`.
    pub fn path(&self, mut id: NodeId) -> Vec<&str> {
        let mut out = Vec::new();
        while id != ROOT {
            out.push(&*self.nodes[id as usize].name);
            id = self.nodes[id as usize].parent;
        }
        out.reverse();
        out
    }

    /// Every node with its self samples > 0, as (root-first path, self samples): the collapsed
    /// stacks format's content.
    pub fn leaf_stacks(&self) -> Vec<(Vec<&str>, u64)> {
        (1..self.nodes.len() as NodeId)
            .filter(|&id| self.nodes[id as usize].self_samples > 0)
            .map(|id| (self.path(id), self.nodes[id as usize].self_samples))
            .collect()
    }

    /// Nodes in depth-first pre-order, each with whether it is entered (`true`) or left
    /// (`false`): a walk of any depth without recursion. Children in creation order.
    pub fn walk(&self) -> Walk<'_> {
        Walk { cct: self, stack: vec![(ROOT, true)] }
    }

    /// Per-method (frame name) totals: samples in which the method appears at least once
    /// (recursion counted once), and self samples. One walk of the tree, keeping how often each
    /// name is on the current path: linear in the nodes whatever the depth. Summed by name id,
    /// each name hashed once at the end rather than at every node.
    pub fn method_totals(&self) -> IntMap<&str, MethodTotals> {
        // Name id -> index in `totals` (u32::MAX: none yet): dense, as the tree may have far
        // fewer names than were interned.
        let mut slot = vec![u32::MAX; self.names.len()];
        let mut totals: Vec<(u32, MethodTotals)> = Vec::new();
        let mut on_path = vec![0u32; self.names.len()];
        for (id, enter) in self.walk() {
            if id == ROOT {
                continue;
            }
            let name_id = self.node_names[id as usize] as usize;
            if !enter {
                on_path[name_id] -= 1;
                continue;
            }
            let n = &self.nodes[id as usize];
            if slot[name_id] == u32::MAX {
                slot[name_id] = totals.len() as u32;
                totals.push((name_id as u32, MethodTotals::default()));
            }
            let e = &mut totals[slot[name_id] as usize].1;
            e.self_samples = e.self_samples.saturating_add(n.self_samples);
            e.self_weight = e.self_weight.saturating_add(n.self_weight);
            crate::model::add_counters(&mut e.self_counters, &n.self_counters);
            // Count total only at the outermost occurrence of the name on this path.
            if on_path[name_id] == 0 {
                e.total_samples = e.total_samples.saturating_add(n.total_samples);
                e.total_weight = e.total_weight.saturating_add(n.total_weight);
                crate::model::add_counters(&mut e.total_counters, &n.total_counters);
            }
            on_path[name_id] += 1;
        }
        totals.into_iter().map(|(id, t)| (&*self.names[id as usize], t)).collect()
    }
}

/// See [`Cct::walk`].
pub struct Walk<'a> {
    cct: &'a Cct,
    stack: Vec<(NodeId, bool)>,
}

impl Iterator for Walk<'_> {
    type Item = (NodeId, bool);

    fn next(&mut self) -> Option<(NodeId, bool)> {
        let (id, enter) = self.stack.pop()?;
        if enter {
            self.stack.push((id, false));
            self.stack.extend(self.cct.nodes[id as usize].children.iter().rev().map(|&c| (c, true)));
        }
        Some((id, enter))
    }
}

/// Samples that share a stack (the same shared copy, see [`crate::model::Stack`]) and, with
/// `per_thread`, a thread: the first sample's index and the sums of the group.
pub struct SampleGroup {
    pub first: usize,
    pub samples: u64,
    pub weight: u64,
    pub counters: Vec<u64>,
}

/// Groups samples by their shared stack (and thread, with `per_thread`), in order of first
/// appearance. Linear in the samples; the stacks themselves are not looked at.
pub fn group_samples(samples: &[Sample], per_thread: bool) -> Vec<SampleGroup> {
    let mut index: IntMap<(usize, usize, ThreadIdx), usize> = IntMap::default();
    let mut groups: Vec<SampleGroup> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let key = (s.stack.as_ptr() as usize, s.stack.len(), if per_thread { s.thread } else { ThreadIdx(0) });
        let g = *index.entry(key).or_insert_with(|| {
            groups.push(SampleGroup { first: i, samples: 0, weight: 0, counters: Vec::new() });
            groups.len() - 1
        });
        let g = &mut groups[g];
        g.samples += s.count();
        g.weight = g.weight.saturating_add(s.weight);
        crate::model::add_counters(&mut g.counters, &s.counters);
    }
    groups
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MethodTotals {
    pub total_samples: u64,
    pub self_samples: u64,
    pub total_weight: u64,
    pub self_weight: u64,
    pub total_counters: Vec<u64>,
    pub self_counters: Vec<u64>,
}

/// The nodes a tree split by a root frame per thread (or per data target) may make for frames:
/// the frames of the recording's distinct stacks, plus one per sample, plus a few thousand.
/// Without the split the tree never has more nodes than the stacks have frames; with it, each
/// thread's subtree repeats the paths its samples took, and a file of thousands of threads
/// sampled once each in one deep stack (a few bytes a thread) would make threads times depth
/// nodes. Real recordings stay far below it: their stacks share most of their frames.
pub fn split_tree_limit(rec: &Recording) -> usize {
    let mut seen: IntMap<(usize, usize), ()> = IntMap::default();
    let mut frames = 0usize;
    for s in &rec.samples {
        if seen.insert((s.stack.as_ptr() as usize, s.stack.len()), ()).is_none() {
            frames += s.stack.len();
        }
    }
    frames.saturating_add(rec.samples.len()).saturating_add(4096)
}

/// The tree's name ids of a recording's methods, each display name made and interned once;
/// and for stacks cut at a full tree's bound, the kinds of code of their frames.
#[derive(Default)]
pub struct MethodNames {
    ids: Vec<u32>,
    /// Per stack (address, length): the kind bits of its frames from each one (root first)
    /// to the leaf.
    kinds_below: IntMap<(usize, usize), Vec<u8>>,
}

impl MethodNames {
    /// The kind bits of `stack`'s frames from the `from`th (root first) to the leaf.
    fn kinds_from(&mut self, stack: &crate::model::Stack, from: usize) -> u8 {
        let below = self.kinds_below.entry((stack.as_ptr() as usize, stack.len())).or_insert_with(|| {
            // Leaf first as stored: element i holds frames 0..=i, which root first are the
            // last i + 1.
            let mut acc = 0u8;
            stack
                .iter()
                .map(|f| {
                    acc |= kind_bit(f.kind);
                    acc
                })
                .collect()
        });
        below.get(stack.len() - 1 - from).copied().unwrap_or(0)
    }

    fn id(&mut self, cct: &mut Cct, rec: &Recording, m: crate::model::MethodIdx) -> u32 {
        let i = m.0 as usize;
        if i >= self.ids.len() {
            self.ids.resize(i + 1, u32::MAX);
        }
        if self.ids[i] == u32::MAX {
            self.ids[i] = cct.name_id(&rec.method(m).display_name());
        }
        self.ids[i]
    }
}

/// Name of the per-thread pseudo-frame used with the `threads` option.
pub fn thread_frame_name(rec: &Recording, t: crate::model::ThreadIdx) -> String {
    match rec.threads.get(t.0 as usize) {
        Some(ti) if ti.is_virtual => format!("[{}]", ti.shown_name()),
        Some(ti) => format!("[{} tid={}]", ti.name, ti.os_tid),
        None => format!("[thread #{t}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_self_add_up() {
        let mut c = Cct::new(vec!["page-faults".into()]);
        c.add_stack(&["main", "a", "b"], 3, 30, &[1]);
        c.add_stack(&["main", "a"], 2, 20, &[2]);
        c.add_stack(&["main", "c"], 5, 50, &[0]);
        assert_eq!(c.total_samples(), 10);
        let self_sum: u64 = c.nodes.iter().map(|n| n.self_samples).sum();
        assert_eq!(self_sum, 10);
        let t = c.method_totals();
        assert_eq!(t["a"].total_samples, 5);
        assert_eq!(t["a"].self_samples, 2);
        assert_eq!(t["a"].total_counters, vec![3]);
        assert_eq!(t["main"].total_weight, 100);
        let mut stacks = c.leaf_stacks();
        stacks.sort();
        assert_eq!(stacks[0], (vec!["main", "a"], 2));
    }

    #[test]
    fn a_tree_by_weight_counts_weight_as_samples() {
        let mut c = Cct::default();
        c.add_stack(&["main", "park"], 2, 3_000, &[]);
        c.add_stack(&["main", "monitor"], 6, 60, &[]);
        let w = c.counted_by(Measure::Weight);
        assert_eq!(w.total_samples(), 3_060);
        let t = w.method_totals();
        assert_eq!((t["park"].self_samples, t["monitor"].self_samples), (3_000, 60));
    }

    /// The agent's path (names by id, per method) builds the tree the readers' path does.
    #[test]
    fn names_by_id_build_the_same_tree() {
        use crate::model::*;
        let mut rec = Recording::default();
        let t = rec.add_thread(ThreadInfo {
            os_tid: 1,
            java_id: Some(1),
            name: "w".into(),
            is_java: true,
            is_virtual: false,
        });
        let a = rec.methods.intern(MethodInfo::java("A", "f", "()V"));
        let b = rec.methods.intern(MethodInfo::java("B", "g", "()V"));
        let frame = |method, kind| Frame { method, bci: 0, line: 0, kind };
        let c = rec.methods.intern(MethodInfo::java("C", "h", "()V"));
        let d = rec.methods.intern(MethodInfo::java("D", "k", "()V"));
        // Root first here (a sample's stack is leaf first). Consecutive stacks share callers
        // (what the path hint serves), differ at the root, are shorter or longer than the one
        // before; `b a`, `b c d`, `b a c` would take `b c` for `b a` with a hint that kept
        // nodes of two paths.
        let (j, i, n) = (FrameKind::JitCompiled, FrameKind::Inlined, FrameKind::Interpreted);
        let root_first = [
            vec![(b, n), (a, j)],
            vec![(b, i)],
            vec![(b, n), (c, j), (d, j)],
            vec![(b, n), (a, i), (c, j)],
            vec![(a, j), (b, j)],
            vec![(b, n), (a, i), (a, j)],
            vec![(b, n), (a, i), (c, j)],
        ];
        let stacks: Vec<Vec<Frame>> =
            root_first.iter().map(|st| st.iter().rev().map(|&(m, k)| frame(m, k)).collect()).collect();
        let mut readers = Cct::default();
        let mut agent = Cct::default();
        // The agent's path for a stack above callers it met before: from their node.
        let mut above = Cct::default();
        let mut hint = PathHint::default();
        let mut above_hint = PathHint::default();
        let ids: Vec<u32> =
            (0..rec.methods.len() as u32).map(|m| agent.name_id(&rec.method(MethodIdx(m)).display_name())).collect();
        for name in (0..rec.methods.len() as u32).map(|m| rec.method(MethodIdx(m)).display_name()) {
            above.name_id(&name);
        }
        let mut leaves = vec![None; stacks.len()];
        for (i, st) in stacks.iter().cycle().take(21).enumerate() {
            let mut s = Sample::of_stack(st.clone().into());
            s.thread = t;
            s.weight = 10 + i as u64;
            readers.add_sample(&rec, &s, true);
            agent.add_sample_ids(&s, Some(&thread_frame_name(&rec, t)), &ids, &mut hint);
            let k = stacks.len();
            let leaf = match leaves[i % k] {
                // Above the node of its callers below its first (i / k) % len frames.
                Some(node) => {
                    let up = (i / k) % st.len();
                    let base = above.ancestor(node, up);
                    above.add_sample_above(base, &st[..up], &ids, &s)
                }
                None => above.add_sample_ids(&s, Some(&thread_frame_name(&rec, t)), &ids, &mut above_hint),
            };
            leaves[i % k] = Some(leaf);
        }
        agent.fill_totals();
        above.fill_totals();
        assert_eq!(shape(&agent), shape(&readers));
        assert_eq!(shape(&above), shape(&readers));
        assert_eq!(agent.total_samples(), 21);
    }

    /// Every node's path, total samples, self weight and frame kinds, sorted.
    fn shape(c: &Cct) -> Vec<(Vec<String>, u64, u64, u8)> {
        let mut v: Vec<_> = (1..c.nodes.len() as NodeId)
            .map(|i| {
                let path = c.path(i).iter().map(|n| n.to_string()).collect();
                (path, c.node(i).total_samples, c.node(i).self_weight, c.node(i).kinds)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_new_leaf_above_another_stacks_callers_makes_the_nodes_its_path_would() {
        use crate::model::*;
        let mut rec = Recording::default();
        let t = rec.add_thread(ThreadInfo {
            os_tid: 1,
            java_id: Some(1),
            name: "w".into(),
            is_java: true,
            is_virtual: false,
        });
        let m: Vec<MethodIdx> =
            ["A", "B", "C", "D"].iter().map(|c| rec.methods.intern(MethodInfo::java(c, "f", "()V"))).collect();
        let frame = |method, kind| Frame { method, bci: 0, line: 0, kind };
        let (j, i, n, k) = (FrameKind::JitCompiled, FrameKind::Inlined, FrameKind::Interpreted, FrameKind::Kernel);
        // Leaf first: `known` is met first; `above` shares its two callers (B, A) and has new
        // leaf frames (a kernel frame above an inlined one, one named like a known node).
        let known = vec![frame(m[2], j), frame(m[0], i), frame(m[1], n)];
        let above = vec![frame(m[3], k), frame(m[0], j), frame(m[0], i), frame(m[1], n)];
        for per_thread in [false, true] {
            let mut readers = Cct::default();
            let mut agent = Cct::default();
            let ids: Vec<u32> = (0..rec.methods.len() as u32)
                .map(|x| agent.name_id(&rec.method(MethodIdx(x)).display_name()))
                .collect();
            let root = per_thread.then(|| thread_frame_name(&rec, t));
            let mut samples = [Sample::of_stack(known.clone().into()), Sample::of_stack(above.clone().into())];
            for (w, s) in samples.iter_mut().enumerate() {
                s.thread = t;
                s.weight = 5 + w as u64;
                readers.add_sample(&rec, s, per_thread);
            }
            let leaf = agent.add_sample_ids(&samples[0], root.as_deref(), &ids, &mut PathHint::default());
            let base = agent.ancestor(leaf, 1);
            let new_leaf = agent.add_sample_above(base, &above[..2], &ids, &samples[1]);
            agent.fill_totals();
            assert_eq!(shape(&agent), shape(&readers), "per_thread {per_thread}");
            assert_eq!(agent.path(new_leaf).last().map(|s| s.to_string()), Some(rec.method(m[3]).display_name()));
            assert_eq!(agent.ancestor(new_leaf, 100), ROOT);
        }
    }

    /// Past its bound a tree makes no node for a frame: a new path ends in one `[tree full]`
    /// node under its deepest existing node, with its samples; totals stay exact.
    #[test]
    fn past_the_bound_new_paths_end_in_one_tree_full_node() {
        let mut c = Cct::with_limit(Vec::new(), 3);
        c.add_stack(&["a", "b", "c"], 1, 1, &[]);
        // Full: `d` continues as b's `[tree full]`; `x y z` as a's, the frames below it cut.
        c.add_stack(&["a", "b", "d"], 2, 2, &[]);
        c.add_stack(&["a", "x", "y", "z"], 4, 4, &[]);
        c.add_stack(&["a", "x", "w"], 8, 8, &[]);
        c.add_stack(&["a", "b", "c"], 16, 16, &[]);
        let mut leaves = c.leaf_stacks();
        leaves.sort();
        let leaves: Vec<(String, u64)> = leaves.into_iter().map(|(p, n)| (p.join(";"), n)).collect();
        assert_eq!(leaves, [("a;[tree full]".to_string(), 12), ("a;b;[tree full]".into(), 2), ("a;b;c".into(), 17)],);
        assert_eq!(c.total_samples(), 31);
        assert_eq!(c.cut_samples(), 14);
        // Totals as the self sums below each node give them (a cut path counted once).
        let totals: Vec<u64> = c.nodes.iter().map(|n| n.total_samples).collect();
        c.fill_totals();
        assert_eq!(c.nodes.iter().map(|n| n.total_samples).collect::<Vec<_>>(), totals);
        // The agent's paths by name id, thread roots and stacks above known callers included.
        use crate::model::*;
        let mut rec = Recording::default();
        let t = rec.add_thread(ThreadInfo {
            os_tid: 1,
            java_id: Some(1),
            name: "w".into(),
            is_java: true,
            is_virtual: false,
        });
        let methods: Vec<MethodIdx> =
            (0..40).map(|i| rec.methods.intern(MethodInfo::java("C", &format!("m{i}"), "()V"))).collect();
        let limit = 50;
        let mut agent = Cct::with_limit(Vec::new(), limit);
        let ids: Vec<u32> = methods.iter().map(|&m| agent.name_id(&rec.method(m).display_name())).collect();
        let mut hint = PathHint::default();
        let root = thread_frame_name(&rec, t);
        let mut n = 0;
        for i in 0..200u32 {
            // Leaf first, 6 frames of the 40 methods: distinct paths all the time.
            let st: Vec<Frame> = (0..6)
                .map(|k| Frame {
                    method: methods[((i * 7 + k * k * 3) % 40) as usize],
                    bci: 0,
                    line: 0,
                    kind: FrameKind::JitCompiled,
                })
                .collect();
            let mut s = Sample::of_stack(st.clone().into());
            s.thread = t;
            let leaf = agent.add_sample_ids(&s, Some(&root), &ids, &mut hint);
            agent.add_sample_above(agent.ancestor(leaf, 2), &st[..2], &ids, &s);
            n += 2;
            assert!(agent.nodes.len() <= 2 * limit + 2, "{} nodes", agent.nodes.len());
        }
        agent.fill_totals();
        assert_eq!(agent.total_samples(), n);
        assert!(agent.cut_samples() > 0 && agent.cut_samples() < n);
    }

    #[test]
    fn frame_kinds_are_kept_per_node() {
        use crate::model::*;
        let mut rec = Recording::default();
        let m = rec.methods.intern(MethodInfo::java("A", "f", "()V"));
        let sample = |kind| Sample::of_stack(vec![Frame { method: m, bci: 0, line: 0, kind }].into());
        let mut c = Cct::default();
        let ids = vec![c.name_id("A.f")];
        // The agent's path, with a thread root, and the readers' path.
        c.add_sample_ids(&sample(FrameKind::Interpreted), Some("[t]"), &ids, &mut PathHint::default());
        c.add_sample_ids(&sample(FrameKind::JitCompiled), Some("[t]"), &ids, &mut PathHint::default());
        c.add_sample(&rec, &sample(FrameKind::Kernel), false);
        let kinds = |path: &[&str]| c.nodes[(1..c.nodes.len()).find(|&i| c.path(i as NodeId) == path).unwrap()].kinds;
        assert_eq!(kinds(&["[t]"]), 0, "a thread frame has no kind");
        assert_eq!(kinds(&["[t]", "A.f"]), kind_bit(FrameKind::Interpreted) | kind_bit(FrameKind::JitCompiled));
        assert_eq!(kinds(&["A.f"]), kind_bit(FrameKind::Kernel));
        // Names that normalise alike keep the kinds of both.
        let norm = crate::analysis::compare::normalize_cct(&c);
        assert_eq!(
            norm.nodes.iter().map(|n| n.kinds).fold(0, |a, k| a | k),
            c.nodes.iter().map(|n| n.kinds).fold(0, |a, k| a | k)
        );
    }

    #[test]
    fn adding_at_a_known_leaf_then_filling_the_totals_equals_adding_its_path_again() {
        let mut by_path = Cct::new(vec!["c".into()]);
        let mut at_leaf = Cct::new(vec!["c".into()]);
        by_path.add_stack(&["main", "a", "b"], 1, 10, &[1]);
        by_path.add_stack(&["main", "x"], 1, 10, &[1]);
        by_path.add_stack(&["main", "a", "b"], 2, 30, &[5]);
        let leaf = at_leaf.add_stack(&["main", "a", "b"], 1, 10, &[1]);
        at_leaf.add_stack(&["main", "x"], 1, 10, &[1]);
        at_leaf.add_self_at(leaf, 2, 30, &[5]);
        assert_eq!(at_leaf.node(leaf).self_samples, 3);
        assert_eq!(at_leaf.total_samples(), 2, "the totals wait");
        at_leaf.fill_totals();
        assert_eq!(at_leaf, by_path);
        // On a tree whose adds kept the totals, filling them changes nothing.
        let mut again = by_path.clone();
        again.fill_totals();
        assert_eq!(again, by_path);
    }

    #[test]
    fn recursion_counts_once_in_method_totals() {
        let mut c = Cct::default();
        c.add_stack(&["main", "f", "f", "f"], 4, 4, &[]);
        let t = c.method_totals();
        assert_eq!(t["f"].total_samples, 4);
        assert_eq!(t["f"].self_samples, 4);
    }
}
