//! The VM components broken down by their top functions: for the JIT compiler, the GC and the
//! VM's other parts, which of its C++ (and native) functions its samples ran in, counted
//! inclusively (a sample counts once for each function on its stack), e.g. C2's
//! `PhaseIdealLoop::build_and_optimize` or G1's `G1ParScanThreadState::trim_queue`.
//!
//! The frames every sample of a component shares (the thread's entry, `Thread::call_run`,
//! `WorkerThread::run`, ...) say nothing about it: a function on at least
//! [`GENERIC_SHARE`] percent of the component's samples is left out, and so is a known thread
//! entry or worker loop ([`THREAD_ENTRIES`]) whatever its share (a component's samples from
//! stacks that did not reach their entry, or from threads of other kinds, can bring the
//! entry's share below the bound: 88.9% for a G1 run's JIT compiler). A component is broken
//! down only where native stacks were unwound (some sample has a native caller below its
//! leaf); a leaf alone is already the method table's self column.

use std::collections::HashMap;
use std::fmt::Write;

use crate::model::{Frame, FrameKind, MethodIdx, Recording, Sample, Stack, VmComponent};
use crate::text::{group, pct};

/// Functions listed per component.
pub const TOP_FUNCTIONS: usize = 5;

/// A function on at least this share (percent) of a component's samples is generic: left out.
pub const GENERIC_SHARE: u64 = 90;

/// Where threads start and the loops they wait for work in, on HotSpot 17 to 25: generic
/// whatever their share. glibc's `clone3`/`clone` and `start_thread`, HotSpot's
/// `thread_native_entry` and `Thread::call_run`, Java threads' (compiler threads are Java
/// threads) `JavaThread::run`/`thread_main_inner`, the compiler's `compiler_thread_loop` and
/// `invoke_compiler_on_method` (every compilation's, C1's and C2's: the compiler's own
/// `C2Compiler::compile_method` or `Compiler::compile_method` below it tells them apart), GC
/// workers' `WorkerThread::run` (21+) or `GangWorker::run`/`loop` (17), the concurrent GC
/// threads' `ConcurrentGCThread::run`, and the VM thread's loop (`VMThread::run`, `loop`,
/// `inner_execute`: the operation it runs is below them). As GcHeavy's G1 and Parallel runs
/// and their compiler threads show them on JDK 17 and 25.
pub const THREAD_ENTRIES: [&str; 16] = [
    "clone3",
    "clone",
    "start_thread",
    "thread_native_entry",
    "Thread::call_run",
    "JavaThread::run",
    "JavaThread::thread_main_inner",
    "CompileBroker::compiler_thread_loop",
    "CompileBroker::invoke_compiler_on_method",
    "WorkerThread::run",
    "GangWorker::run",
    "GangWorker::loop",
    "ConcurrentGCThread::run",
    "VMThread::run",
    "VMThread::loop",
    "VMThread::inner_execute",
];

/// Distinct stacks looked at per component at most; the samples of further stacks count in
/// the component's total only ([`ComponentFunctions::unread`]).
pub const MAX_STACKS: usize = 100_000;

/// Native functions looked at per stack at most (the deepest are left out).
const MAX_FRAMES: usize = 512;

/// One component's top functions.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentFunctions {
    pub component: VmComponent,
    /// The component's samples.
    pub samples: u64,
    /// Up to [`TOP_FUNCTIONS`] (name, inclusive samples), most first, ties by name.
    pub top: Vec<(String, u64)>,
    /// Functions left out as generic (on at least [`GENERIC_SHARE`]% of the samples, or a
    /// thread entry of [`THREAD_ENTRIES`]).
    pub generic: usize,
    /// Samples whose stacks were past [`MAX_STACKS`], not looked at.
    pub unread: u64,
}

/// Whether the component's samples run the VM's or a library's code (the method tables
/// already tell Java code apart; kernel frames are the kernel's).
fn broken_down(c: VmComponent) -> bool {
    !matches!(c, VmComponent::Java | VmComponent::Interpreter | VmComponent::Kernel | VmComponent::Unknown)
}

/// A frame of native code: the VM's C++ or a library's symbol (not a Java `native` method,
/// whose frame is a Java method's).
fn native(rec: &Recording, f: &Frame) -> bool {
    matches!(f.kind, FrameKind::Cpp | FrameKind::Native) && rec.method(f.method).class_name.is_empty()
}

/// One component's samples by distinct stack.
#[derive(Default)]
struct Stacks<'a> {
    all: u64,
    stacks: HashMap<*const u8, (&'a Stack, u64)>,
    /// Samples of stacks past [`MAX_STACKS`].
    unread: u64,
}

/// Per component (in [`VmComponent::ALL`] order) its top functions, for the components whose
/// samples have native callers.
pub fn component_functions(rec: &Recording) -> Vec<ComponentFunctions> {
    // Samples per distinct stack first: a component's samples share few stacks.
    let mut by_stack: HashMap<VmComponent, Stacks> = HashMap::new();
    for s in rec.samples.iter().filter(|s| broken_down(s.component)) {
        let Stacks { all, stacks, unread } = by_stack.entry(s.component).or_default();
        *all += s.count();
        let key = stack_key(s);
        let full = stacks.len() >= MAX_STACKS;
        match stacks.get_mut(&key) {
            Some((_, n)) => *n += s.count(),
            None if !full => {
                stacks.insert(key, (&s.stack, s.count()));
            }
            None => *unread += s.count(),
        }
    }
    let mut out = Vec::new();
    for c in VmComponent::ALL {
        let Some(Stacks { all, stacks, unread }) = by_stack.remove(&c) else { continue };
        let unwound = stacks.values().any(|(st, _)| st.iter().filter(|f| native(rec, f)).nth(1).is_some());
        if !unwound {
            continue;
        }
        let mut inclusive: HashMap<MethodIdx, u64> = HashMap::new();
        let mut on_stack: Vec<MethodIdx> = Vec::new();
        for (stack, n) in stacks.values() {
            on_stack.clear();
            on_stack.extend(stack.iter().filter(|f| native(rec, f)).take(MAX_FRAMES).map(|f| f.method));
            // Recursion counts once per sample.
            on_stack.sort_unstable();
            on_stack.dedup();
            for m in &on_stack {
                *inclusive.entry(*m).or_default() += n;
            }
        }
        let read = all - unread;
        let generic = |n: u64| n * 100 >= GENERIC_SHARE * read;
        let mut top: Vec<(String, u64)> = Vec::new();
        let mut skipped = 0;
        for (m, n) in inclusive {
            let name = rec.method(m).display_name();
            if generic(n) || THREAD_ENTRIES.contains(&name.as_str()) {
                skipped += 1;
            } else {
                top.push((name, n));
            }
        }
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top.truncate(TOP_FUNCTIONS);
        out.push(ComponentFunctions { component: c, samples: all, top, generic: skipped, unread });
    }
    out
}

/// Appends the `== VM components by top functions ==` table; nothing where no component was
/// broken down.
pub(crate) fn functions_table(out: &mut String, functions: &[ComponentFunctions]) {
    if functions.iter().all(|c| c.top.is_empty()) {
        return;
    }
    let _ = writeln!(
        out,
        "\n== VM components by top functions: samples on the stack (threads' entries and frames on \
         {GENERIC_SHARE}% or more of a component's samples left out) =="
    );
    for c in functions.iter().filter(|c| !c.top.is_empty()) {
        let mut title = format!("{} ({} samples", c.component.name(), group(c.samples));
        if c.generic > 0 {
            let _ = write!(title, "; {} generic frames left out", group(c.generic as u64));
        }
        if c.unread > 0 {
            let _ = write!(title, "; {} samples past {} stacks not read", group(c.unread), group(MAX_STACKS as u64));
        }
        let _ = writeln!(out, "{title})");
        for (name, n) in &c.top {
            let _ = writeln!(out, "{:>10} {:>10}  {name}", pct(*n, c.samples), group(*n));
        }
    }
}

/// The stack's identity: samples read from one stored stack share it.
fn stack_key(s: &Sample) -> *const u8 {
    std::sync::Arc::as_ptr(&s.stack) as *const u8
}

#[cfg(test)]
#[path = "vm_functions_tests.rs"]
mod tests;
