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

/// AsyncGetCallTrace's `ticks_unknown_not_Java`, which hpm's handler gives too for a thread it
/// must not walk (a VM thread, or one the JVM has not set up yet).
pub const TICKS_UNKNOWN_NOT_JAVA: i32 = -3;

/// AsyncGetCallTrace's failure codes (`num_frames <= 0`), from HotSpot's forte.cpp.
pub fn asgct_error_name(code: i32) -> &'static str {
    match code {
        0 => "no_Java_frame",
        -1 => "no_class_load",
        -2 => "GC_active",
        TICKS_UNKNOWN_NOT_JAVA => "unknown_not_Java",
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

/// `stack=compare`: where AsyncGetCallTrace's frames start in `Captured::frames` (hpm's walk
/// fills the slots below).
pub const COMPARE_SPLIT: usize = MAX_FRAMES / 2;

/// Stack-walk outcome recorded with the sample.
pub const WALK_NOT_ATTEMPTED: i32 = i32::MIN;
/// Taken in the same stay in the kernel as the walked record before it on this thread (one
/// signal for several kernel-mode samples, delivered on the return to user mode): its user
/// stack is that record's, kept by the resolver when the record has `shares_walk`.
pub const WALK_SHARED: i32 = i32::MIN + 1;
/// Taken while another handler held the signal hpm sampled with (its notification went there),
/// found by the thread's first handler after hpm moved to another signal: no walk was made.
pub const WALK_SIGNAL_TAKEN: i32 = i32::MIN + 2;
/// At most this many periods of kernel time are expanded from one sample (`kernel_periods`).
pub const MAX_KERNEL_PERIODS: u32 = 1 << 16;

/// How many periods of a clock whose count is `value` a sample stands for, when `accounted`
/// of its count was stood for by earlier samples: the elapsed count in periods, rounded (the
/// timer fires on period boundaries, with jitter), at least 1 and at most
/// [`MAX_KERNEL_PERIODS`]. Returns it and the new accounted count.
pub fn periods_since(accounted: u64, value: u64, period: u64) -> (u32, u64) {
    let period = period.max(1);
    let elapsed = value.saturating_sub(accounted);
    let n = (elapsed.saturating_add(period / 2) / period).clamp(1, u64::from(MAX_KERNEL_PERIODS));
    // After a clamp, or a count behind what was accounted, start afresh from this sample.
    let next = if elapsed / period > n { value } else { accounted.saturating_add(n.saturating_mul(period)) };
    (n as u32, next)
}

/// The periods of the clock a thread spent in the kernel since its previous sample (kernel
/// time counted, not sampled): [`periods_since`] less the sample's own, `accounted` advanced.
pub fn kernel_periods(accounted: &mut u64, value: u64, period: u64) -> u32 {
    let (periods, next) = periods_since(*accounted, value, period);
    *accounted = next;
    periods.saturating_sub(1)
}

/// A thread's state when sampled, as JFR names them (`jdk.types.ThreadState`), plus
/// `STATE_IN_NATIVE` for a thread running or blocked in a native method. Index = the code in
/// [`Captured::state`]; 0 = no state (CPU samples: the thread was running).
pub const THREAD_STATES: [&str; 9] = [
    "",
    "STATE_RUNNABLE",
    "STATE_IN_NATIVE",
    "STATE_SLEEPING",
    "STATE_IN_OBJECT_WAIT",
    "STATE_IN_OBJECT_WAIT_TIMED",
    "STATE_PARKED",
    "STATE_PARKED_TIMED",
    "STATE_BLOCKED_ON_MONITOR_ENTER",
];

/// The [`THREAD_STATES`] code of a JVMTI thread state (GetThreadState's bits).
pub fn state_from_jvmti(bits: i32) -> u8 {
    const RUNNABLE: i32 = 0x4;
    const WAITING_WITH_TIMEOUT: i32 = 0x20;
    const SLEEPING: i32 = 0x40;
    const IN_OBJECT_WAIT: i32 = 0x100;
    const PARKED: i32 = 0x200;
    const BLOCKED_ON_MONITOR_ENTER: i32 = 0x400;
    const IN_NATIVE: i32 = 0x40_0000;
    let timed = bits & WAITING_WITH_TIMEOUT != 0;
    if bits & BLOCKED_ON_MONITOR_ENTER != 0 {
        8
    } else if bits & SLEEPING != 0 {
        3
    } else if bits & IN_OBJECT_WAIT != 0 {
        if timed {
            5
        } else {
            4
        }
    } else if bits & PARKED != 0 {
        if timed {
            7
        } else {
            6
        }
    } else if bits & IN_NATIVE != 0 {
        2
    } else if bits & RUNNABLE != 0 {
        1
    } else {
        0
    }
}

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
    /// Records after this one (`WALK_SHARED`) have its user stack (on a `WALK_SHARED` record
    /// itself: more of them follow).
    pub shares_walk: bool,
    /// Periods of the clock event the thread spent in the kernel since its previous sample,
    /// when kernel mode is counted but not sampled (`KernelMode::Counted`).
    pub kernel_periods: u32,
    /// The thread's state (a [`THREAD_STATES`] code), from wall-clock sampling; 0 = none.
    pub state: u8,
    /// The timer samplers' frames past [`MAX_FRAMES`] (`jstackdepth` up to
    /// [`MAX_DEEP_FRAMES`]), kept apart by the sink under this key; 0 = none. Signal-path
    /// records never have any.
    pub deep: u32,
    /// The sampler asked for fewer frames than the stack had (the stack is cut at
    /// `jstackdepth`), as the JVM told it.
    pub depth_cut: bool,
    pub frames: [CallFrame; MAX_FRAMES],
    /// Frame types reported by the JVM itself (the patched JVM's sampler); when false the
    /// resolver infers them.
    pub exact_kinds: bool,
    /// The frames are raw frames of hpm's own walker (`hotspot::raw_frames`: pcs and
    /// `Method*`s, tagged in `kinds`), named by the resolver; `num_frames` counts slots.
    pub vm_walk: bool,
    /// `vm_walk`: the raw stack's key, when the signal handler made it (the resolver makes it
    /// otherwise).
    pub raw_key: Option<RawKey>,
    /// How that walk ended (`hotspot::Stop` as u8; 0 = it reached the bottom of the stack).
    pub vm_stop: u8,
    /// `stack=compare`: AsyncGetCallTrace's `num_frames` for the same sample, its frames in
    /// the upper half of `frames` (from [`COMPARE_SPLIT`]); [`WALK_NOT_ATTEMPTED`] otherwise.
    pub asgct_frames: i32,
    pub kinds: [FrameKind; MAX_FRAMES],
    /// `data`: the sampled instruction's bytes and the registers before it ran (empty when not
    /// captured), decoded by the resolver into the address it touches.
    pub data: DataCapture,
    /// `sampler=chain` (read only in its sessions, whose records the chain drain writes whole):
    /// the record is an anchor, a deep stack copy walked for the tree's structure only, not a
    /// sample of the profile.
    pub chain_anchor: bool,
    /// `sampler=chain`: the stack depth (bytes from the thread's stack base to the activation
    /// address, `hotspot::FrameSink::addrs`) of each physical Java frame of the walk, in walk
    /// order; 0 where unknown (an interpreter frame being entered) or past [`CHAIN_DEPTHS`].
    pub depths: [u32; CHAIN_DEPTHS],
}

/// Java frames per sample at most (`jstackdepth`), for the samplers that walk off the signal
/// path (`jvmti`, `sps`): frames past [`MAX_FRAMES`] go to [`Captured::deep`].
pub const MAX_DEEP_FRAMES: usize = 4096;

/// Physical frames a `sampler=chain` record carries the depths of: an anchor's deeper frames
/// give no quadruples.
pub const CHAIN_DEPTHS: usize = 128;

/// The sampled instruction as the handler found it: up to 16 bytes at the interrupted IP (fewer
/// at a page end) and the general registers (`hpm_core::operand::Gprs` order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataCapture {
    pub code: [u8; 16],
    /// Bytes of `code` read (0: nothing captured for this sample).
    pub code_len: u8,
    pub regs: crate::operand::Gprs,
    /// The space of the address and, in the heap, the words around it (`data` with a heap
    /// layout; `heap.space` 0: not captured).
    pub heap: HeapCapture,
    /// The walk's first slot of the frame that holds the address, when it is on the stack
    /// (hpm's own walker only).
    pub stack_slot: Option<u32>,
}

/// Words copied below the address (and a few above it) for the backward scan.
pub const WINDOW: usize = 32;
/// The words at a candidate object start: mark, klass word, and the word after it (an
/// array's length without compressed class pointers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// 0: no candidate.
    pub at: u64,
    pub words: [u64; 3],
}

/// What the handler copied of the heap around a sample's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapCapture {
    /// A [`crate::model::Space`] code.
    pub space: u8,
    /// The address the handler computed (the resolver's decoding must agree with it).
    pub address: u64,
    /// Candidate headers: the start of the humongous object the address is in, the address
    /// minus the instruction's displacement (the paper's shortcut), the base register.
    pub heads: [Head; 3],
    /// The address of `window[0]`; `nwindow` words were read.
    pub window_at: u64,
    pub nwindow: u8,
    pub window: [u64; WINDOW],
}

impl Default for HeapCapture {
    fn default() -> Self {
        HeapCapture { space: 0, address: 0, heads: [Head::default(); 3], window_at: 0, nwindow: 0, window: [0; WINDOW] }
    }
}

impl HeapCapture {
    pub fn space(&self) -> crate::model::Space {
        crate::model::Space::from_u8(self.space)
    }

    /// The word at `addr` if the capture holds it (a candidate header or the window).
    pub fn word(&self, addr: u64) -> Option<u64> {
        for h in self.heads.iter().filter(|h| h.at != 0) {
            let i = addr.wrapping_sub(h.at) / 8;
            if addr >= h.at && i < 3 && addr.is_multiple_of(8) {
                return Some(h.words[i as usize]);
            }
        }
        let i = addr.wrapping_sub(self.window_at) / 8;
        (addr >= self.window_at && addr.is_multiple_of(8) && i < u64::from(self.nwindow).min(WINDOW as u64))
            .then(|| self.window[i as usize])
    }
}

impl Default for Captured {
    fn default() -> Self {
        Captured {
            raw: RawSample::default(),
            thread: 0,
            num_frames: WALK_NOT_ATTEMPTED,
            walk_from_caller: false,
            shares_walk: false,
            kernel_periods: 0,
            state: 0,
            deep: 0,
            depth_cut: false,
            frames: [CallFrame::default(); MAX_FRAMES],
            exact_kinds: false,
            vm_walk: false,
            raw_key: None,
            vm_stop: 0,
            asgct_frames: WALK_NOT_ATTEMPTED,
            kinds: [FrameKind::Unknown; MAX_FRAMES],
            data: DataCapture::default(),
            chain_anchor: false,
            depths: [0; CHAIN_DEPTHS],
        }
    }
}

/// Asks the CPU to bring the cache line of `p` in (a hint: nothing is read, nothing can fault).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address; SSE is part of
    // x86-64's baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Frames whose lines [`Captured::prefetch`] asks for: most stacks' whole walk.
const PREFETCH_FRAMES: usize = 32;
const _: () = assert!(PREFETCH_FRAMES <= MAX_FRAMES);

impl Captured {
    /// Brings in the lines resolving reads first, for a record resolved next: its fields lie
    /// apart in a record of ~10 KB that a handler wrote, maybe on the other core, and their
    /// first loads were a quarter of the resolver's own time (a perf annotate of lucene's
    /// steady state).
    #[inline]
    pub fn prefetch(&self) {
        prefetch(&self.raw.time);
        prefetch(&self.raw.user_ip);
        prefetch(&self.raw_key);
        prefetch(&self.num_frames);
        prefetch(&self.vm_walk);
        prefetch(self.kinds.as_ptr());
        // Four frames to a line.
        for f in self.frames[..PREFETCH_FRAMES].iter().step_by(4) {
            prefetch(f);
        }
    }

    /// Starts a perf sample's record in place (no allocation: the signal handler's path):
    /// the record, its thread and kernel periods, and every field a walk or capture sets
    /// reset to "not done".
    #[inline]
    pub fn begin_perf_sample(&mut self, raw: &RawSample, thread: u32, kernel_periods: u32) {
        self.raw.copy_used_from(raw);
        self.thread = thread;
        self.exact_kinds = false;
        self.vm_walk = false;
        self.raw_key = None;
        self.walk_from_caller = false;
        self.asgct_frames = WALK_NOT_ATTEMPTED;
        self.kernel_periods = kernel_periods;
        self.state = 0;
        self.deep = 0;
        self.depth_cut = false;
        self.shares_walk = false;
        self.data.code_len = 0;
        self.data.heap.space = 0;
        self.data.stack_slot = None;
    }

    pub fn java_frames(&self) -> &[CallFrame] {
        if self.num_frames > 0 {
            &self.frames[..(self.num_frames as usize).min(MAX_FRAMES)]
        } else {
            &[]
        }
    }
}

/// A walk's raw stack as the resolver knows it (made by `hotspot::raw_stack_key`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawKey {
    /// The 128-bit hash of the whole stack ([`crate::hash::Hash128`]: the first half a
    /// table's key, the second told apart beside the entry).
    pub hash: (u64, u64),
    /// The hash of the stack below the leaf frame (its callers), which `hash` is made from.
    pub callers: (u64, u64),
    /// The slots of the leaf frame: the callers' are the slots from here on.
    pub leaf_slots: u32,
    /// Whether any slot is an interpreted frame's (whose `Method*` the resolver checks).
    pub interpreted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jvmti_states_map_to_jfr_names() {
        let name = |bits| THREAD_STATES[state_from_jvmti(bits) as usize];
        assert_eq!(name(0x1 | 0x4), "STATE_RUNNABLE");
        assert_eq!(name(0x1 | 0x4 | 0x40_0000), "STATE_IN_NATIVE");
        assert_eq!(name(0x1 | 0x400), "STATE_BLOCKED_ON_MONITOR_ENTER");
        assert_eq!(name(0x1 | 0x80 | 0x20 | 0x40), "STATE_SLEEPING");
        assert_eq!(name(0x1 | 0x80 | 0x10 | 0x100), "STATE_IN_OBJECT_WAIT");
        assert_eq!(name(0x1 | 0x80 | 0x20 | 0x200), "STATE_PARKED_TIMED");
        assert_eq!(name(0x1 | 0x80 | 0x10 | 0x200), "STATE_PARKED");
        assert_eq!(name(0x2), "");
    }

    #[test]
    fn periods_follow_the_clock_without_drift() {
        let p = 1_000_000;
        let mut acc = 0;
        let mut total = 0;
        // Samples at jittered period boundaries; the thread was in the kernel for 3 periods
        // before the fourth sample and 10 before the last.
        for (value, want) in [(1_000_040, 1), (1_999_980, 1), (3_000_100, 1), (7_000_010, 4), (17_999_990, 11)] {
            let (n, next) = periods_since(acc, value, p);
            assert_eq!(n, want, "at {value}");
            acc = next;
            total += n;
        }
        assert_eq!(u64::from(total) * p, 18_000_000, "every period counted once");
        // A count behind the accounted one still makes one sample.
        assert_eq!(periods_since(5 * p, 4 * p, p).0, 1);
        // A huge jump is clamped.
        assert_eq!(periods_since(0, u64::MAX, p).0, MAX_KERNEL_PERIODS);
    }
}
