//! A fixed-size histogram of durations (the timer samplers' latency per sample), so a session
//! of any length keeps a few kilobytes instead of one number per sample. Log-linear buckets:
//! exact below 64 ns, then 32 buckets per power of two, so a quantile is within 1/32 (3%) of
//! the true value.

const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Values up to 2^48 ns (three days) have their own bucket; larger ones share the last.
const MAX_EXP: u32 = 48;
const BUCKETS: usize = (2 * SUB + (MAX_EXP as u64 - SUB_BITS as u64 - 1) * SUB) as usize;

pub struct Histogram {
    counts: Box<[u32; BUCKETS]>,
    total: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: Box::new([0; BUCKETS]), total: 0, max: 0 }
    }
}

fn index(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let shift = exp - SUB_BITS;
    let i = (2 * SUB + (shift as u64 - 1) * SUB + ((v >> shift) - SUB)) as usize;
    i.min(BUCKETS - 1)
}

/// The largest value that falls in bucket `i` (the last one takes everything above).
fn upper(i: usize) -> u64 {
    if i == BUCKETS - 1 {
        return u64::MAX;
    }
    let i = i as u64;
    if i < 2 * SUB {
        return i;
    }
    let shift = (i - 2 * SUB) / SUB + 1;
    let sub = (i - 2 * SUB) % SUB + SUB;
    ((sub + 1) << shift) - 1
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        self.counts[i] = self.counts[i].saturating_add(1);
        self.total += 1;
        self.max = self.max.max(v);
    }

    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at quantile `q` (0..=1): the upper end of the bucket holding it, never above
    /// the largest value recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((self.total - 1) as f64 * q.clamp(0.0, 1.0)) as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen > rank {
                return upper(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_ordered() {
        let mut prev = None;
        for v in (0..5000u64).chain([1 << 20, (1 << 20) + 1, u64::MAX / 4]) {
            let i = index(v);
            assert!(v <= upper(i), "{v} above its bucket's end {}", upper(i));
            if let Some(p) = prev {
                assert!(i >= p);
            }
            prev = Some(i);
        }
        for i in 1..BUCKETS - 1 {
            assert_eq!(index(upper(i)), i);
            assert_eq!(index(upper(i) + 1), i + 1);
        }
    }

    #[test]
    fn quantiles_are_within_three_percent() {
        let mut h = Histogram::default();
        let values: Vec<u64> = (1..=10_000u64).map(|i| i * 1_000).collect();
        for &v in values.iter().rev() {
            h.record(v);
        }
        assert_eq!(h.len(), 10_000);
        for q in [0.0, 0.5, 0.95, 1.0] {
            let exact = values[((values.len() - 1) as f64 * q) as usize] as f64;
            let got = h.quantile(q) as f64;
            assert!(got >= exact && got <= exact * 1.03, "q{q}: {got} vs {exact}");
        }
        assert_eq!(h.quantile(1.0), 10_000_000);
    }

    #[test]
    fn small_values_are_exact() {
        let mut a = Histogram::default();
        for v in [3, 7, 7] {
            a.record(v);
        }
        assert_eq!((a.len(), a.quantile(0.0), a.quantile(1.0), a.max()), (3, 3, 7, 7));
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }
}
