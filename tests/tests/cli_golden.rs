//! The reading commands' output on a recording checked into the repository
//! (`tests/data/demo/demo.jfr`: `./scripts/demo.sh`'s program for 3 s, recorded with
//! `hpm run event=cpu-clock,interval=1ms,counters=task-clock+page-faults,file=demo.jfr -- java
//! -cp target/demo Demo 3`), byte for byte against the files beside it: a change to how a
//! recording is read, weighted or rendered that alters what a user sees shows here. When the
//! change is meant, write the new expectations with `HPM_BLESS=1 cargo test -p hpm-tests --test
//! cli_golden` and review their diff. No JVM.

use std::path::{Path, PathBuf};
use std::process::Command;

use hpm_tests::{hpm_bin, scratch, workspace_root};

fn data() -> PathBuf {
    workspace_root().join("tests/data/demo")
}

/// `hpm ARGS...` on the checked-in recording: its standard output.
fn hpm(args: &[&str]) -> Vec<u8> {
    let out = Command::new(hpm_bin()).args(args).output().expect("run hpm");
    assert!(out.status.success(), "hpm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn expect(name: &str, got: &[u8]) {
    let path = data().join(name);
    if std::env::var_os("HPM_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if want != got {
        let (w, g) = (String::from_utf8_lossy(&want), String::from_utf8_lossy(got));
        let first =
            w.lines().zip(g.lines()).position(|(a, b)| a != b).unwrap_or(w.lines().count().min(g.lines().count()));
        panic!(
            "{name} differs from the expected output at line {}:\n  expected: {:?}\n  got:      {:?}",
            first + 1,
            w.lines().nth(first),
            g.lines().nth(first)
        );
    }
}

fn jfr() -> String {
    data().join("demo.jfr").display().to_string()
}

#[test]
fn the_report_of_the_demo_recording_is_unchanged() {
    expect("report.txt", &hpm(&["report", &jfr()]));
}

#[test]
fn the_instructions_report_of_the_demo_recording_is_unchanged() {
    expect("report-instructions.txt", &hpm(&["report", &jfr(), "--instructions"]));
}

#[test]
fn the_collapsed_stacks_of_the_demo_recording_are_unchanged() {
    let dir = scratch("golden-collapsed");
    let out: &Path = &dir.join("out.txt");
    hpm(&["flamegraph", &jfr(), "-o", out.to_str().unwrap()]);
    expect("collapsed.txt", &std::fs::read(out).unwrap());
}
