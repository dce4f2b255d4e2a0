//! Per-instruction histograms (Schneider & Gross §6.3): `hpm report --instructions` decodes
//! the samples' instruction pointers against the code the agent copied at CompiledMethodLoad.
//! The truth is by construction: `Shares.spin`'s loop (its `for` line and the line after, found
//! in the source) is where the CPU goes, and the second is 64-bit arithmetic (`x * 6364136223846793005L + 1442695040888963407L`): `imul` and
//! `add` on 64-bit registers. (JDK 25's C2 folds the unrolled iterations' multiplies into one,
//! so its samples land on the adds; JDK 17's on the `imul`s.)

use std::process::Command;

use hpm_tests::*;

/// One row of an instructions table: (samples, site, instruction).
fn rows(report: &str) -> Vec<(u64, String, String)> {
    let table = report.split("Top ").nth(1).unwrap_or_else(|| panic!("no table:\n{report}"));
    table
        .lines()
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // rank samples % cum% site... offset instruction...
            let offset = cols.iter().position(|c| c.starts_with("+0x")).unwrap_or_else(|| panic!("{l}"));
            (cols[1].parse().unwrap(), cols[4..offset].join(" "), cols[offset + 1..].join(" "))
        })
        .collect()
}

#[test]
fn instructions_name_the_hot_loop_with_its_lines_for_both_ip_samplers() {
    // The line of spin's `for`, and the line of its body after it.
    let source = std::fs::read_to_string(workspace_root().join("tests/workloads/Shares.java")).unwrap();
    let loop_line = 1 + source.lines().position(|l| l.trim() == "for (int i = 0; i < n; i++) {").expect("spin's loop");
    let body = format!("Shares.spin:{} ", loop_line + 1);
    let mut runs: Vec<(String, &str)> = jdks().into_iter().map(|j| (j.name.clone(), "asgct")).collect();
    runs.push((jdks()[0].name.clone(), "chain"));
    for (jdk_name, sampler) in runs {
        let jdk = jdks().into_iter().find(|j| j.name == jdk_name).unwrap();
        let dir = scratch(&format!("instructions-{}-{sampler}", jdk.name));
        let jfr = dir.join("shares.jfr");
        let opts = format!("sampler={sampler},interval=1ms,quiet,file={}", jfr.display());
        run_java(&jdk, Some(&opts), &[], "Shares", &["2", "2", "cpu"]).assert_ok(&format!("Shares, sampler={sampler}"));
        let out = Command::new(hpm_bin())
            .args(["report", "--instructions", "--top", "1000", "--method", r"Shares\.spin$"])
            .arg(&jfr)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows = rows(&report);
        let total: u64 = rows.iter().map(|r| r.0).sum();
        let in_loop: u64 = rows
            .iter()
            .filter(|r| r.1.starts_with(&format!("Shares.spin:{loop_line} ")) || r.1.starts_with(&body))
            .map(|r| r.0)
            .sum();
        let what = format!("{} sampler={sampler}", jdk.name);
        eprintln!(
            "{what}: {total} samples in Shares.spin, {:.1}% on lines {loop_line}-{}; top: {:?}",
            in_loop as f64 * 100.0 / total as f64,
            loop_line + 1,
            rows.first()
        );
        assert!(total >= 1_000, "{what}: {total} samples\n{report}");
        assert!(in_loop as f64 >= 0.95 * total as f64, "{what}: {in_loop} of {total} in the loop\n{report}");
        // A blob's instructions are kept from its second sample in the session on: only an
        // instruction of a blob sampled once (a version of the loop soon replaced) is not
        // decoded, and those hold at most a few samples.
        let undecoded: Vec<_> = rows.iter().filter(|r| r.2.starts_with('(')).collect();
        assert!(
            undecoded.iter().all(|r| r.0 == 1 && r.2 == "(code not recorded)") && undecoded.len() as u64 * 100 <= total,
            "{what}: instructions not decoded: {undecoded:?}\n{report}"
        );
        // The hottest instruction of the loop's body is its multiply or add, on a 64-bit register.
        let hottest = rows.iter().find(|r| r.1.starts_with(&body)).unwrap_or_else(|| panic!("{report}"));
        let arithmetic = ["imul r", "add r"].iter().any(|p| hottest.2.starts_with(p))
            && !hottest.2.split([' ', ',']).nth(1).is_some_and(|reg| reg.ends_with('d'));
        assert!(arithmetic, "{what}: the loop body's hottest instruction is `{}`\n{report}", hottest.2);
    }
}

#[test]
fn instructions_say_what_to_do_for_a_sampler_without_instruction_pointers() {
    let jdk = &jdks()[0];
    let jfr = scratch("instructions-jvmti").join("shares.jfr");
    let opts = format!("sampler=jvmti,interval=10ms,quiet,file={}", jfr.display());
    run_java(jdk, Some(&opts), &[], "Shares", &["1", "0.5"]).assert_ok("Shares, sampler=jvmti");
    let err = hpm_fails(&["report", "--instructions", jfr.to_str().unwrap()]);
    assert!(err.contains("no instruction pointer (sampler=jvmti); record with sampler=asgct"), "{err}");
}
