//! The processor's outputs: every format but JFR rendered from the tree or the stack table,
//! the session's files at stop, and dumps of the profile so far.

use hpm_core::model::Recording;
use hpm_core::options::OutputFormat;
use hpm_core::outfile::Target;
use hpm_core::output;
use hpm_core::output::collapsed::CountBy;
use hpm_core::output::stacks::StackTable;

use super::Processor;
use crate::os::now_ticks;

impl Processor {
    /// Renders the profile in any format but JFR (which is written chunk by chunk).
    pub(super) fn render(&self, format: OutputFormat) -> Vec<u8> {
        let title = format!("hpm: {}", output::report::event_line(&self.rec));
        // Without a CPU event the tree holds the JVM events, weighted by bytes or ns waited.
        let by = if self.inputs.opts.cpu { CountBy::Samples } else { CountBy::Weight };
        match format {
            OutputFormat::Jfr => Vec::new(),
            // pprof (`.pb.gz`) and JSON are built from the stack table (file and line per frame).
            OutputFormat::Pprof | OutputFormat::Json => from_table(&self.rec, &self.tree.stacks, format),
            OutputFormat::Collapsed => output::collapsed::to_collapsed(&self.tree.cct, by).into_bytes(),
            OutputFormat::Html => output::flame_html::flame_html(
                &self.tree.cct,
                &output::flame_html::HtmlOptions { title, by, ..Default::default() },
            )
            .into_bytes(),
            OutputFormat::Svg => output::flame_svg::flame_svg(
                &self.tree.cct,
                &output::flame_svg::SvgOptions { title, by, ..Default::default() },
            )
            .into_bytes(),
        }
    }

    /// Writes the session's outputs and prints the summary; returns the files written.
    pub(super) fn write_outputs(&mut self) -> Vec<String> {
        self.tree_ready();
        let mut written = Vec::new();
        for w in std::mem::take(&mut self.jfr) {
            let path = w.path().to_path_buf();
            match w.finish() {
                Ok(()) => {
                    written.push(path.display().to_string());
                    self.jfr_done.push(path);
                }
                Err(e) => eprintln!("hpm: {e}"),
            }
        }
        for o in std::mem::take(&mut self.outputs) {
            match o.target.write_all(&self.render(o.format)) {
                Ok(()) => written.push(o.path),
                Err(e) => eprintln!("hpm: {e}"),
            }
        }
        if !self.inputs.opts.quiet {
            eprint!("{}", output::summary(&self.rec, &self.tree.cct, &self.tree.components));
            eprintln!("hpm: wrote {}", if written.is_empty() { "nothing".to_string() } else { written.join(", ") });
        }
        written
    }

    /// Writes the profile so far to `target` (a JFR file gets every chunk flushed so far plus
    /// one with the samples since). Returns a line saying what was written.
    pub(super) fn dump(&mut self, path: &str, format: OutputFormat, target: Target) -> Result<String, String> {
        self.tree_ready();
        let mut note = String::new();
        let bytes = if format == OutputFormat::Jfr {
            self.jfr_so_far(&mut note)?
        } else if !self.tree.keeps_table() && matches!(format, OutputFormat::Pprof | OutputFormat::Json) {
            // This session keeps no stack table (no pprof or JSON output was asked for at its
            // start): the profile is read back from its JFR chunks, as `hpm convert` does.
            let jfr = self.jfr_so_far(&mut note)?;
            let rec = hpm_core::jfr::recording_from_bytes(&jfr, path)
                .map_err(|e| format!("cannot read back the JFR chunks: {e}"))?;
            from_table(&rec, &StackTable::from_recording(&rec), format)
        } else {
            self.render(format)
        };
        target.write_all(&bytes).map_err(|e| e.to_string())?;
        Ok(format!("wrote {path} ({} samples){note}", self.tree.cct.total_samples()))
    }

    /// Every JFR chunk so far, the samples not yet in one flushed first; `note` says what the
    /// bound on the JFR kept for dumps dropped.
    fn jfr_so_far(&mut self, note: &mut String) -> Result<Vec<u8>, String> {
        if !self.rec.samples.is_empty() || self.chunks == 0 {
            self.flush_chunk(now_ticks());
        }
        let file = self.jfr.first().map(|w| w.part_path()).or_else(|| self.jfr_done.first().cloned());
        match (&self.jfr_mem, file) {
            (Some(m), _) => {
                if m.dropped() > 0 {
                    *note = format!(
                        "; the oldest {} chunks were dropped, with the compiled code's instructions written in them (without \
                         file=*.jfr hpm keeps at most {} MB of JFR for dumps)",
                        m.dropped(),
                        m.limit() >> 20
                    );
                }
                m.file()
            }
            (None, Some(f)) => std::fs::read(&f).map_err(|e| format!("cannot read {}: {e}", f.display())),
            (None, None) => Err("no JFR data recorded".into()),
        }
    }
}

/// pprof or JSON (the formats built from a stack table) of `rec` with its table.
fn from_table(rec: &Recording, table: &StackTable, format: OutputFormat) -> Vec<u8> {
    if format == OutputFormat::Pprof {
        output::pprof::pprof_gz(rec, table)
    } else {
        output::json::to_json(rec, table).into_bytes()
    }
}
