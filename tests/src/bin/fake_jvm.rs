//! A process that passes for a JVM to `hpm attach` as far as it can: it maps a file (named
//! `libjvm.so`, or not, as the test chooses) and serves the attach socket `/tmp/.java_pid<PID>`
//! itself, mode 600, so the socket's owner and the peer's PID are right. It answers one request
//! as the test says, to check what hpm does with a hostile peer.
//!
//! `fake-jvm MAPPED_FILE MODE [ARG...]`, MODE:
//! - `answer BYTES`: answers BYTES;
//! - `reply BYTES`: writes BYTES to the reply file the request names (`reply=/tmp/NAME`), as
//!   the agent does, and answers that the agent returned 0;
//! - `drip COUNT MS`: answers `0\n`, then COUNT bytes, one every MS milliseconds.
//!
//! Prints `ready PID` once it listens, then `got N` with the request's length once a
//! connection ended its request (0: it sent nothing). Serves one connection, then exits.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::time::Duration;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let arg = |i: usize| args.get(i).unwrap_or_else(|| panic!("fake-jvm: argument {i} missing")).as_bytes().to_vec();
    let mapped = std::fs::File::open(&args[0]).expect("fake-jvm: open the file to map");
    // SAFETY: a private read-only mapping of a file this process keeps open; never accessed.
    let map =
        unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_PRIVATE, mapped.as_raw_fd(), 0) };
    assert_ne!(map, libc::MAP_FAILED, "fake-jvm: mmap: {}", std::io::Error::last_os_error());

    let path = format!("/tmp/.java_pid{}", std::process::id());
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).expect("fake-jvm: bind");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    println!("ready {}", std::process::id());
    std::io::stdout().flush().unwrap();

    let (mut s, _) = listener.accept().expect("fake-jvm: accept");
    let _ = std::fs::remove_file(&path);
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    // A request is five NUL-terminated fields.
    while request.iter().filter(|&&b| b == 0).count() < 5 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    println!("got {}", request.len());
    std::io::stdout().flush().unwrap();
    if request.is_empty() {
        return;
    }
    match arg(1).as_slice() {
        b"answer" => {
            let _ = s.write_all(&arg(2));
        }
        b"reply" => {
            let text = String::from_utf8_lossy(&request).into_owned();
            let name = text.split([',', '\0']).find_map(|f| f.strip_prefix("reply=")).expect("a reply= file");
            std::fs::write(name, arg(2)).unwrap();
            let _ = s.write_all(b"0\nreturn code: 0\n");
        }
        b"drip" => {
            let count: usize = String::from_utf8_lossy(&arg(2)).parse().unwrap();
            let ms: u64 = String::from_utf8_lossy(&arg(3)).parse().unwrap();
            if s.write_all(b"0\n").is_err() {
                return;
            }
            for _ in 0..count {
                std::thread::sleep(Duration::from_millis(ms));
                if s.write_all(b"x").is_err() {
                    return;
                }
            }
        }
        other => panic!("fake-jvm: unknown mode {}", String::from_utf8_lossy(other)),
    }
}
