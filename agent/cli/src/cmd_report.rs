//! `hpm report FILE [--top N] [--min-percent P] [--threads] [--from-phase NAME[=INDEX]]`: the
//! text report of a recording
//! (`.jfr`) or of collapsed stacks (`.collapsed`). Also holds the input loading shared with
//! `hpm flamegraph`.

use std::path::Path;

use hpm_core::cct::Cct;
use hpm_core::model::{Recording, VmComponent};
use hpm_core::output::report::{component_counts, full_report, ReportOptions};

const USAGE: &str =
    "usage: hpm report FILE.jfr|FILE.collapsed [--top N] [--min-percent P] [--threads] [--from-phase NAME[=INDEX]]";

/// Extensions read as collapsed stacks.
const COLLAPSED_EXTS: [&str; 3] = ["collapsed", "folded", "txt"];

/// A loaded profile: metadata when the source has any, the tree, and component counts.
pub(crate) struct Input {
    pub rec: Option<Recording>,
    pub cct: Cct,
    pub components: Vec<(VmComponent, u64)>,
}

/// Loads `.jfr` or collapsed stacks. With `threads`, the tree gets a `[name tid=N]` level
/// under the root (JFR only: collapsed stacks carry no thread information).
pub(crate) fn load_input(path: &str, threads: bool) -> Result<Input, String> {
    load_input_from(path, threads, None)
}

/// [`load_input`], keeping only the samples from the phase marker `from_phase` on (`NAME` or
/// `NAME=INDEX`, the Java bridge's `hpm.Phase` events; `.jfr` only).
pub(crate) fn load_input_from(path: &str, threads: bool, from_phase: Option<&str>) -> Result<Input, String> {
    let p = Path::new(path);
    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
    let is_jfr = ext == "jfr";
    if !is_jfr && !COLLAPSED_EXTS.contains(&ext) {
        let what = if ext.is_empty() { "has no extension".to_string() } else { format!("has extension `.{ext}`") };
        return Err(format!(
            "input `{path}` {what}; give a .jfr recording or collapsed stacks (.collapsed, .folded, .txt)"
        ));
    }
    match std::fs::metadata(p) {
        Err(e) => return Err(format!("cannot read `{path}`: {e}; check the path")),
        Ok(m) if m.is_dir() => return Err(format!("`{path}` is a directory; give a .jfr or .collapsed file")),
        Ok(_) => {}
    }
    if is_jfr {
        let mut rec = hpm_core::jfr::read_recording(p).map_err(|m| format!("cannot load recording: {m}"))?;
        if let Some(spec) = from_phase {
            let phases = hpm_core::jfr::marks::read_phases(p).map_err(|m| format!("cannot load recording: {m}"))?;
            let left_out = hpm_core::jfr::marks::cut_from_phase(&mut rec.samples, &phases, spec)
                .map_err(|e| format!("--from-phase: {e}"))?;
            eprintln!("hpm: from phase `{spec}` on: {} samples kept, {left_out} before it left out", rec.samples.len());
        }
        let cct = Cct::from_recording(&rec, threads);
        let components = component_counts(&rec.samples);
        // The outputs need only metadata from here on.
        rec.samples = Vec::new();
        Ok(Input { rec: Some(rec), cct, components })
    } else {
        if from_phase.is_some() {
            return Err(format!(
                "--from-phase needs a .jfr recording with hpm.Phase markers; `{path}` is collapsed stacks"
            ));
        }
        if threads {
            return Err(format!(
                "--threads needs a .jfr recording: collapsed stacks like `{path}` carry no thread information \
                 (async-profiler's `threads` option already puts thread frames into them)"
            ));
        }
        let cct = hpm_core::load::load_cct(p).map_err(|e| format!("{e}; expected lines of `frame;frame;... count`"))?;
        Ok(Input { rec: None, cct, components: Vec::new() })
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
