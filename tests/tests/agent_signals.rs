//! Signal ownership (signal.rs): hpm samples with a signal no other handler holds, never a
//! shared one, and leaves a signal to whoever installs a handler for it, before hpm's or after.
//! Other profilers sample beside it in either order.

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

/// A JVM driven by lines on its stdin, its stdout and stderr read line by line.
struct Driven {
    child: KillOnDrop,
    stdin: std::process::ChildStdin,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
    /// Every stderr line read so far.
    said: Vec<String>,
    what: String,
}

impl Driven {
    fn spawn(mut cmd: Command, what: &str) -> Driven {
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run java");
        let lines = |r: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(r).lines() {
                    if tx.send(line.unwrap_or_default()).is_err() {
                        return;
                    }
                }
            });
            rx
        };
        let out = lines(Box::new(child.stdout.take().unwrap()));
        let err = lines(Box::new(child.stderr.take().unwrap()));
        let stdin = child.stdin.take().unwrap();
        Driven { child: KillOnDrop(child), stdin, out, err, said: Vec::new(), what: what.to_string() }
    }

    /// The next stdout line. A watchdog, not a synchronisation: a lost signal never gets its
    /// answer.
    fn next(&self, waiting_for: &str) -> String {
        self.out
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("{}: no answer to {waiting_for}", self.what))
    }

    fn say(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        self.next(line)
    }

    /// Reads stderr until a line containing `text` (with the same watchdog).
    fn wait_said(&mut self, text: &str) {
        while !self.said.iter().any(|l| l.contains(text)) {
            let line = self.err.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| {
                panic!("{}: hpm never said {text:?}; it said:\n{}", self.what, self.said.join("\n"))
            });
            self.said.push(line);
        }
    }

    /// Waits for the JVM to end successfully; returns everything it said on stderr.
    fn finish(mut self) -> Vec<String> {
        let status = self.child.0.wait().unwrap();
        self.said.extend(self.err.iter());
        assert!(status.success(), "{}: the JVM failed ({status}):\n{}", self.what, self.said.join("\n"));
        self.said
    }
}

/// The program installed a handler (sun.misc.Signal) before starting a session, for SIGPROF or
/// for hpm's first choice (SIGURG): hpm samples with another signal, and `kill` reaches the
/// program's handler, once per signal, while the session samples at 1 ms.
#[test]
fn a_signal_the_program_handles_reaches_its_own_handler() {
    for (jdk, name) in jdks().into_iter().flat_map(|j| [(j.clone(), "PROF"), (j, "URG")]) {
        let what = format!("{}, SIG{name} handled", jdk.name);
        let file = scratch(&format!("sig{name}-{}", jdk.name)).join("p.collapsed");
        let mut cmd = Command::new(jdk.java());
        cmd.arg(format!("-Dhpm.agent.path={}", agent_path().display()))
            .arg("-cp")
            .arg(workloads())
            .arg("SigprofUser")
            .arg(&file)
            .arg(name);
        let _one_jvm = jvm_lock();
        let mut jvm = Driven::spawn(cmd, &what);
        let ready = jvm.next("start");
        let pid = ready.strip_prefix("ready ").unwrap_or_else(|| panic!("{ready}")).to_string();
        for n in 1..=20 {
            assert!(Command::new("kill").args([&format!("-{name}"), &pid]).status().unwrap().success());
            let got = jvm.say(&format!("wait {n}"));
            assert_eq!(got, format!("got {n}"), "{what}: the program's handler saw the wrong number of signals");
        }
        let done = jvm.say("stop");
        assert_eq!(done, "done 20", "{what}: perf signals reached the program's handler");
        jvm.finish();
        let samples = total(&read_collapsed(&file));
        assert!(samples >= 20, "{what}: the session sampled only {samples} times");
    }
}

/// Samples whose stack holds `frame`.
fn samples_under(stacks: &[(Vec<String>, u64)], frame: &str) -> u64 {
    stacks.iter().filter(|(s, _)| s.iter().any(|f| f == frame)).map(|(_, n)| n).sum()
}

/// hpm's signal is one nobody else holds, never shared (signal.rs): a SIGPROF handler the
/// program installs while hpm samples (sun.misc.Signal, as a program or an agent loaded later
/// does) costs hpm nothing; one installed for hpm's own signal (SIGURG, its first choice) makes
/// hpm move to the next free one, say so once, and count what was sampled meanwhile. Either way
/// hpm keeps sampling at the rate it had before (samples per ms of the busy thread's CPU time),
/// and the program's handler gets the program's own signals (`kill`). hpm's that reached it
/// before the move are counted in hpm's drops. (Which of them reached it when is not known
/// exactly: the JVM runs a sun.misc.Signal handler later, in a thread of its own.)
#[test]
fn a_signal_handler_the_program_installs_later_gets_its_signals_and_hpm_keeps_sampling() {
    const MOVED: &str = "handler was installed while hpm sampled with";
    for jdk in jdks() {
        for (name, hpms) in [("PROF", false), ("URG", true)] {
            let what = format!("{}, SIG{name} taken", jdk.name);
            let dir = scratch(&format!("late-sig{name}-{}", jdk.name));
            let (collapsed, jfr) = (dir.join("p.collapsed"), dir.join("p.jfr"));
            let mut cmd = Command::new(jdk.java());
            cmd.arg(format!(
                "-agentpath:{}=interval=1ms,file={},file={}",
                agent_path().display(),
                collapsed.display(),
                jfr.display()
            ))
            .arg("-cp")
            .arg(workloads())
            .args(["LateSigprof", "1.5", name]);
            let _one_jvm = jvm_lock();
            let mut jvm = Driven::spawn(cmd, &what);
            assert_eq!(jvm.next("the handler's installation"), "installed", "{what}");
            if hpms {
                jvm.wait_said(MOVED);
            }
            let count = |answer: String, prefix: &str| -> u64 {
                answer.strip_prefix(prefix).unwrap_or_else(|| panic!("{what}: {answer}")).parse().unwrap()
            };
            let taken = count(jvm.say("count"), "count ");
            let pid = jvm.child.0.id().to_string();
            for n in 1..=10 {
                assert!(Command::new("kill").args([&format!("-{name}"), &pid]).status().unwrap().success());
                let got = count(jvm.say(&format!("wait {}", taken + n)), "got ");
                assert!(got >= taken + n, "{what}: {got}");
            }
            let cpu = jvm.say("stop");
            // Signals of hpm's the program's handler got, all told.
            let hpm_signals = count(jvm.next("stop"), "done ") - 10;
            let said = jvm.finish();
            let mut ns =
                cpu.strip_prefix("cpu ").expect("cpu BEFORE AFTER").split(' ').map(|n| n.parse::<u64>().unwrap());
            let (before_ms, after_ms) = (ns.next().unwrap() as f64 / 1e6, ns.next().unwrap() as f64 / 1e6);
            let stacks = read_collapsed(&collapsed);
            let before = samples_under(&stacks, "LateSigprof.before") as f64 / before_ms;
            let after = samples_under(&stacks, "LateSigprof.after") as f64 / after_ms;
            let summary = |text: &str| said.iter().filter(|l| l.contains(text)).cloned().collect::<Vec<_>>();
            let signals = summary("hpm: signals: ");
            eprintln!(
                "{what}: samples per ms of CPU time {before:.3} before the handler, {after:.3} after; {hpm_signals} of \
                 hpm's signals reached the program's handler ({taken} before hpm said it moved); {signals:?}"
            );
            // A round (at most 200 ms) may pass before hpm sees the handler: less than a seventh
            // of the 1.5 s after it.
            assert!(before > 0.5, "{what}: {before:.3} samples per ms of CPU time before the handler");
            assert!(after > 0.8 * before, "{what}: {after:.3} samples per ms of CPU time after, {before:.3} before");
            if !hpms {
                assert_eq!(hpm_signals, 0, "{what}: hpm's signals reached the program's handler");
                assert!(summary(MOVED).is_empty(), "{what}: {said:?}");
                continue;
            }
            assert_eq!(summary(MOVED).len(), 1, "{what}: said once: {said:?}");
            assert_eq!(summary("hpm moved to SIGWINCH").len(), 1, "{what}: {said:?}");
            assert!(
                signals.len() == 1 && signals[0].contains("sampled with SIGWINCH, moved once"),
                "{what}: the summary's signal line: {signals:?}"
            );
            // What hpm sampled while the program's handler got its signals is in the drops of
            // the summary and of the JFR (hpm.Drops), as lost or kept without a Java stack.
            let counted = |line: &str| {
                line.contains("hpm's signal taken by another handler")
                    || line.contains("signal_taken_by_another_handler")
            };
            let drops = summary("samples, ");
            let report = String::from_utf8_lossy(&hpm(&["report", jfr.to_str().unwrap()]).stdout).into_owned();
            let in_jfr = report.lines().find(|l| l.starts_with("samples:")).unwrap_or_default().to_string();
            if hpm_signals > 0 {
                assert!(drops.iter().any(|l| counted(l)), "{what}: {hpm_signals} signals went elsewhere: {drops:?}");
                assert!(counted(&in_jfr), "{what}: the JFR's drops: {in_jfr}");
            }
        }
    }
}

/// Two profilers on one process, each sampling every thread's CPU clock at 1 ms through perf
/// signals: async-profiler (the library in its Maven jar) and hpm, loaded in either order.
/// Each keeps, under the workers' own frame, nearly the samples it takes alone per ms of the
/// workers' CPU time (Shares prints it): hpm never shares a signal with async-profiler (a
/// notification merged with the other's pending one left async-profiler's event disarmed), and
/// blocks the profiling signals while its handler runs (the other profiler's, delivered on top
/// of hpm's at the same tick, sampled hpm's handler instead of the program).
#[test]
fn async_profiler_and_hpm_each_keep_their_samples_beside_the_other_in_either_order() {
    let Some(ap) = async_profiler() else { return };
    for jdk in jdks() {
        let dir = scratch(&format!("beside-async-profiler-{}", jdk.name));
        // Samples per ms of the workers' CPU time under Shares.run: (async-profiler, hpm).
        let run = |order: &str| -> (Option<f64>, Option<f64>) {
            let (ap_out, hpm_out) =
                (dir.join(format!("{order}-ap.collapsed")), dir.join(format!("{order}-hpm.collapsed")));
            let ap_arg =
                format!("-agentpath:{}=start,event=cpu,interval=1ms,collapsed,file={}", ap.display(), ap_out.display());
            let hpm_arg =
                format!("-agentpath:{}=interval=1ms,quiet,file={}", agent_path().display(), hpm_out.display());
            let agents = match order {
                "alone-ap" => vec![ap_arg],
                "alone-hpm" => vec![hpm_arg],
                "ap-first" => vec![ap_arg, hpm_arg],
                _ => vec![hpm_arg, ap_arg],
            };
            let mut cmd = Command::new(jdk.java());
            cmd.args(&agents).arg("-cp").arg(workloads()).args(["Shares", "2", "1.5", "cpu"]);
            let r = run_command(cmd);
            r.assert_ok(&format!("{}: Shares, {order}", jdk.name));
            let cpu_ms = r
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix("cpu "))
                .and_then(|n| n.parse::<f64>().ok())
                .expect("Shares prints its threads' CPU time")
                / 1e6;
            let rate = |f: &std::path::Path| {
                f.exists().then(|| samples_under(&read_collapsed(f), "Shares.run") as f64 / cpu_ms)
            };
            (rate(&ap_out), rate(&hpm_out))
        };
        let (ap_alone, _) = run("alone-ap");
        let (_, hpm_alone) = run("alone-hpm");
        let (ap_alone, hpm_alone) = (ap_alone.unwrap(), hpm_alone.unwrap());
        eprintln!("{}: alone, async-profiler {ap_alone:.3}, hpm {hpm_alone:.3} samples per ms of CPU time", jdk.name);
        assert!(ap_alone > 0.5 && hpm_alone > 0.5, "{}: alone, {ap_alone:.3} and {hpm_alone:.3}", jdk.name);
        for order in ["ap-first", "hpm-first"] {
            let (a, h) = run(order);
            let (a, h) = (a.expect("async-profiler's profile"), h.expect("hpm's profile"));
            eprintln!("{}: {order}, async-profiler {a:.3}, hpm {h:.3} samples per ms of CPU time", jdk.name);
            assert!(a > 0.9 * ap_alone, "{}: {order}: async-profiler {a:.3} against {ap_alone:.3} alone", jdk.name);
            assert!(h > 0.9 * hpm_alone, "{}: {order}: hpm {h:.3} against {hpm_alone:.3} alone", jdk.name);
        }
    }
}

/// Once another handler took SIGURG, hpm samples with the next free signal; should the program
/// then reset that one to its default action, the notifications that come before hpm's next
/// round sees it would be delivered with the default action: hpm's first fallback (SIGWINCH) is
/// ignored by default, so the JVM lives on and hpm takes the signal back. (On SIGSTKFLT, the
/// first fallback before, the JVM died: "Stack fault", status 144.)
#[test]
fn a_program_resetting_hpms_signal_to_the_default_does_not_end_the_jvm() {
    for jdk in jdks() {
        let what = format!("{}, hpm's signal reset", jdk.name);
        let dir = scratch(&format!("reset-sig-{}", jdk.name));
        let collapsed = dir.join("p.collapsed");
        let mut cmd = Command::new(jdk.java());
        cmd.arg(format!("-agentpath:{}=interval=1ms,file={}", agent_path().display(), collapsed.display()))
            .arg("-cp")
            .arg(workloads())
            .args(["LateSigprof", "0.5", "URG"]);
        let _one_jvm = jvm_lock();
        let mut jvm = Driven::spawn(cmd, &what);
        assert_eq!(jvm.next("the handler's installation"), "installed", "{what}");
        jvm.wait_said("hpm moved to SIG");
        let moved = jvm.said.iter().find(|l| l.contains("hpm moved to SIG")).unwrap().clone();
        let to = moved.split("hpm moved to SIG").nth(1).unwrap().split(|c: char| !c.is_ascii_alphanumeric()).next();
        let to = to.unwrap().to_string();
        assert_eq!(jvm.say(&format!("reset {to}")), "reset", "{what}");
        let cpu = jvm.say("stop");
        assert!(jvm.next("stop").starts_with("done "), "{what}");
        let said = jvm.finish();
        let after_ms = cpu.rsplit(' ').next().unwrap().parse::<f64>().unwrap() / 1e6;
        let after = samples_under(&read_collapsed(&collapsed), "LateSigprof.after") as f64 / after_ms;
        eprintln!("{what}: moved to SIG{to}, reset; {after:.3} samples per ms of CPU time after; {said:?}");
        assert!(after > 0.5, "{what}: {after:.3} samples per ms of CPU time after the reset");
    }
}
