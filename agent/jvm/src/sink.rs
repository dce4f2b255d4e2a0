//! What the samplers of a session write into (below the thread registry and the handler, which
//! both refer to it): the bounded batch pool the processor drains, and the context the signal
//! handler finds through each thread's slot.

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use hpm_core::batch::{BatchPool, ThreadQueue};
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

impl Sink {
    pub fn new(initial: usize, capacity: usize) -> Sink {
        Sink {
            pool: BatchPool::new(initial, capacity),
            timer_queue: ThreadQueue::default(),
            resolved: AtomicU64::new(0),
        }
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
}
