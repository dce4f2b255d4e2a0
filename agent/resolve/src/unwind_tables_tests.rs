//! Tables of real files (this test binary, this machine's libc) and of hostile ones, and an
//! unwind of the test's own stack with them: a chain of functions whose return addresses the
//! symbol table must name in order, down to the thread's entry.

use std::hint::black_box;

use hpm_capture::native::{NativeStop, NativeTables};

use super::*;
use crate::symbols::{parse_maps, Symbolizer};

fn exec_mappings() -> Vec<Mapping> {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap();
    parse_maps(&text).into_iter().filter(|m| m.exec && m.path.starts_with('/')).collect()
}

fn mapping_of(name: &str) -> Mapping {
    let exe = std::fs::read_link("/proc/self/exe").unwrap().display().to_string();
    let want = if name == "exe" { exe } else { name.to_string() };
    exec_mappings()
        .into_iter()
        .find(|m| m.path == want || m.path.rsplit('/').next() == Some(name))
        .unwrap_or_else(|| panic!("{name} not mapped"))
}

fn check_sorted(t: &LibTable) {
    assert!(t.rows.windows(2).all(|w| w[0].pc < w[1].pc), "rows sorted, one per pc");
    assert_eq!(t.rows.last().map(|r| r.cfa), Some(Cfa::Refuse), "the last FDE's end refuses");
}

#[test]
fn the_tables_of_this_binary_and_of_libc_parse() {
    for name in ["exe", "libc.so.6"] {
        let m = mapping_of(name);
        let t = table_for(&m).unwrap();
        assert!(t.rows.len() > 1000, "{name}: {} rows", t.rows.len());
        assert_eq!((t.start, t.end), (m.start, m.end));
        check_sorted(&t);
        let count = |c: Cfa| t.rows.iter().filter(|r| r.cfa == c).count();
        // Most rows of compiled code are rsp-based; every file has a thread entry or a PLT.
        assert!(count(Cfa::Sp) > t.rows.len() / 2, "{name}: {} rsp rows", count(Cfa::Sp));
        if name == "libc.so.6" {
            assert!(count(Cfa::Bottom) >= 1, "clone3 and its like mark the bottom");
        }
    }
}

/// The registers of the deepest function of the chain, and the walk from there.
struct Walk {
    tables: NativeTables,
    pcs: Vec<u64>,
    end: Option<NativeStop>,
}

/// The bounds of this thread's stack.
fn stack_bounds() -> (u64, u64) {
    // SAFETY: the attribute object is initialised by pthread_getattr_np before it is read
    // and destroyed after; pthread_self is this live thread.
    unsafe {
        let mut attr = std::mem::zeroed::<libc::pthread_attr_t>();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        (addr as u64, addr as u64 + size as u64)
    }
}

#[inline(never)]
fn chain_outer(w: &mut Walk) -> u64 {
    black_box(chain_middle(w)) + 1
}

#[inline(never)]
fn chain_middle(w: &mut Walk) -> u64 {
    black_box(chain_inner(w)) + 2
}

/// Walks the stack from its own registers, while the chain's frames are live above it.
#[inline(never)]
fn chain_inner(w: &mut Walk) -> u64 {
    let (mut pc, mut sp, mut fp): (u64, u64, u64);
    // SAFETY: reads rip, rsp and rbp into registers; no memory, no stack change.
    unsafe {
        std::arch::asm!("lea {0}, [rip]", "mov {1}, rsp", "mov {2}, rbp", out(reg) pc, out(reg) sp, out(reg) fp,
            options(nomem, nostack, preserves_flags));
    }
    let (lo, hi) = stack_bounds();
    let lo = sp.max(lo);
    let word = |a: u64| {
        // SAFETY: an aligned word of this thread's own stack, between the deepest frame's sp
        // and the stack's top: mapped, and not written while this function runs.
        (a >= lo && a.checked_add(8).is_some_and(|e| e <= hi) && a.is_multiple_of(8))
            .then(|| unsafe { std::ptr::read_volatile(a as *const u64) })
    };
    let mut exact = false;
    for _ in 0..256 {
        match w.tables.step(pc, sp, fp, exact, &word) {
            Ok((p, s, f)) => {
                assert!(s > sp, "the caller's frame is above");
                w.pcs.push(p);
                (pc, sp, fp, exact) = (p, s, f, true);
            }
            Err(e) => {
                w.end = Some(e);
                break;
            }
        }
    }
    black_box(pc)
}

#[test]
fn the_tests_own_stack_unwinds_through_the_chain_to_the_threads_entry() {
    let maps = exec_mappings();
    let tables = NativeTables::default();
    for m in &maps {
        if let Ok(t) = table_for(m) {
            assert!(tables.add(t), "{}", m.path);
        }
    }
    let mut w = Walk { tables, pcs: Vec::new(), end: None };
    black_box(chain_outer(&mut w));

    let mut names = Symbolizer::default();
    names.set_mappings(parse_maps(&std::fs::read_to_string("/proc/self/maps").unwrap()));
    let named: Vec<String> = w
        .pcs
        .iter()
        .map(|&p| names.resolve(p - 1).map(|s| format!("{} {}", s.lib, s.name)).unwrap_or(format!("{p:#x}")))
        .collect();
    let shown = named.join("\n  ");
    assert!(named.len() >= 4, "{shown}");
    assert!(named[0].contains("chain_middle"), "{shown}");
    assert!(named[1].contains("chain_outer"), "{shown}");
    assert!(named[2].contains("the_tests_own_stack_unwinds"), "{shown}");
    assert_eq!(w.end, Some(NativeStop::Bottom), "{shown}");
    assert!(named.last().is_some_and(|n| n.starts_with("libc.so")), "the entry is libc's: {shown}");
}

/// An ELF file (relocatable, x86-64) whose `.eh_frame` is `bytes`.
fn elf_with_eh_frame(bytes: &[u8]) -> Vec<u8> {
    use object::write::Object as W;
    let mut o = W::new(object::BinaryFormat::Elf, object::Architecture::X86_64, object::Endianness::Little);
    let id = o.add_section(Vec::new(), b".eh_frame".to_vec(), object::SectionKind::ReadOnlyData);
    o.set_section_data(id, bytes.to_vec(), 8);
    o.write().unwrap()
}

fn libc_eh_frame() -> Vec<u8> {
    let m = mapping_of("libc.so.6");
    let data = std::fs::read(&m.path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sec = file.section_by_name(".eh_frame").unwrap();
    sec.data().unwrap()[..64 << 10].to_vec()
}

fn whole() -> Mapping {
    Mapping { start: 0x1_0000, end: 0x100_0000, offset: 0, exec: true, path: "test".into(), dev: 0, inode: 0 }
}

#[test]
fn a_truncated_or_garbled_eh_frame_gives_an_error_never_a_panic() {
    let eh = libc_eh_frame();
    // The first 64 KiB cut inside an entry: the entry's length runs past the end.
    let mut cut_errors = 0;
    for cut in (13..eh.len()).step_by(997) {
        let r = table_from_elf(&elf_with_eh_frame(&eh[..cut]), &whole());
        cut_errors += usize::from(r.is_err());
    }
    assert!(cut_errors > 50, "{cut_errors}");
    // Bytes flipped at random (xorshift, fixed seed) and plain noise: any answer but a panic,
    // and no more rows than the section has bytes.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..40 {
        let mut b = eh[..4096].to_vec();
        for _ in 0..8 {
            let i = (next() % b.len() as u64) as usize;
            b[i] ^= 1 << (next() % 8);
        }
        if let Ok(t) = table_from_elf(&elf_with_eh_frame(&b), &whole()) {
            assert!(t.rows.len() <= b.len());
        }
        let noise: Vec<u8> = (0..512).map(|_| next() as u8).collect();
        let _ = table_from_elf(&elf_with_eh_frame(&noise), &whole());
    }
    let none = table_from_elf(&elf_with_eh_frame(&[]), &whole()).map(|t| t.rows.len());
    assert_eq!(none, Ok(0));
    assert!(table_from_elf(b"not an ELF file", &whole()).is_err());
}

#[test]
fn the_bias_comes_from_the_segment_that_holds_the_mapping() {
    // A test binary's layout: the executable segment's file offset is not page-aligned, and
    // its mapping starts in the read-only segment's last page.
    let segs = [(0, 0, 0x1c74bc), (0x1c74c0, 0x1c84c0, 0x40ed20), (0x5d61e0, 0x5d81e0, 0x5f5b8)];
    let m = Mapping {
        start: 0x5555_5571_c000,
        end: 0x5555_55b2_c000,
        offset: 0x1c7000,
        exec: true,
        path: "x".into(),
        dev: 0,
        inode: 0,
    };
    // File virtual address 0x1c84c0 (offset 0x1c74c0) is at start + 0x4c0.
    assert_eq!(bias(&segs, &m).wrapping_add(0x1c84c0), m.start + 0x4c0);
}

#[test]
fn the_plt_expression_is_recognised_and_nothing_near_it() {
    let plt = [0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22];
    assert_eq!(plt_threshold(&plt), Some(11));
    let mut other = plt;
    other[1] = 0x10;
    assert_eq!(plt_threshold(&other), None);
    assert_eq!(plt_threshold(&plt[..10]), None);
}

#[test]
fn gaps_between_fdes_refuse_and_repeated_rules_merge() {
    let sp = |pc, off| Row { pc, cfa_off: off, fp_off: 0, cfa: Cfa::Sp };
    let span = |start, end, row| Span { start, end, row };
    let rows = compact(vec![
        span(0x200, 0x210, sp(0x200, 8)),
        span(0x100, 0x104, sp(0x100, 8)),
        span(0x104, 0x110, sp(0x104, 16)),
        span(0x110, 0x120, sp(0x110, 16)),
        span(0x210, 0x220, sp(0x210, 8)),
    ]);
    assert_eq!(rows, vec![sp(0x100, 8), sp(0x104, 16), Row::refuse(0x120), sp(0x200, 8), Row::refuse(0x220)]);
}

#[test]
fn overlapping_fdes_refuse_the_overlap() {
    let sp = |pc, off| Row { pc, cfa_off: off, fp_off: 0, cfa: Cfa::Sp };
    let span = |start, end, row| Span { start, end, row };
    // FDE A [0x100,0x200): rsp+8, rsp+16 from 0x140; FDE B [0x150,0x160) inside it: rsp+64.
    // Which holds in B's range (and after it, in A's) is unknown: refused to A's end.
    let rows = compact(vec![
        span(0x100, 0x140, sp(0x100, 8)),
        span(0x140, 0x200, sp(0x140, 16)),
        span(0x150, 0x160, sp(0x150, 64)),
        span(0x200, 0x210, sp(0x200, 8)),
    ]);
    assert_eq!(rows, vec![sp(0x100, 8), sp(0x140, 16), Row::refuse(0x150), sp(0x200, 8), Row::refuse(0x210)]);
    // Duplicates: refused from their start.
    let rows = compact(vec![span(0x100, 0x110, sp(0x100, 8)), span(0x100, 0x110, sp(0x100, 8))]);
    assert_eq!(rows, vec![Row::refuse(0x100)]);
}

#[test]
fn a_file_replaced_since_it_was_mapped_is_not_read() {
    let m = mapping_of("libc.so.6");
    assert!(m.inode != 0);
    assert!(table_for(&m).is_ok());
    let e = table_for(&Mapping { inode: m.inode + 1, ..m.clone() }).unwrap_err();
    assert!(e.contains("not the file mapped"), "{e}");
    if libc::major(std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(&m.path).unwrap())) != 0 {
        assert!(table_for(&Mapping { dev: m.dev + 1, ..m.clone() }).is_err(), "another device");
    }
    // An anonymous device in stat (overlayfs, btrfs): the inode alone decides.
    assert!(same_file(&m, (libc::makedev(0, 40), m.inode)));
    assert!(!same_file(&m, (libc::makedev(0, 40), m.inode + 1)));
    assert!(same_file(&Mapping { inode: 0, ..m }, (1, 2)), "made up: not checked");
}

/// One bad FDE (its CIE pointer leads nowhere) among good ones: only its range is refused.
#[test]
fn a_bad_fde_refuses_its_own_range_only() {
    // .debug_frame, 32-bit: a CIE (CFA = rsp + 8, the return address at CFA - 8), then FDEs.
    let mut df = vec![];
    df.extend(16u32.to_le_bytes());
    df.extend(u32::MAX.to_le_bytes()); // CIE id
    df.extend([1, 0, 1, 0x78, 16]); // version, "", code and data alignment, RA register
    df.extend([0x0c, 7, 8, 0x90, 1, 0, 0]); // def_cfa rsp+8; offset RA at CFA-8; nops
    let fde = |df: &mut Vec<u8>, cie: u32, start: u64| {
        df.extend(20u32.to_le_bytes());
        df.extend(cie.to_le_bytes());
        df.extend(start.to_le_bytes());
        df.extend(0x100u64.to_le_bytes());
    };
    fde(&mut df, 0, 0x1000);
    fde(&mut df, 0x7777, 0x1100);
    fde(&mut df, 0, 0x1200);
    use object::write::Object as W;
    let mut o = W::new(object::BinaryFormat::Elf, object::Architecture::X86_64, object::Endianness::Little);
    let id = o.add_section(Vec::new(), b".debug_frame".to_vec(), object::SectionKind::Debug);
    o.set_section_data(id, df, 8);
    let t = table_from_elf(&o.write().unwrap(), &whole()).unwrap();
    let sp8 = |pc| Row { pc, cfa_off: 8, fp_off: 0, cfa: Cfa::Sp };
    assert_eq!(&t.rows[..], &[sp8(0x1000), Row::refuse(0x1100), sp8(0x1200), Row::refuse(0x1300)]);
}
