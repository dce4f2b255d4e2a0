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

/// Recorded on Temurin 25 (`Chain`'s recursion, 1 ms): two compiled versions of the caller put
/// the same recursion at two stack depths, so one key is the bottom of one (its caller `work`)
/// and the middle of the other (its caller `rec`). Scaled down: `main` (1) at 50; `work` (2)
/// at 88 calls `rec` (3) at 120, 152, 184 and 216, which calls `leaf` (4) at 248 — most of
/// the time; briefly `work` at 60 calls it at 88 ... 184, `leaf` at 216. The samples' copies
/// end before `work`, so the steady version's samples never show the edge into `rec` at 120
/// (only anchors do), while the brief version's show theirs, through the same key, every time.
#[test]
fn a_caller_the_copies_cannot_reach_is_not_outvoted_by_one_they_can() {
    let (main, work, leaf) = (jit(1), jit(2), jit(4));
    let rec = |n: usize| vec![jit(3); n];
    let stack = |top: &[Frame]| [vec![leaf], rec(4), top.to_vec()].concat();
    let steady_depths = [248, 216, 184, 152, 120, 88, 50];
    let brief_depths = [216, 184, 152, 120, 88, 60, 50];
    let ones = [1u16; 7];
    let mut r = ChainRecorder::default();
    for _ in 0..4 {
        r.observe(&stack(&[work, main]), walk(0, &ones, &steady_depths), true);
    }
    let steady = stack(&[]);
    let mut tops = Vec::new();
    for _ in 0..8 {
        tops.push(r.observe(&steady, walk(0, &ones[..5], &steady_depths[..5]), false));
    }
    r.observe(&stack(&[work, main]), walk(0, &ones, &brief_depths), true);
    for _ in 0..6 {
        // The brief version's copies reach one frame further: `rec` at 88 calls `rec` at 120.
        let brief = stack(&[]);
        let top = r.observe(&brief, walk(0, &ones[..5], &brief_depths[..5]), false);
        assert_eq!(top, Some((4, (MethodIdx(3), 88 * SCOPES))));
    }
    // All the records together see `rec` at 120 called by `rec` at 88 seven times, by `work`
    // four: the anchors (whole stacks, one each) see `work` four times to one.
    let into_120 = |caller: u32, depth: u64| {
        r.quads(&|m| m.to_string())
            .iter()
            .find(|q| {
                q.caller == caller.to_string() && q.caller_depth == depth * SCOPES && q.callee_depth == 120 * SCOPES
            })
            .map_or(0, |q| q.count)
    };
    assert_eq!((into_120(3, 88), into_120(2, 88)), (7, 4));
    let want = stack(&[work, main]);
    for top in tops {
        assert_eq!(top, Some((4, (MethodIdx(3), 120 * SCOPES))));
        assert_eq!(r.complete(&steady, top).as_deref(), Some(&want[..]));
    }
}

#[test]
fn callers_no_anchor_saw_are_chosen_by_all_the_records() {
    // No anchor into C at 300: the samples see it called by B at 200 twice, by D at 200 once.
    let mut r = ChainRecorder::default();
    for _ in 0..2 {
        r.observe(&[jit(3), jit(2)], walk(0, &[1, 1], &[300, 200]), false);
    }
    r.observe(&[jit(3), jit(4)], walk(0, &[1, 1], &[300, 200]), false);
    // One anchor for an edge elsewhere does not change that.
    r.observe(&[jit(2), jit(1)], walk(0, &[1, 1], &[200, 100]), true);
    let top = r.observe(&[jit(5), jit(3)], walk(0, &[1, 1], &[400, 300]), false);
    assert_eq!(r.complete(&[jit(5), jit(3)], top), Some(vec![jit(5), jit(3), jit(2), jit(1)]));
}
