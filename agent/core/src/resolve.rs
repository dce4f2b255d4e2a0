//! Turns captured samples into model samples, off the hot path and in time order: code-map
//! events up to the sample's time are applied first, then the instruction pointer is placed
//! (JIT code, interpreter, stub, native library, kernel), the Java frames get methods, lines and
//! frame types, counter values become per-thread deltas, and the sample gets its VM component.

use crate::phase_timing::{Phase, Timer};
use std::sync::Arc;

use crate::hash::IntMap;

use crate::capture::{
    asgct_error_name, CallFrame, Captured, BCI_NATIVE_FRAME, COMPARE_SPLIT, MAX_FRAMES, WALK_NOT_ATTEMPTED, WALK_SHARED,
};
use crate::codemap::{BlobKind, CodeMap, CodeTimeline};
use crate::component::{classify, is_kernel_address, IpSite};
use crate::kallsyms::KernelSymbols;
use crate::model::{
    DataTarget, Frame, FrameKind, MethodIdx, MethodInfo, MethodTable, Recording, Sample, Stack, ThreadIdx,
};
use crate::operand::MemoryAccess;
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

/// Class metadata reads through the method source.
struct Metadata<'a>(&'a mut dyn JavaMethods);

impl crate::objects::MetaRead for Metadata<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        self.0.read_metadata(addr, buf)
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
    /// `data`: samples given an address from their instruction, and why the others were not.
    pub data: crate::operand::DataStats,
    /// What was named for the first time (each costs more than a sample of what is known):
    /// physical frames of hpm's walker, methods (through `JavaMethods::describe`) and native
    /// code addresses. Distinct stacks: `SampleResolver::stacks_made`.
    pub frames_named: u64,
    pub methods_named: u64,
    pub sites_named: u64,
}

impl WalkStats {
    /// The summary's line of what was named for the first time, `stacks` distinct stacks
    /// among `samples` (the processing per sample follows their share: each new one is named,
    /// shared, added to the tree and to the stack table once).
    pub fn first_sightings_line(&self, stacks: u64, samples: u64) -> String {
        use crate::text::group;
        format!(
            "named for the first time: {} stacks ({:.0}% of the samples), {} frames of hpm's walker, {} methods, {} \
             native code addresses",
            group(stacks),
            stacks as f64 * 100.0 / samples.max(1) as f64,
            group(self.frames_named),
            group(self.methods_named),
            group(self.sites_named)
        )
    }
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
    hasher: crate::hash::FastBuild,
    vm_frames: VmFrames,
    interner: crate::interned::StackInterner,
    collections: u64,
    /// The stacks were named for `sampler=chain` (with each frame's group).
    chain: bool,
}

/// Methods a session hands to the next at most: past it the next starts anew (the table, and
/// the copy of it each ended session keeps, would otherwise grow with every method ever
/// sampled).
pub const MAX_CARRIED_METHODS: usize = 1 << 14;

/// Collections kept to mark samples that ran during one.
const GC_KEPT: usize = 64;

/// See [`SampleResolver::chain_groups`].
#[derive(Default, Debug, Clone)]
pub struct ChainGroups {
    pub first: usize,
    pub sizes: Vec<u16>,
}

#[derive(Default)]
pub struct SampleResolver {
    pub timeline: CodeTimeline,
    pub symbolizer: Symbolizer,
    pub stats: WalkStats,
    /// Whether the sampling event reports data addresses.
    pub data_addresses: bool,
    /// `data`: samples' instructions are captured, to be decoded into the address they touch.
    pub decode_instructions: bool,
    /// `data` with the heap's layout: the objects those addresses are in.
    pub objects: Option<crate::objects::Identifier>,
    /// A uprobe on HotSpot's ObjectMonitor functions: the offset of `ObjectMonitor::_object`;
    /// each sample's monitor (its `this`) is named by its object's class.
    pub monitor_object: Option<u64>,
    /// `sampler=chain`: how the last sample's walk was named (where its frames start in the
    /// stack, and how many frames each physical frame became), for its frames' depths.
    pub chain_groups: Option<ChainGroups>,
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
    /// call-trace storage does): each valid while the code at its pcs and its interpreted
    /// frames' methods stay as they were ([`Validity`]). Known by their 128-bit hash alone
    /// ([`crate::hash::Hash128`]: the first half the map's key, the second beside the entry),
    /// as async-profiler knows call traces by 64 bits of theirs: a hit reads the entry, not
    /// a stored copy of the frames to compare (at 30 frames that copy was ~9 cache lines,
    /// most of a hit's cost), nor the sample's frames when the signal handler made the key
    /// ([`crate::hotspot::raw_stack_key`]). Two of one first half share the slot, the later
    /// replacing the earlier. The stacks below a leaf frame (callers) are entered too, under
    /// their own hash: a raw stack new to the map names its leaf frame alone above them.
    vm_stacks: VmStacks,
    hasher: crate::hash::FastBuild,
    /// The Java frames of each physical frame already named (a compiled frame's pc, an
    /// interpreted frame's method and bytecode): most stacks differ somewhere but share most
    /// of their frames.
    vm_frames: VmFrames,
    /// Collections finished: names by `Method*` made before one are checked again.
    collections: u64,
    /// Finished stacks, one shared copy each: what is computed per stack downstream (tree
    /// node, stack-table entry, JFR pool key) is computed once per distinct stack.
    interner: crate::interned::StackInterner,
    /// The stack being built (reused: no allocation per sample).
    stack_buf: Vec<Frame>,
    /// The processing thread's CPU clock in ns (the agent sets it): what is read once per
    /// process (kernel and library symbol tables) is timed apart from the per-sample work.
    pub cpu_clock: Option<fn() -> u64>,
    /// CPU time spent reading symbol tables (by `cpu_clock`).
    pub tables_ns: u64,
    /// Pseudo-frames' methods by name (`[kernel]`, native functions, stubs).
    pseudo_ids: IntMap<String, MethodIdx>,
    /// Compiled blobs sampled this session, by start (see [`CodeSeen`]).
    code_seen: IntMap<u64, CodeSeen>,
    /// The compiled blobs samples' pcs were last found in (see [`RecentBlobs`]).
    recent_blobs: RecentBlobs,
}

/// A compiled blob samples were in, this session.
struct CodeSeen {
    loaded_at: u64,
    samples: u32,
    /// Whether its instructions were put in a chunk.
    bytes_added: bool,
    /// Its index in `Recording::code`, once put there this chunk.
    at: Option<usize>,
}

impl CodeSeen {
    /// A blob loaded at `loaded_at`, not sampled yet.
    fn new(loaded_at: u64) -> CodeSeen {
        CodeSeen { loaded_at, samples: 0, bytes_added: false, at: None }
    }
}

/// A compiled blob as a sample's pc found it: what the resolver keeps of it.
#[derive(Clone, Copy, Default)]
struct JitBlob {
    start: u64,
    end: u64,
    loaded_at: u64,
    method: crate::codemap::MethodKey,
}

/// A [`RecentBlobs`] slot: a blob and the map generation it was found at.
#[derive(Clone, Copy, Default)]
struct RecentSlot {
    blob: JitBlob,
    generation: u64,
}

/// Compiled blobs found by pc, by 256-byte granule of the pc (direct-mapped, 4096 slots),
/// looked at before the code map: most samples fall in a few hot loops, and the map's tree
/// costs a cache miss per level. A slot holds while the map's generation is the one it was
/// found at (nothing was removed since: a load only fills a free range); emptied when the
/// resolver is given another map ([`SampleResolver::set_timeline`]).
struct RecentBlobs {
    slots: Box<[RecentSlot]>,
}

const RECENT_SLOTS: usize = 4096;
const _: () = assert!(RECENT_SLOTS.is_power_of_two());

impl Default for RecentBlobs {
    fn default() -> Self {
        RecentBlobs { slots: vec![RecentSlot::default(); RECENT_SLOTS].into() }
    }
}

impl RecentBlobs {
    fn slot(ip: u64) -> usize {
        ((ip >> 8).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT_SLOTS.trailing_zeros())) as usize
    }

    fn find(&self, generation: u64, ip: u64) -> Option<JitBlob> {
        let s = self.slots[Self::slot(ip)];
        (s.generation == generation && s.blob.start <= ip && ip < s.blob.end).then_some(s.blob)
    }

    fn keep(&mut self, generation: u64, ip: u64, blob: JitBlob) {
        self.slots[Self::slot(ip)] = RecentSlot { blob, generation };
    }
}

/// `vm_frames` keys: a compiled frame's pc, an interpreted frame's method and bytecode, a
/// compiled blob's inline scope (the blob's start and the scope's pc).
const TAG_COMPILED_KEY: u8 = 1;
const TAG_INTERPRETED_KEY: u8 = 2;
const TAG_SCOPE_KEY: u8 = 3;

/// Whether the frames named for a raw frame may be reused for its next occurrence (with the
/// `Method*` an interpreted frame was named by); `Scope`: a compiled frame whose inline scope
/// was named before (nothing named now).
enum Named {
    Cached(Option<(u64, MethodPointer)>),
    Scope,
    Uncached,
}

/// A raw stack named: its Java frames (the interned copy) and the frames left out because no
/// jmethodID was known for them.
struct NamedStack {
    frames: Stack,
    unnamed: u64,
    valid: Validity,
    /// `sampler=chain`: the frames each physical frame became (empty otherwise).
    groups: Box<[u16]>,
}

/// One physical frame named: its frames (one, or a compiled pc's inlined ones) kept in the
/// memo's entry itself up to [`INLINE_FRAMES`], where a heap copy cost one more cache miss per
/// frame looked up.
struct NamedFrame {
    frames: smallvec::SmallVec<[Frame; INLINE_FRAMES]>,
    valid: Validity,
}

/// Frames a [`NamedFrame`] holds without a heap copy.
const INLINE_FRAMES: usize = 4;

/// What a name given by pc and by `Method*` rests on, and when it was last found to hold. A
/// pc's name holds until code covering it leaves the map ([`CodeMap::removed_since`]); a
/// `Method*`'s until a collection frees it, so after each collection it is asked again.
struct Validity {
    /// The code map's generation when last checked.
    generation: u64,
    /// Collections finished when last checked.
    collections: u64,
    /// The interpreted frames' `Method*`s with what they were named as.
    methods: Vec<(u64, MethodPointer)>,
}

impl Validity {
    /// Whether the names still hold (and if so, checked as of now).
    fn check(
        &mut self,
        map: &CodeMap,
        pcs: impl IntoIterator<Item = u64>,
        collections: u64,
        jm: &mut dyn JavaMethods,
    ) -> bool {
        let generation = map.generation();
        let code = self.generation == generation || !pcs.into_iter().any(|pc| map.removed_since(self.generation, pc));
        // Only names whose code still holds ask for their methods (a question may read memory).
        let valid =
            code && (self.collections == collections || self.methods.iter().all(|&(p, m)| jm.by_pointer(p) == Some(m)));
        if valid {
            self.generation = generation;
            self.collections = collections;
        }
        valid
    }
}

/// The pcs of compiled code among raw frames' slots.
fn raw_pcs<'a>(frames: &'a [CallFrame], kinds: &'a [FrameKind]) -> impl Iterator<Item = u64> + 'a {
    kinds.iter().zip(frames).filter(|(k, _)| **k == crate::hotspot::TAG_PC).map(|(_, f)| f.method_id)
}

/// The key of a capture's first `n` raw frames: the signal handler's, or made here.
fn raw_stack_key(hasher: &crate::hash::FastBuild, c: &Captured, n: usize) -> crate::capture::RawKey {
    match c.raw_key {
        Some(k) => k,
        None => crate::hotspot::raw_stack_key(hasher.seed(), &c.frames[..n], &c.kinds[..n]),
    }
}

/// The entry of `stacks` under `key` (a [`crate::capture::RawKey`] hash) if its names still
/// hold for the slots whose compiled pcs are `pcs` ([`Validity::check`]); a stale one is
/// removed.
fn named_still<'s>(
    stacks: &'s mut VmStacks,
    (h, check): (u64, u64),
    map: &CodeMap,
    pcs: impl IntoIterator<Item = u64>,
    collections: u64,
    jm: &mut dyn JavaMethods,
) -> Option<&'s NamedStack> {
    let e = stacks.get_mut(&h)?;
    if e.0 != check {
        return None;
    }
    if !e.1.valid.check(map, pcs, collections, jm) {
        stacks.remove(&h);
        return None;
    }
    // Found again in the lines just read (returning `e` would hold the borrow over the removal).
    stacks.get_mut_current(&h).map(|e| &e.1)
}

/// Levels of a new raw stack's callers looked up at most for a known stack below its new
/// frames (`SampleResolver::name_callers`): the callers, their callers, ...
const MAX_CALLER_LEVELS: usize = 6;

/// Distinct raw stacks, and physical frames, remembered at most (each memo keeps those in use:
/// [`crate::hash::RecentMap`]).
const MAX_VM_STACKS: usize = 1 << 16;

/// Named raw stacks by the first half of their 128-bit hash (see `SampleResolver::vm_stacks`).
type VmStacks = crate::hash::RecentMap<u64, (u64, NamedStack), MAX_VM_STACKS>;
/// Named physical frames and inline scopes (see `SampleResolver::vm_frames`).
type VmFrames = crate::hash::RecentMap<(u8, u64, u64), NamedFrame, MAX_VM_STACKS>;

impl SampleResolver {
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
    /// the table is past [`MAX_CARRIED_METHODS`].
    pub fn take_java(&mut self, table: &mut MethodTable) -> Option<JavaNames> {
        if table.len() > MAX_CARRIED_METHODS {
            return None;
        }
        let copy = table.clone();
        // The stacks go; the count of those this session made stays (for its summary).
        let mut interner = std::mem::take(&mut self.interner);
        self.interner.made = std::mem::take(&mut interner.made);
        Some(JavaNames {
            table: std::mem::replace(table, copy),
            pseudo_ids: std::mem::take(&mut self.pseudo_ids),
            kernel_frames: std::mem::take(&mut self.kernel_frames),
            vm_stacks: std::mem::take(&mut self.vm_stacks),
            hasher: std::mem::take(&mut self.hasher),
            vm_frames: std::mem::take(&mut self.vm_frames),
            interner,
            collections: self.collections,
            chain: self.chain_groups.is_some(),
        })
    }

    /// Starts from what an earlier session named of Java code (after [`Self::set_native`]: the
    /// kernel's names are that session's too); returns the method table the new recording
    /// starts from. Names resting on `Method*`s are asked again at their first use. Stacks named
    /// for another sampler's grouping are dropped.
    pub fn set_java(&mut self, n: JavaNames) -> MethodTable {
        self.pseudo_ids = n.pseudo_ids;
        self.kernel_frames = n.kernel_frames;
        self.vm_frames = n.vm_frames;
        self.interner = n.interner;
        if n.chain == self.chain_groups.is_some() {
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

    /// [`crate::interned::StackInterner::nearest_base`] of a sample's stack.
    pub fn nearest_base<N>(
        &self,
        whole: &Stack,
        max: usize,
        node_of: impl FnMut(&Stack) -> Option<N>,
    ) -> (Option<(Stack, N)>, Vec<Stack>) {
        self.interner.nearest_base(whole, max, node_of)
    }

    /// Resolves one captured sample. `counters` is the number of counters in the group.
    pub fn resolve(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, c: &Captured) -> Sample {
        let timer = Timer::start();
        let s = self.resolve_deep(rec, jm, c, &[]);
        timer.stop(Phase::Resolve);
        s
    }

    /// [`Self::resolve`] for a timer sampler's record with frames past
    /// [`crate::capture::MAX_FRAMES`] (`deep`, the record's [`Captured::deep`] frames, root
    /// side last as in the record).
    pub fn resolve_deep(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        deep: &[(CallFrame, FrameKind)],
    ) -> Sample {
        let raw = &c.raw;
        self.timeline.advance_to(raw.time);
        let ip = if raw.ip != 0 { raw.ip } else { raw.user_ip };
        let timer = Timer::start();
        let native = self.place_ip(ip, raw.time);
        if let Placed::Jit(b) = native {
            self.note_code(rec, jm, b);
        }
        timer.stop(Phase::Place);
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

        // A walk restarted at the caller (return address taken from the stack pointer) is only
        // right where the code is frameless: a stub. In a compiled method's prologue the frame
        // may already be half built, the word at the stack pointer is not the return address,
        // and the "caller" stack can skip frames; such samples keep the compiled method's exact
        // frames and count as walks that failed.
        let untrusted_retry = c.walk_from_caller && matches!(native, Placed::Jit(_));
        let java = if untrusted_retry || c.vm_walk { &[][..] } else { c.java_frames() };
        let leaf_frames = stack.len();
        // hpm's own walker's frames go straight below the leaf; a shared walk (below) is only
        // for records that were not walked, so it never meets them.
        let mut vm_copy = None;
        if let Some(g) = &mut self.chain_groups {
            g.first = stack.len();
            g.sizes.clear();
        }
        if c.vm_walk && c.num_frames > 0 {
            // The frames are needed apart from their shared copy below a leaf frame, to be
            // compared, or kept for the records that share this walk.
            let copy = leaf_frames > 0 || c.asgct_frames != WALK_NOT_ATTEMPTED || c.shares_walk;
            vm_copy = self.vm_java_frames(rec, jm, c, &mut stack, copy);
        }
        let vm_found = stack.len() > leaf_frames || vm_copy.as_ref().is_some_and(|s| !s.is_empty());
        if c.vm_walk && c.asgct_frames != WALK_NOT_ATTEMPTED && is_java {
            let n = (c.asgct_frames.max(0) as usize).min(MAX_FRAMES - COMPARE_SPLIT);
            let asgct: Vec<MethodIdx> = c.frames[COMPARE_SPLIT..COMPARE_SPLIT + n]
                .iter()
                .map(|f| self.method_idx(rec, jm, f.method_id))
                .collect();
            let vm: Vec<MethodIdx> = stack[leaf_frames..].iter().map(|f| f.method).collect();
            let cut = c.vm_stop == crate::hotspot::Stop::Full as u8 || n >= MAX_FRAMES - COMPARE_SPLIT;
            self.stats.compare.record(&vm, &asgct, cut);
        }
        // A thread's shared walk serves the records right after it only.
        let shared = self.shared_walks.remove(&c.thread).filter(|_| c.num_frames == WALK_SHARED);
        if let Some(frames) = shared {
            // Same stay in the kernel as the walked record before it: the same user stack.
            self.stats.java_ok += 1;
            stack.extend_from_slice(&frames);
            self.shared_walks.insert(c.thread, frames);
        } else if vm_found {
            self.stats.java_ok += 1;
            let stop = crate::hotspot::Stop::from_u8(c.vm_stop);
            if stop != crate::hotspot::Stop::Bottom {
                crate::model::count_reason(&mut self.stats.partial, stop.name(), 1);
            }
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
            // Only the timer samplers' records (exact kinds) go deeper than the record.
            let deep = if c.exact_kinds { deep } else { &[] };
            let frames = java.iter().copied().zip(kinds).chain(deep.iter().copied());
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
            if c.shares_walk {
                self.shared_walks.insert(c.thread, stack[leaf_frames..].to_vec());
            }
        } else if !untrusted_retry && (!is_java || c.num_frames == -3) {
            // A VM thread (GC worker, compiler, VM thread): its component is the root.
            self.stats.vm_thread += 1;
            if stack.is_empty() {
                stack.push(self.pseudo(rec, &format!("[{}]", site_name(&native)), FrameKind::Unknown));
            }
            stack.push(self.pseudo(rec, &format!("[{}]", component.name()), FrameKind::Unknown));
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
            if let Placed::Jit(_) = native {
                self.push_compiled_frames(rec, jm, ip, &mut stack);
            }
            stack.push(self.pseudo(rec, &format!("[no Java stack: {reason}]"), FrameKind::Unknown));
        }

        // Most samples are in Java code: their stack is the walker's frames alone, already
        // shared (an empty `stack` with a non-empty copy: the copy was not made).
        let shared_stack = match vm_copy {
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
        if let (Some(t), Some(slot)) = (data.as_deref_mut(), c.data.stack_slot.filter(|_| c.vm_walk)) {
            self.name_stack_frame(rec, jm, c, slot as usize, t);
        }
        Sample {
            time: raw.time,
            thread: c.thread,
            truncated: c.depth_cut
                || (!c.exact_kinds && java.len() >= crate::capture::MAX_FRAMES)
                || (c.vm_walk && c.vm_stop == crate::hotspot::Stop::Full as u8),
            stack: shared_stack,
            // Records without a period (software events: see `Layout::without_period`) weigh
            // the period set.
            weight: if raw.period != 0 { raw.period } else { rec.event.period },
            counters: self.counter_deltas(c),
            data_addr,
            data,
            ip,
            component,
            state: crate::capture::THREAD_STATES
                .get(usize::from(c.state))
                .filter(|n| !n.is_empty())
                .map(|n| rec.state_idx(n)),
        }
    }

    /// A stack address's frame, which hpm's walk found (`Captured::data.stack_slot`): the
    /// method whose physical frame holds it (inlined methods share their caller's).
    fn name_stack_frame(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        slot: usize,
        t: &mut DataTarget,
    ) {
        let n = usize::try_from(c.num_frames.max(0)).unwrap_or(0).min(MAX_FRAMES);
        if slot >= n {
            return;
        }
        let method = if c.kinds[slot] == crate::hotspot::TAG_PC {
            if slot + 1 >= n {
                return;
            }
            c.frames[slot + 1].method_id
        } else {
            c.frames[slot].method_id
        };
        let Some(p) = (method != 0).then(|| jm.by_pointer(method)).flatten() else { return };
        let idx = self.method_idx(rec, jm, p.id);
        let name = rec.methods.get(idx).display_name();
        if let Some(o) = self.objects.as_mut() {
            t.space = crate::model::Space::Stack;
            t.field = Some(o.intern(&name));
        }
    }

    /// The address the sample's event reported (page faults, precise memory samples), else,
    /// with `data`, the one its instruction was about to touch. Where both exist they are
    /// compared (`DataStats::agreed`): the event's address checks the decoding. With a heap
    /// capture, also what the address touched (`objects`).
    fn data_address(&mut self, c: &Captured, jm: &mut dyn JavaMethods) -> (Option<u64>, Option<Box<DataTarget>>) {
        let event = (self.data_addresses && c.raw.addr != 0).then_some(c.raw.addr);
        if !self.decode_instructions {
            return (event, None);
        }
        let d = &c.data;
        let decoded = if d.code_len == 0 {
            self.stats.data.record(Err(crate::operand::NOT_CAPTURED));
            None
        } else {
            let code = &d.code[..usize::from(d.code_len).min(d.code.len())];
            match crate::operand::sampled_access(code, c.raw.ip, &d.regs) {
                Ok(a) => {
                    self.stats.data.record(Ok(&a));
                    Some(a)
                }
                Err(e) => {
                    self.stats.data.record(Err(e.name()));
                    None
                }
            }
        };
        if let (Some(e), Some(a)) = (event, decoded) {
            self.stats.data.compare(e, &a);
        }
        // The event's own address wins (a precise sample's is the PMU's); the decoding then
        // only splits it into object and offset where the two agree.
        let access = match (event, decoded) {
            (Some(e), Some(a)) if a.address != e => {
                Some(MemoryAccess { address: e, displacement: 0, register_based: false, ..a })
            }
            (Some(e), None) => Some(MemoryAccess {
                address: e,
                displacement: 0,
                register_based: false,
                size: 0,
                access: crate::operand::Access::Load,
                len: 0,
                stored: None,
            }),
            (_, a) => a,
        };
        let target = match (self.objects.as_mut(), access) {
            (Some(o), Some(a)) if d.heap.space != 0 => {
                let sp = d.regs.0[4];
                let created = match a.access {
                    crate::operand::Access::Store if event.is_none() => {
                        o.creation(d.heap.space(), &a, &mut Metadata(jm))
                    }
                    _ => None,
                };
                let mut t = match created {
                    Some(t) => t,
                    None => {
                        let mut t = o.identify(&d.heap, &a, sp, &mut Metadata(jm));
                        if event.is_some() {
                            o.written_class_word(&mut t, &a);
                        }
                        t
                    }
                };
                if c.raw.data_src != 0 || c.raw.weight != 0 {
                    t.source = crate::perf_record::data_source(c.raw.data_src).map(|s| o.intern(&s));
                    t.latency = c.raw.weight & 0xffff_ffff;
                }
                Some(Box::new(t))
            }
            _ => None,
        };
        (event.or(decoded.map(|a| a.address)), target)
    }

    /// The Java frames of a stack hpm's own walker recorded (raw frames, top first): a pc of
    /// compiled code becomes its inline scope's frames from the code map (innermost first),
    /// or, for code the map does not have yet, the nmethod's method; an interpreter frame its
    /// method and bytecode index. Stubs and frames of methods the JVM has no id for are left
    /// out (the latter counted).
    /// Appends them to `out` (a stack named before only with `copy_known`: most samples'
    /// stack is the shared copy alone); returns their shared copy when the stack was named
    /// completely.
    fn vm_java_frames(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        out: &mut Vec<Frame>,
        copy_known: bool,
    ) -> Option<Stack> {
        let n = (c.num_frames.max(0) as usize).min(crate::capture::MAX_FRAMES);
        let timer = Timer::start();
        let keys = raw_stack_key(&self.hasher, c, n);
        let pcs = raw_pcs(&c.frames[..n], &c.kinds[..n]);
        if let Some(e) = named_still(&mut self.vm_stacks, keys.hash, &self.timeline.map, pcs, self.collections, jm) {
            self.stats.unnamed_frames += e.unnamed;
            if copy_known {
                out.extend_from_slice(&e.frames);
            }
            if let Some(g) = &mut self.chain_groups {
                g.sizes.extend_from_slice(&e.groups);
            }
            let known = e.frames.clone();
            timer.stop(Phase::RawKnown);
            return Some(known);
        }
        let (before, made) = (self.stats.unnamed_frames, self.interner.made);
        // Most raw stacks new to the map differ from a known one in the leaf frame's pc or
        // bytecode alone: the callers are looked up as a stack of their own, and only the
        // leaf frame is named (not with `sampler=chain`, whose entries keep each frame's group).
        let leaf = keys.leaf_slots as usize;
        let (frames, methods, shared) = if self.chain_groups.is_none() && leaf < n {
            self.name_above_callers(rec, jm, c, n, &keys)
        } else {
            let (frames, methods, complete) = self.name_vm_frames(rec, jm, &c.frames[..n], &c.kinds[..n], true);
            let shared = complete.then(|| self.interner.intern(&frames));
            (frames, methods, shared)
        };
        out.extend_from_slice(&frames);
        // A stack with code the map does not have yet is named again next time.
        let shared = shared?;
        let unnamed = self.stats.unnamed_frames - before;
        let groups = self.chain_groups.as_ref().map(|g| g.sizes.as_slice().into()).unwrap_or_default();
        self.enter_stack(keys.hash, &shared, unnamed, methods, groups);
        timer.stop(if self.interner.made != made { Phase::RawNewStackNew } else { Phase::RawNewStackKnown });
        Some(shared)
    }

    /// A raw stack new to the map, named as its leaf frame above its callers: the callers'
    /// shared copy from the map (named and entered under their own key when new there), the
    /// leaf frame named alone. The frames, the `Method*`s they rest on and, when every pc was
    /// in the code map, the whole's shared copy.
    fn name_above_callers(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        n: usize,
        keys: &crate::capture::RawKey,
    ) -> (Vec<Frame>, Vec<(u64, MethodPointer)>, Option<Stack>) {
        let k = keys.leaf_slots as usize;
        let mut timer = Timer::start();
        let (leaf, mut methods, leaf_complete) = self.name_vm_frames(rec, jm, &c.frames[..k], &c.kinds[..k], false);
        timer.lap(Phase::Leaf);
        let callers = match self.name_callers(rec, jm, c, (k, n), keys.callers, &mut methods) {
            Ok(stack) => stack,
            Err(frames) => {
                let mut all = leaf;
                all.extend_from_slice(&frames);
                return (all, methods, None);
            }
        };
        timer.lap(Phase::Callers);
        let mut all = Vec::with_capacity(leaf.len() + callers.len());
        all.extend_from_slice(&leaf);
        all.extend_from_slice(&callers);
        let whole = match (leaf_complete, callers.is_empty()) {
            (false, _) => None,
            (true, true) => Some(self.interner.intern(&leaf)),
            (true, false) => Some(self.interner.intern_above(&leaf, &callers)),
        };
        timer.stop(Phase::Whole);
        (all, methods, whole)
    }

    /// The callers of a new raw stack (its slots `start..n`, keyed `key`) and the `Method*`s
    /// they rest on: their shared copy, or their frames where some pc was not in the code map.
    /// A stack new to the resolver is mostly a known one with new frames at its top, not only
    /// a new leaf (ecj's recursion over a syntax tree: a new stack's path leaves the tree a
    /// frame or two below its leaf). When the callers are new, their own callers are looked up
    /// as the callers of some earlier stack, and so on down to [`MAX_CALLER_LEVELS`] levels;
    /// the callers are then made above the stack found ([`StackInterner::intern_part_above`]),
    /// so the tree enters a new stack from that stack's node. Only the callers are entered: a
    /// shared copy and an entry for every level cost more than naming the frames one by one
    /// from their memo (docs/design.md, "New callers above a known stack of their own
    /// callers").
    fn name_callers(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        (start, n): (usize, usize),
        key: (u64, u64),
        methods: &mut Vec<(u64, MethodPointer)>,
    ) -> Result<Stack, Vec<Frame>> {
        let (frames, kinds) = (&c.frames[..n], &c.kinds[..n]);
        // The first slot of the level looked up, and its key: the callers, their callers, ...
        let (mut s, mut level_key) = (start, key);
        let mut below = None;
        for level in 0..MAX_CALLER_LEVELS {
            let pcs = raw_pcs(&frames[s..], &kinds[s..]);
            if let Some(e) = named_still(&mut self.vm_stacks, level_key, &self.timeline.map, pcs, self.collections, jm)
            {
                self.stats.unnamed_frames += e.unnamed;
                methods.extend_from_slice(&e.valid.methods);
                if level == 0 {
                    return Ok(e.frames.clone());
                }
                below = Some((s, e.frames.clone(), e.unnamed, e.valid.methods.clone()));
                break;
            }
            let next = s + crate::hotspot::leaf_slots(&kinds[s..]);
            if next >= n || level + 1 == MAX_CALLER_LEVELS {
                break;
            }
            s = next;
            level_key = crate::hotspot::slots_key(self.hasher.seed(), &frames[s..], &kinds[s..]);
        }
        // The entry rests on the `Method*`s of the stack found and of the frames named above it.
        let (end, base, mut unnamed, mut rests_on) = match below {
            Some((s, stack, unnamed, methods)) => (s, Some(stack), unnamed, methods),
            None => (n, None, 0, Vec::new()),
        };
        let before = self.stats.unnamed_frames;
        let (mut named, m, complete) = self.name_vm_frames(rec, jm, &frames[start..end], &kinds[start..end], true);
        unnamed += self.stats.unnamed_frames - before;
        methods.extend_from_slice(&m);
        if !complete {
            named.extend_from_slice(base.as_deref().unwrap_or_default());
            return Err(named);
        }
        rests_on.extend_from_slice(&m);
        let stack = match &base {
            Some(b) => self.interner.intern_part_above(&named, b),
            None => self.interner.intern_part(&named),
        };
        self.enter_stack(key, &stack, unnamed, rests_on, Box::default());
        Ok(stack)
    }

    /// Enters `stack` as the raw stack (or callers) keyed `key`, with the frames left out of
    /// it, the `Method*`s it rests on and, with `sampler=chain`, each raw frame's frame count.
    fn enter_stack(
        &mut self,
        (h, check): (u64, u64),
        stack: &Stack,
        unnamed: u64,
        methods: Vec<(u64, MethodPointer)>,
        groups: Box<[u16]>,
    ) {
        let entry = NamedStack { frames: stack.clone(), unnamed, valid: self.validity(methods), groups };
        self.vm_stacks.insert(h, (check, entry));
    }

    /// Valid as of now, resting on `methods`.
    fn validity(&self, methods: Vec<(u64, MethodPointer)>) -> Validity {
        Validity { generation: self.timeline.map.generation(), collections: self.collections, methods }
    }

    /// The frames, the interpreted frames' `Method*`s as named, and whether every pc was in
    /// the code map.
    fn name_vm_frames(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        slots: &[CallFrame],
        kinds: &[FrameKind],
        keep_pcs: bool,
    ) -> (Vec<Frame>, Vec<(u64, MethodPointer)>, bool) {
        let mut complete = true;
        let mut out = Vec::with_capacity(slots.len() + 8);
        let mut methods = Vec::new();
        for raw in crate::hotspot::raw_frames(slots, kinds) {
            let key = match raw {
                crate::hotspot::RawFrame::Compiled { pc, interrupted, .. } => {
                    (TAG_COMPILED_KEY, pc, u64::from(interrupted))
                }
                crate::hotspot::RawFrame::Interpreted { method, bcp } => (TAG_INTERPRETED_KEY, method, bcp),
            };
            // An interpreted frame's key is no pc: collections, not code removals, end it.
            let pc = (key.0 == TAG_COMPILED_KEY).then_some(key.1);
            let start = out.len();
            let mut hit = None;
            // A leaf's pc is not kept (below): an interrupted one is not looked for either (two
            // misses per new raw stack, current half and old, for an entry that is not there);
            // a return address (a walk begun at a native or stub frame's caller) is a caller's
            // entry.
            let kept = keep_pcs || pc.is_none();
            let look = kept || key.2 == 0;
            if let Some(e) = if look { self.vm_frames.get_mut(&key) } else { None } {
                hit = Some(e.valid.check(&self.timeline.map, pc, self.collections, jm));
                if hit == Some(true) {
                    out.extend_from_slice(&e.frames);
                    methods.extend_from_slice(&e.valid.methods);
                }
            }
            if hit != Some(true) {
                if hit.is_some() {
                    self.vm_frames.remove(&key);
                }
                // What the frames rest on, when they may be kept (`Scope`: found, not named).
                let method = match self.name_vm_frame(rec, jm, raw, &mut out) {
                    Named::Scope => Some(None),
                    Named::Cached(method) => {
                        self.stats.frames_named += 1;
                        Some(method)
                    }
                    Named::Uncached => {
                        self.stats.frames_named += 1;
                        complete = false;
                        None
                    }
                };
                // A leaf's pc is met again far less often than its scope (found by that): not kept.
                if let Some(method) = method.filter(|_| kept) {
                    let frames = smallvec::SmallVec::from_slice(&out[start..]);
                    let rests_on: Vec<(u64, MethodPointer)> = method.into_iter().collect();
                    methods.extend_from_slice(&rests_on);
                    let valid = self.validity(rests_on);
                    self.vm_frames.insert(key, NamedFrame { frames, valid });
                }
            }
            if let Some(g) = &mut self.chain_groups {
                g.sizes.push(u16::try_from(out.len() - start).unwrap_or(u16::MAX));
            }
        }
        (out, methods, complete)
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
                let mut scope_key = None;
                let (chain, named): (Vec<(u64, i32)>, Named) = match self.timeline.map.find(pc) {
                    Some(b) => match &b.kind {
                        BlobKind::Compiled { method, .. } => {
                            let scope = if interrupted { b.scope_index_after(pc) } else { b.scope_index_at(pc) };
                            // Many pcs share a scope (a leaf's pc differs from sample to sample,
                            // its scope far less): its frames are named once, by blob and scope
                            // (the scope itself read only then).
                            let key = (TAG_SCOPE_KEY, b.start, scope.map_or(u64::MAX, |s| s.1));
                            if let Some(e) = self.vm_frames.get_mut(&key) {
                                if e.valid.check(&self.timeline.map, Some(b.start), self.collections, jm) {
                                    out.extend_from_slice(&e.frames);
                                    return Named::Scope;
                                }
                            }
                            scope_key = Some(key);
                            (
                                scope
                                    .and_then(|(i, _)| b.scope(i))
                                    .map(|s| s.frames.clone())
                                    .unwrap_or_else(|| vec![(*method, -1)]),
                                Named::Cached(None),
                            )
                        }
                        BlobKind::Interpreter | BlobKind::Stub => return Named::Cached(None),
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
                let (last, start) = (chain.len().saturating_sub(1), out.len());
                for (k, (m, bci)) in chain.into_iter().enumerate() {
                    let kind = if k == last { FrameKind::JitCompiled } else { FrameKind::Inlined };
                    out.push(self.java_frame(rec, jm, m, bci.max(0), kind));
                }
                if let Some(key) = scope_key {
                    // Valid while the blob stays in the map (its start is the key's pc).
                    let valid = self.validity(Vec::new());
                    self.vm_frames
                        .insert(key, NamedFrame { frames: smallvec::SmallVec::from_slice(&out[start..]), valid });
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
                Named::Cached(Some((method, m)))
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
        let timer = Timer::start();
        let line = jm.line(id, bci);
        timer.stop(Phase::Line);
        Frame { method, bci, line, kind }
    }

    /// The frame of a native function (libjvm's: C++) or a stub the thread was in; nothing for
    /// Java code, the kernel or code hpm cannot place.
    fn push_native_frame(&mut self, rec: &mut Recording, placed: &Placed, stack: &mut Vec<Frame>) {
        match placed {
            Placed::Lib(lib, sym) => {
                let kind = if lib.starts_with("libjvm") { FrameKind::Cpp } else { FrameKind::Native };
                stack.push(self.pseudo(rec, sym, kind));
            }
            Placed::Code(IpSite::Stub, name) => stack.push(self.pseudo(rec, name, FrameKind::Cpp)),
            _ => {}
        }
    }

    /// The sample standing for one period that `s`'s thread spent in the kernel before `s`
    /// (`KernelMode::Counted`): `s`'s stack under a `[kernel]` frame, at `s`'s time.
    pub fn kernel_time_sample(&mut self, rec: &mut Recording, s: &Sample) -> Sample {
        let mut stack = std::mem::take(&mut self.stack_buf);
        stack.clear();
        stack.push(self.pseudo(rec, "[kernel]", FrameKind::Kernel));
        stack.extend_from_slice(&s.stack);
        let shared_stack = self.interner.intern(&stack);
        self.stack_buf = stack;
        let in_gc = self.gc_active(s.time);
        let thread = rec.threads.get(s.thread as usize);
        let is_java = thread.is_some_and(|t| t.is_java);
        Sample {
            stack: shared_stack,
            counters: vec![0; s.counters.len()],
            data_addr: None,
            data: None,
            component: classify(thread.map_or("", |t| t.name.as_str()), is_java, IpSite::Kernel, in_gc),
            ..s.clone()
        }
    }

    /// The kernel call chain (leaf first) as frames named from /proc/kallsyms; one `[kernel]`
    /// frame where the kernel hides its addresses.
    fn push_kernel_frames(&mut self, rec: &mut Recording, chain: &[u64], stack: &mut Vec<Frame>) {
        self.load_kernel_symbols();
        let Some(syms) = &self.kernel_symbols else { return };
        if syms.is_empty() {
            stack.push(self.pseudo(rec, "[kernel]", FrameKind::Kernel));
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
            let timer = Timer::start();
            let line = jm.line(m, bci);
            timer.stop(Phase::Line);
            let kind = if k == last { FrameKind::JitCompiled } else { FrameKind::Inlined };
            stack.push(Frame { method, bci, line, kind });
        }
    }

    /// Tells `jm` the `Method*`s of the interpreted frames hpm's walker found in `captures`
    /// (a round's records, before they are resolved one by one), each once.
    pub fn prefetch_methods<'c>(&mut self, jm: &mut dyn JavaMethods, captures: impl IntoIterator<Item = &'c Captured>) {
        // Only the kinds are scanned (a byte per frame): in steady state nearly every method
        // is current and nothing is read, so the scan is all this costs each round.
        let mut seen: IntMap<u64, ()> = IntMap::default();
        let mut methods = Vec::new();
        // A stack the handler keyed says whether it has any, and a raw stack named since the
        // last collection needs none asked for (its names hold as they are, `Validity::check`):
        // its slots, which resolving it does not read either, are left alone.
        let (stacks, collections) = (&self.vm_stacks, self.collections);
        let asks = |c: &&Captured| {
            c.raw_key.is_none_or(|k| {
                k.interpreted
                    && !stacks
                        .peek(&k.hash.0)
                        .is_some_and(|(check, e)| *check == k.hash.1 && e.valid.collections == collections)
            })
        };
        for c in captures.into_iter().filter(|c| c.vm_walk && c.num_frames > 0).filter(asks) {
            let n = (c.num_frames as usize).min(crate::capture::MAX_FRAMES);
            for method in crate::hotspot::interpreted_methods(&c.frames[..n], &c.kinds[..n]) {
                if seen.insert(method, ()).is_none() {
                    methods.push(method);
                }
            }
        }
        if !methods.is_empty() {
            jm.prefetch_pointers(&methods);
        }
    }

    /// Distinct stacks made so far (each named, shared and counted once; the samples after
    /// it that have the same stack cost far less).
    pub fn stacks_made(&self) -> u64 {
        self.interner.made
    }

    /// A chunk was written: the blobs its samples were in are listed again with the next
    /// chunk's samples (each chunk lists the blobs of its own samples; a blob's instructions go
    /// with one chunk of the session, `note_code`). The session's counts keep only the
    /// blobs still installed: a long session that recompiles forgets those it will not meet
    /// again.
    pub fn chunk_written(&mut self) {
        let map = &self.timeline.map;
        self.code_seen.retain(|&start, e| {
            e.at = None;
            map.find(start).is_some_and(|b| b.start == start && b.loaded_at == e.loaded_at)
        });
    }

    /// Puts compiled blob `b` (a sample's) in `rec.code` at its first sample of the chunk, and its
    /// instructions (if they were copied) with its second sample of the session, once: a blob
    /// sampled once shows no hot instruction, and most blobs of a short session are sampled
    /// once. The instructions went with every chunk before: most of a one-iteration session's
    /// JFR file (docs/design.md, "Listed where a sample fell").
    fn note_code(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, b: JitBlob) {
        let e = self.code_seen.entry(b.start).or_insert_with(|| CodeSeen::new(b.loaded_at));
        if e.loaded_at != b.loaded_at {
            *e = CodeSeen::new(b.loaded_at);
        }
        e.samples = e.samples.saturating_add(1);
        let add_bytes = e.samples >= 2 && !e.bytes_added;
        e.bytes_added |= add_bytes;
        let first_in_chunk = e.at.is_none();
        let at = *e.at.get_or_insert(rec.code.len());
        if first_in_chunk {
            let method = self.method_idx(rec, jm, b.method);
            let (start, size, loaded_at) = (b.start, b.end - b.start, b.loaded_at);
            rec.code.push(crate::model::CompiledCode { method, start, size, loaded_at, bytes: Arc::from([]) });
        }
        if add_bytes {
            let code = self.timeline.map.find(b.start).and_then(|blob| blob.code.clone());
            if let (Some(c), Some(entry)) = (code, rec.code.get_mut(at)) {
                entry.bytes = c.shared();
            }
        }
    }

    fn place_ip(&mut self, ip: u64, now: u64) -> Placed {
        if is_kernel_address(ip) {
            return Placed::Kernel;
        }
        let generation = self.timeline.map.generation();
        if let Some(b) = self.recent_blobs.find(generation, ip) {
            return Placed::Jit(b);
        }
        if let Some(b) = self.timeline.map.find(ip) {
            return match &b.kind {
                BlobKind::Compiled { method, .. } => {
                    let jit = JitBlob { start: b.start, end: b.end, loaded_at: b.loaded_at, method: *method };
                    self.recent_blobs.keep(generation, ip, jit);
                    Placed::Jit(jit)
                }
                BlobKind::Interpreter => Placed::Code(IpSite::Interpreter, String::new()),
                BlobKind::Stub => Placed::Code(IpSite::Stub, b.name.clone()),
            };
        }
        if let Some((lib, name)) = self.symbolizer.known_site(ip) {
            return Placed::Lib(lib, name);
        }
        if self.symbolizer.mapping(ip).is_none() && now.saturating_sub(self.last_maps_refresh) > 1_000_000_000 {
            // A library loaded since the last look, at most once a second.
            self.symbolizer.refresh();
            self.last_maps_refresh = now;
        }
        match self.symbolizer.mapping(ip) {
            None => Placed::Unknown,
            Some(m) if m.path.is_empty() || m.path.starts_with('[') => Placed::Anonymous,
            Some(_) => {
                // A library's first frame reads its symbol table (and debug files).
                let first = !self.symbolizer.has_table(ip);
                let t = if first { self.cpu_now() } else { 0 };
                self.stats.sites_named += 1;
                let named = self.symbolizer.site(ip);
                if first {
                    self.tables_ns += self.cpu_now().saturating_sub(t);
                }
                match named {
                    Some((lib, name)) => Placed::Lib(lib, name),
                    None => Placed::Unknown,
                }
            }
        }
    }

    /// Reads now what the first samples would otherwise read while samples pile up: the
    /// kernel's function names (when `kernel` call chains are sampled) and libjvm's symbol
    /// table (the VM's own threads run there from the start). Kept for later sessions.
    pub fn preload(&mut self, kernel: bool) {
        if kernel {
            self.load_kernel_symbols();
        }
        let jvm = self.symbolizer.mappings().iter().find(|m| m.path.ends_with("/libjvm.so")).map(|m| m.start);
        if let Some(ip) = jvm {
            self.place_ip(ip, 0);
        }
    }

    /// Reads /proc/kallsyms unless it was (timed as a one-time read).
    fn load_kernel_symbols(&mut self) {
        if self.kernel_symbols.is_none() {
            let t = self.cpu_now();
            self.kernel_symbols = Some(KernelSymbols::load());
            self.tables_ns += self.cpu_now().saturating_sub(t);
        }
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
        let last = self.last_counters.entry(c.thread).or_insert_with(|| vec![0; now.len()]);
        let deltas = now.iter().zip(last.iter()).map(|(n, l)| n.saturating_sub(*l)).collect();
        *last = now;
        deltas
    }
}

enum Placed {
    Jit(JitBlob),
    Code(IpSite<'static>, String),
    Lib(Arc<str>, Arc<str>),
    Kernel,
    Anonymous,
    Unknown,
}

fn site_name(p: &Placed) -> &'static str {
    match p {
        Placed::Jit(_) | Placed::Code(..) => "code",
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
