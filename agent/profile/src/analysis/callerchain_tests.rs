//! CallerChaining tests: the paper's Figure 6 and both cases of Figure 7.

use super::callerchain::*;

fn tree(text: &str) -> ChainTree {
    ChainTree::build(&parse_quads(text).unwrap()).unwrap()
}

fn names(t: &ChainTree, node: usize) -> String {
    t.path(node).iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>().join("-")
}

/// Figure 6 of Inoue & Nakatani, as `caller depth callee depth samples` (the paper's table
/// lists the callee first).
pub(super) const FIGURE6: &str = "\
A 10 B 50 10
A 10 C 40 10
B 50 D 90 20
C 40 D 80 40
C 40 E 50 10
D 90 E 100 80
";

#[test]
fn figure6_tree_and_the_a_b_d_e_decision() {
    let t = tree(FIGURE6);
    assert_eq!(
        t.render(),
        "\
A @10
  B @50  10 samples
    D @90  20 samples
      E @100  80 samples
  C @40  10 samples
    D @80  40 samples
    E @50  10 samples
"
    );
    // D has depth 90 only below B, so E at depth 100 is A-B-D-E, not A-C-D-E.
    let m = t.map_event("E", 100);
    assert!(!m.fitted);
    assert_eq!(m.nodes.len(), 1);
    assert_eq!(names(&t, m.nodes[0].0), "A-B-D-E");
    assert_eq!(t.path(m.nodes[0].0).last(), Some(&("E".to_string(), 100)));
    assert!(t.ambiguous_nodes().is_empty());
    // Fitting: E at depth 40 (the interrupt came after returning to C) is A-C-E.
    let m = t.map_event("E", 40);
    assert!(m.fitted);
    assert_eq!(m.nodes.len(), 1);
    assert_eq!(names(&t, m.nodes[0].0), "A-C-E");
    // ... and a depth belonging to a callee: D at 100 is the D whose callee E is at 100.
    let m = t.map_event("D", 100);
    assert_eq!((m.fitted, names(&t, m.nodes[0].0)), (true, "A-B-D".to_string()));
    assert!(t.map_event("E", 7).nodes.is_empty());
    assert!(t.map_event("Z", 10).nodes.is_empty());
    let s = t.stats(&quad_events(&parse_quads(FIGURE6).unwrap()));
    assert_eq!((s.nodes, s.ambiguous_nodes, s.methods), (7, 0, 5));
    assert_eq!((s.events, s.mapped, s.unique_1, s.unique_3), (170, 170, 170, 170));
}

/// Figure 7(A): B and F have the same frame size, so D at 90 is reached from both.
const FIGURE7A: &str = "\
A 10 B 50 10
A 10 F 50 10
B 50 D 90 30
F 50 D 90 10
D 90 E 100 40
";

#[test]
fn figure7a_same_frame_sizes_are_detected_and_distributed_by_edge_hotness() {
    let t = tree(FIGURE7A);
    let amb: Vec<String> = t.ambiguous_nodes().iter().map(|&n| names(&t, n)).collect();
    assert_eq!(amb, ["A-B-D", "A-F-D"]);
    let m = t.map_event("E", 100);
    let got: Vec<(String, f64)> = m.nodes.iter().map(|&(n, w)| (names(&t, n), w)).collect();
    assert_eq!(got, vec![("A-B-D-E".to_string(), 0.75), ("A-F-D-E".to_string(), 0.25)]);
    // D is certain one level up, not three.
    let ids: Vec<usize> = m.nodes.iter().map(|x| x.0).collect();
    assert_eq!(t.unique_levels(&ids), 1);
    let s = t.stats(&[
        Event { method: "E".into(), depth: 100, count: 100 },
        Event { method: "B".into(), depth: 50, count: 20 },
    ]);
    assert_eq!((s.nodes, s.ambiguous_nodes, s.methods), (7, 2, 5));
    assert_eq!((s.events, s.mapped, s.unique_1, s.unique_3), (120, 120, 120, 20));
    assert!(t.render().contains("D @90  30 samples  [2 callers at this depth: share 75.0%]"), "{}", t.render());
}

/// Figure 7(B): B and C appear in different orders (frames of 40 and 30), so both orders
/// reach depth 80 and the call D at 120 below it.
const FIGURE7B: &str = "\
A 10 B 50 10
B 50 C 80 10
C 80 D 120 10
A 10 C 40 10
C 40 B 80 10
B 80 D 120 30
D 120 E 150 40
";

#[test]
fn figure7b_methods_in_different_orders_are_detected() {
    let t = tree(FIGURE7B);
    let amb: Vec<String> = t.ambiguous_nodes().iter().map(|&n| names(&t, n)).collect();
    assert_eq!(amb, ["A-B-C-D", "A-C-B-D"]);
    let m = t.map_event("E", 150);
    let got: Vec<(String, f64)> = m.nodes.iter().map(|&(n, w)| (names(&t, n), w)).collect();
    assert_eq!(got, vec![("A-B-C-D-E".to_string(), 0.25), ("A-C-B-D-E".to_string(), 0.75)]);
    assert_eq!(t.unique_levels(&m.nodes.iter().map(|x| x.0).collect::<Vec<_>>()), 1);
    // The same with E called directly at depth 80 + 40: not even its caller is known.
    let t = tree("A 10 B 50 1\nB 50 C 80 1\nA 10 C 40 1\nC 40 B 80 1\nC 80 E 120 1\nB 80 E 120 1\n");
    let m = t.map_event("E", 120);
    assert_eq!(t.unique_levels(&m.nodes.iter().map(|x| x.0).collect::<Vec<_>>()), 0);
    let s = t.stats(&[Event { method: "E".into(), depth: 120, count: 4 }]);
    assert_eq!((s.unique_1, s.unique_3), (0, 0));
}

#[test]
fn shares_of_a_key_sum_to_one() {
    for text in [FIGURE6, FIGURE7A, FIGURE7B] {
        let t = tree(text);
        let mut sums: std::collections::HashMap<(u32, u64), f64> = Default::default();
        for n in &t.nodes {
            *sums.entry((n.method, n.depth)).or_default() += n.share;
        }
        assert!(sums.values().all(|s| (s - 1.0).abs() < 1e-12), "{sums:?}");
    }
}

#[test]
fn bad_quads_name_the_line() {
    assert_eq!(parse_quads("A 10 B 50 1\nA 10 B\n").unwrap_err().0, 2);
    let (line, msg) = parse_quads("# c\n\nA 10 B x 1\n").unwrap_err();
    assert_eq!(line, 3);
    assert!(msg.contains("callee depth `x`"), "{msg}");
    let (line, msg) = parse_quads("A 50 B 50 1\n").unwrap_err();
    assert_eq!(line, 1);
    assert!(msg.contains("not deeper"), "{msg}");
    assert_eq!(parse_events("E 100\n").unwrap_err().0, 1);
    assert_eq!(parse_events("E 100 4\n").unwrap(), vec![Event { method: "E".into(), depth: 100, count: 4 }]);
}

#[test]
fn sharing_that_explodes_is_refused() {
    // 25 levels of two alternatives meeting again: 2^25 paths.
    let mut text = String::new();
    for i in 0..25u64 {
        let d = 10 + i * 20;
        text.push_str(&format!("M{i} {d} X{i} {} 1\nM{i} {d} Y{i} {} 1\n", d + 10, d + 10));
        text.push_str(&format!("X{i} {} M{} {} 1\nY{i} {} M{} {} 1\n", d + 10, i + 1, d + 20, d + 10, i + 1, d + 20));
    }
    let err = ChainTree::build_with_limit(&parse_quads(&text).unwrap(), 10_000).unwrap_err();
    assert!(err.contains("exceeds"), "{err}");
}
