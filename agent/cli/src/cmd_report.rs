//! `hpm report FILE [--top N] [--min-percent P] [--threads] [--from-phase NAME[=INDEX]]`: the
//! text report of a recording
//! (`.jfr`) or of collapsed stacks (`.collapsed`). Also holds the input loading shared with
//! `hpm flamegraph`.

use hpm_core::output::report::{full_report, ReportOptions};

const USAGE: &str =
    "usage: hpm report FILE.jfr|FILE.collapsed [--top N] [--min-percent P] [--threads] [--from-phase NAME[=INDEX]]";

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

/// The value after an option, as `--opt V` or `--opt=V`.
pub(crate) fn option_value<'a>(
    args: &'a [String],
    i: &mut usize,
    name: &str,
    what: &str,
) -> Result<Option<&'a str>, String> {
    let a = args[*i].as_str();
    if a == name {
        *i += 1;
        return match args.get(*i) {
            Some(v) => Ok(Some(v.as_str())),
            None => Err(format!("{name} needs {what}")),
        };
    }
    if let Some(v) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
        return Ok(Some(v));
    }
    Ok(None)
}

pub fn main(args: &[String]) -> Result<(), String> {
    let mut opts = ReportOptions::default();
    let mut file: Option<&str> = None;
    let mut from_phase: Option<&str> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-h" || a == "--help" {
            println!(
                "{USAGE}\n  --top N          rows in the method tables (default 20)\n  --min-percent P  \
                      call-tree frames below P% of samples are summarised (default 1)\n  --threads        \
                      one call tree per thread (.jfr only)\n  --from-phase NAME[=INDEX]  only the samples from \
                      the first phase marker NAME (iteration INDEX) on, e.g. iteration=5 (markers: the Java bridge)"
            );
            return Ok(());
        } else if let Some(v) = option_value(args, &mut i, "--top", "a number of rows, e.g. --top 30")? {
            opts.top = v
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(format!("--top needs a positive whole number, got `{v}`"))?;
        } else if let Some(v) = option_value(args, &mut i, "--min-percent", "a percentage, e.g. --min-percent 0.5")? {
            opts.min_percent = v
                .trim_end_matches('%')
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or(format!("--min-percent needs a percentage between 0 and 100, got `{v}`"))?;
        } else if let Some(v) = option_value(args, &mut i, "--from-phase", "a phase, e.g. --from-phase iteration=5")? {
            from_phase = Some(v);
        } else if a == "--threads" {
            opts.threads = true;
        } else if a.starts_with('-') && a.len() > 1 {
            return Err(format!("unknown option `{a}` for `hpm report`; {USAGE}"));
        } else if let Some(f) = file {
            return Err(format!("unexpected argument `{a}` after `{f}`; give one input file"));
        } else {
            file = Some(a);
        }
        i += 1;
    }
    let file = file.ok_or(format!("missing input file; {USAGE}"))?;
    let input = load_input_from(file, opts.threads, from_phase)?;
    print!("{}", full_report(input.rec.as_ref(), &input.cct, &input.components, &opts));
    Ok(())
}
