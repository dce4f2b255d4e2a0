//! Tests of the Call Context Map: the paper's Figure 2 example, samples that stop at a
//! visited frame, counting invariants, dump/load and pruning.

use super::ccmap::*;
use crate::model::{Frame, FrameKind, MethodInfo, Recording, Sample};

/// Figure 2b of Chilingarova & Safonov: A and E call B, B calls C, C calls D or F; some
/// samples have B as outermost frame. B->C->D occurs 8 times in total, 5 of them below A;
/// below E the hot path is E->B->C->F. (The figure gives no counts; these fit its text.)
fn figure2() -> CcMap {
    let mut m = CcMap::new();
    for (stack, n) in [
        (&["D", "C", "B", "A"][..], 5),
        (&["D", "C", "B"][..], 2),
        (&["D", "C", "B", "E"][..], 1),
        (&["F", "C", "B", "E"][..], 6),
    ] {
        for _ in 0..n {
            m.add_sample(&CcSample::of(stack));
        }
    }
    m
}

fn path(p: &PathCount) -> (Vec<String>, u64) {
    (p.methods.clone(), p.count)
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn figure2_bcd_is_hot_in_total_but_only_under_a() {
    let m = figure2();
    assert_eq!(m.samples(), 14);
    assert_eq!(m.calls("B", "C"), 14);
    assert_eq!(m.calls("C", "D"), 8);
    assert_eq!(m.calls("C", "F"), 6);
    assert_eq!(m.calls("A", "C"), 0);
    // The total: B->C->D is the hottest sequence, 8 times.
    let hot = m.hottest_paths(10);
    assert_eq!(path(&hot[0]), (owned(&["B", "C", "D"]), 8));
    // ... but only below A is it hot: 5 of the 8 are below A, 1 below E.
    let ctx = m.path_contexts(&["B", "C", "D"]).unwrap();
    assert_eq!(ctx.count, 8);
    assert_eq!(ctx.callers, vec![("A".to_string(), 5), ("E".to_string(), 1)]);
    assert_eq!(ctx.without_caller, 2);
    // The contexts of the call C->D, through the general node's Context references.
    let cd: Vec<_> = m.call_contexts("C", "D").iter().map(path).collect();
    assert_eq!(
        cd,
        vec![(owned(&["B", "C", "D"]), 8), (owned(&["A", "B", "C", "D"]), 5), (owned(&["E", "B", "C", "D"]), 1)]
    );
}

#[test]
fn figure2_ebcf_is_the_hot_path_from_e() {
    let m = figure2();
    let from_e: Vec<_> = m.hottest_paths_from("E", 5).iter().map(path).collect();
    assert_eq!(from_e, vec![(owned(&["E", "B", "C", "F"]), 6), (owned(&["E", "B", "C", "D"]), 1)]);
    let from_a: Vec<_> = m.hottest_paths_from("A", 5).iter().map(path).collect();
    assert_eq!(from_a, vec![(owned(&["A", "B", "C", "D"]), 5)]);
    let ctx = m.path_contexts(&["B", "C", "F"]).unwrap();
    assert_eq!((ctx.count, ctx.callers.clone(), ctx.without_caller), (6, vec![("E".to_string(), 6)], 0));
    // Prefixes that all went on to one longer path are not listed separately.
    assert!(m.hottest_paths(20).iter().all(|p| p.methods != ["A", "B", "C"]));
}

#[test]
fn method_profiles_and_single_targets() {
    let m = figure2();
    let hot: Vec<(&str, u64)> = m.hottest_methods(3).iter().map(|p| (p.name.as_str(), p.total)).collect();
    assert_eq!(hot, vec![("B", 14), ("C", 14), ("D", 8)]);
    assert_eq!(m.method("F").unwrap().top, 6);
    let single: Vec<(String, String, u64)> =
        m.single_target_sites().into_iter().map(|s| (s.context.join(">"), s.callee, s.count)).collect();
    assert_eq!(single, vec![("B".into(), "C".into(), 14), ("E".into(), "B".into(), 7), ("A".into(), "B".into(), 5)]);
    // C's site has two targets, but below A->B it only ever called D.
    let ctx = m.single_target_in_context();
    assert_eq!(ctx.len(), 1);
    assert_eq!(
        (ctx[0].context.clone(), ctx[0].callee.as_str(), ctx[0].count),
        (vec!["A".to_string(), "B".into(), "C".into()], "D", 5)
    );
}

#[test]
fn samples_stopping_at_a_visited_frame() {
    let mut m = CcMap::new();
    m.add_sample(&CcSample::of(&["D", "C", "B", "A"]));
    // The next walk stops at C, already visited: C's frame is recorded for its new call to F.
    m.add_sample(&CcSample { frames: vec![CcFrame::new("F", -1), CcFrame::new("C", -1)], stopped_at_visited: true });
    // Then only the visited top frame F: a repetition for the self-tuning heuristic.
    m.add_sample(&CcSample { frames: vec![CcFrame::new("F", -1)], stopped_at_visited: true });
    assert_eq!((m.samples(), m.repeats()), (3, 1));
    assert_eq!(m.method("C").unwrap().total, 2);
    assert_eq!(m.method("F").unwrap().total, 2);
    assert_eq!(m.calls("C", "F"), 1);
    // The call C->F got no context: the walk did not see what is below C.
    assert!(m.call_contexts("C", "F").is_empty());
    assert_eq!(m.path_contexts(&["C", "F"]).unwrap().without_caller, 1);
    assert_eq!(m.path_contexts(&["B", "C", "F"]), None);
}

/// Tiny deterministic generator for property tests.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *seed >> 33
}

fn random_map(seed: u64, samples: usize) -> (CcMap, Vec<(CcSample, u64)>) {
    let mut s = seed;
    let names = ["a", "b", "c", "d", "e", "f"];
    let mut m = CcMap::new();
    let mut all = Vec::new();
    for _ in 0..samples {
        let len = 1 + (lcg(&mut s) % 7) as usize;
        let frames =
            (0..len).map(|_| CcFrame::new(names[(lcg(&mut s) % 6) as usize], (lcg(&mut s) % 3) as i32)).collect();
        let sample = CcSample { frames, stopped_at_visited: lcg(&mut s) & 3 == 0 };
        let n = 1 + lcg(&mut s) % 3;
        m.add_samples(&sample, n);
        all.push((sample, n));
    }
    (m, all)
}

#[test]
fn counters_add_up_for_random_samples() {
    for seed in 0..20 {
        let (m, all) = random_map(seed, 200);
        let n_samples: u64 = all.iter().map(|(_, n)| n).sum();
        let frames: u64 = all.iter().map(|(s, n)| s.frames.len() as u64 * n).sum();
        let calls: u64 = all.iter().map(|(s, n)| (s.frames.len() as u64 - 1) * n).sum();
        let refs: u64 = all
            .iter()
            .map(|(s, n)| {
                let l = s.frames.len() as u64;
                l.saturating_sub(1) * l.saturating_sub(2) / 2 * n
            })
            .sum();
        assert_eq!(m.samples(), n_samples);
        assert_eq!(m.methods().iter().map(|p| p.top).sum::<u64>(), n_samples);
        assert_eq!(m.methods().iter().map(|p| p.total).sum::<u64>(), frames);
        assert_eq!(m.callees().iter().map(|c| c.count).sum::<u64>(), calls);
        assert_eq!(m.callee_refs().iter().map(|r| r.count).sum::<u64>(), refs);
        // A call in context never happened more often than the call in general.
        for c in m.callees() {
            assert!(c.contexts.iter().all(|&r| m.callee_refs()[r as usize].count <= c.count));
        }
    }
}

#[test]
fn dump_and_load_are_lossless() {
    for seed in 0..10 {
        let (m, _) = random_map(seed, 100);
        let text = m.dump();
        let back = CcMap::parse_dump(&text).unwrap();
        assert_eq!(back, m, "seed {seed}");
        assert_eq!(back.dump(), text);
    }
    let mut m = figure2();
    m.add_sample(&CcSample::of(&["operator new(unsigned long)", "java.lang.Thread.run"]));
    assert_eq!(CcMap::parse_dump(&m.dump()).unwrap(), m);
}

#[test]
fn bad_dumps_name_the_line() {
    let text = figure2().dump();
    assert_eq!(CcMap::parse_dump("M 0 1 1 a\n").unwrap_err().0, 1);
    let bad = text.replacen("\nS 1 ", "\nS 7 ", 1);
    let (line, msg) = CcMap::parse_dump(&bad).unwrap_err();
    assert!(msg.contains("expected id 1"), "{msg}");
    assert_eq!(bad.lines().nth(line - 1).unwrap().split(' ').take(2).collect::<Vec<_>>(), ["S", "7"]);
    // A callee that points at a method that does not exist.
    let bad = text.replacen("\nC 0 0 0 ", "\nC 0 0 99 ", 1);
    let (line, msg) = CcMap::parse_dump(&bad).unwrap_err();
    assert!(msg.contains("does not exist"), "{msg}");
    assert!(bad.lines().nth(line - 1).unwrap().starts_with("C 0 0 99"));
    assert!(CcMap::parse_dump(&format!("{text}X 1 2\n")).unwrap_err().1.contains("unknown node kind"));
    assert!(CcMap::parse_dump(&format!("{text}r 99 0 0 x\n")).is_err());
}

#[test]
fn pruning_drops_cold_nodes_and_keeps_the_rest() {
    let m = figure2();
    assert_eq!(m.prune(0), m);
    let p = m.prune(2);
    assert_eq!(p.calls("C", "D"), 8);
    let ctx = p.path_contexts(&["B", "C", "D"]).unwrap();
    assert_eq!(ctx.callers, vec![("A".to_string(), 5)]); // E->B->C->D (1) is gone
    assert_eq!(CcMap::parse_dump(&p.dump()).unwrap(), p);
    let p = m.prune(7);
    let names: Vec<&str> = p.methods().iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["D", "C", "B", "E"]);
    assert_eq!(p.calls("C", "D"), 8);
    assert_eq!(p.calls("E", "B"), 7);
    assert!(p.callee_refs().iter().all(|r| r.count >= 7));
    for seed in 0..5 {
        let (m, _) = random_map(seed, 150);
        let p = m.prune(3);
        assert!(p.callees().iter().all(|c| c.count >= 3));
        assert_eq!(CcMap::parse_dump(&p.dump()).unwrap(), p);
    }
}

#[test]
fn recordings_keep_call_sites_apart() {
    let mut rec = Recording::default();
    let a = rec.methods.intern(MethodInfo::java("p.A", "run", "()V"));
    let b = rec.methods.intern(MethodInfo::java("p.B", "f", "()V"));
    let c = rec.methods.intern(MethodInfo::java("p.C", "f", "()V"));
    let frame = |method, bci| Frame { method, bci, line: -1, kind: FrameKind::JitCompiled };
    for (callee, site) in [(b, 5), (c, 9), (b, 5)] {
        rec.samples.push(Sample::of_stack(vec![frame(callee, 0), frame(a, site)].into()));
    }
    let m = CcMap::from_recording(&rec);
    let single: Vec<(i32, String, u64)> =
        m.single_target_sites().into_iter().map(|s| (s.offset, s.callee, s.count)).collect();
    assert_eq!(single, vec![(5, "p.B.f".to_string(), 2), (9, "p.C.f".to_string(), 1)]);
    assert_eq!(m.calls("p.A.run", "p.B.f"), 2);
    // Without offsets (collapsed stacks) it is one site with two targets.
    let cct = crate::cct::Cct::from_recording(&rec, false);
    assert!(CcMap::from_cct(&cct).single_target_sites().is_empty());
}
