//! `hpm convert FILE.jfr -o OUT.pb.gz|OUT.json`: a recording in the formats other tools read —
//! pprof (`go tool pprof`, speedscope, Pyroscope…) and the versioned JSON of docs/json.md.

use std::path::Path;

use hpm_core::options::OutputFormat;
use hpm_core::output::json::to_json;
use hpm_core::output::pprof::pprof_gz;
use hpm_core::output::stacks::StackTable;

use crate::cmd_report::option_value;

const USAGE: &str = "usage: hpm convert FILE.jfr -o OUT.pb.gz|OUT.json";

pub fn main(args: &[String]) -> Result<(), String> {
    let mut input: Option<&str> = None;
    let mut output: Option<&str> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-h" || a == "--help" {
            println!(
                "{USAGE}\n  -o OUT.pb.gz  pprof (gzip-compressed profile.proto): `go tool pprof -top OUT.pb.gz`\n  \
                 -o OUT.json   JSON, schema hpm-profile/1 (docs/json.md): methods with file, lines, self/total, counters, CPI; the tree"
            );
            return Ok(());
        } else if let Some(v) = option_value(args, &mut i, "-o", "an output file, e.g. -o profile.pb.gz")? {
            output = Some(v);
        } else if a.starts_with('-') && a.len() > 1 {
            return Err(format!("unknown option `{a}` for `hpm convert`; {USAGE}"));
        } else if let Some(f) = input {
            return Err(format!("unexpected argument `{a}` after `{f}`; give one input file and the output with -o"));
        } else {
            input = Some(a);
        }
        i += 1;
    }
    let input = input.ok_or(format!("missing input file; {USAGE}"))?;
    let output = output.ok_or(format!(
        "missing -o OUT: name the output file, e.g. `hpm convert {input} -o profile.pb.gz` (.pb.gz or .json)"
    ))?;
    let pprof = match OutputFormat::from_path(output) {
        Ok(OutputFormat::Pprof) => true,
        Ok(OutputFormat::Json) => false,
        _ => {
            return Err(format!(
                "output `{output}`: use .pb.gz (pprof) or .json (hpm-profile/1); for flame graphs and collapsed stacks use `hpm flamegraph`"
            ))
        }
    };
    if !input.ends_with(".jfr") {
        return Err(format!(
            "input `{input}` is not a .jfr recording; `hpm convert` needs one (collapsed stacks carry no source lines)"
        ));
    }
    if let Err(e) = std::fs::metadata(input) {
        return Err(format!("cannot read `{input}`: {e}; check the path"));
    }
    let (rec, notes) =
        hpm_core::load::load_recording(Path::new(input)).map_err(|e| format!("cannot load recording: {e}"))?;
    crate::cmd_report::warn(&notes);
    let stacks = StackTable::from_recording(&rec);
    let data = if pprof { pprof_gz(&rec, &stacks) } else { to_json(&rec, &stacks).into_bytes() };
    std::fs::write(output, data).map_err(|e| format!("cannot write `{output}`: {e}"))?;
    eprintln!("hpm: wrote {output} ({} samples, {} distinct stacks)", stacks.total_samples(), stacks.entries.len());
    Ok(())
}
