//! Every command that reads a profile, run as a user would on adversarial input from
//! `hpm_profile::adversarial`: a 100,000-frame stack completes with linear-size output, a file cut
//! inside its last chunk is read up to that chunk with one warning naming what was lost, and
//! the limits refuse with the one-line errors the README's Troubleshooting table lists. No JVM.
//! (How fast is the benchmark's business: `bench-readers`, docs/design.md.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hpm_profile::adversarial::{self, Names};
use hpm_tests::{hpm_bin, scratch};

const DEPTH: usize = 100_000;

fn run(args: &[&str]) -> Output {
    Command::new(hpm_bin()).args(args).output().expect("run hpm")
}

fn ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(out.status.success(), "hpm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_100000_frame_stack_goes_through_every_command() {
    let dir = scratch("cli-limits-deep");
    let jfr = write(&dir, "deep.jfr", &adversarial::deep_jfr(DEPTH, 500, Names::Distinct));
    let collapsed =
        write(&dir, "deep.collapsed", adversarial::deep_collapsed(DEPTH, 1, 500, Names::Distinct).as_bytes());
    let input_bytes = std::fs::metadata(&jfr).unwrap().len();
    for input in [&jfr, &collapsed] {
        let report = ok(&["report", s(input)]);
        let text = String::from_utf8_lossy(&report.stdout);
        assert!(text.contains(&format!("[depth {DEPTH}] ")), "the call tree reaches the leaf");
        // One call-tree line per frame, indentation capped: linear in the depth.
        assert!(report.stdout.len() < 400 * DEPTH, "{} bytes of report", report.stdout.len());
        for ext in ["html", "svg", "collapsed"] {
            let out = dir.join(format!("out.{ext}"));
            ok(&["flamegraph", s(input), "-o", s(&out)]);
            let size = std::fs::metadata(&out).unwrap().len();
            assert!(size < 400 * DEPTH as u64, "{ext}: {size} bytes");
        }
        // A path of 100,000 distinct methods would make 3.2 million contexts: refused with
        // one line; the same depth of recursion repeats its contexts and is read.
        let err = refused(&["ccmap", s(input)]);
        assert!(err.contains("its call context map would hold more than"), "{err}");
    }
    let rec = write(&dir, "rec.collapsed", adversarial::deep_collapsed(DEPTH, 1, 500, Names::Recursive).as_bytes());
    let rec_jfr = write(&dir, "rec.jfr", &adversarial::deep_jfr(DEPTH, 500, Names::Recursive));
    for input in [&rec, &rec_jfr] {
        let ccmap = ok(&["ccmap", s(input)]);
        let text = String::from_utf8_lossy(&ccmap.stdout);
        assert!(text.contains("samples: 500") && text.contains("gen.Rec.f"), "{}: {text}", s(input));
    }
    for out in ["out.pb.gz", "out.json"] {
        ok(&["convert", s(&jfr), "-o", s(&dir.join(out))]);
        let size = std::fs::metadata(dir.join(out)).unwrap().len();
        assert!(size < 100 * input_bytes, "{out}: {size} bytes from {input_bytes}");
    }
    for (a, b) in [(&jfr, &jfr), (&collapsed, &collapsed)] {
        for extra in [&[][..], &["--inclusive"][..]] {
            let mut args = vec!["compare", s(a), s(b)];
            args.extend_from_slice(extra);
            let c = ok(&args);
            assert!(String::from_utf8_lossy(&c.stdout).contains("overlap: 100.00%"), "a profile against itself");
        }
    }
    // The selection flags (the 500 samples lie 1 ms apart from the start).
    let report = ok(&["report", s(&jfr), "--thread", "^main$", "--from", "100ms", "--to", "400ms"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("300 of 500 samples kept") && text.contains(&format!("[depth {DEPTH}] ")), "selected");
    ok(&["flamegraph", s(&jfr), "-o", s(&dir.join("sel.html")), "--thread", "main", "--from", "100ms"]);
    ok(&["convert", s(&jfr), "-o", s(&dir.join("sel.json")), "--to", "0.25s"]);
    // diff: against itself, and the .jfr against the collapsed stacks, whose leaves differ (the
    // contexts' paths are written short however deep).
    let same = ok(&["diff", s(&jfr), s(&jfr)]);
    assert!(String::from_utf8_lossy(&same.stdout).contains("(no method's share changed)"), "a profile against itself");
    for ext in ["html", "svg"] {
        let out = dir.join(format!("diff.{ext}"));
        let d = ok(&["diff", s(&jfr), s(&collapsed), "-o", s(&out)]);
        let text = String::from_utf8_lossy(&d.stdout);
        assert!(text.contains(&format!("… [depth {DEPTH}] ")), "short paths: {text}");
        assert!(d.stdout.len() < 10_000, "{} bytes of diff table", d.stdout.len());
        let size = std::fs::metadata(&out).unwrap().len();
        assert!(size < 400 * DEPTH as u64, "diff.{ext}: {size} bytes");
    }
    let quads = write(&dir, "deep.quads", adversarial::deep_quads(DEPTH).as_bytes());
    let chain = ok(&["callerchain", s(&quads)]);
    assert!(chain.stdout.len() < 200 * DEPTH, "{} bytes of callerchain output", chain.stdout.len());
    let trace = write(&dir, "deep.trace", adversarial::deep_trace(DEPTH).as_bytes());
    let phases = ok(&["phases", s(&trace)]);
    assert!(String::from_utf8_lossy(&phases.stdout).contains(&format!("invocations: {DEPTH}")));
}

#[test]
fn a_cut_last_chunk_is_read_around_with_one_warning() {
    let dir = scratch("cli-limits-cut");
    let (bytes, at) = adversarial::truncated_jfr(3, 300);
    let jfr = write(&dir, "cut.jfr", &bytes);
    let out = ok(&["report", s(&jfr)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("hpm: {}: chunk 3 at byte {at} is incomplete", jfr.display()))
            && err.contains("the 3 complete chunks before it were read"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("samples:    30,"), "30 samples from 3 chunks");
    let json = dir.join("cut.json");
    let out = ok(&["convert", s(&jfr), "-o", s(&json)]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is incomplete"));
}

/// The one-line error of a refused input (status 2).
fn refused(args: &[&str]) -> String {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "hpm {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn limits_are_refused_with_one_line() {
    let dir = scratch("cli-limits-refused");
    let huge = write(&dir, "huge.collapsed", adversarial::huge_counts_collapsed().as_bytes());
    for cmd in ["report", "compare", "ccmap"] {
        let mut args = vec![cmd, s(&huge)];
        if cmd == "compare" {
            args.push(s(&huge));
        }
        let err = refused(&args);
        assert!(err.contains("huge.collapsed:2: the sample counts up to this line add up to more than"), "{err}");
    }
    let weights = write(&dir, "weights.jfr", &adversarial::huge_weights_jfr());
    let err = refused(&["report", s(&weights)]);
    assert!(err.contains("chunk 0: the sample weights (periods) add up to more than"), "{err}");
    let deep = format!("{} 1\n", vec!["f"; hpm_profile::limits::MAX_STACK_DEPTH + 1].join(";"));
    let deep = write(&dir, "deep.collapsed", deep.as_bytes());
    let err = refused(&["flamegraph", s(&deep), "-o", s(&dir.join("x.svg"))]);
    assert!(err.contains("deep.collapsed:1: a stack of 1000001 frames is deeper than hpm reads"), "{err}");
    let (bytes, _) = adversarial::truncated_jfr(0, 200);
    let nothing = write(&dir, "nothing.jfr", &bytes);
    let err = refused(&["report", s(&nothing)]);
    assert!(err.contains("no complete chunk"), "{err}");
}
