//! Benchmark of the readers and analyses on adversarial input (run by hand, never by the tests):
//! every `hpm` command that reads a profile, on a stack `--depth` frames deep (default
//! 100,000), as `.jfr` and as collapsed stacks, with the wall time and peak memory of each.
//!
//! ```text
//! cargo run --release -p hpm-tests --bin bench-readers -- [--depth N] [--samples N]
//!     [--hpm PATH] [--timeout SECS] [--mem-gib G] [--out DIR] [--runs N] [--hostile BYTES]
//! ```
//!
//! `--hostile BYTES` measures the hostile `.jfr` shapes of `hpm_profile::adversarial::hostile`
//! instead, each made about BYTES long, through `hpm report` (with the options that reach what
//! the shape attacks) and `hpm ccmap`: peak memory per byte of input is the figure to watch.
//!
//! Each command runs `--runs` times (default 3) and the run with the least CPU time is shown:
//! on this kind of virtual machine the same run's CPU time varies by up to 2x with the host's
//! load, and the least is the figure closest to the work itself.
//!
//! `--hpm` runs another build (an older one, for a before/after table); every command runs
//! with an address-space limit of `--mem-gib` (default 8) and is killed after `--timeout`
//! seconds (default 60), so a quadratic build cannot take the machine down. The inputs come
//! from `hpm_profile::adversarial`, like the tests'.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use hpm_profile::adversarial::{self, Names};

struct Opts {
    depth: usize,
    samples: usize,
    hpm: PathBuf,
    timeout: Duration,
    mem_gib: u64,
    out: PathBuf,
    runs: u32,
    hostile: Option<usize>,
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
        hostile: None,
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
            "--hostile" => o.hostile = Some(num()? as usize),
            other => return Err(format!("unknown option `{other}`")),
        }
        i += 2;
    }
    if o.hpm.as_os_str().is_empty() {
        o.hpm = hpm_tests::hpm_bin();
    }
    Ok(o)
}

/// Exit status (None: ended by a signal: over the address-space limit, or killed at the
/// timeout), wall time, CPU time (user + system), peak resident memory in KiB
/// ([`hpm_tests::measure`]; the CPU time is the steadier figure on a busy machine).
fn run(opts: &Opts, args: &[String]) -> (Option<i32>, Duration, Duration, u64) {
    let mut cmd = Command::new(&opts.hpm);
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    let m = hpm_tests::measure::run_measured(cmd, opts.mem_gib << 30, opts.timeout);
    (m.code, m.wall, m.cpu, m.peak_kib)
}

/// The table of `--hostile`: each shape through `hpm report` and `hpm ccmap`.
fn hostile(opts: &Opts, bytes: usize) {
    use hpm_profile::adversarial::hostile::SHAPES;
    println!("hpm: {}", opts.hpm.display());
    println!("least CPU of {} runs each", opts.runs);
    println!("\n| shape | bytes | command | exit | CPU s | peak RSS MiB | RSS bytes per input byte |\n|---|---|---|---|---|---|---|");
    let (_, _, _, base_kib) = run(opts, &["--version".to_string()]);
    for shape in SHAPES {
        let path = opts.out.join(format!("hostile-{}.jfr", shape.name));
        let data = (shape.make)(bytes);
        std::fs::write(&path, &data).expect("write an input");
        let p = path.display().to_string();
        let report: Vec<String> =
            ["report".to_string(), p.clone()].into_iter().chain(shape.args.iter().map(|a| a.to_string())).collect();
        for args in [report, vec!["ccmap".to_string(), p.clone()]] {
            let (code, _, cpu, rss_kib) =
                (0..opts.runs).map(|_| run(opts, &args)).min_by_key(|r| (r.0.is_none(), r.2)).expect("one run");
            let exit = code
                .map_or(format!("killed (over {} GiB or {} s)", opts.mem_gib, opts.timeout.as_secs()), |c| {
                    c.to_string()
                });
            let per_byte = (rss_kib.saturating_sub(base_kib) * 1024) as f64 / data.len() as f64;
            println!(
                "| {} | {} | {} | {exit} | {:.3} | {:.0} | {per_byte:.1} |",
                shape.name,
                data.len(),
                [&args[..1], &args[2..]].concat().join(" "),
                cpu.as_secs_f64(),
                rss_kib as f64 / 1024.0
            );
        }
    }
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
    if let Some(bytes) = opts.hostile {
        return hostile(&opts, bytes);
    }
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
        let exit = code
            .map_or(format!("killed (over {} GiB or {} s)", opts.mem_gib, opts.timeout.as_secs()), |c| c.to_string());
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
