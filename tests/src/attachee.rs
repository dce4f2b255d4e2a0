//! Running the `hpm` command: against a JVM to attach to (tests/workloads/Attachee.java,
//! driven by lines on its stdin), and its argument errors.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

use crate::{hpm_bin, workloads, Jdk};

pub struct Attachee {
    pub child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pub pid: u32,
}

impl Attachee {
    /// `java Attachee 2` on `jdk`, in the current directory.
    pub fn start(jdk: &Jdk) -> Attachee {
        Self::spawn(Self::command(jdk))
    }

    /// The command line of [`Attachee::start`], to adjust (working directory, wrapper) first.
    pub fn command(jdk: &Jdk) -> Command {
        let mut c = Command::new(jdk.java());
        c.args(["-XX:CompileCommand=quiet", "-cp"]).arg(workloads()).args(["Attachee", "2"]);
        c
    }

    /// Runs `cmd` (which must end up running Attachee) and waits for its "ready PID" line.
    pub fn spawn(mut cmd: Command) -> Attachee {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("run java");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let pid =
            line.trim().strip_prefix("ready ").unwrap_or_else(|| panic!("Attachee said {line:?}")).parse().unwrap();
        Attachee { child, stdin, stdout, pid }
    }

    /// Sends a line and returns the answer line.
    pub fn say(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        answer.trim().to_string()
    }

    /// Tells it to exit and asserts it did, normally.
    pub fn finish(mut self, what: &str) {
        assert!(self.say("exit").starts_with("done"), "{what}: no goodbye");
        assert!(self.child.wait().unwrap().success(), "{what}: the attached JVM failed");
    }
}

impl Drop for Attachee {
    fn drop(&mut self) {
        // A failed assertion must not leave the JVM running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `hpm ARGS`.
pub fn hpm(args: &[&str]) -> Output {
    Command::new(hpm_bin()).args(args).output().expect("run hpm")
}

/// Runs `hpm attach PID COMMAND`, asserts it succeeded and returns its stdout.
pub fn attach_ok(pid: u32, command: &str) -> String {
    let o = hpm(&["attach", &pid.to_string(), command]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "hpm attach {pid} {command} failed: {}\nstdout: {out}\nstderr: {err}", o.status);
    out.into_owned()
}

/// The argument parser's refusal (clap) of `hpm ARGS`: status 2, `error: …` naming the
/// argument, and where to find more. Returns stderr.
pub fn usage_error(args: &[&str]) -> String {
    let out = hpm(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "hpm {args:?} should fail with status 2; stderr: {err}");
    assert!(err.starts_with("error: ") && err.contains("--help"), "{err}");
    err
}
