//! HotSpot's attach protocol (Linux), spoken directly, so neither the target nor hpm needs
//! `jdk.attach`:
//! 1. the JVM listens on the UNIX socket `/tmp/.java_pid<PID>` once its attach listener runs;
//! 2. to start the listener: create `.attach_pid<PID>` in the JVM's working directory (or /tmp)
//!    and send it SIGQUIT; it checks for that file and opens the socket;
//! 3. a request is `1\0<command>\0<arg1>\0<arg2>\0<arg3>\0`; the answer is a result code line
//!    followed by the command's output.
//!
//! hpm attach often runs as root against another user's JVM, through directories that user (or
//! anyone, `/tmp`) can write. So:
//! - root first becomes the JVM's user entirely (supplementary groups, real, effective and saved
//!   ids): whatever a planted link makes hpm touch, it touches with that user's rights only;
//! - every path is resolved inside the JVM's own root: `/tmp` through `openat2(RESOLVE_IN_ROOT)`
//!   from `/proc/PID/root` (an absolute symlink in a container stays in the container), the
//!   working directory through the `/proc/PID/cwd` link itself; files are then named relative to
//!   those directories, never through a path that a link could redirect;
//! - the trigger file is created as the JDK's own client does, new and exclusive
//!   (`O_CREAT|O_EXCL|O_NOFOLLOW`): an existing file or link there is never followed or
//!   truncated, and only a trigger hpm created is removed;
//! - the socket must be what the JDK's client accepts (a socket owned by the JVM's effective
//!   user and group, no access for group or others) and, once connected and before anything is
//!   sent, be served by the JVM process itself (`SO_PEERCRED`): another process listening there
//!   receives nothing and its answer is never read;
//! - "a JVM" is a process that maps a file named `libjvm.so`, and the process checked is pinned
//!   (a pidfd; where the kernel or a seccomp filter gives none, its start time): a PID reused by
//!   another process is neither signalled nor talked to;
//! - the answer is bounded (1 MiB), and a request has one deadline for all of it (connect,
//!   write, every read);
//! - the JVM's answer is the peer's text: cmd_attach prints it with its control characters
//!   escaped, so it cannot drive the user's terminal.
//!
//! The PID inside the JVM's own PID namespace (`NSpid`) names its socket and trigger file, so a
//! JVM in a container works as well.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::sys::{self, Pidfd};

/// The longest answer read from the socket or the reply file.
pub const MAX_ANSWER: u64 = 1 << 20;
/// How long the JVM may take to open its socket after SIGQUIT.
const LISTENER_WAIT: Duration = Duration::from_secs(10);
/// How long a whole request may take, from the first connect to the answer's last byte
/// (Agent_OnAttach runs while the JVM answers).
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// A process that looks like a HotSpot JVM we may attach to.
pub struct Target {
    pub pid: u32,
    /// The PID inside the target's namespace (names its socket and trigger file).
    ns_pid: u32,
    /// The JVM's effective user and group.
    uid: u32,
    gid: u32,
    /// The JVM's /tmp, resolved inside its root.
    tmp: OwnedFd,
    /// The JVM's working directory (absent if it cannot be opened).
    cwd: Option<OwnedFd>,
    /// The process checked, pinned: see [`Pinned`].
    process: Pinned,
}

/// The process `find` checked, so that what is signalled or answers later is that process and
/// not one that was given its PID after it ended: a pidfd where the kernel has them (5.3) and no
/// seccomp filter refuses them, else the process's start time (`/proc/PID/stat`), compared
/// again just before each use.
struct Pinned {
    pidfd: Option<Pidfd>,
    start_time: u64,
}

fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

/// Whether a `/proc/PID/maps` text maps a file named `libjvm.so`: the last component of a
/// mapped path (a replaced library's ` (deleted)` mark aside), not any path containing it
/// (`/tmp/x/libjvm.so.bak` or a directory `libjvm.so/` named a non-JVM a JVM).
fn maps_libjvm(maps: &str) -> bool {
    maps.lines().any(|line| {
        // address perms offset dev inode, then the path after padding (it may hold spaces).
        let Some(path) = line.splitn(6, ' ').nth(5).map(str::trim_start) else { return false };
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        path.starts_with('/') && path.rsplit('/').next() == Some("libjvm.so")
    })
}

/// The start time of a process (clock ticks after boot: field 22 of `/proc/PID/stat`).
fn start_time(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold anything: count after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn read_start_time(pid: u32) -> Option<u64> {
    start_time(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// What a connect to the attach socket found.
enum Connect {
    Ready(UnixStream),
    /// No socket, or nobody listening on it (a stale one).
    Absent,
    /// The listener's queue is full: try again, without signalling the JVM again.
    Busy,
}

/// One deadline for a whole request: connect, write and every read get the time left of it,
/// so a peer that answers a byte at a time cannot hold hpm longer than [`ANSWER_WAIT`] in all.
struct Deadline {
    end: Instant,
    total: Duration,
}

impl Deadline {
    fn new(total: Duration) -> Deadline {
        Deadline { end: Instant::now() + total, total }
    }

    /// The time left, or the timeout error once none is.
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no complete answer within {:?}; nothing more was read", self.total),
            ));
        }
        Ok(left)
    }
}

/// The request's whole time: [`ANSWER_WAIT`], or for the tests a shorter one from
/// `HPM_TEST_ATTACH_DEADLINE_MS` (never a longer one).
fn answer_wait() -> Duration {
    let test = std::env::var("HPM_TEST_ATTACH_DEADLINE_MS").ok().and_then(|v| v.parse().ok());
    test.map(Duration::from_millis).map_or(ANSWER_WAIT, |t| t.min(ANSWER_WAIT))
}

/// The socket, read and written with the time left of the request's deadline before each call.
struct Timed<'a> {
    s: &'a UnixStream,
    deadline: &'a Deadline,
}

impl Timed<'_> {
    /// A wait cut by the socket's timeout is the deadline's error.
    fn timed(&self, r: std::io::Result<usize>) -> std::io::Result<usize> {
        match r {
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                self.deadline.left().and(Err(e))
            }
            r => r,
        }
    }
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.s.set_read_timeout(Some(self.deadline.left()?))?;
        let r = (&mut &*self.s).read(buf);
        self.timed(r)
    }
}

impl Write for Timed<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.s.set_write_timeout(Some(self.deadline.left()?))?;
        let r = (&mut &*self.s).write(buf);
        self.timed(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Target {
    /// Checks the process exists, is a HotSpot JVM, has attach enabled, and that we may talk
    /// to it (same user; root becomes the JVM's user), then opens its /tmp and working
    /// directory inside its own root. The process is pinned first, so everything read of it
    /// here is known to be of the process later signalled and talked to.
    pub fn find(pid: u32) -> Result<Target, String> {
        let gone = || format!("no process with PID {pid}");
        let pidfd = Pidfd::open(pid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => gone(),
            // A thread's id, not its process's: /proc would answer for it, the socket would not.
            Some(libc::EINVAL | libc::ENOENT) => format!("{pid} is not a process id (a thread's?); give the JVM's PID"),
            _ => format!("cannot hold the process {pid} (pidfd_open): {e}"),
        })?;
        let start_time = read_start_time(pid).ok_or_else(gone)?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|_| gone())?;
        let field = |name: &str| -> Vec<u32> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().filter_map(|x| x.parse().ok()).collect())
                .unwrap_or_default()
        };
        // Effective uid/gid: the second of "Uid:\treal effective saved fs".
        let uid = *field("Uid:").get(1).ok_or("cannot read the process's user")?;
        let gid = *field("Gid:").get(1).ok_or("cannot read the process's group")?;
        let ns_pid = field("NSpid:").last().copied().unwrap_or(pid);
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| {
            format!(
                "cannot read /proc/{pid}/maps ({e}): PID {pid} belongs to uid {uid}; run hpm as that user (or root)"
            )
        })?;
        if !maps_libjvm(&maps) {
            return Err(format!("PID {pid} is not a HotSpot JVM (no libjvm.so in its memory map)"));
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.split(|&b| b == 0).any(|a| a == b"-XX:+DisableAttachMechanism") {
            return Err(format!(
                "the JVM {pid} runs with -XX:+DisableAttachMechanism; restart it without, or load hpm with -agentpath"
            ));
        }
        let process = Pinned { pidfd, start_time };
        // What was read above is of the pinned process only if it has not ended meanwhile.
        process.check(pid)?;
        let me = sys::euid();
        if me != uid {
            if me != 0 {
                return Err(format!(
                    "the JVM {pid} runs as uid {uid} and you are uid {me}; HotSpot only accepts its own user: run `sudo -u#{uid} hpm attach ...` (or as root)"
                ));
            }
            sys::become_user(uid, gid)?;
        }
        let root = sys::open_dir(&format!("/proc/{pid}/root"))
            .map_err(|e| format!("cannot open the JVM {pid}'s root directory (/proc/{pid}/root): {e}"))?;
        let tmp = sys::open_in_root(&root, "tmp").map_err(|e| {
            format!("cannot open the JVM {pid}'s /tmp inside its own root: {e} (its attach socket lives there)")
        })?;
        let cwd = sys::open_dir(&format!("/proc/{pid}/cwd")).ok();
        // The directories too are the pinned process's (opened through its PID).
        process.check(pid)?;
        Ok(Target { pid, ns_pid, uid, gid, tmp, cwd, process })
    }

    fn socket_name(&self) -> String {
        format!(".java_pid{}", self.ns_pid)
    }

    /// The JVM's attach socket if it listens, checked as the JDK's client checks it and then
    /// for who serves it.
    fn try_connect(&self) -> Result<Connect, String> {
        let name = self.socket_name();
        let shown = format!("/tmp/{name} of the JVM {}", self.pid);
        let st = match sys::lstat_at(&self.tmp, &name) {
            Ok(st) => st,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Connect::Absent),
            Err(e) => return Err(format!("cannot inspect {shown}: {e}")),
        };
        if !is_kind(&st, libc::S_IFSOCK) {
            return Err(format!("{shown} is not a socket; nothing was sent (remove it if it is not yours)"));
        }
        if st.st_uid != self.uid || st.st_gid != self.gid || st.st_mode & 0o077 != 0 {
            return Err(format!(
                "{shown} is owned by uid {} gid {} with mode {:o}, not by the JVM's user {} group {} with mode 600: \
                 another user may listen there; nothing was sent",
                st.st_uid,
                st.st_gid,
                st.st_mode & 0o777,
                self.uid,
                self.gid
            ));
        }
        // Connect through the opened directory; the socket's own name was checked just above,
        // and who answers is checked below, before anything is sent.
        let path = format!("/proc/self/fd/{}/{name}", self.tmp.as_raw_fd());
        let stream = match sys::connect_unix(&path) {
            Ok(s) => s,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ECONNREFUSED) | Some(libc::ENOENT)) => {
                return Ok(Connect::Absent)
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(Connect::Busy),
            Err(e) => return Err(format!("cannot connect to {shown}: {e}")),
        };
        let peer = sys::peer_credentials(&stream).map_err(|e| format!("cannot tell who serves {shown}: {e}"))?;
        if peer.pid != self.pid as i32 || peer.uid != self.uid {
            return Err(format!(
                "{shown} is served by process {} (uid {}), not by the JVM: another process listens on its attach \
                 socket; nothing was sent",
                peer.pid, peer.uid
            ));
        }
        // The PID that serves it is the JVM's only while the JVM checked is still there.
        self.process.check(self.pid)?;
        Ok(Connect::Ready(stream))
    }

    /// Connects to the attach listener, starting it first if needed; waits for the listener up
    /// to [`LISTENER_WAIT`], and never past `deadline`.
    fn connect(&self, deadline: &Deadline) -> Result<UnixStream, String> {
        let until = deadline.end.min(Instant::now() + LISTENER_WAIT);
        let waited = until.saturating_duration_since(Instant::now());
        let mut trigger = None;
        let mut signalled = false;
        let result = loop {
            match self.try_connect() {
                Ok(Connect::Ready(s)) => break Ok(s),
                Err(e) => break Err(e),
                Ok(Connect::Absent) if !signalled => {
                    signalled = true;
                    match self.create_trigger() {
                        Ok(t) => trigger = t,
                        Err(e) => break Err(e),
                    }
                    if let Err(e) = self.process.quit(self.pid) {
                        break Err(e);
                    }
                }
                Ok(_) if Instant::now() > until => {
                    break Err(format!(
                        "the JVM {} did not open its attach socket /tmp/{} within {}s: it may run with \
                         -XX:+DisableAttachMechanism, with -Xrs (SIGQUIT ignored), or be stuck; see its stderr",
                        self.pid,
                        self.socket_name(),
                        waited.as_secs()
                    ))
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        if let Some(dir) = trigger {
            sys::unlink_at(dir, &self.trigger_name());
        }
        result
    }

    fn trigger_name(&self) -> String {
        format!(".attach_pid{}", self.ns_pid)
    }

    /// Creates `.attach_pid<NSPID>` in the JVM's working directory, else in its /tmp: new,
    /// exclusive, no link followed. Returns the directory hpm created it in (to remove it
    /// after), or `None` when one is there already (HotSpot decides whether it counts; hpm
    /// neither writes through it nor removes it).
    fn create_trigger(&self) -> Result<Option<&OwnedFd>, String> {
        let name = self.trigger_name();
        let mut last = None;
        for dir in self.cwd.iter().chain(std::iter::once(&self.tmp)) {
            match sys::create_new_at(dir, &name) {
                Ok(()) => return Ok(Some(dir)),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => return Ok(None),
                Err(e) => last = Some(e),
            }
        }
        Err(format!(
            "cannot create the attach trigger file in the JVM's working directory or /tmp: {}",
            last.map(|e| e.to_string()).unwrap_or_default()
        ))
    }

    /// Sends one request and returns (result code, output). The whole of it, from the first
    /// connect to the answer's end, has one deadline ([`ANSWER_WAIT`]).
    pub fn request(&self, command: &str, args: &[&str]) -> Result<(i32, String), String> {
        let deadline = Deadline::new(answer_wait());
        let s = self.connect(&deadline)?;
        let mut socket = Timed { s: &s, deadline: &deadline };
        let mut msg = Vec::new();
        msg.extend_from_slice(b"1\0");
        msg.extend_from_slice(command.as_bytes());
        msg.push(0);
        for i in 0..3 {
            msg.extend_from_slice(args.get(i).unwrap_or(&"").as_bytes());
            msg.push(0);
        }
        socket.write_all(&msg).map_err(|e| format!("writing to the attach socket of the JVM {}: {e}", self.pid))?;
        let out = read_bounded(&mut socket).map_err(|e| format!("reading the JVM {}'s answer: {e}", self.pid))?;
        let (code, rest) = out.split_once('\n').unwrap_or((out.as_str(), ""));
        let code = code.trim().parse().map_err(|_| format!("unexpected answer from the JVM: {out:?}"))?;
        Ok((code, rest.to_string()))
    }

    /// Reads and removes the file `name` in the JVM's /tmp that its agent wrote: a regular file
    /// (no link followed) owned by the JVM's user, at most [`MAX_ANSWER`] bytes. `None` if
    /// there is none.
    pub fn take_reply(&self, name: &str) -> Result<Option<String>, String> {
        let mut file = match sys::open_read_at(&self.tmp, name) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(format!("cannot open the agent's answer /tmp/{name} in the JVM: {e}")),
        };
        let meta = file.metadata().map_err(|e| e.to_string())?;
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || meta.uid() != self.uid {
            return Err(format!(
                "/tmp/{name} in the JVM is not the agent's answer (not a regular file of uid {})",
                self.uid
            ));
        }
        let text = read_bounded(&mut file).map_err(|e| format!("reading the agent's answer: {e}"))?;
        sys::unlink_at(&self.tmp, name);
        Ok(Some(text))
    }
}

impl Pinned {
    /// The pinned process is still there: not ended (a pidfd sees it until it is reaped, and
    /// its PID cannot be reused before), or without a pidfd, the PID's process has the same
    /// start time.
    fn check(&self, pid: u32) -> Result<(), String> {
        let there = match &self.pidfd {
            // EPERM: there, but another user's (the refusal that follows says what to do).
            Some(fd) => match fd.signal(0) {
                Ok(()) => true,
                Err(e) => e.raw_os_error() == Some(libc::EPERM),
            },
            None => read_start_time(pid) == Some(self.start_time),
        };
        if there {
            Ok(())
        } else {
            Err(format!("the process {pid} ended while hpm attached to it; nothing was sent"))
        }
    }

    /// SIGQUIT, which makes a HotSpot JVM check for the trigger file and start its attach
    /// listener (it prints a thread dump instead of dying).
    fn quit(&self, pid: u32) -> Result<(), String> {
        let sent = match &self.pidfd {
            Some(fd) => fd.signal(libc::SIGQUIT),
            // No pidfd (a kernel before 5.3): kill(2) names the process by its PID alone, which
            // the kernel gives to a new process once the checked one ended and was reaped;
            // SIGQUIT's default action would kill that one. The start time read again right
            // before leaves only the instant between this check and the kill.
            None => {
                self.check(pid)?;
                sys::kill(pid, libc::SIGQUIT)
            }
        };
        sent.map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => format!("the process {pid} ended while hpm attached to it; nothing was sent"),
            _ => format!("cannot signal PID {pid}: {e}"),
        })
    }
}

/// Reads to the end, refusing more than [`MAX_ANSWER`] bytes.
fn read_bounded(r: &mut impl Read) -> std::io::Result<String> {
    let mut buf = Vec::new();
    r.take(MAX_ANSWER + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_ANSWER {
        return Err(std::io::Error::other(format!("longer than {MAX_ANSWER} bytes; not read")));
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The agent's return code in the output of a successful `load` ("0" on JDK 17, "return code: 0"
/// on later JDKs: the last number of the output).
pub fn agent_return_code(output: &str) -> Option<i32> {
    output.lines().rev().find_map(|l| l.trim().rsplit(' ').next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn return_codes() {
        assert_eq!(super::agent_return_code("0\n"), Some(0));
        assert_eq!(super::agent_return_code("return code: -1\n"), Some(-1));
        assert_eq!(super::agent_return_code(""), None);
    }

    /// A JVM maps a file named libjvm.so; a path that merely contains the name is not one.
    #[test]
    fn a_jvm_maps_a_file_named_libjvm_so() {
        let line =
            |path: &str| format!("7f1c2a000000-7f1c2b000000 r-xp 00000000 08:01 1234                       {path}\n");
        for jvm in ["/usr/lib/jvm/java-17/lib/server/libjvm.so", "/opt/my jdk/lib/server/libjvm.so (deleted)"] {
            assert!(super::maps_libjvm(&(line("/usr/lib/libc.so.6") + &line(jvm))), "{jvm}");
        }
        for not in ["/tmp/x/libjvm.so.bak", "/tmp/libjvm.so/libother.so", "/tmp/notlibjvm.so", "[anon:libjvm.so]"] {
            assert!(!super::maps_libjvm(&(line("/usr/lib/libc.so.6") + &line(not))), "{not}");
        }
        assert!(!super::maps_libjvm("7f1c2a000000-7f1c2b000000 rw-p 00000000 00:00 0 \n"));
    }

    #[test]
    fn start_times_are_read_after_the_command_name() {
        let stat = "42 (a) b) 3 4) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(super::start_time(stat), Some(987654));
        assert_eq!(super::start_time("42 (x"), None);
        let me = std::process::id();
        assert!(super::read_start_time(me).is_some());
    }

    /// A pinned process that ended (and was reaped, so its PID is free for another) is neither
    /// signalled nor taken for there; nor, without a pidfd, is a PID whose start time differs.
    #[test]
    fn a_pinned_process_is_the_one_checked() {
        let mut child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
        let pid = child.id();
        let pinned =
            super::Pinned { pidfd: super::Pidfd::open(pid).unwrap(), start_time: super::read_start_time(pid).unwrap() };
        assert!(pinned.pidfd.is_some(), "this kernel has pidfd_open");
        pinned.check(pid).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let e = pinned.check(pid).unwrap_err();
        assert!(e.contains("ended while hpm attached"), "{e}");
        assert!(pinned.quit(pid).unwrap_err().contains("ended while hpm attached"));

        let me = std::process::id();
        let start = super::read_start_time(me).unwrap();
        super::Pinned { pidfd: None, start_time: start }.check(me).unwrap();
        let other = super::Pinned { pidfd: None, start_time: start + 1 };
        assert!(other.check(me).unwrap_err().contains("ended while hpm attached"));
        assert!(other.quit(me).is_err(), "a PID with another start time was signalled");
    }

    #[test]
    fn answers_are_bounded() {
        let long = vec![b'x'; super::MAX_ANSWER as usize + 1];
        assert!(super::read_bounded(&mut &long[..]).is_err());
        assert_eq!(super::read_bounded(&mut &long[1..]).unwrap().len(), super::MAX_ANSWER as usize);
    }
}
