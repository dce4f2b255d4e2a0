//! `hpm run [AGENT_OPTIONS] -- JAVA_COMMAND...`: runs the java command with
//! `-agentpath:libhpm.so` added after the java executable, and exits with its status.
//!
//! While the JVM runs, hpm passes SIGINT, SIGTERM, SIGHUP and SIGQUIT on to it and waits, as
//! `time`, `strace` and `perf record --` do: `kill`, `timeout`, systemd or `docker stop`
//! aimed at hpm stop the JVM, which writes its profile as it exits, and hpm returns only after
//! that, with the JVM's exit status (128+N if signal N ended it, as a shell reports it). If hpm
//! is killed outright (SIGKILL), the kernel sends the JVM SIGTERM: it is not left orphaned.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use crate::sys::{self, HeldSignals, Taken};

/// What hpm passes on to the JVM instead of acting on itself.
const PASSED_ON: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  hpm run interval=1ms,file=profile.jfr -- java -jar app.jar
  hpm run help                      the agent options

The command after `--` must be a java launcher: a file named `java` (on the PATH or by path),
since hpm adds -agentpath right after it. For a script that starts java, put the agent in the
environment instead: JAVA_TOOL_OPTIONS=-agentpath:/path/to/libhpm.so=OPTIONS ./script.sh")]
pub struct Args {
    /// Agent options, comma-separated or as separate words (`hpm run help` lists them)
    #[arg(value_name = "AGENT_OPTIONS")]
    options: Vec<String>,
    /// The java command to run, after `--`
    #[arg(last = true, value_name = "JAVA_COMMAND")]
    command: Vec<String>,
}

/// Whether `program` is a java launcher: its file name is `java`, or it resolves (links
/// followed) to a file named `java`. Anything else would get `-agentpath` as its first argument.
fn is_java_launcher(program: &str) -> bool {
    let named_java = |p: &Path| p.file_name().is_some_and(|n| n == "java");
    named_java(Path::new(program)) || std::fs::canonicalize(program).is_ok_and(|p| named_java(&p))
}

pub fn main(a: Args) -> Result<(), String> {
    if a.command.is_empty() {
        if a.options == ["help"] {
            let agent = find_agent()?;
            let status =
                Command::new("java").arg(format!("-agentpath:{}=help", agent.display())).arg("-version").status();
            return status.map(|_| ()).map_err(|e| format!("cannot run java: {e}"));
        }
        return Err("nothing to run: give a java command after `--`, e.g. `hpm run interval=1ms,file=profile.jfr -- java -jar app.jar`".into());
    }
    let (java, rest) = a.command.split_first().expect("not empty");
    if !is_java_launcher(java) {
        return Err(format!(
            "`{java}` is not a java launcher: hpm run adds -agentpath right after the program, which only `java` \
             understands; run `hpm run -- java ...`, or for a script set JAVA_TOOL_OPTIONS=-agentpath:{}",
            find_agent().map(|p| p.display().to_string()).unwrap_or_else(|_| "/path/to/libhpm.so".into())
        ));
    }
    let agent = find_agent()?;
    let options = a.options.join(",");
    let agentpath = if options.is_empty() {
        format!("-agentpath:{}", agent.display())
    } else {
        format!("-agentpath:{}={options}", agent.display())
    };
    // Held from before the JVM starts: a signal that comes while it starts waits, then is passed on.
    let mut held = PASSED_ON.to_vec();
    held.push(libc::SIGCHLD);
    let signals = HeldSignals::hold(&held).map_err(|e| format!("cannot hold signals for `{java}`: {e}"))?;
    let mut command = Command::new(java);
    command.arg(agentpath).args(rest);
    // SIGKILL to hpm cannot be passed on: the kernel sends the JVM SIGTERM then, so it exits
    // writing its profile instead of serving on, orphaned.
    let hpm = sys::pid();
    // SAFETY: the closure runs between fork and exec and makes async-signal-safe calls only.
    unsafe { command.pre_exec(move || sys::end_with_parent(hpm, libc::SIGTERM)) };
    let mut child = command.spawn().map_err(|e| format!("cannot run `{java}`: {e}"))?;
    let status = loop {
        // Reaped only here: until then its PID cannot name another process.
        if let Some(status) = child.try_wait().map_err(|e| format!("cannot wait for `{java}`: {e}"))? {
            break status;
        }
        let taken = signals.next().map_err(|e| format!("cannot wait for `{java}`: {e}"))?;
        if taken.signal == libc::SIGCHLD {
            continue;
        }
        let passed = should_pass_on(taken);
        if passed {
            // A failure means the JVM is already exiting, which is what was asked.
            let _ = sys::kill(child.id(), taken.signal);
        }
        // SIGQUIT makes the JVM print its threads and carry on: nothing to wait for.
        if taken.signal != libc::SIGQUIT {
            let name = sys::signal_name(taken.signal);
            let how = if passed { "passed on to" } else { "also reached" };
            eprintln!("hpm: {name} {how} {java} (pid {}); waiting for it to exit and write its profile", child.id());
        }
    };
    match exit_code(status) {
        0 => Ok(()),
        code => std::process::exit(code),
    }
}

/// Whether a signal hpm took goes on to the JVM: not one the kernel sent a terminal's whole
/// foreground process group (Ctrl-C), which the JVM got too; once more would be a second.
fn should_pass_on(t: Taken) -> bool {
    PASSED_ON.contains(&t.signal) && !t.from_kernel
}

/// The status hpm exits with: the JVM's exit code, or 128+N when signal N ended it (as a shell
/// reports it: 143 for SIGTERM, 137 for SIGKILL).
fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// `$HPM_AGENT`, else `libhpm.so` beside this executable (the cargo target directory, or an
/// installation's `bin/` with `lib/` beside it).
pub fn find_agent() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("HPM_AGENT") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("HPM_AGENT={} is not a file", p.display())) };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the hpm executable: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for candidate in [dir.join("libhpm.so"), dir.join("../lib/libhpm.so")] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(format!(
        "libhpm.so not found beside {}; build it with `cargo build --release` or set HPM_AGENT=/path/to/libhpm.so",
        exe.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_a_shells() {
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_code(ExitStatus::from_raw(143 << 8)), 143);
        // Died of SIGKILL / SIGTERM (wait status: the signal in the low bits).
        assert_eq!(exit_code(ExitStatus::from_raw(libc::SIGKILL)), 137);
        assert_eq!(exit_code(ExitStatus::from_raw(libc::SIGTERM)), 143);
    }

    #[test]
    fn terminal_signals_are_not_passed_twice() {
        let t = |signal, from_kernel| should_pass_on(Taken { signal, from_kernel });
        assert!(t(libc::SIGTERM, false));
        assert!(t(libc::SIGINT, false));
        assert!(!t(libc::SIGINT, true), "Ctrl-C reached the JVM already");
        assert!(!t(libc::SIGCHLD, false));
    }
}
