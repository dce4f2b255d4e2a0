use super::*;

fn f(method: u32, kind: FrameKind) -> Frame {
    Frame { method: MethodIdx(method), bci: -1, line: 10 + method as i32, kind }
}
fn jit(m: u32) -> Frame {
    f(m, FrameKind::JitCompiled)
}

fn walk<'a>(first: usize, groups: &'a [u16], phys: &'a [u32]) -> Walk<'a> {
    Walk { first, groups, phys }
}

#[test]
fn inlined_frames_share_their_physical_frames_depth_one_scope_each() {
    // leaf native, C inlined into B inlined into A (one physical frame at 800 bytes), a stub
    // (no frame), then an interpreted D (900 bytes).
    let stack = [
        f(9, FrameKind::Native),
        f(3, FrameKind::Inlined),
        f(2, FrameKind::Inlined),
        jit(1),
        f(4, FrameKind::Interpreted),
    ];
    let d = frame_depths(&stack, 1, &[3, 0, 1], &[800, 850, 900]).unwrap();
    assert_eq!(d, vec![None, Some(800 * SCOPES + 2), Some(800 * SCOPES + 1), Some(800 * SCOPES), Some(900 * SCOPES)]);
    // An unknown physical depth leaves its frames unkeyed, the others keyed.
    let d = frame_depths(&stack, 1, &[3, 0, 1], &[0, 850, 900]).unwrap();
    assert_eq!(d, vec![None, None, None, None, Some(900 * SCOPES)]);
    // Groups that do not match the depths or the stack: nothing trusted.
    assert_eq!(frame_depths(&stack, 1, &[3, 1], &[800]), None);
    assert_eq!(frame_depths(&stack, 1, &[3, 2], &[800, 900]), None);
}

/// A (root, 100 bytes) calls B (200) which calls C (300); A also calls D (200) which calls C
/// at 280. Samples see only their two innermost frames; anchors see whole stacks.
fn recorder() -> ChainRecorder {
    let mut r = ChainRecorder::default();
    assert_eq!(r.observe(&[jit(3), jit(2), jit(1)], walk(0, &[1, 1, 1], &[300, 200, 100]), true), None);
    assert_eq!(r.observe(&[jit(3), jit(4), jit(1)], walk(0, &[1, 1, 1], &[280, 200, 100]), true), None);
    r
}

#[test]
fn samples_are_completed_from_the_tree_of_their_outermost_frame() {
    let mut r = recorder();
    let s1 = [jit(3), jit(2)];
    let top = r.observe(&s1, walk(0, &[1, 1], &[300, 200]), false);
    assert_eq!(top, Some((1, (MethodIdx(2), 200 * SCOPES))));
    let s2 = [jit(3), jit(4)];
    let top2 = r.observe(&s2, walk(0, &[1, 1], &[280, 200]), false);
    let (_, stats) = r.tree().unwrap();
    assert_eq!(stats.nodes, 5);
    assert_eq!(r.complete(&s1, top), Some(vec![jit(3), jit(2), jit(1)]));
    assert_eq!(r.complete(&s2, top2), Some(vec![jit(3), jit(4), jit(1)]));
    // A sample whose top is a root needs nothing.
    let s3 = [jit(2), jit(1)];
    let top3 = r.observe(&s3, walk(0, &[1, 1], &[200, 100]), false);
    assert_eq!(r.complete(&s3, top3), None);
    assert_eq!((r.counts.samples, r.counts.keyed, r.counts.anchors, r.counts.completed), (3, 3, 2, 2));
}

#[test]
fn the_events_are_the_leaves_and_the_quadruples_the_adjacent_frames() {
    let mut r = recorder();
    r.observe(&[f(9, FrameKind::Cpp), jit(3), jit(2)], walk(1, &[1, 1], &[300, 200]), false);
    let name = |m: MethodIdx| format!("m{m}");
    let e = r.events(&name);
    assert_eq!(e, vec![Event { method: "m3".into(), depth: 300 * SCOPES, count: 1 }]);
    let q = r.quads(&name);
    assert_eq!(q.len(), 4);
    let bc = q.iter().find(|q| q.caller == "m2" && q.callee == "m3").unwrap();
    assert_eq!((bc.caller_depth, bc.callee_depth, bc.count), (200 * SCOPES, 300 * SCOPES, 2));
}

#[test]
fn no_edge_across_a_gap_or_against_the_stacks_growth() {
    let mut r = ChainRecorder::default();
    // 5 is not keyed (interpreter entry, depth 0): 3 and 2 are not adjacent.
    r.observe(&[jit(3), jit(5), jit(2)], walk(0, &[1, 1, 1], &[300, 0, 200]), false);
    // A depth that does not grow towards the leaf (a stale copy): no edge.
    r.observe(&[jit(3), jit(2)], walk(0, &[1, 1], &[200, 300]), false);
    assert!(r.quads(&|m| m.to_string()).is_empty());
    assert_eq!(r.counts.keyed, 2);
}

#[test]
fn a_key_with_several_callers_takes_the_hottest() {
    // C at 300 is called by B (200) twice and by D (200) once; B and D by A (100).
    let mut r = ChainRecorder::default();
    for _ in 0..2 {
        r.observe(&[jit(3), jit(2), jit(1)], walk(0, &[1, 1, 1], &[300, 200, 100]), true);
    }
    r.observe(&[jit(3), jit(4), jit(1)], walk(0, &[1, 1, 1], &[300, 200, 100]), true);
    let top = r.observe(&[jit(5), jit(3)], walk(0, &[1, 1], &[400, 300]), false);
    assert_eq!(r.complete(&[jit(5), jit(3)], top), Some(vec![jit(5), jit(3), jit(2), jit(1)]));
}
