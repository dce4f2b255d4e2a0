//! Human- and tool-facing outputs built from a calling context tree: collapsed stacks,
//! flame graphs (HTML, SVG; differential ones too, from a [`FrameBaseline`] that
//! `analysis::diff` makes), the text report, and pprof and JSON for other tools.
//!
//! All outputs are deterministic: siblings and table rows are ordered by value and then by
//! name, so the same tree always renders to the same bytes.

pub mod collapsed;
pub mod cost;
pub mod data;
pub mod flame_html;
pub mod flame_svg;
pub mod format;
pub mod idle;
pub mod instructions;
pub mod json;
pub mod jvmevents;
pub mod otlp;
pub mod pinned;
pub mod pprof;
pub mod report;
pub mod stacks;
pub mod threads;
pub mod vm_functions;

mod flat;
mod methods;
mod summary;

pub use crate::cct::Measure;
pub use collapsed::{to_collapsed, write_collapsed};
pub use flame_html::{flame_html, flame_html_diff, HtmlOptions};
pub use flame_svg::{flame_svg, flame_svg_diff, SvgOptions};
pub use report::{component_counts, full_report, summary, ReportOptions, Tallies};
pub use summary::states_line;

/// Broad family of a frame, for the colours of flame graphs: the kind of code the frame ran as
/// where the recording says ([`crate::cct::CctNode::kinds`]), else judged from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameFamily {
    /// A Java method run as JIT-compiled code (async-profiler's `_[j]` and `_[1]` suffixes).
    Jit,
    /// A Java method inlined into its caller's compiled code (`_[i]`).
    Inlined,
    /// A Java method run by the interpreter (`_[0]`).
    Interpreted,
    /// A Java method whose kind was not recorded: `pkg.Class.method` names in collapsed stacks,
    /// the `jvmti` sampler's frames.
    Java,
    /// C++ code of the JVM (`os::javaTimeNanos`, `JavaThread::run()`, stubs).
    Cpp,
    /// Other native code (`memcpy`, `__pthread_cond_wait`, JNI libraries).
    Native,
    /// Kernel code (`[kernel]`, async-profiler's `_[k]`).
    Kernel,
    /// Pseudo-frames in brackets: `[GC]`, `[main tid=42]`, `[unknown]`.
    Pseudo,
}

impl FrameFamily {
    pub const ALL: [FrameFamily; 8] = [
        FrameFamily::Jit,
        FrameFamily::Inlined,
        FrameFamily::Interpreted,
        FrameFamily::Java,
        FrameFamily::Cpp,
        FrameFamily::Native,
        FrameFamily::Kernel,
        FrameFamily::Pseudo,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FrameFamily::Jit => "JIT compiled",
            FrameFamily::Inlined => "inlined",
            FrameFamily::Interpreted => "interpreted",
            FrameFamily::Java => "Java",
            FrameFamily::Cpp => "C++ (JVM)",
            FrameFamily::Native => "native",
            FrameFamily::Kernel => "kernel",
            FrameFamily::Pseudo => "pseudo-frame",
        }
    }

    /// Index used in the HTML data.
    pub fn index(self) -> usize {
        FrameFamily::ALL.iter().position(|&f| f == self).unwrap_or(0)
    }

    /// The family's colour range: base RGB, span per channel, and which of a name's two hash
    /// values varies each channel (see [`family_colour`]). One table for the SVG and the page.
    pub fn palette(self) -> ([u8; 3], [u8; 3], [u8; 3]) {
        match self {
            FrameFamily::Jit => ([60, 170, 60], [70, 60, 50], [0, 1, 0]),
            FrameFamily::Inlined => ([40, 170, 180], [40, 50, 50], [0, 1, 1]),
            FrameFamily::Interpreted => ([170, 210, 80], [40, 30, 40], [0, 1, 0]),
            FrameFamily::Java => ([90, 180, 130], [50, 40, 40], [0, 1, 0]),
            FrameFamily::Cpp => ([205, 190, 50], [45, 50, 50], [0, 1, 1]),
            FrameFamily::Native => ([200, 50, 50], [50, 50, 40], [0, 1, 0]),
            FrameFamily::Kernel => ([230, 140, 20], [25, 40, 30], [0, 1, 0]),
            FrameFamily::Pseudo => ([140, 160, 200], [40, 40, 40], [0, 0, 1]),
        }
    }
}

/// A colour in the family's range, varied per name (FNV-1a) so neighbouring frames stay
/// distinct. `flame.js` computes the same from [`FrameFamily::palette`].
pub fn family_colour(fam: FrameFamily, name: &str) -> (u8, u8, u8) {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    let v = [(h & 0xff) as f64 / 255.0, ((h >> 8) & 0xff) as f64 / 255.0];
    let (base, span, vary) = fam.palette();
    let c = |i: usize| (base[i] as f64 + span[i] as f64 * v[vary[i] as usize]).round().clamp(0.0, 255.0) as u8;
    (c(0), c(1), c(2))
}

/// The family of a tree node: from the kinds of code its frames ran as, when recorded (a node
/// seen as several kinds takes the first of kernel, native, C++, JIT compiled, inlined,
/// interpreted: a method mostly compiled but interpreted at first is JIT compiled), else from
/// its name ([`frame_family`]).
pub fn node_family(name: &str, kinds: u8) -> FrameFamily {
    use crate::cct::kind_bit;
    use crate::model::FrameKind;
    for (k, fam) in [
        (FrameKind::Kernel, FrameFamily::Kernel),
        (FrameKind::Native, FrameFamily::Native),
        (FrameKind::Cpp, FrameFamily::Cpp),
        (FrameKind::JitCompiled, FrameFamily::Jit),
        (FrameKind::Inlined, FrameFamily::Inlined),
        (FrameKind::Interpreted, FrameFamily::Interpreted),
    ] {
        if kinds & kind_bit(k) != 0 {
            return fam;
        }
    }
    frame_family(name)
}

/// Classifies a frame by its name. A heuristic: async-profiler's type suffixes first; then Java
/// names are dotted identifiers whose method name does not start with a digit (which rules out
/// GCC clones such as `foo.isra.0`).
pub fn frame_family(name: &str) -> FrameFamily {
    if name.len() >= 2 && name.starts_with('[') && name.ends_with(']') {
        return FrameFamily::Pseudo;
    }
    for (suffix, fam) in [
        ("_[k]", FrameFamily::Kernel),
        ("_[j]", FrameFamily::Jit),
        ("_[i]", FrameFamily::Inlined),
        ("_[0]", FrameFamily::Interpreted),
        ("_[1]", FrameFamily::Jit),
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

/// A frame of collapsed stacks as hpm names it, with the kind of code it ran as when the name
/// says. async-profiler writes Java classes in their internal form (`java/util/Arrays.copyOf`)
/// and, with `ann` or for kernel code, a type after the name: `_[j]` JIT compiled, `_[1]`
/// compiled by C1, `_[i]` inlined, `_[0]` interpreted, `_[k]` kernel. Read as hpm's own names
/// (`java.util.Arrays.copyOf`, `finish_task_switch.isra.0`) with the type as the frame's kind,
/// a report shows one name per method and a diff against hpm's recording lines up. A hidden
/// class's `/0x…` stays, as the JVM (and hpm) name it; names hpm writes read back unchanged.
pub fn collapsed_frame(f: &str) -> (std::borrow::Cow<'_, str>, u8) {
    use crate::cct::kind_bit;
    use crate::model::FrameKind;
    const TYPES: [(&str, FrameKind); 5] = [
        ("_[j]", FrameKind::JitCompiled),
        ("_[1]", FrameKind::JitCompiled),
        ("_[i]", FrameKind::Inlined),
        ("_[0]", FrameKind::Interpreted),
        ("_[k]", FrameKind::Kernel),
    ];
    let typed = TYPES.iter().find_map(|(suffix, k)| f.strip_suffix(suffix).map(|n| (n, *k)));
    let (name, kind) = match typed {
        Some((n, k)) if !n.is_empty() => (n, Some(k)),
        _ => (f, None),
    };
    let java = match kind {
        Some(k) => k.is_java(),
        None => frame_family(name) == FrameFamily::Java,
    };
    let bits = kind.map_or(0, kind_bit);
    if !java || !name.contains('/') || name.starts_with('/') {
        return (name.into(), bits);
    }
    // Slashes of the package path become dots; a hidden class's `/0x` address stays.
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        out.push(if rest[i + 1..].starts_with("0x") { '/' } else { '.' });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    (out.into(), bits)
}

/// For each frame of B, A's samples at the same path: what a differential flame graph of B
/// colours by.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameBaseline {
    /// A's (total, self) samples at the path of each node of B, indexed by B's node id.
    pub a_at_b: Vec<(u64, u64)>,
    /// All of A's samples.
    pub a_samples: u64,
    /// Frames of A whose path B does not have (the outermost of each such subtree), most A
    /// samples first, at most [`A_ONLY_LISTED`]: (the context, A's samples in it).
    pub a_only: Vec<(String, u64)>,
    /// How many such frames there are in all.
    pub a_only_frames: u64,
}

/// Frames only in A listed by name in [`FrameBaseline::a_only`].
pub const A_ONLY_LISTED: usize = 10;

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
        assert_eq!(frame_family("Foo.bar_[j]"), FrameFamily::Jit);
        assert_eq!(frame_family("Foo.bar_[i]"), FrameFamily::Inlined);
        assert_eq!(frame_family("Foo.bar_[0]"), FrameFamily::Interpreted);
        assert_eq!(frame_family("Foo.bar_[1]"), FrameFamily::Jit);
        assert_eq!(frame_family("["), FrameFamily::Native);
    }

    #[test]
    fn recorded_kinds_come_before_names() {
        use crate::cct::kind_bit;
        use crate::model::FrameKind::*;
        // hpm's own kernel and native frames have names no heuristic can tell apart.
        assert_eq!(node_family("[kernel]", kind_bit(Kernel)), FrameFamily::Kernel);
        assert_eq!(node_family("do_syscall_64", kind_bit(Kernel)), FrameFamily::Kernel);
        assert_eq!(node_family("JVM_Sleep::x", kind_bit(Native)), FrameFamily::Native);
        assert_eq!(node_family("memcpy", kind_bit(Cpp)), FrameFamily::Cpp);
        assert_eq!(node_family("A.f", kind_bit(Interpreted)), FrameFamily::Interpreted);
        assert_eq!(node_family("A.f", kind_bit(Inlined)), FrameFamily::Inlined);
        assert_eq!(node_family("A.f", kind_bit(Interpreted) | kind_bit(JitCompiled)), FrameFamily::Jit);
        // Unknown kinds (the jvmti sampler) and none (collapsed stacks): the name decides.
        assert_eq!(node_family("A.f", kind_bit(Unknown)), FrameFamily::Java);
        assert_eq!(node_family("memcpy", 0), FrameFamily::Native);
        assert_eq!(node_family("[GC]", 0), FrameFamily::Pseudo);
    }

    #[test]
    fn every_family_has_its_own_colour() {
        let mut seen = std::collections::HashSet::new();
        for f in FrameFamily::ALL {
            assert!(seen.insert(family_colour(f, "")), "{} shares a colour", f.name());
        }
    }

    #[test]
    fn cpi_needs_both_counters() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(cpi_counters(&v(&["instructions", "cycles"])), Some((1, 0)));
        assert_eq!(cpi_counters(&v(&["cycles"])), None);
        assert_eq!(cpi_counters(&v(&["task-clock", "page-faults"])), None);
    }
}
