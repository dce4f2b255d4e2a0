//! Which samples of a recording a reading command looks at: `--thread REGEX`, `--from TIME`,
//! `--to TIME` of `hpm report`, `hpm flamegraph` and `hpm convert`. One filter, applied to the
//! loaded [`Recording`] before anything is built from it, so every output sees the same samples.
//!
//! TIME is an offset from the recording's start (`2.5s`, `1500ms`, `250us`, `2m`; a bare number
//! is seconds) or an absolute time, `2024-05-01T12:00:02.5Z` (ISO 8601 with `Z` or an offset
//! such as `+02:00`), placed on the recording's clock through its wall-clock start. The range is
//! half open: a sample at `--from` is kept, one at `--to` is not.
//!
//! Everything is linear: the expression is matched once per thread of the recording (not per
//! sample), and the samples are kept or dropped in one pass. The expression is bounded in length
//! and in compiled size; the regex crate matches in linear time.

use regex::{Regex, RegexBuilder};

use crate::duration::{parse_duration, Accept, DurationError};
use crate::model::Recording;
use crate::text::{duration_ns, group};

/// Longest `--thread` expression accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4096;
/// Compiled size bound of the `--thread` expression (the regex crate's `size_limit`).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;
/// Longest TIME accepted, in bytes.
const MAX_TIME_BYTES: usize = 64;
/// Largest time offset accepted: about 31 years in nanoseconds, far from `u64::MAX`.
const MAX_OFFSET_NS: u64 = 1_000_000_000_000_000_000;

/// A point in time as the user gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimePoint {
    /// Nanoseconds from the recording's start.
    Offset(u64),
    /// Nanoseconds since the Unix epoch (UTC).
    Wall(u64),
}

/// Parses TIME: a duration from the recording's start ([`crate::duration`]'s grammar, where a
/// bare number is seconds: `2.5s`, `1500ms`, `250us`, `100ns`, `2m`, `3`), or an ISO 8601
/// time with a zone (`2024-05-01T12:00:02.5Z`, `2024-05-01 14:00:02+02:00`).
pub fn parse_time(s: &str) -> Result<TimePoint, String> {
    let t = s.trim();
    if t.len() > MAX_TIME_BYTES {
        return Err(format!("a time of {} bytes is too long; give seconds from the start such as 2.5s", t.len()));
    }
    let looks_iso = t.len() >= 10 && t.as_bytes()[4] == b'-' && t.as_bytes()[..4].iter().all(u8::is_ascii_digit);
    if looks_iso {
        return parse_iso(t).map(TimePoint::Wall);
    }
    match parse_duration(t, Accept::OFFSET) {
        Ok(ns) if ns <= MAX_OFFSET_NS => Ok(TimePoint::Offset(ns)),
        Err(DurationError::Syntax) => Err(time_help(s)),
        Ok(_) | Err(DurationError::TooLong) => {
            Err(format!("`{s}` is later than any recording runs; give seconds from the start such as 2.5s"))
        }
    }
}

fn time_help(s: &str) -> String {
    format!(
        "`{s}` is not a time; give seconds from the recording's start (2.5s, 1500ms, 250us, 2m) or an ISO 8601 \
         time with a zone (2024-05-01T12:00:02.5Z)"
    )
}

/// `YYYY-MM-DD[T| ]HH:MM[:SS[.fraction]](Z|+HH:MM|-HH:MM|+HHMM)` to nanoseconds since the epoch.
fn parse_iso(s: &str) -> Result<u64, String> {
    let bad = |what: &str| format!("`{s}`: {what}; an absolute time looks like 2024-05-01T12:00:02.5Z");
    let num = |part: &str, what: &str| part.parse::<u32>().map_err(|_| bad(&format!("the {what} is not a number")));
    let b = s.as_bytes();
    if b.len() < 16 || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') || b[13] != b':' {
        return Err(bad("not a date and time"));
    }
    let (year, month, day) = (num(&s[0..4], "year")?, num(&s[5..7], "month")?, num(&s[8..10], "day")?);
    let (hour, minute) = (num(&s[11..13], "hour")?, num(&s[14..16], "minute")?);
    let mut rest = &s[16..];
    let mut second = 0u32;
    let mut frac_ns = 0u64;
    if let Some(r) = rest.strip_prefix(':') {
        let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        second = num(&r[..digits], "second")?;
        rest = &r[digits..];
        if let Some(r) = rest.strip_prefix('.').or_else(|| rest.strip_prefix(',')) {
            let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            if digits == 0 {
                return Err(bad("no digits after the decimal point"));
            }
            // Nanoseconds: the first nine digits, the rest dropped.
            let nine: String = r[..digits].chars().chain(std::iter::repeat('0')).take(9).collect();
            frac_ns = nine.parse().map_err(|_| bad("the fraction of a second is not a number"))?;
            rest = &r[digits..];
        }
    }
    let offset_s: i64 = match rest {
        "Z" | "z" => 0,
        "" => return Err(bad("it has no zone: add Z (UTC) or an offset such as +02:00")),
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return Err(bad("the zone must be Z or an offset such as +02:00")),
            };
            let z = rest[1..].replace(':', "");
            if z.len() != 4 || !z.bytes().all(|c| c.is_ascii_digit()) {
                return Err(bad("the zone must be Z or an offset such as +02:00"));
            }
            let (h, m) = (num(&z[0..2], "zone hour")?, num(&z[2..4], "zone minute")?);
            if h > 23 || m > 59 {
                return Err(bad("the zone offset is out of range"));
            }
            sign * (h as i64 * 3600 + m as i64 * 60)
        }
    };
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(bad("no such date"));
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err(bad("no such time of day"));
    }
    let days = days_from_civil(year as i64, month, day);
    let secs = days * 86_400 + hour as i64 * 3600 + minute as i64 * 60 + second as i64 - offset_s;
    if secs < 0 {
        return Err(bad("it is before 1970"));
    }
    Ok(secs as u64 * 1_000_000_000 + frac_ns)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The samples to keep: threads whose name matches an expression, and a time range.
#[derive(Clone, Debug, Default)]
pub struct SampleFilter {
    pub thread: Option<Regex>,
    pub from: Option<TimePoint>,
    pub to: Option<TimePoint>,
    /// `--no-idle`: leave out the parks of idle pool threads waiting for work
    /// ([`crate::output::idle`]); applied by the loader, before `--event` makes samples of them.
    pub no_idle: bool,
    /// `--lock-class REGEX`: only the lock waits (monitor enters, parks) whose monitor's or
    /// blocker's class matches; applied by the loader with `no_idle` ([`SampleFilter::keep_lock_classes`]).
    pub lock_class: Option<Regex>,
    /// `--service`, `--host`: which of a fleet's profiles are read (OTLP input only; applied by
    /// the reader, [`crate::otlp::read`]).
    pub fleet: Selection,
    /// `--vthreads`: how virtual threads' samples are shown (applied by the loader, before
    /// `--thread` matches the rows so made: [`crate::vthreads::regroup`]).
    pub vthreads: crate::vthreads::Grouping,
}

/// What a filter did, for the header line of a report and the notes of other commands.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub samples_before: u64,
    pub samples_kept: u64,
    /// The `--thread` expression, threads matched and threads in the recording.
    pub threads: Option<(String, usize, usize)>,
    /// The range as offsets from the recording's start, in nanoseconds.
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    /// `--from-phase`: the phase marker the samples were kept from (`NAME` or `NAME=INDEX`).
    pub phase: Option<String>,
}

impl Applied {
    /// `threads matching `worker` (2 of 5), from 2.5 s to 4 s; 1,234 of 5,000 samples kept`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(spec) = &self.phase {
            parts.push(format!("from phase `{spec}` on"));
        }
        if let Some((re, matched, of)) = &self.threads {
            parts.push(format!("threads matching `{re}` ({matched} of {of})"));
        }
        match (self.from_ns, self.to_ns) {
            (Some(f), Some(t)) => parts.push(format!("from {} to {}", duration_ns(f), duration_ns(t))),
            (Some(f), None) => parts.push(format!("from {} on", duration_ns(f))),
            (None, Some(t)) => parts.push(format!("up to {}", duration_ns(t))),
            (None, None) => {}
        }
        format!("{}; {} of {} samples kept", parts.join(", "), group(self.samples_kept), group(self.samples_before))
    }
}

impl SampleFilter {
    /// The filter of the command-line flags; errors name the flag and say what is wanted.
    pub fn new(thread: Option<&str>, from: Option<&str>, to: Option<&str>) -> Result<SampleFilter, String> {
        let thread = thread.map(compile_thread_pattern).transpose()?;
        let from = from.map(|s| parse_time(s).map_err(|e| format!("--from {e}"))).transpose()?;
        let to = to.map(|s| parse_time(s).map_err(|e| format!("--to {e}"))).transpose()?;
        if let (Some(TimePoint::Offset(f)), Some(TimePoint::Offset(t))) = (from, to) {
            if f >= t {
                return Err(format!("--from {} is not before --to {}; give a range", duration_ns(f), duration_ns(t)));
            }
        }
        if let (Some(TimePoint::Wall(f)), Some(TimePoint::Wall(t))) = (from, to) {
            if f >= t {
                return Err("--from is not before --to; give a range".into());
            }
        }
        Ok(SampleFilter { thread, from, to, ..Default::default() })
    }

    /// Adds `--lock-class REGEX` (bounded as `--thread` is).
    pub fn with_lock_class(mut self, re: Option<&str>) -> Result<SampleFilter, String> {
        self.lock_class = re.map(|p| compile_thread_pattern_for("--lock-class", p)).transpose()?;
        Ok(self)
    }

    /// `--lock-class`: drops the lock waits whose class (`[no blocker]` for a park without one)
    /// does not match; allocations stay. Each class name is matched once, not once per event.
    /// Returns how many were dropped (None without the flag).
    pub fn keep_lock_classes(&self, rec: &mut Recording) -> Option<usize> {
        let re = self.lock_class.as_ref()?;
        let mut seen: std::collections::HashMap<usize, bool> = std::collections::HashMap::new();
        let before = rec.events.len();
        rec.events.retain(|e| {
            if e.kind == crate::model::JvmEventKind::Allocation {
                return true;
            }
            let id = e.class.as_ref().map_or(0, |c| std::sync::Arc::as_ptr(c) as *const u8 as usize);
            *seen.entry(id).or_insert_with(|| re.is_match(e.class.as_deref().unwrap_or("[no blocker]")))
        });
        Some(before - rec.events.len())
    }

    /// True when the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        self.thread.is_none() && self.from.is_none() && self.to.is_none()
    }

    /// Keeps the samples (and the JVM events) the filter selects. `Ok(None)` for an empty filter. An error, one line
    /// saying why, when nothing is left of a recording that had samples (a bad expression or a
    /// range outside the recording is a mistake to point out, not an empty report).
    pub fn apply(&self, rec: &mut Recording) -> Result<Option<Applied>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        let before = rec.samples.len() as u64;
        let from = self.from.map(|p| self.ticks(rec, p, "--from")).transpose()?;
        let to = self.to.map(|p| self.ticks(rec, p, "--to")).transpose()?;
        if let (Some(f), Some(t)) = (from, to) {
            if f >= t {
                return Err("--from is not before --to on this recording's clock; give a range".into());
            }
        }
        let keep_thread: Option<Vec<bool>> =
            self.thread.as_ref().map(|re| rec.threads.iter().map(|t| re.is_match(&t.shown_name())).collect());
        let thread_ok = |t: u32| keep_thread.as_ref().is_none_or(|k| k.get(t as usize).copied().unwrap_or(false));
        let time_ok = |t: u64| from.is_none_or(|f| t >= f) && to.is_none_or(|e| t < e);
        let threads = self.thread.as_ref().map(|re| {
            let matched = keep_thread.as_ref().map_or(0, |k| k.iter().filter(|&&m| m).count());
            (re.as_str().to_string(), matched, rec.threads.len())
        });
        if before > 0 && !rec.samples.iter().any(|s| thread_ok(s.thread.0) && time_ok(s.time)) {
            return Err(self.nothing_left(rec, &thread_ok, &time_ok, from, to));
        }
        rec.samples.retain(|s| thread_ok(s.thread.0) && time_ok(s.time));
        rec.events.retain(|e| thread_ok(e.thread.0) && time_ok(e.time));
        let offset = |t: u64| t.saturating_sub(rec.start_ticks);
        Ok(Some(Applied {
            samples_before: before,
            samples_kept: rec.samples.len() as u64,
            threads,
            from_ns: from.map(offset),
            to_ns: to.map(offset),
            phase: None,
        }))
    }

    /// A time point on the recording's clock (ticks: nanoseconds of CLOCK_MONOTONIC).
    fn ticks(&self, rec: &Recording, p: TimePoint, flag: &str) -> Result<u64, String> {
        match p {
            TimePoint::Offset(ns) => Ok(rec.start_ticks.saturating_add(ns)),
            TimePoint::Wall(_) if rec.start_wall_ns == 0 => Err(format!(
                "{flag}: this recording has no wall-clock start time; give seconds from its start such as 2.5s"
            )),
            TimePoint::Wall(w) if w >= rec.start_wall_ns => Ok(rec.start_ticks.saturating_add(w - rec.start_wall_ns)),
            TimePoint::Wall(w) => Ok(rec.start_ticks.saturating_sub(rec.start_wall_ns - w)),
        }
    }

    /// Why no sample is left: the expression matched no thread, the range holds no sample, or
    /// the matched threads have none in the range.
    fn nothing_left(
        &self,
        rec: &Recording,
        thread_ok: &dyn Fn(u32) -> bool,
        time_ok: &dyn Fn(u64) -> bool,
        from: Option<u64>,
        to: Option<u64>,
    ) -> String {
        let span = |times: &mut dyn Iterator<Item = u64>| {
            let (mut lo, mut hi) = (u64::MAX, 0);
            for t in times {
                lo = lo.min(t);
                hi = hi.max(t);
            }
            let off = |t: u64| duration_ns(t.saturating_sub(rec.start_ticks));
            format!("{} and {}", off(lo), off(hi))
        };
        let range = {
            let off = |t: u64| duration_ns(t.saturating_sub(rec.start_ticks));
            match (from, to) {
                (Some(f), Some(t)) => format!("between {} and {}", off(f), off(t)),
                (Some(f), None) => format!("from {} on", off(f)),
                (None, Some(t)) => format!("before {}", off(t)),
                (None, None) => String::new(),
            }
        };
        if let Some(re) = &self.thread {
            if !rec.samples.iter().any(|s| thread_ok(s.thread.0)) {
                let mut names: Vec<std::borrow::Cow<str>> = rec.threads.iter().map(|t| t.shown_name()).collect();
                names.sort_unstable();
                names.dedup();
                let shown: Vec<String> =
                    names.iter().take(8).map(|n| format!("`{}`", crate::text::clip(n, 40))).collect();
                let more = if names.len() > 8 { format!(" and {} more", names.len() - 8) } else { String::new() };
                return format!(
                    "--thread `{}` matches no thread with samples; the recording's threads: {}{more}",
                    re.as_str(),
                    if shown.is_empty() { "none".to_string() } else { shown.join(", ") }
                );
            }
            if rec.samples.iter().any(|s| time_ok(s.time)) {
                return format!(
                    "the threads matching `{}` have no samples {range}; theirs lie between {}",
                    re.as_str(),
                    span(&mut rec.samples.iter().filter(|s| thread_ok(s.thread.0)).map(|s| s.time))
                );
            }
        }
        format!(
            "no samples {range} from the recording's start; its samples lie between {}: choose a range inside it",
            span(&mut rec.samples.iter().map(|s| s.time))
        )
    }
}

/// Compiles `--thread`'s expression, bounded in length and compiled size; errors in one line.
fn compile_thread_pattern(p: &str) -> Result<Regex, String> {
    compile_thread_pattern_for("--thread", p)
}

/// A thread-name expression given as `flag` (`--thread` of the CLI, `thread=` of the agent),
/// bounded in length and compiled size; errors name the flag and say what is wanted.
pub fn compile_thread_pattern_for(flag: &str, p: &str) -> Result<Regex, String> {
    if p.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "{flag}: an expression of {} bytes is longer than hpm takes ({MAX_PATTERN_BYTES}); use a shorter one",
            p.len()
        ));
    }
    RegexBuilder::new(p).size_limit(PATTERN_SIZE_LIMIT).build().map_err(|e| match e {
        regex::Error::CompiledTooBig(n) => {
            format!("{flag} `{p}`: the expression compiles to more than {n} bytes; use a simpler one")
        }
        e => {
            // The regex crate's syntax errors are several lines (the expression, a caret, the
            // problem); the problem is the line starting with `error:`.
            let text = e.to_string();
            let why = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("error: "))
                .map(str::to_string)
                .unwrap_or_else(|| text.lines().map(str::trim).collect::<Vec<_>>().join(" "));
            format!("{flag} `{p}` is not a regular expression ({why}); names match as in `worker-[0-9]+` or `^main$`")
        }
    })
}

/// Which profiles are read: those of a service and a host (`--service`, `--host`); `None`
/// takes any (several services are then an error that lists them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub service: Option<String>,
    pub host: Option<String>,
}

impl Selection {
    pub fn is_empty(&self) -> bool {
        self.service.is_none() && self.host.is_none()
    }
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
