//! The outputs for other tools, on real runs: the agent writes `.pb.gz` (pprof) and `.json`
//! (hpm-profile/1) next to `.jfr` and `.collapsed`; `go tool pprof` reads the pprof file and
//! finds the hot method; the JSON validates against docs/schema/hpm-profile-1.schema.json and
//! its method shares agree with the collapsed stacks'; `hpm convert` gives the same from the
//! `.jfr`. When `go` or Python's jsonschema is missing (scripts/setup.sh installs both), the
//! check that needs it prints why it is skipped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hpm_tests::*;

/// `go`, on PATH or where the Go tarball and Debian's golang-go put it.
fn go() -> Option<PathBuf> {
    ["go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"]
        .iter()
        .map(PathBuf::from)
        .find(|g| Command::new(g).arg("version").output().is_ok_and(|o| o.status.success()))
}

/// A Python that has the jsonschema package: $HPM_PYTHON, python3, or Debian's.
fn python() -> Option<String> {
    let mut candidates: Vec<String> = std::env::var("HPM_PYTHON").into_iter().collect();
    candidates.extend(["python3".to_string(), "/usr/bin/python3".to_string()]);
    candidates
        .into_iter()
        .find(|p| Command::new(p).args(["-c", "import jsonschema"]).output().is_ok_and(|o| o.status.success()))
}

/// `go tool pprof ARGS FILE`: asserts exit 0 and returns stdout.
fn pprof(go: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new(go).args(["tool", "pprof"]).args(args).arg(file).output().expect("run go tool pprof");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "go tool pprof {args:?} {} failed: {stderr}", file.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `-top` rows as name -> (flat, cum) in the profile's unit.
fn top_rows(text: &str) -> HashMap<String, (f64, f64)> {
    let mut rows = HashMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() == 6 && cols[1].ends_with('%') && cols[4].ends_with('%') {
            let num = |s: &str| s.trim_end_matches(|c: char| c.is_alphabetic()).parse::<f64>().ok();
            if let (Some(flat), Some(cum)) = (num(cols[0]), num(cols[3])) {
                rows.insert(cols[5].to_string(), (flat, cum));
            }
        }
    }
    rows
}

/// Validates `json` against the schema with Python's jsonschema and returns, per method display
/// name, (self samples, total samples), plus the root's total samples under key "".
fn validate_json(python: &str, json: &Path) -> HashMap<String, (u64, u64)> {
    let schema = workspace_root().join("docs/schema/hpm-profile-1.schema.json");
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
doc = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator(schema).validate(doc)
print("\t%d\t%d" % (0, doc["tree"][0]["total"]["samples"]))
for m in doc["methods"]:
    print("%s\t%d\t%d" % (m["displayName"], m["self"]["samples"], m["total"]["samples"]))
"#;
    let out = Command::new(python).args(["-c", script]).arg(&schema).arg(json).output().expect("run python");
    assert!(out.status.success(), "{} does not validate: {}", json.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (name, s, t) = (f.next()?, f.next()?.parse().ok()?, f.next()?.parse().ok()?);
            Some((name.to_string(), (s, t)))
        })
        .collect()
}

const HOT: [&str; 3] = ["Shares.a", "Shares.b", "Shares.c"];

/// Runs Shares with the agent writing every format; returns the scratch directory.
fn profile(jdk: &Jdk) -> PathBuf {
    let dir = scratch(&format!("tool-outputs-{}", jdk.name));
    let f = |n: &str| dir.join(n).display().to_string();
    let opts = format!(
        "interval=1ms,counters=task-clock+page-faults,file={},file={},file={},file={},quiet",
        f("p.jfr"),
        f("p.pb.gz"),
        f("p.json"),
        f("p.collapsed")
    );
    let jvm = ["-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Shares::*"];
    run_java(jdk, Some(&opts), &jvm, "Shares", &["2", "2", "cpu"]).assert_ok("Shares");
    dir
}

/// Files process `pid` holds open in `dir` that have no name there (`O_TMPFILE`'s, shown by
/// the kernel as `DIR/#INODE (deleted)`).
fn unlinked_files_in(pid: u32, dir: &str) -> usize {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap();
    let targets = fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok());
    targets
        .filter(|t| {
            let t = t.display().to_string();
            t.strip_prefix(dir).and_then(|r| r.strip_prefix("/#")).is_some_and(|r| r.ends_with(" (deleted)"))
        })
        .count()
}

/// The first directory the agent tries for the JFR it keeps for dumps (`TMPDIR`, `/var/tmp`,
/// `/tmp`) that should take it, found here without the agent's code: root's or ours, not in
/// memory, 256 MB free, and an `O_TMPFILE` file made there.
fn disk_dir_for_unlinked_files() -> Option<String> {
    let tmpdir = std::env::var_os("TMPDIR").filter(|d| !d.is_empty()).map(|d| d.to_string_lossy().into_owned());
    let mut dirs: Vec<String> = tmpdir.into_iter().collect();
    dirs.extend(["/var/tmp".to_string(), "/tmp".to_string()]);
    dirs.into_iter().find_map(|d| {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(&d).ok().filter(|m| m.is_dir())?;
        // SAFETY: geteuid has no preconditions.
        if meta.uid() != 0 && meta.uid() != unsafe { libc::geteuid() } {
            return None;
        }
        let c = std::ffi::CString::new(d.as_str()).ok()?;
        // SAFETY: an all-zero statfs is a valid value for statfs to overwrite; `c` is a path.
        let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::statfs(c.as_ptr(), &mut fs) } != 0 {
            return None;
        }
        #[allow(clippy::unnecessary_cast, reason = "the fields' types differ between libc targets")]
        let (kind, free) = (fs.f_type as u32, fs.f_bavail as u64 * fs.f_bsize as u64);
        if matches!(kind, 0x0102_1994 | 0x8584_58f6) || free < 256 << 20 {
            return None;
        }
        // SAFETY: `c` is a NUL-terminated path; the descriptor is closed at once.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, 0o600) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just opened here.
        unsafe { libc::close(fd) };
        Some(std::fs::canonicalize(&d).ok()?.display().to_string())
    })
}

/// Shares of `Shares.spin` (self) and of a, b, c (total) in percent of all samples, from the
/// collapsed stacks.
fn collapsed_shares(dir: &Path) -> HashMap<String, f64> {
    let stacks = read_collapsed(&dir.join("p.collapsed"));
    let all = total(&stacks) as f64;
    let mut out = HashMap::new();
    let spin: u64 = stacks.iter().filter(|(f, _)| f.last().is_some_and(|l| l == "Shares.spin")).map(|(_, n)| n).sum();
    out.insert("Shares.spin".to_string(), 100.0 * spin as f64 / all);
    for name in HOT {
        let n: u64 = stacks.iter().filter(|(f, _)| f.iter().any(|x| x == name)).map(|(_, n)| n).sum();
        out.insert(name.to_string(), 100.0 * n as f64 / all);
    }
    out
}

fn close(what: &str, got: f64, want: f64) {
    assert!((got - want).abs() <= 1.0, "{what}: {got:.2}% here, {want:.2}% in the collapsed stacks");
}

/// `with_files`: source files are expected (the agent's own outputs, and `hpm convert` of the
/// agent's `.jfr`, which keeps them in hpm's `hpm.types.SourceFile` pool).
fn check_pprof(go: &Path, file: &Path, want: &HashMap<String, f64>, with_files: bool) {
    // Default sample type: the sampling event (cpu-clock ns); the hottest entry is the leaf.
    let top = pprof(go, &["-top", "-nodecount=5"], file);
    let first = top.lines().find(|l| l.contains('%') && l.split_whitespace().count() == 6);
    assert!(
        first.is_some_and(|l| l.ends_with("Shares.spin")),
        "{}: hottest entry is not Shares.spin:\n{top}",
        file.display()
    );
    // Sample counts: cumulative shares agree with the collapsed stacks.
    let top = pprof(go, &["-top", "-sample_index=samples", "-nodecount=30"], file);
    let rows = top_rows(&top);
    let all: f64 = top
        .lines()
        .find_map(|l| l.split("of ").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok()))
        .unwrap_or_else(|| panic!("no total in:\n{top}"));
    close("pprof self Shares.spin", 100.0 * rows["Shares.spin"].0 / all, want["Shares.spin"]);
    for name in HOT {
        close(&format!("pprof total {name}"), 100.0 * rows[name].1 / all, want[name]);
    }
    // Source files and lines survive: at line granularity the hottest entry is in Shares.java.
    let lines = pprof(go, &["-top", "-lines", "-nodecount=3"], file);
    // Which of spin's lines (18-22 of Shares.java: the loop, its body) is hottest is the JIT's
    // choice; any of them will do.
    let at = if with_files { "Shares.spin Shares.java:" } else { "Shares.spin :" };
    let line: Option<u32> = lines
        .lines()
        .find_map(|l| l.split_once(at))
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok());
    assert!(line.is_some_and(|n| (18..=22).contains(&n)), "{}: no `{at}<line of spin>` in\n{lines}", file.display());
    // Counters are sample types of their own.
    let t = pprof(go, &["-top", "-sample_index=task-clock", "-nodecount=3"], file);
    assert!(t.contains("Type: task-clock"), "{t}");
}

fn check_json(python: &str, file: &Path, want: &HashMap<String, f64>, with_files: bool) {
    let methods = validate_json(python, file);
    let all = methods[""].1 as f64;
    assert!(all > 0.0);
    close("JSON self Shares.spin", 100.0 * methods["Shares.spin"].0 as f64 / all, want["Shares.spin"]);
    for name in HOT {
        close(&format!("JSON total {name}"), 100.0 * methods[name].1 as f64 / all, want[name]);
    }
    let text = std::fs::read_to_string(file).unwrap();
    if with_files {
        assert!(
            text.contains("\"sourceFile\":\"Shares.java\",\"sourcePath\":\"Shares.java\",\"lines\":[{"),
            "source files are recorded"
        );
    } else {
        assert!(text.contains("\"sourceFile\":null,\"sourcePath\":null,\"lines\":[{"), "lines without files");
    }
    assert!(text.contains(
        "\"counters\":[{\"name\":\"task-clock\",\"unit\":\"ns\"},{\"name\":\"page-faults\",\"unit\":\"events\"}]"
    ));
    assert!(!text.contains("CPI"), "no CPI without cycles and instructions");
}

#[test]
fn agent_pprof_and_json_are_read_by_their_tools() {
    let (go, python) = (go(), python());
    if go.is_none() {
        eprintln!(
            "SKIPPED pprof checks: no `go` on PATH or in /usr/local/go/bin (scripts/setup.sh installs golang-go)"
        );
    }
    if python.is_none() {
        eprintln!(
            "SKIPPED JSON schema checks: no python3 with jsonschema (scripts/setup.sh installs python3-jsonschema)"
        );
    }
    for jdk in jdks() {
        let dir = profile(&jdk);
        let want = collapsed_shares(&dir);
        eprintln!("{}: collapsed shares {want:?}", jdk.name);
        assert!(want["Shares.spin"] > 50.0, "the workload is hot in Shares.spin: {want:?}");
        let gz = std::fs::read(dir.join("p.pb.gz")).unwrap();
        assert_eq!(&gz[..2], &[0x1f, 0x8b], "pprof output is gzip-compressed");
        if let Some(go) = &go {
            check_pprof(go, &dir.join("p.pb.gz"), &want, true);
        }
        if let Some(py) = &python {
            check_json(py, &dir.join("p.json"), &want, true);
        }

        // `hpm convert` gives the same from the .jfr.
        for out in ["c.pb.gz", "c.json"] {
            let r = Command::new(hpm_bin())
                .args(["convert", dir.join("p.jfr").to_str().unwrap(), "-o", dir.join(out).to_str().unwrap()])
                .output()
                .unwrap();
            assert!(r.status.success(), "hpm convert -o {out}: {}", String::from_utf8_lossy(&r.stderr));
        }
        if let Some(go) = &go {
            check_pprof(go, &dir.join("c.pb.gz"), &want, true);
        }
        if let Some(py) = &python {
            check_json(py, &dir.join("c.json"), &want, true);
        }
    }
}

#[test]
fn convert_errors_are_one_line() {
    let dir = scratch("tool-outputs-errors");
    let collapsed = dir.join("x.collapsed");
    std::fs::write(&collapsed, "a;b 1\n").unwrap();
    let missing = dir.join("missing.jfr");
    let cases: [(&[&str], &str); 3] = [
        (&["convert", collapsed.to_str().unwrap(), "-o", "y.json"], "is not a .jfr recording"),
        (&["convert", "x.jfr", "-o", "y.txt"], "use .pb.gz (pprof) or .json"),
        (&["convert", missing.to_str().unwrap(), "-o", "y.json"], "cannot read"),
    ];
    for (args, want) in cases {
        let r = Command::new(hpm_bin()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("hpm: ") && err.contains(want), "{args:?}: {err}");
    }
    // A missing -o is the argument parser's: its usage line names it.
    let r = Command::new(hpm_bin()).args(["convert", "x.jfr"]).output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("--output <OUT>") && err.contains("Usage: hpm convert"), "{err}");
}

/// A session that asked for neither pprof nor JSON keeps no stack table: a dump in either
/// format is read back from its JFR chunks (kept in memory, as it writes no JFR file). Dumped
/// after stop, it describes the same samples as the session's own collapsed file, whose shares
/// it must give.
#[test]
fn pprof_and_json_dumps_of_a_session_without_them_come_from_its_jfr() {
    let (go, python) = (go(), python());
    for jdk in jdks() {
        let dir = scratch(&format!("tool-dumps-{}", jdk.name));
        let mut jvm = Attachee::start(&jdk);
        let pid = jvm.pid;
        let f = |n: &str| dir.join(n).display().to_string();
        attach_ok(pid, &format!("interval=1ms,counters=task-clock+page-faults,quiet,file={}", f("p.collapsed")));
        assert_eq!(jvm.say("work 2000"), "worked");
        // While the session runs too: the chunks so far and the samples since.
        attach_ok(pid, &format!("dump,file={}", f("running.pb.gz")));
        // The dump flushed a chunk: `status` says how much JFR the session keeps for dumps, and
        // where: in an unlinked file on a disk where there is a directory for one (then none of
        // it in the heap, and the JVM holds the file open), else in memory, and why.
        let check_kept = |status: &str| {
            let kept = status.lines().find_map(|l| l.strip_prefix("JFR kept for dump (no JFR file): "));
            let (kb, rest) = kept
                .and_then(|k| k.split_once(" KB of at most 65536 KB: "))
                .and_then(|(kb, rest)| Some((kb.parse::<u64>().ok()?, rest)))
                .unwrap_or_else(|| panic!("{status}"));
            assert!(kb > 0, "{status}");
            match disk_dir_for_unlinked_files() {
                Some(dir) => {
                    assert_eq!(rest, format!("{kb} KB in an unlinked file in {dir}, 0 KB in memory"), "{status}");
                    assert!(unlinked_files_in(pid, &dir) >= 1, "{}: no unlinked file of the JVM's in {dir}", jdk.name);
                }
                None => assert!(rest.starts_with(&format!("{kb} KB in memory (no file for it: ")), "{status}"),
            }
            kb
        };
        let running = check_kept(&attach_ok(pid, "status"));
        attach_ok(pid, "stop");
        // Stopped, the session's JFR stays where it was for `dump` (its last chunk added), and
        // `status` still says so.
        let idle = attach_ok(pid, "status");
        assert!(idle.starts_with("state: idle (the last session's profile can still be dumped)\n"), "{idle}");
        assert!(check_kept(&idle) >= running, "{idle}");
        attach_ok(pid, &format!("dump,file={}", f("p.pb.gz")));
        attach_ok(pid, &format!("dump,file={}", f("p.json")));
        assert!(jvm.say("exit").starts_with("done"));
        assert!(jvm.child.wait().unwrap().success(), "{}: the attached JVM failed", jdk.name);
        let want = collapsed_shares(&dir);
        eprintln!("{}: collapsed shares {want:?}", jdk.name);
        for gz in ["running.pb.gz", "p.pb.gz"] {
            let bytes = std::fs::read(dir.join(gz)).unwrap();
            assert_eq!(&bytes[..2], &[0x1f, 0x8b], "{}: {gz} is gzip-compressed", jdk.name);
        }
        if let Some(go) = &go {
            check_pprof(go, &dir.join("p.pb.gz"), &want, true);
        }
        if let Some(py) = &python {
            check_json(py, &dir.join("p.json"), &want, true);
        }
    }
}
