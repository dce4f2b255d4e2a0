//! JFR (JDK Flight Recorder) files: a writer for the agent and a reader for `hpm report`,
//! `hpm flamegraph` and `hpm compare` (which also read recordings made by the JDK itself).
//!
//! Layers:
//! - [`varint`]: compressed integers and strings; [`metadata`]: the metadata element tree and
//!   the type model; [`parser`] + [`value`]: any JFR file as chunks of typed events with
//!   lazily resolved constant-pool references (usable for event types hpm does not know).
//! - [`recording`]: a [`Recording`] from a file, ours or the JDK's ([`read_recording`]).
//! - [`schema`] + [`pools`] + [`writer`]: one self-contained chunk per call of
//!   [`encode_chunk`], and [`JfrFileWriter`] to append chunks to a file.
//!
//! Events hpm writes: `jdk.ExecutionSample` (so JDK tools and JMC show the profile),
//! `hpm.Sample` (everything the agent measured: weight, counters, data address, ip,
//! component), `hpm.Config` and `hpm.Drops` once per chunk.

pub mod metadata;
pub mod parser;
pub mod pools;
pub mod recording;
pub mod schema;
pub mod typedef;
pub mod value;
pub mod varint;
pub mod writer;

#[cfg(test)]
mod tests;

pub use recording::{read_recording, recording_from_chunks};
pub use schema::counter_field_names;
pub use writer::{encode_chunk, ChunkTimes, JfrFileWriter};
