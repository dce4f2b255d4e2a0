//! Native frames walked (`cstack=`): Java → VM and library frames → Java through an entry
//! frame, a native leaf under a native method's wrapper, a VM thread to its entry, a step that
//! gives up and the anchor that takes over, steps that would pass an anchor or follow a
//! garbage chain, and loops that end. Mostly with frame pointers only (`cstack=fp`); where the
//! tables matter, one library holds `N1`..`N3` with the rbp rule: the walker's part is what is
//! tested here, the tables' rules are `native`'s.

use super::*;
use crate::native::{Cfa, LibTable, Row};

/// Native pcs (outside the code cache and the interpreter): a VM function, a library's.
const N1: u64 = NATIVE_PC + 0x100;
const N2: u64 = NATIVE_PC + 0x200;
const N3: u64 = NATIVE_PC + 0x300;
/// A native pc no table covers (a library without one).
const UNCOVERED: u64 = NATIVE_PC + 0x10_0000;

fn native(pc: u64, interrupted: bool) -> RawFrame {
    RawFrame::Native { pc, interrupted }
}

impl Fake {
    /// As `new`, walking native frames by frame pointers only.
    fn with_native() -> Fake {
        Fake { native: Some(NativeTables::frame_pointers()), ..Fake::new() }
    }

    /// As `new`, walking native frames with tables: one library holds `N1`..`N3`, its rule
    /// rbp's (CFA = rbp + 16, rbp saved at CFA - 16).
    fn with_tables() -> Fake {
        let t = NativeTables::default();
        let rows = Box::new([Row { pc: 0, cfa_off: 16, fp_off: -16, cfa: Cfa::Fp }]);
        assert!(t.add(LibTable { start: NATIVE_PC, end: NATIVE_PC + 0x1000, bias: NATIVE_PC, rows }));
        Fake { native: Some(t), ..Fake::new() }
    }

    /// A native frame on rbp: the caller's rbp at `fp`, the return address above it.
    fn rbp_frame(&mut self, fp: u64, ret: u64, link: u64) {
        self.put(fp, link);
        self.put(fp + 8, ret);
    }
}

/// A Java native method's wrapper (an nmethod of `M_B`, 4 words) at `sp`, called from the
/// interpreter's bottom frame; returns its pc (a call site in its body).
fn wrapper_at(f: &mut Fake, sp: u64) -> u64 {
    let w = f.nmethod(4, M_B);
    let interp_fp = f.interp_bottom(sp + 32);
    f.compiled_frame(sp, 4, INTERP_RET, interp_fp);
    w + BODY
}

/// Java (`M_A`, interrupted) returns into the call stub, whose caller (VM code `N1`) was
/// called by a JNI library (`N2`) called by a native method's wrapper. `broken`: `N2`'s saved
/// rbp is lost (0). Returns the registers and the wrapper's pc.
fn jni_callback(f: &mut Fake, broken: bool) -> (Regs, u64) {
    let a = f.nmethod(4, M_A);
    let entry_sp = SP + 32;
    let entry_fp = entry_sp + 64;
    // The call stub's caller keeps the JavaCallWrapper: its frame spans it.
    let fp1 = entry_fp + 0x60;
    let fp2 = fp1 + 0x40;
    let wsp = fp2 + 16;
    let w = wrapper_at(f, wsp);
    let entry = f.entry_frame(entry_sp, (wsp, w, fp2));
    assert_eq!(entry, entry_fp);
    let ret = f.code.call_stub_return;
    f.compiled_frame(SP, 4, ret, entry_fp);
    f.rbp_frame(entry_fp, N1, fp1);
    f.rbp_frame(fp1, N2, if broken { 0 } else { fp2 });
    f.rbp_frame(fp2, w, 0x1234);
    (regs(a + BODY, SP, 0x4321), w)
}

#[test]
fn java_called_back_from_a_jni_library_keeps_the_native_frames_between() {
    let mut f = Fake::with_native();
    let (r, w) = jni_callback(&mut f, false);
    let a = r.pc;
    let o = f.run(r, 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(
        o.frames,
        vec![compiled(a, M_A, true), native(N1, false), native(N2, false), compiled(w, M_B, false), bottom()]
    );
    assert_eq!(o.stop, Stop::Bottom);
    assert_eq!(o.native, NativeWalk { frames: 2, gave_up: None, fell_back: false });
    // Without tables the entry frame's anchor crosses them, as before.
    f.native = None;
    let (frames, stop) = f.walk(r, 64);
    assert_eq!(frames, vec![compiled(a, M_A, true), compiled(w, M_B, false), bottom()]);
    assert_eq!(stop, Stop::Bottom);
}

#[test]
fn a_step_that_gives_up_below_an_entry_frame_falls_back_to_its_anchor() {
    let mut f = Fake::with_native();
    let (r, w) = jni_callback(&mut f, true);
    let o = f.run(r, 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(
        o.frames,
        vec![compiled(r.pc, M_A, true), native(N1, false), native(N2, false), compiled(w, M_B, false), bottom()],
        "the frames walked stay, the anchor leads on"
    );
    assert_eq!(o.stop, Stop::Bottom);
    assert_eq!(o.native, NativeWalk { frames: 2, gave_up: Some(NativeStop::NoTable), fell_back: true });
}

#[test]
fn a_native_leaf_sits_under_its_callers_down_to_the_native_methods_wrapper() {
    let mut f = Fake::with_native();
    // libc's write (interrupted) <- the library's function <- the wrapper.
    let fp1 = SP + 0x20;
    let fp2 = fp1 + 0x30;
    let wsp = fp2 + 16;
    let w = wrapper_at(&mut f, wsp);
    f.rbp_frame(fp1, N2, fp2);
    f.rbp_frame(fp2, w, 0x1234);
    // The thread's anchor names the wrapper, as the VM sets it on the call out of Java.
    f.thread.anchor_sp = wsp;
    f.thread.anchor_pc = w;
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![native(N1, true), native(N2, false), compiled(w, M_B, false), bottom()]);
    assert_eq!(o.stop, Stop::Bottom);
    assert_eq!(o.native, NativeWalk { frames: 2, gave_up: None, fell_back: false });

    // rbp lost at the leaf: the thread's anchor takes over at once, the leaf kept.
    let o = f.run(regs(N1, SP, 0), 64);
    assert_eq!(o.frames, vec![native(N1, true), compiled(w, M_B, false), bottom()]);
    assert_eq!(o.native, NativeWalk { frames: 1, gave_up: Some(NativeStop::NoTable), fell_back: true });
    assert_eq!(o.stop, Stop::Bottom);
}

#[test]
fn a_vm_thread_is_walked_to_its_entry() {
    let mut f = Fake::with_native();
    // No anchor, no Java: a GC worker's frames down to the thread's entry (no caller).
    let fp1 = SP + 0x20;
    let fp2 = fp1 + 0x40;
    let fp3 = fp2 + 0x40;
    f.rbp_frame(fp1, N2, fp2);
    f.rbp_frame(fp2, N3, fp3);
    f.rbp_frame(fp3, 0, 0);
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![native(N1, true), native(N2, false), native(N3, false)]);
    assert_eq!(o.stop, Stop::Bottom);
    assert_eq!(o.native.gave_up, None);

    // Its chain broken halfway: the frames found, the walk ends without Java.
    f.rbp_frame(fp2, N3, 8);
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.frames, vec![native(N1, true), native(N2, false), native(N3, false)]);
    assert_eq!(o.stop, Stop::NoJavaFrame);
    assert_eq!(o.native, NativeWalk { frames: 3, gave_up: Some(NativeStop::NoTable), fell_back: false });
}

#[test]
fn loops_and_long_chains_of_native_frames_end() {
    let mut f = Fake::with_native();
    // A frame whose saved rbp points back at itself, and one whose points below it.
    let fp1 = SP + 0x20;
    f.rbp_frame(fp1, N2, fp1);
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![native(N1, true), native(N2, false)]);
    assert_eq!(o.stop, Stop::NoJavaFrame);
    f.rbp_frame(fp1, N2, SP);
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.frames.len(), 2);
    assert_eq!(o.stop, Stop::NoJavaFrame);

    // A chain longer than the sink: it fills, and stops there.
    let mut fp = SP + 0x10;
    for _ in 0..100 {
        f.rbp_frame(fp, N2, fp + 0x20);
        fp += 0x20;
    }
    let o = f.run(regs(N1, SP, SP + 0x10), 16);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames.len(), 16);
    assert_eq!(o.stop, Stop::Full);
}

/// A frameless function of a library without a table (a JNI library whose file was deleted)
/// leaves rbp at the native method wrapper's frame: the rbp step lands past the anchor's sp,
/// in the wrapper's caller. Refused: the anchor leads on, and the wrapper (the Java native
/// method) stays, counted as lost.
#[test]
fn a_step_past_the_anchor_is_refused_and_the_anchor_leads_on() {
    for mut f in [Fake::with_native(), Fake::with_tables()] {
        let wsp = SP + 0x40;
        let w = wrapper_at(&mut f, wsp);
        // The wrapper's own rbp while it runs: its saved-rbp slot, the top of its frame.
        let wrapper_fp = wsp + 16;
        f.put(wsp - 8, w); // the leaf's return address into the wrapper, just below wsp
        f.thread.anchor_sp = wsp;
        f.thread.anchor_pc = w;
        let o = f.run(regs(N1, SP, wrapper_fp), 64);
        assert_eq!(o.violations, vec![]);
        assert_eq!(o.frames, vec![native(N1, true), compiled(w, M_B, false), bottom()]);
        assert_eq!(o.stop, Stop::Bottom);
        assert_eq!(o.native, NativeWalk { frames: 1, gave_up: Some(NativeStop::Lost), fell_back: true });
    }
}

/// Under an anchor a pc no table covers goes to the anchor, not to the rbp rule (whose chain
/// here would record a frame the anchor's Java frame does not call).
#[test]
fn under_an_anchor_a_pc_without_a_table_goes_to_the_anchor() {
    let mut f = Fake::with_tables();
    let fp1 = SP + 0x20;
    let wsp = fp1 + 0x40;
    let w = wrapper_at(&mut f, wsp);
    f.rbp_frame(fp1, N2, wsp - 16);
    f.rbp_frame(wsp - 16, w, 0x1234);
    f.thread.anchor_sp = wsp;
    f.thread.anchor_pc = w;
    let o = f.run(regs(UNCOVERED, SP, fp1), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![native(UNCOVERED, true), compiled(w, M_B, false), bottom()]);
    assert_eq!(o.native, NativeWalk { frames: 1, gave_up: Some(NativeStop::NoTable), fell_back: true });
    // A covered pc follows its table down to the wrapper.
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.frames, vec![native(N1, true), native(N2, false), compiled(w, M_B, false), bottom()]);
    assert_eq!(o.native, NativeWalk { frames: 2, gave_up: None, fell_back: false });
    // Frame pointers only: the rbp rule is all there is, bounded by the anchor.
    f.native = Some(NativeTables::frame_pointers());
    let o = f.run(regs(UNCOVERED, SP, fp1), 64);
    assert_eq!(o.frames, vec![native(UNCOVERED, true), native(N2, false), compiled(w, M_B, false), bottom()]);
    assert_eq!(o.native.gave_up, None);
}

/// Under an anchor the native frames end in Java: a zero return address (the end of an rbp
/// chain) is not the thread's entry there, and the anchor leads on.
#[test]
fn under_an_anchor_a_chains_end_is_not_the_threads_entry() {
    let mut f = Fake::with_native();
    let fp1 = SP + 0x20;
    let wsp = fp1 + 0x40;
    let w = wrapper_at(&mut f, wsp);
    f.rbp_frame(fp1, 0, 0);
    f.thread.anchor_sp = wsp;
    f.thread.anchor_pc = w;
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![native(N1, true), compiled(w, M_B, false), bottom()]);
    assert_eq!(o.native, NativeWalk { frames: 1, gave_up: Some(NativeStop::Lost), fell_back: true });
}

/// Without an anchor (a VM thread) the rbp rule still serves pcs no table covers, but a
/// return address outside the code cache and every library held ends the walk, counted: a
/// garbage chain is not recorded as native frames until the sink fills.
#[test]
fn without_an_anchor_a_return_address_nowhere_known_ends_the_walk() {
    let mut f = Fake::with_tables();
    let fp1 = SP + 0x20;
    let fp2 = fp1 + 0x40;
    let fp3 = fp2 + 0x40;
    f.rbp_frame(fp1, UNCOVERED, fp2);
    f.rbp_frame(fp2, N3, fp3);
    f.rbp_frame(fp3, 0, 0);
    let o = f.run(regs(N1, SP, fp1), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![native(N1, true)], "UNCOVERED is in no library held");
    assert_eq!(o.stop, Stop::NoJavaFrame);
    assert_eq!(o.native, NativeWalk { frames: 1, gave_up: Some(NativeStop::Lost), fell_back: false });
    // Interrupted in such a pc, the rbp rule leads to a library held, and on to the entry.
    let o = f.run(regs(UNCOVERED, SP, fp2), 64);
    assert_eq!(o.frames, vec![native(UNCOVERED, true), native(N3, false)]);
    assert_eq!(o.stop, Stop::Bottom);
    assert_eq!(o.native.gave_up, None);
    // A garbage chain, each link a word of stack: one frame, then the stop.
    let mut fp = SP + 0x10;
    for i in 0..100 {
        f.rbp_frame(fp, 0x1_0000 + i, fp + 0x20);
        fp += 0x20;
    }
    let o = f.run(regs(N1, SP, SP + 0x10), 64);
    assert_eq!(o.frames, vec![native(N1, true)]);
    assert_eq!(o.native.gave_up, Some(NativeStop::Lost));
}

#[test]
fn interrupted_in_a_leaf_without_rules_its_return_address_is_at_sp() {
    // The library's rows stop at N3 + 0x100: past it, hand-written code without rules (as
    // HotSpot's SpinPause), refused by the tables.
    let t = NativeTables::default();
    let rows = Box::new([Row { pc: 0, cfa_off: 16, fp_off: -16, cfa: Cfa::Fp }, Row::refuse(0x400)]);
    assert!(t.add(LibTable { start: NATIVE_PC, end: NATIVE_PC + 0x1000, bias: NATIVE_PC, rows }));
    let mut f = Fake { native: Some(t), ..Fake::new() };
    let leaf = NATIVE_PC + 0x480;
    let fp2 = SP + 0x40;
    let fp3 = fp2 + 0x40;
    f.put(SP, N2); // the leaf pushed nothing: its return address at sp
    f.rbp_frame(fp2, N3, fp3);
    f.rbp_frame(fp3, 0, 0);
    let o = f.run(regs(leaf, SP, fp2), 64);
    assert_eq!(o.violations, vec![]);
    assert_eq!(o.frames, vec![native(leaf, true), native(N2, false), native(N3, false)]);
    assert_eq!(o.stop, Stop::Bottom);
    assert_eq!(o.native.gave_up, None);
    // A word at sp that returns nowhere known: refused, the walk ends there.
    f.put(SP, UNCOVERED);
    let o = f.run(regs(leaf, SP, fp2), 64);
    assert_eq!(o.frames, vec![native(leaf, true)]);
    assert_eq!(o.native.gave_up, Some(NativeStop::Refused));
}
