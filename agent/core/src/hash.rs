//! A fast, non-cryptographic hasher for the processor's and readers' hot maps (integer keys,
//! method names). The default SipHash showed up at the top of the processing thread's profile.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
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

impl Default for FastBuild {
    fn default() -> Self {
        static SEED: OnceLock<u64> = OnceLock::new();
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

#[cfg(test)]
mod tests {
    use super::*;

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
