//! Collapsed stacks (`root;...;leaf count` per line), the input format of Brendan Gregg's
//! FlameGraph, speedscope and `hpm` itself ([`crate::load::parse_collapsed`]).

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::cct::{Cct, Measure, ROOT};

/// Name written for samples that had no frames at all (self samples of the root).
pub const NO_FRAMES: &str = "[no frames]";

/// Makes a frame name safe for the line format: `;` separates frames and a line ends the
/// record, so `;` becomes `:` and line breaks become spaces. Other characters are kept.
pub fn sanitize_frame(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// The collapsed lines as (stack, count), sorted by stack text; stacks that become equal
/// after [`sanitize_frame`] are merged. Zero counts are left out.
pub fn collapsed_lines(cct: &Cct, by: Measure) -> Vec<(String, u64)> {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for (id, node) in cct.nodes.iter().enumerate() {
        let count = by.of(node.self_amounts());
        if count == 0 {
            continue;
        }
        let stack = if id as u32 == ROOT {
            NO_FRAMES.to_string()
        } else {
            let path: Vec<String> = cct.path(id as u32).iter().map(|f| sanitize_frame(f)).collect();
            path.join(";")
        };
        *lines.entry(stack).or_insert(0) += count;
    }
    lines.into_iter().collect()
}

/// Writes the tree as collapsed stacks: one line per call path with self samples (or self
/// weight), `frame;frame;frame count`, sorted for reproducible output.
pub fn write_collapsed<W: Write>(cct: &Cct, by: Measure, out: &mut W) -> io::Result<()> {
    for (stack, count) in collapsed_lines(cct, by) {
        writeln!(out, "{stack} {count}")?;
    }
    Ok(())
}

/// [`write_collapsed`] into a string.
pub fn to_collapsed(cct: &Cct, by: Measure) -> String {
    let mut s = String::new();
    for (stack, count) in collapsed_lines(cct, by) {
        s.push_str(&stack);
        s.push(' ');
        s.push_str(&count.to_string());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_collapsed;

    fn sample_tree(order_flip: bool) -> Cct {
        let mut stacks = vec![
            (vec!["main", "b", "x"], 3u64, 30u64),
            (vec!["main", "a"], 2, 20),
            (vec!["main", "a", "y"], 1, 10),
            (vec!["[GC]"], 4, 40),
        ];
        if order_flip {
            stacks.reverse();
        }
        let mut c = Cct::default();
        for (s, n, w) in stacks {
            c.add_stack(&s, n, w, &[]);
        }
        c
    }

    #[test]
    fn deterministic_regardless_of_insertion_order() {
        let a = to_collapsed(&sample_tree(false), Measure::Samples);
        let b = to_collapsed(&sample_tree(true), Measure::Samples);
        assert_eq!(a, b);
        assert_eq!(a, "[GC] 4\nmain;a 2\nmain;a;y 1\nmain;b;x 3\n");
        let mut buf = Vec::new();
        write_collapsed(&sample_tree(true), Measure::Samples, &mut buf).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), a);
    }

    #[test]
    fn weight_option_and_round_trip() {
        let c = sample_tree(false);
        assert_eq!(to_collapsed(&c, Measure::Weight), "[GC] 40\nmain;a 20\nmain;a;y 10\nmain;b;x 30\n");
        let back = parse_collapsed(&to_collapsed(&c, Measure::Samples)).unwrap();
        assert_eq!(back.total_samples(), c.total_samples());
        assert_eq!(to_collapsed(&back, Measure::Samples), to_collapsed(&c, Measure::Samples));
    }

    #[test]
    fn separators_in_names_are_neutralised() {
        let mut c = Cct::default();
        c.add_stack(&["a;b", "line\nbreak", "with space"], 1, 1, &[]);
        c.add_stack::<&str>(&[], 2, 2, &[]);
        let s = to_collapsed(&c, Measure::Samples);
        assert_eq!(s, "[no frames] 2\na:b;line break;with space 1\n");
        let back = parse_collapsed(&s).unwrap();
        assert_eq!(back.total_samples(), 3);
    }
}
