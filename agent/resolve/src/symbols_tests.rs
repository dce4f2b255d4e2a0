//! Native names from debug files: small ELF files built here (a library, its debug file, a
//! MiniDebugInfo section), found by build ID, by `.gnu_debuglink` and in `.gnu_debugdata`, and
//! refused when they are not what they should be.

use std::path::{Path, PathBuf};

use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Sym as ElfSym, Writer};
use object::Endianness;

use super::*;

/// `.text`'s file offset and virtual address in the libraries built here: they differ, as in
/// lld-linked files, so a wrong offset-to-address translation shows.
const TEXT_OFF: u64 = 0x1000;
const TEXT_VADDR: u64 = 0x201000;
const TEXT_LEN: u64 = 0x1000;

/// A small x86-64 ELF shared object: one loadable segment holding `.text`, function symbols
/// in `.symtab` and extra sections. As a debug file (`objcopy --only-keep-debug`), its `.text`
/// has no content and its segment no file bytes (offset 0, size 0).
#[derive(Default)]
struct Elf {
    debug_file: bool,
    /// (name, address, size, binding: elf::STB_*)
    syms: Vec<(&'static str, u64, u64, u8)>,
    /// (name, sh_type, content)
    sections: Vec<(&'static str, u32, Vec<u8>)>,
}

impl Elf {
    fn build(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut syms = self.syms.clone();
        syms.sort_by_key(|s| s.3 != elf::STB_LOCAL); // ELF: locals first
        {
            let mut w = Writer::new(Endianness::Little, true, &mut out);
            w.reserve_file_header();
            w.reserve_program_headers(1);
            w.reserve_null_section_index();
            let text_name = w.add_section_name(b".text");
            let text_index = w.reserve_section_index();
            let extra: Vec<_> =
                self.sections.iter().map(|s| (w.add_section_name(s.0.as_bytes()), w.reserve_section_index())).collect();
            w.reserve_symtab_section_index();
            w.reserve_strtab_section_index();
            w.reserve_shstrtab_section_index();
            if !self.debug_file {
                assert_eq!(w.reserve(TEXT_LEN as usize, 0x1000), TEXT_OFF as usize);
            }
            let offsets: Vec<usize> = self.sections.iter().map(|s| w.reserve(s.2.len(), 4)).collect();
            w.reserve_null_symbol_index();
            let names: Vec<_> = syms
                .iter()
                .map(|s| {
                    let id = w.add_string(s.0.as_bytes());
                    w.reserve_symbol_index(Some(text_index));
                    id
                })
                .collect();
            w.reserve_symtab();
            w.reserve_strtab();
            w.reserve_shstrtab();
            w.reserve_section_headers();

            w.write_file_header(&FileHeader {
                os_abi: 0,
                abi_version: 0,
                e_type: elf::ET_DYN,
                e_machine: elf::EM_X86_64,
                e_entry: 0,
                e_flags: 0,
            })
            .unwrap();
            w.write_align_program_headers();
            let (p_offset, p_filesz) = if self.debug_file { (0, 0) } else { (TEXT_OFF, TEXT_LEN) };
            w.write_program_header(&ProgramHeader {
                p_type: elf::PT_LOAD,
                p_flags: elf::PF_R | elf::PF_X,
                p_offset,
                p_vaddr: TEXT_VADDR,
                p_paddr: TEXT_VADDR,
                p_filesz,
                p_memsz: TEXT_LEN,
                p_align: 0x1000,
            });
            if !self.debug_file {
                w.write_align(0x1000);
                w.write(&[0xcc; TEXT_LEN as usize]);
            }
            for s in &self.sections {
                w.write_align(4);
                w.write(&s.2);
            }
            w.write_null_symbol();
            for (s, name) in syms.iter().zip(&names) {
                w.write_symbol(&ElfSym {
                    name: Some(*name),
                    section: Some(text_index),
                    st_info: (s.3 << 4) | elf::STT_FUNC,
                    st_other: elf::STV_DEFAULT,
                    st_shndx: 0,
                    st_value: s.1,
                    st_size: s.2,
                });
            }
            w.write_strtab();
            w.write_shstrtab();
            w.write_null_section_header();
            w.write_section_header(&SectionHeader {
                name: Some(text_name),
                sh_type: if self.debug_file { elf::SHT_NOBITS } else { elf::SHT_PROGBITS },
                sh_flags: u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR),
                sh_addr: TEXT_VADDR,
                sh_offset: if self.debug_file { 0 } else { TEXT_OFF },
                sh_size: TEXT_LEN,
                sh_link: 0,
                sh_info: 0,
                sh_addralign: 16,
                sh_entsize: 0,
            });
            for ((s, (name, _)), off) in self.sections.iter().zip(&extra).zip(&offsets) {
                w.write_section_header(&SectionHeader {
                    name: Some(*name),
                    sh_type: s.1,
                    sh_flags: if s.1 == elf::SHT_NOTE { u64::from(elf::SHF_ALLOC) } else { 0 },
                    sh_addr: 0,
                    sh_offset: *off as u64,
                    sh_size: s.2.len() as u64,
                    sh_link: 0,
                    sh_info: 0,
                    sh_addralign: 4,
                    sh_entsize: 0,
                });
            }
            w.write_symtab_section_header(1 + syms.iter().filter(|s| s.3 == elf::STB_LOCAL).count() as u32);
            w.write_strtab_section_header();
            w.write_shstrtab_section_header();
            assert_eq!(w.reserved_len(), w.len());
        }
        out
    }
}

fn pad4(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

fn build_id_note(id: &[u8]) -> (&'static str, u32, Vec<u8>) {
    let mut n = Vec::new();
    n.extend(4u32.to_le_bytes());
    n.extend((id.len() as u32).to_le_bytes());
    n.extend(elf::NT_GNU_BUILD_ID.to_le_bytes());
    n.extend(b"GNU\0");
    n.extend(id);
    pad4(&mut n);
    (".note.gnu.build-id", elf::SHT_NOTE, n)
}

fn debuglink(name: &str, crc: u32) -> (&'static str, u32, Vec<u8>) {
    let mut d = name.as_bytes().to_vec();
    d.push(0);
    pad4(&mut d);
    d.extend(crc.to_le_bytes());
    (".gnu_debuglink", elf::SHT_PROGBITS, d)
}

fn xz(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut w = lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6)).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

const ID: [u8; 8] = [0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89];
const WRITE: u64 = TEXT_VADDR + 0x100;
const MEMSET: u64 = TEXT_VADDR + 0x200;
const API: u64 = TEXT_VADDR + 0x300;

/// What a stripped libc keeps: the exported names only.
fn library(sections: Vec<(&'static str, u32, Vec<u8>)>) -> Elf {
    Elf {
        syms: vec![("__write", WRITE, 0x40, elf::STB_WEAK), ("write", WRITE, 0x40, elf::STB_WEAK)],
        sections,
        ..Elf::default()
    }
}

/// What libc's debug file adds: internal functions and more names for exported ones.
fn debug_file(sections: Vec<(&'static str, u32, Vec<u8>)>) -> Elf {
    Elf {
        debug_file: true,
        syms: vec![
            ("__GI___libc_write", WRITE, 0x40, elf::STB_LOCAL),
            ("__libc_write", WRITE, 0x40, elf::STB_LOCAL),
            ("__write", WRITE, 0x40, elf::STB_WEAK),
            ("write", WRITE, 0x40, elf::STB_WEAK),
            ("__memset_avx2_unaligned_erms", MEMSET, 0x80, elf::STB_LOCAL),
            ("api_impl", API, 0x10, elf::STB_LOCAL),
            ("__api", API, 0x10, elf::STB_GLOBAL),
        ],
        sections,
    }
}

/// A fresh directory: `lib/` for the library, `debug/` as the global debug directory.
fn scratch(tag: &str) -> hpm_profile::scratch_tests::ScratchDir {
    let d = hpm_profile::scratch_tests::ScratchDir::new(&format!("symbols-{tag}"));
    std::fs::create_dir(d.join("lib")).unwrap();
    std::fs::create_dir(d.join("debug")).unwrap();
    d
}

fn put(path: &Path, data: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

fn search(dir: &Path) -> DebugSearch {
    DebugSearch { root: dir.join("debug"), ..DebugSearch::default() }
}

/// Opens `dir/lib/libt.so` with `search`; the table and the notes.
fn open(dir: &Path, search: &DebugSearch) -> (SymbolTable, Vec<String>) {
    let mut notes = Vec::new();
    let t = SymbolTable::open_with(&dir.join("lib/libt.so"), search, &mut notes).unwrap().expect("library exists");
    (t, notes)
}

fn build_id_path(dir: &Path) -> PathBuf {
    dir.join("debug/.build-id/ab/cdef0123456789.debug")
}

#[test]
fn debug_file_found_by_build_id_names_internal_functions() {
    let dir = scratch("build-id");
    put(&dir.join("lib/libt.so"), &library(vec![build_id_note(&ID)]).build());
    let (t, notes) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(MEMSET + 8), None, "without its debug file the library names no internal function");
    assert!(notes.is_empty(), "{notes:?}");

    put(&build_id_path(&dir), &debug_file(vec![build_id_note(&ID)]).build());
    let (t, notes) = open(&dir, &search(&dir));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(t.debug_source(), Some(build_id_path(&dir).to_str().unwrap()));
    assert_eq!(t.lookup(MEMSET + 8), Some("__memset_avx2_unaligned_erms"));
    assert_eq!(t.lookup(MEMSET + 0x80), None, "past its size");
    assert_eq!(t.lookup(WRITE + 3), Some("write"), "of four names, the exported one without underscores");
    assert_eq!(t.lookup(API), Some("__api"), "a global name before a local one");

    // Through a mapping, as the agent resolves: file offset -> the library's segment ->
    // address; the debug file's segment (offset 0, no bytes) must not be used for that.
    let lib = dir.join("lib/libt.so");
    let mut s = Symbolizer::default();
    s.set_debug_search(search(&dir));
    s.set_mappings(parse_maps(&format!("7f0000001000-7f0000002000 r-xp 00001000 fd:01 7 {}\n", lib.display())));
    let ip = 0x7f0000001000 + (MEMSET - TEXT_VADDR) + 4;
    let r = s.resolve(ip).unwrap();
    assert_eq!((r.lib.as_str(), r.name.as_str()), ("libt.so", "__memset_avx2_unaligned_erms"));
    assert!(s.take_notes().is_empty());
}

/// A mapping whose file was removed or replaced since it was mapped has ` (deleted)` after its
/// path: no file by that name is the library, and one there is whoever's made it (a JNI library
/// extracted to /tmp is deleted once loaded, and anyone may create the name with the suffix
/// there). hpm mapped such a file, and its maker cut it short: a SIGBUS in the JVM's processing
/// thread. It is never opened; its functions are named by library and offset, as when absent.
#[test]
fn a_deleted_librarys_path_is_never_opened() {
    let dir = scratch("deleted");
    let planted = dir.join("lib/libt.so (deleted)");
    put(&planted, &library(Vec::new()).build());
    let mut s = Symbolizer::default();
    s.set_debug_search(search(&dir));
    s.set_mappings(parse_maps(&format!("7f0000001000-7f0000002000 r-xp 00001000 fd:01 7 {}\n", planted.display())));
    let ip = 0x7f0000001000 + (WRITE - TEXT_VADDR) + 1;
    let r = s.resolve(ip).unwrap();
    assert_eq!(r.lib, "libt.so (deleted)");
    assert!(r.name.starts_with("libt.so (deleted)+0x"), "named from the file at that name: {}", r.name);
    assert!(s.take_notes().is_empty());
}

/// A debug file beside a library in a shared directory may belong to anyone, and anyone can
/// match a CRC32: one another user owns is not mapped (cut short under the mapping, it would
/// raise SIGBUS in the JVM's processing thread). As root the test gives the file to uid 4242;
/// as anyone else it cannot, and checks only that its own file is read.
#[test]
fn a_debug_file_another_user_owns_is_not_read() {
    let debug = debug_file(Vec::new()).build();
    let dir = scratch("foreign-debuglink");
    put(&dir.join("lib/libt.so"), &library(vec![debuglink("libt.debug", crc32fast::hash(&debug))]).build());
    let place = dir.join("lib/libt.debug");
    put(&place, &debug);
    if hpm_profile::outfile::euid() != 0 {
        eprintln!("not root: cannot give a file to another user; only the own-file case is checked");
        assert_eq!(open(&dir, &search(&dir)).0.lookup(MEMSET), Some("__memset_avx2_unaligned_erms"));
        return;
    }
    std::os::unix::fs::chown(&place, Some(4242), Some(4242)).unwrap();
    let (t, notes) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(MEMSET), None, "another user's debug file was read");
    assert_eq!(t.lookup(WRITE), Some("write"), "the library's own names stay");
    assert!(notes.len() == 1 && notes[0].contains("owned by uid 4242, neither root nor this user"), "{notes:?}");
}

#[test]
fn a_build_id_file_of_another_build_is_not_used() {
    let dir = scratch("other-build");
    put(&dir.join("lib/libt.so"), &library(vec![build_id_note(&ID)]).build());
    put(&build_id_path(&dir), &debug_file(vec![build_id_note(&[0xab, 0xcd, 0, 0])]).build());
    let (t, notes) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(MEMSET), None);
    assert_eq!(t.lookup(WRITE), Some("write"), "the library's own names stay");
    assert!(notes.len() == 1 && notes[0].contains("has another build ID"), "{notes:?}");
}

#[test]
fn debuglink_found_in_each_place_and_checked_by_crc() {
    let debug = debug_file(Vec::new()).build();
    let crc = crc32fast::hash(&debug);
    let dir = scratch("debuglink");
    let lib_dir = dir.join("lib");
    let global = dir.join("debug").join(lib_dir.strip_prefix("/").unwrap());
    for place in [lib_dir.join("libt.debug"), lib_dir.join(".debug/libt.debug"), global.join("libt.debug")] {
        put(&dir.join("lib/libt.so"), &library(vec![debuglink("libt.debug", crc)]).build());
        put(&place, &debug);
        let (t, notes) = open(&dir, &search(&dir));
        assert!(notes.is_empty(), "{}: {notes:?}", place.display());
        assert_eq!(t.lookup(MEMSET), Some("__memset_avx2_unaligned_erms"), "{}", place.display());
        assert_eq!(t.debug_source(), Some(place.to_str().unwrap()));
        std::fs::remove_file(&place).unwrap();
    }

    // Another build's debug file under the linked name: its CRC differs.
    put(&dir.join("lib/libt.so"), &library(vec![debuglink("libt.debug", crc ^ 1)]).build());
    put(&lib_dir.join("libt.debug"), &debug);
    let (t, notes) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(MEMSET), None);
    assert!(notes.len() == 1 && notes[0].contains("CRC32"), "{notes:?}");

    // A link naming a path, not a file name, is not followed.
    put(&dir.join("lib/libt.so"), &library(vec![debuglink("../lib/libt.debug", crc)]).build());
    let (t, notes) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(MEMSET), None);
    assert!(notes.len() == 1 && notes[0].contains("not a file name"), "{notes:?}");
}

#[test]
fn gnu_debugdata_is_decompressed_within_its_cap() {
    let mini = debug_file(Vec::new()).build();
    let packed = xz(&mini);
    let dir = scratch("debugdata");
    put(&dir.join("lib/libt.so"), &library(vec![(".gnu_debugdata", elf::SHT_PROGBITS, packed.clone())]).build());
    let (t, notes) = open(&dir, &search(&dir));
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(t.debug_source(), Some(".gnu_debugdata"));
    assert_eq!(t.lookup(MEMSET + 1), Some("__memset_avx2_unaligned_erms"));
    assert_eq!(t.lookup(WRITE), Some("write"));

    let small = DebugSearch { max_debugdata_bytes: mini.len() as u64 - 1, ..search(&dir) };
    let (t, notes) = open(&dir, &small);
    assert_eq!(t.lookup(MEMSET), None);
    assert_eq!(t.lookup(WRITE), Some("write"), "the library's own names stay");
    assert!(notes.len() == 1 && notes[0].contains("decompresses to more than"), "{notes:?}");

    let mut broken = packed;
    let mid = broken.len() / 2;
    broken.truncate(mid);
    put(&dir.join("lib/libt.so"), &library(vec![(".gnu_debugdata", elf::SHT_PROGBITS, broken)]).build());
    let (t, notes) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(WRITE), Some("write"));
    assert!(notes.len() == 1 && notes[0].contains("not a valid xz stream"), "{notes:?}");
}

#[test]
fn a_debug_file_found_by_build_id_wins_over_gnu_debugdata() {
    let dir = scratch("both");
    let mini = Elf { debug_file: true, syms: vec![("mini_name", MEMSET, 0x80, elf::STB_LOCAL)], ..Elf::default() };
    put(
        &dir.join("lib/libt.so"),
        &library(vec![build_id_note(&ID), (".gnu_debugdata", elf::SHT_PROGBITS, xz(&mini.build()))]).build(),
    );
    put(&build_id_path(&dir), &debug_file(vec![build_id_note(&ID)]).build());
    let (t, _) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(MEMSET), Some("__memset_avx2_unaligned_erms"));
}

#[test]
fn debug_files_that_are_not_regular_or_too_big_are_refused_with_the_reason() {
    let dir = scratch("refused");
    put(&dir.join("lib/libt.so"), &library(vec![build_id_note(&ID)]).build());
    std::fs::create_dir_all(build_id_path(&dir)).unwrap();
    let (t, notes) = open(&dir, &search(&dir));
    assert_eq!(t.lookup(WRITE), Some("write"));
    assert!(notes.len() == 1 && notes[0].contains("not a regular file"), "{notes:?}");
    std::fs::remove_dir(build_id_path(&dir)).unwrap();

    // A debug file larger than the library (its DWARF), over a cap the library is under.
    let debug = debug_file(vec![build_id_note(&ID), (".debug_info", elf::SHT_PROGBITS, vec![0; 0x2000])]).build();
    put(&build_id_path(&dir), &debug);
    let small = DebugSearch { max_file_bytes: debug.len() as u64 - 1, ..search(&dir) };
    let lib_len = std::fs::metadata(dir.join("lib/libt.so")).unwrap().len();
    assert!(lib_len < debug.len() as u64, "the library itself is under the cap");
    let (t, notes) = open(&dir, &small);
    assert_eq!(t.lookup(MEMSET), None);
    assert!(notes.len() == 1 && notes[0].contains("bytes hpm reads of one ELF file"), "{notes:?}");

    // The library itself over the cap: an error, which the symbolizer keeps as a note.
    let tiny = DebugSearch { max_file_bytes: 100, ..search(&dir) };
    let err = SymbolTable::open_with(&dir.join("lib/libt.so"), &tiny, &mut Vec::new()).unwrap_err();
    assert!(err.contains("over the 100 bytes"), "{err}");
    let missing = SymbolTable::open_with(&dir.join("lib/none.so"), &tiny, &mut Vec::new());
    assert!(matches!(missing, Ok(None)), "a missing library is no error");
}

#[test]
fn aliases_choose_the_same_name_in_any_order() {
    let names = ["__GI___libc_write", "__libc_write", "__write", "write"];
    for rot in 0..names.len() {
        let list = (0..names.len())
            .map(|i| (0x100, if i == 2 { 0 } else { 0x40 }, names[(i + rot) % names.len()].to_string()));
        let t = SymbolTable::from_symbols(list.collect());
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(0x13f), Some("write"), "rotation {rot}: the largest size is kept too");
    }
}

/// The machine's libc and its debug file (Debian's libc6-dbg), when installed: a function that
/// libc's .dynsym does not name gets its name. NOT RUN (printed) without the debug file.
#[test]
fn this_machines_libc_with_its_debug_file() {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let Some(libc) = parse_maps(&maps).into_iter().find(|m| m.exec && m.path.contains("/libc.so")) else {
        eprintln!("NOT RUN: no libc.so mapped");
        return;
    };
    let mut notes = Vec::new();
    let t = SymbolTable::open_with(Path::new(&libc.path), &DebugSearch::default(), &mut notes).unwrap().unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    let Some(source) = t.debug_source() else {
        eprintln!("NOT RUN: no debug file for {} (install libc6-dbg)", libc.path);
        return;
    };
    let debug = std::fs::read(source).unwrap();
    let file = object::File::parse(&debug[..]).unwrap();
    let internal = file
        .symbols()
        .find(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.name().is_ok_and(|n| n.starts_with("__memset_")))
        .expect("the debug file names libc's memset variants");
    let got = t.lookup(internal.address() + internal.size() / 2);
    assert!(got.is_some_and(|n| n.starts_with("__memset_")), "{}: {got:?}", internal.name().unwrap());
}

#[test]
fn named_sites_are_kept_while_their_mappings_stay() {
    let mut s = Symbolizer::default();
    let a = "7f0000001000-7f0000002000 r-xp 00000000 fd:01 7 /lib/liba.so\n";
    let b = "7f0000005000-7f0000006000 r-xp 00000000 fd:01 8 /lib/libb.so\n";
    s.set_mappings(parse_maps(a));
    s.insert_table("/lib/liba.so", SymbolTable::from_symbols(vec![(0x100, 0x10, "f".into())]));
    let ip = 0x7f0000001104;
    let named = |s: &Symbolizer| s.known_site(ip).map(|(l, n)| (l.to_string(), n.to_string()));
    assert_eq!(named(&s), None, "not named before it is asked for");
    assert_eq!(s.site(ip).map(|(l, n)| (l.to_string(), n.to_string())), Some(("liba.so".into(), "f".into())));
    // Named once: a table read afresh is not consulted for the address again...
    s.insert_table("/lib/liba.so", SymbolTable::from_symbols(vec![(0x100, 0x10, "g".into())]));
    assert_eq!(named(&s), Some(("liba.so".into(), "f".into())));
    // ...while mappings are only added (a library loaded since)...
    s.set_mappings(parse_maps(&format!("{a}{b}")));
    assert_eq!(named(&s), Some(("liba.so".into(), "f".into())));
    // ...or anonymous code comes and goes (the JVM's code cache grows)...
    let anon = "7f0000009000-7f000000a000 rwxp 00000000 00:00 0\n";
    s.set_mappings(parse_maps(&format!("{a}{b}{anon}")));
    s.set_mappings(parse_maps(&format!("{a}{b}")));
    assert_eq!(named(&s), Some(("liba.so".into(), "f".into())));
    // ...and forgotten once one goes away (what is mapped there now may be another file).
    s.set_mappings(parse_maps(b));
    assert_eq!(named(&s), None);
    assert!(s.site(ip).is_none(), "nothing is mapped there any more");
    s.set_mappings(parse_maps(a));
    assert_eq!(s.site(ip).map(|(_, n)| n.to_string()), Some("g".into()), "named afresh from the current table");
}

#[test]
fn addresses_of_one_function_share_its_names() {
    let mut s = Symbolizer::default();
    s.set_mappings(parse_maps("7f0000001000-7f0000002000 r-xp 00000000 fd:01 7 /lib/liba.so\n"));
    s.insert_table(
        "/lib/liba.so",
        SymbolTable::from_symbols(vec![(0x100, 0x40, "_ZN1A1fEv".into()), (0x200, 0x10, "g".into())]),
    );
    let (lib, f) = s.site(0x7f0000001104).expect("f");
    assert_eq!((&*lib, &*f), ("liba.so", "A::f"));
    let (lib2, f2) = s.site(0x7f0000001130).expect("f again");
    assert!(Arc::ptr_eq(&f, &f2) && Arc::ptr_eq(&lib, &lib2), "a second address of f shares its names");
    let (_, g) = s.site(0x7f0000001208).expect("g");
    assert_eq!(&*g, "g");
    assert!(s.site(0x7f0000001180).is_none_or(|(_, n)| &*n != "A::f"), "past f's size is not f");
    // A table read again (another file at that path) names its own functions.
    s.insert_table("/lib/liba.so", SymbolTable::from_symbols(vec![(0x100, 0x40, "h".into())]));
    assert_eq!(s.site(0x7f0000001110).map(|(_, n)| n.to_string()), Some("h".into()));
}
