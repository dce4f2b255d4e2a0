//! `hpm diff A B [--event alloc|lock|monitor|park] [-o OUT.html|OUT.svg] [--by
//! change|self|total] [--top N] [--exact-names] [--title T] [--thread REGEX] [--from TIME]
//! [--to TIME]`: what changed between two profiles — the methods and calling contexts whose
//! share of the samples (or of the bytes or time the JVM's events weigh) grew or shrank most,
//! and a differential flame graph of B.

use std::path::Path;

use hpm_profile::analysis::diff::{diff, diff_report, shared_event, DiffOptions, SortBy};
use hpm_profile::cct::{Cct, Measure};
use hpm_profile::output::flame_html::{flame_html_diff, HtmlOptions};
use hpm_profile::output::flame_svg::{flame_svg_diff, SvgOptions};
use hpm_profile::output::jvmevents::EventSel;
use hpm_profile::text::Unit;

use crate::cmd_flamegraph::output_format;
use crate::input::{warn, Input, SampleArgs};
use crate::values::positive;
use hpm_profile::output::format::Format;

#[derive(clap::Args)]
#[command(after_help = "\
Shares are of each profile's own samples, so runs of different lengths compare; a change is
B's share minus A's in percentage points (+ grew, - shrank). A method's self share counts the
samples that end in it, its total share the samples it is on the stack of. async-profiler's
frame names are read as hpm's (java/lang/Thread.run_[j] is java.lang.Thread.run); the parts of
generated class names that differ between runs (lambda numbers, hidden-class addresses) are
dropped, as `hpm compare` does, unless --exact-names.

The first table lists methods, largest change first; the second, calling contexts (a frame with
its callers) by change in self share. With -o, a differential flame graph of B: each frame as
wide as in B's flame graph, red where its share of all samples grew since A, blue where it
shrank, deeper for larger changes; frames of A that B does not have are listed above the graph.
--thread, --from and --to select the samples of both profiles (.jfr only).

Recordings with no CPU samples (agent options alloc, lock without cpu; JFR files) are compared
on the JVM's events both have, weighed in bytes allocated or time waited: allocations if both
have them and lock waits (say --event lock for those), else the one kind they share.

Example: hpm diff before.jfr after.jfr -o diff.html")]
pub struct Args {
    /// The profile before: a .jfr recording, OTLP profiles (.otlp, .pb, .json, a directory) or
    /// collapsed stacks (ours or async-profiler's)
    a: String,
    /// The profile after, compared with A
    b: String,
    // First among the options: `--event` says what is compared (the samples, or the JVM's
    // events by what they weigh).
    #[command(flatten)]
    samples: SampleArgs,
    /// Also write a differential flame graph of B: .html (interactive) or .svg (static)
    #[arg(short, long, value_name = "OUT")]
    output: Option<String>,
    /// What orders the method table
    #[arg(long, value_enum, default_value_t = By::Change)]
    by: By,
    /// Rows per table
    #[arg(long, default_value_t = 20, value_parser = positive::<usize>)]
    top: usize,
    /// Compare frame names as read (default: lambda numbers and hidden-class addresses dropped)
    #[arg(long)]
    exact_names: bool,
    /// Title of the flame graph
    #[arg(long, value_name = "T")]
    title: Option<String>,
    /// B's service, where it is not --service's: `hpm diff fleet.pb fleet.pb --service A
    /// --service-b B` (OTLP input only)
    #[arg(long, value_name = "NAME")]
    service_b: Option<String>,
    /// B's host, where it is not --host's (OTLP input only)
    #[arg(long, value_name = "NAME")]
    host_b: Option<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum By {
    /// The larger of the changes in self and in total share
    Change,
    /// The change in self share
    #[value(name = "self")]
    SelfShare,
    /// The change in total share
    #[value(name = "total")]
    TotalShare,
}

pub fn main(a: Args) -> Result<(), String> {
    let format = match a.output.as_deref().map(output_format).transpose()? {
        Some(Format::Collapsed) => {
            return Err(format!(
                "output `{}`: a differential flame graph is .html (interactive) or .svg (static)",
                a.output.as_deref().unwrap_or_default()
            ))
        }
        f => f,
    };
    let by = match a.by {
        By::Change => SortBy::Change,
        By::SelfShare => SortBy::SelfShare,
        By::TotalShare => SortBy::TotalShare,
    };
    let (ca, cb, unit) = load_pair(&a)?;
    let d = diff(ca, cb, &DiffOptions { by, normalize: !a.exact_names });
    print!("{}", hpm_profile::text::terminal_safe(&diff_report(&d, &a.a, &a.b, by, a.top, unit)));
    if let (Some(out), Some(format)) = (a.output.as_deref(), format) {
        let name = |p: &str| Path::new(p).file_name().and_then(|f| f.to_str()).unwrap_or(p).to_string();
        let title = a.title.clone().unwrap_or_else(|| format!("hpm diff: {} -> {}", name(&a.a), name(&a.b)));
        let what = unit.whole();
        let subtitle = Some(format!(
            "widths: {}'s {what}; colour: the change of each frame's share of all {what} since {} \
             (red grew, blue shrank)",
            name(&a.b),
            name(&a.a)
        ));
        let text = match format {
            Format::Svg => {
                flame_svg_diff(&d.b_tree, &d.baseline, &SvgOptions { title, subtitle, unit, ..Default::default() })
            }
            _ => flame_html_diff(&d.b_tree, &d.baseline, &HtmlOptions { title, subtitle, unit, ..Default::default() }),
        };
        hpm_profile::outfile::write(out, text.as_bytes()).map_err(|e| e.to_string())?;
        eprintln!(
            "hpm: wrote {out} (differential flame graph: {} frames of B; {} frames only in A, {} of them listed)",
            d.b_tree.nodes.len().saturating_sub(1),
            d.baseline.a_only_frames,
            d.baseline.a_only.len()
        );
    }
    Ok(())
}

/// Loads A and B as the trees to compare and what their numbers count. Without `--event`, two
/// profiles with samples are compared on them; when either has none, on the JVM's events both
/// recordings have (allocations or lock waits, weighed in bytes or time), said on stderr when
/// they have both kinds.
fn load_pair(a: &Args) -> Result<(Cct, Cct, Unit), String> {
    let filter = a.samples.filter()?;
    let mut filter_b = filter.clone();
    filter_b.fleet.service = a.service_b.clone().or(filter_b.fleet.service);
    filter_b.fleet.host = a.host_b.clone().or(filter_b.fleet.host);
    let load = |path: &str, event: Option<EventSel>, b: bool| {
        let filter = if b { &filter_b } else { &filter };
        hpm_profile::load::load_profile(path, false, None, filter, None, event, false)
    };
    let (mut pa, mut pb) = (load(&a.a, a.samples.event, false)?, load(&a.b, a.samples.event, true)?);
    let mut event = a.samples.event;
    let empty = |p: &Input| p.cct.total_samples() == 0;
    if event.is_none() && (empty(&pa) || empty(&pb)) {
        let present = |p: &Input| p.rec.as_ref().map(EventSel::present).unwrap_or_default();
        let (sel, note) = shared_event(&present(&pa), &present(&pb)).map_err(|e| {
            match [(&pa, &a.a), (&pb, &a.b)].into_iter().find(|(p, _)| empty(p)) {
                Some((_, path)) if !(empty(&pa) && empty(&pb)) => format!("{path}: the profile has no samples; {e}"),
                _ => e,
            }
        })?;
        if let Some(n) = note {
            eprintln!("hpm: {n}");
        }
        (pa, pb) = (load(&a.a, Some(sel), false)?, load(&a.b, Some(sel), true)?);
        event = Some(sel);
    }
    warn(&pa.notes);
    warn(&pb.notes);
    for (p, path) in [(&pa, &a.a), (&pb, &a.b)] {
        if p.cct.total_samples() == 0 {
            return Err(format!("{path}: the profile has no samples"));
        }
    }
    // The JVM's events are compared by what they weigh (bytes, ns waited), as reported.
    Ok(match event {
        Some(sel) => (pa.cct.counted_by(Measure::Weight), pb.cct.counted_by(Measure::Weight), sel.unit()),
        None => (pa.cct, pb.cct, Unit::Samples),
    })
}
