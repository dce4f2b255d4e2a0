//! The agent's own heap, counted (leaf module): libhpm.so's global allocator is the system one
//! with two counters, so `status` can say how much the agent holds and the soak test can show it
//! stays flat in a long-running JVM — a measure free of the JVM's own noise,
//! which resident memory is not. The signal handler never allocates, so it never runs this.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[cfg(test)]
thread_local! {
    /// Allocations made by this thread (tests: a code path that must not allocate).
    static MINE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Allocations the calling thread has made so far (tests only).
#[cfg(test)]
pub fn allocations_here() -> u64 {
    MINE.with(|c| c.get())
}

// SAFETY: every call is forwarded to the system allocator with the caller's arguments; the
// counters are only statistics and never affect what is returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds GlobalAlloc::alloc's contract, which System's shares.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            added(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            added(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (hence by System) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`; System's realloc has the same contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            added(new_size);
        }
        p
    }
}

fn added(n: usize) {
    // A const thread-local without destructor: no allocation, usable from the allocator.
    #[cfg(test)]
    let _ = MINE.try_with(|c| c.set(c.get() + 1));
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

/// Bytes the agent holds now, and the most it has held.
pub fn live_and_peak() -> (usize, usize) {
    (LIVE.load(Ordering::Relaxed), PEAK.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use hpm_capture::hotspot::{CodeView, Memory};
    use hpm_capture::javaheap::{capture, Collector, G1Layout, HeaderLayout, HeapCapture, HeapLayout};
    use hpm_capture::operand::{effective_address, Gprs};

    /// Memory as a vector of words from `.1` on (unaligned ints read from their word).
    struct Words(Vec<u64>, u64);

    impl Memory for Words {
        fn word(&self, addr: u64) -> u64 {
            self.0.get(((addr - self.1) / 8) as usize).copied().unwrap_or(0)
        }
        fn byte(&self, addr: u64) -> u8 {
            (self.word(addr & !7) >> (8 * (addr & 7))) as u8
        }
        fn int(&self, addr: u64, _: u8) -> i64 {
            (self.word(addr & !7) >> (8 * (addr & 7))) as u32 as i32 as i64
        }
    }

    /// The signal handler's part of `data` (decode, locate, copy) allocates nothing once the
    /// decoder's tables are built (iced-x86 builds them on first use, with thousands of
    /// allocations: this test found it; the session builds them before sampling): the
    /// allocator counts this thread's allocations around a thousand captures.
    #[test]
    fn the_handler_s_data_capture_does_not_allocate() {
        // One 64 KiB G1 region (index 16) at `base`, its table entry and region object past it.
        let base = 0x10_0000u64;
        let (table, region) = (base + 0x1_0000, base + 0x1_1000);
        let mut w = vec![0u64; 0x1_2000 / 8];
        let at = |a: u64| ((a - base) / 8) as usize;
        w[at(table)] = region;
        w[at(region)] = base;
        w[at(region + 8)] = base + 0x1_0000;
        w[at(region + 184)] = 2 << 32; // the tag (eden) at offset 188
        let mem = Words(w, base);
        let g = G1Layout {
            biased_base: table - 8 * 16,
            shift: 16,
            bias: 16,
            length: 1,
            bottom: 0,
            end: 8,
            tag: hpm_capture::hotspot::Int { off: 188, width: 4 },
            eden: 2,
            survivor: 3,
            starts_humongous: 12,
            continues_humongous: 13,
            old_mask: 16,
            humongous_mask: 4,
            archive_mask: None,
        };
        let layout = HeapLayout {
            start: base,
            end: base + 0x1_0000,
            collector: Collector::G1(g),
            header: HeaderLayout {
                compressed_klass: true,
                klass_base: 0,
                klass_shift: 3,
                klass_in_mark: None,
                hash_end: 39,
            },
            metadata: (0, 0),
            stack_base: 0,
            stack_size: 0,
            thread_size: 0,
        };
        let mut regs = Gprs::default();
        regs.0[3] = base + 0x1040; // rbx
        let code = [0x8b, 0x43, 0x10, 0x90]; // mov eax, [rbx+0x10]
        let mut out = HeapCapture::default();
        // As the agent does before sampling with `data`: the decoder's tables, built once.
        hpm_capture::operand::prepare();
        let before = super::allocations_here();
        for _ in 0..1000 {
            let e = effective_address(&code, 0x7000, &regs).expect("an address");
            capture(&layout, &mem, &CodeView::default(), &e, Default::default(), true, &mut out);
        }
        assert_eq!(super::allocations_here(), before, "the capture allocated");
        assert_eq!(out.address, base + 0x1050);
        assert!(out.nwindow > 0 && out.heads[1].at == base + 0x1040, "{out:?}");
    }
}
