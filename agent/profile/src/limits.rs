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

/// Bytes of method names (class, name and descriptor of each distinct method) a JFR file may
/// hold per byte of its size, plus [`NAME_BYTES_SLACK`]. A method's entry takes a few bytes
/// and may name strings of up to [`MAX_NAME_BYTES`] held once in the file; every output names
/// each method, so thousands of methods named by long strings would cost thousands of times
/// the file. Real recordings hold well under one byte of names per byte of file.
pub const NAME_BYTES_PER_FILE_BYTE: u64 = 16;
pub const NAME_BYTES_SLACK: u64 = 1 << 20;

/// Bytes of a thread's name kept from a JFR file; a longer one is cut (with `...`). Java allows
/// any length, real names are tens of bytes; a thread's name is repeated in per-thread trees
/// and tables, so thousands of threads named by one long string would multiply it.
pub const MAX_THREAD_NAME_BYTES: usize = 256;

/// Distinct counters in one JFR file. The agent reads at most 8 with every sample; every sample
/// read keeps a value for each counter of the file, so chunks each declaring counters of their
/// own would make the samples times the chunks.
pub const MAX_FILE_COUNTERS: usize = 64;

/// Calls of context that `hpm ccmap` keeps below a call: longer call sequences are counted by
/// their innermost calls. 16 covers HotSpot's inlining depth (`MaxInlineLevel` is 15), the use
/// the Call Context Map was designed for; without a bound the map grows with the square of the
/// stack depth.
pub const CCMAP_MAX_CONTEXT: usize = 16;

/// Bytes of input per reference node of a Call Context Map (`hpm ccmap`), past
/// [`CCMAP_CONTEXT_SLACK`] nodes: a call gets a node for each of its up to
/// [`CCMAP_MAX_CONTEXT`] calls of context, so a stack that is a deep path of distinct methods
/// makes 32 nodes (some 80 bytes each) per frame, a few bytes of input. Real profiles share
/// their paths and recursion repeats its contexts: they make about one node per 10 bytes.
pub const CCMAP_INPUT_BYTES_PER_CONTEXT: u64 = 4;
pub const CCMAP_CONTEXT_SLACK: u64 = 16_384;

/// The reference nodes `hpm ccmap` makes at most for an input of `bytes` bytes.
pub fn ccmap_max_contexts(bytes: u64) -> usize {
    (bytes / CCMAP_INPUT_BYTES_PER_CONTEXT).saturating_add(CCMAP_CONTEXT_SLACK).try_into().unwrap_or(usize::MAX)
}

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
    /// More distinct counters than [`MAX_FILE_COUNTERS`].
    TooManyCounters { counters: usize },
    /// A Call Context Map would make more reference nodes than [`ccmap_max_contexts`].
    TooManyContexts { max: usize },
    /// The distinct methods' names add up to more than [`NAME_BYTES_PER_FILE_BYTE`] allows.
    MethodNamesTooLong { bytes: u64, file_bytes: u64 },
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
            LimitError::TooManyCounters { counters } => write!(
                f,
                "{counters} counters or more are more than hpm reads from one file ({MAX_FILE_COUNTERS}); the file is \
                 damaged, or joins recordings of different counters: read them one by one"
            ),
            LimitError::TooManyContexts { max } => write!(
                f,
                "its call context map would hold more than {max} contexts (one per \
                 {CCMAP_INPUT_BYTES_PER_CONTEXT} bytes of input): its stacks are long paths of distinct methods, and \
                 the map keeps {CCMAP_MAX_CONTEXT} calls of context for every call; hpm ccmap reads profiles whose \
                 stacks share their paths"
            ),
            LimitError::MethodNamesTooLong { bytes, file_bytes } => write!(
                f,
                "the methods' names add up to {bytes} bytes, more than hpm reads from {file_bytes} bytes of file \
                 ({NAME_BYTES_PER_FILE_BYTE} per byte, and 1 MiB); the file is damaged or made to exhaust memory"
            ),
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
