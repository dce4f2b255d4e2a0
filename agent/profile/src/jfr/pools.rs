//! Writer side: the constant pools of one chunk (threads, stack traces, methods, classes,
//! packages, symbols, frame types, thread states, strings), holding only what the chunk's
//! events reference.
//!
//! A key must mean the same value in every chunk of a file, because the JDK's reader reuses
//! the previous chunk's entry for a key it has seen before (ignoring the new content):
//! - method keys are `MethodIdx + 1` (methods are interned by content, never change);
//! - class, package and symbol keys number distinct strings in order of first appearance in
//!   the append-only method table, so a chunk only needs the table's prefix to compute them;
//! - stack trace keys are a 56-bit hash of the stack's content;
//! - thread keys are `(ThreadIdx + 1) << 16` plus 16 bits of a hash of the thread's name and
//!   ids, so a thread renamed between chunks gets a fresh key;
//! - strings, frame types and thread states have fixed or content-derived keys.
//!
//! Key 0 is never used for an entry, so it can stand for null.

use crate::hash::{FastBuild, IntMap};
use crate::model::StateIdx;
use std::collections::HashSet;
use std::sync::Arc;

use super::schema::*;
use super::varint::{put_bool, put_i32, put_i64, put_string, put_varint};
use crate::model::{
    ClassLoaderName, Frame, FrameKind, MethodIdx, MethodInfo, Recording, Sample, ThreadIdx, ThreadInfo, VmComponent,
};

/// Descriptor written for methods without one (native symbols, pseudo-frames): the JDK's
/// `jfr print` needs parentheses in every descriptor. Read back as an empty descriptor.
pub const NATIVE_DESCRIPTOR: &str = "()L;";
/// Key of the placeholder method used for frames whose method index is out of range.
const INVALID_METHOD_KEY: u64 = 1 << 40;
/// `ACC_NATIVE`: the modifiers of a native symbol's method, as async-profiler writes them.
const ACC_NATIVE: u32 = 0x100;

/// The class a native symbol's method is written in, by the kind of its frames: JDK tools print
/// every frame as `Class.name(...)` and JMC groups by class, so a symbol of the JVM's C++ reads
/// `libjvm.so.PhaseChaitin::Split()` and a kernel function `kernel.clear_page_erms()` (as
/// async-profiler names them by library), not `.PhaseChaitin::Split()`. Other kinds (pseudo-frames
/// such as `[GC]`) keep the class with the empty name.
const NATIVE_CLASSES: [(FrameKind, &str); 3] =
    [(FrameKind::Native, "native"), (FrameKind::Cpp, "libjvm.so"), (FrameKind::Kernel, "kernel")];

/// Key of the class (and of its name's symbol) of [`NATIVE_CLASSES`]' entry `i`: fixed, above
/// the method table's and beside the placeholder's.
fn native_class_key(i: usize) -> u64 {
    INVALID_METHOD_KEY + 16 + i as u64
}

/// Key of native symbol `m` written in [`NATIVE_CLASSES`]' class `i`: one method per symbol and
/// kind (hpm names a symbol by its name alone, and one name can be found in the JVM and in
/// another library), the same in every chunk, above the method table's keys.
fn native_method_key(m: MethodIdx, i: usize) -> u64 {
    (1 << 44) | (i as u64) << 32 | u64::from(m.0)
}

/// Whether a frame is Java code, for the JDK's `RecordedFrame.isJavaFrame()` (which reads a
/// `javaFrame` field when the frame type has one): `jfr view hot-methods` and `jfr print` take
/// the top frame that is, so native, C++ and kernel frames are not listed as Java methods.
pub fn is_java_frame(m: &MethodInfo) -> bool {
    !m.class_name.is_empty()
}
pub const THREAD_STATE_RUNNABLE_KEY: u64 = 1;

pub fn frame_type_key(k: FrameKind) -> u64 {
    FrameKind::ALL.iter().position(|&x| x == k).unwrap_or(0) as u64 + 1
}

/// Key in the `java.lang.String` pool of a component's name.
pub fn component_key(c: VmComponent) -> u64 {
    16 + VmComponent::ALL.iter().position(|&x| x == c).unwrap_or(0) as u64
}

/// Key in the `java.lang.String` pool of the sampling event's name: derived from the name, so
/// a different name never reuses the key of an earlier one.
pub fn event_name_key(name: &str) -> u64 {
    0x100 + (fnv64(name.as_bytes()) & 0xff_ffff)
}

/// Key of a thread: its index, plus 16 bits of its description, so that a thread renamed
/// after an earlier chunk gets a new key (the JDK would otherwise show the old name).
pub fn thread_key(t: ThreadIdx, info: &ThreadInfo) -> u64 {
    let mut b = Vec::with_capacity(info.name.len() + 16);
    b.extend_from_slice(info.name.as_bytes());
    b.extend_from_slice(&info.os_tid.to_le_bytes());
    b.extend_from_slice(&info.java_id.map_or(0, |i| i + 1).to_le_bytes());
    b.push(info.is_java as u8);
    if info.is_virtual {
        // Only then: a platform thread's key is as before virtual threads were told apart.
        b.push(1);
    }
    ((t.0 as u64 + 1) << 16) | (fnv64(&b) & 0xffff)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv64(b: &[u8]) -> u64 {
    fnv_more(FNV_OFFSET, b)
}

/// FNV-1a's `h` continued over `b`.
fn fnv_more(h: u64, b: &[u8]) -> u64 {
    b.iter().fold(h, |h, &x| (h ^ x as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Class name in the JVM's internal form (`java/util/HashMap`), as the JDK writes it.
pub fn internal_name(class_name: &str) -> String {
    class_name.replace('.', "/")
}

/// Package of an internal class name (`java/util`), empty for the default package.
pub fn package_of(internal: &str) -> &str {
    internal.rfind('/').map_or("", |i| &internal[..i])
}

/// Stable numbering of the distinct class, package and symbol strings of a method table's
/// prefix: built as the table grows, each method scanned once. A processor keeps one across its
/// chunks, and hands it to the next session with the table it numbers; each chunk otherwise
/// scans the table from its start (a session's table starts with the earlier sessions').
#[derive(Default)]
pub struct TableKeys {
    /// The table numbered ([`crate::model::MethodTable::lineage`]) and how much of it.
    lineage: u64,
    scanned: usize,
    /// The class key of each method scanned, by method index.
    method_class: Vec<u64>,
    /// Class keys by Java name, and by internal name (two Java names may share one).
    by_java_name: IntMap<Arc<str>, u64>,
    classes: IntMap<String, u64>,
    packages: IntMap<String, u64>,
    symbols: IntMap<Arc<str>, u64>,
    next_symbol: u64,
}

impl TableKeys {
    /// Numbers methods `..upto` of `rec`'s table (from where it stopped, or anew for another
    /// table).
    fn extend(&mut self, rec: &Recording, upto: usize) {
        let upto = upto.min(rec.methods.len());
        // A lineage names one table, which only grows (a new `TableKeys` has lineage 0, which
        // no table has).
        if self.lineage != rec.methods.lineage() {
            *self = TableKeys { lineage: rec.methods.lineage(), next_symbol: 1, ..TableKeys::default() };
        }
        // A class's internal name and package are made once per class (by its Java name), not
        // once per method.
        for mi in self.scanned..upto {
            let m = rec.method(MethodIdx(mi as u32));
            let class = match self.by_java_name.get(&*m.class_name) {
                Some(&k) => k,
                None => {
                    let internal = internal_name(&m.class_name);
                    let pkg = package_of(&internal).to_string();
                    let next = self.classes.len() as u64 + 1;
                    let k = *self.classes.entry(internal.clone()).or_insert(next);
                    if !pkg.is_empty() {
                        let next = self.packages.len() as u64 + 1;
                        self.packages.entry(pkg.clone()).or_insert(next);
                    }
                    self.symbol_of(internal.as_str());
                    self.symbol_of(pkg.as_str());
                    self.by_java_name.insert(m.class_name.clone(), k);
                    k
                }
            };
            self.method_class.push(class);
            self.symbol_of(&m.name);
            self.symbol_of(descriptor_of(&m.descriptor));
        }
        self.scanned = self.scanned.max(upto);
    }

    fn symbol_of(&mut self, s: &str) {
        if !self.symbols.contains_key(s) {
            self.symbols.insert(s.into(), self.next_symbol);
            self.next_symbol += 1;
        }
    }

    fn symbol(&self, s: &str) -> u64 {
        self.symbols.get(s).copied().unwrap_or(0)
    }
}

fn descriptor_of(d: &str) -> &str {
    if d.is_empty() {
        NATIVE_DESCRIPTOR
    } else {
        d
    }
}

/// Keys of classes named by events, and of their name symbols: this bit plus 48 bits of a hash
/// of the name, far above the method table's class and symbol keys.
const OBJECT_CLASS_BASE: u64 = 1 << 50;

/// Keys of class loaders named by events, and of their name symbols: this bit plus 48 bits of a
/// hash of the loader's class and name.
const LOADER_BASE: u64 = 1 << 51;

/// The key of a class named by an event: by its name, and its loader's when known (a class of
/// the bootstrap loader, or one whose loader is not known, keeps the key of its name alone).
/// Allocates nothing: one call per event.
fn object_class_key(java_name: &str, loader: Option<&ClassLoaderName>) -> u64 {
    let h = fnv_more(FNV_OFFSET, java_name.as_bytes());
    let h = loader.map_or(h, |l| loader_hash(fnv_more(h, &[0]), l));
    OBJECT_CLASS_BASE | (h & ((1 << 48) - 1))
}

/// `h` continued over a loader's class and name.
fn loader_hash(h: u64, l: &ClassLoaderName) -> u64 {
    let h = fnv_more(fnv_more(h, l.class.as_bytes()), &[0]);
    fnv_more(h, l.name.as_deref().unwrap_or("").as_bytes())
}

fn loader_key(l: &ClassLoaderName) -> u64 {
    LOADER_BASE | (loader_hash(FNV_OFFSET, l) & ((1 << 48) - 1))
}

/// FNV-1a over the stack's content, folded to 56 bits (8 varint bytes), never 0.
fn stack_hash(frames: &[Frame], truncated: bool) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |v: u64| {
        for b in v.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(truncated as u64);
    for f in frames {
        eat(f.method.0 as u64);
        eat(f.bci as u32 as u64 | (f.line as u32 as u64) << 32);
        eat(frame_type_key(f.kind));
    }
    let k = (h ^ (h >> 56)) & ((1 << 56) - 1);
    k.max(1)
}

/// The pools of one chunk, filled as events are written.
pub struct Pools<'a> {
    rec: &'a Recording,
    threads: Vec<ThreadIdx>,
    thread_seen: IntMap<ThreadIdx, ()>,
    /// key -> (frames, truncated)
    stacks: IntMap<u64, (&'a [Frame], bool)>,
    /// (address, length, truncated) of a shared stack -> key: samples that share one stack
    /// (read back from a file) are hashed once, not once each.
    by_address: IntMap<(usize, usize, bool), u64>,
    stack_order: Vec<u64>,
    methods: Vec<MethodIdx>,
    method_seen: IntMap<MethodIdx, ()>,
    invalid_method: bool,
    frame_types: [bool; FrameKind::ALL.len()],
    components: [bool; VmComponent::ALL.len()],
    event_name_used: bool,
    runnable_used: bool,
    /// `Recording::states` referenced by a sample.
    states_used: Vec<bool>,
    /// Classes named by events (key, internal name, loader key or 0), see [`Pools::class_named`].
    object_classes: Vec<(u64, String, u64)>,
    /// Loaders of those classes (key, loader).
    loaders: Vec<(u64, ClassLoaderName)>,
    /// Native symbols by the class their frames' kind gives them ([`NATIVE_CLASSES`]), in the
    /// order seen.
    native_methods: Vec<(MethodIdx, usize)>,
    native_seen: HashSet<(MethodIdx, usize), FastBuild>,
}

impl<'a> Pools<'a> {
    pub fn new(rec: &'a Recording) -> Pools<'a> {
        Pools {
            rec,
            threads: Vec::new(),
            thread_seen: IntMap::default(),
            stacks: IntMap::default(),
            by_address: IntMap::default(),
            stack_order: Vec::new(),
            methods: Vec::new(),
            method_seen: IntMap::default(),
            invalid_method: false,
            frame_types: [false; FrameKind::ALL.len()],
            components: [false; VmComponent::ALL.len()],
            event_name_used: false,
            runnable_used: false,
            states_used: vec![false; rec.states.len()],
            object_classes: Vec::new(),
            loaders: Vec::new(),
            native_methods: Vec::new(),
            native_seen: HashSet::default(),
        }
    }

    /// Key of a sample's thread (0, i.e. null, if the index is out of range).
    pub fn thread(&mut self, t: ThreadIdx) -> u64 {
        if t.0 as usize >= self.rec.threads.len() {
            return 0;
        }
        if self.thread_seen.insert(t, ()).is_none() {
            self.threads.push(t);
        }
        thread_key(t, &self.rec.threads[t.0 as usize])
    }

    /// Key of a sample's stack trace, deduplicated by content.
    pub fn stack(&mut self, s: &'a Sample) -> u64 {
        self.stack_of(&s.stack, s.truncated)
    }

    /// Key of a stack trace (leaf first), deduplicated by content.
    pub fn stack_of(&mut self, frames: &'a [Frame], truncated: bool) -> u64 {
        // The address is stable while `frames` is borrowed, and no other stack can have it
        // meanwhile.
        let address = (frames.as_ptr() as usize, frames.len(), truncated);
        if let Some(&key) = self.by_address.get(&address) {
            return key;
        }
        let key = self.stack_key(frames, truncated);
        self.by_address.insert(address, key);
        key
    }

    fn stack_key(&mut self, frames: &'a [Frame], truncated: bool) -> u64 {
        let mut key = stack_hash(frames, truncated);
        loop {
            match self.stacks.get(&key) {
                Some(&(f, t)) if f == frames && t == truncated => return key,
                Some(_) => key = (key + 1) & ((1 << 56) - 1), // hash collision: probe
                None => break,
            }
        }
        self.stacks.insert(key, (frames, truncated));
        self.stack_order.push(key);
        for f in frames {
            self.frame_types[frame_type_key(f.kind) as usize - 1] = true;
            match self.native_class(f) {
                Some(i) => {
                    if self.native_seen.insert((f.method, i)) {
                        self.native_methods.push((f.method, i));
                    }
                }
                None => {
                    self.method(f.method);
                }
            }
        }
        key
    }

    /// Key of the class an event names (an allocated object's, a monitor's): keyed by its
    /// name, apart from the classes of the method table, so the key means the same class in
    /// every chunk. `None` is null. `loader`: the class's loader, if known (its class is named
    /// too, with no loader of its own: loader classes are the bootstrap loader's).
    pub fn class_named(&mut self, java_name: Option<&str>, loader: Option<&ClassLoaderName>) -> u64 {
        let Some(name) = java_name else { return 0 };
        let key = object_class_key(name, loader);
        if self.object_classes.iter().all(|(k, ..)| *k != key) {
            let loader_key = match loader {
                Some(l) => {
                    let k = loader_key(l);
                    if self.loaders.iter().all(|(x, _)| *x != k) {
                        self.class_named(Some(&l.class), None);
                        self.loaders.push((k, l.clone()));
                    }
                    k
                }
                None => 0,
            };
            self.object_classes.push((key, crate::model::internal_class_name(name), loader_key));
        }
        key
    }

    /// The [`NATIVE_CLASSES`] entry of a frame of a native symbol of that kind; None for Java
    /// frames and pseudo-frames.
    fn native_class(&self, f: &Frame) -> Option<usize> {
        let native = (f.method.0 as usize) < self.rec.methods.len() && !is_java_frame(self.rec.method(f.method));
        native.then(|| NATIVE_CLASSES.iter().position(|(k, _)| *k == f.kind)).flatten()
    }

    /// Key of a method a frame or an event names, registered for the method pool.
    pub fn method(&mut self, m: MethodIdx) -> u64 {
        if (m.0 as usize) < self.rec.methods.len() {
            if self.method_seen.insert(m, ()).is_none() {
                self.methods.push(m);
            }
        } else {
            self.invalid_method = true;
        }
        self.method_key(m)
    }

    fn method_key(&self, m: MethodIdx) -> u64 {
        if (m.0 as usize) < self.rec.methods.len() {
            m.0 as u64 + 1
        } else {
            INVALID_METHOD_KEY
        }
    }

    /// String-pool key of the sampling event's name.
    pub fn event_name(&mut self) -> u64 {
        self.event_name_used = true;
        event_name_key(&self.rec.event.name)
    }

    /// Thread-state key of `STATE_RUNNABLE`.
    pub fn runnable_state(&mut self) -> u64 {
        self.runnable_used = true;
        THREAD_STATE_RUNNABLE_KEY
    }

    /// Thread-state key of a sample's state (`Recording::states`), `STATE_RUNNABLE` when none.
    pub fn state(&mut self, state: Option<StateIdx>) -> u64 {
        match state {
            Some(i) if (i as usize) < self.states_used.len() => {
                self.states_used[i as usize] = true;
                THREAD_STATE_RUNNABLE_KEY + 1 + u64::from(i)
            }
            _ => self.runnable_state(),
        }
    }

    pub fn component(&mut self, c: VmComponent) -> u64 {
        self.components[component_key(c) as usize - 16] = true;
        component_key(c)
    }

    /// Appends the body of the constant-pool event after its `flush` byte: pool count, pools.
    /// `keys` numbers the method table's strings (extended to the chunk's methods).
    pub fn encode(&self, out: &mut Vec<u8>, keys: &mut TableKeys) {
        let mut pools = PoolsOut::default();
        self.encode_threads(&mut pools);
        self.encode_stacks(&mut pools);
        let natives = self.native_methods.iter().map(|&(m, _)| m);
        let upto = self.methods.iter().copied().chain(natives).map(|m| m.0 as usize + 1).max().unwrap_or(0);
        keys.extend(self.rec, upto);
        let names = &*keys;
        let mut symbols = Symbols { names, seen: HashSet::default(), entries: Vec::new() };
        let mut classes: Vec<(u64, String, u64)> =
            self.encode_methods(&mut pools, names, &mut symbols).into_iter().map(|(k, n)| (k, n, 0)).collect();
        for (key, internal, loader) in &self.object_classes {
            symbols.fixed(*key, internal);
            classes.push((*key, internal.clone(), *loader));
        }
        encode_classes(&mut pools, &classes, names, &mut symbols);
        self.encode_loaders(&mut pools, &mut symbols);
        self.encode_source_files(&mut pools, names);
        let mut b = Vec::new();
        for (k, s) in &symbols.entries {
            put_varint(&mut b, *k);
            put_string(&mut b, Some(s));
        }
        pools.add(T_SYMBOL, symbols.entries.len(), b);
        self.encode_small_tables(&mut pools);

        put_varint(out, pools.0.len() as u64);
        for (type_id, count, body) in pools.0 {
            put_varint(out, type_id);
            put_varint(out, count);
            out.extend_from_slice(&body);
        }
    }

    fn encode_threads(&self, pools: &mut PoolsOut) {
        let mut b = Vec::new();
        for &t in &self.threads {
            let ti = &self.rec.threads[t.0 as usize];
            put_varint(&mut b, thread_key(t, ti));
            // A virtual thread has no OS thread: no OS name, OS id 0, as the JDK writes it.
            put_string(&mut b, if ti.is_virtual { None } else { Some(&ti.name) }); // osName
            put_i64(&mut b, ti.os_tid as i64);
            put_string(&mut b, if ti.is_java { Some(&ti.name) } else { None }); // javaName
            put_i64(&mut b, ti.java_id.unwrap_or(0) as i64);
            put_varint(&mut b, 0); // thread group: null
            put_bool(&mut b, ti.is_virtual);
        }
        pools.add(T_THREAD, self.threads.len(), b);
    }

    fn encode_stacks(&self, pools: &mut PoolsOut) {
        let mut b = Vec::new();
        for key in &self.stack_order {
            let (frames, truncated) = self.stacks[key];
            put_varint(&mut b, *key);
            put_bool(&mut b, truncated);
            put_varint(&mut b, frames.len() as u64);
            for f in frames {
                let native = self.native_class(f);
                put_varint(
                    &mut b,
                    native.map_or_else(|| self.method_key(f.method), |i| native_method_key(f.method, i)),
                );
                put_i32(&mut b, f.line);
                put_i32(&mut b, f.bci);
                put_varint(&mut b, frame_type_key(f.kind));
                let java = (f.method.0 as usize) < self.rec.methods.len() && is_java_frame(self.rec.method(f.method));
                put_bool(&mut b, java && native.is_none());
            }
        }
        pools.add(T_STACK_TRACE, self.stack_order.len(), b);
    }

    /// Writes the method pool; returns the classes it refers to as (key, internal name).
    fn encode_methods(&self, pools: &mut PoolsOut, names: &TableKeys, symbols: &mut Symbols) -> Vec<(u64, String)> {
        let mut classes = Vec::new();
        let mut class_seen: HashSet<u64, FastBuild> = HashSet::default();
        let mut b = Vec::new();
        for &mi in &self.methods {
            let m = self.rec.method(mi);
            let class = names.method_class[mi.0 as usize];
            if class_seen.insert(class) {
                classes.push((class, internal_name(&m.class_name)));
            }
            let name = symbols.key(&m.name);
            let desc = symbols.key(descriptor_of(&m.descriptor));
            write_method(&mut b, [mi.0 as u64 + 1, class, name, desc], m.modifiers, m.hidden);
        }
        for &(mi, i) in &self.native_methods {
            let m = self.rec.method(mi);
            let class = native_class_key(i);
            if class_seen.insert(class) {
                symbols.fixed(class, NATIVE_CLASSES[i].1);
                classes.push((class, NATIVE_CLASSES[i].1.to_string()));
            }
            let (name, desc) = (symbols.key(&m.name), symbols.key(NATIVE_DESCRIPTOR));
            write_method(&mut b, [native_method_key(mi, i), class, name, desc], m.modifiers | ACC_NATIVE, m.hidden);
        }
        let mut n = self.methods.len() + self.native_methods.len();
        if self.invalid_method {
            // A stand-in for frames whose method index is not in the table, with its own
            // class and symbols (fixed keys far above the table's).
            let m = MethodInfo::native("[unknown method]");
            let k = INVALID_METHOD_KEY;
            symbols.fixed(k, &m.name);
            symbols.fixed(k + 1, NATIVE_DESCRIPTOR);
            symbols.fixed(k + 2, "");
            classes.push((k, String::new()));
            write_method(&mut b, [k, k, k, k + 1], m.modifiers, m.hidden);
            n += 1;
        }
        pools.add(T_METHOD, n, b);
        classes
    }

    /// The source file of every class of the chunk's methods that has one, keyed like the class
    /// (see [`super::schema::SOURCE_FILE_TYPE`]).
    fn encode_source_files(&self, pools: &mut PoolsOut, names: &TableKeys) {
        let mut seen: HashSet<u64, FastBuild> = HashSet::default();
        let mut b = Vec::new();
        let mut n = 0;
        for &mi in &self.methods {
            let m = self.rec.method(mi);
            let Some(file) = m.source_file.as_deref().filter(|f| !f.is_empty()) else { continue };
            let class = names.method_class[mi.0 as usize];
            if seen.insert(class) {
                put_varint(&mut b, class);
                put_varint(&mut b, class);
                put_string(&mut b, Some(file));
                n += 1;
            }
        }
        pools.add(T_SOURCE_FILE, n, b);
    }

    /// The loaders of classes named by events: each one's class (named by an event too, see
    /// [`Pools::class_named`]) and name.
    fn encode_loaders(&self, pools: &mut PoolsOut, symbols: &mut Symbols) {
        let mut b = Vec::new();
        for (key, l) in &self.loaders {
            put_varint(&mut b, *key);
            put_varint(&mut b, object_class_key(&l.class, None));
            match &l.name {
                Some(name) => {
                    symbols.fixed(*key, name);
                    put_varint(&mut b, *key);
                }
                None => put_varint(&mut b, 0),
            }
        }
        pools.add(T_CLASS_LOADER, self.loaders.len(), b);
    }

    fn encode_small_tables(&self, pools: &mut PoolsOut) {
        let mut b = Vec::new();
        let mut n = 0;
        for (i, k) in FrameKind::ALL.iter().enumerate() {
            if self.frame_types[i] {
                put_varint(&mut b, frame_type_key(*k));
                put_string(&mut b, Some(k.jfr_name()));
                n += 1;
            }
        }
        pools.add(T_FRAME_TYPE, n, b);

        let mut b = Vec::new();
        let mut n = 0;
        if self.runnable_used {
            put_varint(&mut b, THREAD_STATE_RUNNABLE_KEY);
            put_string(&mut b, Some("STATE_RUNNABLE"));
            n += 1;
        }
        for (i, used) in self.states_used.iter().enumerate() {
            if *used {
                put_varint(&mut b, THREAD_STATE_RUNNABLE_KEY + 1 + i as u64);
                put_string(&mut b, Some(&self.rec.states[i]));
                n += 1;
            }
        }
        pools.add(T_THREAD_STATE, n, b);

        // Strings referenced from events (sampling event name, component names).
        let mut b = Vec::new();
        let mut n = 0;
        if self.event_name_used {
            put_varint(&mut b, event_name_key(&self.rec.event.name));
            put_string(&mut b, Some(&self.rec.event.name));
            n += 1;
        }
        for (i, c) in VmComponent::ALL.iter().enumerate() {
            if self.components[i] {
                put_varint(&mut b, component_key(*c));
                put_string(&mut b, Some(c.name()));
                n += 1;
            }
        }
        pools.add(T_STRING, n, b);
    }
}

/// Encoded pools: (type id, entry count, entries). Empty pools are left out: the JDK rejects
/// them.
#[derive(Default)]
struct PoolsOut(Vec<(u64, u64, Vec<u8>)>);

impl PoolsOut {
    fn add(&mut self, type_id: u64, count: usize, body: Vec<u8>) {
        if count > 0 {
            self.0.push((type_id, count as u64, body));
        }
    }
}

/// The symbols a chunk uses, in order of first use.
struct Symbols<'n> {
    names: &'n TableKeys,
    seen: HashSet<u64, FastBuild>,
    entries: Vec<(u64, String)>,
}

impl Symbols<'_> {
    fn key(&mut self, s: &str) -> u64 {
        let k = self.names.symbol(s);
        if k != 0 && self.seen.insert(k) {
            self.entries.push((k, s.to_string()));
        }
        k
    }

    fn fixed(&mut self, k: u64, s: &str) {
        if self.seen.insert(k) {
            self.entries.push((k, s.to_string()));
        }
    }
}

/// A method pool entry: its key, and the keys of its class, name and descriptor.
fn write_method(b: &mut Vec<u8>, [key, class, name, desc]: [u64; 4], modifiers: u32, hidden: bool) {
    put_varint(b, key);
    put_varint(b, class);
    put_varint(b, name);
    put_varint(b, desc);
    put_i32(b, modifiers as i32);
    put_bool(b, hidden);
}

/// Writes the class pool (name in internal form, package) and the package pool.
/// `classes`: (key, internal name, loader key or 0 for null).
fn encode_classes(pools: &mut PoolsOut, classes: &[(u64, String, u64)], names: &TableKeys, symbols: &mut Symbols) {
    let mut packages: Vec<(u64, &str)> = Vec::new();
    let mut b = Vec::new();
    for (key, internal, loader) in classes {
        let pkg = package_of(internal);
        let native = (0..NATIVE_CLASSES.len()).any(|i| native_class_key(i) == *key);
        let own = *key == INVALID_METHOD_KEY || *key & OBJECT_CLASS_BASE != 0 || native;
        // Classes named by events have no package entry (their packages need not be in the
        // method table's numbering).
        let pkg_key = if pkg.is_empty() || own { 0 } else { names.packages[pkg] };
        if pkg_key != 0 && !packages.iter().any(|(k, _)| *k == pkg_key) {
            packages.push((pkg_key, pkg));
        }
        let name = match *key {
            INVALID_METHOD_KEY => INVALID_METHOD_KEY + 2,
            k if k & OBJECT_CLASS_BASE != 0 || native => k,
            _ => symbols.key(internal),
        };
        put_varint(&mut b, *key);
        put_varint(&mut b, *loader);
        put_varint(&mut b, name);
        put_varint(&mut b, pkg_key);
        put_i32(&mut b, 0); // modifiers
        put_bool(&mut b, false); // hidden
    }
    pools.add(T_CLASS, classes.len(), b);

    let mut b = Vec::new();
    for (key, name) in &packages {
        put_varint(&mut b, *key);
        put_varint(&mut b, symbols.key(name));
        put_varint(&mut b, 0); // module: null
        put_bool(&mut b, true); // exported
    }
    pools.add(T_PACKAGE, packages.len(), b);
}
