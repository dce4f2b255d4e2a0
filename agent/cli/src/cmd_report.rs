//! `hpm report FILE [--top N] [--min-percent P] [--threads] [--from-phase NAME[=INDEX]]
//! [--thread REGEX] [--from TIME] [--to TIME] [--by class|field|space] [--instructions
//! [--method REGEX]]`: the text report of a recording (`.jfr`) or of collapsed stacks
//! (`.collapsed`); with `--by`, the table of what the samples' data addresses touched; with
//! `--instructions`, the samples per instruction of compiled code.

use hpm_profile::cct::Measure;
use hpm_profile::output::data::DataBy;
use hpm_profile::output::instructions::InstructionOptions;
use hpm_profile::output::report::{data_report, full_report, ReportOptions};

use hpm_profile::text::terminal_safe;

use crate::input::{load_input, SampleArgs};
use crate::values::{percent_value, positive};

#[derive(clap::Args)]
pub struct Args {
    /// A .jfr recording, OTLP profiles (.otlp, .pb, .json, or a directory of them; --service)
    /// or collapsed stacks (.collapsed)
    file: String,
    /// Rows in the method tables [default: 20; 100 with --instructions]
    #[arg(long, value_parser = positive::<usize>)]
    top: Option<usize>,
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
    /// Only the samples per instruction of compiled code, decoded from the code as installed,
    /// with method, bytecode index and line: the top ones by samples and by each counter
    /// (samplers that record the instruction pointer: asgct, chain; .jfr only)
    #[arg(long, conflicts_with_all = ["by", "threads", "min_percent", "event"])]
    instructions: bool,
    /// With --instructions: only instructions of methods matching REGEX (`Class.method`; the
    /// leaf frame's method, inlined or not, or the compiled method), e.g. 'Hot\.loop$'
    #[arg(long, value_name = "REGEX", requires = "instructions")]
    method: Option<String>,
    #[command(flatten)]
    samples: SampleArgs,
}

pub fn main(a: Args) -> Result<(), String> {
    let instructions = InstructionOptions::new(a.top.unwrap_or(100), a.method.as_deref())?;
    let input = load_input(&a.file, a.threads, a.from_phase.as_deref(), &a.samples, None, a.instructions)?;
    if a.instructions {
        let Some(rec) = input.rec.as_ref() else {
            return Err(format!("--instructions needs a .jfr recording: `{}` has no instruction pointers", a.file));
        };
        print!("{}", terminal_safe(&hpm_profile::output::instructions::report(rec, &instructions)?));
        return Ok(());
    }
    let top = a.top.unwrap_or(20);
    // The JVM's events are counted by what they weigh (bytes, ns waited), as flame graphs draw them.
    let by = if a.samples.event.is_some() { Measure::Weight } else { Measure::Samples };
    let unit = a.samples.event.map_or(hpm_profile::text::Unit::Samples, |e| e.unit());
    let opts = ReportOptions {
        top,
        min_percent: a.min_percent,
        threads: a.threads,
        filtered: input.filtered.clone(),
        by,
        unit,
    };
    match (a.by, input.rec.as_ref()) {
        (Some(by), Some(rec)) => print!("{}", terminal_safe(&data_report(rec, &input.cct, &input.tallies, by, &opts))),
        (Some(_), None) => return Err(format!("--by needs a .jfr recording: `{}` has no data addresses", a.file)),
        (None, rec) => {
            // Names come from the recording: shown, never obeyed by the terminal.
            print!("{}", terminal_safe(&full_report(rec, &input.cct, &input.tallies, &opts)));
            // The JVM's events, by class and by site (unless --event made them the samples).
            if let (Some(rec), None) = (rec, a.samples.event) {
                print!("{}", terminal_safe(&hpm_profile::output::jvmevents::report(rec, top)));
                print!("{}", terminal_safe(&hpm_profile::output::pinned::report(rec, top)));
                if let Some(c) = &input.creation {
                    print!("{}", terminal_safe(&c.report(top)));
                }
            }
        }
    }
    Ok(())
}
