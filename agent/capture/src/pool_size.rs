//! How large a session's sample pool ([`crate::batch::BatchPool`]) may grow and how it grows,
//! from the rate at which its sampler brings samples and how long the processor keeps them.
//! The agent's session sizes the pool with [`PoolSize::for_rate`], its processor grows it by
//! [`to_grow`] after every round, and the wall sampler waits for [`batches_for`] a tick's
//! samples to be free before it takes them.

use crate::batch::BATCH_SIZE;

/// How long the processor keeps samples at most: 100-150 ms while late code events settle, up
/// to ~300 ms in its longer rounds.
pub const HELD_NS: u64 = 300_000_000;
/// The fewest batches a pool may hold (the spare batches kept between sessions are as many).
pub const MIN_BATCHES: usize = 128;
/// The most: about 90 MB (each sample has room for 512 frames).
pub const MAX_BATCHES: usize = 1024;
/// Batches allocated when a session starts at least, and added at a time.
pub const STEP: usize = 32;

/// A session's pool: `start` batches allocated when it starts, at most `capacity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSize {
    pub start: usize,
    pub capacity: usize,
}

impl PoolSize {
    /// For a sampler that brings up to `per_second` samples a second to a processor whose
    /// rounds last `round_ns`: room for [`HELD_NS`] of samples (and 64 batches, as each thread
    /// may hold one partly filled), within [`MIN_BATCHES`]..=[`MAX_BATCHES`]; at the start,
    /// room for a round of samples (and half a step), at least a [`STEP`], at most
    /// [`MIN_BATCHES`]: a sampler slower than its nominal rate (the wall sampler's ticks wait
    /// for running threads to reach a safepoint) would not use them, a faster one finds the
    /// pool grown by the next round ([`to_grow`]).
    pub fn for_rate(per_second: u64, round_ns: u64) -> PoolSize {
        let within = |ns: u64| (u128::from(per_second) * u128::from(ns) / 1_000_000_000).min(u64::MAX as u128) as u64;
        let capacity = (batches_for(within(HELD_NS)) + 64).clamp(MIN_BATCHES, MAX_BATCHES);
        let start = (batches_for(within(round_ns)) + STEP / 2).clamp(STEP, MIN_BATCHES.min(capacity));
        PoolSize { start, capacity }
    }
}

/// Batches that `samples` samples fill at most, whatever the producer's current batch holds
/// (it always has room for one more: a full one is handed on at once).
pub fn batches_for(samples: u64) -> usize {
    usize::try_from(samples.div_ceil(BATCH_SIZE as u64)).unwrap_or(usize::MAX)
}

/// Batches to add after a round that took `taken` batches (full or partly filled) from the
/// samplers, `free` being free: the next round may bring as many, with half a [`STEP`] to
/// spare; at least a [`STEP`] at a time. The pool's capacity bounds what is added.
pub fn to_grow(free: usize, taken: usize) -> usize {
    let want = taken.saturating_add(STEP / 2);
    if free >= want {
        0
    } else {
        (want - free).max(STEP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUND_NS: u64 = 50_000_000;

    #[test]
    fn the_pool_holds_what_the_processor_keeps_within_its_bounds() {
        // The signal sampler at 10 ms on 2 CPUs: 200 a second, the smallest pool.
        assert_eq!(PoolSize::for_rate(200, ROUND_NS), PoolSize { start: STEP, capacity: MIN_BATCHES });
        // At 1 ms on 2 CPUs: 2,000 a second, 600 samples held: still the smallest.
        assert_eq!(PoolSize::for_rate(2_000, ROUND_NS).capacity, MIN_BATCHES);
        // The wall sampler at 1 ms: 16 stacks a tick, 16,000 a second: 4,800 held in 480
        // batches (and 64), 800 in a round's 80 batches (and 16) at the start.
        assert_eq!(PoolSize::for_rate(16_000, ROUND_NS), PoolSize { start: 96, capacity: 544 });
        // At 100 us: 160,000 a second, bounded; the start too (800 batches would be 80 MB).
        assert_eq!(PoolSize::for_rate(160_000, ROUND_NS), PoolSize { start: MIN_BATCHES, capacity: MAX_BATCHES });
        // No overflow at absurd rates.
        assert_eq!(PoolSize::for_rate(u64::MAX, u64::MAX), PoolSize { start: MIN_BATCHES, capacity: MAX_BATCHES });
    }

    #[test]
    fn a_tick_needs_a_batch_per_ten_samples_rounded_up() {
        assert_eq!(batches_for(0), 0);
        assert_eq!(batches_for(1), 1);
        assert_eq!(batches_for(BATCH_SIZE as u64), 1);
        assert_eq!(batches_for(16), 2);
    }

    #[test]
    fn the_pool_grows_by_what_the_last_round_took() {
        // As before for slow samplers: below half a step free, a step is added.
        assert_eq!(to_grow(STEP / 2, 0), 0);
        assert_eq!(to_grow(STEP / 2 - 1, 0), STEP);
        // A round that took 80 batches (the wall sampler at 1 ms) with 20 free: 76 more, so the
        // next round finds 80 and half a step free.
        assert_eq!(to_grow(20, 80), 76);
        assert_eq!(to_grow(96, 80), 0);
        assert_eq!(to_grow(0, usize::MAX), usize::MAX);
    }
}
