//! Running a command with its memory and time measured and bounded: an address-space limit (so
//! a reader that multiplies its input fails its allocation instead of taking the machine), a
//! kill after a deadline (so a hang ends), and its CPU time and peak resident memory as the
//! kernel counts them (`wait4`). For the readers' benchmark and, through the `peak` binary,
//! the memory tests.
//!
//! The kernel counts in a process's peak what the process it was forked from held before the
//! `exec`; a test process holding its inputs would hide the peak of a smaller command. The
//! tests therefore measure through `peak`, a small process of its own.

use std::process::Command;
use std::time::{Duration, Instant};

/// How a command ended and what it took.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    /// Exit status; None when a signal ended it (an abort at the address-space limit, or the
    /// kill at the deadline).
    pub code: Option<i32>,
    /// Killed at the deadline.
    pub hung: bool,
    pub wall: Duration,
    /// User + system CPU time.
    pub cpu: Duration,
    /// Peak resident memory, KiB.
    pub peak_kib: u64,
}

/// Runs `cmd` with at most `address_space` bytes of address space, killed if it runs longer
/// than `deadline`.
#[allow(clippy::zombie_processes)] // reaped by wait4 below
pub fn run_measured(mut cmd: Command, address_space: u64, deadline: Duration) -> Measured {
    // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            let r = libc::rlimit { rlim_cur: address_space, rlim_max: address_space };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn().expect("run the command");
    let pid = child.id() as libc::pid_t;
    let (mut status, mut hung) = (0, false);
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our child, reaped only here; status and usage are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if !hung && start.elapsed() > deadline {
            // SAFETY: kill on our own child's pid, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            hung = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Measured {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        hung,
        wall: start.elapsed(),
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        peak_kib: usage.ru_maxrss as u64,
    }
}
