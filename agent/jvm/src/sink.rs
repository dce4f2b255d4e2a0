//! What the samplers of a session write into (below the thread registry and the handler, which
//! both refer to it): the bounded batch pool the processor drains, and the context the signal
//! handler finds through each thread's slot.

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use hpm_capture::batch::{Batch, BatchPool, ThreadQueue};
use hpm_capture::capture::{CallFrame, Captured};
use hpm_capture::perf_record::Layout;
use hpm_capture::pool_size::PoolSize;
use hpm_profile::model::FrameKind;

use crate::jnienv::Vm;

/// `ASGCT_CallTrace` from HotSpot's forte.cpp.
#[repr(C)]
pub struct CallTrace {
    pub env_id: *mut jni::sys::JNIEnv,
    pub num_frames: c_int,
    pub frames: *mut CallFrame,
}

pub type AsgctFn = unsafe extern "C" fn(*mut CallTrace, c_int, *mut c_void);

/// Where every sampler of a session writes: the bounded batch pool and the timer thread's
/// queue; the processor drains both. Dropped after the session stopped.
pub struct Sink {
    pub pool: BatchPool<Captured>,
    /// Batches the processor allocates when it starts (a round's worth of the sampler's rate).
    pub start_batches: usize,
    /// The timer sampler's batches (it is one thread filling samples of many).
    pub timer_queue: ThreadQueue,
    /// Samples the processor has resolved so far (for `status`).
    pub resolved: AtomicU64,
    /// JFR the processor keeps for `dump` (a session without a JFR file), for `status`: how
    /// much and where, as of its last chunk (none before the first).
    pub jfr_kept: Mutex<Option<hpm_profile::jfr::memory::KeptNow>>,
    /// The timer samplers' frames past [`hpm_capture::capture::MAX_FRAMES`], until the processor takes them.
    deep: Mutex<DeepFrames>,
    /// Records cut at [`hpm_capture::capture::MAX_FRAMES`] because [`MAX_DEEP_HELD`] frames were waiting already.
    pub deep_refused: AtomicU64,
}

/// Frames past [`hpm_capture::capture::MAX_FRAMES`] waiting for the processor at most: 64 MB.
pub const MAX_DEEP_HELD: usize = (64 << 20) / std::mem::size_of::<(CallFrame, FrameKind)>();

struct DeepFrames {
    next: u32,
    held: usize,
    /// [`MAX_DEEP_HELD`] (smaller in tests).
    bound: usize,
    by_key: hpm_profile::hash::IntMap<u32, Vec<(CallFrame, FrameKind)>>,
}

/// Batches of ended sessions, for the next one's pool: a session's pool of 32 batches (each
/// holding ten 9 KB records) cost ~1.6 ms to allocate and touch, at every session start. At
/// most [`SPARE_BATCHES`] are kept: the smallest pool's capacity, which a session with the
/// processor's longer rounds may use (up to ~11 MB kept between sessions).
#[allow(clippy::vec_box, reason = "the pool holds each batch by the pointer of its box: reused as they are, not moved")]
static SPARE: Mutex<Vec<Box<Batch<Captured>>>> = Mutex::new(Vec::new());
const SPARE_BATCHES: usize = 128;

impl Sink {
    /// Adds up to `n` batches to the pool, reusing an earlier session's first (consumer side).
    pub fn grow(&self, n: usize) -> usize {
        let mut spare = SPARE.lock().unwrap_or_else(|p| p.into_inner());
        self.pool.grow_reusing(n, &mut spare)
    }

    /// A sink whose pool is empty until the processor grows it to `size.start` (reusing an
    /// earlier session's batches), and holds at most `size.capacity`.
    pub fn new(size: PoolSize) -> Sink {
        Sink {
            pool: BatchPool::new(0, size.capacity),
            start_batches: size.start,
            timer_queue: ThreadQueue::default(),
            resolved: AtomicU64::new(0),
            jfr_kept: Mutex::new(None),
            deep: Mutex::new(DeepFrames { next: 0, held: 0, bound: MAX_DEEP_HELD, by_key: Default::default() }),
            deep_refused: AtomicU64::new(0),
        }
    }

    /// Keeps a record's frames past [`hpm_capture::capture::MAX_FRAMES`] (a timer sampler's thread, never a signal
    /// handler: this locks and allocates); the key for [`Captured::deep`], or `None` (counted)
    /// when too many wait already.
    pub fn put_deep(&self, frames: Vec<(CallFrame, FrameKind)>) -> Option<u32> {
        let mut d = self.deep.lock().unwrap_or_else(|p| p.into_inner());
        if d.held + frames.len() > d.bound {
            self.deep_refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return None;
        }
        // Keys from 1 (0: none), skipping any still waiting after a wrap.
        loop {
            d.next = d.next.wrapping_add(1).max(1);
            if !d.by_key.contains_key(&d.next) {
                break;
            }
        }
        let key = d.next;
        d.held += frames.len();
        d.by_key.insert(key, frames);
        Some(key)
    }

    /// The processor: a record's deep frames (empty for key 0 or one already taken).
    pub fn take_deep(&self, key: u32) -> Vec<(CallFrame, FrameKind)> {
        if key == 0 {
            return Vec::new();
        }
        let mut d = self.deep.lock().unwrap_or_else(|p| p.into_inner());
        let frames = d.by_key.remove(&key).unwrap_or_default();
        d.held -= frames.len();
        frames
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // The last reference: no handler, sampler or processor reaches the pool any more.
        let batches = self.pool.take_batches();
        let mut spare = SPARE.lock().unwrap_or_else(|p| p.into_inner());
        let room = SPARE_BATCHES.saturating_sub(spare.len());
        spare.extend(batches.into_iter().take(room));
    }
}

/// What the handler needs of the running signal-sampler session; published with each slot and
/// alive until every slot is retired (threads.rs holds it meanwhile).
pub struct SignalCtx {
    pub sink: Arc<Sink>,
    pub layout: Layout,
    /// How kernel time is recorded: shared walks (sampled) or counted periods (counted).
    pub kernel: hpm_profile::model::KernelMode,
    pub max_depth: u32,
    pub asgct: Option<AsgctFn>,
    /// hpm's own stack walker's layout of this JVM (`stack=vm`); None walks with ASGCT.
    pub walker: Option<&'static hpm_capture::hotspot::Layout>,
    /// `stack=compare`: AsyncGetCallTrace walks each sample too.
    pub compare: bool,
    /// `cstack=`: the native unwind tables hpm's walker steps through native frames with.
    pub native: Option<&'static hpm_capture::native::NativeTables>,
    pub vm: Vm,
    /// `data`: the code cache's layout; each walked sample in Java code gets its instruction's
    /// bytes and the interrupted registers.
    pub data: Option<crate::vmstructs::DataLayouts>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_frames_are_bounded_and_taken_once() {
        let sink = Sink::new(PoolSize { start: 0, capacity: 1 });
        {
            // A small bound, and keys about to wrap.
            let mut d = sink.deep.lock().unwrap();
            d.bound = 100;
            d.next = u32::MAX - 2;
        }
        let frame = (CallFrame { lineno: 1, method_id: 2 }, FrameKind::Interpreted);
        let keys: Vec<u32> = (0..4).map(|_| sink.put_deep(vec![frame; 25]).expect("within the bound")).collect();
        assert_eq!(keys, [u32::MAX - 1, u32::MAX, 1, 2], "0 is never a key");
        assert_eq!(sink.put_deep(vec![frame]), None, "over the bound: refused");
        assert_eq!(sink.deep_refused.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(sink.take_deep(keys[2]).len(), 25);
        assert!(sink.take_deep(keys[2]).is_empty(), "taken once");
        assert!(sink.take_deep(0).is_empty());
        // Wrapped again: the keys still waiting are skipped, the one taken is free.
        sink.deep.lock().unwrap().next = u32::MAX - 2;
        assert_eq!(sink.put_deep(vec![frame; 3]), Some(1));
        assert_eq!(sink.put_deep(vec![frame]), Some(3), "2 still waits: skipped");
        // 25 + 25 + 25 + 3 + 1 frames wait: 22 more would pass the bound of 100.
        assert_eq!(sink.put_deep(vec![frame; 22]), None, "the bound counts every frame waiting");
    }
}
