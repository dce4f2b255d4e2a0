//! A plot of one counter ratio over time with the phase boundaries (the paper's figures 4 and
//! 5, as our own), drawn as SVG text without a dependency.
//!
//! The busiest thread (most counter 0 in phase invocations) is drawn against its own counter 0
//! (ms for task-clock, else the counter's unit): every phase invocation is a shaded band from
//! its entry to its exit in its phase's colour, and a horizontal segment at its own value of
//! the ratio (counter k per counter 0, per ms for task-clock; nested phases taken out, as in
//! the statistics). Names are untrusted and escaped. At most [`MAX_INVOCATIONS`] invocations
//! are drawn (the longest ones; none shorter than a fifth of a pixel; the title says how many)
//! and [`MAX_LEGEND`] phases named.

use std::collections::HashMap;
use std::fmt::Write;

use super::phases::{CallGraph, Selection};
use crate::text::escape_xml;

/// Invocations drawn at most.
pub const MAX_INVOCATIONS: usize = 20_000;
/// Phases named in the legend at most.
pub const MAX_LEGEND: usize = 24;

const W: f64 = 960.0;
const H: f64 = 480.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 260.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLOURS: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/// A step of 1, 2 or 5 times a power of ten giving about five ticks over `span`.
fn tick_step(span: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p)
}

fn label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3e}")
    }
    .replace(".000", "")
    .replace(".00", "")
}

/// One drawn invocation: x from, x to, y, phase.
struct Bar(f64, f64, Option<f64>, usize);

/// Draws counter `column` (1 or more) per counter 0 of the selected phases. Errors say why
/// nothing can be drawn, in one line.
/// `#rrggbb` mixed with 80% white: a band's fill.
fn pale(c: &str) -> String {
    let ch = |i: usize| u8::from_str_radix(c.get(i..i + 2).unwrap_or("80"), 16).unwrap_or(0x80);
    let mix = |v: u8| 255 - (255 - u16::from(v)) * 20 / 100;
    format!("#{:02x}{:02x}{:02x}", mix(ch(1)), mix(ch(3)), mix(ch(5)))
}

pub fn plot(graph: &CallGraph, selection: &Selection, column: usize) -> Result<String, String> {
    let trace = graph.trace;
    if column == 0 || column >= trace.counters.len() {
        return Err("the plot needs a further counter beside counter 0 (the trace has none of that name)".into());
    }
    let own = graph.phase_own(selection);
    let mut busy: HashMap<u32, u64> = HashMap::new();
    for p in &own {
        let t = graph.invocations[p.invocation].thread;
        *busy.entry(t).or_default() += p.own[0];
    }
    let Some((&thread, _)) = busy.iter().max_by_key(|(t, v)| (**v, std::cmp::Reverse(**t))) else {
        return Err("no invocation of a selected phase to plot".into());
    };
    let origin =
        trace.events.iter().enumerate().find(|(_, e)| e.thread == thread).map_or(0, |(i, _)| trace.values(i)[0]);
    let task_clock = trace.counters[0] == "task-clock";
    let (x_scale, x_unit) = if task_clock { (1e-6, "ms".to_string()) } else { (1.0, trace.counters[0].clone()) };
    let y_scale = if task_clock { 1e6 } else { 1.0 };
    let y_name = if task_clock {
        format!("{} per ms of task-clock", trace.counters[column])
    } else {
        format!("{} per {}", trace.counters[column], trace.counters[0])
    };
    let mut bars: Vec<Bar> = own
        .iter()
        .filter(|p| graph.invocations[p.invocation].thread == thread)
        .map(|p| {
            let v = &graph.invocations[p.invocation];
            let x0 = trace.values(v.enter)[0].saturating_sub(origin) as f64 * x_scale;
            let x1 = trace.values(v.exit)[0].saturating_sub(origin) as f64 * x_scale;
            let y = (p.own[0] > 0).then(|| p.own[column] as f64 / p.own[0] as f64 * y_scale);
            Bar(x0, x1, y, p.phase)
        })
        .collect();
    let all = bars.len();
    // Invocations shorter than a fifth of a pixel cannot be seen: left out (the title counts
    // what is drawn), so a run of a million short phases stays a small file.
    let x_all = bars.iter().map(|b| b.1).fold(0.0, f64::max);
    let visible = x_all * 0.2 / (W - LEFT - RIGHT);
    if x_all > 0.0 {
        bars.retain(|b| b.1 - b.0 >= visible);
    }
    if bars.len() > MAX_INVOCATIONS {
        bars.sort_by(|a, b| (b.1 - b.0).total_cmp(&(a.1 - a.0)));
        bars.truncate(MAX_INVOCATIONS);
        // Parents before their callees again, so nested bands are drawn on top.
        bars.sort_by(|a, b| a.0.total_cmp(&b.0).then((b.1 - b.0).total_cmp(&(a.1 - a.0))));
    }
    let x_max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let y_max = bars.iter().filter_map(|b| b.2).fold(0.0, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let px = |x: f64| LEFT + x / x_max * pw;
    let py = |y: f64| TOP + ph - y / y_max * ph;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let shown = if all > bars.len() {
        format!(" ({} of {all} invocations drawn, the longest)", bars.len())
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="20" font-size="14">{} over {}, thread {}{}</text>"#,
        escape_xml(&y_name),
        escape_xml(&trace.counters[0]),
        escape_xml(&trace.threads[thread as usize]),
        escape_xml(&shown)
    );
    for b in &bars {
        let c = COLOURS[b.3 % COLOURS.len()];
        // Opaque, so a nested phase's band hides its caller's where it runs: each moment
        // shows the innermost phase (translucent bands of nested phases blended into one).
        let _ = writeln!(
            s,
            r#"<rect x="{:.2}" y="{TOP}" width="{:.2}" height="{ph}" fill="{}"/>"#,
            px(b.0),
            (px(b.1) - px(b.0)).max(0.5),
            pale(c)
        );
    }
    for b in &bars {
        if let Some(y) = b.2 {
            let c = COLOURS[b.3 % COLOURS.len()];
            let _ = writeln!(
                s,
                r#"<line x1="{:.2}" x2="{:.2}" y1="{:.2}" y2="{:.2}" stroke="{c}" stroke-width="2"/>"#,
                px(b.0),
                px(b.1).max(px(b.0) + 1.0),
                py(y),
                py(y)
            );
        }
    }
    // Axes, ticks and units.
    let (x_axis, y_axis) = (TOP + ph, LEFT);
    let _ = writeln!(s, r#"<line x1="{LEFT}" x2="{}" y1="{x_axis}" y2="{x_axis}" stroke="black"/>"#, LEFT + pw);
    let _ = writeln!(s, r#"<line x1="{y_axis}" x2="{y_axis}" y1="{TOP}" y2="{x_axis}" stroke="black"/>"#);
    let step = tick_step(x_max);
    let mut x = 0.0;
    while x <= x_max * 1.0001 {
        let p = px(x);
        let _ = writeln!(s, r#"<line x1="{p:.2}" x2="{p:.2}" y1="{x_axis}" y2="{}" stroke="black"/>"#, x_axis + 5.0);
        let _ = writeln!(s, r#"<text x="{p:.2}" y="{}" text-anchor="middle">{}</text>"#, x_axis + 18.0, label(x));
        x += step;
    }
    let step = tick_step(y_max);
    let mut y = 0.0;
    while y <= y_max * 1.0001 {
        let p = py(y);
        let _ = writeln!(s, r#"<line x1="{}" x2="{y_axis}" y1="{p:.2}" y2="{p:.2}" stroke="black"/>"#, y_axis - 5.0);
        let _ = writeln!(s, r#"<text x="{}" y="{:.2}" text-anchor="end">{}</text>"#, y_axis - 8.0, p + 4.0, label(y));
        y += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{} ({}, from the thread's first event)</text>"#,
        LEFT + pw / 2.0,
        H - 15.0,
        escape_xml(&trace.counters[0]),
        escape_xml(&x_unit)
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        escape_xml(&y_name)
    );
    // Legend: the phases drawn, in selection order.
    let mut drawn: Vec<usize> = bars.iter().map(|b| b.3).collect();
    drawn.sort_unstable();
    drawn.dedup();
    let lx = LEFT + pw + 16.0;
    for (i, &p) in drawn.iter().take(MAX_LEGEND).enumerate() {
        let ly = TOP + 16.0 * i as f64;
        let c = COLOURS[p % COLOURS.len()];
        let _ = writeln!(s, r#"<rect x="{lx}" y="{ly}" width="10" height="10" fill="{c}"/>"#);
        let name = &selection.phases[p].stats.name;
        let short: String = name.chars().take(36).collect();
        let _ = writeln!(s, r#"<text x="{}" y="{}">{}</text>"#, lx + 14.0, ly + 9.0, escape_xml(&short));
    }
    if drawn.len() > MAX_LEGEND {
        let ly = TOP + 16.0 * MAX_LEGEND as f64 + 9.0;
        let _ = writeln!(s, r#"<text x="{lx}" y="{ly}">{} more phases</text>"#, drawn.len() - MAX_LEGEND);
    }
    s.push_str("</svg>\n");
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::phases_format::{TAG_ENTER, TAG_EXIT};
    use crate::analysis::phases_v2_tests::V2;
    use crate::analysis::{parse_binary_trace, parse_text_trace};

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(1000.0), 200.0);
        assert_eq!(tick_step(7.0), 2.0);
        assert_eq!(tick_step(0.0), 1.0);
        assert_eq!(label(2_000_000.0), "2M");
        assert_eq!(label(0.0), "0");
    }

    #[test]
    fn plots_the_busiest_thread_with_escaped_names_and_one_segment_per_invocation() {
        let mut t = V2::new(&["task-clock", "page-faults"]);
        t.method(1, "A.<b>&(I)V").method(2, "B.c()V").thread(1, "quiet").thread(2, "busy <t>");
        t.block(1, &[(TAG_ENTER, 2, &[0, 0]), (TAG_EXIT, 2, &[1_000_000, 1])]);
        t.block(2, &[(TAG_ENTER, 1, &[0, 0]), (TAG_EXIT, 1, &[2_000_000, 4])]);
        t.block(2, &[(TAG_ENTER, 2, &[3_000_000, 4]), (TAG_EXIT, 2, &[5_000_000, 5])]);
        let tr = parse_binary_trace(&t.out).unwrap();
        let g = CallGraph::build(&tr).unwrap();
        let sel = g.select_methods(&["A.<b>&(I)V".into(), "B.c()V".into()]);
        let svg = plot(&g, &sel, 1).unwrap();
        assert!(svg.contains("thread busy &lt;t&gt;"), "{svg}");
        assert!(svg.contains("A.&lt;b&gt;&amp;(I)V") && !svg.contains("<b>"));
        assert!(svg.contains("page-faults per ms of task-clock"));
        assert!(svg.contains("task-clock (ms, from the thread's first event)"));
        assert_eq!(svg.matches("stroke-width=\"2\"").count(), 2, "one segment per invocation of the busy thread");
        // One band per invocation of the busy thread too.
        assert_eq!(svg.matches(r##"height="380" fill="#"##).count(), 2);
    }

    #[test]
    fn refuses_what_cannot_be_drawn() {
        let tr = parse_text_trace("enter t a 0\nexit t a 5\n").unwrap();
        let g = CallGraph::build(&tr).unwrap();
        let sel = g.select_methods(&["a".into()]);
        assert!(plot(&g, &sel, 1).unwrap_err().contains("further counter"));
        let tr = parse_text_trace("enter t a 0 0\nexit t a 5 1\n").unwrap();
        let g = CallGraph::build(&tr).unwrap();
        assert!(plot(&g, &g.select_methods(&["b".into()]), 1).unwrap_err().contains("no invocation"));
        assert!(plot(&g, &g.select_methods(&["a".into()]), 1).is_ok());
    }
}
