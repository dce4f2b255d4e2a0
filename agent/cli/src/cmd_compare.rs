//! `hpm compare A B [--threshold T] [--inclusive] [--exact-names]`: how similar two profiles
//! are. Prints `name: value` lines: overlap, hot-edge coverage, method correlation, then
//! further metrics. Also holds the argument helpers of the analysis commands.

use std::path::Path;

use hpm_core::analysis::compare::{compare, CompareOptions, Weight};
use hpm_core::cct::Cct;

const USAGE: &str = "usage: hpm compare A B [--threshold T] [--inclusive] [--exact-names]
  A, B           profiles: .jfr recordings or collapsed stacks (ours or async-profiler's)
  --threshold T  hot-edge threshold: an edge is hot at >= T x the hottest edge (default 0.1; 10% also works)
  --inclusive    weigh calling contexts by samples including callees (default: samples ending there)
  --exact-names  compare frame names as they are (default: async-profiler names normalised to ours)";

/// Parsed command line: positional arguments, options with a value, flags.
pub(crate) struct Args {
    pub positional: Vec<String>,
    values: Vec<(String, String)>,
    flags: Vec<String>,
}

impl Args {
    /// Parses `args`; `valued` options take a value (`--x V` or `--x=V`), `flags` do not.
    /// Returns `None` after printing `usage` for `-h`/`--help`.
    pub fn parse(args: &[String], valued: &[&str], flags: &[&str], usage: &str) -> Result<Option<Args>, String> {
        let mut out = Args { positional: Vec::new(), values: Vec::new(), flags: Vec::new() };
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "-h" || a == "--help" {
                println!("{usage}");
                return Ok(None);
            }
            if a.starts_with("--") {
                let (name, inline) = match a.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (a, None),
                };
                if valued.contains(&name) {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            i += 1;
                            args.get(i)
                                .cloned()
                                .ok_or_else(|| format!("{name} needs a value; {}", first_line(usage)))?
                        }
                    };
                    out.values.push((name.to_string(), v));
                } else if flags.contains(&name) && inline.is_none() {
                    out.flags.push(name.to_string());
                } else {
                    return Err(format!("unknown option `{a}`; {}", first_line(usage)));
                }
            } else {
                out.positional.push(a.to_string());
            }
            i += 1;
        }
        Ok(Some(out))
    }

    /// The last value given for an option.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }
}

pub(crate) fn first_line(usage: &str) -> &str {
    usage.lines().next().unwrap_or(usage)
}

/// A percentage such as `10`, `10%` or `2e-2`, returned as a fraction.
pub(crate) fn parse_percent(name: &str, v: &str) -> Result<f64, String> {
    v.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .map(|p| p / 100.0)
        .ok_or_else(|| format!("{name} needs a percentage between 0 and 100, got `{v}`"))
}

/// A positive whole number.
pub(crate) fn parse_count(name: &str, v: &str) -> Result<u64, String> {
    v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| format!("{name} needs a positive whole number, got `{v}`"))
}

/// Loads a profile as a calling context tree, refusing empty ones.
pub(crate) fn load_profile(path: &str) -> Result<Cct, String> {
    let p = Path::new(path);
    if p.is_dir() {
        return Err(format!("`{path}` is a directory; give a .jfr or collapsed-stacks file"));
    }
    let (cct, notes) = hpm_core::load::load_cct(p).map_err(|e| e.to_string())?;
    crate::cmd_report::warn(&notes);
    if cct.total_samples() == 0 {
        return Err(format!("{path}: the profile has no samples"));
    }
    Ok(cct)
}

pub(crate) fn pct(x: Option<f64>) -> String {
    x.map_or("n/a".to_string(), |v| format!("{:.2}%", v * 100.0))
}

pub fn main(args: &[String]) -> Result<(), String> {
    let Some(a) = Args::parse(args, &["--threshold"], &["--inclusive", "--exact-names"], USAGE)? else {
        return Ok(());
    };
    let [pa, pb] = a.positional.as_slice() else {
        return Err(format!("give two profiles to compare, got {}; {}", a.positional.len(), first_line(USAGE)));
    };
    let threshold = match a.value("--threshold") {
        None => 0.1,
        Some(v) => {
            let t = match v.strip_suffix('%') {
                Some(p) => p.parse::<f64>().map(|p| p / 100.0),
                None => v.parse::<f64>(),
            };
            t.ok().filter(|t| *t > 0.0 && *t <= 1.0).ok_or_else(|| {
                format!("--threshold needs a share of the hottest edge in (0, 1] such as 0.1 or 10%, got `{v}`")
            })?
        }
    };
    let opts = CompareOptions {
        threshold,
        weight: if a.flag("--inclusive") { Weight::TotalSamples } else { Weight::SelfSamples },
        normalize: !a.flag("--exact-names"),
    };
    let (ca, cb) = (load_profile(pa)?, load_profile(pb)?);
    let c = compare(&ca, &cb, &opts);
    println!("overlap: {}", pct(c.overlap));
    println!("hot-edge coverage: {}", pct(c.hot_edge_coverage));
    println!("method correlation: {}", c.method_correlation.map_or("n/a".to_string(), |r| format!("{r:.4}")));
    println!("hot-edge coverage reverse: {}", pct(c.hot_edge_coverage_reverse));
    println!("method overlap: {}", pct(c.method_overlap));
    println!("class overlap: {}", pct(c.class_overlap));
    println!("hot edges: {} {}", c.hot_edges.0, c.hot_edges.1);
    println!("samples: {} {}", c.samples.0, c.samples.1);
    println!("threshold: {threshold}");
    Ok(())
}
