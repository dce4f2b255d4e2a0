//! Stacks of hpm's own walker named: a raw stack met before from its memo entry, a new one as
//! its leaf frame above its callers (themselves looked up, or made above a known stack of their
//! own callers), each physical frame from the frames' memo or named through the code map's
//! scopes and the JVM's methods; what a name rests on (code, `Method*`s) checked at its reuse.

use super::*;

/// `vm_frames` keys: a compiled frame's pc, an interpreted frame's method and bytecode, a
/// compiled blob's inline scope (the blob's start and the scope's pc).
const TAG_COMPILED_KEY: u8 = 1;
const TAG_INTERPRETED_KEY: u8 = 2;
const TAG_SCOPE_KEY: u8 = 3;
const TAG_NATIVE_KEY: u8 = 4;

/// Whether the frames named for a raw frame may be reused for its next occurrence (with the
/// `Method*` an interpreted frame was named by); `Scope`: a compiled frame whose inline scope
/// was named before (nothing named now).
pub(super) enum Named {
    Cached(Option<(u64, MethodPointer)>),
    Scope,
    Uncached,
}

/// A raw stack named: its Java frames (the interned copy) and the frames left out because no
/// jmethodID was known for them.
pub(super) struct NamedStack {
    frames: Stack,
    unnamed: u64,
    valid: Validity,
    /// `sampler=chain`: the frames each physical frame became (empty otherwise).
    groups: Box<[u16]>,
}

/// One physical frame named: its frames (one, or a compiled pc's inlined ones) kept in the
/// memo's entry itself up to [`INLINE_FRAMES`], where a heap copy cost one more cache miss per
/// frame looked up.
pub(super) struct NamedFrame {
    frames: smallvec::SmallVec<[Frame; INLINE_FRAMES]>,
    valid: Validity,
}

/// Frames a [`NamedFrame`] holds without a heap copy.
const INLINE_FRAMES: usize = 4;

/// What a name given by pc and by `Method*` rests on, and when it was last found to hold. A
/// pc's name holds until code covering it leaves the map ([`CodeMap::removed_since`]); a
/// `Method*`'s until a collection frees it, so after each collection it is asked again.
pub(super) struct Validity {
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
fn raw_pcs<'a>(frames: &'a [CallFrame], slots: &'a [SlotKind]) -> impl Iterator<Item = u64> + 'a {
    slots.iter().zip(frames).filter(|(k, _)| **k == SlotKind::Pc).map(|(_, f)| f.method_id)
}

/// Whether `c`'s walk holds native frames and no Java frame (a VM thread's, `cstack=`).
pub(super) fn native_only(c: &Captured) -> bool {
    c.raw_walk().is_some_and(|(_, _, slots)| {
        slots.contains(&SlotKind::Native) && !slots.iter().any(|k| matches!(k, SlotKind::Pc | SlotKind::Interpreted))
    })
}

/// The key of a raw walk: the signal handler's, or made here.
fn raw_stack_key(
    hasher: &hpm_profile::hash::FastBuild,
    w: &RawWalk,
    frames: &[CallFrame],
    slots: &[SlotKind],
) -> RawKey {
    match w.key {
        Some(k) => k,
        None => hpm_capture::hotspot::raw_stack_key(hasher.seed(), frames, slots),
    }
}

/// The entry of `stacks` under `key` (a [`hpm_capture::capture::RawKey`] hash) if its names still
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
/// [`hpm_profile::hash::RecentMap`]).
pub(super) const MAX_VM_STACKS: usize = 1 << 16;

/// Named raw stacks by the first half of their 128-bit hash (see `SampleResolver::vm_stacks`).
pub(super) type VmStacks =
    hpm_profile::hash::RecentMap<u64, (u64, NamedStack), MAX_VM_STACKS, { hpm_profile::interned::MAX_INTERNED_FRAMES }>;

/// A named stack weighs its frames: it keeps them alive (the interner's copy, shared until
/// the interner starts again), so deep stacks fill the memo by frames before by count.
impl hpm_profile::hash::Weighed for NamedStack {
    fn weight(&self) -> usize {
        self.frames.len()
    }
}

/// A physical frame's names are a few frames (its inline scopes): counted by entries only.
impl hpm_profile::hash::Weighed for NamedFrame {
    fn weight(&self) -> usize {
        0
    }
}
/// Named physical frames and inline scopes (see `SampleResolver::vm_frames`).
pub(super) type VmFrames = hpm_profile::hash::RecentMap<(u8, u64, u64), NamedFrame, MAX_VM_STACKS>;

impl SampleResolver {
    /// The Java frames of a stack hpm's own walker recorded (raw frames, top first): a pc of
    /// compiled code becomes its inline scope's frames from the code map (innermost first),
    /// or, for code the map does not have yet, the nmethod's method; an interpreter frame its
    /// method and bytecode index. Stubs and frames of methods the JVM has no id for are left
    /// out (the latter counted).
    /// Appends them to `out` (a stack named before only with `copy_known`: most samples'
    /// stack is the shared copy alone); returns their shared copy when the stack was named
    /// completely.
    pub(super) fn vm_java_frames(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        c: &Captured,
        out: &mut Vec<Frame>,
        copy_known: bool,
    ) -> Option<Stack> {
        let (w, frames, slots) = c.raw_walk()?;
        let n = frames.len();
        let timer = Timer::start();
        let keys = raw_stack_key(&self.hasher, w, frames, slots);
        let pcs = raw_pcs(&c.frames[..n], &c.slots[..n]);
        if let Some(e) = named_still(&mut self.vm_stacks, keys.hash, &self.timeline.map, pcs, self.collections, jm) {
            self.stats.unnamed_frames += e.unnamed;
            if copy_known {
                out.extend_from_slice(&e.frames);
            }
            if let Some(g) = &mut self.frame_groups {
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
        let (frames, methods, shared) = if self.frame_groups.is_none() && leaf < n {
            self.name_above_callers(rec, jm, c, n, &keys)
        } else {
            let (frames, methods, complete) = self.name_vm_frames(rec, jm, &c.frames[..n], &c.slots[..n], true);
            let shared = complete.then(|| self.interner.intern(&frames));
            (frames, methods, shared)
        };
        out.extend_from_slice(&frames);
        // A stack with code the map does not have yet is named again next time.
        let shared = shared?;
        let unnamed = self.stats.unnamed_frames - before;
        let groups = self.frame_groups.as_ref().map(|g| g.sizes.as_slice().into()).unwrap_or_default();
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
        keys: &hpm_capture::capture::RawKey,
    ) -> (Vec<Frame>, Vec<(u64, MethodPointer)>, Option<Stack>) {
        let k = keys.leaf_slots as usize;
        let mut timer = Timer::start();
        let (leaf, mut methods, leaf_complete) = self.name_vm_frames(rec, jm, &c.frames[..k], &c.slots[..k], false);
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
    /// the callers are then made above the stack found ([`hpm_profile::interned::StackInterner::intern_part_above`]),
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
        let (frames, kinds) = (&c.frames[..n], &c.slots[..n]);
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
            let next = s + hpm_capture::hotspot::leaf_slots(&kinds[s..]);
            if next >= n || level + 1 == MAX_CALLER_LEVELS {
                break;
            }
            s = next;
            level_key = hpm_capture::hotspot::slots_key(self.hasher.seed(), &frames[s..], &kinds[s..]);
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
        kinds: &[SlotKind],
        keep_pcs: bool,
    ) -> (Vec<Frame>, Vec<(u64, MethodPointer)>, bool) {
        let mut complete = true;
        let mut out = Vec::with_capacity(slots.len() + 8);
        let mut methods = Vec::new();
        for raw in hpm_capture::hotspot::raw_frames(slots, kinds) {
            let key = match raw {
                hpm_capture::hotspot::RawFrame::Compiled { pc, interrupted, .. } => {
                    (TAG_COMPILED_KEY, pc, u64::from(interrupted))
                }
                hpm_capture::hotspot::RawFrame::Interpreted { method, bcp } => (TAG_INTERPRETED_KEY, method, bcp),
                hpm_capture::hotspot::RawFrame::Native { pc, interrupted } => {
                    (TAG_NATIVE_KEY, pc, u64::from(interrupted))
                }
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
            if let Some(g) = &mut self.frame_groups {
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
        raw: hpm_capture::hotspot::RawFrame,
        out: &mut Vec<Frame>,
    ) -> Named {
        match raw {
            hpm_capture::hotspot::RawFrame::Compiled { pc, method, interrupted } => {
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
            hpm_capture::hotspot::RawFrame::Interpreted { method, bcp } => {
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
            // The interrupted frame is the sample's leaf, named from its ip above the walk's.
            hpm_capture::hotspot::RawFrame::Native { interrupted: true, .. } => Named::Cached(None),
            hpm_capture::hotspot::RawFrame::Native { pc, .. } => {
                // A return address: its call is the byte before (a function may end in a call).
                let placed = self.place_ip(pc.wrapping_sub(1), self.sample_time);
                match placed {
                    Placed::Lib(..) | Placed::Code(..) => self.push_native_frame(rec, &placed, out),
                    _ => out.push(self.pseudo_bracketed(rec, &["[", place::site_name(&placed), "]"])),
                }
                // A pc outside every mapping may be a library loaded since the maps were read.
                if matches!(placed, Placed::Unknown) {
                    Named::Uncached
                } else {
                    Named::Cached(None)
                }
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

    /// Tells `jm` the `Method*`s of the interpreted frames hpm's walker found in `captures`
    /// (a round's records, before they are resolved one by one), each once.
    pub fn prefetch_methods<'c>(&mut self, jm: &mut dyn JavaMethods, captures: impl IntoIterator<Item = &'c Captured>) {
        // Only the slots' tags are scanned (a byte per frame): in steady state nearly every method
        // is current and nothing is read, so the scan is all this costs each round.
        let mut seen: IntMap<u64, ()> = IntMap::default();
        let mut methods = Vec::new();
        // A stack the handler keyed says whether it has any, and a raw stack named since the
        // last collection needs none asked for (its names hold as they are, `Validity::check`):
        // its slots, which resolving it does not read either, are left alone.
        let (stacks, collections) = (&self.vm_stacks, self.collections);
        let asks = |w: &RawWalk| {
            w.key.is_none_or(|k| {
                k.interpreted
                    && !stacks
                        .peek(&k.hash.0)
                        .is_some_and(|(check, e)| *check == k.hash.1 && e.valid.collections == collections)
            })
        };
        let walks = captures.into_iter().filter_map(Captured::raw_walk).filter(|(w, ..)| w.slots > 0 && asks(w));
        for (_, frames, slots) in walks {
            for method in hpm_capture::hotspot::interpreted_methods(frames, slots) {
                if seen.insert(method, ()).is_none() {
                    methods.push(method);
                }
            }
        }
        if !methods.is_empty() {
            jm.prefetch_pointers(&methods);
        }
    }
}
