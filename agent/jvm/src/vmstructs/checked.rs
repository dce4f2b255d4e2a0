//! Memory read through the kernel, for reads that may meet memory unmapped meanwhile: a
//! word-at-a-time reader, and the walker's reader for a thread that does not hold collections
//! off, whose heap reads (a continuation's chunks) go through a window refilled by one system
//! call. Both async-signal-safe: no allocation, no lock; a read that fails gives zeros.

use std::cell::{Cell, RefCell};

use hpm_capture::hotspot::{Int, Memory};

use super::Direct;

/// This process's memory, each read checked by the kernel (`process_vm_readv`): a read of an
/// unmapped address gives zeros, never a fault. Async-signal-safe (one system call a read).
pub struct Checked;

impl Memory for Checked {
    fn word(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        if crate::os::read_checked(addr, &mut b) {
            u64::from_le_bytes(b)
        } else {
            0
        }
    }
    fn byte(&self, addr: u64) -> u8 {
        let mut b = [0u8; 1];
        if crate::os::read_checked(addr, &mut b) {
            b[0]
        } else {
            0
        }
    }
    fn int(&self, addr: u64, width: u8) -> i64 {
        hpm_capture::hotspot::Int { off: 0, width }.signed(self.word(addr))
    }
}

/// Bytes a [`HeapChecked`] window holds: a chunk's frames lie together, so a few refills
/// cover a walk.
const WINDOW: usize = 512;

/// The walker's memory on a thread in native or blocked: inside the Java heap's reserved range
/// `heap`, reads go through the kernel, a window of up to [`WINDOW`] bytes (never across a
/// page) at a time; everything else (the thread's own stack, the code cache: the walker checks
/// those addresses first) is read directly.
pub(super) struct HeapChecked {
    direct: Direct,
    heap: (u64, u64),
    /// Where the window starts, and how many of its bytes were read (0: empty).
    at: Cell<(u64, usize)>,
    window: RefCell<[u8; WINDOW]>,
}

impl HeapChecked {
    pub(super) fn new(direct: Direct, heap: (u64, u64)) -> HeapChecked {
        HeapChecked { direct, heap, at: Cell::new((0, 0)), window: RefCell::new([0; WINDOW]) }
    }

    /// The `N` bytes at `addr` (inside the heap), from the window, refilled when they are not
    /// in it; None where the kernel cannot read them.
    fn bytes<const N: usize>(&self, addr: u64) -> Option<[u8; N]> {
        let (start, len) = self.at.get();
        let fits = |start: u64, len: usize| {
            addr >= start && addr.checked_add(N as u64).is_some_and(|e| e <= start + len as u64)
        };
        if !fits(start, len) {
            // From `addr` to its page's end, at most a window.
            let page_left = 4096 - (addr % 4096) as usize;
            let n = WINDOW.min(page_left).max(N);
            let mut w = self.window.try_borrow_mut().ok()?;
            if !crate::os::read_checked(addr, &mut w[..n]) {
                self.at.set((0, 0));
                // Across a page end, or unmapped: this read alone.
                let mut b = [0u8; N];
                return crate::os::read_checked(addr, &mut b).then_some(b);
            }
            self.at.set((addr, n));
        }
        let (start, _) = self.at.get();
        let w = self.window.try_borrow().ok()?;
        let off = (addr - start) as usize;
        w.get(off..off + N)?.try_into().ok()
    }

    fn in_heap(&self, addr: u64) -> bool {
        addr >= self.heap.0 && addr < self.heap.1
    }
}

impl Memory for HeapChecked {
    fn word(&self, addr: u64) -> u64 {
        if !self.in_heap(addr) {
            return self.direct.word(addr);
        }
        self.bytes::<8>(addr).map_or(0, u64::from_le_bytes)
    }
    fn byte(&self, addr: u64) -> u8 {
        if !self.in_heap(addr) {
            return self.direct.byte(addr);
        }
        self.bytes::<1>(addr).map_or(0, |b| b[0])
    }
    fn int(&self, addr: u64, width: u8) -> i64 {
        if !self.in_heap(addr) {
            return self.direct.int(addr, width);
        }
        Int { off: 0, width }.signed(self.bytes::<8>(addr).map_or(0, u64::from_le_bytes))
    }
}
