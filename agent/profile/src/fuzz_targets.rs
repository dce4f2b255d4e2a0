//! The fuzzing targets' bodies: every reader of input a user may be handed —
//! the agent's option string, `.jfr` recordings, collapsed stacks, CallerChaining quadruples,
//! phase traces (text and binary), `.ccmap` dumps and OTLP profiles — fed arbitrary bytes. `fuzz/` runs them
//! under libFuzzer (cargo-fuzz, nightly); `fuzz_targets_tests.rs` replays every committed corpus
//! and regression input through them on stable, in the normal test run.
//!
//! A target returns normally on any input; it panics only where a property fails: the reader
//! itself panicked, an accepted input breaks a round trip, or an output step failed on what the
//! reader accepted. Sizes stay within `limits.rs`, as the commands' do; libFuzzer's
//! `-rss_limit_mb`, `-malloc_limit_mb` and `-timeout` (scripts/fuzz.sh) fail an input that
//! costs memory or time out of proportion to its size.

use std::path::Path;

use crate::analysis::callerchain::{parse_quads, quad_events, ChainTree};
use crate::analysis::ccmap::CcMap;
use crate::analysis::phases::CallGraph;
use crate::analysis::{parse_binary_trace, parse_text_trace};
use crate::cct::Cct;
use crate::cct::Measure;
use crate::load::parse_collapsed;
use crate::output::collapsed::to_collapsed;
use crate::output::report::{full_report, ReportOptions, Tallies};
use crate::output::stacks::StackTable;

/// The target names, as `fuzz/fuzz_targets/NAME.rs` and `fuzz/corpus/NAME/`.
pub const TARGETS: [&str; 6] = ["jfr", "collapsed", "quads", "trace", "ccmap", "otlp"];

/// Runs target `name` on `data`; `scratch` is a directory the `jfr` target may write its file in.
pub fn run(name: &str, data: &[u8], scratch: &Path) {
    match name {
        "jfr" => jfr(data, scratch),
        "collapsed" => collapsed(data),
        "quads" => quads(data),
        "trace" => trace(data),
        "ccmap" => ccmap(data),
        "otlp" => otlp(data, scratch),
        other => panic!("no fuzz target {other}"),
    }
}

/// A `.jfr` file, through the reader every command uses (the cut-tail path included), then the
/// outputs a user would ask of it.
pub fn jfr(data: &[u8], scratch: &Path) {
    let path = scratch.join(format!("fuzz-{}.jfr", std::process::id()));
    std::fs::write(&path, data).expect("write the input file");
    let read = crate::jfr::read_recording(&path);
    let _ = std::fs::remove_file(&path);
    let Ok(read) = read else { return };
    let rec = read.recording;
    let cct = Cct::from_recording(&rec, true);
    let stacks = StackTable::from_recording(&rec);
    assert_eq!(stacks.total_samples(), rec.samples.len() as u64, "the stack table lost samples");
    let _ = crate::output::json::to_json(&rec, &stacks);
    let _ = crate::output::pprof::pprof_gz(&rec, &stacks);
    let _ = full_report(Some(&rec), &cct, &Tallies::of(&rec), &ReportOptions::default());
    let _ = CcMap::from_recording_within(&rec, crate::limits::ccmap_max_contexts(data.len() as u64));
}

/// OTLP profiles as each framing reads them (a bare request, length-prefixed, JSON lines),
/// any service, then the report of what was merged.
pub fn otlp(data: &[u8], scratch: &Path) {
    for ext in ["otlp", "pb", "jsonl"] {
        let path = scratch.join(format!("fuzz-{}.{ext}", std::process::id()));
        std::fs::write(&path, data).expect("write the input file");
        let read = crate::otlp::read::read_fleet(std::slice::from_ref(&path), &Default::default());
        let _ = std::fs::remove_file(&path);
        let Ok(fleet) = read else { continue };
        let rec = fleet.recording;
        let cct = Cct::from_recording(&rec, true);
        let stacks = StackTable::from_recording(&rec);
        assert_eq!(
            stacks.total_samples(),
            rec.samples.iter().map(|s| s.repeats()).sum::<u64>(),
            "the stack table lost samples"
        );
        let _ = full_report(Some(&rec), &cct, &Tallies::of(&rec), &ReportOptions::default());
    }
}

/// Collapsed stacks: accepted input survives writing and reading back with its sample count.
pub fn collapsed(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(cct) = parse_collapsed(text) else { return };
    let again = parse_collapsed(&to_collapsed(&cct, Measure::Samples)).expect("our own collapsed output reads back");
    assert_eq!(again.total_samples(), cct.total_samples(), "the round trip changed the sample count");
    let _ = full_report(None, &cct, &Tallies::default(), &ReportOptions::default());
    let _ = CcMap::from_cct_within(&cct, crate::limits::ccmap_max_contexts(data.len() as u64));
}

/// CallerChaining quadruples: the tree (bounded), its rendering and statistics.
pub fn quads(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(q) = parse_quads(text) else { return };
    if let Ok(tree) = ChainTree::build(&q) {
        let _ = tree.render();
        let _ = tree.stats(&quad_events(&q));
    }
}

/// Phase traces, as text and as the binary HPMTRACE format: the call graph and the selection.
pub fn trace(data: &[u8]) {
    let text = std::str::from_utf8(data).ok().and_then(|t| parse_text_trace(t).ok());
    for t in text.into_iter().chain(parse_binary_trace(data).ok()) {
        if let Ok(g) = CallGraph::build(&t) {
            let sel = g.select(0.1, 0.05);
            let _ = sel.overhead();
            let _ = g.method_stats();
        }
    }
}

/// `.ccmap` dumps: an accepted dump writes back to the same text.
pub fn ccmap(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(map) = CcMap::parse_dump(text) else { return };
    let dump = map.dump();
    let again = CcMap::parse_dump(&dump).expect("our own dump reads back");
    assert_eq!(again.dump(), dump, "a dump read back writes differently");
    let _ = map.hottest_methods(10);
    let _ = map.hottest_paths(10);
}
