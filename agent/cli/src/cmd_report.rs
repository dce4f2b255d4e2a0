//! `hpm report FILE [--top N] [--min-percent P] [--threads] [--from-phase NAME[=INDEX]]
//! [--thread REGEX] [--from TIME] [--to TIME] [--by class|field|space]`: the text report of a
//! recording (`.jfr`) or of collapsed stacks (`.collapsed`); with `--by`, the table of what the
//! samples' data addresses touched.

use hpm_core::output::data::DataBy;
use hpm_core::output::report::{data_report, full_report, ReportOptions};

use crate::input::{load_input, SampleArgs};
use crate::values::{percent_value, positive};

#[derive(clap::Args)]
pub struct Args {
    /// A .jfr recording or collapsed stacks (.collapsed)
    file: String,
    /// Rows in the method tables
    #[arg(long, default_value_t = 20, value_parser = positive::<usize>)]
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
    /// Only the table of what data addresses touched (agent option `data`), by the object's
    /// class, its field, or the heap space: class, field or space
    #[arg(long, value_name = "WHAT", value_parser = DataBy::parse)]
    by: Option<DataBy>,
    #[command(flatten)]
    samples: SampleArgs,
}

pub fn main(a: Args) -> Result<(), String> {
    let input = load_input(&a.file, a.threads, a.from_phase.as_deref(), &a.samples, None)?;
    let opts =
        ReportOptions { top: a.top, min_percent: a.min_percent, threads: a.threads, filtered: input.filtered.clone() };
    match (a.by, input.rec.as_ref()) {
        (Some(by), Some(rec)) => print!("{}", data_report(rec, &input.cct, &input.tallies, by, &opts)),
        (Some(_), None) => return Err(format!("--by needs a .jfr recording: `{}` has no data addresses", a.file)),
        (None, rec) => {
            print!("{}", full_report(rec, &input.cct, &input.tallies, &opts));
            // The JVM's events, by class and by site (unless --event made them the samples).
            if let (Some(rec), None) = (rec, a.samples.event) {
                print!("{}", hpm_core::output::jvmevents::report(rec, a.top));
                if let Some(c) = &input.creation {
                    print!("{}", c.report(a.top));
                }
            }
        }
    }
    Ok(())
}
