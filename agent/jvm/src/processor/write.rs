//! The processor's outputs: every format but JFR rendered from the tree or the stack table,
//! the session's files at stop, and dumps of the profile so far.

use crate::options::OutputFormat;
use hpm_profile::cct::Measure;
use hpm_profile::model::Recording;
use hpm_profile::outfile::{OutputError, Target};
use hpm_profile::output;
use hpm_profile::output::format::{render, BuiltFrom, Look, Profile as Sources};
use hpm_profile::output::stacks::StackTable;
use hpm_profile::tree_feed::TreeFeed;

use super::sinks::jfr::{JfrSink, JFR_MEMORY_LIMIT};
use super::{Output, Written};

/// The profile the outputs are made of: the recording with its tree and stack table.
pub(super) struct Profile<'a> {
    pub rec: &'a Recording,
    pub tree: &'a TreeFeed,
    /// Whether the session has a CPU event (else the tree holds the JVM events).
    pub cpu: bool,
}

impl Profile<'_> {
    /// Renders the profile in any format but JFR (which is written chunk by chunk).
    pub(super) fn render(&self, format: OutputFormat) -> Vec<u8> {
        let title = format!("hpm: {}", output::report::event_line(self.rec));
        // Without a CPU event the tree holds the JVM events, weighted by bytes or ns waited.
        let by = if self.cpu { Measure::Samples } else { Measure::Weight };
        let profile = Sources { tree: Some(&self.tree.cct), table: Some((self.rec, &self.tree.stacks)) };
        render(format, profile, &Look { title, by, ..Look::default() }).unwrap_or_default()
    }

    /// Writes the session's other `outputs` (the sinks wrote theirs in `written`) and prints
    /// the summary unless `quiet`.
    pub(super) fn write_outputs(&self, outputs: Vec<Output>, quiet: bool, written: &mut Written) {
        let failed = |e: OutputError| {
            eprintln!("hpm: {e}");
            e.to_string()
        };
        for o in outputs {
            match o.target.write_all(&self.render(o.format)) {
                Ok(()) => written.files.push(o.path),
                Err(e) => written.failed.push(failed(e)),
            }
        }
        if !quiet {
            eprint!("{}", output::summary(self.rec, &self.tree.cct, &self.tree.components, &self.tree.sampled_threads));
            if let Some(states) = output::states_line(self.rec, &self.tree.states) {
                eprintln!("hpm: thread states: {states}");
            }
            eprintln!(
                "hpm: wrote {}",
                if written.files.is_empty() { "nothing".into() } else { written.files.join(", ") }
            );
        }
    }

    /// Whether [`Self::dump`] in `format` reads the session's JFR (whose samples not yet in
    /// a chunk are flushed first).
    pub(super) fn dump_reads_jfr(&self, format: OutputFormat) -> bool {
        format == OutputFormat::Jfr || self.table_from_jfr(format)
    }

    /// `format` is built from a stack table, which this session does not keep: it is read back
    /// from the session's JFR chunks.
    fn table_from_jfr(&self, format: OutputFormat) -> bool {
        format.built_from() == BuiltFrom::Table && !self.tree.keeps_table()
    }

    /// Writes the profile so far to `target` (a JFR file gets every chunk flushed so far, from
    /// the session's own JFR in `jfr`). Returns a line saying what was written.
    pub(super) fn dump(
        &self,
        path: &str,
        format: OutputFormat,
        target: Target,
        jfr: &JfrSink,
    ) -> Result<String, String> {
        let mut note = String::new();
        if format == OutputFormat::Jfr {
            let jfr = jfr.so_far(&mut note)?;
            let mut failed = None;
            target
                .write_with(|out| {
                    jfr.copy_to(out).map_err(|e| {
                        failed = Some(e.clone());
                        std::io::Error::other(e)
                    })
                })
                .map_err(|e| failed.unwrap_or_else(|| e.to_string()))?;
        } else if self.table_from_jfr(format) {
            // This session keeps no stack table (no pprof or JSON output was asked for at its
            // start): the profile is read back from its JFR chunks, as `hpm convert` does. That
            // holds the JFR whole in the JVM's memory, and its recording beside: refused past
            // the bound of the JFR kept for dumps (a long session's JFR file may be gigabytes).
            let kept = jfr.so_far(&mut note)?;
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
            let rec = hpm_profile::jfr::recording_from_bytes(&jfr, path)
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
}

/// pprof or JSON (the formats built from a stack table) of `rec` with its table.
fn from_table(rec: &Recording, table: &StackTable, format: OutputFormat) -> Vec<u8> {
    render(format, Sources { tree: None, table: Some((rec, table)) }, &Look::default()).unwrap_or_default()
}
