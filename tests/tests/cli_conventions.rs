//! The `hpm` command behaves as command-line users expect: a
//! version, `help SUB`, the parser's errors, output cut by a closed pipe ending quietly, and
//! `hpm run` refusing to put `-agentpath` in front of something that is not java. No JVM needed.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use hpm_tests::*;

fn data(dir: &str, name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(dir).join(name).display().to_string()
}

const SUBCOMMANDS: [&str; 10] =
    ["run", "attach", "report", "flamegraph", "convert", "compare", "diff", "ccmap", "callerchain", "phases"];

#[test]
fn version_and_help_for_every_command() {
    for flag in ["--version", "-V"] {
        let o = hpm(&[flag]);
        assert!(o.status.success(), "{flag}: {o:?}");
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("hpm {}", env!("CARGO_PKG_VERSION")));
    }
    let top = String::from_utf8_lossy(&hpm(&["--help"]).stdout).into_owned();
    for sub in SUBCOMMANDS {
        assert!(top.contains(sub), "hpm --help lacks {sub}: {top}");
        let via_help = hpm(&["help", sub]);
        let via_flag = hpm(&[sub, "--help"]);
        assert!(via_help.status.success() && via_flag.status.success(), "{sub}: {via_help:?} {via_flag:?}");
        assert_eq!(via_help.stdout, via_flag.stdout, "hpm help {sub} differs from hpm {sub} --help");
        assert!(String::from_utf8_lossy(&via_flag.stdout).contains(&format!("Usage: hpm {sub}")), "{sub}");
    }
    // Every flag a command takes is in its help.
    let report = String::from_utf8_lossy(&hpm(&["report", "--help"]).stdout).into_owned();
    for flag in ["--top", "--min-percent", "--threads", "--from-phase", "--thread", "--from", "--to"] {
        assert!(report.contains(flag), "hpm report --help lacks {flag}");
    }
    for sub in ["flamegraph", "convert", "diff"] {
        let help = String::from_utf8_lossy(&hpm(&[sub, "--help"]).stdout).into_owned();
        for flag in ["--thread <REGEX>", "--from <TIME>", "--to <TIME>"] {
            assert!(help.contains(flag), "hpm {sub} --help lacks {flag}");
        }
    }
    assert!(usage_error(&["report", "x.jfr", "--frobnicate"]).contains("'--frobnicate'"));
    assert!(usage_error(&["frobnicate"]).contains("'frobnicate'"));
}

/// `hpm run -- sh -c …` used to become `sh -agentpath:… -c …`: now it is refused before
/// anything runs.
#[test]
fn run_refuses_a_command_that_is_not_java() {
    let dir = hpm_tests::scratch("cli-conventions-not-java");
    let mark = dir.join("ran");
    let o = hpm(&["run", "--", "sh", "-c", &format!("touch {}", mark.display())]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`sh` is not a java launcher") && err.contains("JAVA_TOOL_OPTIONS"), "{err}");
    assert!(!mark.exists(), "the command ran");
    let o = hpm(&["run", "--", "/bin/true"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a java launcher"), "{o:?}");
}

/// `hpm report … | head`: the reader is gone before the first byte (the pipe's read end is
/// closed before hpm starts), so every write fails. hpm ends as Unix tools do, by SIGPIPE,
/// without a panic message (it used to panic in println!).
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let collapsed = data("analysis", "figure2.collapsed");
    let cases: Vec<Vec<String>> = vec![
        vec!["report".into(), data("output", "small.collapsed")],
        vec!["compare".into(), collapsed.clone(), collapsed.clone()],
        vec!["diff".into(), collapsed.clone(), data("analysis", "ours.collapsed")],
        vec!["ccmap".into(), collapsed],
        vec!["callerchain".into(), data("analysis", "figure6.quads")],
        vec!["phases".into(), data("analysis", "figure3.trace")],
    ];
    for args in cases {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(hpm_bin()).args(&args).stdout(writer).stderr(Stdio::piped()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "hpm {args:?}: {err}");
        assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "hpm {args:?}: {:?} {err}", o.status);
    }
}
