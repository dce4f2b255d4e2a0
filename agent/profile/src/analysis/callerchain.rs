//! CallerChaining (Inoue & Nakatani 2009, section 6): a calling context tree rebuilt without
//! stack walks, from samples taken in method prologues as quadruples
//! {caller, caller stack depth, callee, callee stack depth}.
//!
//! - **Construction** (6.1): a (method, depth) pair is a key; a quadruple links the caller key
//!   to the callee key. Keys never seen as callees are roots; the tree is the unfolding of these
//!   links from the roots, so a key reached through several callers gets a node below each
//!   (the paper: "we add a node as needed"). Depths tell apart contexts that method names
//!   alone cannot (Figure 6: D at depth 90 is only called from B, so E at 100 is A-B-D-E).
//! - **Mapping events** (6.2): an event in method m at depth d goes to the nodes with key
//!   (m, d). Where several nodes share the key (Figure 7), it is distributed by edge hotness:
//!   each node's share is the product, along its path, of the edge's samples over all samples
//!   into the callee's key (gprof-style). Sample counts are only compared between edges into
//!   the same callee, which is where the paper says they are meaningful.
//! - **Fitting**: an event with no node at its depth (imprecise interrupts) goes to the nodes
//!   of m whose caller, or one of whose callees, has depth d — Figure 6's E at depth 40 lands
//!   on A-C-E because C is at depth 40.
//! - **Statistics** (Table 1): nodes; nodes whose key has several callers (their children
//!   cannot be placed uniquely); methods; nodes per method; the share of events whose callers
//!   are uniquely identified for at least one and three levels.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use super::{fields, load_text, parse_u64, sat_sum};
use crate::load::LoadError;

/// Largest tree [`ChainTree::build`] unfolds; deeper sharing than this is rejected.
pub const MAX_NODES: usize = 1_000_000;

/// Levels [`ChainTree::render`] indents; deeper levels are numbered instead.
pub const MAX_INDENT: usize = 40;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quad {
    pub caller: String,
    pub caller_depth: u64,
    pub callee: String,
    pub callee_depth: u64,
    pub count: u64,
}

/// An event (e.g. a cache miss) in `method` at stack `depth`, `count` times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub method: String,
    pub depth: u64,
    pub count: u64,
}

/// Parses lines `caller caller_depth callee callee_depth count`; `#` comments and blank lines
/// are skipped.
pub fn parse_quads(text: &str) -> Result<Vec<Quad>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(f) = fields(line) else { continue };
        let err = |m: String| (i + 1, m);
        if f.len() != 5 {
            return Err(err(format!(
                "expected `caller caller_depth callee callee_depth count`, got {} fields",
                f.len()
            )));
        }
        let q = Quad {
            caller: f[0].to_string(),
            caller_depth: parse_u64("caller depth", f[1]).map_err(err)?,
            callee: f[2].to_string(),
            callee_depth: parse_u64("callee depth", f[3]).map_err(err)?,
            count: parse_u64("count", f[4]).map_err(err)?,
        };
        if q.callee_depth <= q.caller_depth {
            return Err(err(format!(
                "callee depth {} is not deeper than caller depth {}: depths are offsets from the stack base",
                q.callee_depth, q.caller_depth
            )));
        }
        out.push(q);
    }
    Ok(out)
}

/// Parses lines `method depth count`.
pub fn parse_events(text: &str) -> Result<Vec<Event>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(f) = fields(line) else { continue };
        let err = |m: String| (i + 1, m);
        if f.len() != 3 {
            return Err(err(format!("expected `method depth count`, got {} fields", f.len())));
        }
        out.push(Event {
            method: f[0].to_string(),
            depth: parse_u64("depth", f[1]).map_err(err)?,
            count: parse_u64("count", f[2]).map_err(err)?,
        });
    }
    Ok(out)
}

pub fn load_quads(path: &Path) -> Result<Vec<Quad>, LoadError> {
    load_text(path, parse_quads)
}

pub fn load_events(path: &Path) -> Result<Vec<Event>, LoadError> {
    load_text(path, parse_events)
}

/// The events the quadruples themselves stand for: each sample was taken in the callee.
pub fn quad_events(quads: &[Quad]) -> Vec<Event> {
    quads.iter().map(|q| Event { method: q.callee.clone(), depth: q.callee_depth, count: q.count }).collect()
}

type Key = (u32, u64);

#[derive(Clone, Debug, PartialEq)]
pub struct ChainNode {
    pub method: u32,
    pub depth: u64,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// Samples of the edge from the parent (0 for roots).
    pub samples: u64,
    /// Share of the key's events this node gets (edge hotness along the path).
    pub share: f64,
}

/// Where an event went.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapping {
    /// Nodes with their share of the event, summing to 1; empty when unmapped.
    pub nodes: Vec<(usize, f64)>,
    /// Found by the fitting step (depth belonged to the caller or a callee).
    pub fitted: bool,
}

/// The statistics of the paper's Table 1.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainStats {
    pub nodes: usize,
    /// Nodes whose (method, depth) has several callers.
    pub ambiguous_nodes: usize,
    pub methods: usize,
    pub events: u64,
    pub mapped: u64,
    pub fitted: u64,
    /// Events whose callers were uniquely identified for at least 1 and 3 levels.
    pub unique_1: u64,
    pub unique_3: u64,
}

impl ChainStats {
    pub fn nodes_per_method(&self) -> f64 {
        if self.methods == 0 {
            0.0
        } else {
            self.nodes as f64 / self.methods as f64
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct ChainTree {
    methods: Vec<String>,
    method_index: HashMap<String, u32>,
    pub nodes: Vec<ChainNode>,
    pub roots: Vec<usize>,
    by_key: HashMap<Key, Vec<usize>>,
    /// (method, depth of the caller or of a callee) -> nodes of the method: the candidates of
    /// the fitting step, found without scanning every node of the method.
    fits: HashMap<Key, Vec<usize>>,
    /// Callers of each key with the samples of the edge.
    callers: HashMap<Key, Vec<(Key, u64)>>,
}

impl ChainTree {
    /// Builds the tree from quadruples (duplicates are summed).
    pub fn build(quads: &[Quad]) -> Result<ChainTree, String> {
        ChainTree::build_with_limit(quads, MAX_NODES)
    }

    /// Builds the tree, refusing to unfold more than `max_nodes` nodes.
    pub fn build_with_limit(quads: &[Quad], max_nodes: usize) -> Result<ChainTree, String> {
        let mut t = ChainTree::default();
        let mut edges: HashMap<(Key, Key), u64> = HashMap::new();
        for q in quads {
            if q.callee_depth <= q.caller_depth {
                return Err(format!(
                    "{} at {} calls {} at {}: callee not deeper",
                    q.caller, q.caller_depth, q.callee, q.callee_depth
                ));
            }
            let a = (t.intern(&q.caller), q.caller_depth);
            let b = (t.intern(&q.callee), q.callee_depth);
            let e = edges.entry((a, b)).or_default();
            *e = e.saturating_add(q.count);
        }
        let mut children: HashMap<Key, Vec<(Key, u64)>> = HashMap::new();
        let mut callees = BTreeSet::new();
        let mut callers_set = BTreeSet::new();
        for (&(a, b), &n) in &edges {
            children.entry(a).or_default().push((b, n));
            t.callers.entry(b).or_default().push((a, n));
            callees.insert(b);
            callers_set.insert(a);
        }
        let names = t.methods.clone();
        let by_name = |k: &Key| (names[k.0 as usize].clone(), k.1);
        for v in children.values_mut().chain(t.callers.values_mut()) {
            v.sort_by_key(|(k, _)| by_name(k));
        }
        let into: HashMap<Key, u64> = t.callers.iter().map(|(k, v)| (*k, sat_sum(v.iter().map(|e| e.1)))).collect();
        let mut roots: Vec<Key> = callers_set.difference(&callees).copied().collect();
        roots.sort_by_key(by_name);
        // Depth-first unfolding; depths grow along every edge, so it ends.
        let mut stack: Vec<(Key, Option<usize>, u64, f64)> = roots.iter().rev().map(|&k| (k, None, 0, 1.0)).collect();
        while let Some((key, parent, samples, share)) = stack.pop() {
            if t.nodes.len() >= max_nodes {
                return Err(format!("the reconstructed tree exceeds {max_nodes} nodes: too many shared call paths"));
            }
            let id = t.nodes.len();
            t.nodes.push(ChainNode { method: key.0, depth: key.1, parent, children: Vec::new(), samples, share });
            match parent {
                Some(p) => t.nodes[p].children.push(id),
                None => t.roots.push(id),
            }
            t.by_key.entry(key).or_default().push(id);
            let kids = children.get(&key).map(Vec::as_slice).unwrap_or(&[]);
            // Every entry on the stack becomes a node: bound both together, so neither grows past
            // the limit (a key with many callees, reached through many paths, would otherwise
            // fill the stack long before the tree).
            if t.nodes.len() + stack.len() + kids.len() > max_nodes {
                return Err(format!("the reconstructed tree exceeds {max_nodes} nodes: too many shared call paths"));
            }
            for &(child, n) in kids.iter().rev() {
                let total_in = into.get(&child).copied().unwrap_or(0);
                let edge_share = if total_in == 0 { 0.0 } else { n as f64 / total_in as f64 };
                stack.push((child, Some(id), n, share * edge_share));
            }
        }
        // Fitting candidates: a node of m fits depth d if its caller or one of its callees is at
        // d. Each node is listed once per distinct such depth.
        for id in 0..t.nodes.len() {
            let n = &t.nodes[id];
            let mut depths: Vec<u64> = n.children.iter().map(|&c| t.nodes[c].depth).collect();
            depths.extend(n.parent.map(|p| t.nodes[p].depth));
            depths.sort_unstable();
            depths.dedup();
            for d in depths {
                t.fits.entry((n.method, d)).or_default().push(id);
            }
        }
        Ok(t)
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.method_index.get(name) {
            return i;
        }
        let i = self.methods.len() as u32;
        self.methods.push(name.to_string());
        self.method_index.insert(name.to_string(), i);
        i
    }

    pub fn method_name(&self, node: usize) -> &str {
        &self.methods[self.nodes[node].method as usize]
    }

    /// (method, depth) of the node and its ancestors, root first.
    pub fn path(&self, node: usize) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut cur = Some(node);
        while let Some(n) = cur {
            out.push((self.method_name(n).to_string(), self.nodes[n].depth));
            cur = self.nodes[n].parent;
        }
        out.reverse();
        out
    }

    /// Number of distinct callers (method, depth) of the node's key.
    pub fn callers_of(&self, node: usize) -> usize {
        let n = &self.nodes[node];
        self.callers.get(&(n.method, n.depth)).map_or(0, Vec::len)
    }

    /// Nodes whose key has several callers: the paper's "nodes having multiple callers with
    /// the same call stack depth" (Figure 7's D), below which contexts are ambiguous.
    pub fn ambiguous_nodes(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&n| self.callers_of(n) > 1).collect()
    }

    /// Maps an event onto the tree: exact key first, then the fitting step.
    pub fn map_event(&self, method: &str, depth: u64) -> Mapping {
        let none = Mapping { nodes: Vec::new(), fitted: false };
        let Some(&m) = self.method_index.get(method) else {
            return none;
        };
        if let Some(v) = self.by_key.get(&(m, depth)) {
            return Mapping { nodes: self.weighted(v), fitted: false };
        }
        match self.fits.get(&(m, depth)) {
            Some(fits) => Mapping { nodes: self.weighted(fits), fitted: true },
            None => none,
        }
    }

    fn weighted(&self, nodes: &[usize]) -> Vec<(usize, f64)> {
        let sum: f64 = nodes.iter().map(|&n| self.nodes[n].share).sum();
        nodes
            .iter()
            .map(|&n| (n, if sum > 0.0 { self.nodes[n].share / sum } else { 1.0 / nodes.len() as f64 }))
            .collect()
    }

    /// For how many levels the callers of all candidate nodes agree (`usize::MAX`: the whole
    /// calling context is known).
    pub fn unique_levels(&self, candidates: &[usize]) -> usize {
        self.unique_levels_up_to(candidates, usize::MAX)
    }

    /// [`Self::unique_levels`], looking at most `max` levels up (and answering `max` if they
    /// all agree): the statistics only ask about 1 and 3 levels, and candidates that share a
    /// long chain of callers would otherwise be walked to the root for every event.
    pub fn unique_levels_up_to(&self, candidates: &[usize], max: usize) -> usize {
        if candidates.len() <= 1 {
            return usize::MAX;
        }
        let key = |n: &Option<usize>| n.map(|n| (self.nodes[n].method, self.nodes[n].depth));
        let mut cur: Vec<Option<usize>> = candidates.iter().map(|&n| Some(n)).collect();
        let mut level = 0;
        loop {
            if level >= max {
                return max;
            }
            cur = cur.iter().map(|n| n.and_then(|n| self.nodes[n].parent)).collect();
            let first = key(&cur[0]);
            if cur.iter().any(|n| key(n) != first) {
                return level;
            }
            if first.is_none() {
                return usize::MAX;
            }
            level += 1;
        }
    }

    /// Table 1 statistics for a set of events. Events of the same method and depth are mapped
    /// once, with their counts summed.
    pub fn stats(&self, events: &[Event]) -> ChainStats {
        let methods: BTreeSet<u32> = self.nodes.iter().map(|n| n.method).collect();
        let mut s = ChainStats {
            nodes: self.nodes.len(),
            ambiguous_nodes: self.ambiguous_nodes().len(),
            methods: methods.len(),
            events: 0,
            mapped: 0,
            fitted: 0,
            unique_1: 0,
            unique_3: 0,
        };
        let mut merged: HashMap<(&str, u64), u64> = HashMap::new();
        let mut order: Vec<(&str, u64)> = Vec::new();
        for e in events {
            s.events = s.events.saturating_add(e.count);
            let c = merged.entry((e.method.as_str(), e.depth)).or_insert_with(|| {
                order.push((e.method.as_str(), e.depth));
                0
            });
            *c = c.saturating_add(e.count);
        }
        for key in order {
            let count = merged[&key];
            let m = self.map_event(key.0, key.1);
            if m.nodes.is_empty() {
                continue;
            }
            s.mapped = s.mapped.saturating_add(count);
            if m.fitted {
                s.fitted = s.fitted.saturating_add(count);
            }
            let ids: Vec<usize> = m.nodes.iter().map(|x| x.0).collect();
            let levels = self.unique_levels_up_to(&ids, 3);
            if levels >= 1 {
                s.unique_1 = s.unique_1.saturating_add(count);
            }
            if levels >= 3 {
                s.unique_3 = s.unique_3.saturating_add(count);
            }
        }
        s
    }

    /// The tree, one node a line, indented by level: `method @depth  samples`, with the
    /// ambiguous nodes marked. Beyond [`MAX_INDENT`] levels the level is written out instead
    /// of indented further, so the output stays linear in the nodes however deep the tree.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut stack: Vec<(usize, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((n, level)) = stack.pop() {
            let node = &self.nodes[n];
            if level <= MAX_INDENT {
                out.push_str(&"  ".repeat(level));
            } else {
                out.push_str(&format!("{}[level {level}] ", "  ".repeat(MAX_INDENT)));
            }
            out.push_str(&format!("{} @{}", self.method_name(n), node.depth));
            if node.parent.is_some() {
                out.push_str(&format!("  {} samples", node.samples));
            }
            let callers = self.callers_of(n);
            if callers > 1 {
                out.push_str(&format!("  [{callers} callers at this depth: share {:.1}%]", node.share * 100.0));
            }
            out.push('\n');
            stack.extend(node.children.iter().rev().map(|&c| (c, level + 1)));
        }
        out
    }
}
