//! The walker's native steps (`cstack=`): a frame of native or VM code is recorded and its
//! caller found with the libraries' unwind tables ([`NativeTables`]); where a step gives up, the
//! anchor of the current run of native frames, or one hop up the rbp chain, leads on to Java.

use super::{FrameSink, Memory, RawFrame, Stop, Walker};
use crate::native::{NativeStop, NativeTables};

/// The state of the walk's native steps: the anchor of the current run of native frames (the
/// thread's for the first run, an entry frame's below it), which no step passes and a step
/// that gives up falls back to; and whether the rbp hop was tried.
pub(super) struct NativeRun {
    pub section: Option<(u64, u64, u64)>,
    pub hop_used: bool,
}

/// What a native step gave: the caller's `(pc, sp, fp)`, or the walk's end.
pub(super) enum Step {
    Next(u64, u64, u64),
    End(Stop),
}

impl<M: Memory> Walker<'_, M> {
    /// One native frame at `(pc, sp, fp)`: recorded, then its caller (`exact`: reached through
    /// a return address; `found_java`: the walk recorded a Java frame before).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn native_step(
        &self,
        tables: &NativeTables,
        (pc, sp, fp): (u64, u64, u64),
        exact: bool,
        found_java: bool,
        run: &mut NativeRun,
        out: &mut FrameSink,
        in_stack: &impl Fn(u64, u64) -> bool,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Step {
        let slot = out.len;
        if !out.push_at(RawFrame::Native { pc, interrupted: !exact }, sp) {
            return Step::End(Stop::Full);
        }
        out.set_addr(slot, 0);
        out.native.frames = out.native.frames.saturating_add(1);
        // Under an anchor, the native frames end in the Java frame it names: a pc no
        // table covers goes to the anchor rather than the rbp rule (frame pointers
        // only: the rbp rule is all there is), and a step past the anchor's sp, or to
        // the thread's entry, would drop Java frames: refused. Without one (a VM
        // thread, a leaf call), a return address must lie in the code cache or a
        // library held (a garbage rbp chain leads elsewhere).
        let fp_rule = run.section.is_none() || tables.frame_pointers_only();
        let below_anchor = |s: u64| run.section.is_none_or(|(asp, _, _)| s <= asp);
        let believed =
            |p: u64| run.section.is_some() || self.is_code(p) || tables.frame_pointers_only() || tables.covers(p);
        // Interrupted in a leaf the tables have no rule for (hand-written assembly:
        // HotSpot's SpinPause, where Parallel GC's workers spin), the return address
        // is at sp when it returns into code a table or the code cache covers.
        let stepped = match tables.step_by(pc, sp, fp, exact, fp_rule, word) {
            Err(e @ (NativeStop::Refused | NativeStop::NoTable)) if !exact => match word(sp) {
                Some(r) if self.is_code(r) || tables.covers(r) => Ok((r, sp + 8, fp)),
                _ => Err(e),
            },
            s => s,
        };
        let gave_up = match stepped {
            // The thread's entry (a zero return address ends a frame-pointer chain).
            Ok((0, _, _)) | Err(NativeStop::Bottom) if run.section.is_none() => return Step::End(Stop::Bottom),
            Ok((p, s, f)) if p != 0 && s > sp && in_stack(s, 0) && below_anchor(s) && believed(p) => {
                if self.is_code(p) {
                    run.section = None; // back in Java: this run of native frames is done
                }
                return Step::Next(p, s, f);
            }
            Ok(_) | Err(NativeStop::Bottom) => NativeStop::Lost,
            Err(e) => e,
        };
        out.native.gave_up = Some(gave_up);
        // The frames so far stay; the anchor (or the rbp hop) leads on to Java.
        if let Some((asp, apc, afp)) = run.section.take().filter(|&(asp, _, _)| asp >= sp && in_stack(asp, 8)) {
            let Some((p, s, f)) = self.anchored(asp, apc, afp, word) else { return Step::End(Stop::Lost) };
            out.native.fell_back = true;
            return Step::Next(p, s, f);
        }
        if !run.hop_used {
            run.hop_used = true;
            if let Some((p, s, f)) = self.unwind_native(sp, fp, word) {
                out.native.fell_back = true;
                return Step::Next(p, s, f);
            }
        }
        Step::End(if found_java { Stop::Lost } else { Stop::NoJavaFrame })
    }
}
