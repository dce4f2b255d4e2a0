//! Distinct stacks shared by the samples that have them, and memos keyed by a shared stack.
//!
//! The processor resolves thousands of samples a second whose stacks mostly repeat. The
//! resolver interns each finished stack ([`StackInterner`]), so samples with the same frames
//! point at one copy; whatever is then computed per stack — a calling context tree's leaf node,
//! a stack table's entry, a JFR pool key — is computed once per distinct stack and found again
//! by the copy's address ([`ByStack`]), as async-profiler's call-trace storage does, instead of
//! hashing every frame of every sample in each of them.

use std::hash::BuildHasher;
use std::sync::Arc;

use crate::hash::{FastBuild, IntMap};
use crate::model::{Frame, Stack};

/// Distinct stacks kept at most before the table starts again (the copies live on in the
/// samples that have them; a stack seen again after that gets a new copy).
pub const MAX_INTERNED: usize = 1 << 16;

/// Frames of the distinct stacks kept at most (16 bytes each: 64 MB), the bound that holds
/// when stacks are deep (`jstackdepth` up to 4096): 65,536 of 4096 frames would be 4 GB.
/// Stacks of ordinary depth meet [`MAX_INTERNED`] first (65,536 of 30 frames are 2 Mi frames,
/// twice that in `above`, which counts each entry's base and whole).
pub const MAX_INTERNED_FRAMES: usize = 4 << 20;

/// One shared copy per distinct stack.
#[derive(Default)]
pub struct StackInterner {
    /// The copies by the hash of their frames: a stack's frames are hashed once per lookup and
    /// never again (a table of the stacks themselves hashed each new one twice, and every one
    /// again as it grew: a tenth of a short run's naming of new stacks). Two stacks of one hash
    /// share the slot: the later replaces the earlier, which is then made again if met again.
    /// Beside each, whether it was counted in `made` (not while only a part of others).
    set: IntMap<u64, (Stack, bool)>,
    hasher: FastBuild,
    /// Frames of the stacks in `set`.
    frames: usize,
    /// Stacks made (not found) so far as samples' stacks: a part of others counts from when
    /// it is one itself.
    pub made: u64,
    /// [`Self::intern_above`]'s answers by (shared stack's address and length, hash of the
    /// leaf frames): the shared stack (held, so no other takes its address), the whole, and
    /// whether the whole was counted in `made` (not while only a part of others).
    above: IntMap<(usize, usize, u64), (Stack, Stack, bool)>,
    /// Frames of the stacks `above` holds (bounded as `frames` is).
    above_frames: usize,
    /// [`Self::intern_above`]'s wholes by their address and length: the whole (held, so no
    /// other takes its address) and the shared stack below its leaf frames ([`Self::base_of`]).
    bases: IntMap<(usize, usize), (Stack, Stack)>,
}

impl StackInterner {
    /// The shared copy of `frames` (leaf first), made if new.
    pub fn intern(&mut self, frames: &[Frame]) -> Stack {
        self.intern_counted(frames, true)
    }

    /// [`Self::intern`] for the part of a stack below its leaf frame, shared by the stacks
    /// above it: not counted in [`Self::made`], which counts samples' stacks, until it is
    /// interned whole.
    pub fn intern_part(&mut self, frames: &[Frame]) -> Stack {
        self.intern_counted(frames, false)
    }

    fn intern_counted(&mut self, frames: &[Frame], count: bool) -> Stack {
        let h = self.hasher.hash_one(frames);
        if let Some((s, counted)) = self.set.get_mut(&h).filter(|(s, _)| **s == *frames) {
            if count && !*counted {
                *counted = true;
                self.made += 1;
            }
            return s.clone();
        }
        if self.set.len() >= MAX_INTERNED || self.frames + frames.len() > MAX_INTERNED_FRAMES {
            self.set.clear();
            self.frames = 0;
            self.above.clear();
            self.above_frames = 0;
            self.bases.clear();
        }
        let s: Stack = frames.into();
        self.made += u64::from(count);
        self.frames += s.len();
        if let Some((old, _)) = self.set.insert(h, (s.clone(), count)) {
            self.frames -= old.len();
        }
        s
    }

    /// The shared copy of `leaf` (a few frames: a stub, a native function, kernel frames)
    /// above the shared stack `base`, as [`Self::intern`] of the two together would give, but
    /// found again by `base`'s address and the leaf frames alone: a sample in a stub or a
    /// system call under a known Java stack hashed and compared every frame of it before.
    pub fn intern_above(&mut self, leaf: &[Frame], base: &Stack) -> Stack {
        self.above_counted(leaf, base, true)
    }

    /// [`Self::intern_above`] for the part of stacks below their leaf frames (a new stack's
    /// callers, made above a known stack of their own callers): counted as
    /// [`Self::intern_part`] is.
    pub fn intern_part_above(&mut self, leaf: &[Frame], base: &Stack) -> Stack {
        self.above_counted(leaf, base, false)
    }

    fn above_counted(&mut self, leaf: &[Frame], base: &Stack, count: bool) -> Stack {
        if leaf.is_empty() {
            // No frames above (a stub's frame names none): the base itself, whose own base
            // stays what it is.
            return if count { self.intern(&base[..]) } else { base.clone() };
        }
        let key = (base.as_ptr() as usize, base.len(), self.hasher.hash_one(leaf));
        if let Some((_, whole, counted)) = self.above.get_mut(&key) {
            if whole.len() == leaf.len() + base.len() && whole[..leaf.len()] == *leaf {
                let whole = whole.clone();
                if count && !*counted {
                    // Made as a part before: a sample's stack from now on (counted once).
                    *counted = true;
                    self.intern_counted(&whole, true);
                }
                return whole;
            }
        }
        let mut frames = Vec::with_capacity(leaf.len() + base.len());
        frames.extend_from_slice(leaf);
        frames.extend_from_slice(base);
        let whole = self.intern_counted(&frames, count);
        let held = base.len() + whole.len();
        if self.above.len() >= MAX_INTERNED || self.above_frames + held > MAX_INTERNED_FRAMES {
            self.above.clear();
            self.above_frames = 0;
            self.bases.clear();
        }
        if let Some((b, w, _)) = self.above.insert(key, (base.clone(), whole.clone(), count)) {
            self.above_frames -= b.len() + w.len();
        }
        self.above_frames += held;
        // The stacks are those `above` holds (an entry replaced there may live on here, bounded
        // by the same count of entries).
        if self.bases.len() >= MAX_INTERNED {
            self.bases.clear();
        }
        self.bases.insert((whole.as_ptr() as usize, whole.len()), (whole.clone(), base.clone()));
        whole
    }

    /// The shared stack `whole` was made above by [`Self::intern_above`] (its frames below the
    /// leaf frames), while this interner remembers it: what was computed for that stack (its
    /// tree node) serves as the start for `whole`'s.
    pub fn base_of(&self, whole: &Stack) -> Option<&Stack> {
        let (w, base) = self.bases.get(&(whole.as_ptr() as usize, whole.len()))?;
        (Arc::ptr_eq(w, whole) && base.len() < whole.len()).then_some(base)
    }

    /// The nearest of `whole`'s bases that `node_of` knows (the stack it was made above, else
    /// that one's base, ...), with its node, and the bases passed before it, nearest first: at
    /// most `max` of them (then, or without a base known, none is found). A new stack's tree
    /// entry starts at the node found, and the bases passed learn theirs on the way.
    pub fn nearest_base<N>(
        &self,
        whole: &Stack,
        max: usize,
        mut node_of: impl FnMut(&Stack) -> Option<N>,
    ) -> (Option<(Stack, N)>, Vec<Stack>) {
        let mut passed = Vec::new();
        let mut next = self.base_of(whole);
        while let Some(b) = next {
            if let Some(node) = node_of(b) {
                return (Some((b.clone(), node)), passed);
            }
            if passed.len() >= max {
                break;
            }
            passed.push(b.clone());
            next = self.base_of(b);
        }
        (None, passed)
    }

    /// Distinct stacks held.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

/// A value per (shared stack, `extra`), found by the stack's address. Each entry holds a
/// reference to its stack, so no other stack can take that address while the entry exists;
/// bounded like [`StackInterner`].
pub struct ByStack<V> {
    map: IntMap<(usize, usize, u64), (Stack, V)>,
    /// Frames of the stacks the entries hold.
    frames: usize,
}

impl<V> Default for ByStack<V> {
    fn default() -> Self {
        ByStack { map: IntMap::default(), frames: 0 }
    }
}

impl<V: Copy> ByStack<V> {
    fn key(stack: &Stack, extra: u64) -> (usize, usize, u64) {
        (stack.as_ptr() as usize, stack.len(), extra)
    }

    pub fn get(&self, stack: &Stack, extra: u64) -> Option<V> {
        self.map.get(&Self::key(stack, extra)).map(|e| e.1)
    }

    pub fn insert(&mut self, stack: &Stack, extra: u64, v: V) {
        if self.map.len() >= MAX_INTERNED || self.frames + stack.len() > MAX_INTERNED_FRAMES {
            self.clear();
        }
        if self.map.insert(Self::key(stack, extra), (stack.clone(), v)).is_none() {
            self.frames += stack.len();
        }
    }

    /// Forgets every entry (what they stood for changed).
    pub fn clear(&mut self) {
        self.map.clear();
        self.frames = 0;
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FrameKind;
    use crate::model::MethodIdx;

    fn frames(ms: &[u32]) -> Vec<Frame> {
        ms.iter().map(|&m| Frame { method: MethodIdx(m), bci: 0, line: 1, kind: FrameKind::JitCompiled }).collect()
    }

    #[test]
    fn equal_stacks_share_one_copy_and_different_ones_do_not() {
        let mut i = StackInterner::default();
        let a = i.intern(&frames(&[1, 2, 3]));
        let b = i.intern(&frames(&[1, 2, 3]));
        let c = i.intern(&frames(&[1, 2]));
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        assert!(!std::sync::Arc::ptr_eq(&a, &c));
        assert_eq!(&*c, &frames(&[1, 2])[..]);
        assert_eq!(i.len(), 2);
    }

    #[test]
    fn the_nearest_base_with_a_node_is_found_past_those_without() {
        let mut i = StackInterner::default();
        let bottom = i.intern_part(&frames(&[5]));
        let lower = i.intern_part_above(&frames(&[4]), &bottom);
        let upper = i.intern_part_above(&frames(&[3]), &lower);
        let whole = i.intern_above(&frames(&[1, 2]), &upper);
        assert_eq!(*whole, *frames(&[1, 2, 3, 4, 5]));
        // Parts are not samples' stacks.
        assert_eq!(i.made, 1);
        let node_of = |s: &Stack| (s.len() == 1).then_some(7);
        let (found, passed) = i.nearest_base(&whole, 8, node_of);
        assert!(found.is_some_and(|(b, n)| Arc::ptr_eq(&b, &bottom) && n == 7));
        assert_eq!(passed.len(), 2);
        assert!(Arc::ptr_eq(&passed[0], &upper) && Arc::ptr_eq(&passed[1], &lower));
        // No more than `max` passed: then none found.
        let (found, passed) = i.nearest_base(&whole, 1, node_of);
        assert!(found.is_none() && passed.len() == 1);
        // Without any base known, every base passed.
        let (found, passed) = i.nearest_base(&whole, 8, |_| None::<u32>);
        assert!(found.is_none() && passed.len() == 3);
        // No frames above: the base itself, its own base kept.
        assert!(Arc::ptr_eq(&i.intern_part_above(&[], &upper), &upper));
        assert!(Arc::ptr_eq(&i.intern_above(&[], &upper), &upper));
        assert!(i.base_of(&upper).is_some_and(|b| Arc::ptr_eq(b, &lower)));
        assert_eq!(i.made, 2, "counted as a sample's stack");
        // A part later a sample's stack of its own counts once.
        let lowest = i.intern_above(&frames(&[4]), &bottom);
        assert!(Arc::ptr_eq(&lowest, &lower));
        i.intern_above(&frames(&[4]), &bottom);
        assert_eq!(i.made, 3);
    }

    #[test]
    fn a_stack_made_above_another_knows_it() {
        let mut i = StackInterner::default();
        let base = i.intern_part(&frames(&[2, 3]));
        let whole = i.intern_above(&frames(&[1]), &base);
        assert!(std::sync::Arc::ptr_eq(i.base_of(&whole).unwrap(), &base));
        // Found again by its frames: the same copy, the same base.
        let again = i.intern(&frames(&[1, 2, 3]));
        assert!(std::sync::Arc::ptr_eq(i.base_of(&again).unwrap(), &base));
        // A stack interned whole only, and one of the same length elsewhere, have none.
        let alone = i.intern(&frames(&[4, 5, 6]));
        assert!(i.base_of(&alone).is_none());
        assert!(i.base_of(&frames(&[1, 2, 3]).into()).is_none());
        assert!(i.base_of(&base).is_none());
    }

    #[test]
    fn a_part_counts_as_made_once_a_sample_has_it_whole() {
        let mut i = StackInterner::default();
        let part = i.intern_part(&frames(&[2, 3]));
        assert_eq!(i.made, 0);
        assert!(std::sync::Arc::ptr_eq(&i.intern_part(&frames(&[2, 3])), &part));
        assert_eq!(i.made, 0);
        let whole = i.intern(&frames(&[2, 3]));
        assert!(std::sync::Arc::ptr_eq(&whole, &part));
        assert_eq!(i.made, 1);
        i.intern(&frames(&[2, 3]));
        i.intern_part(&frames(&[2, 3]));
        assert_eq!(i.made, 1);
    }

    #[test]
    fn a_stack_whose_hash_slot_holds_another_replaces_it() {
        let mut i = StackInterner::default();
        let a = i.intern(&frames(&[1, 2, 3]));
        let (ha, hb) = (i.hasher.hash_one(&frames(&[1, 2, 3])[..]), i.hasher.hash_one(&frames(&[4, 5])[..]));
        // A collision, made by hand: a's copy in the slot of b's hash.
        let moved = i.set.remove(&ha).unwrap();
        i.set.insert(hb, moved);
        let b = i.intern(&frames(&[4, 5]));
        assert_eq!(&*b, &frames(&[4, 5])[..], "b, not the stack its slot held");
        assert!(!std::sync::Arc::ptr_eq(&a, &b));
        assert_eq!((i.len(), i.frames), (1, 2), "a's copy gone with its frames");
        let a2 = i.intern(&frames(&[1, 2, 3]));
        assert_eq!(&*a2, &*a);
        assert_eq!((i.len(), i.frames), (2, 5));
        assert!(std::sync::Arc::ptr_eq(&i.intern(&frames(&[4, 5])), &b));
    }

    #[test]
    fn leaf_frames_above_a_shared_stack_give_the_copy_interning_them_together_gives() {
        let mut i = StackInterner::default();
        let base = i.intern(&frames(&[5, 6, 7]));
        let whole = i.intern_above(&frames(&[1]), &base);
        assert_eq!(&*whole, &frames(&[1, 5, 6, 7])[..]);
        assert!(std::sync::Arc::ptr_eq(&whole, &i.intern(&frames(&[1, 5, 6, 7]))), "one copy either way");
        assert!(std::sync::Arc::ptr_eq(&whole, &i.intern_above(&frames(&[1]), &base)), "found again");
        // Other leaf frames, or the same frames above another copy of the base.
        let two = i.intern_above(&frames(&[2, 1]), &base);
        assert_eq!(&*two, &frames(&[2, 1, 5, 6, 7])[..]);
        let other_base: Stack = frames(&[5, 6, 8]).into();
        assert_eq!(&*i.intern_above(&frames(&[1]), &other_base), &frames(&[1, 5, 6, 8])[..]);
        assert_eq!(i.made, 4);
        assert_eq!(i.above_frames, (3 + 4) + (3 + 5) + (3 + 4));
    }

    #[test]
    fn a_full_interner_starts_again_and_stacks_stay_valid() {
        let mut i = StackInterner::default();
        let first = i.intern(&frames(&[7]));
        for m in 0..MAX_INTERNED as u32 + 10 {
            i.intern(&frames(&[m, 1_000_000]));
        }
        assert!(i.len() < 20, "started again: {}", i.len());
        assert_eq!(&*first, &frames(&[7])[..]);
    }

    /// Deep stacks: the frames held are bounded too.
    #[test]
    fn deep_stacks_are_bounded_by_their_frames() {
        let mut i = StackInterner::default();
        let mut by = ByStack::default();
        let deep: Vec<u32> = (0..4096).collect();
        for m in 0..(MAX_INTERNED_FRAMES / 4096 + 10) as u32 {
            let mut f = deep.clone();
            f[0] = 1_000_000 + m;
            let s = i.intern(&frames(&f));
            by.insert(&s, 0, m);
        }
        assert!(i.len() < 20 && i.frames < 20 * 4096, "started again: {} stacks", i.len());
        assert!(by.map.len() < 20 && by.frames < 20 * 4096, "started again: {} entries", by.map.len());
    }

    #[test]
    fn memo_is_per_copy_and_extra() {
        let mut i = StackInterner::default();
        let a = i.intern(&frames(&[1, 2]));
        let same_frames_other_copy: Stack = frames(&[1, 2]).into();
        let mut m: ByStack<u32> = ByStack::default();
        m.insert(&a, 0, 5);
        assert_eq!(m.get(&a, 0), Some(5));
        assert_eq!(m.get(&a, 1), None);
        assert_eq!(m.get(&same_frames_other_copy, 0), None);
    }

    #[test]
    fn a_memo_entry_keeps_its_stack_alive_so_its_address_is_not_reused() {
        let mut m: ByStack<u32> = ByStack::default();
        let addr = {
            let s: Stack = frames(&[9, 9]).into();
            m.insert(&s, 0, 1);
            s.as_ptr() as usize
        };
        // The only other reference is the memo's: a new stack cannot take its address.
        let fresh: Vec<Stack> = (0..64).map(|k| frames(&[k, k]).into()).collect();
        assert!(fresh.iter().all(|s| s.as_ptr() as usize != addr));
        assert_eq!(m.len(), 1);
    }
}
