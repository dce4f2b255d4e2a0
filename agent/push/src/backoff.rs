//! The wait after a failed attempt: capped exponential backoff with jitter, so a fleet whose
//! backend went down does not come back in step.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wait after `failures` failed attempts in a row (1 or more): `min * 2^(failures-1)`, capped
/// at `max`, times a jitter factor in [0.75, 1.25), and kept within `[min, max]`. `random` is any
/// 64-bit value (from [`Rng`]).
pub(crate) fn backoff(min: Duration, max: Duration, failures: u32, random: u64) -> Duration {
    let max = max.max(min);
    let doublings = failures.saturating_sub(1).min(31);
    let base = min.saturating_mul(1u32 << doublings).min(max);
    // The top 53 bits make a uniform fraction in [0, 1).
    let frac = (random >> 11) as f64 / (1u64 << 53) as f64;
    let jittered = Duration::try_from_secs_f64(base.as_secs_f64() * (0.75 + frac / 2.0));
    jittered.unwrap_or(max).clamp(min, max)
}

/// The wait a `Retry-After: SECONDS` answer asks for, kept within `[min, max]` so a peer can
/// neither make us spin nor silence us for long.
pub(crate) fn retry_after(seconds: u64, min: Duration, max: Duration) -> Duration {
    Duration::from_secs(seconds.min(1 << 32)).clamp(min, max.max(min))
}

/// xorshift64*: enough to spread retries, no crate.
pub(crate) struct Rng(u64);

impl Rng {
    /// Seeded from the clock and the process id, so JVMs started together differ.
    pub fn seeded() -> Rng {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let seed = nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn doubles_from_min_and_stays_within_bounds() {
        let (min, max) = (S, 60 * S);
        for r in [0, u64::MAX / 3, u64::MAX / 2, u64::MAX] {
            let waits: Vec<_> = (1..=40).map(|n| backoff(min, max, n, r)).collect();
            assert!(waits.iter().all(|w| (min..=max).contains(w)), "{waits:?}");
            // The jitter is within a quarter of the doubled base.
            assert!(waits[3] >= 6 * S && waits[3] <= 10 * S, "{:?}", waits[3]);
            assert!(waits[39] >= 45 * S, "{:?}", waits[39]);
        }
        assert_eq!(backoff(min, max, 1, 0), min);
        assert_eq!(backoff(min, max, 7, u64::MAX), max);
        assert_eq!(backoff(min, max, 7, 0), 45 * S);
    }

    #[test]
    fn different_random_values_spread_the_wait() {
        let a = backoff(S, 60 * S, 3, 0);
        let b = backoff(S, 60 * S, 3, u64::MAX);
        assert!(b > a + S, "{a:?} {b:?}");
    }

    #[test]
    fn odd_configs_do_not_panic() {
        assert_eq!(backoff(10 * S, S, 5, 7), 10 * S);
        assert_eq!(backoff(Duration::ZERO, Duration::ZERO, u32::MAX, 7), Duration::ZERO);
        assert_eq!(backoff(Duration::MAX, Duration::MAX, u32::MAX, u64::MAX), Duration::MAX);
    }

    #[test]
    fn retry_after_is_kept_within_bounds() {
        assert_eq!(retry_after(0, S, 60 * S), S);
        assert_eq!(retry_after(30, S, 60 * S), 30 * S);
        assert_eq!(retry_after(u64::MAX, S, 60 * S), 60 * S);
    }

    #[test]
    fn rng_moves() {
        let mut r = Rng(1);
        let (a, b) = (r.next(), r.next());
        assert_ne!(a, b);
        assert_ne!(Rng::seeded().next(), 0);
    }
}
