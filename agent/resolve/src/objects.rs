//! From a sample's data address to the Java object it touched (Inoue & Nakatani
//! §4.3, Figure 2): the class, the field at the offset (or an array's element type and index)
//! and the heap space, from the words the signal handler copied at sample time
//! ([`hpm_capture::javaheap::HeapCapture`]).
//!
//! A header is *valid* when its mark word is plausible, its klass word names a `Klass` whose
//! own fields are sane (a layout helper of an instance or array, a name symbol that reads as a
//! class name), and the object that header and klass describe contains the address. The
//! paper's shortcut tries the instruction's register first (the address minus the constant
//! offset, then the base register), then the start of a humongous object; only then are the
//! copied words scanned backward, at most [`hpm_capture::javaheap::WINDOW`] of them. Class metadata
//! is read through [`MetaRead`] (the agent: `process_vm_readv`, which fails instead of
//! faulting) and cached per `Klass*`; after a collection (a class may have been unloaded and
//! its memory reused) a cached klass is checked again at its next use.

use std::collections::HashMap;
use std::sync::Arc;

use hpm_capture::hotspot::VmTable;
use hpm_capture::javaheap::{HeaderLayout, HeapCapture};
use hpm_capture::operand::MemoryAccess;
use hpm_profile::hash::IntMap;
use hpm_profile::model::Space;
pub use hpm_profile::model::NEW_OBJECT;
use hpm_profile::model::{java_type_name, DataTarget};

/// Reads of the JVM's class metadata (never the Java heap): false when `addr` is unreadable.
pub trait MetaRead {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool;
}

/// Where field descriptions are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldFormat {
    /// JDK 17-20: `InstanceKlass::_fields`, `Array<u2>` of 6-slot tuples, the java fields
    /// first; offsets packed with a 2-bit tag.
    Tuples { fields: u64, count: u64, slots: u64, name: u64, signature: u64, low: u64, high: u64, tag_size: u32 },
    /// JDK 21+: `InstanceKlass::_fieldinfo_stream`, `Array<u1>` of UNSIGNED5 numbers.
    Stream { stream: u64, injected_flag: u32, initialized_flag: u32, generic_flag: u32, contended_flag: u32 },
}

/// Offsets of the class metadata the identification reads, from VMStructs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassLayout {
    pub layout_helper: u64,
    pub name: u64,
    pub super_klass: u64,
    pub symbol_length: u64,
    pub symbol_body: u64,
    pub constants: u64,
    pub constant_pool_size: u64,
    pub array_data: u64,
    pub fields: Option<FieldFormat>,
    /// Bytes of a `Klass` read at once (covers every field above).
    pub klass_bytes: usize,
    /// Compressed oops: a reference field is 4 bytes.
    pub narrow_oops: bool,
}

impl ClassLayout {
    pub fn from_table(t: &VmTable, narrow_oops: bool) -> Result<ClassLayout, String> {
        let c = |n: &str| t.constants.get(n).copied();
        let fields = if let Ok(fields) = t.field("InstanceKlass::_fields") {
            let count = t.field("InstanceKlass::_java_fields_count").ok();
            match (count, c("FieldInfo::field_slots"), c("FieldInfo::name_index_offset")) {
                (Some(count), Some(slots), Some(name)) => Some(FieldFormat::Tuples {
                    fields,
                    count,
                    slots: slots as u64,
                    name: name as u64,
                    signature: c("FieldInfo::signature_index_offset").unwrap_or(2) as u64,
                    low: c("FieldInfo::low_packed_offset").unwrap_or(4) as u64,
                    high: c("FieldInfo::high_packed_offset").unwrap_or(5) as u64,
                    tag_size: c("FIELDINFO_TAG_SIZE").unwrap_or(2) as u32,
                }),
                _ => None,
            }
        } else if let Ok(stream) = t.field("InstanceKlass::_fieldinfo_stream") {
            let flag = |n: &str, d: i64| c(&format!("FieldInfo::FieldFlags::_ff_{n}")).unwrap_or(d) as u32;
            Some(FieldFormat::Stream {
                stream,
                injected_flag: flag("injected", 1),
                initialized_flag: flag("initialized", 0),
                generic_flag: flag("generic", 2),
                contended_flag: flag("contended", 4),
            })
        } else {
            None
        };
        let l = ClassLayout {
            layout_helper: t.field("Klass::_layout_helper")?,
            name: t.field("Klass::_name")?,
            super_klass: t.field("Klass::_super")?,
            symbol_length: t.field("Symbol::_length")?,
            symbol_body: t.field("Symbol::_body")?,
            constants: t.field("InstanceKlass::_constants")?,
            constant_pool_size: t.sizes.get("ConstantPool").copied().ok_or("VMStructs has no size of ConstantPool")?,
            array_data: t.field("Array<u1>::_data")?,
            fields,
            klass_bytes: 0,
            narrow_oops,
        };
        let last = [l.layout_helper, l.name, l.super_klass, l.constants]
            .into_iter()
            .chain(match l.fields {
                Some(FieldFormat::Tuples { fields, count, .. }) => vec![fields, count],
                Some(FieldFormat::Stream { stream, .. }) => vec![stream],
                None => vec![],
            })
            .max()
            .unwrap_or(0);
        if last > 4096 {
            return Err(format!("a Klass field at byte {last} is past what hpm reads"));
        }
        Ok(ClassLayout { klass_bytes: (last + 8) as usize, ..l })
    }
}

/// A `Klass` named and measured.
#[derive(Debug)]
pub struct KlassInfo {
    /// Its address (the caches' key), and its name symbol's (checked after collections).
    pub addr: u64,
    name_symbol: u64,
    /// Java name: `java.lang.String`, `int[]`, `java.lang.Object[][]`.
    pub name: Arc<str>,
    pub layout_helper: i32,
    /// A class's superclass (0 for arrays).
    super_klass: u64,
    /// `java.lang.Class`: a mirror, whose static fields follow its instance fields (its size
    /// is in an injected field; bounded here by [`MAX_MIRROR`]).
    mirror: bool,
    constants: u64,
    field_data: u64,
    /// JDK 17's `_java_fields_count` (the stream format carries its own).
    java_fields: u64,
}

impl KlassInfo {
    fn is_array(&self) -> bool {
        self.layout_helper < 0
    }

    /// Bytes of an object of this klass with the header words `words`.
    fn object_size(&self, header: &HeaderLayout, words: [u64; 3]) -> u64 {
        let lh = self.layout_helper;
        if lh > 0 {
            (lh as u64) & !7
        } else {
            let (hsize, log2) = self.array_shape();
            let len = header.array_length(words);
            (hsize + (len << log2.min(3)) + 7) & !7
        }
    }

    fn array_shape(&self) -> (u64, u32) {
        (((self.layout_helper >> 16) & 0xff) as u64, (self.layout_helper & 0xff) as u32)
    }
}

/// How samples were attributed (the summary's `objects:` line, and the JFR's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectStats {
    /// Samples per [`Space`] code.
    pub spaces: [u64; 12],
    /// Heap samples identified by the instruction's register or displacement (the paper's
    /// shortcut), by a humongous object's start, by the backward scan.
    pub by_register: u64,
    pub by_region: u64,
    pub by_scan: u64,
    /// Heap samples that were the store of a new object's class word ([`Identifier::creation`]).
    pub created: u64,
    /// Heap samples not identified, per reason.
    pub failed: Vec<(String, u64)>,
    /// Time spent in [`Identifier::identify`] (monotonic clock), for the cost line.
    pub translate_ns: u64,
}

impl ObjectStats {
    pub fn heap(&self) -> u64 {
        Space::ALL.iter().filter(|s| s.in_heap()).map(|&s| self.spaces[s as usize]).sum()
    }

    pub fn identified(&self) -> u64 {
        self.by_register + self.by_region + self.by_scan + self.created
    }

    /// `objects: I of H heap samples identified (P%): R by the instruction's register, ...`
    /// and where the other addresses were; None before any address.
    pub fn line(&self) -> Option<String> {
        let total: u64 = self.spaces.iter().sum();
        if total == 0 {
            return None;
        }
        let g = hpm_profile::text::group;
        let heap = self.heap();
        let mut s = if heap > 0 {
            format!(
                "objects: {} of {} heap samples identified ({:.1}%): {} by the instruction's registers, {} as humongous, {} by backward scan, {} new objects by the class they were given",
                g(self.identified()),
                g(heap),
                100.0 * self.identified() as f64 / heap as f64,
                g(self.by_register),
                g(self.by_region),
                g(self.by_scan),
                g(self.created)
            )
        } else {
            "objects: no address in the heap".to_string()
        };
        if !self.failed.is_empty() {
            s.push_str(&format!("; not identified: {}", hpm_profile::text::reason_list(&self.failed)));
        }
        let spaces: Vec<String> = Space::ALL
            .iter()
            .filter(|&&sp| sp != Space::None && self.spaces[sp as usize] > 0)
            .map(|&sp| format!("{} {}", sp.name(), g(self.spaces[sp as usize])))
            .collect();
        s.push_str(&format!("; addresses in: {}", spaces.join(", ")));
        Some(s)
    }

    fn fail(&mut self, reason: &str) {
        hpm_profile::model::count_reason(&mut self.failed, reason, 1);
    }
}

/// Instance fields of a class and its superclasses: (offset, bytes, `Declaring.name`), sorted
/// by offset.
type Fields = Vec<(u64, u64, Arc<str>)>;

/// The field of a [`DataTarget`] that names a monitor's object (uprobes on ObjectMonitor).
pub const MONITOR: &str = "<monitor>";

const MAX_KLASSES: usize = 1 << 15;
/// Bytes of a `java.lang.Class` mirror an address may be in (its statics included).
const MAX_MIRROR: u64 = 1 << 16;
/// Superclasses followed at most for inherited fields.
const MAX_SUPERS: usize = 64;
/// Fields of one class read at most.
const MAX_FIELDS: usize = 1 << 16;

/// Identifies the objects of samples; one per recording.
pub struct Identifier {
    pub header: HeaderLayout,
    pub classes: ClassLayout,
    /// Klasses read, with the collection count they were last checked at (negative answers
    /// too).
    klasses: IntMap<u64, (Option<Arc<KlassInfo>>, u64)>,
    /// Collections so far.
    epoch: u64,
    fields: IntMap<u64, Arc<Fields>>,
    names: HashMap<Box<str>, Arc<str>, hpm_profile::hash::FastBuild>,
    pub stats: ObjectStats,
}

/// A header found: where, how, its klass and words.
struct Found {
    at: u64,
    klass: Arc<KlassInfo>,
    words: [u64; 3],
}

impl Identifier {
    pub fn new(header: HeaderLayout, classes: ClassLayout) -> Identifier {
        Identifier {
            header,
            classes,
            klasses: IntMap::default(),
            epoch: 0,
            fields: IntMap::default(),
            names: HashMap::default(),
            stats: ObjectStats::default(),
        }
    }

    /// A collection finished: classes may have been unloaded and their memory reused. Each
    /// klass is checked again at its next use (its layout helper and name symbol, one small
    /// read) rather than read again with its fields: dropping everything at each collection
    /// cost h2 ~29 us per address (its young collections come every few hundred ms).
    pub fn collected(&mut self) {
        self.epoch += 1;
    }

    /// What the sample touched: its space and, in the heap, the object (`access`: the
    /// resolver's decoding of the instruction; `cap`: what the handler copied). `sp`: the
    /// interrupted stack pointer (a stack address's offset is from it).
    pub fn identify(
        &mut self,
        cap: &HeapCapture,
        access: &MemoryAccess,
        sp: u64,
        mem: &mut dyn MetaRead,
    ) -> DataTarget {
        let start = std::time::Instant::now();
        let t = self.identify_untimed(cap, access, sp, mem);
        self.stats.translate_ns += start.elapsed().as_nanos() as u64;
        t
    }

    fn identify_untimed(
        &mut self,
        cap: &HeapCapture,
        access: &MemoryAccess,
        sp: u64,
        mem: &mut dyn MetaRead,
    ) -> DataTarget {
        let space = cap.space();
        self.stats.spaces[space as usize] += 1;
        let mut t = DataTarget { space, class: None, field: None, offset: 0, index: None, source: None, latency: 0 };
        if space == Space::Stack {
            t.offset = access.address.wrapping_sub(sp);
            return t;
        }
        if !space.in_heap() {
            return t;
        }
        if cap.address != access.address {
            self.stats.fail("decodings_differ");
            return t;
        }
        if cap.heads.iter().all(|h| h.at == 0) && cap.nwindow == 0 {
            self.stats.fail("no_region_in_use");
            return t;
        }
        let a = access.address;
        let mut found = None;
        for (i, h) in cap.heads.iter().enumerate() {
            if h.at == 0 {
                continue;
            }
            if let Some(k) = self.valid(h.at, h.words, a, mem) {
                if i == 0 {
                    self.stats.by_region += 1;
                } else {
                    self.stats.by_register += 1;
                }
                found = Some(Found { at: h.at, klass: k, words: h.words });
                break;
            }
        }
        if found.is_none() {
            let mut p = (a & !7).min(cap.window_at + 8 * u64::from(cap.nwindow).saturating_sub(1));
            while p >= cap.window_at && cap.nwindow > 0 {
                let w = |x: u64| cap.word(x).unwrap_or(0);
                let words = [w(p), w(p + 8), w(p + 16)];
                if cap.word(p + 8).is_some() {
                    if let Some(k) = self.valid(p, words, a, mem) {
                        self.stats.by_scan += 1;
                        found = Some(Found { at: p, klass: k, words });
                        break;
                    }
                }
                if p < 8 {
                    break;
                }
                p -= 8;
            }
        }
        let Some(f) = found else {
            self.stats.fail(if cap.nwindow == 0 { "outside_the_copied_words" } else { "no_header_found" });
            return t;
        };
        let offset = a - f.at;
        t.offset = offset;
        t.class = Some(f.klass.name.clone());
        let hsize = self.header.size();
        if f.klass.is_array() {
            let (base, log2) = f.klass.array_shape();
            if offset < base {
                t.field =
                    Some(self.intern(if offset >= self.header.length_offset() { "<length>" } else { "<header>" }));
            } else {
                let len = self.header.array_length(f.words);
                let index = (offset - base) >> log2.min(3);
                t.index = (index < len).then_some(index);
                t.field = Some(self.intern("[]"));
            }
        } else if offset < hsize {
            t.field = Some(self.intern("<header>"));
        } else {
            let fields = self.fields_of(&f.klass, mem);
            let i = fields.partition_point(|e| e.0 <= offset);
            t.field = match i.checked_sub(1).map(|i| &fields[i]) {
                Some((o, size, name)) if offset < o + size => Some(name.clone()),
                // Past a mirror's instance fields: a static field of the class it mirrors.
                _ if f.klass.mirror && offset >= f.klass.layout_helper.max(0) as u64 => {
                    Some(self.intern("<static field>"))
                }
                _ => Some(self.intern("<padding>")),
            };
        }
        t
    }

    /// One shared copy of a name (class, field, data source).
    pub fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(n) = self.names.get(s) {
            return n.clone();
        }
        if self.names.len() >= MAX_KLASSES {
            self.names.clear();
        }
        let n: Arc<str> = s.into();
        self.names.insert(s.into(), n.clone());
        n
    }

    /// The store that gives a new object its class (Inoue & Nakatani §5.1, the software twin):
    /// a `mov` of a valid klass into the class word (offset 8; the mark word with compact
    /// headers) of a register-addressed object in a young space. The sample interrupted that
    /// store before it ran, so the object's header is not there yet: the class comes from the
    /// value stored. `None` for every other access. The target's field is `<new>`.
    pub fn creation(&mut self, space: Space, access: &MemoryAccess, mem: &mut dyn MetaRead) -> Option<DataTarget> {
        if !matches!(space, Space::Eden | Space::Heap) || !access.register_based {
            return None;
        }
        let value = access.stored?;
        let h = self.header;
        let narrow = match (h.klass_in_mark, access.displacement) {
            (Some(shift), 0) if value & 3 == 1 => value >> shift,
            (None, 8) if h.compressed_klass && access.size == 4 => value,
            (None, 8) if !h.compressed_klass && access.size == 8 => return self.created(space, value, mem),
            _ => return None,
        };
        if narrow == 0 {
            return None;
        }
        self.created(space, h.klass_base.wrapping_add(narrow << h.klass_shift), mem)
    }

    /// The object of the HotSpot `ObjectMonitor` at `monitor` (its `_object` at `object_offset`
    /// is a weak handle: a pointer to the oop's slot), named by class: field `<monitor>`. The
    /// reads are checked (the monitor may have been deflated since).
    pub fn monitor(&mut self, monitor: u64, object_offset: u64, mem: &mut dyn MetaRead) -> Option<DataTarget> {
        let word = |mem: &mut dyn MetaRead, at: u64| {
            let mut b = [0u8; 8];
            (at != 0 && mem.read(at, &mut b)).then(|| u64::from_le_bytes(b))
        };
        let slot = word(mem, monitor.checked_add(object_offset)?)?;
        let oop = word(mem, slot)?;
        let mut h = [0u8; 16];
        if oop == 0 || !mem.read(oop, &mut h) {
            return None;
        }
        let (mark, klass_word) =
            (u64::from_le_bytes(h[..8].try_into().ok()?), u64::from_le_bytes(h[8..].try_into().ok()?));
        // Locked through the monitor: the mark word points at it; the class word is intact.
        let k = self.header.klass(mark, klass_word)?;
        let info = self.klass(k, mem)?;
        let field = Some(self.intern(MONITOR));
        Some(DataTarget {
            space: Space::Heap,
            class: Some(info.name.clone()),
            field,
            offset: 0,
            index: None,
            source: None,
            latency: 0,
        })
    }

    /// A store sample whose object was identified from its written header (a precise store
    /// event: the PMU reports it after it ran) is a creation if it wrote the class word of an
    /// object in a young space.
    pub fn written_class_word(&mut self, t: &mut DataTarget, access: &MemoryAccess) {
        let class_word = if self.header.klass_in_mark.is_some() { 0 } else { 8 };
        if access.access == hpm_capture::operand::Access::Store
            && matches!(t.space, Space::Eden | Space::Heap)
            && t.class.is_some()
            && t.offset == class_word
        {
            t.field = Some(self.intern(NEW_OBJECT));
            self.stats.created += 1;
        }
    }

    fn created(&mut self, space: Space, klass: u64, mem: &mut dyn MetaRead) -> Option<DataTarget> {
        let info = self.klass(klass, mem)?;
        let field = Some(self.intern(NEW_OBJECT));
        let offset = if self.header.klass_in_mark.is_some() { 0 } else { 8 };
        self.stats.created += 1;
        self.stats.spaces[space as usize] += 1;
        Some(DataTarget { space, class: Some(info.name.clone()), field, offset, index: None, source: None, latency: 0 })
    }

    /// The klass of a valid header at `at` with `words` whose object contains `a`.
    fn valid(&mut self, at: u64, words: [u64; 3], a: u64, mem: &mut dyn MetaRead) -> Option<Arc<KlassInfo>> {
        let k = self.header.klass(words[0], words[1])?;
        let info = self.klass(k, mem)?;
        let size = if info.mirror { MAX_MIRROR } else { info.object_size(&self.header, words) };
        (a >= at && a - at < size.max(self.header.size())).then_some(info)
    }

    /// The klass at `k`, read and checked once (cached, negative answers too).
    pub fn klass(&mut self, k: u64, mem: &mut dyn MetaRead) -> Option<Arc<KlassInfo>> {
        match self.klasses.get(&k) {
            Some((v, at)) if *at == self.epoch => return v.clone(),
            Some((Some(info), _)) if self.still(info, mem) => {
                let info = info.clone();
                self.klasses.insert(k, (Some(info.clone()), self.epoch));
                return Some(info);
            }
            _ => {}
        }
        self.fields.remove(&k);
        if self.klasses.len() >= MAX_KLASSES {
            self.klasses.clear();
            self.fields.clear();
        }
        let v = self.read_klass(k, mem).map(Arc::new);
        self.klasses.insert(k, (v.clone(), self.epoch));
        v
    }

    /// Whether the klass read earlier at `info.addr` is still there: the same layout helper
    /// and name symbol.
    fn still(&self, info: &KlassInfo, mem: &mut dyn MetaRead) -> bool {
        let c = &self.classes;
        let end = (c.layout_helper.max(c.name) + 8) as usize;
        let mut buf = [0u8; 64];
        if end > buf.len() || !mem.read(info.addr, &mut buf[..end]) {
            return false;
        }
        let at = |o: u64| u64::from_le_bytes(buf[o as usize..o as usize + 8].try_into().unwrap_or([0; 8]));
        at(c.layout_helper) as u32 as i32 == info.layout_helper && at(c.name) == info.name_symbol
    }

    fn read_klass(&mut self, k: u64, mem: &mut dyn MetaRead) -> Option<KlassInfo> {
        if !k.is_multiple_of(8) {
            return None;
        }
        let c = &self.classes;
        let mut buf = vec![0u8; c.klass_bytes];
        if !mem.read(k, &mut buf) {
            return None;
        }
        let u64_at = |o: u64| u64::from_le_bytes(buf[o as usize..o as usize + 8].try_into().unwrap_or([0; 8]));
        let lh = u64_at(c.layout_helper) as u32 as i32;
        let symbol = u64_at(c.name);
        let raw = read_symbol(c, symbol, mem)?;
        let array = lh < 0;
        if array {
            let tag = (lh as u32) >> 30;
            let (hsize, log2) = (((lh >> 16) & 0xff) as u64, (lh & 0xff) as u32);
            if !(tag == 2 || tag == 3) || !(8..=24).contains(&hsize) || log2 > 3 || !raw.starts_with('[') {
                return None;
            }
        } else if lh <= 0 || !(8..=1 << 24).contains(&(lh as i64)) || raw.starts_with('[') {
            return None;
        }
        let valid = raw.bytes().all(|b| b > b' ' && b != b'.' && b != b';' || b == b';' && array);
        if !valid {
            return None;
        }
        let name = java_type_name(&raw);
        let c = &self.classes;
        let (constants, field_data, java_fields) = match (array, c.fields) {
            (false, Some(FieldFormat::Tuples { fields, count, .. })) => {
                (u64_at(c.constants), u64_at(fields), u64_at(count) & 0xffff)
            }
            (false, Some(FieldFormat::Stream { stream, .. })) => (u64_at(c.constants), u64_at(stream), 0),
            _ => (0, 0, 0),
        };
        let super_klass = if array { 0 } else { u64_at(c.super_klass) };
        let mirror = raw == "java/lang/Class";
        Some(KlassInfo {
            mirror,
            name_symbol: symbol,
            addr: k,
            java_fields,
            name: self.intern(&name),
            layout_helper: lh,
            super_klass,
            constants,
            field_data,
        })
    }

    /// Instance fields of `k` and its superclasses, sorted by offset (cached per klass).
    fn fields_of(&mut self, k: &Arc<KlassInfo>, mem: &mut dyn MetaRead) -> Arc<Fields> {
        let key = k.addr;
        if let Some(f) = self.fields.get(&key) {
            return f.clone();
        }
        let mut all = Vec::new();
        let mut cur = Some(k.clone());
        for _ in 0..MAX_SUPERS {
            let Some(c) = cur else { break };
            for (off, size, name) in self.declared_fields(&c, mem) {
                all.push((off, size, self.intern(&format!("{}.{}", c.name, name))));
            }
            cur = if c.super_klass != 0 { self.klass(c.super_klass, mem) } else { None };
        }
        all.sort_by_key(|e| e.0);
        let v = Arc::new(all);
        if self.fields.len() >= MAX_KLASSES {
            self.fields.clear();
        }
        self.fields.insert(key, v.clone());
        v
    }

    /// The instance fields a class declares: (offset, bytes, name).
    fn declared_fields(&self, k: &KlassInfo, mem: &mut dyn MetaRead) -> Vec<(u64, u64, String)> {
        let c = &self.classes;
        let (Some(format), false) = (c.fields, k.field_data == 0 || k.constants == 0) else { return Vec::new() };
        let width = if matches!(format, FieldFormat::Tuples { .. }) { 2 } else { 1 };
        let Some(bytes) = read_array(c, k.field_data, width, mem) else { return Vec::new() };
        let cp_symbol = |mem: &mut dyn MetaRead, index: u64| -> Option<String> {
            let mut w = [0u8; 8];
            let at = k.constants + c.constant_pool_size + 8 * index;
            mem.read(at, &mut w).then_some(())?;
            read_symbol(c, u64::from_le_bytes(w), mem)
        };
        let oop = if c.narrow_oops { 4 } else { 8 };
        let mut out = Vec::new();
        const ACC_STATIC: u64 = 0x0008;
        match format {
            FieldFormat::Tuples { slots, name, signature, low, high, tag_size, .. } => {
                let total = k.java_fields;
                let u2 = |i: u64| -> Option<u64> {
                    let o = (2 * i) as usize;
                    bytes.get(o..o + 2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])))
                };
                for f in 0..total.min(MAX_FIELDS as u64) {
                    let base = f * slots;
                    let (Some(flags), Some(ni), Some(si), Some(lo), Some(hi)) =
                        (u2(base), u2(base + name), u2(base + signature), u2(base + low), u2(base + high))
                    else {
                        break;
                    };
                    let packed = (hi << 16) | lo;
                    if flags & ACC_STATIC != 0 || packed & ((1 << tag_size) - 1) != 1 {
                        continue;
                    }
                    let (Some(n), Some(sig)) = (cp_symbol(mem, ni), cp_symbol(mem, si)) else { continue };
                    out.push((packed >> tag_size, field_size(&sig, oop), n));
                }
            }
            FieldFormat::Stream { injected_flag, initialized_flag, generic_flag, contended_flag, .. } => {
                let mut r = Unsigned5 { bytes: &bytes, pos: 0 };
                let (Some(java), Some(_injected)) = (r.next(), r.next()) else { return out };
                for _ in 0..java.min(MAX_FIELDS as u64) {
                    let (Some(ni), Some(si), Some(off), Some(acc), Some(ff)) =
                        (r.next(), r.next(), r.next(), r.next(), r.next())
                    else {
                        break;
                    };
                    for bit in [initialized_flag, generic_flag, contended_flag] {
                        if ff & (1 << bit) != 0 && r.next().is_none() {
                            return out;
                        }
                    }
                    if acc & ACC_STATIC != 0 || ff & (1 << injected_flag) != 0 {
                        continue;
                    }
                    let (Some(n), Some(sig)) = (cp_symbol(mem, ni), cp_symbol(mem, si)) else { continue };
                    out.push((off, field_size(&sig, oop), n));
                }
            }
        }
        out
    }
}

/// HotSpot's UNSIGNED5 numbers (`unsigned5.hpp`): bytes 1..=192 end a number, 193..=255
/// carry 6 more bits each, at most five bytes; 0 is no number.
struct Unsigned5<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Unsigned5<'_> {
    fn next(&mut self) -> Option<u64> {
        let mut sum = 0u64;
        let mut shift = 0;
        for i in 0..5 {
            let b = u64::from(*self.bytes.get(self.pos)?);
            self.pos += 1;
            if b == 0 {
                return None;
            }
            sum += (b - 1) << shift;
            if b <= 192 || i == 4 {
                return Some(sum);
            }
            shift += 6;
        }
        Some(sum)
    }
}

/// Bytes a field of descriptor `sig` takes.
fn field_size(sig: &str, oop: u64) -> u64 {
    match sig.as_bytes().first() {
        Some(b'B' | b'Z') => 1,
        Some(b'C' | b'S') => 2,
        Some(b'I' | b'F') => 4,
        Some(b'J' | b'D') => 8,
        _ => oop,
    }
}

/// Reads a `Symbol`'s text (at most 64 KiB, as Symbols are).
fn read_symbol(c: &ClassLayout, symbol: u64, mem: &mut dyn MetaRead) -> Option<String> {
    if symbol == 0 {
        return None;
    }
    let mut len = [0u8; 2];
    mem.read(symbol + c.symbol_length, &mut len).then_some(())?;
    let len = usize::from(u16::from_le_bytes(len));
    if len == 0 {
        return None;
    }
    let mut body = vec![0u8; len];
    mem.read(symbol + c.symbol_body, &mut body).then_some(())?;
    String::from_utf8(body).ok()
}

/// An `Array<u1>` or `Array<u2>`'s bytes (`width` bytes an element; its `int` length counts
/// elements), at most 1 Mi elements.
fn read_array(c: &ClassLayout, array: u64, width: usize, mem: &mut dyn MetaRead) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    mem.read(array, &mut len).then_some(())?;
    let len = i32::from_le_bytes(len);
    if !(0..=1 << 20).contains(&len) {
        return None;
    }
    let mut buf = vec![0u8; width * len as usize];
    mem.read(array + c.array_data, &mut buf).then_some(buf)
}

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
