//! What changed between two profiles A and B (`hpm diff A B`): per method and per calling
//! context, the share of samples in A and in B and the change in percentage points, largest
//! first; and for every frame of B its share in A, for a differential flame graph (widths from
//! B, colours from the change).
//!
//! Shares are of each profile's own samples, so runs of different lengths compare. A method's
//! self share counts the samples ending in it, its total share the samples it is on the stack
//! of (recursion once), as in the report. Frame names are normalised first as `hpm compare`
//! does ([`super::compare::normalize_frame`]), so async-profiler's names match hpm's.
//!
//! Linear in the two trees: both are laid over one joint tree ([`super::compare::joint`]), the
//! per-method totals are one walk each, and only the contexts shown get their path written.
//! The text is [`diff_report`]; the flame graphs draw a [`FrameBaseline`] (`crate::output`).

use crate::cct::{Cct, NodeId, ROOT};
use crate::output::jvmevents::EventSel;
pub use crate::output::{FrameBaseline, A_ONLY_LISTED};

pub use super::diff_text::diff_report;

use super::compare::{joint, normalize_cct, Joint};

/// What orders the method table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// The larger of the changes in self and in total share (the default): a method whose own
    /// samples moved and a method whose callees' did both come up.
    Change,
    /// The change in self share.
    SelfShare,
    /// The change in total share.
    TotalShare,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DiffOptions {
    pub by: SortBy,
    /// Normalise frame names first ([`super::compare::normalize_frame`]).
    pub normalize: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions { by: SortBy::Change, normalize: true }
    }
}

/// Shares (0..=1) of one method or context in A and in B.
#[derive(Clone, Debug, PartialEq)]
pub struct Shares {
    pub self_a: f64,
    pub self_b: f64,
    pub total_a: f64,
    pub total_b: f64,
}

impl Shares {
    /// B's self share minus A's (a fraction; x100 for percentage points).
    pub fn self_change(&self) -> f64 {
        self.self_b - self.self_a
    }

    pub fn total_change(&self) -> f64 {
        self.total_b - self.total_a
    }

    /// The size of the change that orders rows.
    pub fn key(&self, by: SortBy) -> f64 {
        match by {
            SortBy::Change => self.self_change().abs().max(self.total_change().abs()),
            SortBy::SelfShare => self.self_change().abs(),
            SortBy::TotalShare => self.total_change().abs(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MethodChange {
    pub name: String,
    pub shares: Shares,
}

/// A calling context: a node of the joint tree.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextChange {
    pub node: NodeId,
    pub shares: Shares,
}

/// Frames of a context's path written out: the innermost ones, after `…` and the depth.
pub const PATH_FRAMES: usize = 4;

pub struct Diff {
    pub samples: (u64, u64),
    /// Every method of either profile, largest change first (ties: larger self change, then
    /// name).
    pub methods: Vec<MethodChange>,
    /// Every calling context of either profile whose self share changed, largest self change
    /// first.
    pub contexts: Vec<ContextChange>,
    /// B's tree as compared (names normalised unless asked not to): the flame graph's.
    pub b_tree: Cct,
    pub baseline: FrameBaseline,
    joint: Joint,
    /// Depth of every joint node.
    depth: Vec<u32>,
}

/// Which of the JVM's events two profiles are compared on when `--event` was not given and
/// either has no samples: the kind both have events of (`present` lists, from
/// [`EventSel::present`]). When they share both, allocations, with a note naming the other
/// and how to pick it. The error says what each has when they share none.
pub fn shared_event(a: &[EventSel], b: &[EventSel]) -> Result<(EventSel, Option<String>), String> {
    let shared: Vec<EventSel> = a.iter().copied().filter(|s| b.contains(s)).collect();
    let list = |v: &[EventSel]| {
        if v.is_empty() {
            "neither samples nor allocation or lock events".to_string()
        } else {
            format!("only {} events", v.iter().map(|s| s.name()).collect::<Vec<_>>().join(" and "))
        }
    };
    match shared.as_slice() {
        [] => Err(format!(
            "A has {}, B has {}: nothing to compare; record both with the same agent options (event=, alloc, lock)",
            if a.is_empty() { "no samples and no events".to_string() } else { list(a) },
            if b.is_empty() { "no samples and no events".to_string() } else { list(b) },
        )),
        [one] => Ok((*one, None)),
        [first, rest @ ..] => Ok((
            *first,
            Some(format!(
                "both profiles have {} events: comparing {} ({}); pick the other with --event {}",
                shared.iter().map(|s| s.name()).collect::<Vec<_>>().join(" and "),
                first.name(),
                first.unit().noun(),
                rest.iter().map(|s| s.name()).collect::<Vec<_>>().join(" or --event "),
            )),
        )),
    }
}

/// Compares A with B.
pub fn diff(a: Cct, b: Cct, opts: &DiffOptions) -> Diff {
    let (a, b) = if opts.normalize { (normalize_cct(&a), normalize_cct(&b)) } else { (a, b) };
    let (na, nb) = (a.total_samples(), b.total_samples());
    let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };

    // Methods: per-method totals of each tree, joined by name.
    let (ma, mb) = (a.method_totals(), b.method_totals());
    let mut methods: Vec<MethodChange> = Vec::with_capacity(ma.len().max(mb.len()));
    for (name, t) in &mb {
        let (self_a, total_a) = ma.get(name).map_or((0, 0), |x| (x.self_samples, x.total_samples));
        methods.push(MethodChange {
            name: name.to_string(),
            shares: Shares {
                self_a: share(self_a, na),
                self_b: share(t.self_samples, nb),
                total_a: share(total_a, na),
                total_b: share(t.total_samples, nb),
            },
        });
    }
    for (name, t) in ma.iter().filter(|(name, _)| !mb.contains_key(*name)) {
        methods.push(MethodChange {
            name: name.to_string(),
            shares: Shares {
                self_a: share(t.self_samples, na),
                self_b: 0.0,
                total_a: share(t.total_samples, na),
                total_b: 0.0,
            },
        });
    }
    let by = opts.by;
    methods.retain(|m| m.shares.key(by) > 0.0 || m.shares.self_change() != 0.0);
    methods.sort_by(|x, y| {
        y.shares
            .key(by)
            .total_cmp(&x.shares.key(by))
            .then(y.shares.self_change().abs().total_cmp(&x.shares.self_change().abs()))
            .then(x.name.cmp(&y.name))
    });

    // Contexts: each joint node's samples from either side.
    let joint = joint(&a, &b);
    let n = joint.tree.nodes.len();
    let (mut at, mut bt) = (vec![(0u64, 0u64); n], vec![(0u64, 0u64); n]);
    for (side, map, t) in [(&mut at, &joint.a, &a), (&mut bt, &joint.b, &b)] {
        for (id, node) in t.nodes.iter().enumerate().skip(1) {
            let e = &mut side[map[id] as usize];
            e.0 = e.0.saturating_add(node.total_samples);
            e.1 = e.1.saturating_add(node.self_samples);
        }
    }
    let mut contexts: Vec<ContextChange> = (1..n)
        .map(|j| ContextChange {
            node: j as NodeId,
            shares: Shares {
                self_a: share(at[j].1, na),
                self_b: share(bt[j].1, nb),
                total_a: share(at[j].0, na),
                total_b: share(bt[j].0, nb),
            },
        })
        .filter(|c| c.shares.self_change() != 0.0)
        .collect();
    contexts.sort_by(|x, y| {
        y.shares.self_change().abs().total_cmp(&x.shares.self_change().abs()).then(x.node.cmp(&y.node))
    });
    let mut depth = vec![0u32; n];
    for j in 1..n {
        depth[j] = depth[joint.tree.nodes[j].parent as usize] + 1;
    }

    // The flame graph's baseline: A at every frame of B, and A's frames B lacks.
    let a_at_b: Vec<(u64, u64)> =
        (0..b.nodes.len()).map(|id| if id == 0 { (na, 0) } else { at[joint.b[id] as usize] }).collect();
    let mut a_only: Vec<(NodeId, u64)> = (1..n)
        .filter(|&j| at[j].0 > 0 && bt[j].0 == 0)
        .filter(|&j| {
            let p = joint.tree.nodes[j].parent as usize;
            p == ROOT as usize || bt[p].0 > 0
        })
        .map(|j| (j as NodeId, at[j].0))
        .collect();
    let a_only_frames = a_only.len() as u64;
    a_only.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    a_only.truncate(A_ONLY_LISTED);
    let mut d = Diff {
        samples: (na, nb),
        methods,
        contexts,
        b_tree: b,
        baseline: FrameBaseline { a_at_b, a_samples: na, a_only: Vec::new(), a_only_frames },
        joint,
        depth,
    };
    d.baseline.a_only = a_only.into_iter().map(|(j, v)| (d.path(j), v)).collect();
    d
}

impl Diff {
    /// A context's path, root first, names joined by ` > `: at most [`PATH_FRAMES`] innermost
    /// frames, after `… [depth N]` when there are more (a path is never walked further, so
    /// writing one costs at most that many frames however deep the stack).
    pub fn path(&self, node: NodeId) -> String {
        let mut names: Vec<&str> = Vec::with_capacity(PATH_FRAMES);
        let mut id = node;
        while id != ROOT && names.len() < PATH_FRAMES {
            names.push(&self.joint.tree.node(id).name);
            id = self.joint.tree.node(id).parent;
        }
        names.reverse();
        let mut s = if id != ROOT { format!("… [depth {}] ", self.depth[node as usize]) } else { String::new() };
        s.push_str(&names.join(" > "));
        s
    }
}

/// Method shares keyed by name, for tests.
#[cfg(test)]
fn by_name(d: &Diff) -> std::collections::HashMap<&str, &Shares> {
    d.methods.iter().map(|m| (m.name.as_str(), &m.shares)).collect()
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
