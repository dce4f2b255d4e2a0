//! `hpm flamegraph FILE(.jfr|.collapsed) -o OUT(.html|.svg|.collapsed) [--threads] [--title T]
//! [--weight] [--thread REGEX] [--from TIME] [--to TIME] [--by class|field|space]`.

use std::path::Path;

use hpm_profile::cct::Measure;
use hpm_profile::output::format::{render, BuiltFrom, Format, Look, Profile, Txt};
use hpm_profile::output::report::event_line;

use crate::input::{load_input, SampleArgs};

#[derive(clap::Args)]
pub struct Args {
    /// A .jfr recording, OTLP profiles (.otlp, .pb, .json, or a directory of them; --service)
    /// or collapsed stacks (.collapsed)
    input: String,
    /// The output: .html (interactive, self-contained), .svg (static) or .collapsed (stack lines)
    #[arg(short, long, value_name = "OUT")]
    output: String,
    /// One tower per thread (.jfr only)
    #[arg(long)]
    threads: bool,
    /// Page title
    #[arg(long, value_name = "T")]
    title: Option<String>,
    /// Widths by event weight (period) instead of sample counts
    #[arg(long)]
    weight: bool,
    /// A root frame per class, field or space the samples' data addresses touched (agent
    /// option `data`; .jfr only): class, field or space
    #[arg(long, value_name = "WHAT", value_parser = hpm_profile::output::data::DataBy::parse, conflicts_with = "threads")]
    by: Option<hpm_profile::output::data::DataBy>,
    #[command(flatten)]
    samples: SampleArgs,
}

/// The format of a graph or stacks output from its extension (`.txt` is collapsed stacks);
/// the error says which ones there are.
pub(crate) fn output_format(out: &str) -> Result<Format, String> {
    match Format::of_path(out, Txt::Collapsed) {
        Some(f) if f.built_from() == BuiltFrom::Tree => Ok(f),
        _ => {
            let ext = Path::new(out).extension().and_then(|e| e.to_str()).unwrap_or("");
            let what = if ext.is_empty() { "has no extension".to_string() } else { format!("has extension `.{ext}`") };
            Err(format!("output `{out}` {what}; use .html (interactive), .svg (static) or .collapsed (stacks)"))
        }
    }
}

pub fn main(a: Args) -> Result<(), String> {
    let (input, output, threads) = (a.input.as_str(), a.output.as_str(), a.threads);
    // The JVM's events are drawn by what they stand for: bytes or time waited.
    let by = if a.weight || a.samples.event.is_some() { Measure::Weight } else { Measure::Samples };
    let title = a.title.as_deref();
    let format = output_format(output)?;
    let loaded = load_input(input, threads, None, &a.samples, a.by, false)?;

    let file_name = Path::new(input).file_name().and_then(|f| f.to_str()).unwrap_or(input);
    let title = title.map(str::to_string).unwrap_or_else(|| format!("hpm: {file_name}"));
    let subtitle = loaded.rec.as_ref().map(|r| {
        let mut s = format!("event {}", event_line(r));
        if !loaded.cct.counters.is_empty() {
            s.push_str(&format!("; counters {}", loaded.cct.counters.join(", ")));
        }
        if let Some(f) = &loaded.filtered {
            s.push_str(&format!("; {}", f.describe()));
        }
        s
    });
    let unit = a.samples.event.map_or(hpm_profile::text::Unit::Samples, |e| e.unit());
    let look = Look { title, subtitle, by, unit };
    let text = render(format, Profile { tree: Some(&loaded.cct), table: None }, &look).unwrap_or_default();
    hpm_profile::outfile::write(output, &text).map_err(|e| e.to_string())?;
    let filtered = loaded.filtered.as_ref().map(|f| format!("; {}", f.describe())).unwrap_or_default();
    // The JVM's events are counted as events, and said with what they weigh.
    let counted = match a.samples.event {
        Some(_) => format!(
            "{} events, {}",
            hpm_profile::text::group(loaded.cct.total_samples()),
            unit.amount(loaded.cct.root().total_weight)
        ),
        None => format!("{} samples", hpm_profile::text::group(loaded.cct.total_samples())),
    };
    eprintln!("hpm: wrote {output} ({counted}, {} frames{filtered})", loaded.cct.nodes.len().saturating_sub(1));
    Ok(())
}
