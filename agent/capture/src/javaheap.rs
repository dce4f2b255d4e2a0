//! The Java heap as the `data` option sees it (Inoue & Nakatani §4.2-4.3): where a
//! sampled address lies (G1 region kind, Parallel/Serial space, a thread's stack, code, class
//! metadata, other native memory) and, for an address in the heap, the words an object's
//! header can be found in.
//!
//! **When.** Objects move at every young collection, so these words are copied *at sample
//! time*, in the signal handler (`capture`), while the interrupted thread is in Java code and
//! no stop-the-world collection can run: the copy is consistent by construction, and the
//! processing thread may translate it whenever it likes. The paper's alternative (Figure 1b:
//! make the collector wait at its start until the profiler thread has translated the pending
//! samples) needs the processing thread to run while the VM is at a safepoint, which it cannot
//! promise (it calls JVMTI, which waits for safepoints to end). docs/design.md has the rest.
//!
//! **Safety.** The handler reads only memory proven mapped: the VM's permanent structures
//! (the region table, `HeapRegion`s, spaces) and, of the heap, the committed extent around the
//! address — a G1 region in use (G1 commits whole regions), a Parallel/Serial space between
//! its bottom and end, or else the page of the address, which the instruction is about to
//! access (`operand::effective_address` refuses instructions that touch nothing). Everything
//! read is bounded; nothing is dereferenced that came from the Java heap.

use crate::hotspot::{CodeView, Int, Memory, VmTable};
use crate::operand::Effective;

pub use crate::capture::{Head, HeapCapture, WINDOW};
pub use hpm_profile::model::Space;

/// Words of the window at and above the address's word: a header there and its length word.
const ABOVE: u64 = 3;
/// Continuation regions walked back to find a humongous object's first region.
pub const MAX_HUMONGOUS_REGIONS: u64 = 1 << 14;

/// G1's region table and the fields of its regions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct G1Layout {
    /// `G1HeapRegionTable::_biased_base`: `HeapRegion*` of index `address >> shift`.
    pub biased_base: u64,
    pub shift: u32,
    /// Valid indices: `[bias, bias + length)`.
    pub bias: u64,
    pub length: u64,
    pub bottom: u64,
    pub end: u64,
    pub tag: Int,
    pub eden: i64,
    pub survivor: i64,
    pub starts_humongous: i64,
    pub continues_humongous: i64,
    pub old_mask: i64,
    pub humongous_mask: i64,
    /// JDK 17's archive regions; None where there are none.
    pub archive_mask: Option<i64>,
}

/// The spaces of the Parallel and Serial collectors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpacesLayout {
    /// Addresses of the fields holding each space's pointer (generations swap their survivor
    /// spaces at each collection, so the pointers are read at each sample), and the kind.
    pub holders: Vec<(u64, Space)>,
    pub bottom: u64,
    pub end: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Collector {
    G1(G1Layout),
    Spaces(SpacesLayout),
    /// Another collector (named): addresses in the heap are read within their page only.
    Other(String),
}

/// The narrow-klass encoding and header shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderLayout {
    /// Compressed class pointers: klass = base + (narrow << shift).
    pub compressed_klass: bool,
    pub klass_base: u64,
    pub klass_shift: u32,
    /// Compact object headers (JDK 24+): the narrow klass is the mark word's bits from this.
    pub klass_in_mark: Option<u32>,
    /// `markWord`: the hash field's end (bits above it are zero in an unlocked header).
    pub hash_end: u32,
}

impl HeaderLayout {
    /// Bytes of an object's header (where an instance's fields may start).
    pub fn size(&self) -> u64 {
        match (self.klass_in_mark, self.compressed_klass) {
            (Some(_), _) => 8,
            (None, true) => 12,
            (None, false) => 16,
        }
    }

    /// The offset of an array's length.
    pub fn length_offset(&self) -> u64 {
        self.size()
    }

    /// The klass a header's words name, or None when the mark word is implausible: a GC mark
    /// (`11`), zero, or an unlocked header with bits set above its hash.
    pub fn klass(&self, mark: u64, klass_word: u64) -> Option<u64> {
        if mark & 3 == 3 || mark == 0 {
            return None;
        }
        let narrow = match self.klass_in_mark {
            Some(shift) => {
                if mark & 3 != 1 {
                    return None; // locked: the klass bits are in the displaced header
                }
                mark >> shift
            }
            None => {
                if mark & 7 == 1 && self.hash_end < 64 && mark >> self.hash_end != 0 {
                    return None;
                }
                if self.compressed_klass {
                    klass_word & 0xffff_ffff
                } else {
                    return (klass_word != 0 && klass_word.is_multiple_of(8)).then_some(klass_word);
                }
            }
        };
        self.decode_klass(narrow)
    }

    /// The klass of an object lightweight locking may hold (its mark `00`, the klass bits left
    /// in place: a thread's lock stack holds such objects) or an unlocked one; None for an
    /// inflated or forwarded header where the klass is in the mark. `klass_word` (the word
    /// after the mark) is read only where the klass is there.
    pub fn klass_of_held(&self, mark: u64, klass_word: impl FnOnce() -> u64) -> Option<u64> {
        match self.klass_in_mark {
            Some(shift) => match mark & 3 {
                0 | 1 => self.decode_klass(mark >> shift),
                _ => None,
            },
            // Forwarded by a collection in progress.
            None if mark & 3 == 3 => None,
            None if self.compressed_klass => self.decode_klass(klass_word() & 0xffff_ffff),
            None => Some(klass_word()).filter(|&k| k != 0),
        }
    }

    /// A narrow klass's address (0: none).
    fn decode_klass(&self, narrow: u64) -> Option<u64> {
        (narrow != 0).then(|| self.klass_base.wrapping_add(narrow << self.klass_shift))
    }

    /// An array's length from its header words (`words` as in [`Head`]).
    pub fn array_length(&self, words: [u64; 3]) -> u64 {
        match self.length_offset() {
            8 => words[1] & 0xffff_ffff,
            12 => words[1] >> 32,
            _ => words[2] & 0xffff_ffff,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapLayout {
    /// The heap's reserved range `[start, end)`.
    pub start: u64,
    pub end: u64,
    pub collector: Collector,
    pub header: HeaderLayout,
    /// Class metadata `[low, high)`: the CDS archive and the compressed class space.
    pub metadata: (u64, u64),
    /// `JavaThread` stack fields, for "stack" (offsets of the base and size), and the size of
    /// a `JavaThread`, for "thread".
    pub stack_base: u64,
    pub stack_size: u64,
    pub thread_size: u64,
}

/// The sampled thread's ranges that are not the heap: its stack and its `JavaThread`, each
/// `[low, high)` (empty when the thread was not proven a JavaThread).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadRanges {
    pub stack: (u64, u64),
    pub object: (u64, u64),
}

impl ThreadRanges {
    /// The ranges of the JavaThread at `thread`, its stack fields read with `vm_word`.
    pub fn of(layout: &HeapLayout, thread: u64, vm_word: impl Fn(u64) -> u64) -> ThreadRanges {
        if thread == 0 {
            return ThreadRanges::default();
        }
        let base = vm_word(thread + layout.stack_base);
        ThreadRanges {
            stack: (base.saturating_sub(vm_word(thread + layout.stack_size)), base),
            object: (thread, thread.saturating_add(layout.thread_size)),
        }
    }
}

/// First of several names VMStructs may use (JDK 17 and JDK 25 spell G1's types apart).
fn first<T>(names: &[&str], f: impl Fn(&str) -> Result<T, String>) -> Result<T, String> {
    let mut err = String::new();
    for n in names {
        match f(n) {
            Ok(v) => return Ok(v),
            Err(e) => err = e,
        }
    }
    Err(err)
}

impl HeapLayout {
    /// The layout of the running heap: `vm_word` reads the VM's statics and permanent objects,
    /// `flag` a `-XX` flag's value (booleans as 0/1). Call it once the heap exists (after
    /// VMInit). `Err` says what is missing, for one line.
    pub fn read(
        t: &VmTable,
        vm_word: impl Fn(u64) -> u64,
        flag: impl Fn(&str) -> Option<u64>,
    ) -> Result<HeapLayout, String> {
        let heap = vm_word(t.stat("Universe::_collectedHeap")?);
        if heap == 0 {
            return Err("the JVM has no heap yet".into());
        }
        let reserved = heap + t.field("CollectedHeap::_reserved")?;
        let start = vm_word(reserved + t.field("MemRegion::_start")?);
        let words = vm_word(reserved + t.field("MemRegion::_word_size")?);
        let end = start.saturating_add(words.saturating_mul(8));
        if start == 0 || end <= start {
            return Err("the heap's reserved range is empty".into());
        }
        let on = |name: &str| flag(name).unwrap_or(0) != 0;
        let collector = if on("UseG1GC") {
            Collector::G1(Self::g1(t, &vm_word, heap)?)
        } else if on("UseParallelGC") {
            let young = vm_word(t.stat("ParallelScavengeHeap::_young_gen")?);
            let old = vm_word(t.stat("ParallelScavengeHeap::_old_gen")?);
            Collector::Spaces(SpacesLayout {
                holders: vec![
                    (young + t.field("PSYoungGen::_eden_space")?, Space::Eden),
                    (young + t.field("PSYoungGen::_from_space")?, Space::Survivor),
                    (young + t.field("PSYoungGen::_to_space")?, Space::Survivor),
                    (old + t.field("PSOldGen::_object_space")?, Space::Old),
                ],
                bottom: t.field("MutableSpace::_bottom")?,
                end: t.field("MutableSpace::_end")?,
            })
        } else if on("UseSerialGC") {
            let gen = |g: &str| first(&["SerialHeap", "GenCollectedHeap"], |h| t.field(&format!("{h}::{g}")));
            let young = vm_word(heap + gen("_young_gen")?);
            let old = vm_word(heap + gen("_old_gen")?);
            let space = |f: &str| first(&["ContiguousSpace", "Space"], |s| t.field(&format!("{s}::{f}")));
            Collector::Spaces(SpacesLayout {
                holders: vec![
                    (young + t.field("DefNewGeneration::_eden_space")?, Space::Eden),
                    (young + t.field("DefNewGeneration::_from_space")?, Space::Survivor),
                    (young + t.field("DefNewGeneration::_to_space")?, Space::Survivor),
                    (old + t.field("TenuredGeneration::_the_space")?, Space::Old),
                ],
                bottom: space("_bottom")?,
                end: space("_end")?,
            })
        } else {
            let name = ["UseZGC", "UseShenandoahGC", "UseEpsilonGC"]
                .into_iter()
                .find(|f| on(f))
                .map(|f| f.trim_start_matches("Use").to_string())
                .unwrap_or_else(|| "unknown".into());
            Collector::Other(name)
        };
        let compact = on("UseCompactObjectHeaders");
        let c = |name: &str| t.constants.get(name).copied();
        let header = HeaderLayout {
            compressed_klass: compact || on("UseCompressedClassPointers"),
            klass_base: vm_word(first(
                &["CompressedKlassPointers::_base", "CompressedKlassPointers::_narrow_klass._base"],
                |n| t.stat(n),
            )?),
            klass_shift: (vm_word(first(
                &["CompressedKlassPointers::_shift", "CompressedKlassPointers::_narrow_klass._shift"],
                |n| t.stat(n),
            )?) & 0xffff_ffff) as u32,
            klass_in_mark: if compact {
                Some(c("markWord::klass_shift").ok_or("VMStructs has no markWord::klass_shift")? as u32)
            } else {
                None
            },
            hash_end: (c("markWord::hash_shift").unwrap_or(8) + c("markWord::hash_bits").unwrap_or(31)) as u32,
        };
        if header.klass_shift > 32 {
            return Err(format!("a narrow-klass shift of {} is not plausible", header.klass_shift));
        }
        let cds = match (t.stat("MetaspaceObj::_shared_metaspace_base"), t.stat("MetaspaceObj::_shared_metaspace_top"))
        {
            (Ok(b), Ok(e)) => (vm_word(b), vm_word(e)),
            _ => (0, 0),
        };
        // Class metadata: the CDS archive and the compressed class space, which the JVM
        // reserves from the encoding base on (the archive first when there is one).
        let metadata = match flag("CompressedClassSpaceSize").filter(|_| header.compressed_klass) {
            Some(size) if header.klass_base != 0 => {
                let low = if cds.0 != 0 { cds.0.min(header.klass_base) } else { header.klass_base };
                (low, cds.1.max(header.klass_base).saturating_add(size))
            }
            _ => cds,
        };
        Ok(HeapLayout {
            start,
            end,
            collector,
            header,
            metadata,
            stack_base: first(&["JavaThread::_stack_base", "Thread::_stack_base"], |n| t.field(n))?,
            stack_size: first(&["JavaThread::_stack_size", "Thread::_stack_size"], |n| t.field(n))?,
            thread_size: t.sizes.get("JavaThread").copied().unwrap_or(0),
        })
    }

    fn g1(t: &VmTable, vm_word: &impl Fn(u64) -> u64, heap: u64) -> Result<G1Layout, String> {
        let hrm = heap + t.field("G1CollectedHeap::_hrm")?;
        let table = hrm + first(&["G1HeapRegionManager::_regions", "HeapRegionManager::_regions"], |n| t.field(n))?;
        let region = |f: &str| first(&["G1HeapRegion", "HeapRegion"], |r| t.field(&format!("{r}::{f}")));
        let ty = |f: &str| {
            first(&["G1HeapRegionType", "HeapRegionType"], |r| {
                Ok(format!("{r}::{f}"))
                    .and_then(|k| t.constants.get(&k).copied().ok_or(format!("VMStructs has no {k}")))
            })
        };
        let tag_field = first(&["G1HeapRegionType::_tag", "HeapRegionType::_tag"], |n| t.field(n))?;
        let shift = vm_word(table + t.field("G1HeapRegionTable::_shift_by")?) & 0xffff_ffff;
        if !(16..=32).contains(&shift) {
            return Err(format!("a G1 region shift of {shift} is not plausible"));
        }
        Ok(G1Layout {
            biased_base: vm_word(table + t.field("G1HeapRegionTable::_biased_base")?),
            shift: shift as u32,
            bias: vm_word(table + t.field("G1HeapRegionTable::_bias")?),
            length: vm_word(table + t.field("G1HeapRegionTable::_length")?),
            bottom: region("_bottom")?,
            end: region("_end")?,
            tag: Int { off: region("_type")? + tag_field, width: 4 },
            eden: ty("EdenTag")?,
            survivor: ty("SurvTag")?,
            starts_humongous: ty("StartsHumongousTag")?,
            continues_humongous: ty("ContinuesHumongousTag")?,
            old_mask: ty("OldMask")?,
            humongous_mask: ty("HumongousMask")?,
            archive_mask: ty("ArchiveMask").ok(),
        })
    }

    /// The committed range `[low, high)` holding the heap address `a`: its G1 region in use,
    /// or its Parallel/Serial space; None elsewhere and for collectors that move objects
    /// while Java runs (ZGC, Shenandoah). Reads only the VM's region table and spaces.
    pub fn committed(&self, mem: &impl Memory, a: u64) -> Option<(u64, u64)> {
        if a < self.start || a >= self.end {
            return None;
        }
        let l = match &self.collector {
            Collector::G1(g) => g.locate(mem, a)?,
            Collector::Spaces(s) => s.locate(mem, a)?,
            Collector::Other(_) => return None,
        };
        Some((l.low, l.high))
    }

    /// One line for the summary: the collector and encoding the translation uses.
    pub fn describe(&self) -> String {
        let gc = match &self.collector {
            Collector::G1(g) => format!("G1 ({} MiB regions)", (1u64 << g.shift) >> 20),
            Collector::Spaces(s) if s.holders.len() == 4 => "eden, survivor and old spaces".to_string(),
            Collector::Spaces(_) => "spaces".to_string(),
            Collector::Other(n) => format!("{n}: spaces not told apart, headers looked for within a page"),
        };
        format!("heap {:#x}-{:#x}, {gc}", self.start, self.end)
    }
}

/// Where an address of the heap is, with the extent proven readable around it and a known
/// object start (a humongous object's).
struct Located {
    space: Space,
    low: u64,
    high: u64,
    object: u64,
}

fn page_of(a: u64) -> (u64, u64) {
    let low = a & !4095;
    (low, low.saturating_add(4096))
}

impl G1Layout {
    fn region(&self, mem: &impl Memory, index: u64) -> Option<(u64, i64)> {
        if index < self.bias || index - self.bias >= self.length {
            return None;
        }
        let r = mem.word(self.biased_base.wrapping_add(index.wrapping_mul(8)));
        (r != 0).then(|| (r, mem.int(r + self.tag.off, self.tag.width)))
    }

    fn locate(&self, mem: &impl Memory, a: u64) -> Option<Located> {
        let index = a >> self.shift;
        let (r, tag) = self.region(mem, index)?;
        let (low, high) = (mem.word(r + self.bottom), mem.word(r + self.end));
        // A free region is not in use (and may be uncommitted): nothing is read there.
        if tag == 0 || !(low <= a && a < high) {
            return None;
        }
        let mut object = 0;
        let space = if tag == self.eden {
            Space::Eden
        } else if tag == self.survivor {
            Space::Survivor
        } else if tag & self.humongous_mask != 0 {
            if tag == self.starts_humongous {
                object = low;
            } else {
                let mut i = index;
                for _ in 0..MAX_HUMONGOUS_REGIONS {
                    i = i.wrapping_sub(1);
                    let Some((ri, ti)) = self.region(mem, i) else { break };
                    if ti == self.starts_humongous {
                        object = mem.word(ri + self.bottom);
                        break;
                    }
                    if ti != self.continues_humongous {
                        break;
                    }
                }
            }
            Space::Humongous
        } else if tag & self.old_mask != 0 {
            Space::Old
        } else if self.archive_mask.is_some_and(|m| tag & m != 0) {
            Space::Archive
        } else {
            Space::Heap
        };
        Some(Located { space, low, high, object })
    }
}

impl SpacesLayout {
    fn locate(&self, mem: &impl Memory, a: u64) -> Option<Located> {
        for &(holder, space) in &self.holders {
            let s = mem.word(holder);
            if s == 0 {
                continue;
            }
            let (low, high) = (mem.word(s + self.bottom), mem.word(s + self.end));
            if low <= a && a < high {
                return Some(Located { space, low, high, object: 0 });
            }
        }
        None
    }
}

/// Fills `out` for the address `e` of a sample: its space and, in the heap, the candidate
/// headers and the window of words below it. `thread`: the sampled thread's stack and
/// `JavaThread`, when known. `touched`: the interrupted instruction is about to access the
/// address (a timer's sample), so its page is mapped; a precise sample's address was touched
/// a moment ago and proves nothing now, so only regions or spaces in use are read.
/// Async-signal-safe: no allocation, bounded; reads as the module's comment says.
pub fn capture(
    layout: &HeapLayout,
    mem: &impl Memory,
    code: &CodeView,
    e: &Effective,
    thread: ThreadRanges,
    touched: bool,
    out: &mut HeapCapture,
) {
    let a = e.address;
    out.address = a;
    out.nwindow = 0;
    for h in &mut out.heads {
        h.at = 0;
    }
    if !(layout.start <= a && a < layout.end) {
        let inside = |r: (u64, u64)| r.0 <= a && a < r.1;
        let space = if inside(thread.stack) {
            Space::Stack
        } else if inside(thread.object) {
            Space::Thread
        } else if code.contains(a) {
            Space::CodeCache
        } else if layout.metadata.0 <= a && a < layout.metadata.1 {
            Space::Metadata
        } else {
            Space::Native
        };
        out.space = space as u8;
        return;
    }
    let located = match &layout.collector {
        Collector::G1(g) => g.locate(mem, a),
        Collector::Spaces(s) => s.locate(mem, a),
        Collector::Other(_) => None,
    };
    let Located { space, low, high, object } = match located {
        Some(l) => l,
        // In the heap but not in a region or space in use: the page the instruction touches.
        None if touched && matches!(layout.collector, Collector::Other(_)) => {
            let (low, high) = page_of(a);
            Located { space: Space::Heap, low, high, object: 0 }
        }
        None => {
            out.space = Space::Heap as u8;
            return;
        }
    };
    out.space = space as u8;
    let candidates = [object, if e.register_based { a.wrapping_sub(e.displacement as u64) } else { 0 }, e.base];
    for (i, &c) in candidates.iter().enumerate() {
        // A humongous object's start is its first region's bottom, committed with the object;
        // the others are read only within the address's own extent.
        let inside = i == 0 || (low <= c && c.saturating_add(24) <= high);
        if c == 0 || !c.is_multiple_of(8) || c > a || !inside {
            continue;
        }
        if candidates[..i].contains(&c) {
            continue;
        }
        let h = &mut out.heads[i];
        h.at = c;
        for (k, w) in h.words.iter_mut().enumerate() {
            *w = mem.word(c + 8 * k as u64);
        }
    }
    let top = ((a & !7) + 8 * ABOVE).min(high);
    let bottom = top.saturating_sub(8 * WINDOW as u64).max(low);
    out.window_at = bottom;
    let n = ((top.saturating_sub(bottom)) / 8).min(WINDOW as u64);
    for i in 0..n {
        out.window[i as usize] = mem.word(bottom + 8 * i);
    }
    out.nwindow = n as u8;
}

#[cfg(test)]
#[path = "javaheap_tests.rs"]
mod tests;
