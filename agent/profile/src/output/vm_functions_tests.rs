use super::*;
use crate::model::{Frame, MethodInfo, ThreadInfo};
use crate::output::report::{full_report, ReportOptions, Tallies};

/// Stacks of a C2 compiler thread and a G1 worker as native unwinding gives them (leaf first,
/// down to the thread's entry), with Java samples beside.
struct Fixture {
    rec: Recording,
}

impl Fixture {
    fn new() -> Fixture {
        let mut rec = Recording::default();
        rec.add_thread(ThreadInfo {
            os_tid: 1,
            java_id: Some(1),
            name: "main".into(),
            is_java: true,
            is_virtual: false,
        });
        rec.add_thread(ThreadInfo {
            os_tid: 2,
            java_id: None,
            name: "C2 CompilerThread0".into(),
            is_java: false,
            is_virtual: false,
        });
        Fixture { rec }
    }

    /// `count` samples of `component` whose stack is `names` (leaf first): C++ frames, or with
    /// a `java:` prefix Java frames, `jni:` Java `native` methods, `k:` kernel frames.
    fn add(&mut self, component: VmComponent, names: &[&str], count: usize) {
        let frames: Vec<Frame> = names
            .iter()
            .map(|n| {
                let java = |j: &str| {
                    let (class, method) = j.rsplit_once('.').unwrap();
                    MethodInfo::java(class, method, "()V")
                };
                let (kind, info) = if let Some(j) = n.strip_prefix("java:") {
                    (FrameKind::JitCompiled, java(j))
                } else if let Some(j) = n.strip_prefix("jni:") {
                    (FrameKind::Native, java(j))
                } else if let Some(k) = n.strip_prefix("k:") {
                    (FrameKind::Kernel, MethodInfo::native(k))
                } else {
                    (FrameKind::Cpp, MethodInfo::native(n))
                };
                Frame { method: self.rec.methods.intern(info), bci: -1, line: -1, kind }
            })
            .collect();
        let stack: Stack = frames.into();
        for _ in 0..count {
            self.rec.samples.push(Sample { component, ..Sample::of_stack(stack.clone()) });
        }
    }
}

const C2_BASE: [&str; 9] = [
    "Compile::Compile",
    "C2Compiler::compile_method",
    "CompileBroker::invoke_compiler_on_method",
    "CompileBroker::compiler_thread_loop",
    "JavaThread::thread_main_inner",
    "Thread::call_run",
    "thread_native_entry",
    "start_thread",
    "clone3",
];

fn c2(leaf: &[&'static str]) -> Vec<&'static str> {
    leaf.iter().copied().chain(C2_BASE).collect()
}

const G1_BASE: [&str; 6] = [
    "G1EvacuateRegionsTask::work",
    "WorkerThread::run",
    "Thread::call_run",
    "thread_native_entry",
    "start_thread",
    "clone3",
];

fn g1(leaf: &[&'static str]) -> Vec<&'static str> {
    leaf.iter().copied().chain(G1_BASE).collect()
}

fn compiler_and_gc() -> Recording {
    let mut f = Fixture::new();
    let jit = VmComponent::JitCompiler;
    f.add(
        jit,
        &c2(&["PhaseIdealLoop::build_loop_tree", "PhaseIdealLoop::build_and_optimize", "Compile::Optimize"]),
        25,
    );
    f.add(jit, &c2(&["PhaseIdealLoop::build_and_optimize", "Compile::Optimize"]), 15);
    f.add(jit, &c2(&["PhaseChaitin::Register_Allocate", "Compile::Code_Gen"]), 30);
    // Recursion: the parser's frames twice on one stack count once.
    f.add(jit, &c2(&["Parse::do_all_blocks", "Parse::Parse", "Parse::do_all_blocks", "Parse::Parse"]), 10);
    let gc = VmComponent::Gc;
    f.add(
        gc,
        &g1(&["k:clear_page_erms", "G1ParScanThreadState::trim_queue", "G1ParEvacuateFollowersClosure::do_void"]),
        12,
    );
    f.add(gc, &g1(&["G1ParScanThreadState::trim_queue", "G1ParEvacuateFollowersClosure::do_void"]), 4);
    f.add(gc, &g1(&["G1RemSet::scan_heap_roots"]), 6);
    f.add(VmComponent::Java, &["java:app.Main.spin", "java:app.Main.main"], 50);
    // A leaf alone: nothing unwound for the VM runtime.
    f.add(VmComponent::Runtime, &["SharedRuntime::resolve_static_call_C"], 5);
    f.rec
}

#[test]
fn components_are_broken_down_by_inclusive_samples_without_their_shared_frames() {
    let rec = compiler_and_gc();
    let v = component_functions(&rec);
    let comps: Vec<VmComponent> = v.iter().map(|c| c.component).collect();
    // Java's own and the runtime's leaf-only samples are not broken down.
    assert_eq!(comps, [VmComponent::JitCompiler, VmComponent::Gc]);
    let jit = &v[0];
    assert_eq!(jit.samples, 80);
    let top: Vec<(&str, u64)> = jit.top.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    assert_eq!(
        top,
        [
            ("Compile::Optimize", 40),
            ("PhaseIdealLoop::build_and_optimize", 40),
            ("Compile::Code_Gen", 30),
            ("PhaseChaitin::Register_Allocate", 30),
            ("PhaseIdealLoop::build_loop_tree", 25),
        ]
    );
    // The nine frames every compiler sample has.
    assert_eq!(jit.generic, 9);
    let gc = &v[1];
    assert_eq!(gc.samples, 22);
    let top: Vec<(&str, u64)> = gc.top.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    // Kernel frames are the kernel's: not the GC's functions.
    assert_eq!(
        top,
        [
            ("G1ParEvacuateFollowersClosure::do_void", 16),
            ("G1ParScanThreadState::trim_queue", 16),
            ("G1RemSet::scan_heap_roots", 6)
        ]
    );
    assert_eq!(gc.generic, 6);
    assert_eq!(gc.unread, 0);
}

#[test]
fn a_function_on_ninety_percent_of_the_samples_is_generic_and_below_it_is_not() {
    let mut f = Fixture::new();
    let gc = VmComponent::Gc;
    f.add(gc, &["A::leaf", "Shared::ninety", "entry"], 5);
    f.add(gc, &["A2::leaf", "Shared::ninety", "entry"], 4);
    f.add(gc, &["B::leaf", "entry"], 1);
    f.add(VmComponent::JitCompiler, &["C::leaf", "Shared::eighty_nine", "entry"], 89);
    f.add(VmComponent::JitCompiler, &["D::leaf", "entry"], 11);
    let v = component_functions(&f.rec);
    let names = |c: &ComponentFunctions| c.top.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let jit = v.iter().find(|c| c.component == VmComponent::JitCompiler).unwrap();
    assert_eq!(names(jit), ["C::leaf", "Shared::eighty_nine", "D::leaf"]);
    let gc = v.iter().find(|c| c.component == VmComponent::Gc).unwrap();
    assert_eq!(names(gc), ["A::leaf", "A2::leaf", "B::leaf"]);
    assert_eq!(gc.generic, 2);
}

#[test]
fn stacks_past_the_bound_count_in_the_total_only() {
    let mut f = Fixture::new();
    // Each sample its own stack (as a reader that shared none would give).
    for _ in 0..MAX_STACKS + 3 {
        f.add(VmComponent::Gc, &["Work::leaf", "entry"], 1);
    }
    let v = component_functions(&f.rec);
    assert_eq!(v[0].samples, MAX_STACKS as u64 + 3);
    assert_eq!(v[0].unread, 3);
    // Both frames are on every sample read.
    assert_eq!(v[0].generic, 2);
    assert!(v[0].top.is_empty());
}

#[test]
fn the_report_shows_the_breakdown_below_the_components() {
    let rec = compiler_and_gc();
    let cct = crate::cct::Cct::from_recording(&rec, false);
    let r = full_report(Some(&rec), &cct, &Tallies::of(&rec), &ReportOptions::default());
    let at = r.find("== VM components by top functions").unwrap_or_else(|| panic!("{r}"));
    assert!(at > r.find("== VM components ==").unwrap());
    let section: Vec<&str> = r[at..].lines().skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(section[0], "JIT compiler (80 samples; 9 generic frames left out)");
    assert_eq!(section[1], "    50.00%         40  Compile::Optimize");
    assert_eq!(section[6], "GC (22 samples; 6 generic frames left out)");
    assert_eq!(section[7], "    72.73%         16  G1ParEvacuateFollowersClosure::do_void");
    assert_eq!(section.len(), 10, "{section:#?}");
}

#[test]
fn without_native_callers_the_report_has_no_breakdown() {
    let mut f = Fixture::new();
    f.add(VmComponent::Gc, &["G1ParScanThreadState::trim_queue"], 10);
    f.add(VmComponent::JitCompiler, &["k:clear_page_erms", "PhaseChaitin::Register_Allocate"], 10);
    // A Java `native` method under a library's leaf is the Java method's frame, not a caller.
    f.add(VmComponent::Native, &["write", "jni:java.io.FileOutputStream.writeBytes", "java:app.Main.main"], 10);
    assert!(component_functions(&f.rec).is_empty());
    let cct = crate::cct::Cct::from_recording(&f.rec, false);
    let r = full_report(Some(&f.rec), &cct, &Tallies::of(&f.rec), &ReportOptions::default());
    assert!(!r.contains("by top functions"), "{r}");
}

#[test]
fn thread_entries_are_generic_below_ninety_percent_too() {
    let mut f = Fixture::new();
    let jit = VmComponent::JitCompiler;
    // 8 of 9 samples reach the entry (88.9%), as on a real G1 run; one stopped short.
    f.add(jit, &c2(&["PhaseIdealLoop::build_loop_tree", "PhaseIdealLoop::build_and_optimize"]), 5);
    f.add(jit, &c2(&["PhaseChaitin::Register_Allocate", "Compile::Code_Gen"]), 3);
    f.add(jit, &["PhaseChaitin::Register_Allocate", "Compile::Code_Gen", "Compile::Compile"], 1);
    // JDK 17's GC workers: the gang's loop, and a concurrent thread's run.
    let gc = VmComponent::Gc;
    let gang =
        ["GangWorker::loop", "GangWorker::run", "Thread::call_run", "thread_native_entry", "start_thread", "clone"];
    let work = |w: &'static str| [w].into_iter().chain(gang).collect::<Vec<_>>();
    f.add(gc, &work("G1ParScanThreadState::trim_queue_to_threshold"), 6);
    f.add(gc, &work("G1ScanCardClosure::do_oop_work"), 3);
    f.add(gc, &["G1ConcurrentMark::mark_from_roots", "ConcurrentGCThread::run", "Thread::call_run"], 2);
    // The VM thread running a collection: its loop is generic, the operation is not.
    let vm_op = ["VM_G1CollectForAllocation::doit", "VMThread::inner_execute", "VMThread::run", "Thread::call_run"];
    f.add(gc, &vm_op, 1);
    let v = component_functions(&f.rec);
    let names = |c: &ComponentFunctions| c.top.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let jit = v.iter().find(|c| c.component == VmComponent::JitCompiler).unwrap();
    assert_eq!(
        names(jit),
        [
            "C2Compiler::compile_method",
            "PhaseIdealLoop::build_and_optimize",
            "PhaseIdealLoop::build_loop_tree",
            "Compile::Code_Gen",
            "PhaseChaitin::Register_Allocate"
        ]
    );
    // Compile::Compile is on all 9: generic by its share; the 7 entries and loops below it
    // (on 8 of 9) by the list; C2's own `C2Compiler::compile_method` (8 of 9) is not generic.
    assert_eq!(jit.generic, 1 + 7);
    let gc = v.iter().find(|c| c.component == VmComponent::Gc).unwrap();
    assert_eq!(
        names(gc),
        [
            "G1ParScanThreadState::trim_queue_to_threshold",
            "G1ScanCardClosure::do_oop_work",
            "G1ConcurrentMark::mark_from_roots",
            "VM_G1CollectForAllocation::doit"
        ]
    );
    // The gang's six, the concurrent thread's run and the VM thread's two.
    assert_eq!(gc.generic, 9);
}
