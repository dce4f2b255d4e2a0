//! The monitors a Java thread holds, as HotSpot's lightweight locking keeps them (JDK 21+,
//! the only locking of JDK 24+): each `JavaThread` has a `LockStack`, a few oops of the
//! objects it entered, innermost last, `_top` the byte offset (from the `JavaThread`) of the
//! next free slot. A monitor another thread contended for is inflated and leaves the lock
//! stack: only uncontended ones are found here. Each entry's class is named from its header
//! (the klass) and the klass's `_name` symbol.
//!
//! Read by the thread itself, outside any signal, while it is parked in native state: a
//! collection may move the objects meanwhile, so every read goes through a [`Memory`] that
//! checks its addresses, and a header that does not read as an object's gives no name.

use crate::hotspot::{Memory, VmTable};
use crate::javaheap::HeaderLayout;

/// Entries of a lock stack read at most (HotSpot has 8).
pub const MAX_ENTRIES: u64 = 64;
/// Bytes of a class name read at most (longer names are cut there).
pub const MAX_NAME: u64 = 1024;

/// Where the lock stack and class names are, from VMStructs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockStackLayout {
    /// `JavaThread::_lock_stack`.
    pub stack: u64,
    /// `LockStack::_top` (a u32) and `LockStack::_base[0]`, within the lock stack.
    pub top: u64,
    pub base: u64,
    /// Slots of `_base`.
    pub capacity: u64,
    pub header: HeaderLayout,
    /// `Klass::_name` (a `Symbol*`), `Symbol::_length` (u2), `Symbol::_body`.
    pub klass_name: u64,
    pub symbol_length: u64,
    pub symbol_body: u64,
}

impl LockStackLayout {
    /// The layout of this JVM; `Err` names what VMStructs lacks (JDK 17 has no lock stack).
    pub fn from_table(t: &VmTable, header: HeaderLayout) -> Result<LockStackLayout, String> {
        let base = t.field("LockStack::_base[0]")?;
        let size = t.sizes.get("LockStack").copied().unwrap_or(base + 8 * 8);
        Ok(LockStackLayout {
            stack: t.field("JavaThread::_lock_stack")?,
            top: t.field("LockStack::_top")?,
            base,
            capacity: (size.saturating_sub(base) / 8).min(MAX_ENTRIES),
            header,
            klass_name: t.field("Klass::_name")?,
            symbol_length: t.field("Symbol::_length")?,
            symbol_body: t.field("Symbol::_body").or_else(|_| t.field("Symbol::_body[0]"))?,
        })
    }

    /// The internal names (`app/PinLock`) of the classes of the objects `thread` (a
    /// `JavaThread*`) holds on its lock stack, innermost first, a class entered again right
    /// inside itself (a recursive enter) named once; at most `max`.
    pub fn held(&self, mem: &impl Memory, thread: u64, max: usize) -> Vec<String> {
        let stack = thread.wrapping_add(self.stack);
        let first = self.stack + self.base;
        let top = mem.int(stack + self.top, 4) as u64 & 0xffff_ffff;
        if top < first || !(top - first).is_multiple_of(8) {
            return Vec::new();
        }
        let n = ((top - first) / 8).min(self.capacity);
        let mut names: Vec<String> = Vec::new();
        let mut last = 0;
        for i in (0..n).rev() {
            if names.len() >= max {
                break;
            }
            let obj = mem.word(thread.wrapping_add(first + 8 * i));
            if obj == 0 || obj == last {
                continue;
            }
            last = obj;
            if let Some(name) = self.class_name(mem, obj) {
                names.push(name);
            }
        }
        names
    }

    /// The internal name of `obj`'s class, if its header reads as an object's.
    fn class_name(&self, mem: &impl Memory, obj: u64) -> Option<String> {
        let klass = self.header.klass_of_held(mem.word(obj), || mem.word(obj + 8))?;
        let symbol = mem.word(klass.wrapping_add(self.klass_name));
        if symbol == 0 {
            return None;
        }
        let len = (mem.int(symbol + self.symbol_length, 2) as u64 & 0xffff).min(MAX_NAME);
        let bytes: Vec<u8> = (0..len).map(|i| mem.byte(symbol + self.symbol_body + i)).collect();
        let name = String::from_utf8(bytes).ok()?;
        let plausible = !name.is_empty() && name.chars().all(|c| !c.is_control() && c != ';' && c != '.');
        plausible.then_some(name)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::hotspot::Int;

    /// Bytes at addresses; words read little-endian from them; any other address is a fault.
    #[derive(Default)]
    struct Fake {
        bytes: HashMap<u64, u8>,
    }

    impl Fake {
        fn put(&mut self, addr: u64, v: &[u8]) {
            for (i, b) in v.iter().enumerate() {
                self.bytes.insert(addr + i as u64, *b);
            }
        }
        fn word_at(&mut self, addr: u64, v: u64) {
            self.put(addr, &v.to_le_bytes());
        }
        fn get(&self, addr: u64) -> u8 {
            *self.bytes.get(&addr).unwrap_or_else(|| panic!("read of unmapped {addr:#x}"))
        }
    }

    impl Memory for Fake {
        fn word(&self, addr: u64) -> u64 {
            u64::from_le_bytes(std::array::from_fn(|i| self.get(addr + i as u64)))
        }
        fn byte(&self, addr: u64) -> u8 {
            self.get(addr)
        }
        fn int(&self, addr: u64, width: u8) -> i64 {
            let mut w = [0u8; 8];
            for (i, b) in w.iter_mut().enumerate().take(width as usize) {
                *b = self.get(addr + i as u64);
            }
            Int { off: 0, width }.signed(u64::from_le_bytes(w))
        }
    }

    const THREAD: u64 = 0x10_0000;
    const KLASS_BASE: u64 = 0x8_0000_0000;

    fn layout(compact: bool) -> LockStackLayout {
        LockStackLayout {
            stack: 2000,
            top: 0,
            base: 16,
            capacity: 8,
            header: HeaderLayout {
                compressed_klass: true,
                klass_base: KLASS_BASE,
                klass_shift: 0,
                klass_in_mark: compact.then_some(42),
                hash_end: 42,
            },
            klass_name: 24,
            symbol_length: 4,
            symbol_body: 6,
        }
    }

    /// A thread holding `objects` (outermost first): object i at 0x20_0000 + 0x100 i, of the
    /// class named `classes[i]`, its klass at narrow 0x1000 (i + 1).
    fn thread(l: &LockStackLayout, held: &[(u64, &str)]) -> Fake {
        let mut m = Fake::default();
        let first = l.stack + l.base;
        m.put(THREAD + l.stack + l.top, &((first + 8 * held.len() as u64) as u32).to_le_bytes());
        for (i, (obj, class)) in held.iter().enumerate() {
            m.word_at(THREAD + first + 8 * i as u64, *obj);
            let narrow = 0x1000 * (class.len() as u64);
            let klass = KLASS_BASE + narrow;
            // Fast-locked: lock bits 00.
            match l.header.klass_in_mark {
                Some(shift) => m.word_at(*obj, narrow << shift),
                None => {
                    m.word_at(*obj, 0x80); // age 1, no hash
                    m.word_at(*obj + 8, narrow);
                }
            }
            let symbol = 0x30_0000 + narrow;
            m.word_at(klass + l.klass_name, symbol);
            m.put(symbol + l.symbol_length, &(class.len() as u16).to_le_bytes());
            m.put(symbol + l.symbol_body, class.as_bytes());
        }
        m
    }

    #[test]
    fn held_monitors_are_named_innermost_first() {
        for compact in [false, true] {
            let l = layout(compact);
            let m = thread(&l, &[(0x20_0000, "app/Outer"), (0x20_0100, "app/PinLock")]);
            assert_eq!(l.held(&m, THREAD, 8), ["app/PinLock", "app/Outer"], "compact {compact}");
            assert_eq!(l.held(&m, THREAD, 1), ["app/PinLock"]);
        }
    }

    #[test]
    fn a_recursive_enter_is_named_once_and_an_empty_stack_names_none() {
        let l = layout(false);
        let m = thread(&l, &[(0x20_0000, "app/A"), (0x20_0000, "app/A")]);
        assert_eq!(l.held(&m, THREAD, 8), ["app/A"]);
        let m = thread(&l, &[]);
        assert!(l.held(&m, THREAD, 8).is_empty());
    }

    #[test]
    fn a_top_out_of_range_or_a_forwarded_header_reads_nothing_more() {
        let l = layout(false);
        // A top below the first slot or between slots: nothing read beyond it.
        let mut m = Fake::default();
        m.put(THREAD + l.stack + l.top, &3u32.to_le_bytes());
        assert!(l.held(&m, THREAD, 8).is_empty());
        // A top past the capacity: the capacity's slots only (the rest would fault).
        let many: Vec<(u64, &str)> = (0..8).map(|i| (0x20_0000 + 0x100 * i, "app/B")).collect();
        let mut m = thread(&l, &many);
        m.put(THREAD + l.stack + l.top, &((l.stack + l.base + 8 * 100) as u32).to_le_bytes());
        assert_eq!(l.held(&m, THREAD, 8).len(), 8);
        // A header a collection forwarded: no name.
        let mut m = thread(&l, &[(0x20_0000, "app/C")]);
        m.word_at(0x20_0000, 0x1234_5003);
        assert!(l.held(&m, THREAD, 8).is_empty());
    }
}
