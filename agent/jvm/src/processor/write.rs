//! The processor's outputs: every format but JFR rendered from the tree or the stack table,
//! the session's files at stop, and dumps of the profile so far.

use hpm_core::cct::Measure;
use hpm_core::jfr::memory::ChunkMemory;
use hpm_core::jfr::writer::JfrFileWriter;
use hpm_core::model::Recording;
use hpm_core::options::OutputFormat;
use hpm_core::outfile::{OutputError, Target};
use hpm_core::output;
use hpm_core::output::format::{render, Look, Profile};
use hpm_core::output::stacks::StackTable;

use super::{Processor, Written, JFR_MEMORY_LIMIT};
use crate::os::now_ticks;

impl Processor {
    /// Renders the profile in any format but JFR (which is written chunk by chunk).
    pub(super) fn render(&self, format: OutputFormat) -> Vec<u8> {
        let title = format!("hpm: {}", output::report::event_line(&self.rec));
        // Without a CPU event the tree holds the JVM events, weighted by bytes or ns waited.
        let by = if self.inputs.opts.cpu { Measure::Samples } else { Measure::Weight };
        let profile = Profile { tree: Some(&self.tree.cct), table: Some((&self.rec, &self.tree.stacks)) };
        render(format, profile, &Look { title, by, ..Look::default() }).unwrap_or_default()
    }

    /// Writes the session's outputs and prints the summary; returns the files written and why
    /// the others were not.
    pub(super) fn write_outputs(&mut self) -> Written {
        self.tree_ready();
        let mut written = Written::default();
        let failed = |e: OutputError| {
            eprintln!("hpm: {e}");
            e.to_string()
        };
        for mut w in std::mem::take(&mut self.jfr) {
            match w.finish() {
                Ok(()) => written.files.push(w.path().display().to_string()),
                Err(e) => written.failed.push(failed(e)),
            }
            // Kept open for dumps after stop, read through its descriptor whatever became of
            // its name.
            self.jfr_done.push(w);
        }
        for o in std::mem::take(&mut self.outputs) {
            match o.target.write_all(&self.render(o.format)) {
                Ok(()) => written.files.push(o.path),
                Err(e) => written.failed.push(failed(e)),
            }
        }
        if !self.inputs.opts.quiet {
            eprint!("{}", output::summary(&self.rec, &self.tree.cct, &self.tree.components));
            if let Some(states) = output::states_line(&self.rec, &self.tree.states) {
                eprintln!("hpm: thread states: {states}");
            }
            eprintln!(
                "hpm: wrote {}",
                if written.files.is_empty() { "nothing".into() } else { written.files.join(", ") }
            );
        }
        written
    }

    /// Writes the profile so far to `target` (a JFR file gets every chunk flushed so far plus
    /// one with the samples since, copied from the session's own JFR). Returns a line saying
    /// what was written.
    pub(super) fn dump(&mut self, path: &str, format: OutputFormat, target: Target) -> Result<String, String> {
        self.tree_ready();
        let mut note = String::new();
        if format == OutputFormat::Jfr {
            let jfr = self.jfr_so_far(&mut note)?;
            let mut failed = None;
            target
                .write_with(|out| {
                    jfr.copy_to(out).map_err(|e| {
                        failed = Some(e.clone());
                        std::io::Error::other(e)
                    })
                })
                .map_err(|e| failed.unwrap_or_else(|| e.to_string()))?;
        } else if !self.tree.keeps_table() && matches!(format, OutputFormat::Pprof | OutputFormat::Json) {
            // This session keeps no stack table (no pprof or JSON output was asked for at its
            // start): the profile is read back from its JFR chunks, as `hpm convert` does. That
            // holds the JFR whole in the JVM's memory, and its recording beside: refused past
            // the bound of the JFR kept for dumps (a long session's JFR file may be gigabytes).
            let kept = self.jfr_so_far(&mut note)?;
            if kept.bytes() > JFR_MEMORY_LIMIT as u64 {
                return Err(format!(
                    "not written: {path} would be converted from the session's {} MB of JFR inside the JVM, over the \
                     {} MB hpm reads back there; dump a .jfr (dump,file=X.jfr) and convert it with `hpm convert X.jfr \
                     -o {path}`",
                    kept.bytes() >> 20,
                    JFR_MEMORY_LIMIT >> 20
                ));
            }
            let mut jfr = Vec::new();
            kept.copy_to(&mut jfr)?;
            let rec = hpm_core::jfr::recording_from_bytes(&jfr, path)
                .map_err(|e| format!("cannot read back the JFR chunks: {e}"))?;
            drop(jfr);
            target
                .write_all(&from_table(&rec, &StackTable::from_recording(&rec), format))
                .map_err(|e| e.to_string())?;
        } else {
            target.write_all(&self.render(format)).map_err(|e| e.to_string())?;
        }
        Ok(format!("wrote {path} ({} samples){note}", self.tree.cct.total_samples()))
    }

    /// Where the JFR so far is, the samples not yet in a chunk flushed first; `note` says what
    /// the bound on the JFR kept for dumps dropped.
    fn jfr_so_far(&mut self, note: &mut String) -> Result<KeptJfr<'_>, String> {
        if !self.rec.samples.is_empty() || self.chunks == 0 {
            self.flush_chunk(now_ticks());
        }
        if let Some(m) = &self.jfr_mem {
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
        self.jfr
            .first()
            .or_else(|| self.jfr_done.first())
            .map(KeptJfr::File)
            .ok_or_else(|| "no JFR data recorded".into())
    }
}

/// The session's JFR so far: the chunks it keeps for dumps, or a JFR file it writes (read
/// through the descriptor it was created with).
enum KeptJfr<'a> {
    Memory(&'a ChunkMemory),
    File(&'a JfrFileWriter),
}

impl KeptJfr<'_> {
    /// Bytes [`Self::copy_to`] writes.
    fn bytes(&self) -> u64 {
        match self {
            KeptJfr::Memory(m) => {
                let now = m.now();
                (now.heap + now.on_disk) as u64
            }
            KeptJfr::File(w) => w.bytes(),
        }
    }

    /// Copies it to `out` through a bounded buffer.
    fn copy_to(&self, out: &mut dyn std::io::Write) -> Result<(), String> {
        match self {
            KeptJfr::Memory(m) => m.copy_to(out),
            KeptJfr::File(w) => w.copy_to(out).map_err(|e| format!("cannot copy {}: {e}", w.part_path().display())),
        }
    }
}

/// pprof or JSON (the formats built from a stack table) of `rec` with its table.
fn from_table(rec: &Recording, table: &StackTable, format: OutputFormat) -> Vec<u8> {
    render(format, Profile { tree: None, table: Some((rec, table)) }, &Look::default()).unwrap_or_default()
}
