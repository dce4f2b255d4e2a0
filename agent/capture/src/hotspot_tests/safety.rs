//! Safety and bounds: every read stays where the walker may read, every walk ends, on
//! random and corrupted stacks and code.

use super::*;

// 7. Safety and bounds.

/// xorshift64: a seeded pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A value a stack slot or a register may hold: garbage, or an address the walker may take
/// for something (stack, code, a blob's body, the interpreter, the call stub, native code).
fn value(rng: &mut Rng, f: &Fake, codes: &[u64], top: u64) -> u64 {
    match rng.below(12) {
        0 => 0,
        1 => rng.next(),
        2 | 3 => STACK_LO + rng.below(STACK_SIZE / 8) * 8,
        4 => top + rng.below(0x400) * 8,
        5 | 6 => codes[rng.below(codes.len() as u64) as usize] + rng.below(0x100),
        7 => HEAP_LO + rng.below(HEAP_HI - HEAP_LO),
        8 => INTERP_LO + rng.below(INTERP_HI - INTERP_LO + 0x10),
        9 => f.code.call_stub_return,
        10 => NATIVE_PC + rng.below(0x1000),
        _ => rng.below(0x1_0000),
    }
}

/// Instructions the walker decodes, to plant in random code.
const PATTERNS: [&[u8]; 9] = [
    &[0x55],
    &[0x48, 0x83, 0xec, 0x30],
    &[0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00],
    &[0x48, 0x89, 0xe5],
    &[0x48, 0x8b, 0xec],
    &[0x5d],
    &[0xc3],
    &[0x49, 0x3b, 0x67, 0x20],
    &[0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0xc3],
];

/// A random process: code bytes, blobs with random headers, a sometimes corrupt segment map,
/// random stack words and anchor, random registers.
fn random_case(seed: u64) -> (Fake, Regs, usize) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut f = Fake::with_code(|_| rng.next() as u8);
    let mut codes = vec![f.code.call_stub_return];
    for _ in 0..1 + rng.below(12) {
        let kind = match rng.below(4) {
            0 | 1 => KIND_NMETHOD,
            2 => KIND_STUB,
            _ => rng.next() as u8,
        };
        let words = match rng.below(5) {
            0 => 0,
            1 | 2 => 1 + rng.below(12) as i32,
            3 => rng.next() as i32,
            _ => (1 << 16) + 3,
        };
        let complete = match rng.below(4) {
            0 => -1,
            1 => rng.next() as i32,
            _ => rng.below(0x80) as i32,
        };
        let method = value(&mut rng, &f, &codes, SP);
        let code = f.blob(kind, words, complete, method);
        codes.push(code);
        for _ in 0..rng.below(16) {
            let p = PATTERNS[rng.below(PATTERNS.len() as u64) as usize];
            let at = code + rng.below(0x200);
            f.put_bytes(at, p);
        }
    }
    for _ in 0..rng.below(4) {
        let s = rng.below(SEGS);
        let v = rng.next() as u8;
        f.put_bytes(SEG_LO + s, &[v]);
    }
    if rng.chance(10) {
        f.layout.nmethod_test = NmethodTest::Vtable(value(&mut rng, &f, &codes, SP));
    }
    if rng.chance(10) {
        f.thread.stack_base = STACK_BASE - rng.below(0x100) * 8;
    }
    let sp = match rng.below(20) {
        0 => value(&mut rng, &f, &codes, SP),
        1 => STACK_BASE - rng.below(4) * 8,
        _ => STACK_LO + 0x800 + rng.below(0x100) * 8,
    };
    for a in (STACK_LO..STACK_BASE).step_by(8) {
        let v = value(&mut rng, &f, &codes, sp);
        f.put(a, v);
    }
    if rng.chance(50) {
        f.thread.anchor_sp = value(&mut rng, &f, &codes, sp);
        f.thread.anchor_pc = if rng.chance(50) { 0 } else { value(&mut rng, &f, &codes, sp) };
        f.thread.anchor_fp = value(&mut rng, &f, &codes, sp);
    }
    // Mostly a pc in a blob or the interpreter, where the walk has something to do.
    let pc = match rng.below(4) {
        0 | 1 => codes[rng.below(codes.len() as u64) as usize] + rng.below(0x200),
        2 => INTERP_LO + rng.below(0x1000),
        _ => value(&mut rng, &f, &codes, sp),
    };
    let fp = value(&mut rng, &f, &codes, sp);
    (f, regs(pc, sp, fp), rng.below(48) as usize)
}

#[test]
fn fuzz_reads_stay_in_bounds() {
    let mut stops = [0usize; 5];
    let mut with_frames = 0;
    for seed in 1..=3000 {
        let (f, regs, cap) = random_case(seed);
        let o = f.run(regs, cap);
        assert_eq!(o.violations, vec![], "seed {seed}: reads outside the stack and the code cache, {regs:x?}");
        assert!(o.len <= cap && o.frames.len() <= cap, "seed {seed}");
        // Every loop is bounded: a walk is a few reads per frame.
        assert!(o.reads < 20_000, "seed {seed}: {} reads", o.reads);
        stops[o.stop as usize] += 1;
        with_frames += usize::from(!o.frames.is_empty());
    }
    // The cases reach the walker's paths, not only its first checks.
    assert!(with_frames > 500, "{with_frames} walks with frames; stops {stops:?}");
    assert!(stops.iter().filter(|&&n| n > 0).count() >= 4, "stops {stops:?}");
}

#[test]
fn fuzz_well_formed_stacks_with_garbage_below() {
    // A valid top (compiled, interpreted) over a random rest: frames come out in order and the
    // walk never reads out of bounds.
    for seed in 1..=1000 {
        let (mut f, _, cap) = random_case(seed);
        f.layout.nmethod_test = layout().nmethod_test;
        f.thread.stack_base = STACK_BASE;
        let a = f.nmethod(4, M_A);
        f.put_bytes(a + BODY, &[0x90; 8]);
        let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
        let ifp = isp + INTERP_FP;
        let garbage_fp = f.mem.read(ifp, 8);
        let garbage_ret = f.mem.read(ifp + 8, 8);
        let ret =
            if f.code.contains(garbage_ret) || f.code.in_interpreter(garbage_ret) { garbage_ret } else { INTERP_RET };
        f.interp_frame(isp, M_I, BCP_I, ret, garbage_fp);
        let pc = a + BODY;
        let o = f.run(regs(pc, SP, 0), cap.max(3));
        assert_eq!(o.violations, vec![], "seed {seed}");
        assert_eq!(o.frames[..2], [compiled(pc, M_A, true), bottom()], "seed {seed}");
    }
}

/// Frame sizes of the nmethods of a generated stack.
const FRAME_WORDS: [u64; 3] = [2, 5, 12];

/// A saved rbp nothing reads: somewhere low in the address space.
fn garbage(rng: &mut Rng) -> u64 {
    0x1000 + rng.below(0x1000) * 8
}

/// One frame of a generated stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gen {
    /// An nmethod's frame: which of the stack's nmethods (`FRAME_WORDS` gives its size).
    Compiled(usize),
    Interp,
    /// A stub without a frame size, the return address at its sp.
    Stub,
    /// The call stub with Java below (the next frame through its wrapper's anchor), or at the
    /// bottom (the last frame) without.
    Entry,
}

/// A random well-formed stack: frames of every kind from the top down, each return address
/// and saved rbp what its caller needs, the top reached from the registers directly or
/// through native code (an anchor, or a leaf's return address). Returns the process, the
/// registers and the frames the walk must give (all of them, room permitting).
fn random_stack(rng: &mut Rng) -> (Fake, Regs, Vec<RawFrame>) {
    let mut f = Fake::new();
    let nmethods: Vec<(u64, u64)> =
        FRAME_WORDS.iter().zip(0..).map(|(&w, i)| (f.nmethod(w as i32, M_A + i), M_A + i)).collect();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    // The frames from the top; the last one is the bottom entry frame.
    let n = 1 + rng.below(16) as usize;
    let mut kinds = Vec::new();
    for i in 0..n {
        let after_entry = i > 0 && kinds[i - 1] == Gen::Entry;
        let after_stub = i > 0 && kinds[i - 1] == Gen::Stub;
        let k = match rng.below(10) {
            0..=3 => Gen::Compiled(rng.below(FRAME_WORDS.len() as u64) as usize),
            4..=6 => Gen::Interp,
            7 | 8 if !after_entry && !after_stub => Gen::Stub,
            _ if i > 0 && !after_entry => Gen::Entry,
            _ => Gen::Interp,
        };
        kinds.push(k);
    }
    kinds.push(Gen::Entry);
    // Each frame's sp, fp (interpreter and entry frames), pc and entry-frame gap.
    let native = rng.below(3); // 0: none, 1: through the anchor, 2: a native leaf
    if native == 1 && !matches!(kinds[0], Gen::Compiled(..) | Gen::Interp) {
        kinds[0] = Gen::Interp;
    }
    let mut sps = vec![STACK_LO + 0x200];
    for (i, k) in kinds.iter().enumerate() {
        let sp = sps[i];
        let next = match *k {
            Gen::Compiled(m) => sp + FRAME_WORDS[m] * 8,
            Gen::Interp => sp + INTERP_FP + 16,
            Gen::Stub => sp + 8,
            Gen::Entry => sp + 0xa0 + rng.below(0x20) * 8,
        };
        sps.push(next);
    }
    assert!(sps[kinds.len()] + 0x100 < STACK_BASE);
    let fps: Vec<Option<u64>> = kinds
        .iter()
        .zip(&sps)
        .map(|(k, &sp)| match k {
            Gen::Interp => Some(sp + INTERP_FP),
            Gen::Entry => Some(sp + 8 * 8),
            _ => None,
        })
        .collect();
    // The fp each frame must be reached with: its own, or its caller's through a stub.
    let mut need = vec![None; kinds.len() + 1];
    for i in (0..kinds.len()).rev() {
        need[i] = if kinds[i] == Gen::Stub { need[i + 1] } else { fps[i] };
    }
    let pcs: Vec<u64> = kinds
        .iter()
        .map(|k| match *k {
            Gen::Compiled(m) => nmethods[m].0 + BODY + rng.below(0x100),
            Gen::Interp => INTERP_LO + rng.below(0x1000),
            Gen::Stub => stub + rng.below(0x100),
            Gen::Entry => f.code.call_stub_return,
        })
        .collect();
    let mut expected = Vec::new();
    let last = kinds.len() - 1;
    for (i, k) in kinds.iter().enumerate() {
        let (sp, caller_pc) = (sps[i], pcs.get(i + 1).copied().unwrap_or(0));
        let link = need[i + 1].unwrap_or_else(|| garbage(rng));
        match *k {
            Gen::Compiled(m) => {
                f.compiled_frame(sp, FRAME_WORDS[m], caller_pc, link);
                expected.push(compiled(pcs[i], nmethods[m].1, i == 0 && native == 0));
            }
            Gen::Interp => {
                let method = M_I + i as u64;
                let bcp = 0x7f00_0000_0000 + rng.below(1 << 40);
                f.interp_frame(sp, method, bcp, caller_pc, link);
                expected.push(interpreted(method, bcp));
            }
            Gen::Stub => f.put(sp, caller_pc),
            Gen::Entry if i == last => {
                f.entry_frame(sp, (0, 0, 0));
            }
            Gen::Entry => {
                let asp = sps[i + 1];
                let apc = if rng.chance(50) { caller_pc } else { 0 };
                if apc == 0 {
                    f.put(asp - 8, caller_pc);
                }
                f.entry_frame(sp, (asp, apc, need[i + 1].unwrap_or_else(|| garbage(rng))));
            }
        }
    }
    // The top frame's bytes at pc are a nop: a compiled frame there is whole.
    let regs = match native {
        0 => regs(pcs[0], sps[0], need[0].unwrap_or_else(|| garbage(rng))),
        1 => {
            f.thread.anchor_sp = sps[0];
            f.thread.anchor_fp = need[0].unwrap_or_else(|| garbage(rng));
            if rng.chance(50) {
                f.thread.anchor_pc = pcs[0];
            } else {
                f.put(sps[0] - 8, pcs[0]);
            }
            regs(NATIVE_PC, sps[0] - 0x40, garbage(rng))
        }
        _ => {
            f.put(sps[0] - 8, pcs[0]);
            regs(NATIVE_PC, sps[0] - 8, need[0].unwrap_or_else(|| garbage(rng)))
        }
    };
    (f, regs, expected)
}

/// The frames a sink of `cap` slots keeps of `all`, and how the walk stops.
fn fitting(all: &[RawFrame], cap: usize) -> (Vec<RawFrame>, Stop) {
    let mut used = 0;
    for (i, fr) in all.iter().enumerate() {
        used += if matches!(fr, RawFrame::Compiled { .. }) { 2 } else { 1 };
        if used > cap {
            return (all[..i].to_vec(), Stop::Full);
        }
    }
    (all.to_vec(), Stop::Bottom)
}

#[test]
fn fuzz_well_formed_stacks() {
    for seed in 1..=3000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
        let (mut f, regs, all) = random_stack(&mut rng);
        let cap = rng.below(2 * all.len() as u64 + 4) as usize;
        let o = f.run(regs, cap);
        assert_eq!(o.violations, vec![], "seed {seed}");
        let want = fitting(&all, cap);
        assert_eq!((o.frames, o.stop), want, "seed {seed}: {regs:x?}, cap {cap}");
        // With the blob cache and the thread's memo: the same walk, filling them and then
        // taken from them.
        f.cache = Some(crate::blob_cache::BlobCache::with_entries(64));
        f.memo = Some(crate::blob_cache::WalkMemo::default());
        for pass in ["filling", "cached"] {
            let o = f.run(regs, cap);
            assert_eq!(o.violations, vec![], "seed {seed}, {pass}");
            assert_eq!((o.frames, o.stop), want, "seed {seed}, {pass}: {regs:x?}, cap {cap}");
        }
    }
}

#[test]
fn fuzz_corrupted_stacks() {
    // Well-formed stacks with a few words, code bytes or segment-map entries overwritten: no
    // read out of bounds, no write past the sink, a bounded walk.
    let mut stops = [0usize; 5];
    for seed in 1..=3000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (mut f, regs, all) = random_stack(&mut rng);
        let codes = [f.code.call_stub_return, HEAP_LO + CODE_OFF + 16 * 64];
        for _ in 0..1 + rng.below(6) {
            let a = regs.sp + rng.below(0x800) * 8;
            if a < STACK_BASE {
                let v = value(&mut rng, &f, &codes, regs.sp);
                f.put(a, v);
            }
        }
        if rng.chance(20) {
            let a = HEAP_LO + rng.below(HEAP_HI - HEAP_LO);
            let b = rng.next() as u8;
            f.put_bytes(a, &[b]);
        }
        if rng.chance(10) {
            let s = rng.below(SEGS);
            let v = rng.next() as u8;
            f.put_bytes(SEG_LO + s, &[v]);
        }
        let cap = rng.below(2 * all.len() as u64 + 4) as usize;
        let o = f.run(regs, cap);
        assert_eq!(o.violations, vec![], "seed {seed}");
        assert!(o.len <= cap, "seed {seed}");
        assert!(o.reads < 20_000, "seed {seed}: {} reads", o.reads);
        stops[o.stop as usize] += 1;
    }
    let reached = [Stop::Bottom, Stop::Full, Stop::Lost].map(|s| stops[s as usize]);
    assert!(reached.iter().all(|&n| n > 0), "stops {stops:?}");
}

#[test]
fn interpreter_frame_pointing_down_is_lost() {
    // The interpreter frame's saved rbp points below it, into the frame just walked.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    f.interp_frame(isp, M_I, BCP_I, INTERP_RET, isp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Lost));
    // ... and to itself.
    f.interp_frame(isp, M_I, BCP_I, INTERP_RET, isp + INTERP_FP);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Lost));
}

#[test]
fn interpreter_sender_sp_pointing_down_is_lost() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    let ifp = f.interp_bottom(isp);
    f.put(ifp - 8, ifp - 16);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

#[test]
fn entry_frame_anchor_pointing_down_is_lost() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    let esp = isp + INTERP_FP + 16;
    // The wrapper's anchor names the top frame again: a loop if followed.
    let efp = f.entry_frame(esp, (SP, a + BODY, 0));
    let ret = f.code.call_stub_return;
    f.interp_frame(isp, M_I, BCP_I, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Lost));
}

#[test]
fn stub_with_rbp_below_sp_is_lost() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    // A returns into a frameless-looking stub whose rbp points back down.
    let ssp = f.compiled_frame(SP, 4, stub + 0x10, SP);
    f.put(ssp, 0x4242);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

#[test]
fn bad_registers() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let pc = a + BODY;
    for sp in [0, SP + 4, STACK_BASE, STACK_BASE + 8] {
        assert_eq!(f.walk(regs(pc, sp, 0), 64), (vec![], Stop::Lost), "sp {sp:#x}");
    }
    // A frame running past the stack base.
    f.thread.stack_base = SP + 16;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

#[test]
fn sp_off_the_thread_stack_is_not_walked() {
    // A stack pointer below the thread's stack (an alternate signal stack, a coroutine's):
    // nothing is read, though [sp, stack_base) would look like a stack.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let o = f.run(regs(a + BODY, STACK_LO - 0x1000, 0), 64);
    assert_eq!((o.frames, o.stop, o.reads), (vec![], Stop::Lost, 0));
    assert_eq!(o.violations, vec![]);
}

#[test]
fn huge_frame_size_is_no_frame_size() {
    // A frame size past any real frame (or negative) is taken as none: a stub.
    for words in [1 << 16, -4, i32::MAX] {
        let mut f = Fake::new();
        let a = f.blob(KIND_NMETHOD, words, COMPLETE as i32, M_A);
        let b = f.nmethod(4, M_B);
        f.put(SP, b + BODY);
        let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
        f.interp_bottom(isp);
        assert_eq!(
            f.walk(regs(a + BODY, SP, 0), 64),
            (vec![compiled(b + BODY, M_B, false), bottom()], Stop::Bottom),
            "words {words}"
        );
    }
}

#[test]
fn step_bound_is_not_a_full_sink() {
    // Every word from sp returns into a frameless stub: each step climbs 8 bytes and records
    // nothing, until the bound (4 * slots + 64 steps).
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    for a in (SP..STACK_BASE).step_by(8) {
        f.put(a, stub + 0x10);
    }
    let (frames, stop) = f.walk(regs(stub + 0x10, SP, 0), 8);
    assert_eq!(frames, vec![]);
    assert_ne!(stop, Stop::Full);
}

#[test]
fn garbage_near_the_top_of_the_address_space() {
    // At eb7be29, `fp + 8`, `fp + 16` and `anchor + anchor_fp` overflowed here (a panic in a
    // build with overflow checks); the walker now wraps and the reads fail the stack check.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let top: u64 = !7;
    // Interrupted in the interpreter with rbp at the top of the address space.
    assert_eq!(f.walk(regs(INTERP_LO, SP, top), 64), (vec![], Stop::BadInterpreterFrame));
    // Native code without an anchor, rbp there.
    f.put(SP, 0x77);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, top), 64), (vec![], Stop::NoJavaFrame));
    // An entry frame whose JavaCallWrapper pointer is there.
    let esp = SP + 4 * 8;
    let efp = esp + 0x40;
    f.put(efp - 48, u64::MAX - 40);
    let ret = f.code.call_stub_return;
    f.compiled_frame(SP, 4, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Bottom));
}
