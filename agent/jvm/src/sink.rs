//! What the samplers of a session write into (below the thread registry and the handler, which
//! both refer to it): the bounded batch pool the processor drains, and the context the signal
//! handler finds through each thread's slot.

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use hpm_core::batch::{Batch, BatchPool, ThreadQueue};
use hpm_core::capture::{CallFrame, Captured};
use hpm_core::perf_record::Layout;

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
    /// The timer sampler's batches (it is one thread filling samples of many).
    pub timer_queue: ThreadQueue,
    /// Samples the processor has resolved so far (for `status`).
    pub resolved: AtomicU64,
}

/// Batches of ended sessions, for the next one's pool: a session's pool of 32 batches (each
/// holding ten 9 KB records) cost ~1.6 ms to allocate and touch, at every session start. At
/// most [`SPARE_BATCHES`] are kept.
#[allow(clippy::vec_box, reason = "the pool holds each batch by the pointer of its box: reused as they are, not moved")]
static SPARE: Mutex<Vec<Box<Batch<Captured>>>> = Mutex::new(Vec::new());
const SPARE_BATCHES: usize = 64;

impl Sink {
    /// Adds up to `n` batches to the pool, reusing an earlier session's first (consumer side).
    pub fn grow(&self, n: usize) -> usize {
        let mut spare = SPARE.lock().unwrap_or_else(|p| p.into_inner());
        self.pool.grow_reusing(n, &mut spare)
    }

    pub fn new(initial: usize, capacity: usize) -> Sink {
        Sink {
            pool: BatchPool::new(initial, capacity),
            timer_queue: ThreadQueue::default(),
            resolved: AtomicU64::new(0),
        }
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
    pub kernel: hpm_core::model::KernelMode,
    pub max_depth: u32,
    pub asgct: Option<AsgctFn>,
    /// hpm's own stack walker's layout of this JVM (`stack=vm`); None walks with ASGCT.
    pub walker: Option<&'static hpm_core::hotspot::Layout>,
    /// `stack=compare`: AsyncGetCallTrace walks each sample too.
    pub compare: bool,
    pub vm: Vm,
    /// `data`: the code cache's layout; each walked sample in Java code gets its instruction's
    /// bytes and the interrupted registers.
    pub data: Option<crate::vmstructs::DataLayouts>,
}
