//! [`StackKind::JvmFrames`]: frames the JVM gave (GetStackTrace for the timer samplers and the
//! JVM's events, the patched JVM's samplers), each with the kind the JVM reported, and the
//! frames past the record kept apart in the sink.

use super::*;

/// The reason for an empty stack the JVM gave: ASGCT's name for one.
const NO_FRAMES: &str = "no_Java_frame";

impl SampleResolver {
    /// Pushes the JVM's frames of `c` onto `stack`, then `deep` (the record's frames past
    /// [`MAX_FRAMES`], root side last).
    pub(super) fn jvm_frames_stack(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        deep: &[(CallFrame, FrameKind)],
        stack: &mut Vec<Frame>,
    ) -> JavaStack {
        let java = c.java_frames();
        if java.is_empty() {
            return JavaStack::Missing(NO_FRAMES);
        }
        let kinds = c.kinds[..java.len()].iter().copied();
        self.push_call_frames(rec, jm, java.iter().copied().zip(kinds).chain(deep.iter().copied()), stack);
        JavaStack::Found(None)
    }
}

/// Makes `c` hold `frames` (jmethodID, bci, kind) as the JVM gave them.
#[cfg(test)]
pub(super) fn set_jvm_frames(c: &mut Captured, frames: &[(u64, i32, FrameKind)], depth_cut: bool) {
    for (i, &(m, bci, kind)) in frames.iter().enumerate() {
        c.frames[i] = CallFrame { lineno: bci, method_id: m };
        c.kinds[i] = kind;
    }
    c.stack = StackKind::JvmFrames(hpm_capture::capture::JvmFrames { n: frames.len() as u16, depth_cut, deep: 0 });
}
