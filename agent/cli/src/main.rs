//! `hpm`: the user-facing commands. One argument parser (clap) for all of them: each command's
//! arguments are a struct in its own `cmd_*.rs`, whose `main` returns `Err(message)` for
//! anything the user must fix; `main` prints it and exits with status 2 (clap's own usage
//! errors exit 2 as well).

use clap::{Parser, Subcommand};

mod attach;
mod cmd_attach;
mod cmd_callerchain;
mod cmd_ccmap;
mod cmd_compare;
mod cmd_convert;
mod cmd_diff;
mod cmd_flamegraph;
mod cmd_phases;
mod cmd_report;
mod cmd_run;
mod input;
mod sys;
mod values;

/// hpm — hardware-performance-monitor profiler for the JVM.
#[derive(Parser)]
#[command(name = "hpm", version, after_help = "Agent options: `hpm run help` or `java -agentpath:libhpm.so=help`.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a java command with libhpm.so attached (`hpm run [AGENT_OPTIONS] -- java ...`)
    Run(cmd_run::Args),
    /// Profile a running JVM: load libhpm.so into it and run a command there
    Attach(cmd_attach::Args),
    /// Top methods, counter ratios, VM components and the call tree of a profile
    Report(cmd_report::Args),
    /// A flame graph (.html, .svg) or collapsed stacks of a profile
    Flamegraph(cmd_flamegraph::Args),
    /// A recording as pprof (go tool pprof) or JSON (docs/json.md)
    Convert(cmd_convert::Args),
    /// How similar two profiles are: overlap, hot-edge coverage, correlation
    Compare(cmd_compare::Args),
    /// What changed between two profiles: the methods and calling contexts whose share grew or
    /// shrank most, and a differential flame graph (-o diff.html)
    Diff(cmd_diff::Args),
    /// Call Context Map queries (Chilingarova & Safonov)
    Ccmap(cmd_ccmap::Args),
    /// CallerChaining: the calling context tree from stack depths (Inoue & Nakatani)
    Callerchain(cmd_callerchain::Args),
    /// Method-level phases, overhead estimate, CoV and ANOVA (Georges et al.)
    Phases(cmd_phases::Args),
}

/// The commands that print a report: cut short by a closed pipe (`hpm report … | head`), they
/// end quietly as Unix tools do (SIGPIPE's default action) instead of panicking on the write.
/// `run` and `attach` keep Rust's default (ignored, a write error) for their child and socket.
fn end_quietly_on_broken_pipe() {
    // SAFETY: restoring a signal's default disposition at start-up, before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

fn main() {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run(_) | Command::Attach(_)) {
        end_quietly_on_broken_pipe();
    }
    let result = match cli.command {
        Command::Run(a) => cmd_run::main(a),
        Command::Attach(a) => cmd_attach::main(a),
        Command::Report(a) => cmd_report::main(a),
        Command::Flamegraph(a) => cmd_flamegraph::main(a),
        Command::Convert(a) => cmd_convert::main(a),
        Command::Compare(a) => cmd_compare::main(a),
        Command::Diff(a) => cmd_diff::main(a),
        Command::Ccmap(a) => cmd_ccmap::main(a),
        Command::Callerchain(a) => cmd_callerchain::main(a),
        Command::Phases(a) => cmd_phases::main(a),
    };
    if let Err(msg) = result {
        // Messages quote names from files and peers: their control characters are shown, not obeyed.
        eprintln!("hpm: {}", hpm_profile::text::terminal_safe(&msg));
        std::process::exit(2);
    }
}
