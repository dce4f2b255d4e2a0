//! What the Java bridge shares with the processing thread: regions and phase markers waiting to
//! be written (not on the signal path: a Mutex'd queue), and copies of the live calling context
//! tree served on request for `Hpm.hottestMethods` and friends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hpm_profile::cct::Cct;
use hpm_profile::jfr::marks::Mark;

/// Marks kept while no processor drains them; later ones are counted and dropped.
const MAX_PENDING: usize = 100_000;

#[derive(Default)]
pub struct Live {
    marks: Mutex<Vec<Mark>>,
    /// Marks dropped because the queue was full (no session draining it).
    pub dropped: AtomicU64,
    query: Mutex<Query>,
    served: Condvar,
}

#[derive(Default)]
struct Query {
    wanted: bool,
    generation: u64,
    tree: Option<Arc<Cct>>,
    /// The processing thread serving queries, woken by one (its rounds may be 200 ms apart).
    processor: Option<std::thread::Thread>,
    /// When a query was last served: a query wakes the processor no sooner than [`MIN_WAKE`]
    /// after it.
    served_at: Option<Instant>,
}

/// Queries wake the processor at most this often (as often as its shortest rounds).
const MIN_WAKE: Duration = Duration::from_millis(50);

impl Live {
    pub fn push(&self, m: Mark) {
        let mut q = self.marks.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() >= MAX_PENDING {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        } else {
            q.push(m);
        }
    }

    /// The processor, once per round: the marks queued since the last call.
    pub fn take_marks(&self) -> Vec<Mark> {
        std::mem::take(&mut *self.marks.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The processing thread, from its start (`Some`) to its end (`None`): a query wakes it.
    pub fn served_by(&self, processor: Option<std::thread::Thread>) {
        self.query.lock().unwrap_or_else(|p| p.into_inner()).processor = processor;
    }

    /// Whether a query waits for the tree.
    pub fn wanted(&self) -> bool {
        self.query.lock().unwrap_or_else(|p| p.into_inner()).wanted
    }

    /// The processor, once per round after resolving: copies the tree if a query waits for it.
    pub fn serve(&self, cct: &Cct) {
        let mut q = self.query.lock().unwrap_or_else(|p| p.into_inner());
        if q.wanted {
            q.tree = Some(Arc::new(cct.clone()));
            q.generation += 1;
            q.wanted = false;
            q.served_at = Some(Instant::now());
            self.served.notify_all();
        }
    }

    /// A copy of the live tree as of the processor's next round (samples settle for about
    /// 100 ms before they are resolved). `Err` when no processor serves it within `timeout`.
    pub fn tree(&self, timeout: Duration) -> Result<Arc<Cct>, String> {
        let now = Instant::now();
        let deadline = now.checked_add(timeout).unwrap_or_else(|| now + Duration::from_secs(1 << 30));
        let mut q = self.query.lock().unwrap_or_else(|p| p.into_inner());
        let generation = q.generation;
        q.wanted = true;
        // Within MIN_WAKE of the last serve: wait that out first (a round may serve it), then
        // wake the processor, whose rounds may be 200 ms apart.
        if let Some(wake_at) = q.served_at.map(|at| (at + MIN_WAKE).min(deadline)) {
            let wait = wake_at.saturating_duration_since(Instant::now());
            q = self
                .served
                .wait_timeout_while(q, wait, |q| q.generation == generation)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        if q.generation == generation {
            if let Some(t) = &q.processor {
                t.unpark();
            }
        }
        let rest = deadline.saturating_duration_since(Instant::now());
        let (q, _) =
            self.served.wait_timeout_while(q, rest, |q| q.generation == generation).unwrap_or_else(|p| p.into_inner());
        match &q.tree {
            Some(t) if q.generation != generation => Ok(t.clone()),
            _ => Err("no profiling session is running, so there is no live profile to query: start one with \
                      Hpm.start(options) or -agentpath:libhpm.so first"
                .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpm_profile::model::ThreadIdx;

    #[test]
    fn a_query_is_served_by_the_next_round() {
        let live = Arc::new(Live::default());
        let mut cct = Cct::new(Vec::new());
        cct.add_stack(&["main", "spin"], 3, 3, &[]);
        live.serve(&cct); // nobody asked: nothing copied
        assert!(live.query.lock().unwrap().tree.is_none());
        let server = {
            let live = live.clone();
            std::thread::spawn(move || loop {
                live.serve(&cct);
                if live.query.lock().unwrap().generation > 0 {
                    break;
                }
                std::thread::yield_now();
            })
        };
        let tree = live.tree(Duration::from_secs(60)).unwrap();
        server.join().unwrap();
        assert_eq!(tree.total_samples(), 3);
    }

    #[test]
    fn queries_wake_the_parked_processor_even_right_after_a_serve() {
        let live = Arc::new(Live::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let server = {
            let live = live.clone();
            std::thread::spawn(move || {
                let mut cct = Cct::new(Vec::new());
                cct.add_stack(&["main", "idle"], 2, 2, &[]);
                live.served_by(Some(std::thread::current()));
                ready_tx.send(()).unwrap();
                // Parked with no timeout: only a query's unpark lets it serve.
                for _ in 0..2 {
                    while !live.wanted() {
                        std::thread::park();
                    }
                    live.serve(&cct);
                }
                live.served_by(None);
            })
        };
        ready_rx.recv().unwrap();
        let first = live.tree(Duration::from_secs(60)).unwrap();
        // Within MIN_WAKE of the first serve: it waits that out, then wakes the processor.
        let second = live.tree(Duration::from_secs(60)).unwrap();
        server.join().unwrap();
        assert_eq!((first.total_samples(), second.total_samples()), (2, 2));
        assert!(live.query.lock().unwrap().processor.is_none());
    }

    #[test]
    fn a_query_without_processor_fails_with_advice() {
        let live = Live::default();
        let e = live.tree(Duration::from_millis(1)).unwrap_err();
        assert!(e.contains("Hpm.start"), "{e}");
    }

    #[test]
    fn the_queue_is_bounded() {
        let live = Live::default();
        for i in 0..MAX_PENDING + 5 {
            live.push(Mark::Phase { time: i as u64, thread: ThreadIdx(0), name: String::new(), index: -1 });
        }
        assert_eq!(live.dropped.load(Ordering::Relaxed), 5);
        assert_eq!(live.take_marks().len(), MAX_PENDING);
        assert!(live.take_marks().is_empty());
    }
}
