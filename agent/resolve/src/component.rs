//! Which part of the JVM a sample ran in (the papers' "JVM modules": GC, JIT compiler,
//! interpreter, class loading, runtime), from the thread's name, the native symbol under the
//! instruction pointer, and whether a GC was in progress.

pub use hpm_capture::perf_record::is_kernel_address;
use hpm_profile::model::VmComponent;

/// Component of a VM-internal thread, judged by its name alone (HotSpot's thread names).
pub fn thread_component(name: &str) -> Option<VmComponent> {
    const GC: [&str; 10] = [
        "GC Thread",
        "G1 ",
        "GC task",
        "Parallel GC",
        "ZWorker",
        "ZDirector",
        "ZDriver",
        "Shenandoah",
        "VM Periodic GC",
        "GC Worker",
    ];
    // Kernel thread names (`/proc/.../comm`) are cut at 15 bytes: "C2 CompilerThre".
    const JIT: [&str; 5] = ["C1 Compiler", "C2 Compiler", "CompilerThre", "JVMCI", "Sweeper thread"];
    if GC.iter().any(|p| name.starts_with(p)) {
        Some(VmComponent::Gc)
    } else if JIT.iter().any(|p| name.starts_with(p)) {
        Some(VmComponent::JitCompiler)
    } else {
        None
    }
}

/// Component of a libjvm.so function, judged by its C++ class (or function) name.
pub fn jvm_symbol_component(symbol: &str) -> VmComponent {
    let class = symbol.split("::").next().unwrap_or(symbol);
    let starts = |list: &[&str]| list.iter().any(|p| class.starts_with(p));
    const INTERPRETER: [&str; 5] =
        ["InterpreterRuntime", "TemplateInterpreter", "BytecodeInterpreter", "AbstractInterpreter", "TemplateTable"];
    const GC: [&str; 31] = [
        "G1",
        "PS",
        "Parallel",
        "Scavenge",
        "MarkSweep",
        "Shenandoah",
        "ZBarrier",
        "ZHeap",
        "ZMark",
        "ZRelocate",
        "GenCollect",
        "CollectedHeap",
        "DefNew",
        "Tenured",
        "SerialHeap",
        "CardTable",
        "WorkerThread",
        "WorkGang",
        "GangWorker",
        "OopStorage",
        "ReferenceProcessor",
        "WeakProcessor",
        "StringDedup",
        "PLAB",
        "MemAllocator",
        "ObjAllocator",
        "ObjArrayAllocator",
        "TaskQueue",
        "Mutable",
        "OopClosure",
        "BarrierSet",
    ];
    const JIT: [&str; 36] = [
        "Compile",
        "C2Compiler",
        "Compiler",
        "Phase",
        "Node",
        "Matcher",
        "LinearScan",
        "GraphBuilder",
        "LIR",
        "ci",
        "Parse",
        "Block",
        "Type",
        "CodeBuffer",
        "MacroAssembler",
        "Assembler",
        "C1",
        "Optimizer",
        "ValueStack",
        "BCEscape",
        "InlineTree",
        "ConnectionGraph",
        "IR",
        "Instruction",
        "PhiNode",
        "RegMask",
        "IndexSet",
        "Arena",
        "ResourceArea",
        "Dependencies",
        "Dict",
        "GraphKit",
        "LibraryCallKit",
        "CallGenerator",
        "PhaseIdealLoop",
        "SuperWord",
    ];
    const CLASS_LOADING: [&str; 19] = [
        "ClassFileParser",
        "ClassLoader",
        "SystemDictionary",
        "Verifier",
        "ClassVerifier",
        "StackMap",
        "Rewriter",
        "Dictionary",
        "SymbolTable",
        "ModuleEntry",
        "PackageEntry",
        "KlassFactory",
        "Metaspace",
        "ClassFileStream",
        "JVM_DefineClass",
        "jvm_define_class",
        "ClassListParser",
        "LoaderConstraintTable",
        "ConstantPool",
    ];
    if starts(&INTERPRETER) {
        VmComponent::Interpreter
    } else if starts(&CLASS_LOADING) {
        VmComponent::ClassLoading
    } else if starts(&GC) {
        VmComponent::Gc
    } else if starts(&JIT) {
        VmComponent::JitCompiler
    } else {
        VmComponent::Runtime
    }
}

/// Where the instruction pointer was, as far as the code map and the symbolizer could tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpSite<'a> {
    Jit,
    Interpreter,
    Stub,
    /// In a native library; the symbol if known.
    Library {
        lib: &'a str,
        symbol: &'a str,
    },
    Kernel,
    /// Anonymous memory no code event describes (typically JIT code not yet reported).
    Anonymous,
    Unknown,
}

/// Combines the evidence. A GC or compiler thread's time belongs to that component whatever
/// it executes (memset in a GC worker is GC work); otherwise the code decides, and VM code run
/// while a GC is in progress counts as GC.
pub fn classify(thread_name: &str, is_java_thread: bool, site: IpSite<'_>, gc_active: bool) -> VmComponent {
    if !is_java_thread {
        if let Some(c) = thread_component(thread_name) {
            return c;
        }
    }
    match site {
        IpSite::Jit => VmComponent::Java,
        IpSite::Interpreter => VmComponent::Interpreter,
        IpSite::Stub => VmComponent::Stubs,
        IpSite::Kernel => VmComponent::Kernel,
        IpSite::Anonymous => {
            if is_java_thread {
                VmComponent::Java
            } else {
                VmComponent::Unknown
            }
        }
        IpSite::Library { lib, symbol } => {
            if lib.starts_with("libjvm") {
                let c = jvm_symbol_component(symbol);
                if gc_active && c == VmComponent::Runtime && thread_name == "VM Thread" {
                    VmComponent::Gc
                } else {
                    c
                }
            } else {
                VmComponent::Native
            }
        }
        IpSite::Unknown => VmComponent::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use VmComponent::*;

    #[test]
    fn vm_threads_by_name() {
        assert_eq!(thread_component("GC Thread#0"), Some(Gc));
        assert_eq!(thread_component("G1 Conc#0"), Some(Gc));
        assert_eq!(thread_component("C2 CompilerThread0"), Some(JitCompiler));
        assert_eq!(thread_component("C2 CompilerThre"), Some(JitCompiler));
        assert_eq!(thread_component("main"), None);
    }

    #[test]
    fn jvm_symbols_by_class() {
        assert_eq!(jvm_symbol_component("G1ParEvacuateFollowersClosure::do_void"), Gc);
        assert_eq!(jvm_symbol_component("PhaseChaitin::Register_Allocate"), JitCompiler);
        assert_eq!(jvm_symbol_component("ClassFileParser::parse_stream"), ClassLoading);
        assert_eq!(jvm_symbol_component("InterpreterRuntime::resolve_from_cache"), Interpreter);
        assert_eq!(jvm_symbol_component("SafepointSynchronize::begin"), Runtime);
    }

    #[test]
    fn evidence_combines() {
        let libc = IpSite::Library { lib: "libc.so.6", symbol: "memset" };
        assert_eq!(classify("GC Thread#1", false, libc, false), Gc);
        assert_eq!(classify("main", true, libc, false), Native);
        assert_eq!(classify("main", true, IpSite::Jit, false), Java);
        assert_eq!(classify("main", true, IpSite::Anonymous, false), Java);
        let vm_op = IpSite::Library { lib: "libjvm.so", symbol: "VMThread::evaluate_operation" };
        assert_eq!(classify("VM Thread", false, vm_op, true), Gc);
        assert_eq!(classify("VM Thread", false, vm_op, false), Runtime);
        assert!(is_kernel_address(0xffff_ffff_8100_0000));
    }
}
