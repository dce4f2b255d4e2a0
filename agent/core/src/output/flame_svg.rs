//! A static SVG flame graph: the root at the bottom, one `<rect>` per frame with its width
//! proportional to samples, a `<title>` tooltip per frame, no script.

use std::fmt::Write;

use crate::cct::Cct;

use super::flat::{flatten, threshold, total_of};
use super::text::{clip, escape_xml, group, pct, ratio};
use super::{cpi_counters, frame_family, CountBy, FrameFamily};

#[derive(Clone, Debug)]
pub struct SvgOptions {
    pub title: String,
    /// A second header line (event, period, sample count), if any.
    pub subtitle: Option<String>,
    /// Image width in pixels.
    pub width: u32,
    pub frame_height: u32,
    pub by: CountBy,
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
            by: CountBy::Samples,
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
    let by = opts.by;
    let root_total = total_of(cct, crate::cct::ROOT, by);
    let width = opts.width.max(200) as f64;
    let inner = width - 2.0 * PAD_X;
    let min_total = if root_total == 0 { 1 } else { threshold(cct, by, opts.min_width_px / inner, usize::MAX) };
    let flat = flatten(cct, by, min_total);
    let fh = opts.frame_height.max(8) as f64;
    let height = HEADER + (flat.max_depth as f64 + 1.0) * fh + FOOTER;
    let unit = by.name();

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
    for n in &flat.nodes {
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
        let fam = if n.depth == 0 { FrameFamily::Pseudo } else { frame_family(n.name) };
        let (r, g, b) = color(fam, n.name);

        let mut tip = format!("{} ({} {unit}, {}", n.name, group(n.total), pct(n.total, root_total));
        if n.self_value > 0 {
            let _ = write!(tip, "; self {}", group(n.self_value));
        }
        tip.push(')');
        for (k, cname) in cct.counters.iter().enumerate() {
            let v = n.counters.get(k).copied().unwrap_or(0);
            let _ = write!(tip, "\n{cname}: {} ({})", group(v), pct(v, root_counters[k]));
            if cpi.is_none() && by == CountBy::Samples {
                let _ = write!(tip, ", {}/sample", ratio(v, n.total));
            }
        }
        if let Some((c, i)) = cpi {
            let (cv, iv) = (n.counters.get(c).copied().unwrap_or(0), n.counters.get(i).copied().unwrap_or(0));
            let _ = write!(tip, "\nCPI: {}", ratio(cv, iv));
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
    let legend: Vec<String> = FrameFamily::ALL
        .iter()
        .map(|f| {
            let (r, g, b) = color(*f, "");
            format!(r#"<tspan fill="rgb({r},{g},{b})">&#9632;</tspan> {}"#, f.name())
        })
        .collect();
    let _ =
        writeln!(s, r#"<text class="s" x="{PAD_X}" y="{:.1}">{}</text>"#, height - FOOTER + 16.0, escape_xml(&note));
    let _ = writeln!(s, r#"<text class="s" x="{PAD_X}" y="{:.1}">{}</text>"#, height - 6.0, legend.join("  "));
    s.push_str("</svg>\n");
    s
}

/// A colour in the family's hue, varied per name so neighbouring frames stay distinct.
pub(crate) fn color(fam: FrameFamily, name: &str) -> (u8, u8, u8) {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    let v1 = (h & 0xff) as f64 / 255.0;
    let v2 = ((h >> 8) & 0xff) as f64 / 255.0;
    let c = |base: u8, span: f64, v: f64| (base as f64 + span * v).round().clamp(0.0, 255.0) as u8;
    match fam {
        FrameFamily::Java => (c(60, 70.0, v1), c(170, 60.0, v2), c(60, 50.0, v1)),
        FrameFamily::Cpp => (c(205, 45.0, v1), c(190, 50.0, v2), c(50, 50.0, v2)),
        FrameFamily::Native => (c(200, 50.0, v1), c(50, 50.0, v2), c(50, 40.0, v1)),
        FrameFamily::Kernel => (c(230, 25.0, v1), c(140, 40.0, v2), c(20, 30.0, v1)),
        FrameFamily::Pseudo => (c(140, 40.0, v1), c(160, 40.0, v1), c(200, 40.0, v2)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

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
    fn empty_tree_is_still_valid() {
        let svg = flame_svg(&Cct::default(), &SvgOptions::default());
        check_xml(&svg).unwrap();
    }
}
