//! The JFR chunks: each flush encodes the chunk once and writes it to every JFR file of the
//! session (grown as `PATH.part`, completed at stop), or, without one, keeps it for `dump` (in
//! memory or an unlinked file, at most [`JFR_MEMORY_LIMIT`]).

use std::sync::Arc;

use crate::options::OutputFormat;
use hpm_profile::jfr::memory::{ChunkMemory, Spill};
use hpm_profile::jfr::writer::JfrFileWriter;
use hpm_profile::jfr::TableKeys;

use super::{Chunk, ProfileSink};
use crate::processor::{Inputs, Output, Written};
use crate::sink::Sink;

/// JFR kept for `dump,file=X.jfr` when the session writes no JFR file (in an unlinked file on
/// disk where one can be made, else in the heap): at most this much, the oldest chunks dropped
/// first (and said so).
pub const JFR_MEMORY_LIMIT: usize = 64 << 20;

pub(in crate::processor) struct JfrSink {
    files: Vec<JfrFileWriter>,
    /// JFR files completed at stop (renamed from `.part`, or not if their name was taken),
    /// kept open for dumps after stop.
    done: Vec<JfrFileWriter>,
    /// JFR chunks kept when the session writes no JFR file, so `dump,file=X.jfr` can still
    /// write one: at most [`JFR_MEMORY_LIMIT`] bytes, oldest dropped first.
    pub(in crate::processor) memory: Option<ChunkMemory>,
    /// The JFR keys of the method table's strings, kept across chunks and sessions with the
    /// table they number.
    pub(in crate::processor) keys: TableKeys,
    /// JFR chunks written (to files or memory).
    pub(in crate::processor) chunks: u64,
    /// Where `hpm status` reads the JFR kept.
    sink: Arc<Sink>,
}

impl JfrSink {
    /// The sink of the JFR `outputs` (their files grow as PATH.part from now on), and the
    /// other outputs (written at the end).
    pub(in crate::processor) fn new(inputs: &Inputs, outputs: Vec<Output>) -> (JfrSink, Vec<Output>) {
        let mut files = Vec::new();
        let mut rest = Vec::new();
        for o in outputs {
            if o.format == OutputFormat::Jfr {
                match JfrFileWriter::from_target(o.target) {
                    Ok(w) => files.push(w),
                    Err(e) => eprintln!("hpm: {e}"),
                }
            } else {
                rest.push(o);
            }
        }
        let memory = files
            .is_empty()
            .then(|| ChunkMemory::new(JFR_MEMORY_LIMIT, Spill::open(inputs.spill_dirs, JFR_MEMORY_LIMIT)));
        let sink = JfrSink {
            files,
            done: Vec::new(),
            memory,
            keys: TableKeys::default(),
            chunks: 0,
            sink: inputs.sink.clone(),
        };
        (sink, rest)
    }

    /// The JFR so far (the caller flushed the samples not yet in a chunk); `note` says what the
    /// bound on the JFR kept for dumps dropped.
    pub(in crate::processor) fn so_far(&self, note: &mut String) -> Result<KeptJfr<'_>, String> {
        if let Some(m) = &self.memory {
            if m.dropped() > 0 {
                *note = format!(
                    "; the oldest {} chunks were dropped, with the compiled code's instructions written in them (without \
                     file=*.jfr hpm keeps at most {} MB of JFR for dumps)",
                    m.dropped(),
                    m.limit() >> 20
                );
            }
            return Ok(KeptJfr::Memory(m));
        }
        self.files.first().or_else(|| self.done.first()).map(KeptJfr::File).ok_or_else(|| "no JFR data recorded".into())
    }
}

impl ProfileSink for JfrSink {
    fn flush(&mut self, chunk: &Chunk<'_>) {
        if self.files.is_empty() && self.memory.is_none() {
            return;
        }
        let rec = chunk.rec;
        let data = hpm_profile::jfr::encode_chunk_keyed(rec, &rec.samples, chunk.marks, chunk.times, &mut self.keys);
        for w in &mut self.files {
            if let Err(e) = w.write_encoded(&data) {
                eprintln!("hpm: {e}");
            }
        }
        if let Some(m) = &mut self.memory {
            m.push(data);
            *self.sink.jfr_kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(m.now());
        }
        self.chunks += 1;
    }

    fn finish(&mut self, written: &mut Written) {
        for mut w in std::mem::take(&mut self.files) {
            match w.finish() {
                Ok(()) => written.files.push(w.path().display().to_string()),
                Err(e) => {
                    eprintln!("hpm: {e}");
                    written.failed.push(e.to_string());
                }
            }
            // Kept open for dumps after stop, read through its descriptor whatever became of
            // its name.
            self.done.push(w);
        }
    }
}

/// The session's JFR so far: the chunks it keeps for dumps, or a JFR file it writes (read
/// through the descriptor it was created with).
pub(in crate::processor) enum KeptJfr<'a> {
    Memory(&'a ChunkMemory),
    File(&'a JfrFileWriter),
}

impl KeptJfr<'_> {
    /// Bytes [`Self::copy_to`] writes.
    pub(in crate::processor) fn bytes(&self) -> u64 {
        match self {
            KeptJfr::Memory(m) => {
                let now = m.now();
                (now.heap + now.on_disk) as u64
            }
            KeptJfr::File(w) => w.bytes(),
        }
    }

    /// Copies it to `out` through a bounded buffer.
    pub(in crate::processor) fn copy_to(&self, out: &mut dyn std::io::Write) -> Result<(), String> {
        match self {
            KeptJfr::Memory(m) => m.copy_to(out),
            KeptJfr::File(w) => w.copy_to(out).map_err(|e| format!("cannot copy {}: {e}", w.part_path().display())),
        }
    }
}
