//! The agent's outputs cannot be redirected, and a refused request touches no file,
//! end to end: -agentpath's `file=`, a refused start, `stop,file=` without a session,
//! and `dump,file=` through `hpm attach`; two outputs of one file. (hpm_profile::outfile's own
//! tests cover the primitive.)

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hpm_tests::*;

const SECRET: &str = "only the owner reads this\n";

/// A 0600 file with known content, and a symbolic link to it at `dir/name`.
fn victim_and_link(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let victim = dir.join("victim");
    std::fs::write(&victim, SECRET).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.join(name);
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    (victim, link)
}

fn assert_untouched(victim: &Path, what: &str) {
    assert_eq!(std::fs::read_to_string(victim).unwrap(), SECRET, "{what}: the link's target was written");
}

/// No file at `path` nor at `path.part`.
fn assert_absent(path: &Path, what: &str) {
    assert!(!path.exists(), "{what}: {} was created", path.display());
    let part = PathBuf::from(format!("{}.part", path.display()));
    assert!(!part.exists(), "{what}: {} was created", part.display());
}

#[test]
fn a_link_at_an_output_is_refused_with_one_line_and_never_written() {
    let jdk = &jdks()[0];
    for name in ["p.jfr", "p.collapsed"] {
        let dir = scratch(&format!("outputs-link-{name}"));
        let (victim, link) = victim_and_link(&dir, name);
        let run = run_java(jdk, Some(&format!("file={}", link.display())), &[], "Shares", &["1", "0.1"]);
        assert!(!run.status.success(), "{name}: the JVM started with a link as output");
        assert!(run.stderr.contains("is a symbolic link, and hpm never writes through one"), "{name}: {}", run.stderr);
        assert_untouched(&victim, name);
    }
}

#[test]
fn a_refused_start_touches_none_of_its_outputs() {
    let jdk = &jdks()[0];
    let dir = scratch("outputs-refused-start");
    let first = dir.join("first.jfr");
    std::fs::write(&first, "an earlier profile\n").unwrap();
    let options = format!("file={},file=/nonexistent-dir/second.collapsed", first.display());
    let run = run_java(jdk, Some(&options), &[], "Shares", &["1", "0.1"]);
    assert!(!run.status.success(), "the JVM started with an unwritable output");
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "an earlier profile\n", "the first output was truncated");
    assert_absent(&dir.join("second.collapsed"), "refused start");
    assert!(!dir.join("first.jfr.part").exists(), "refused start created first.jfr.part");
}

#[test]
fn commands_through_attach_check_before_they_create() {
    let jdk = &jdks()[0];
    let dir = scratch("outputs-attach");
    let mut jvm = Attachee::start(jdk);
    let pid = jvm.pid.to_string();

    // stop,file=X with no session: refused, X neither created nor truncated.
    let kept = dir.join("kept.collapsed");
    std::fs::write(&kept, "x 1\n").unwrap();
    let fresh = dir.join("fresh.collapsed");
    for file in [&kept, &fresh] {
        let o = hpm(&["attach", &pid, &format!("stop,file={}", file.display())]);
        assert!(!o.status.success(), "stop without a session succeeded");
        assert!(String::from_utf8_lossy(&o.stderr).contains("no profiling session"), "{o:?}");
    }
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "x 1\n", "stop without a session truncated its file");
    assert_absent(&fresh, "stop without a session");

    // dump,file=LINK while a session runs: refused, the session goes on, the target is intact.
    attach_ok(jvm.pid, &format!("interval=5ms,quiet,file={}", dir.join("end.collapsed").display()));
    assert_eq!(jvm.say("work 300"), "worked");
    let (victim, link) = victim_and_link(&dir, "dump.collapsed");
    let o = hpm(&["attach", &pid, &format!("dump,file={}", link.display())]);
    assert!(!o.status.success(), "dump to a link succeeded");
    assert!(String::from_utf8_lossy(&o.stderr).contains("symbolic link"), "{o:?}");
    assert_untouched(&victim, "dump");
    assert!(attach_ok(jvm.pid, "status").contains("running"), "the refused dump ended the session");
    attach_ok(jvm.pid, "stop");
    assert!(!read_collapsed(&dir.join("end.collapsed")).is_empty());
    jvm.finish("outputs through attach");
}

/// The session's JFR is read back, copied and renamed only through the descriptor the agent
/// created it with. Whoever can write the output directory swaps `p.jfr.part` for a link to a
/// file only they may read, then for a FIFO, then (after stop) puts a link at `p.jfr`: every
/// dump copies the agent's own chunks (not the link's target, never hanging on the FIFO), and
/// the stop renames nothing of theirs over `p.jfr`, saying so.
#[test]
fn dumps_and_the_stop_read_and_rename_only_the_file_the_agent_created() {
    let jdk = &jdks()[0];
    let dir = scratch("outputs-swapped-part");
    let mut jvm = Attachee::start(jdk);
    let pid = jvm.pid;
    let p = dir.join("p.jfr");
    let part = dir.join("p.jfr.part");
    attach_ok(pid, &format!("interval=5ms,quiet,file={}", p.display()));
    assert_eq!(jvm.say("work 300"), "worked");
    let samples = |f: &Path| {
        let text = std::fs::read(f).unwrap();
        assert!(!text.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()), "{}: holds the secret", f.display());
        check_jfr(jdk, f, "Shares").get("count jdk.ExecutionSample").copied().unwrap_or(0)
    };

    std::fs::rename(&part, dir.join("moved-away")).unwrap();
    let (victim, link) = victim_and_link(&dir, "p.jfr.part");
    let running = dir.join("running.jfr");
    attach_ok(pid, &format!("dump,file={}", running.display()));
    let first = samples(&running);
    assert!(first > 0, "the dump while running holds no sample of the session");

    std::fs::remove_file(&link).unwrap();
    let fifo = std::ffi::CString::new(part.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o666) }, 0);
    let beside_fifo = dir.join("beside-fifo.jfr");
    attach_ok(pid, &format!("dump,file={}", beside_fifo.display()));
    assert!(samples(&beside_fifo) >= first);

    let stopped = attach_ok(pid, "stop");
    assert!(stopped.contains("did not write") && stopped.contains("was replaced by another file"), "{stopped}");
    assert!(!p.exists(), "the stop renamed another file over p.jfr");
    assert!(std::fs::symlink_metadata(&part).unwrap().file_type().is_fifo(), "their FIFO was moved");

    std::os::unix::fs::symlink(&victim, &p).unwrap();
    let after = dir.join("after-stop.jfr");
    attach_ok(pid, &format!("dump,file={}", after.display()));
    assert!(samples(&after) >= first);
    assert_untouched(&victim, "dumps");
    jvm.finish("swapped part");
}

/// Two outputs that would write one file are refused, whatever their paths' strings: the same
/// directory and name (`a.collapsed`, `./a.collapsed` and `sub/../a.collapsed` were all taken
/// as different files and written twice). At start, with nothing created; through attach,
/// `stop,file=` and `dump,file=` against the running session's outputs too. An output named as
/// another's `NAME.part` (where its data grows until renamed over `NAME`) is refused as well:
/// no output format has the extension `.part`.
#[test]
fn two_outputs_of_one_file_are_refused() {
    let jdk = &jdks()[0];
    let dir = scratch("outputs-one-file");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let p = |n: &str| dir.join(n).display().to_string();
    let same = "are the same file; give each output its own name";
    for (files, expect) in [
        ([p("a.collapsed"), p("./a.collapsed")], same),
        ([p("a.collapsed"), p("sub/../a.collapsed")], same),
        ([p("a.jfr"), p("a.jfr.part")], "cannot tell the format from the extension"),
    ] {
        let options = format!("file={},file={}", files[0], files[1]);
        let run = run_java(jdk, Some(&options), &[], "Shares", &["1", "0.1"]);
        assert!(!run.status.success(), "{options}: the JVM started");
        assert!(run.stderr.contains(expect), "{options}: {}", run.stderr);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["sub"], "{options}: a refused start created files");
    }

    let mut jvm = Attachee::start(jdk);
    let pid = jvm.pid.to_string();
    attach_ok(jvm.pid, &format!("interval=5ms,quiet,file={}", p("s.collapsed")));
    assert_eq!(jvm.say("work 300"), "worked");
    for command in [format!("dump,file={}", p("./s.collapsed")), format!("stop,file={}", p("sub/../s.collapsed"))] {
        let o = hpm(&["attach", &pid, &command]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains("and the running session's file="), "{command}: {o:?}");
    }
    assert!(attach_ok(jvm.pid, "status").contains("running"), "a refused command ended the session");
    attach_ok(jvm.pid, "stop");
    assert!(!read_collapsed(&dir.join("s.collapsed")).is_empty());
    jvm.finish("outputs of one file");
}
