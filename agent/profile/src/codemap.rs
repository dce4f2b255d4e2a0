//! Instruction address -> code blob (JIT-compiled method with its inline scopes, interpreter,
//! stub), with timestamped load/unload events applied in sample-time order.
//!
//! The JIT reuses code-cache addresses, and JVMTI reports loads and unloads late (the service
//! thread posts them), so events are not applied when they arrive: the agent queues them in
//! a [`CodeTimeline`] and, before resolving a sample taken at time `t`, advances the map to
//! `t`. A sample then sees exactly the code that was installed when it was taken (as samply
//! does for library mappings).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::hash::IntMap;

/// Bytes of compiled code copied and still held, in the whole process.
static CODE_BYTES_HELD: AtomicUsize = AtomicUsize::new(0);
/// Blobs whose code was not copied because the budget was spent or the blob is too large.
static CODE_NOT_COPIED: AtomicU64 = AtomicU64::new(0);

/// At most this many bytes of compiled code are held as copies at once (the code cache holds
/// 48-240 MB by default; a profile rarely touches more than a few MB of it).
pub const CODE_BYTES_BUDGET: usize = 64 << 20;
/// A blob larger than this is not copied (HotSpot's largest methods are a few hundred KB).
pub const MAX_BLOB_CODE: usize = 4 << 20;

/// A copy of a compiled method's instructions, taken while the method is installed
/// (CompiledMethodLoad): the code cache frees and reuses addresses, so a sample's instruction
/// is decoded from the bytes that were there when it was taken (`hpm report --instructions`).
/// The process holds at most [`CODE_BYTES_BUDGET`] bytes of copies; each is returned to the
/// budget when its blob leaves the map and the sessions' timelines. A recording shares the
/// bytes of the blobs its chunk's samples are in ([`CodeBytes::shared`]) until the chunk is
/// written, without a copy of its own.
#[derive(PartialEq, Eq)]
pub struct CodeBytes(Arc<[u8]>);

impl CodeBytes {
    /// A copy of `code`, or `None` (counted, see [`CodeBytes::not_copied`]) when it would pass
    /// the budget.
    pub fn copy(code: &[u8]) -> Option<Arc<CodeBytes>> {
        let n = code.len();
        let fits = n <= MAX_BLOB_CODE
            && CODE_BYTES_HELD
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                    (held + n <= CODE_BYTES_BUDGET).then_some(held + n)
                })
                .is_ok();
        if !fits {
            CODE_NOT_COPIED.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(Arc::new(CodeBytes(code.into())))
    }

    /// Blobs not copied so far in this process (budget spent or blob too large).
    pub fn not_copied() -> u64 {
        CODE_NOT_COPIED.load(Ordering::Relaxed)
    }

    /// Bytes of copies held now in this process.
    pub fn held() -> usize {
        CODE_BYTES_HELD.load(Ordering::Relaxed)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The instructions, shared with a recording (not copied again for each).
    pub fn shared(&self) -> Arc<[u8]> {
        self.0.clone()
    }
}

impl Drop for CodeBytes {
    fn drop(&mut self) {
        CODE_BYTES_HELD.fetch_sub(self.0.len(), Ordering::Relaxed);
    }
}

impl std::fmt::Debug for CodeBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CodeBytes({} bytes)", self.0.len())
    }
}

/// A method as the JVM identifies it (jmethodID), opaque here.
pub type MethodKey = u64;

/// The virtual call stack at one pc of a compiled method: innermost (inlined) frame first,
/// the compiled method itself last. From JVMTI's CompiledMethodLoad inline records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcScope {
    pub pc: u64,
    pub frames: Vec<(MethodKey, i32)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobKind {
    Compiled {
        method: MethodKey,
        /// Sorted by pc.
        scopes: Vec<PcScope>,
        /// Their pcs alone, searched instead of `scopes` (eight to a cache line, the scopes
        /// two): a new leaf pc's binary search through a large method's thousands of scopes
        /// took a cache miss per step, the costliest loads of naming new frames.
        scope_pcs: Box<[u64]>,
        /// For each [`SCOPE_BUCKET`] bytes of the blob's code from its start (and one past
        /// its end), the index of the first scope at or after the bucket's start: a pc's
        /// search is over its bucket's few scopes, a line or two, not the whole array (a
        /// cold miss per step through a large method's thousands: `name_vm_frames`' costliest
        /// loads). Empty for code larger than [`MAX_SCOPE_BUCKETS`] buckets (searched whole).
        scope_buckets: Box<[u32]>,
        /// Every method inlined somewhere into this blob, sorted.
        inlined: Vec<MethodKey>,
    },
    Interpreter,
    Stub,
}

/// Bytes of compiled code per entry of a blob's scope index (`BlobKind::Compiled::scope_buckets`):
/// HotSpot records a scope every few instructions, so a bucket holds a few.
pub const SCOPE_BUCKET: u64 = 256;

/// Buckets of a blob's scope index at most (16 MB of code, 256 KB of index): a larger blob's
/// scopes are searched whole.
pub const MAX_SCOPE_BUCKETS: u64 = 1 << 16;

/// The scope index of a blob of `size` bytes at `start` with `scopes` (sorted by pc): for each
/// bucket, and one past the end, the index of the first scope at or after its start.
fn scope_buckets(start: u64, size: u64, scopes: &[PcScope]) -> Box<[u32]> {
    let buckets = size / SCOPE_BUCKET + 2;
    if scopes.is_empty() || buckets > MAX_SCOPE_BUCKETS || u32::try_from(scopes.len()).is_err() {
        return Box::new([]);
    }
    let mut i = 0;
    (0..buckets)
        .map(|b| {
            let from = start.saturating_add(b * SCOPE_BUCKET);
            while i < scopes.len() && scopes[i].pc < from {
                i += 1;
            }
            i as u32
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeBlob {
    pub start: u64,
    pub end: u64,
    pub name: String,
    pub kind: BlobKind,
    pub loaded_at: u64,
    /// A compiled method's instructions as installed ([`CodeBytes`]), if copied.
    pub code: Option<Arc<CodeBytes>>,
}

impl CodeBlob {
    pub fn compiled(method: MethodKey, start: u64, size: u64, mut scopes: Vec<PcScope>, time: u64) -> CodeBlob {
        scopes.sort_by_key(|s| s.pc);
        let mut inlined: Vec<MethodKey> =
            scopes.iter().flat_map(|s| s.frames.iter().map(|f| f.0)).filter(|&m| m != method).collect();
        inlined.sort_unstable();
        inlined.dedup();
        CodeBlob {
            start,
            end: start.saturating_add(size),
            name: String::new(),
            kind: BlobKind::Compiled {
                method,
                scope_buckets: scope_buckets(start, size, &scopes),
                scope_pcs: scopes.iter().map(|s| s.pc).collect(),
                scopes,
                inlined,
            },
            loaded_at: time,
            code: None,
        }
    }

    /// The blob with a copy of its instructions.
    pub fn with_code(mut self, code: Option<Arc<CodeBytes>>) -> CodeBlob {
        self.code = code;
        self
    }

    /// A blob from DynamicCodeGenerated: the interpreter or a named stub.
    pub fn dynamic(name: &str, start: u64, size: u64, time: u64) -> CodeBlob {
        let kind = if name.eq_ignore_ascii_case("interpreter") { BlobKind::Interpreter } else { BlobKind::Stub };
        CodeBlob { start, end: start.saturating_add(size), name: name.to_string(), kind, loaded_at: time, code: None }
    }

    /// The inline scope describing `ip`. HotSpot records scopes at the pc *after* calls and
    /// safepoint polls, so the scope of an arbitrary pc is the first recorded one at or after
    /// it (as `nmethod::pc_desc_near` does); past the last one, the last.
    pub fn scope_at(&self, ip: u64) -> Option<&PcScope> {
        self.scope_index_at(ip).and_then(|(i, _)| self.scope(i))
    }

    /// [`Self::scope_at`]'s scope by its index and pc, read from the index searched (the scope
    /// itself, another line, is read only by who needs its frames: [`Self::scope`]).
    pub fn scope_index_at(&self, ip: u64) -> Option<(usize, u64)> {
        match &self.kind {
            BlobKind::Compiled { scopes, scope_pcs, scope_buckets, .. } if !scopes.is_empty() => {
                // The first pc at or after `ip` lies between the first at or after the start of
                // `ip`'s bucket and the first at or after the next one's.
                let bucket = usize::try_from(ip.wrapping_sub(self.start) / SCOPE_BUCKET).unwrap_or(usize::MAX);
                let i = match (ip >= self.start).then(|| scope_buckets.get(bucket..bucket.saturating_add(2))).flatten()
                {
                    Some(&[lo, hi]) => {
                        let (lo, hi) = (lo as usize, hi as usize);
                        lo + scope_pcs[lo..hi].partition_point(|&pc| pc < ip)
                    }
                    _ => scope_pcs.partition_point(|&pc| pc < ip),
                };
                let i = i.min(scopes.len() - 1);
                Some((i, scope_pcs[i]))
            }
            _ => None,
        }
    }

    /// The scope at index `i` of a compiled blob's (see [`Self::scope_index_at`]).
    pub fn scope(&self, i: usize) -> Option<&PcScope> {
        match &self.kind {
            BlobKind::Compiled { scopes, .. } => scopes.get(i),
            _ => None,
        }
    }

    /// The inline scope, by index and pc ([`Self::scope_index_at`]), of the instruction at `ip`
    /// where a thread was interrupted (not a return address): the first scope recorded strictly
    /// after it. The scopes HotSpot records for debugging between safepoints mark the *end* of
    /// the code they describe, so a scope at exactly `ip` is the code before it
    /// (AsyncGetCallTrace looks up `pc + 1` for this reason).
    pub fn scope_index_after(&self, ip: u64) -> Option<(usize, u64)> {
        self.scope_index_at(ip.saturating_add(1))
    }

    pub fn method(&self) -> Option<MethodKey> {
        match &self.kind {
            BlobKind::Compiled { method, .. } => Some(*method),
            _ => None,
        }
    }

    /// Whether `m` is inlined somewhere into this blob.
    pub fn inlines(&self, m: MethodKey) -> bool {
        match &self.kind {
            BlobKind::Compiled { inlined, .. } => inlined.binary_search(&m).is_ok(),
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeEvent {
    Load(CodeBlob),
    Unload { time: u64, start: u64 },
}

impl CodeEvent {
    pub fn time(&self) -> u64 {
        match self {
            CodeEvent::Load(b) => b.loaded_at,
            CodeEvent::Unload { time, .. } => *time,
        }
    }
}

/// The code installed at one moment.
#[derive(Clone, Debug, Default)]
pub struct CodeMap {
    blobs: BTreeMap<u64, CodeBlob>,
    /// Live compiled blobs per method (start addresses).
    live: IntMap<MethodKey, Vec<u64>>,
    /// Bumped whenever code leaves the map: what was resolved against it before may differ
    /// now (an added blob only covers addresses that were not code before).
    generation: u64,
    /// The latest removals, oldest first: (generation it made, start, end). A memo of names by
    /// pc keeps what no removal touched ([`Self::removed_since`]).
    removals: VecDeque<(u64, u64, u64)>,
}

/// Removals remembered at most; a memo older than the oldest is dropped whole.
const MAX_REMOVALS: usize = 4096;

impl CodeMap {
    /// Changes whenever code leaves the map (a load into a free range leaves it as it is:
    /// what was found by pc before still holds).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether code covering `pc` may have left the map since generation `since`: true when
    /// a removal after it covered `pc`, or when removals that far back are forgotten.
    pub fn removed_since(&self, since: u64, pc: u64) -> bool {
        if since >= self.generation {
            return false;
        }
        match self.removals.front() {
            Some(&(g, _, _)) if g <= since + 1 => {}
            _ => return true,
        }
        self.removals.iter().rev().take_while(|r| r.0 > since).any(|&(_, start, end)| start <= pc && pc < end)
    }

    pub fn apply(&mut self, ev: CodeEvent) {
        match ev {
            CodeEvent::Load(b) => {
                // A load over live blobs means their unload has not been applied yet (it is
                // reported late, or never for stubs): the new code wins.
                let overlapping: Vec<u64> =
                    self.blobs.range(..b.end).rev().take_while(|(_, o)| o.end > b.start).map(|(&s, _)| s).collect();
                for s in overlapping {
                    self.remove(s);
                }
                if let Some(m) = b.method() {
                    self.live.entry(m).or_default().push(b.start);
                }
                self.blobs.insert(b.start, b);
            }
            CodeEvent::Unload { start, .. } => self.remove(start),
        }
    }

    fn remove(&mut self, start: u64) {
        if let Some(old) = self.blobs.remove(&start) {
            self.generation += 1;
            if self.removals.len() >= MAX_REMOVALS {
                self.removals.pop_front();
            }
            self.removals.push_back((self.generation, old.start, old.end));
            if let Some(m) = old.method() {
                if let Some(v) = self.live.get_mut(&m) {
                    v.retain(|&s| s != start);
                    if v.is_empty() {
                        self.live.remove(&m);
                    }
                }
            }
        }
    }

    pub fn find(&self, ip: u64) -> Option<&CodeBlob> {
        self.blobs.range(..=ip).next_back().map(|(_, b)| b).filter(|b| ip < b.end)
    }

    /// Whether `m` has compiled code installed now.
    pub fn is_compiled(&self, m: MethodKey) -> bool {
        self.live.contains_key(&m)
    }

    /// The live compiled blobs of `m`.
    pub fn compiled_blobs(&self, m: MethodKey) -> impl Iterator<Item = &CodeBlob> {
        self.live.get(&m).into_iter().flatten().filter_map(|s| self.blobs.get(s))
    }

    pub fn len(&self) -> usize {
        self.blobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
    }
}

/// Code events waiting to be applied in time order, and the map they have built so far.
#[derive(Clone, Debug, Default)]
pub struct CodeTimeline {
    pending: Vec<CodeEvent>,
    sorted: bool,
    pub map: CodeMap,
}

impl CodeTimeline {
    pub fn push(&mut self, ev: CodeEvent) {
        self.pending.push(ev);
        self.sorted = false;
    }

    /// Applies every pending event stamped at or before `t`.
    pub fn advance_to(&mut self, t: u64) {
        if !self.sorted {
            // Stable, so same-time events keep their arrival order; reversed to pop the oldest.
            self.pending.sort_by_key(|e| std::cmp::Reverse(e.time()));
            self.sorted = true;
        }
        while self.pending.last().is_some_and(|e| e.time() <= t) {
            let ev = self.pending.pop().expect("checked non-empty");
            self.map.apply(ev);
        }
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_copies_are_bounded_and_returned_when_dropped() {
        assert!(CodeBytes::copy(&vec![0x90; MAX_BLOB_CODE + 1]).is_none(), "a blob too large is not copied");
        let before = CodeBytes::held();
        let c = CodeBytes::copy(&[0x48, 0x89, 0xe5]).expect("fits");
        assert_eq!(c.bytes(), &[0x48, 0x89, 0xe5]);
        let blob = CodeBlob::compiled(1, 0x1000, 3, Vec::new(), 1).with_code(Some(c));
        assert!(CodeBytes::held() >= before + 3);
        let mut m = CodeMap::default();
        m.apply(CodeEvent::Load(blob));
        m.apply(CodeEvent::Unload { time: 2, start: 0x1000 });
        assert_eq!(CodeBytes::held(), before, "the copy left with its blob");
        assert!(CodeBytes::not_copied() >= 1);
    }

    #[test]
    fn removals_are_remembered_by_generation_and_address() {
        let mut m = CodeMap::default();
        m.apply(CodeEvent::Load(CodeBlob::compiled(1, 0x1000, 0x100, Vec::new(), 1)));
        m.apply(CodeEvent::Load(CodeBlob::compiled(2, 0x2000, 0x100, Vec::new(), 1)));
        let before = m.generation();
        assert!(!m.removed_since(before, 0x1010), "nothing removed yet");
        m.apply(CodeEvent::Unload { time: 2, start: 0x2000 });
        assert!(!m.removed_since(before, 0x1010), "another blob left");
        assert!(m.removed_since(before, 0x2010));
        assert!(!m.removed_since(m.generation(), 0x2010), "nothing since now");
        // Older than the log reaches: assumed removed.
        for k in 0..MAX_REMOVALS as u64 + 1 {
            let start = 0x10_0000 + k * 0x100;
            m.apply(CodeEvent::Load(CodeBlob::compiled(3, start, 0x100, Vec::new(), 3)));
            m.apply(CodeEvent::Unload { time: 4, start });
        }
        assert!(m.removed_since(before, 0x1010));
    }

    fn scope(pc: u64, frames: &[(u64, i32)]) -> PcScope {
        PcScope { pc, frames: frames.to_vec() }
    }

    #[test]
    fn reused_addresses_resolve_by_time() {
        let mut tl = CodeTimeline::default();
        tl.push(CodeEvent::Load(CodeBlob::compiled(1, 0x1000, 0x100, vec![], 10)));
        tl.push(CodeEvent::Unload { time: 20, start: 0x1000 });
        tl.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x80, vec![], 30)));
        tl.advance_to(15);
        assert_eq!(tl.map.find(0x1050).and_then(|b| b.method()), Some(1));
        tl.advance_to(25);
        assert!(tl.map.find(0x1050).is_none());
        assert!(!tl.map.is_compiled(1));
        tl.advance_to(35);
        assert_eq!(tl.map.find(0x1050).and_then(|b| b.method()), Some(2));
        assert!(tl.map.find(0x1080).is_none(), "past the end of the new blob");
    }

    #[test]
    fn out_of_order_arrival_is_applied_in_time_order() {
        let mut tl = CodeTimeline::default();
        tl.push(CodeEvent::Load(CodeBlob::compiled(2, 0x1000, 0x100, vec![], 30)));
        tl.push(CodeEvent::Unload { time: 20, start: 0x1000 });
        tl.push(CodeEvent::Load(CodeBlob::compiled(1, 0x1000, 0x100, vec![], 10)));
        tl.advance_to(100);
        assert_eq!(tl.map.find(0x1000).and_then(|b| b.method()), Some(2));
        assert!(tl.map.is_compiled(2) && !tl.map.is_compiled(1));
        assert_eq!(tl.pending(), 0);
    }

    #[test]
    fn a_load_over_a_live_blob_replaces_it() {
        let mut m = CodeMap::default();
        m.apply(CodeEvent::Load(CodeBlob::compiled(1, 0x1000, 0x100, vec![], 1)));
        m.apply(CodeEvent::Load(CodeBlob::compiled(2, 0x1080, 0x100, vec![], 2)));
        assert_eq!(m.len(), 1);
        assert!(!m.is_compiled(1));
        assert!(m.find(0x1010).is_none());
    }

    #[test]
    fn inline_scopes_describe_the_pc_after() {
        let b = CodeBlob::compiled(
            1,
            0x1000,
            0x100,
            vec![scope(0x1040, &[(3, 7), (2, 4), (1, 9)]), scope(0x1010, &[(1, 2)])],
            0,
        );
        assert_eq!(b.scope_at(0x1000).unwrap().frames, vec![(1, 2)]);
        assert_eq!(b.scope_at(0x1011).unwrap().frames[0], (3, 7));
        assert_eq!(b.scope_at(0x10ff).unwrap().pc, 0x1040);
        assert!(b.inlines(3) && b.inlines(2) && !b.inlines(1));
    }

    #[test]
    fn a_pcs_scope_from_its_bucket_is_the_one_the_whole_search_finds() {
        // Scopes dense and sparse, before the start, at the end, beyond it; pcs all around.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for size in [1u64, 255, 256, 257, 4000, 70_000] {
            let start = 0x7f00_0000_1000;
            let n = (next() % 300) as usize;
            let scopes: Vec<PcScope> = (0..n).map(|_| scope(start - 16 + next() % (size + 48), &[(1, 0)])).collect();
            let b = CodeBlob::compiled(1, start, size, scopes, 0);
            let BlobKind::Compiled { scope_pcs, scope_buckets, .. } = &b.kind else { unreachable!() };
            assert_eq!(scope_buckets.is_empty(), n == 0);
            for ip in (0..600).map(|_| start - 32 + next() % (size + 80)).chain([0, start, start + size, u64::MAX]) {
                let whole = scope_pcs.partition_point(|&pc| pc < ip).min(n.saturating_sub(1));
                assert_eq!(b.scope_at(ip).map(|s| s.pc), scope_pcs.get(whole).copied(), "size {size} ip {ip:#x}");
            }
        }
        // Code too large for an index: searched whole.
        let big = CodeBlob::compiled(1, 0, SCOPE_BUCKET * MAX_SCOPE_BUCKETS, vec![scope(0x10, &[(1, 0)])], 0);
        let BlobKind::Compiled { scope_buckets, .. } = &big.kind else { unreachable!() };
        assert!(scope_buckets.is_empty());
        assert_eq!(big.scope_at(0x8).map(|s| s.pc), Some(0x10));
    }

    #[test]
    fn interpreter_and_stubs() {
        let i = CodeBlob::dynamic("Interpreter", 0x10, 0x10, 0);
        assert_eq!(i.kind, BlobKind::Interpreter);
        assert_eq!(CodeBlob::dynamic("StubRoutines (1)", 0, 1, 0).kind, BlobKind::Stub);
    }
}
