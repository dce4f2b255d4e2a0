//! `hpm attach` against a planted trigger link, a socket someone else serves, and a JVM whose
//! /tmp is an absolute link inside its own root. Each JVM is fresh, so its
//! attach listener is not running yet and hpm has to go through the trigger and the socket.
//! Then against a process that serves its own attach socket without being a JVM
//! (tests/src/bin/fake_jvm.rs): what it maps, what it answers and how slowly.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use hpm_tests::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A `.attach_pid<PID>` symlink planted in the JVM's working directory, pointing at a file only
/// its owner may read: hpm never writes through it (it used to truncate the file), leaves the
/// link alone, and the attach still works (HotSpot accepts the trigger it finds).
#[test]
fn a_planted_trigger_link_is_neither_followed_nor_truncated() {
    let jdk = &jdks()[0];
    let dir = scratch("attach-trigger-link");
    let victim = dir.join("victim");
    std::fs::write(&victim, "only the owner reads this\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cmd = Attachee::command(jdk);
    cmd.current_dir(&dir);
    let jvm = Attachee::spawn(cmd);
    let link = dir.join(format!(".attach_pid{}", jvm.pid));
    std::os::unix::fs::symlink(&victim, &link).unwrap();

    let o = hpm(&["attach", &jvm.pid.to_string(), "status"]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "only the owner reads this\n", "the victim was written");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink(), "hpm removed a link it did not create");
    assert!(o.status.success(), "attach through the JVM's own trigger check failed: {}", stderr(&o));
    jvm.finish("trigger link");
}

/// Something else listens on `/tmp/.java_pid<PID>` before the JVM does: hpm sends it nothing and
/// fails with one line naming the problem, instead of printing its forged answer as success.
#[test]
fn a_socket_someone_else_serves_gets_nothing() {
    let jdk = &jdks()[0];
    // 0600: the mode the JVM's own socket has, so only who serves it gives the fake away;
    // 0666: refused before connecting, as the JDK's client refuses it.
    for (mode, expected) in [(0o600, "not by the JVM"), (0o666, "with mode 666")] {
        let jvm = Attachee::start(jdk);
        let path = format!("/tmp/.java_pid{}", jvm.pid);
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        // The fake server records what its first connection sends and answers like a JVM.
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            // A request is five NUL-terminated fields; hpm's own closes the connection early.
            while got.iter().filter(|&&b| b == 0).count() < 5 {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            if !got.is_empty() {
                let _ = s.write_all(b"0\nforged: the agent answers yes\n");
            }
            got
        });
        let o = hpm(&["attach", &jvm.pid.to_string(), "status"]);
        // hpm has exited: if it never connected, this is the server's first connection.
        drop(std::os::unix::net::UnixStream::connect(&path));
        let got = server.join().unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(got.is_empty(), "mode {mode:o}: the fake socket received {:?}", String::from_utf8_lossy(&got));
        assert!(!o.status.success(), "mode {mode:o}: the forged answer was taken: {o:?}");
        assert!(stderr(&o).contains(expected), "mode {mode:o}: unclear message: {}", stderr(&o));
        assert!(stderr(&o).contains("nothing was sent"), "mode {mode:o}: {}", stderr(&o));
        jvm.finish("fake socket");
    }
}

/// A JVM chrooted (in a mount namespace the test makes) into a root whose `/tmp` is an absolute
/// symlink, `/tmp -> /jtmp`, as container images have: hpm finds the socket and the agent's
/// answer where the JVM put them, inside its root. Through `/proc/PID/root/tmp` the link used to
/// resolve against hpm's own root (a host path), so the attach timed out or read host files.
#[test]
fn a_jvm_whose_tmp_is_an_absolute_link_in_its_own_root_is_attached_there() {
    if !is_root() || !Path::new("/usr/bin/unshare").exists() || !Path::new("/usr/sbin/chroot").exists() {
        println!("skipped: needs root, unshare and chroot to build the JVM's root");
        return;
    }
    let jdk = &jdks()[0];
    let dir = scratch("attach-chroot");
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("jtmp")).unwrap();
    std::fs::set_permissions(root.join("jtmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::os::unix::fs::symlink("/jtmp", root.join("tmp")).unwrap();
    // The host's own directories, bound in; merged-/usr links copied as links. The agent and
    // the workloads are bound at their host paths, which hpm passes to the JVM.
    let mut script = String::from("set -e\n");
    for d in ["bin", "lib", "lib64", "sbin"] {
        let host = Path::new("/").join(d);
        if let Ok(t) = std::fs::read_link(&host) {
            std::os::unix::fs::symlink(t, root.join(d)).unwrap();
        } else if host.is_dir() {
            script += &format!("mkdir -p '{0}/{d}' && mount --bind /{d} '{0}/{d}'\n", root.display());
        }
    }
    let agent_dir = agent_path().parent().unwrap().to_path_buf();
    for d in [Path::new("/usr"), Path::new("/etc"), Path::new("/dev"), Path::new("/proc"), &agent_dir, workloads()] {
        // Where the JVM will see `d`: a path under /tmp (a checkout there) goes through the
        // root's own /tmp link, so it is made under /jtmp; nothing is made through the link.
        let inside = match d.strip_prefix("/tmp") {
            Ok(rest) => root.join("jtmp").join(rest),
            Err(_) => root.join(d.strip_prefix("/").unwrap()),
        };
        script += &format!("mkdir -p '{0}' && mount --bind '{1}' '{0}'\n", inside.display(), d.display());
    }
    script += &format!(
        "exec chroot '{}' '{}' -XX:CompileCommand=quiet -cp '{}' Attachee 2\n",
        root.display(),
        jdk.java().display(),
        workloads().display()
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "bash", "-c", &script]);
    let mut jvm = Attachee::spawn(cmd);

    let file = "/jtmp/chrooted.collapsed"; // the JVM's path
    let out = attach_ok(jvm.pid, &format!("interval=5ms,quiet,file={file}"));
    assert!(out.contains("profiling started"), "{out}");
    assert!(root.join("jtmp").join(format!(".java_pid{}", jvm.pid)).exists(), "the socket is not in the JVM's /tmp");
    assert_eq!(jvm.say("work 500"), "worked");
    let status = attach_ok(jvm.pid, "status");
    assert!(status.contains("running"), "the agent's answer (read from the JVM's /tmp) is missing: {status}");
    attach_ok(jvm.pid, "stop");
    let stacks = read_collapsed(&root.join("jtmp/chrooted.collapsed"));
    assert!(stacks.iter().any(|(s, _)| s.iter().any(|f| f.starts_with("Attachee"))), "no Attachee frame");
    jvm.finish("chroot");
}

/// Root attaching to another user's JVM becomes that user entirely first (groups, real,
/// effective and saved ids): the trigger it leaves for the JVM is that user's, and the attach,
/// the agent's answer and the profile all work as that user.
#[test]
fn root_attaches_to_another_users_jvm_as_that_user() {
    if !is_root() || !Path::new("/usr/bin/setpriv").exists() {
        println!("skipped: needs root and setpriv to run a JVM as nobody");
        return;
    }
    let jdk = &jdks()[0];
    let dir = scratch("attach-nobody");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    let java = Attachee::command(jdk);
    cmd.arg(java.get_program()).args(java.get_args()).current_dir(&dir);
    let mut jvm = Attachee::spawn(cmd);
    let file = dir.join("nobody.collapsed");
    let out = attach_ok(jvm.pid, &format!("interval=5ms,quiet,file={}", file.display()));
    assert!(out.contains("profiling started"), "{out}");
    assert_eq!(jvm.say("work 300"), "worked");
    attach_ok(jvm.pid, "stop");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&file).unwrap().uid(), 65534, "the profile is not the JVM user's");
    assert!(!read_collapsed(&file).is_empty());
    jvm.finish("as nobody");
}

/// A process serving its own attach socket (tests/src/bin/fake_jvm.rs) with a file named `lib`
/// mapped, answering as `mode` says.
struct FakeJvm {
    child: Child,
    stdout: BufReader<ChildStdout>,
    pid: u32,
}

impl FakeJvm {
    fn start(lib: &str, mode: &[&[u8]]) -> FakeJvm {
        use std::os::unix::ffi::OsStrExt;
        let dir = scratch(&format!("fake-jvm-{}", lib.replace('/', "-")));
        let mapped = dir.join(lib);
        std::fs::create_dir_all(mapped.parent().unwrap()).unwrap();
        std::fs::write(&mapped, vec![0u8; 4096]).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-jvm"));
        cmd.arg(&mapped).args(mode.iter().map(|m| std::ffi::OsStr::from_bytes(m)));
        let mut child = cmd.stdout(Stdio::piped()).spawn().expect("run fake-jvm");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let pid =
            line.trim().strip_prefix("ready ").unwrap_or_else(|| panic!("fake-jvm said {line:?}")).parse().unwrap();
        FakeJvm { child, stdout, pid }
    }

    /// The length of the request it received (0: none). Once hpm has exited: a fake that still
    /// waits for a connection gets an empty one from here.
    fn received(mut self) -> usize {
        drop(std::os::unix::net::UnixStream::connect(format!("/tmp/.java_pid{}", self.pid)));
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim().strip_prefix("got ").unwrap_or_else(|| panic!("fake-jvm said {line:?}")).parse().unwrap()
    }
}

impl Drop for FakeJvm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Control characters in text: anything but newline and tab.
fn controls(text: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(text)
        .chars()
        .filter(|&c| c.is_control() && c != '\n' && c != '\t')
        .map(|c| c as u8)
        .collect()
}

/// A process is a JVM to hpm when it maps a file named libjvm.so, not when a mapped path merely
/// contains `/libjvm.so` (a renamed copy, a directory of that name): those are refused before
/// anything is sent. They used to pass, and their socket received hpm's request.
#[test]
fn a_process_mapping_no_libjvm_so_is_no_jvm() {
    for lib in ["libjvm.so.bak", "libjvm.so/libother.so"] {
        let fake = FakeJvm::start(lib, &[b"answer", b"0\nreturn code: 0\n"]);
        let o = hpm(&["attach", &fake.pid.to_string(), "status"]);
        assert!(!o.status.success(), "{lib}: attached: {o:?}");
        assert!(stderr(&o).contains("is not a HotSpot JVM"), "{lib}: {}", stderr(&o));
        assert_eq!(fake.received(), 0, "{lib}: the process that is no JVM was sent a request");
    }
}

/// What the peer answers (the agent's reply file, or the socket's own answer) reaches the
/// user's terminal with its control characters escaped: a fake JVM's title-setting and colour
/// sequences used to be printed raw, into root's terminal.
#[test]
fn a_peers_control_characters_are_shown_not_obeyed() {
    let hostile: &[u8] = b"\x1b]0;owned\x07\x1b[31mred\x1b[0m\rover\n";
    let fake = FakeJvm::start("libjvm.so", &[b"reply", hostile]);
    let o = hpm(&["attach", &fake.pid.to_string(), "status"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(controls(&o.stdout), b"", "raw control characters on stdout: {:?}", String::from_utf8_lossy(&o.stdout));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(r"\x1b]0;owned\x07\x1b[31mred\x1b[0m\x0dover"), "{out}");
    assert!(fake.received() > 0);

    let fake = FakeJvm::start("libjvm.so", &[b"answer", b"1\n\x1b]0;owned\x07\x1b[2J load failed"]);
    let o = hpm(&["attach", &fake.pid.to_string(), "status"]);
    assert!(!o.status.success(), "{o:?}");
    assert_eq!(controls(&o.stderr), b"", "raw control characters on stderr: {:?}", stderr(&o));
    assert!(stderr(&o).contains(r"\x1b]0;owned\x07\x1b[2J load failed"), "{}", stderr(&o));
    assert!(fake.received() > 0);
}

/// A peer that answers a byte at a time, each well within the time hpm gives a request, is cut
/// off when the request's whole time is up: one deadline for the exchange, not one per read
/// (a byte every 3 s held hpm 75.8 s against a 30 s timeout). The tests' shorter deadline
/// (`HPM_TEST_ATTACH_DEADLINE_MS`, 2 s) against a byte every 250 ms for 10 s.
#[test]
fn a_peer_dripping_its_answer_is_cut_off_at_the_deadline() {
    let fake = FakeJvm::start("libjvm.so", &[b"drip", b"40", b"250"]);
    let o = Command::new(hpm_bin())
        .args(["attach", &fake.pid.to_string(), "status"])
        .env("HPM_TEST_ATTACH_DEADLINE_MS", "2000")
        .output()
        .unwrap();
    assert!(!o.status.success(), "{o:?}");
    assert!(stderr(&o).contains("no complete answer within 2s"), "{}", stderr(&o));
    assert!(fake.received() > 0);
}

/// Makes the calling process's `pidfd_open` fail with EPERM from now on, for it and what it
/// execs: what the default seccomp profile of a container runtime older than the call answers
/// (Docker's before 20.10 answers every call it does not know so). Runs between fork and exec.
fn refuse_pidfd_open() -> std::io::Result<()> {
    let nr = libc::SYS_pidfd_open as u32;
    let ld = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let mut filter = [
        // The system call's number: the first word of seccomp_data.
        libc::sock_filter { code: ld, jt: 0, jf: 0, k: 0 },
        libc::sock_filter { code: jeq, jt: 0, jf: 1, k: nr },
        libc::sock_filter { code: ret, jt: 0, jf: 0, k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32 },
        libc::sock_filter { code: ret, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW },
    ];
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
    // SAFETY: plain prctl calls; `prog` and the filter it points at outlive them (the kernel
    // copies the filter).
    let ok = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Where a seccomp filter refuses `pidfd_open` with EPERM (a container runtime's profile older
/// than the call), `hpm attach` pins the process by its start time instead, as on a kernel
/// without pidfds, and attaches: it used to refuse every JVM there ("cannot hold the process").
#[test]
fn attach_pins_by_start_time_where_seccomp_refuses_pidfd_open() {
    use std::os::unix::process::CommandExt;
    let fake = FakeJvm::start("libjvm.so", &[b"reply", b"state: idle\n"]);
    let mut cmd = Command::new(hpm_bin());
    cmd.args(["attach", &fake.pid.to_string(), "status"]);
    // SAFETY: the closure runs in the forked child before exec and only makes system calls.
    unsafe { cmd.pre_exec(refuse_pidfd_open) };
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "refused: {}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "state: idle\n");
    assert!(fake.received() > 0);
}
