//! The processor's intake: the sample batches taken from the sink each round (the full ones
//! from the pool, every thread's current one stolen, the timer samplers' queue), the records
//! in them handed on in time order up to a watermark, and the pool grown so the samplers find
//! free batches. Also how long a round lasts ([`round_units`]).

use std::time::Duration;

use crate::options::{Interval, Options};
use hpm_capture::batch::BatchHandle;
use hpm_capture::capture::Captured;
use hpm_profile::model::PeriodUnit;

use crate::sink::Sink;
use crate::source::SourceTraits;
use crate::threads::Threads;

/// Samples younger than this wait a round, so late code events (JVMTI posts them from the
/// service thread) are applied before the samples that need them.
pub(super) const SETTLE_NS: u64 = 100_000_000;
pub(crate) const ROUND: Duration = Duration::from_millis(50);
/// Rounds are at most this many [`ROUND`]s long (see [`round_units`]).
const MAX_ROUND_UNITS: u64 = 4;
/// A round is stretched only if it can bring at most this many samples, and only while more
/// batches than it can bring are free: each sample may be the only one of its thread's batch
/// (the batches are taken from every thread at each round). Where the pool (at least 128
/// batches) cannot keep that many free beside the samples held back for [`SETTLE_NS`], the
/// rounds stay at [`ROUND`].
const STRETCH_SAMPLES: usize = 2 * POOL_STEP;
/// Batches allocated when a session starts at least, and added at a time
/// ([`hpm_capture::pool_size::to_grow`]).
pub(super) const POOL_STEP: usize = hpm_capture::pool_size::STEP;

/// Records due for resolution: (time, batch, index), in time order.
pub(super) struct Due(Vec<(u64, usize, usize)>);

/// The batches taken and not yet resolved to their end, and what the time order met.
#[derive(Default)]
pub(super) struct Intake {
    /// Each batch with how many of its records are resolved (a prefix: a batch is one
    /// thread's, in time order).
    pending: Vec<(BatchHandle, usize)>,
    /// Free batches a round leaves in the pool when rounds are stretched (0: they are not).
    pub(super) stretched_free: usize,
    /// Records (samples, and `sampler=chain`'s anchors) resolved after a later one (their batch
    /// came after the watermark passed them): said in the summary.
    pub(super) late: u64,
    /// The time of the latest sample resolved.
    last_resolved: u64,
}

impl Intake {
    /// Takes the batches the samplers filled or hold; returns how many. The pool is grown when
    /// few batches are free, so the samplers find some while this round resolves.
    pub(super) fn take(&mut self, sink: &Sink, threads: &Threads) -> usize {
        let pool = &sink.pool;
        let before = self.pending.len();
        self.pending.extend(pool.take_full().into_iter().map(|h| (h, 0)));
        threads.steal_all(|h| self.pending.push((h, 0)));
        if let Some(h) = sink.timer_queue.steal() {
            self.pending.push((h, 0));
        }
        let taken = self.pending.len() - before;
        // While this round resolves, the samplers must find batches.
        if pool.free_batches() < POOL_STEP / 2 {
            sink.grow(POOL_STEP);
        }
        taken
    }

    /// The pending records stamped at or before `watermark`, oldest first.
    pub(super) fn due(&self, sink: &Sink, watermark: u64) -> Due {
        let mut order: Vec<(u64, usize, usize)> = Vec::new();
        for (bi, (h, done)) in self.pending.iter().enumerate() {
            for (j, c) in sink.pool.get(h).filled().iter().enumerate().skip(*done) {
                if c.raw.time <= watermark {
                    order.push((c.raw.time, bi, j));
                }
            }
        }
        order.sort_unstable();
        Due(order)
    }

    /// The records `due` names, in its order.
    pub(super) fn records<'a>(&'a self, sink: &'a Sink, due: &'a Due) -> impl Iterator<Item = &'a Captured> {
        due.0.iter().map(move |&(_, bi, j)| &sink.pool.get(&self.pending[bi].0).filled()[j])
    }

    /// Hands each record of `due` to `each`, in its order, once; then returns the batches
    /// resolved to their end to the pool.
    pub(super) fn drain(&mut self, sink: &Sink, due: Due, mut each: impl FnMut(&Captured)) {
        let pool = &sink.pool;
        let order = due.0;
        for (k, &(t, bi, j)) in order.iter().enumerate() {
            // The next record's first lines come in while this one is resolved.
            if let Some(&(_, nb, nj)) = order.get(k + 1) {
                pool.get(&self.pending[nb].0).filled()[nj].prefetch();
            }
            if t < self.last_resolved {
                self.late += 1;
            }
            self.last_resolved = self.last_resolved.max(t);
            each(&pool.get(&self.pending[bi].0).filled()[j]);
            self.pending[bi].1 = self.pending[bi].1.max(j + 1);
        }
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].1 >= pool.get(&self.pending[i].0).len {
                let (h, _) = self.pending.swap_remove(i);
                pool.recycle(h);
            } else {
                i += 1;
            }
        }
    }

    /// After a round resolved (not the last): what is missing for a stretched round is
    /// added, and for a round that brings as many batches as this one (`taken`: a sampler
    /// faster than the start's allocation, the wall sampler on many threads, finds them
    /// within a round).
    pub(super) fn refill(&self, sink: &Sink, taken: usize) {
        let pool = &sink.pool;
        let free = pool.free_batches();
        if free < self.stretched_free {
            sink.grow(self.stretched_free - free);
        }
        let grow = hpm_capture::pool_size::to_grow(pool.free_batches(), taken);
        if grow > 0 {
            sink.grow(grow);
        }
    }
}

/// How many [`ROUND`]s each of the processing thread's rounds may last: 1, 2 or 4. A round
/// has a cost of its own, whatever it finds: waking the thread, syncing threads and code
/// events, looking for samples (~60 us here, an idle JVM at 10 ms: mostly the futex wake-up on
/// this VM). At 10 ms under the signal sampler that was most of what the processing thread
/// spent while a program ran. So where samples come slowly a round lasts longer: under the
/// signal sampler with CPU samples only (`alloc` and `lock` events have queues of their own)
/// at a fixed clock interval, as long as every sample a round can bring (one per period per
/// CPU) finds a free batch of its own: at most [`STRETCH_SAMPLES`]. The other samplers keep [`ROUND`]:
/// `sampler=chain`'s rings, the timer samplers' queues and `interval=auto`'s changing rate are
/// sized for it.
pub(super) fn round_units(opts: &Options, traits: SourceTraits, period: u64, unit: PeriodUnit, cpus: u64) -> u64 {
    // The JVM's events (`alloc`, `lock`) do not allow it: `traits` says so.
    let slow_clock = opts.cpu
        && traits.stretch_rounds
        && matches!(opts.interval, Interval::Fixed(_))
        && unit == PeriodUnit::Nanoseconds;
    let mut units = if slow_clock { MAX_ROUND_UNITS } else { 1 };
    while units > 1 && round_samples(units, period, cpus) > STRETCH_SAMPLES {
        units /= 2;
    }
    units
}

/// The most samples a clock event with `period` (ns) brings in `units` rounds on `cpus` CPUs.
pub(super) fn round_samples(units: u64, period: u64, cpus: u64) -> usize {
    (cpus.saturating_mul(units * ROUND.as_nanos() as u64) / period.max(1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_stretch_where_every_sample_of_a_round_finds_a_batch_of_its_own() {
        let (ns, events) = (PeriodUnit::Nanoseconds, PeriodUnit::Events);
        let cases = [
            // 2 CPUs: up to 64 samples a round.
            ("interval=1ms", 1_000_000, ns, 2, 1),
            ("interval=100us", 100_000, ns, 2, 1),
            ("interval=2ms", 2_000_000, ns, 2, 1),
            ("interval=4ms", 4_000_000, ns, 2, 2),
            ("interval=10ms", 10_000_000, ns, 2, 4),
            ("interval=1s", 1_000_000_000, ns, 2, 4),
            // More CPUs bring more samples a round.
            ("interval=10ms", 10_000_000, ns, 16, 1),
            ("interval=100ms", 100_000_000, ns, 16, 4),
            ("interval=10ms", 10_000_000, ns, 1, 4),
            // Others keep 50 ms rounds: a count-based event, a changing period, the samplers
            // whose rings and queues are sized for them, JVM events with their own queue.
            ("event=page-faults,interval=10", 10, events, 2, 1),
            ("interval=auto", 10_000_000, ns, 2, 1),
            ("sampler=chain,interval=10ms", 10_000_000, ns, 2, 1),
            ("sampler=jvmti,interval=10ms", 10_000_000, ns, 2, 1),
            ("event=wall,interval=10ms", 10_000_000, ns, 2, 1),
            ("event=alloc", 10_000_000, ns, 2, 1),
            ("event=cpu,alloc,interval=10ms", 10_000_000, ns, 2, 1),
            ("event=cpu,lock,interval=10ms", 10_000_000, ns, 2, 1),
        ];
        for (options, period, unit, cpus, want) in cases {
            let opts = crate::options::parse(options).expect(options);
            assert_eq!(
                round_units(&opts, crate::source::traits(&opts), period, unit, cpus),
                want,
                "{options} on {cpus} CPUs"
            );
        }
    }
}
