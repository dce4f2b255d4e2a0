use super::*;
use crate::load::parse_collapsed;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// A: `main;run;alpha` 50, `main;run;common` 50. B: `main;run;beta` 80, `main;run;common` 20:
/// the hot method moved from alpha to beta.
fn moved() -> Diff {
    let a = parse_collapsed("main;run;alpha 50\nmain;run;common 50\n").unwrap();
    let b = parse_collapsed("main;run;beta 160\nmain;run;common 40\n").unwrap();
    diff(a, b, &DiffOptions::default())
}

#[test]
fn the_method_that_grew_most_comes_first() {
    let d = moved();
    assert_eq!(d.samples, (100, 200));
    let names: Vec<&str> = d.methods.iter().map(|m| m.name.as_str()).collect();
    // main and run are on every stack of both: no change, not listed.
    assert_eq!(names, ["beta", "alpha", "common"]);
    let m = by_name(&d);
    assert!(close(m["beta"].self_change(), 0.8) && close(m["beta"].total_change(), 0.8));
    assert!(close(m["alpha"].self_change(), -0.5) && close(m["alpha"].self_b, 0.0));
    assert!(close(m["common"].self_a, 0.5) && close(m["common"].self_b, 0.2));
}

#[test]
fn swapping_a_and_b_negates_every_change() {
    let a = parse_collapsed("main;x;y 30\nmain;x 10\nmain;z 60\n").unwrap();
    let b = parse_collapsed("main;x;y 5\nmain;z 15\nmain;w;y 30\n").unwrap();
    let ab = diff(a.clone(), b.clone(), &DiffOptions::default());
    let ba = diff(b, a, &DiffOptions::default());
    let (mab, mba) = (by_name(&ab), by_name(&ba));
    assert_eq!(mab.len(), mba.len());
    for (name, s) in &mab {
        assert!(close(s.self_change(), -mba[name].self_change()), "{name}");
        assert!(close(s.total_change(), -mba[name].total_change()), "{name}");
    }
    // y's self share is 30% in A, 35/50 = 70% in B; its total counts each sample once.
    assert!(close(mab["y"].self_b, 0.7) && close(mab["y"].total_b, 0.7));
    // Changes of self shares add up to zero: both sides' self shares sum to 1.
    let sum: f64 = ab.methods.iter().map(|m| m.shares.self_change()).sum();
    assert!(sum.abs() < 1e-9, "{sum}");
}

#[test]
fn sorting_by_self_or_total() {
    // `outer` only calls: its self share never changes, its total share grows by 60 points.
    let a = parse_collapsed("main;outer;leaf 20\nmain;other 80\n").unwrap();
    let b = parse_collapsed("main;outer;leaf 80\nmain;other 20\n").unwrap();
    let first = |by| diff(a.clone(), b.clone(), &DiffOptions { by, ..Default::default() }).methods[0].name.clone();
    // By change: leaf and outer both moved 60 points, leaf's own samples did: leaf first.
    assert_eq!(first(SortBy::Change), "leaf");
    assert_eq!(first(SortBy::SelfShare), "leaf");
    let d = diff(a.clone(), b.clone(), &DiffOptions { by: SortBy::SelfShare, ..Default::default() });
    assert!(!d.methods.iter().any(|m| m.name == "outer"), "no self change, not listed by self");
    let d = diff(a, b, &DiffOptions { by: SortBy::TotalShare, ..Default::default() });
    let top: Vec<&str> = d.methods.iter().take(3).map(|m| m.name.as_str()).collect();
    assert_eq!(top, ["leaf", "other", "outer"]);
}

#[test]
fn contexts_are_told_apart_where_methods_are_not() {
    // The same method under two callers: its method share is unchanged, its contexts swapped.
    let a = parse_collapsed("main;a;f 70\nmain;b;f 30\n").unwrap();
    let b = parse_collapsed("main;a;f 30\nmain;b;f 70\n").unwrap();
    let d = diff(a, b, &DiffOptions::default());
    assert!(!d.methods.iter().any(|m| m.name == "f"), "f's shares are the same");
    let ctx: Vec<(String, i64)> =
        d.contexts.iter().map(|c| (d.path(c.node), (c.shares.self_change() * 100.0).round() as i64)).collect();
    assert_eq!(ctx, [("main > a > f".to_string(), -40), ("main > b > f".to_string(), 40)]);
}

#[test]
fn the_baseline_gives_a_at_every_frame_of_b_and_lists_what_b_lacks() {
    let d = moved();
    let b = &d.b_tree;
    let at = |path: &[&str]| {
        let id = (1..b.nodes.len()).find(|&i| b.path(i as NodeId) == path).unwrap();
        d.baseline.a_at_b[id]
    };
    assert_eq!(d.baseline.a_at_b[0], (100, 0));
    assert_eq!(at(&["main"]), (100, 0));
    assert_eq!(at(&["main", "run", "common"]), (50, 50));
    assert_eq!(at(&["main", "run", "beta"]), (0, 0));
    assert_eq!(d.baseline.a_only, [("main > run > alpha".to_string(), 50)]);
    assert_eq!(d.baseline.a_only_frames, 1);
}

#[test]
fn async_profiler_names_diff_against_hpm_names() {
    let a = parse_collapsed("java/lang/Thread.run_[j];p/Main.hot_[j] 10\n").unwrap();
    let b = parse_collapsed("java.lang.Thread.run;p.Main.hot 5\n").unwrap();
    let d = diff(a.clone(), b.clone(), &DiffOptions::default());
    assert!(d.methods.is_empty() && d.contexts.is_empty(), "same profile under two namings");
    // Read alike already (the collapsed reader); normalising is left the run-specific parts.
    let raw = diff(a, b, &DiffOptions { normalize: false, ..Default::default() });
    assert!(raw.methods.is_empty());
    let (a, b) =
        (parse_collapsed("Main$$Lambda$14.run 1\n").unwrap(), parse_collapsed("Main$$Lambda$15.run 1\n").unwrap());
    assert!(diff(a.clone(), b.clone(), &DiffOptions::default()).methods.is_empty());
    assert_eq!(diff(a, b, &DiffOptions { normalize: false, ..Default::default() }).methods.len(), 2);
}

#[test]
fn deep_paths_are_written_short() {
    let deep: Vec<String> = (0..100_000).map(|i| format!("f{i}")).collect();
    let a = parse_collapsed(&format!("{} 1\n", deep.join(";"))).unwrap();
    let b = parse_collapsed(&format!("{};g 1\n", deep.join(";"))).unwrap();
    let d = diff(a, b, &DiffOptions::default());
    let paths: Vec<String> = d.contexts.iter().map(|c| d.path(c.node)).collect();
    assert_eq!(
        paths,
        ["… [depth 100000] f99996 > f99997 > f99998 > f99999", "… [depth 100001] f99997 > f99998 > f99999 > g"]
    );
}

#[test]
fn recordings_of_one_kind_of_event_are_compared_on_it() {
    use crate::output::jvmevents::EventSel::{Alloc, Lock};
    assert_eq!(shared_event(&[Lock], &[Lock]).unwrap(), (Lock, None));
    assert_eq!(shared_event(&[Alloc, Lock], &[Alloc]).unwrap(), (Alloc, None));
    let (sel, note) = shared_event(&[Alloc, Lock], &[Alloc, Lock]).unwrap();
    assert_eq!(sel, Alloc);
    assert_eq!(
        note.unwrap(),
        "both profiles have alloc and lock events: comparing alloc (bytes allocated); pick the other with --event lock"
    );
    let e = shared_event(&[Alloc], &[Lock]).unwrap_err();
    assert!(e.starts_with("A has only alloc events, B has only lock events: nothing to compare"), "{e}");
    assert!(shared_event(&[], &[Lock]).unwrap_err().starts_with("A has no samples and no events"));
}
