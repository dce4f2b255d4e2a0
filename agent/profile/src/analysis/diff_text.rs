//! The text of `hpm diff A B`: the methods and calling contexts whose share of the samples
//! changed most between two profiles ([`crate::analysis::diff`]).

use std::fmt::Write;

use super::diff::{Diff, Shares, SortBy};
use crate::text::{clip, group, Unit};

/// Longest method or context shown; longer ones end in `..`.
const NAME_WIDTH: usize = 120;

/// `+12.34` / `-0.50`: a change of share in percentage points.
fn points(change: f64) -> String {
    format!("{:+.2}", change * 100.0)
}

fn share(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// The diff report: a header naming A and B with what each weighs in `unit` (samples, or
/// the bytes or time of the JVM's events), the `top` methods by change (ordered as the diff
/// was made, `by`), then the `top` calling contexts by change in self share.
pub fn diff_report(d: &Diff, a: &str, b: &str, by: SortBy, top: usize, unit: Unit) -> String {
    let mut out = String::from("== hpm diff ==\n");
    let _ = writeln!(out, "A:          {a} ({})", unit.amount(d.samples.0));
    let _ = writeln!(out, "B:          {b} ({})", unit.amount(d.samples.1));
    let _ = writeln!(
        out,
        "change:     B's share of its {} minus A's, in percentage points (+ grew, - shrank)",
        unit.whole()
    );

    let order = match by {
        SortBy::Change => "change in share (the larger of self and total)",
        SortBy::SelfShare => "change in self share",
        SortBy::TotalShare => "change in total share",
    };
    let _ = writeln!(out, "\n== Methods by {order} ==");
    if d.methods.is_empty() {
        out.push_str("(no method's share changed)\n");
    } else {
        let _ = writeln!(
            out,
            "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  method",
            "self", "total", "self A", "self B", "total A", "total B"
        );
        for m in d.methods.iter().take(top) {
            let _ = writeln!(out, "{}  {}", row(&m.shares), clip(&m.name, NAME_WIDTH));
        }
        more(&mut out, d.methods.len(), top, "methods");
    }

    out.push_str("\n== Calling contexts by change in self share ==\n");
    if d.contexts.is_empty() {
        out.push_str("(no context's self share changed)\n");
    } else {
        let _ = writeln!(out, "{:>8} {:>8} {:>8}  context", "self", "self A", "self B");
        for c in d.contexts.iter().take(top) {
            let s = &c.shares;
            let _ = writeln!(
                out,
                "{:>8} {:>8} {:>8}  {}",
                points(s.self_change()),
                share(s.self_a),
                share(s.self_b),
                clip(&d.path(c.node), NAME_WIDTH)
            );
        }
        more(&mut out, d.contexts.len(), top, "contexts");
    }
    out
}

fn row(s: &Shares) -> String {
    format!(
        "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        points(s.self_change()),
        points(s.total_change()),
        share(s.self_a),
        share(s.self_b),
        share(s.total_a),
        share(s.total_b)
    )
}

fn more(out: &mut String, all: usize, shown: usize, what: &str) {
    if all > shown {
        let _ = writeln!(out, "({} more {what} changed less)", group((all - shown) as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::super::diff::{diff, DiffOptions};
    use super::*;
    use crate::load::parse_collapsed;

    #[test]
    fn the_table_names_the_grown_method_first() {
        let a = parse_collapsed("main;run;alpha 50\nmain;run;common 50\n").unwrap();
        let b = parse_collapsed("main;run;beta 160\nmain;run;common 40\n").unwrap();
        let d = diff(a, b, &DiffOptions::default());
        let text = diff_report(&d, "a.collapsed", "b.collapsed", SortBy::Change, 2, Unit::Samples);
        let expected = "\
== hpm diff ==
A:          a.collapsed (100 samples)
B:          b.collapsed (200 samples)
change:     B's share of its samples minus A's, in percentage points (+ grew, - shrank)

== Methods by change in share (the larger of self and total) ==
    self    total   self A   self B  total A  total B  method
  +80.00   +80.00    0.00%   80.00%    0.00%   80.00%  beta
  -50.00   -50.00   50.00%    0.00%   50.00%    0.00%  alpha
(1 more methods changed less)

== Calling contexts by change in self share ==
    self   self A   self B  context
  +80.00    0.00%   80.00%  main > run > beta
  -50.00   50.00%    0.00%  main > run > alpha
(1 more contexts changed less)
";
        assert_eq!(text, expected);
    }

    #[test]
    fn identical_profiles_say_nothing_changed() {
        let a = parse_collapsed("main;x 3\n").unwrap();
        let d = diff(a.clone(), a, &DiffOptions::default());
        let text = diff_report(&d, "a", "a", SortBy::SelfShare, 5, Unit::Samples);
        assert!(text.contains("== Methods by change in self share ==\n(no method's share changed)\n"), "{text}");
        assert!(text.contains("(no context's self share changed)"), "{text}");
    }

    #[test]
    fn the_header_names_what_the_events_weigh() {
        let a = parse_collapsed("main;lock 6803253449\n").unwrap();
        let b = parse_collapsed("main;lock 1500000\n").unwrap();
        let d = diff(a, b, &DiffOptions::default());
        let text = diff_report(&d, "l1.jfr", "l2.jfr", SortBy::Change, 5, Unit::NsWaited);
        assert!(text.contains("A:          l1.jfr (6.803 s waited)\nB:          l2.jfr (1.5 ms waited)\n"), "{text}");
        assert!(text.contains("B's share of its time waited minus A's"), "{text}");
        assert!(!text.contains("samples"), "{text}");
        let text = diff_report(&d, "a1.jfr", "a2.jfr", SortBy::Change, 5, Unit::Bytes);
        assert!(text.contains("A:          a1.jfr (6.3 GiB allocated)"), "{text}");
    }
}
