//! `hpm flamegraph` and `hpm report` run as a user would, on a collapsed-stacks fixture.
//! No JVM needed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `hpm` binary, built once for all end-to-end tests (hpm_tests::hpm_bin).
fn hpm() -> PathBuf {
    hpm_tests::hpm_bin()
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/output").join(name)
}

fn scratch(name: &str) -> PathBuf {
    hpm_tests::shared_scratch("cli-outputs").join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(hpm()).args(args).output().expect("run hpm")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The one-line error of a failed command (exit status 2, `hpm: ...` on stderr).
fn error_line(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "hpm {args:?} should fail with status 2");
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(err.starts_with("hpm: "), "{err}");
    err
}

#[test]
fn flamegraph_html_is_self_contained_and_escaped() {
    let input = data("small.collapsed");
    let out = scratch("small.html");
    let r = run(&["flamegraph", input.to_str().unwrap(), "-o", out.to_str().unwrap(), "--title", "t<1>"]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(text(&r.stderr).contains("101 samples"), "{}", text(&r.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>t&lt;1&gt;</title>"));
    assert_eq!(html.matches("<script").count(), 2, "data + code only");
    assert!(!html.contains("src=") && !html.contains("href=") && !html.contains("https://"), "no external resources");
    // The fixture's `</script>` frame name appears only escaped inside the data block.
    assert!(html.contains(r#"Foo$Bar.\"quoted\"\u003c/script\u003e"#));

    // Optional: run the page's script against a fake DOM when Node is installed.
    if Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let check = Command::new("node").arg(data("flame_dom_check.js")).arg(&out).output().unwrap();
        assert!(check.status.success(), "flame.js in node:\n{}{}", text(&check.stdout), text(&check.stderr));
    }
    // The page in a real browser (hover, zoom, search, reset): tests/tests/flame_browser.rs.
}

#[test]
fn flamegraph_svg_and_collapsed() {
    let input = data("small.collapsed");
    let svg = scratch("small.svg");
    let r = run(&["flamegraph", input.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<?xml"));
    assert!(s.trim_end().ends_with("</svg>"));
    assert_eq!(s.matches("<g>").count(), s.matches("</g>").count());
    assert_eq!(s.matches("<g>").count(), 9, "root + 8 frames");
    assert!(s.contains("Foo$Bar.&quot;quoted&quot;&lt;/script&gt;"));

    let col = scratch("small.out.collapsed");
    let r = run(&["flamegraph", input.to_str().unwrap(), "-o", col.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let written = std::fs::read_to_string(&col).unwrap();
    let mut original: Vec<String> = std::fs::read_to_string(&input).unwrap().lines().map(String::from).collect();
    original.sort();
    assert_eq!(written.lines().collect::<Vec<_>>(), original, "same stacks, sorted");
}

#[test]
fn report_on_collapsed_stacks() {
    let input = data("small.collapsed");
    let r = run(&["report", input.to_str().unwrap(), "--top", "3", "--min-percent", "5"]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let out = text(&r.stdout);
    assert!(out.contains("samples:    101"), "{out}");
    assert!(out.contains("== Top 3 methods by self samples =="));
    let top: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("== Top")).skip(2).take(3).collect();
    assert!(top[0].trim_start().starts_with("59.41%") && top[0].ends_with("app.Hot.loop"), "{top:?}");
    assert!(out.contains("(3 more methods)"));
    assert!(out.contains("== Call tree: frames with at least 5% of samples =="));
    assert!(!out.contains("event:"), "collapsed stacks have no event metadata");
}

#[test]
fn bad_arguments_give_one_line_errors() {
    let input = data("small.collapsed");
    let input = input.to_str().unwrap();
    assert!(hpm_tests::usage_error(&["flamegraph", input]).contains("--output <OUT>"));
    let e = error_line(&["flamegraph", input, "-o", "out.png"]);
    assert!(e.contains(".png") && e.contains(".html") && e.contains(".svg") && e.contains(".collapsed"), "{e}");
    let e = error_line(&["flamegraph", "no/such/file.collapsed", "-o", "x.html"]);
    assert!(e.contains("no/such/file.collapsed") && e.contains("os error"), "{e}");
    let e = error_line(&["report", "profile.zip"]);
    assert!(e.contains(".jfr") && e.contains(".collapsed"), "{e}");
    assert!(hpm_tests::usage_error(&["report"]).contains("<FILE>"));
    assert!(hpm_tests::usage_error(&["report", input, "--top", "x"]).contains("--top"));
    assert!(hpm_tests::usage_error(&["report", input, "--bogus"]).contains("'--bogus'"));
    assert!(error_line(&["report", input, "--threads"]).contains(".jfr"));
    let bad = scratch("bad.collapsed");
    std::fs::write(&bad, "main;a 1\nmain;b lots\n").unwrap();
    let e = error_line(&["report", bad.to_str().unwrap()]);
    assert!(e.contains(":2:") && e.contains("lots"), "{e}");
}
