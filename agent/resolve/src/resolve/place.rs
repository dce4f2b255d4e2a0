//! Where a sample's pc is (JIT code, interpreter or stub, a native library, the kernel), with
//! the compiled blobs it fell in noted for the chunk's code list, and the native, kernel and
//! compiled frames pushed from it.

use super::*;

/// A compiled blob samples were in, this session.
pub(super) struct CodeSeen {
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
pub(super) struct JitBlob {
    start: u64,
    end: u64,
    loaded_at: u64,
    method: hpm_profile::codemap::MethodKey,
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
pub(super) struct RecentBlobs {
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

pub(super) enum Placed {
    Jit(JitBlob),
    Code(IpSite<'static>, String),
    Lib(Arc<str>, Arc<str>),
    Kernel,
    Anonymous,
    Unknown,
}

pub(super) fn site_name(p: &Placed) -> &'static str {
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

impl SampleResolver {
    /// The frame of a native function (libjvm's: C++) or a stub the thread was in; nothing for
    /// Java code, the kernel or code hpm cannot place.
    pub(super) fn push_native_frame(&mut self, rec: &mut Recording, placed: &Placed, stack: &mut Vec<Frame>) {
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
        let thread = rec.threads.get(s.thread.0 as usize);
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
    pub(super) fn push_kernel_frames(&mut self, rec: &mut Recording, chain: &[u64], stack: &mut Vec<Frame>) {
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
    pub(super) fn push_compiled_frames(
        &mut self,
        rec: &mut Recording,
        jm: &mut dyn JavaMethods,
        ip: u64,
        stack: &mut Vec<Frame>,
    ) {
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
    pub(super) fn note_code(&mut self, rec: &mut Recording, jm: &mut dyn JavaMethods, b: JitBlob) {
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
            rec.code.push(hpm_profile::model::CompiledCode { method, start, size, loaded_at, bytes: Arc::from([]) });
        }
        if add_bytes {
            let code = self.timeline.map.find(b.start).and_then(|blob| blob.code.clone());
            if let (Some(c), Some(entry)) = (code, rec.code.get_mut(at)) {
                entry.bytes = c.shared();
            }
        }
    }

    pub(super) fn place_ip(&mut self, ip: u64, now: u64) -> Placed {
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
}
