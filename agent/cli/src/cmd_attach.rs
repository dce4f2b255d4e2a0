//! `hpm attach PID [COMMAND]... [--lib PATH]`: loads libhpm.so into a running HotSpot JVM through
//! its attach mechanism (attach.rs) and runs a control command there; prints the agent's answer.

use std::time::{SystemTime, UNIX_EPOCH};

use hpm_profile::text::terminal_safe;

use crate::attach::{self, Target};

#[derive(clap::Args)]
#[command(after_help = "\
COMMAND (comma-separated, or separate words joined with commas):
  (none)                  start profiling with the default options (cpu-clock every 10ms,
                          written to hpm-PID.jfr in the JVM's working directory at stop)
  start[,OPTIONS]         start profiling with agent OPTIONS, e.g. start,interval=1ms,file=/tmp/p.jfr
  OPTIONS                 the same as start,OPTIONS (e.g. interval=1ms,file=/tmp/p.jfr)
  dump,file=PATH          write the profile so far (format from the extension: .jfr, .collapsed,
                          .html, .svg, ...); profiling continues. After stop: the last profile.
  stop[,file=PATH]        stop profiling and write the session's files (and PATH)
  status                  state, sampler, event, interval, samples, duration, files

Paths are the JVM's (its working directory and file system). The agent options are those of
-agentpath (`hpm run help` lists them). Attaching again runs the next command against the same
agent. Samples before the attach are not seen; code compiled before it is replayed by the JVM.
Root attaching to another user's JVM becomes that user first.")]
pub struct Args {
    /// The JVM's process id
    pid: u32,
    /// The command to run in it (see below); none means start
    #[arg(value_name = "COMMAND")]
    words: Vec<String>,
    /// libhpm.so to load (default: $HPM_AGENT, else beside the hpm binary)
    #[arg(long, value_name = "PATH")]
    lib: Option<std::path::PathBuf>,
}

pub fn main(a: Args) -> Result<(), String> {
    let (pid, lib, words) = (a.pid, a.lib, a.words);
    let command = words.join(",");
    if command.contains("reply=") {
        return Err("`reply=` is reserved for hpm attach itself".into());
    }
    let lib = match lib {
        Some(p) => p,
        None => crate::cmd_run::find_agent()?,
    };
    let lib = lib.canonicalize().map_err(|e| format!("--lib {}: {e}", lib.display()))?;
    let target = Target::find(pid)?;

    // The agent writes its answer to a new file in the JVM's /tmp; we read it there (attach.rs).
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let name = format!("hpm-reply-{}-{nanos}", std::process::id());
    let options =
        if command.is_empty() { format!("reply=/tmp/{name}") } else { format!("{command},reply=/tmp/{name}") };
    let lib_text = lib.to_string_lossy();
    let result = target.request("load", &[&lib_text, "true", &options]);
    let reply = target.take_reply(&name);
    let (code, output) = result?;
    let reply = reply?;
    if code != 0 {
        return Err(format!("the JVM {pid} could not load {lib_text}: {}", output.trim()));
    }
    let rc = attach::agent_return_code(&output);
    match (rc, reply) {
        (Some(0), Some(text)) => {
            // The answer is the peer's text (a JVM, or whatever serves its socket): its
            // control characters are shown, never obeyed by the terminal.
            print!("{}", terminal_safe(&text));
            Ok(())
        }
        (Some(0), None) => {
            println!("done (the agent's answer went to the JVM's stderr)");
            Ok(())
        }
        (_, Some(text)) => Err(text.trim().strip_prefix("error: ").unwrap_or(text.trim()).to_string()),
        (rc, None) => Err(format!(
            "the agent in JVM {pid} failed (return code {}); its message is on the JVM's stderr",
            rc.map(|r| r.to_string()).unwrap_or_else(|| output.trim().to_string())
        )),
    }
}
