//! [`StackKind::Compare`] (`stack=compare`): hpm's walk is the record's stack; AsyncGetCallTrace's
//! of the same moment, in the upper half of the frames, is compared with it method by method
//! ([`Comparison`]).

use super::*;
use hpm_capture::hotspot::Stop;

impl SampleResolver {
    /// Pushes the walk's Java frames onto `stack` and, on a Java thread, counts how the two
    /// walks compare.
    pub(super) fn compare_stack(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        (walk, asgct): (&RawWalk, &Asgct),
        is_java: bool,
        stack: &mut Vec<Frame>,
    ) -> JavaStack {
        let before = stack.len();
        // The frames are compared: a copy apart from the shared one.
        let java = self.raw_walk_stack(rec, jm, c, walk, true, stack);
        if is_java {
            let room = MAX_FRAMES - COMPARE_SPLIT;
            let n = asgct.frames().min(room);
            let theirs: Vec<MethodIdx> = c.frames[COMPARE_SPLIT..COMPARE_SPLIT + n]
                .iter()
                .map(|f| self.method_idx(rec, jm, f.method_id))
                .collect();
            let ours: Vec<MethodIdx> = stack[before..].iter().map(|f| f.method).collect();
            let cut = walk.stop == Stop::Full as u8 || n >= room;
            self.stats.compare.record(&ours, &theirs, cut);
        }
        java
    }
}
