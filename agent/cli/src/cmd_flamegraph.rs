//! `hpm flamegraph FILE(.jfr|.collapsed) -o OUT(.html|.svg|.collapsed) [--threads] [--title T]
//! [--weight]`.

use std::path::Path;

use hpm_core::output::collapsed::{to_collapsed, CountBy};
use hpm_core::output::flame_html::{flame_html, HtmlOptions};
use hpm_core::output::flame_svg::{flame_svg, SvgOptions};
use hpm_core::output::report::event_line;

use crate::cmd_report::{load_input, option_value};

const USAGE: &str = "usage: hpm flamegraph FILE.jfr|FILE.collapsed -o OUT.html|OUT.svg|OUT.collapsed \
                     [--threads] [--title T] [--weight]";

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Html,
    Svg,
    Collapsed,
}

fn output_format(out: &str) -> Result<Format, String> {
    let ext = Path::new(out).extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "html" | "htm" => Ok(Format::Html),
        "svg" => Ok(Format::Svg),
        "collapsed" | "folded" | "txt" => Ok(Format::Collapsed),
        _ => {
            let what = if ext.is_empty() { "has no extension".to_string() } else { format!("has extension `.{ext}`") };
            Err(format!("output `{out}` {what}; use .html (interactive), .svg (static) or .collapsed (stacks)"))
        }
    }
}

pub fn main(args: &[String]) -> Result<(), String> {
    let mut input: Option<&str> = None;
    let mut output: Option<&str> = None;
    let mut title: Option<&str> = None;
    let mut threads = false;
    let mut by = CountBy::Samples;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-h" || a == "--help" {
            println!(
                "{USAGE}\n  -o OUT     .html: interactive, self-contained; .svg: static; .collapsed: stack lines\n  \
                 --threads  one tower per thread (.jfr only)\n  --title T  page title\n  \
                 --weight   widths by event weight (period) instead of sample counts"
            );
            return Ok(());
        } else if let Some(v) = option_value(args, &mut i, "-o", "an output file, e.g. -o profile.html")? {
            output = Some(v);
        } else if let Some(v) = option_value(args, &mut i, "--output", "an output file, e.g. --output profile.html")? {
            output = Some(v);
        } else if let Some(v) = option_value(args, &mut i, "--title", "a title, e.g. --title \"my run\"")? {
            title = Some(v);
        } else if a == "--threads" {
            threads = true;
        } else if a == "--weight" {
            by = CountBy::Weight;
        } else if a.starts_with('-') && a.len() > 1 {
            return Err(format!("unknown option `{a}` for `hpm flamegraph`; {USAGE}"));
        } else if let Some(f) = input {
            return Err(format!("unexpected argument `{a}` after `{f}`; give one input file and the output with -o"));
        } else {
            input = Some(a);
        }
        i += 1;
    }
    let input = input.ok_or(format!("missing input file; {USAGE}"))?;
    let output = output.ok_or(format!(
        "missing -o OUT: name the output file, e.g. `hpm flamegraph {input} -o profile.html` (.html, .svg or .collapsed)"
    ))?;
    let format = output_format(output)?;
    let loaded = load_input(input, threads)?;

    let file_name = Path::new(input).file_name().and_then(|f| f.to_str()).unwrap_or(input);
    let title = title.map(str::to_string).unwrap_or_else(|| format!("hpm: {file_name}"));
    let subtitle = loaded.rec.as_ref().map(|r| {
        let mut s = format!("event {}", event_line(r));
        if !loaded.cct.counters.is_empty() {
            s.push_str(&format!("; counters {}", loaded.cct.counters.join(", ")));
        }
        s
    });
    let text = match format {
        Format::Html => flame_html(&loaded.cct, &HtmlOptions { title, subtitle, by, ..Default::default() }),
        Format::Svg => flame_svg(&loaded.cct, &SvgOptions { title, subtitle, by, ..Default::default() }),
        Format::Collapsed => to_collapsed(&loaded.cct, by),
    };
    std::fs::write(output, text).map_err(|e| format!("cannot write `{output}`: {e}"))?;
    eprintln!(
        "hpm: wrote {output} ({} samples, {} frames)",
        loaded.cct.total_samples(),
        loaded.cct.nodes.len().saturating_sub(1)
    );
    Ok(())
}
