//! SIGPROF is shared (issue 11, item 6): hpm's handler takes only the perf notifications of its
//! own threads (si_code POLL_*, si_fd naming a slot of the interrupted thread) and passes every
//! other SIGPROF to the handler installed before it. Here the program installed one
//! (sun.misc.Signal) before starting a session; `kill -PROF` must still reach it, once per
//! signal, while the session samples at 1 ms.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hpm_tests::*;

/// A failed assertion must not leave the JVM waiting for signals.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_foreign_sigprof_reaches_the_programs_own_handler() {
    for jdk in jdks() {
        let dir = scratch(&format!("sigprof-{}", jdk.name));
        let file = dir.join("p.collapsed");
        let mut child = KillOnDrop(
            Command::new(jdk.java())
                .arg(format!("-Dhpm.agent.path={}", agent_path().display()))
                .args(["-cp"])
                .arg(workloads())
                .arg("SigprofUser")
                .arg(&file)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("run java"),
        );
        let child = &mut child.0;
        let mut stdin = child.stdin.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap_or_default()).is_err() {
                    return;
                }
            }
        });
        // A watchdog, not a synchronisation: a signal swallowed by hpm never gets its answer.
        let next = |what: &str| {
            rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{}: no answer to {what}", jdk.name))
        };
        let ready = next("start");
        let pid: i32 = ready.strip_prefix("ready ").unwrap_or_else(|| panic!("{ready}")).parse().unwrap();
        for n in 1..=20 {
            let ok = Command::new("kill").args(["-PROF", &pid.to_string()]).status().unwrap().success();
            assert!(ok, "kill -PROF failed");
            writeln!(stdin, "wait {n}").unwrap();
            stdin.flush().unwrap();
            let got = next(&format!("signal {n}"));
            assert_eq!(got, format!("got {n}"), "{}: the program's handler saw the wrong number of signals", jdk.name);
        }
        writeln!(stdin, "stop").unwrap();
        stdin.flush().unwrap();
        let done = next("stop");
        assert_eq!(done, "done 20", "{}: perf signals reached the program's handler", jdk.name);
        assert!(child.wait().unwrap().success());
        let samples = total(&read_collapsed(&file));
        assert!(samples >= 20, "{}: the session sampled only {samples} times", jdk.name);
    }
}
