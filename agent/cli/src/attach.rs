//! HotSpot's attach protocol (Linux), spoken directly, so neither the target nor hpm needs
//! `jdk.attach`:
//! 1. the JVM listens on the UNIX socket `/tmp/.java_pid<PID>` once its attach listener runs;
//! 2. to start the listener: create `.attach_pid<PID>` in the JVM's working directory (or /tmp)
//!    and send it SIGQUIT; it checks for that file and opens the socket;
//! 3. a request is `1\0<command>\0<arg1>\0<arg2>\0<arg3>\0`; the answer is a result code line
//!    followed by the command's output.
//!
//! hpm attach often runs as root against another user's JVM, through directories that user (or
//! anyone, `/tmp`) can write. So (issue 11, items 2-4):
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
//! - the answer is bounded (1 MiB) and every wait has a deadline.
//!
//! The PID inside the JVM's own PID namespace (`NSpid`) names its socket and trigger file, so a
//! JVM in a container works as well.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// The longest answer read from the socket or the reply file.
pub const MAX_ANSWER: u64 = 1 << 20;
/// How long the JVM may take to open its socket after SIGQUIT.
const LISTENER_WAIT: Duration = Duration::from_secs(10);
/// How long a request may take (Agent_OnAttach runs while the JVM answers).
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
}

/// A file or directory name as a C string (names here are hpm's own, never NUL-bearing).
fn c(name: &str) -> CString {
    CString::new(name).expect("no NUL in a name hpm makes")
}

fn os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// `open(path, O_PATH|O_DIRECTORY)`, following the final link (used on /proc magic links only).
fn open_dir(path: &str) -> std::io::Result<OwnedFd> {
    let p = c(path);
    // SAFETY: `p` is a valid C string; the flags open no file for I/O.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens directory `name` below `root` as if `root` were `/`: `..` and absolute symlinks stay
/// below it (openat2 RESOLVE_IN_ROOT, Linux 5.6). Without openat2, a symlink is refused.
fn open_in_root(root: &OwnedFd, name: &str) -> std::io::Result<OwnedFd> {
    let p = c(name);
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: open_how is plain data; zeroed is its documented default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: openat2 with a valid directory fd, C string, and `how` of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            p.as_ptr(),
            &mut how as *mut libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    } as RawFd;
    let fd = if fd < 0 && os_error().raw_os_error() == Some(libc::ENOSYS) {
        // SAFETY: as above, with openat; O_NOFOLLOW refuses a symlinked directory.
        unsafe { libc::openat(root.as_raw_fd(), p.as_ptr(), flags | libc::O_NOFOLLOW) }
    } else {
        fd
    };
    if fd < 0 {
        return Err(os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
fn lstat_at(dir: &OwnedFd, name: &str) -> std::io::Result<libc::stat> {
    let p = c(name);
    // SAFETY: stat is plain data, filled by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid directory fd, C string and stat buffer.
    if unsafe { libc::fstatat(dir.as_raw_fd(), p.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return Err(os_error());
    }
    Ok(st)
}

fn unlink_at(dir: &OwnedFd, name: &str) {
    let p = c(name);
    // SAFETY: valid directory fd and C string; removing a name hpm created.
    unsafe { libc::unlinkat(dir.as_raw_fd(), p.as_ptr(), 0) };
}

fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

/// Becomes user `uid`, group `gid` entirely and for good (root attaching to another user's JVM).
fn become_user(uid: u32, gid: u32) -> Result<(), String> {
    let groups = [gid];
    // SAFETY: plain syscalls changing this process's credentials, groups first while still root;
    // `groups` outlives the call.
    let ok = unsafe {
        libc::setgroups(1, groups.as_ptr()) == 0
            && libc::setresgid(gid, gid, gid) == 0
            && libc::setresuid(uid, uid, uid) == 0
    };
    if !ok {
        return Err(format!("cannot switch to the JVM's user {uid} (group {gid}): {}", os_error()));
    }
    // Root must be gone: a failed switch that left any id at 0 is refused, not used.
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: getresuid writes the three ids.
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    if (r, e, s) != (uid, uid, uid) {
        return Err(format!("cannot switch to the JVM's user {uid}: ids are still {r}/{e}/{s}"));
    }
    Ok(())
}

impl Target {
    /// Checks the process exists, is a HotSpot JVM, has attach enabled, and that we may talk
    /// to it (same user; root becomes the JVM's user), then opens its /tmp and working
    /// directory inside its own root.
    pub fn find(pid: u32) -> Result<Target, String> {
        let status =
            std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|_| format!("no process with PID {pid}"))?;
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
        if !maps.contains("/libjvm.so") {
            return Err(format!("PID {pid} is not a HotSpot JVM (no libjvm.so in its memory map)"));
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.split(|&b| b == 0).any(|a| a == b"-XX:+DisableAttachMechanism") {
            return Err(format!(
                "the JVM {pid} runs with -XX:+DisableAttachMechanism; restart it without, or load hpm with -agentpath"
            ));
        }
        let me = current_euid();
        if me != uid {
            if me != 0 {
                return Err(format!(
                    "the JVM {pid} runs as uid {uid} and you are uid {me}; HotSpot only accepts its own user: run `sudo -u#{uid} hpm attach ...` (or as root)"
                ));
            }
            become_user(uid, gid)?;
        }
        let root = open_dir(&format!("/proc/{pid}/root"))
            .map_err(|e| format!("cannot open the JVM {pid}'s root directory (/proc/{pid}/root): {e}"))?;
        let tmp = open_in_root(&root, "tmp").map_err(|e| {
            format!("cannot open the JVM {pid}'s /tmp inside its own root: {e} (its attach socket lives there)")
        })?;
        let cwd = open_dir(&format!("/proc/{pid}/cwd")).ok();
        Ok(Target { pid, ns_pid, uid, gid, tmp, cwd })
    }

    fn socket_name(&self) -> String {
        format!(".java_pid{}", self.ns_pid)
    }

    /// The JVM's attach socket if it listens, checked as the JDK's client checks it and then
    /// for who serves it. `Ok(None)`: no socket, or nobody listening (a stale one).
    fn try_connect(&self) -> Result<Option<UnixStream>, String> {
        let name = self.socket_name();
        let shown = format!("/tmp/{name} of the JVM {}", self.pid);
        let st = match lstat_at(&self.tmp, &name) {
            Ok(st) => st,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
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
        let stream = match UnixStream::connect(&path) {
            Ok(s) => s,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ECONNREFUSED) | Some(libc::ENOENT)) => return Ok(None),
            Err(e) => return Err(format!("cannot connect to {shown}: {e}")),
        };
        let peer = peer_credentials(&stream).map_err(|e| format!("cannot tell who serves {shown}: {e}"))?;
        if peer.pid != self.pid as i32 || peer.uid != self.uid {
            return Err(format!(
                "{shown} is served by process {} (uid {}), not by the JVM: another process listens on its attach \
                 socket; nothing was sent",
                peer.pid, peer.uid
            ));
        }
        Ok(Some(stream))
    }

    /// Connects to the attach listener, starting it first if needed (waits up to `wait`).
    pub fn connect(&self, wait: Duration) -> Result<UnixStream, String> {
        if let Some(s) = self.try_connect()? {
            return Ok(s);
        }
        let trigger = self.create_trigger()?;
        // SAFETY: kill with a valid signal number; the target was checked to be a JVM, which
        // handles SIGQUIT (thread dump + attach check) instead of dying.
        let rc = unsafe { libc::kill(self.pid as i32, libc::SIGQUIT) };
        let result = if rc != 0 {
            Err(format!("cannot signal PID {}: {}", self.pid, os_error()))
        } else {
            let deadline = Instant::now() + wait;
            loop {
                match self.try_connect() {
                    Ok(Some(s)) => break Ok(s),
                    Err(e) => break Err(e),
                    Ok(None) if Instant::now() > deadline => {
                        break Err(format!(
                            "the JVM {} did not open its attach socket /tmp/{} within {}s: it may run with \
                             -XX:+DisableAttachMechanism, with -Xrs (SIGQUIT ignored), or be stuck; see its stderr",
                            self.pid,
                            self.socket_name(),
                            wait.as_secs()
                        ))
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        };
        if let Some(dir) = trigger {
            unlink_at(dir, &self.trigger_name());
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
        let name = c(&self.trigger_name());
        let mut last = None;
        for dir in self.cwd.iter().chain(std::iter::once(&self.tmp)) {
            // SAFETY: valid directory fd and C string; O_EXCL|O_NOFOLLOW: a new file or nothing.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    0o600,
                )
            };
            if fd >= 0 {
                // SAFETY: `fd` was just opened; closing it is all that is left to do.
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
                return Ok(Some(dir));
            }
            let e = os_error();
            if e.raw_os_error() == Some(libc::EEXIST) {
                return Ok(None);
            }
            last = Some(e);
        }
        Err(format!(
            "cannot create the attach trigger file in the JVM's working directory or /tmp: {}",
            last.map(|e| e.to_string()).unwrap_or_default()
        ))
    }

    /// Sends one request and returns (result code, output).
    pub fn request(&self, command: &str, args: &[&str]) -> Result<(i32, String), String> {
        let mut s = self.connect(LISTENER_WAIT)?;
        s.set_read_timeout(Some(ANSWER_WAIT))
            .and_then(|_| s.set_write_timeout(Some(ANSWER_WAIT)))
            .map_err(|e| e.to_string())?;
        let mut msg = Vec::new();
        msg.extend_from_slice(b"1\0");
        msg.extend_from_slice(command.as_bytes());
        msg.push(0);
        for i in 0..3 {
            msg.extend_from_slice(args.get(i).unwrap_or(&"").as_bytes());
            msg.push(0);
        }
        s.write_all(&msg).map_err(|e| format!("writing to the attach socket: {e}"))?;
        let out = read_bounded(&mut s).map_err(|e| format!("reading the JVM's answer: {e}"))?;
        let (code, rest) = out.split_once('\n').unwrap_or((out.as_str(), ""));
        let code = code.trim().parse().map_err(|_| format!("unexpected answer from the JVM: {out:?}"))?;
        Ok((code, rest.to_string()))
    }

    /// Reads and removes the file `name` in the JVM's /tmp that its agent wrote: a regular file
    /// (no link followed) owned by the JVM's user, at most [`MAX_ANSWER`] bytes. `None` if
    /// there is none.
    pub fn take_reply(&self, name: &str) -> Result<Option<String>, String> {
        let p = c(name);
        // SAFETY: valid directory fd and C string; O_NOFOLLOW|O_NONBLOCK: no link, no FIFO wait.
        let fd = unsafe {
            libc::openat(
                self.tmp.as_raw_fd(),
                p.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = os_error();
            return if e.raw_os_error() == Some(libc::ENOENT) {
                Ok(None)
            } else {
                Err(format!("cannot open the agent's answer /tmp/{name} in the JVM: {e}"))
            };
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let meta = file.metadata().map_err(|e| e.to_string())?;
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || meta.uid() != self.uid {
            return Err(format!(
                "/tmp/{name} in the JVM is not the agent's answer (not a regular file of uid {})",
                self.uid
            ));
        }
        let text = read_bounded(&mut file).map_err(|e| format!("reading the agent's answer: {e}"))?;
        unlink_at(&self.tmp, name);
        Ok(Some(text))
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

fn peer_credentials(s: &UnixStream) -> std::io::Result<libc::ucred> {
    let mut cred = libc::ucred { pid: 0, uid: u32::MAX, gid: u32::MAX };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt SO_PEERCRED on a connected UNIX socket fills a ucred of `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(os_error());
    }
    Ok(cred)
}

fn current_euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
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

    #[test]
    fn answers_are_bounded() {
        let long = vec![b'x'; super::MAX_ANSWER as usize + 1];
        assert!(super::read_bounded(&mut &long[..]).is_err());
        assert_eq!(super::read_bounded(&mut &long[1..]).unwrap().len(), super::MAX_ANSWER as usize);
    }
}
