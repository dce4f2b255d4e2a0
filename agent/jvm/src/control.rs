//! Run-time control of profiling: the commands shared by `hpm attach PID ...` (through
//! Agent_OnAttach) and the Java bridge (`execute(command)` and friends), and the sessions they
//! start and stop, serialised by one lock.
//!
//! Contract (stable, other modules code against it): `execute(sessions, parts, command)` takes
//! one command text and returns the text to show the user, or an error line that says what to
//! do. Nothing is created or written before every check of the command passed.
//!
//! Grammar (async-profiler's, comma-separated like the agent options):
//! - `start[,OPTIONS]` — begin a profiling session with agent OPTIONS (`interval=1ms,file=x.jfr`,
//!   the same as -agentpath takes). Bare OPTIONS (no command word) and an empty command mean
//!   `start` too. An error if a session is running.
//! - `stop[,file=PATH...]` — end sampling, write the session's outputs (its `file=`s, default
//!   `hpm-%p.jfr`) and any `file=` given here, print the summary on the JVM's stderr.
//! - `dump,file=PATH[,file=PATH...]` — write the profile so far without stopping (after `stop`:
//!   the last session's profile); the format comes from the extension as for `file=`.
//! - `status` — `state`, `sampler`, `event`, `interval`, `samples`, `duration`, `files`, and with
//!   `push=` the last push result (`push`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::options::{self, OutputFile};
use hpm_profile::model::PeriodUnit;

use crate::os::{now_ticks, now_wall_ns};
use crate::processor::{Finished, Output};
use crate::session::{self, Parts, Plan, Session};

pub const COMMANDS: &str = "start[,OPTIONS], stop[,file=PATH], dump,file=PATH, status";

/// The sessions of one JVM: at most one running.
#[derive(Default)]
pub struct Sessions {
    control: Mutex<Control>,
    /// The VM is dying: no session may start.
    dead: AtomicBool,
    /// A session is recording (the bridge's marks are kept only then).
    recording: AtomicBool,
}

#[derive(Default)]
struct Control {
    running: Option<Session>,
    /// `-agentpath`: the session planned at load, started at VMInit.
    pending: Option<Plan>,
    /// The last stopped session's profile, for `dump` after `stop`.
    last: Option<Finished>,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }

    /// `-agentpath`: the session checked at load, to start at VMInit.
    pub fn plan_at_load(&self, plan: Plan) {
        self.lock().pending = Some(plan);
    }

    /// VMInit: starts the session planned at load.
    pub fn start_pending(&self, parts: Parts) {
        let mut c = self.lock();
        if let Some(plan) = c.pending.take() {
            match Session::start(parts, plan) {
                Ok(s) => {
                    c.running = Some(s);
                    self.recording.store(true, Ordering::Release);
                }
                Err(e) => eprintln!("hpm: {e}; no profile will be written"),
            }
        }
    }

    /// VMDeath: stops the running session (its outputs and summary are written); no session
    /// may start afterwards.
    pub fn shutdown(&self) {
        self.dead.store(true, Ordering::Release);
        let mut c = self.lock();
        self.recording.store(false, Ordering::Release);
        if let Some(s) = c.running.take() {
            if let Err(e) = s.stop(Vec::new()) {
                eprintln!("hpm: {e}");
            }
        }
        c.last = None;
    }
}

/// Runs one control command.
pub fn execute(sessions: &Sessions, parts: Parts, command: &str) -> Result<String, String> {
    let command = command.trim();
    let (verb, rest) = match command.split_once(',') {
        Some((v, r)) => (v.trim(), r),
        None => (command, ""),
    };
    match verb {
        "start" => start(sessions, parts, rest),
        "stop" => stop(sessions, rest),
        "dump" => dump(sessions, rest),
        "status" if rest.trim().is_empty() => Ok(status(sessions, parts)),
        "status" => Err("status takes no arguments".into()),
        _ => start(sessions, parts, command).map_err(|e| {
            if verb.contains('=') || verb.is_empty() {
                e
            } else {
                format!("`{verb}` is not a command ({COMMANDS}) and not an agent option: {e}")
            }
        }),
    }
}

fn start(sessions: &Sessions, parts: Parts, option_string: &str) -> Result<String, String> {
    if sessions.dead.load(Ordering::Acquire) {
        return Err("the JVM is shutting down; no profiling session can start".into());
    }
    if options::parse(option_string).map_err(|e| e.to_string())?.help {
        return Ok(options::help_text());
    }
    let mut control = sessions.lock();
    if let Some(s) = &control.running {
        return Err(format!("a profiling session is already running ({}); `stop` it first", describe(s)));
    }
    let plan = session::plan(&parts.jvmti, option_string)?;
    let s = Session::start(parts, plan)?;
    let line = format!("profiling started: {}; at stop writes {}", describe(&s), s.files.join(", "));
    control.running = Some(s);
    control.last = None;
    sessions.recording.store(true, Ordering::Release);
    Ok(line)
}

fn stop(sessions: &Sessions, rest: &str) -> Result<String, String> {
    let mut control = sessions.lock();
    // The session is checked first: nothing is created for a stop that cannot happen.
    if control.running.is_none() {
        return Err("no profiling session is running; `start` one first".into());
    }
    let extra = check_files(rest, "stop", control.running.as_ref())?;
    let s = control.running.take().expect("checked above");
    sessions.recording.store(false, Ordering::Release);
    let seconds = elapsed_secs(&s);
    let (written, finished) = s.stop(extra)?;
    let samples = finished.samples();
    control.last = Some(finished);
    Ok(format!("profiling stopped after {seconds:.1}s: {samples} samples; {}", written.line()))
}

fn dump(sessions: &Sessions, rest: &str) -> Result<String, String> {
    let mut control = sessions.lock();
    if control.running.is_none() && control.last.is_none() {
        return Err("no profile to dump: no session is running or has run; `start` one first".into());
    }
    let targets = check_files(rest, "dump", control.running.as_ref())?;
    if targets.is_empty() {
        return Err("dump needs file=PATH (format from the extension: .jfr, .collapsed, .html, .svg, ...)".into());
    }
    let mut lines = Vec::new();
    for o in targets {
        let line = match &mut *control {
            Control { running: Some(s), .. } => s.dump(&o.path, o.format, o.target)?,
            Control { last: Some(last), .. } => last.dump(&o.path, o.format, o.target)?,
            _ => return Err("no profile to dump".into()),
        };
        lines.push(line);
    }
    Ok(lines.join("\n"))
}

fn status(sessions: &Sessions, parts: Parts) -> String {
    let control = sessions.lock();
    let (live, java, excluded, slots) = parts.threads.sizes();
    let (heap, peak) = crate::heap::live_and_peak();
    let agent = format!(
        "agent: {live} threads in the session, {java} Java threads known, {excluded} own threads, {slots} perf slots in use\n\
         agent heap: {} KB (peak {} KB)\n",
        heap / 1024,
        peak / 1024
    );
    let Some(s) = &control.running else {
        let Some(last) = &control.last else {
            return format!("state: idle\n{agent}");
        };
        // Until the next session starts, the last one's JFR for `dump` stays where it was.
        let kept = kept_line(last.jfr_kept());
        return format!("state: idle (the last session's profile can still be dumped)\n{kept}{agent}");
    };
    let (allocated, capacity) = s.buffers();
    let mut kept = kept_line(s.jfr_kept());
    if let Some(push) = s.push_line() {
        kept = format!("push: {push}\n{kept}");
    }
    format!(
        "state: running\nsampler: {}\nevent: {}\ninterval: {}\nsamples: {}\nduration: {:.1}s\nfiles: {}\n\
         sample buffers: {allocated} of {capacity} allocated\n{kept}{agent}",
        s.opts.sampler.name(),
        s.event.name,
        interval_text(s),
        s.resolved(),
        elapsed_secs(s),
        s.files.join(", ")
    )
}

/// `status`'s line on the JFR a session without a JFR file keeps for `dump`, if it keeps any.
fn kept_line(kept: Option<hpm_profile::jfr::memory::KeptNow>) -> String {
    kept.map(|k| k.line(crate::processor::JFR_MEMORY_LIMIT) + "\n").unwrap_or_default()
}

/// What the session samples: its event, allocations, lock waits.
fn describe(s: &Session) -> String {
    hpm_profile::output::report::sampling_line(&s.event, s.opts.alloc, s.opts.lock)
}

fn elapsed_secs(s: &Session) -> f64 {
    now_ticks().saturating_sub(s.start_ticks) as f64 / 1e9
}

fn interval_text(s: &Session) -> String {
    let p = s.event.period;
    match s.event.unit {
        PeriodUnit::Nanoseconds if p.is_multiple_of(1_000_000) => format!("{}ms", p / 1_000_000),
        PeriodUnit::Nanoseconds if p.is_multiple_of(1_000) => format!("{}us", p / 1_000),
        PeriodUnit::Nanoseconds => format!("{p}ns"),
        _ => format!("{p} events"),
    }
}

/// `file=PATH` items (`%p`/`%t` expanded), every one checked before any is written, and against
/// the running session's own outputs.
fn check_files(rest: &str, verb: &str, running: Option<&Session>) -> Result<Vec<Output>, String> {
    let mut files = Vec::new();
    for item in rest.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some(path) = item.strip_prefix("file=").filter(|p| !p.is_empty()) else {
            return Err(format!("{verb} takes only file=PATH (repeatable), not `{item}`"));
        };
        let format = options::output_format(path).map_err(|e| e.to_string())?;
        let f = OutputFile { pattern: path.to_string(), format };
        files.push((f.path(std::process::id(), now_wall_ns() / 1_000_000_000), format));
    }
    session::check_outputs(files, running.map_or(&[], |s| &s.file_ids))
}
