//! Human- and tool-facing outputs built from a calling context tree: collapsed stacks,
//! flame graphs (HTML, SVG), the text report, and pprof and JSON for other tools.
//!
//! All outputs are deterministic: siblings and table rows are ordered by value and then by
//! name, so the same tree always renders to the same bytes.

pub mod collapsed;
pub mod flame_html;
pub mod flame_svg;
pub mod json;
pub mod pprof;
pub mod report;
pub mod stacks;
pub mod threads;

mod flat;
mod methods;
mod summary;
pub(crate) mod text;

pub use collapsed::{to_collapsed, write_collapsed, CountBy};
pub use flame_html::{flame_html, HtmlOptions};
pub use flame_svg::{flame_svg, SvgOptions};
pub use report::{component_counts, full_report, summary, ReportOptions, Tallies};

/// Broad family of a frame, judged from its name alone (a [`crate::cct::Cct`] only keeps
/// names). Used to colour flame graphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameFamily {
    /// `pkg.Class.method`, or async-profiler's `_[j]`, `_[i]`, `_[0]`, `_[1]` suffixes.
    Java,
    /// C++ symbols (`os::javaTimeNanos`, `JavaThread::run()`), i.e. mostly the JVM itself.
    Cpp,
    /// Other native symbols (`memcpy`, `__pthread_cond_wait`).
    Native,
    /// Kernel frames (async-profiler's `_[k]` suffix).
    Kernel,
    /// Pseudo-frames in brackets: `[GC]`, `[main tid=42]`, `[unknown]`.
    Pseudo,
}

impl FrameFamily {
    pub const ALL: [FrameFamily; 5] =
        [FrameFamily::Java, FrameFamily::Cpp, FrameFamily::Native, FrameFamily::Kernel, FrameFamily::Pseudo];

    pub fn name(self) -> &'static str {
        match self {
            FrameFamily::Java => "Java",
            FrameFamily::Cpp => "C++",
            FrameFamily::Native => "native",
            FrameFamily::Kernel => "kernel",
            FrameFamily::Pseudo => "pseudo-frame",
        }
    }

    /// Index used in the HTML data and the JS colour table.
    pub fn index(self) -> usize {
        FrameFamily::ALL.iter().position(|&f| f == self).unwrap_or(0)
    }
}

/// Classifies a frame name. A heuristic: Java names are dotted identifiers whose method name
/// does not start with a digit (which rules out GCC clones such as `foo.isra.0`).
pub fn frame_family(name: &str) -> FrameFamily {
    if name.len() >= 2 && name.starts_with('[') && name.ends_with(']') {
        return FrameFamily::Pseudo;
    }
    for (suffix, fam) in [
        ("_[k]", FrameFamily::Kernel),
        ("_[j]", FrameFamily::Java),
        ("_[i]", FrameFamily::Java),
        ("_[0]", FrameFamily::Java),
        ("_[1]", FrameFamily::Java),
    ] {
        if name.ends_with(suffix) {
            return fam;
        }
    }
    if name.contains("::") {
        return FrameFamily::Cpp;
    }
    let java_chars = |c: char| c.is_alphanumeric() || matches!(c, '_' | '$' | '<' | '>' | '/' | '.');
    if let Some((class, method)) = name.rsplit_once('.') {
        let method_ok = method.chars().next().is_some_and(|c| c.is_alphabetic() || matches!(c, '_' | '$' | '<'));
        if !class.is_empty() && method_ok && name.chars().all(java_chars) {
            return FrameFamily::Java;
        }
    }
    FrameFamily::Native
}

/// Indices of the `cycles` and `instructions` counters, when both were recorded: the pair
/// that gives cycles per instruction (CPI).
pub fn cpi_counters(counters: &[String]) -> Option<(usize, usize)> {
    let cyc = counters.iter().position(|c| c == "cycles" || c == "cpu-cycles")?;
    let ins = counters.iter().position(|c| c == "instructions")?;
    Some((cyc, ins))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_from_names() {
        assert_eq!(frame_family("java.util.HashMap.get"), FrameFamily::Java);
        assert_eq!(frame_family("Main.main"), FrameFamily::Java);
        assert_eq!(frame_family("Foo$$Lambda/0x0000000800c0b000.run"), FrameFamily::Java);
        assert_eq!(frame_family("java.lang.Object.<init>"), FrameFamily::Java);
        assert_eq!(frame_family("os::javaTimeNanos"), FrameFamily::Cpp);
        assert_eq!(frame_family("JavaThread::run()"), FrameFamily::Cpp);
        assert_eq!(frame_family("memcpy"), FrameFamily::Native);
        assert_eq!(frame_family("foo.isra.0"), FrameFamily::Native);
        assert_eq!(frame_family("libc.so.6"), FrameFamily::Native);
        assert_eq!(frame_family("[GC]"), FrameFamily::Pseudo);
        assert_eq!(frame_family("[main tid=42]"), FrameFamily::Pseudo);
        assert_eq!(frame_family("do_syscall_64_[k]"), FrameFamily::Kernel);
        assert_eq!(frame_family("Foo.bar_[j]"), FrameFamily::Java);
        assert_eq!(frame_family("["), FrameFamily::Native);
    }

    #[test]
    fn cpi_needs_both_counters() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(cpi_counters(&v(&["instructions", "cycles"])), Some((1, 0)));
        assert_eq!(cpi_counters(&v(&["cycles"])), None);
        assert_eq!(cpi_counters(&v(&["task-clock", "page-faults"])), None);
    }
}
