//! The bounded queue of periods waiting to be sent, and the one being sent.
//!
//! The period being sent is taken out of the queue (so it is neither copied nor dropped while on
//! the wire) and put back at the front if the attempt is to be retried; the bounds then drop the
//! oldest first, which may be that period itself.

use std::collections::VecDeque;

use crate::Period;

/// Periods and samples a call pushed out of the queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Count {
    pub periods: u64,
    pub samples: u64,
}

impl Count {
    fn add(&mut self, p: &Period) {
        self.periods += 1;
        self.samples += p.samples;
    }
}

#[derive(Debug)]
pub(crate) struct Queue {
    periods: VecDeque<Period>,
    bytes: usize,
    /// The period being sent: (samples, bytes).
    in_flight: Option<(u64, usize)>,
    max_periods: usize,
    max_bytes: usize,
}

impl Queue {
    pub fn new(max_periods: usize, max_bytes: usize) -> Queue {
        Queue { periods: VecDeque::new(), bytes: 0, in_flight: None, max_periods, max_bytes }
    }

    /// Queues `p` at the back, then drops the oldest while over a bound. The dropped periods are
    /// moved into `dropped` so the caller frees them after its critical section.
    pub fn push(&mut self, p: Period, dropped: &mut Vec<Period>) -> Count {
        self.bytes += p.body.len();
        self.periods.push_back(p);
        self.enforce(dropped)
    }

    /// Takes the oldest period to send it.
    pub fn take(&mut self) -> Option<Period> {
        let p = self.periods.pop_front()?;
        self.bytes -= p.body.len();
        self.in_flight = Some((p.samples, p.body.len()));
        Some(p)
    }

    /// The period taken is done with (delivered or refused).
    pub fn done(&mut self) {
        self.in_flight = None;
    }

    /// The period taken is to be retried: back at the front, then the bounds are applied.
    pub fn put_back(&mut self, p: Period, dropped: &mut Vec<Period>) -> Count {
        self.in_flight = None;
        self.bytes += p.body.len();
        self.periods.push_front(p);
        self.enforce(dropped)
    }

    /// Empties the queue, counting what it held and the period being sent, if any.
    pub fn clear(&mut self) -> Count {
        let mut n = Count::default();
        for p in self.periods.drain(..) {
            n.add(&p);
        }
        if let Some((samples, _)) = self.in_flight.take() {
            n.periods += 1;
            n.samples += samples;
        }
        self.bytes = 0;
        n
    }

    pub fn is_empty(&self) -> bool {
        self.periods.is_empty()
    }

    /// Periods and bytes held: the queued ones and the one being sent.
    pub fn held(&self) -> (u64, u64) {
        let (n, b) = self.in_flight.map_or((0, 0), |(_, b)| (1, b));
        ((self.periods.len() + n) as u64, (self.bytes + b) as u64)
    }

    fn enforce(&mut self, dropped: &mut Vec<Period>) -> Count {
        let mut n = Count::default();
        while self.periods.len() > self.max_periods || self.bytes > self.max_bytes {
            let Some(p) = self.periods.pop_front() else { break };
            self.bytes -= p.body.len();
            n.add(&p);
            dropped.push(p);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(tag: u8, len: usize) -> Period {
        Period { body: vec![tag; len], samples: tag as u64, ..Period::default() }
    }

    fn tags(q: &mut Queue) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(p) = q.take() {
            out.push(p.body[0]);
            q.done();
        }
        out
    }

    #[test]
    fn drops_the_oldest_over_the_period_bound() {
        let mut q = Queue::new(2, 1 << 20);
        let mut dropped = Vec::new();
        let mut n = Count::default();
        for tag in 1..=5 {
            let c = q.push(period(tag, 10), &mut dropped);
            n.periods += c.periods;
            n.samples += c.samples;
        }
        assert_eq!(n, Count { periods: 3, samples: 1 + 2 + 3 });
        assert_eq!(dropped.iter().map(|p| p.body[0]).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(q.held(), (2, 20));
        assert_eq!(tags(&mut q), [4, 5]);
    }

    #[test]
    fn drops_the_oldest_over_the_byte_bound() {
        let mut q = Queue::new(100, 250);
        let mut dropped = Vec::new();
        assert_eq!(q.push(period(1, 100), &mut dropped).periods, 0);
        assert_eq!(q.push(period(2, 100), &mut dropped).periods, 0);
        assert_eq!(q.push(period(3, 100), &mut dropped), Count { periods: 1, samples: 1 });
        assert_eq!(q.held(), (2, 200));
        // A period over the bound on its own is dropped too, after everything older.
        assert_eq!(q.push(period(4, 300), &mut dropped), Count { periods: 3, samples: 2 + 3 + 4 });
        assert!(q.is_empty());
        assert_eq!(q.held(), (0, 0));
    }

    #[test]
    fn the_period_in_flight_is_held_not_dropped_and_comes_back_first() {
        let mut q = Queue::new(2, 1 << 20);
        let mut dropped = Vec::new();
        q.push(period(1, 10), &mut dropped);
        let p1 = q.take().unwrap();
        for tag in 2..=4 {
            q.push(period(tag, 10), &mut dropped);
        }
        assert_eq!(q.held(), (3, 30));
        // Retried: back in front, and being the oldest it is what the bound drops.
        assert_eq!(q.put_back(p1, &mut dropped), Count { periods: 1, samples: 1 });
        assert_eq!(dropped.iter().map(|p| p.body[0]).collect::<Vec<_>>(), [2, 1]);
        assert_eq!(tags(&mut q), [3, 4]);
    }

    #[test]
    fn clear_counts_the_queue_and_the_period_in_flight() {
        let mut q = Queue::new(8, 1 << 20);
        let mut dropped = Vec::new();
        for tag in 1..=3 {
            q.push(period(tag, 10), &mut dropped);
        }
        let _p = q.take().unwrap();
        assert_eq!(q.clear(), Count { periods: 3, samples: 6 });
        assert_eq!(q.held(), (0, 0));
        assert_eq!(q.clear(), Count::default());
    }
}
