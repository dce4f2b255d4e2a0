use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

use crate::scratch_tests::ScratchDir as Scratch;

fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:")).unwrap();
    u32::from_str_radix(line.trim(), 8).unwrap()
}

#[test]
fn writes_through_part_and_renames() {
    let d = Scratch::new("outfile-basic");
    let path = d.path().join("out.jfr");
    let t = Target::check(&path).unwrap();
    assert!(!path.exists(), "check creates nothing");
    let mut part = t.create_part().unwrap();
    part.file().write_all(b"hello").unwrap();
    assert!(d.path().join("out.jfr.part").exists());
    assert!(!path.exists());
    part.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"hello");
    assert!(!d.path().join("out.jfr.part").exists());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666 & !umask(), "mode from the umask, never wider");
}

#[test]
fn an_existing_file_is_replaced_not_written_through() {
    let d = Scratch::new("outfile-replace");
    let path = d.path().join("out.collapsed");
    let other = d.path().join("precious");
    std::fs::write(&other, b"keep me").unwrap();
    // A hard link at the output name: writing through it would change `precious`.
    std::fs::hard_link(&other, &path).unwrap();
    write(&path, b"new").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    assert_eq!(std::fs::read(&other).unwrap(), b"keep me");
}

#[test]
fn a_symlink_at_the_name_is_refused_and_its_target_untouched() {
    let d = Scratch::new("outfile-link");
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"secret").unwrap();
    let path = d.path().join("hpm-1.jfr");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let e = Target::check(&path).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::SymlinkAtTarget), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
    // A dangling link is refused as well (it would create the file it names).
    let dangling = d.path().join("dangling.jfr");
    std::os::unix::fs::symlink(d.path().join("nowhere"), &dangling).unwrap();
    assert!(matches!(Target::check(&dangling).unwrap_err().kind, ErrorKind::SymlinkAtTarget));
    assert!(!d.path().join("nowhere").exists());
}

#[test]
fn a_link_planted_after_the_check_is_not_followed() {
    let d = Scratch::new("outfile-race");
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"secret").unwrap();
    let path = d.path().join("out.html");
    let t = Target::check(&path).unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let mut part = t.create_part().unwrap();
    part.file().write_all(b"profile").unwrap();
    let e = part.commit().unwrap_err();
    assert!(matches!(e.kind, ErrorKind::SymlinkAtTarget), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
    assert_eq!(std::fs::read(d.path().join("out.html.part")).unwrap(), b"profile", "the data is kept in .part");
    // A link planted at the .part name makes the exclusive create fail.
    let path2 = d.path().join("two.jfr");
    let t2 = Target::check(&path2).unwrap();
    std::os::unix::fs::symlink(&victim, d.path().join("two.jfr.part")).unwrap();
    assert!(matches!(t2.create_part().unwrap_err().kind, ErrorKind::PartExists));
    assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
}

#[test]
fn non_files_and_leftover_parts_are_refused() {
    let d = Scratch::new("outfile-kinds");
    std::fs::create_dir(d.path().join("adir")).unwrap();
    assert!(matches!(Target::check(d.path().join("adir")).unwrap_err().kind, ErrorKind::NotRegular));
    assert!(matches!(Target::check(d.path().join("x/")).unwrap_err().kind, ErrorKind::NoFileName));
    std::fs::write(d.path().join("file"), b"").unwrap();
    assert!(matches!(Target::check(d.path().join("file/out.jfr")).unwrap_err().kind, ErrorKind::NotADirectory(_)));
    std::fs::write(d.path().join("p.jfr.part"), b"killed run").unwrap();
    let e = Target::check(d.path().join("p.jfr")).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::PartExists) && e.to_string().contains("move it away"), "{e}");
    let e = Target::check(d.path().join("missing/out.jfr")).unwrap_err();
    assert!(e.to_string().contains("no such directory"), "{e}");
}

#[test]
fn own_symlinked_directories_are_followed() {
    let d = Scratch::new("outfile-dirlink");
    std::fs::create_dir(d.path().join("real")).unwrap();
    std::os::unix::fs::symlink("real", d.path().join("rel")).unwrap();
    std::os::unix::fs::symlink(d.path().join("real"), d.path().join("abs")).unwrap();
    write(d.path().join("rel/a.txt"), b"a").unwrap();
    write(d.path().join("abs/b.txt"), b"b").unwrap();
    write(d.path().join("real/../real/c.txt"), b"c").unwrap();
    assert_eq!(std::fs::read(d.path().join("real/a.txt")).unwrap(), b"a");
    assert_eq!(std::fs::read(d.path().join("real/b.txt")).unwrap(), b"b");
    assert_eq!(std::fs::read(d.path().join("real/c.txt")).unwrap(), b"c");
    std::os::unix::fs::symlink("loop", d.path().join("loop")).unwrap();
    assert!(matches!(Target::check(d.path().join("loop/x")).unwrap_err().kind, ErrorKind::TooManyLinks));
}

/// Another user's link to a directory is not followed (as root, the test makes the link
/// belong to uid 4242; as anyone else it cannot, and checks only its own links).
#[test]
fn another_users_directory_link_is_refused() {
    let d = Scratch::new("outfile-foreign");
    std::fs::create_dir(d.path().join("etc")).unwrap();
    let link = d.path().join("shared");
    std::os::unix::fs::symlink(d.path().join("etc"), &link).unwrap();
    if euid() != 0 {
        eprintln!("not root: cannot give a link to another user; only the own-link case is checked");
        assert!(Target::check(link.join("x.jfr")).is_ok());
        return;
    }
    std::os::unix::fs::lchown(&link, Some(4242), Some(4242)).unwrap();
    assert_eq!(std::fs::symlink_metadata(&link).unwrap().uid(), 4242);
    let e = Target::check(link.join("x.jfr")).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UntrustedSymlink { owner: 4242, .. }), "{e}");
    assert!(!d.path().join("etc/x.jfr").exists() && !d.path().join("etc/x.jfr.part").exists());
}

#[test]
fn create_new_never_reuses_a_name() {
    let d = Scratch::new("outfile-new");
    let p = d.path().join(".attach_pid1");
    create_new(&p).unwrap().write_all(b"").unwrap();
    assert!(matches!(create_new(&p).unwrap_err().kind, ErrorKind::Exists));
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"secret").unwrap();
    let q = d.path().join("reply");
    std::os::unix::fs::symlink(&victim, &q).unwrap();
    assert!(create_new(&q).is_err());
    assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
}

/// A path the JVM's user may not reach (`/root/x.jfr` for another user) says what to do.
#[test]
fn a_path_out_of_reach_says_to_choose_another() {
    let denied = OutputError::new(
        Path::new("/root/x.jfr"),
        ErrorKind::Io("stat", std::io::Error::from_raw_os_error(libc::EACCES)),
    );
    let text = denied.to_string();
    assert!(text.starts_with("cannot write /root/x.jfr: stat: Permission denied"), "{text}");
    assert!(text.ends_with("; give a path in a directory this user can reach and write"), "{text}");
    let other =
        OutputError::new(Path::new("/x.jfr"), ErrorKind::Io("write", std::io::Error::from_raw_os_error(libc::ENOSPC)));
    assert!(!other.to_string().contains("give a path"), "{other}");
}

/// Whoever can write the directory swaps `NAME.part` for a link to a file only its owner may
/// read, or for a FIFO, while hpm writes: the commit renames nothing of theirs over `NAME`,
/// and what hpm wrote is still read back, through the descriptor, never through the name.
#[test]
fn only_the_file_created_is_renamed_or_read_back() {
    let d = Scratch::new("outfile-swapped-part");
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"secret").unwrap();
    let fifo = CString::new(d.path().join("fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    for (i, swap_in) in ["link", "file", "fifo"].into_iter().enumerate() {
        let path = d.path().join(format!("p{i}.jfr"));
        let part_name = d.path().join(format!("p{i}.jfr.part"));
        std::fs::write(&path, b"the previous profile").unwrap();
        let mut part = Target::check(&path).unwrap().create_part().unwrap();
        part.file().write_all(b"the profile").unwrap();
        std::fs::rename(&part_name, d.path().join(format!("moved{i}"))).unwrap();
        match swap_in {
            "link" => std::os::unix::fs::symlink(&victim, &part_name).unwrap(),
            "file" => std::fs::write(&part_name, b"someone else's").unwrap(),
            _ => std::fs::rename(d.path().join("fifo"), &part_name).unwrap(),
        }
        let mut copy = Vec::new();
        copy_at(part.created(), 0, 11, &mut copy).unwrap();
        assert_eq!(copy, b"the profile", "{swap_in}: read back through the descriptor");
        let e = part.commit().unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Replaced { part: true }), "{swap_in}: {e}");
        assert!(e.to_string().contains("was replaced by another file"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"the previous profile", "{swap_in}: NAME replaced");
        assert!(std::fs::symlink_metadata(&part_name).is_ok(), "{swap_in}: their file was removed or moved");
        if swap_in == "fifo" {
            std::fs::rename(&part_name, d.path().join("fifo")).unwrap();
        }
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
}

/// A copy goes through one bounded buffer, and a file cut shorter than what was written is an
/// error, not a short copy.
#[test]
fn copies_are_bounded_and_complete() {
    let d = Scratch::new("outfile-copy");
    let path = d.path().join("big.bin");
    let data: Vec<u8> = (0..(3 * COPY_BUFFER + 123)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let f = File::open(&path).unwrap();
    struct Largest(Vec<u8>, usize);
    impl Write for Largest {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.1 = self.1.max(b.len());
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Largest(Vec::new(), 0);
    copy_at(&f, 5, data.len() as u64 - 5, &mut out).unwrap();
    assert_eq!(out.0, data[5..]);
    assert!(out.1 <= COPY_BUFFER, "one write of {} bytes", out.1);
    let e = copy_at(&f, 0, data.len() as u64 + 1, &mut Vec::new()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
}

/// Two outputs are the same file when their directories are the same directory (device and
/// inode) and their names are equal, whatever their paths' strings; one output's `NAME.part`
/// (where its data grows) is the other's name is a clash too.
#[test]
fn targets_are_compared_by_directory_and_name() {
    let d = Scratch::new("outfile-ids");
    std::fs::create_dir(d.path().join("real")).unwrap();
    std::os::unix::fs::symlink("real", d.path().join("link")).unwrap();
    let id = |p: &str| Target::check(d.path().join(p)).unwrap().id().unwrap();
    let a = id("real/a.jfr");
    for same in ["real/./a.jfr", "real/../real/a.jfr", "link/a.jfr", "real//a.jfr"] {
        assert_eq!(a.clash(&id(same)), Some(Clash::Same), "{same}");
    }
    assert_eq!(id("real/a.jfr.part").clash(&a), Some(Clash::PartOf));
    assert_eq!(a.clash(&id("link/a.jfr.part")), Some(Clash::HasPart));
    for other in ["real/b.jfr", "a.jfr", "real/a.jfr.part.part", "real/a.jf"] {
        assert_eq!(a.clash(&id(other)), None, "{other}");
    }
}
