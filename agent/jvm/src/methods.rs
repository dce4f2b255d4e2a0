//! Method names and line tables from JVMTI, for the processor (an attached daemon thread).

use std::sync::Mutex;

use hpm_capture::hotspot::Layout;
use hpm_profile::hash::IntMap;
use hpm_profile::model::MethodInfo;
use hpm_resolve::resolve::{JavaMethods, MethodPointer};
use jni::sys::{jmethodID, JNIEnv};

use crate::code::CodeEvents;
use crate::jnienv::delete_local_ref;
use crate::jvmti::{class_name_from_signature, Jvmti};
use crate::os;

pub struct JvmtiMethods {
    jvmti: Jvmti,
    /// The processor thread's own JNIEnv, to free the local class references JVMTI returns.
    jni: *mut JNIEnv,
    known: Described,
    pointers: Option<MethodPointers>,
}

/// What JVMTI said of each jmethodID, kept for the process's later sessions (as the `Method*`
/// map is): five JVMTI calls per method cost ~13 µs, and a one-second session of a program with
/// a few thousand hot methods spent ~3% of its time naming them again. An id's slot can be
/// given to another method once its own is freed (JDK 17 reuses freed slots of a loader's
/// block: old versions of redefined methods), so each name keeps the `Method*` its id held
/// when named, and a later session checks every slot when it starts ([`Described::recheck_all`]):
/// a name whose slot holds another `Method*` is dropped, lines too, and named again at its
/// next use. Bounded: started again past `MAX_DESCRIBED` entries.
#[derive(Default)]
struct Described {
    /// id -> (name, the `Method*` its slot held then).
    infos: IntMap<u64, (MethodInfo, Option<u64>)>,
    /// Ids whose slot was checked this session.
    checked: IntMap<u64, ()>,
    /// Line tables by method, sorted by start bci.
    lines: IntMap<u64, Vec<(i64, i32)>>,
    /// (method, bci) -> line, the common case once a method was seen.
    memo: IntMap<(u64, i32), i32>,
}

/// Names, line tables and lines kept at most (each entry a few hundred bytes: ~64 MB; 1 Mi
/// before, up to ~0.5 GB). A session names a few thousand (docs/benchmarks.md).
const MAX_DESCRIBED: usize = 1 << 17;

impl Described {
    /// A session starts: every name's id is checked against the `Method*` it was named with,
    /// all at once (one read per 1,024 ids; a read each at first use cost a short session ~2
    /// ms). A name whose slot holds it is current; one whose slot holds another method (its
    /// class unloaded, or the method redefined) is dropped with its lines, so the names kept
    /// follow the live methods: a program that loads and drops classes all the time grew them
    /// by ~600 names a session (soak test, 12 s sessions), ~0.5 MB, without end. A slot that
    /// cannot be read proves nothing: that name is checked at its first use.
    fn recheck_all(&mut self) {
        let pairs: Vec<(u64, u64)> = self.infos.iter().filter_map(|(&id, (_, m))| m.map(|m| (id, m))).collect();
        self.checked.clear();
        let mut gone: IntMap<u64, ()> = IntMap::default();
        for (&(id, _), holds) in pairs.iter().zip(slots_hold(&pairs)) {
            match holds {
                Some(true) => {
                    self.checked.insert(id, ());
                }
                Some(false) => {
                    gone.insert(id, ());
                }
                None => {}
            }
        }
        if !gone.is_empty() {
            self.forget(&gone);
        }
    }

    /// Drops the names of ids `gone`, with their lines.
    fn forget(&mut self, gone: &IntMap<u64, ()>) {
        self.infos.retain(|id, _| !gone.contains_key(id));
        self.lines.retain(|id, _| !gone.contains_key(id));
        self.memo.retain(|&(id, _), _| !gone.contains_key(&id));
    }
}

static DESCRIBED: Mutex<Option<Described>> = Mutex::new(None);

/// `Method*` -> jmethodID for hpm's own stack walker: a jmethodID is a slot holding its
/// `Method*`, so reading the slots of every id the agent had made gives the reverse map.
/// Methods are freed only when a collection unloads their class (or a redefinition replaces
/// them): an answer is checked against its id's slot (one read) when first given and at its
/// first use after each collection, and a `Method*` unknown after pulling the new ids makes a
/// full rebuild, at most every few seconds. Slots and methods are read with
/// `read_words_checked`, never with a load that could fault on freed memory.
struct MethodPointers {
    code: &'static CodeEvents,
    layout: &'static Layout,
    /// Ids pulled from `code` so far.
    seen: usize,
    reverse: IntMap<u64, u64>,
    /// What each pulled id's slot held when read (id -> `Method*`): naming a method keeps the
    /// `Method*` its id held, which this spares a read of its own for ids pulled already.
    held: IntMap<u64, u64>,
    /// Each answer with the collection counts when it was last checked and last asked for.
    named: IntMap<u64, (MethodPointer, u64, u64)>,
    /// Collections seen (sessions' starts count as one: those between them went unseen).
    collections: u64,
    last_rebuild_ns: u64,
    /// `Method*`s a full rebuild did not find: not rebuilt for again for [`UNKNOWN_KEEP_NS`]
    /// (across sessions; new ids are still pulled for them). One whose memory a later method
    /// reuses is found by that method's new id; only a redefinition that moves an id to it
    /// goes unseen, for that long at most.
    unknown: IntMap<u64, ()>,
    /// When `unknown` was last emptied.
    unknown_since: u64,
    /// CPU time of the first reading of every id (once per process), in ns.
    first_pull_ns: u64,
}

/// Answers checked all at once after a collection at most (the rest: each at its next use).
const EAGER_RECHECK: usize = 1 << 14;

/// Collections an answer is kept for without being asked for.
const KEEP_UNASKED: u64 = 16;

/// `Method*`s remembered as unknown at most (forgotten when full).
const MAX_UNKNOWN: usize = 4096;

/// Full rebuilds of the reverse map are at least this far apart.
const REBUILD_NS: u64 = 5_000_000_000;

/// How long `Method*`s a rebuild did not find stay unknown: forgotten at every session start
/// instead, the first of them sampled rebuilt the map (23,000 ids, 13 ms on xalan) every 5 s of
/// short sessions.
const UNKNOWN_KEEP_NS: u64 = 60_000_000_000;

impl MethodPointers {
    fn new(code: &'static CodeEvents, layout: &'static Layout) -> MethodPointers {
        MethodPointers {
            code,
            layout,
            seen: 0,
            reverse: IntMap::default(),
            held: IntMap::default(),
            named: IntMap::default(),
            collections: 0,
            last_rebuild_ns: 0,
            unknown: IntMap::default(),
            unknown_since: 0,
            first_pull_ns: 0,
        }
    }

    fn pull(&mut self) {
        let mut ids = Vec::new();
        self.seen = self.code.method_ids_since(self.seen, &mut ids);
        for (id, m) in ids.iter().zip(os::read_words_checked(&ids)) {
            if let Some(m) = m.filter(|&m| m != 0) {
                self.reverse.insert(m, *id);
                self.held.insert(*id, m);
            }
        }
    }

    /// After a collection (or between sessions, when collections went unseen) every answer
    /// is to be checked again before its next use. Those asked for since the last collection,
    /// likely asked again, are checked at once, one read per 1,024 (a read each at its next
    /// use cost a one-iteration session of an allocating program ~1 ms per collection); the
    /// others, perhaps never asked again (checking them all cost the demo's 90 collections
    /// 15% of its processing), at their next use.
    fn collected(&mut self) {
        let epoch = self.collections;
        self.collections += 1;
        let asked: Vec<(u64, u64)> =
            self.named.iter().filter(|(_, e)| e.2 == epoch).take(EAGER_RECHECK).map(|(&p, e)| (e.0.id, p)).collect();
        self.recheck(&asked, false);
        // Answers not asked for in the last few collections are forgotten (asked again, they
        // cost a read as a re-check would): the map holds what is being sampled, not every
        // method ever interpreted.
        let now = self.collections;
        self.named.retain(|_, e| now - e.2 <= KEEP_UNASKED);
    }

    /// Reads every id's slot the first time (timed: once per process); whether it did.
    fn first_pull(&mut self) -> bool {
        if self.seen != 0 || self.first_pull_ns != 0 {
            return false;
        }
        let t = os::thread_cpu_ns();
        self.pull();
        self.first_pull_ns = os::thread_cpu_ns().saturating_sub(t).max(1);
        true
    }

    /// Checks the answers (id, `Method*`) against their ids' slots, one read per 1,024: one
    /// whose slot still holds its method is current as of now (and, with `asked`, asked for
    /// now); one whose slot holds another is forgotten; an unreadable one is left for the
    /// check at its next use.
    fn recheck(&mut self, pairs: &[(u64, u64)], asked: bool) {
        let now = self.collections;
        for (&(id, method), holds) in pairs.iter().zip(slots_hold(pairs)) {
            match holds {
                Some(true) => {
                    if let Some(e) = self.named.get_mut(&method) {
                        e.1 = now;
                        if asked {
                            e.2 = now;
                        }
                    }
                }
                Some(false) => self.forget(method, id),
                None => {}
            }
        }
    }

    /// Id `id`'s slot no longer holds `method` (unloaded, or redefined).
    fn forget(&mut self, method: u64, id: u64) {
        self.named.remove(&method);
        self.reverse.remove(&method);
        if self.held.get(&id) == Some(&method) {
            self.held.remove(&id);
        }
    }

    fn lookup(&mut self, method: u64) -> Option<MethodPointer> {
        // Not a `Method*` (metaspace blocks are word-aligned, never in the first page): a walk
        // that met no method (chain's stack copies give 0) must not cost a rebuild of the map
        // (~12 ms on xalan's 23,000 ids) nor a place among the unknown.
        if !could_be_method(method) {
            return None;
        }
        // An answer is checked against its id's slot when first given, and again at its first
        // use after each collection (`collected`): a method unloaded since (its memory perhaps
        // reused by another) or redefined is not named by its old id.
        let now = self.collections;
        if let Some(e) = self.named.get_mut(&method) {
            let m = e.0;
            if e.1 == now {
                e.2 = now;
                return Some(m);
            }
            if slot_holds(m.id, method) {
                *e = (m, now, now);
                return Some(m);
            }
            self.forget(method, m.id);
        }
        if !self.reverse.contains_key(&method) && !self.first_pull() {
            self.pull();
        }
        if !self.reverse.contains_key(&method) {
            let now = os::now_ticks();
            if now.saturating_sub(self.unknown_since) > UNKNOWN_KEEP_NS {
                self.unknown.clear();
                self.unknown_since = now;
            }
            if self.unknown.contains_key(&method) || now.saturating_sub(self.last_rebuild_ns) < REBUILD_NS {
                return None;
            }
            self.last_rebuild_ns = now;
            self.seen = 0;
            self.reverse.clear();
            self.held.clear();
            self.pull();
            if !self.reverse.contains_key(&method) {
                // A method the JVM made no id for (a method handle intrinsic, say): sampled
                // again and again, it would make a rebuild every few seconds.
                if self.unknown.len() >= MAX_UNKNOWN {
                    self.unknown.clear();
                }
                self.unknown.insert(method, ());
            }
        }
        let id = *self.reverse.get(&method)?;
        self.name_found(&[(id, method)])[0]
    }

    /// Names `Method*`s whose ids the reverse map gave, (id, `Method*`) each: checks that each
    /// id's slot still holds its method and reads where its bytecodes are, in two reads for
    /// all (the slots with the methods' `ConstMethod*`s, then their code sizes). A slot that
    /// holds another method forgets the pair.
    fn name_found(&mut self, found: &[(u64, u64)]) -> Vec<Option<MethodPointer>> {
        let l = self.layout;
        let words =
            os::read_words_checked(&found.iter().flat_map(|&(id, m)| [id, m + l.method_const]).collect::<Vec<_>>());
        let mut out = vec![None; found.len()];
        let mut whole = Vec::new();
        for (k, &(id, method)) in found.iter().enumerate() {
            match (words[2 * k], words[2 * k + 1]) {
                (slot, _) if slot != Some(method) => self.forget(method, id),
                (_, Some(cm)) => whole.push((k, cm)),
                (_, None) => {}
            }
        }
        let sizes =
            os::read_words_checked(&whole.iter().map(|&(_, cm)| cm + l.const_code_size.off).collect::<Vec<_>>());
        for (&(k, cm), word) in whole.iter().zip(sizes) {
            let Some(word) = word else { continue };
            let (id, method) = found[k];
            let size = l.const_code_size.unsigned(word);
            let m =
                MethodPointer { id, code_start: cm + l.const_size, code_size: size.min(u64::from(u32::MAX)) as u32 };
            self.named.insert(method, (m, self.collections, self.collections));
            out[k] = Some(m);
        }
        out
    }

    /// [`Self::lookup`] ahead of time for the `Method*`s of a round's samples, all at once:
    /// those named since the last collection need nothing; the others are checked, or pulled
    /// and named, in a few reads for all rather than one or two each. What no id is known for
    /// is left to `lookup` (and its rebuild).
    fn prefetch(&mut self, methods: &[u64]) {
        let now = self.collections;
        let (mut stale, mut new) = (Vec::new(), Vec::new());
        for &m in methods.iter().filter(|&&m| could_be_method(m)) {
            match self.named.get(&m) {
                Some(e) if e.1 == now => {}
                Some(e) => stale.push((e.0.id, m)),
                None => new.push(m),
            }
        }
        self.recheck(&stale, true);
        if new.iter().any(|m| !self.reverse.contains_key(m)) && !self.first_pull() {
            self.pull();
        }
        let found: Vec<(u64, u64)> = new.iter().filter_map(|&m| self.reverse.get(&m).map(|&id| (id, m))).collect();
        if !found.is_empty() {
            self.name_found(&found);
        }
    }
}

// SAFETY: the JNIEnv belongs to the processor thread, the only thread that uses this value
// after it is created there; it moves to the VMDeath thread only after the processor stopped,
// and JVMTI calls are valid from any attached thread.
unsafe impl Send for JvmtiMethods {}

impl JvmtiMethods {
    /// `code` and `layout`: to name the `Method*`s of hpm's own stack walker, when it runs.
    pub fn new(jvmti: Jvmti, jni: *mut JNIEnv, walker: Option<(&'static CodeEvents, &'static Layout)>) -> JvmtiMethods {
        let pointers = walker.map(|(code, layout)| {
            match KEPT.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some(mut kept) => {
                    // Collections between sessions went unseen: check the entries again (the
                    // unknown `Method*`s stay so for their minute: UNKNOWN_KEEP_NS).
                    kept.collected();
                    kept.first_pull_ns = 0;
                    kept
                }
                None => MethodPointers::new(code, layout),
            }
        });
        let mut known = DESCRIBED.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
        known.recheck_all();
        JvmtiMethods { jvmti, jni, known, pointers }
    }
}

/// The reverse map outlives sessions, as the code map and the symbol tables do: reading every
/// jmethodID again at each start cost each short session (the paired benchmark's are one
/// iteration long) ~10 ms.
static KEPT: Mutex<Option<MethodPointers>> = Mutex::new(None);

impl Drop for JvmtiMethods {
    fn drop(&mut self) {
        if let Some(p) = self.pointers.take() {
            *KEPT.lock().unwrap_or_else(|p| p.into_inner()) = Some(p);
        }
        *DESCRIBED.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::mem::take(&mut self.known));
    }
}

impl JavaMethods for JvmtiMethods {
    fn read_metadata(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        crate::os::read_checked(addr, buf)
    }

    fn describe(&mut self, id: u64) -> Option<MethodInfo> {
        let k = &mut self.known;
        if let Some((info, method)) = k.infos.get(&id) {
            if k.checked.contains_key(&id) {
                return Some(info.clone());
            }
            // A slot that could not be read (process_vm_readv refused) proves nothing.
            if method.is_some_and(|m| slot_holds(id, m)) {
                let info = info.clone();
                k.checked.insert(id, ());
                return Some(info);
            }
            // The slot holds another method now: its lines are not this one's either, and
            // what the last pull read of the slot is stale (the slot is read below instead).
            k.forget(&IntMap::from_iter([(id, ())]));
            if let Some(p) = &mut self.pointers {
                p.held.remove(&id);
            }
        }
        // The names here; the line tables and lines where `line` makes them.
        if k.infos.len() >= MAX_DESCRIBED {
            *k = Described::default();
        }
        // The slot as the last pull read it, else as it is now. A slot that changed since the
        // pull makes a name kept with a `Method*` its id no longer holds: the check at its
        // next session's first use names it again, reading the slot itself.
        let pulled = self.pointers.as_ref().and_then(|p| p.held.get(&id).copied());
        let method = pulled.or_else(|| os::read_words_checked(&[id])[0]);
        let info = self.ask(id)?;
        self.known.infos.insert(id, (info.clone(), method));
        self.known.checked.insert(id, ());
        Some(info)
    }

    fn line(&mut self, id: u64, bci: i32) -> i32 {
        if let Some(&l) = self.known.memo.get(&(id, bci)) {
            return l;
        }
        let jvmti = self.jvmti;
        if self.known.lines.len() >= MAX_DESCRIBED && !self.known.lines.contains_key(&id) {
            self.known.lines.clear();
        }
        let table = self.known.lines.entry(id).or_insert_with(|| {
            let mut t = jvmti.line_number_table(id as jmethodID).unwrap_or_default();
            t.sort_unstable();
            t
        });
        let l = line_for_bci(table, bci);
        if self.known.memo.len() >= MAX_DESCRIBED {
            self.known.memo.clear();
        }
        self.known.memo.insert((id, bci), l);
        l
    }

    fn collected(&mut self) {
        if let Some(p) = &mut self.pointers {
            p.collected();
        }
    }

    fn by_pointer(&mut self, method: u64) -> Option<MethodPointer> {
        self.pointers.as_mut()?.lookup(method)
    }

    fn prefetch_pointers(&mut self, methods: &[u64]) {
        if let Some(p) = &mut self.pointers {
            p.prefetch(methods);
        }
    }
}

impl JvmtiMethods {
    /// Reads every jmethodID's slot now, before sampling starts, rather than at the first
    /// interpreted frame while samples pile up (once per process: the map is kept).
    pub fn preload(&mut self) {
        if let Some(p) = &mut self.pointers {
            p.first_pull();
        }
    }

    /// CPU time this session spent reading every jmethodID's slot for the first time (the
    /// map is then kept for the process's later sessions), in ns.
    pub fn first_pull_ns(&self) -> u64 {
        self.pointers.as_ref().map_or(0, |p| p.first_pull_ns)
    }

    /// Class, name, descriptor, source file and modifiers of method `id`, from JVMTI.
    fn ask(&mut self, id: u64) -> Option<MethodInfo> {
        let m = id as jmethodID;
        // JDK 17+ checks jmethodIDs (a method of an unloaded class gives INVALID_METHODID).
        let (name, descriptor) = self.jvmti.method_name(m).ok()?;
        let class = self.jvmti.method_declaring_class(m).ok()?;
        let sig = self.jvmti.class_signature(class).unwrap_or_default();
        let source_file = self.jvmti.source_file_name(class).ok();
        delete_local_ref(self.jni, class);
        let (class_name, hidden) = class_name_from_signature(&sig);
        Some(MethodInfo {
            class_name: class_name.into(),
            name: name.into(),
            descriptor: descriptor.into(),
            source_file: source_file.map(Into::into),
            modifiers: self.jvmti.method_modifiers(m).unwrap_or(0) as u32,
            hidden,
        })
    }
}

/// Whether a word could be a `Method*`: metaspace blocks are word-aligned, never in the first
/// page.
fn could_be_method(word: u64) -> bool {
    word >= 4096 && word.is_multiple_of(8)
}

/// Whether jmethodID `id`'s slot holds `method` (not unloaded, not redefined since).
fn slot_holds(id: u64, method: u64) -> bool {
    slots_hold(&[(id, method)])[0] == Some(true)
}

/// [`slot_holds`] for many (id, `Method*`) pairs, one read per 1,024; None where the slot
/// could not be read (which proves nothing).
fn slots_hold(pairs: &[(u64, u64)]) -> Vec<Option<bool>> {
    let ids: Vec<u64> = pairs.iter().map(|&(id, _)| id).collect();
    os::read_words_checked(&ids).into_iter().zip(pairs).map(|(slot, &(_, m))| slot.map(|s| s == m)).collect()
}

/// The line of the last entry (sorted by start bci) starting at or before `bci`.
fn line_for_bci(table: &[(i64, i32)], bci: i32) -> i32 {
    let i = table.partition_point(|(start, _)| *start <= i64::from(bci));
    if i == 0 {
        -1
    } else {
        table[i - 1].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpm_capture::hotspot::{CodeStart, Int, NmethodTest};

    /// JDK 17's layout on x86-64; only the `Method` and `ConstMethod` fields matter here.
    fn layout() -> Layout {
        let int = |off, width| Int { off, width };
        Layout {
            code_heaps: 0,
            interpreter_code: 0,
            call_stub_return: 0,
            array_len: 0,
            array_data: 8,
            heap_memory: 0x10,
            heap_segmap: 0x60,
            heap_log2_segment: int(0xb0, 4),
            vs_high: 0x18,
            vs_low: 0x10,
            heap_block_size: 16,
            block_used: int(8, 1),
            queue_buffer: 8,
            queue_limit: int(0x14, 4),
            blob_size: int(12, 4),
            blob_frame_size: int(28, 4),
            blob_frame_complete: int(20, 4),
            blob_code: CodeStart::Pointer(32),
            nmethod_method: 112,
            nmethod_test: NmethodTest::Kind { field: int(8, 1), nmethod: 1 },
            thread_anchor: 0x2f0,
            anchor_sp: 0,
            anchor_pc: 8,
            anchor_fp: 16,
            thread_stack_base: 0x1b8,
            thread_stack_size: 0x1c0,
            wrapper_anchor: 0,
            method_const: 8,
            const_code_size: int(0x2c, 2),
            const_size: 0x38,
            interp_sender_sp: -1,
            interp_method: -3,
            interp_bcp: -8,
            entry_call_wrapper: -6,
        }
    }

    /// A fake `Method` (its `ConstMethod` pointer at 8) and `ConstMethod` (code size at 0x2c)
    /// in this process's memory.
    struct FakeMethod {
        method: Box<[u64; 4]>,
        cm: Box<[u64; 8]>,
    }

    impl FakeMethod {
        fn new(code_size: u16) -> FakeMethod {
            let mut cm = Box::new([0u64; 8]);
            cm[0x2c / 8] = u64::from(code_size) << 32; // bytes 0x2c..0x2e of the object
            let mut method = Box::new([0u64; 4]);
            method[1] = cm.as_ptr() as u64;
            FakeMethod { method, cm }
        }

        fn addr(&self) -> u64 {
            self.method.as_ptr() as u64
        }
    }

    fn pointers(code: &'static CodeEvents) -> MethodPointers {
        MethodPointers::new(code, Box::leak(Box::new(layout())))
    }

    #[test]
    fn method_pointers_are_checked_again_at_once_after_a_collection() {
        let (a, b) = (FakeMethod::new(10), FakeMethod::new(20));
        // A jmethodID is a slot holding its Method*.
        let mut slot = Box::new(a.addr());
        let id = &*slot as *const u64 as u64;
        let code: &'static CodeEvents = Box::leak(Box::default());
        code.add_method_ids(&[id as jmethodID]);
        let mut p = pointers(code);
        let named = p.lookup(a.addr()).expect("named through its id's slot");
        assert_eq!(named, MethodPointer { id, code_start: a.cm.as_ptr() as u64 + 0x38, code_size: 10 });
        assert_eq!(p.held.get(&id), Some(&a.addr()), "what naming the id keeps, without a read");

        // A collection: an answer asked for since the last one is read again at once, and
        // one still held is current; one not asked for is left for its next use.
        p.collected();
        assert_eq!(p.named.get(&a.addr()).map(|e| e.1), Some(p.collections));
        p.collected();
        assert_eq!(p.named.get(&a.addr()).map(|e| e.1), Some(p.collections - 1), "not asked for since");
        assert_eq!(p.lookup(a.addr()).map(|m| m.id), Some(id), "checked at its use");

        // The slot now holds another method (a's class unloaded, the slot reused): a is
        // forgotten at the next collection, not named as b's id.
        *slot = b.addr();
        std::hint::black_box(&slot); // the store is read by the kernel only
        p.collected();
        assert!(!p.named.contains_key(&a.addr()) && !p.reverse.contains_key(&a.addr()));
        assert_eq!(p.held.get(&id), None, "the slot's old content is not kept for naming");
        assert_eq!(p.lookup(a.addr()), None, "a full rebuild finds no id for it");
        assert!(p.unknown.contains_key(&a.addr()), "remembered: not rebuilt for again");
        assert_eq!(p.lookup(b.addr()).map(|m| (m.id, m.code_size)), Some((id, 20)));
        assert_eq!(p.held.get(&id), Some(&b.addr()));
        // Not asked for again: forgotten after a few collections, named afresh when asked.
        for _ in 0..=KEEP_UNASKED {
            p.collected();
        }
        assert!(p.named.is_empty());
        assert_eq!(p.lookup(b.addr()).map(|m| m.id), Some(id));
        drop(slot);
    }

    #[test]
    fn a_rounds_methods_are_named_ahead_all_at_once() {
        let (a, b, c) = (FakeMethod::new(5), FakeMethod::new(6), FakeMethod::new(7));
        let mut slots = [Box::new(a.addr()), Box::new(b.addr()), Box::new(c.addr())];
        let ids: Vec<u64> = slots.iter().map(|s| &**s as *const u64 as u64).collect();
        let code: &'static CodeEvents = Box::leak(Box::default());
        code.add_method_ids(&ids.iter().map(|&i| i as jmethodID).collect::<Vec<_>>());
        let mut p = pointers(code);
        p.prefetch(&[a.addr(), b.addr(), 0, 3, a.addr() + 1]);
        let sizes = |p: &MethodPointers| [&a, &b, &c].map(|m| p.named.get(&m.addr()).map(|e| e.0.code_size));
        assert_eq!(sizes(&p), [Some(5), Some(6), None], "named ahead: a and b, not c nor what is no Method*");
        assert_eq!(p.named[&a.addr()].0.id, ids[0]);
        // After a collection: checked again ahead, and a method whose slot now holds another
        // is forgotten.
        *slots[1] = c.addr();
        std::hint::black_box(&slots); // the store is read by the kernel only
        p.collected();
        p.collected();
        p.prefetch(&[a.addr(), b.addr(), c.addr()]);
        assert_eq!(p.named.get(&a.addr()).map(|e| e.1), Some(p.collections), "checked as of now");
        assert!(!p.named.contains_key(&b.addr()), "b's slot holds c now");
        // c's id (slot 2) still holds c: named; the lookups then need no read.
        assert_eq!(sizes(&p)[2], Some(7));
        assert_eq!(p.lookup(c.addr()).map(|m| m.id), Some(ids[2]));
    }

    #[test]
    fn what_cannot_be_a_method_costs_no_rebuild() {
        let a = FakeMethod::new(3);
        let slot = Box::new(a.addr());
        let code: &'static CodeEvents = Box::leak(Box::default());
        code.add_method_ids(&[&*slot as *const u64 as jmethodID]);
        let mut p = pointers(code);
        assert!(p.lookup(a.addr()).is_some());
        p.last_rebuild_ns = 0;
        // A walk that met no method (0), or a word that is no metaspace address.
        for bogus in [0, 8, a.addr() + 3] {
            assert_eq!(p.lookup(bogus), None);
        }
        assert_eq!(p.last_rebuild_ns, 0, "no rebuild of the map");
        assert!(p.unknown.is_empty(), "nothing remembered as unknown");
        drop(slot);
    }

    #[test]
    fn a_new_session_checks_every_name_and_drops_those_of_unloaded_methods() {
        let (a, b, c) = (FakeMethod::new(1), FakeMethod::new(2), FakeMethod::new(3));
        let mut slots = [Box::new(a.addr()), Box::new(b.addr()), Box::new(c.addr())];
        let ids: Vec<u64> = slots.iter().map(|s| &**s as *const u64 as u64).collect();
        let mut d = Described::default();
        for (&id, m) in ids.iter().zip([&a, &b, &c]) {
            d.infos.insert(id, (MethodInfo::java("C", "m", "()V"), Some(m.addr())));
            d.lines.insert(id, vec![(0, 1)]);
            d.memo.insert((id, 0), 1);
        }
        // Only a was used by the last session; c was not, and still holds.
        d.checked.insert(ids[0], ());
        // b's class is unloaded: its slot cleared (HotSpot's clear_jmethod_ids).
        *slots[1] = 0;
        std::hint::black_box(&slots); // the store is read by the kernel only
        d.recheck_all();
        for k in [0, 2] {
            assert!(d.checked.contains_key(&ids[k]), "name {k} checked at once");
            assert!(
                d.infos.contains_key(&ids[k]) && d.lines.contains_key(&ids[k]) && d.memo.contains_key(&(ids[k], 0))
            );
        }
        assert!(!d.infos.contains_key(&ids[1]), "an unloaded method's name is dropped");
        assert!(!d.lines.contains_key(&ids[1]) && !d.memo.contains_key(&(ids[1], 0)), "and its lines");
        assert!(!d.checked.contains_key(&ids[1]));
    }

    #[test]
    fn lines_by_bci() {
        let t = [(0, 10), (5, 11), (9, 14)];
        assert_eq!(super::line_for_bci(&t, 0), 10);
        assert_eq!(super::line_for_bci(&t, 7), 11);
        assert_eq!(super::line_for_bci(&t, 100), 14);
        assert_eq!(super::line_for_bci(&[], 3), -1);
    }
}
