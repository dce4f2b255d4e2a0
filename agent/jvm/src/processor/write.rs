//! The processor's outputs: every format but JFR rendered from the tree or the stack table,
//! the session's files at stop, and dumps of the profile so far.

use hpm_core::options::OutputFormat;
use hpm_core::output;

use super::Processor;
use crate::agent::now_ticks;
use crate::session::Session;

impl Processor {
    /// Renders the profile in any format but JFR (which is written chunk by chunk).
    pub(super) fn render(&self, format: OutputFormat) -> Vec<u8> {
        let title = format!("hpm: {}", output::report::event_line(&self.rec));
        match format {
            OutputFormat::Jfr => Vec::new(),
            // pprof (`.pb.gz`) and JSON are built from the stack table (file and line per frame).
            OutputFormat::Pprof => output::pprof::pprof_gz(&self.rec, &self.stacks),
            OutputFormat::Json => output::json::to_json(&self.rec, &self.stacks).into_bytes(),
            OutputFormat::Collapsed => {
                output::collapsed::to_collapsed(&self.cct, output::collapsed::CountBy::Samples).into_bytes()
            }
            OutputFormat::Html => output::flame_html::flame_html(
                &self.cct,
                &output::flame_html::HtmlOptions { title, ..Default::default() },
            )
            .into_bytes(),
            OutputFormat::Svg => {
                output::flame_svg::flame_svg(&self.cct, &output::flame_svg::SvgOptions { title, ..Default::default() })
                    .into_bytes()
            }
        }
    }

    /// Writes the session's outputs and prints the summary; returns the files written.
    pub(super) fn write_outputs(&mut self, agent: &Session) -> Vec<String> {
        let mut written = Vec::new();
        for w in std::mem::take(&mut self.jfr) {
            let path = w.path().to_path_buf();
            match w.finish() {
                Ok(()) => self.jfr_done.push(path),
                Err(e) => eprintln!("hpm: {e}"),
            }
        }
        for (path, format) in &agent.outputs {
            if *format != OutputFormat::Jfr {
                if let Err(e) = hpm_core::outfile::write(path, &self.render(*format)) {
                    eprintln!("hpm: {e}");
                    continue;
                }
            } else if !self.jfr_done.iter().any(|p| p.as_os_str() == path.as_str()) {
                continue;
            }
            written.push(path.clone());
        }
        if !agent.opts.quiet {
            eprint!("{}", output::summary(&self.rec, &self.cct, &self.components));
            eprintln!("hpm: wrote {}", written.join(", "));
        }
        written
    }

    /// Writes the profile so far to `path` (a JFR file gets every chunk flushed so far plus
    /// one with the samples since). Returns a line saying what was written.
    pub(super) fn dump(&mut self, path: &str, format: OutputFormat) -> Result<String, String> {
        let bytes = if format == OutputFormat::Jfr {
            if !self.rec.samples.is_empty() || self.chunks == 0 {
                self.flush_chunk(self.session, now_ticks());
            }
            let file = self.jfr.first().map(|w| w.part_path()).or_else(|| self.jfr_done.first().cloned());
            match (&self.jfr_mem, file) {
                (Some(m), _) => m.clone(),
                (None, Some(f)) => std::fs::read(&f).map_err(|e| format!("cannot read {}: {e}", f.display()))?,
                (None, None) => return Err("no JFR data recorded".into()),
            }
        } else {
            self.render(format)
        };
        hpm_core::outfile::write(path, &bytes).map_err(|e| e.to_string())?;
        Ok(format!("wrote {path} ({} samples)", self.cct.total_samples()))
    }
}
