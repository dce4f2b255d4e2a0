//! The agent's core under stress: threads start and end continuously while
//! sessions start and stop back to back through the Java bridge, sampling every millisecond on
//! every thread (tests/workloads/Churn.java). The handler/detach hand-over, slot reuse and the
//! batch pool are exercised at once; the JVM must finish normally, every session must write its
//! profile, and nothing of the agent may be left behind (threads, descriptors).
//!
//! Short in CI; `HPM_STRESS_SECONDS=300 cargo test -p hpm-tests --release --test agent_stress`
//! is the long run of docs/design.md.

use std::process::Command;

use hpm_tests::*;

#[test]
fn thread_churn_with_sessions_starting_and_stopping_at_1ms() {
    let seconds: f64 = std::env::var("HPM_STRESS_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(15.0);
    for jdk in jdks() {
        let dir = scratch(&format!("stress-{}", jdk.name));
        let out = Command::new(jdk.java())
            .arg(format!("-Dhpm.agent.path={}", agent_path().display()))
            .args(["-XX:CompileCommand=quiet", "-cp"])
            .arg(workloads())
            .args(["Churn", &seconds.to_string()])
            .arg(&dir)
            .output()
            .expect("run java");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let what = &jdk.name;
        assert!(out.status.success(), "{what}: the JVM failed ({}):\n{stdout}\n{stderr}", out.status);
        assert!(!stderr.contains("internal error") && !stderr.contains("panicked"), "{what}: {stderr}");
        let value = |key: &str| -> i64 {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("{what}: no `{key}` in:\n{stdout}"))
        };
        let sessions = value("sessions ");
        eprintln!("{what}: {sessions} sessions, {} short threads", value("threads "));
        assert!(sessions >= 10, "{what}: only {sessions} sessions");
        assert!(value("threads ") >= 100, "{what}: only {} threads started", value("threads "));
        assert_eq!(value("agent-threads "), 0, "{what}: agent threads outlived their sessions");
        // The descriptors of every session (perf groups, rings, files) are closed again; the
        // JVM itself may open a few (class files, the churn's threads): a small margin.
        let (before, after) = (value("fds-before "), value("fds-after "));
        assert!(after <= before + 8, "{what}: {before} descriptors before the sessions, {after} after");
        // Every session wrote its profile, and nearly all have samples (each runs while the
        // main thread uses 40 ms of CPU: its jvmti sessions sample at wall-clock ticks, so a
        // busy machine may still leave one without).
        let with_samples = (0..sessions)
            .filter(|i| {
                let f = dir.join(format!("s{i}.collapsed"));
                assert!(f.exists(), "{what}: session {i} wrote no {}", f.display());
                total(&read_collapsed(&f)) > 0
            })
            .count() as i64;
        assert!(with_samples * 10 >= sessions * 8, "{what}: only {with_samples} of {sessions} sessions have samples");
    }
}
