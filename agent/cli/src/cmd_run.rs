//! `hpm run [AGENT_OPTIONS] -- JAVA_COMMAND...`: runs the java command with
//! `-agentpath:libhpm.so` added after the java executable, and exits with its status.

use std::path::{Path, PathBuf};
use std::process::Command;

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
