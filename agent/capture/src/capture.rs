//! The fixed-size record a sampler fills for each sample (the signal handler in place, with no
//! allocation): the decoded perf record, and the stack with a [`StackKind`] saying what it is
//! (not walked, shared with the record before, AsyncGetCallTrace's frames or error, hpm's
//! walker's raw slots, frames the JVM gave). Plain data, no pointers the handler must chase
//! later, so batches of them can be recorded and replayed in tests.

use crate::perf_record::RawSample;
use hpm_profile::model::FrameKind;

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

/// AsyncGetCallTrace's failure (`num_frames <= 0`), by HotSpot's codes in forte.cpp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsgctError {
    NoJavaFrame,
    NoClassLoad,
    GcActive,
    /// `ticks_unknown_not_Java`: a thread that is not a Java thread (a VM thread).
    UnknownNotJava,
    NotWalkableNotJava,
    /// `ticks_unknown_Java`: typically a frameless stub or a compiled method's prologue.
    UnknownJava,
    NotWalkableJava,
    UnknownState,
    ThreadExit,
    Deopt,
    Safepoint,
    /// A code forte.cpp does not have.
    Other,
}

impl AsgctError {
    /// The error of ASGCT's `num_frames` (a code <= 0).
    pub fn from_code(code: i32) -> AsgctError {
        match code {
            0 => AsgctError::NoJavaFrame,
            -1 => AsgctError::NoClassLoad,
            -2 => AsgctError::GcActive,
            -3 => AsgctError::UnknownNotJava,
            -4 => AsgctError::NotWalkableNotJava,
            -5 => AsgctError::UnknownJava,
            -6 => AsgctError::NotWalkableJava,
            -7 => AsgctError::UnknownState,
            -8 => AsgctError::ThreadExit,
            -9 => AsgctError::Deopt,
            -10 => AsgctError::Safepoint,
            _ => AsgctError::Other,
        }
    }

    /// forte.cpp's name (less its `ticks_` prefix): a drop reason.
    pub fn name(self) -> &'static str {
        match self {
            AsgctError::NoJavaFrame => "no_Java_frame",
            AsgctError::NoClassLoad => "no_class_load",
            AsgctError::GcActive => "GC_active",
            AsgctError::UnknownNotJava => "unknown_not_Java",
            AsgctError::NotWalkableNotJava => "not_walkable_not_Java",
            AsgctError::UnknownJava => "unknown_Java",
            AsgctError::NotWalkableJava => "not_walkable_Java",
            AsgctError::UnknownState => "unknown_state",
            AsgctError::ThreadExit => "thread_exit",
            AsgctError::Deopt => "deopt",
            AsgctError::Safepoint => "safepoint",
            AsgctError::Other => "unknown_error",
        }
    }
}

/// `stack=compare`: where AsyncGetCallTrace's frames start in `Captured::frames` (hpm's walk
/// fills the slots below).
pub const COMPARE_SPLIT: usize = MAX_FRAMES / 2;

/// What a record's stack is, and so what its `frames` (and `kinds` or `slots`) hold. Set by
/// whoever writes the record (the signal handler, a timer sampler, the events' processor);
/// the resolver dispatches on it, one kind to a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackKind {
    /// Not walked: a record coalesced into a signal that was for another one (only its IP),
    /// or no walker to walk it with.
    NotWalked,
    /// Taken while another handler held the signal hpm sampled with (its notification went
    /// there), found by the thread's first handler after hpm moved to another signal: no walk.
    SignalTaken,
    /// Taken in the same stay in the kernel as the walked record before it on this thread (one
    /// signal for several kernel-mode samples, delivered on the return to user mode): its user
    /// stack is that record's, kept by the resolver for it ([`Captured::shares_walk`]).
    SharedWithPrevious,
    /// A thread hpm must not walk.
    NotJava(NotJava),
    /// AsyncGetCallTrace's walk: frames in `frames[..n]` (kinds inferred by the resolver), or
    /// its error.
    Asgct(Asgct),
    /// hpm's own walker's raw slots in `frames` and `slots`.
    RawWalk(RawWalk),
    /// Frames the JVM gave (GetStackTrace, the patched JVM's samplers): `frames` with their
    /// kinds, as the JVM told them, in `kinds`.
    JvmFrames(JvmFrames),
    /// `stack=compare`: hpm's walk in the slots below [`COMPARE_SPLIT`], AsyncGetCallTrace's of
    /// the same moment from there on; the walk is the record's stack, the pair is counted.
    Compare { walk: RawWalk, asgct: Asgct },
}

/// Why a thread was not walked ([`StackKind::NotJava`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotJava {
    /// The handler may not enter the JVM on it: a VM thread, or one the JVM has not set up yet.
    NotEntered,
    /// The JVM gave it no JNI environment: not a Java thread.
    NoEnv,
}

/// AsyncGetCallTrace's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asgct {
    Frames {
        /// Frames filled (> 0).
        n: u16,
        /// The first walk failed in a frameless stub or method prologue and the frames come
        /// from a second walk started at the caller (return address at the stack pointer); the
        /// frame the IP is in is not among them.
        from_caller: bool,
        /// Every frame asked for was filled: the stack is cut at `jstackdepth` (or ends there).
        depth_cut: bool,
    },
    Failed(AsgctError),
}

impl Asgct {
    /// The outcome of ASGCT's `num_frames`.
    pub fn from_num_frames(num_frames: i32, from_caller: bool, depth_cut: bool) -> Asgct {
        match u16::try_from(num_frames) {
            Ok(n) if n > 0 => Asgct::Frames { n, from_caller, depth_cut },
            _ => Asgct::Failed(AsgctError::from_code(num_frames)),
        }
    }

    /// Frames filled (0 when it failed).
    pub fn frames(&self) -> usize {
        match *self {
            Asgct::Frames { n, .. } => usize::from(n),
            Asgct::Failed(_) => 0,
        }
    }
}

/// hpm's walker's raw stack ([`crate::hotspot::FrameSink`]): `slots` slots of `frames`, each
/// tagged in `Captured::slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawWalk {
    pub slots: u16,
    /// How the walk ended (`hotspot::Stop` as u8; 0 = it reached the bottom of the stack).
    pub stop: u8,
    /// The raw stack's key, when the signal handler made it (the resolver makes it otherwise).
    pub key: Option<RawKey>,
    /// The walk was asked for fewer slots than the stack had (the JVM events' depth).
    pub depth_cut: bool,
}

/// Frames the JVM gave: `frames[..n]`, their kinds in `Captured::kinds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JvmFrames {
    pub n: u16,
    /// The sampler asked for fewer frames than the stack had (the stack is cut at
    /// `jstackdepth`), as the JVM told it.
    pub depth_cut: bool,
    /// Frames past [`MAX_FRAMES`] (`jstackdepth` up to [`MAX_DEEP_FRAMES`]), kept apart by the
    /// sink under this key; 0 = none.
    pub deep: u32,
}

/// A slot of hpm's walker's raw stack: what its [`CallFrame`] holds. The values are those of
/// the [`FrameKind`]s the slots were once tagged with (raw stack keys hash them).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// A compiled frame's pc (`method_id`), `lineno` 1 when it is the frame interrupted.
    Pc = FrameKind::JitCompiled as u8,
    /// A compiled frame's `Method*` (after its pc); also a slot not filled.
    Method = FrameKind::Unknown as u8,
    /// An interpreted frame's `Method*`, with its bytecode pointer's low 32 bits in `lineno`.
    Interpreted = FrameKind::Interpreted as u8,
    /// A native frame's pc (`method_id`; `cstack=`), `lineno` 1 when it is the frame
    /// interrupted: a library's code or the JVM's own, named by the resolver's symbols.
    Native = FrameKind::Native as u8,
}

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

/// One sample as its sampler captured it: what is common to all (the perf record, or the
/// part of it a timer sampler fills, and the thread), the stack with [`StackKind`] saying what
/// it is, and what only some samplers fill. Fixed-size and `Copy`: written in place in a
/// preallocated batch slot by the signal handler, which never allocates.
#[derive(Clone, Copy)]
pub struct Captured {
    pub raw: RawSample,
    /// Index of the thread in the recording (assigned when the thread was attached).
    pub thread: u32,
    /// What `frames` (with `kinds` or `slots`) hold.
    pub stack: StackKind,
    /// Records after this one ([`StackKind::SharedWithPrevious`]) have its user stack (on
    /// such a record itself: more of them follow).
    pub shares_walk: bool,
    pub frames: [CallFrame; MAX_FRAMES],
    /// [`StackKind::JvmFrames`]: each frame's type as the JVM reported it.
    pub kinds: [FrameKind; MAX_FRAMES],
    /// [`StackKind::RawWalk`] and [`StackKind::Compare`]: what each slot of the walk holds.
    pub slots: [SlotKind; MAX_FRAMES],
    /// Perf samplers with kernel mode counted but not sampled (`KernelMode::Counted`): periods
    /// of the clock event the thread spent in the kernel since its previous sample.
    pub kernel_periods: u32,
    /// Wall-clock sampling: the thread's state (a [`THREAD_STATES`] code); 0 = none.
    pub state: u8,
    /// The mounted virtual thread's `java.lang.Thread` id (`Thread.threadId()`), when the
    /// sampled thread was a carrier running one (JDK 21+); 0 = none (a platform thread, or
    /// not known).
    pub vthread: u64,
    /// `data`: the sampled instruction's bytes and the registers before it ran (empty when not
    /// captured), decoded by the resolver into the address it touches.
    pub data: DataCapture,
    /// `sampler=chain` only (read in its sessions, whose records the chain drain writes whole).
    pub chain: ChainMarks,
}

/// What `sampler=chain` adds to a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainMarks {
    /// The record is an anchor, a deep stack copy walked for the tree's structure only, not a
    /// sample of the profile.
    pub anchor: bool,
    /// The stack depth (bytes from the thread's stack base to the activation address,
    /// `hotspot::FrameSink::addrs`) of each physical Java frame of the walk, in walk order; 0
    /// where unknown (an interpreter frame being entered) or past [`CHAIN_DEPTHS`].
    pub depths: [u32; CHAIN_DEPTHS],
}

/// Java frames per sample at most (`jstackdepth`), for the samplers that walk off the signal
/// path (`jvmti`, `sps`): frames past [`MAX_FRAMES`] go to [`Captured::deep`].
pub const MAX_DEEP_FRAMES: usize = 4096;

/// Physical frames a `sampler=chain` record carries the depths of: an anchor's deeper frames
/// give no quadruples.
pub const CHAIN_DEPTHS: usize = 128;

/// The sampled instruction as the handler found it: up to 16 bytes at the interrupted IP (fewer
/// at a page end) and the general registers (`hpm_capture::operand::Gprs` order).
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
    /// A [`hpm_profile::model::Space`] code.
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
    pub fn space(&self) -> hpm_profile::model::Space {
        hpm_profile::model::Space::from_u8(self.space)
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
            stack: StackKind::NotWalked,
            shares_walk: false,
            frames: [CallFrame::default(); MAX_FRAMES],
            kinds: [FrameKind::Unknown; MAX_FRAMES],
            slots: [SlotKind::Method; MAX_FRAMES],
            kernel_periods: 0,
            state: 0,
            vthread: 0,
            data: DataCapture::default(),
            chain: ChainMarks { anchor: false, depths: [0; CHAIN_DEPTHS] },
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
        prefetch(&self.stack);
        prefetch(self.slots.as_ptr());
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
        self.stack = StackKind::NotWalked;
        self.kernel_periods = kernel_periods;
        self.state = 0;
        self.vthread = 0;
        self.shares_walk = false;
        self.data.code_len = 0;
        self.data.heap.space = 0;
        self.data.stack_slot = None;
    }

    /// The Java frames with their meaning given by [`Self::stack`]: ASGCT's or the JVM's.
    pub fn java_frames(&self) -> &[CallFrame] {
        let n = match self.stack {
            StackKind::Asgct(a) => a.frames(),
            StackKind::JvmFrames(f) => usize::from(f.n),
            _ => 0,
        };
        &self.frames[..n.min(MAX_FRAMES)]
    }

    /// hpm's walker's raw stack, its slots and their tags (for a walk or a compared pair).
    pub fn raw_walk(&self) -> Option<(&RawWalk, &[CallFrame], &[SlotKind])> {
        match &self.stack {
            StackKind::RawWalk(w) | StackKind::Compare { walk: w, .. } => {
                let n = usize::from(w.slots).min(MAX_FRAMES);
                Some((w, &self.frames[..n], &self.slots[..n]))
            }
            _ => None,
        }
    }

    /// The key of the sink's frames past [`MAX_FRAMES`] (0: none).
    pub fn deep(&self) -> u32 {
        match self.stack {
            StackKind::JvmFrames(f) => f.deep,
            _ => 0,
        }
    }
}
/// A walk's raw stack as the resolver knows it (made by `hotspot::raw_stack_key`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawKey {
    /// The 128-bit hash of the whole stack ([`hpm_profile::hash::Hash128`]: the first half a
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
    fn asgct_results_become_typed_outcomes() {
        assert_eq!(Asgct::from_num_frames(3, true, false), Asgct::Frames { n: 3, from_caller: true, depth_cut: false });
        assert_eq!(Asgct::from_num_frames(0, false, false), Asgct::Failed(AsgctError::NoJavaFrame));
        assert_eq!(Asgct::from_num_frames(-3, false, false), Asgct::Failed(AsgctError::UnknownNotJava));
        assert_eq!(Asgct::from_num_frames(-10, false, false).frames(), 0);
        assert_eq!(AsgctError::from_code(-6).name(), "not_walkable_Java");
        assert_eq!(AsgctError::from_code(-42).name(), "unknown_error");
    }

    #[test]
    fn a_record_reads_its_frames_by_its_kind() {
        let mut c = Captured::default();
        assert!(c.java_frames().is_empty() && c.raw_walk().is_none());
        c.stack = StackKind::RawWalk(RawWalk { slots: 3, stop: 0, key: None, depth_cut: false });
        assert!(c.java_frames().is_empty(), "raw slots are not Java frames");
        assert_eq!(c.raw_walk().map(|(_, f, s)| (f.len(), s.len())), Some((3, 3)));
        c.stack = StackKind::JvmFrames(JvmFrames { n: 2, depth_cut: false, deep: 7 });
        assert_eq!((c.java_frames().len(), c.deep()), (2, 7));
        assert!(c.raw_walk().is_none());
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
