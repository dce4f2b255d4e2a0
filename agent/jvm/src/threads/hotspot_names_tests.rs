use super::*;
use hpm_capture::hotspot::VmTable;

/// A process's memory: readable bytes from `base`, nothing else.
struct Fake {
    base: u64,
    mem: Vec<u8>,
}

impl Peek for Fake {
    fn bytes(&self, addr: u64, buf: &mut [u8]) -> bool {
        let Some(at) = addr.checked_sub(self.base).map(|a| a as usize) else { return false };
        match self.mem.get(at..at + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
}

impl Fake {
    fn new() -> Fake {
        Fake { base: 0x10_0000, mem: vec![0; 0x4000] }
    }
    fn put(&mut self, addr: u64, b: &[u8]) {
        let at = (addr - self.base) as usize;
        self.mem[at..at + b.len()].copy_from_slice(b);
    }
    fn set_word(&mut self, addr: u64, v: u64) {
        self.put(addr, &v.to_le_bytes());
    }
    fn set_int(&mut self, addr: u64, v: u32) {
        self.put(addr, &v.to_le_bytes());
    }
}

const B: u64 = 0x10_0000;

/// Offsets as JDK 17's, statics at fixed addresses of the fake.
fn layout() -> NameLayout {
    NameLayout {
        osthread: 560,
        thread_id: 208,
        java_list: Some((B, 4, 16)),
        thread_obj: 648,
        java_name: Some(JavaNameLayout {
            thread_name: 16,
            string_value: 12,
            string_coder: 20,
            narrow: Some((B + 0x10, B + 0x18)),
            array_length: 12,
            zpointers: None,
        }),
        non_java: Some((B + 0x20, 640)),
        named_name: Some(656),
        watcher: Some(B + 0x28),
    }
}

/// A thread at `t` (its OSThread at `t + 0x300`) with kernel id `tid`.
fn thread(m: &mut Fake, t: u64, tid: u32) {
    m.set_word(t + 560, t + 0x300);
    m.set_int(t + 0x300 + 208, tid);
}

/// A java.lang.Thread at `obj` named `name` (Latin-1 when `utf16` is false), its String at
/// `obj + 0x40` and the array at `obj + 0x80`; compressed references with base B, shift 3.
fn java_thread(m: &mut Fake, t: u64, tid: u32, obj: u64, name: &str, utf16: bool) {
    thread(m, t, tid);
    m.set_word(B + 0x10, B);
    m.set_int(B + 0x18, 3);
    m.set_word(t + 648, t + 0x3f0); // the OopHandle's slot
    m.set_word(t + 0x3f0, obj);
    let narrow = |a: u64| ((a - B) >> 3) as u32;
    m.set_int(obj + 16, narrow(obj + 0x40));
    m.set_int(obj + 0x40 + 12, narrow(obj + 0x80));
    let bytes: Vec<u8> =
        if utf16 { name.encode_utf16().flat_map(u16::to_le_bytes).collect() } else { name.bytes().collect() };
    m.put(obj + 0x40 + 20, &[u8::from(utf16)]);
    m.set_int(obj + 0x80 + 12, bytes.len() as u32);
    m.put(obj + 0x80 + 16, &bytes);
}

/// The VM's list of JavaThreads: `threads` in an array at B + 0x100.
fn java_list(m: &mut Fake, threads: &[u64]) {
    m.set_word(B, B + 0x40);
    m.set_int(B + 0x40 + 4, threads.len() as u32);
    m.set_word(B + 0x40 + 16, B + 0x100);
    for (i, t) in threads.iter().enumerate() {
        m.set_word(B + 0x100 + 8 * i as u64, *t);
    }
}

fn asked(list: &[(i32, &str)]) -> Vec<(i32, String)> {
    list.iter().map(|(t, n)| (*t, n.to_string())).collect()
}

#[test]
fn hidden_java_threads_are_named_from_their_thread_objects() {
    let mut m = Fake::new();
    java_thread(&mut m, B + 0x400, 71, B + 0x2000, "C2 CompilerThread0", false);
    java_thread(&mut m, B + 0x800, 72, B + 0x2200, "Notification Thread", true);
    java_thread(&mut m, B + 0xc00, 73, B + 0x2400, "main", false);
    java_list(&mut m, &[B + 0x400, B + 0x800, B + 0xc00]);
    let got = whole_names(&layout(), &m, &asked(&[(71, "C2 CompilerThre"), (72, "Notification Th")]));
    assert_eq!(got, asked(&[(71, "C2 CompilerThread0"), (72, "Notification Thread")]));
}

#[test]
fn a_name_that_does_not_begin_with_the_kernels_is_not_taken() {
    // The object moved and its place holds another thread's name: the kernel's tells.
    let mut m = Fake::new();
    java_thread(&mut m, B + 0x400, 71, B + 0x2000, "C1 CompilerThread3", false);
    java_list(&mut m, &[B + 0x400]);
    assert!(whole_names(&layout(), &m, &asked(&[(71, "C2 CompilerThre")])).is_empty());
    // An id the kernel gave another thread is not named either.
    assert!(whole_names(&layout(), &m, &asked(&[(70, "C1 CompilerThre")])).is_empty());
}

#[test]
fn named_threads_and_the_watcher_are_named_from_the_non_java_list() {
    let mut m = Fake::new();
    let (gc, watcher, vm) = (B + 0x1000, B + 0x1400, B + 0x1800);
    for (t, tid) in [(gc, 81), (watcher, 82), (vm, 83)] {
        thread(&mut m, t, tid);
    }
    m.set_word(B + 0x20, gc);
    m.set_word(gc + 640, watcher);
    m.set_word(watcher + 640, vm);
    m.set_word(B + 0x28, watcher);
    m.set_word(gc + 656, B + 0x3000);
    m.put(B + 0x3000, b"G1 Young RemSet Sampling\0");
    m.set_word(vm + 656, B + 0x3100);
    m.put(B + 0x3100, b"VM Thread\0");
    let wanted = asked(&[(81, "G1 Young RemSet"), (82, "VM Periodic Tas")]);
    let got = whole_names(&layout(), &m, &wanted);
    assert_eq!(got, asked(&[(81, "G1 Young RemSet Sampling"), (82, WATCHER_NAME)]));
}

#[test]
fn a_looping_list_and_unreadable_memory_end_the_reads() {
    let mut m = Fake::new();
    let gc = B + 0x1000;
    thread(&mut m, gc, 81);
    m.set_word(B + 0x20, gc);
    m.set_word(gc + 640, gc); // its own successor: read MAX_LISTED times at most, then given up
    m.set_word(gc + 656, B + 0x3ff8); // a name running past the end of readable memory
    m.put(B + 0x3ff8, b"G1 Young");
    // The Java list points past readable memory.
    m.set_word(B, B + 0x10_0000);
    assert!(whole_names(&layout(), &m, &asked(&[(81, "G1 Young RemSet")])).is_empty());
}

#[test]
fn a_byte_array_may_start_right_after_its_length() {
    // Compact headers (JDK 24 on): length at 8, elements at 12.
    let mut m = Fake::new();
    let (t, obj) = (B + 0x400, B + 0x2000);
    thread(&mut m, t, 71);
    m.set_word(B + 0x10, B);
    m.set_int(B + 0x18, 3);
    m.set_word(t + 648, t + 0x3f0);
    m.set_word(t + 0x3f0, obj);
    m.set_int(obj + 16, ((0x40 + obj - B) >> 3) as u32);
    m.set_int(obj + 0x40 + 12, ((0x80 + obj - B) >> 3) as u32);
    m.set_int(obj + 0x80 + 8, 18);
    m.put(obj + 0x80 + 12, b"C2 CompilerThread1");
    java_list(&mut m, &[t]);
    let mut l = layout();
    if let Some(j) = &mut l.java_name {
        j.array_length = 8;
    }
    assert_eq!(whole_names(&l, &m, &asked(&[(71, "C2 CompilerThre")])), asked(&[(71, "C2 CompilerThread1")]));
}

#[test]
fn generational_zgc_references_are_uncolored() {
    let mut m = Fake::new();
    let (t, obj) = (B + 0x400, B + 0x2000);
    thread(&mut m, t, 71);
    // Colored: the address shifted past the remapped bit set (bit 10: shift 11), colors below.
    let color = |a: u64| (a << 11) | (1 << 10) | 0b1011_0011;
    m.set_word(t + 648, t + 0x3f0);
    m.set_word(t + 0x3f0, color(obj));
    m.set_word(obj + 16, color(obj + 0x40));
    m.set_word(obj + 0x40 + 12, color(obj + 0x80));
    m.set_int(obj + 0x80 + 12, 18);
    m.put(obj + 0x80 + 16, b"C2 CompilerThread2");
    java_list(&mut m, &[t]);
    m.set_word(B + 0x30, 11);
    let mut l = layout();
    if let Some(j) = &mut l.java_name {
        (j.narrow, j.zpointers) = (None, Some(B + 0x30));
    }
    assert_eq!(whole_names(&l, &m, &asked(&[(71, "C2 CompilerThre")])), asked(&[(71, "C2 CompilerThread2")]));
    // A pointer not remapped since the last relocation (another remapped bit): nothing is
    // read through it.
    m.set_word(t + 0x3f0, (obj << 12) | (1 << 11) | 0b1011_0011);
    assert!(whole_names(&l, &m, &asked(&[(71, "C2 CompilerThre")])).is_empty());
}

#[test]
fn the_layout_is_made_from_either_jdks_names() {
    // JDK 17 spells `_osthread` under JavaThread and CompressedOops' statics under `_narrow_oop`.
    let mut t = VmTable::default();
    for (k, v) in [
        ("JavaThread::_osthread", 560),
        ("OSThread::_thread_id", 208),
        ("ThreadsList::_length", 4),
        ("ThreadsList::_threads", 16),
        ("JavaThread::_threadObj", 648),
        ("NamedThread::_name", 656),
    ] {
        t.fields.insert(k.to_string(), v);
    }
    for (k, v) in [
        ("ThreadsSMRSupport::_java_thread_list", B),
        ("CompressedOops::_narrow_oop._base", B + 8),
        ("CompressedOops::_narrow_oop._shift", B + 16),
    ] {
        t.statics.insert(k.to_string(), v);
    }
    t.sizes.insert("Thread".to_string(), 640);
    t.sizes.insert("NonJavaThread".to_string(), 648);
    let mut m = Fake::new();
    let statics = [
        ("_ZN16java_lang_Thread12_name_offsetE", B + 0x100, 48),
        ("_ZN16java_lang_String13_value_offsetE", B + 0x104, 20),
        ("_ZN16java_lang_String13_coder_offsetE", B + 0x108, 16),
        ("_ZN13NonJavaThread9_the_listE", B + 0x110, 0),
        ("_ZN13WatcherThread15_watcher_threadE", B + 0x118, 0),
    ];
    for (_, at, v) in statics {
        m.set_int(at, v);
    }
    let symbol = |n: &str| statics.iter().find(|s| s.0 == n).map(|s| s.1);
    let flag = |n: &str| ["UseCompressedOops", "UseCompressedClassPointers"].contains(&n).then_some(1);
    let l = NameLayout::from_table(&t, symbol, flag, &m).expect("a layout");
    assert_eq!((l.osthread, l.thread_id, l.thread_obj), (560, 208, 648));
    assert_eq!(l.java_list, Some((B, 4, 16)));
    assert_eq!(l.non_java, Some((B + 0x110, 640)));
    assert_eq!((l.named_name, l.watcher), (Some(656), Some(B + 0x118)));
    let j = l.java_name.expect("the heap's layout");
    assert_eq!((j.thread_name, j.string_value, j.string_coder, j.array_length), (48, 20, 16, 12));
    assert_eq!((j.narrow, j.zpointers), (Some((B + 8, B + 16)), None));
    // A `NonJavaThread` with more than `_next` after `Thread`: its list is not walked.
    t.sizes.insert("NonJavaThread".to_string(), 656);
    assert_eq!(NameLayout::from_table(&t, symbol, flag, &m).expect("a layout").non_java, None);
    // No kernel ids: no layout.
    t.fields.remove("JavaThread::_osthread");
    assert_eq!(NameLayout::from_table(&t, symbol, flag, &m), None);
}
