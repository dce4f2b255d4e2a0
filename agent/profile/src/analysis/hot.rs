//! Queries on a live calling context tree, for runtimes that want feedback while they run (the
//! papers' JIT use: Arnold & Ryder's and Inoue & Nakatani's hot methods and call edges): the
//! hottest methods, the hottest callees of a method, and the calling contexts of a call edge.
//! The Java bridge answers `Hpm.hottestMethods` and friends with these.
//!
//! Counts are samples. A method's `self` samples end in it; `total` samples pass through it
//! (counted once per sample even under recursion). Edge counts sum the callee's total samples
//! at every place the edge occurs in the tree.

use std::collections::HashMap;

use crate::cct::{Cct, NodeId, ROOT};

/// A method and its samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotMethod {
    pub name: String,
    pub self_samples: u64,
    pub total_samples: u64,
}

/// A callee of a method, or a context of an edge, with the samples under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weighted<T> {
    pub item: T,
    pub samples: u64,
}

/// The `n` methods with the most self samples (then most total samples, then by name).
pub fn hottest_methods(cct: &Cct, n: usize) -> Vec<HotMethod> {
    let mut v: Vec<HotMethod> = cct
        .method_totals()
        .into_iter()
        .map(|(name, t)| HotMethod {
            name: name.to_string(),
            self_samples: t.self_samples,
            total_samples: t.total_samples,
        })
        .collect();
    v.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.name.cmp(&b.name))
    });
    v.truncate(n);
    v
}

/// The `n` methods `method` calls with the most samples under the call.
pub fn hottest_callees(cct: &Cct, method: &str, n: usize) -> Vec<Weighted<String>> {
    let mut by_callee: HashMap<&str, u64> = HashMap::new();
    for node in cct.nodes.iter().skip(1).filter(|x| *x.name == *method) {
        for &c in &node.children {
            let child = cct.node(c);
            *by_callee.entry(&*child.name).or_default() += child.total_samples;
        }
    }
    ranked(by_callee.into_iter().map(|(k, v)| (k.to_string(), v)), n)
}

/// The `n` calling contexts (root-first paths ending in `caller`) in which `caller` calls
/// `callee`, with the most samples under the call first.
pub fn call_contexts(cct: &Cct, caller: &str, callee: &str, n: usize) -> Vec<Weighted<Vec<String>>> {
    let mut by_path: HashMap<Vec<String>, u64> = HashMap::new();
    for (id, node) in cct.nodes.iter().enumerate().skip(1) {
        if *node.name != *callee || node.parent == ROOT || *cct.node(node.parent).name != *caller {
            continue;
        }
        let path = cct.path(cct.node(id as NodeId).parent).into_iter().map(str::to_string).collect();
        *by_path.entry(path).or_default() += node.total_samples;
    }
    ranked(by_path.into_iter(), n)
}

fn ranked<T: Ord>(items: impl Iterator<Item = (T, u64)>, n: usize) -> Vec<Weighted<T>> {
    let mut v: Vec<Weighted<T>> = items.map(|(item, samples)| Weighted { item, samples }).collect();
    v.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.item.cmp(&b.item)));
    v.truncate(n);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Cct {
        let mut c = Cct::new(Vec::new());
        c.add_stack(&["main", "run", "hash"], 6, 6, &[]);
        c.add_stack(&["main", "run", "sort", "compare"], 3, 3, &[]);
        c.add_stack(&["main", "load", "hash"], 2, 2, &[]);
        c.add_stack(&["main", "run"], 1, 1, &[]);
        c.add_stack(&["main", "fib", "fib", "fib"], 4, 4, &[]);
        c
    }

    #[test]
    fn hottest_methods_rank_by_self_samples() {
        let hot = hottest_methods(&tree(), 3);
        let names: Vec<&str> = hot.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["hash", "fib", "compare"]);
        assert_eq!(hot[0], HotMethod { name: "hash".into(), self_samples: 8, total_samples: 8 });
        // Recursion: total counted once per sample.
        assert_eq!(hot[1].total_samples, 4);
        assert_eq!(hottest_methods(&tree(), 100).len(), 7);
    }

    #[test]
    fn hottest_callees_sum_every_occurrence_of_the_caller() {
        let t = tree();
        let callees = hottest_callees(&t, "run", 10);
        assert_eq!(
            callees,
            [Weighted { item: "hash".to_string(), samples: 6 }, Weighted { item: "sort".to_string(), samples: 3 }]
        );
        assert_eq!(hottest_callees(&t, "main", 1)[0].item, "run");
        assert!(hottest_callees(&t, "nothing", 5).is_empty());
        assert_eq!(hottest_callees(&t, "fib", 5), [Weighted { item: "fib".to_string(), samples: 8 }]);
    }

    #[test]
    fn call_contexts_list_the_paths_to_the_caller() {
        let t = tree();
        let ctx = call_contexts(&t, "run", "hash", 10);
        assert_eq!(ctx, [Weighted { item: vec!["main".to_string(), "run".to_string()], samples: 6 }]);
        let ctx = call_contexts(&t, "fib", "fib", 10);
        assert_eq!(ctx.len(), 2);
        assert_eq!(ctx[0].item, ["main", "fib"]);
        assert_eq!(ctx[1].item, ["main", "fib", "fib"]);
        assert!(call_contexts(&t, "load", "sort", 10).is_empty());
    }
}
