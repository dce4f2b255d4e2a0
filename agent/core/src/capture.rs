//! The fixed-size record the signal handler fills for each sample: the decoded perf record plus
//! the raw Java stack from AsyncGetCallTrace. Plain data, no pointers the handler must chase
//! later, so batches of them can be recorded and replayed in tests.

use crate::model::FrameKind;
use crate::perf_record::RawSample;

/// Maximum Java frames kept per sample (`jstackdepth` is clamped to this).
pub const MAX_FRAMES: usize = 512;

/// Same layout as HotSpot's `ASGCT_CallFrame` on LP64: `{ jint lineno; jmethodID method_id; }`.
/// For Java frames `lineno` holds the bytecode index; -3 marks a native method.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallFrame {
    pub lineno: i32,
    pub method_id: u64,
}

pub const BCI_NATIVE_FRAME: i32 = -3;

/// AsyncGetCallTrace's failure codes (`num_frames <= 0`), from HotSpot's forte.cpp.
pub fn asgct_error_name(code: i32) -> &'static str {
    match code {
        0 => "no_Java_frame",
        -1 => "no_class_load",
        -2 => "GC_active",
        -3 => "unknown_not_Java",
        -4 => "not_walkable_not_Java",
        -5 => "unknown_Java",
        -6 => "not_walkable_Java",
        -7 => "unknown_state",
        -8 => "thread_exit",
        -9 => "deopt",
        -10 => "safepoint",
        _ => "unknown_error",
    }
}

/// Stack-walk outcome recorded with the sample.
pub const WALK_NOT_ATTEMPTED: i32 = i32::MIN;

#[derive(Clone, Copy)]
pub struct Captured {
    pub raw: RawSample,
    /// Index of the thread in the recording (assigned when the thread was attached).
    pub thread: u32,
    /// ASGCT's `num_frames`: > 0 frames, <= 0 an error code, [`WALK_NOT_ATTEMPTED`] when the
    /// record was not the one the signal was for (coalesced signals carry only their IP).
    pub num_frames: i32,
    /// The first walk failed in a frameless stub or method prologue and the frames come from
    /// a second walk started at the caller (return address at the stack pointer); the frame
    /// the IP is in is not among them.
    pub walk_from_caller: bool,
    pub frames: [CallFrame; MAX_FRAMES],
    /// Frame types reported by the JVM itself (the patched JVM's sampler); when false the
    /// resolver infers them.
    pub exact_kinds: bool,
    pub kinds: [FrameKind; MAX_FRAMES],
}

impl Default for Captured {
    fn default() -> Self {
        Captured {
            raw: RawSample::default(),
            thread: 0,
            num_frames: WALK_NOT_ATTEMPTED,
            walk_from_caller: false,
            frames: [CallFrame::default(); MAX_FRAMES],
            exact_kinds: false,
            kinds: [FrameKind::Unknown; MAX_FRAMES],
        }
    }
}

impl Captured {
    pub fn java_frames(&self) -> &[CallFrame] {
        if self.num_frames > 0 {
            &self.frames[..(self.num_frames as usize).min(MAX_FRAMES)]
        } else {
            &[]
        }
    }
}
