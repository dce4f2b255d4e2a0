//! Turns captured samples into model samples, off the hot path and in time order: code-map
//! events up to the sample's time are applied first, then the instruction pointer is placed
//! (JIT code, interpreter, stub, native library, kernel), the Java frames get methods, lines and
//! frame types, counter values become per-thread deltas, and the sample gets its VM component.

use crate::hash::IntMap;

use crate::capture::{
    asgct_error_name, CallFrame, Captured, BCI_NATIVE_FRAME, COMPARE_SPLIT, MAX_FRAMES, WALK_NOT_ATTEMPTED, WALK_SHARED,
};
use crate::codemap::{BlobKind, CodeMap, CodeTimeline};
use crate::component::{classify, is_kernel_address, IpSite};
use crate::kallsyms::KernelSymbols;
use crate::model::{Frame, FrameKind, MethodIdx, MethodInfo, Recording, Sample, ThreadIdx};
use crate::symbols::Symbolizer;

/// Method metadata from the JVM (JVMTI in the agent, a table in tests).
pub trait JavaMethods {
    /// Class, name, descriptor and source file of a jmethodID; `None` when the method is gone.
    fn describe(&mut self, id: u64) -> Option<MethodInfo>;
    /// Source line of `bci` in method `id`, -1 when unknown.
    fn line(&mut self, id: u64, bci: i32) -> i32;
    /// The method a `Method*` of hpm's own stack walker is, with where its bytecodes are;
    /// None when it is not a method the JVM has handed out an id for.
    fn by_pointer(&mut self, _method: u64) -> Option<MethodPointer> {
        None
    }
    /// A collection finished (methods may have been freed since they were named).
    fn collected(&mut self) {}
}

/// A `Method*` named: its jmethodID and its bytecodes' start and length (a bytecode pointer
/// in the interpreter is `code_start + bci`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodPointer {
    pub id: u64,
    pub code_start: u64,
    pub code_size: u32,
}

/// `ACC_NATIVE`: a Java method implemented in native code.
const ACC_NATIVE: u32 = 0x100;

/// Counts of samples kept with a pseudo-frame because their Java stack could not be walked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub java_ok: u64,
    /// Walks that succeeded only when restarted from the caller of a frameless stub/prologue.
    pub from_caller: u64,
    pub vm_thread: u64,
    pub failed: Vec<(String, u64)>,
    /// hpm's own walker: stacks kept whose bottom was not reached (a partial stack), by the
    /// reason the walk stopped.
    pub partial: Vec<(String, u64)>,
    /// hpm's own walker: frames dropped because their method was not known to the JVM's ids.
    pub unnamed_frames: u64,
    /// `stack=compare`: the two walkers on the same samples.
    pub compare: Comparison,
}

/// How hpm's own walker and AsyncGetCallTrace agreed on the same samples (`stack=compare`):
/// stacks compared as method sequences, leaf first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Samples of Java threads both walked.
    pub samples: u64,
    /// Both found Java frames ...
    pub both: u64,
    /// ... the same methods in the same order (up to the shorter one when either was cut at
    /// the depth limit) ...
    pub same_stack: u64,
    /// ... or at least the same leaf method ...
    pub same_leaf: u64,
    /// ... and where the stacks differ, one is the other with frames added at the bottom.
    pub vm_deeper: u64,
    pub asgct_deeper: u64,
    /// Only one walker found Java frames.
    pub vm_only: u64,
    pub asgct_only: u64,
}

impl Comparison {
    pub fn record(&mut self, vm: &[MethodIdx], asgct: &[MethodIdx], cut: bool) {
        self.samples += 1;
        match (vm.is_empty(), asgct.is_empty()) {
            (true, true) => return,
            (false, true) => {
                self.vm_only += 1;
                return;
            }
            (true, false) => {
                self.asgct_only += 1;
                return;
            }
            (false, false) => self.both += 1,
        }
        let n = vm.len().min(asgct.len());
        if vm == asgct || (cut && vm[..n] == asgct[..n]) {
            self.same_stack += 1;
        } else if vm[..n] == asgct[..n] {
            if vm.len() > n {
                self.vm_deeper += 1;
            } else {
                self.asgct_deeper += 1;
            }
        }
        if vm[0] == asgct[0] {
            self.same_leaf += 1;
        }
    }

    /// The summary line, None when nothing was compared.
    pub fn line(&self) -> Option<String> {
        if self.samples == 0 {
            return None;
        }
        let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
        Some(format!(
            "stack walkers on the same {} samples: Java frames found by hpm's {:.2}%, by AsyncGetCallTrace {:.2}% \
             (hpm only {}, ASGCT only {}); where both found some ({}): same stack {:.2}%, same leaf method {:.2}%, \
             hpm's deeper {}, ASGCT's deeper {}",
            self.samples,
            pct(self.both + self.vm_only, self.samples),
            pct(self.both + self.asgct_only, self.samples),
            self.vm_only,
            self.asgct_only,
            self.both,
            pct(self.same_stack, self.both),
            pct(self.same_leaf, self.both),
            self.vm_deeper,
            self.asgct_deeper,
        ))
    }
}

/// What a resolver learned of native code that holds for the whole process: the libraries'
/// symbol tables (with their debug files) and the kernel's function names. Reading them is most
/// of a session's fixed cost (libjvm.so alone has ~60,000 symbols, /proc/kallsyms ~120,000
/// lines), so the agent hands them from one session to the next.
#[derive(Default)]
pub struct NativeCode {
    symbolizer: Symbolizer,
    kernel: Option<KernelSymbols>,
}

/// Collections kept to mark samples that ran during one.
const GC_KEPT: usize = 64;

#[derive(Default)]
pub struct SampleResolver {
    pub timeline: CodeTimeline,
    pub symbolizer: Symbolizer,
    pub stats: WalkStats,
    /// Whether the sampling event reports data addresses.
    pub data_addresses: bool,
    methods: IntMap<u64, MethodIdx>,
    last_counters: IntMap<ThreadIdx, Vec<u64>>,
    /// Kernel function names, read at the first kernel call chain.
    kernel_symbols: Option<KernelSymbols>,
    /// Kernel addresses already named (bounded: cleared when full).
    kernel_frames: IntMap<u64, MethodIdx>,
    /// Per thread, the Java frames of a walked record that later records of the same signal
    /// share (`Captured::shares_walk`); taken by the next record of that thread.
    shared_walks: IntMap<ThreadIdx, Vec<Frame>>,
    gc: Vec<(u64, u64)>,
    open_gc: Option<u64>,
    last_maps_refresh: u64,
    /// Raw stacks of hpm's own walker already named, each resolved once (as async-profiler's
    /// call-trace storage does): valid while the code map and the methods stay as they were
    /// (cleared when the map changes and after each collection, which can free methods).
    vm_stacks: IntMap<RawStackKey, (Vec<Frame>, u64)>,
    /// The key of the stack being looked up (reused: no allocation on a hit).
    vm_key: RawStackKey,
    /// The Java frames of each physical frame already named (a compiled frame's pc, an
    /// interpreted frame's method and bytecode): most stacks differ somewhere but share most
    /// of their frames. Kept and cleared with `vm_stacks`.
    vm_frames: IntMap<(u8, u64, u64), Vec<Frame>>,
    vm_stacks_generation: u64,
}

/// `vm_frames` keys: a compiled frame's pc, an interpreted frame's method and bytecode.
const TAG_COMPILED_KEY: u8 = 1;
const TAG_INTERPRETED_KEY: u8 = 2;

/// Whether the frames named for a raw frame may be reused for its next occurrence.
enum Named {
    Cached,
    Uncached,
}

/// A raw stack of hpm's own walker as recorded: (lineno, value, tag) per slot.
type RawStackKey = Vec<(i32, u64, u8)>;

/// Distinct raw stacks remembered at most (cleared when full).
const MAX_VM_STACKS: usize = 1 << 16;

impl SampleResolver {
    pub fn gc_start(&mut self, t: u64) {
        self.open_gc = Some(t);
    }

    pub fn gc_finish(&mut self, t: u64) {
        let start = self.open_gc.take().unwrap_or(t);
        // Only the latest collections can still matter (samples resolve within ~100 ms of
        // their time): bounded, however long the session runs.
        if self.gc.len() >= 2 * GC_KEPT {
            self.gc.drain(..GC_KEPT);
        }
        self.gc.push((start, t));
        self.vm_stacks.clear();
        // Interpreted frames name a Method*, which a collection may free; compiled frames
        // depend on the code map only.
        self.vm_frames.retain(|k, _| k.0 != TAG_INTERPRETED_KEY);
    }

    /// Takes what this resolver learned of native code, for the next session.
    pub fn take_native(&mut self) -> NativeCode {
        NativeCode { symbolizer: std::mem::take(&mut self.symbolizer), kernel: self.kernel_symbols.take() }
    }

    /// Starts from what an earlier session learned of native code (library mappings are
    /// re-read: see [`Symbolizer::refresh`]).
    pub fn set_native(&mut self, n: NativeCode) {
        self.symbolizer = n.symbolizer;
        self.kernel_symbols = n.kernel;
        self.kernel_frames.clear();
    }

    fn gc_active(&self, t: u64) -> bool {
        self.open_gc.is_some_and(|s| s <= t) || self.gc.iter().rev().take(GC_KEPT).any(|&(s, e)| s <= t && t <= e)
    }

    fn method_idx(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, id: u64) -> MethodIdx {
        if let Some(&i) = self.methods.get(&id) {
            return i;
        }
        let info = jm.describe(id).unwrap_or_else(|| MethodInfo::native("[unknown method]"));
        let i = rec.methods.intern(info);
        self.methods.insert(id, i);
        i
    }

    fn pseudo(rec: &mut Recording, name: &str, kind: FrameKind) -> Frame {
        Frame { method: rec.methods.intern(MethodInfo::native(name)), bci: -1, line: -1, kind }
    }

    /// Resolves one captured sample. `counters` is the number of counters in the group.
    pub fn resolve(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, c: &Captured) -> Sample {
        let raw = &c.raw;
        self.timeline.advance_to(raw.time);
        let ip = if raw.ip != 0 { raw.ip } else { raw.user_ip };
        let (thread_name, is_java) =
            rec.threads.get(c.thread as usize).map(|t| (t.name.clone(), t.is_java)).unwrap_or_default();

        let native = self.place_ip(ip, raw.time);
        let site = match &native {
            Placed::Code(k, _) => *k,
            Placed::Lib(lib, sym) => IpSite::Library { lib, symbol: sym },
            Placed::Kernel => IpSite::Kernel,
            Placed::Anonymous => IpSite::Anonymous,
            Placed::Unknown => IpSite::Unknown,
        };
        let component = classify(&thread_name, is_java, site, self.gc_active(raw.time));

        let mut stack = Vec::with_capacity(c.java_frames().len() + 2 + raw.kernel_frames().len());
        // Leaf: the native function or stub the thread was in, if not Java code.
        match &native {
            Placed::Kernel if raw.nkernel > 0 => self.push_kernel_frames(rec, raw.kernel_frames(), &mut stack),
            Placed::Kernel => stack.push(Self::pseudo(rec, "[kernel]", FrameKind::Kernel)),
            other => Self::push_native_frame(rec, other, &mut stack),
        }

        // In the kernel: the user-mode code that entered it (a system call in libc, say) is the
        // next frame, from the user registers the kernel saved with the sample.
        if matches!(native, Placed::Kernel) && raw.regs_abi != 0 && raw.user_ip != 0 && !is_kernel_address(raw.user_ip)
        {
            let entered = self.place_ip(raw.user_ip, raw.time);
            Self::push_native_frame(rec, &entered, &mut stack);
        }

        // A walk restarted at the caller (return address taken from the stack pointer) is only
        // right where the code is frameless: a stub. In a compiled method's prologue the frame
        // may already be half built, the word at the stack pointer is not the return address,
        // and the "caller" stack can skip frames; such samples keep the compiled method's exact
        // frames and count as walks that failed.
        let untrusted_retry = c.walk_from_caller && matches!(native, Placed::Code(IpSite::Jit, _));
        let java = if untrusted_retry || c.vm_walk { &[][..] } else { c.java_frames() };
        let vm_frames = if c.vm_walk && c.num_frames > 0 { self.vm_java_frames(rec, jm, c) } else { Vec::new() };
        if c.vm_walk && c.asgct_frames != WALK_NOT_ATTEMPTED && is_java {
            let n = (c.asgct_frames.max(0) as usize).min(MAX_FRAMES - COMPARE_SPLIT);
            let asgct: Vec<MethodIdx> = c.frames[COMPARE_SPLIT..COMPARE_SPLIT + n]
                .iter()
                .map(|f| self.method_idx(rec, jm, f.method_id))
                .collect();
            let vm: Vec<MethodIdx> = vm_frames.iter().map(|f| f.method).collect();
            let cut = c.vm_stop == crate::hotspot::Stop::Full as u8 || n >= MAX_FRAMES - COMPARE_SPLIT;
            self.stats.compare.record(&vm, &asgct, cut);
        }
        // A thread's shared walk serves the records right after it only.
        let shared = self.shared_walks.remove(&c.thread).filter(|_| c.num_frames == WALK_SHARED);
        let leaf_frames = stack.len();
        if let Some(frames) = shared {
            // Same stay in the kernel as the walked record before it: the same user stack.
            self.stats.java_ok += 1;
            stack.extend_from_slice(&frames);
            self.shared_walks.insert(c.thread, frames);
        } else if !vm_frames.is_empty() {
            self.stats.java_ok += 1;
            let stop = crate::hotspot::Stop::from_u8(c.vm_stop);
            if stop != crate::hotspot::Stop::Bottom {
                crate::model::count_reason(&mut self.stats.partial, stop.name(), 1);
            }
            stack.extend(vm_frames);
            if c.shares_walk {
                self.shared_walks.insert(c.thread, stack[leaf_frames..].to_vec());
            }
        } else if !java.is_empty() {
            self.stats.java_ok += 1;
            // The walk started at the caller of the stub the IP is in (its leaf frame above).
            let mut kinds_ip = ip;
            if c.walk_from_caller {
                self.stats.from_caller += 1;
                kinds_ip = 0;
            }
            let kinds = if c.exact_kinds {
                c.kinds[..java.len()].to_vec()
            } else {
                frame_kinds(&self.timeline.map, kinds_ip, java)
            };
            for (f, kind) in java.iter().zip(kinds) {
                let method = self.method_idx(rec, jm, f.method_id);
                // A compiled frame stopped at its entry has bci -1 (InvocationEntryBci), as in
                // the code map: it is about to run bytecode 0, so that is its position and line.
                let (bci, line) = if f.lineno == BCI_NATIVE_FRAME {
                    (-1, -1)
                } else {
                    (f.lineno.max(0), jm.line(f.method_id, f.lineno.max(0)))
                };
                stack.push(Frame { method, bci, line, kind });
            }
            if c.shares_walk {
                self.shared_walks.insert(c.thread, stack[leaf_frames..].to_vec());
            }
        } else if !untrusted_retry && (!is_java || c.num_frames == -3) {
            // A VM thread (GC worker, compiler, VM thread): its component is the root.
            self.stats.vm_thread += 1;
            if stack.is_empty() {
                stack.push(Self::pseudo(rec, &format!("[{}]", site_name(&native)), FrameKind::Unknown));
            }
            stack.push(Self::pseudo(rec, &format!("[{}]", component.name()), FrameKind::Unknown));
        } else {
            let reason = if untrusted_retry {
                "in_compiled_prologue"
            } else if c.num_frames == WALK_NOT_ATTEMPTED || c.num_frames == WALK_SHARED {
                "coalesced_signal"
            } else if c.vm_walk && c.num_frames > 0 {
                "no_named_Java_frame"
            } else if c.vm_walk {
                crate::hotspot::Stop::from_u8(c.vm_stop).name()
            } else {
                asgct_error_name(c.num_frames)
            };
            crate::model::count_reason(&mut self.stats.failed, reason, 1);
            if let Placed::Code(IpSite::Jit, _) = native {
                self.push_compiled_frames(rec, jm, ip, &mut stack);
            }
            stack.push(Self::pseudo(rec, &format!("[no Java stack: {reason}]"), FrameKind::Unknown));
        }

        Sample {
            time: raw.time,
            thread: c.thread,
            truncated: java.len() >= crate::capture::MAX_FRAMES
                || (c.vm_walk && c.vm_stop == crate::hotspot::Stop::Full as u8),
            stack: stack.into(),
            weight: raw.period,
            counters: self.counter_deltas(c),
            data_addr: (self.data_addresses && raw.addr != 0).then_some(raw.addr),
            ip,
            component,
            state: crate::capture::THREAD_STATES
                .get(usize::from(c.state))
                .filter(|n| !n.is_empty())
                .map(|n| rec.state_idx(n)),
        }
    }

    /// The Java frames of a stack hpm's own walker recorded (raw frames, top first): a pc of
    /// compiled code becomes its inline scope's frames from the code map (innermost first),
    /// or, for code the map does not have yet, the nmethod's method; an interpreter frame its
    /// method and bytecode index. Stubs and frames of methods the JVM has no id for are left
    /// out (the latter counted).
    fn vm_java_frames(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, c: &Captured) -> Vec<Frame> {
        let n = (c.num_frames.max(0) as usize).min(crate::capture::MAX_FRAMES);
        let generation = self.timeline.map.generation();
        if generation != self.vm_stacks_generation
            || self.vm_stacks.len() >= MAX_VM_STACKS
            || self.vm_frames.len() >= MAX_VM_STACKS
        {
            self.vm_stacks.clear();
            self.vm_frames.clear();
            self.vm_stacks_generation = generation;
        }
        self.vm_key.clear();
        self.vm_key.extend((0..n).map(|i| (c.frames[i].lineno, c.frames[i].method_id, c.kinds[i] as u8)));
        if let Some((frames, unnamed)) = self.vm_stacks.get(self.vm_key.as_slice()) {
            self.stats.unnamed_frames += unnamed;
            return frames.clone();
        }
        let key = self.vm_key.clone();
        let before = self.stats.unnamed_frames;
        let (frames, complete) = self.name_vm_frames(rec, jm, c, n);
        // A stack with code the map does not have yet is named again next time.
        if complete {
            self.vm_stacks.insert(key, (frames.clone(), self.stats.unnamed_frames - before));
        }
        frames
    }

    /// The frames, and whether every pc was in the code map.
    fn name_vm_frames(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        n: usize,
    ) -> (Vec<Frame>, bool) {
        let mut complete = true;
        let mut out = Vec::with_capacity(n + 8);
        for raw in crate::hotspot::raw_frames(&c.frames[..n], &c.kinds[..n]) {
            let key = match raw {
                crate::hotspot::RawFrame::Compiled { pc, interrupted, .. } => {
                    (TAG_COMPILED_KEY, pc, u64::from(interrupted))
                }
                crate::hotspot::RawFrame::Interpreted { method, bcp } => (TAG_INTERPRETED_KEY, method, bcp),
            };
            if let Some(frames) = self.vm_frames.get(&key) {
                out.extend_from_slice(frames);
                continue;
            }
            let start = out.len();
            match self.name_vm_frame(rec, jm, raw, &mut out) {
                Named::Cached => {
                    let frames = out[start..].to_vec();
                    self.vm_frames.insert(key, frames);
                }
                Named::Uncached => complete = false,
            }
        }
        (out, complete)
    }

    /// Appends the Java frames of one raw frame; whether they may be kept for its next
    /// occurrence (not when its code was missing from the map or its method unknown).
    fn name_vm_frame(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        raw: crate::hotspot::RawFrame,
        out: &mut Vec<Frame>,
    ) -> Named {
        match raw {
            crate::hotspot::RawFrame::Compiled { pc, method, interrupted } => {
                let (chain, named): (Vec<(u64, i32)>, Named) = match self.timeline.map.find(pc) {
                    Some(b) => match &b.kind {
                        BlobKind::Compiled { method, .. } => {
                            let scope = if interrupted { b.scope_after(pc) } else { b.scope_at(pc) };
                            (scope.map(|s| s.frames.clone()).unwrap_or_else(|| vec![(*method, -1)]), Named::Cached)
                        }
                        BlobKind::Interpreter | BlobKind::Stub => return Named::Cached,
                    },
                    None if method != 0 => match jm.by_pointer(method) {
                        Some(m) => (vec![(m.id, -1)], Named::Uncached),
                        None => {
                            self.stats.unnamed_frames += 1;
                            return Named::Uncached;
                        }
                    },
                    None => return Named::Uncached,
                };
                let last = chain.len().saturating_sub(1);
                for (k, (m, bci)) in chain.into_iter().enumerate() {
                    let kind = if k == last { FrameKind::JitCompiled } else { FrameKind::Inlined };
                    out.push(self.java_frame(rec, jm, m, bci.max(0), kind));
                }
                named
            }
            crate::hotspot::RawFrame::Interpreted { method, bcp } => {
                let Some(m) = jm.by_pointer(method) else {
                    self.stats.unnamed_frames += 1;
                    return Named::Uncached;
                };
                // Only the low 32 bits of the bytecode pointer were kept: the index is their
                // distance from the bytecodes' start, modulo 2^32.
                let bci = (bcp as u32).wrapping_sub(m.code_start as u32);
                let bci = if bci < m.code_size { bci as i32 } else { 0 };
                out.push(self.java_frame(rec, jm, m.id, bci, FrameKind::Interpreted));
                Named::Cached
            }
        }
    }

    /// One Java frame of method `id` at `bci`; a `native` method's frame is `Native`, without
    /// a line.
    fn java_frame(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        id: u64,
        bci: i32,
        kind: FrameKind,
    ) -> Frame {
        let method = self.method_idx(rec, jm, id);
        if rec.methods.get(method).modifiers & ACC_NATIVE != 0 {
            return Frame { method, bci: -1, line: -1, kind: FrameKind::Native };
        }
        Frame { method, bci, line: jm.line(id, bci), kind }
    }

    /// The frame of a native function (libjvm's: C++) or a stub the thread was in; nothing for
    /// Java code, the kernel or code hpm cannot place.
    fn push_native_frame(rec: &mut Recording, placed: &Placed, stack: &mut Vec<Frame>) {
        match placed {
            Placed::Lib(lib, sym) => {
                let kind = if lib.starts_with("libjvm") { FrameKind::Cpp } else { FrameKind::Native };
                stack.push(Self::pseudo(rec, sym, kind));
            }
            Placed::Code(IpSite::Stub, name) => stack.push(Self::pseudo(rec, name, FrameKind::Cpp)),
            _ => {}
        }
    }

    /// The sample standing for one period that `s`'s thread spent in the kernel before `s`
    /// (`KernelMode::Counted`): `s`'s stack under a `[kernel]` frame, at `s`'s time.
    pub fn kernel_time_sample(&mut self, rec: &mut Recording, s: &Sample) -> Sample {
        let mut stack = Vec::with_capacity(s.stack.len() + 1);
        stack.push(Self::pseudo(rec, "[kernel]", FrameKind::Kernel));
        stack.extend_from_slice(&s.stack);
        let (thread_name, is_java) =
            rec.threads.get(s.thread as usize).map(|t| (t.name.clone(), t.is_java)).unwrap_or_default();
        Sample {
            stack: stack.into(),
            counters: vec![0; s.counters.len()],
            data_addr: None,
            component: classify(&thread_name, is_java, IpSite::Kernel, self.gc_active(s.time)),
            ..s.clone()
        }
    }

    /// The kernel call chain (leaf first) as frames named from /proc/kallsyms; one `[kernel]`
    /// frame where the kernel hides its addresses.
    fn push_kernel_frames(&mut self, rec: &mut Recording, chain: &[u64], stack: &mut Vec<Frame>) {
        let syms = self.kernel_symbols.get_or_insert_with(KernelSymbols::load);
        if syms.is_empty() {
            stack.push(Self::pseudo(rec, "[kernel]", FrameKind::Kernel));
            return;
        }
        if self.kernel_frames.len() >= 1 << 16 {
            self.kernel_frames.clear();
        }
        for &addr in chain {
            let method = match self.kernel_frames.get(&addr) {
                Some(&m) => m,
                None => {
                    let name = syms.lookup(addr).unwrap_or("[kernel]");
                    let m = rec.methods.intern(MethodInfo::native(name));
                    self.kernel_frames.insert(addr, m);
                    m
                }
            };
            stack.push(Frame { method, bci: -1, line: -1, kind: FrameKind::Kernel });
        }
    }

    /// Uses `table` for kernel names instead of /proc/kallsyms (tests).
    pub fn set_kernel_symbols(&mut self, table: KernelSymbols) {
        self.kernel_symbols = Some(table);
        self.kernel_frames.clear();
    }

    /// The frames of the compiled code at `ip`, from its inline scope (innermost inlined
    /// method first, the compiled method last), with bytecode indexes and lines; nothing when
    /// `ip` is not in compiled code.
    fn push_compiled_frames(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, ip: u64, stack: &mut Vec<Frame>) {
        let Some(b) = self.timeline.map.find(ip) else { return };
        let Some(method) = b.method() else { return };
        let chain: Vec<(u64, i32)> = b.scope_at(ip).map(|s| s.frames.clone()).unwrap_or_else(|| vec![(method, -1)]);
        let last = chain.len().saturating_sub(1);
        for (k, (m, bci)) in chain.into_iter().enumerate() {
            let method = self.method_idx(rec, jm, m);
            // HotSpot describes a method's entry (prologue) with bci -1 (InvocationEntryBci):
            // the frame is about to run bytecode 0, so that is its position and line.
            let bci = bci.max(0);
            let line = jm.line(m, bci);
            let kind = if k == last { FrameKind::JitCompiled } else { FrameKind::Inlined };
            stack.push(Frame { method, bci, line, kind });
        }
    }

    fn place_ip(&mut self, ip: u64, now: u64) -> Placed {
        if is_kernel_address(ip) {
            return Placed::Kernel;
        }
        if let Some(b) = self.timeline.map.find(ip) {
            return match &b.kind {
                BlobKind::Compiled { .. } => Placed::Code(IpSite::Jit, String::new()),
                BlobKind::Interpreter => Placed::Code(IpSite::Interpreter, String::new()),
                BlobKind::Stub => Placed::Code(IpSite::Stub, b.name.clone()),
            };
        }
        if self.symbolizer.mapping(ip).is_none() && now.saturating_sub(self.last_maps_refresh) > 1_000_000_000 {
            // A library loaded since the last look, at most once a second.
            self.symbolizer.refresh();
            self.last_maps_refresh = now;
        }
        match self.symbolizer.mapping(ip) {
            None => Placed::Unknown,
            Some(m) if m.path.is_empty() || m.path.starts_with('[') => Placed::Anonymous,
            Some(_) => match self.symbolizer.resolve(ip) {
                Some(s) => Placed::Lib(s.lib, s.name),
                None => Placed::Unknown,
            },
        }
    }

    fn counter_deltas(&mut self, c: &Captured) -> Vec<u64> {
        let raw = &c.raw;
        if raw.nvalues <= 1 {
            return Vec::new();
        }
        // Scale for multiplexing (hardware counters shared with other users of the PMU).
        let scale = |v: u64| -> u64 {
            if raw.time_running > 0 && raw.time_running < raw.time_enabled {
                (v as u128 * raw.time_enabled as u128 / raw.time_running as u128) as u64
            } else {
                v
            }
        };
        let now: Vec<u64> = raw.values[1..raw.nvalues as usize].iter().map(|&v| scale(v)).collect();
        let last = self.last_counters.entry(c.thread).or_insert_with(|| vec![0; now.len()]);
        let deltas = now.iter().zip(last.iter()).map(|(n, l)| n.saturating_sub(*l)).collect();
        *last = now;
        deltas
    }
}

enum Placed {
    Code(IpSite<'static>, String),
    Lib(String, String),
    Kernel,
    Anonymous,
    Unknown,
}

fn site_name(p: &Placed) -> &'static str {
    match p {
        Placed::Code(..) => "code",
        Placed::Lib(..) => "native",
        Placed::Kernel => "kernel",
        Placed::Anonymous => "anonymous code",
        Placed::Unknown => "unknown code",
    }
}

/// Frame types for an AsyncGetCallTrace stack (leaf first). ASGCT does not report them, so:
/// the frames at the sampled pc come exactly from the JIT's inline scopes (innermost inlined
/// ... compiled method); deeper frames are judged from the code installed at the sample's time:
/// a method inlined into its caller's compiled code is `Inlined`, a method with compiled code
/// is `JitCompiled`, otherwise `Interpreted`.
pub fn frame_kinds(map: &CodeMap, ip: u64, frames: &[CallFrame]) -> Vec<FrameKind> {
    let n = frames.len();
    let mut kinds = vec![FrameKind::Interpreted; n];
    // Outer frames first, remembering the physical compiled frame that may inline callees.
    let mut physical: Option<u64> = None;
    for i in (0..n).rev() {
        let f = &frames[i];
        if f.lineno == BCI_NATIVE_FRAME {
            kinds[i] = FrameKind::Native;
            physical = None;
            continue;
        }
        let inlined = physical.is_some_and(|p| map.compiled_blobs(p).any(|b| b.inlines(f.method_id)));
        kinds[i] = if inlined {
            FrameKind::Inlined
        } else if map.is_compiled(f.method_id) {
            physical = Some(f.method_id);
            FrameKind::JitCompiled
        } else {
            physical = None;
            FrameKind::Interpreted
        };
    }
    // The frames at the sampled pc are known exactly.
    if let Some(b) = map.find(ip) {
        match &b.kind {
            BlobKind::Interpreter if n > 0 && frames[0].lineno != BCI_NATIVE_FRAME => kinds[0] = FrameKind::Interpreted,
            BlobKind::Compiled { method, .. } => {
                let chain: Vec<u64> =
                    b.scope_at(ip).map(|s| s.frames.iter().map(|f| f.0).collect()).unwrap_or_else(|| vec![*method]);
                if chain.len() <= n && chain.iter().zip(frames).all(|(m, f)| *m == f.method_id) {
                    let last = chain.len() - 1;
                    for (k, kind) in kinds.iter_mut().enumerate().take(chain.len()) {
                        *kind = if k == last { FrameKind::JitCompiled } else { FrameKind::Inlined };
                    }
                }
            }
            _ => {}
        }
    }
    kinds
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
