//! Method-level phases (Georges et al.): application methods instrumented at entry and exit,
//! each probe reading its thread's counters into a compact trace.
//! - `recorder`: the session's recorder, the Probe natives;
//! - `probe`: per thread, its counters and double buffer;
//! - `writer`: the thread that drains the buffers into the trace;
//! - `vmthreads`: the VM's own threads, measured per interval.

// Until the source (this file's other half) uses the recorder.
#![allow(dead_code)]

pub mod probe;
pub mod recorder;
pub mod vmthreads;
pub mod writer;
