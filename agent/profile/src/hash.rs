//! A fast, non-cryptographic hasher for the processor's and readers' hot maps (integer keys,
//! method names). The default SipHash showed up at the top of the processing thread's profile.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::OnceLock;

#[derive(Clone, Copy, Default)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    /// The state with its high half folded into the low one: the multiply leaves the low bits
    /// depending on the low bits of the input only, and the table picks buckets by the low bits,
    /// so keys that differ only high up (ids shifted left, say) would all share a bucket.
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(b) ^ (rest.len() as u64) << 59);
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// Builds [`IntHasher`]s that start from a seed drawn once per process, so that keys read from
/// a file (JFR pool keys, frame names) cannot be chosen to land in one bucket and make a table
/// quadratic: the bucket depends on the seed through the folded multiply.
#[derive(Clone, Copy)]
pub struct FastBuild {
    seed: u64,
}

/// The process's seed of [`FastBuild`], made by the first one.
static SEED: OnceLock<u64> = OnceLock::new();

/// The seed every [`FastBuild`] of this process has, once the first was made: an atomic load,
/// for the signal handler (which keys raw stacks as the resolver does, and must not make it).
pub fn seed_if_made() -> Option<u64> {
    SEED.get().copied()
}

impl Default for FastBuild {
    fn default() -> Self {
        let seed = *SEED.get_or_init(|| {
            // std's RandomState is seeded from the OS once per process (and per thread after).
            let s = std::collections::hash_map::RandomState::new();
            s.hash_one(0x9e37_79b9_7f4a_7c15u64) | 1
        });
        FastBuild { seed }
    }
}

impl BuildHasher for FastBuild {
    type Hasher = IntHasher;

    fn build_hasher(&self) -> IntHasher {
        IntHasher(self.seed)
    }
}

/// A map with the fast hasher (integer or string keys).
pub type IntMap<K, V> = HashMap<K, V, FastBuild>;

/// A 128-bit hash of a sequence of words, for keys kept as their hash alone: a raw stack is
/// known by it without being stored and compared frame by frame (async-profiler's call-trace
/// storage keeps 64 bits of a stack's hash and nothing else). Two lanes of different
/// multipliers and rotations, each a bijection of its state for a given word and of the word
/// for a given state, and the murmur3 finaliser over each with the length: two different
/// sequences share both halves by accident about once in 2^120 pairs, not once per run.
pub struct Hash128 {
    a: u64,
    b: u64,
    n: u64,
}

impl Hash128 {
    pub fn new(seed: u64) -> Hash128 {
        Hash128 { a: seed, b: seed.rotate_left(32) ^ 0x6a09_e667_f3bc_c908, n: 0 }
    }

    pub fn write(&mut self, w: u64) {
        self.a = (self.a ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        self.b = (self.b.rotate_left(23) ^ w).wrapping_mul(0xc2b2_ae3d_27d4_eb4f).rotate_left(31);
        self.n += 1;
    }

    /// The two halves: the first picks a table's bucket, the second tells keys of one apart.
    pub fn finish(&self) -> (u64, u64) {
        (fmix(self.a ^ self.n), fmix(self.b ^ self.n.rotate_left(32) ^ self.a.rotate_left(17)))
    }
}

/// murmur3's 64-bit finaliser: every input bit reaches every output bit.
fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

impl FastBuild {
    /// A [`Hash128`] from this builder's seed.
    pub fn hash128(&self) -> Hash128 {
        Hash128::new(self.seed)
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }
}

/// A memo of `BOUND` entries at most that keeps those in use: entries are made in the
/// current half; once it holds `BOUND / 2`, it becomes the old half (the one before dropped),
/// and an entry found in the old half moves back to the current one. A memo cleared whole when
/// full forgot its hot entries with the rest: the resolver's named stacks and frames, in a
/// program still compiling, were all named again every time the frames' memo filled.
///
/// Entries may also weigh ([`Weighed`]: a named stack its frames, which it keeps alive): a half
/// is full, too, once its entries weigh `MAX_WEIGHT / 2`, so the memo holds at most
/// `MAX_WEIGHT` and one entry in each half (65,536 stacks 4096 frames deep would be 4 GB).
pub struct RecentMap<K, V, const BOUND: usize, const MAX_WEIGHT: usize = { usize::MAX }> {
    current: IntMap<K, V>,
    old: IntMap<K, V>,
    /// What the entries of each half weigh.
    current_weight: usize,
    old_weight: usize,
}

/// What an entry of a [`RecentMap`] counts toward its `MAX_WEIGHT`.
pub trait Weighed {
    fn weight(&self) -> usize;
}

/// An entry with a check word beside its value weighs what the value weighs.
impl<V: Weighed> Weighed for (u64, V) {
    fn weight(&self) -> usize {
        self.1.weight()
    }
}

impl<K, V, const BOUND: usize, const MAX_WEIGHT: usize> Default for RecentMap<K, V, BOUND, MAX_WEIGHT> {
    fn default() -> Self {
        RecentMap { current: IntMap::default(), old: IntMap::default(), current_weight: 0, old_weight: 0 }
    }
}

impl<K: Hash + Eq + Copy, V: Weighed, const BOUND: usize, const MAX_WEIGHT: usize> RecentMap<K, V, BOUND, MAX_WEIGHT> {
    const HALF: usize = if BOUND / 2 > 0 { BOUND / 2 } else { 1 };

    /// The entry of `k`, moved to the current half if it was in the old one (as an entry made
    /// now: neither half ever holds more than `BOUND / 2`).
    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        // Found twice on a hit (the second time in lines the first just read): a conditional
        // return of the first borrow would hold it over the promotion below.
        if !self.current.contains_key(k) {
            let v = self.old.remove(k)?;
            self.old_weight = self.old_weight.saturating_sub(v.weight());
            self.insert(*k, v);
        }
        self.current.get_mut(k)
    }

    /// The entry of `k` in either half, where it is (a look that moves nothing).
    pub fn peek(&self, k: &K) -> Option<&V> {
        self.current.get(k).or_else(|| self.old.get(k))
    }

    /// The entry of `k` if it is in the current half ([`Self::get_mut`] just found it or put
    /// it there): one lookup, no promotion. (Its weight must not change: the memo counted it.)
    pub fn get_mut_current(&mut self, k: &K) -> Option<&mut V> {
        self.current.get_mut(k)
    }

    /// Enters `v` under `k` in the current half (starting a new half first when it is full).
    /// The old half is not searched (a lookup of `k` before the insert has moved it out): a
    /// copy left there is hidden by the current one, which lookups find first, and goes with
    /// it from `remove` or at the next rotation.
    pub fn insert(&mut self, k: K, v: V) {
        let w = v.weight();
        let full = self.current.len() >= Self::HALF || self.current_weight.saturating_add(w) > MAX_WEIGHT / 2;
        if full && !self.current.is_empty() && !self.current.contains_key(&k) {
            // The old half's table, emptied, is the new current one's (no growing it again).
            std::mem::swap(&mut self.old, &mut self.current);
            self.current.clear();
            self.old_weight = self.current_weight;
            self.current_weight = 0;
        }
        if let Some(replaced) = self.current.insert(k, v) {
            self.current_weight = self.current_weight.saturating_sub(replaced.weight());
        }
        self.current_weight = self.current_weight.saturating_add(w);
    }

    pub fn remove(&mut self, k: &K) {
        if let Some(v) = self.current.remove(k) {
            self.current_weight = self.current_weight.saturating_sub(v.weight());
        }
        if let Some(v) = self.old.remove(k) {
            self.old_weight = self.old_weight.saturating_sub(v.weight());
        }
    }

    pub fn len(&self) -> usize {
        self.current.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the entries weigh in all.
    pub fn weight(&self) -> usize {
        self.current_weight + self.old_weight
    }

    pub fn clear(&mut self) {
        self.current.clear();
        self.old.clear();
        self.current_weight = 0;
        self.old_weight = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test entry: its value is its weight.
    impl Weighed for u64 {
        fn weight(&self) -> usize {
            *self as usize
        }
    }

    #[test]
    fn a_recent_map_keeps_what_is_used_within_its_bound() {
        let mut m: RecentMap<u64, u64, 8> = RecentMap::default();
        for k in 0..4 {
            m.insert(k, k * 10);
        }
        // The current half is full: 4 more start a new one, 0..4 become the old half.
        m.insert(4, 40);
        assert_eq!(m.len(), 5);
        // Used from the old half: moved back, kept when the next rotation drops the old half.
        assert_eq!(m.get_mut(&1).copied(), Some(10));
        for k in 5..8 {
            m.insert(k, k * 10);
        }
        m.insert(8, 80);
        assert!(m.len() <= 8);
        assert_eq!(m.get_mut(&1).copied(), Some(10), "an entry in use survives");
        assert_eq!(m.get_mut(&0), None, "an entry unused for a whole half is gone");
        assert_eq!(m.get_mut(&2), None);
        m.remove(&1);
        assert_eq!(m.get_mut(&1), None);
        // Never more than the bound, however many are entered and used.
        for k in 100..1000 {
            m.insert(k, k);
            m.get_mut(&(k - 3));
            assert!(m.len() <= 8, "{} entries", m.len());
        }
        // Every old entry used again, then new ones: still within the bound.
        for k in 2000..2100 {
            m.insert(k, k);
            for j in 1990..k {
                m.get_mut(&j);
            }
            assert!(m.len() <= 8, "{} entries", m.len());
        }
        m.clear();
        assert!(m.is_empty());
    }

    /// Entries that weigh fill a half by their weight as well as by their count: the memo
    /// never weighs more than its bound and one entry per half, and keeps the entries in use.
    #[test]
    fn a_recent_map_of_heavy_entries_stays_within_its_weight() {
        let mut m: RecentMap<u64, u64, 1024, 100> = RecentMap::default();
        // Weights 1..=30 (the key's value weighs it), hot key 7 used all along.
        m.insert(7, 7);
        for k in 100..2000u64 {
            m.insert(k, k % 30 + 1);
            assert!(m.get_mut(&7).is_some(), "the entry in use was dropped at {k}");
            assert!(m.weight() <= 100 + 2 * 30, "weight {} at {k}", m.weight());
            let sum: u64 = m.current.values().chain(m.old.values()).sum();
            assert_eq!(sum as usize, m.weight(), "the count drifted at {k}");
        }
        m.remove(&7);
        m.insert(5, 5);
        m.insert(5, 3);
        let sum: u64 = m.current.values().chain(m.old.values()).sum();
        assert_eq!(sum as usize, m.weight());
        // One entry heavier than a half: kept alone.
        m.insert(1, 500);
        assert_eq!(m.peek(&1), Some(&500));
        m.clear();
        assert_eq!(m.weight(), 0);
    }

    #[test]
    fn wide_hashes_of_nearby_sequences_all_differ() {
        let hash = |v: &[u64]| {
            let mut h = Hash128::new(7);
            v.iter().for_each(|&w| h.write(w));
            h.finish()
        };
        // Sequences as raw stacks give them: small changes at any place, in order, in length.
        let mut seen = std::collections::HashSet::new();
        let mut n = 0;
        let base: Vec<u64> = (0..40).map(|i| 0x7f00_1234_0000 + i * 0x40).collect();
        for len in 0..=base.len() {
            for at in 0..len.max(1) {
                for delta in [0u64, 1, 2, 1 << 32, 1 << 63] {
                    let mut v = base[..len].to_vec();
                    if let Some(x) = v.get_mut(at) {
                        *x ^= delta;
                    }
                    n += 1;
                    let h = hash(&v);
                    seen.insert((v, h));
                }
            }
        }
        let keys: std::collections::HashSet<_> = seen.iter().map(|(v, _)| v.clone()).collect();
        let halves: std::collections::HashSet<_> = seen.iter().map(|(_, h)| h.1).collect();
        let firsts: std::collections::HashSet<_> = seen.iter().map(|(_, h)| h.0).collect();
        assert!(n > keys.len(), "some variants repeat (delta 0)");
        assert_eq!(halves.len(), keys.len(), "second halves collide");
        assert_eq!(firsts.len(), keys.len(), "first halves collide");
        // Swapped neighbours differ too.
        assert_ne!(hash(&[1, 2]), hash(&[2, 1]));
        assert_ne!(hash(&[0]), hash(&[0, 0]));
        // Two words changed at once, by small steps that a sum or a xor of the words would
        // cancel (+d here, -d or ^d there): every pair of positions, neighbours or not.
        let mut variants = std::collections::HashSet::new();
        for i in 0..base.len() {
            for j in i + 1..base.len() {
                for d in [1u64, 8, 0x40] {
                    for (a, b) in [(base[i] + d, base[j] - d), (base[i] ^ d, base[j] ^ d)] {
                        let mut v = base.clone();
                        (v[i], v[j]) = (a, b);
                        variants.insert(v);
                    }
                }
            }
        }
        let firsts: std::collections::HashSet<u64> = variants.iter().map(|v| hash(v).0).collect();
        let seconds: std::collections::HashSet<u64> = variants.iter().map(|v| hash(v).1).collect();
        assert!(variants.len() > 4000, "{}", variants.len());
        assert_eq!(firsts.len(), variants.len(), "first halves collide");
        assert_eq!(seconds.len(), variants.len(), "second halves collide");
    }

    #[test]
    fn strings_of_different_lengths_hash_differently() {
        let mut m: IntMap<String, u32> = IntMap::default();
        for (i, s) in ["a", "a\0", "ab", "abcdefgh", "abcdefgh\0", ""].iter().enumerate() {
            m.insert(s.to_string(), i as u32);
        }
        assert_eq!(m.len(), 6);
        assert_eq!(m["abcdefgh"], 3);
    }
}
