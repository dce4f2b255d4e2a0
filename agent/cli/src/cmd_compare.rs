//! `hpm compare A B [--threshold T] [--inclusive] [--exact-names]`: how similar two profiles
//! are. Prints `name: value` lines: overlap, hot-edge coverage, method correlation, then
//! further metrics.

use hpm_profile::analysis::compare::{compare, CompareOptions, Weight};

use crate::input::load_profile;

#[derive(clap::Args)]
pub struct Args {
    /// A profile: a .jfr recording or collapsed stacks (ours or async-profiler's)
    a: String,
    /// The other profile
    b: String,
    /// Hot-edge threshold: an edge is hot at >= T x the hottest edge (0.1; 10% also works)
    #[arg(long, value_name = "T", default_value = "0.1", value_parser = threshold_value)]
    threshold: f64,
    /// Weigh calling contexts by samples including callees (default: samples ending there)
    #[arg(long)]
    inclusive: bool,
    /// Compare frame names as read (default: lambda numbers and hidden-class addresses dropped)
    #[arg(long)]
    exact_names: bool,
}

/// A share of the hottest edge in (0, 1]: `0.1` or `10%`.
fn threshold_value(v: &str) -> Result<f64, String> {
    let t = match v.strip_suffix('%') {
        Some(p) => p.parse::<f64>().map(|p| p / 100.0),
        None => v.parse::<f64>(),
    };
    t.ok()
        .filter(|t| *t > 0.0 && *t <= 1.0)
        .ok_or_else(|| format!("a share of the hottest edge in (0, 1] such as 0.1 or 10% is needed, got `{v}`"))
}

pub(crate) fn pct(x: Option<f64>) -> String {
    x.map_or("n/a".to_string(), |v| format!("{:.2}%", v * 100.0))
}

pub fn main(a: Args) -> Result<(), String> {
    let (pa, pb, threshold) = (&a.a, &a.b, a.threshold);
    let opts = CompareOptions {
        threshold,
        weight: if a.inclusive { Weight::TotalSamples } else { Weight::SelfSamples },
        normalize: !a.exact_names,
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
