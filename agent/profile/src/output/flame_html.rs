//! A self-contained interactive HTML flame graph: one file, no external resources. The tree
//! is embedded as compact JSON (a name table plus a flat pre-order node array) and drawn on a
//! canvas by `flame.js`: click to zoom, reset, regex/substring search with the matched share,
//! tooltips with samples, self samples and counter ratios, colours by frame family (with a
//! legend). [`flame_html_diff`] draws a differential flame graph: widths from profile B,
//! colours from how each frame's share changed since profile A (red grew, blue shrank).

use std::collections::HashMap;
use std::fmt::Write;

use crate::cct::{Cct, ROOT};

use super::flat::{flatten, threshold, total_of};
use super::{cpi_counters, node_family, FrameBaseline, FrameFamily, Measure};
use crate::text::{escape_xml, group, pct, push_json_string};

const CSS: &str = include_str!("flame.css");
const JS: &str = include_str!("flame.js");

#[derive(Clone, Debug)]
pub struct HtmlOptions {
    pub title: String,
    /// A second header line (event, period, ...), if any.
    pub subtitle: Option<String>,
    pub by: Measure,
    /// What the widths count, when the tree's samples are the JVM's events made to weigh
    /// (`--event`: bytes allocated, ns waited); `Unit::Samples` names them after `by`.
    pub unit: crate::text::Unit,
    /// Frames whose total is below this share of all samples are folded into their caller's
    /// self time (the page says how many).
    pub min_share: f64,
    /// Upper bound on frames embedded; the share threshold is raised to meet it.
    pub max_nodes: usize,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            title: "Flame Graph".into(),
            subtitle: None,
            by: Measure::Samples,
            unit: crate::text::Unit::Samples,
            min_share: 1e-6,
            max_nodes: 300_000,
        }
    }
}

/// Number of values per node in the embedded `nodes` array before the counters:
/// name index, depth, total, self.
pub const NODE_FIELDS: usize = 4;

/// The embedded data as JSON. Shape:
/// `{"title","unit","total","counters":[..],"cpi":[c,i]|null,
///   "families":[{"name","base":[r,g,b],"span":[r,g,b],"vary":[..]}..],"names":[..],
///   "fam":[..],"diff":null|{"aTotal"},"stride":S,
///   "nodes":[name,depth,total,self,counter...,(aTotal,aSelf),...],
///   "pruned":{"frames","value","minTotal"}}`. A name appears once per family it is drawn in
/// (`fam` is aligned with `names`); with `diff`, each node ends in A's samples at its path.
pub fn flame_json(cct: &Cct, opts: &HtmlOptions) -> String {
    build(cct, opts, None).json
}

struct Built {
    json: String,
    root_total: u64,
    min_total: u64,
    pruned_frames: u64,
    pruned_value: u64,
}

fn build(cct: &Cct, opts: &HtmlOptions, base: Option<&FrameBaseline>) -> Built {
    // A differential graph compares sample shares: A's values are samples.
    let by = if base.is_some() { Measure::Samples } else { opts.by };
    let root_total = total_of(cct, ROOT, by);
    let min_total = threshold(cct, by, opts.min_share, opts.max_nodes);
    let flat = flatten(cct, by, min_total);
    let k = cct.counters.len();

    // Names per (name, family): a method drawn as JIT-compiled code here and interpreted there
    // has two entries.
    let mut names: Vec<(&str, FrameFamily)> = Vec::new();
    let mut index: HashMap<(&str, FrameFamily), usize> = HashMap::new();
    let mut out = String::with_capacity(64 + flat.nodes.len() * (12 + 8 * k));
    out.push_str("{\"title\":");
    push_json_string(&mut out, &opts.title);
    out.push_str(",\"unit\":");
    push_json_string(&mut out, unit_name(by, opts.unit));
    let _ = write!(out, ",\"total\":{root_total},\"counters\":[");
    for (i, c) in cct.counters.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(&mut out, c);
    }
    out.push_str("],\"cpi\":");
    match cpi_counters(&cct.counters) {
        Some((c, i)) => {
            let _ = write!(out, "[{c},{i}]");
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"families\":[");
    for (i, f) in FrameFamily::ALL.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        push_json_string(&mut out, f.name());
        let (b, sp, v) = f.palette();
        let _ = write!(
            out,
            ",\"base\":[{},{},{}],\"span\":[{},{},{}],\"vary\":[{},{},{}]}}",
            b[0], b[1], b[2], sp[0], sp[1], sp[2], v[0], v[1], v[2]
        );
    }
    out.push_str("],\"diff\":");
    match base {
        Some(b) => {
            let _ = write!(out, "{{\"aTotal\":{}}}", b.a_samples);
        }
        None => out.push_str("null"),
    }
    let extra = if base.is_some() { 2 } else { 0 };
    let _ = write!(out, ",\"stride\":{},\"nodes\":[", NODE_FIELDS + k + extra);
    for (i, n) in flat.nodes.iter().enumerate() {
        // The root is a pseudo-frame whatever it is called.
        let fam = if n.depth == 0 { FrameFamily::Pseudo } else { node_family(n.name, n.kinds) };
        let id = *index.entry((n.name, fam)).or_insert_with(|| {
            names.push((n.name, fam));
            names.len() - 1
        });
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{id},{},{},{}", n.depth, n.total, n.self_value);
        for c in 0..k {
            let _ = write!(out, ",{}", n.counters.get(c).copied().unwrap_or(0));
        }
        if let Some(b) = base {
            let (at, a_self) = b.a_at_b.get(n.id as usize).copied().unwrap_or((0, 0));
            let _ = write!(out, ",{at},{a_self}");
        }
    }
    out.push_str("],\"names\":[");
    for (i, (name, _)) in names.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(&mut out, name);
    }
    out.push_str("],\"fam\":[");
    for (i, (_, fam)) in names.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}", fam.index());
    }
    let _ = write!(
        out,
        "],\"pruned\":{{\"frames\":{},\"value\":{},\"minTotal\":{}}}}}",
        flat.pruned_frames, flat.pruned_value, flat.min_total
    );
    Built { json: out, root_total, min_total, pruned_frames: flat.pruned_frames, pruned_value: flat.pruned_value }
}

/// Renders the page. Every name reaches the page either HTML-escaped (title, notes) or inside
/// the JSON data block with `<`, `>` and `&` written as `\u` escapes, and the script only ever
/// puts names into the document with `textContent`/canvas text.
pub fn flame_html(cct: &Cct, opts: &HtmlOptions) -> String {
    render(cct, opts, None)
}

/// A differential flame graph: `b` drawn as by [`flame_html`] (widths are B's samples), each
/// frame coloured by how its share of all samples changed since A (`base`: A's samples at each
/// frame of B): red grew, blue shrank, white unchanged, deeper for larger changes. The tooltip
/// gives both shares and the changes; frames of A that B lacks are listed under the header.
pub fn flame_html_diff(b: &Cct, base: &FrameBaseline, opts: &HtmlOptions) -> String {
    render(b, opts, Some(base))
}

/// What a graph's widths count: the events' unit when given, else samples or weight.
pub(crate) fn unit_name(by: Measure, unit: crate::text::Unit) -> &'static str {
    if unit == crate::text::Unit::Samples {
        by.name()
    } else {
        unit.noun()
    }
}

fn render(cct: &Cct, opts: &HtmlOptions, base: Option<&FrameBaseline>) -> String {
    let Built { json, root_total, min_total, pruned_frames, pruned_value } = build(cct, opts, base);
    let unit = unit_name(if base.is_some() { Measure::Samples } else { opts.by }, opts.unit);
    let mut note = format!("{} {unit} in total.", group(root_total));
    if pruned_frames > 0 {
        let share = min_total as f64 * 100.0 / root_total.max(1) as f64;
        let _ = write!(
            note,
            " {} frames with fewer than {} {unit} (< {:.4}% of the total) are folded into their \
             callers' self time ({} {unit}).",
            group(pruned_frames),
            group(min_total),
            share,
            group(pruned_value)
        );
    }

    let mut s = String::with_capacity(json.len() + CSS.len() + JS.len() + 2048);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(s, "<title>{}</title>", escape_xml(&opts.title));
    let _ = writeln!(s, "<style>\n{CSS}</style>\n</head>\n<body>");
    let _ = writeln!(s, "<header>\n<h1>{}</h1>", escape_xml(&opts.title));
    if let Some(sub) = &opts.subtitle {
        let _ = writeln!(s, "<p class=\"sub\">{}</p>", escape_xml(sub));
    }
    let _ = writeln!(s, "<p class=\"note\" id=\"note\">{}</p>", escape_xml(&note));
    if let Some(b) = base {
        a_only_list(&mut s, b);
    }
    s.push_str(concat!(
        "<div class=\"controls\">\n",
        "<button id=\"reset\" title=\"Show the whole tree (Esc)\">Reset zoom</button>\n",
        "<input id=\"search\" type=\"search\" placeholder=\"Search: regex or text (Ctrl+F)\" size=\"40\">\n",
        "<label><input id=\"icicle\" type=\"checkbox\"> root at top</label>\n",
        "<span id=\"matched\"></span>\n",
        "<span id=\"legend\"></span>\n",
        "</div>\n</header>\n",
        "<main id=\"wrap\"><canvas id=\"fg\"></canvas></main>\n",
        "<div id=\"tip\" hidden></div>\n",
        "<footer id=\"status\">Hover over a frame for details; click to zoom.</footer>\n",
        "<noscript><p>This flame graph needs JavaScript.</p></noscript>\n",
    ));
    let _ = writeln!(s, "<script type=\"application/json\" id=\"fg-data\">{json}</script>");
    let _ = writeln!(s, "<script>\n{JS}</script>\n</body>\n</html>");
    s
}

/// The frames of A that B lacks, folded: a summary line, the largest as a list below it.
fn a_only_list(s: &mut String, b: &FrameBaseline) {
    if b.a_only_frames == 0 {
        s.push_str("<p class=\"note\" id=\"aonly\">Every frame of A is in B.</p>\n");
        return;
    }
    let _ = write!(
        s,
        "<details class=\"note\" id=\"aonly\"><summary>Only in A, not drawn: {} frames ({} of A's samples in the largest)</summary><ul>",
        group(b.a_only_frames),
        pct(b.a_only.first().map_or(0, |f| f.1), b.a_samples)
    );
    for (path, n) in &b.a_only {
        let _ = write!(s, "<li>{} ({} of A)</li>", escape_xml(path), pct(*n, b.a_samples));
    }
    let more = b.a_only_frames.saturating_sub(b.a_only.len() as u64);
    if more > 0 {
        let _ = write!(s, "<li>and {} more</li>", group(more));
    }
    s.push_str("</ul></details>\n");
}

/// `Only in A, not drawn: 2 frames: main > run > alpha (50.00% of A), ...` or that there are
/// none: the SVG's one line.
pub(crate) fn a_only_note(b: &FrameBaseline) -> String {
    if b.a_only_frames == 0 {
        return "Every frame of A is in B.".to_string();
    }
    let listed: Vec<String> =
        b.a_only.iter().map(|(path, n)| format!("{path} ({} of A)", pct(*n, b.a_samples))).collect();
    let more = b.a_only_frames.saturating_sub(b.a_only.len() as u64);
    let more = if more > 0 { format!(", and {} more", group(more)) } else { String::new() };
    format!("Only in A, not drawn: {} frames: {}{more}.", group(b.a_only_frames), listed.join("; "))
}

#[cfg(test)]
#[path = "flame_html_tests.rs"]
mod tests;
