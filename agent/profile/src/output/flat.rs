//! A calling context tree laid out for flame graphs: nodes in pre-order with their depth,
//! siblings sorted by name (as FlameGraph does), and subtrees below a threshold folded into
//! their parent's self value.

use crate::cct::{Cct, Measure, NodeId, ROOT};

pub struct FlatNode<'a> {
    /// The node in the tree.
    pub id: NodeId,
    pub name: &'a str,
    /// Its kinds of code ([`crate::cct::CctNode::kinds`]).
    pub kinds: u8,
    pub depth: u32,
    pub total: u64,
    /// Own value plus the totals of pruned children.
    pub self_value: u64,
    /// Total counter sums, aligned with `Cct::counters`.
    pub counters: &'a [u64],
}

pub struct Flat<'a> {
    pub nodes: Vec<FlatNode<'a>>,
    /// Frames (nodes of the original tree) folded into a caller.
    pub pruned_frames: u64,
    /// Their value (samples or weight), now counted as the callers' self.
    pub pruned_value: u64,
    /// Smallest total a frame needed to be kept.
    pub min_total: u64,
    pub max_depth: u32,
}

pub fn total_of(cct: &Cct, id: NodeId, by: Measure) -> u64 {
    by.of(cct.node(id).total_amounts())
}

fn self_of(cct: &Cct, id: NodeId, by: Measure) -> u64 {
    by.of(cct.node(id).self_amounts())
}

/// The smallest total to keep so that frames below `min_share` of the root are dropped and
/// at most `max_nodes` frames remain (totals never grow towards the leaves, so the kept set is
/// always a connected tree).
pub fn threshold(cct: &Cct, by: Measure, min_share: f64, max_nodes: usize) -> u64 {
    let root = total_of(cct, ROOT, by);
    let mut t = ((root as f64) * min_share.max(0.0)).ceil() as u64;
    if cct.nodes.len() > max_nodes.max(1) {
        let mut totals: Vec<u64> = (0..cct.nodes.len() as NodeId).map(|i| total_of(cct, i, by)).collect();
        let k = max_nodes.max(1);
        let (_, kth, _) = totals.select_nth_unstable_by(k, |a, b| b.cmp(a));
        // Everything strictly above the (k+1)-th largest total: at most k frames.
        t = t.max(*kth + 1);
    }
    t.max(1)
}

/// Lays out the tree, keeping the root and every frame whose total is at least `min_total`.
pub fn flatten(cct: &Cct, by: Measure, min_total: u64) -> Flat<'_> {
    let mut flat = Flat { nodes: Vec::new(), pruned_frames: 0, pruned_value: 0, min_total, max_depth: 0 };
    let mut stack: Vec<(NodeId, u32)> = vec![(ROOT, 0)];
    while let Some((id, depth)) = stack.pop() {
        let node = cct.node(id);
        let mut self_value = self_of(cct, id, by);
        let mut kept: Vec<NodeId> = Vec::new();
        for &c in &node.children {
            let t = total_of(cct, c, by);
            if t == 0 {
                continue;
            }
            if t >= min_total {
                kept.push(c);
            } else {
                self_value += t;
                flat.pruned_value += t;
                flat.pruned_frames += subtree_size(cct, c);
            }
        }
        kept.sort_by(|&a, &b| cct.node(a).name.cmp(&cct.node(b).name));
        for &c in kept.iter().rev() {
            stack.push((c, depth + 1));
        }
        flat.max_depth = flat.max_depth.max(depth);
        flat.nodes.push(FlatNode {
            id,
            name: &node.name,
            kinds: node.kinds,
            depth,
            total: total_of(cct, id, by),
            self_value,
            counters: &node.total_counters,
        });
    }
    flat
}

fn subtree_size(cct: &Cct, id: NodeId) -> u64 {
    let mut n = 0;
    let mut stack = vec![id];
    while let Some(i) = stack.pop() {
        n += 1;
        stack.extend_from_slice(&cct.node(i).children);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Cct {
        let mut c = Cct::default();
        c.add_stack(&["main", "b", "x"], 50, 50, &[]);
        c.add_stack(&["main", "a"], 40, 40, &[]);
        c.add_stack(&["main", "a", "tiny"], 1, 1, &[]);
        c.add_stack(&["main", "c", "tiny2", "deeper"], 2, 2, &[]);
        c
    }

    #[test]
    fn preorder_sorted_by_name() {
        let c = tree();
        let f = flatten(&c, Measure::Samples, 1);
        let names: Vec<_> = f.nodes.iter().map(|n| (n.name, n.depth)).collect();
        assert_eq!(
            names,
            vec![
                ("all", 0),
                ("main", 1),
                ("a", 2),
                ("tiny", 3),
                ("b", 2),
                ("x", 3),
                ("c", 2),
                ("tiny2", 3),
                ("deeper", 4)
            ]
        );
        assert_eq!(f.max_depth, 4);
        assert_eq!(f.pruned_frames, 0);
    }

    #[test]
    fn pruning_folds_into_parent_self() {
        let c = tree();
        let f = flatten(&c, Measure::Samples, 3);
        let a = f.nodes.iter().find(|n| n.name == "a").unwrap();
        assert_eq!((a.total, a.self_value), (41, 41));
        let main = f.nodes.iter().find(|n| n.name == "main").unwrap();
        assert_eq!(main.self_value, 2); // `c` (2 samples, 3 frames) folded
        assert_eq!(f.pruned_frames, 4);
        assert_eq!(f.pruned_value, 3);
        // Self values still add up to the root total.
        let sum: u64 = f.nodes.iter().map(|n| n.self_value).sum();
        assert_eq!(sum, 93);
    }

    #[test]
    fn node_cap_bounds_the_count() {
        let c = tree();
        let t = threshold(&c, Measure::Samples, 0.0, 4);
        let f = flatten(&c, Measure::Samples, t);
        assert!(f.nodes.len() <= 4, "{} nodes", f.nodes.len());
        assert!(f.nodes.len() >= 3);
    }
}
