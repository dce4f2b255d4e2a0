//! Loading profiles from files for the analysis commands: `.jfr` (ours or the JDK's), OTLP
//! profiles a fleet pushed (`.otlp`, `.pb`, `.binpb`, `.json`, `.jsonl`, or a directory of them;
//! [`crate::otlp::read`]) and collapsed stacks (`frame;frame;frame count` per line, as
//! async-profiler and FlameGraph write).
//!
//! Loading is linear in the input: a recording's samples share their stacks, trees are built
//! from distinct stacks, and the limits of [`crate::limits`] are checked as the input is read.

use std::fmt;
use std::path::Path;

use crate::cct::Cct;
use crate::filter::{Applied, SampleFilter};
use crate::infile::{open_regular, read_regular_text};
use crate::jfr::{ReadError, ReadRecording};
use crate::limits::{LimitError, MAX_STACK_DEPTH};
use crate::model::Recording;
use crate::output::report::Tallies;

/// What kind of problem a [`LoadError`] is, for callers that decide on it.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadErrorKind {
    /// The file could not be read.
    Io,
    /// The content is not what the format says.
    Format,
    /// Over a limit of [`crate::limits`].
    Limit(LimitError),
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub path: String,
    /// 1-based line for text formats, 0 when not line-related.
    pub line: usize,
    pub message: String,
    pub kind: LoadErrorKind,
}

impl LoadError {
    pub fn io(path: &Path, e: &std::io::Error) -> LoadError {
        LoadError { path: path.display().to_string(), line: 0, message: e.to_string(), kind: LoadErrorKind::Io }
    }

    pub fn format(path: &Path, line: usize, message: String) -> LoadError {
        LoadError { path: path.display().to_string(), line, message, kind: LoadErrorKind::Format }
    }

    fn from_jfr(e: ReadError) -> LoadError {
        let kind = match &e.kind {
            crate::jfr::ReadErrorKind::Io(_) => LoadErrorKind::Io,
            crate::jfr::ReadErrorKind::Limit(l) => LoadErrorKind::Limit(l.clone()),
            _ => LoadErrorKind::Format,
        };
        // The JFR error names the file itself.
        let message = e.to_string().strip_prefix(&format!("{}: ", e.path)).map(str::to_string).unwrap_or_default();
        LoadError { path: e.path, line: 0, message, kind }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.path, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for LoadError {}

/// A recording read from a `.jfr` file, with the warnings to show (an incomplete last chunk).
pub fn load_recording(path: &Path) -> Result<(Recording, Vec<String>), LoadError> {
    let ReadRecording { recording, lost, notes } = crate::jfr::read_recording(path).map_err(LoadError::from_jfr)?;
    let notes =
        lost.map(|t| t.to_string()).into_iter().chain(notes).map(|n| format!("{}: {n}", path.display())).collect();
    Ok((recording, notes))
}

/// A recording read from a `.jfr` file or from OTLP profiles (a file or a directory of them,
/// the profiles `sel` selects merged: [`crate::otlp::read`]), with the notes to show. `sel`
/// must be empty for a `.jfr` file.
pub fn load_any_recording(
    path: &Path,
    sel: &crate::otlp::read::Selection,
) -> Result<(Recording, Vec<String>), LoadError> {
    if !crate::otlp::read::is_otlp_path(path) {
        if !sel.is_empty() {
            return Err(LoadError::format(
                path,
                0,
                "--service and --host select profiles of OTLP input (.otlp, .pb, .json, a directory); a .jfr \
                 recording is one JVM's"
                    .into(),
            ));
        }
        return load_recording(path);
    }
    let fleet = crate::otlp::read::read_fleet(&[path.to_path_buf()], sel).map_err(|e| {
        use crate::otlp::read::Problem;
        let kind = match &e.problem {
            Problem::Io(_) => LoadErrorKind::Io,
            Problem::Limit(l) => LoadErrorKind::Limit(l.clone()),
            Problem::Format(_) | Problem::Selection(_) => LoadErrorKind::Format,
        };
        let message = match e.message_no {
            0 => e.problem.to_string(),
            n => format!("message {n}: {}", e.problem),
        };
        LoadError { path: e.path, line: 0, message, kind }
    })?;
    let mut notes = vec![format!(
        "{}: {} merged from {} message{}",
        path.display(),
        fleet.merged.describe(),
        fleet.merged.messages,
        if fleet.merged.messages == 1 { "" } else { "s" }
    )];
    notes.extend(fleet.notes.into_iter().map(|n| format!("{}: {n}", path.display())));
    Ok((fleet.recording, notes))
}

/// Whether `path` names a JFR recording: a `.jfr` file, or the `.jfr.part` the agent writes
/// one as until its session ends (what a killed JVM leaves: its complete chunks are read, the
/// last one's loss is said).
pub fn is_jfr_path(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    path.extension().and_then(|e| e.to_str()) == Some("jfr") || (name.len() > 9 && name.ends_with(".jfr.part"))
}

/// Loads a profile as a calling context tree, with the warnings to show. The format is chosen
/// by the extension (`.jfr` or `.jfr.part`; anything else is read as collapsed stacks).
pub fn load_cct(path: &Path) -> Result<(Cct, Vec<String>), LoadError> {
    if is_jfr_path(path) {
        let (rec, notes) = load_recording(path)?;
        return Ok((Cct::from_recording(&rec, false), notes));
    }
    let text = read_regular_text(path).map_err(|e| LoadError::io(path, &e))?;
    let cct = parse_collapsed(&text).map_err(|(line, problem)| {
        let message = problem.to_string();
        let kind = match problem {
            CollapsedError::Limit(l) => LoadErrorKind::Limit(l),
            CollapsedError::Format(_) => LoadErrorKind::Format,
        };
        LoadError { path: path.display().to_string(), line, message, kind }
    })?;
    Ok((cct, Vec::new()))
}

/// What is wrong with a line of collapsed stacks.
#[derive(Debug, Clone, PartialEq)]
pub enum CollapsedError {
    Format(String),
    Limit(LimitError),
}

impl fmt::Display for CollapsedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollapsedError::Format(m) => write!(f, "{m}"),
            CollapsedError::Limit(l) => write!(f, "{l}"),
        }
    }
}

/// Parses collapsed stacks. Blank lines and comments (`#`, not ending in a count) are skipped. The counts
/// must add up to at most `u64::MAX` (checked, never wrapped) and no line may have more than
/// [`MAX_STACK_DEPTH`] frames.
pub fn parse_collapsed(text: &str) -> Result<Cct, (usize, CollapsedError)> {
    let mut cct = Cct::default();
    let mut total = 0u64;
    let mut frames: Vec<(std::borrow::Cow<str>, u8)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let format = |m: String| (i + 1, CollapsedError::Format(m));
        let line = line.trim_end();
        // A comment starts with `#` and does not end in a count: a stack whose first frame
        // starts with `#` (hpm writes such lines) is a stack (fuzzing found the round trip
        // losing it).
        let is_comment = line.starts_with('#') && line.rsplit_once(' ').is_none_or(|(_, n)| n.parse::<u64>().is_err());
        if line.trim().is_empty() || is_comment {
            continue;
        }
        let (stack, count) = line.rsplit_once(' ').ok_or_else(|| format("expected `frame;frame;... count`".into()))?;
        let count: u64 = count.parse().map_err(|_| format(format!("sample count `{count}` is not a whole number")))?;
        total = total.checked_add(count).ok_or((
            i + 1,
            CollapsedError::Limit(LimitError::SumOverflow { what: "sample counts up to this line".into() }),
        ))?;
        frames.clear();
        for f in stack.split(';').filter(|f| !f.is_empty()) {
            if frames.len() == MAX_STACK_DEPTH {
                let n = stack.split(';').filter(|f| !f.is_empty()).count();
                return Err((i + 1, CollapsedError::Limit(LimitError::StackTooDeep { frames: n as u64 })));
            }
            frames.push(crate::output::collapsed_frame(f));
        }
        if frames.is_empty() {
            return Err(format("empty stack".into()));
        }
        cct.add_path_kinds(frames.iter().map(|(n, k)| (n.as_ref(), *k)), count, count, &[]);
    }
    Ok(cct)
}

/// Extensions read as collapsed stacks.
pub const COLLAPSED_EXTS: [&str; 3] = ["collapsed", "folded", "txt"];

/// A profile for `hpm report` and `hpm flamegraph`: metadata when the source has any, the
/// tree, samples per component and per thread, and warnings to show.
pub struct Profile {
    pub rec: Option<Recording>,
    pub cct: Cct,
    pub tallies: Tallies,
    pub notes: Vec<String>,
    /// What `--thread`, `--from` and `--to` kept, when any was given.
    pub filtered: Option<Applied>,
    /// Objects created, from `data`'s creation samples and `alloc`'s samples (JFR only).
    pub creation: Option<crate::output::jvmevents::Creation>,
}

/// Loads `.jfr` or collapsed stacks for the report and flame graphs. With `threads`, the tree
/// gets a `[name tid=N]` level under the root (JFR only). With `from_phase` (`NAME` or
/// `NAME=INDEX`, the Java bridge's `hpm.Phase` markers; JFR only), only the samples from that
/// marker on; then `filter` (`--thread`, `--from`, `--to`; JFR only) keeps what it selects.
/// With `keep_samples`, the recording keeps the samples selected (else only its metadata).
/// Errors are one line for the user.
pub fn load_profile(
    path: &str,
    threads: bool,
    from_phase: Option<&str>,
    filter: &SampleFilter,
    data_root: Option<crate::output::data::DataBy>,
    events: Option<crate::output::jvmevents::EventSel>,
    keep_samples: bool,
) -> Result<Profile, String> {
    let p = Path::new(path);
    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
    let is_otlp = crate::otlp::read::is_otlp_path(p);
    let is_jfr = is_jfr_path(p) || is_otlp;
    if !is_jfr && !COLLAPSED_EXTS.contains(&ext) {
        let what = if ext.is_empty() { "has no extension".to_string() } else { format!("has extension `.{ext}`") };
        return Err(format!(
            "input `{path}` {what}; give a .jfr recording, OTLP profiles (.otlp, .pb, .json, or a directory of \
             them) or collapsed stacks (.collapsed, .folded, .txt)"
        ));
    }
    match open_regular(p) {
        _ if p.is_dir() => {}
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => return Err(format!("`{path}` is {e}")),
        Err(e) => return Err(format!("cannot read `{path}`: {e}; check the path")),
        Ok(_) => {}
    }
    if is_otlp && from_phase.is_some() {
        return Err(format!("--from-phase needs a .jfr recording with hpm.Phase markers; `{path}` is OTLP profiles"));
    }
    if is_jfr {
        let (mut rec, mut notes) =
            load_any_recording(p, &filter.fleet).map_err(|e| format!("cannot load recording: {e}"))?;
        if filter.no_idle {
            let n = crate::output::idle::leave_out(&mut rec);
            notes.push(format!("--no-idle: {n} parks of idle pool threads waiting for work left out"));
        }
        if let Some(n) = filter.keep_lock_classes(&mut rec) {
            notes.push(format!("--lock-class: {n} lock waits of other classes left out"));
        }
        if let Some(sel) = events {
            if crate::output::jvmevents::project(&mut rec, sel) == 0 {
                return Err(format!(
                    "--event: `{path}` has no such events; record allocations with the agent option `alloc` and \
                     lock waits with `lock` (or JFR's jdk.ObjectAllocationSample, \
                     jdk.ObjectAllocationInNewTLAB/OutsideTLAB, jdk.JavaMonitorEnter, jdk.ThreadPark)"
                ));
            }
        }
        let before_phase = rec.samples.len() as u64;
        if let Some(spec) = from_phase {
            let phases = crate::jfr::marks::read_phases(p).map_err(|e| format!("cannot load recording: {e}"))?;
            let left_out = crate::jfr::marks::cut_from_phase(&mut rec.samples, &phases, spec)
                .map_err(|e| format!("--from-phase: {e}"))?;
            notes.push(format!(
                "from phase `{spec}` on: {} samples kept, {left_out} before it left out",
                rec.samples.len()
            ));
        }
        let vthreads = crate::vthreads::regroup(&mut rec, filter.vthreads);
        let mut filtered = filter.apply(&mut rec)?;
        if let Some(spec) = from_phase {
            // The phase is a filter too: the header counts the samples it kept of all.
            let kept = rec.samples.len() as u64;
            let a = filtered.get_or_insert(Applied {
                samples_before: 0,
                samples_kept: kept,
                threads: None,
                from_ns: None,
                to_ns: None,
                phase: None,
            });
            a.samples_before = before_phase;
            a.phase = Some(spec.to_string());
        }
        let cct = match data_root {
            Some(by) => crate::output::data::cct_by(&rec, by),
            None => Cct::from_recording(&rec, threads),
        };
        let tallies = Tallies { vthreads, ..Tallies::of(&rec) };
        let creation = Some(crate::output::jvmevents::Creation::of(&rec));
        // The outputs need only metadata from here on (`--instructions` needs the samples).
        if !keep_samples {
            rec.samples = Vec::new();
        }
        Ok(Profile { rec: Some(rec), cct, tallies, notes, filtered, creation })
    } else {
        if !filter.fleet.is_empty() {
            return Err(format!(
                "--service and --host select profiles of OTLP input; collapsed stacks like `{path}` carry no services"
            ));
        }
        if !filter.is_empty() {
            return Err(format!(
                "--thread, --from and --to need a .jfr recording: collapsed stacks like `{path}` carry no \
                 threads or times"
            ));
        }
        if events.is_some() {
            return Err(format!("--event needs a .jfr recording: collapsed stacks like `{path}` carry no events"));
        }
        if data_root.is_some() {
            return Err(format!("--by needs a .jfr recording: collapsed stacks like `{path}` carry no data addresses"));
        }
        if from_phase.is_some() {
            return Err(format!(
                "--from-phase needs a .jfr recording with hpm.Phase markers; `{path}` is collapsed stacks"
            ));
        }
        if threads {
            return Err(format!(
                "--threads needs a .jfr recording: collapsed stacks like `{path}` carry no thread information \
                 (async-profiler's `threads` option already puts thread frames into them)"
            ));
        }
        let (cct, notes) = load_cct(p).map_err(|e| format!("{e}; expected lines of `frame;frame;... count`"))?;
        Ok(Profile { rec: None, cct, tallies: Tallies::default(), notes, filtered: None, creation: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapsed_round_trip_counts() {
        let c = parse_collapsed("main;a;b 3\nmain;c 2\n\n# comment\n").unwrap();
        assert_eq!(c.total_samples(), 5);
        // A first frame starting with `#` is a stack, not a comment, so hpm's own output of it
        // reads back whole.
        let c = parse_collapsed("#x;a 2\nb 1\n").unwrap();
        assert_eq!(c.total_samples(), 3);
        let again = parse_collapsed(&crate::output::collapsed::to_collapsed(&c, crate::cct::Measure::Samples));
        assert_eq!(again.unwrap().total_samples(), 3);
    }

    #[test]
    fn a_killed_runs_part_file_is_a_recording_and_other_parts_are_not() {
        for (p, jfr) in [
            ("p.jfr", true),
            ("dir/p.jfr.part", true),
            (".jfr.part", false),
            ("p.collapsed.part", false),
            ("p.part", false),
            ("p.jfr.partial", false),
            ("p.collapsed", false),
        ] {
            assert_eq!(is_jfr_path(Path::new(p)), jfr, "{p}");
        }
    }

    #[test]
    fn async_profilers_frames_read_as_hpm_names_them() {
        use crate::cct::kind_bit;
        use crate::model::FrameKind;
        let name = |f: &str| {
            let (n, k) = crate::output::collapsed_frame(f);
            (n.into_owned(), k)
        };
        assert_eq!(name("java/util/Arrays.copyOf"), ("java.util.Arrays.copyOf".into(), 0));
        assert_eq!(name("java/lang/Thread.run_[j]"), ("java.lang.Thread.run".into(), kind_bit(FrameKind::JitCompiled)));
        assert_eq!(name("Shares.a_[i]"), ("Shares.a".into(), kind_bit(FrameKind::Inlined)));
        assert_eq!(name("Main.main_[0]"), ("Main.main".into(), kind_bit(FrameKind::Interpreted)));
        assert_eq!(name("java/lang/Math.sin_[1]"), ("java.lang.Math.sin".into(), kind_bit(FrameKind::JitCompiled)));
        assert_eq!(
            name("finish_task_switch.isra.0_[k]"),
            ("finish_task_switch.isra.0".into(), kind_bit(FrameKind::Kernel))
        );
        // A hidden class keeps its address as the JVM writes it.
        assert_eq!(
            name("java/lang/invoke/LambdaForm$MH/0x0000000800c0b000.invoke_[j]"),
            ("java.lang.invoke.LambdaForm$MH/0x0000000800c0b000.invoke".into(), kind_bit(FrameKind::JitCompiled))
        );
        // hpm's own names, native code and paths read back unchanged.
        for same in [
            "java.util.HashMap.get",
            "Foo$$Lambda/0x0000000800c0b000.run",
            "os::javaTimeNanos",
            "/usr/lib/libc.so.6",
            "[GC]",
            "__memmove_avx_unaligned_erms",
            "_[k]",
        ] {
            assert_eq!(name(same), (same.to_string(), 0), "{same}");
        }
        // A tree of both lines up: one node per method.
        let c = parse_collapsed("java/lang/Thread.run_[j];A.f_[i] 2\njava.lang.Thread.run;A.f 3\n").unwrap();
        assert_eq!(c.nodes.len(), 3, "{:?}", c.leaf_stacks());
    }

    #[test]
    fn collapsed_errors_name_the_line() {
        assert_eq!(parse_collapsed("main;a 1\nmain;b x\n").unwrap_err().0, 2);
        assert_eq!(parse_collapsed("nocount\n").unwrap_err().0, 1);
    }

    #[test]
    fn collapsed_counts_that_overflow_are_refused_not_wrapped() {
        let text = format!("a;b {}\na;c 1\n", u64::MAX);
        let (line, e) = parse_collapsed(&text).unwrap_err();
        assert_eq!(line, 2);
        assert!(matches!(e, CollapsedError::Limit(LimitError::SumOverflow { .. })), "{e}");
        assert!(e.to_string().contains("add up to more than 18446744073709551615"), "{e}");
        // Up to the bound is fine.
        let c = parse_collapsed(&format!("a;b {}\na;c 1\n", u64::MAX - 1)).unwrap();
        assert_eq!(c.total_samples(), u64::MAX);
    }
}
