//! Every reading command on hostile input, as a user would run it: files made to be multiplied
//! by a naive reader (`hpm_profile::adversarial::hostile`, and a deep collapsed stack of distinct
//! methods) cost at most [`BUDGET`] bytes of memory per byte of input, and special files (a
//! named pipe, a link to `/dev/zero`) are refused with one line. No JVM.
//!
//! Memory is the command's peak resident set (`wait4`, through the small `peak` binary: see
//! `hpm_tests::measure`), above what the same command takes on a tiny file: the kernel's
//! count, the same on a busy machine. Each command runs with an address-space limit, so a
//! reader that multiplies its input fails the test quickly instead of taking the machine; and
//! is killed if it has not ended after [`HANG`] (a pipe could hang a reader forever): a guard,
//! not a timing goal (the benchmark, `bench-readers --hostile`, has those).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use hpm_profile::adversarial::{self, hostile, hostile_otlp, Names};
use hpm_tests::{hpm_bin, scratch};

/// Bytes of peak memory per byte of input a reading command may take.
const BUDGET: u64 = 64;
/// About the size of each hostile file.
const SIZE: usize = 256 << 10;
/// Address space a command may take: over this it fails its allocation and aborts.
const ADDRESS_SPACE: u64 = 2 << 30;
/// Seconds after which a command still running is taken for hung and killed.
const HANG: u64 = 120;

struct Outcome {
    /// Exit status; None when a signal ended it (an abort at the address-space limit).
    code: Option<i32>,
    hung: bool,
    /// Peak resident memory, bytes.
    peak: u64,
    stderr: String,
}

fn run(dir: &Path, args: &[&str]) -> Outcome {
    let (err, result) = (dir.join("stderr"), dir.join("peak"));
    let status = Command::new(env!("CARGO_BIN_EXE_peak"))
        .args([&ADDRESS_SPACE.to_string(), &HANG.to_string(), s(&result), s(&hpm_bin())])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .status()
        .expect("run peak");
    assert!(status.success(), "peak failed");
    let r = std::fs::read_to_string(&result).unwrap();
    let f: Vec<&str> = r.split_whitespace().collect();
    Outcome {
        code: f[0].parse().ok(),
        hung: f[1] == "1",
        peak: f[2].parse::<u64>().unwrap() * 1024,
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    }
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Checks one run against the budget for `input` bytes above `base`; a line per problem.
fn check(what: &str, o: &Outcome, base: u64, input: u64, problems: &mut Vec<String>) {
    let allowed = base + BUDGET * input;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    if o.hung || o.code.is_none() {
        let why = if o.hung { "hung" } else { "was killed (over the address-space limit?)" };
        problems.push(format!("{what}: {why} at {:.0} MiB: {}", mib(o.peak), o.stderr.lines().next().unwrap_or("")));
    } else if o.stderr.lines().count() > 1 {
        // Refused or read, what a command says is one line at most.
        problems.push(format!("{what}: more than one line: {}", o.stderr.trim()));
    } else if o.peak > allowed {
        problems.push(format!(
            "{what}: peak {:.1} MiB for {input} bytes of input, over {:.1} MiB ({BUDGET} bytes a byte above {:.1} MiB)",
            mib(o.peak),
            mib(allowed),
            mib(base)
        ));
    }
}

#[test]
fn hostile_jfr_files_cost_memory_linear_in_their_size() {
    let dir = scratch("cli-hostile-jfr");
    let tiny = write(&dir, "tiny.jfr", &adversarial::deep_jfr(20, 20, Names::Distinct));
    let base_report = run(&dir, &["report", s(&tiny), "--threads"]).peak;
    let base_ccmap = run(&dir, &["ccmap", s(&tiny)]).peak;
    let (json, pprof) = (dir.join("out.json"), dir.join("out.pb.gz"));
    let base_json = run(&dir, &["convert", s(&tiny), "-o", s(&json)]).peak;
    let base_pprof = run(&dir, &["convert", s(&tiny), "-o", s(&pprof)]).peak;
    let mut problems = Vec::new();
    for shape in hostile::SHAPES {
        let data = (shape.make)(SIZE);
        let f = write(&dir, &format!("hostile-{}.jfr", shape.name), &data);
        let mut report = vec!["report", s(&f)];
        report.extend_from_slice(shape.args);
        let o = run(&dir, &report);
        check(&format!("hpm {} ({})", report.join(" "), shape.name), &o, base_report, data.len() as u64, &mut problems);
        let o = run(&dir, &["ccmap", s(&f)]);
        check(&format!("hpm ccmap ({})", shape.name), &o, base_ccmap, data.len() as u64, &mut problems);
        for (out, base) in [(&json, base_json), (&pprof, base_pprof)] {
            let o = run(&dir, &["convert", s(&f), "-o", s(out)]);
            check(&format!("hpm convert -o {} ({})", s(out), shape.name), &o, base, data.len() as u64, &mut problems);
        }
    }
    assert!(problems.is_empty(), "over the memory budget:\n{}", problems.join("\n"));
}

#[test]
fn a_deep_stack_of_distinct_methods_costs_memory_linear_in_its_size() {
    let dir = scratch("cli-hostile-deep");
    let tiny = write(&dir, "tiny.collapsed", adversarial::deep_collapsed(20, 2, 3, Names::Distinct).as_bytes());
    let deep = write(&dir, "deep.collapsed", adversarial::deep_collapsed(100_000, 1, 5, Names::Distinct).as_bytes());
    let jfr = write(&dir, "deep.jfr", &adversarial::deep_jfr(100_000, 10, Names::Distinct));
    let html = dir.join("out.html");
    let mut problems = Vec::new();
    for input in [&deep, &jfr] {
        let bytes = std::fs::metadata(input).unwrap().len();
        for cmd in [
            vec!["report", s(input)],
            vec!["flamegraph", s(input), "-o", s(&html)],
            vec!["ccmap", s(input)],
            vec!["diff", s(input), s(input)],
            vec!["compare", s(input), s(input)],
        ] {
            let two = cmd[0] == "diff" || cmd[0] == "compare";
            let mut small = cmd.clone();
            for a in small.iter_mut().filter(|a| **a == s(input)) {
                *a = s(&tiny);
            }
            let base = run(&dir, &small).peak;
            let o = run(&dir, &cmd);
            check(&format!("hpm {}", cmd.join(" ")), &o, base, if two { 2 * bytes } else { bytes }, &mut problems);
        }
    }
    assert!(problems.is_empty(), "over the memory budget:\n{}", problems.join("\n"));
    // The map of a long path of distinct methods is refused, with the limit named.
    let o = run(&dir, &["ccmap", s(&deep)]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("its call context map would hold more than") && o.stderr.lines().count() == 1,
        "{}",
        o.stderr
    );
    // Recursion repeats its contexts: as deep, it is read.
    let rec = write(&dir, "rec.collapsed", adversarial::deep_collapsed(100_000, 1, 5, Names::Recursive).as_bytes());
    let o = run(&dir, &["ccmap", s(&rec)]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn special_files_are_refused_with_one_line() {
    let dir = scratch("cli-hostile-special");
    let mut problems = Vec::new();
    for ext in ["jfr", "collapsed", "trace", "quads", "ccmap"] {
        let fifo = dir.join(format!("fifo.{ext}"));
        let c = std::ffi::CString::new(s(&fifo)).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let zero = dir.join(format!("zero.{ext}"));
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for input in [&fifo, &zero] {
            let i = s(input).to_string();
            let out = |name: &str| s(&dir.join(name)).to_string();
            let mut cmds: Vec<Vec<String>> = vec![match ext {
                "trace" => vec!["phases".into(), i.clone()],
                "quads" => vec!["callerchain".into(), i.clone()],
                "ccmap" => vec!["ccmap".into(), i.clone()],
                _ => vec!["report".into(), i.clone()],
            }];
            if ext == "jfr" || ext == "collapsed" {
                cmds.push(vec!["flamegraph".into(), i.clone(), "-o".into(), out("out.html")]);
                cmds.push(vec!["compare".into(), i.clone(), i.clone()]);
            }
            if ext == "jfr" {
                cmds.push(vec!["convert".into(), i.clone(), "-o".into(), out("out.json")]);
                cmds.push(vec!["report".into(), i.clone(), "--from-phase".into(), "x".into()]);
            }
            for cmd in cmds {
                let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
                let o = run(&dir, &cmd);
                let what = if input == &fifo { "a named pipe" } else { "a device" };
                let ok = o.code == Some(2)
                    && o.stderr.lines().count() == 1
                    && o.stderr.contains(&format!("{what}, not a file; hpm reads regular files only"));
                if !ok {
                    let how = if o.hung { "hung".to_string() } else { format!("exit {:?}", o.code) };
                    problems.push(format!("hpm {}: {how}: {}", cmd.join(" "), o.stderr.trim()));
                }
            }
        }
    }
    // The metrics file of `hpm phases` too.
    let trace = write(&dir, "t.trace", b"enter main f 0\nexit main f 10\n");
    let o = run(&dir, &["phases", s(&trace), "--metrics", s(&dir.join("zero.collapsed"))]);
    if !(o.code == Some(2) && o.stderr.contains("a device, not a file")) {
        problems.push(format!("hpm phases --metrics /dev/zero: exit {:?}: {}", o.code, o.stderr.trim()));
    }
    assert!(problems.is_empty(), "special files read:\n{}", problems.join("\n"));
}

#[test]
fn hostile_otlp_files_cost_memory_linear_in_their_size() {
    let dir = scratch("cli-hostile-otlp");
    let mut problems = Vec::new();
    for shape in hostile_otlp::OTLP_SHAPES {
        let tiny = write(&dir, &format!("tiny-{}.{}", shape.name, shape.ext), &(shape.make)(1024));
        let data = (shape.make)(SIZE);
        let f = write(&dir, &format!("hostile-{}.{}", shape.name, shape.ext), &data);
        let (mut small, mut report) = (vec!["report", s(&tiny)], vec!["report", s(&f)]);
        small.extend_from_slice(shape.args);
        report.extend_from_slice(shape.args);
        let base = run(&dir, &small).peak;
        let o = run(&dir, &report);
        check(&format!("hpm {} ({})", report.join(" "), shape.name), &o, base, data.len() as u64, &mut problems);
    }
    assert!(problems.is_empty(), "over the memory budget:\n{}", problems.join("\n"));
}
