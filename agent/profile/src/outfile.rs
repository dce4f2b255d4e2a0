//! Output files that another user cannot redirect. hpm often runs as root
//! inside production JVMs and writes to paths that pass through shared directories (`/tmp`,
//! the JVM's working directory), so every file it writes follows these rules:
//!
//! - [`Target::check`] resolves the directory once, without following any symbolic link that
//!   is not owned by root or by us (the rule the kernel's `fs.protected_symlinks` applies in
//!   sticky directories, applied everywhere), and checks that the final name is absent or a
//!   regular file and that the directory is writable. It creates nothing, so a request can
//!   check all its outputs before touching any.
//! - Data goes to a new file, `NAME.part`, opened with `O_CREAT|O_EXCL|O_NOFOLLOW` relative to
//!   that directory (mode 0666 minus the umask, never wider), and [`PartFile::commit`] renames it
//!   over `NAME` when complete. A file at `NAME` is replaced, never truncated or written
//!   through; a symbolic link at `NAME` is refused with one line, never followed.
//! - Only the file hpm created is ever renamed or read back: the descriptor it was created with
//!   stays open, [`PartFile::commit`] renames `NAME.part` only while that name still holds the
//!   descriptor's inode and checks afterwards that `NAME` does, and what was written is read
//!   back through the descriptor ([`copy_at`]), never by opening the name again. Whoever can
//!   write the directory can still swap names under it; they get a refusal, never hpm's
//!   privileges (their link, FIFO or device is neither read, nor renamed as hpm's output).
//! - [`create_new`] makes a fresh file that must not exist yet (attach trigger and reply files).
//! - [`Target::id`] says which file a target writes (its directory's device and inode, and its
//!   name), so that two outputs of one file are told apart from their paths' strings
//!   ([`TargetId::clash`]): `a.jfr`, `./a.jfr` and a link to the directory are one file.
//!
//! A JVM killed while profiling leaves its JFR in `NAME.part`, readable up to the last flush.

use std::ffi::{CString, OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

/// The kernel's own limit on symbolic links followed while resolving one path.
const MAX_LINKS: usize = 40;
/// The suffix of the file being written.
pub const PART_SUFFIX: &str = ".part";

/// Why an output cannot be written; its `Display` is the one line the user sees.
#[derive(Debug)]
pub struct OutputError {
    pub path: PathBuf,
    pub kind: ErrorKind,
}

#[derive(Debug)]
pub enum ErrorKind {
    /// `NAME` is a symbolic link.
    SymlinkAtTarget,
    /// A directory on the way is a symbolic link owned by another user.
    UntrustedSymlink {
        link: PathBuf,
        owner: u32,
    },
    /// `NAME` exists and is not a regular file (a directory, a FIFO, a device...).
    NotRegular,
    /// A component of the directory is not a directory.
    NotADirectory(PathBuf),
    /// The path names no file (empty, `.`, `..`, ending in `/`).
    NoFileName,
    /// `NAME.part` exists: a run still writing it, or one that was killed.
    PartExists,
    /// `create_new`: the file exists.
    Exists,
    /// `NAME.part` (`part: true`) or, just after the rename, `NAME` no longer holds the file
    /// hpm created: someone who can write the directory replaced it.
    Replaced {
        part: bool,
    },
    TooManyLinks,
    /// The directory is missing, unreadable or not writable.
    Dir(&'static str, std::io::Error),
    /// A system call failed.
    Io(&'static str, std::io::Error),
}

impl OutputError {
    fn new(path: &Path, kind: ErrorKind) -> OutputError {
        OutputError { path: path.to_path_buf(), kind }
    }

    /// The error number behind an `Io` failure, if any.
    pub fn raw_os_error(&self) -> Option<i32> {
        match &self.kind {
            ErrorKind::Io(_, e) | ErrorKind::Dir(_, e) => e.raw_os_error(),
            _ => None,
        }
    }
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match &self.kind {
            ErrorKind::SymlinkAtTarget => write!(
                f,
                "refusing to write {p}: it is a symbolic link, and hpm never writes through one; remove it or choose another path"
            ),
            ErrorKind::UntrustedSymlink { link, owner } => write!(
                f,
                "refusing to write {p}: {} is a symbolic link owned by uid {owner}, and hpm follows links only when \
                 root or you own them; give the real directory",
                link.display()
            ),
            ErrorKind::NotRegular => write!(f, "refusing to write {p}: it exists and is not a regular file"),
            ErrorKind::NotADirectory(d) => write!(f, "cannot write {p}: {} is not a directory", d.display()),
            ErrorKind::NoFileName => write!(f, "cannot write {p}: the path names no file"),
            ErrorKind::PartExists => write!(
                f,
                "cannot write {p}: {p}{PART_SUFFIX} exists (another run is writing it, or a killed run left its profile \
                 there, readable as it is by hpm report: move it away)"
            ),
            ErrorKind::Exists => write!(f, "cannot create {p}: it exists already"),
            ErrorKind::Replaced { part: true } => write!(
                f,
                "did not write {p}: {p}{PART_SUFFIX} was replaced by another file while hpm wrote it (someone who can \
                 write the directory did so), and hpm renames only the file it created; write to a directory only you \
                 can write"
            ),
            ErrorKind::Replaced { part: false } => write!(
                f,
                "did not write {p}: another file took its place as hpm renamed its {PART_SUFFIX} (someone who can write \
                 the directory did so); write to a directory only you can write"
            ),
            ErrorKind::TooManyLinks => write!(f, "cannot write {p}: more than {MAX_LINKS} symbolic links on the way"),
            ErrorKind::Dir(what, e) => {
                write!(f, "cannot write {p}: {what} ({e}); give a path in a writable directory")
            }
            ErrorKind::Io(op, e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                write!(f, "cannot write {p}: {op}: {e}; give a path in a directory this user can reach and write")
            }
            ErrorKind::Io(op, e) => write!(f, "cannot write {p}: {op}: {e}"),
        }
    }
}

impl std::error::Error for OutputError {}

fn last_error(path: &Path, op: &'static str) -> OutputError {
    OutputError::new(path, ErrorKind::Io(op, std::io::Error::last_os_error()))
}

fn cstr(path: &Path, s: &OsStr) -> Result<CString, OutputError> {
    CString::new(s.as_bytes()).map_err(|_| {
        OutputError::new(path, ErrorKind::Io("path", std::io::Error::from(std::io::ErrorKind::InvalidInput)))
    })
}

pub(crate) fn stat_at(dir: RawFd, name: &CString, nofollow: bool) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let flags = libc::AT_EMPTY_PATH | if nofollow { libc::AT_SYMLINK_NOFOLLOW } else { 0 };
    // SAFETY: `dir` is an open descriptor (or AT_FDCWD), `name` NUL-terminated, `st` writable.
    let rc = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, flags) };
    if rc == 0 {
        Ok(st)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

pub(crate) fn open_at(dir: RawFd, name: &CString, flags: i32, mode: libc::mode_t) -> std::io::Result<OwnedFd> {
    // SAFETY: `dir` is an open descriptor (or AT_FDCWD), `name` NUL-terminated; `mode` is read
    // only with O_CREAT or O_TMPFILE.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, libc::c_uint::from(mode)) };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        // SAFETY: the kernel returned a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Opens directory `dir` (O_PATH), following symbolic links only when root or the effective
/// user owns them. `shown` is the whole path, for messages.
fn open_dir(shown: &Path, dir: &Path) -> Result<OwnedFd, OutputError> {
    let dot = CString::new(".").expect("no NUL");
    let root = CString::new("/").expect("no NUL");
    let path_flags = libc::O_PATH | libc::O_DIRECTORY;
    let start = if dir.is_absolute() { &root } else { &dot };
    let mut fd =
        open_at(libc::AT_FDCWD, start, path_flags, 0).map_err(|e| OutputError::new(shown, ErrorKind::Io("open", e)))?;
    // Components still to walk, first at the end; the path walked so far, for messages.
    let mut todo: Vec<OsString> = dir.components().rev().filter_map(component_name).collect();
    let mut walked = if dir.is_absolute() { PathBuf::from("/") } else { PathBuf::new() };
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == "." {
            continue;
        }
        let c = cstr(shown, &name)?;
        let next = open_at(fd.as_raw_fd(), &c, libc::O_PATH | libc::O_NOFOLLOW, 0).map_err(|e| {
            let what =
                if e.raw_os_error() == Some(libc::ENOENT) { "no such directory" } else { "cannot open the directory" };
            OutputError::new(shown, ErrorKind::Dir(what, e))
        })?;
        let st = stat_at(next.as_raw_fd(), &CString::default(), true)
            .map_err(|e| OutputError::new(shown, ErrorKind::Io("stat", e)))?;
        walked.push(&name);
        if is_kind(&st, libc::S_IFLNK) {
            if st.st_uid != 0 && st.st_uid != euid() {
                return Err(OutputError::new(shown, ErrorKind::UntrustedSymlink { link: walked, owner: st.st_uid }));
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(OutputError::new(shown, ErrorKind::TooManyLinks));
            }
            let target =
                read_link_at(fd.as_raw_fd(), &c).map_err(|e| OutputError::new(shown, ErrorKind::Io("readlink", e)))?;
            walked.pop();
            let target = PathBuf::from(target);
            if target.is_absolute() {
                fd = open_at(libc::AT_FDCWD, &root, path_flags, 0)
                    .map_err(|e| OutputError::new(shown, ErrorKind::Io("open", e)))?;
                walked = PathBuf::from("/");
            }
            todo.extend(target.components().rev().filter_map(component_name));
        } else if is_kind(&st, libc::S_IFDIR) {
            fd = next;
        } else {
            return Err(OutputError::new(shown, ErrorKind::NotADirectory(walked)));
        }
    }
    Ok(fd)
}

fn component_name(c: Component<'_>) -> Option<OsString> {
    match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
    }
}

fn read_link_at(dir: RawFd, name: &CString) -> std::io::Result<OsString> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` has `buf.len()` writable bytes; readlinkat writes at most that many.
    let n = unsafe { libc::readlinkat(dir, name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(OsString::from_vec(buf))
}

/// A checked output path: its directory, opened once, and the final name in it.
#[derive(Debug)]
pub struct Target {
    dir: OwnedFd,
    name: CString,
    part: CString,
    path: PathBuf,
}

impl Target {
    /// Checks that `path` can be written without following another user's link or writing
    /// through anything but a new file. Creates nothing.
    pub fn check(path: impl AsRef<Path>) -> Result<Target, OutputError> {
        let path = path.as_ref();
        let bytes = path.as_os_str().as_bytes();
        let name = match path.file_name() {
            Some(n) if !bytes.ends_with(b"/") => n,
            _ => return Err(OutputError::new(path, ErrorKind::NoFileName)),
        };
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let dir = open_dir(path, parent)?;
        let mut part = name.to_os_string();
        part.push(PART_SUFFIX);
        let t = Target { dir, name: cstr(path, name)?, part: cstr(path, &part)?, path: path.to_path_buf() };
        t.check_final()?;
        match stat_at(t.dir.as_raw_fd(), &t.part, true) {
            Ok(_) => return Err(OutputError::new(path, ErrorKind::PartExists)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(OutputError::new(path, ErrorKind::Io("stat", e))),
        }
        // SAFETY: `dir` is an open directory descriptor and "." a NUL-terminated name in it.
        let rc =
            unsafe { libc::faccessat(t.dir.as_raw_fd(), c".".as_ptr(), libc::W_OK | libc::X_OK, libc::AT_EACCESS) };
        if rc != 0 {
            return Err(OutputError::new(
                path,
                ErrorKind::Dir("the directory is not writable", std::io::Error::last_os_error()),
            ));
        }
        Ok(t)
    }

    /// The final name is absent or a regular file.
    fn check_final(&self) -> Result<(), OutputError> {
        match stat_at(self.dir.as_raw_fd(), &self.name, true) {
            Ok(st) if is_kind(&st, libc::S_IFLNK) => Err(OutputError::new(&self.path, ErrorKind::SymlinkAtTarget)),
            Ok(st) if !is_kind(&st, libc::S_IFREG) => Err(OutputError::new(&self.path, ErrorKind::NotRegular)),
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            Err(e) => Err(OutputError::new(&self.path, ErrorKind::Io("stat", e))),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which file this is: the directory as opened (device and inode) and the final name, so
    /// that `a.jfr`, `./a.jfr` and `dir/../a.jfr` compare equal where their strings do not.
    pub fn id(&self) -> Result<TargetId, OutputError> {
        let st = stat_at(self.dir.as_raw_fd(), &CString::default(), false)
            .map_err(|e| OutputError::new(&self.path, ErrorKind::Io("stat", e)))?;
        Ok(TargetId { dev: st.st_dev, ino: st.st_ino, name: self.name.as_bytes().to_vec() })
    }

    /// Where the data grows until [`PartFile::commit`]: `NAME.part`.
    pub fn part_path(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(PART_SUFFIX);
        PathBuf::from(p)
    }

    /// Creates `NAME.part` (new, exclusive, no link followed), open for reading too: what is
    /// written is read back through this descriptor, never through the name.
    pub fn create_part(self) -> Result<PartFile, OutputError> {
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let fd = open_at(self.dir.as_raw_fd(), &self.part, flags, 0o666).map_err(|e| {
            if e.raw_os_error() == Some(libc::EEXIST) {
                OutputError::new(&self.path, ErrorKind::PartExists)
            } else {
                OutputError::new(&self.part_path(), ErrorKind::Io("create", e))
            }
        })?;
        Ok(PartFile { file: File::from(fd), target: self })
    }

    /// Writes `bytes` as the whole new content of the file (through `NAME.part`).
    pub fn write_all(self, bytes: &[u8]) -> Result<(), OutputError> {
        self.write_with(|f| f.write_all(bytes))
    }

    /// Writes the whole new content of the file with `fill` (through `NAME.part`, committed
    /// when `fill` succeeds, removed when it fails): for content streamed from elsewhere.
    pub fn write_with(self, fill: impl FnOnce(&mut File) -> std::io::Result<()>) -> Result<(), OutputError> {
        let mut part = self.create_part()?;
        if let Err(e) = fill(&mut part.file) {
            let path = part.target.part_path();
            part.discard();
            return Err(OutputError::new(&path, ErrorKind::Io("write", e)));
        }
        part.commit()
    }
}

/// Which file a [`Target`] writes: its directory's device and inode, and its final name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetId {
    dev: u64,
    ino: u64,
    name: Vec<u8>,
}

impl TargetId {
    /// Whether writing both would touch one file: the same name in the same directory, or one's
    /// `NAME.part` (where its data grows, renamed over `NAME` at the end) is the other's name.
    /// (No output format has the extension `.part` today, so the agent refuses such a name
    /// before it gets here; this keeps the rule whole should that change.)
    pub fn clash(&self, other: &TargetId) -> Option<Clash> {
        if (self.dev, self.ino) != (other.dev, other.ino) {
            return None;
        }
        let part_of = |a: &[u8], b: &[u8]| a.strip_suffix(PART_SUFFIX.as_bytes()) == Some(b);
        if self.name == other.name {
            Some(Clash::Same)
        } else if part_of(&self.name, &other.name) {
            Some(Clash::PartOf)
        } else if part_of(&other.name, &self.name) {
            Some(Clash::HasPart)
        } else {
            None
        }
    }
}

/// How two outputs collide ([`TargetId::clash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clash {
    /// They name the same file.
    Same,
    /// The first is the second's `NAME.part`.
    PartOf,
    /// The second is the first's `NAME.part`.
    HasPart,
}

/// The new file being written, `NAME.part`, until it is renamed over `NAME`.
#[derive(Debug)]
pub struct PartFile {
    file: File,
    target: Target,
}

impl PartFile {
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// The file created, for reading back what was written (see [`copy_at`]).
    pub fn created(&self) -> &File {
        &self.file
    }

    /// The final path (not the `.part` being written).
    pub fn path(&self) -> &Path {
        &self.target.path
    }

    pub fn part_path(&self) -> PathBuf {
        self.target.part_path()
    }

    /// Makes the data durable and renames `NAME.part` over `NAME`. If a symbolic link or a
    /// non-file appeared at `NAME` meanwhile, the data stays in `NAME.part` and the error says so.
    /// Only the file this `PartFile` created is renamed: if `NAME.part` names another (someone
    /// replaced it), nothing is renamed; if `NAME` does not hold it just after the rename (a swap
    /// at that very moment), the error says so. The file stays open (see [`Self::file`]).
    pub fn commit(&self) -> Result<(), OutputError> {
        self.file.sync_all().map_err(|e| OutputError::new(&self.target.part_path(), ErrorKind::Io("fsync", e)))?;
        self.target.check_final()?;
        if !self.holds_ours(&self.target.part)? {
            return Err(OutputError::new(&self.target.path, ErrorKind::Replaced { part: true }));
        }
        let d = self.target.dir.as_raw_fd();
        // SAFETY: both names are NUL-terminated and relative to the same open directory.
        let rc = unsafe { libc::renameat(d, self.target.part.as_ptr(), d, self.target.name.as_ptr()) };
        if rc != 0 {
            return Err(last_error(&self.target.path, "rename"));
        }
        if !self.holds_ours(&self.target.name)? {
            return Err(OutputError::new(&self.target.path, ErrorKind::Replaced { part: false }));
        }
        Ok(())
    }

    /// Whether `name` in the directory is this file (same device and inode; a link there is
    /// not followed).
    fn holds_ours(&self, name: &CString) -> Result<bool, OutputError> {
        let ours = stat_at(self.file.as_raw_fd(), &CString::default(), true)
            .map_err(|e| OutputError::new(&self.target.part_path(), ErrorKind::Io("stat", e)))?;
        match stat_at(self.target.dir.as_raw_fd(), name, true) {
            Ok(st) => Ok(st.st_dev == ours.st_dev && st.st_ino == ours.st_ino),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(OutputError::new(&self.target.path, ErrorKind::Io("stat", e))),
        }
    }

    /// Removes `NAME.part` (the output is abandoned), if it is still the file created.
    pub fn discard(self) {
        if let Ok(true) = self.holds_ours(&self.target.part) {
            // SAFETY: the name is NUL-terminated and relative to the open directory.
            unsafe { libc::unlinkat(self.target.dir.as_raw_fd(), self.target.part.as_ptr(), 0) };
        }
    }
}

/// The size of the buffer [`copy_at`] copies through: what a copy holds in memory at once.
pub const COPY_BUFFER: usize = 1 << 20;

/// Copies `len` bytes of `src` from `offset` into `out`, through one buffer of at most
/// [`COPY_BUFFER`] bytes: a file hpm wrote, read back through its own descriptor, never whole
/// in memory. A file shorter than `len` (cut by someone) is an error, not a shorter copy.
pub fn copy_at(src: &File, offset: u64, len: u64, out: &mut dyn Write) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; COPY_BUFFER.min(usize::try_from(len).unwrap_or(COPY_BUFFER))];
    let mut done = 0u64;
    while done < len {
        let n = buf.len().min(usize::try_from(len - done).unwrap_or(buf.len()));
        src.read_exact_at(&mut buf[..n], offset + done)?;
        out.write_all(&buf[..n])?;
        done += n as u64;
    }
    Ok(())
}

/// Creates a file that must not exist yet (no link followed, none replaced), mode 0666 minus
/// the umask; the directory is resolved as for [`Target::check`].
pub fn create_new(path: impl AsRef<Path>) -> Result<File, OutputError> {
    let path = path.as_ref();
    let name = path.file_name().ok_or_else(|| OutputError::new(path, ErrorKind::NoFileName))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = open_dir(path, parent)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let fd = open_at(dir.as_raw_fd(), &cstr(path, name)?, flags, 0o666).map_err(|e| match e.raw_os_error() {
        Some(libc::EEXIST) => OutputError::new(path, ErrorKind::Exists),
        _ => OutputError::new(path, ErrorKind::Io("create", e)),
    })?;
    Ok(File::from(fd))
}

/// Checks then writes `bytes` to `path` through `path.part` (the common case).
pub fn write(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), OutputError> {
    Target::check(path)?.write_all(bytes)
}

#[cfg(test)]
#[path = "outfile_tests.rs"]
mod tests;
