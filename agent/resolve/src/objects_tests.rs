use std::collections::BTreeMap;

use super::*;
use hpm_capture::javaheap::{Head, HeapCapture, WINDOW};
use hpm_capture::operand::{Access, MemoryAccess};

/// Class metadata at made-up addresses: byte ranges by start.
#[derive(Default)]
struct Meta {
    ranges: BTreeMap<u64, Vec<u8>>,
    reads: usize,
}

impl Meta {
    fn put(&mut self, at: u64, bytes: &[u8]) {
        self.ranges.insert(at, bytes.to_vec());
    }
    fn symbol(&mut self, at: u64, text: &str) {
        let mut b = vec![0u8; 6];
        b[4..6].copy_from_slice(&(text.len() as u16).to_le_bytes());
        b.extend_from_slice(text.as_bytes());
        self.put(at, &b);
    }
}

impl MetaRead for Meta {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        self.reads += 1;
        // One read is served by the ranges that cover it end to end (gaps fail).
        let mut pos = addr;
        let end = addr + buf.len() as u64;
        while pos < end {
            let Some((&at, bytes)) = self.ranges.range(..=pos).next_back() else { return false };
            let off = (pos - at) as usize;
            if off >= bytes.len() {
                return false;
            }
            let n = (bytes.len() - off).min((end - pos) as usize);
            buf[(pos - addr) as usize..(pos - addr) as usize + n].copy_from_slice(&bytes[off..off + n]);
            pos += n as u64;
        }
        true
    }
}

const KLASS_BASE: u64 = 0x8_0000_0000;

fn header() -> HeaderLayout {
    HeaderLayout { compressed_klass: true, klass_base: KLASS_BASE, klass_shift: 3, klass_in_mark: None, hash_end: 39 }
}

fn classes(fields: FieldFormat) -> ClassLayout {
    ClassLayout {
        layout_helper: 8,
        name: 24,
        super_klass: 120,
        symbol_length: 4,
        symbol_body: 6,
        constants: 224,
        constant_pool_size: 72,
        array_data: 4,
        fields: Some(fields),
        klass_bytes: 464,
        narrow_oops: true,
    }
}

const STREAM: FieldFormat =
    FieldFormat::Stream { stream: 448, injected_flag: 1, initialized_flag: 0, generic_flag: 2, contended_flag: 4 };

/// One-byte UNSIGNED5 numbers (the tests' values stay below 192).
fn unsigned5(out: &mut Vec<u8>, v: u64) {
    assert!(v < 192);
    out.push((v + 1) as u8);
}

/// An instance klass at `k` named `name` of `size` bytes, with `fields` (name, descriptor,
/// offset) in the stream format, its constant pool at `k + 0x1000`.
fn instance_klass(m: &mut Meta, k: u64, name: &str, size: i32, super_klass: u64, fields: &[(&str, &str, u64)]) {
    let mut klass = vec![0u8; 464];
    klass[8..12].copy_from_slice(&size.to_le_bytes());
    let (sym, cp, stream) = (k + 0x800, k + 0x1000, k + 0x1800);
    klass[24..32].copy_from_slice(&sym.to_le_bytes());
    klass[120..128].copy_from_slice(&super_klass.to_le_bytes());
    klass[224..232].copy_from_slice(&cp.to_le_bytes());
    klass[448..456].copy_from_slice(&stream.to_le_bytes());
    m.put(k, &klass);
    m.symbol(sym, name);
    let mut bytes = Vec::new();
    unsigned5(&mut bytes, fields.len() as u64);
    unsigned5(&mut bytes, 0);
    let mut pool = vec![0u8; 72 + 8 * (2 * fields.len() + 1)];
    for (i, (fname, sig, off)) in fields.iter().enumerate() {
        let (ni, si) = (1 + 2 * i as u64, 2 + 2 * i as u64);
        let (ns, ss) = (cp + 0x400 + 0x40 * ni, cp + 0x400 + 0x40 * si);
        m.symbol(ns, fname);
        m.symbol(ss, sig);
        pool[(72 + 8 * ni) as usize..(80 + 8 * ni) as usize].copy_from_slice(&ns.to_le_bytes());
        pool[(72 + 8 * si) as usize..(80 + 8 * si) as usize].copy_from_slice(&ss.to_le_bytes());
        for v in [ni, si, *off, 0x0002 /* private */, 0] {
            unsigned5(&mut bytes, v);
        }
    }
    m.put(cp, &pool);
    let mut array = (bytes.len() as i32).to_le_bytes().to_vec();
    array.extend_from_slice(&bytes);
    m.put(stream, &array);
}

fn array_klass(m: &mut Meta, k: u64, name: &str, lh: u32) {
    let mut klass = vec![0u8; 464];
    klass[8..12].copy_from_slice(&lh.to_le_bytes());
    klass[24..32].copy_from_slice(&(k + 0x800).to_le_bytes());
    m.put(k, &klass);
    m.symbol(k + 0x800, name);
}

const POINT: u64 = KLASS_BASE + 0x1_0000;
const BASE: u64 = KLASS_BASE + 0x2_0000;
const INTS: u64 = KLASS_BASE + 0x3_0000;

fn narrow(k: u64) -> u64 {
    (k - KLASS_BASE) >> 3
}

fn meta() -> Meta {
    let mut m = Meta::default();
    instance_klass(&mut m, BASE, "demo/Base", 16, 0, &[("id", "I", 12)]);
    instance_klass(&mut m, POINT, "demo/Point", 32, BASE, &[("x", "I", 16), ("y", "J", 24)]);
    // int[]: typeArray tag, 16-byte header, T_INT, 4-byte elements.
    array_klass(&mut m, INTS, "[I", (3 << 30) | (16 << 16) | (10 << 8) | 2);
    m
}

/// A capture of `words` (address, value) in eden, the window ending past `address`.
fn capture(address: u64, heads: &[(usize, u64)], words: &[(u64, u64)]) -> HeapCapture {
    let mut c = HeapCapture { space: Space::Eden as u8, address, ..HeapCapture::default() };
    let word = |a: u64| words.iter().find(|w| w.0 == a).map(|w| w.1).unwrap_or(0);
    for &(i, at) in heads {
        c.heads[i] = Head { at, words: [word(at), word(at + 8), word(at + 16)] };
    }
    let top = (address & !7) + 24;
    c.window_at = top - 8 * WINDOW as u64;
    c.nwindow = WINDOW as u8;
    for i in 0..WINDOW {
        c.window[i] = word(c.window_at + 8 * i as u64);
    }
    c
}

fn load(address: u64, displacement: i64) -> MemoryAccess {
    MemoryAccess { address, displacement, register_based: true, size: 4, access: Access::Load, len: 3, stored: None }
}

const OBJ: u64 = 0x1_0010_0040;

#[test]
fn a_field_load_names_the_class_and_the_field_by_the_shortcut() {
    let mut m = meta();
    let mut id = Identifier::new(header(), classes(STREAM));
    let words = [(OBJ, 1), (OBJ + 8, narrow(POINT))];
    let t = id.identify(&capture(OBJ + 24, &[(1, OBJ)], &words), &load(OBJ + 24, 24), 0, &mut m);
    assert_eq!(t.space, Space::Eden);
    assert_eq!(t.class.as_deref(), Some("demo.Point"));
    assert_eq!(t.field.as_deref(), Some("demo.Point.y"));
    assert_eq!(t.offset, 24);
    // The superclass's field, and the header.
    let t = id.identify(&capture(OBJ + 12, &[(1, OBJ)], &words), &load(OBJ + 12, 12), 0, &mut m);
    assert_eq!(t.field.as_deref(), Some("demo.Base.id"));
    let t = id.identify(&capture(OBJ + 8, &[(1, OBJ)], &words), &load(OBJ + 8, 8), 0, &mut m);
    assert_eq!(t.field.as_deref(), Some("<header>"));
    assert_eq!((id.stats.by_register, id.stats.by_scan, id.stats.heap()), (3, 0, 3));
    // Cached: asking again reads nothing.
    let before = m.reads;
    id.identify(&capture(OBJ + 24, &[(1, OBJ)], &words), &load(OBJ + 24, 24), 0, &mut m);
    assert_eq!(m.reads, before);
}

#[test]
fn an_array_element_gets_its_index_from_the_base_register() {
    let mut m = meta();
    let mut id = Identifier::new(header(), classes(STREAM));
    // int[10]: length in the klass word's upper half; element 3 at 16 + 3*4.
    let words = [(OBJ, 1), (OBJ + 8, narrow(INTS) | (10 << 32))];
    let a = OBJ + 16 + 12;
    // [base + index*4 + 16]: address - displacement is not the array, the base register is.
    let cap = capture(a, &[(1, a - 16), (2, OBJ)], &words);
    let t = id.identify(&cap, &load(a, 16), 0, &mut m);
    assert_eq!((t.class.as_deref(), t.field.as_deref(), t.index, t.offset), (Some("int[]"), Some("[]"), Some(3), 28));
    assert_eq!(id.stats.by_register, 1);
}

#[test]
fn without_a_register_the_scan_finds_the_nearest_valid_header() {
    let mut m = meta();
    let mut id = Identifier::new(header(), classes(STREAM));
    // A Point after an int[2] whose elements look like a header (mark 1, klass 5): the klass
    // does not check out, so the scan goes on to the Point's header.
    let arr = OBJ - 24;
    let words =
        [(arr, 1), (arr + 8, narrow(INTS) | (2 << 32)), (arr + 16, 1 | (5 << 32)), (OBJ, 5), (OBJ + 8, narrow(POINT))];
    let cap = capture(OBJ + 16, &[], &words);
    let mut access = load(OBJ + 16, 0);
    access.register_based = false;
    let t = id.identify(&cap, &access, 0, &mut m);
    assert_eq!((t.class.as_deref(), t.field.as_deref()), (Some("demo.Point"), Some("demo.Point.x")));
    assert_eq!(id.stats.by_scan, 1);
}

#[test]
fn garbage_is_not_taken_for_an_object() {
    let mut m = meta();
    let mut id = Identifier::new(header(), classes(STREAM));
    // Marks that are GC-marked (0b11), unlocked with bits above the hash, or zero; klass words
    // naming no klass or a klass whose object would not reach the address.
    let words = [
        (OBJ - 64, 3),
        (OBJ - 56, narrow(POINT)),
        (OBJ - 48, 1 << 45 | 1),
        (OBJ - 40, narrow(POINT)),
        (OBJ - 32, 1),
        (OBJ - 24, 0x1234),
        (OBJ - 16, 1),
        (OBJ - 8, narrow(BASE)),
    ];
    let t = id.identify(&capture(OBJ + 8, &[], &words), &load(OBJ + 8, 0), 0, &mut m);
    assert_eq!(t.class, None);
    assert_eq!(id.stats.failed, vec![("no_header_found".to_string(), 1)]);
    assert!(id.stats.line().unwrap().contains("0 of 1 heap samples identified"), "{:?}", id.stats.line());
}

#[test]
fn stack_and_native_addresses_are_labelled_not_identified() {
    let mut m = meta();
    let mut id = Identifier::new(header(), classes(STREAM));
    let cap = HeapCapture { space: Space::Stack as u8, address: 0x7fff_1010, ..HeapCapture::default() };
    let t = id.identify(&cap, &load(0x7fff_1010, 0x10), 0x7fff_1000, &mut m);
    assert_eq!((t.space, t.offset, t.class), (Space::Stack, 0x10, None));
    let cap = HeapCapture { space: Space::Native as u8, address: 0x5000, ..HeapCapture::default() };
    assert_eq!(id.identify(&cap, &load(0x5000, 0), 0, &mut m).space, Space::Native);
    assert_eq!(id.stats.heap(), 0);
    assert_eq!(m.reads, 0);
    assert!(id.stats.line().unwrap().ends_with("addresses in: stack 1, native 1"), "{:?}", id.stats.line());
}

#[test]
fn jdk17_field_tuples_are_read_too() {
    let mut m = Meta::default();
    let tuples =
        FieldFormat::Tuples { fields: 456, count: 440, slots: 6, name: 1, signature: 2, low: 4, high: 5, tag_size: 2 };
    let k = KLASS_BASE + 0x5_0000;
    let mut klass = vec![0u8; 464];
    klass[8..12].copy_from_slice(&24i32.to_le_bytes());
    klass[24..32].copy_from_slice(&(k + 0x800).to_le_bytes());
    klass[224..232].copy_from_slice(&(k + 0x1000).to_le_bytes());
    klass[440..442].copy_from_slice(&2u16.to_le_bytes());
    klass[456..464].copy_from_slice(&(k + 0x1800).to_le_bytes());
    m.put(k, &klass);
    m.symbol(k + 0x800, "demo/Pair");
    let mut pool = vec![0u8; 72 + 8 * 5];
    for (i, text) in [(1u64, "left"), (2, "Ljava/lang/Object;"), (3, "count"), (4, "I")] {
        let at = k + 0x1400 + 0x40 * i;
        m.symbol(at, text);
        pool[(72 + 8 * i) as usize..(80 + 8 * i) as usize].copy_from_slice(&at.to_le_bytes());
    }
    m.put(k + 0x1000, &pool);
    // Two tuples: flags, name, signature, initval, low, high; offsets tagged (<< 2 | 1).
    let tuple = |name: u16, sig: u16, off: u32| {
        let packed = (off << 2) | 1;
        [0x0002, name, sig, 0, packed as u16, (packed >> 16) as u16]
    };
    let mut array = 12i32.to_le_bytes().to_vec();
    for v in tuple(1, 2, 12).into_iter().chain(tuple(3, 4, 16)) {
        array.extend_from_slice(&v.to_le_bytes());
    }
    m.put(k + 0x1800, &array);
    let mut id = Identifier::new(header(), classes(tuples));
    let words = [(OBJ, 1), (OBJ + 8, narrow(k))];
    let t = id.identify(&capture(OBJ + 16, &[(1, OBJ)], &words), &load(OBJ + 16, 16), 0, &mut m);
    assert_eq!(t.field.as_deref(), Some("demo.Pair.count"));
    let t = id.identify(&capture(OBJ + 12, &[(1, OBJ)], &words), &load(OBJ + 12, 12), 0, &mut m);
    assert_eq!(t.field.as_deref(), Some("demo.Pair.left"));
}

#[test]
fn type_names_read_as_java_writes_them() {
    assert_eq!(java_type_name("java/lang/String"), "java.lang.String");
    assert_eq!(java_type_name("[I"), "int[]");
    assert_eq!(java_type_name("[[Ljava/lang/Object;"), "java.lang.Object[][]");
}

#[test]
fn unsigned5_numbers_decode_as_hotspot_writes_them() {
    // 0..=191 in one byte (+1); 200 = 192 + 8: first byte 193 + (8 % 64)... as unsigned5.hpp:
    // b0 = X + L + (v - L) % H = 1 + 192 + 8 = 201, rest (v - L) / H = 0 -> byte 1.
    let bytes = [1u8, 192, 201, 1];
    let mut r = Unsigned5 { bytes: &bytes, pos: 0 };
    assert_eq!((r.next(), r.next(), r.next(), r.next()), (Some(0), Some(191), Some(200), None));
}

#[test]
fn a_static_field_is_found_in_its_class_s_mirror() {
    let mut m = meta();
    let class = KLASS_BASE + 0x6_0000;
    instance_klass(&mut m, class, "java/lang/Class", 96, 0, &[("name", "Ljava/lang/String;", 44)]);
    let mut id = Identifier::new(header(), classes(STREAM));
    let words = [(OBJ, 1), (OBJ + 8, narrow(class))];
    // A static field at 0x70 of the mirror, past the Class instance's 96 bytes.
    let t = id.identify(&capture(OBJ + 0x70, &[(1, OBJ)], &words), &load(OBJ + 0x70, 0x70), 0, &mut m);
    assert_eq!((t.class.as_deref(), t.field.as_deref()), (Some("java.lang.Class"), Some("<static field>")));
    let t = id.identify(&capture(OBJ + 44, &[(1, OBJ)], &words), &load(OBJ + 44, 44), 0, &mut m);
    assert_eq!(t.field.as_deref(), Some("java.lang.Class.name"));
}

#[test]
fn after_a_collection_a_klass_is_checked_not_read_again() {
    let mut m = meta();
    let mut id = Identifier::new(header(), classes(STREAM));
    let words = [(OBJ, 1), (OBJ + 8, narrow(POINT))];
    let ask = |id: &mut Identifier, m: &mut Meta| {
        id.identify(&capture(OBJ + 24, &[(1, OBJ)], &words), &load(OBJ + 24, 24), 0, m).field
    };
    assert_eq!(ask(&mut id, &mut m).as_deref(), Some("demo.Point.y"));
    id.collected();
    let before = m.reads;
    assert_eq!(ask(&mut id, &mut m).as_deref(), Some("demo.Point.y"));
    assert_eq!(m.reads - before, 1, "one small read checks the klass");
    // The class unloaded and another loaded at its address: read again, with its own fields.
    id.collected();
    instance_klass(&mut m, POINT, "demo/Other", 32, 0, &[("z", "J", 24)]);
    m.symbol(POINT + 0x900, "demo/Other");
    let mut klass = m.ranges[&POINT].clone();
    klass[24..32].copy_from_slice(&(POINT + 0x900).to_le_bytes());
    m.put(POINT, &klass);
    assert_eq!(ask(&mut id, &mut m).as_deref(), Some("demo.Other.z"));
}
