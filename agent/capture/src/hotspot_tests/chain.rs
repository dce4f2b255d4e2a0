//! Activation addresses (`FrameSink::addrs`): the same activation gives the same address
//! wherever in it the sample fell, so its stack depth can key CallerChaining's tree.

use super::*;

/// A 4-word nmethod (M_A) at `SP`, called by the interpreter's bottom frame (M_I).
fn compiled_over_interpreter() -> (Fake, u64, u64) {
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let isp = f.compiled_frame(SP, 4, INTERP_RET, SP + 4 * 8 + INTERP_FP);
    let ifp = f.interp_bottom(isp);
    (f, a, ifp)
}

#[test]
fn compiled_body_and_interpreter_frame() {
    let (f, a, ifp) = compiled_over_interpreter();
    let o = f.run(regs(a + BODY, SP, 0x1234), 64);
    assert_eq!(o.frames, vec![compiled(a + BODY, M_A, true), bottom()]);
    // The compiled frame's sp; the interpreter frame's fp, not its moving sp.
    assert_eq!(o.addrs, vec![SP, ifp]);
}

#[test]
fn prologue_gives_the_complete_frames_sp() {
    // At `push rbp`, nothing pushed yet: the return address at [sp]. The activation will have
    // sp = (sp + 8) - 4 words, which is what a sample in its body would give.
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let pc = a + 0x10;
    f.put_bytes(pc, &[0x55]);
    f.put(SP, INTERP_RET);
    let ifp = f.interp_bottom(SP + 8);
    let o = f.run(regs(pc, SP, ifp), 64);
    assert_eq!(o.frames, vec![compiled(pc, M_A, true), bottom()]);
    assert_eq!(o.addrs, vec![SP + 8 - 4 * 8, ifp]);
}

#[test]
fn epilogue_gives_the_complete_frames_sp() {
    // At `ret` after the frame was torn down: the return address at [sp].
    let mut f = Fake::new();
    let a = f.nmethod(4, M_A);
    let pc = a + BODY;
    f.put_bytes(pc, &[0xc3]);
    f.put(SP, INTERP_RET);
    let ifp = f.interp_bottom(SP + 8);
    let o = f.run(regs(pc, SP, ifp), 64);
    assert_eq!(o.frames, vec![compiled(pc, M_A, true), bottom()]);
    assert_eq!(o.addrs, vec![SP + 8 - 4 * 8, ifp]);
}

#[test]
fn callers_and_interpreter_entry() {
    // Compiled B calls the interpreter, which is entering M_J (frame not built): no address for
    // the entry; B's frame through its return address is its sp.
    let mut f = Fake::new();
    let b = f.nmethod(4, M_B);
    let ret = b + BODY;
    f.put(SP, 5);
    f.put(SP + 8, ret);
    let isp = f.compiled_frame(SP + 16, 4, INTERP_RET, SP + 16 + 4 * 8 + INTERP_FP);
    let ifp = f.interp_bottom(isp);
    let o = f.run(Regs { pc: INTERP_LO + 0x10, sp: SP, fp: 0x99, method_reg: M_J }, 64);
    assert_eq!(o.frames, vec![interpreted(M_J, 0), compiled(ret, M_B, false), bottom()]);
    assert_eq!(o.addrs, vec![0, SP + 16, ifp]);
}

#[test]
fn a_walk_that_stops_keeps_the_addresses_found() {
    // The stack ends (a snapshot of the top of it) just above the compiled frame: its return
    // address is not there, so the walk stops, but the frame and its address stay.
    let (mut f, a, _) = compiled_over_interpreter();
    f.thread.stack_base = SP + 3 * 8;
    let o = f.run(regs(a + BODY, SP, 0x1234), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![compiled(a + BODY, M_A, true)]);
    assert_eq!(o.addrs, vec![SP]);
    assert_eq!(o.stop, Stop::Lost);
}

impl Fake {
    /// The `len` bytes of the stack from `sp`, as a sample's user stack copy would hold them.
    fn stack_copy(&self, sp: u64, len: u64) -> Vec<u8> {
        let r = &self.mem.regions[0];
        let off = (sp - r.lo) as usize;
        r.bytes[off..off + len as usize].to_vec()
    }

    /// Walks a copy of `len` stack bytes from `regs.sp` with the live stack out of bounds.
    fn run_copy(&self, regs: Regs, len: u64) -> (Vec<RawFrame>, Vec<u64>, Stop) {
        let bytes = self.stack_copy(regs.sp, len);
        let (mut frames, mut kinds, mut addrs) = (vec![SENTINEL; 64], vec![SENTINEL_KIND; 64], vec![u64::MAX; 64]);
        // The live stack may not be read at all: only the copy.
        self.mem.floor.set(STACK_BASE);
        self.mem.top.set(STACK_BASE);
        self.mem.violations.borrow_mut().clear();
        let mut sink = FrameSink { addrs: Some(&mut addrs), ..FrameSink::new(&mut frames, &mut kinds) };
        let stop =
            walk_copy(&self.layout, &self.code, &self.mem, StackCopy { sp: regs.sp, bytes: &bytes }, regs, &mut sink);
        let len = sink.len;
        assert_eq!(*self.mem.violations.borrow(), vec![], "the live stack was read");
        let firsts: Vec<usize> = (0..len).filter(|&i| kinds[i] != SlotKind::Method).collect();
        (raw_frames(&frames[..len], &kinds[..len]).collect(), firsts.iter().map(|&i| addrs[i]).collect(), stop)
    }
}

#[test]
fn a_stack_copy_walks_as_far_as_it_reaches() {
    // B (4 words) called by A (6 words) called by the interpreter's bottom frame.
    let mut f = Fake::new();
    let a = f.nmethod(6, M_A);
    let b = f.nmethod(4, M_B);
    let a_sp = f.compiled_frame(SP, 4, a + BODY, 0x1111);
    let i_sp = f.compiled_frame(a_sp, 6, INTERP_RET, SP + 10 * 8 + INTERP_FP);
    let ifp = f.interp_bottom(i_sp);
    let r = regs(b + BODY, SP, 0x1234);
    let (b_frame, a_frame) = (compiled(b + BODY, M_B, true), compiled(a + BODY, M_A, false));
    // The whole stack copied: the same as the live walk.
    let whole = STACK_BASE - SP;
    assert_eq!(f.run_copy(r, whole), (vec![b_frame, a_frame, bottom()], vec![SP, a_sp, ifp], Stop::Bottom));
    // B's frame and A's: A's return address is the copy's last word.
    assert_eq!(f.run_copy(r, 10 * 8).0, vec![b_frame, a_frame]);
    assert_eq!(f.run_copy(r, 10 * 8).1, vec![SP, a_sp]);
    // B's frame only (A's return address is past the copy).
    assert_eq!(f.run_copy(r, 4 * 8), (vec![b_frame, a_frame], vec![SP, a_sp], Stop::Lost));
    assert_eq!(f.run_copy(r, 3 * 8), (vec![b_frame], vec![SP], Stop::Lost));
    // Nothing copied (the kernel could not read the stack): no walk; the sample's IP stays.
    assert_eq!(f.run_copy(r, 0), (vec![], vec![], Stop::Lost));
    // Registers that are not the copy's: nothing.
    let bytes = f.stack_copy(SP, 64);
    let (mut fr, mut k) = (vec![SENTINEL; 8], vec![SENTINEL_KIND; 8]);
    let stop = walk_copy(
        &f.layout,
        &f.code,
        &f.mem,
        StackCopy { sp: SP + 8, bytes: &bytes },
        r,
        &mut FrameSink::new(&mut fr, &mut k),
    );
    assert_eq!(stop, Stop::Lost);
}
