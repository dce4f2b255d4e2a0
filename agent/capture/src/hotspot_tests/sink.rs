//! The frame sink's capacity, the raw frames read back from a capture, the stop codes.

use super::*;

// 8. The sink's capacity.

/// `n` compiled frames of 4 words from SP, all in one nmethod (recursion), under the
/// interpreter frame of `interp_bottom`.
fn deep(n: u64) -> (Fake, u64, u64) {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let mut sp = SP;
    for i in 0..n {
        let last = i + 1 == n;
        let ret = if last { INTERP_RET } else { a + BODY + 4 };
        let link = if last { sp + 4 * 8 + INTERP_FP } else { 0 };
        sp = f.compiled_frame(sp, 4, ret, link);
    }
    f.interp_bottom(sp);
    (f, a + BODY, a + BODY + 4)
}

#[test]
fn full_sink() {
    let (f, pc, ret) = deep(20);
    let r = regs(pc, SP, 0);
    // 5 slots: two compiled frames (4 slots); the third does not fit in the last one.
    assert_eq!(f.walk(r, 5), (vec![compiled(pc, M_A, true), compiled(ret, M_A, false)], Stop::Full));
    assert_eq!(f.walk(r, 0), (vec![], Stop::Full));
    assert_eq!(f.walk(r, 1), (vec![], Stop::Full));
    // Room for all: 20 compiled frames and the interpreter's.
    let (frames, stop) = f.walk(r, 41);
    assert_eq!(frames.len(), 21);
    assert_eq!(frames[20], bottom());
    assert_eq!(stop, Stop::Bottom);
    assert_eq!(f.walk(r, 40).1, Stop::Full);
}

#[test]
fn interpreted_frame_takes_the_last_slot() {
    let (f, pc, ret) = deep(2);
    let r = regs(pc, SP, 0);
    let all = vec![compiled(pc, M_A, true), compiled(ret, M_A, false), bottom()];
    assert_eq!(f.walk(r, 5), (all.clone(), Stop::Bottom));
    assert_eq!(f.walk(r, 4), (all[..2].to_vec(), Stop::Full));
}

#[test]
fn deep_stack_of_many_frames() {
    // The walk's step bound does not cut a real stack short: 300 frames into 600 slots.
    let (f, pc, _) = deep(300);
    let (frames, stop) = f.walk(regs(pc, SP, 0), 601);
    assert_eq!(frames.len(), 301);
    assert_eq!(stop, Stop::Bottom);
}

// 9. raw_frames.

#[test]
fn raw_frames_round_trip() {
    let mut frames = [SENTINEL; 8];
    let mut kinds = [SENTINEL_KIND; 8];
    let mut sink = FrameSink::new(&mut frames, &mut kinds);
    let pushed = [
        compiled(0x1000_0040, M_A, true),
        RawFrame::Interpreted { method: M_I, bcp: 0x7f00_8000_0010 },
        compiled(0x1000_0444, 0, false),
    ];
    for f in pushed {
        assert!(sink.push(f));
    }
    assert_eq!(sink.len, 5);
    // Three slots left: a compiled frame, then only an interpreted one.
    assert!(sink.push(compiled(1, 2, false)));
    assert_eq!(sink.len, 7);
    assert!(!sink.push(compiled(3, 4, false)));
    assert!(sink.push(interpreted(5, 6)));
    assert!(!sink.push(interpreted(7, 8)));
    assert_eq!(sink.len, 8);
    assert_eq!(kinds[..5], [SlotKind::Pc, SlotKind::Method, SlotKind::Interpreted, SlotKind::Pc, SlotKind::Method]);
    assert_eq!(frames[0], CallFrame { lineno: 1, method_id: 0x1000_0040 });
    assert_eq!(frames[1], CallFrame { lineno: 0, method_id: M_A });
    // The bytecode pointer keeps its low 32 bits (here with the sign bit set).
    assert_eq!(frames[2], CallFrame { lineno: 0x8000_0010_u32 as i32, method_id: M_I });
    let back: Vec<RawFrame> = raw_frames(&frames[..5], &kinds[..5]).collect();
    assert_eq!(
        back,
        vec![
            compiled(0x1000_0040, M_A, true),
            RawFrame::Interpreted { method: M_I, bcp: 0x8000_0010 },
            compiled(0x1000_0444, 0, false),
        ]
    );
    let back: Vec<RawFrame> = raw_frames(&frames, &kinds).collect();
    assert_eq!(back.len(), 5);
    assert_eq!(back[3], compiled(1, 2, false));
    assert_eq!(back[4], interpreted(5, 6));
}

#[test]
fn raw_frames_of_odd_slots() {
    let f = |m: u64| CallFrame { lineno: 0, method_id: m };
    // A pc slot without its method slot (at the end, or followed by another pc), and slots of
    // other kinds, which are skipped.
    let frames = [f(1), f(2), f(3), f(4), f(5), f(6)];
    let kinds = [SlotKind::Method, SlotKind::Pc, SlotKind::Pc, SlotKind::Method, SlotKind::Method, SlotKind::Pc];
    let back: Vec<RawFrame> = raw_frames(&frames, &kinds).collect();
    assert_eq!(back, vec![compiled(2, 0, false), compiled(3, 4, false), compiled(6, 0, false)]);
    // Kinds shorter than frames: only the slots with both.
    let back: Vec<RawFrame> = raw_frames(&frames, &kinds[..3]).collect();
    assert_eq!(back, vec![compiled(2, 0, false), compiled(3, 0, false)]);
    assert_eq!(raw_frames(&[], &[]).count(), 0);
}

#[test]
fn stop_codes() {
    for (i, s) in Stop::ALL.iter().enumerate() {
        assert_eq!(*s as u8, i as u8);
        assert_eq!(Stop::from_u8(i as u8), *s);
    }
    assert_eq!(Stop::from_u8(200), Stop::Lost);
    assert_eq!(Stop::Bottom as u8, 0);
    let names: std::collections::HashSet<&str> = Stop::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(names.len(), 5);
}

// 10. The frame that holds a stack address (`data`).

#[test]
fn the_probe_finds_the_frame_between_its_sp_and_its_caller_s() {
    let mut frames = [SENTINEL; 8];
    let mut kinds = [SENTINEL_KIND; 8];
    for (address, want) in [(0x7000_0010, Some(0)), (0x7000_0100, Some(2)), (0x7000_0200, Some(3)), (0x6fff_fff8, None)]
    {
        let mut sink = FrameSink { probe: Probe::new(address), ..FrameSink::new(&mut frames, &mut kinds) };
        // A compiled frame at sp 0x7000_0000 (slots 0-1), another at 0x7000_0100 (2), then an
        // interpreted one at 0x7000_0180 (3), the stack's base at 0x7000_1000.
        assert!(sink.push_at(compiled(0x1000_0040, M_A, true), 0x7000_0000));
        assert!(sink.push_at(RawFrame::Interpreted { method: M_I, bcp: 0x10 }, 0x7000_0100));
        assert!(sink.push_at(RawFrame::Interpreted { method: M_I, bcp: 0x20 }, 0x7000_0180));
        sink.probe.finish(0x7000_1000);
        assert_eq!(sink.probe.slot, want, "{address:#x}");
    }
}

// The raw stack's key (made by the signal handler, else by the resolver).

fn key_of(frames: &[RawFrame]) -> RawKey {
    let mut slots = [CallFrame::default(); 16];
    let mut kinds = [SlotKind::Method; 16];
    let mut sink = FrameSink::new(&mut slots, &mut kinds);
    for &f in frames {
        assert!(sink.push(f));
    }
    let n = sink.len;
    raw_stack_key(7, &slots[..n], &kinds[..n])
}

#[test]
fn raw_key_tells_apart_what_names_a_frame() {
    let base = [compiled(0x1040, M_A, true), compiled(0x2060, M_A, false), interpreted(0x7000, 0x9010)];
    let k = key_of(&base);
    assert_eq!(key_of(&base), k);
    assert!(k.interpreted);
    let changed: [&[RawFrame]; 6] = [
        &[compiled(0x1041, M_A, true), base[1], base[2]],
        &[compiled(0x1040, M_A, false), base[1], base[2]],
        &[base[0], compiled(0x2068, M_A, false), base[2]],
        &[base[0], base[1], interpreted(0x7000, 0x9011)],
        &[base[0], base[1], interpreted(0x7008, 0x9010)],
        &[base[0], base[1]],
    ];
    for other in changed {
        assert_ne!(key_of(other).hash, k.hash, "{other:?}");
    }
    // A compiled frame's Method* slot is not keyed: its pc names it.
    assert_eq!(key_of(&[compiled(0x1040, 0, true), base[1], base[2]]).hash, k.hash);
    // Under another seed, another key.
    let (mut slots, mut kinds) = ([CallFrame::default(); 8], [SlotKind::Method; 8]);
    let mut sink = FrameSink::new(&mut slots, &mut kinds);
    sink.push(base[0]);
    let n = sink.len;
    assert_ne!(raw_stack_key(8, &slots[..n], &kinds[..n]).hash, key_of(&base[..1]).hash);
    assert!(!key_of(&base[..2]).interpreted);
}

#[test]
fn a_range_of_slots_has_one_key_whichever_stack_it_is_the_callers_of() {
    let callers = [compiled(0x2060, M_A, false), interpreted(0x7000, 0x9010)];
    let (mut slots, mut kinds) = ([CallFrame::default(); 16], [SlotKind::Method; 16]);
    let mut sink = FrameSink::new(&mut slots, &mut kinds);
    for f in [compiled(0x1040, M_A, true), compiled(0x1080, M_A, false)].into_iter().chain(callers) {
        assert!(sink.push(f));
    }
    let n = sink.len;
    // Below the first frame: the key the stack of the last two frames has as callers.
    let first = leaf_slots(&kinds[..n]);
    let second = first + leaf_slots(&kinds[first..n]);
    let below = slots_key(7, &slots[second..n], &kinds[second..n]);
    assert_eq!(below, key_of(&[compiled(0x1050, M_A, true), callers[0], callers[1]]).callers);
    assert_eq!(
        slots_key(7, &slots[first..n], &kinds[first..n]),
        key_of(&[compiled(0x1040, M_A, true), compiled(0x1080, M_A, false), callers[0], callers[1]]).callers
    );
    assert_ne!(below, key_of(&callers).hash, "a whole stack's key is never a range's");
}
