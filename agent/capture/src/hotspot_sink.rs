//! Where a walk puts its frames: [`RawFrame`]s in the ASGCT-shaped slots of a capture
//! ([`FrameSink`]), with what the walk noted on the way (the `data` probe, activation
//! addresses, blob lookups, native steps), and the keys and readers of those slots.

use crate::capture::{CallFrame, RawKey, SlotKind};
use crate::native::NativeStop;

/// One physical frame as the walker records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawFrame {
    /// A pc in a blob with a frame (nmethod or runtime stub), with the nmethod's `Method*`
    /// (0 for a stub or when unknown). `interrupted`: the pc is where the signal stopped the
    /// thread; otherwise it is a return address or the anchor's pc (a call site).
    Compiled { pc: u64, method: u64, interrupted: bool },
    /// An interpreter frame: `Method*` and bytecode pointer.
    Interpreted { method: u64, bcp: u64 },
    /// A frame of native code (a library's or the JVM's own), unwound with `cstack=`:
    /// `interrupted` as for a compiled frame.
    Native { pc: u64, interrupted: bool },
}

/// Frames a walk filled, in the ASGCT-shaped arrays of a capture: a compiled frame takes two
/// slots (pc, then `Method*`), an interpreted one one slot (`Method*`, low 32 bits of the
/// bytecode pointer: with the method's bytecode start, that gives the bytecode index).
pub struct FrameSink<'a> {
    pub frames: &'a mut [CallFrame],
    /// What each of `frames` holds.
    pub slots: &'a mut [SlotKind],
    pub len: usize,
    /// `data`: which frame holds a stack address.
    pub probe: Probe,
    /// `sampler=chain`: each frame's activation address at its first slot (0: unknown), from
    /// which its stack depth (the stack base minus it) is the CallerChaining key (Inoue &
    /// Nakatani §6): a compiled frame's stack pointer once its frame is complete (fixed for the
    /// activation: HotSpot's compiled frames have a constant size), an interpreter frame's fp
    /// (its sp moves with the expression stack). `None`: not recorded.
    pub addrs: Option<&'a mut [u64]>,
    /// Blobs looked up (with a cache), and of those found in the thread's last walk
    /// ([`WalkMemo`](crate::blob_cache::WalkMemo)) and in the shared cache.
    pub blob_lookups: u32,
    pub blob_memo_hits: u32,
    pub blob_hits: u32,
    /// What the native steps did (with [`Walker::native`](super::Walker::native) only).
    pub native: NativeWalk,
}

/// What a walk's native steps did (`cstack=`): counted by the handler, so the summary says
/// where native unwinding gave up and how often the anchor took over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeWalk {
    /// Native frames recorded.
    pub frames: u16,
    /// Why the last native step that gave up did (`NoTable` or `Lost`; never `Bottom`).
    pub gave_up: Option<NativeStop>,
    /// After a step gave up, an anchor (the thread's or an entry frame's) or the rbp hop led
    /// the walk on to Java frames.
    pub fell_back: bool,
}

/// Which walked frame holds an address of the stack (`data`: "stack, and the frame"): a frame
/// spans from its stack pointer up to its caller's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// The address looked for (0: none).
    pub address: u64,
    /// The first slot (in the sink) of the frame that holds it.
    pub slot: Option<u32>,
    /// The last frame pushed: its first slot and its stack pointer.
    last: Option<(usize, u64)>,
}

impl Probe {
    pub fn new(address: u64) -> Probe {
        Probe { address, ..Probe::default() }
    }

    /// A frame whose stack pointer is `sp` starts at `slot`: the previous one spans up to it.
    fn frame(&mut self, slot: usize, sp: u64) {
        if self.address == 0 || self.slot.is_some() {
            return;
        }
        if let Some((s, psp)) = self.last {
            if psp <= self.address && self.address < sp {
                self.slot = Some(s as u32);
            }
        }
        self.last = Some((slot, sp));
    }

    /// The walk ended: the last frame spans up to the stack's base.
    pub fn finish(&mut self, stack_base: u64) {
        self.frame(usize::MAX, stack_base);
    }
}

impl<'a> FrameSink<'a> {
    /// A sink filling `frames` and `slots`, with no probe and no activation addresses.
    pub fn new(frames: &'a mut [CallFrame], slots: &'a mut [SlotKind]) -> FrameSink<'a> {
        FrameSink {
            frames,
            slots,
            len: 0,
            probe: Probe::default(),
            addrs: None,
            blob_lookups: 0,
            blob_memo_hits: 0,
            blob_hits: 0,
            native: NativeWalk::default(),
        }
    }

    /// The activation address of the frame that starts at `slot` (see [`FrameSink::addrs`]).
    pub(super) fn set_addr(&mut self, slot: usize, addr: u64) {
        if let Some(a) = self.addrs.as_deref_mut().and_then(|a| a.get_mut(slot)) {
            *a = addr;
        }
    }

    /// Pushes a frame whose stack pointer is `sp`.
    pub(super) fn push_at(&mut self, f: RawFrame, sp: u64) -> bool {
        let slot = self.len;
        let pushed = self.push(f);
        if pushed {
            self.probe.frame(slot, sp);
        }
        pushed
    }

    pub(super) fn push(&mut self, f: RawFrame) -> bool {
        let cap = self.frames.len().min(self.slots.len());
        match f {
            RawFrame::Compiled { pc, method, interrupted } => {
                if self.len + 2 > cap {
                    return false;
                }
                self.frames[self.len] = CallFrame { lineno: i32::from(interrupted), method_id: pc };
                self.slots[self.len] = SlotKind::Pc;
                self.frames[self.len + 1] = CallFrame { lineno: 0, method_id: method };
                self.slots[self.len + 1] = SlotKind::Method;
                self.len += 2;
            }
            RawFrame::Interpreted { method, bcp } => {
                if self.len + 1 > cap {
                    return false;
                }
                self.frames[self.len] = CallFrame { lineno: bcp as u32 as i32, method_id: method };
                self.slots[self.len] = SlotKind::Interpreted;
                self.len += 1;
            }
            RawFrame::Native { pc, interrupted } => {
                if self.len + 1 > cap {
                    return false;
                }
                self.frames[self.len] = CallFrame { lineno: i32::from(interrupted), method_id: pc };
                self.slots[self.len] = SlotKind::Native;
                self.len += 1;
            }
        }
        true
    }
}

/// The key of the raw stack in a [`FrameSink`]'s filled slots, under the process's hash seed
/// ([`hpm_profile::hash::FastBuild::seed`]). A compiled frame's pc goes in one word with its
/// interrupted flag (its `Method*` slot left out: the pc names the frame, and a name rests on
/// the code at the pc staying in the map), any other slot (an interpreted frame's `Method*` and
/// bytecode pointer) in two, the second tagged apart from a pc's word. The callers' hash is
/// over the slots below the first frame; the whole's over that frame's slots and the callers'
/// hash, so a range of slots has one hash whichever stack it is the callers of, and a whole
/// stack's, made differently, is never one of them. A word per compiled frame keeps it cheap
/// enough for the signal handler, which keys the slots it just wrote, still in its cache: the
/// resolver then reads none of a known stack's slots.
pub fn raw_stack_key(seed: u64, frames: &[CallFrame], slots: &[SlotKind]) -> RawKey {
    let n = frames.len().min(slots.len());
    let leaf = leaf_slots(&slots[..n]);
    let mut interpreted = false;
    let mut h = hpm_profile::hash::Hash128::new(seed);
    key_slots(&mut h, &frames[leaf..n], &slots[leaf..n], &mut interpreted);
    let callers = h.finish();
    let mut h = hpm_profile::hash::Hash128::new(seed);
    key_slots(&mut h, &frames[..leaf], &slots[..leaf], &mut interpreted);
    h.write(callers.0);
    h.write(callers.1);
    RawKey { hash: h.finish(), callers, leaf_slots: leaf as u32, interpreted }
}

/// The key of a range of slots as the callers of some stack ([`RawKey::callers`]): the same
/// whichever stack's callers they are, so the resolver finds a stack's deeper callers by it.
pub fn slots_key(seed: u64, frames: &[CallFrame], slots: &[SlotKind]) -> (u64, u64) {
    let n = frames.len().min(slots.len());
    let mut h = hpm_profile::hash::Hash128::new(seed);
    key_slots(&mut h, &frames[..n], &slots[..n], &mut false);
    h.finish()
}

fn key_slots(h: &mut hpm_profile::hash::Hash128, frames: &[CallFrame], slots: &[SlotKind], interpreted: &mut bool) {
    for (f, &k) in frames.iter().zip(slots) {
        match k {
            SlotKind::Method => {}
            // A user-space pc is below 2^48: the top byte (1 or 2) marks the word as a pc's.
            SlotKind::Pc if f.method_id >> 48 == 0 && (f.lineno == 0 || f.lineno == 1) => {
                h.write(f.method_id | (1 + f.lineno as u64) << 56)
            }
            _ => {
                *interpreted |= k == SlotKind::Interpreted;
                h.write(f.method_id);
                h.write(u64::from(f.lineno as u32) | (k as u64) << 32 | 0xff << 56);
            }
        }
    }
}

/// The slots the first raw frame of `slots` takes (see [`raw_frames`]): a compiled frame's pc
/// and `Method*`, an interpreted or native frame's one; all of them when there is no frame.
pub fn leaf_slots(slots: &[SlotKind]) -> usize {
    match slots.iter().position(|&k| matches!(k, SlotKind::Pc | SlotKind::Interpreted | SlotKind::Native)) {
        Some(i) if slots[i] == SlotKind::Pc => i + 1 + usize::from(slots.get(i + 1) == Some(&SlotKind::Method)),
        Some(i) => i + 1,
        None => slots.len(),
    }
}

/// The raw frames of a filled capture, top first (see [`FrameSink`]); `bcp` of an interpreted
/// frame holds only the low 32 bits.
pub fn raw_frames<'a>(frames: &'a [CallFrame], slots: &'a [SlotKind]) -> impl Iterator<Item = RawFrame> + 'a {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < frames.len().min(slots.len()) {
            let k = i;
            i += 1;
            match slots[k] {
                SlotKind::Pc => {
                    let method = if i < frames.len() && slots.get(i) == Some(&SlotKind::Method) {
                        i += 1;
                        frames[i - 1].method_id
                    } else {
                        0
                    };
                    return Some(RawFrame::Compiled {
                        pc: frames[k].method_id,
                        method,
                        interrupted: frames[k].lineno == 1,
                    });
                }
                SlotKind::Interpreted => {
                    return Some(RawFrame::Interpreted {
                        method: frames[k].method_id,
                        bcp: u64::from(frames[k].lineno as u32),
                    })
                }
                SlotKind::Native => {
                    return Some(RawFrame::Native { pc: frames[k].method_id, interrupted: frames[k].lineno == 1 })
                }
                _ => {}
            }
        }
        None
    })
}

/// The `Method*`s of the interpreted frames among a filled capture's raw frames, top first
/// (what [`raw_frames`] gives as `RawFrame::Interpreted`, found from the slots alone: a
/// compiled frame's method slot is tagged apart).
pub fn interpreted_methods<'a>(frames: &'a [CallFrame], slots: &'a [SlotKind]) -> impl Iterator<Item = u64> + 'a {
    slots.iter().zip(frames).filter(|(k, _)| **k == SlotKind::Interpreted).map(|(_, f)| f.method_id)
}
