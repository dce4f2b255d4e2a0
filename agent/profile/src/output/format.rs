//! The output formats: the one table from a file's name to its format, read by the agent's
//! `file=` and by the CLI's `-o`, and the one dispatcher, [`render`], that makes every format
//! but JFR from a profile.

use crate::cct::Cct;
use crate::model::Recording;
use crate::text::Unit;

use super::flame_html::{flame_html, HtmlOptions};
use super::flame_svg::{flame_svg, SvgOptions};
use super::stacks::StackTable;
use crate::cct::Measure;

/// A format a profile is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JFR chunks (written chunk by chunk as the agent records, not by [`render`]).
    Jfr,
    /// Collapsed stacks, `frame;frame count` per line.
    Collapsed,
    /// An interactive, self-contained flame graph.
    Html,
    /// A static flame graph.
    Svg,
    /// gzip-compressed pprof profile.proto (`.pb.gz`, `.pprof`).
    Pprof,
    /// JSON, schema `hpm-profile/1` (docs/json.md).
    Json,
    /// An OTLP profiles request, protobuf, uncompressed (`.otlp`; `crate::otlp`).
    Otlp,
}

/// Whether `.txt` names collapsed stacks: only where the command writes stacks or graphs
/// (`hpm flamegraph -o`); a `file=x.txt` of the agent could mean any text, and is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Txt {
    Refused,
    Collapsed,
}

/// File name endings (compared without case) and their formats, the longest ending first.
const TABLE: [(&str, Format); 11] = [
    (".pb.gz", Format::Pprof),
    (".collapsed", Format::Collapsed),
    (".folded", Format::Collapsed),
    (".pprof", Format::Pprof),
    (".html", Format::Html),
    (".json", Format::Json),
    (".otlp", Format::Otlp),
    (".htm", Format::Html),
    (".jfr", Format::Jfr),
    (".svg", Format::Svg),
    (".txt", Format::Collapsed),
];

impl Format {
    /// The format `path`'s ending names ([`TABLE`]), `None` for an ending it lacks.
    pub fn of_path(path: &str, txt: Txt) -> Option<Format> {
        let lower = path.to_ascii_lowercase();
        TABLE
            .iter()
            .filter(|(ending, _)| txt == Txt::Collapsed || *ending != ".txt")
            .find(|(ending, _)| lower.ends_with(ending))
            .map(|&(_, f)| f)
    }

    /// What the format is made from: the calling context tree (collapsed stacks, flame
    /// graphs), the stack table (pprof, JSON, OTLP: file and line per frame), or neither (JFR).
    pub fn built_from(self) -> BuiltFrom {
        match self {
            Format::Collapsed | Format::Html | Format::Svg => BuiltFrom::Tree,
            Format::Pprof | Format::Json | Format::Otlp => BuiltFrom::Table,
            Format::Jfr => BuiltFrom::Chunks,
        }
    }
}

/// What a format is rendered from ([`Format::built_from`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltFrom {
    Tree,
    Table,
    /// Written as it is recorded (JFR): [`render`] makes nothing of it.
    Chunks,
}

/// A profile as the formats read it: a tree for the graphs and collapsed stacks, a recording
/// with its stack table for pprof, JSON and OTLP. A caller gives what the formats it renders need.
#[derive(Clone, Copy, Default)]
pub struct Profile<'a> {
    pub tree: Option<&'a Cct>,
    pub table: Option<(&'a Recording, &'a StackTable)>,
}

/// How a graph looks and what its widths count.
#[derive(Clone, Debug)]
pub struct Look {
    pub title: String,
    /// A second header line (event, counters, filters), if any.
    pub subtitle: Option<String>,
    pub by: Measure,
    /// What a weight is (`--event`: bytes allocated, ns waited).
    pub unit: Unit,
}

impl Default for Look {
    fn default() -> Self {
        Look { title: "Flame Graph".into(), subtitle: None, by: Measure::Samples, unit: Unit::Samples }
    }
}

/// `profile` in `format`; `None` for JFR and where the profile lacks what the format is built
/// from ([`Format::built_from`]).
pub fn render(format: Format, profile: Profile<'_>, look: &Look) -> Option<Vec<u8>> {
    let Look { title, subtitle, by, unit } = look.clone();
    Some(match format {
        Format::Jfr => return None,
        Format::Collapsed => super::collapsed::to_collapsed(profile.tree?, by).into_bytes(),
        Format::Html => {
            flame_html(profile.tree?, &HtmlOptions { title, subtitle, by, unit, ..Default::default() }).into_bytes()
        }
        Format::Svg => {
            flame_svg(profile.tree?, &SvgOptions { title, subtitle, by, unit, ..Default::default() }).into_bytes()
        }
        Format::Pprof => {
            let (rec, table) = profile.table?;
            super::pprof::pprof_gz(rec, table)
        }
        Format::Json => {
            let (rec, table) = profile.table?;
            super::json::to_json(rec, table).into_bytes()
        }
        Format::Otlp => {
            let (rec, table) = profile.table?;
            super::otlp::otlp_file(rec, table)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ending either side took: the agent's (case ignored) and the CLI's, `.txt` only
    /// where asked.
    #[test]
    fn the_table_names_each_ending_once() {
        for (path, want) in [
            ("p.jfr", Format::Jfr),
            ("P.JFR", Format::Jfr),
            ("p.collapsed", Format::Collapsed),
            ("p.folded", Format::Collapsed),
            ("p.html", Format::Html),
            ("p.htm", Format::Html),
            ("p.svg", Format::Svg),
            ("out/p.pb.gz", Format::Pprof),
            ("p.PB.GZ", Format::Pprof),
            ("p.pprof", Format::Pprof),
            ("p.json", Format::Json),
            ("p.otlp", Format::Otlp),
            ("P.OTLP", Format::Otlp),
            ("%p-%t.jfr", Format::Jfr),
        ] {
            assert_eq!(Format::of_path(path, Txt::Refused), Some(want), "{path}");
            assert_eq!(Format::of_path(path, Txt::Collapsed), Some(want), "{path}");
        }
        assert_eq!(Format::of_path("p.txt", Txt::Refused), None);
        assert_eq!(Format::of_path("p.txt", Txt::Collapsed), Some(Format::Collapsed));
        for bad in ["p.gz", "p", "jfr", "p.jfr.bak", "dir.svg/p"] {
            assert_eq!(Format::of_path(bad, Txt::Collapsed), None, "{bad}");
        }
    }

    #[test]
    fn render_needs_what_the_format_is_built_from() {
        let mut c = Cct::default();
        c.add_stack(&["main", "a"], 2, 20, &[]);
        let tree = Profile { tree: Some(&c), table: None };
        assert_eq!(render(Format::Collapsed, tree, &Look::default()).unwrap(), b"main;a 2\n");
        let weight = Look { by: Measure::Weight, ..Look::default() };
        assert_eq!(render(Format::Collapsed, tree, &weight).unwrap(), b"main;a 20\n");
        assert!(render(Format::Json, tree, &Look::default()).is_none());
        assert!(render(Format::Jfr, tree, &Look::default()).is_none());
        assert!(render(Format::Svg, Profile::default(), &Look::default()).is_none());
    }
}
