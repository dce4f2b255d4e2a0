//! `sampler=chain`'s side of CallerChaining (Inoue & Nakatani §6): the (method, depth) keys
//! of each resolved sample's Java frames, the quadruples between consecutive frames, and, at
//! the end, each sample's stack completed above its outermost frame by the hottest callers
//! the quadruples of the whole run give; the paper's tree ([`super::callerchain::ChainTree`])
//! for its Table 1.
//!
//! A sample's walk (over the few hundred bytes of stack the kernel copied) finds the leaf's
//! frame and usually some callers; each physical frame comes with its stack depth (bytes from
//! the thread's stack base to the frame's activation address). Inlined methods share their
//! physical frame: the key's depth is `bytes * 64 + scope level` (0 for the compiled method,
//! 1 for a method inlined into it, ...), so depths grow along every call, inlined or not.
//! Anchor records (a deep copy of 16 KB, every 16th period) add the quadruples of whole stacks:
//! the tree's roots are then the threads' real outermost frames.
//!
//! A key's hottest caller is the one most anchors saw. A sample's copy shows an edge only when
//! it covers both frames, so samples favour callers near the top of the stack: where one key
//! is the bottom of a recursion in one compiled version of its caller and its middle in
//! another (the same recursion at another depth), the samples ending at that key never show
//! its real caller and the other version's samples show theirs every time. An anchor counts
//! every edge of its stack once, so its counts are the contexts' shares of the time. The
//! samples' counts only decide among callers the anchors saw equally often (or not at all).

use super::callerchain::{ChainStats, ChainTree, Event, Quad};
use crate::hash::IntMap;
use crate::model::{Frame, FrameKind, MethodIdx};

/// Scope levels one physical frame's depth leaves room for; deeper inlining shares the last.
pub const SCOPES: u64 = 64;

/// Distinct (caller, callee) edges kept at most; more are counted and not kept.
pub const MAX_EDGES: usize = 1 << 20;

/// A frame's key: its method and its depth (`bytes * SCOPES + scope level`).
pub type Key = (MethodIdx, u64);

/// The key depth of each frame of `stack` (leaf first): `None` for frames outside the walk's
/// or whose physical frame's depth is unknown (0). The walk's frames start at `first`; its
/// physical frame `j` became `groups[j]` frames (innermost first: inlined methods, then the
/// compiled one; none for a stub; one for an interpreted frame) at depth `phys[j]`. `None`
/// when the two do not match (nothing is then trusted).
pub fn frame_depths(stack: &[Frame], first: usize, groups: &[u16], phys: &[u32]) -> Option<Vec<Option<u64>>> {
    let mut out = Vec::new();
    frame_depths_into(stack, Walk { first, groups, phys }, &mut out).then_some(out)
}

/// [`frame_depths`] into `out` (reused: no allocation per sample); false when they do not
/// match.
fn frame_depths_into(stack: &[Frame], walk: Walk, out: &mut Vec<Option<u64>>) -> bool {
    out.clear();
    if walk.groups.len() != walk.phys.len() {
        return false;
    }
    out.resize(stack.len(), None);
    let mut i = walk.first;
    for (&g, &d) in walk.groups.iter().zip(walk.phys) {
        let g = usize::from(g);
        let Some(end) = i.checked_add(g).filter(|&e| e <= stack.len()) else { return false };
        if d != 0 {
            for (k, slot) in out[i..end].iter_mut().enumerate() {
                let level = ((g - 1 - k) as u64).min(SCOPES - 1);
                *slot = Some(u64::from(d) * SCOPES + level);
            }
        }
        i = end;
    }
    true
}

/// What the chain sampler's samples gave, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChainCounts {
    pub samples: u64,
    /// Samples with at least one keyed Java frame.
    pub keyed: u64,
    /// Samples whose frames did not match the walk's physical frames.
    pub misaligned: u64,
    pub anchors: u64,
    /// Edges not kept (past [`MAX_EDGES`]).
    pub edges_dropped: u64,
    /// Samples whose stack was completed from the tree.
    pub completed: u64,
}

/// The quadruples and leaf events of a run, and each sample's outermost key.
#[derive(Default)]
pub struct ChainRecorder {
    edges: IntMap<(Key, Key), EdgeCount>,
    /// The frame a key shows as a caller (its call site), the first one seen.
    callers: IntMap<Key, Frame>,
    /// Leaf events: the innermost keyed frame of each sample.
    events: IntMap<Key, u64>,
    /// Each key's hottest caller, indexed at the first completion.
    hottest: IntMap<Key, Key>,
    pub counts: ChainCounts,
    /// Per-sample buffers, reused.
    depths: Vec<Option<u64>>,
    keyed: Vec<(usize, Key)>,
}

/// How often one edge was seen: by every record, and by anchors alone.
#[derive(Clone, Copy, Debug, Default)]
struct EdgeCount {
    records: u64,
    anchors: u64,
}

impl EdgeCount {
    /// The order callers are chosen by: anchors first, then all the records.
    fn rank(self) -> (u64, u64) {
        (self.anchors, self.records)
    }
}

/// A sample's walk as the resolver named it: where its frames start in the stack, how many
/// frames each physical frame became, and the physical frames' depths.
#[derive(Clone, Copy)]
pub struct Walk<'a> {
    pub first: usize,
    pub groups: &'a [u16],
    pub phys: &'a [u32],
}

/// Where a sample's stack is completed from: the index of its outermost keyed frame and that
/// frame's key.
pub type Top = Option<(u32, Key)>;

impl ChainRecorder {
    /// Takes one resolved stack (leaf first) with its walk's physical frames (see
    /// [`frame_depths`]). `anchor`: the record only gives structure (quadruples), not an event.
    /// Returns the sample's [`Top`].
    pub fn observe(&mut self, stack: &[Frame], walk: Walk, anchor: bool) -> Top {
        if anchor {
            self.counts.anchors += 1;
        } else {
            self.counts.samples += 1;
        }
        if !frame_depths_into(stack, walk, &mut self.depths) {
            self.counts.misaligned += u64::from(!anchor);
            return None;
        }
        let mut keyed = std::mem::take(&mut self.keyed);
        keyed.clear();
        keyed.extend(self.depths.iter().enumerate().filter_map(|(i, d)| d.map(|d| (i, (stack[i].method, d)))));
        let top = self.add_edges(stack, &keyed, anchor);
        self.keyed = keyed;
        top
    }

    /// The quadruples of one sample's keyed frames (leaf first), and its leaf event.
    fn add_edges(&mut self, stack: &[Frame], keyed: &[(usize, Key)], anchor: bool) -> Top {
        let (&(_, leaf), &(top_i, top)) = (keyed.first()?, keyed.last()?);
        for w in keyed.windows(2) {
            let ((_, callee), (ci, caller)) = (w[0], w[1]);
            // Only frames next to each other in the stack, the caller deeper in the stack (a
            // missing frame between them would make a false edge).
            if ci != w[0].0 + 1 || caller.1 >= callee.1 {
                continue;
            }
            if self.edges.len() >= MAX_EDGES && !self.edges.contains_key(&(caller, callee)) {
                self.counts.edges_dropped += 1;
                continue;
            }
            let e = self.edges.entry((caller, callee)).or_default();
            e.records += 1;
            e.anchors += u64::from(anchor);
            self.callers.entry(caller).or_insert(stack[ci]);
        }
        if anchor {
            return None;
        }
        self.counts.keyed += 1;
        *self.events.entry(leaf).or_default() += 1;
        Some((top_i as u32, top))
    }

    /// The quadruples (`hpm callerchain`'s input), methods named by `name`.
    pub fn quads(&self, name: &dyn Fn(MethodIdx) -> String) -> Vec<Quad> {
        let mut q: Vec<Quad> = self
            .edges
            .iter()
            .map(|(&((a, ad), (b, bd)), n)| Quad {
                caller: name(a),
                caller_depth: ad,
                callee: name(b),
                callee_depth: bd,
                count: n.records,
            })
            .collect();
        q.sort_by(|x, y| {
            (&x.caller, x.caller_depth, &x.callee, x.callee_depth).cmp(&(
                &y.caller,
                y.caller_depth,
                &y.callee,
                y.callee_depth,
            ))
        });
        q
    }

    /// The leaf events (`hpm callerchain --events`' input).
    pub fn events(&self, name: &dyn Fn(MethodIdx) -> String) -> Vec<Event> {
        let mut e: Vec<Event> =
            self.events.iter().map(|(&(m, d), &n)| Event { method: name(m), depth: d, count: n }).collect();
        e.sort_by(|x, y| (&x.method, x.depth).cmp(&(&y.method, y.depth)));
        e
    }

    /// The tree of the run, its methods named by their index, and the paper's Table 1 over the
    /// leaf events.
    pub fn tree(&self) -> Result<(ChainTree, ChainStats), String> {
        let by_index = |m: MethodIdx| m.to_string();
        let tree = ChainTree::build(&self.quads(&by_index))?;
        let stats = tree.stats(&self.events(&by_index));
        Ok((tree, stats))
    }

    /// `stack` completed above its outermost keyed frame (`top`): its caller is the key's
    /// hottest caller (the one with the most anchors, then records, on the edge into it; see
    /// the module's doc), that caller's
    /// hottest caller, and so on to a key with none: the path of edge hotness the paper
    /// distributes events by, without unfolding the tree (whose sharing can multiply nodes
    /// past any bound). `None` when the key has no caller.
    pub fn complete(&mut self, stack: &[Frame], top: Top) -> Option<Vec<Frame>> {
        let (i, key) = top?;
        if self.hottest.is_empty() {
            self.index_callers();
        }
        let mut cur = *self.hottest.get(&key)?;
        let mut out: Vec<Frame> = stack[..=i as usize].to_vec();
        // Depths fall along every step, so this ends; bounded anyway.
        for _ in 0..MAX_COMPLETED {
            let frame = self.callers.get(&cur).copied().unwrap_or(Frame {
                method: cur.0,
                bci: -1,
                line: -1,
                kind: if cur.1 % SCOPES == 0 { FrameKind::JitCompiled } else { FrameKind::Inlined },
            });
            out.push(frame);
            match self.hottest.get(&cur) {
                Some(&next) if next.1 < cur.1 => cur = next,
                _ => break,
            }
        }
        self.counts.completed += 1;
        Some(out)
    }

    /// Each callee key's hottest caller: the most anchors, then the most records (ties: the
    /// smaller key, so runs agree).
    fn index_callers(&mut self) {
        let mut best: IntMap<Key, ((u64, u64), Key)> = IntMap::default();
        for (&(caller, callee), n) in &self.edges {
            let n = n.rank();
            let e = best.entry(callee).or_insert((n, caller));
            if n > e.0 || (n == e.0 && caller < e.1) {
                *e = (n, caller);
            }
        }
        self.hottest = best.into_iter().map(|(k, (_, c))| (k, c)).collect();
    }
}

/// Frames a completion adds at most.
pub const MAX_COMPLETED: usize = 1 << 16;

#[cfg(test)]
#[path = "chaining_tests.rs"]
mod tests;
