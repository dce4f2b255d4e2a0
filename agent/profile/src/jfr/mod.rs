//! JFR (JDK Flight Recorder) files: a writer for the agent and a reader for `hpm report`,
//! `hpm flamegraph` and `hpm compare` (which also read recordings made by the JDK itself).
//!
//! Layers:
//! - [`varint`]: compressed integers and strings; [`metadata`]: the metadata element tree and
//!   the type model; [`parser`] + [`value`]: any JFR file as chunks of typed events with
//!   lazily resolved constant-pool references (usable for event types hpm does not know).
//! - [`recording`]: a [`Recording`](crate::model::Recording) from a file, ours or the JDK's
//!   ([`read_recording`]); `virtual_bound`: at most
//!   [`MAX_VIRTUAL_THREADS`](crate::vthreads::MAX_VIRTUAL_THREADS) virtual threads apart, the
//!   rest as one entry.
//! - [`schema`] + [`pools`] + [`writer`]: one self-contained chunk per call of
//!   [`encode_chunk`], and [`JfrFileWriter`] to append chunks to a file.
//!
//! Events hpm writes: `jdk.ExecutionSample` (so JDK tools and JMC show the profile),
//! `hpm.Sample` (everything the agent measured: weight, counters, data address, ip,
//! component), `hpm.Config` and `hpm.Drops` once per chunk, `hpm.Region` / `hpm.Phase`
//! from the Java bridge ([`marks`]), and the JDK's `jdk.ObjectAllocationSample`,
//! `jdk.JavaMonitorEnter` and `jdk.ThreadPark` for `alloc` and `lock` ([`jvmevents`]).
//!
//! What the JDK's and JMC's readers insist on (learnt from their sources and tests, JDK 17
//! and 25, JMC 9.1):
//! - Header bytes 64..68: file state 0 (else the JDK waits for the writer to finish), flag
//!   bit 0 "compressed integers" (JMC decodes fixed-width integers without it).
//! - An event type's first field is `startTime`; a `duration`, if any, must be second.
//! - No constant pool may be empty (the JDK throws). Key 0 with no entry reads as null.
//! - The JDK keeps the previous chunk's pools and reuses an entry for a key it saw there, so a
//!   key must mean the same value in every chunk of a file (see [`pools`]).
//! - JMC reads events up to the metadata event, so the metadata event comes last.
//! - Every annotation type used must be declared; `jdk.types.Symbol`, `FrameType` and
//!   `ThreadState` must be `simpleType` (JMC casts them to strings).
//! - Every method needs a class (`jfr print` calls `getType().getName()`) and a descriptor
//!   with parentheses (it parses the parameter list): native symbols get the descriptor `()L;`
//!   and `ACC_NATIVE`, as async-profiler writes them, and a class named by their frames' kind
//!   (`native`, `libjvm.so`, `kernel`; async-profiler names the library), so `jfr print` shows
//!   `libjvm.so.PhaseChaitin::Split()` where an empty class gave `.PhaseChaitin::Split()`;
//!   [`read_recording`] maps them back to empty class name and descriptor.
//! - The JDK's views (`jfr view hot-methods`, JDK 21+) take a stack's top frame for which
//!   `RecordedFrame.isJavaFrame()` holds, which reads a `javaFrame` field when the frame type
//!   has one: hpm's `jdk.types.StackFrame` has it, false for native symbols and pseudo-frames.
//! - `jfr print` leaves out frames of hidden methods;
//!   JMC skipped the second of two byte-identical chunks (same start time), so chunks need
//!   distinct start times.

pub mod by_place;
pub mod error;
pub mod event;
pub mod ids;
pub mod jvmevents;
pub mod marks;
pub mod memory;
pub mod metadata;
pub mod parser;
pub mod pools;
pub mod recording;
pub mod schema;
pub mod typedef;
pub mod value;
pub mod varint;
mod virtual_bound;
pub mod writer;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_robustness;
#[cfg(test)]
mod tests_vthreads;

pub use error::{LostTail, ReadError, ReadErrorKind};
pub use pools::TableKeys;
pub use recording::{read_recording, recording_from_bytes, recording_from_chunks, ReadRecording};
pub use schema::counter_field_names;
pub use writer::{encode_chunk, encode_chunk_keyed, encode_chunk_with_marks, ChunkTimes, JfrFileWriter};
