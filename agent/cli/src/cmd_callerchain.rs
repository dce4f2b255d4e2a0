//! `hpm callerchain QUADS [--events FILE]`: CallerChaining (Inoue & Nakatani, section 6).
//! Rebuilds the calling context tree from `caller caller_depth callee callee_depth count`
//! lines, prints it with the stack depth of every node, and the statistics of the paper's
//! Table 1 for a set of events (by default the quadruples' own samples).

use std::path::Path;

use hpm_profile::analysis::callerchain::{load_events, load_quads, quad_events, ChainTree};

#[derive(clap::Args)]
pub struct Args {
    /// Lines `caller caller_depth callee callee_depth count` (depths: offsets from the stack base)
    quads: String,
    /// Lines `method depth count` to map onto the tree (default: the quadruples' samples)
    #[arg(long, value_name = "FILE")]
    events: Option<String>,
}

fn share(n: u64, of: u64) -> String {
    if of == 0 {
        "n/a".into()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / of as f64)
    }
}

pub fn main(a: Args) -> Result<(), String> {
    let file = &a.quads;
    let quads = load_quads(Path::new(file)).map_err(|e| e.to_string())?;
    if quads.is_empty() {
        return Err(format!("{file}: no quadruples; expected lines `caller caller_depth callee callee_depth count`"));
    }
    let events = match &a.events {
        Some(f) => load_events(Path::new(f)).map_err(|e| e.to_string())?,
        None => quad_events(&quads),
    };
    let tree = ChainTree::build(&quads).map_err(|m| format!("{file}: {m}"))?;
    print!("{}", hpm_profile::text::terminal_safe(&tree.render()));
    let s = tree.stats(&events);
    println!();
    println!("nodes: {}", s.nodes);
    println!(
        "nodes with several callers at the same depth: {} ({})",
        s.ambiguous_nodes,
        share(s.ambiguous_nodes as u64, s.nodes as u64)
    );
    println!("methods: {}", s.methods);
    println!("nodes per method: {:.1}", s.nodes_per_method());
    println!("events: {}", s.events);
    println!("events mapped: {} ({}), by fitting: {}", s.mapped, share(s.mapped, s.events), s.fitted);
    println!("callers uniquely identified for >= 1 level: {}", share(s.unique_1, s.events));
    println!("callers uniquely identified for >= 3 levels: {}", share(s.unique_3, s.events));
    Ok(())
}
