//! Native unwind tables built from a library's DWARF call-frame information, off the signal
//! path, for `hpm_capture::native::NativeTables`.
//!
//! Every FDE of the file's `.eh_frame` (or, without one, its `.debug_frame`) is run through
//! gimli's CFI evaluation into rows the handler's step can follow on x86-64: the CFA from rsp
//! or rbp plus an offset, or the PLT's well-known expression; rbp saved at CFA + n or
//! unchanged; the return address at CFA - 8. Any other rule (a CFA expression, a return
//! address elsewhere, a register rule for rbp other than a save) becomes a row the step
//! refuses, and so does every gap between FDEs: a pc there is not given the previous
//! function's rule. Rows are clipped to the executable mapping, sorted, and merged where one
//! repeats the rule before it.
//!
//! Bounds: the file is mapped as symbols.rs maps libraries (regular file, at most
//! [`MAX_ELF_FILE_BYTES`]); the FDE loop is bounded by the section's bytes, the rows by
//! [`MAX_ROWS`] (an error past it).

use std::path::Path;

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, DebugFrame, EhFrame, LittleEndian, Register, RegisterRule, UnwindContext,
    UnwindSection, UnwindTableRow,
};
use hpm_capture::native::{Cfa, LibTable, Row, MAX_ROWS};
use object::{Object, ObjectSection};

use crate::symbols::{loadable_segments, map_file_id, offset_to_vaddr, Mapping, Owners, MAX_ELF_FILE_BYTES};

type Slice<'a> = gimli::EndianSlice<'a, LittleEndian>;

/// DWARF register numbers of x86-64.
const RBP: Register = Register(6);
const RSP: Register = Register(7);
const RA: Register = Register(16);

/// The table of the executable mapping `m` of a library (its file read from `m.path`):
/// rows for every pc its `.eh_frame` (or `.debug_frame`) covers. The file opened must be the
/// one mapped (see [`same_file`]).
pub fn table_for(m: &Mapping) -> Result<LibTable, String> {
    let (map, id) = map_file_id(Path::new(&m.path), MAX_ELF_FILE_BYTES, Owners::Any)?
        .ok_or_else(|| format!("{}: no such file; its native frames are unwound by rbp only", m.path))?;
    if !same_file(m, id) {
        return Err(format!(
            "{}: not the file mapped (replaced since); its native frames are unwound by rbp only",
            m.path
        ));
    }
    table_from_elf(&map, m).map_err(|e| format!("{}: {e}; its native frames are unwound by rbp only", m.path))
}

/// Whether the file opened, `(st_dev, st_ino)` of its descriptor, is the one `m` maps: the
/// same inode, and the same device unless the file's is an anonymous one (major 0: overlayfs
/// and btrfs report one in `stat` while the maps line may name the backing device). A
/// mapping without an inode (made up, not from a maps line) is not checked.
pub fn same_file(m: &Mapping, (dev, ino): (u64, u64)) -> bool {
    m.inode == 0 || (ino == m.inode && (dev == m.dev || libc::major(dev) == 0))
}

/// The table of the mapping `m` of the ELF file whose bytes are `data`.
pub fn table_from_elf(data: &[u8], m: &Mapping) -> Result<LibTable, String> {
    let file = object::File::parse(data).map_err(|e| e.to_string())?;
    if file.architecture() != object::Architecture::X86_64 {
        return Err(format!("{:?} code, not x86-64", file.architecture()));
    }
    let bias = bias(&loadable_segments(&file), m);
    let (lo, hi) = (m.start.wrapping_sub(bias), m.end.wrapping_sub(bias));
    if lo >= hi || hi > u64::from(u32::MAX) {
        return Err(format!("mapped at file addresses {lo:#x}..{hi:#x}, beyond the tables' 4 GiB"));
    }
    let section_addr = |name: &str| file.section_by_name(name).map(|s| s.address());
    let mut rows = Vec::new();
    let (name, fault) = if let Some(sec) = file.section_by_name(".eh_frame") {
        let bytes = sec.data().map_err(|e| format!(".eh_frame: {e}"))?;
        let mut bases = BaseAddresses::default().set_eh_frame(sec.address());
        if let Some(a) = section_addr(".text") {
            bases = bases.set_text(a);
        }
        if let Some(a) = section_addr(".got") {
            bases = bases.set_got(a);
        }
        (".eh_frame", collect(&EhFrame::new(bytes, LittleEndian), &bases, lo..hi, &mut rows))
    } else if let Some(sec) = file.section_by_name(".debug_frame") {
        let bytes = sec.uncompressed_data().map_err(|e| format!(".debug_frame: {e}"))?;
        let mut df = DebugFrame::new(&bytes, LittleEndian);
        df.set_address_size(8);
        (".debug_frame", collect(&df, &BaseAddresses::default(), lo..hi, &mut rows))
    } else {
        return Err("no .eh_frame or .debug_frame".to_string());
    };
    // A fault that left rows costs its FDE's range only; one that left none, the library.
    match fault {
        Err(e) => return Err(format!("{name}: {e}")),
        Ok(Some(e)) if rows.is_empty() => return Err(format!("{name}: {e}")),
        Ok(_) => {}
    }
    Ok(LibTable { start: m.start, end: m.end, bias, rows: compact(rows).into_boxed_slice() })
}

/// What added to a file virtual address gives its address in the mapping `m`: by the
/// loadable segment holding most of the mapping's file bytes. The mapping's offset is rounded
/// down to a page and may fall in the segment before (and its end in the one after), so it is
/// translated by that segment's rule, as symbols.rs translates each address in it.
fn bias(segments: &[(u64, u64, u64)], m: &Mapping) -> u64 {
    let (lo, hi) = (m.offset, m.offset.saturating_add(m.end.saturating_sub(m.start)));
    let overlap = |&&(off, _, size): &&(u64, u64, u64)| hi.min(off.saturating_add(size)).saturating_sub(lo.max(off));
    let vaddr = match segments.iter().filter(|s| overlap(s) > 0).max_by_key(overlap) {
        Some(&(off, vaddr, _)) => vaddr.wrapping_add(m.offset).wrapping_sub(off),
        None => offset_to_vaddr(segments, m.offset),
    };
    m.start.wrapping_sub(vaddr)
}

/// A row of one FDE: its rule from `start` to `end` (file virtual addresses, within the
/// mapping).
struct Span {
    start: u32,
    end: u32,
    row: Row,
}

/// Adds the rows of every FDE of `section` that fall in `range` to `out`. An FDE (or its CIE)
/// that does not parse or evaluate adds the rows before the fault only: the rest of its range
/// is a gap, refused. Where the section's entries themselves stop parsing, the rest of it is
/// not read. The first such fault is returned, if any; an error only past [`MAX_ROWS`].
fn collect<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    range: std::ops::Range<u64>,
    out: &mut Vec<Span>,
) -> Result<Option<String>, String> {
    let mut ctx = Box::new(UnwindContext::new());
    let mut entries = section.entries(bases);
    // The CIE most FDEs share, parsed once.
    let mut last_cie = None;
    let mut fault = None;
    let mut note = |e: gimli::Error| {
        fault.get_or_insert_with(|| e.to_string());
    };
    loop {
        let entry = match entries.next() {
            Ok(Some(entry)) => entry,
            Ok(None) => break,
            Err(e) => {
                note(e);
                break;
            }
        };
        let CieOrFde::Fde(partial) = entry else { continue };
        let fde = partial.parse(|s, b, off| match &last_cie {
            Some((o, cie)) if *o == off => Ok(gimli::CommonInformationEntry::clone(cie)),
            _ => {
                let cie = s.cie_from_offset(b, off)?;
                last_cie = Some((off, cie.clone()));
                Ok(cie)
            }
        });
        let fde = match fde {
            Ok(fde) => fde,
            Err(e) => {
                note(e);
                continue;
            }
        };
        if fde.initial_address() >= range.end || fde.end_address() <= range.start {
            continue;
        }
        let mut table = match fde.rows(section, bases, &mut ctx) {
            Ok(t) => t,
            Err(e) => {
                note(e);
                continue;
            }
        };
        loop {
            let r = match table.next_row() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    note(e);
                    break;
                }
            };
            let (start, end) = (r.start_address().max(range.start), r.end_address().min(range.end));
            if start >= end {
                continue;
            }
            if out.len() >= MAX_ROWS {
                return Err(format!("over {MAX_ROWS} rows; not used"));
            }
            // In range, so below 4 GiB (checked by the caller).
            let (start, end) = (start as u32, end as u32);
            out.push(Span { start, end, row: convert(r, section, start) });
        }
    }
    Ok(fault)
}

/// The step's form of one CFI row at `pc`: what it cannot follow becomes [`Cfa::Refuse`].
fn convert<'a, S: UnwindSection<Slice<'a>>>(r: &UnwindTableRow<usize>, section: &S, pc: u32) -> Row {
    let refuse = Row::refuse(pc);
    match r.register(RA) {
        Some(RegisterRule::Undefined) => return Row { pc, cfa_off: 0, fp_off: 0, cfa: Cfa::Bottom },
        Some(RegisterRule::Offset(-8)) => {}
        _ => return refuse,
    }
    let fp_off = match r.register(RBP) {
        None | Some(RegisterRule::SameValue) => 0,
        Some(RegisterRule::Offset(o)) => match i16::try_from(o) {
            Ok(o) if o != 0 => o,
            _ => return refuse,
        },
        _ => return refuse,
    };
    let (cfa, cfa_off) = match r.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            let Ok(off) = i32::try_from(*offset) else { return refuse };
            match *register {
                RSP => (Cfa::Sp, off),
                RBP => (Cfa::Fp, off),
                _ => return refuse,
            }
        }
        CfaRule::Expression(e) => match e.get(section).ok().and_then(|x| plt_threshold(x.0.slice())) {
            Some(n) => (Cfa::Plt, n),
            None => return refuse,
        },
    };
    Row { pc, cfa_off, fp_off, cfa }
}

/// The threshold N of the PLT's CFA expression, as the linkers write it:
/// `rsp + 8 + ((rip & 15) >= N) << 3`.
fn plt_threshold(expr: &[u8]) -> Option<i32> {
    // DW_OP_breg7 8, DW_OP_breg16 0, DW_OP_lit15, DW_OP_and, DW_OP_litN, DW_OP_ge,
    // DW_OP_lit3, DW_OP_shl, DW_OP_plus.
    match expr {
        [0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, lit @ 0x30..=0x3f, 0x2a, 0x33, 0x24, 0x22] => Some(i32::from(lit - 0x30)),
        _ => None,
    }
}

/// Sorted rows with a refusing row at the end of every FDE not followed at once by another,
/// and without rows that repeat the one before. Where FDEs overlap (one inside another,
/// duplicates) which rule holds is unknown: refused from where the overlap starts to where
/// the last of them ends.
fn compact(mut spans: Vec<Span>) -> Vec<Row> {
    spans.sort_by_key(|s| s.start);
    let mut out: Vec<Row> = Vec::with_capacity(spans.len() / 2);
    let same = |a: &Row, b: &Row| (a.cfa, a.cfa_off, a.fp_off) == (b.cfa, b.cfa_off, b.fp_off);
    let push = |out: &mut Vec<Row>, row: Row| match out.last_mut() {
        Some(last) if last.pc == row.pc => *last = row,
        Some(last) if same(last, &row) => {}
        _ => out.push(row),
    };
    // The furthest end of the spans so far.
    let mut end: Option<u32> = None;
    for s in spans {
        match end {
            Some(e) if s.start < e => push(&mut out, Row::refuse(s.start)),
            Some(e) if e < s.start => {
                push(&mut out, Row::refuse(e));
                push(&mut out, s.row);
            }
            _ => push(&mut out, s.row),
        }
        end = Some(end.map_or(s.end, |e| e.max(s.end)));
    }
    if let Some(e) = end {
        push(&mut out, Row::refuse(e));
    }
    out
}

#[cfg(test)]
#[path = "unwind_tables_tests.rs"]
mod tests;
