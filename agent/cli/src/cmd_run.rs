//! `hpm run [AGENT_OPTIONS] -- JAVA_COMMAND...`: runs the command with `-agentpath:libhpm.so`
//! added after the java executable, and exits with its status.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn main(args: &[String]) -> Result<(), String> {
    let split = args.iter().position(|a| a == "--");
    let (opts, cmd) = match split {
        Some(i) => (&args[..i], &args[i + 1..]),
        None if args.first().is_some_and(|a| a == "help" || a == "--help") => {
            let agent = find_agent()?;
            let status = Command::new("java").arg(format!("-agentpath:{}=help", agent.display())).arg("-version").status();
            return status.map(|_| ()).map_err(|e| format!("cannot run java: {e}"));
        }
        None => return Err("usage: hpm run [AGENT_OPTIONS] -- java [JAVA_ARGS...]  (e.g. hpm run interval=1ms,file=profile.jfr -- java -jar app.jar)".into()),
    };
    let Some((java, rest)) = cmd.split_first() else {
        return Err("nothing to run after `--`; give a java command, e.g. `hpm run -- java -jar app.jar`".into());
    };
    let agent = find_agent()?;
    let options = opts.join(",");
    let agentpath = if options.is_empty() {
        format!("-agentpath:{}", agent.display())
    } else {
        format!("-agentpath:{}={options}", agent.display())
    };
    let status =
        Command::new(java).arg(agentpath).args(rest).status().map_err(|e| format!("cannot run `{java}`: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => std::process::exit(code),
        None => Err(format!("`{java}` was killed by a signal ({status})")),
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
