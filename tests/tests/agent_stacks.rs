//! Complete Java stacks: on the bundled demo at 1 ms, hpm's own walker over
//! HotSpot's frames (`stack=vm`, the default) leaves at most 0.5% of the samples without a
//! Java frame (AsyncGetCallTrace left 8.2% there: arraycopy stubs, compiled prologues and
//! epilogues, VM leaf calls), and where both walkers find frames on the same sample
//! (`stack=compare`) they agree on the whole stack. On every JDK.

use std::process::Command;

use hpm_tests::*;

/// Samples of the collapsed profile, and those kept with a `[no Java stack: …]` frame.
fn without_java(stacks: &[(Vec<String>, u64)]) -> (u64, u64) {
    let total = total(stacks);
    let none = stacks.iter().filter(|(s, _)| s.iter().any(|f| f.starts_with("[no Java stack"))).map(|(_, n)| n).sum();
    (total, none)
}

/// The percentages of `stack=compare`'s summary line: found by hpm, found by ASGCT, same stack.
fn compared(stderr: &str) -> (f64, f64, f64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("stack walkers on the same"))
        .unwrap_or_else(|| panic!("no comparison line in:\n{stderr}"));
    let pct_after = |key: &str| -> f64 {
        let rest = &line[line.find(key).unwrap_or_else(|| panic!("`{key}` missing in: {line}")) + key.len()..];
        rest.trim_start().split('%').next().and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("{line}"))
    };
    (pct_after("found by hpm's"), pct_after("by AsyncGetCallTrace"), pct_after("same stack"))
}

#[test]
fn demo_stacks_are_complete_and_agree_with_asgct() {
    for jdk in jdks() {
        let dir = scratch(&format!("stacks-{}", jdk.name));
        let classes = dir.join("classes");
        let javac = Command::new(jdk.tool("javac"))
            .arg("-d")
            .arg(&classes)
            .arg(workspace_root().join("java/demo/Demo.java"))
            .output()
            .expect("run javac");
        assert!(javac.status.success(), "javac Demo: {}", String::from_utf8_lossy(&javac.stderr));
        let run = |opts: &str| {
            let mut cmd = Command::new(jdk.java());
            cmd.arg(format!("-agentpath:{}={opts}", agent_path().display()))
                .arg("-cp")
                .arg(&classes)
                // 1,000 order batches per worker (about 12 s of CPU in all, 6 s of wall time on
                // two idle cores): the same samples however busy the machine.
                .args(["Demo", "0", "1000"]);
            let r = run_command(cmd);
            r.assert_ok("Demo");
            r
        };

        let out = dir.join("vm.collapsed");
        let r = run(&format!("interval=1ms,file={}", out.display()));
        assert!(r.stderr.contains("Java stacks: hpm's own walker"), "{}: walker not in force:\n{}", jdk.name, r.stderr);
        let (total, none) = without_java(&read_collapsed(&out));
        let share = 100.0 * none as f64 / total.max(1) as f64;
        eprintln!("{}: {none} of {total} samples without a Java frame ({share:.2}%)", jdk.name);
        assert!(total >= 3_000, "{}: only {total} samples", jdk.name);
        assert!(share <= 0.5, "{}: {share:.2}% of the samples have no Java frame (at most 0.5%)", jdk.name);

        let out = dir.join("compare.collapsed");
        let r = run(&format!("interval=1ms,stack=compare,file={}", out.display()));
        let (vm, asgct, same) = compared(&r.stderr);
        eprintln!("{}: Java frames found by hpm {vm}%, by ASGCT {asgct}%; same stack {same}%", jdk.name);
        assert!(vm >= 99.0, "{}: hpm's walker found Java frames in only {vm}% of the samples", jdk.name);
        assert!(vm >= asgct, "{}: hpm's walker found fewer stacks ({vm}%) than AsyncGetCallTrace ({asgct}%)", jdk.name);
        assert!(same >= 98.0, "{}: the walkers agree on only {same}% of the stacks both found", jdk.name);
    }
}
