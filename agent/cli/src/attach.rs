//! HotSpot's attach protocol (Linux), spoken directly, so neither the target nor hpm needs
//! `jdk.attach`:
//! 1. the JVM listens on the UNIX socket `/tmp/.java_pid<PID>` once its attach listener runs;
//! 2. to start the listener: create `.attach_pid<PID>` in the JVM's working directory (or /tmp)
//!    and send it SIGQUIT; it checks for that file and opens the socket;
//! 3. a request is `1\0<command>\0<arg1>\0<arg2>\0<arg3>\0`; the answer is a result code line
//!    followed by the command's output.
//!
//! Paths are taken through `/proc/PID/root` and `/proc/PID/cwd`, and the PID inside the JVM's
//! own PID namespace (`NSpid`), so a JVM in a container works as well.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A process that looks like a HotSpot JVM we may attach to.
pub struct Target {
    pub pid: u32,
    /// The PID inside the target's namespace (names its socket and trigger file).
    ns_pid: u32,
}

impl Target {
    /// Checks the process exists, is a HotSpot JVM, has attach enabled, and that we may talk
    /// to it (same user; root switches to the JVM's user as HotSpot requires).
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
            // SAFETY: plain syscalls changing this process's effective ids (group first, while
            // still root); the JVM checks the peer's effective ids.
            let ok = unsafe { libc::setegid(gid) == 0 && libc::seteuid(uid) == 0 };
            if !ok {
                return Err(format!("cannot switch to the JVM's user {uid}: {}", std::io::Error::last_os_error()));
            }
        }
        Ok(Target { pid, ns_pid })
    }

    /// The target's /tmp, seen from here.
    pub fn tmp_dir(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root/tmp", self.pid))
    }

    fn socket_path(&self) -> PathBuf {
        self.tmp_dir().join(format!(".java_pid{}", self.ns_pid))
    }

    /// Connects to the attach listener, starting it first if needed (waits up to `wait`).
    pub fn connect(&self, wait: Duration) -> Result<UnixStream, String> {
        let socket = self.socket_path();
        if let Ok(s) = UnixStream::connect(&socket) {
            return Ok(s);
        }
        let trigger = self.create_trigger()?;
        // SAFETY: kill with a valid signal number; the target was checked to be a JVM, which
        // handles SIGQUIT (thread dump + attach check) instead of dying.
        let rc = unsafe { libc::kill(self.pid as i32, libc::SIGQUIT) };
        if rc != 0 {
            let _ = std::fs::remove_file(&trigger);
            return Err(format!("cannot signal PID {}: {}", self.pid, std::io::Error::last_os_error()));
        }
        let deadline = Instant::now() + wait;
        let result = loop {
            if let Ok(s) = UnixStream::connect(&socket) {
                break Ok(s);
            }
            if Instant::now() > deadline {
                break Err(format!(
                    "the JVM {} did not open its attach socket {} within {}s: it may run with -XX:+DisableAttachMechanism, \
                     with -Xrs (SIGQUIT ignored), or be stuck; see its stderr",
                    self.pid,
                    socket.display(),
                    wait.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = std::fs::remove_file(&trigger);
        result
    }

    /// `.attach_pid<NSPID>` in the JVM's working directory, else in its /tmp.
    fn create_trigger(&self) -> Result<PathBuf, String> {
        let name = format!(".attach_pid{}", self.ns_pid);
        let cwd = PathBuf::from(format!("/proc/{}/cwd", self.pid)).join(&name);
        let tmp = self.tmp_dir().join(&name);
        let mut last = None;
        for p in [cwd, tmp] {
            match std::fs::File::create(&p) {
                // Owned by the JVM's user (it checks): we are that user, or root switched to it.
                Ok(_) => return Ok(p),
                Err(e) => last = Some(e),
            }
        }
        Err(format!(
            "cannot create the attach trigger file in the JVM's working directory or /tmp: {}",
            last.map(|e| e.to_string()).unwrap_or_default()
        ))
    }

    /// Sends one request and returns (result code, output).
    pub fn request(&self, command: &str, args: &[&str]) -> Result<(i32, String), String> {
        let mut s = self.connect(Duration::from_secs(10))?;
        let mut msg = Vec::new();
        msg.extend_from_slice(b"1\0");
        msg.extend_from_slice(command.as_bytes());
        msg.push(0);
        for i in 0..3 {
            msg.extend_from_slice(args.get(i).unwrap_or(&"").as_bytes());
            msg.push(0);
        }
        s.write_all(&msg).map_err(|e| format!("writing to the attach socket: {e}"))?;
        let mut out = String::new();
        s.read_to_string(&mut out).map_err(|e| format!("reading the JVM's answer: {e}"))?;
        let (code, rest) = out.split_once('\n').unwrap_or((out.as_str(), ""));
        let code = code.trim().parse().map_err(|_| format!("unexpected answer from the JVM: {out:?}"))?;
        Ok((code, rest.to_string()))
    }
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
}
