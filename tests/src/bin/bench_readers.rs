//! Benchmark of the readers and analyses on adversarial input (run by hand, never by the tests):
//! every `hpm` command that reads a profile, on a stack `--depth` frames deep (default
//! 100,000), as `.jfr` and as collapsed stacks, with the wall time and peak memory of each.
//!
//! ```text
//! cargo run --release -p hpm-tests --bin bench-readers -- [--depth N] [--samples N]
//!     [--hpm PATH] [--timeout SECS] [--mem-gib G] [--out DIR] [--runs N]
//! ```
//!
//! Each command runs `--runs` times (default 3) and the run with the least CPU time is shown:
//! on this kind of virtual machine the same run's CPU time varies by up to 2x with the host's
//! load, and the least is the figure closest to the work itself.
//!
//! `--hpm` runs another build (an older one, for a before/after table); every command runs
//! with an address-space limit of `--mem-gib` (default 8) and is killed after `--timeout`
//! seconds (default 60), so a quadratic build cannot take the machine down. The inputs come
//! from `hpm_core::adversarial`, like the tests'.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hpm_core::adversarial::{self, Names};

struct Opts {
    depth: usize,
    samples: usize,
    hpm: PathBuf,
    timeout: Duration,
    mem_gib: u64,
    out: PathBuf,
    runs: u32,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        depth: 100_000,
        samples: 1_000,
        hpm: PathBuf::new(),
        timeout: Duration::from_secs(60),
        mem_gib: 8,
        out: hpm_tests::workspace_root().join("target/bench-readers"),
        runs: 3,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).ok_or(format!("{} needs a value", args[i]))?;
        let num = || v.parse::<u64>().map_err(|_| format!("{}: `{v}` is not a whole number", args[i]));
        match args[i].as_str() {
            "--depth" => o.depth = num()? as usize,
            "--samples" => o.samples = num()? as usize,
            "--hpm" => o.hpm = PathBuf::from(v),
            "--timeout" => o.timeout = Duration::from_secs(num()?),
            "--mem-gib" => o.mem_gib = num()?,
            "--out" => o.out = PathBuf::from(v),
            "--runs" => o.runs = (num()? as u32).max(1),
            other => return Err(format!("unknown option `{other}`")),
        }
        i += 2;
    }
    if o.hpm.as_os_str().is_empty() {
        o.hpm = hpm_tests::hpm_bin();
    }
    Ok(o)
}

/// Exit status (None: killed at the timeout), wall time, CPU time (user + system), peak resident
/// memory in KiB. The child is reaped with `wait4`, which also gives its own CPU time and peak
/// memory (the CPU time is the steadier figure on a busy machine).
#[allow(clippy::zombie_processes)]
fn run(opts: &Opts, args: &[String]) -> (Option<i32>, Duration, Duration, u64) {
    let mut cmd = Command::new(&opts.hpm);
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    let limit = opts.mem_gib << 30;
    // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn().expect("run hpm");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        // SAFETY: pid is our child; status and usage are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if start.elapsed() > opts.timeout && !killed {
            // SAFETY: kill on our own child's pid, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let wall = start.elapsed();
    let code = if killed || !libc::WIFEXITED(status) { None } else { Some(libc::WEXITSTATUS(status)) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (code, wall, tv(usage.ru_utime) + tv(usage.ru_stime), usage.ru_maxrss as u64)
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench-readers: {e}");
            std::process::exit(2);
        }
    };
    std::fs::create_dir_all(&opts.out).expect("create the output directory");
    let at = |n: &str| opts.out.join(n).display().to_string();
    let write = |n: &str, b: &[u8]| std::fs::write(opts.out.join(n), b).expect("write an input");
    let d = opts.depth;
    write("deep.jfr", &adversarial::deep_jfr(d, opts.samples, Names::Distinct));
    write("deep.collapsed", adversarial::deep_collapsed(d, 1, opts.samples as u64, Names::Distinct).as_bytes());
    write("deep.quads", adversarial::deep_quads(d).as_bytes());
    write("deep.trace", adversarial::deep_trace(d).as_bytes());
    let size = |n: &str| std::fs::metadata(opts.out.join(n)).map(|m| m.len()).unwrap_or(0);
    println!(
        "inputs ({} frames, {} samples): deep.jfr {} bytes, deep.collapsed {} bytes, deep.quads {} bytes, deep.trace {} bytes",
        d,
        opts.samples,
        size("deep.jfr"),
        size("deep.collapsed"),
        size("deep.quads"),
        size("deep.trace")
    );
    println!("hpm: {}", opts.hpm.display());
    let mut cases: Vec<Vec<String>> = Vec::new();
    for input in ["deep.jfr", "deep.collapsed"] {
        let stem = Path::new(input).extension().and_then(|e| e.to_str()).unwrap_or("x").to_string();
        cases.push(vec!["report".into(), at(input)]);
        for fmt in ["html", "svg", "collapsed"] {
            cases.push(vec!["flamegraph".into(), at(input), "-o".into(), at(&format!("out-{stem}.{fmt}"))]);
        }
        cases.push(vec!["ccmap".into(), at(input)]);
    }
    cases.push(vec!["convert".into(), at("deep.jfr"), "-o".into(), at("out.pb.gz")]);
    cases.push(vec!["convert".into(), at("deep.jfr"), "-o".into(), at("out.json")]);
    cases.push(vec!["compare".into(), at("deep.jfr"), at("deep.collapsed")]);
    cases.push(vec!["compare".into(), at("deep.jfr"), at("deep.collapsed"), "--inclusive".into()]);
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    cases.push([vec!["report".into(), at("deep.jfr")], words(&["--thread", "^main$", "--from", "100ms"])].concat());
    cases.push(
        [vec!["flamegraph".into(), at("deep.jfr"), "-o".into(), at("out-sel.html")], words(&["--to", "900ms"])]
            .concat(),
    );
    cases.push(
        [vec!["convert".into(), at("deep.jfr"), "-o".into(), at("out-sel.json")], words(&["--from", "0.1s"])].concat(),
    );
    cases.push(vec!["diff".into(), at("deep.jfr"), at("deep.collapsed")]);
    cases.push(vec!["diff".into(), at("deep.jfr"), at("deep.collapsed"), "-o".into(), at("out-diff.html")]);
    cases.push(vec!["callerchain".into(), at("deep.quads")]);
    cases.push(vec!["phases".into(), at("deep.trace")]);

    println!("least CPU of {} runs each", opts.runs);
    println!("\n| command | exit | wall s | CPU s | peak RSS MiB |\n|---|---|---|---|---|");
    let mut worst = Duration::ZERO;
    for args in &cases {
        let (code, wall, cpu, rss_kib) =
            (0..opts.runs).map(|_| run(&opts, args)).min_by_key(|r| (r.0.is_some(), r.2)).expect("one run at least");
        worst = worst.max(cpu);
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                Path::new(a).file_name().filter(|_| a.contains('/')).map_or(a.clone(), |f| f.to_string_lossy().into())
            })
            .collect();
        let exit = code.map_or(format!("killed after {} s", opts.timeout.as_secs()), |c| c.to_string());
        println!(
            "| hpm {} | {exit} | {:.3} | {:.3} | {:.0} |",
            shown.join(" "),
            wall.as_secs_f64(),
            cpu.as_secs_f64(),
            rss_kib as f64 / 1024.0
        );
    }
    println!("\nmost CPU: {:.3} s", worst.as_secs_f64());
}
