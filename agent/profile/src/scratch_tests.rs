//! Scratch space for the unit tests: a directory of its own per use, under the system temp
//! directory, removed with its contents when dropped. Tests that shared one directory per
//! process left it behind at every run, and two of them wrote a file of one name there from
//! parallel tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh, empty directory, removed with what it holds when dropped.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(tag: &str) -> ScratchDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("hpm-{tag}-{}-{n}", std::process::id()));
        // A directory left by a killed run of the same pid is not this run's.
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).unwrap();
        ScratchDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file written in a directory of its own, both removed when dropped.
pub struct TempFile {
    path: PathBuf,
    _dir: ScratchDir,
}

impl TempFile {
    pub fn new(name: &str, data: &[u8]) -> TempFile {
        let dir = ScratchDir::new("unit");
        let path = dir.path().join(name);
        std::fs::write(&path, data).unwrap();
        TempFile { path, _dir: dir }
    }
}

impl std::ops::Deref for TempFile {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

#[test]
fn scratch_space_is_removed_when_dropped() {
    let f = TempFile::new("x.bin", b"abc");
    let (file, dir) = (f.to_path_buf(), f.parent().unwrap().to_path_buf());
    assert_eq!(std::fs::read(&file).unwrap(), b"abc");
    let other = TempFile::new("x.bin", b"def");
    assert_ne!(other.parent(), Some(dir.as_path()), "each file has a directory of its own");
    drop(f);
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert_eq!(std::fs::read(&*other).unwrap(), b"def");
}
