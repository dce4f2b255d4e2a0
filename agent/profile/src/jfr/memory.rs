//! JFR chunks kept for a session that writes no JFR file, so that `dump,file=X.jfr` (and a
//! pprof or JSON dump, read back from them) can still be made: at most a bound of bytes, the
//! oldest chunks dropped first and counted.
//!
//! The chunks go to an unlinked file ([`Spill`]) where a directory on a disk can take one, as
//! JFR keeps its chunks in a repository on disk rather than in the JVM's memory: the agent's
//! heap then holds none of them. The file is a ring as long as the bound: a chunk is written
//! after the newest, or at the start when it does not fit there, over the oldest (dropped
//! first), so its length never passes the bound. Where no file can be made (no such
//! directory, one in memory such as tmpfs, a file system without `O_TMPFILE`, too little free
//! space), and for a chunk the file failed to take, they stay in the heap.
//!
//! In the heap the bound counts what the chunks hold, not their length: a chunk is encoded
//! into a growing buffer whose capacity is up to twice its length, and a bound on lengths
//! held up to twice the bound (ecj at 1 ms with a collapsed output alone: 249 MB of agent heap
//! at five minutes, 189 MB with the bound counted so; docs/benchmarks.md, "ecj over longer
//! sessions").

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::outfile::{euid, open_at, stat_at};

/// Where each kept chunk is.
enum Kept {
    Heap(Vec<u8>),
    File { offset: u64, len: usize },
}

impl Kept {
    #[cfg(test)]
    fn len(&self) -> usize {
        match self {
            Kept::Heap(c) => c.len(),
            Kept::File { len, .. } => *len,
        }
    }

    /// Whether it is in the file and overlaps `len` bytes at `at`.
    fn overlaps(&self, at: u64, len: usize) -> bool {
        match self {
            Kept::File { offset, len: l } => *offset < at + len as u64 && at < offset + *l as u64,
            Kept::Heap(_) => false,
        }
    }
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
    /// Why chunks are kept in the heap: no file could be made, or the last chunk the file
    /// failed to take (each chunk is offered to the file first).
    in_heap_why: Option<String>,
}

/// What [`ChunkMemory`] keeps, for `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeptNow {
    /// Heap bytes.
    pub heap: usize,
    /// Bytes in the file.
    pub on_disk: usize,
    /// The file's directory, if there is a file.
    pub dir: Option<PathBuf>,
    /// Why chunks are (or would be) in the heap, if they are.
    pub in_heap_why: Option<String>,
}

impl KeptNow {
    /// `status`'s line: how much, of at most `limit` bytes, where.
    pub fn line(&self, limit: usize) -> String {
        let kb = |b: usize| b / 1024;
        let mut parts = Vec::new();
        if let Some(dir) = &self.dir {
            parts.push(format!("{} KB in an unlinked file in {}", kb(self.on_disk), dir.display()));
        }
        parts.push(match (&self.in_heap_why, &self.dir) {
            (None, _) => format!("{} KB in memory", kb(self.heap)),
            (Some(why), Some(_)) => format!("{} KB in memory ({why})", kb(self.heap)),
            (Some(why), None) => format!(
                "{} KB in memory (no file for it: {why}; set TMPDIR to a directory on a disk, owned by you or root, for the JVM's next start to keep it there)",
                kb(self.heap)
            ),
        });
        format!(
            "JFR kept for dump (no JFR file): {} KB of at most {} KB: {}",
            kb(self.heap + self.on_disk),
            kb(limit),
            parts.join(", ")
        )
    }
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
    /// past the limit, and those the file's ring writes it over.
    pub fn push(&mut self, mut chunk: Vec<u8>) {
        let kept = self.spill_at(chunk.len()).and_then(|at| self.write_in_file(at, &chunk));
        let kept = kept.unwrap_or_else(|| {
            chunk.shrink_to_fit();
            self.heap += chunk.capacity();
            Kept::Heap(chunk)
        });
        self.chunks.push_back(kept);
        while self.heap + self.on_disk > self.limit && self.chunks.len() > 1 {
            self.drop_oldest();
        }
        self.trim_file();
    }

    /// Writes `chunk` into the file at `at`, over the chunks there (dropped first: on a failed
    /// write they may be gone); `None` when the write fails (said in `in_heap_why`).
    fn write_in_file(&mut self, at: u64, chunk: &[u8]) -> Option<Kept> {
        while self.chunks.iter().any(|k| k.overlaps(at, chunk.len())) {
            self.drop_oldest();
        }
        match self.spill.as_mut()?.write_at(at, chunk) {
            Ok(()) => {
                self.in_heap_why = None;
                self.on_disk += chunk.len();
                Some(Kept::File { offset: at, len: chunk.len() })
            }
            Err(e) => {
                self.in_heap_why = Some(format!("writing the file failed: {e}"));
                None
            }
        }
    }

    /// Cuts the file back to the limit once no kept chunk lies past it: a chunk longer than
    /// the limit made it longer, and it is not to stay so when that chunk is gone.
    fn trim_file(&mut self) {
        let Some(s) = self.spill.as_mut().filter(|s| s.len > self.limit as u64) else { return };
        let limit = self.limit as u64;
        let past = self.chunks.iter().any(|k| matches!(k, Kept::File { offset, len } if offset + *len as u64 > limit));
        if !past && s.file.set_len(limit).is_ok() {
            s.len = limit;
            s.end = s.end.min(limit);
        }
    }

    /// Where in the file a chunk of `len` bytes goes: after the newest, or at the start when
    /// the ring (as long as the limit, or as the chunk when that is longer) has no room left.
    fn spill_at(&self, len: usize) -> Option<u64> {
        let s = self.spill.as_ref()?;
        let ring = self.limit.max(len) as u64;
        Some(if s.end + len as u64 <= ring { s.end } else { 0 })
    }

    fn drop_oldest(&mut self) {
        match self.chunks.pop_front() {
            Some(Kept::Heap(old)) => self.heap -= old.capacity(),
            Some(Kept::File { len, .. }) => self.on_disk -= len,
            None => return,
        }
        self.dropped += 1;
    }

    /// Chunks dropped for the limit so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How much is kept, and where.
    pub fn now(&self) -> KeptNow {
        KeptNow {
            heap: self.heap,
            on_disk: self.on_disk,
            dir: self.spill.as_ref().map(|s| s.dir.clone()),
            in_heap_why: self.in_heap_why.clone(),
        }
    }

    /// Copies the chunks kept, oldest first, to `out` as one JFR file: those in the file through
    /// a bounded buffer, never the whole file in memory at once.
    pub fn copy_to(&self, out: &mut dyn std::io::Write) -> Result<(), String> {
        for k in &self.chunks {
            match (k, &self.spill) {
                (Kept::Heap(c), _) => out.write_all(c).map_err(|e| format!("cannot write the JFR kept: {e}"))?,
                (Kept::File { offset, len }, Some(s)) => crate::outfile::copy_at(&s.file, *offset, *len as u64, out)
                    .map_err(|e| format!("cannot copy the JFR kept in an unlinked file in {}: {e}", s.dir.display()))?,
                (Kept::File { .. }, None) => return Err("the JFR kept in a file is gone".into()),
            }
        }
        Ok(())
    }

    /// The chunks kept, oldest first, as one JFR file in memory (tests).
    #[cfg(test)]
    fn file(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        self.copy_to(&mut out)?;
        Ok(out)
    }
}

/// An unlinked file (`O_TMPFILE|O_EXCL`: never named, and never to be given a name, so nobody
/// can open, replace or redirect it through one; gone when closed) that chunks are written to.
pub struct Spill {
    file: File,
    /// Its directory, as the kernel names it (symbolic links on the way resolved).
    dir: PathBuf,
    /// Where the newest chunk ends.
    end: u64,
    /// The file's length: the limit, or the longest chunk's while it is kept.
    len: u64,
}

/// `statfs` magic numbers of file systems in memory, where a file saves no memory.
const TMPFS_MAGIC: u32 = 0x0102_1994;
const RAMFS_MAGIC: u32 = 0x8584_58f6;

/// Free space a directory must have for the file, in multiples of the file's bound: the file
/// is not to be what fills a disk.
pub const FREE_SPACE_FACTOR: u64 = 4;

impl Spill {
    /// A file of at most `bound` bytes in the first of `dirs` that can hold one; `Err` says
    /// why none could.
    pub fn open(dirs: &[PathBuf], bound: usize) -> Result<Spill, String> {
        let mut why = Vec::new();
        for d in dirs {
            match Spill::open_in(d, bound) {
                Ok(s) => return Ok(s),
                Err(e) => why.push(format!("{}: {e}", d.display())),
            }
        }
        Err(if why.is_empty() { "no directory for it".to_string() } else { why.join(", ") })
    }

    /// The directories tried by default: `TMPDIR` when set (the user's choice), then
    /// `/var/tmp` (on a disk by convention; `/tmp` is often in memory), then `/tmp`. Reads the
    /// environment: the agent calls it once, when it is set up.
    pub fn default_dirs() -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> =
            std::env::var_os("TMPDIR").filter(|d| !d.is_empty()).map(PathBuf::from).into_iter().collect();
        for d in ["/var/tmp", "/tmp"] {
            if !dirs.iter().any(|x| x == Path::new(d)) {
                dirs.push(PathBuf::from(d));
            }
        }
        dirs
    }

    /// An unlinked file in `dir`: a directory named without a symbolic link at its end, owned
    /// by root or by this user, not in memory, with [`FREE_SPACE_FACTOR`] times `bound` free.
    pub fn open_in(dir: &Path, bound: usize) -> Result<Spill, String> {
        let dir_fd = open_dir(dir)?;
        // The directory itself (an empty name: AT_EMPTY_PATH).
        let st = stat_at(dir_fd.as_raw_fd(), &CString::default(), true).map_err(|e| e.to_string())?;
        if st.st_uid != 0 && st.st_uid != euid() {
            return Err(format!("owned by uid {}, neither root nor this user", st.st_uid));
        }
        // SAFETY: an all-zero `statfs` is a valid value for fstatfs to overwrite.
        let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `dir_fd` is open; `fs` is a writable statfs.
        if unsafe { libc::fstatfs(dir_fd.as_raw_fd(), &mut fs) } != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        // The magic numbers are 32 bits; `f_type`'s width differs between targets.
        #[allow(clippy::unnecessary_cast, reason = "f_type's type differs between libc targets")]
        if matches!(fs.f_type as u32, TMPFS_MAGIC | RAMFS_MAGIC) {
            return Err("in memory (tmpfs)".into());
        }
        #[allow(clippy::unnecessary_cast, reason = "the fields' types differ between libc targets")]
        let free = (fs.f_bavail as u64).saturating_mul(fs.f_bsize as u64);
        let want = (bound as u64).saturating_mul(FREE_SPACE_FACTOR);
        if free < want {
            return Err(format!("{} MB free, fewer than {} MB", free >> 20, want >> 20));
        }
        Spill::make(dir, dir_fd)
    }

    /// The file in the directory `dir_fd` (named `dir`), whatever the directory is.
    fn make(dir: &Path, dir_fd: OwnedFd) -> Result<Spill, String> {
        // "." is the directory (O_PATH serves as a directory for *at calls); the file is made
        // unnamed, readable and writable by this user only.
        let flags = libc::O_TMPFILE | libc::O_EXCL | libc::O_RDWR;
        let file = open_at(dir_fd.as_raw_fd(), &CString::from(c"."), flags, 0o600)
            .map(File::from)
            .map_err(|e| format!("no unlinked file: {e}"))?;
        // Named as the kernel names it (what /proc/PID/fd shows).
        let dir =
            std::fs::read_link(format!("/proc/self/fd/{}", dir_fd.as_raw_fd())).unwrap_or_else(|_| dir.to_path_buf());
        Ok(Spill { file, dir, end: 0, len: 0 })
    }

    /// Writes `bytes` at `at`: the newest chunk then ends there.
    fn write_at(&mut self, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all_at(bytes, at)?;
        self.end = at + bytes.len() as u64;
        self.len = self.len.max(self.end);
        Ok(())
    }
}

/// `dir` opened as a path only, refused when its last component is a symbolic link.
fn open_dir(dir: &Path) -> Result<OwnedFd, String> {
    let c = CString::new(dir.as_os_str().as_bytes()).map_err(|_| "a NUL in the path".to_string())?;
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    open_at(libc::AT_FDCWD, &c, flags, 0).map_err(|e| e.to_string())
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

    /// A file in the system's temporary directory, or in /dev/shm: in memory or not (the
    /// checks of `open_in` are tested apart), so the ring is tested wherever `O_TMPFILE` is.
    fn spill() -> Spill {
        let dirs = [std::env::temp_dir(), PathBuf::from("/dev/shm")];
        dirs.iter().find_map(|d| Spill::make(d, open_dir(d).ok()?).ok()).expect("no directory takes an O_TMPFILE file")
    }

    /// The counters agree with the chunks, and no two chunks in the file overlap.
    fn check(m: &ChunkMemory) {
        let heap: usize =
            m.chunks.iter().filter_map(|k| if let Kept::Heap(c) = k { Some(c.capacity()) } else { None }).sum();
        let disk: usize = m.chunks.iter().filter(|k| matches!(k, Kept::File { .. })).map(Kept::len).sum();
        assert_eq!((m.heap, m.on_disk), (heap, disk));
        assert!(m.heap + m.on_disk <= m.limit || m.chunks.len() == 1);
        for (i, a) in m.chunks.iter().enumerate() {
            if let Kept::File { offset, len } = a {
                assert!(m.chunks.iter().skip(i + 1).all(|b| !b.overlaps(*offset, *len)), "chunks overlap in the file");
            }
        }
    }

    fn file_len(m: &ChunkMemory) -> u64 {
        m.spill.as_ref().unwrap().file.metadata().unwrap().len()
    }

    #[test]
    fn the_bound_counts_the_heap_the_chunks_hold() {
        let mut m = in_heap(1000);
        // Buffers at twice their length: counted by length, ten of them were within the bound
        // while holding twice it.
        for k in 0..10u8 {
            m.push(chunk(100, 200, k));
            check(&m);
        }
        assert_eq!(m.heap, 1000, "trimmed to their length");
        assert_eq!(m.dropped(), 0, "trimmed to their length, all ten fit");
        m.push(chunk(300, 300, 10));
        check(&m);
        assert_eq!(m.dropped(), 3);
        let file = m.file().unwrap();
        assert_eq!(file.len(), 7 * 100 + 300);
        assert_eq!((file[0], file[699], file[700]), (3, 9, 10), "oldest first, the oldest dropped");
        assert_eq!(m.now().in_heap_why.as_deref(), Some("a test"));
    }

    #[test]
    fn the_newest_chunk_stays_whatever_its_size() {
        let mut m = in_heap(100);
        m.push(chunk(50, 50, 1));
        m.push(chunk(500, 500, 2));
        assert_eq!((m.dropped(), m.file().unwrap().len()), (1, 500));
        m.push(chunk(10, 10, 3));
        assert_eq!((m.dropped(), m.file().unwrap()), (2, vec![3; 10]));
        // In the file too: the ring is as long as the chunk then, and the file back at the
        // limit once the chunk is gone.
        let mut m = ChunkMemory::new(100, Ok(spill()));
        m.push(chunk(50, 50, 1));
        m.push(chunk(500, 500, 2));
        check(&m);
        assert_eq!((m.dropped(), m.file().unwrap(), file_len(&m)), (1, vec![2; 500], 500));
        m.push(chunk(10, 10, 3));
        check(&m);
        assert_eq!((m.dropped(), m.file().unwrap(), m.heap, file_len(&m)), (2, vec![3; 10], 0, 100));
        m.push(chunk(60, 60, 4));
        m.push(chunk(70, 70, 5));
        check(&m);
        assert_eq!((m.file().unwrap(), file_len(&m)), (vec![5; 70], 100));
    }

    #[test]
    fn spilled_chunks_hold_no_heap_and_the_file_stays_within_the_bound() {
        let mut m = ChunkMemory::new(1 << 20, Ok(spill()));
        assert!(m.now().dir.is_some() && m.now().in_heap_why.is_none());
        // Chunks of uneven lengths, 3.5 MB in all through a 1 MB ring: nothing in the heap,
        // the file never longer than the bound, the newest kept in order.
        let lens = [300 << 10, 200 << 10, 350 << 10, 100 << 10, 250 << 10];
        for k in 0..14u8 {
            let len = lens[k as usize % lens.len()];
            m.push(chunk(len, 2 * len, k));
            check(&m);
            assert_eq!(m.heap, 0);
            assert!(file_len(&m) <= 1 << 20, "{} bytes after chunk {k}", file_len(&m));
        }
        let file = m.file().unwrap();
        let kept: Vec<(u8, usize)> = {
            let mut v: Vec<(u8, usize)> = Vec::new();
            for b in &file {
                match v.last_mut() {
                    Some((x, n)) if x == b => *n += 1,
                    _ => v.push((*b, 1)),
                }
            }
            v
        };
        let newest: Vec<(u8, usize)> = (14 - kept.len()..14).map(|k| (k as u8, lens[k % lens.len()])).collect();
        assert_eq!(kept, newest, "the newest chunks, whole, oldest first");
        assert!(m.dropped() as usize + kept.len() == 14 && kept.len() >= 3, "{kept:?}");
    }

    #[test]
    fn a_chunk_the_file_cannot_take_stays_in_the_heap_and_the_next_is_offered_again() {
        let mut m = ChunkMemory::new(1 << 20, Ok(spill()));
        m.push(chunk(100, 100, 1));
        // The file refuses writes (as a full disk would): its descriptor reopened read-only.
        let s = m.spill.as_mut().unwrap();
        let read_only = File::open(format!("/proc/self/fd/{}", s.file.as_raw_fd())).unwrap();
        let writable = std::mem::replace(&mut s.file, read_only);
        m.push(chunk(100, 100, 2));
        check(&m);
        assert_eq!((m.heap, m.on_disk), (100, 100));
        assert!(m.now().in_heap_why.is_some_and(|w| w.starts_with("writing the file failed: ")));
        // Writable again: the next chunk goes to the file, after the first.
        m.spill.as_mut().unwrap().file = writable;
        m.push(chunk(100, 100, 3));
        check(&m);
        assert_eq!((m.heap, m.on_disk, m.now().in_heap_why), (100, 200, None));
        assert_eq!(m.file().unwrap(), [vec![1; 100], vec![2; 100], vec![3; 100]].concat());
    }

    #[test]
    fn status_says_how_much_is_where_and_why_not_in_a_file() {
        let mut k = KeptNow { heap: 0, on_disk: 2 << 20, dir: Some("/var/tmp".into()), in_heap_why: None };
        assert_eq!(
            k.line(64 << 20),
            "JFR kept for dump (no JFR file): 2048 KB of at most 65536 KB: 2048 KB in an unlinked file in /var/tmp, 0 KB in memory"
        );
        (k.heap, k.in_heap_why) = (1024, Some("writing the file failed: full".into()));
        assert!(k.line(64 << 20).ends_with("/var/tmp, 1 KB in memory (writing the file failed: full)"));
        (k.dir, k.on_disk, k.in_heap_why) = (None, 0, Some("/var/tmp: in memory (tmpfs)".into()));
        let line = k.line(64 << 20);
        assert!(
            line.contains(
                ": 1 KB of at most 65536 KB: 1 KB in memory (no file for it: /var/tmp: in memory (tmpfs); set TMPDIR"
            ),
            "{line}"
        );
    }

    #[test]
    fn no_file_where_it_would_save_nothing_fill_the_disk_or_is_not_ours_to_make() {
        let missing = Spill::open(&[PathBuf::from("/nonexistent-hpm-dir")], 1 << 20).err().unwrap();
        assert!(missing.starts_with("/nonexistent-hpm-dir: "), "{missing}");
        // A directory named through a symbolic link at its end is refused at its opening.
        let link = std::env::temp_dir().join(format!("hpm-spill-link-{}", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(std::env::temp_dir(), &link).unwrap();
        let refused = Spill::open_in(&link, 1 << 20);
        std::fs::remove_file(&link).unwrap();
        let refused = refused.err().unwrap();
        assert!(refused.contains("Not a directory"), "{refused}");
        // /dev/shm is in memory wherever it exists.
        if Path::new("/dev/shm").is_dir() {
            let shm = Spill::open_in(Path::new("/dev/shm"), 1 << 20).err().unwrap();
            assert!(shm.contains("in memory"), "{shm}");
        }
        // No disk has 4 * 2^62 bytes free.
        let huge = Spill::open_in(Path::new("/"), 1 << 62).err().unwrap();
        assert!(huge.contains("MB free, fewer than"), "{huge}");
    }
}
