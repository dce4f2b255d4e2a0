//! Native code: `/proc/<pid>/maps` mappings and ELF symbol tables, so instruction addresses in
//! `libjvm.so`, libc or JNI libraries get a library and a (demangled) function name.
//!
//! Used off the hot path only, by the processing thread.

use std::collections::HashMap;
use std::sync::Arc;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub exec: bool,
    pub path: String,
}

/// Parses the text of `/proc/<pid>/maps`; unparsable lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms), Some(off)) = (it.next(), it.next(), it.next()) else { continue };
        let (_dev, _inode) = (it.next(), it.next());
        let path = it.collect::<Vec<_>>().join(" ");
        let Some((s, e)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end), Ok(offset)) =
            (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16), u64::from_str_radix(off, 16))
        else {
            continue;
        };
        out.push(Mapping { start, end, offset, exec: perms.as_bytes().get(2) == Some(&b'x'), path });
    }
    out
}

/// Where symbol names live: the mapped ELF file itself (no copy per symbol), or a buffer.
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

/// Function symbols of one ELF file, by file virtual address.
pub struct SymbolTable {
    names: Names,
    /// (address, size, name offset, name length), sorted by address. Names stay raw until a
    /// lookup hits them: libjvm.so has ~60,000 symbols, and copying or demangling them all up
    /// front was most of the agent's start-up cost.
    syms: Vec<(u64, u64, u32, u32)>,
    /// (file offset, virtual address, size) of loadable segments.
    segments: Vec<(u64, u64, u64)>,
}

impl std::fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SymbolTable({} symbols)", self.syms.len())
    }
}

impl SymbolTable {
    /// Maps and indexes an ELF file.
    pub fn open(path: &str) -> Result<SymbolTable, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        // SAFETY: the file is a shared library the process has mapped itself; it is not
        // modified while we read it (a library rewritten in place would crash the process
        // anyway).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        Self::index(Names::Mapped(map))
    }

    /// Indexes an ELF image held in memory.
    pub fn from_elf(data: &[u8]) -> Result<SymbolTable, String> {
        Self::index(Names::Owned(data.to_vec()))
    }

    fn index(names: Names) -> Result<SymbolTable, String> {
        let data = names.bytes();
        let base = data.as_ptr() as usize;
        let file = object::File::parse(data).map_err(|e| e.to_string())?;
        let mut syms: Vec<(u64, u64, u32, u32)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                let name = s.name_bytes().ok()?;
                let off = (name.as_ptr() as usize).checked_sub(base)?;
                (off + name.len() <= data.len()).then_some((s.address(), s.size(), off as u32, name.len() as u32))
            })
            .collect();
        syms.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        syms.dedup_by_key(|s| s.0);
        let segments = file
            .segments()
            .map(|seg| {
                let (off, _) = seg.file_range();
                (off, seg.address(), seg.size())
            })
            .collect();
        Ok(SymbolTable { names, syms, segments })
    }

    pub fn from_symbols(list: Vec<(u64, u64, String)>) -> SymbolTable {
        let mut buf = Vec::new();
        let mut syms = Vec::new();
        for (addr, size, name) in list {
            syms.push((addr, size, buf.len() as u32, name.len() as u32));
            buf.extend_from_slice(name.as_bytes());
        }
        syms.sort_by_key(|s| s.0);
        SymbolTable { names: Names::Owned(buf), syms, segments: Vec::new() }
    }

    fn name(&self, off: u32, len: u32) -> &str {
        let b = &self.names.bytes()[off as usize..(off + len) as usize];
        std::str::from_utf8(b).unwrap_or("[non-UTF-8 symbol]")
    }

    /// Translates a file offset to the ELF virtual address it is loaded at.
    pub fn offset_to_vaddr(&self, off: u64) -> u64 {
        for &(foff, vaddr, size) in &self.segments {
            if off >= foff && off < foff + size {
                return off - foff + vaddr;
            }
        }
        off
    }

    /// The (raw) name of the function containing `vaddr`. A symbol without size covers up to
    /// the next symbol.
    pub fn lookup(&self, vaddr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= vaddr);
        if i == 0 {
            return None;
        }
        let (addr, size, off, len) = self.syms[i - 1];
        let next = self.syms.get(i).map(|s| s.0).unwrap_or(u64::MAX);
        let covers = if size > 0 { vaddr < addr + size } else { vaddr < next };
        covers.then(|| self.name(off, len))
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

/// `_ZN10G1CollectedHeap9do_collection...` -> `G1CollectedHeap::do_collection`.
pub fn demangle(name: &str) -> String {
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

/// A resolved native address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeSymbol {
    /// File name of the library, e.g. `libjvm.so`.
    pub lib: String,
    /// Function name, or `libjvm.so+0x1234` when the library has no symbol there.
    pub name: String,
}

/// Resolves addresses of the profiled process's native libraries, loading each ELF file once.
#[derive(Default)]
pub struct Symbolizer {
    mappings: Vec<Mapping>,
    tables: HashMap<String, Option<Arc<SymbolTable>>>,
    demangled: HashMap<String, String>,
}

impl Symbolizer {
    pub fn set_mappings(&mut self, mut m: Vec<Mapping>) {
        m.retain(|m| m.exec);
        m.sort_by_key(|m| m.start);
        self.mappings = m;
    }

    /// Re-reads `/proc/self/maps` (a library may have been loaded since).
    pub fn refresh(&mut self) {
        if let Ok(text) = std::fs::read_to_string("/proc/self/maps") {
            self.set_mappings(parse_maps(&text));
        }
    }

    pub fn mapping(&self, ip: u64) -> Option<&Mapping> {
        let i = self.mappings.partition_point(|m| m.start <= ip);
        self.mappings.get(i.checked_sub(1)?).filter(|m| ip < m.end)
    }

    /// Preloads a table (tests, or files read another way).
    pub fn insert_table(&mut self, path: &str, t: SymbolTable) {
        self.tables.insert(path.to_string(), Some(Arc::new(t)));
    }

    pub fn resolve(&mut self, ip: u64) -> Option<NativeSymbol> {
        let m = self.mapping(ip)?.clone();
        if m.path.is_empty() || m.path.starts_with('[') {
            return None;
        }
        let lib = m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
        let table =
            self.tables.entry(m.path.clone()).or_insert_with(|| SymbolTable::open(&m.path).ok().map(Arc::new)).clone();
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

    #[test]
    fn demangles_itanium_names() {
        assert_eq!(demangle("_ZN15G1CollectedHeap13do_collectionEbbm"), "G1CollectedHeap::do_collection");
        assert_eq!(demangle("memcpy"), "memcpy");
    }

    /// Reads a real ELF file: the test binary itself has symbols.
    #[test]
    fn reads_a_real_elf_file() {
        let exe = std::env::current_exe().unwrap();
        let t = SymbolTable::from_elf(&std::fs::read(exe).unwrap()).unwrap();
        assert!(t.len() > 100);
    }
}
