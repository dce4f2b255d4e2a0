//! Run-time control of profiling: the commands shared by `hpm attach PID ...` (through
//! Agent_OnAttach) and the Java bridge (`execute(command)` and friends).
//!
//! Contract (stable, other modules code against it): `execute(command)` takes one command
//! text and returns the text to show the user, or an error line that says what to do. It never
//! panics across its callers' `extern "C"` boundaries (callers still catch unwinding).
//!
//! Grammar (async-profiler's, comma-separated like the agent options):
//! - `start[,OPTIONS]` — begin a profiling session with agent OPTIONS (`interval=1ms,file=x.jfr`,
//!   the same as -agentpath takes). Bare OPTIONS (no command word) and an empty command mean
//!   `start` too. An error if a session is running.
//! - `stop[,file=PATH...]` — end sampling, write the session's outputs (its `file=`s, default
//!   `hpm-%p.jfr`) and any `file=` given here, print the summary on the JVM's stderr.
//! - `dump,file=PATH[,file=PATH...]` — write the profile so far without stopping (after `stop`:
//!   the last session's profile); the format comes from the extension as for `file=`.
//! - `status` — `state`, `sampler`, `event`, `interval`, `samples`, `duration`, `files`.

use std::sync::atomic::Ordering;

use hpm_core::model::PeriodUnit;
use hpm_core::options::{self, OutputFile, OutputFormat};

use crate::agent::{self, now_ticks, now_wall_ns, Agent};
use crate::session::{self, Session};

pub const COMMANDS: &str = "start[,OPTIONS], stop[,file=PATH], dump,file=PATH, status";

/// Runs one control command against the loaded agent.
pub fn execute(command: &str) -> Result<String, String> {
    let agent = agent::get().ok_or_else(|| {
        "the hpm agent is not set up in this JVM; load it with -agentpath, `hpm attach PID` or the Java bridge"
            .to_string()
    })?;
    let command = command.trim();
    let (verb, rest) = match command.split_once(',') {
        Some((v, r)) => (v.trim(), r),
        None => (command, ""),
    };
    match verb {
        "start" => start(agent, rest),
        "stop" => stop(agent, rest),
        "dump" => dump(agent, rest),
        "status" if rest.trim().is_empty() => Ok(status(agent)),
        "status" => Err("status takes no arguments".into()),
        _ => start(agent, command).map_err(|e| {
            if verb.contains('=') || verb.is_empty() {
                e
            } else {
                format!("`{verb}` is not a command ({COMMANDS}) and not an agent option: {e}")
            }
        }),
    }
}

fn start(agent: &'static Agent, option_string: &str) -> Result<String, String> {
    if agent.dead.load(Ordering::Acquire) {
        return Err("the JVM is shutting down; no profiling session can start".into());
    }
    if options::parse(option_string).map_err(|e| e.to_string())?.help {
        return Ok(options::help_text());
    }
    let mut control = agent.lock_control();
    if let Some(s) = control.running {
        return Err(format!("a profiling session is already running ({}); `stop` it first", describe(s)));
    }
    let plan = session::plan(&agent.jvmti, option_string)?;
    let s = plan.into_session(agent);
    session::start(s)?;
    control.running = Some(s);
    control.last = None;
    Ok(format!("profiling started: {}; at stop writes {}", describe(s), files(s)))
}

fn stop(agent: &'static Agent, rest: &str) -> Result<String, String> {
    let extra = parse_files(rest, "stop")?;
    let mut control = agent.lock_control();
    let Some(s) = control.running.take() else {
        return Err("no profiling session is running; `start` one first".into());
    };
    let seconds = elapsed_secs(s);
    let (written, finished) = session::stop(s, &extra)?;
    control.last = Some(finished);
    Ok(format!(
        "profiling stopped after {seconds:.1}s: {} samples; wrote {}",
        s.resolved.load(Ordering::Relaxed),
        if written.is_empty() { "nothing".to_string() } else { written.join(", ") }
    ))
}

fn dump(agent: &'static Agent, rest: &str) -> Result<String, String> {
    let targets = parse_files(rest, "dump")?;
    if targets.is_empty() {
        return Err("dump needs file=PATH (format from the extension: .jfr, .collapsed, .html, .svg, ...)".into());
    }
    let mut control = agent.lock_control();
    let mut lines = Vec::new();
    for (path, format) in &targets {
        let line = if let Some(s) = control.running {
            let guard = session::lock(&s.processor);
            let h = guard.as_ref().ok_or("the session has no processing thread")?;
            h.dump(path, *format)?
        } else if let Some(last) = control.last.as_mut() {
            last.dump(path, *format)?
        } else {
            return Err("no profile to dump: no session is running or has run; `start` one first".into());
        };
        lines.push(line);
    }
    Ok(lines.join("\n"))
}

fn status(agent: &'static Agent) -> String {
    let control = agent.lock_control();
    let Some(s) = control.running else {
        let last = if control.last.is_some() { " (the last session's profile can still be dumped)" } else { "" };
        return format!("state: idle{last}\n");
    };
    format!(
        "state: running\nsampler: {}\nevent: {}\ninterval: {}\nsamples: {}\nduration: {:.1}s\nfiles: {}\n",
        s.opts.sampler.name(),
        s.event.name,
        interval_text(s),
        s.resolved.load(Ordering::Relaxed),
        elapsed_secs(s),
        files(s)
    )
}

fn describe(s: &Session) -> String {
    format!("sampler {}, event {} every {}", s.opts.sampler.name(), s.event.name, interval_text(s))
}

fn files(s: &Session) -> String {
    s.outputs.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ")
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

/// `file=PATH` items (`%p`/`%t` expanded, created now so a bad path is reported at once).
fn parse_files(rest: &str, verb: &str) -> Result<Vec<(String, OutputFormat)>, String> {
    let mut out = Vec::new();
    for item in rest.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some(path) = item.strip_prefix("file=").filter(|p| !p.is_empty()) else {
            return Err(format!("{verb} takes only file=PATH (repeatable), not `{item}`"));
        };
        let format = OutputFormat::from_path(path).map_err(|e| e.to_string())?;
        let f = OutputFile { pattern: path.to_string(), format };
        let path = f.path(std::process::id(), now_wall_ns() / 1_000_000_000);
        session::create_output(&path)?;
        out.push((path, format));
    }
    Ok(out)
}
