//! `hpm report FILE [--top N] [--min-percent P] [--threads] [--from-phase NAME[=INDEX]]`: the
//! text report of a recording
//! (`.jfr`) or of collapsed stacks (`.collapsed`). Also holds the input loading shared with
//! `hpm flamegraph`.

use hpm_core::output::report::{full_report, ReportOptions};

/// A loaded profile: metadata when the source has any, the tree, and component counts.
pub(crate) type Input = hpm_core::load::Profile;

/// Loads `.jfr` or collapsed stacks. With `threads`, the tree gets a `[name tid=N]` level
/// under the root (JFR only: collapsed stacks carry no thread information).
pub(crate) fn load_input(path: &str, threads: bool) -> Result<Input, String> {
    load_input_from(path, threads, None)
}

/// [`load_input`], keeping only the samples from the phase marker `from_phase` on (`NAME` or
/// `NAME=INDEX`, the Java bridge's `hpm.Phase` events; `.jfr` only). Warnings (an incomplete
/// last chunk, the samples left out) go to stderr.
pub(crate) fn load_input_from(path: &str, threads: bool, from_phase: Option<&str>) -> Result<Input, String> {
    let input = hpm_core::load::load_profile(path, threads, from_phase)?;
    warn(&input.notes);
    Ok(input)
}

/// Prints the loaders' warnings, one line each.
pub(crate) fn warn(notes: &[String]) {
    for n in notes {
        eprintln!("hpm: {n}");
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// A .jfr recording or collapsed stacks (.collapsed)
    file: String,
    /// Rows in the method tables
    #[arg(long, default_value_t = 20, value_parser = crate::cmd_compare::positive::<usize>)]
    top: usize,
    /// Call-tree frames below P% of the samples are summarised
    #[arg(long, value_name = "P", default_value_t = 1.0, value_parser = percent_value)]
    min_percent: f64,
    /// One call tree per thread (.jfr only)
    #[arg(long)]
    threads: bool,
    /// Only the samples from the first phase marker NAME (iteration INDEX) on, e.g. iteration=5
    /// (markers: the Java bridge)
    #[arg(long, value_name = "NAME[=INDEX]")]
    from_phase: Option<String>,
}

/// A percentage between 0 and 100, `%` allowed.
fn percent_value(v: &str) -> Result<f64, String> {
    v.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or(format!("a percentage between 0 and 100 is needed, got `{v}`"))
}

pub fn main(a: Args) -> Result<(), String> {
    let opts = ReportOptions { top: a.top, min_percent: a.min_percent, threads: a.threads };
    let input = load_input_from(&a.file, opts.threads, a.from_phase.as_deref())?;
    print!("{}", full_report(input.rec.as_ref(), &input.cct, &input.components, &opts));
    Ok(())
}
