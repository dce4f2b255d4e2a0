//! JFR chunks kept for a session that writes no JFR file, so that `dump,file=X.jfr` (and a
//! pprof or JSON dump, read back from them) can still be made: at most a bound of bytes, the
//! oldest chunks dropped first and counted.
//!
//! The chunks go to an unlinked file ([`Spill`]) where a directory on a disk can take one, as
//! JFR keeps its chunks in a repository on disk rather than in the JVM's memory: the agent's
//! heap then holds none of them. Where none can (no such directory, a directory in memory such
//! as tmpfs, a file system without `O_TMPFILE` or holes), and for chunks the file could not
//! take, they stay in the heap.
//!
//! In the heap the bound counts what the chunks hold, not their length: a chunk is encoded
//! into a growing buffer whose capacity is up to twice its length, and a bound on lengths
//! held up to twice the bound (ecj at 1 ms with a collapsed output alone: 249 MB of agent heap
//! at five minutes, 189 MB with the bound counted so; docs/benchmarks.md, "ecj over longer
//! sessions").

use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where each kept chunk is.
enum Kept {
    Heap(Vec<u8>),
    File { offset: u64, len: usize },
}

/// Encoded chunks, oldest first, within `limit` bytes (heap capacities and file lengths).
pub struct ChunkMemory {
    chunks: VecDeque<Kept>,
    spill: Option<Spill>,
    /// Heap bytes the chunks hold (their capacities).
    heap: usize,
    /// Bytes of the chunks in the file.
    on_disk: usize,
    limit: usize,
    dropped: u64,
    /// Why chunks are kept in the heap: no file could be made, or it failed to take one (the
    /// first error; the later chunks stay in the heap too).
    in_heap_why: Option<String>,
}

impl ChunkMemory {
    /// Keeps at most `limit` bytes of chunks (and always the newest, whatever its size), in
    /// `spill`'s file or, with `Err(why)`, in the heap.
    pub fn new(limit: usize, spill: Result<Spill, String>) -> ChunkMemory {
        let (spill, in_heap_why) = match spill {
            Ok(s) => (Some(s), None),
            Err(why) => (None, Some(why)),
        };
        ChunkMemory { chunks: VecDeque::new(), spill, heap: 0, on_disk: 0, limit, dropped: 0, in_heap_why }
    }

    /// Keeps `chunk` (in the file, or in the heap trimmed to its length), dropping the oldest
    /// past the limit.
    pub fn push(&mut self, mut chunk: Vec<u8>) {
        let spill = self.spill.as_mut().filter(|_| self.in_heap_why.is_none());
        let kept = match spill.map(|s| s.append(&chunk)) {
            Some(Ok(offset)) => {
                self.on_disk += chunk.len();
                Kept::File { offset, len: chunk.len() }
            }
            failed => {
                if let Some(Err(e)) = failed {
                    self.in_heap_why = Some(format!("writing the file failed: {e}"));
                }
                chunk.shrink_to_fit();
                self.heap += chunk.capacity();
                Kept::Heap(chunk)
            }
        };
        self.chunks.push_back(kept);
        while self.heap + self.on_disk > self.limit && self.chunks.len() > 1 {
            match self.chunks.pop_front() {
                Some(Kept::Heap(old)) => self.heap -= old.capacity(),
                Some(Kept::File { len, .. }) => self.on_disk -= len,
                None => break,
            }
            self.dropped += 1;
        }
        // The file gives back what no kept chunk is in: up to the oldest kept in it.
        if let Some(s) = &mut self.spill {
            let first = self.chunks.iter().find_map(|k| match k {
                Kept::File { offset, .. } => Some(*offset),
                Kept::Heap(_) => None,
            });
            s.release_before(first.unwrap_or(s.end));
        }
    }

    /// Chunks dropped for the limit so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Heap bytes held.
    pub fn held(&self) -> usize {
        self.heap
    }

    /// Bytes kept in the file.
    pub fn on_disk(&self) -> usize {
        self.on_disk
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Where the chunks are kept, for `status`: the file's directory, or why in the heap.
    pub fn place(&self) -> String {
        match (&self.spill, &self.in_heap_why) {
            (Some(s), None) => format!("in an unlinked file in {}", s.dir.display()),
            (_, Some(why)) => format!("in memory ({why})"),
            (None, None) => "in memory".to_string(),
        }
    }

    /// The chunks kept, oldest first, as one JFR file.
    pub fn file(&self) -> Result<Vec<u8>, String> {
        let len = self.chunks.iter().map(|k| match k {
            Kept::Heap(c) => c.len(),
            Kept::File { len, .. } => *len,
        });
        let mut out = Vec::with_capacity(len.sum());
        for k in &self.chunks {
            match (k, &self.spill) {
                (Kept::Heap(c), _) => out.extend_from_slice(c),
                (Kept::File { offset, len }, Some(s)) => {
                    let start = out.len();
                    out.resize(start + len, 0);
                    s.file.read_exact_at(&mut out[start..], *offset).map_err(|e| {
                        format!("cannot read the JFR kept in an unlinked file in {}: {e}", s.dir.display())
                    })?;
                }
                (Kept::File { .. }, None) => return Err("the JFR kept in a file is gone".into()),
            }
        }
        Ok(out)
    }
}

/// An unlinked file (`O_TMPFILE`: never named, so nobody can open, replace or redirect it, and
/// gone when closed) that chunks are appended to, the space of dropped ones given back by
/// punching holes.
pub struct Spill {
    file: File,
    dir: PathBuf,
    /// Where the next chunk goes.
    end: u64,
    /// Everything before this is a hole.
    released: u64,
}

/// `statfs` magic numbers of file systems in memory, where a file saves no memory.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

impl Spill {
    /// A file in the first of `dirs` that can hold one; `Err` says why none could.
    pub fn open(dirs: &[PathBuf]) -> Result<Spill, String> {
        let mut why = Vec::new();
        for d in dirs {
            match Spill::open_in(d) {
                Ok(s) => return Ok(s),
                Err(e) => why.push(format!("{}: {e}", d.display())),
            }
        }
        Err(if why.is_empty() { "no directory for it".to_string() } else { why.join("; ") })
    }

    /// The directories tried by default: `/var/tmp` (on a disk by convention; `/tmp` is often
    /// in memory), then the process's temporary directory (`TMPDIR`, else `/tmp`).
    pub fn default_dirs() -> Vec<PathBuf> {
        let mut dirs = vec![PathBuf::from("/var/tmp")];
        let tmp = std::env::temp_dir();
        if !dirs.contains(&tmp) {
            dirs.push(tmp);
        }
        dirs
    }

    /// An unlinked file in `dir`: a directory named without a symbolic link at its end, owned
    /// by root or by this user, not in memory, whose file system gives back a hole's space.
    pub fn open_in(dir: &Path) -> Result<Spill, String> {
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| "a NUL in the path".to_string())?;
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `c` is a NUL-terminated path; the flags open no file for reading or writing.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let dir_fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: an all-zero `stat` is a valid value for fstat to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `dir_fd` is open; `st` is a writable stat.
        if unsafe { libc::fstat(dir_fd.as_raw_fd(), &mut st) } != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if st.st_uid != 0 && st.st_uid != me {
            return Err(format!("owned by uid {}, neither root nor this user", st.st_uid));
        }
        // SAFETY: an all-zero `statfs` is a valid value for fstatfs to overwrite.
        let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `dir_fd` is open; `fs` is a writable statfs.
        if unsafe { libc::fstatfs(dir_fd.as_raw_fd(), &mut fs) } != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        #[allow(clippy::unnecessary_cast, reason = "f_type's type differs between libc targets")]
        if matches!(fs.f_type as i64, TMPFS_MAGIC | RAMFS_MAGIC) {
            return Err("in memory (tmpfs)".into());
        }
        // SAFETY: `dir_fd` is an open directory (O_PATH serves as a directory for *at calls);
        // "." names it; the file is made unnamed, readable and writable by this user only.
        let fd = unsafe {
            libc::openat(dir_fd.as_raw_fd(), c".".as_ptr(), libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, 0o600)
        };
        if fd < 0 {
            return Err(format!("no unlinked file: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        // The space of dropped chunks must come back: a page written and punched out again.
        let page = [0u8; 4096];
        file.write_all_at(&page, 0).map_err(|e| format!("cannot write an unlinked file: {e}"))?;
        punch(&file, 0, page.len() as u64).map_err(|e| format!("no holes: {e}"))?;
        file.set_len(0).map_err(|e| e.to_string())?;
        Ok(Spill { file, dir: dir.to_path_buf(), end: 0, released: 0 })
    }

    /// The directory it is in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends `bytes`; where they start.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<u64> {
        let at = self.end;
        if let Err(e) = self.file.write_all_at(bytes, at) {
            // What was written of it is given back with the next release.
            self.end = self.file.metadata().map_or(at, |m| m.len().max(at));
            return Err(e);
        }
        self.end = at + bytes.len() as u64;
        Ok(at)
    }

    /// Gives the space before `offset` back to the file system.
    fn release_before(&mut self, offset: u64) {
        if offset > self.released && punch(&self.file, self.released, offset - self.released).is_ok() {
            self.released = offset;
        }
    }
}

/// Punches a hole of `len` bytes at `offset` (the file's length unchanged).
fn punch(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    };
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: `file` is open for writing; fallocate reads only its arguments.
    if unsafe { libc::fallocate(file.as_raw_fd(), mode, offset, len) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of `len` bytes `b` in a buffer grown to `capacity`.
    fn chunk(len: usize, capacity: usize, b: u8) -> Vec<u8> {
        let mut c = Vec::with_capacity(capacity);
        c.resize(len, b);
        c
    }

    fn in_heap(limit: usize) -> ChunkMemory {
        ChunkMemory::new(limit, Err("a test".into()))
    }

    /// A spill file where the agent would make one; `None` where no directory can take it
    /// (all in memory: the test then says so and checks nothing more).
    fn spill() -> Option<Spill> {
        Spill::open(&Spill::default_dirs()).map_err(|e| eprintln!("no spill file: {e}")).ok()
    }

    /// Blocks of 512 bytes the file holds on disk.
    fn blocks(s: &Spill) -> u64 {
        use std::os::unix::fs::MetadataExt;
        s.file.metadata().unwrap().blocks()
    }

    #[test]
    fn the_bound_counts_the_heap_the_chunks_hold() {
        let mut m = in_heap(1000);
        // Buffers at twice their length: counted by length, ten of them were within the bound
        // while holding twice it.
        for k in 0..10u8 {
            m.push(chunk(100, 200, k));
            assert!(m.held() <= m.limit(), "{} bytes held", m.held());
        }
        assert_eq!(m.held(), 1000, "trimmed to their length");
        assert_eq!(m.dropped(), 0, "trimmed to their length, all ten fit");
        m.push(chunk(300, 300, 10));
        assert_eq!(m.dropped(), 3);
        let file = m.file().unwrap();
        assert_eq!(file.len(), 7 * 100 + 300);
        assert_eq!((file[0], file[699], file[700]), (3, 9, 10), "oldest first, the oldest dropped");
        assert_eq!(m.place(), "in memory (a test)");
    }

    #[test]
    fn the_newest_chunk_stays_whatever_its_size() {
        let mut m = in_heap(100);
        m.push(chunk(50, 50, 1));
        m.push(chunk(500, 500, 2));
        assert_eq!((m.dropped(), m.file().unwrap().len()), (1, 500));
        m.push(chunk(10, 10, 3));
        assert_eq!((m.dropped(), m.file().unwrap()), (2, vec![3; 10]));
    }

    #[test]
    fn spilled_chunks_hold_no_heap_and_give_their_space_back_when_dropped() {
        let Some(s) = spill() else { return };
        let mut m = ChunkMemory::new(1 << 20, Ok(s));
        assert!(m.place().starts_with("in an unlinked file in "), "{}", m.place());
        // Four chunks of 256 KB fill the bound: nothing in the heap, a MB on disk.
        for k in 0..4u8 {
            m.push(chunk(256 << 10, 512 << 10, k));
        }
        let s = m.spill.as_ref().unwrap();
        assert_eq!((m.held(), m.on_disk(), m.dropped()), (0, 1 << 20, 0));
        let full = blocks(s);
        assert!(full >= 2048, "{full} blocks for a MB");
        // Each further chunk drops the oldest, whose space goes back: the file's blocks stay
        // at the bound's, while what was written grows.
        for k in 4..12u8 {
            m.push(chunk(256 << 10, 256 << 10, k));
        }
        let s = m.spill.as_ref().unwrap();
        assert_eq!((m.held(), m.on_disk(), m.dropped()), (0, 1 << 20, 8));
        assert_eq!(s.end, 12 * (256 << 10));
        assert!(blocks(s) <= full + 8, "{} blocks after 3 MB written, {full} at 1 MB", blocks(s));
        let file = m.file().unwrap();
        assert_eq!(file.len(), 1 << 20);
        let firsts: Vec<u8> = file.chunks(256 << 10).map(|c| c[0]).collect();
        assert_eq!(firsts, [8, 9, 10, 11], "the newest four, oldest first");
        assert!(file.chunks(256 << 10).all(|c| c.iter().all(|b| *b == c[0])));
    }

    #[test]
    fn chunks_the_file_cannot_take_stay_in_the_heap() {
        let Some(mut s) = spill() else { return };
        // A file that refuses every write from here on (as a full disk would): its
        // descriptor reopened read-only.
        let path = format!("/proc/self/fd/{}", s.file.as_raw_fd());
        s.file = File::open(&path).unwrap();
        let mut m = ChunkMemory::new(1 << 20, Ok(s));
        m.push(chunk(100, 100, 1));
        m.push(chunk(100, 100, 2));
        assert_eq!((m.held(), m.on_disk()), (200, 0));
        assert!(m.place().starts_with("in memory (writing the file failed: "), "{}", m.place());
        assert_eq!(m.file().unwrap(), [vec![1; 100], vec![2; 100]].concat());
    }

    #[test]
    fn no_spill_file_where_it_would_save_nothing_or_is_not_ours_to_make() {
        let missing = Spill::open(&[PathBuf::from("/nonexistent-hpm-dir")]).err().unwrap();
        assert!(missing.starts_with("/nonexistent-hpm-dir: "), "{missing}");
        // A directory named through a symbolic link at its end is refused.
        let link = std::env::temp_dir().join(format!("hpm-spill-link-{}", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(std::env::temp_dir(), &link).unwrap();
        let refused = Spill::open_in(&link);
        std::fs::remove_file(&link).unwrap();
        // Refused at its opening, before anything else is looked at.
        let refused = refused.err().unwrap();
        assert!(refused.contains("Not a directory"), "{refused}");
        // /dev/shm is in memory wherever it exists.
        if Path::new("/dev/shm").is_dir() {
            let shm = Spill::open_in(Path::new("/dev/shm")).err().unwrap();
            assert!(shm.contains("in memory"), "{shm}");
        }
    }
}
