//! `hpm run` under a signal: SIGTERM, SIGHUP or SIGINT sent to hpm, or
//! SIGINT sent to its whole process group as a terminal's Ctrl-C is, ends the JVM too (no
//! orphan: the kernel says the process is gone, through a pidfd taken while it ran), hpm
//! returns only once the JVM wrote its outputs (they exist, the `.part` does not), with the
//! JVM's exit status as a shell reports it (128+N). SIGQUIT reaches the JVM (its thread dump)
//! and ends nothing. The JVM says "ready" once a JFR chunk is on disk: sampling is underway.

use std::io::{BufRead, BufReader};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::io::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hpm_tests::*;

/// A watchdog, never a synchronisation: a run that lost its signal never gets to the next step.
const WATCHDOG: Duration = Duration::from_secs(120);

/// What the run under test did: a line on its stdout (the JVM's), or hpm's exit.
enum Seen {
    Line(String),
    Exited(ExitStatus),
}

/// A process pinned by a pidfd: asked whether it still exists, killed if it does at the end.
struct Pinned(OwnedFd);

impl Pinned {
    fn open(pid: u32) -> Pinned {
        // SAFETY: pidfd_open takes a PID and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as i32;
        assert!(fd >= 0, "pidfd_open({pid}): {}", std::io::Error::last_os_error());
        // SAFETY: a descriptor the kernel just returned, owned by nothing else.
        Pinned(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn signal(&self, sig: i32) -> bool {
        let null = std::ptr::null::<libc::siginfo_t>();
        // SAFETY: a pidfd this value owns, a signal number, no siginfo, no flags.
        unsafe { libc::syscall(libc::SYS_pidfd_send_signal, self.0.as_raw_fd(), sig, null, 0) == 0 }
    }

    /// Whether the process exists (running, or exited and not yet reaped by its parent).
    fn exists(&self) -> bool {
        self.signal(0)
    }

    /// Waits until the process has exited (its pidfd turns readable); false if it did not
    /// within the watchdog's time.
    fn exited_within_watchdog(&self) -> bool {
        let mut p = libc::pollfd { fd: self.0.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, WATCHDOG.as_millis() as i32) == 1 }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

/// The signals this file sends, at their default disposition in `cmd`'s process: a test run
/// under `nohup`, or as a background job of a shell without job control, starts with SIGHUP
/// or SIGINT/SIGQUIT ignored, and an ignored signal never reaches hpm (nor, as ignored
/// dispositions survive exec, the JVM) — the test is of hpm, not of how it was started.
fn default_signals(cmd: &mut Command) {
    // SAFETY: signal() is async-signal-safe, called between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
                if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// `hpm run` of [`UntilSignalled`] writing `run.jfr` and `run.html` in `dir`, started; the
/// channel gets the JVM's stdout lines and hpm's exit.
struct Running {
    hpm: u32,
    seen: mpsc::Receiver<Seen>,
    stderr: mpsc::Receiver<String>,
    dir: PathBuf,
    what: String,
}

impl Running {
    fn start(jdk: &Jdk, dir: &Path, own_group: bool) -> Running {
        let jfr = dir.join("run.jfr");
        let options = format!("interval=1ms,flush=1s,file={},file={}", jfr.display(), dir.join("run.html").display());
        let mut cmd = Command::new(hpm_bin());
        cmd.args(["run", &options, "--"]).arg(jdk.java()).arg("-cp").arg(workloads());
        cmd.arg("UntilSignalled").arg(dir.join("run.jfr.part"));
        if own_group {
            cmd.process_group(0);
        }
        default_signals(&mut cmd);
        let mut child =
            cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run hpm");
        let (tx, seen) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let lines = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if lines.send(Seen::Line(line.unwrap_or_default())).is_err() {
                    return;
                }
            }
        });
        let (etx, stderr) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                if etx.send(line.unwrap_or_default()).is_err() {
                    return;
                }
            }
        });
        let hpm = child.id();
        std::thread::spawn(move || {
            let status = child.wait().expect("wait for hpm");
            let _ = tx.send(Seen::Exited(status));
        });
        Running { hpm, seen, stderr, dir: dir.to_path_buf(), what: format!("{}: hpm run", jdk.name) }
    }

    /// Waits for a stdout line starting with `prefix` and returns it; fails if hpm exits first.
    fn line(&self, prefix: &str) -> String {
        loop {
            match self.seen.recv_timeout(WATCHDOG) {
                Ok(Seen::Line(l)) if l.starts_with(prefix) => return l,
                Ok(Seen::Line(_)) => {}
                Ok(Seen::Exited(s)) => {
                    let err: Vec<String> = self.stderr.try_iter().collect();
                    panic!("{}: hpm exited ({s}) before the JVM printed `{prefix}`:\n{}", self.what, err.join("\n"))
                }
                Err(_) => panic!("{}: no `{prefix}` line", self.what),
            }
        }
    }

    /// The JVM, pinned, once it says sampling is underway.
    fn ready(&self) -> Pinned {
        let line = self.line("ready ");
        Pinned::open(line["ready ".len()..].trim().parse().expect("ready PID"))
    }

    fn exit(&self) -> ExitStatus {
        loop {
            match self.seen.recv_timeout(WATCHDOG) {
                Ok(Seen::Exited(s)) => return s,
                Ok(Seen::Line(_)) => {}
                Err(_) => panic!("{}: hpm did not exit", self.what),
            }
        }
    }

    /// At hpm's exit: the JVM is gone and its outputs exist, complete.
    fn assert_finished(&self, jvm: &Pinned, status: ExitStatus, code: i32) {
        let stderr: Vec<String> = self.stderr.try_iter().collect();
        assert_finished(&self.what, &self.dir, jvm, status, code, &stderr);
    }
}

/// At hpm's exit (`status`, expected `code`): the JVM is gone and its outputs in `dir` exist,
/// complete; `said` is what hpm and the JVM printed, for the failure message.
fn assert_finished(what: &str, dir: &Path, jvm: &Pinned, status: ExitStatus, code: i32, said: &[String]) {
    let gone = !jvm.exists();
    let exists = |n: &str| dir.join(n).is_file();
    let files = (exists("run.jfr"), exists("run.html"), exists("run.jfr.part"));
    eprintln!("{what}: exit {status}, JVM gone {gone}, (jfr, html, part) {files:?}");
    assert!(gone, "{what}: the JVM outlived hpm (orphaned); hpm {status}");
    assert_eq!(files, (true, true, false), "{what}: outputs when hpm exited ({status})");
    assert_eq!(status.code(), Some(code), "{what}: {status}\n{}", said.join("\n"));
}

fn kill(pid: i32, sig: i32) {
    // SAFETY: kill with a PID (or a negated process group id) of a process this test started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig}): {}", std::io::Error::last_os_error());
}

/// `kill -TERM <hpm>` (and -HUP): the JVM is told, exits writing its outputs; hpm exits with
/// the JVM's status, 143 (128+15) and 129 (128+1).
#[test]
fn a_signal_to_hpm_ends_the_jvm_and_waits_for_its_outputs() {
    for jdk in jdks() {
        for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
            let dir = scratch(&format!("cli_run_{sig}_{}", jdk.name));
            let _guard = jvm_lock();
            let run = Running::start(&jdk, &dir, false);
            let jvm = run.ready();
            kill(run.hpm as i32, sig);
            let status = run.exit();
            run.assert_finished(&jvm, status, code);
        }
    }
}

/// Ctrl-C as a terminal sends it, to the whole process group (hpm and the JVM got it): hpm
/// waits for the JVM's outputs and exits with its status, 130.
#[test]
fn sigint_to_the_process_group_waits_for_the_outputs() {
    for jdk in jdks() {
        let dir = scratch(&format!("cli_run_group_{}", jdk.name));
        let _guard = jvm_lock();
        let run = Running::start(&jdk, &dir, true);
        let jvm = run.ready();
        kill(-(run.hpm as i32), libc::SIGINT);
        let status = run.exit();
        run.assert_finished(&jvm, status, 130);
    }
}

/// SIGQUIT to hpm reaches the JVM (it prints its threads) and ends neither; SIGTERM then does.
#[test]
fn sigquit_reaches_the_jvm_and_ends_nothing() {
    let jdk = &jdks()[0];
    let dir = scratch("cli_run_quit");
    let _guard = jvm_lock();
    let run = Running::start(jdk, &dir, false);
    let jvm = run.ready();
    kill(run.hpm as i32, libc::SIGQUIT);
    run.line("Full thread dump");
    kill(run.hpm as i32, libc::SIGTERM);
    let status = run.exit();
    run.assert_finished(&jvm, status, 143);
}

/// Ctrl-C typed at a terminal: the kernel sends SIGINT to the terminal's foreground process
/// group, hpm and the JVM alike (`SI_KERNEL`). hpm runs in a session of its own on a
/// pseudo-terminal; the test types ^C on it. hpm passes nothing on (the JVM got it), waits for
/// the outputs and exits 130.
#[test]
fn ctrl_c_at_a_terminal_waits_for_the_outputs() {
    let jdk = &jdks()[0];
    let dir = scratch("cli_run_tty");
    let (mut master, mut slave) = (-1, -1);
    let none = std::ptr::null_mut();
    // SAFETY: openpty fills two descriptors; no name, default terminal settings and size.
    let rc = unsafe { libc::openpty(&mut master, &mut slave, none, std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: descriptors openpty just returned, owned by nothing else.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };

    let jfr = dir.join("run.jfr");
    let options = format!("interval=1ms,flush=1s,file={},file={}", jfr.display(), dir.join("run.html").display());
    let mut cmd = Command::new(hpm_bin());
    cmd.args(["run", &options, "--"]).arg(jdk.java()).arg("-cp").arg(workloads());
    cmd.arg("UntilSignalled").arg(dir.join("run.jfr.part"));
    cmd.stdin(slave.try_clone().unwrap()).stdout(slave.try_clone().unwrap()).stderr(slave.try_clone().unwrap());
    default_signals(&mut cmd);
    // SAFETY: async-signal-safe calls only, between fork and exec: a new session, whose
    // controlling terminal is the pseudo-terminal on stdin.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let _guard = jvm_lock();
    let mut child = cmd.spawn().expect("run hpm");
    drop(slave);
    let (tx, seen) = mpsc::channel();
    let reader = std::fs::File::from(master.try_clone().unwrap());
    let lines = tx.clone();
    std::thread::spawn(move || {
        // Ends with EIO once no one has the terminal open.
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if lines.send(Seen::Line(line)).is_err() {
                return;
            }
        }
    });
    let mut said = Vec::new();
    let jvm = loop {
        match seen.recv_timeout(WATCHDOG).expect("no `ready` line") {
            Seen::Line(l) if l.starts_with("ready ") => break Pinned::open(l[6..].trim().parse().expect("ready PID")),
            Seen::Line(l) => said.push(l),
            Seen::Exited(s) => panic!("hpm exited ({s}) before `ready`: {said:?}"),
        }
    };
    std::thread::spawn(move || {
        let status = child.wait().expect("wait for hpm");
        let _ = tx.send(Seen::Exited(status));
    });
    let mut typed = std::fs::File::from(master);
    std::io::Write::write_all(&mut typed, b"\x03").unwrap();
    let status = loop {
        match seen.recv_timeout(WATCHDOG).expect("hpm did not exit") {
            Seen::Exited(s) => break s,
            Seen::Line(l) => said.push(l),
        }
    };
    assert_finished(&format!("{}: ^C", jdk.name), &dir, &jvm, status, 130, &said);
    assert!(!said.iter().any(|l| l.contains("passed on to")), "a terminal's SIGINT reached the JVM already: {said:?}");
    assert!(said.iter().any(|l| l.contains("hpm: SIGINT also reached")), "{said:?}");
}

/// `kill -KILL <hpm>` cannot be passed on: the kernel sends the JVM SIGTERM as hpm dies
/// (`PR_SET_PDEATHSIG`), so it exits writing its outputs instead of serving on, orphaned.
#[test]
fn sigkill_to_hpm_still_ends_the_jvm_with_its_outputs() {
    let jdk = &jdks()[0];
    let dir = scratch("cli_run_kill");
    let _guard = jvm_lock();
    let run = Running::start(jdk, &dir, false);
    let jvm = run.ready();
    kill(run.hpm as i32, libc::SIGKILL);
    assert_eq!(run.exit().signal(), Some(libc::SIGKILL));
    assert!(jvm.exited_within_watchdog(), "{}: the JVM outlived hpm (orphaned)", run.what);
    let exists = |n: &str| dir.join(n).is_file();
    let files = (exists("run.jfr"), exists("run.html"), exists("run.jfr.part"));
    eprintln!("{}: after SIGKILL to hpm, (jfr, html, part) {files:?}", run.what);
    assert_eq!(files, (true, true, false), "{}: the JVM's outputs", run.what);
}
