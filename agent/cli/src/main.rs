//! `hpm`: the user-facing commands. Each command lives in its own `cmd_*.rs` and returns
//! `Err(message)` for anything the user must fix; `main` prints it and exits with status 2.

mod attach;
mod cmd_attach;
mod cmd_callerchain;
mod cmd_ccmap;
mod cmd_compare;
mod cmd_convert;
mod cmd_flamegraph;
mod cmd_phases;
mod cmd_report;
mod cmd_run;

const USAGE: &str = "\
hpm — hardware-performance-monitor profiler for the JVM

usage:
  hpm run [AGENT_OPTIONS] -- JAVA_COMMAND...   run java with libhpm.so attached
  hpm attach PID [start,OPTIONS|dump,file=F|stop|status]
                                               profile a running JVM (hpm attach --help)
  hpm report FILE.jfr|FILE.collapsed [--top N] [--min-percent P] [--threads]
                                               top methods, counter ratios, VM components, tree
  hpm flamegraph FILE.jfr|FILE.collapsed -o OUT.html|OUT.svg|OUT.collapsed [--threads] [--title T] [--weight]
  hpm convert FILE.jfr -o OUT.pb.gz|OUT.json   pprof (go tool pprof) or JSON (docs/json.md)
  hpm compare A B [--threshold T]              overlap, hot-edge coverage, correlation
  hpm ccmap FILE                               Call Context Map queries
  hpm callerchain QUADS                        CallerChaining CCT reconstruction
  hpm phases TRACE [--weight W] [--grain G]    method-level phase selection
  hpm help                                     this text

Agent options: `hpm run help` or `java -agentpath:libhpm.so=help`.";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = if args.is_empty() { &args[..] } else { &args[1..] };
    let result = match args.first().map(String::as_str) {
        Some("run") => cmd_run::main(rest),
        Some("attach") => cmd_attach::main(rest),
        Some("report") => cmd_report::main(rest),
        Some("flamegraph") => cmd_flamegraph::main(rest),
        Some("compare") => cmd_compare::main(rest),
        Some("convert") => cmd_convert::main(rest),
        Some("ccmap") => cmd_ccmap::main(rest),
        Some("callerchain") => cmd_callerchain::main(rest),
        Some("phases") => cmd_phases::main(rest),
        None | Some("help") | Some("-h") | Some("--help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`; commands: run, attach, report, flamegraph, convert, compare, ccmap, callerchain, phases, help")),
    };
    match result {
        Ok(()) => {}
        Err(msg) => {
            eprintln!("hpm: {msg}");
            std::process::exit(2);
        }
    }
}
