//! Turns captured samples into model samples, off the hot path and in time order: code-map
//! events up to the sample's time are applied first, then the instruction pointer is placed
//! (JIT code, interpreter, stub, native library, kernel), the Java frames get methods, lines and
//! frame types, counter values become per-thread deltas, and the sample gets its VM component.

use hpm_profile::phase_timing::{Phase, Timer};
use std::sync::Arc;

use hpm_profile::hash::IntMap;

use crate::component::{classify, is_kernel_address, IpSite};
use crate::kallsyms::KernelSymbols;
use crate::symbols::Symbolizer;
use hpm_capture::capture::{
    Asgct, AsgctError, CallFrame, Captured, RawKey, RawWalk, SlotKind, StackKind, BCI_NATIVE_FRAME, COMPARE_SPLIT,
    MAX_FRAMES,
};
use hpm_capture::operand::MemoryAccess;
use hpm_profile::codemap::{BlobKind, CodeMap, CodeTimeline};
use hpm_profile::model::{
    DataTarget, Frame, FrameKind, MethodIdx, MethodInfo, MethodTable, Recording, Sample, Stack, ThreadIdx, VmComponent,
};

mod asgct;
mod compare;
mod data;
mod jvm_frames;
mod place;
mod raw_walk;
mod shared;
mod stats;
mod walker;

use data::Metadata;
pub use place::frame_kinds;
use place::{site_name, CodeSeen, Placed, RecentBlobs};
pub use stats::{Comparison, WalkStats};
use walker::{VmFrames, VmStacks, MAX_VM_STACKS};

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
    /// The `Method*`s [`Self::by_pointer`] is about to be asked about, all at once (the agent
    /// reads what it does not know of them in a few system calls for all).
    fn prefetch_pointers(&mut self, _methods: &[u64]) {}
    /// A collection finished (methods may have been freed since they were named).
    fn collected(&mut self) {}
    /// Reads the JVM's class metadata at `addr` (for `data`'s object identification); false
    /// when unreadable.
    fn read_metadata(&mut self, _addr: u64, _buf: &mut [u8]) -> bool {
        false
    }
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

/// What a resolver learned of native code that holds for the whole process: the libraries'
/// symbol tables (with their debug files) and the kernel's function names. Reading them is most
/// of a session's fixed cost (libjvm.so alone has ~60,000 symbols, /proc/kallsyms ~120,000
/// lines), so the agent hands them from one session to the next.
#[derive(Default)]
pub struct NativeCode {
    symbolizer: Symbolizer,
    kernel: Option<KernelSymbols>,
}

/// What a resolver learned of Java code, for the next session: the method table every frame it
/// made indexes, and what it named by physical frame and by raw stack. A session that starts
/// from it starts its recording's method table from that table (the ended session's profile
/// keeps a copy), so the frames stay valid as they are; the names are checked as after a
/// collection at their first use (collections between sessions go unseen), and compiled
/// frames' against the code map, which outlives sessions too. Not its names by jmethodID: a
/// freed id's slot may be given to another method (old versions of redefined methods), and
/// only the agent's per-process names check every id's slot when a session starts, so each
/// session asks them again (a hit there, and the same index in the carried table). Without
/// it every session named every stack, frame and method anew: its samples' stacks are most
/// of them new to it, however often the process met them before.
pub struct JavaNames {
    table: MethodTable,
    pseudo_ids: IntMap<String, MethodIdx>,
    kernel_frames: IntMap<u64, MethodIdx>,
    vm_stacks: VmStacks,
    hasher: hpm_profile::hash::FastBuild,
    vm_frames: VmFrames,
    interner: hpm_profile::interned::StackInterner,
    collections: u64,
    /// The stacks were named with their frame groups ([`ResolverConfig::frame_groups`]).
    grouped: bool,
}

/// Methods a session hands to the next at most: past it the next starts anew (the table, and
/// the copy of it each ended session keeps, would otherwise grow with every method ever
/// sampled). ~1.2 KB each with the copy and its keys: at 16,384 the soak's heap rose and fell
/// by 17 MB as the table filled and started anew, at 8,192 by 11 MB (docs/design.md, "Stress
/// and soak"); the paired benchmark's sessions add 14-65 methods each.
pub const MAX_CARRIED_METHODS: usize = 1 << 13;

/// Named stacks (and named physical frames) a session hands to the next at most: past it the
/// next names its stacks anew. Each costs ~1 KB with its interned frames and memo entries, and
/// a process that keeps making code (classes loaded through throwaway loaders, each new to the
/// stacks) made a few thousand new ones every session: the soak test's agent heap grew by ~8
/// MB a minute, to 90 MB in five; with this bound (and 8,192 methods) it stayed within 38-50
/// MB for ten minutes (docs/design.md, "Stress and soak").
pub const MAX_CARRIED_STACKS: usize = 1 << 13;

/// jmethodIDs a session keeps the method of at most (then started again).
const MAX_METHOD_IDS: usize = 1 << 18;

/// Collections kept to mark samples that ran during one.
const GC_KEPT: usize = 64;

/// Threads whose walk is kept for the records sharing it, at most. A walk goes with the last
/// record of its signal, so only a record lost between (a batch dropped) leaves one behind;
/// the bound is for those: a program that starts a thread per task (ecj: ~40 a second, each
/// sampled) would otherwise keep each one until the session's thread bound (2^20).
const MAX_SHARED_WALKS: usize = 4096;

/// A kept walk whose last record is older than this is taken for one left behind once the
/// bound is met. The records of one stay in the kernel come with one signal, usually a period
/// apart; one more than this apart (the thread slept in the kernel in between) finds its
/// walk only if the bound was not met meanwhile, and is counted `coalesced_signal` otherwise.
const SHARED_WALK_AGE_NS: u64 = 10_000_000_000;

/// What a stack kind's resolver made of a record's Java stack (its frames pushed below the
/// leaf when found).
enum JavaStack {
    /// Found, with their shared copy when hpm's walker's stack was named whole.
    Found(Option<Stack>),
    /// The thread is not a Java thread: its component is the root.
    NotJava,
    /// None, for this reason (a thread that is not Java gets its component instead).
    Missing(&'static str),
    /// None that can be trusted, for this reason, whichever the thread.
    Untrusted(&'static str),
}

/// How the last sample's walk was named (kept when [`ResolverConfig::frame_groups`]): where
/// its walked frames start in the stack, and how many frames each physical frame became (a
/// compiled frame one per inline scope). A stack completer keys frames by their stack depths
/// with it.
#[derive(Default, Debug, Clone)]
pub struct FrameGroups {
    pub first: usize,
    pub sizes: Vec<u16>,
}

/// What a [`SampleResolver`] is built with: the session's event, options and VM layouts as
/// resolution needs them.
#[derive(Default)]
pub struct ResolverConfig {
    /// Per counter (`Recording::counter_periods`): non-zero for a counter that samples itself.
    pub counter_periods: Vec<u64>,
    /// The processing thread's CPU clock in ns: what is read once per process (kernel and
    /// library symbol tables) is timed apart from the per-sample work.
    pub cpu_clock: Option<fn() -> u64>,
    /// Whether the sampling event reports data addresses.
    pub data_addresses: bool,
    /// `data`: samples' instructions are captured, to be decoded into the address they touch.
    pub decode_instructions: bool,
    /// `data` with the heap's layout: the objects those addresses are in.
    pub objects: Option<crate::objects::Identifier>,
    /// A uprobe on HotSpot's ObjectMonitor functions: the offset of `ObjectMonitor::_object`;
    /// each sample's monitor (its `this`) is named by its object's class.
    pub monitor_object: Option<u64>,
    /// Keep each walk's [`FrameGroups`] (for a stack completer): raw stacks are then named
    /// whole, each entry with its groups.
    pub frame_groups: bool,
}

/// Turns captured records into samples (see the module doc); built from a [`ResolverConfig`].
#[derive(Default)]
pub struct SampleResolver {
    pub timeline: CodeTimeline,
    pub symbolizer: Symbolizer,
    pub stats: WalkStats,
    /// The fields up to `frame_groups` are the [`ResolverConfig`]'s.
    data_addresses: bool,
    decode_instructions: bool,
    objects: Option<crate::objects::Identifier>,
    monitor_object: Option<u64>,
    /// The last walk's groups, when the config asks for them.
    frame_groups: Option<FrameGroups>,
    counter_periods: Vec<u64>,
    methods: IntMap<u64, MethodIdx>,
    last_counters: IntMap<ThreadIdx, Vec<u64>>,
    /// Kernel function names, read at the first kernel call chain.
    kernel_symbols: Option<KernelSymbols>,
    /// Kernel addresses already named (bounded: cleared when full).
    kernel_frames: IntMap<u64, MethodIdx>,
    /// Per thread, the Java frames of a walked record that later records of the same signal
    /// share (`Captured::shares_walk`), with the time of the last record that used them; taken
    /// by the next record of that thread. Bounded ([`Self::keep_shared_walk`]).
    shared_walks: IntMap<ThreadIdx, (u64, Vec<Frame>)>,
    gc: Vec<(u64, u64)>,
    open_gc: Option<u64>,
    last_maps_refresh: u64,
    /// The time of the sample being resolved (a walk's native frames are placed at it).
    sample_time: u64,
    /// Raw stacks of hpm's own walker already named, each resolved once (as async-profiler's
    /// call-trace storage does): each valid while the code at its pcs and its interpreted
    /// frames' methods stay as they were ([`walker::Validity`]). Known by their 128-bit hash alone
    /// ([`hpm_profile::hash::Hash128`]: the first half the map's key, the second beside the entry),
    /// as async-profiler knows call traces by 64 bits of theirs: a hit reads the entry, not
    /// a stored copy of the frames to compare (at 30 frames that copy was ~9 cache lines,
    /// most of a hit's cost), nor the sample's frames when the signal handler made the key
    /// ([`hpm_capture::hotspot::raw_stack_key`]). Two of one first half share the slot, the later
    /// replacing the earlier. The stacks below a leaf frame (callers) are entered too, under
    /// their own hash: a raw stack new to the map names its leaf frame alone above them.
    vm_stacks: VmStacks,
    hasher: hpm_profile::hash::FastBuild,
    /// The Java frames of each physical frame already named (a compiled frame's pc, an
    /// interpreted frame's method and bytecode): most stacks differ somewhere but share most
    /// of their frames.
    vm_frames: VmFrames,
    /// Collections finished: names by `Method*` made before one are checked again.
    collections: u64,
    /// Finished stacks, one shared copy each: what is computed per stack downstream (tree
    /// node, stack-table entry, JFR pool key) is computed once per distinct stack.
    interner: hpm_profile::interned::StackInterner,
    /// The stack being built (reused: no allocation per sample).
    stack_buf: Vec<Frame>,
    /// A pseudo-frame's name being built ([`Self::pseudo_bracketed`]).
    name_buf: String,
    /// The config's clock for what is read once per process.
    cpu_clock: Option<fn() -> u64>,
    /// CPU time spent reading symbol tables (by `cpu_clock`).
    pub tables_ns: u64,
    /// Pseudo-frames' methods by name (`[kernel]`, native functions, stubs).
    pseudo_ids: IntMap<String, MethodIdx>,
    /// Compiled blobs sampled this session, by start (see [`CodeSeen`]).
    code_seen: IntMap<u64, CodeSeen>,
    /// The compiled blobs samples' pcs were last found in (see [`RecentBlobs`]).
    recent_blobs: RecentBlobs,
}

impl SampleResolver {
    /// A resolver for one session, with nothing named yet (see [`Self::set_native`] and
    /// [`Self::set_java`] for what earlier sessions named).
    pub fn new(config: ResolverConfig) -> SampleResolver {
        let ResolverConfig {
            counter_periods,
            cpu_clock,
            data_addresses,
            decode_instructions,
            objects,
            monitor_object,
            frame_groups,
        } = config;
        SampleResolver {
            counter_periods,
            cpu_clock,
            data_addresses,
            decode_instructions,
            objects,
            monitor_object,
            frame_groups: frame_groups.then(FrameGroups::default),
            ..Default::default()
        }
    }

    /// The last sample's [`FrameGroups`], when the config asks for them.
    pub fn frame_groups(&self) -> Option<&FrameGroups> {
        self.frame_groups.as_ref()
    }

    /// What identifies the objects of `data`'s addresses, with its statistics.
    pub fn objects(&self) -> Option<&crate::objects::Identifier> {
        self.objects.as_ref()
    }

    /// Resolves against `timeline` from now on (the blobs found in the last one forgotten).
    pub fn set_timeline(&mut self, timeline: CodeTimeline) {
        self.timeline = timeline;
        self.recent_blobs = RecentBlobs::default();
    }

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
        // Interpreted frames name a Method*, which a collection may free: checked at next use.
        self.collections += 1;
        if let Some(o) = self.objects.as_mut() {
            o.collected();
        }
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

    /// Takes what this resolver named of Java code, with `table` (the method table its frames
    /// index), for the next session: the table itself goes on (what was derived from it stays
    /// valid), a copy of it is left in its place for the ended session's profile. Nothing when
    /// the table is past [`MAX_CARRIED_METHODS`]; no stacks (or no physical frames) when they
    /// are past [`MAX_CARRIED_STACKS`].
    pub fn take_java(&mut self, table: &mut MethodTable) -> Option<JavaNames> {
        if table.len() > MAX_CARRIED_METHODS {
            return None;
        }
        let copy = table.clone();
        // The stacks go; the count of those this session made stays (for its summary).
        let mut interner = std::mem::take(&mut self.interner);
        self.interner.made = std::mem::take(&mut interner.made);
        let mut vm_stacks = std::mem::take(&mut self.vm_stacks);
        if interner.len() > MAX_CARRIED_STACKS || vm_stacks.len() > MAX_CARRIED_STACKS {
            // Together: the memo's entries are the interner's stacks.
            (interner, vm_stacks) = Default::default();
        }
        let mut vm_frames = std::mem::take(&mut self.vm_frames);
        if vm_frames.len() > MAX_CARRIED_STACKS {
            vm_frames = Default::default();
        }
        Some(JavaNames {
            table: std::mem::replace(table, copy),
            pseudo_ids: std::mem::take(&mut self.pseudo_ids),
            kernel_frames: std::mem::take(&mut self.kernel_frames),
            vm_stacks,
            hasher: std::mem::take(&mut self.hasher),
            vm_frames,
            interner,
            collections: self.collections,
            grouped: self.frame_groups.is_some(),
        })
    }

    /// Starts from what an earlier session named of Java code (after [`Self::set_native`]: the
    /// kernel's names are that session's too); returns the method table the new recording
    /// starts from. Names resting on `Method*`s are asked again at their first use. Stacks named
    /// with other frame groups are dropped.
    pub fn set_java(&mut self, n: JavaNames) -> MethodTable {
        self.pseudo_ids = n.pseudo_ids;
        self.kernel_frames = n.kernel_frames;
        self.vm_frames = n.vm_frames;
        self.interner = n.interner;
        if n.grouped == self.frame_groups.is_some() {
            self.vm_stacks = n.vm_stacks;
            self.hasher = n.hasher;
        }
        // Collections between the sessions went unseen: one counted for them.
        self.collections = n.collections + 1;
        n.table
    }

    fn gc_active(&self, t: u64) -> bool {
        self.open_gc.is_some_and(|s| s <= t) || self.gc.iter().rev().take(GC_KEPT).any(|&(s, e)| s <= t && t <= e)
    }

    fn method_idx(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, id: u64) -> MethodIdx {
        if let Some(&i) = self.methods.get(&id) {
            return i;
        }
        self.stats.methods_named += 1;
        let timer = Timer::start();
        let info = jm.describe(id).unwrap_or_else(|| MethodInfo::native("[unknown method]"));
        timer.stop(Phase::Describe);
        let i = rec.methods.intern(info);
        // Ids of a session's methods: a program that makes code all the time brings new ones
        // without end (the names behind them are asked again, kept by `JavaMethods`).
        if self.methods.len() >= MAX_METHOD_IDS {
            self.methods.clear();
        }
        self.methods.insert(id, i);
        i
    }

    fn pseudo(&mut self, rec: &mut Recording, name: &str, kind: FrameKind) -> Frame {
        let method = match self.pseudo_ids.get(name) {
            Some(&m) => m,
            None => {
                let m = rec.methods.intern(MethodInfo::native(name));
                if self.pseudo_ids.len() >= MAX_VM_STACKS {
                    self.pseudo_ids.clear();
                }
                self.pseudo_ids.insert(name.to_string(), m);
                m
            }
        };
        Frame { method, bci: -1, line: -1, kind }
    }

    /// A pseudo-frame of unknown kind named by `parts` put together, in a buffer kept for it: a
    /// VM thread's sample, or one without a Java stack, allocates no name of its own.
    fn pseudo_bracketed(&mut self, rec: &mut Recording, parts: &[&str]) -> Frame {
        let mut name = std::mem::take(&mut self.name_buf);
        name.clear();
        parts.iter().for_each(|p| name.push_str(p));
        let f = self.pseudo(rec, &name, FrameKind::Unknown);
        self.name_buf = name;
        f
    }

    /// The interner of the stacks this resolver makes (where their bases are found:
    /// [`hpm_profile::interned::StackInterner::nearest_base`]).
    pub fn interner(&self) -> &hpm_profile::interned::StackInterner {
        &self.interner
    }

    /// Resolves one captured sample.
    pub fn resolve(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, c: &Captured) -> Sample {
        let timer = Timer::start();
        let s = self.resolve_with_deep(rec, jm, c, &[]);
        timer.stop(Phase::Resolve);
        s
    }

    /// [`Self::resolve`] for a record of frames the JVM gave with frames past
    /// [`hpm_capture::capture::MAX_FRAMES`] (`deep`, the record's [`Captured::deep`] frames, root
    /// side last as in the record).
    pub fn resolve_with_deep(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        deep: &[(CallFrame, FrameKind)],
    ) -> Sample {
        let raw = &c.raw;
        self.timeline.advance_to(raw.time);
        self.sample_time = raw.time;
        let ip = if raw.ip != 0 { raw.ip } else { raw.user_ip };
        let timer = Timer::start();
        let native = self.place_ip(ip, raw.time);
        timer.stop(Phase::Place);
        let timer = Timer::start();
        if let Placed::Jit(b) = native {
            self.note_code(rec, jm, b);
        }
        timer.stop(Phase::NoteCode);
        let site = match &native {
            Placed::Jit(_) => IpSite::Jit,
            Placed::Code(k, _) => *k,
            Placed::Lib(lib, sym) => IpSite::Library { lib, symbol: sym },
            Placed::Kernel => IpSite::Kernel,
            Placed::Anonymous => IpSite::Anonymous,
            Placed::Unknown => IpSite::Unknown,
        };
        let in_gc = self.gc_active(raw.time);
        let thread = rec.threads.get(c.thread as usize);
        let is_java = thread.is_some_and(|t| t.is_java);
        let component = classify(thread.map_or("", |t| t.name.as_str()), is_java, site, in_gc);

        let mut stack = std::mem::take(&mut self.stack_buf);
        stack.clear();
        // Leaf: the native function or stub the thread was in, if not Java code.
        match &native {
            Placed::Kernel if raw.nkernel > 0 => self.push_kernel_frames(rec, raw.kernel_frames(), &mut stack),
            Placed::Kernel => stack.push(self.pseudo(rec, "[kernel]", FrameKind::Kernel)),
            other => self.push_native_frame(rec, other, &mut stack),
        }

        // In the kernel: the user-mode code that entered it (a system call in libc, say) is the
        // next frame, from the user registers the kernel saved with the sample.
        if matches!(native, Placed::Kernel) && raw.regs_abi != 0 && raw.user_ip != 0 && !is_kernel_address(raw.user_ip)
        {
            let entered = self.place_ip(raw.user_ip, raw.time);
            self.push_native_frame(rec, &entered, &mut stack);
        }

        // The Java frames go below the leaf, named by the kind of stack the record holds.
        let leaf_frames = stack.len();
        if let Some(g) = &mut self.frame_groups {
            g.first = stack.len();
            g.sizes.clear();
        }
        let jit = matches!(native, Placed::Jit(_));
        // A thread's shared walk serves the records right after it only.
        let shared = self.shared_walks.remove(&ThreadIdx(c.thread));
        let java = match &c.stack {
            StackKind::NotWalked => JavaStack::Missing("coalesced_signal"),
            StackKind::SignalTaken => JavaStack::Missing("signal_taken_by_another_handler"),
            StackKind::SharedWithPrevious => shared::shared_stack(shared, &mut stack),
            StackKind::NotJava(_) => JavaStack::NotJava,
            StackKind::Asgct(a) => self.asgct_stack(rec, jm, c, a, (ip, jit), &mut stack),
            // The walk's frames are needed apart from their shared copy below a leaf frame, or
            // kept for the records that share this walk.
            StackKind::RawWalk(w) => self.raw_walk_stack(rec, jm, c, w, leaf_frames > 0 || c.shares_walk, &mut stack),
            StackKind::JvmFrames(_) => self.jvm_frames_stack(rec, jm, c, deep, &mut stack),
            StackKind::Compare { walk, asgct } => self.compare_stack(rec, jm, c, (walk, asgct), is_java, &mut stack),
        };
        let mut walk_copy = None;
        match java {
            // A VM thread's native frames (`cstack=`): under its component, as without them.
            JavaStack::Found(_) if !is_java && walker::native_only(c) => {
                self.vm_thread_stack(rec, &native, component, &mut stack)
            }
            JavaStack::Found(copy) => {
                self.stats.java_ok += 1;
                if c.shares_walk {
                    self.keep_shared_walk(ThreadIdx(c.thread), raw.time, stack[leaf_frames..].to_vec());
                }
                walk_copy = copy;
            }
            JavaStack::NotJava => self.vm_thread_stack(rec, &native, component, &mut stack),
            JavaStack::Missing(_) if !is_java => self.vm_thread_stack(rec, &native, component, &mut stack),
            JavaStack::Missing(reason) | JavaStack::Untrusted(reason) => {
                hpm_profile::model::count_reason(&mut self.stats.failed, reason, 1);
                if jit {
                    self.push_compiled_frames(rec, jm, ip, &mut stack);
                }
                stack.push(self.pseudo_bracketed(rec, &["[no Java stack: ", reason, "]"]));
            }
        }

        // Most samples are in Java code: their stack is the walker's frames alone, already
        // shared (an empty `stack` with a non-empty copy: the copy was not made).
        let shared_stack = match walk_copy {
            Some(s) if s.len() == stack.len() || stack.is_empty() => s,
            // A stub, native or kernel leaf above the walker's frames.
            Some(s) if leaf_frames + s.len() == stack.len() => self.interner.intern_above(&stack[..leaf_frames], &s),
            _ => self.interner.intern(&stack),
        };
        self.stack_buf = stack;
        let (data_addr, mut data) = self.data_address(c, jm);
        if let (Some(off), Some(o)) = (self.monitor_object, self.objects.as_mut()) {
            // A uprobe on an ObjectMonitor function: `this` (rdi) is the monitor.
            if c.raw.intr_abi != 0 && data.is_none() {
                data = o.monitor(c.raw.intr[7], off, &mut Metadata(jm)).map(Box::new);
            }
        }
        if let (Some(t), Some(slot)) = (data.as_deref_mut(), c.data.stack_slot.filter(|_| c.raw_walk().is_some())) {
            self.name_stack_frame(rec, jm, c, slot as usize, t);
        }
        let truncated = match &c.stack {
            StackKind::Asgct(a) => asgct::truncated(a, jit),
            StackKind::RawWalk(w) | StackKind::Compare { walk: w, .. } => raw_walk::truncated(w),
            StackKind::JvmFrames(f) => f.depth_cut,
            _ => false,
        };
        Sample {
            carrier: None,
            repeat: 1,
            time: raw.time,
            thread: ThreadIdx(c.thread),
            truncated,
            stack: shared_stack,
            // Records without a period (software events: see `Layout::without_period`) weigh
            // the period set.
            // A counter's own sample stands for none of the sampling event.
            weight: if raw.source != 0 {
                0
            } else if raw.period != 0 {
                raw.period
            } else {
                rec.event.period
            },
            counters: self.counter_deltas(c),
            data_addr,
            data,
            ip,
            component,
            state: hpm_capture::capture::THREAD_STATES
                .get(usize::from(c.state))
                .filter(|n| !n.is_empty())
                .map(|n| rec.state_idx(n)),
        }
    }

    /// A VM thread's stack (GC worker, compiler, VM thread): its component is the root.
    fn vm_thread_stack(
        &mut self,
        rec: &mut Recording,
        native: &Placed,
        component: VmComponent,
        stack: &mut Vec<Frame>,
    ) {
        self.stats.vm_thread += 1;
        if stack.is_empty() {
            stack.push(self.pseudo_bracketed(rec, &["[", site_name(native), "]"]));
        }
        stack.push(self.pseudo_bracketed(rec, &["[", component.name(), "]"]));
    }

    /// Pushes Java frames given by jmethodID and bytecode index (ASGCT's, the JVM's), with
    /// their kinds.
    fn push_call_frames(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        frames: impl Iterator<Item = (CallFrame, FrameKind)>,
        stack: &mut Vec<Frame>,
    ) {
        for (f, kind) in frames {
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
    }

    /// Distinct stacks made so far (each named, shared and counted once; the samples after
    /// it that have the same stack cost far less).
    pub fn stacks_made(&self) -> u64 {
        self.interner.made
    }

    fn cpu_now(&self) -> u64 {
        self.cpu_clock.map_or(0, |f| f())
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
        let last = self.last_counters.entry(ThreadIdx(c.thread)).or_insert_with(|| vec![0; now.len()]);
        last.resize(now.len(), 0);
        counter_deltas(&now, last, &self.counter_periods, raw.source)
    }
}

/// The values a sample charges to its stack, `last` (the thread's values at what was charged
/// before) advanced. A sample of the sampling event (`source` 0) charges each interval-
/// attributed counter's delta since the thread's previous sample; a counter's own overflow
/// sample (`source` k) charges that counter's count since its previous own sample, and nothing
/// else. A counter that samples itself (`periods[i] > 0`) is charged by its own samples only:
/// the count between two of them happened where the second one interrupted, within a period.
pub fn counter_deltas(now: &[u64], last: &mut [u64], periods: &[u64], source: u8) -> Vec<u64> {
    let mut out = vec![0; now.len()];
    for (i, (n, l)) in now.iter().zip(last.iter_mut()).enumerate() {
        let sampled = periods.get(i).is_some_and(|&p| p > 0);
        let charge = if source == 0 { !sampled } else { i + 1 == usize::from(source) };
        if charge {
            out[i] = n.saturating_sub(*l);
            *l = *n;
        }
    }
    out
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
