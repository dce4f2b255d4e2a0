//! Analyses from the papers, all without a JVM:
//!
//! - [`ccmap`]: the Call Context Map of Chilingarova & Safonov (section 3.1), filled from stack
//!   samples exactly as their algorithm does, with its queries, pruning and a lossless dump.
//! - [`tuner`]: their self-tuning sampling interval (section 3.3).
//! - [`callerchain`]: CallerChaining of Inoue & Nakatani (section 6): a calling context tree
//!   rebuilt from {caller, depth, callee, depth} quadruples, and events mapped onto it.
//! - [`hot`]: hottest methods, callees and call-edge contexts of a live calling context tree.
//! - [`compare`]: profile comparison — Arnold & Ryder overlap, hot-edge coverage (Zhuang et al.,
//!   as used by Hofer et al.) and correlation of per-method totals.
//! - [`diff`]: what changed between two profiles, per method and calling context, and the
//!   baseline of a differential flame graph.
//! - [`phases`]: method-level phases of Georges et al. (sections 3.2 and 4) from an enter/exit
//!   trace (text, or the binary versions 1 and 2 of [`phases_format`]), with [`stats`] for the
//!   coefficient of variation and one-way ANOVA; [`phases_report`] the measurement run's tables
//!   and [`phases_svg`] its plot.
//!
//! Parsers take text and return `Err((line, message))` (1-based line); the `load_*` functions
//! take a path and return [`crate::load::LoadError`], which names the file, line and problem.

pub mod callerchain;
#[cfg(test)]
mod callerchain_tests;
pub mod ccmap;
mod ccmap_io;
mod ccmap_query;
#[cfg(test)]
mod ccmap_tests;
pub mod chaining;
pub mod compare;
pub mod diff;
mod diff_text;
pub mod hot;
pub mod phases;
mod phases_binary;
pub mod phases_format;
pub mod phases_report;
#[cfg(test)]
mod phases_report_tests;
pub mod phases_svg;
#[cfg(test)]
mod phases_tests;
mod phases_trace;
#[cfg(test)]
pub(super) mod phases_v2_tests;
pub mod stats;
pub mod tuner;

pub use phases_trace::{load_trace, parse_binary_trace, parse_text_trace, Trace, TraceEvent, TraceKind, VmInterval};

use crate::load::LoadError;
use std::path::Path;

/// Reads a text file for a parser, turning both I/O and parse errors into [`LoadError`]s.
pub(crate) fn load_text<T>(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<T, (usize, String)>,
) -> Result<T, LoadError> {
    let text = crate::infile::read_regular_text(path).map_err(|e| LoadError::io(path, &e))?;
    parse(&text).map_err(|(line, message)| LoadError::format(path, line, message))
}

/// Splits a text line into whitespace-separated fields, ignoring blank lines and `#` comments.
pub(crate) fn fields(line: &str) -> Option<Vec<&str>> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        None
    } else {
        Some(t.split_whitespace().collect())
    }
}

/// Parses a whole number field, naming it in the error.
pub(crate) fn parse_u64(what: &str, s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| format!("{what} `{s}` is not a whole number"))
}

/// Sum that stops at `u64::MAX` instead of overflowing on absurd counts from a file.
pub(crate) fn sat_sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0u64, u64::saturating_add)
}
