//! `hpm ccmap FILE [--top N] [--min-count N] [--dump OUT]`: the Call Context Map of a profile
//! (Chilingarova & Safonov): hottest methods, hottest call paths with the callers they occur
//! below, and call sites that have seen one target.

use std::path::Path;

use hpm_profile::analysis::ccmap::{CcMap, SingleTarget};

use crate::input::load_profile;
use crate::values::positive;

#[derive(clap::Args)]
pub struct Args {
    /// A .jfr recording (call sites from bytecode indexes), collapsed stacks, or a .ccmap dump
    file: String,
    /// Rows per table
    #[arg(long, default_value_t = 10, value_parser = positive::<usize>)]
    top: usize,
    /// Prune nodes counted fewer than N times first
    #[arg(long, value_name = "N", value_parser = positive::<u64>)]
    min_count: Option<u64>,
    /// Write the map to OUT (text; `hpm ccmap OUT` reads it back)
    #[arg(long, value_name = "OUT")]
    dump: Option<String>,
}

fn load(path: &str) -> Result<CcMap, String> {
    let p = Path::new(path);
    // The map's contexts are bounded by the input's size (limits.rs).
    let max = || {
        let bytes = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        hpm_profile::limits::ccmap_max_contexts(bytes)
    };
    let too_many = |max| format!("{path}: {}", hpm_profile::limits::LimitError::TooManyContexts { max });
    match p.extension().and_then(|e| e.to_str()) {
        Some("ccmap") => CcMap::load(p).map_err(|e| e.to_string()),
        _ if hpm_profile::load::is_jfr_path(p) => {
            let (rec, notes) =
                hpm_profile::load::load_recording(p).map_err(|e| format!("cannot load recording: {e}"))?;
            crate::input::warn(&notes);
            if rec.samples.is_empty() {
                return Err(format!("{path}: the recording has no samples"));
            }
            CcMap::from_recording_within(&rec, max()).map_err(too_many)
        }
        _ => CcMap::from_cct_within(&load_profile(path)?, max()).map_err(too_many),
    }
}

fn call(caller: &str, offset: i32, callee: &str) -> String {
    if offset >= 0 {
        format!("{caller}@{offset} -> {callee}")
    } else {
        format!("{caller} -> {callee}")
    }
}

fn targets(title: &str, v: &[SingleTarget], top: usize) {
    println!("\n{title}:");
    if v.is_empty() {
        println!("  (none)");
    }
    for t in v.iter().take(top) {
        let (caller, context) = t.context.split_last().map_or(("", &[][..]), |(c, rest)| (c.as_str(), rest));
        let ctx = if context.is_empty() { String::new() } else { format!("{} > ", context.join(" > ")) };
        println!(
            "  {:>8}  {}",
            t.count,
            hpm_profile::text::terminal_safe(&format!("{ctx}{}", call(caller, t.offset, &t.callee)))
        );
    }
}

pub fn main(a: Args) -> Result<(), String> {
    let top = a.top;
    let mut map = load(&a.file)?;
    if let Some(n) = a.min_count {
        map = map.prune(n);
    }
    if let Some(out) = &a.dump {
        map.save(Path::new(out))?;
    }
    println!("samples: {}", map.samples());
    println!(
        "nodes: {} methods, {} call sites, {} callees, {} call-site refs, {} callee refs",
        map.methods().len(),
        map.sites().len(),
        map.callees().len(),
        map.site_refs().len(),
        map.callee_refs().len()
    );
    println!("\nhottest methods (executions, on top of stack):");
    for m in map.hottest_methods(top) {
        println!("  {:>8}  {:>8}  {}", m.total, m.top, hpm_profile::text::terminal_safe(&m.name));
    }
    println!("\nhottest paths (calls in that context, then the callers it occurs below):");
    let paths = map.hottest_paths(top);
    if paths.is_empty() {
        println!("  (none: no sample had three or more frames)");
    }
    for p in &paths {
        println!("  {:>8}  {}", p.count, hpm_profile::text::terminal_safe(&p.methods.join(" -> ")));
        let names: Vec<&str> = p.methods.iter().map(String::as_str).collect();
        if let Some(ctx) = map.path_contexts(&names) {
            let mut parts: Vec<String> = ctx.callers.iter().map(|(m, n)| format!("{m} {n}")).collect();
            if ctx.without_caller > 0 {
                parts.push(format!("no caller seen {}", ctx.without_caller));
            }
            println!("  {:>8}  below: {}", "", hpm_profile::text::terminal_safe(&parts.join(", ")));
        }
    }
    targets("single-target call sites (calls)", &map.single_target_sites(), top);
    targets("call sites with one target in a context (calls)", &map.single_target_in_context(), top);
    Ok(())
}
