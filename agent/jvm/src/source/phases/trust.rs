//! Whether the rewriter's jar may go onto the bootstrap class path: code from it runs inside
//! every class loader of the JVM, so only a jar that no other user could have written or
//! swapped is taken. The jar must be a regular file reached without a symbolic link at its
//! last step, and it and its directory (symbolic links on the way to the directory resolved
//! first) owned by the JVM's user or root and writable by neither group nor others.
//!
//! The file is opened with `O_NOFOLLOW` and the opened file's identity compared with the
//! path's `lstat`, so what was checked is what is there. JVMTI takes a path, not a
//! descriptor, and opens it again; the directory's check is what keeps that second open on
//! the same file (nobody else may rename or replace entries in it).

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What the check looks at in one file's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Facts {
    kind: Kind,
    uid: u32,
    mode: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
    Other,
}

impl Facts {
    fn of(m: &Metadata) -> Facts {
        let t = m.file_type();
        let kind = if t.is_symlink() {
            Kind::Link
        } else if t.is_file() {
            Kind::File
        } else if t.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        };
        Facts { kind, uid: m.uid(), mode: m.mode() & 0o7777 }
    }
}

/// Why `f`, found at `shown` and meant to be a `want` (file or directory), is not trusted by
/// a JVM running as `euid`: a one-line reason with its fix, or `Ok`.
fn judge(shown: &Path, f: Facts, want: Kind, euid: u32) -> Result<(), String> {
    let shown = shown.display();
    let what = if want == Kind::Dir { "directory" } else { "file" };
    if f.kind != want {
        let is = match f.kind {
            Kind::Link => "a symbolic link",
            Kind::Dir => "a directory",
            _ => "not a regular file",
        };
        return Err(format!("{shown} is {is}, not a {what}; give phasesjar= the jar itself"));
    }
    if f.uid != euid && f.uid != 0 {
        return Err(format!(
            "the {what} {shown} is owned by user {} (the JVM runs as {euid}); keep the jar where only you or root \
             own it",
            f.uid
        ));
    }
    if f.mode & 0o022 != 0 {
        return Err(format!(
            "the {what} {shown} is writable by group or others (mode {:04o}); `chmod go-w {shown}`",
            f.mode
        ));
    }
    Ok(())
}

/// Checks `jar` for a JVM running as `euid` (see the module's doc); returns the path to give
/// JVMTI: the jar in its directory with the directory's symbolic links resolved. Errors are
/// one line, starting with `phasesjar=`, saying what to fix.
pub fn check_jar(jar: &Path, euid: u32) -> Result<PathBuf, String> {
    let refuse = |e: String| format!("phasesjar={}: not trusted on the bootstrap class path: {e}", jar.display());
    let io = |what: &str, e: std::io::Error| refuse(format!("cannot {what} ({e})"));
    let name = jar.file_name().ok_or_else(|| refuse("the path names no file".into()))?;
    let parent = jar.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = parent.canonicalize().map_err(|e| io("find its directory", e))?;
    let dir_facts = Facts::of(&std::fs::symlink_metadata(&dir).map_err(|e| io("read its directory", e))?);
    judge(&dir, dir_facts, Kind::Dir, euid).map_err(refuse)?;
    let path = dir.join(name);
    let at_path = std::fs::symlink_metadata(&path).map_err(|e| io("read it", e))?;
    judge(&path, Facts::of(&at_path), Kind::File, euid).map_err(refuse)?;
    let opened: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| io("open it", e))?;
    let in_hand = opened.metadata().map_err(|e| io("read it", e))?;
    if (in_hand.dev(), in_hand.ino()) != (at_path.dev(), at_path.ino()) {
        return Err(refuse("it was replaced while being checked; check who writes there".into()));
    }
    judge(&path, Facts::of(&in_hand), Kind::File, euid).map_err(refuse)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const ME: u32 = 1000;

    fn facts(kind: Kind, uid: u32, mode: u32) -> Facts {
        Facts { kind, uid, mode }
    }

    #[test]
    fn owner_and_mode_decide() {
        let p = Path::new("/opt/hpm/hpm-phases.jar");
        assert_eq!(judge(p, facts(Kind::File, ME, 0o644), Kind::File, ME), Ok(()));
        assert_eq!(judge(p, facts(Kind::File, 0, 0o755), Kind::File, ME), Ok(()));
        assert_eq!(judge(p, facts(Kind::Dir, ME, 0o1755), Kind::Dir, ME), Ok(()));
        let e = judge(p, facts(Kind::File, 1001, 0o644), Kind::File, ME).unwrap_err();
        assert!(e.contains("owned by user 1001 (the JVM runs as 1000)"), "{e}");
        let e = judge(p, facts(Kind::File, ME, 0o664), Kind::File, ME).unwrap_err();
        assert!(e.contains("writable by group or others (mode 0664)") && e.contains("chmod go-w"), "{e}");
        let e = judge(p, facts(Kind::Dir, 0, 0o1777), Kind::Dir, ME).unwrap_err();
        assert!(e.contains("the directory /opt/hpm/hpm-phases.jar is writable"), "{e}");
        let e = judge(p, facts(Kind::Link, ME, 0o777), Kind::File, ME).unwrap_err();
        assert!(e.contains("is a symbolic link, not a file"), "{e}");
        let e = judge(p, facts(Kind::Other, ME, 0o644), Kind::File, ME).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }

    /// A directory of the test's own, removed at the end.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let d = std::env::temp_dir().join(format!("hpm-trust-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
            Dir(d)
        }

        fn jar(&self, mode: u32) -> PathBuf {
            let jar = self.0.join("hpm-phases.jar");
            std::fs::write(&jar, b"PK").unwrap();
            std::fs::set_permissions(&jar, std::fs::Permissions::from_mode(mode)).unwrap();
            jar
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn euid() -> u32 {
        hpm_profile::outfile::euid()
    }

    #[test]
    fn a_private_jar_is_taken_by_its_real_path() {
        let d = Dir::new("ok");
        let jar = d.jar(0o644);
        assert_eq!(check_jar(&jar, euid()), Ok(jar.clone()));
        // A link to the directory is resolved: JVMTI gets the real path.
        let link = d.0.join("via");
        std::os::unix::fs::symlink(&d.0, &link).unwrap();
        assert_eq!(check_jar(&link.join("hpm-phases.jar"), euid()), Ok(jar));
    }

    #[test]
    fn writable_jars_directories_and_links_are_refused() {
        let d = Dir::new("modes");
        let jar = d.jar(0o666);
        let e = check_jar(&jar, euid()).unwrap_err();
        assert!(e.starts_with(&format!("phasesjar={}: not trusted", jar.display())), "{e}");
        assert!(e.contains("mode 0666") && !e.contains('\n'), "{e}");
        std::fs::set_permissions(&jar, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_jar(&jar, euid()).unwrap_err();
        assert!(e.contains("the directory") && e.contains("mode 0777"), "{e}");
        std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = d.0.join("link.jar");
        std::os::unix::fs::symlink(&jar, &link).unwrap();
        let e = check_jar(&link, euid()).unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
        std::fs::create_dir(d.0.join("sub.jar")).unwrap();
        let e = check_jar(&d.0.join("sub.jar"), euid()).unwrap_err();
        assert!(e.contains("is a directory, not a file"), "{e}");
        let e = check_jar(&d.0.join("missing.jar"), euid()).unwrap_err();
        assert!(e.contains("cannot read it"), "{e}");
    }

    #[test]
    fn a_jar_of_another_user_is_refused() {
        let d = Dir::new("owner");
        let jar = d.jar(0o644);
        let other = if euid() == 4242 { 4243 } else { 4242 };
        if euid() == 0 {
            // Root gives the file away: refused though its directory is root's.
            std::os::unix::fs::chown(&jar, Some(other), None).unwrap();
            let e = check_jar(&jar, 0).unwrap_err();
            assert!(e.contains(&format!("the file {} is owned by user {other}", jar.display())), "{e}");
        } else {
            // The files are the test's own: a JVM running as another user refuses them.
            let e = check_jar(&jar, other).unwrap_err();
            assert!(e.contains("owned by user") && e.contains(&format!("the JVM runs as {other}")), "{e}");
        }
    }
}
