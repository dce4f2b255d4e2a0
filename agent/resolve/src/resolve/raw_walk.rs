//! [`StackKind::RawWalk`]: hpm's own walker's raw slots (compiled frames' pcs and `Method*`s,
//! interpreted frames' `Method*`s and bytecode pointers), named by `walker`; how the walk
//! ended is counted when it did not reach the stack's bottom.

use super::*;
use hpm_capture::hotspot::Stop;

impl SampleResolver {
    /// Pushes the Java frames of `c`'s walk `w` onto `stack` (a stack named before only with
    /// `copy`: see [`Self::vm_java_frames`]).
    pub(super) fn raw_walk_stack(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        w: &RawWalk,
        copy: bool,
        stack: &mut Vec<Frame>,
    ) -> JavaStack {
        let before = stack.len();
        let shared = if w.slots > 0 { self.vm_java_frames(rec, jm, c, stack, copy) } else { None };
        if stack.len() == before && shared.as_ref().is_none_or(|s| s.is_empty()) {
            return JavaStack::Missing(if w.slots > 0 { "no_named_Java_frame" } else { Stop::from_u8(w.stop).name() });
        }
        let stop = Stop::from_u8(w.stop);
        // A VM thread's native-only walk (`cstack=`) has no Java stack to be partial.
        if stop != Stop::Bottom && !super::walker::native_only(c) {
            hpm_profile::model::count_reason(&mut self.stats.partial, stop.name(), 1);
        }
        JavaStack::Found(shared)
    }
}

/// Whether the walk's stack is cut: its slots full, or fewer asked for than the stack had.
pub(super) fn truncated(w: &RawWalk) -> bool {
    w.depth_cut || w.stop == Stop::Full as u8
}
