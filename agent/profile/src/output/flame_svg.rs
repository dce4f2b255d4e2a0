//! A static SVG flame graph: the root at the bottom, one `<rect>` per frame with its width
//! proportional to samples, a `<title>` tooltip per frame, no script. Colours by frame family,
//! or, in [`flame_svg_diff`], by the change of each frame's share since a profile A.

use std::fmt::Write;

use crate::cct::Cct;

use super::flat::{flatten, threshold, total_of};
use super::{cpi_counters, family_colour, node_family, FrameBaseline, FrameFamily, Measure};
use crate::text::{clip, escape_xml, group, pct, ratio};

#[derive(Clone, Debug)]
pub struct SvgOptions {
    pub title: String,
    /// A second header line (event, period, sample count), if any.
    pub subtitle: Option<String>,
    /// Image width in pixels.
    pub width: u32,
    pub frame_height: u32,
    pub by: Measure,
    /// What the widths count, when the tree's samples are the JVM's events made to weigh
    /// (`--event`: bytes allocated, ns waited); `Unit::Samples` names them after `by`.
    pub unit: crate::text::Unit,
    /// Frames narrower than this many pixels are left out (folded into their caller).
    pub min_width_px: f64,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions {
            title: "Flame Graph".into(),
            subtitle: None,
            width: 1200,
            frame_height: 16,
            by: Measure::Samples,
            unit: crate::text::Unit::Samples,
            min_width_px: 0.1,
        }
    }
}

const PAD_X: f64 = 10.0;
const HEADER: f64 = 48.0;
const FOOTER: f64 = 34.0;
const CHAR_W: f64 = 7.0;

/// Renders `cct` as a standalone SVG document.
pub fn flame_svg(cct: &Cct, opts: &SvgOptions) -> String {
    render(cct, opts, None)
}

/// A differential flame graph of `b` (see [`super::flame_html::flame_html_diff`]): widths from
/// B's samples, red for frames whose share of all samples grew since A, blue for those that
/// shrank, deeper for larger changes; A's frames that B lacks are named in the footer.
pub fn flame_svg_diff(b: &Cct, base: &FrameBaseline, opts: &SvgOptions) -> String {
    render(b, opts, Some(base))
}

/// Red (grew) or blue (shrank), deeper as `change` nears `max`; grey for none.
pub(crate) fn change_colour(change: f64, max: f64) -> (u8, u8, u8) {
    if change.abs() < 1e-12 {
        return (225, 225, 225);
    }
    let t = if max > 0.0 { (change.abs() / max).min(1.0) } else { 0.0 };
    let v = (225.0 - 175.0 * t).round() as u8;
    if change > 0.0 {
        (255, v, v)
    } else {
        (v, v, 255)
    }
}

fn render(cct: &Cct, opts: &SvgOptions, base: Option<&FrameBaseline>) -> String {
    let by = if base.is_some() { Measure::Samples } else { opts.by };
    let root_total = total_of(cct, crate::cct::ROOT, by);
    let width = opts.width.max(200) as f64;
    let inner = width - 2.0 * PAD_X;
    let min_total = if root_total == 0 { 1 } else { threshold(cct, by, opts.min_width_px / inner, usize::MAX) };
    let flat = flatten(cct, by, min_total);
    let fh = opts.frame_height.max(8) as f64;
    let footer = if base.is_some() { FOOTER + 16.0 } else { FOOTER };
    let height = HEADER + (flat.max_depth as f64 + 1.0) * fh + footer;
    // Each frame's change in share (B's minus A's) and the largest, which gets the deepest colour.
    let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let changes: Vec<(f64, u64, u64)> = match base {
        Some(b) => flat
            .nodes
            .iter()
            .map(|n| {
                let (at, a_self) = b.a_at_b.get(n.id as usize).copied().unwrap_or((0, 0));
                (share(n.total, root_total) - share(at, b.a_samples), at, a_self)
            })
            .collect(),
        None => Vec::new(),
    };
    let max_change = changes.iter().map(|c| c.0.abs()).fold(0.0, f64::max);
    let unit = super::flame_html::unit_name(by, opts.unit);

    let mut s = String::with_capacity(256 + flat.nodes.len() * 200);
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8" standalone="no"?>"#);
    let _ = writeln!(
        s,
        r#"<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#,
        w = width,
        h = height
    );
    let _ = writeln!(
        s,
        "<style>text {{ font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }} \
         .t {{ font-size: 17px; }} .s {{ fill: #555; }} rect {{ stroke: #fff; stroke-width: 0.5; }}</style>"
    );
    let _ =
        writeln!(s, r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#f8f8f8" style="stroke:none"/>"##);
    let _ = writeln!(
        s,
        r#"<text class="t" x="{}" y="22" text-anchor="middle">{}</text>"#,
        width / 2.0,
        escape_xml(&opts.title)
    );
    if let Some(sub) = &opts.subtitle {
        let _ = writeln!(
            s,
            r#"<text class="s" x="{}" y="40" text-anchor="middle">{}</text>"#,
            width / 2.0,
            escape_xml(sub)
        );
    }

    let cpi = cpi_counters(&cct.counters);
    let root_counters: Vec<u64> = cct.root().total_counters.clone();
    // x cursor per depth, in value units.
    let mut next: Vec<u64> = vec![0; flat.max_depth as usize + 2];
    // The families drawn, for the legend.
    let mut seen = [false; FrameFamily::ALL.len()];
    for (idx, n) in flat.nodes.iter().enumerate() {
        let d = n.depth as usize;
        let x = next[d];
        next[d] = x + n.total;
        next[d + 1] = x;
        if root_total == 0 {
            continue;
        }
        let px = PAD_X + x as f64 / root_total as f64 * inner;
        let pw = n.total as f64 / root_total as f64 * inner;
        let y = HEADER + (flat.max_depth - n.depth) as f64 * fh;
        let fam = if n.depth == 0 { FrameFamily::Pseudo } else { node_family(n.name, n.kinds) };
        seen[fam.index()] = true;
        let (r, g, b) = match changes.get(idx) {
            Some(&(c, _, _)) => change_colour(c, max_change),
            None => family_colour(fam, n.name),
        };

        let mut tip = format!("{} ({} {unit}, {}", n.name, group(n.total), pct(n.total, root_total));
        if n.self_value > 0 {
            let _ = write!(tip, "; self {}", group(n.self_value));
        }
        tip.push(')');
        for (k, cname) in cct.counters.iter().enumerate() {
            let v = n.counters.get(k).copied().unwrap_or(0);
            let _ = write!(tip, "\n{cname}: {} ({})", group(v), pct(v, root_counters[k]));
            if cpi.is_none() && by == Measure::Samples {
                let _ = write!(tip, ", {}/sample", ratio(v, n.total));
            }
        }
        if let Some((c, i)) = cpi {
            let (cv, iv) = (n.counters.get(c).copied().unwrap_or(0), n.counters.get(i).copied().unwrap_or(0));
            let _ = write!(tip, "\nCPI: {}", ratio(cv, iv));
        }
        if let (Some(&(c, at, a_self)), Some(b)) = (changes.get(idx), base) {
            let self_change = share(n.self_value, root_total) - share(a_self, b.a_samples);
            let _ = write!(
                tip,
                "\nA: {} of samples -> B: {} ({:+.2} points)\nself: A {} -> B {} ({:+.2} points)",
                pct(at, b.a_samples),
                pct(n.total, root_total),
                c * 100.0,
                pct(a_self, b.a_samples),
                pct(n.self_value, root_total),
                self_change * 100.0
            );
        }

        let _ = write!(
            s,
            r#"<g><title>{}</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="2" fill="rgb({r},{g},{b})"/>"#,
            escape_xml(&tip),
            px,
            y,
            pw,
            fh - 1.0
        );
        let chars = ((pw - 6.0) / CHAR_W).floor();
        if chars >= 3.0 {
            let label = clip(n.name, chars as usize);
            let _ = write!(s, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, px + 3.0, y + fh - 4.5, escape_xml(&label));
        }
        s.push_str("</g>\n");
    }

    let mut note = format!("{} {unit} in total", group(root_total));
    if flat.pruned_frames > 0 {
        let _ = write!(
            note,
            "; {} frames narrower than {} px ({} {unit}) are folded into their callers",
            group(flat.pruned_frames),
            opts.min_width_px,
            group(flat.pruned_value)
        );
    }
    let swatch = |(r, g, b): (u8, u8, u8), text: &str| {
        format!(r#"<tspan fill="rgb({r},{g},{b})">&#9632;</tspan> {}"#, escape_xml(text))
    };
    let legend: Vec<String> = match base {
        Some(_) => vec![
            swatch(change_colour(max_change, max_change), "grew"),
            swatch(change_colour(-max_change, max_change), "shrank"),
            swatch(
                change_colour(0.0, max_change),
                &format!("same share; deepest colour ±{:.2} points of all samples", max_change * 100.0),
            ),
        ],
        None => FrameFamily::ALL
            .iter()
            .filter(|f| seen[f.index()])
            .map(|f| swatch(family_colour(*f, ""), f.name()))
            .collect(),
    };
    let _ =
        writeln!(s, r#"<text class="s" x="{PAD_X}" y="{:.1}">{}</text>"#, height - footer + 16.0, escape_xml(&note));
    if let Some(b) = base {
        let chars = (inner / CHAR_W) as usize;
        let _ = writeln!(
            s,
            r#"<text class="s" x="{PAD_X}" y="{:.1}">{}</text>"#,
            height - footer + 32.0,
            escape_xml(&clip(&super::flame_html::a_only_note(b), chars))
        );
    }
    let _ = writeln!(s, r#"<text class="s" x="{PAD_X}" y="{:.1}">{}</text>"#, height - 6.0, legend.join("  "));
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cct::kind_bit;
    use crate::model::FrameKind;

    /// Cheap well-formedness check: every start tag is closed in order, no stray `<` or `&`.
    pub fn check_xml(s: &str) -> Result<usize, String> {
        let mut stack: Vec<String> = Vec::new();
        let mut count = 0;
        let mut rest = s;
        while let Some(i) = rest.find(['<', '&']) {
            let at = &rest[i..];
            if at.starts_with('&') {
                let end = at.find(';').ok_or("unterminated entity")?;
                let ent = &at[1..end];
                let ok = matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                    || (ent.starts_with('#') && ent[1..].chars().all(|c| c.is_ascii_digit()));
                if !ok {
                    return Err(format!("bad entity &{ent};"));
                }
                rest = &at[end + 1..];
                continue;
            }
            let end = at.find('>').ok_or("unterminated tag")?;
            let tag = &at[1..end];
            if tag.contains('<') {
                return Err(format!("`<` inside tag: {tag}"));
            }
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack.pop().ok_or(format!("stray </{name}>"))?;
                if open != name {
                    return Err(format!("<{open}> closed by </{name}>"));
                }
            } else if !tag.starts_with('?') && !tag.starts_with('!') && !tag.ends_with('/') {
                let name = tag.split_whitespace().next().unwrap_or("").to_string();
                stack.push(name);
                count += 1;
            } else if tag.ends_with('/') {
                count += 1;
            }
            // Attribute values must not hold raw quotes of their own kind: count them.
            if !tag.matches('"').count().is_multiple_of(2) {
                return Err(format!("odd quotes in tag: {tag}"));
            }
            rest = &at[end + 1..];
        }
        if let Some(open) = stack.pop() {
            return Err(format!("<{open}> never closed"));
        }
        Ok(count)
    }

    fn tree() -> Cct {
        let mut c = Cct::new(vec!["cycles".into(), "instructions".into()]);
        c.add_stack(&["Main.main", "a.B<T>.run\"x'", "memcpy"], 30, 30, &[300, 100]);
        c.add_stack(&["Main.main", "os::javaTimeNanos & co"], 10, 10, &[50, 50]);
        c.add_stack(&["[GC]"], 5, 5, &[20, 0]);
        c
    }

    #[test]
    fn svg_is_well_formed_and_escaped() {
        let svg = flame_svg(&tree(), &SvgOptions { title: "t <&> \"q\"".into(), ..Default::default() });
        let n = check_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        assert!(n > 10);
        assert!(svg.contains("a.B&lt;T&gt;.run&quot;x&#39;"));
        assert!(svg.contains("os::javaTimeNanos &amp; co"));
        assert!(svg.contains("t &lt;&amp;&gt; &quot;q&quot;"));
        assert!(svg.contains("CPI: 3.00"));
        assert_eq!(svg.matches("<rect").count(), 1 + 6); // background + 6 frames (incl. root)
    }

    #[test]
    fn widths_follow_samples() {
        let svg = flame_svg(&tree(), &SvgOptions::default());
        // Root spans the full inner width; Main.main is 40/45 of it.
        assert!(svg.contains(r#"width="1180.0""#));
        assert!(svg.contains(&format!(r#"width="{:.1}""#, 40.0 / 45.0 * 1180.0)));
        assert_eq!(svg, flame_svg(&tree(), &SvgOptions::default()));
    }

    #[test]
    fn tiny_frames_are_folded_and_noted() {
        let mut c = Cct::default();
        c.add_stack(&["big"], 1_000_000, 0, &[]);
        c.add_stack(&["small", "deeper"], 1, 0, &[]);
        let svg = flame_svg(&c, &SvgOptions::default());
        assert!(!svg.contains(">small"));
        assert!(svg.contains("2 frames narrower than 0.1 px"));
        check_xml(&svg).unwrap();
    }

    #[test]
    fn families_get_their_colours_and_the_legend_only_those_drawn() {
        let mut c = Cct::default();
        let (k, n, j) = (FrameKind::Kernel, FrameKind::Native, FrameKind::JitCompiled);
        c.add_path_kinds(
            [("Main.run", kind_bit(j)), ("write", kind_bit(n)), ("do_syscall_64", kind_bit(k))].into_iter(),
            5,
            5,
            &[],
        );
        let svg = flame_svg(&c, &SvgOptions::default());
        check_xml(&svg).unwrap();
        for (fam, name) in
            [(FrameFamily::Kernel, "do_syscall_64"), (FrameFamily::Native, "write"), (FrameFamily::Jit, "Main.run")]
        {
            let (r, g, b) = family_colour(fam, name);
            let rect = svg.lines().find(|l| l.contains(&format!("<title>{name} "))).unwrap();
            assert!(rect.contains(&format!("fill=\"rgb({r},{g},{b})\"")), "{name}: {rect}");
        }
        let legend = svg.lines().rev().find(|l| l.contains("&#9632;")).unwrap();
        for name in ["JIT compiled", "native", "kernel", "pseudo-frame"] {
            assert!(legend.contains(&format!("</tspan> {name}")), "{name} missing: {legend}");
        }
        assert!(!legend.contains("interpreted") && !legend.contains("C++"), "{legend}");
    }

    #[test]
    fn a_differential_svg_colours_by_change() {
        use crate::analysis::diff::{diff, DiffOptions};
        let a = crate::load::parse_collapsed("main;alpha 50\nmain;common 50\n").unwrap();
        let b = crate::load::parse_collapsed("main;beta 80\nmain;common 20\n").unwrap();
        let d = diff(a, b, &DiffOptions::default());
        let svg = flame_svg_diff(&d.b_tree, &d.baseline, &SvgOptions::default());
        check_xml(&svg).unwrap();
        // A frame's element; its tooltip spans lines.
        let fill = |name: &str| {
            let l = svg.split("<g>").find(|g| g.starts_with(&format!("<title>{name} "))).unwrap();
            let at = l.find("fill=\"rgb(").unwrap() + 10;
            l[at..at + l[at..].find(')').unwrap()].to_string()
        };
        // beta grew most (+80 points): deepest red; common shrank by 30: lighter blue; main same.
        assert_eq!(fill("beta"), "255,50,50");
        assert_eq!(fill("common"), format!("{0},{0},255", (225.0f64 - 175.0 * 30.0 / 80.0).round()));
        assert_eq!(fill("main"), "225,225,225");
        assert!(svg.contains("A: 50.00% of samples -&gt; B: 20.00% (-30.00 points)"), "{svg}");
        assert!(svg.contains("Only in A, not drawn: 1 frames: main &gt; alpha (50.00% of A)."), "{svg}");
        assert!(svg.contains("</tspan> grew") && svg.contains("deepest colour ±80.00 points"), "{svg}");
    }

    #[test]
    fn empty_tree_is_still_valid() {
        let svg = flame_svg(&Cct::default(), &SvgOptions::default());
        check_xml(&svg).unwrap();
    }
}
