use std::cell::RefCell;
use std::collections::HashMap;

use super::*;

/// Memory with mapped ranges: a read outside them is the fault the handler must never cause.
struct Fake {
    words: HashMap<u64, u64>,
    mapped: Vec<(u64, u64)>,
    reads: RefCell<Vec<u64>>,
}

impl Fake {
    fn check(&self, addr: u64) {
        assert!(self.mapped.iter().any(|&(lo, hi)| lo <= addr && addr < hi), "read of unmapped {addr:#x}");
        self.reads.borrow_mut().push(addr);
    }
}

impl Memory for Fake {
    fn word(&self, addr: u64) -> u64 {
        self.check(addr);
        self.words.get(&addr).copied().unwrap_or(0)
    }
    fn byte(&self, addr: u64) -> u8 {
        self.word(addr) as u8
    }
    fn int(&self, addr: u64, width: u8) -> i64 {
        let w = self.word(addr);
        Int { off: 0, width }.signed(w)
    }
}

const HEAP: u64 = 0x1_0000_0000;
const SHIFT: u32 = 20;
const TABLE: u64 = 0x50_0000;
const REGIONS: u64 = 0x60_0000;

/// A 16-region G1 heap: 0 old, 1 eden, 2 starts humongous, 3-4 continue it, 5 free (and
/// uncommitted: not mapped), the rest survivor. HeapRegion objects 0x100 apart.
fn g1() -> (HeapLayout, Fake) {
    let g = G1Layout {
        biased_base: TABLE - 8 * (HEAP >> SHIFT),
        shift: SHIFT,
        bias: HEAP >> SHIFT,
        length: 16,
        bottom: 0,
        end: 8,
        tag: Int { off: 188, width: 4 },
        eden: 2,
        survivor: 3,
        starts_humongous: 12,
        continues_humongous: 13,
        old_mask: 16,
        humongous_mask: 4,
        archive_mask: Some(32),
    };
    let mut words = HashMap::new();
    let mut mapped = vec![(TABLE, TABLE + 8 * 16), (REGIONS, REGIONS + 0x100 * 16)];
    for i in 0..16u64 {
        let r = REGIONS + 0x100 * i;
        let bottom = HEAP + (i << SHIFT);
        words.insert(TABLE + 8 * i, r);
        words.insert(r, bottom);
        words.insert(r + 8, bottom + (1 << SHIFT));
        let tag = match i {
            0 => 16,
            1 => 2,
            2 => 12,
            3 | 4 => 13,
            5 => 0,
            _ => 3,
        };
        words.insert(r + 188, tag);
        if i != 5 {
            mapped.push((bottom, bottom + (1 << SHIFT)));
        }
    }
    let layout = HeapLayout {
        start: HEAP,
        end: HEAP + (16 << SHIFT),
        collector: Collector::G1(g),
        header: HeaderLayout {
            compressed_klass: true,
            klass_base: 0,
            klass_shift: 3,
            klass_in_mark: None,
            hash_end: 39,
        },
        metadata: (0x8_0000_0000, 0x8_0100_0000),
        stack_base: 0,
        stack_size: 0,
        thread_size: 0,
    };
    (layout, Fake { words, mapped, reads: RefCell::new(Vec::new()) })
}

fn at(address: u64, displacement: i64, base: u64) -> Effective {
    Effective { address, displacement, register_based: true, base }
}

fn run(layout: &HeapLayout, mem: &Fake, e: Effective) -> HeapCapture {
    let mut out = HeapCapture::default();
    let thread = ThreadRanges { stack: (0x7ff0_0000, 0x7ff1_0000), object: (0x6000_0000, 0x6000_1000) };
    capture(layout, mem, &CodeView::default(), &e, thread, true, &mut out);
    out
}

#[test]
fn an_eden_field_gets_its_candidates_and_a_window_within_the_region() {
    let (layout, mut mem) = g1();
    let obj = HEAP + (1 << SHIFT) + 0x40;
    mem.words.insert(obj, 1);
    mem.words.insert(obj + 8, 0x55);
    let c = run(&layout, &mem, at(obj + 16, 16, 0));
    assert_eq!(c.space(), Space::Eden);
    assert_eq!(c.heads[1].at, obj);
    assert_eq!(c.heads[1].words[..2], [1, 0x55]);
    assert_eq!(c.word(obj + 8), Some(0x55));
    // The window ends three words past the address's word and starts at the region's bottom
    // here (the object is 0x40 into it).
    assert_eq!(c.window_at, HEAP + (1 << SHIFT));
    assert_eq!(u64::from(c.nwindow), (obj + 16 + 24 - c.window_at) / 8);
}

#[test]
fn a_humongous_continuation_finds_its_object_s_start() {
    let (layout, mem) = g1();
    let a = HEAP + (4 << SHIFT) + 0x1234 * 8;
    let c = run(&layout, &mem, at(a, 0x10, a - 0x10));
    assert_eq!(c.space(), Space::Humongous);
    assert_eq!(c.heads[0].at, HEAP + (2 << SHIFT), "the starts-humongous region's bottom");
    assert_eq!(c.window_at, a + 24 - 8 * WINDOW as u64);
}

#[test]
fn nothing_of_a_free_region_is_read() {
    let (layout, mem) = g1();
    let c = run(&layout, &mem, at(HEAP + (5 << SHIFT) + 64, 8, 0));
    assert_eq!((c.space(), c.nwindow, c.heads[1].at), (Space::Heap, 0, 0));
    // Only the table and the region object were read (the fake panics otherwise).
    assert!(mem.reads.borrow().iter().all(|&r| r < HEAP));
}

#[test]
fn candidates_outside_the_region_are_not_read() {
    let (layout, mem) = g1();
    // Address near an old region's bottom whose displacement points into the region before.
    let a = HEAP + (1 << SHIFT) + 8;
    let c = run(&layout, &mem, at(a, 64, HEAP + 0x100));
    assert_eq!(c.space(), Space::Eden);
    assert_eq!((c.heads[1].at, c.heads[2].at), (0, 0), "both in region 0, not the address's");
    assert_eq!(c.window_at, HEAP + (1 << SHIFT));
}

#[test]
fn addresses_outside_the_heap_are_labelled_without_reads() {
    let (layout, mem) = g1();
    assert_eq!(run(&layout, &mem, at(0x7ff0_1000, 0, 0)).space(), Space::Stack);
    assert_eq!(run(&layout, &mem, at(0x6000_0340, 0, 0)).space(), Space::Thread);
    assert_eq!(run(&layout, &mem, at(0x8_0000_1000, 0, 0)).space(), Space::Metadata);
    assert_eq!(run(&layout, &mem, at(0x1234_5678, 0, 0)).space(), Space::Native);
    assert!(mem.reads.borrow().is_empty());
}

#[test]
fn spaces_of_parallel_and_serial_are_found_by_their_bounds() {
    let (mut layout, mut mem) = g1();
    // Four spaces, holders at 0x70_0000.., space objects at 0x71_0000.. (bottom, end).
    let holders =
        (0..4u64).map(|i| (0x70_0000 + 8 * i, [Space::Eden, Space::Survivor, Space::Survivor, Space::Old][i as usize]));
    layout.collector = Collector::Spaces(SpacesLayout { holders: holders.collect(), bottom: 0, end: 8 });
    mem.mapped.push((0x70_0000, 0x70_0020));
    mem.mapped.push((0x71_0000, 0x71_0400));
    for (i, (lo, hi)) in [
        (HEAP, HEAP + 0x10_0000),
        (HEAP + 0x10_0000, HEAP + 0x18_0000),
        (HEAP + 0x18_0000, HEAP + 0x20_0000),
        (HEAP + 0x60_0000, HEAP + 0x80_0000),
    ]
    .into_iter()
    .enumerate()
    {
        let s = 0x71_0000 + 0x100 * i as u64;
        mem.words.insert(0x70_0000 + 8 * i as u64, s);
        mem.words.insert(s, lo);
        mem.words.insert(s + 8, hi);
    }
    assert_eq!(run(&layout, &mem, at(HEAP + 0x100, 0, 0)).space(), Space::Eden);
    assert_eq!(run(&layout, &mem, at(HEAP + 0x1c_0000, 0, 0)).space(), Space::Survivor);
    assert_eq!(run(&layout, &mem, at(HEAP + 0x60_0000, 0, 0)).space(), Space::Old);
    // Between spaces (uncommitted here): labelled heap, nothing read there.
    let c = run(&layout, &mem, at(HEAP + 0x50_0000, 0, 0));
    assert_eq!((c.space(), c.nwindow), (Space::Heap, 0));
}

#[test]
fn another_collector_reads_only_the_touched_page() {
    let (mut layout, mut mem) = g1();
    layout.collector = Collector::Other("ZGC".into());
    let a = HEAP + 0x3008;
    mem.mapped = vec![(HEAP + 0x3000, HEAP + 0x4000)];
    let c = run(&layout, &mem, at(a, 0x10, HEAP + 0x2ff0));
    assert_eq!((c.space(), c.window_at, c.heads[1].at), (Space::Heap, HEAP + 0x3000, 0));
    // A precise sample's address was touched before the signal: not even its page is read.
    let mut out = HeapCapture::default();
    capture(&layout, &mem, &CodeView::default(), &at(a, 0x10, 0), ThreadRanges::default(), false, &mut out);
    assert_eq!((out.space(), out.nwindow), (Space::Heap, 0));
}

#[test]
fn header_klass_words_decode_per_encoding() {
    let h = HeaderLayout {
        compressed_klass: true,
        klass_base: 0x8_0000_0000,
        klass_shift: 3,
        klass_in_mark: None,
        hash_end: 39,
    };
    assert_eq!(h.klass(1, 0x10 | (7 << 32)), Some(0x8_0000_0080));
    assert_eq!(h.array_length([1, 0x10 | (7 << 32), 0]), 7);
    assert_eq!(h.klass(3, 0x10), None, "a GC mark");
    assert_eq!(h.klass(1 | (1 << 40), 0x10), None, "bits above the hash");
    let compact = HeaderLayout { klass_in_mark: Some(42), ..h };
    assert_eq!(compact.klass(1 | (0x10 << 42), 0), Some(0x8_0000_0080));
    assert_eq!((compact.size(), compact.array_length([1, 9, 0])), (8, 9));
    let wide = HeaderLayout { compressed_klass: false, ..h };
    assert_eq!((wide.klass(1, 0x7000), wide.size(), wide.array_length([1, 0x7000, 5])), (Some(0x7000), 16, 5));

    // Held by lightweight locking (`00`): the klass bits stay in the compact mark; inflated
    // (`10`) or forwarded (`11`) they do not. Apart from the mark, only forwarding hides it.
    let held = |h: &HeaderLayout, mark, word| h.klass_of_held(mark, || word);
    assert_eq!(compact.klass(0x10 << 42, 0), None, "klass() refuses a locked mark");
    assert_eq!(held(&compact, 0x10 << 42, 0), Some(0x8_0000_0080));
    assert_eq!((held(&compact, 2 | (0x10 << 42), 0), held(&compact, 3, 0)), (None, None));
    assert_eq!(held(&h, 0, 0x10 | (7 << 32)), Some(0x8_0000_0080));
    assert_eq!((held(&h, 2, 0x10), held(&h, 3, 0x10), held(&h, 0, 7 << 32)), (Some(0x8_0000_0080), None, None));
    assert_eq!((held(&wide, 0, 0x7000), held(&wide, 0, 0)), (Some(0x7000), None));
}
