//! The probes' side of the recorder: per traced thread its counting group and two buffers
//! (the paper's double buffer). A probe reads the counters and appends one record to the
//! current buffer; a full buffer goes to the writer thread and the probe goes on in the other,
//! waiting for it only while the writer still has it (counted and timed). The writer always
//! gives buffers back ([`ThreadState::give_back`]), so no thread waits forever.
//!
//! A wait is the profiler's, not the application's: after one the counters are read again and
//! what the wait counted becomes part of a per-thread offset subtracted from every later value
//! of that thread (values stay monotonic), so the wait lands in no phase; its counts are summed
//! for the summary ([`ProbeStats::waited`]).
//!
//! Locks: a thread's own state is locked by its probes (uncontended: only the session's stop
//! and the thread's end take it from elsewhere); nothing is allocated per record.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use hpm_profile::analysis::phases_format::{encode_record, MAX_COUNTERS, MAX_RECORD};

use crate::perf::CountGroup;

/// Bytes of each of a thread's two buffers.
pub const BUFFER: usize = 128 << 10;
/// Methods registered at most; beyond, a method gets the id `u32::MAX` and is not recorded.
pub const MAX_METHODS: u32 = 1 << 20;

/// What goes to the writer thread, in the order it must be written.
pub enum ToWriter {
    /// A method id's name (written before any block that follows this message).
    Method(u32, String),
    /// A thread's full (or last) buffer.
    Block(Block),
    /// A line on what the probes could not record, written into the trace at its end.
    Note(String),
    /// Write what is left, close the trace, answer with the summary lines.
    Stop(Sender<Vec<String>>),
    /// The session failed to start: remove the trace, answer when it is gone.
    Abandon(Sender<Vec<String>>),
}

/// One buffer handed over: `buf[..len]` holds `records` records of `thread`.
pub struct Block {
    pub thread: Arc<ThreadState>,
    pub buf: Box<[u8]>,
    pub len: usize,
    pub records: u32,
}

/// The ids the recorder hands out: method ids (for `register0` and the VM components) and
/// thread indexes (for Java threads and VM threads alike).
#[derive(Default)]
pub struct Ids {
    methods: AtomicU32,
    threads: AtomicU32,
}

impl Ids {
    /// The next method id, `None` past [`MAX_METHODS`].
    pub fn method(&self) -> Option<u32> {
        self.methods.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < MAX_METHODS).then_some(n + 1)).ok()
    }

    /// The next thread index, `None` when all 65,536 are taken.
    pub fn thread(&self) -> Option<u16> {
        self.threads
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n <= u32::from(u16::MAX)).then_some(n + 1))
            .ok()
            .map(|n| n as u16)
    }

    pub fn methods(&self) -> u32 {
        self.methods.load(Ordering::Relaxed)
    }
}

/// What the probes count, for the summary.
#[derive(Default)]
pub struct ProbeStats {
    /// Probes that waited for their other buffer, and the time they waited.
    pub waits: AtomicU64,
    pub wait_ns: AtomicU64,
    /// Counter reads that failed (the record repeats the thread's previous values).
    pub read_failures: AtomicU64,
    /// Records lost because the writer was gone.
    pub lost: AtomicU64,
    /// Per counter, what the waits counted (taken out of the threads' values).
    pub waited: [AtomicU64; MAX_COUNTERS],
}

/// The thread's buffer being filled and its counters.
struct Current {
    buf: Option<Box<[u8]>>,
    len: usize,
    records: u32,
    group: Option<CountGroup>,
    /// The last values recorded (repeated when a read fails).
    last: [u64; MAX_COUNTERS],
    /// What the thread's waits for the writer counted: subtracted from every value read.
    offset: [u64; MAX_COUNTERS],
    counters: usize,
    open: bool,
}

/// The other buffer, back from the writer (or not yet).
struct Spare {
    buf: Option<Box<[u8]>>,
    /// The thread ended or the session stopped: buffers given back are freed.
    ended: bool,
}

/// One traced thread.
pub struct ThreadState {
    pub index: u16,
    pub name: String,
    current: Mutex<Current>,
    spare: Mutex<Spare>,
    returned: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ThreadState {
    /// A thread with its two buffers of `buffer` bytes; `group` reads its `counters` values
    /// (`None`: the values are given to [`Self::record_values`]).
    pub fn new(index: u16, name: String, group: Option<CountGroup>, counters: usize, buffer: usize) -> Arc<Self> {
        let buffer = buffer.max(MAX_RECORD);
        Arc::new(ThreadState {
            index,
            name,
            current: Mutex::new(Current {
                buf: Some(vec![0; buffer].into_boxed_slice()),
                len: 0,
                records: 0,
                group,
                last: [0; MAX_COUNTERS],
                offset: [0; MAX_COUNTERS],
                counters: counters.clamp(1, MAX_COUNTERS),
                open: true,
            }),
            spare: Mutex::new(Spare { buf: Some(vec![0; buffer].into_boxed_slice()), ended: false }),
            returned: Condvar::new(),
        })
    }

    /// One probe on the owning thread: its counters read and recorded with `tag` and `method`.
    pub fn record(self: &Arc<Self>, tag: u8, method: u32, tx: &Sender<ToWriter>, stats: &ProbeStats) {
        let mut cur = lock(&self.current);
        if !cur.open {
            return;
        }
        let mut raw = [0u64; MAX_COUNTERS];
        let n = cur.counters;
        let mut values = cur.last;
        let read = cur.group.as_ref().is_some_and(|g| g.read(&mut raw[..n]));
        if read {
            for i in 0..n {
                values[i] = raw[i].saturating_sub(cur.offset[i]).max(cur.last[i]);
            }
            cur.last = values;
        } else if cur.group.is_some() {
            stats.read_failures.fetch_add(1, Ordering::Relaxed);
        }
        let waited = self.put(&mut cur, tag, method, &values[..n], tx, stats);
        if waited && read {
            let mut after = [0u64; MAX_COUNTERS];
            if cur.group.as_ref().is_some_and(|g| g.read(&mut after[..n])) {
                take_out_wait(&mut cur.offset[..n], &raw[..n], &after[..n], &stats.waited);
            }
        }
    }

    /// One record with the values given (the probe path after its counter read; tests).
    #[cfg(test)]
    pub fn record_values(
        self: &Arc<Self>,
        tag: u8,
        method: u32,
        values: &[u64],
        tx: &Sender<ToWriter>,
        stats: &ProbeStats,
    ) {
        let mut cur = lock(&self.current);
        if cur.open {
            self.put(&mut cur, tag, method, values, tx, stats);
        }
    }

    /// Appends one record; whether the probe waited for the writer to make room.
    fn put(
        self: &Arc<Self>,
        cur: &mut Current,
        tag: u8,
        method: u32,
        values: &[u64],
        tx: &Sender<ToWriter>,
        stats: &ProbeStats,
    ) -> bool {
        let full = cur.buf.as_ref().is_none_or(|b| cur.len + MAX_RECORD > b.len());
        let waited = full && self.hand_over(cur, tx, stats);
        let Some(buf) = cur.buf.as_mut() else { return waited };
        let n = encode_record(&mut buf[cur.len..], tag, method, values);
        if n > 0 {
            cur.len += n;
            cur.records += 1;
        }
        waited
    }

    /// Sends the current buffer to the writer and continues in the other, waiting for it if
    /// the writer still has it (then true). Were the writer gone, the buffer is reused
    /// (records lost).
    fn hand_over(self: &Arc<Self>, cur: &mut Current, tx: &Sender<ToWriter>, stats: &ProbeStats) -> bool {
        let Some(buf) = cur.buf.take() else { return false };
        let block = Block { thread: self.clone(), buf, len: cur.len, records: cur.records };
        (cur.len, cur.records) = (0, 0);
        if let Err(e) = tx.send(ToWriter::Block(block)) {
            let ToWriter::Block(b) = e.0 else { return false };
            stats.lost.fetch_add(u64::from(b.records), Ordering::Relaxed);
            cur.buf = Some(b.buf);
            return false;
        }
        let mut spare = lock(&self.spare);
        let waited = spare.buf.is_none();
        if waited {
            let t0 = Instant::now();
            while spare.buf.is_none() {
                spare = self.returned.wait(spare).unwrap_or_else(|e| e.into_inner());
            }
            stats.waits.fetch_add(1, Ordering::Relaxed);
            stats.wait_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        cur.buf = spare.buf.take();
        waited
    }

    /// The writer is done with `buf`: back to the thread (or freed once the thread ended).
    pub fn give_back(&self, buf: Box<[u8]>) {
        let mut spare = lock(&self.spare);
        if !spare.ended {
            spare.buf = Some(buf);
            self.returned.notify_one();
        }
    }

    /// The thread ended or the session stops: its partial buffer goes to the writer, its
    /// counters close, later probes record nothing. Idempotent.
    pub fn finish(self: &Arc<Self>, tx: &Sender<ToWriter>, stats: &ProbeStats) {
        let mut cur = lock(&self.current);
        if !cur.open {
            return;
        }
        cur.open = false;
        cur.group = None;
        if let Some(buf) = cur.buf.take() {
            if cur.records > 0 {
                let block = Block { thread: self.clone(), buf, len: cur.len, records: cur.records };
                if let Err(e) = tx.send(ToWriter::Block(block)) {
                    if let ToWriter::Block(b) = e.0 {
                        stats.lost.fetch_add(u64::from(b.records), Ordering::Relaxed);
                    }
                }
            }
        }
        let mut spare = lock(&self.spare);
        spare.ended = true;
        spare.buf = None;
    }
}

/// Adds what a wait counted (`after - before`, per counter) to the thread's `offset` and
/// to the session's `total`.
fn take_out_wait(offset: &mut [u64], before: &[u64], after: &[u64], total: &[AtomicU64]) {
    for (((o, b), a), t) in offset.iter_mut().zip(before).zip(after).zip(total) {
        let d = a.saturating_sub(*b);
        *o = o.saturating_add(d);
        t.fetch_add(d, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stop_at_their_bounds() {
        let ids = Ids::default();
        assert_eq!((ids.method(), ids.method()), (Some(0), Some(1)));
        ids.methods.store(MAX_METHODS - 1, Ordering::Relaxed);
        assert_eq!(ids.method(), Some(MAX_METHODS - 1));
        assert_eq!(ids.method(), None);
        ids.threads.store(u32::from(u16::MAX), Ordering::Relaxed);
        assert_eq!(ids.thread(), Some(u16::MAX));
        assert_eq!(ids.thread(), None);
    }

    #[test]
    fn a_finished_thread_records_nothing_and_frees_what_comes_back() {
        let (tx, rx) = std::sync::mpsc::channel();
        let stats = ProbeStats::default();
        let t = ThreadState::new(0, "t".into(), None, 2, 64);
        t.record_values(TAG, 1, &[1, 2], &tx, &stats);
        t.finish(&tx, &stats);
        t.record_values(TAG, 1, &[3, 4], &tx, &stats);
        t.finish(&tx, &stats);
        let Ok(ToWriter::Block(b)) = rx.try_recv() else { panic!("no block") };
        assert_eq!((b.records, b.len), (1, MAX_RECORD - 16));
        assert!(rx.try_recv().is_err(), "one block only");
        t.give_back(b.buf);
        assert!(lock(&t.spare).buf.is_none());
    }

    #[test]
    fn a_waits_counts_go_to_the_offset_and_later_values_stay_monotonic() {
        let total: [AtomicU64; 2] = Default::default();
        let mut offset = [5u64, 0];
        take_out_wait(&mut offset, &[100, 7], &[130, 9], &total);
        assert_eq!(offset, [35, 2]);
        take_out_wait(&mut offset, &[200, 9], &[199, 10], &total);
        assert_eq!(offset, [35, 3], "a counter that went back adds nothing");
        assert_eq!(total.map(|t| t.into_inner()), [30, 3]);
    }

    const TAG: u8 = hpm_profile::analysis::phases_format::TAG_ENTER;
}
