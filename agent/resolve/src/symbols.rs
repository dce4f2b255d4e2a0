//! Native code: `/proc/<pid>/maps` mappings and ELF symbol tables, so instruction addresses in
//! `libjvm.so`, libc or JNI libraries get a library and a (demangled) function name.
//!
//! Used off the hot path only, by the processing thread.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub exec: bool,
    pub path: String,
    /// The file's device (as `st_dev`: [`libc::makedev`] of the line's major:minor) and inode;
    /// 0 for an anonymous mapping.
    pub dev: u64,
    pub inode: u64,
}

/// Parses the text of `/proc/<pid>/maps`; unparsable lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms), Some(off)) = (it.next(), it.next(), it.next()) else { continue };
        let (Some(dev), Some(inode)) = (it.next(), it.next()) else { continue };
        let path = it.collect::<Vec<_>>().join(" ");
        let Some((s, e)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end), Ok(offset)) =
            (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16), u64::from_str_radix(off, 16))
        else {
            continue;
        };
        let dev = dev.split_once(':').and_then(|(ma, mi)| {
            Some(libc::makedev(u32::from_str_radix(ma, 16).ok()?, u32::from_str_radix(mi, 16).ok()?))
        });
        let (Some(dev), Ok(inode)) = (dev, inode.parse()) else { continue };
        out.push(Mapping { start, end, offset, exec: perms.as_bytes().get(2) == Some(&b'x'), path, dev, inode });
    }
    out
}

/// Where symbol names live: a mapped ELF file (no copy per symbol), or a buffer (a decompressed
/// `.gnu_debugdata`, or names a test gave).
enum Names {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Names {
    fn bytes(&self) -> &[u8] {
        match self {
            Names::Mapped(m) => m,
            Names::Owned(v) => v,
        }
    }
}

/// What `/proc/PID/maps` writes after the path of a file removed or replaced since it was mapped.
pub const DELETED: &str = " (deleted)";

/// Largest ELF file (a library or a debug file) hpm maps to read symbols: names are kept as
/// 32-bit offsets into the file. The biggest debug files of a JDK (libjvm's, with DWARF) are a
/// few hundred MB.
pub const MAX_ELF_FILE_BYTES: u64 = 2 << 30;

/// Largest `.gnu_debugdata` (MiniDebugInfo: an xz-compressed ELF file of symbols) once
/// decompressed. Fedora's libraries carry a few hundred KB; libjvm's would be a few MB.
pub const MAX_DEBUGDATA_BYTES: u64 = 64 << 20;

/// Memory the xz decoder may ask for a `.gnu_debugdata`, in KiB: `xz -9`'s 64 MiB dictionary
/// and its buffers. The decoder grows the dictionary with the output, which the cap above
/// bounds first.
const DEBUGDATA_DECODER_KIB: u32 = 72 * 1024;

/// Where [`SymbolTable::open_with`] looks for a library's debug file, and how much it reads.
#[derive(Clone, Debug)]
pub struct DebugSearch {
    /// The global debug directory: `ROOT/.build-id/NN/REST.debug` (by build ID) and
    /// `ROOT/LIBRARY_DIR/NAME` (by `.gnu_debuglink`).
    pub root: PathBuf,
    pub max_file_bytes: u64,
    pub max_debugdata_bytes: u64,
}

impl Default for DebugSearch {
    fn default() -> DebugSearch {
        DebugSearch {
            root: PathBuf::from("/usr/lib/debug"),
            max_file_bytes: MAX_ELF_FILE_BYTES,
            max_debugdata_bytes: MAX_DEBUGDATA_BYTES,
        }
    }
}

/// One function symbol; its name stays raw in its source until a lookup hits it: libjvm.so has
/// ~60,000 symbols, and copying or demangling them all up front was most of the agent's
/// start-up cost.
#[derive(Clone, Copy, Debug)]
struct Sym {
    addr: u64,
    size: u32,
    /// The name: `len` bytes at `off` in `SymbolTable::sources[src]`.
    off: u32,
    len: u32,
    src: u8,
    /// 0 global, 1 weak, 2 local: of several names at one address, the one with the lowest
    /// binding is shown (see `SymbolTable::merge_aliases`).
    bind: u8,
}

/// Function symbols of one ELF file and of its debug file, by file virtual address.
pub struct SymbolTable {
    /// The file itself first, then the debug file or the decompressed `.gnu_debugdata`.
    sources: Vec<Names>,
    /// Sorted by address, one per address.
    syms: Vec<Sym>,
    /// The address of every [`INDEX_STRIDE`]th symbol: a lookup searches this small array
    /// (hot in the cache) first, then one stride of `syms`, instead of all of `syms` (libjvm's
    /// 43,000: ~16 cache misses per new address).
    index: Vec<u64>,
    /// (file offset, virtual address, file size) of the file's loadable segments. A debug
    /// file's segments have no content (offset 0, size 0), so only the library's are used.
    segments: Vec<(u64, u64, u64)>,
    /// Where the names beyond the file's own came from: a debug file's path, or
    /// `.gnu_debugdata`.
    debug_source: Option<String>,
}

impl std::fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SymbolTable({} symbols", self.syms.len())?;
        match &self.debug_source {
            Some(d) => write!(f, ", with {d})"),
            None => write!(f, ")"),
        }
    }
}

impl SymbolTable {
    fn empty() -> SymbolTable {
        SymbolTable {
            sources: Vec::new(),
            syms: Vec::new(),
            index: Vec::new(),
            segments: Vec::new(),
            debug_source: None,
        }
    }

    /// Maps and indexes an ELF file with its debug symbols from the standard places.
    pub fn open(path: &str) -> Result<SymbolTable, String> {
        Self::open_with(Path::new(path), &DebugSearch::default(), &mut Vec::new())?
            .ok_or_else(|| format!("{path}: no such file"))
    }

    /// Maps and indexes an ELF file (`Ok(None)` when there is none at `path`) and adds the
    /// symbols of its debug file, looked for as gdb does: by build ID
    /// (`ROOT/.build-id/NN/REST.debug`, which must carry the same ID), then by
    /// `.gnu_debuglink` (the named file in the library's directory, its `.debug/`
    /// subdirectory and `ROOT/LIBRARY_DIR/`, whose CRC32 must match the link's); without one,
    /// the symbols of its `.gnu_debugdata` (MiniDebugInfo). A debug file that is found but
    /// refused (not a regular file, over a size limit, wrong CRC) adds one line to `notes`.
    pub fn open_with(
        path: &Path,
        search: &DebugSearch,
        notes: &mut Vec<String>,
    ) -> Result<Option<SymbolTable>, String> {
        let Some(map) = map_file(path, search.max_file_bytes, Owners::Any)? else { return Ok(None) };
        let mut table = SymbolTable::empty();
        let names = Names::Mapped(map);
        let data = names.bytes();
        let file = object::File::parse(data).map_err(|e| format!("{}: {e}", path.display()))?;
        table.add_symbols(&file, data, 0);
        table.segments = loadable_segments(&file);
        let plt = plt_ranges(&file);
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let link = file.gnu_debuglink().ok().flatten().map(|(name, crc)| (name.to_vec(), crc));
        let debugdata = file.section_by_name(".gnu_debugdata").and_then(|s| s.data().ok()).map(<[u8]>::to_vec);
        drop(file);
        table.sources.push(names);

        let lib = path.display();
        if let Some((map, found)) = find_debug_file(path, build_id.as_deref(), link, search, notes) {
            let names = Names::Mapped(map);
            match object::File::parse(names.bytes()) {
                Ok(file) => {
                    table.add_symbols(&file, names.bytes(), 1);
                    table.sources.push(names);
                    table.debug_source = Some(found.display().to_string());
                }
                Err(e) => notes.push(format!("{lib}: debug file {}: {e}; not used", found.display())),
            }
        } else if let Some(packed) = debugdata {
            match decompress_xz(&packed, search.max_debugdata_bytes) {
                Ok(elf) => {
                    let names = Names::Owned(elf);
                    match object::File::parse(names.bytes()) {
                        Ok(file) => {
                            table.add_symbols(&file, names.bytes(), 1);
                            table.sources.push(names);
                            table.debug_source = Some(".gnu_debugdata".to_string());
                        }
                        Err(e) => notes.push(format!("{lib}: .gnu_debugdata: {e}; not used")),
                    }
                }
                Err(e) => notes.push(format!("{lib}: .gnu_debugdata {e}; not used")),
            }
        }
        table.add_plt(&plt);
        table.merge_aliases();
        Ok(Some(table))
    }

    /// Indexes an ELF image held in memory (its own symbols only).
    pub fn from_elf(data: &[u8]) -> Result<SymbolTable, String> {
        let names = Names::Owned(data.to_vec());
        let mut table = SymbolTable::empty();
        let file = object::File::parse(names.bytes()).map_err(|e| e.to_string())?;
        table.add_symbols(&file, names.bytes(), 0);
        table.segments = loadable_segments(&file);
        let plt = plt_ranges(&file);
        drop(file);
        table.sources.push(names);
        table.add_plt(&plt);
        table.merge_aliases();
        Ok(table)
    }

    /// A table of given (address, size, name) functions, all global.
    pub fn from_symbols(list: Vec<(u64, u64, String)>) -> SymbolTable {
        let mut buf = Vec::new();
        let mut syms = Vec::new();
        for (addr, size, name) in list {
            let size = u32::try_from(size).unwrap_or(u32::MAX);
            syms.push(Sym { addr, size, off: buf.len() as u32, len: name.len() as u32, src: 0, bind: 0 });
            buf.extend_from_slice(name.as_bytes());
        }
        let mut table = SymbolTable { sources: vec![Names::Owned(buf)], syms, ..SymbolTable::empty() };
        table.merge_aliases();
        table
    }

    /// Adds the function symbols (`.symtab` and `.dynsym`) of `file`, whose bytes are `data`,
    /// the future `sources[src]`.
    fn add_symbols(&mut self, file: &object::File<'_>, data: &[u8], src: u8) {
        let base = data.as_ptr() as usize;
        self.syms.extend(
            file.symbols()
                .chain(file.dynamic_symbols())
                .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
                .filter_map(|s| {
                    let name = s.name_bytes().ok()?;
                    let off = (name.as_ptr() as usize).checked_sub(base)?;
                    if off + name.len() > data.len() {
                        return None;
                    }
                    let bind = if s.is_weak() {
                        1
                    } else if s.is_local() {
                        2
                    } else {
                        0
                    };
                    Some(Sym {
                        addr: s.address(),
                        size: u32::try_from(s.size()).unwrap_or(u32::MAX),
                        off: u32::try_from(off).ok()?,
                        len: u32::try_from(name.len()).ok()?,
                        src,
                        bind,
                    })
                }),
        );
    }

    /// Names the PLT sections' stubs (`ranges`: address, size): a stub has no symbol of its
    /// own, and without this a pc in one took the symbol before the section (`_init`).
    fn add_plt(&mut self, ranges: &[(u64, u64)]) {
        let Ok(src) = u8::try_from(self.sources.len()) else { return };
        if ranges.is_empty() {
            return;
        }
        self.sources.push(Names::Owned(PLT_NAME.as_bytes().to_vec()));
        for &(addr, size) in ranges {
            let size = u32::try_from(size).unwrap_or(u32::MAX);
            self.syms.push(Sym { addr, size, off: 0, len: PLT_NAME.len() as u32, src, bind: 0 });
        }
    }

    /// Sorts the symbols and keeps one per address: the longest size, and the name a user
    /// knows best (`write` rather than libc's `__GI___libc_write`, `__libc_write`, `__write`):
    /// global before weak before local, then the fewest leading underscores, then the
    /// shortest, then the first in byte order (so the choice never depends on the order read).
    fn merge_aliases(&mut self) {
        let sources = &self.sources;
        let name = |s: &Sym| &sources[s.src as usize].bytes()[s.off as usize..s.off as usize + s.len as usize];
        let rank = |s: &Sym| {
            let n = name(s);
            (s.bind, n.iter().take_while(|&&b| b == b'_').count(), n.len(), n)
        };
        let mut syms = std::mem::take(&mut self.syms);
        syms.sort_unstable_by_key(|s| s.addr);
        let mut out: Vec<Sym> = Vec::with_capacity(syms.len());
        for s in syms {
            match out.last_mut() {
                Some(last) if last.addr == s.addr => {
                    let size = last.size.max(s.size);
                    if rank(&s) < rank(last) {
                        *last = s;
                    }
                    last.size = size;
                }
                _ => out.push(s),
            }
        }
        self.index = out.iter().step_by(INDEX_STRIDE).map(|s| s.addr).collect();
        self.syms = out;
    }

    fn name(&self, s: &Sym) -> &str {
        let b = &self.sources[s.src as usize].bytes()[s.off as usize..s.off as usize + s.len as usize];
        std::str::from_utf8(b).unwrap_or("[non-UTF-8 symbol]")
    }

    /// Translates a file offset to the ELF virtual address it is loaded at.
    pub fn offset_to_vaddr(&self, off: u64) -> u64 {
        offset_to_vaddr(&self.segments, off)
    }

    /// The (raw) name of the function containing `vaddr`. A symbol without size covers up to
    /// the next symbol.
    pub fn lookup(&self, vaddr: u64) -> Option<&str> {
        self.lookup_index(vaddr).map(|i| self.name(&self.syms[i]))
    }

    /// The index of the symbol [`Self::lookup`] names (the same for every address of one
    /// function).
    pub fn lookup_index(&self, vaddr: u64) -> Option<usize> {
        // Symbols at or below vaddr: all of the strides before the one `index` points into,
        // and that stride's up to vaddr.
        let block = self.index.partition_point(|&a| a <= vaddr);
        let i = match block.checked_sub(1) {
            None => 0,
            Some(b) => {
                let lo = b * INDEX_STRIDE;
                let hi = (lo + INDEX_STRIDE).min(self.syms.len());
                lo + self.syms[lo..hi].partition_point(|s| s.addr <= vaddr)
            }
        };
        let at = i.checked_sub(1)?;
        let s = self.syms.get(at)?;
        let next = self.syms.get(i).map(|s| s.addr).unwrap_or(u64::MAX);
        let covers = if s.size > 0 { vaddr - s.addr < u64::from(s.size) } else { vaddr < next };
        covers.then_some(at)
    }

    /// The debug file the table has names from (its path, or `.gnu_debugdata`), if any.
    pub fn debug_source(&self) -> Option<&str> {
        self.debug_source.as_deref()
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

/// Symbols per entry of [`SymbolTable::index`].
const INDEX_STRIDE: usize = 32;

/// The file virtual address of the symbol `name` (any kind: data too) in the ELF file at
/// `path`, from `.symtab` or `.dynsym`; None when the file or the symbol is missing.
pub fn symbol_address(path: &Path, name: &str) -> Option<u64> {
    let map = map_file(path, 1 << 30, Owners::Any).ok()??;
    let file = object::File::parse(&*map).ok()?;
    file.symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name_bytes().ok() == Some(name.as_bytes()))
        .map(|s| s.address())
}

/// The file offset of the function `name` in the ELF file at `path` (a uprobe's `config2`):
/// its address in the segment that holds it, less the segment's address, plus its offset.
pub fn symbol_file_offset(path: &Path, name: &str) -> Option<u64> {
    let map = map_file(path, 1 << 30, Owners::Any).ok()??;
    let file = object::File::parse(&*map).ok()?;
    let addr = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.kind() == SymbolKind::Text && s.name_bytes().ok() == Some(name.as_bytes()))?
        .address();
    file.segments().find_map(|seg| {
        let (start, size) = (seg.address(), seg.size());
        (addr >= start && addr < start + size).then(|| addr - start + seg.file_range().0)
    })
}

/// Whose files [`map_file`] maps.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owners {
    /// Anyone's: a library the process has mapped itself (its owner could already change the
    /// process's code through it).
    Any,
    /// Root's or this user's only: a debug file hpm chooses to read. A mapped file that its
    /// owner cuts short raises SIGBUS in the reader, the JVM's processing thread; a debug file
    /// beside a library in a shared directory (`/tmp`), whose CRC32 anyone can match, would
    /// let anyone crash the JVM so.
    RootOrUs,
}

/// Maps a regular file read-only; `Ok(None)` when nothing is at `path`, an error naming the
/// path and the reason when something is but is not read (not a regular file, empty, over
/// `max` bytes, owned by someone `owners` excludes). Links are followed: debug files are
/// reached through `.build-id` links.
pub(crate) fn map_file(path: &Path, max: u64, owners: Owners) -> Result<Option<memmap2::Mmap>, String> {
    Ok(map_file_id(path, max, owners)?.map(|(map, _)| map))
}

/// A file's `(st_dev, st_ino)`.
pub(crate) type FileId = (u64, u64);

/// As [`map_file`], with the mapped file's id, from its descriptor.
pub(crate) fn map_file_id(path: &Path, max: u64, owners: Owners) -> Result<Option<(memmap2::Mmap, FileId)>, String> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let absent =
        |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR);
    // Looked at before opening, so a FIFO or device is never opened; again after, on the
    // descriptor, for what was opened.
    let check = |meta: std::fs::Metadata| -> Result<(), String> {
        if !meta.is_file() {
            return Err(format!("{}: not a regular file; not read", path.display()));
        }
        if meta.len() == 0 {
            return Err(format!("{}: empty; not read", path.display()));
        }
        if meta.len() > max {
            return Err(format!(
                "{}: {} bytes, over the {max} bytes hpm reads of one ELF file; not read",
                path.display(),
                meta.len()
            ));
        }
        if owners == Owners::RootOrUs && meta.uid() != 0 && meta.uid() != hpm_profile::outfile::euid() {
            return Err(format!(
                "{}: owned by uid {}, neither root nor this user; not read",
                path.display(),
                meta.uid()
            ));
        }
        Ok(())
    };
    match std::fs::metadata(path) {
        Ok(meta) => check(meta)?,
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    // O_NONBLOCK: should a FIFO replace the file after the look above, opening it must not
    // wait for a writer; the check on the descriptor then refuses it.
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) {
        Ok(f) => f,
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let meta = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?;
    let id = (meta.dev(), meta.ino());
    check(meta)?;
    // SAFETY: a read-only private mapping of a regular file. The files mapped are shared
    // libraries the process has mapped itself and the system's debug files; package updates
    // replace such files (a new inode) rather than writing into them, so the mapped bytes do
    // not change under the reader.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some((map, id)))
}

/// The virtual address the file offset `off` is loaded at, by `segments` (of
/// [`loadable_segments`]); `off` itself outside them.
pub(crate) fn offset_to_vaddr(segments: &[(u64, u64, u64)], off: u64) -> u64 {
    for &(foff, vaddr, size) in segments {
        if off >= foff && off - foff < size {
            return off - foff + vaddr;
        }
    }
    off
}

/// (file offset, virtual address, file size) of the loadable segments that have file content.
/// What a pc in a library's PLT stubs is named.
pub const PLT_NAME: &str = "[PLT stub]";

/// The address and size of each PLT section (`.plt`, `.plt.sec`, `.plt.got`) of `file`.
fn plt_ranges(file: &object::File<'_>) -> Vec<(u64, u64)> {
    [".plt", ".plt.sec", ".plt.got"]
        .iter()
        .filter_map(|n| file.section_by_name(n))
        .map(|s| (s.address(), s.size()))
        .filter(|&(a, n)| a != 0 && n != 0)
        .collect()
}

pub(crate) fn loadable_segments(file: &object::File<'_>) -> Vec<(u64, u64, u64)> {
    file.segments()
        .filter_map(|seg| {
            let (off, len) = seg.file_range();
            (len > 0).then_some((off, seg.address(), len))
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::new();
    hpm_profile::text::push_hex(&mut s, bytes);
    s
}

/// The library's debug file and where it was found (see [`SymbolTable::open_with`]).
fn find_debug_file(
    lib: &Path,
    build_id: Option<&[u8]>,
    link: Option<(Vec<u8>, u32)>,
    search: &DebugSearch,
    notes: &mut Vec<String>,
) -> Option<(memmap2::Mmap, PathBuf)> {
    if let Some(id) = build_id.filter(|id| id.len() >= 2) {
        let path = search.root.join(".build-id").join(hex(&id[..1])).join(format!("{}.debug", hex(&id[1..])));
        match map_file(&path, search.max_file_bytes, Owners::RootOrUs) {
            Ok(Some(map)) => {
                let same =
                    object::File::parse(&map[..]).ok().and_then(|f| f.build_id().ok().flatten().map(|b| b == id));
                if same == Some(true) {
                    return Some((map, path));
                }
                notes.push(format!("{}: {} has another build ID; not used", lib.display(), path.display()));
            }
            Ok(None) => {}
            Err(e) => notes.push(format!("{}: debug file {e}", lib.display())),
        }
    }
    let (name, crc) = link?;
    if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
        notes.push(format!(
            "{}: .gnu_debuglink names {:?}, not a file name; not used",
            lib.display(),
            String::from_utf8_lossy(&name)
        ));
        return None;
    }
    let name = std::ffi::OsStr::from_bytes(&name);
    let dir = lib.parent()?;
    let mut candidates = vec![dir.join(name), dir.join(".debug").join(name)];
    if let Ok(rel) = dir.strip_prefix("/") {
        candidates.push(search.root.join(rel).join(name));
    }
    for path in candidates {
        if path == lib {
            continue;
        }
        match map_file(&path, search.max_file_bytes, Owners::RootOrUs) {
            Ok(Some(map)) => {
                if crc32fast::hash(&map) == crc {
                    return Some((map, path));
                }
                notes.push(format!(
                    "{}: {}: its CRC32 is not the one .gnu_debuglink names (another build's file); not used",
                    lib.display(),
                    path.display()
                ));
            }
            Ok(None) => {}
            Err(e) => notes.push(format!("{}: debug file {e}", lib.display())),
        }
    }
    None
}

/// Decompresses a `.gnu_debugdata` section (an xz stream holding an ELF file), refusing more
/// than `max` bytes of output.
fn decompress_xz(packed: &[u8], max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let run = || {
        let mut out = Vec::new();
        lzma_rust2::XzReader::new_mem_limit(packed, false, DEBUGDATA_DECODER_KIB)
            .take(max.saturating_add(1))
            .read_to_end(&mut out)
            .map(|_| out)
    };
    // The decoder is fed file content: should it panic, the processing thread goes on and the
    // library keeps the names it has.
    match std::panic::catch_unwind(run) {
        Ok(Ok(out)) if out.len() as u64 > max => {
            Err(format!("decompresses to more than {max} bytes, the most hpm reads"))
        }
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => Err(format!("is not a valid xz stream ({e})")),
        Err(_) => Err("made the xz decoder fail".to_string()),
    }
}

/// `_ZN10G1CollectedHeap9do_collection...` -> `G1CollectedHeap::do_collection`.
pub fn demangle(name: &str) -> String {
    if let Some(plain) = demangle_plain(name) {
        return plain;
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
            if let Ok(s) = sym.demangle(&opts) {
                return s;
            }
        }
    }
    name.to_string()
}

/// The common Itanium names, as `cpp_demangle` gives them without parameters, read directly:
/// `_Z<len><id>` (a function outside any class or namespace) and `_ZN<len><id>...E` (inside
/// them; const methods, constructors and destructors too), every identifier plain (letters,
/// digits, `_`; no anonymous namespace). None for anything else (templates, operators, other
/// qualifiers, substitutions, local names), which `cpp_demangle` is asked. The parameters are
/// not read: where `cpp_demangle` gives up on them, this still gives the name (the mangled one
/// was shown before). 89% of libjvm's functions are plain; the full parse cost ~10 us per
/// function the compiler threads were sampled in.
fn demangle_plain(name: &str) -> Option<String> {
    let rest = name.as_bytes().strip_prefix(b"_Z")?;
    let (nested, mut p) = match *rest.first()? {
        // A const method's name reads as any other's without its parameters.
        b'N' if rest.get(1) == Some(&b'K') => (true, &rest[2..]),
        b'N' => (true, &rest[1..]),
        c if c.is_ascii_digit() => (false, rest),
        _ => return None,
    };
    let mut out = String::new();
    loop {
        let digits = p.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || p[0] == b'0' || digits > 4 {
            return None;
        }
        let len: usize = std::str::from_utf8(&p[..digits]).ok()?.parse().ok()?;
        let id = p.get(digits..digits + len)?;
        if !id.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') || id.starts_with(b"_GLOBAL__N") {
            return None;
        }
        if !out.is_empty() {
            out.push_str("::");
        }
        let last = out.len();
        out.push_str(std::str::from_utf8(id).ok()?);
        p = &p[digits + len..];
        match (nested, p.first()) {
            (true, Some(b'E')) => return Some(out),
            // A constructor or destructor of the class just named: `C::C`, `C::~C`.
            (true, Some(b'C' | b'D')) if out.len() > last => {
                let class = out[last..].to_string();
                let tilde = match (p[0], p.get(1), p.get(2)) {
                    (b'C', Some(b'1' | b'2' | b'3'), Some(b'E')) => "",
                    (b'D', Some(b'0' | b'1' | b'2'), Some(b'E')) => "~",
                    _ => return None,
                };
                out.push_str("::");
                out.push_str(tilde);
                out.push_str(&class);
                return Some(out);
            }
            (true, Some(c)) if c.is_ascii_digit() => continue,
            // Template arguments or an ABI tag after a function's name change what it is.
            (false, Some(b'I' | b'B')) => return None,
            (false, _) => return Some(out),
            (true, _) => return None,
        }
    }
}

/// A resolved native address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeSymbol {
    /// File name of the library, e.g. `libjvm.so`.
    pub lib: String,
    /// Function name, or `libjvm.so+0x1234` when the library has no symbol there.
    pub name: String,
}

/// Resolves addresses of the profiled process's native libraries, loading each ELF file (and
/// its debug file) once, when a sample first lands in it.
#[derive(Default)]
pub struct Symbolizer {
    mappings: Vec<Mapping>,
    tables: hpm_profile::hash::IntMap<String, Option<Arc<SymbolTable>>>,
    demangled: hpm_profile::hash::IntMap<String, String>,
    search: DebugSearch,
    /// Libraries or debug files found but not read, and why (at most a few per library).
    notes: Vec<String>,
    /// Code addresses already named: (library, function). Kept while every mapping they
    /// could be in stays (a library unloaded and another mapped there would rename them).
    sites: hpm_profile::hash::IntMap<u64, (Arc<str>, Arc<str>)>,
    /// Functions named so far, by symbol table (its address: the table is held in `tables` as
    /// long as this is) and symbol: a new address in a known function (a VM thread's leaf pcs
    /// differ from sample to sample, their functions far less) shares its names without
    /// copying, demangling or hashing them again.
    functions: hpm_profile::hash::IntMap<(usize, usize), (Arc<str>, Arc<str>)>,
    /// The dynamic loader's counts of objects loaded and unloaded when the mappings were last
    /// read by [`Self::refresh_unless`], and when (ns, the caller's clock).
    last_read: Option<((u64, u64), u64)>,
}

/// The mappings are read again at a session's start at least this often, whatever the
/// loader's counts say.
pub const MAPS_MAX_AGE_NS: u64 = 60_000_000_000;

/// Named code addresses remembered at most (started again when full).
const MAX_SITES: usize = 1 << 16;

impl Symbolizer {
    pub fn set_mappings(&mut self, mut m: Vec<Mapping>) {
        m.retain(|m| m.exec);
        m.sort_by_key(|m| m.start);
        // File mappings only added: every address named so far is where it was. Anonymous
        // ones (the JVM's code cache grows, stubs come and go) name nothing, so a change of
        // theirs keeps the names (it cleared them at every session start).
        let named = |m: &&Mapping| Self::names_code(m);
        if !self
            .mappings
            .iter()
            .filter(named)
            .all(|old| m.binary_search_by_key(&old.start, |n| n.start).is_ok_and(|i| m[i] == *old))
        {
            self.sites.clear();
        }
        self.mappings = m;
    }

    /// Whether addresses in `m` are named from a file (not anonymous memory or `[vdso]`).
    fn names_code(m: &Mapping) -> bool {
        !m.path.is_empty() && !m.path.starts_with('[')
    }

    /// The library and function at `ip` if named already (by [`Self::site`]).
    pub fn known_site(&self, ip: u64) -> Option<(Arc<str>, Arc<str>)> {
        self.sites.get(&ip).cloned()
    }

    /// The library and function at `ip`, each named once per address (see [`Self::resolve`]).
    pub fn site(&mut self, ip: u64) -> Option<(Arc<str>, Arc<str>)> {
        if let Some(s) = self.known_site(ip) {
            return Some(s);
        }
        let function = self.function_of(ip);
        let site = match function.and_then(|f| self.functions.get(&f)) {
            Some(site) => site.clone(),
            None => {
                let s = self.resolve(ip)?;
                let site: (Arc<str>, Arc<str>) = (s.lib.into(), s.name.into());
                // `resolve` read the table if this was its library's first address.
                if let Some(f) = function.or_else(|| self.function_of(ip)) {
                    if self.functions.len() >= MAX_SITES {
                        self.functions.clear();
                    }
                    self.functions.insert(f, site.clone());
                }
                site
            }
        };
        if self.sites.len() >= MAX_SITES {
            self.sites.clear();
        }
        self.sites.insert(ip, site.clone());
        Some(site)
    }

    /// The symbol table (read already) and symbol of the function at `ip`: the key of
    /// `functions`.
    fn function_of(&self, ip: u64) -> Option<(usize, usize)> {
        let m = self.mapping(ip)?;
        let t = self.tables.get(&m.path)?.as_ref()?;
        let i = t.lookup_index(t.offset_to_vaddr(ip - m.start + m.offset))?;
        Some((Arc::as_ptr(t) as usize, i))
    }

    /// Re-reads `/proc/self/maps` (a library may have been loaded since).
    pub fn refresh(&mut self) -> bool {
        match std::fs::read_to_string("/proc/self/maps") {
            Ok(text) => {
                self.set_mappings(parse_maps(&text));
                true
            }
            Err(_) => false,
        }
    }

    /// [`Self::refresh`] unless `loads`, the dynamic loader's counts of objects loaded and
    /// unloaded so far (read before this call), are those of the last read, less than
    /// [`MAPS_MAX_AGE_NS`] before `now` (ns): then no library came or went through the loader
    /// since. The JVM maps thousands of areas, and the kernel's formatting of them took a tenth
    /// of a short session's processing. Code mapped past the loader (a file mapped executable
    /// by hand) is found by an address in no mapping, which reads them again (at most once a
    /// second, [`crate::resolve::SampleResolver`]), or by the next read after the age.
    pub fn refresh_unless(&mut self, loads: Option<(u64, u64)>, now: u64) {
        let fresh = self.last_read.is_some_and(|(l, t)| Some(l) == loads && now.saturating_sub(t) < MAPS_MAX_AGE_NS);
        if fresh && !self.mappings.is_empty() {
            return;
        }
        // A failed read proves nothing: the counts are kept only with the mappings they saw.
        let read = self.refresh();
        self.last_read = loads.filter(|_| read).map(|l| (l, now));
    }

    /// The executable mappings, by address.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    pub fn mapping(&self, ip: u64) -> Option<&Mapping> {
        let i = self.mappings.partition_point(|m| m.start <= ip);
        self.mappings.get(i.checked_sub(1)?).filter(|m| ip < m.end)
    }

    /// Preloads a table (tests, or files read another way).
    pub fn insert_table(&mut self, path: &str, t: SymbolTable) {
        // The table replaced, if any, is dropped: its address may be reused.
        self.functions.clear();
        self.tables.insert(path.to_string(), Some(Arc::new(t)));
    }

    /// Where debug files are looked for (tests point it at a directory of their own).
    pub fn set_debug_search(&mut self, search: DebugSearch) {
        self.search = search;
    }

    /// The lines about files found but not read since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn table(&mut self, path: &str) -> Option<Arc<SymbolTable>> {
        if let Some(t) = self.tables.get(path) {
            return t.clone();
        }
        // The file mapped was removed or replaced since it was mapped (the maps line says so
        // after its path): no file by that name is the library. One there is whoever's made it
        // (in /tmp, anyone's: a JNI library extracted there is deleted once loaded), who could
        // cut it short while hpm has it mapped, a SIGBUS in the JVM. It is never opened, and
        // said nothing of, as a file that is absent (memfd mappings are all ` (deleted)`).
        let t = if path.ends_with(DELETED) {
            None
        } else {
            match SymbolTable::open_with(Path::new(path), &self.search, &mut self.notes) {
                Ok(t) => t.map(Arc::new),
                Err(e) => {
                    self.notes.push(e);
                    None
                }
            }
        };
        self.tables.insert(path.to_string(), t.clone());
        t
    }

    /// Whether the symbol table of the library `ip` is in was read already (or found missing).
    pub fn has_table(&self, ip: u64) -> bool {
        self.mapping(ip).is_none_or(|m| self.tables.contains_key(&m.path))
    }

    pub fn resolve(&mut self, ip: u64) -> Option<NativeSymbol> {
        let m = self.mapping(ip)?.clone();
        if !Self::names_code(&m) {
            return None;
        }
        let lib = m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
        let table = self.table(&m.path);
        let file_off = ip - m.start + m.offset;
        let name = match table {
            Some(t) => {
                let vaddr = t.offset_to_vaddr(file_off);
                match t.lookup(vaddr) {
                    Some(raw) => match self.demangled.get(raw) {
                        Some(d) => d.clone(),
                        None => {
                            let d = demangle(raw);
                            self.demangled.insert(raw.to_string(), d.clone());
                            d
                        }
                    },
                    None => format!("{lib}+{vaddr:#x}"),
                }
            }
            None => format!("{lib}+{file_off:#x}"),
        };
        Some(NativeSymbol { lib, name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d4c8a00000-55d4c8a01000 r--p 00000000 fd:01 1234 /usr/bin/java
7f1c40000000-7f1c40c00000 r-xp 00200000 fd:01 99 /usr/lib/jvm/x/lib/server/libjvm.so
7f1c50000000-7f1c50021000 rw-p 00000000 00:00 0
7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0 [stack]
";

    #[test]
    fn maps_parse_with_and_without_paths() {
        let m = parse_maps(MAPS);
        assert_eq!(m.len(), 4);
        assert!(m[1].exec && !m[0].exec);
        assert_eq!(m[1].offset, 0x200000);
        assert_eq!(m[2].path, "");
        assert_eq!(m[3].path, "[stack]");
        assert_eq!((m[1].dev, m[1].inode), (libc::makedev(0xfd, 1), 99));
        assert_eq!((m[2].dev, m[2].inode), (0, 0));
        assert!(parse_maps("1000-2000 r-xp 0 fd:01 x /lib\n1000-2000 r-xp 0 fd 1 /lib\n").is_empty(), "bad ids");
    }

    #[test]
    fn lookup_uses_sizes_and_next_symbol() {
        let t = SymbolTable::from_symbols(vec![
            (0x100, 0x10, "a".into()),
            (0x200, 0, "b".into()),
            (0x300, 0x8, "c".into()),
        ]);
        assert_eq!(t.lookup(0x105), Some("a"));
        assert_eq!(t.lookup(0x180), None, "past a's size");
        assert_eq!(t.lookup(0x2ff), Some("b"), "sizeless symbol runs to the next");
        assert_eq!(t.lookup(0x50), None);
    }

    #[test]
    fn the_mappings_are_read_again_only_when_the_loader_counts_changed_are_unknown_or_old() {
        let fake = || {
            vec![Mapping {
                start: 0x1000,
                end: 0x2000,
                offset: 0,
                exec: true,
                path: "/x/liba.so".into(),
                dev: 0,
                inode: 0,
            }]
        };
        let mut s = Symbolizer::default();
        s.refresh_unless(Some((5, 1)), 0);
        let real = s.mappings().len();
        assert!(real > 1, "this process maps more than one executable area");
        s.set_mappings(fake());
        s.refresh_unless(Some((5, 1)), 1_000);
        assert_eq!(s.mappings().len(), 1, "same counts: not read again");
        s.refresh_unless(Some((6, 1)), 2_000);
        assert!(s.mappings().len() > 1, "a library loaded: read again");
        s.set_mappings(fake());
        s.refresh_unless(Some((6, 2)), 3_000);
        assert!(s.mappings().len() > 1, "a library unloaded: read again");
        s.set_mappings(fake());
        s.refresh_unless(None, 4_000);
        assert!(s.mappings().len() > 1, "counts unknown: always read");
        s.refresh_unless(Some((6, 2)), 5_000);
        s.set_mappings(fake());
        s.refresh_unless(Some((6, 2)), 5_000 + MAPS_MAX_AGE_NS - 1);
        assert_eq!(s.mappings().len(), 1, "same counts, read recently: not read again");
        s.refresh_unless(Some((6, 2)), 5_000 + MAPS_MAX_AGE_NS);
        assert!(s.mappings().len() > 1, "same counts, but read a minute ago: read again");
        s.set_mappings(Vec::new());
        s.refresh_unless(Some((6, 2)), 6_000 + MAPS_MAX_AGE_NS);
        assert!(!s.mappings().is_empty(), "none known: read");
    }

    #[test]
    fn resolve_through_a_mapping() {
        let mut s = Symbolizer::default();
        s.set_mappings(parse_maps(MAPS));
        s.insert_table(
            "/usr/lib/jvm/x/lib/server/libjvm.so",
            SymbolTable::from_symbols(vec![(0x200010, 0x20, "G1CollectedHeap::do_collection".into())]),
        );
        let r = s.resolve(0x7f1c40000018).unwrap();
        assert_eq!(r.lib, "libjvm.so");
        assert_eq!(r.name, "G1CollectedHeap::do_collection");
        assert!(s.resolve(0x7f1c50000010).is_none(), "not executable");
    }

    /// A lookup through the index finds what a search of every symbol finds, at and around
    /// every symbol, across strides.
    #[test]
    fn lookups_through_the_index_agree_with_a_full_search() {
        for n in [0usize, 1, 31, 32, 33, 100, 1000] {
            let list: Vec<(u64, u64, String)> =
                (0..n as u64).map(|i| (0x1000 + i * 0x40 + (i % 3) * 8, (i % 4) * 0x10, format!("f{i}"))).collect();
            let t = SymbolTable::from_symbols(list);
            let full = |vaddr: u64| -> Option<&str> {
                let i = t.syms.partition_point(|s| s.addr <= vaddr);
                let s = t.syms.get(i.checked_sub(1)?)?;
                let next = t.syms.get(i).map(|s| s.addr).unwrap_or(u64::MAX);
                let covers = if s.size > 0 { vaddr - s.addr < u64::from(s.size) } else { vaddr < next };
                covers.then(|| t.name(s))
            };
            for vaddr in (0..n as u64 * 0x40 + 0x1100).step_by(4) {
                assert_eq!(t.lookup(vaddr), full(vaddr), "{n} symbols, {vaddr:#x}");
            }
        }
    }

    #[test]
    fn demangles_itanium_names() {
        assert_eq!(demangle("_ZN15G1CollectedHeap13do_collectionEbbm"), "G1CollectedHeap::do_collection");
        assert_eq!(demangle("memcpy"), "memcpy");
        // What the direct reading gives (what cpp_demangle gives, checked below) and what it
        // leaves to cpp_demangle: templates, inheriting constructors, volatile methods,
        // anonymous namespaces, substitutions, template functions, ABI tags, local names.
        for (mangled, plain) in [
            ("_ZN15G1CollectedHeap13do_collectionEbbm", Some("G1CollectedHeap::do_collection")),
            ("_Z8os_sleepl", Some("os_sleep")),
            ("_ZN6Symbol4nameEv", Some("Symbol::name")),
            ("_ZN10ArrayKlassC2EP6Symbol", Some("ArrayKlass::ArrayKlass")),
            ("_ZN10ArrayKlassD1Ev", Some("ArrayKlass::~ArrayKlass")),
            ("_ZNK6Method9is_nativeEv", Some("Method::is_native")),
            ("_ZN10ArrayKlassCI2E5Klass", None),
            ("_ZNV3Foo3getEv", None),
            ("_ZN12_GLOBAL__N_13fooEv", None),
            ("_ZNSt6vectorIiSaIiEE9push_backERKi", None),
            ("_Z3maxIiET_S0_S0_", None),
            ("_ZN3FooIiE3barEv", None),
            ("_ZN3Foo3barB5cxx11Ev", None),
            ("_ZL9local_fnv", None),
        ] {
            assert_eq!(demangle_plain(mangled).as_deref(), plain, "{mangled}");
            if let Some(p) = plain {
                let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
                let full = cpp_demangle::Symbol::new(mangled).ok().and_then(|s| s.demangle(&opts).ok());
                assert_eq!(full.as_deref(), Some(p), "{mangled}: cpp_demangle's reading");
            }
        }
    }

    /// The direct reading gives what cpp_demangle gives, on every name of a real symbol table
    /// that it reads (the test binary's: Rust's legacy names are Itanium nested names).
    #[test]
    fn plain_names_read_directly_match_cpp_demangle() {
        let exe = std::env::current_exe().unwrap();
        let t = SymbolTable::from_elf(&std::fs::read(exe).unwrap()).unwrap();
        let mut read = 0;
        for s in &t.syms {
            let name = t.name(s);
            if let Some(plain) = demangle_plain(name) {
                read += 1;
                let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
                let full = cpp_demangle::Symbol::new(name).ok().and_then(|sym| sym.demangle(&opts).ok());
                assert_eq!(Some(plain), full, "{name}");
            }
        }
        assert!(read > 100, "only {read} names read directly");
    }

    /// Reads a real ELF file: the test binary itself has symbols.
    #[test]
    fn reads_a_real_elf_file() {
        let exe = std::env::current_exe().unwrap();
        let t = SymbolTable::from_elf(&std::fs::read(exe).unwrap()).unwrap();
        assert!(t.len() > 100);
    }

    #[test]
    fn a_pc_in_a_plt_stub_is_named_as_one() {
        // This process's libc has a `.plt` (its calls into ld.so): a pc in its second stub is
        // a PLT stub's, not the function before the section.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let libc = parse_maps(&maps).into_iter().find(|m| m.exec && m.path.contains("libc.so")).unwrap();
        let data = std::fs::read(&libc.path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let (addr, size) = plt_ranges(&file)[0];
        assert!(size > 32, "{}: a .plt of {size} bytes", libc.path);
        let t = SymbolTable::from_elf(&data).unwrap();
        assert_eq!(t.lookup(addr + 24), Some(PLT_NAME));
        assert_eq!(t.lookup(addr + size - 1), Some(PLT_NAME));
    }
}

#[cfg(test)]
#[path = "symbols_tests.rs"]
mod debug_file_tests;
