//! The bounds hpm's readers and analyses put on untrusted input. Every reader and analysis is
//! linear in its input; these limits keep the constants sane and refuse what no real profile
//! produces, with one line that names the limit (README, "Limits").

use std::fmt;

/// Frames in one stack: JFR stack traces and collapsed-stack lines. JVMs record at most a few
/// thousand (the JDK 2048, hpm's `jstackdepth` 4096); a million leaves room for anything real.
pub const MAX_STACK_DEPTH: usize = 1_000_000;

/// Bytes of one name read from a JFR file (method, class, symbol). The class file format caps
/// names at 65,535 bytes; the limit keeps a name that thousands of frames share from being
/// copied into every one of them.
pub const MAX_NAME_BYTES: usize = 65_536;

/// Calls of context that `hpm ccmap` keeps below a call: longer call sequences are counted by
/// their innermost calls. 16 covers HotSpot's inlining depth (`MaxInlineLevel` is 15), the use
/// the Call Context Map was designed for; without a bound the map grows with the square of the
/// stack depth.
pub const CCMAP_MAX_CONTEXT: usize = 16;

/// Bytes of compiled code decoded from one file (`hpm.CompiledCode`, for `hpm report
/// --instructions`): the agent writes the code its samples touched, a few MB per chunk; past
/// this, blobs are kept without their bytes (a forged file could name one huge pooled string
/// from many events).
pub const MAX_CODE_BYTES: usize = 256 << 20;

/// A limit an input went over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitError {
    /// A stack has more frames than [`MAX_STACK_DEPTH`].
    StackTooDeep { frames: u64 },
    /// A name is longer than [`MAX_NAME_BYTES`].
    NameTooLong { bytes: usize },
    /// A sum (sample counts, event weights or a counter) does not fit in 64 bits.
    SumOverflow { what: String },
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::StackTooDeep { frames } => write!(
                f,
                "a stack of {frames} frames is deeper than hpm reads ({MAX_STACK_DEPTH} frames); \
                 record with a smaller stack depth"
            ),
            LimitError::NameTooLong { bytes } => {
                write!(f, "a name of {bytes} bytes is longer than hpm reads ({MAX_NAME_BYTES} bytes)")
            }
            LimitError::SumOverflow { what } => {
                write!(f, "the {what} add up to more than {} (2^64 - 1); the file is damaged", u64::MAX)
            }
        }
    }
}

impl std::error::Error for LimitError {}

/// `a + b`, or [`LimitError::SumOverflow`] naming `what`.
pub fn checked_sum(a: u64, b: u64, what: &str) -> Result<u64, LimitError> {
    a.checked_add(b).ok_or_else(|| LimitError::SumOverflow { what: what.to_string() })
}
