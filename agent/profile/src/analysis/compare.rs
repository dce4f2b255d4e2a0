//! Comparing two profiles.
//!
//! - **Overlap** (Arnold & Ryder, as used by Chilingarova & Safonov section 5): the sum over
//!   all nodes of the smaller of the node's two relative weights, `value(N) / sum of values`,
//!   a missing node weighing 0. 100% for identical profiles, 0% for disjoint ones, symmetric.
//! - **Hot-edge coverage** (Zhuang et al. 2006, used by Hofer et al. 2015 with T = 0.1): an
//!   edge (a calling context) is hot in a profile if its weight is at least T times the weight
//!   of that profile's hottest edge; the coverage of A by B is the share of A's hot edges that
//!   are also hot in B. It is not symmetric, so both directions are reported.
//! - **Correlation** of per-method totals (Pearson), over the union of methods, as
//!   Chilingarova & Safonov correlate their MethodProfile counters.
//!
//! The functions work on any weighted set — CCT contexts, flat method profiles, class or
//! allocation profiles — given as maps from key to weight.
//!
//! Frame names are normalised before comparing so that async-profiler's collapsed output
//! (`java/lang/Thread.run_[j]`) matches ours (`java.lang.Thread.run`); see [`normalize_frame`].

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

use super::stats::pearson;
use crate::cct::{Cct, MethodTotals, NodeId, ROOT};
use crate::hash::{FastBuild, IntMap};

/// Which weight of a CCT node counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Samples whose stack ends in the context (the default; sums to the sample count).
    SelfSamples,
    /// Samples whose stack passes through the context (inclusive of callees).
    TotalSamples,
}

/// Overlap of two weighted sets, 0..=1; `None` if either has no weight.
pub fn overlap<K: Eq + Hash, S: BuildHasher>(a: &HashMap<K, f64, S>, b: &HashMap<K, f64, S>) -> Option<f64> {
    let (sa, sb) = (total(a)?, total(b)?);
    let sum = a.iter().filter_map(|(k, &wa)| b.get(k).map(|&wb| (wa / sa).min(wb / sb))).fold(0.0, |acc, x| acc + x); // not sum(): an empty f64 sum is -0.0
    Some(sum.min(1.0))
}

fn total<K, S>(m: &HashMap<K, f64, S>) -> Option<f64> {
    let s: f64 = m.values().filter(|w| **w > 0.0).sum();
    (s > 0.0).then_some(s)
}

/// Keys whose weight is at least `threshold` times the largest weight.
pub fn hot_keys<K: Eq + Hash, S: BuildHasher>(m: &HashMap<K, f64, S>, threshold: f64) -> HashSet<&K, FastBuild> {
    let max = m.values().cloned().fold(0.0, f64::max);
    if max <= 0.0 {
        return HashSet::default();
    }
    m.iter().filter(|(_, &w)| w > 0.0 && w >= threshold * max).map(|(k, _)| k).collect()
}

/// Share of `reference`'s hot edges that are hot in `other` too; `None` if `reference` has no
/// weight.
pub fn hot_edge_coverage<K: Eq + Hash, S: BuildHasher>(
    reference: &HashMap<K, f64, S>,
    other: &HashMap<K, f64, S>,
    threshold: f64,
) -> Option<f64> {
    let hot_ref = hot_keys(reference, threshold);
    if hot_ref.is_empty() {
        return None;
    }
    let hot_other = hot_keys(other, threshold);
    let covered = hot_ref.iter().filter(|k| hot_other.contains(*k)).count();
    Some(covered as f64 / hot_ref.len() as f64)
}

/// Pearson correlation of the weights over the union of keys (missing keys weigh 0).
pub fn correlation<K: Eq + Hash, S: BuildHasher>(a: &HashMap<K, f64, S>, b: &HashMap<K, f64, S>) -> Option<f64> {
    let keys: HashSet<&K, FastBuild> = a.keys().chain(b.keys()).collect();
    let pairs: Vec<(f64, f64)> =
        keys.into_iter().map(|k| (a.get(k).copied().unwrap_or(0.0), b.get(k).copied().unwrap_or(0.0))).collect();
    pearson(&pairs)
}

/// Weight of every calling context of one tree, keyed by its node (a node is a root-first
/// path of frame names).
pub fn context_weights(cct: &Cct, w: Weight) -> IntMap<NodeId, f64> {
    (1..cct.nodes.len() as NodeId).map(|id| (id, node_weight(cct, id, w))).filter(|(_, v)| *v > 0.0).collect()
}

/// Two trees laid over one joint tree: every node of either maps to the joint node of the same
/// path of names, so the same calling context has the same key in both.
pub struct Joint {
    pub tree: Cct,
    /// The joint node of each node of A (indexed by A's node id), and of B.
    pub a: Vec<NodeId>,
    pub b: Vec<NodeId>,
}

/// Lays `a` and `b` over one joint tree. Linear in the nodes, however deep (keying by the path
/// of names would cost the depth per node).
pub fn joint(a: &Cct, b: &Cct) -> Joint {
    let mut tree = Cct::default();
    let mut lay = |t: &Cct| {
        // A child's id is always above its parent's, so parents are mapped first.
        let mut map = vec![ROOT; t.nodes.len()];
        let names = joint_name_ids(&mut tree, t);
        for id in 1..t.nodes.len() {
            let n = &t.nodes[id];
            map[id] = tree.child_by_name_id(map[n.parent as usize], names[t.node_name_id(id as NodeId) as usize]);
        }
        map
    };
    let a = lay(a);
    let b = lay(b);
    Joint { tree, a, b }
}

/// The calling contexts of two trees keyed alike: their nodes in the [`joint`] tree.
pub fn joint_context_weights(a: &Cct, b: &Cct, w: Weight) -> (IntMap<NodeId, f64>, IntMap<NodeId, f64>) {
    let j = joint(a, b);
    let weights = |t: &Cct, map: &[NodeId]| {
        let mut out = IntMap::default();
        for (id, &key) in map.iter().enumerate().skip(1) {
            let v = node_weight(t, id as NodeId, w);
            if v > 0.0 {
                *out.entry(key).or_insert(0.0) += v;
            }
        }
        out
    };
    (weights(a, &j.a), weights(b, &j.b))
}

/// For each name id of `t`, the id of the same name in `joint`.
fn joint_name_ids(joint: &mut Cct, t: &Cct) -> Vec<u32> {
    let mut ids = vec![u32::MAX; t.name_count()];
    for id in 1..t.nodes.len() {
        let k = t.node_name_id(id as NodeId) as usize;
        if ids[k] == u32::MAX {
            ids[k] = joint.name_id(&t.nodes[id].name);
        }
    }
    ids
}

fn node_weight(cct: &Cct, id: NodeId, w: Weight) -> f64 {
    let n = cct.node(id);
    match w {
        Weight::SelfSamples => n.self_samples as f64,
        Weight::TotalSamples => n.total_samples as f64,
    }
}

/// Flat method profile: self samples per method, or samples the method appears in.
pub fn method_weights(cct: &Cct, w: Weight) -> IntMap<String, f64> {
    totals_weights(&cct.method_totals(), w).into_iter().map(|(name, v)| (name.to_string(), v)).collect()
}

/// [`method_weights`] from totals computed once, keyed by the tree's own names.
fn totals_weights<'a>(totals: &IntMap<&'a str, MethodTotals>, w: Weight) -> IntMap<&'a str, f64> {
    totals
        .iter()
        .map(|(&name, t)| {
            let v = match w {
                Weight::SelfSamples => t.self_samples,
                Weight::TotalSamples => t.total_samples,
            };
            (name, v as f64)
        })
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

/// Class profile: self samples per class (the part of a Java frame name before the method).
/// A collapsed file of class names with counts (an allocation profile) is compared the same
/// way through [`method_weights`].
pub fn class_weights(cct: &Cct) -> IntMap<String, f64> {
    totals_class_weights(&cct.method_totals()).into_iter().map(|(name, v)| (name.to_string(), v)).collect()
}

fn totals_class_weights<'a>(totals: &IntMap<&'a str, MethodTotals>) -> IntMap<&'a str, f64> {
    let mut out: IntMap<&str, f64> = IntMap::default();
    for (&name, t) in totals {
        if t.self_samples > 0 {
            *out.entry(class_of(name)).or_insert(0.0) += t.self_samples as f64;
        }
    }
    out
}

/// `java.util.HashMap` for `java.util.HashMap.get`; other names stay whole.
pub fn class_of(frame: &str) -> &str {
    if frame.contains(' ') || frame.contains("::") || frame.starts_with('[') {
        return frame;
    }
    match frame.rfind('.') {
        Some(i) if i > 0 => &frame[..i],
        _ => frame,
    }
}

/// Normalises a frame name across profilers:
/// - async-profiler's frame-type suffixes `_[j]`, `_[i]`, `_[k]`, `_[0]`, `_[1]` ... are removed;
/// - in Java frames (no spaces, no `::`, not a path), `/` becomes `.`: `java/lang/Thread.run`;
/// - generated classes lose their run-specific parts: the hidden-class address `/0x...` and
///   the lambda number in `$$Lambda$14`, which differ between runs; the JDK's Flight Recorder
///   writes hidden classes as `Foo$$Lambda$83+0x00007f...a08.1545242146`, address and id
///   both go.
pub fn normalize_frame(name: &str) -> String {
    let mut s = name.trim();
    if let Some(i) = s.rfind("_[") {
        let tag = &s[i + 2..];
        let short = (2..=4).contains(&tag.len()) && tag.ends_with(']');
        if short && tag[..tag.len() - 1].chars().all(|c| c.is_ascii_alphanumeric()) {
            s = &s[..i];
        }
    }
    let javaish = s.contains('/') && !s.starts_with('/') && !s.contains(' ') && !s.contains("::");
    let s = if javaish { s.replace('/', ".") } else { s.to_string() };
    strip_lambda_number(&strip_hex_segments(&s))
}

/// Removes `.0x<hex>` segments (hidden-class addresses) followed by `.` or the end, and the
/// JDK Flight Recorder's form `+0x<hex>.<digits>` (address, then an id) the same way.
fn strip_hex_segments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("0x").filter(|&i| i > 0) {
        let sep = rest.as_bytes()[i - 1];
        let after = &rest[i + 2..];
        let hex_len = after.chars().take_while(|c| c.is_ascii_hexdigit()).count();
        let mut tail = &after[hex_len..];
        if sep == b'+' {
            // JFR appends `.<digits>` to the address of a hidden class.
            let id = tail.strip_prefix('.').map_or(0, |t| t.chars().take_while(|c| c.is_ascii_digit()).count());
            if id > 0 && (tail[1 + id..].is_empty() || tail[1 + id..].starts_with('.')) {
                tail = &tail[1 + id..];
            }
        }
        let end_ok = tail.is_empty() || tail.starts_with('.');
        if (sep == b'.' || sep == b'+') && hex_len >= 4 && end_ok {
            out.push_str(&rest[..i - 1]);
            rest = tail;
        } else {
            out.push_str(&rest[..i + 2]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `Foo$$Lambda$14.run` -> `Foo$$Lambda.run`.
fn strip_lambda_number(s: &str) -> String {
    const L: &str = "$$Lambda$";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(L) {
        let after = &rest[i + L.len()..];
        let digits = after.chars().take_while(|c| c.is_ascii_digit()).count();
        out.push_str(&rest[..i]);
        out.push_str("$$Lambda");
        rest = if digits > 0 { &after[digits..] } else { &rest[i + L.len() - 1..] };
    }
    out.push_str(rest);
    out
}

/// The tree with every frame name normalised (nodes that become equal are merged). Each
/// distinct name is normalised once and each node mapped once; totals are summed bottom-up.
pub fn normalize_cct(cct: &Cct) -> Cct {
    let mut out = Cct::new(cct.counters.clone());
    // Each distinct name normalised once: source name id -> output name id.
    let mut names = vec![u32::MAX; cct.name_count()];
    let mut map = vec![ROOT; cct.nodes.len()];
    for id in 1..cct.nodes.len() {
        let n = &cct.nodes[id];
        let k = cct.node_name_id(id as NodeId) as usize;
        if names[k] == u32::MAX {
            names[k] = out.name_id(&normalize_frame(&n.name));
        }
        // A child's id is always above its parent's, in both trees.
        map[id] = out.child_by_name_id(map[n.parent as usize], names[k]);
    }
    for (id, n) in cct.nodes.iter().enumerate() {
        let m = &mut out.nodes[map[id] as usize];
        m.kinds |= n.kinds;
        m.self_samples = m.self_samples.saturating_add(n.self_samples);
        m.self_weight = m.self_weight.saturating_add(n.self_weight);
        add_saturating(&mut m.self_counters, &n.self_counters);
    }
    for n in out.nodes.iter_mut() {
        n.total_samples = n.self_samples;
        n.total_weight = n.self_weight;
        n.total_counters = n.self_counters.clone();
    }
    for id in (1..out.nodes.len()).rev() {
        let n = &out.nodes[id];
        let (parent, samples, weight, counters) =
            (n.parent as usize, n.total_samples, n.total_weight, n.total_counters.clone());
        let p = &mut out.nodes[parent];
        p.total_samples = p.total_samples.saturating_add(samples);
        p.total_weight = p.total_weight.saturating_add(weight);
        add_saturating(&mut p.total_counters, &counters);
    }
    out
}

fn add_saturating(acc: &mut Vec<u64>, v: &[u64]) {
    if acc.len() < v.len() {
        acc.resize(v.len(), 0);
    }
    for (a, b) in acc.iter_mut().zip(v) {
        *a = a.saturating_add(*b);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// Hot-edge threshold T (Hofer et al.: 0.1).
    pub threshold: f64,
    pub weight: Weight,
    /// Normalise frame names first (see [`normalize_frame`]).
    pub normalize: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { threshold: 0.1, weight: Weight::SelfSamples, normalize: true }
    }
}

/// All metrics for two profiles; shares are 0..=1, `None` where undefined (empty profile,
/// constant per-method totals).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub samples: (u64, u64),
    /// Calling-context overlap.
    pub overlap: Option<f64>,
    /// Share of A's hot edges hot in B, and of B's hot in A.
    pub hot_edge_coverage: Option<f64>,
    pub hot_edge_coverage_reverse: Option<f64>,
    /// Number of hot edges in A and in B.
    pub hot_edges: (usize, usize),
    /// Correlation of per-method totals (samples a method appears in).
    pub method_correlation: Option<f64>,
    /// Overlap of the flat method profiles (self samples) and of the class profiles.
    pub method_overlap: Option<f64>,
    pub class_overlap: Option<f64>,
}

pub fn compare(a: &Cct, b: &Cct, opts: &CompareOptions) -> Comparison {
    let (na, nb);
    let (a, b) = if opts.normalize {
        na = normalize_cct(a);
        nb = normalize_cct(b);
        (&na, &nb)
    } else {
        (a, b)
    };
    let (ca, cb) = joint_context_weights(a, b, opts.weight);
    // Per-method totals once per tree: every flat profile below is read off them.
    let (ma, mb) = (a.method_totals(), b.method_totals());
    let (ta, tb) = (totals_weights(&ma, Weight::TotalSamples), totals_weights(&mb, Weight::TotalSamples));
    Comparison {
        samples: (a.total_samples(), b.total_samples()),
        overlap: overlap(&ca, &cb),
        hot_edge_coverage: hot_edge_coverage(&ca, &cb, opts.threshold),
        hot_edge_coverage_reverse: hot_edge_coverage(&cb, &ca, opts.threshold),
        hot_edges: (hot_keys(&ca, opts.threshold).len(), hot_keys(&cb, opts.threshold).len()),
        method_correlation: correlation(&ta, &tb),
        method_overlap: overlap(&totals_weights(&ma, Weight::SelfSamples), &totals_weights(&mb, Weight::SelfSamples)),
        class_overlap: overlap(&totals_class_weights(&ma), &totals_class_weights(&mb)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_collapsed;

    fn set(v: &[(&str, f64)]) -> HashMap<String, f64> {
        v.iter().map(|(k, w)| (k.to_string(), *w)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn overlap_by_hand_identical_and_disjoint() {
        let a = set(&[("x", 3.0), ("y", 1.0)]);
        let b = set(&[("x", 1.0), ("y", 1.0)]);
        assert!(close(overlap(&a, &b).unwrap(), 0.75));
        assert!(close(overlap(&a, &a).unwrap(), 1.0));
        // Scaling a profile does not change relative weights.
        let a10 = set(&[("x", 30.0), ("y", 10.0)]);
        assert!(close(overlap(&a, &a10).unwrap(), 1.0));
        let disjoint = overlap(&a, &set(&[("z", 5.0)])).unwrap();
        assert!(disjoint == 0.0 && disjoint.is_sign_positive());
        assert_eq!(overlap(&a, &set(&[])), None);
    }

    /// Deterministic pseudo-random weighted sets for property checks.
    fn random_set(seed: &mut u64, keys: usize) -> HashMap<String, f64> {
        let mut out = HashMap::new();
        for k in 0..keys {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let w = (*seed >> 40) % 50;
            if w > 0 {
                out.insert(format!("k{k}"), w as f64);
            }
        }
        out
    }

    #[test]
    fn overlap_properties() {
        let mut seed = 7;
        for _ in 0..200 {
            let a = random_set(&mut seed, 12);
            let b = random_set(&mut seed, 12);
            let (ab, ba) = (overlap(&a, &b).unwrap(), overlap(&b, &a).unwrap());
            assert!(close(ab, ba), "not symmetric: {ab} {ba}");
            assert!((0.0..=1.0).contains(&ab));
            assert!(close(overlap(&a, &a).unwrap(), 1.0));
            let shifted: HashMap<String, f64> = b.iter().map(|(k, w)| (format!("other {k}"), *w)).collect();
            assert_eq!(overlap(&a, &shifted), Some(0.0));
            let c = hot_edge_coverage(&a, &a, 0.1).unwrap();
            assert!(close(c, 1.0));
        }
    }

    #[test]
    fn hot_edges_use_a_share_of_the_hottest() {
        let a = set(&[("a", 100.0), ("b", 50.0), ("c", 9.0), ("d", 10.0)]);
        let b = set(&[("a", 100.0), ("b", 5.0), ("d", 20.0)]);
        let hot: HashSet<&String, FastBuild> = hot_keys(&a, 0.1);
        assert_eq!(hot.len(), 3); // c (9 < 10) is not hot
        assert!(close(hot_edge_coverage(&a, &b, 0.1).unwrap(), 2.0 / 3.0));
        assert!(close(hot_edge_coverage(&b, &a, 0.1).unwrap(), 1.0));
        // A threshold of 0.6 leaves only the hottest edge of each.
        assert!(close(hot_edge_coverage(&a, &b, 0.6).unwrap(), 1.0));
        assert_eq!(hot_edge_coverage(&set(&[]), &b, 0.1), None);
    }

    #[test]
    fn correlation_of_method_totals() {
        let a = set(&[("m1", 10.0), ("m2", 20.0), ("m3", 30.0)]);
        let b = set(&[("m1", 1.0), ("m2", 2.0), ("m3", 3.0)]);
        assert!(close(correlation(&a, &b).unwrap(), 1.0));
        let c = set(&[("m1", 30.0), ("m2", 20.0), ("m3", 10.0)]);
        assert!(close(correlation(&a, &c).unwrap(), -1.0));
        assert_eq!(correlation(&set(&[("m", 1.0)]), &set(&[("m", 1.0)])), None);
    }

    #[test]
    fn async_profiler_names_match_ours() {
        let cases = [
            ("java/lang/Thread.run_[j]", "java.lang.Thread.run"),
            ("java/util/HashMap.get_[i]", "java.util.HashMap.get"),
            ("Main.loop_[0]", "Main.loop"),
            ("do_syscall_64_[k]", "do_syscall_64"),
            ("java.lang.Thread.run", "java.lang.Thread.run"),
            ("/usr/lib/libc.so.6", "/usr/lib/libc.so.6"),
            ("JavaThread::run()", "JavaThread::run()"),
            ("[main tid=12]", "[main tid=12]"),
            ("my_func_[x", "my_func_[x"),
            ("p/Foo$$Lambda$14/0x0000000800c03000.run_[j]", "p.Foo$$Lambda.run"),
            ("p.Foo$$Lambda/0x0000000800c03000.run", "p.Foo$$Lambda.run"),
            ("p.Foo$$Lambda$7.0x0000000800c03000.run", "p.Foo$$Lambda.run"),
            ("p.Hex.0xcafe", "p.Hex"),
            ("Shares$$Lambda$83+0x00007fe2fc007a08.1545242146.run", "Shares$$Lambda.run"),
            ("p.Gen+0x00007fe2fc007a08.run", "p.Gen.run"),
            ("p.Plus+0xzz.run", "p.Plus+0xzz.run"),
            ("p.A0x1234.run", "p.A0x1234.run"),
            ("p.Hex.0xzz", "p.Hex.0xzz"),
        ];
        for (from, to) in cases {
            assert_eq!(normalize_frame(from), to, "{from}");
        }
        assert_eq!(class_of("java.util.HashMap.get"), "java.util.HashMap");
        assert_eq!(class_of("operator new(unsigned long)"), "operator new(unsigned long)");
    }

    #[test]
    fn comparing_async_profiler_output_with_ours() {
        let theirs = parse_collapsed(
            "java/lang/Thread.run_[j];Main.work_[j];Main.hot_[j] 90\njava/lang/Thread.run_[j];Main.work_[j] 10\n",
        )
        .unwrap();
        let ours =
            parse_collapsed("java.lang.Thread.run;Main.work;Main.hot 45\njava.lang.Thread.run;Main.work 5\n").unwrap();
        let c = compare(&theirs, &ours, &CompareOptions::default());
        assert_eq!(c.samples, (100, 50));
        assert!(close(c.overlap.unwrap(), 1.0));
        assert_eq!(c.hot_edge_coverage, Some(1.0));
        assert!(close(c.method_overlap.unwrap(), 1.0));
        assert!(close(c.method_correlation.unwrap(), 1.0));
        // The collapsed reader already names async-profiler's frames as hpm's; what is left to
        // normalising is what differs between runs (lambda numbers, hidden-class addresses).
        let raw = compare(&theirs, &ours, &CompareOptions { normalize: false, ..Default::default() });
        assert!(close(raw.overlap.unwrap(), 1.0));
        let (a, b) =
            (parse_collapsed("Main$$Lambda$14.run 1\n").unwrap(), parse_collapsed("Main$$Lambda$15.run 1\n").unwrap());
        assert!(close(compare(&a, &b, &CompareOptions::default()).overlap.unwrap(), 1.0));
        assert_eq!(compare(&a, &b, &CompareOptions { normalize: false, ..Default::default() }).overlap, Some(0.0));
    }

    #[test]
    fn cct_contexts_differ_where_methods_agree() {
        // Same methods and self samples, different calling contexts.
        let a = parse_collapsed("main;a;x 50\nmain;b;y 50\n").unwrap();
        let b = parse_collapsed("main;a;y 50\nmain;b;x 50\n").unwrap();
        let c = compare(&a, &b, &CompareOptions::default());
        assert_eq!(c.overlap, Some(0.0));
        assert!(close(c.method_overlap.unwrap(), 1.0));
        assert_eq!(c.hot_edge_coverage, Some(0.0));
        let inclusive = compare(&a, &b, &CompareOptions { weight: Weight::TotalSamples, ..Default::default() });
        // main, main;a, main;b agree: (100 + 50 + 50) of 300 on each side.
        assert!(close(inclusive.overlap.unwrap(), 2.0 / 3.0));
    }

    #[test]
    fn cct_weight_equals_sample_count_before_and_after_normalising() {
        let mut seed = 3u64;
        let names = ["a/B.f_[j]", "a.B.f", "c/D.g_[i]", "e.F.h", "x_[k]"];
        for _ in 0..50 {
            let mut text = String::new();
            let mut n = 0;
            for _ in 0..20 {
                let mut stack = Vec::new();
                for _ in 0..1 + (seed >> 60) {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    stack.push(names[((seed >> 33) % 5) as usize]);
                }
                let count = 1 + (seed >> 50) % 9;
                n += count;
                text.push_str(&format!("{} {count}\n", stack.join(";")));
            }
            let cct = parse_collapsed(&text).unwrap();
            let norm = normalize_cct(&cct);
            for t in [&cct, &norm] {
                assert_eq!(t.total_samples(), n);
                assert_eq!(t.nodes.iter().map(|x| x.self_samples).sum::<u64>(), n);
                let ctx: f64 = context_weights(t, Weight::SelfSamples).values().sum();
                assert_eq!(ctx as u64, n);
            }
            // Names that normalise alike merge: the normalised tree has no more nodes.
            assert!(norm.nodes.len() <= cct.nodes.len());
        }
    }
}
