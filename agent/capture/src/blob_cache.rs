//! What hpm's walker learnt of the code blobs it walked through, kept for the next samples
//! ("Agent cost per sample").
//!
//! Finding the blob of a pc costs the walker a read of the code heap's segment map (one or more
//! hops back), of the block header and of the blob's header, and for an nmethod of its
//! `Method*`: three or four cache lines per frame that the program evicted since the last
//! sample, half of the signal handler's time at 30 frames (a frame-pointer profile of xalan's
//! steady state: the segment map's byte and the block header's `used` flag were its two
//! costliest loads). The pcs of a thread's frames, though, come back sample after sample (the
//! callers of the hot code, the hot loops), and the blob of a code-heap segment stays the same
//! until the JVM frees it. So the walker keeps what it takes from a blob (frame size, the
//! prologue's end, `Method*`, nmethod or not) in two places:
//! - [`BlobCache`], shared by all threads, by segment;
//! - [`WalkMemo`], each thread's last walk, by stack address and return address: consecutive
//!   samples of a thread share the bottom of their stacks, and the memo's entries lie together
//!   where the shared cache's are scattered (a miss per frame: with the shared cache alone,
//!   its loads were a fifth of the handler's time on xalan).
//!
//! A blob is freed only after the JVM has made it not entrant (nmethods: then a zombie, flushed
//! at a later sweep, JDK 17; unlinked, then flushed after a handshake, JDK 21+) and told JVMTI
//! agents (`CompiledMethodUnload`), and new code is announced (`CompiledMethodLoad`,
//! `DynamicCodeGenerated`), so the agent moves the cache to a new *epoch* at each unload, at
//! every collection's end and at each session's start (an entry is used only in the epoch it
//! was written in), and at each load clears the entries of the segments the new code covers
//! ([`BlobCache::forget_range`]). Nothing orders those events before the memory's reuse: the
//! VM's service thread posts them after the fact, so a blob freed and its memory given to new
//! code that runs and is sampled before the events arrive would be walked with the old blob's
//! facts for that window (at worst a wrong frame: the walker checks every address it reads,
//! and the processor names compiled frames by pc from the code map, not from these facts).
//!
//! A segment's last bytes may lie past its blob's end (padding, no blob's): an entry keeps how
//! many bytes of its segment are the blob's, and a pc past them is looked up in the code heap
//! (where it is found in no blob), as a walk without the cache would.
//!
//! Entries are written and read by the signal handlers of every thread at once, without a
//! lock: each is a sequence lock (an odd count while it is written; a reader that sees the
//! count change or odd takes the slow path, a writer that finds it odd or loses the race to
//! claim it skips the write). Direct-mapped by segment: a collision replaces the entry.

use crate::sync::{fence, AtomicU32, AtomicU64, Ordering};

/// What a walk needs of the blob at a pc, for every pc of one segment of the code heap (a
/// segment belongs to one blob: blocks are whole segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameFacts {
    /// The frame's size in words (return address and saved rbp included); 0 for a stub without
    /// a frame size.
    pub frame_words: u64,
    /// The nmethod's `Method*` (0 when the blob is not an nmethod).
    pub method: u64,
    pub is_nmethod: bool,
    /// Bytes from the segment's start to the first pc at which the frame is complete, at most
    /// the segment's size: a pc of the segment is in the prologue when its offset is below.
    /// (Only an interrupted frame asks; the memo's frames, stopped at calls, keep 0.)
    pub complete: u64,
    /// Bytes from the segment's start that lie in the blob, at most the segment's size: a pc
    /// of the segment at or past them is in the padding after the blob's end, no blob's.
    /// (The memo's exact pcs were checked when recorded: it keeps none and gives `u64::MAX`.)
    pub valid: u64,
}

/// Entries (a power of two): 128 KB, by code-heap segment (64-128 bytes each).
pub const ENTRIES: usize = 4096;

/// `info`'s layout: the frame size (16 bits: the walker takes none above 2^16 words), the
/// nmethod flag, the prologue's end in the segment (15 bits: segments are 64-128 bytes), the
/// epoch in the upper half.
const WORDS_BITS: u32 = 16;
const NMETHOD_BIT: u64 = 1 << WORDS_BITS;
const COMPLETE_SHIFT: u32 = WORDS_BITS + 1;
const COMPLETE_MAX: u64 = (1 << (32 - COMPLETE_SHIFT)) - 1;

/// The largest segment whose facts fit an entry (`complete` up to its size).
pub const MAX_SEGMENT_LOG2: u32 = 14;

/// `facts` packed into an entry's low 32 bits; None when they do not fit.
fn pack(facts: FrameFacts) -> Option<u64> {
    if facts.frame_words >= 1 << WORDS_BITS || facts.complete > COMPLETE_MAX {
        return None;
    }
    Some(facts.frame_words | if facts.is_nmethod { NMETHOD_BIT } else { 0 } | facts.complete << COMPLETE_SHIFT)
}

fn unpack(info: u64, method: u64, valid: u64) -> FrameFacts {
    FrameFacts {
        frame_words: info & (NMETHOD_BIT - 1),
        method,
        is_nmethod: info & NMETHOD_BIT != 0,
        complete: (info >> COMPLETE_SHIFT) & COMPLETE_MAX,
        valid,
    }
}

/// An entry's `method` word: the `Method*` (a user-space address, below 2^48) with `valid`
/// above it; None when they do not fit.
const METHOD_BITS: u32 = 48;

fn pack_method(facts: &FrameFacts) -> Option<u64> {
    (facts.method >> METHOD_BITS == 0 && facts.valid < 1 << (64 - METHOD_BITS))
        .then_some(facts.method | facts.valid << METHOD_BITS)
}

struct Entry {
    /// Even: the entry is whole; odd: a writer is inside.
    seq: AtomicU64,
    pc: AtomicU64,
    method: AtomicU64,
    info: AtomicU64,
}

impl Entry {
    /// Writes the entry under its sequence lock: claims it (false, nothing written, when
    /// another writer is inside or claims it first), runs `stores`, releases it.
    fn write(&self, stores: impl FnOnce(&Entry)) -> bool {
        let seq = self.seq.load(Ordering::Relaxed);
        // Acquire: the last writer's stores (released with the even count read here) come
        // before this writer's, so a reader never finds this one's key with that one's facts
        // (loom found that interleaving with a relaxed claim).
        if seq & 1 != 0 || self.seq.compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return false;
        }
        // A reader that sees any store below sees the odd count too.
        fence(Ordering::Release);
        stores(self);
        self.seq.store(seq + 2, Ordering::Release);
        true
    }
}

pub struct BlobCache {
    /// A power of two of them.
    entries: Box<[Entry]>,
    /// log2 of their number.
    bits: u32,
    /// Starts at 1: an entry never written (epoch 0) matches no epoch.
    epoch: AtomicU32,
    /// Moves with `epoch` and at every load of new code: a thread's last walk
    /// ([`WalkMemo`]) is used only in the memo epoch it ran in. A load clears the shared
    /// entries of its own range only ([`Self::forget_range`]); the memos' entries, each
    /// thread's own, cannot be cleared from the loading thread.
    memo_epoch: AtomicU32,
}

impl Default for BlobCache {
    fn default() -> Self {
        BlobCache::with_entries(ENTRIES)
    }
}

impl BlobCache {
    /// A cache of `n` entries (rounded up to a power of two).
    pub fn with_entries(n: usize) -> BlobCache {
        let n = n.max(1).next_power_of_two();
        let entry = || Entry {
            seq: AtomicU64::new(0),
            pc: AtomicU64::new(0),
            method: AtomicU64::new(0),
            info: AtomicU64::new(0),
        };
        BlobCache {
            entries: (0..n).map(|_| entry()).collect(),
            bits: n.trailing_zeros(),
            epoch: AtomicU32::new(1),
            memo_epoch: AtomicU32::new(1),
        }
    }

    fn entry(&self, pc: u64) -> &Entry {
        // Fibonacci hashing: the top bits of the product (a shift by 64 when there is one entry
        // would overflow: `checked_shr` gives 0).
        let i = pc.wrapping_mul(0x9e37_79b9_7f4a_7c15).checked_shr(64 - self.bits).unwrap_or(0);
        &self.entries[i as usize]
    }

    /// The epoch a walk reads once at its start and passes to [`Self::get`] and [`Self::put`].
    pub fn epoch(&self) -> u32 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The epoch a walk reads once at its start for its thread's [`WalkMemo`].
    pub fn memo_epoch(&self) -> u32 {
        self.memo_epoch.load(Ordering::Acquire)
    }

    /// Every entry written so far becomes stale (code may have been freed).
    pub fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::Release);
        self.memo_epoch.fetch_add(1, Ordering::Release);
    }

    /// New code was installed at `start..end`, in a code heap whose segments start at `low`,
    /// `2^log2` bytes each: the entries of the segments it covers are cleared, the others kept
    /// (a blob whose memory the new code took was freed before, and its unload moved the
    /// epoch; a load no longer does, which had cleared half the walker's entries on ecj, where
    /// C2 installs ~25 methods a second). Code freed without an unload event (an upcall stub)
    /// keeps its entries until the next unload, collection or session start, or a load over
    /// them: unrelated loads no longer sweep them. Every thread's last walk is dropped, and
    /// walks that began before skip their writes ([`Self::put_for_walk`]). False when it
    /// could not be done here (more segments than entries, or an entry in the range being
    /// written by a walk): the caller then invalidates everything ([`Self::invalidate`]).
    pub fn forget_range(&self, low: u64, log2: u32, start: u64, end: u64) -> bool {
        self.memo_epoch.fetch_add(1, Ordering::Release);
        if log2 > MAX_SEGMENT_LOG2 || start < low || end <= start {
            return false;
        }
        let first = low + (((start - low) >> log2) << log2);
        let count = (end - first).div_ceil(1 << log2);
        if count > self.entries.len() as u64 {
            return false;
        }
        (0..count).all(|k| self.forget(first + (k << log2)))
    }

    /// Clears the entry of the segment starting at `segment` if it holds that segment; false
    /// when another writer is inside.
    fn forget(&self, segment: u64) -> bool {
        self.entry(segment).write(|e| {
            if e.pc.load(Ordering::Relaxed) == segment {
                // No walk looks up pc 0 (`get` refuses it).
                e.pc.store(0, Ordering::Relaxed);
            }
        })
    }

    /// The facts kept for the segment starting at `pc` in `epoch`, if any.
    pub fn get(&self, pc: u64, epoch: u32) -> Option<FrameFacts> {
        let e = self.entry(pc);
        let seq = e.seq.load(Ordering::Acquire);
        if seq & 1 != 0 {
            return None;
        }
        let (key, method, info) =
            (e.pc.load(Ordering::Relaxed), e.method.load(Ordering::Relaxed), e.info.load(Ordering::Relaxed));
        // Orders the loads above before the check below (a writer's stores that they saw make
        // the count they see odd or moved on).
        fence(Ordering::Acquire);
        if e.seq.load(Ordering::Relaxed) != seq || key != pc || pc == 0 || (info >> 32) as u32 != epoch {
            return None;
        }
        Some(unpack(info & 0xffff_ffff, method & ((1 << METHOD_BITS) - 1), method >> METHOD_BITS))
    }

    /// Keeps `facts` for the segment starting at `pc`, found in `epoch` (a walk's
    /// [`Self::epoch`]): skipped when another thread is writing the entry, or they do not fit.
    pub fn put(&self, pc: u64, epoch: u32, facts: FrameFacts) {
        self.put_checked(pc, epoch, None, facts);
    }

    /// [`Self::put`] for a walk that read `loads` ([`Self::memo_epoch`]) at its start as well:
    /// skipped when code was loaded since, whose range clearing ([`Self::forget_range`]) may
    /// have come between the walk's read of the code heap and this write (a put that claims
    /// the entry after the clearing sees the count it moved first; one that claims it before
    /// is cleared by it).
    pub fn put_for_walk(&self, pc: u64, epoch: u32, loads: u32, facts: FrameFacts) {
        self.put_checked(pc, epoch, Some(loads), facts);
    }

    fn put_checked(&self, pc: u64, epoch: u32, loads: Option<u32>, facts: FrameFacts) {
        let (Some(packed), Some(method)) = (pack(facts).filter(|_| pc != 0), pack_method(&facts)) else { return };
        let info = (u64::from(epoch) << 32) | packed;
        self.entry(pc).write(|e| {
            if loads.is_some_and(|l| self.memo_epoch.load(Ordering::Acquire) != l) {
                return;
            }
            e.pc.store(pc, Ordering::Relaxed);
            e.method.store(method, Ordering::Relaxed);
            e.info.store(info, Ordering::Relaxed);
        });
    }
}

/// Frames of a walk a thread's [`WalkMemo`] keeps (deeper ones use the shared cache only).
pub const MEMO_FRAMES: usize = 64;

struct MemoEntry {
    sp: AtomicU64,
    pc: AtomicU64,
    method: AtomicU64,
    /// As [`Entry::info`], without the epoch (the memo has one for all).
    info: AtomicU64,
}

/// One thread's last walk: the stack pointer, return address and facts of each complete frame,
/// in the walk's order (stack pointers increasing), next to each other in a few cache lines.
///
/// Used by one walk at a time: only the signal handler of the thread whose slot holds it, and a
/// handler does not interrupt itself (the signal is blocked while it runs). Entries are keyed
/// by pc like the shared cache's, so a memo left by another thread (a reused slot) is as good.
pub struct WalkMemo {
    /// Which half of `entries` holds the last walk (bit 32) and its length (low bits).
    last: AtomicU64,
    /// The cache epoch the last walk ran in.
    epoch: AtomicU32,
    /// Two halves of [`MEMO_FRAMES`]: the last walk's, and the one the next walk writes.
    entries: Box<[MemoEntry]>,
}

impl Default for WalkMemo {
    fn default() -> Self {
        let entry = || MemoEntry {
            sp: AtomicU64::new(0),
            pc: AtomicU64::new(0),
            method: AtomicU64::new(0),
            info: AtomicU64::new(0),
        };
        WalkMemo {
            last: AtomicU64::new(0),
            epoch: AtomicU32::new(0),
            entries: (0..2 * MEMO_FRAMES).map(|_| entry()).collect(),
        }
    }
}

impl WalkMemo {
    /// A walk in `epoch` starts: it reads the last walk's half and writes the other.
    pub fn start(&self, epoch: u32) -> MemoWalk<'_> {
        let last = self.last.load(Ordering::Relaxed);
        let half = ((last >> 32) & 1) as usize;
        let len = if self.epoch.load(Ordering::Relaxed) == epoch {
            ((last & 0xffff_ffff) as usize).min(MEMO_FRAMES)
        } else {
            0
        };
        MemoWalk {
            memo: self,
            epoch,
            read: half * MEMO_FRAMES,
            read_len: len,
            cursor: 0,
            write: (1 - half) * MEMO_FRAMES,
            written: 0,
        }
    }
}

/// One walk's use of a [`WalkMemo`]: finds its frames among the last walk's, records its own.
pub struct MemoWalk<'a> {
    memo: &'a WalkMemo,
    epoch: u32,
    read: usize,
    read_len: usize,
    /// The first of the last walk's entries not below the stack pointers asked so far.
    cursor: usize,
    write: usize,
    written: usize,
}

impl MemoWalk<'_> {
    /// The facts of the frame at `sp` returning to `pc`, if the last walk had it. Frames must
    /// be asked for in increasing `sp` (the walk's order).
    pub fn find(&mut self, sp: u64, pc: u64) -> Option<FrameFacts> {
        while self.cursor < self.read_len {
            let e = &self.memo.entries[self.read + self.cursor];
            let at = e.sp.load(Ordering::Relaxed);
            if at < sp {
                self.cursor += 1;
                continue;
            }
            if at != sp || e.pc.load(Ordering::Relaxed) != pc || pc == 0 {
                return None;
            }
            return Some(unpack(e.info.load(Ordering::Relaxed), e.method.load(Ordering::Relaxed), u64::MAX));
        }
        None
    }

    /// Records this walk's frame at `sp` (in increasing `sp`, as [`Self::find`]).
    pub fn record(&mut self, sp: u64, pc: u64, facts: FrameFacts) {
        let Some(packed) = pack(facts).filter(|_| self.written < MEMO_FRAMES) else { return };
        let e = &self.memo.entries[self.write + self.written];
        e.sp.store(sp, Ordering::Relaxed);
        e.pc.store(pc, Ordering::Relaxed);
        e.method.store(facts.method, Ordering::Relaxed);
        e.info.store(packed, Ordering::Relaxed);
        self.written += 1;
    }

    /// The walk ended: its frames are the last walk's from now on.
    pub fn finish(self) {
        if self.written == 0 {
            return; // a walk that found no complete frame: the last one's stay
        }
        let half = (self.write / MEMO_FRAMES) as u64;
        self.memo.epoch.store(self.epoch, Ordering::Relaxed);
        self.memo.last.store((half << 32) | self.written as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[path = "blob_cache_tests.rs"]
mod tests;
