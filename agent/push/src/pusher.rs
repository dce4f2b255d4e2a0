//! The pusher: one thread, `hpm-push`, sending the queued periods oldest first.
//!
//! The caller and the thread share one mutex, held only to move a period in or out of the queue
//! and to count: never across encoding or the network. The thread waits on a condvar (with a
//! timeout while backing off), so `offer` and `stop` wake it at once.

use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::backoff::{backoff, retry_after, Rng};
use crate::http::{self, Attempt, Verdict};
use crate::queue::{Count, Queue};
use crate::status::unix_now_ns;
use crate::{Config, Format, Outcome, Period, Status};

/// Delivers periods from its own thread, `hpm-push`.
pub struct Pusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    queue: Queue,
    /// The counters; `queued_*` are filled from the queue when read.
    status: Status,
    /// Set by `stop` (or a drop): attempt what is queued, each once, until this instant.
    stop_by: Option<Instant>,
    /// The thread has ended (set by its last act, even a panic's unwinding).
    ended: bool,
    /// `stop` has taken the final counts: an attempt still in flight then (the thread left
    /// behind) counts for nothing more.
    counted: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent if a holder panicked: every update is a few counters.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn snapshot(&self) -> Status {
        let (periods, bytes) = self.queue.held();
        Status { queued_periods: periods, queued_bytes: bytes, ..self.status.clone() }
    }

    fn count_dropped(&mut self, n: Count) {
        self.status.dropped_full_periods += n.periods;
        self.status.dropped_full_samples += n.samples;
    }
}

impl Pusher {
    /// Starts the `hpm-push` thread. Fails if the thread cannot be made, or (Pyroscope) if the
    /// application name or a label cannot be sent as given.
    pub fn start(cfg: Config) -> io::Result<Pusher> {
        let name = match cfg.target.format {
            Format::Pyroscope => http::pyroscope_name(&cfg.app_name, &cfg.labels)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            Format::Otlp => String::new(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: Queue::new(cfg.max_periods, cfg.max_bytes),
                status: Status::default(),
                stop_by: None,
                ended: false,
                counted: false,
            }),
            wake: Condvar::new(),
        });
        let thread = {
            let shared = shared.clone();
            thread::Builder::new().name("hpm-push".into()).spawn(move || {
                let _ended = Ended(&shared);
                if let Some(hook) = &cfg.on_thread {
                    (hook.0)(true);
                }
                run(&shared, &cfg, &name);
                if let Some(hook) = &cfg.on_thread {
                    (hook.0)(false);
                }
            })?
        };
        Ok(Pusher { shared, thread: Some(thread) })
    }

    /// Never waits on the network: queues the period (a short critical section), dropping the
    /// oldest queued periods while over `max_periods`/`max_bytes` (counted); wakes the thread.
    pub fn offer(&self, p: Period) {
        let mut dropped = Vec::new();
        {
            let mut st = self.shared.lock();
            let n = st.queue.push(p, &mut dropped);
            st.count_dropped(n);
        }
        self.shared.wake.notify_all();
        // The dropped bodies are freed here, outside the critical section.
        drop(dropped);
    }

    pub fn status(&self) -> Status {
        self.shared.lock().snapshot()
    }

    /// Tries to deliver what is queued within `grace` (a total, not per period: each period is
    /// attempted once, and the first failure ends it), then stops; what is left, and an attempt
    /// still in flight at the deadline, are counted as undelivered. Returns by the deadline: a
    /// thread still waiting on the network then (a backend that accepts and never answers) is
    /// left to end on its own within `io_timeout`, its outcome counted for nothing.
    pub fn stop(mut self, grace: Duration) -> Status {
        let now = Instant::now();
        let by = now.checked_add(grace).unwrap_or(now + Duration::from_secs(1 << 30));
        let mut st = self.shared.lock();
        st.stop_by = Some(by);
        self.shared.wake.notify_all();
        while !st.ended {
            let now = Instant::now();
            if now >= by {
                break;
            }
            st = self.shared.wake.wait_timeout(st, by - now).unwrap_or_else(PoisonError::into_inner).0;
        }
        if st.ended {
            if let Some(thread) = self.thread.take() {
                // It has ended: the join returns at once (a panic left the counters as they were).
                let _ = thread.join();
            }
        } else {
            // Detached: it ends after its attempt, and counts nothing (`counted`).
            self.thread = None;
        }
        st.counted = true;
        let left = st.queue.clear();
        st.status.undelivered_periods += left.periods;
        st.status.undelivered_samples += left.samples;
        st.snapshot()
    }
}

impl Drop for Pusher {
    /// Without `stop`: the thread ends after the attempt in flight, if any, and is not waited for.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.shared.lock().stop_by = Some(Instant::now());
            self.shared.wake.notify_all();
        }
    }
}

/// Marks the thread ended when dropped (its last act, also when unwinding) and wakes `stop`.
struct Ended<'a>(&'a Shared);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.lock().ended = true;
        self.0.wake.notify_all();
    }
}

/// The thread: take the oldest period, send it, count; back off after a failure.
fn run(shared: &Shared, cfg: &Config, name: &str) {
    let agent = http::agent(cfg);
    let mut rng = Rng::seeded();
    let mut failures = 0u32;
    let mut retry_at = None;
    while let Some(period) = next(shared, retry_at) {
        let (attempt, sent) = match http::request(cfg, name, &period, &mut rng) {
            Ok(req) => (http::send(&agent, cfg, &cfg.target.url(&req.query), &req), req.body.len() as u64),
            Err(e) => (Attempt { verdict: Verdict::Refused, what: format!("could not encode the request: {e}") }, 0),
        };
        let mut dropped = Vec::new();
        let mut st = shared.lock();
        if st.counted {
            // `stop` gave up waiting for this attempt and counted its period undelivered.
            return;
        }
        st.status.attempts += 1;
        let ok = attempt.verdict == Verdict::Delivered;
        st.status.last = Some(Outcome { at_unix_ns: unix_now_ns(), ok, what: attempt.what });
        match attempt.verdict {
            Verdict::Delivered => {
                st.queue.done();
                st.status.delivered_periods += 1;
                st.status.delivered_samples += period.samples;
                st.status.delivered_bytes += sent;
                failures = 0;
                retry_at = None;
            }
            Verdict::Refused => {
                st.queue.done();
                st.status.refused_periods += 1;
                st.status.refused_samples += period.samples;
                failures = 0;
                retry_at = None;
            }
            Verdict::Retry(after) => {
                let n = st.queue.put_back(period, &mut dropped);
                st.count_dropped(n);
                if st.stop_by.is_some() {
                    // Stopping: the backend fails now; waiting to retry would only delay the exit.
                    return;
                }
                failures = failures.saturating_add(1);
                let wait = match after {
                    Some(seconds) => retry_after(seconds, cfg.backoff_min, cfg.backoff_max),
                    None => backoff(cfg.backoff_min, cfg.backoff_max, failures, rng.next()),
                };
                retry_at = Instant::now().checked_add(wait);
            }
        }
    }
}

/// Waits for the next period to send: the oldest queued, once `retry_at` has passed. Once
/// stopping, at once and until the stop's deadline; `None` ends the thread.
fn next(shared: &Shared, retry_at: Option<Instant>) -> Option<Period> {
    let mut st = shared.lock();
    loop {
        let now = Instant::now();
        if let Some(by) = st.stop_by {
            return if now < by { st.queue.take() } else { None };
        }
        st = match retry_at {
            _ if st.queue.is_empty() => shared.wake.wait(st).unwrap_or_else(PoisonError::into_inner),
            Some(at) if now < at => match shared.wake.wait_timeout(st, at - now) {
                Ok((st, _)) => st,
                Err(e) => e.into_inner().0,
            },
            _ => return st.queue.take(),
        };
    }
}
