//! How each kind of frame is unwound: compiled (whole, prologue, epilogue), interpreted (built
//! or being entered), stubs, native code through the anchor or rbp, entry frames.

use super::*;

// 1. A compiled frame after its prologue, called by the interpreter, called by the call stub.

#[test]
fn compiled_then_interpreted_then_entry_frame() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    let ifp = f.interp_bottom(isp);
    assert_eq!(ifp, SP + 4 * 8 + INTERP_FP);
    let pc = a + BODY;
    let (frames, stop) = f.walk(regs(pc, SP, 0x1234), 64);
    assert_eq!(frames, vec![compiled(pc, M_A, true), bottom()]);
    assert_eq!(stop, Stop::Bottom);
    // The bytecode pointer keeps its low 32 bits; the sink took 2 + 1 slots.
    assert_eq!(frames[1], RawFrame::Interpreted { method: M_I, bcp: 0x3456_789a });
    assert_eq!(f.run(regs(pc, SP, 0x1234), 64).len, 3);
}

#[test]
fn compiled_frame_with_vtable_or_unknown_nmethod_test() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let pc = a + BODY;
    // JDK 17 without the kind byte: nmethods are told by their vtable.
    let vtable = 0x7f00_0000_1010;
    f.put(a - CODE_OFF, vtable);
    f.layout.nmethod_test = NmethodTest::Vtable(vtable);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom));
    f.layout.nmethod_test = NmethodTest::Vtable(vtable + 8);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, 0, true), bottom()], Stop::Bottom));
    f.layout.nmethod_test = NmethodTest::Unknown;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, 0, true), bottom()], Stop::Bottom));
}

// 2. Prologue: before the frame is complete, the instruction at pc says where the return
// address is.

#[test]
fn prologue_at_push_rbp() {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let pc = a + 0x10;
    f.put_bytes(pc, &[0x55]);
    // Nothing pushed yet: the return address at [sp], rbp still the caller's.
    f.put(SP, INTERP_RET);
    let ifp = f.interp_bottom(SP + 8);
    assert_eq!(f.walk(regs(pc, SP, ifp), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom));
}

#[test]
fn prologue_after_push_rbp() {
    // At `sub rsp, imm8`, `sub rsp, imm32` (after `push rbp`) and at `mov rbp, rsp`: the saved
    // rbp at [sp], the return address at [sp+8]; rbp in the register is not the caller's.
    for code in [&[0x48, 0x83, 0xec, 0x30][..], &[0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00], &[0x48, 0x89, 0xe5]] {
        let mut f = Fake::new();
        let a = f.nmethod(8, M_A);
        let pc = a + 0x11;
        f.put_bytes(pc - 1, &[0x55]);
        f.put_bytes(pc, code);
        let ifp = f.interp_bottom(SP + 16);
        f.put(SP, ifp);
        f.put(SP + 8, INTERP_RET);
        assert_eq!(
            f.walk(regs(pc, SP, 0x4321), 64),
            (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom),
            "{code:x?}"
        );
    }
}

#[test]
fn prologue_is_only_for_the_interrupted_frame() {
    // A return address before frame_complete (a call in a prologue, e.g. the stack bang's
    // slow path) is a call site in a whole frame: its frame size counts, not the bytes at pc.
    let mut f = Fake::new();
    let a = f.nmethod(2, M_A);
    let b = f.nmethod(4, M_B);
    let ret = b + 0x08;
    f.put_bytes(ret, &[0x55]);
    let bsp = f.compiled_frame(SP, 2, ret, 0);
    let isp = f.compiled_frame(bsp, 4, INTERP_RET, bsp + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let pc = a + BODY;
    assert_eq!(
        f.walk(regs(pc, SP, 0), 64),
        (vec![compiled(pc, M_A, true), compiled(ret, M_B, false), bottom()], Stop::Bottom)
    );
}

// 3. Epilogue: after the frame was torn down.

#[test]
fn epilogue_at_ret_and_return_poll() {
    // `ret`, `cmp rsp, [r15+d8]` (the return poll), `ja` to the poll stub followed by `ret`:
    // the return address at [sp], rbp already the caller's.
    for code in [&[0xc3][..], &[0x49, 0x3b, 0x67, 0x20], &[0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0xc3]] {
        let mut f = Fake::new();
        let a = f.nmethod(6, M_A);
        let pc = a + 0x80;
        f.put_bytes(pc, code);
        f.put(SP, INTERP_RET);
        let ifp = f.interp_bottom(SP + 8);
        assert_eq!(f.walk(regs(pc, SP, ifp), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom), "{code:x?}");
    }
}

#[test]
fn epilogue_at_pop_rbp() {
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let pc = a + 0x80;
    f.put_bytes(pc, &[0x5d]);
    let ifp = f.interp_bottom(SP + 16);
    f.put(SP, ifp);
    f.put(SP + 8, INTERP_RET);
    assert_eq!(f.walk(regs(pc, SP, 0x4321), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom));
}

#[test]
fn whole_frame_at_add_rsp_and_at_a_ja_without_ret() {
    // `add rsp, n` (the frame is still whole) and a `ja` that is not the return poll's: the
    // frame size counts.
    for code in [&[0x48, 0x83, 0xc4, 0x20][..], &[0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0x90]] {
        let mut f = Fake::new();
        let a = f.nmethod(6, M_A);
        let pc = a + 0x80;
        f.put_bytes(pc, code);
        let isp = f.compiled_frame(SP, 6, INTERP_RET, SP + 6 * 8 + INTERP_FP);
        f.interp_bottom(isp);
        assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom), "{code:x?}");
    }
}

// 4. Stubs without a frame size.

#[test]
fn frameless_stub() {
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, ret);
    let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    // The stub itself leaves no frame.
    assert_eq!(f.walk(regs(stub + 0x10, SP, 0), 64), (vec![compiled(ret, M_B, false), bottom()], Stop::Bottom));
}

#[test]
fn stub_on_rbp() {
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    f.put(SP, 0x4242); // not code
    let fp = SP + 4 * 8;
    let ifp = f.interp_bottom(fp + 16);
    f.put(fp, ifp);
    f.put(fp + 8, INTERP_RET);
    assert_eq!(f.walk(regs(stub + 0x10, SP, fp), 64), (vec![bottom()], Stop::Bottom));
}

#[test]
fn stub_with_nothing_to_return_to() {
    // No return address at sp, rbp below sp or far above it, no code address above sp: lost.
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    f.put(SP, 0x4242);
    f.put(SP + 4104, SP);
    f.put(SP + 4112, INTERP_RET);
    for fp in [SP - 16, SP + 4104] {
        assert_eq!(f.walk(regs(stub + 0x10, SP, fp), 64), (vec![], Stop::Lost), "fp {fp:#x}");
    }
}

#[test]
fn interrupted_stub_that_saved_registers() {
    // Interrupted in a stub that pushed registers and keeps no frame on rbp: the return
    // address is the first code address a few words above sp.
    let mut f = Fake::new();
    let stub = f.blob(KIND_STUB, 0, 0, 0);
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, 0x11);
    f.put(SP + 8, SP + 0x400); // a saved register holding a stack address
    f.put(SP + 16, ret);
    let isp = f.compiled_frame(SP + 24, 4, INTERP_RET, SP + 24 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    assert_eq!(f.walk(regs(stub + 0x10, SP, 0x99), 64), (vec![compiled(ret, M_B, false), bottom()], Stop::Bottom));
}

// 5. Native code.

#[test]
fn native_with_anchor() {
    for anchor_pc_known in [true, false] {
        let mut f = Fake::new();
        let b = f.nmethod(4, M_B);
        let call = b + BODY;
        let asp = SP + 0x100;
        let isp = f.compiled_frame(asp, 4, INTERP_RET, asp + 4 * 8 + INTERP_FP);
        f.interp_bottom(isp);
        f.thread.anchor_sp = asp;
        f.thread.anchor_fp = 0x99;
        if anchor_pc_known {
            f.thread.anchor_pc = call;
        } else {
            f.put(asp - 8, call);
        }
        // Garbage between: the native frames are not followed.
        f.put(SP, b + 0x44);
        assert_eq!(
            f.walk(regs(NATIVE_PC, SP, SP + 8), 64),
            (vec![compiled(call, M_B, false), bottom()], Stop::Bottom),
            "anchor pc known: {anchor_pc_known}"
        );
    }
}

#[test]
fn anchor_below_sp_is_not_used() {
    // The anchor names a frame below the interrupted sp: stale; the native frames are walked.
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    f.thread.anchor_sp = SP - 0x100;
    f.thread.anchor_pc = b + BODY;
    let ret = b + 0x48;
    f.put(SP, ret);
    let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, 0), 64), (vec![compiled(ret, M_B, false), bottom()], Stop::Bottom));
}

#[test]
fn native_without_anchor_through_rbp() {
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    // Two native frames on rbp, the second returns into compiled code.
    let fp1 = SP + 0x20;
    let fp2 = SP + 0x60;
    f.put(SP, 0x77); // not code: the leaf pushed something
    f.put(fp1, fp2);
    f.put(fp1 + 8, NATIVE_PC + 0x500);
    f.put(fp2, 0x1111);
    f.put(fp2 + 8, ret);
    let isp = f.compiled_frame(fp2 + 16, 4, INTERP_RET, fp2 + 16 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, fp1), 64), (vec![compiled(ret, M_B, false), bottom()], Stop::Bottom));
}

#[test]
fn native_leaf_without_anchor() {
    // A leaf that pushed nothing: the return address at sp.
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, ret);
    let isp = f.compiled_frame(SP + 8, 4, INTERP_RET, SP + 8 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, 0), 64), (vec![compiled(ret, M_B, false), bottom()], Stop::Bottom));
}

#[test]
fn native_without_java() {
    let mut f = Fake::new();
    // rbp chain of native frames that never returns into code, then a frame pointer going down.
    let fp1 = SP + 0x20;
    f.put(fp1, SP + 0x40);
    f.put(fp1 + 8, NATIVE_PC);
    f.put(SP + 0x40, SP);
    f.put(SP + 0x48, NATIVE_PC);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, fp1), 64), (vec![], Stop::NoJavaFrame));
    // A thread with no stack at all.
    assert_eq!(f.walk(regs(NATIVE_PC, SP, 0), 64), (vec![], Stop::NoJavaFrame));
}

#[test]
fn native_hop_only_once() {
    // Native code whose rbp chain returns into compiled code whose caller is native again:
    // one hop only (the second native region has no anchor of its own).
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, ret);
    f.compiled_frame(SP + 8, 4, NATIVE_PC + 8, 0);
    assert_eq!(f.walk(regs(NATIVE_PC, SP, 0), 64), (vec![compiled(ret, M_B, false)], Stop::Lost));
}

// 6. Entry frames with Java below.

#[test]
fn entry_frame_with_java_below() {
    for anchor_pc_known in [true, false] {
        let mut f = Fake::new();
        let a = f.nmethod(4, M_A);
        let c = f.nmethod(6, M_C);
        let call = c + BODY;
        // A (interrupted) <- interpreter (M_J) <- call stub (entry 1) ... VM frames ... <- C
        // <- interpreter (M_I) <- call stub (entry 2, bottom).
        let isp1 = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
        let esp1 = isp1 + INTERP_FP + 16;
        let asp = esp1 + 0x100;
        let anchor = (asp, if anchor_pc_known { call } else { 0 }, 0x5151);
        let efp1 = f.entry_frame(esp1, anchor);
        let ret = f.code.call_stub_return;
        f.interp_frame(isp1, M_J, BCP_J, ret, efp1);
        if !anchor_pc_known {
            f.put(asp - 8, call);
        }
        let isp2 = f.compiled_frame(asp, 6, INTERP_RET, asp + 6 * 8 + INTERP_FP);
        f.interp_bottom(isp2);
        let pc = a + BODY;
        let (frames, stop) = f.walk(regs(pc, SP, 0), 64);
        assert_eq!(
            frames,
            vec![compiled(pc, M_A, true), interpreted(M_J, BCP_J), compiled(call, M_C, false), bottom()],
            "anchor pc known: {anchor_pc_known}"
        );
        assert_eq!(stop, Stop::Bottom);
    }
}

#[test]
fn compiled_code_called_by_the_call_stub() {
    // Java called from the VM straight into compiled code: the compiled frame's saved rbp is
    // the call stub's.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let esp = SP + 4 * 8;
    let efp = f.entry_frame(esp, (0, 0, 0));
    let ret = f.code.call_stub_return;
    f.compiled_frame(SP, 4, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Bottom));
}

#[test]
fn entry_frame_wrapper_off_the_stack() {
    // A JavaCallWrapper pointer that is not on this stack: nothing below.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let esp = SP + 4 * 8;
    let efp = esp + 0x40;
    f.put(efp - 48, 0x1234_5678);
    let ret = f.code.call_stub_return;
    f.compiled_frame(SP, 4, ret, efp);
    let pc = a + BODY;
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Bottom));
    // The wrapper's own slot off the stack: lost.
    f.compiled_frame(SP, 4, ret, STACK_BASE + 0x100);
    assert_eq!(f.walk(regs(pc, SP, 0), 64), (vec![compiled(pc, M_A, true)], Stop::Lost));
}

#[test]
fn interpreter_entry_being_built() {
    // Interrupted in the interpreter before its frame is built: the Method* being entered is
    // in rbx, the return address the first code address above sp.
    let with_rbx = |pc, sp, fp| Regs { pc, sp, fp, method_reg: M_J };
    let entering = interpreted(M_J, 0);
    // Called from compiled code (rbp is not a frame pointer there).
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, 5); // a local
    f.put(SP + 8, 0x0800_0000); // a reference
    f.put(SP + 16, ret);
    let isp = f.compiled_frame(SP + 24, 4, INTERP_RET, SP + 24 + 4 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    let r = with_rbx(INTERP_LO + 0x10, SP, 0x99);
    assert_eq!(f.walk(r, 64), (vec![entering, compiled(ret, M_B, false), bottom()], Stop::Bottom));
    // The sink full at that frame.
    assert_eq!(f.walk(r, 0), (vec![], Stop::Full));
    // Called from the interpreter, after `push rbp; mov rbp, rsp`: the caller's fp is the word
    // rbp points at.
    let mut f = Fake::new();
    f.put(SP, 5);
    f.put(SP + 16, INTERP_RET);
    let ifp = f.interp_bottom(SP + 24);
    f.put(SP + 8, ifp);
    assert_eq!(f.walk(with_rbx(INTERP_LO + 0x10, SP, SP + 8), 64), (vec![entering, bottom()], Stop::Bottom));
    // No code address above sp: not set up.
    let f = Fake::new();
    assert_eq!(f.walk(with_rbx(INTERP_LO + 0x10, SP, SP - 8), 64), (vec![], Stop::BadInterpreterFrame));
}

// Found bugs: each test states what HotSpot emits and what the walk should give.

#[test]
fn c2_prologue_without_stack_bang_at_sub() {
    // MacroAssembler::verified_entry, stack_bang_size == 0 (a method without Java calls and
    // a small frame): `sub rsp, framesize-8` (forced imm32: 48 81 ec), `mov [rsp+framesize-16],
    // rbp` (48 89 6c 24 d8), no `push rbp`. Frame of 6 words.
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let sub = a + 0x10;
    f.put_bytes(sub, &[0x48, 0x81, 0xec, 0x28, 0x00, 0x00, 0x00]);
    f.put_bytes(sub + 7, &[0x48, 0x89, 0x6c, 0x24, 0x20]);
    // At the sub: nothing pushed, the return address at [sp], rbp the caller's.
    let ifp = f.interp_bottom(SP + 8);
    f.put(SP, INTERP_RET);
    f.put(SP + 8, 0x4444); // [sp+8]: the top of the caller's expression stack
    assert_eq!(f.walk(regs(sub, SP, ifp), 64), (vec![compiled(sub, M_A, true), bottom()], Stop::Bottom));
}

#[test]
fn c2_prologue_without_stack_bang_at_mov_rbp() {
    // At the mov: the frame is allocated (5 words below the return address), rbp not saved.
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let mov = a + 0x17;
    f.put_bytes(mov, &[0x48, 0x89, 0x6c, 0x24, 0x20]);
    let ifp = f.interp_bottom(SP + 6 * 8);
    f.put(SP + 5 * 8, INTERP_RET);
    f.put(SP, 0x4444);
    assert_eq!(f.walk(regs(mov, SP, ifp), 64), (vec![compiled(mov, M_A, true), bottom()], Stop::Bottom));
}

#[test]
fn nmethod_entry_barrier_in_prologue() {
    // C1 build_frame / C2 verified_entry: push rbp; sub rsp, n; then the entry barrier
    // `cmp dword [r15+d8], 0` (41 81 7f d8 imm32) and its jne, all before frame_complete.
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let pc = a + 0x18;
    f.put_bytes(a + 0x10, &[0x55, 0x48, 0x83, 0xec, 0x20]);
    f.put_bytes(pc, &[0x41, 0x81, 0x7f, 0x20, 0x00, 0x00, 0x00, 0x00]);
    let isp = f.compiled_frame(SP, 6, INTERP_RET, SP + 6 * 8 + INTERP_FP);
    f.interp_bottom(isp);
    f.put(SP, 0x4444); // a spill slot
    assert_eq!(f.walk(regs(pc, SP, 0x1234), 64), (vec![compiled(pc, M_A, true), bottom()], Stop::Bottom));
}
