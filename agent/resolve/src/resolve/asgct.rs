//! [`StackKind::Asgct`]: AsyncGetCallTrace's frames (jmethodIDs and bytecode indexes, their
//! kinds inferred from the code map), or its error code as the reason there is no stack.

use super::*;

impl SampleResolver {
    /// Pushes ASGCT's frames of `c` onto `stack`; `(ip, jit)`: the sample's IP and whether it
    /// is in JIT code.
    pub(super) fn asgct_stack(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        a: &Asgct,
        (ip, jit): (u64, bool),
        stack: &mut Vec<Frame>,
    ) -> JavaStack {
        match *a {
            Asgct::Failed(AsgctError::UnknownNotJava) => JavaStack::NotJava,
            Asgct::Failed(e) => JavaStack::Missing(e.name()),
            // A walk restarted at the caller (return address taken from the stack pointer) is
            // only right where the code is frameless: a stub. In a compiled method's prologue
            // the frame may already be half built, the word at the stack pointer is not the
            // return address, and the "caller" stack can skip frames; such samples keep the
            // compiled method's exact frames and count as walks that failed.
            Asgct::Frames { from_caller: true, .. } if jit => JavaStack::Untrusted("in_compiled_prologue"),
            Asgct::Frames { from_caller, .. } => {
                let java = c.java_frames();
                // The walk started at the caller of the stub the IP is in (its leaf frame above).
                let mut kinds_ip = ip;
                if from_caller {
                    self.stats.from_caller += 1;
                    kinds_ip = 0;
                }
                let kinds = frame_kinds(&self.timeline.map, kinds_ip, java);
                self.push_call_frames(rec, jm, java.iter().copied().zip(kinds), stack);
                JavaStack::Found(None)
            }
        }
    }
}

/// Whether ASGCT's stack is cut: at `jstackdepth`, or filling the record (unless the frames
/// were not trusted: `jit` with a walk from the caller).
pub(super) fn truncated(a: &Asgct, jit: bool) -> bool {
    match *a {
        Asgct::Frames { n, from_caller, depth_cut } => {
            depth_cut || (usize::from(n) >= MAX_FRAMES && !(from_caller && jit))
        }
        Asgct::Failed(_) => false,
    }
}
