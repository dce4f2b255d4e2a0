//! The raw system calls of `hpm attach` and `hpm run`, each wrapped once and checked:
//! descriptors come back owned, failures as `io::Error`. attach.rs and cmd_run.rs hold the
//! protocol and the policy; nothing else in the CLI calls libc for them.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// A file or directory name as a C string (names here are hpm's own, never NUL-bearing).
pub fn c(name: &str) -> CString {
    CString::new(name).expect("no NUL in a name hpm makes")
}

fn os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Owns a descriptor the kernel just returned, or the error behind a negative one.
fn owned(fd: RawFd) -> std::io::Result<OwnedFd> {
    if fd < 0 {
        return Err(os_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `open(path, O_PATH|O_DIRECTORY)`, following the final link (used on /proc magic links only).
pub fn open_dir(path: &str) -> std::io::Result<OwnedFd> {
    let p = c(path);
    // SAFETY: `p` is a valid C string; the flags open no file for I/O.
    owned(unsafe { libc::open(p.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) })
}

/// Opens directory `name` below `root` as if `root` were `/`: `..` and absolute symlinks stay
/// below it (openat2 RESOLVE_IN_ROOT, Linux 5.6). Without openat2, a symlink is refused.
pub fn open_in_root(root: &OwnedFd, name: &str) -> std::io::Result<OwnedFd> {
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
    owned(fd)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub fn lstat_at(dir: &OwnedFd, name: &str) -> std::io::Result<libc::stat> {
    let p = c(name);
    // SAFETY: stat is plain data, filled by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid directory fd, C string and stat buffer.
    if unsafe { libc::fstatat(dir.as_raw_fd(), p.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return Err(os_error());
    }
    Ok(st)
}

/// Removes `name` in `dir` (a file hpm created); a failure leaves it, which is all there is to do.
pub fn unlink_at(dir: &OwnedFd, name: &str) {
    let p = c(name);
    // SAFETY: valid directory fd and C string.
    unsafe { libc::unlinkat(dir.as_raw_fd(), p.as_ptr(), 0) };
}

/// Creates the empty file `name` in `dir`, new and exclusive, no link followed, mode 600.
pub fn create_new_at(dir: &OwnedFd, name: &str) -> std::io::Result<()> {
    let p = c(name);
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: valid directory fd and C string; O_EXCL|O_NOFOLLOW: a new file or nothing.
    owned(unsafe { libc::openat(dir.as_raw_fd(), p.as_ptr(), flags, 0o600) }).map(drop)
}

/// Opens `name` in `dir` for reading: no link followed, and no wait on a FIFO.
pub fn open_read_at(dir: &OwnedFd, name: &str) -> std::io::Result<File> {
    let p = c(name);
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: valid directory fd and C string.
    owned(unsafe { libc::openat(dir.as_raw_fd(), p.as_ptr(), flags) }).map(File::from)
}

/// Connects to the UNIX socket at `path` without waiting: a listener whose queue is full is
/// `WouldBlock` (try again later), as a blocking connect would have waited without a bound.
pub fn connect_unix(path: &str) -> std::io::Result<UnixStream> {
    let bytes = path.as_bytes();
    // SAFETY: sockaddr_un is plain data; zeroed is a valid empty address.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "socket path too long"));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, &s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = s as libc::c_char;
    }
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: plain socket creation.
    let fd = owned(unsafe { libc::socket(libc::AF_UNIX, kind, 0) })?;
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    // SAFETY: `addr` is a valid sockaddr_un of at least `len` bytes (NUL-terminated path).
    let rc = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            &addr as *const libc::sockaddr_un as *const libc::sockaddr,
            len as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(os_error());
    }
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// The credentials of the process that serves a connected UNIX socket (`SO_PEERCRED`).
pub fn peer_credentials(s: &UnixStream) -> std::io::Result<libc::ucred> {
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

pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Becomes user `uid`, group `gid` entirely and for good (root attaching to another user's JVM).
pub fn become_user(uid: u32, gid: u32) -> Result<(), String> {
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

/// `pid` as the kernel takes it: positive (0 and negative numbers name process groups).
fn positive_pid(pid: u32) -> std::io::Result<libc::pid_t> {
    libc::pid_t::try_from(pid).ok().filter(|&p| p > 0).ok_or_else(|| std::io::Error::from_raw_os_error(libc::ESRCH))
}

/// A process pinned by a pidfd (Linux 5.3): a signal sent through it reaches that process or
/// fails with ESRCH once it is gone, never another process that was given its PID since.
pub struct Pidfd(OwnedFd);

impl Pidfd {
    /// `pidfd_open(pid)`; `Ok(None)` where there is none: a kernel without it (ENOSYS), or a
    /// seccomp filter that refuses it (EPERM: pidfd_open itself checks no permission, but the
    /// default profiles of container runtimes older than the call answer every call they do not
    /// know with EPERM, Docker's before 20.10 among them).
    pub fn open(pid: u32) -> std::io::Result<Option<Pidfd>> {
        let pid = positive_pid(pid)?;
        // SAFETY: pidfd_open takes a PID and flags (none) and returns a new descriptor.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
        match owned(fd) {
            Ok(fd) => Ok(Some(Pidfd(fd))),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `pidfd_send_signal`; signal 0 checks the process is still there (not yet reaped).
    pub fn signal(&self, sig: i32) -> std::io::Result<()> {
        // SAFETY: a pidfd this value owns, a signal number, no siginfo, no flags.
        let rc = unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, self.0.as_raw_fd(), sig, std::ptr::null::<libc::siginfo_t>(), 0)
        };
        if rc != 0 {
            return Err(os_error());
        }
        Ok(())
    }
}

/// `kill(pid, sig)`, for kernels without pidfds (the caller re-checks who has the PID first).
pub fn kill(pid: u32, sig: i32) -> std::io::Result<()> {
    let pid = positive_pid(pid)?;
    // SAFETY: kill with a positive PID (never 0 or -1: not a group) and a signal number.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(os_error());
    }
    Ok(())
}

/// Signals held back from their default action in this thread, to be taken one at a time with
/// [`HeldSignals::next`] (`hpm run` passes them on to the JVM). A child started afterwards
/// does not inherit the mask: std's `Command` empties it in the child before exec.
pub struct HeldSignals {
    set: libc::sigset_t,
}

/// One signal taken: its number, and whether the kernel sent it (`SI_KERNEL`: a terminal's
/// Ctrl-C or Ctrl-\\, which reached the terminal's whole foreground process group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    pub signal: i32,
    pub from_kernel: bool,
}

impl HeldSignals {
    /// Blocks `signals` in the calling thread (hpm's only thread when `hpm run` calls it).
    pub fn hold(signals: &[i32]) -> std::io::Result<HeldSignals> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it before any other use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t; the signal numbers are libc's constants.
        unsafe {
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
        }
        // SAFETY: a valid set, no old mask wanted.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(HeldSignals { set })
    }

    /// Waits for the next of the held signals (`sigwaitinfo`; an interruption is waited through).
    pub fn next(&self) -> std::io::Result<Taken> {
        loop {
            // SAFETY: siginfo_t is plain data, filled by the kernel.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: a valid set of signals blocked in this thread and a siginfo_t to fill.
            let signal = unsafe { libc::sigwaitinfo(&self.set, &mut info) };
            if signal > 0 {
                return Ok(Taken { signal, from_kernel: info.si_code == libc::SI_KERNEL });
            }
            let e = os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

/// For a child between fork and exec (async-signal-safe): the kernel sends it `signal` when
/// its parent, process `parent`, ends (`PR_SET_PDEATHSIG`); if `parent` has already ended, it
/// sends it itself now.
pub fn end_with_parent(parent: libc::pid_t, signal: i32) -> std::io::Result<()> {
    // SAFETY: prctl with an option and a signal number; no pointers.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(os_error());
    }
    // SAFETY: getppid cannot fail; raise with a signal number.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: as above.
        unsafe { libc::raise(signal) };
    }
    Ok(())
}

/// This process's id.
pub fn pid() -> libc::pid_t {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

/// The name of a signal, for messages (`SIGTERM`), or its number.
pub fn signal_name(signal: i32) -> String {
    let known = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGTERM, "SIGTERM"),
    ];
    known.iter().find(|(n, _)| *n == signal).map_or_else(|| format!("signal {signal}"), |(_, name)| name.to_string())
}
