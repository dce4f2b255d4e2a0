//! VM threads' whole names read from HotSpot's own structures, off the signal path and without a
//! safepoint: the kernel keeps 15 bytes of a name (`C2 CompilerThre`), the VM the whole.
//!
//! - Java threads the VM hides from JVMTI (compiler threads, `Monitor Deflation Thread`,
//!   `Notification Thread`): the VM's list of `JavaThread`s (`ThreadsSMRSupport::
//!   _java_thread_list`), each one's `java.lang.Thread` (`JavaThread::_threadObj`) and its `name`
//!   String in the heap.
//! - Other HotSpot threads (GC workers, the VM thread): the list of `NonJavaThread`s
//!   (`NonJavaThread::_the_list`, linked by the word that follows `Thread`), each `NamedThread`'s
//!   C string `_name`; the one `WatcherThread` (`WatcherThread::_watcher_thread`) is named by the
//!   constant its `name()` returns.
//!
//! Nothing here holds the VM's locks: a list may change, a thread end or an object move while it
//! is read. Every read goes through [`Peek`], which never faults (the agent's reads it
//! with `process_vm_readv`); every loop and copy is bounded; and a name is taken only for a
//! thread whose kernel id (`OSThread::_thread_id`) is the one asked for and when it begins with
//! the kernel's name of that thread, so a read of moved or freed memory names nothing.

use hpm_capture::hotspot::VmTable;
use hpm_profile::limits::MAX_THREAD_NAME_BYTES;

/// Reads `buf.len()` bytes at `addr`, or says it could not (never faults).
pub trait Peek {
    fn bytes(&self, addr: u64, buf: &mut [u8]) -> bool;

    fn word(&self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        self.bytes(addr, &mut b).then(|| u64::from_le_bytes(b))
    }
    fn u32(&self, addr: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        self.bytes(addr, &mut b).then(|| u32::from_le_bytes(b))
    }
}

/// Threads of either list looked at, at most (a JVM with more keeps the rest's kernel names).
pub const MAX_LISTED: usize = 1 << 16;
/// `JavaThread*`s read at once from the VM's list.
const LIST_CHUNK: usize = 512;
/// The name HotSpot's `WatcherThread::name()` returns (a constant: the class has no name field).
pub const WATCHER_NAME: &str = "VM Periodic Task Thread";

/// Where a `java.lang.Thread`'s name is, in the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JavaNameLayout {
    /// `java.lang.Thread.name`, `String.value` and `String.coder`: field offsets.
    pub thread_name: u64,
    pub string_value: u64,
    pub string_coder: u64,
    /// Compressed oops: where the base (an `address`) and the shift (an `int`) are; None when
    /// references are full words.
    pub narrow: Option<(u64, u64)>,
    /// An array's length.
    pub array_length: u64,
    /// Generational ZGC: references are colored pointers (`zpointer`), the address shifted
    /// left past the color bits; where the shift of the pointers good to load now is
    /// (`ZPointerLoadShift`, a `size_t`).
    pub zpointers: Option<u64>,
}

impl JavaNameLayout {
    /// Where a byte array's elements may start: right after its length (JDK 22 on), or there
    /// rounded to a word (before). The name's prefix tells which held.
    fn array_bases(&self) -> [u64; 2] {
        let after = self.array_length + 4;
        [after, (after + 7) & !7]
    }
}

/// The offsets and statics the names are read by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameLayout {
    /// `Thread::_osthread` and `OSThread::_thread_id`.
    pub osthread: u64,
    pub thread_id: u64,
    /// The address of `ThreadsSMRSupport::_java_thread_list`, and `ThreadsList`'s `_length`
    /// and `_threads`.
    pub java_list: Option<(u64, u64, u64)>,
    /// `JavaThread::_threadObj` (an OopHandle: a pointer to the oop) and the heap's layout.
    pub thread_obj: u64,
    pub java_name: Option<JavaNameLayout>,
    /// The address of `NonJavaThread::_the_list` (its first word is the head) and the offset of
    /// `NonJavaThread::_next`.
    pub non_java: Option<(u64, u64)>,
    /// `NamedThread::_name`.
    pub named_name: Option<u64>,
    /// The address of `WatcherThread::_watcher_thread`.
    pub watcher: Option<u64>,
}

impl NameLayout {
    /// The layout from the VM's tables, `symbol` (a libjvm static's address, from its symbol
    /// table: what VMStructs does not export), `flag` (an integral `-XX` flag's value) and `mem`
    /// (the `int` statics that hold field offsets are read once here). None when a thread's
    /// kernel id cannot be read; a list or a heap that cannot be read is left out.
    pub fn from_table(
        t: &VmTable,
        symbol: impl Fn(&str) -> Option<u64>,
        flag: impl Fn(&str) -> Option<u64>,
        mem: &impl Peek,
    ) -> Option<NameLayout> {
        let field = |names: &[&str]| names.iter().find_map(|n| t.fields.get(*n).copied());
        let stat = |names: &[&str]| names.iter().find_map(|n| t.statics.get(*n).copied());
        let on = |name: &str| flag(name).is_some_and(|v| v != 0);
        // A field offset held in an `int` static (`java_lang_Thread::_name_offset`).
        let offset = |name: &str| mem.u32(symbol(name)?).map(u64::from).filter(|&o| o > 0 && o < 4096);
        // `_osthread` is `Thread`'s; JDK 17 lists it under `JavaThread`.
        let osthread = field(&["Thread::_osthread", "JavaThread::_osthread"])?;
        let thread_id = field(&["OSThread::_thread_id"])?;
        let java_list = (|| {
            Some((
                stat(&["ThreadsSMRSupport::_java_thread_list"])?,
                field(&["ThreadsList::_length"])?,
                field(&["ThreadsList::_threads"])?,
            ))
        })();
        let narrow = if on("UseCompressedOops") {
            Some((
                stat(&["CompressedOops::_base", "CompressedOops::_narrow_oop._base"]),
                stat(&["CompressedOops::_shift", "CompressedOops::_narrow_oop._shift"]),
            ))
        } else {
            None
        };
        // Generational ZGC (JDK 21 on, the only ZGC from JDK 24): its pointer-load shift.
        let zpointers = (on("UseZGC") && flag("ZGenerational").is_none_or(|g| g != 0))
            .then(|| symbol("ZPointerLoadShift"))
            .flatten();
        let java_name = (|| {
            let narrow = match narrow {
                Some((b, s)) => Some((b?, s?)),
                None => None,
            };
            let array_length = if on("UseCompactObjectHeaders") {
                8
            } else if on("UseCompressedClassPointers") {
                12
            } else {
                16
            };
            Some(JavaNameLayout {
                thread_name: offset("_ZN16java_lang_Thread12_name_offsetE")?,
                string_value: offset("_ZN16java_lang_String13_value_offsetE")?,
                string_coder: offset("_ZN16java_lang_String13_coder_offsetE")?,
                narrow,
                array_length,
                zpointers,
            })
        })();
        // `NonJavaThread`'s one field, `_next`, follows `Thread`'s.
        let next = t.sizes.get("Thread").copied().filter(|&s| t.sizes.get("NonJavaThread") == Some(&(s + 8)));
        Some(NameLayout {
            osthread,
            thread_id,
            java_list,
            thread_obj: field(&["JavaThread::_threadObj"]).unwrap_or(0),
            java_name: java_name.filter(|_| t.fields.contains_key("JavaThread::_threadObj")),
            non_java: symbol("_ZN13NonJavaThread9_the_listE").zip(next),
            named_name: field(&["NamedThread::_name"]),
            watcher: symbol("_ZN13WatcherThread15_watcher_threadE"),
        })
    }
}

/// The whole names of the threads in `wanted` (kernel id, kernel name) the VM's structures
/// give, each beginning with its kernel name. Bounded: [`MAX_LISTED`] threads of each list, one
/// name of [`MAX_THREAD_NAME_BYTES`] at most each.
pub fn whole_names(layout: &NameLayout, mem: &impl Peek, wanted: &[(i32, String)]) -> Vec<(i32, String)> {
    let mut found: Vec<(i32, String)> = Vec::new();
    let take = |tid: i32, name: Option<String>, found: &mut Vec<(i32, String)>| {
        let Some(name) = name else { return };
        if let Some((_, comm)) = wanted.iter().find(|(t, _)| *t == tid) {
            if plausible(&name, comm) && !found.iter().any(|(t, _)| *t == tid) {
                found.push((tid, name));
            }
        }
    };
    let asked = |tid: i32, found: &[(i32, String)]| {
        wanted.iter().any(|(t, _)| *t == tid) && !found.iter().any(|(t, _)| *t == tid)
    };
    if let (Some((list, length, threads)), Some(j)) = (layout.java_list, &layout.java_name) {
        let list = mem.word(list).filter(|&l| l != 0);
        let len = list.and_then(|l| mem.u32(l.wrapping_add(length))).map_or(0, |n| (n as usize).min(MAX_LISTED));
        let array = list.and_then(|l| mem.word(l.wrapping_add(threads))).unwrap_or(0);
        let mut chunk = [0u8; LIST_CHUNK * 8];
        let mut at = 0;
        while array != 0 && at < len && found.len() < wanted.len() {
            let n = (len - at).min(LIST_CHUNK);
            if !mem.bytes(array.wrapping_add(at as u64 * 8), &mut chunk[..n * 8]) {
                break;
            }
            for w in chunk[..n * 8].chunks_exact(8) {
                let thread = u64::from_le_bytes(w.try_into().unwrap_or_default());
                let Some(tid) = kernel_id(layout, mem, thread) else { continue };
                if asked(tid, &found) {
                    take(tid, java_name(layout.thread_obj, j, mem, thread), &mut found);
                }
            }
            at += n;
        }
    }
    if let Some((list, next)) = layout.non_java {
        let watcher = layout.watcher.and_then(|w| mem.word(w)).unwrap_or(0);
        let mut thread = mem.word(list).unwrap_or(0);
        for _ in 0..MAX_LISTED {
            if thread == 0 || found.len() == wanted.len() {
                break;
            }
            if let Some(tid) = kernel_id(layout, mem, thread).filter(|&tid| asked(tid, &found)) {
                let name = if thread == watcher {
                    Some(WATCHER_NAME.to_string())
                } else {
                    layout.named_name.and_then(|o| c_string(mem, mem.word(thread.wrapping_add(o))?))
                };
                take(tid, name, &mut found);
            }
            thread = mem.word(thread.wrapping_add(next)).unwrap_or(0);
        }
    }
    found
}

/// A thread's kernel id, from its `OSThread`.
fn kernel_id(layout: &NameLayout, mem: &impl Peek, thread: u64) -> Option<i32> {
    let os = mem.word(thread.checked_add(layout.osthread)?).filter(|&o| o != 0)?;
    mem.u32(os.checked_add(layout.thread_id)?).map(|t| t as i32).filter(|&t| t > 0)
}

/// Whether `name` may be the whole of the kernel's `comm`: it begins with it, and holds no
/// control character and no more than [`MAX_THREAD_NAME_BYTES`].
fn plausible(name: &str, comm: &str) -> bool {
    name.len() <= MAX_THREAD_NAME_BYTES && name.starts_with(comm) && !name.chars().any(char::is_control)
}

/// The NUL-terminated string at `addr`, up to [`MAX_THREAD_NAME_BYTES`].
fn c_string(mem: &impl Peek, addr: u64) -> Option<String> {
    if addr == 0 {
        return None;
    }
    let mut buf = [0u8; MAX_THREAD_NAME_BYTES + 1];
    // The string may end just before an unmapped page: read to the page's end first.
    let first = ((4096 - (addr & 4095)) as usize).min(buf.len());
    if !mem.bytes(addr, &mut buf[..first]) {
        return None;
    }
    let len = match buf[..first].iter().position(|&b| b == 0) {
        Some(n) => n,
        None => {
            if !mem.bytes(addr.wrapping_add(first as u64), &mut buf[first..]) {
                return None;
            }
            buf.iter().position(|&b| b == 0)?
        }
    };
    std::str::from_utf8(&buf[..len]).ok().map(str::to_string)
}

/// The `name` of the `java.lang.Thread` of the `JavaThread` at `thread`.
fn java_name(thread_obj: u64, j: &JavaNameLayout, mem: &impl Peek, thread: u64) -> Option<String> {
    let handle = mem.word(thread.checked_add(thread_obj)?).filter(|&h| h != 0)?;
    let object = full_reference(j, mem, mem.word(handle)?)?;
    let string = reference(j, mem, object.checked_add(j.thread_name)?)?;
    let value = reference(j, mem, string.checked_add(j.string_value)?)?;
    let mut coder = [0u8; 1];
    if !mem.bytes(string.checked_add(j.string_coder)?, &mut coder) {
        return None;
    }
    let len = mem.u32(value.checked_add(j.array_length)?)? as usize;
    if len == 0 || len > 2 * MAX_THREAD_NAME_BYTES {
        return None;
    }
    let mut buf = [0u8; 2 * MAX_THREAD_NAME_BYTES];
    let bases = j.array_bases();
    let decode = |base: u64, buf: &mut [u8]| -> Option<String> {
        if !mem.bytes(value.checked_add(base)?, &mut buf[..len]) {
            return None;
        }
        match coder[0] {
            0 => Some(buf[..len].iter().map(|&b| char::from(b)).collect()),
            1 if len.is_multiple_of(2) => {
                let units: Vec<u16> = buf[..len].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                String::from_utf16(&units).ok()
            }
            _ => None,
        }
    };
    let first = decode(bases[0], &mut buf);
    if bases[0] == bases[1] {
        return first;
    }
    // Two places the elements may start: the one whose text reads as a name (a word of
    // header bytes before it, or a length, reads as control characters).
    match first {
        Some(n) if !n.chars().any(char::is_control) => Some(n),
        _ => decode(bases[1], &mut buf),
    }
}

/// The object a reference field at `addr` points to (decoding a compressed one).
fn reference(j: &JavaNameLayout, mem: &impl Peek, addr: u64) -> Option<u64> {
    let r = match j.narrow {
        Some((base, shift)) => {
            let narrow = u64::from(mem.u32(addr)?);
            let (base, shift) = (mem.word(base)?, mem.u32(shift)?);
            (narrow != 0 && shift < 8).then(|| base.wrapping_add(narrow << shift))?
        }
        None => return full_reference(j, mem, mem.word(addr)?),
    };
    (r != 0).then_some(r)
}

/// The object a full-width reference `raw` points to: itself, or a generational ZGC colored
/// pointer uncolored. One that is good to load has the remapped bit just below the current
/// load shift set (`ZPointerLoadShiftTable`: the shift is one past that bit); another (not
/// remapped since the last relocation: it may name where the object was) or a null, None.
fn full_reference(j: &JavaNameLayout, mem: &impl Peek, raw: u64) -> Option<u64> {
    let Some(at) = j.zpointers else { return (raw != 0).then_some(raw) };
    let shift = mem.word(at).filter(|s| (9..32).contains(s))?;
    if (raw >> (shift - 1)) & 1 == 0 {
        return None;
    }
    Some(raw >> shift).filter(|&r| r != 0)
}

#[cfg(test)]
#[path = "hotspot_names_tests.rs"]
mod tests;
