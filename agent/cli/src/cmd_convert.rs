//! `hpm convert FILE.jfr|FLEET.pb -o OUT.pb.gz|OUT.json|OUT.otlp [--service NAME] [--host NAME]
//! [--thread REGEX] [--from TIME] [--to TIME]`: a recording, or the merged OTLP profiles of a
//! service, in the formats other tools read — pprof (`go tool pprof`, speedscope, Pyroscope…), the
//! versioned JSON of docs/json.md, and an OTLP profiles request (an OpenTelemetry Collector).

use std::path::Path;

use hpm_profile::output::format::{render, BuiltFrom, Format, Look, Profile, Txt};
use hpm_profile::output::stacks::StackTable;

use crate::input::SampleArgs;

#[derive(clap::Args)]
pub struct Args {
    /// A .jfr recording, or OTLP profiles (.otlp, .pb, .json, or a directory of them)
    input: String,
    /// OUT.pb.gz: pprof (gzip-compressed profile.proto, `go tool pprof -top OUT.pb.gz`);
    /// OUT.json: JSON, schema hpm-profile/1 (docs/json.md);
    /// OUT.otlp: an OTLP profiles request, protobuf (POST it to a collector's /v1development/profiles)
    #[arg(short, long, value_name = "OUT")]
    output: String,
    #[command(flatten)]
    samples: SampleArgs,
}

pub fn main(a: Args) -> Result<(), String> {
    let (input, output) = (a.input.as_str(), a.output.as_str());
    let format = match Format::of_path(output, Txt::Refused) {
        Some(f) if f.built_from() == BuiltFrom::Table => f,
        _ => {
            return Err(format!(
                "output `{output}`: use .pb.gz (pprof) or .json (hpm-profile/1) or .otlp (OTLP profiles); for flame graphs and collapsed stacks use `hpm flamegraph`"
            ))
        }
    };
    let path = Path::new(input);
    if !hpm_profile::load::is_jfr_path(path) && !hpm_profile::otlp::is_otlp_path(path) {
        return Err(format!(
            "input `{input}` is not a .jfr recording or OTLP profiles; `hpm convert` needs one (collapsed stacks carry \
             no source lines)"
        ));
    }
    if let Err(e) = std::fs::metadata(input) {
        return Err(format!("cannot read `{input}`: {e}; check the path"));
    }
    let filter = a.samples.filter()?;
    let (mut rec, notes) = hpm_profile::load::load_any_recording(path, &filter.fleet)
        .map_err(|e| format!("cannot load recording: {e}"))?;
    crate::input::warn(&notes);
    if filter.no_idle {
        hpm_profile::output::idle::leave_out(&mut rec);
    }
    filter.keep_lock_classes(&mut rec);
    if let Some(sel) = a.samples.event {
        // The JVM's events as the samples, weighted by bytes or time waited.
        if hpm_profile::output::jvmevents::project(&mut rec, sel) == 0 {
            return Err(format!(
                "--event: `{input}` has no such events; record them with the agent options alloc, lock"
            ));
        }
    }
    let filtered = filter.apply(&mut rec)?.map(|f| format!("; {}", f.describe())).unwrap_or_default();
    let stacks = StackTable::from_recording(&rec);
    let data =
        render(format, Profile { tree: None, table: Some((&rec, &stacks)) }, &Look::default()).unwrap_or_default();
    hpm_profile::outfile::write(output, &data).map_err(|e| e.to_string())?;
    // The JVM's events are counted as events (their weights are in the file).
    let counted = if a.samples.event.is_some() { "events" } else { "samples" };
    eprintln!(
        "hpm: wrote {output} ({} {counted}, {} distinct stacks{filtered})",
        stacks.total_samples(),
        stacks.entries.len()
    );
    Ok(())
}
