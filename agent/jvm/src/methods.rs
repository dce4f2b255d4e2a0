//! Method names and line tables from JVMTI, for the processor (an attached daemon thread).

use std::sync::Mutex;

use hpm_core::hash::IntMap;
use hpm_core::hotspot::Layout;
use hpm_core::model::MethodInfo;
use hpm_core::resolve::{JavaMethods, MethodPointer};
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
/// when named, and a later session checks the slot (one read) at its first use of the id;
/// a different `Method*` is named again, lines too. Bounded: started again past
/// `MAX_DESCRIBED` entries.
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

const MAX_DESCRIBED: usize = 1 << 20;

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
    /// Each answer with the collection count when it was last checked.
    named: IntMap<u64, (MethodPointer, u64)>,
    /// Collections seen (sessions' starts count as one: those between them went unseen).
    collections: u64,
    last_rebuild_ns: u64,
    /// CPU time of the first reading of every id (once per process), in ns.
    first_pull_ns: u64,
}

/// Full rebuilds of the reverse map are at least this far apart.
const REBUILD_NS: u64 = 5_000_000_000;

impl MethodPointers {
    fn pull(&mut self) {
        let mut ids = Vec::new();
        self.seen = self.code.method_ids_since(self.seen, &mut ids);
        for (id, m) in ids.iter().zip(os::read_words_checked(&ids)) {
            if let Some(m) = m.filter(|&m| m != 0) {
                self.reverse.insert(m, *id);
            }
        }
    }

    /// After a collection, every answer is checked again at its next use: only the methods
    /// still being sampled cost a read.
    fn collected(&mut self) {
        self.collections += 1;
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

    fn lookup(&mut self, method: u64) -> Option<MethodPointer> {
        // An answer is checked against its id's slot when first given, and again at its first
        // use after each collection (`collected`): a method unloaded since (its memory perhaps
        // reused by another) or redefined is not named by its old id.
        if let Some(&(m, checked)) = self.named.get(&method) {
            if checked == self.collections {
                return Some(m);
            }
            if slot_holds(m.id, method) {
                self.named.insert(method, (m, self.collections));
                return Some(m);
            }
            self.named.remove(&method);
            self.reverse.remove(&method);
        }
        if !self.reverse.contains_key(&method) && !self.first_pull() {
            self.pull();
        }
        if !self.reverse.contains_key(&method) {
            let now = os::now_ticks();
            if now.saturating_sub(self.last_rebuild_ns) < REBUILD_NS {
                return None;
            }
            self.last_rebuild_ns = now;
            self.seen = 0;
            self.reverse.clear();
            self.pull();
        }
        let id = *self.reverse.get(&method)?;
        let l = self.layout;
        // The id's slot and the method's ConstMethod* in one read.
        let [slot, cm] = os::read_words_checked(&[id, method + l.method_const])[..] else { return None };
        if slot != Some(method) {
            self.reverse.remove(&method);
            return None;
        }
        let cm = cm?;
        let word = os::read_words_checked(&[cm + l.const_code_size.off])[0]?;
        let size = l.const_code_size.unsigned(word);
        let m = MethodPointer { id, code_start: cm + l.const_size, code_size: size.min(u64::from(u32::MAX)) as u32 };
        self.named.insert(method, (m, self.collections));
        Some(m)
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
                    // Collections between sessions went unseen: check every entry once more.
                    kept.collected();
                    kept.first_pull_ns = 0;
                    kept
                }
                None => MethodPointers {
                    code,
                    layout,
                    seen: 0,
                    reverse: IntMap::default(),
                    named: IntMap::default(),
                    collections: 0,
                    last_rebuild_ns: 0,
                    first_pull_ns: 0,
                },
            }
        });
        let mut known = DESCRIBED.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
        known.checked.clear();
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
            // The slot holds another method now: its lines are not this one's either.
            k.infos.remove(&id);
            k.lines.remove(&id);
            k.memo.retain(|&(m, _), _| m != id);
        }
        if k.infos.len() >= MAX_DESCRIBED || k.memo.len() >= MAX_DESCRIBED {
            *k = Described::default();
        }
        let method = os::read_words_checked(&[id])[0];
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
        let table = self.known.lines.entry(id).or_insert_with(|| {
            let mut t = jvmti.line_number_table(id as jmethodID).unwrap_or_default();
            t.sort_unstable();
            t
        });
        let l = line_for_bci(table, bci);
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
            class_name,
            name,
            descriptor,
            source_file,
            modifiers: self.jvmti.method_modifiers(m).unwrap_or(0) as u32,
            hidden,
        })
    }
}

/// Whether jmethodID `id`'s slot holds `method` (not unloaded, not redefined since).
fn slot_holds(id: u64, method: u64) -> bool {
    os::read_words_checked(&[id])[0] == Some(method)
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
    #[test]
    fn lines_by_bci() {
        let t = [(0, 10), (5, 11), (9, 14)];
        assert_eq!(super::line_for_bci(&t, 0), 10);
        assert_eq!(super::line_for_bci(&t, 7), 11);
        assert_eq!(super::line_for_bci(&t, 100), 14);
        assert_eq!(super::line_for_bci(&[], 3), -1);
    }
}
