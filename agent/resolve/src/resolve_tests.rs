//! Replay tests: captured samples and code events, as the agent records them, resolved with a
//! table of methods instead of a JVM.

use super::*;
use crate::symbols::{parse_maps, SymbolTable};
use hpm_capture::capture::MAX_FRAMES;
use hpm_profile::codemap::{CodeBlob, CodeEvent, PcScope};
use hpm_profile::model::{ThreadInfo, VmComponent};
use std::collections::HashMap;

struct Table(HashMap<u64, (&'static str, &'static str)>);

impl JavaMethods for Table {
    fn describe(&mut self, id: u64) -> Option<MethodInfo> {
        self.0.get(&id).map(|(c, m)| MethodInfo::java(c, m, "()V"))
    }
    fn line(&mut self, _id: u64, bci: i32) -> i32 {
        100 + bci
    }
}

fn table() -> Table {
    Table(HashMap::from([(1, ("Main", "run")), (2, ("Main", "outer")), (3, ("Main", "inner")), (4, ("Main", "leaf"))]))
}

fn captured(thread: u32, time: u64, ip: u64, frames: &[(u64, i32)]) -> Captured {
    let mut c = Captured { thread, ..Default::default() };
    c.raw.time = time;
    c.raw.ip = ip;
    c.raw.period = 1_000_000;
    c.stack = StackKind::Asgct(Asgct::from_num_frames(frames.len() as i32, false, false));
    for (i, &(m, bci)) in frames.iter().enumerate() {
        c.frames[i] = CallFrame { lineno: bci, method_id: m };
    }
    c
}

fn recording() -> Recording {
    let mut r = Recording::default();
    r.add_thread(ThreadInfo { os_tid: 10, java_id: Some(1), name: "main".into(), is_java: true, is_virtual: false });
    r.add_thread(ThreadInfo {
        os_tid: 11,
        java_id: None,
        name: "GC Thread#0".into(),
        is_java: false,
        is_virtual: false,
    });
    r
}

fn names(rec: &Recording, s: &Sample) -> Vec<String> {
    s.stack.iter().map(|f| rec.method(f.method).display_name()).collect()
}

#[test]
fn inline_scopes_give_exact_top_frame_types() {
    let mut res = SampleResolver::default();
    // Main.outer compiled at 0x1000 with Main.inner and Main.leaf inlined at pc 0x1040.
    let scopes = vec![PcScope { pc: 0x1040, frames: vec![(4, 3), (3, 7), (2, 11)] }];
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5)));
    let mut rec = recording();
    let c = captured(0, 10, 0x1030, &[(4, 3), (3, 7), (2, 11), (1, 20)]);
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["Main.leaf", "Main.inner", "Main.outer", "Main.run"]);
    let kinds: Vec<FrameKind> = s.stack.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FrameKind::Inlined, FrameKind::Inlined, FrameKind::JitCompiled, FrameKind::Interpreted]);
    assert_eq!(s.stack[0].line, 103);
    assert_eq!(s.component, VmComponent::Java);
}

#[test]
fn reused_code_address_resolves_to_the_code_of_the_sample_time() {
    let mut res = SampleResolver::default();
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(3, 0x1000, 0x100, vec![], 5)));
    res.timeline.push(CodeEvent::Unload { time: 20, start: 0x1000 });
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(4, 0x1000, 0x100, vec![], 30)));
    let mut rec = recording();
    let mut t = table();
    // Both walks failed, so the method comes from the code map alone.
    let mut early = captured(0, 10, 0x1010, &[]);
    early.stack = StackKind::Asgct(Asgct::Failed(AsgctError::NotWalkableJava));
    let mut late = early;
    late.raw.time = 40;
    let a = res.resolve(&mut rec, &mut t, &early);
    let b = res.resolve(&mut rec, &mut t, &late);
    assert_eq!(names(&rec, &a), ["Main.inner", "[no Java stack: not_walkable_Java]"]);
    assert_eq!(names(&rec, &b), ["Main.leaf", "[no Java stack: not_walkable_Java]"]);
    assert_eq!(res.stats.failed, vec![("not_walkable_Java".to_string(), 2)]);
    // The chunk lists each blob a sample fell in: the pc found the later one, not the blob it
    // found before the unload.
    let code: Vec<(u64, u64)> = rec.code.iter().map(|c| (c.start, c.loaded_at)).collect();
    assert_eq!(code, [(0x1000, 5), (0x1000, 30)]);
}

#[test]
fn a_placed_pc_holds_while_only_other_code_leaves() {
    // A pc placed before stays in its blob while only other code leaves the map, and follows
    // its own blob's replacement.
    let mut res = SampleResolver::default();
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(3, 0x1000, 0x100, vec![], 5)));
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x3000, 0x100, vec![], 6)));
    res.timeline.push(CodeEvent::Unload { time: 15, start: 0x3000 });
    res.timeline.push(CodeEvent::Unload { time: 20, start: 0x1000 });
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(4, 0x1000, 0x100, vec![], 30)));
    let mut rec = recording();
    let mut t = table();
    let mut c = captured(0, 10, 0x1010, &[]);
    c.stack = StackKind::Asgct(Asgct::Failed(AsgctError::NotWalkableJava));
    let mut at = |time: u64| {
        c.raw.time = time;
        let s = res.resolve(&mut rec, &mut t, &c);
        names(&rec, &s)[0].clone()
    };
    assert_eq!(
        [at(10), at(16), at(17), at(40), at(41)],
        ["Main.inner", "Main.inner", "Main.inner", "Main.leaf", "Main.leaf"]
    );
    let code: Vec<(u64, u64)> = rec.code.iter().map(|c| (c.start, c.loaded_at)).collect();
    assert_eq!(code, [(0x1000, 5), (0x1000, 30)]);
}

#[test]
fn deeper_frames_use_installed_code() {
    let mut map = CodeMap::default();
    // Main.run compiled with Main.outer inlined; Main.inner compiled on its own.
    map.apply(CodeEvent::Load(CodeBlob::compiled(
        1,
        0x1000,
        0x100,
        vec![PcScope { pc: 0x1010, frames: vec![(2, 1), (1, 1)] }],
        0,
    )));
    map.apply(CodeEvent::Load(CodeBlob::compiled(3, 0x2000, 0x100, vec![], 0)));
    let frames = [
        CallFrame { lineno: 0, method_id: 4 },
        CallFrame { lineno: 0, method_id: 3 },
        CallFrame { lineno: 0, method_id: 2 },
        CallFrame { lineno: 0, method_id: 1 },
    ];
    let k = frame_kinds(&map, 0x9999, &frames);
    assert_eq!(k, [FrameKind::Interpreted, FrameKind::JitCompiled, FrameKind::Inlined, FrameKind::JitCompiled]);
    let native = [CallFrame { lineno: BCI_NATIVE_FRAME, method_id: 9 }, frames[3]];
    assert_eq!(frame_kinds(&map, 0, &native)[0], FrameKind::Native);
}

#[test]
fn vm_threads_get_their_component_root_and_native_leaf() {
    let mut res = SampleResolver::default();
    res.symbolizer.set_mappings(parse_maps("7f0000000000-7f0000100000 r-xp 00000000 fd:01 9 /x/libjvm.so\n"));
    res.symbolizer.insert_table(
        "/x/libjvm.so",
        SymbolTable::from_symbols(vec![(0x100, 0x100, "G1ParScanThreadState::trim_queue".into())]),
    );
    let mut rec = recording();
    let mut c = captured(1, 10, 0x7f0000000150, &[]);
    c.stack = StackKind::NotJava(hpm_capture::capture::NotJava::NotEntered);
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["G1ParScanThreadState::trim_queue", "[GC]"]);
    assert_eq!(s.stack[0].kind, FrameKind::Cpp);
    assert_eq!(s.component, VmComponent::Gc);
    assert_eq!(res.stats.vm_thread, 1);
}

#[test]
fn java_thread_in_the_jvm_gets_a_native_leaf_and_runtime_component() {
    let mut res = SampleResolver::default();
    res.symbolizer.set_mappings(parse_maps("7f0000000000-7f0000100000 r-xp 00000000 fd:01 9 /x/libjvm.so\n"));
    res.symbolizer.insert_table(
        "/x/libjvm.so",
        SymbolTable::from_symbols(vec![(0x100, 0x100, "SharedRuntime::resolve_static_call_C".into())]),
    );
    let mut rec = recording();
    let c = captured(0, 10, 0x7f0000000150, &[(1, 2)]);
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["SharedRuntime::resolve_static_call_C", "Main.run"]);
    assert_eq!(s.component, VmComponent::Runtime);
}

#[test]
fn counter_values_become_per_thread_deltas() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    let mut t = table();
    let mut c = captured(0, 10, 0, &[(1, 0)]);
    c.raw.nvalues = 3;
    c.raw.values[..3].copy_from_slice(&[1000, 50, 7]);
    assert_eq!(res.resolve(&mut rec, &mut t, &c).counters, vec![50, 7]);
    c.raw.values[..3].copy_from_slice(&[2000, 80, 7]);
    assert_eq!(res.resolve(&mut rec, &mut t, &c).counters, vec![30, 0]);
    // Another thread starts from zero.
    c.thread = 1;
    c.raw.values[..3].copy_from_slice(&[10, 5, 1]);
    assert_eq!(res.resolve(&mut rec, &mut t, &c).counters, vec![5, 1]);
    // Multiplexed: running half the enabled time scales values by 2.
    c.raw.time_enabled = 200;
    c.raw.time_running = 100;
    c.raw.values[..3].copy_from_slice(&[20, 10, 2]);
    assert_eq!(res.resolve(&mut rec, &mut t, &c).counters, vec![15, 3]);
}

#[test]
fn unknown_methods_and_gc_time() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    res.gc_start(5);
    res.gc_finish(15);
    let c = captured(0, 10, 0, &[(99, 1)]);
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["[unknown method]"]);
    assert!(res.gc_active(10) && !res.gc_active(20));
    assert!(!c.java_frames().is_empty() && c.java_frames().len() < MAX_FRAMES);
}

#[test]
fn a_walk_from_the_caller_of_a_stub_keeps_the_stub_as_leaf() {
    let mut res = SampleResolver::default();
    res.timeline.push(CodeEvent::Load(CodeBlob::dynamic("jbyte_disjoint_arraycopy", 0x1000, 0x100, 5)));
    let mut rec = recording();
    let mut c = captured(0, 10, 0x1008, &[(2, 5), (1, 9)]);
    c.stack = StackKind::Asgct(Asgct::from_num_frames(2, true, false));
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["jbyte_disjoint_arraycopy", "Main.outer", "Main.run"]);
    assert_eq!(res.stats.from_caller, 1);
}

/// In a compiled method's prologue the word at the stack pointer may not be the return
/// address, so a walk restarted there is not trusted: the exact compiled frames are kept.
#[test]
fn a_walk_from_the_caller_of_compiled_code_is_not_trusted() {
    let mut res = SampleResolver::default();
    let scopes = vec![PcScope { pc: 0x1010, frames: vec![(4, 0), (3, -1)] }];
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(3, 0x1000, 0x100, scopes, 5)));
    let mut rec = recording();
    let mut c = captured(0, 10, 0x1008, &[(1, 9)]);
    c.stack = StackKind::Asgct(Asgct::from_num_frames(1, true, false));
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["Main.leaf", "Main.inner", "[no Java stack: in_compiled_prologue]"]);
    let kinds: Vec<FrameKind> = s.stack.iter().map(|f| f.kind).collect();
    assert_eq!(kinds[..2], [FrameKind::Inlined, FrameKind::JitCompiled]);
    // The entry scope (bci -1) is reported at bytecode 0 and its line.
    assert_eq!((s.stack[1].bci, s.stack[1].line), (0, 100));
    assert_eq!(res.stats.failed, vec![("in_compiled_prologue".to_string(), 1)]);
}

/// AsyncGetCallTrace reports a compiled frame stopped at its entry with bci -1.
#[test]
fn an_entry_bci_from_the_stack_walk_is_bytecode_0() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    let c = captured(0, 10, 0x9000, &[(4, -1), (1, 9)]);
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s)[..2], ["Main.leaf", "Main.run"]);
    assert_eq!((s.stack[0].bci, s.stack[0].line), (0, 100));
    assert_eq!((s.stack[1].bci, s.stack[1].line), (9, 109));
}

#[test]
fn a_failed_walk_in_compiled_code_keeps_its_inline_chain_and_lines() {
    let mut res = SampleResolver::default();
    let scopes = vec![PcScope { pc: 0x1040, frames: vec![(4, 3), (2, 11)] }];
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5)));
    let mut rec = recording();
    let mut c = captured(0, 10, 0x1030, &[]);
    c.stack = StackKind::Asgct(Asgct::Failed(AsgctError::UnknownJava));
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["Main.leaf", "Main.outer", "[no Java stack: unknown_Java]"]);
    assert_eq!((s.stack[0].bci, s.stack[0].line), (3, 103));
    assert_eq!((s.stack[1].kind, s.stack[1].line), (FrameKind::JitCompiled, 111));
}

fn kernel_table() -> KernelSymbols {
    KernelSymbols::parse("ffffffff81001000 t clear_page_erms\nffffffff81002000 T exc_page_fault\n")
}

#[test]
fn kernel_call_chains_become_named_frames_above_the_java_stack() {
    let mut res = SampleResolver::default();
    res.set_kernel_symbols(kernel_table());
    let mut rec = recording();
    let mut c = captured(0, 10, 0xffff_ffff_8100_1008, &[(4, 3), (1, 20)]);
    c.raw.kernel[..2].copy_from_slice(&[0xffff_ffff_8100_1008, 0xffff_ffff_8100_2040]);
    c.raw.nkernel = 2;
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["clear_page_erms", "exc_page_fault", "Main.leaf", "Main.run"]);
    assert_eq!(s.stack[0].kind, FrameKind::Kernel);
    assert_eq!(s.component, VmComponent::Kernel);

    // Where the kernel hides its addresses the chain is one [kernel] frame.
    let mut res = SampleResolver::default();
    res.set_kernel_symbols(KernelSymbols::default());
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["[kernel]", "Main.leaf", "Main.run"]);
}

#[test]
fn records_of_one_kernel_stay_share_the_walked_user_stack() {
    let mut res = SampleResolver::default();
    res.set_kernel_symbols(kernel_table());
    let mut rec = recording();
    let k = 0xffff_ffff_8100_1008;
    let mut first = captured(0, 10, k, &[(4, 3), (1, 20)]);
    first.shares_walk = true;
    let mut later = captured(0, 11, k, &[]);
    later.stack = StackKind::SharedWithPrevious;
    later.shares_walk = true;
    let mut last = later;
    last.shares_walk = false;
    // Another thread's sample in between does not take it.
    let other = captured(1, 10, 0x5000, &[]);
    let a = res.resolve(&mut rec, &mut table(), &first);
    res.resolve(&mut rec, &mut table(), &other);
    let b = res.resolve(&mut rec, &mut table(), &later);
    let c = res.resolve(&mut rec, &mut table(), &last);
    assert_eq!(names(&rec, &b), ["[kernel]", "Main.leaf", "Main.run"]);
    assert_eq!(names(&rec, &b)[1..], names(&rec, &a)[1..]);
    assert_eq!(names(&rec, &c), names(&rec, &b), "every record of the stay");
    assert!(res.shared_walks.is_empty(), "the walk goes with the stay's last record");
    // A record after the last has nothing to share.
    let d = res.resolve(&mut rec, &mut table(), &later);
    assert!(names(&rec, &d).iter().any(|n| n.contains("coalesced_signal")), "{:?}", names(&rec, &d));
    res.stats.failed.clear();
    // A record after an unshared one has nothing to share: counted as a coalesced signal.
    res.resolve(&mut rec, &mut table(), &captured(0, 12, 0x5000, &[(1, 1)]));
    let d = res.resolve(&mut rec, &mut table(), &later);
    assert!(names(&rec, &d).iter().any(|n| n.contains("coalesced_signal")), "{:?}", names(&rec, &d));
    assert_eq!(res.stats.failed, vec![("coalesced_signal".to_string(), 1)]);
}

#[test]
fn a_record_sampled_while_another_handler_held_the_signal_is_kept_and_counted_as_such() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    let mut c = captured(0, 10, 0x5000, &[]);
    c.stack = StackKind::SignalTaken;
    let s = res.resolve(&mut rec, &mut table(), &c);
    let names = names(&rec, &s);
    assert!(names.iter().any(|n| n == "[no Java stack: signal_taken_by_another_handler]"), "{names:?}");
    assert_eq!(res.stats.failed, vec![("signal_taken_by_another_handler".to_string(), 1)]);
}

/// A kernel-mode record of `thread` at `time`: walked (Main.leaf above Main.run), or `shared`
/// with the walked one before it; `more`: records of its stay follow.
fn kernel_stay(
    res: &mut SampleResolver,
    rec: &mut Recording,
    thread: u32,
    time: u64,
    shared: bool,
    more: bool,
) -> Sample {
    let frames: &[(u64, i32)] = if shared { &[] } else { &[(4, 3), (1, 20)] };
    let mut c = captured(thread, time, 0xffff_ffff_8100_1008, frames);
    if shared {
        c.stack = StackKind::SharedWithPrevious;
    }
    c.shares_walk = more;
    res.resolve(rec, &mut table(), &c)
}

const SECOND: u64 = 1_000_000_000;

/// Walks whose records were lost (a batch dropped) stay behind: past the bound, the old ones
/// go.
#[test]
fn walks_left_behind_are_bounded() {
    let mut res = SampleResolver::default();
    res.set_kernel_symbols(kernel_table());
    let mut rec = recording();
    let ms = 1_000_000;
    // Thread after thread leaves its walk, a tenth of a millisecond apart: all of them recent
    // when the bound is met, so all go, and the bound holds throughout.
    let n = MAX_SHARED_WALKS as u32 + 100;
    for t in 0..n {
        kernel_stay(&mut res, &mut rec, t, u64::from(t) * ms / 10, false, true);
        assert!(res.shared_walks.len() <= MAX_SHARED_WALKS, "{} walks kept", res.shared_walks.len());
    }
    assert_eq!(res.shared_walks.len(), 100, "cleared at the bound: those after it kept");
    // Later, five milliseconds apart, up to the bound again: at it only the walks of the last
    // SHARED_WALK_AGE_NS stay.
    let late = u64::from(n) * ms / 10 + 2 * SHARED_WALK_AGE_NS;
    let more = MAX_SHARED_WALKS as u32 - 100;
    for t in 0..more {
        kernel_stay(&mut res, &mut rec, n + t, late + u64::from(t) * 5 * ms, false, true);
    }
    assert_eq!(res.shared_walks.len(), MAX_SHARED_WALKS);
    let now = late + u64::from(more) * 5 * ms;
    kernel_stay(&mut res, &mut rec, 1 << 30, now, false, true);
    let recent = (0..more).filter(|t| now - (late + u64::from(*t) * 5 * ms) < SHARED_WALK_AGE_NS).count();
    assert!(recent > 1 && recent <= MAX_SHARED_WALKS / 2, "{recent}");
    assert_eq!(res.shared_walks.len(), recent + 1, "the recent walks and the new one");
    assert!(res.shared_walks.values().all(|(t, _)| now - t < SHARED_WALK_AGE_NS));
    assert!(res.stats.failed.is_empty(), "{:?}", res.stats.failed);
}

/// A walk still in use is dated by its latest record, however long its stay: the bound met
/// in the middle of a stay that began long before keeps it.
#[test]
fn a_walk_in_use_stays_past_the_bound() {
    let mut res = SampleResolver::default();
    res.set_kernel_symbols(kernel_table());
    let mut rec = recording();
    let a = MAX_SHARED_WALKS as u32;
    let first = kernel_stay(&mut res, &mut rec, a, 0, false, true);
    kernel_stay(&mut res, &mut rec, a, 6 * SECOND, true, true);
    // Walks left behind by others, long ago.
    for t in 0..MAX_SHARED_WALKS as u32 - 1 {
        kernel_stay(&mut res, &mut rec, t, 2 * SECOND, false, true);
    }
    kernel_stay(&mut res, &mut rec, a, 12 * SECOND, true, true);
    assert_eq!(res.shared_walks.len(), MAX_SHARED_WALKS);
    // The bound, met by a new thread: the others' walks go, the one in use stays.
    kernel_stay(&mut res, &mut rec, a + 1, 13 * SECOND, false, true);
    assert_eq!(res.shared_walks.len(), 2);
    let last = kernel_stay(&mut res, &mut rec, a, 14 * SECOND, true, false);
    assert_eq!(names(&rec, &last)[1..], names(&rec, &first)[1..]);
    assert!(res.stats.failed.is_empty(), "{:?}", res.stats.failed);
    assert_eq!(res.shared_walks.len(), 1, "gone with the stay's last record");
}

#[test]
fn counted_kernel_time_is_the_user_stack_under_a_kernel_frame() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    rec.counters = vec!["page-faults".into()];
    let mut c = captured(0, 10, 0x5000, &[(4, 3), (1, 20)]);
    c.raw.nvalues = 2;
    c.raw.values[1] = 7;
    let s = res.resolve(&mut rec, &mut table(), &c);
    let k = res.kernel_time_sample(&mut rec, &s);
    assert_eq!(names(&rec, &k)[0], "[kernel]");
    assert_eq!(names(&rec, &k)[1..], names(&rec, &s)[..]);
    assert_eq!((k.time, k.weight, k.thread), (s.time, s.weight, s.thread));
    assert_eq!(k.counters, vec![0], "the counter deltas stay with the user sample");
    assert_eq!(k.component, VmComponent::Kernel);
}

#[test]
fn a_kernel_sample_names_the_library_function_that_entered_the_kernel() {
    let mut res = SampleResolver::default();
    res.set_kernel_symbols(kernel_table());
    res.symbolizer.set_mappings(parse_maps("7f0000000000-7f0000100000 r-xp 00000000 fd:01 7 /lib/libc.so.6\n"));
    res.symbolizer.insert_table("/lib/libc.so.6", SymbolTable::from_symbols(vec![(0x1000, 0x100, "write".into())]));
    let mut rec = recording();
    let mut c = captured(0, 10, 0xffff_ffff_8100_1008, &[(4, 3), (1, 20)]);
    c.raw.kernel[0] = 0xffff_ffff_8100_1008;
    c.raw.nkernel = 1;
    c.raw.regs_abi = 2;
    c.raw.user_ip = 0x7f00_0000_1010;
    let s = res.resolve(&mut rec, &mut table(), &c);
    assert_eq!(names(&rec, &s), ["clear_page_erms", "write", "Main.leaf", "Main.run"]);
    assert_eq!(s.stack[1].kind, FrameKind::Native);
}

/// A table that also names `Method*`s (hpm's own walker): Method* 0x7000 is method `self.2`
/// (1: Main.run), its bytecodes at 0x9000_0010, 50 long; `self.1` counts the questions.
struct Pointers(Table, u64, u64);

impl JavaMethods for Pointers {
    fn describe(&mut self, id: u64) -> Option<MethodInfo> {
        self.0.describe(id)
    }
    fn line(&mut self, id: u64, bci: i32) -> i32 {
        self.0.line(id, bci)
    }
    fn by_pointer(&mut self, method: u64) -> Option<MethodPointer> {
        self.1 += 1;
        (method == 0x7000).then_some(MethodPointer { id: self.2, code_start: 0x9000_0010, code_size: 50 })
    }
}

/// Sets the key of a capture of hpm's walker, as the signal handler makes it.
fn set_key(c: &mut Captured, seed: u64) {
    let key = c.raw_walk().map(|(_, frames, slots)| hpm_capture::hotspot::raw_stack_key(seed, frames, slots));
    if let StackKind::RawWalk(w) = &mut c.stack {
        w.key = key;
    }
}

/// A capture of hpm's walker: `raw` frames top first.
fn vm_captured(
    time: u64,
    ip: u64,
    raw: &[hpm_capture::hotspot::RawFrame],
    stop: hpm_capture::hotspot::Stop,
) -> Captured {
    let mut c = captured(0, time, ip, &[]);
    let mut sink = hpm_capture::hotspot::FrameSink::new(&mut c.frames, &mut c.slots);
    for &f in raw {
        hpm_capture::hotspot::tests_support::push(&mut sink, f);
    }
    let slots = sink.len as u16;
    c.stack = StackKind::RawWalk(RawWalk { slots, stop: stop as u8, key: None, depth_cut: false });
    c
}

/// A resolver whose code map has Main.outer compiled at 0x1000 with Main.leaf and Main.inner
/// inlined: scopes recorded at 0x1040 (the end of the code they describe) and at the return
/// address 0x1060.
fn outer_with_inlined_callees() -> SampleResolver {
    let mut res = SampleResolver::default();
    let scopes = vec![
        PcScope { pc: 0x1040, frames: vec![(4, 3), (3, 7), (2, 11)] },
        PcScope { pc: 0x1060, frames: vec![(3, 8), (2, 12)] },
    ];
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5)));
    res
}

#[test]
fn walker_frames_are_named_by_inline_scope_and_method_pointer() {
    use hpm_capture::hotspot::{RawFrame, Stop};
    let mut res = outer_with_inlined_callees();
    let mut rec = recording();
    let mut jm = Pointers(table(), 0, 1);
    let raw = [
        RawFrame::Compiled { pc: 0x1040, method: 0, interrupted: true },
        RawFrame::Compiled { pc: 0x1060, method: 0, interrupted: false },
        RawFrame::Interpreted { method: 0x7000, bcp: 0x9000_0010 + 9 },
    ];
    let c = vm_captured(10, 0x1040, &raw, Stop::Bottom);
    let s = res.resolve(&mut rec, &mut jm, &c);
    // The interrupted pc at a scope's pc belongs to the next scope (pc + 1, as ASGCT); the
    // return address to the scope recorded at it; the interpreted frame's bci from its bcp.
    assert_eq!(names(&rec, &s), ["Main.inner", "Main.outer", "Main.inner", "Main.outer", "Main.run"]);
    let kinds: Vec<FrameKind> = s.stack.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            FrameKind::Inlined,
            FrameKind::JitCompiled,
            FrameKind::Inlined,
            FrameKind::JitCompiled,
            FrameKind::Interpreted
        ]
    );
    assert_eq!((s.stack[4].bci, s.stack[4].line), (9, 109));
    assert_eq!(res.stats.java_ok, 1);
    assert!(res.stats.partial.is_empty());

    // The same raw stack again is named from the cache: no new Method* lookup.
    let asked = jm.1;
    let again = res.resolve(&mut rec, &mut jm, &vm_captured(11, 0x1040, &raw, Stop::Bottom));
    assert_eq!(again.stack, s.stack);
    assert_eq!(jm.1, asked);
    // Keyed by the signal handler (under the process's seed), the same entry: no frame named.
    let mut keyed = vm_captured(12, 0x1040, &raw, Stop::Bottom);
    let seed = hpm_profile::hash::seed_if_made().expect("the resolver made the seed");
    set_key(&mut keyed, seed);
    let named = res.stats.frames_named;
    let again = res.resolve(&mut rec, &mut jm, &keyed);
    assert!(std::sync::Arc::ptr_eq(&again.stack, &s.stack));
    assert_eq!((res.stats.frames_named, jm.1), (named, asked));

    // A walk that stopped early keeps its frames and is counted as partial; an unknown
    // Method* is left out and counted; a stub's frame is left out.
    res.timeline.push(CodeEvent::Load(CodeBlob::dynamic("StubRoutines", 0x5000, 0x100, 12)));
    let raw = [
        RawFrame::Compiled { pc: 0x5010, method: 0, interrupted: true },
        RawFrame::Interpreted { method: 0x6666, bcp: 1 },
        RawFrame::Interpreted { method: 0x7000, bcp: 0x9000_0010 },
    ];
    let s = res.resolve(&mut rec, &mut jm, &vm_captured(13, 0x1040, &raw, Stop::Lost));
    assert_eq!(names(&rec, &s), ["Main.run"]);
    assert_eq!(res.stats.partial, vec![("frame_lost".to_string(), 1)]);
    assert_eq!(res.stats.unnamed_frames, 1);

    // Nothing named: a pseudo-frame with the walker's reason.
    let raw = [RawFrame::Interpreted { method: 0x6666, bcp: 1 }];
    let s = res.resolve(&mut rec, &mut jm, &vm_captured(14, 0x1040, &raw, Stop::BadInterpreterFrame));
    assert_eq!(names(&rec, &s).last().map(String::as_str), Some("[no Java stack: no_named_Java_frame]"));
    let c = vm_captured(15, 0x1040, &[], Stop::BadInterpreterFrame);
    let s = res.resolve(&mut rec, &mut jm, &c);
    assert_eq!(names(&rec, &s).last().map(String::as_str), Some("[no Java stack: interpreter_frame_not_set_up]"));
}

#[test]
fn named_walker_stacks_are_shared_until_their_code_or_methods_change() {
    use hpm_capture::hotspot::{RawFrame, Stop};
    use std::sync::Arc;
    let mut res = SampleResolver::default();
    let scopes = vec![PcScope { pc: 0x1040, frames: vec![(4, 3), (2, 11)] }];
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5)));
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(3, 0x3000, 0x100, Vec::new(), 5)));
    let mut rec = recording();
    let mut jm = Pointers(table(), 0, 1);
    let raw = [
        RawFrame::Compiled { pc: 0x1040, method: 0, interrupted: false },
        RawFrame::Interpreted { method: 0x7000, bcp: 0x9000_0010 + 4 },
    ];
    let sample = |res: &mut SampleResolver, rec: &mut Recording, jm: &mut Pointers, time: u64| {
        res.resolve(rec, jm, &vm_captured(time, 0x1040, &raw, Stop::Bottom))
    };
    let first = sample(&mut res, &mut rec, &mut jm, 10);
    assert_eq!(names(&rec, &first), ["Main.leaf", "Main.outer", "Main.run"]);
    let asked = jm.1;
    // The same raw stack: the same shared copy, nothing asked again.
    let again = sample(&mut res, &mut rec, &mut jm, 11);
    assert!(Arc::ptr_eq(&first.stack, &again.stack));
    assert_eq!(jm.1, asked);

    // Code that leaves the map elsewhere does not touch it.
    res.timeline.push(CodeEvent::Unload { time: 20, start: 0x3000 });
    let after_unload = sample(&mut res, &mut rec, &mut jm, 21);
    assert!(Arc::ptr_eq(&first.stack, &after_unload.stack));
    assert_eq!(jm.1, asked);

    // After a collection its Method* is asked again, once; same answer, same copy.
    res.gc_start(30);
    res.gc_finish(31);
    let after_gc = sample(&mut res, &mut rec, &mut jm, 32);
    assert!(Arc::ptr_eq(&first.stack, &after_gc.stack));
    assert_eq!(jm.1, asked + 1);
    sample(&mut res, &mut rec, &mut jm, 33);
    assert_eq!(jm.1, asked + 1);

    // A collection after which the Method* is another method's: named anew.
    jm.2 = 3;
    res.gc_start(40);
    res.gc_finish(41);
    let moved = sample(&mut res, &mut rec, &mut jm, 42);
    assert_eq!(names(&rec, &moved), ["Main.leaf", "Main.outer", "Main.inner"]);

    // Its compiled code replaced by another method's at the same address: named anew.
    res.timeline.push(CodeEvent::Unload { time: 48, start: 0x1000 });
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(4, 0x1000, 0x100, Vec::new(), 50)));
    let replaced = sample(&mut res, &mut rec, &mut jm, 51);
    assert_eq!(names(&rec, &replaced), ["Main.leaf", "Main.inner"]);
}

/// A compiled frame at 0x1040 (Main.leaf inlined in Main.outer: the scopes to load with its
/// blob) above an interpreted Main.run, as hpm's walker records them.
fn leaf_above_interpreted() -> (Vec<PcScope>, [hpm_capture::hotspot::RawFrame; 2]) {
    use hpm_capture::hotspot::RawFrame;
    let scopes = vec![PcScope { pc: 0x1040, frames: vec![(4, 3), (2, 11)] }];
    let raw = [
        RawFrame::Compiled { pc: 0x1040, method: 0, interrupted: false },
        RawFrame::Interpreted { method: 0x7000, bcp: 0x9000_0010 + 4 },
    ];
    (scopes, raw)
}

#[test]
fn the_next_session_starts_from_what_the_last_one_named() {
    use hpm_capture::hotspot::{RawFrame, Stop};
    use std::sync::Arc;
    let (scopes, raw) = leaf_above_interpreted();
    let other = [RawFrame::Compiled { pc: 0x1040, method: 0, interrupted: false }];
    let mut jm = Pointers(table(), 0, 1);
    let mut first = SampleResolver::default();
    first.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5)));
    let mut rec1 = recording();
    let s1 = first.resolve(&mut rec1, &mut jm, &vm_captured(10, 0x1040, &raw, Stop::Bottom));
    assert_eq!(names(&rec1, &s1), ["Main.leaf", "Main.outer", "Main.run"]);
    let methods1 = rec1.methods.len();
    let carried = first.take_java(&mut rec1.methods).expect("a small table is carried");
    // The ended session's count of stacks made stays for its summary.
    assert_eq!(first.stacks_made(), 1);

    // The next session: the code map goes on (it outlives sessions), the recording's method
    // table starts from the last one's, and the ended session's recording keeps its own.
    let mut next = SampleResolver { timeline: std::mem::take(&mut first.timeline), ..Default::default() };
    let mut rec2 = recording();
    rec2.methods = next.set_java(carried);
    let asked = jm.1;
    let s2 = next.resolve(&mut rec2, &mut jm, &vm_captured(60, 0x1040, &raw, Stop::Bottom));
    // The same shared stack, no frame named again; its Method* asked once (the collections
    // between sessions went unseen). Only the sampled blob's method is asked by its id again
    // (for the session's list of compiled code), see the next test.
    assert!(Arc::ptr_eq(&s1.stack, &s2.stack));
    assert_eq!(names(&rec2, &s2), ["Main.leaf", "Main.outer", "Main.run"]);
    assert_eq!((next.stats.frames_named, next.stats.methods_named, next.stacks_made()), (0, 1, 0));
    assert_eq!(jm.1, asked + 1);
    // A stack new to the process is made from the carried frames: counted as made, named
    // nothing.
    let s3 = next.resolve(&mut rec2, &mut jm, &vm_captured(61, 0x1040, &other, Stop::Bottom));
    assert_eq!(names(&rec2, &s3), ["Main.leaf", "Main.outer"]);
    assert_eq!((next.stats.frames_named, next.stacks_made()), (0, 1));
    assert_eq!(rec1.methods.len(), methods1);

    // Code replaced between the sessions: named anew in the third.
    let carried = next.take_java(&mut rec2.methods).expect("carried");
    let mut third = SampleResolver { timeline: std::mem::take(&mut next.timeline), ..Default::default() };
    third.timeline.push(CodeEvent::Unload { time: 70, start: 0x1000 });
    third.timeline.push(CodeEvent::Load(CodeBlob::compiled(3, 0x1000, 0x100, Vec::new(), 71)));
    let mut rec3 = recording();
    rec3.methods = third.set_java(carried);
    let s4 = third.resolve(&mut rec3, &mut jm, &vm_captured(80, 0x1040, &raw, Stop::Bottom));
    assert_eq!(names(&rec3, &s4), ["Main.inner", "Main.run"]);
    assert_eq!(third.stats.frames_named, 1);
}

#[test]
fn the_next_session_asks_its_jmethodids_again() {
    // A jmethodID's slot may be given to another method between sessions: each session asks
    // its ids again (the agent's per-process names check every slot at a session's start),
    // and an unchanged answer is the same index in the carried table.
    let mut jm = table();
    let mut first = SampleResolver::default();
    let mut rec1 = recording();
    let c = captured(0, 10, 0, &[(4, 1), (1, 2)]);
    let s1 = first.resolve(&mut rec1, &mut jm, &c);
    assert_eq!(names(&rec1, &s1), ["Main.leaf", "Main.run"]);
    let carried = first.take_java(&mut rec1.methods).expect("carried");
    let mut next = SampleResolver::default();
    let mut rec2 = recording();
    rec2.methods = next.set_java(carried);
    let s2 = next.resolve(&mut rec2, &mut jm, &captured(0, 20, 0, &[(4, 1), (1, 2)]));
    assert_eq!(next.stats.methods_named, 2);
    assert_eq!(s2.stack[0].method, s1.stack[0].method);
    // Id 4 now another method's: named as that one.
    jm.0.insert(4, ("Other", "reused"));
    let mut third = SampleResolver::default();
    let mut rec3 = recording();
    rec3.methods = third.set_java(next.take_java(&mut rec2.methods).expect("carried"));
    let s3 = third.resolve(&mut rec3, &mut jm, &captured(0, 30, 0, &[(4, 1), (1, 2)]));
    assert_eq!(names(&rec3, &s3), ["Other.reused", "Main.run"]);
}

#[test]
fn a_table_past_the_bound_is_not_carried() {
    let mut res = SampleResolver::default();
    let mut table = hpm_profile::model::MethodTable::default();
    for i in 0..=super::MAX_CARRIED_METHODS {
        table.intern(MethodInfo::native(&format!("f{i}")));
    }
    assert!(res.take_java(&mut table).is_none());
    table = hpm_profile::model::MethodTable::default();
    assert!(res.take_java(&mut table).is_some());
}

#[test]
fn stacks_past_the_bound_are_not_carried() {
    use hpm_capture::hotspot::Stop;
    use std::sync::Arc;
    let (scopes, raw) = leaf_above_interpreted();
    let mut jm = Pointers(table(), 0, 1);
    let session = |res: &mut SampleResolver, rec: &mut Recording, jm: &mut Pointers, held: usize| {
        let s = res.resolve(rec, jm, &vm_captured(10, 0x1040, &raw, Stop::Bottom));
        // Stacks of code met once (a throwaway class loader's), up to `held` stacks in all.
        for i in 0.. {
            if res.interner.len() >= held {
                break;
            }
            let f = Frame { method: MethodIdx(0), bci: i, line: -1, kind: FrameKind::Interpreted };
            res.interner.intern(&[f]);
        }
        s
    };
    let mut first = SampleResolver::default();
    first.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5)));
    let mut rec1 = recording();
    let s1 = session(&mut first, &mut rec1, &mut jm, super::MAX_CARRIED_STACKS);
    let carried = first.take_java(&mut rec1.methods).expect("carried");

    // At the bound: the stacks go on.
    let mut next = SampleResolver { timeline: std::mem::take(&mut first.timeline), ..Default::default() };
    let mut rec2 = recording();
    rec2.methods = next.set_java(carried);
    let s2 = session(&mut next, &mut rec2, &mut jm, super::MAX_CARRIED_STACKS + 1);
    assert!(Arc::ptr_eq(&s1.stack, &s2.stack));
    assert_eq!(next.stats.frames_named, 0);
    let carried = next.take_java(&mut rec2.methods).expect("carried");

    // Past it: the next session makes its stacks anew, from the frames and methods carried.
    let mut third = SampleResolver { timeline: std::mem::take(&mut next.timeline), ..Default::default() };
    let mut rec3 = recording();
    rec3.methods = third.set_java(carried);
    let s3 = session(&mut third, &mut rec3, &mut jm, 0);
    assert!(!Arc::ptr_eq(&s1.stack, &s3.stack));
    assert_eq!(names(&rec3, &s3), ["Main.leaf", "Main.outer", "Main.run"]);
    assert_eq!((third.stats.frames_named, third.stats.methods_named, third.stacks_made()), (0, 1, 1));
    assert_eq!(third.interner.len(), 2, "only this session's: the sample's stack and its callers");
}

#[test]
fn data_addresses_come_from_the_event_or_the_captured_instruction() {
    let mut res = SampleResolver { decode_instructions: true, ..Default::default() };
    let mut rec = recording();
    // mov eax, [rbx+0x10] with rbx = 0x7000, captured by the handler.
    let mut load = captured(0, 10, 0x1030, &[(1, 0)]);
    load.data.code[..3].copy_from_slice(&[0x8b, 0x43, 0x10]);
    load.data.code_len = 3;
    load.data.regs.0[3] = 0x7000;
    assert_eq!(res.resolve(&mut rec, &mut table(), &load).data_addr, Some(0x7010));
    // Nothing captured (native code, or an earlier record of a coalesced signal).
    let none = captured(0, 11, 0x1030, &[(1, 0)]);
    assert_eq!(res.resolve(&mut rec, &mut table(), &none).data_addr, None);
    // An instruction without memory operand.
    let mut alu = captured(0, 12, 0x1030, &[(1, 0)]);
    alu.data.code[..2].copy_from_slice(&[0x01, 0xd8]);
    alu.data.code_len = 2;
    assert_eq!(res.resolve(&mut rec, &mut table(), &alu).data_addr, None);
    assert_eq!(res.stats.data.loads, 1);
    assert_eq!(
        res.stats.data.none,
        [(hpm_capture::operand::NOT_CAPTURED.to_string(), 1), ("no_memory_operand".to_string(), 1)]
    );
    // An event's own address (page faults) is kept, and checks the decoding: within the
    // 4 bytes loaded at 0x7010, or not.
    res.data_addresses = true;
    for (at, agrees) in [(0x7012, true), (0x9000, false)] {
        let mut fault = load;
        fault.raw.addr = at;
        assert_eq!(res.resolve(&mut rec, &mut table(), &fault).data_addr, Some(at));
        assert_eq!(res.stats.data.agreed, 1, "{at:#x} agrees: {agrees}");
    }
    assert_eq!((res.stats.data.compared, res.stats.data.found()), (2, 3));
}

/// A timer sampler's record deeper than its frames array: the deep frames follow its own,
/// root side last; the stack is marked truncated only when the sampler says it was cut.
#[test]
fn deep_frames_follow_the_record_and_cut_stacks_are_truncated() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    let own: Vec<(u64, i32)> = (0..MAX_FRAMES).map(|_| (3, 7)).collect();
    let mut c = captured(0, 10, 0, &[]);
    let mut frames: Vec<(u64, i32, FrameKind)> = own.iter().map(|&(m, bci)| (m, bci, FrameKind::Interpreted)).collect();
    frames[0] = (4, 3, FrameKind::Interpreted);
    jvm_frames::set_jvm_frames(&mut c, &frames, false);
    let mut deep: Vec<(CallFrame, FrameKind)> =
        (0..1000).map(|_| (CallFrame { lineno: 7, method_id: 3 }, FrameKind::JitCompiled)).collect();
    deep.push((CallFrame { lineno: 20, method_id: 1 }, FrameKind::Interpreted));
    let s = res.resolve_with_deep(&mut rec, &mut table(), &c, &deep);
    let n = names(&rec, &s);
    assert_eq!(n.len(), MAX_FRAMES + 1001);
    assert_eq!((n[0].as_str(), n[n.len() - 1].as_str()), ("Main.leaf", "Main.run"));
    assert_eq!(s.stack[MAX_FRAMES].kind, FrameKind::JitCompiled, "the deep frames keep their kinds");
    assert!(!s.truncated, "a whole stack of 1,513 frames");
    jvm_frames::set_jvm_frames(&mut c, &frames, true);
    assert!(res.resolve_with_deep(&mut rec, &mut table(), &c, &deep).truncated, "cut at jstackdepth");
    // A signal sampler's record filled to the brim is cut (AsyncGetCallTrace stops there).
    let full = captured(0, 20, 0, &own);
    assert!(res.resolve(&mut rec, &mut table(), &full).truncated);
}

/// What is named for the first time is counted once: a stack seen again and its methods cost
/// no new naming, and the summary's line says so.
#[test]
fn first_sightings_are_counted_once() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    let c = captured(0, 10, 0, &[(4, 3), (3, 7), (1, 20)]);
    res.resolve(&mut rec, &mut table(), &c);
    res.resolve(&mut rec, &mut table(), &captured(0, 20, 0, &[(4, 3), (3, 7), (1, 20)]));
    assert_eq!((res.stacks_made(), res.stats.methods_named), (1, 3));
    // Another leaf on the same callers: one more stack, one more method.
    res.resolve(&mut rec, &mut table(), &captured(0, 30, 0, &[(2, 5), (3, 7), (1, 20)]));
    assert_eq!((res.stacks_made(), res.stats.methods_named), (2, 4));
    let line = res.stats.first_sightings_line(res.stacks_made(), 4, 0);
    assert!(line.starts_with("named for the first time: 2 stacks (50% of the samples), 0 frames"), "{line}");
    // The JVM's events' stacks are named alike: counted beside the samples.
    let line = res.stats.first_sightings_line(res.stacks_made(), 1, 3);
    assert!(line.starts_with("named for the first time: 2 stacks (50% of the samples and events), "), "{line}");
}

/// The interpreted frames' `Method*`s of a round's walks reach the method source at once,
/// each once, before the records are resolved one by one.
#[test]
fn a_rounds_interpreted_methods_are_asked_for_at_once() {
    struct Prefetch(Vec<Vec<u64>>);
    impl JavaMethods for Prefetch {
        fn describe(&mut self, _: u64) -> Option<MethodInfo> {
            None
        }
        fn line(&mut self, _: u64, _: i32) -> i32 {
            -1
        }
        fn prefetch_pointers(&mut self, methods: &[u64]) {
            self.0.push(methods.to_vec());
        }
        fn by_pointer(&mut self, method: u64) -> Option<MethodPointer> {
            Some(MethodPointer { id: method, code_start: 0, code_size: 0 })
        }
    }
    let walk =
        |frames: &[hpm_capture::hotspot::RawFrame]| vm_captured(0, 0, frames, hpm_capture::hotspot::Stop::Bottom);
    use hpm_capture::hotspot::RawFrame::{Compiled, Interpreted};
    let a = walk(&[Compiled { pc: 0x10, method: 0x9000, interrupted: true }, Interpreted { method: 0x5000, bcp: 1 }]);
    let b = walk(&[Interpreted { method: 0x6000, bcp: 2 }, Interpreted { method: 0x5000, bcp: 3 }]);
    let not_walked = Captured::default();
    let mut jm = Prefetch(Vec::new());
    let mut res = SampleResolver::default();
    res.prefetch_methods(&mut jm, [&a, &b, &not_walked]);
    assert_eq!(jm.0, [vec![0x5000, 0x6000]]);
    res.prefetch_methods(&mut jm, [&not_walked]);
    assert_eq!(jm.0.len(), 1, "nothing to ask: no call");
    // A raw stack named since the last collection: its methods not asked for again (its slots
    // not read); after a collection they are.
    let keyed = |mut c: Captured| {
        set_key(&mut c, res.hasher.seed());
        c
    };
    let (a, b) = (keyed(a), keyed(b));
    res.prefetch_methods(&mut jm, [&a, &b]);
    assert_eq!(jm.0.len(), 2, "not named yet");
    let mut rec = recording();
    res.resolve(&mut rec, &mut jm, &b);
    res.prefetch_methods(&mut jm, [&a, &b]);
    assert_eq!(jm.0[2], [0x5000], "b's named");
    res.gc_finish(5);
    res.prefetch_methods(&mut jm, [&b]);
    assert_eq!(jm.0[3], [0x6000, 0x5000]);
}

#[test]
fn a_blobs_instructions_go_once_per_session_from_its_second_sample() {
    let mut res = SampleResolver::default();
    let hot = hpm_profile::codemap::CodeBytes::copy(&[0x90; 0x100]);
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, vec![], 5).with_code(hot)));
    let once = hpm_profile::codemap::CodeBytes::copy(&[0xcc; 0x100]);
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(3, 0x2000, 0x100, vec![], 5).with_code(once)));
    let mut rec = recording();
    let mut t = table();
    let listed = |rec: &Recording| -> Vec<(u64, usize)> { rec.code.iter().map(|c| (c.start, c.bytes.len())).collect() };
    res.resolve(&mut rec, &mut t, &captured(0, 10, 0x1010, &[(2, 0)]));
    res.resolve(&mut rec, &mut t, &captured(0, 11, 0x2010, &[(3, 0)]));
    // Each blob listed at its first sample of the chunk, without its instructions.
    assert_eq!(listed(&rec), [(0x1000, 0), (0x2000, 0)]);
    res.resolve(&mut rec, &mut t, &captured(0, 12, 0x1020, &[(2, 0)]));
    // The second sample adds them, in the entry the chunk has.
    assert_eq!(listed(&rec), [(0x1000, 0x100), (0x2000, 0)]);
    assert!(rec.code[0].bytes.iter().all(|&b| b == 0x90));
    rec.code.clear();
    res.chunk_written();
    res.resolve(&mut rec, &mut t, &captured(0, 20, 0x1030, &[(2, 0)]));
    res.resolve(&mut rec, &mut t, &captured(0, 21, 0x2030, &[(3, 0)]));
    // A later chunk lists the hot blob again, without the instructions written already; the
    // other blob's second sample of the session brings its own.
    assert_eq!(listed(&rec), [(0x1000, 0), (0x2000, 0x100)]);
    // New code at the same address counts from zero: its first sample lists it bare.
    rec.code.clear();
    res.chunk_written();
    res.timeline.push(CodeEvent::Unload { time: 25, start: 0x2000 });
    let new = hpm_profile::codemap::CodeBytes::copy(&[0xc3; 0x80]);
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(3, 0x2000, 0x80, vec![], 30).with_code(new)));
    res.resolve(&mut rec, &mut t, &captured(0, 40, 0x2010, &[(3, 0)]));
    assert_eq!(listed(&rec), [(0x2000, 0)]);
    res.resolve(&mut rec, &mut t, &captured(0, 41, 0x2020, &[(3, 0)]));
    assert_eq!(listed(&rec), [(0x2000, 0x80)]);
    assert_eq!(rec.code[0].loaded_at, 30);
}

/// [`Pointers`] counting the lines asked (one per Java frame named).
struct Lines(Pointers, u64);

impl JavaMethods for Lines {
    fn describe(&mut self, id: u64) -> Option<MethodInfo> {
        self.0.describe(id)
    }
    fn line(&mut self, id: u64, bci: i32) -> i32 {
        self.1 += 1;
        self.0.line(id, bci)
    }
    fn by_pointer(&mut self, method: u64) -> Option<MethodPointer> {
        self.0.by_pointer(method)
    }
}

#[test]
fn leaf_pcs_of_one_scope_are_named_once() {
    use hpm_capture::hotspot::{RawFrame, Stop};
    let mut res = outer_with_inlined_callees();
    let mut rec = recording();
    let mut jm = Lines(Pointers(table(), 0, 1), 0);
    let at = |leaf: u64| {
        let raw = [
            RawFrame::Compiled { pc: leaf, method: 0, interrupted: true },
            RawFrame::Compiled { pc: 0x1060, method: 0, interrupted: false },
        ];
        vm_captured(10, leaf, &raw, Stop::Bottom)
    };
    let first = res.resolve(&mut rec, &mut jm, &at(0x1030));
    assert_eq!(names(&rec, &first), ["Main.leaf", "Main.inner", "Main.outer", "Main.inner", "Main.outer"]);
    let asked = jm.1;
    // Another pc before the same scope's end: a raw stack of its own, its frames the scope's,
    // no line asked again, no frame named (the two named are the first stack's).
    let second = res.resolve(&mut rec, &mut jm, &at(0x1038));
    assert!(std::sync::Arc::ptr_eq(&first.stack, &second.stack));
    assert_eq!((jm.1, res.stats.frames_named), (asked, 2));
    // The blob replaced by another at the same start: its scopes, not the cached ones.
    res.timeline.push(CodeEvent::Unload { time: 20, start: 0x1000 });
    let scopes = vec![PcScope { pc: 0x1040, frames: vec![(2, 5)] }, PcScope { pc: 0x1060, frames: vec![(2, 6)] }];
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 21)));
    let mut c = at(0x1034);
    c.raw.time = 30;
    let third = res.resolve(&mut rec, &mut jm, &c);
    assert_eq!(names(&rec, &third), ["Main.outer", "Main.outer"]);
    assert!(jm.1 > asked);
}

#[test]
fn a_new_leaf_over_known_callers_names_the_leaf_alone() {
    use hpm_capture::hotspot::{RawFrame, Stop};
    let mut res = SampleResolver::default();
    let scopes = vec![
        PcScope { pc: 0x1040, frames: vec![(4, 3), (2, 11)] },
        PcScope { pc: 0x1050, frames: vec![(3, 5), (2, 11)] },
        PcScope { pc: 0x1060, frames: vec![(3, 8), (2, 12)] },
    ];
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5)));
    let mut rec = recording();
    let mut jm = Pointers(table(), 0, 1);
    let at = |leaf: u64| {
        let raw = [
            RawFrame::Compiled { pc: leaf, method: 0, interrupted: true },
            RawFrame::Compiled { pc: 0x1060, method: 0, interrupted: false },
            RawFrame::Interpreted { method: 0x7000, bcp: 0x9000_0010 + 9 },
        ];
        vm_captured(10, leaf, &raw, Stop::Bottom)
    };
    let first = res.resolve(&mut rec, &mut jm, &at(0x1030));
    assert_eq!(names(&rec, &first), ["Main.leaf", "Main.outer", "Main.inner", "Main.outer", "Main.run"]);
    // Entered twice: the whole raw stack, and its callers as a stack of their own.
    assert_eq!((res.stats.frames_named, res.stacks_made(), res.vm_stacks.len()), (3, 1, 2));
    // The leaf in another scope: one frame named, the callers' shared copy under it; the
    // whole the same shared stack a naming of every frame would give.
    let second = res.resolve(&mut rec, &mut jm, &at(0x1048));
    assert_eq!(names(&rec, &second), ["Main.inner", "Main.outer", "Main.inner", "Main.outer", "Main.run"]);
    assert_eq!((res.stats.frames_named, res.stacks_made(), res.vm_stacks.len()), (4, 2, 3));
    let whole: Vec<Frame> = second.stack.to_vec();
    assert!(std::sync::Arc::ptr_eq(&res.interner.intern(&whole), &second.stack));
    // The callers' code replaced: named anew (the interpreted frame's Method* asked again).
    res.timeline.push(CodeEvent::Unload { time: 20, start: 0x1000 });
    res.timeline.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, Vec::new(), 21)));
    let mut c = at(0x1034);
    c.raw.time = 30;
    let third = res.resolve(&mut rec, &mut jm, &c);
    assert_eq!(names(&rec, &third), ["Main.outer", "Main.outer", "Main.run"]);
}

#[test]
fn new_callers_are_made_above_a_known_stack_of_their_callers() {
    use hpm_capture::hotspot::{RawFrame, Stop};
    let code = || {
        let scopes = [(0x1010, 1), (0x1020, 2), (0x1030, 3), (0x1040, 4), (0x1050, 1), (0x1060, 2)]
            .iter()
            .map(|&(pc, m)| PcScope { pc, frames: vec![(m, pc as i32 & 0xff)] })
            .collect();
        CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, scopes, 5))
    };
    let mut res = SampleResolver::default();
    res.timeline.push(code());
    let mut rec = recording();
    let mut jm = Pointers(table(), 0, 1);
    let at = |callers: &[u64]| {
        let mut raw = vec![RawFrame::Compiled { pc: 0x1038, method: 0, interrupted: true }];
        raw.extend(callers.iter().map(|&pc| match pc {
            // Code the map does not have: named by its `Method*`, not kept.
            0x2010 => RawFrame::Compiled { pc, method: 0x7000, interrupted: false },
            _ => RawFrame::Compiled { pc, method: 0, interrupted: false },
        }));
        raw.push(RawFrame::Interpreted { method: 0x7000, bcp: 0x9000_0010 + 9 });
        vm_captured(10, 0x1038, &raw, Stop::Bottom)
    };
    let bases = |res: &SampleResolver, s: &Stack| {
        std::iter::successors(Some(s.clone()), |b| res.interner.base_of(b).cloned()).skip(1).collect::<Vec<Stack>>()
    };
    // A stack whose callers are the interpreted frame's caller at 0x1030: entered with them.
    let first = res.resolve(&mut rec, &mut jm, &at(&[0x1030]));
    assert_eq!(names(&rec, &first), ["Main.leaf", "Main.inner", "Main.run"]);
    assert_eq!((res.stacks_made(), res.vm_stacks.len()), (1, 2));
    let first_bases = bases(&res, &first.stack);
    assert_eq!(first_bases.iter().map(|b| b.len()).collect::<Vec<_>>(), [2]);

    // Callers new, their callers too, theirs the first stack's: the two frames above those
    // named, the callers made above them (and entered with the whole).
    for (made, top) in [(2, [0x1010, 0x1020]), (3, [0x1050, 0x1060])] {
        let s = res.resolve(&mut rec, &mut jm, &at(&[top[0], top[1], 0x1030]));
        let want = ["Main.leaf", "Main.run", "Main.outer", "Main.inner", "Main.run"];
        assert_eq!(names(&rec, &s), want);
        assert_eq!((res.stacks_made(), res.vm_stacks.len()), (made, 2 * made as usize));
        let below = bases(&res, &s.stack);
        assert_eq!(below.iter().map(|b| b.len()).collect::<Vec<_>>(), [4, 2]);
        assert!(std::sync::Arc::ptr_eq(&below[1], &first_bases[0]));
    }
    let second = res.resolve(&mut rec, &mut jm, &at(&[0x1050, 0x1060, 0x1030]));
    // The frames a resolver naming every frame gives.
    let mut fresh = SampleResolver::default();
    fresh.timeline.push(code());
    let mut fresh_rec = recording();
    let alone = fresh.resolve(&mut fresh_rec, &mut Pointers(table(), 0, 1), &at(&[0x1050, 0x1060, 0x1030]));
    let key = |r: &Recording, s: &Sample| -> Vec<(String, i32, i32, FrameKind)> {
        s.stack.iter().map(|f| (r.method(f.method).display_name(), f.bci, f.line, f.kind)).collect()
    };
    assert_eq!(key(&rec, &second), key(&fresh_rec, &alone));

    // The callers made above the first stack's rest on its interpreted frame's Method* too:
    // after a collection that moved it elsewhere, named anew.
    jm.2 = 3;
    res.gc_finish(20);
    let moved = res.resolve(&mut rec, &mut jm, &at(&[0x1050, 0x1060, 0x1030]));
    assert_eq!(names(&rec, &moved), ["Main.leaf", "Main.run", "Main.outer", "Main.inner", "Main.inner"]);

    // Callers with code the map does not have yet: named above the known stack below them,
    // not entered.
    let third = at(&[0x1050, 0x2010, 0x1030]);
    let named = res.stats.frames_named;
    let entries = res.vm_stacks.len();
    let s = res.resolve(&mut rec, &mut jm, &third);
    assert_eq!(names(&rec, &s), ["Main.leaf", "Main.run", "Main.inner", "Main.inner", "Main.inner"]);
    assert_eq!(res.vm_stacks.len(), entries);
    assert_eq!(res.stats.frames_named, named + 1, "the frame at 0x2010 alone");
    res.resolve(&mut rec, &mut jm, &third);
    assert_eq!(res.stats.frames_named, named + 2, "named again");
}

/// Names every id as its own method, counting the questions.
struct Numbered(u64);

impl JavaMethods for Numbered {
    fn describe(&mut self, id: u64) -> Option<MethodInfo> {
        self.0 += 1;
        Some(MethodInfo::java("p.C", &format!("m{id}"), "()V"))
    }
    fn line(&mut self, _id: u64, _bci: i32) -> i32 {
        -1
    }
}

#[test]
fn the_method_ids_kept_are_bounded_and_asked_again_past_the_bound() {
    let mut res = SampleResolver::default();
    let mut rec = recording();
    let mut jm = Numbered(0);
    let first = res.method_idx(&mut rec, &mut jm, 1);
    assert_eq!(res.method_idx(&mut rec, &mut jm, 1), first);
    assert_eq!(jm.0, 1, "an id is asked once while kept");
    for id in 2..=MAX_METHOD_IDS as u64 + 1 {
        res.method_idx(&mut rec, &mut jm, id);
        assert!(res.methods.len() <= MAX_METHOD_IDS);
    }
    // Started again when full: asked anew, the same method (the table keeps each method once).
    let asked = jm.0;
    assert_eq!(res.method_idx(&mut rec, &mut jm, 1), first);
    assert_eq!(jm.0, asked + 1);
    assert_eq!(rec.methods.len(), MAX_METHOD_IDS + 1);
}

/// A model of `tests/workloads/FaultsOrMath.java`: one thread alternates 2 ms of faulting (100
/// faults a ms) and 2 ms of arithmetic (none), with a clock sample every ms; the fault counter's
/// own overflow every 100 faults interrupts the faulting method. Charged by the interval, the
/// first clock sample of each arithmetic turn takes the faults of the half ms before it: math
/// gets a quarter of them. Charged by its own samples, math gets none.
#[test]
fn a_counter_that_samples_itself_charges_only_where_it_counted() {
    // (method: 0 faults, 1 math; source; faults counted so far)
    let mut events = Vec::new();
    let mut count = 0u64;
    for turn in 0..50u64 {
        let faulting = turn % 2 == 0;
        for _ms in 0..2 {
            for unit in 0..100 {
                if faulting {
                    count += 1;
                    if count.is_multiple_of(100) {
                        events.push((0, 1u8, count));
                    }
                }
                // The clock ticks mid-ms.
                if unit == 49 {
                    events.push((u8::from(!faulting), 0u8, count));
                }
            }
        }
    }
    let share_of_math = |periods: &[u64]| {
        let mut last = vec![0u64];
        let (mut math, mut all) = (0u64, 0u64);
        for &(method, source, value) in &events {
            if source > 0 && periods[0] == 0 {
                continue; // interval-attributed: no own samples
            }
            let d = counter_deltas(&[value], &mut last, periods, source)[0];
            all += d;
            if method == 1 {
                math += d;
            }
        }
        assert_eq!(all, count, "every fault charged once");
        100.0 * math as f64 / all as f64
    };
    assert!((share_of_math(&[0]) - 25.0).abs() < 1.0, "interval: {}", share_of_math(&[0]));
    assert_eq!(share_of_math(&[100]), 0.0);
    // A clock sample charges no sampled counter; an own sample charges only its counter.
    let mut last = vec![0, 0];
    assert_eq!(counter_deltas(&[10, 500], &mut last, &[0, 100], 0), [10, 0]);
    assert_eq!(counter_deltas(&[12, 600], &mut last, &[0, 100], 2), [0, 600]);
    assert_eq!(counter_deltas(&[15, 650], &mut last, &[0, 100], 0), [5, 0]);
    assert_eq!(last, [15, 600]);
}
