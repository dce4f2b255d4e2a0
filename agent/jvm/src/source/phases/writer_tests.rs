//! The probes and the writer together, without a JVM: buffers handed over and given back
//! under many threads (every record arrives once, in order per thread), and the writer's bounds.
//! The trace is decoded here as phases_format documents version 2.

use std::collections::HashMap;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

use hpm_profile::analysis::phases_format::{
    MAGIC, TAG_COUNTER_NAME, TAG_ENTER, TAG_EXIT, TAG_METHOD_NAME, TAG_NOTE, TAG_THREAD_BLOCK, TAG_THREAD_NAME,
};

use super::super::probe::{Ids, ProbeStats, ThreadState, ToWriter};
use super::*;

/// The trace in memory; `fail_after`: writes past this many bytes fail (and past
/// `panic_after`, panic); `end`: how it ended ("finished" or "discarded").
struct MemOut {
    bytes: Arc<Mutex<Vec<u8>>>,
    fail_after: usize,
    panic_after: usize,
    end: Arc<Mutex<&'static str>>,
}

impl TraceOut for MemOut {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let mut b = self.bytes.lock().unwrap();
        if b.len() + bytes.len() > self.panic_after {
            b.extend_from_slice(&bytes[..bytes.len() / 2]);
            drop(b);
            panic!("boom");
        }
        if b.len() + bytes.len() > self.fail_after {
            return Err(std::io::Error::other("disk full"));
        }
        b.extend_from_slice(bytes);
        Ok(())
    }

    fn cut(&mut self, len: u64) {
        self.bytes.lock().unwrap().truncate(len as usize);
    }

    fn finish(self: Box<Self>) -> Result<(), String> {
        *self.end.lock().unwrap() = "finished";
        Ok(())
    }

    fn discard(self: Box<Self>) {
        *self.end.lock().unwrap() = "discarded";
    }
}

/// A decoded trace: names, and per thread its records (tag, method, counters) in order.
#[derive(Default)]
pub(crate) struct Decoded {
    pub methods: HashMap<u32, String>,
    pub threads: HashMap<u16, String>,
    pub counters: Vec<String>,
    pub records: HashMap<u16, Vec<(u8, u32, Vec<u64>)>>,
    pub notes: Vec<String>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Decodes top-level records (after the header, if any); every block's thread must be named
/// before it.
pub(crate) fn decode(b: &[u8]) -> Decoded {
    let mut d = Decoded::default();
    let mut at = if b.starts_with(MAGIC) { 9 } else { 0 };
    while at < b.len() {
        match b[at] {
            TAG_COUNTER_NAME => {
                let len = usize::from(u16_at(b, at + 2));
                assert_eq!(usize::from(b[at + 1]), d.counters.len());
                d.counters.push(String::from_utf8(b[at + 4..at + 4 + len].to_vec()).unwrap());
                at += 4 + len;
            }
            TAG_METHOD_NAME => {
                let len = usize::from(u16_at(b, at + 5));
                d.methods.insert(u32_at(b, at + 1), String::from_utf8(b[at + 7..at + 7 + len].to_vec()).unwrap());
                at += 7 + len;
            }
            TAG_THREAD_NAME => {
                let len = usize::from(u16_at(b, at + 3));
                d.threads.insert(u16_at(b, at + 1), String::from_utf8(b[at + 5..at + 5 + len].to_vec()).unwrap());
                at += 5 + len;
            }
            TAG_THREAD_BLOCK => {
                let thread = u16_at(b, at + 1);
                assert!(d.threads.contains_key(&thread), "block of thread {thread} before its name");
                let len = u32_at(b, at + 3) as usize;
                let block = &b[at + 7..at + 7 + len];
                let mut r = 0;
                while r < block.len() {
                    let n = usize::from(block[r] & 0x0F);
                    let values = (0..n)
                        .map(|i| u64::from_le_bytes(block[r + 5 + 8 * i..r + 13 + 8 * i].try_into().unwrap()))
                        .collect();
                    d.records.entry(thread).or_default().push((block[r] & 0xF0, u32_at(block, r + 1), values));
                    r += 5 + 8 * n;
                }
                at += 7 + len;
            }
            TAG_NOTE => {
                let len = usize::from(u16_at(b, at + 1));
                d.notes.push(String::from_utf8(b[at + 3..at + 3 + len].to_vec()).unwrap());
                at += 3 + len;
            }
            t => panic!("unknown tag {t:#x} at {at}"),
        }
    }
    d
}

fn start_writer(
    max_bytes: u64,
    fail_after: usize,
) -> (Sender<ToWriter>, Arc<Mutex<Vec<u8>>>, std::thread::JoinHandle<()>) {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let end = Arc::new(Mutex::new(""));
    let out = MemOut { bytes: bytes.clone(), fail_after, panic_after: usize::MAX, end };
    let w = Writer::new(Box::new(out), 0, max_bytes, None, Arc::new(Ids::default()));
    let (tx, rx) = channel();
    let h = std::thread::spawn(move || w.run(rx));
    (tx, bytes, h)
}

fn stop(tx: &Sender<ToWriter>, h: std::thread::JoinHandle<()>) -> Vec<String> {
    let (reply, lines) = channel();
    tx.send(ToWriter::Stop(reply)).unwrap();
    let lines = lines.recv().unwrap();
    h.join().unwrap();
    lines
}

/// Records `n` enter/exit pairs on `t` with (thread, sequence) as counters.
fn run_thread(t: &Arc<ThreadState>, n: u64, tx: &Sender<ToWriter>, stats: &ProbeStats) {
    for seq in 0..n {
        let tag = if seq % 2 == 0 { TAG_ENTER } else { TAG_EXIT };
        t.record_values(tag, 7, &[u64::from(t.index), seq], tx, stats);
    }
    t.finish(tx, stats);
}

#[test]
fn every_record_of_many_threads_arrives_once_and_in_order() {
    const THREADS: u16 = 8;
    const RECORDS: u64 = 20_000;
    let (tx, bytes, h) = start_writer(u64::MAX, usize::MAX);
    tx.send(ToWriter::Method(7, "A.b(I)V".into())).unwrap();
    let stats = Arc::new(ProbeStats::default());
    // Small buffers (12 records): thousands of hand-overs, many of them waiting.
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (tx, stats) = (tx.clone(), stats.clone());
            std::thread::spawn(move || {
                let t = ThreadState::new(i, format!("worker {i}"), None, 2, 256);
                run_thread(&t, RECORDS, &tx, &stats);
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let lines = stop(&tx, h);
    let d = decode(&bytes.lock().unwrap());
    assert_eq!(d.methods.get(&7).map(String::as_str), Some("A.b(I)V"));
    assert_eq!(d.threads.len(), usize::from(THREADS));
    for i in 0..THREADS {
        assert_eq!(d.threads[&i], format!("worker {i}"));
        let recs = &d.records[&i];
        assert_eq!(recs.len() as u64, RECORDS, "thread {i}");
        for (seq, (tag, method, values)) in recs.iter().enumerate() {
            let want = if seq % 2 == 0 { TAG_ENTER } else { TAG_EXIT };
            assert_eq!((*tag, *method, values.as_slice()), (want, 7, &[u64::from(i), seq as u64][..]));
        }
    }
    assert!(lines[0].starts_with(&format!("phases: {} records", u64::from(THREADS) * RECORDS)), "{lines:?}");
    assert_eq!(stats.lost.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[test]
fn a_full_trace_keeps_a_whole_prefix_and_still_gives_buffers_back() {
    // Room for the thread's name and a few blocks of 12 records (21 bytes each) only.
    let (tx, bytes, h) = start_writer(1_000, usize::MAX);
    let stats = ProbeStats::default();
    let t = ThreadState::new(3, "main".into(), None, 2, 256);
    // Far more buffers than the trace holds: the thread never waits forever.
    run_thread(&t, 2_000, &tx, &stats);
    let lines = stop(&tx, h);
    let b = bytes.lock().unwrap();
    let d = decode(&b);
    // The note past the bound says what was not written, for `hpm phases`.
    let notes: usize = d.notes.iter().map(|n| n.len() + 3).sum();
    assert!(b.len() - notes <= 1_000, "{}", b.len());
    assert!(d.notes.iter().any(|n| n.contains("records not written: the trace reached its bound")), "{:?}", d.notes);
    let recs = &d.records[&3];
    assert!(!recs.is_empty());
    assert!(recs.iter().enumerate().all(|(seq, r)| r.2[1] == seq as u64), "a prefix, in order");
    let dropped = 2_000 - recs.len();
    assert!(
        lines.iter().any(|l| l.contains("bound of 1000 bytes") && l.contains(&format!("the {dropped} records"))),
        "{lines:?}"
    );
}

#[test]
fn a_write_error_drops_what_follows_and_says_so() {
    let (tx, bytes, h) = start_writer(u64::MAX, 600);
    let stats = ProbeStats::default();
    let t = ThreadState::new(0, "main".into(), None, 2, 256);
    run_thread(&t, 1_000, &tx, &stats);
    let lines = stop(&tx, h);
    let written = decode(&bytes.lock().unwrap()).records.get(&0).map_or(0, Vec::len);
    assert!(written < 1_000);
    let want = format!("writing the trace failed (disk full): {} records not written", 1_000 - written);
    assert!(lines.iter().any(|l| l.ends_with(&want)), "{lines:?}");
}

#[test]
fn a_panicking_writer_keeps_a_whole_prefix_and_still_gives_buffers_back() {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let end = Arc::new(Mutex::new(""));
    let out = MemOut { bytes: bytes.clone(), fail_after: usize::MAX, panic_after: 600, end: end.clone() };
    let w = Writer::new(Box::new(out), 0, u64::MAX, None, Arc::new(Ids::default()));
    let (tx, rx) = channel();
    let h = std::thread::spawn(move || w.run(rx));
    let stats = ProbeStats::default();
    let t = ThreadState::new(0, "main".into(), None, 2, 256);
    // Far more buffers than are written before the panic: the thread never waits forever.
    run_thread(&t, 1_000, &tx, &stats);
    let lines = stop(&tx, h);
    let written = decode(&bytes.lock().unwrap()).records.get(&0).map_or(0, Vec::len);
    assert!(written > 0 && written < 1_000, "{written}");
    let want = format!("the writer thread failed: boom): {} records not written", 1_000 - written);
    assert!(lines.iter().any(|l| l.ends_with(&want)), "{lines:?}");
    assert_eq!(*end.lock().unwrap(), "finished");
}

#[test]
fn an_abandoned_trace_is_discarded() {
    let end = Arc::new(Mutex::new(""));
    let out = MemOut { bytes: Arc::default(), fail_after: usize::MAX, panic_after: usize::MAX, end: end.clone() };
    let w = Writer::new(Box::new(out), 0, u64::MAX, None, Arc::new(Ids::default()));
    let (tx, rx) = channel();
    let h = std::thread::spawn(move || w.run(rx));
    let (reply, lines) = channel();
    tx.send(ToWriter::Abandon(reply)).unwrap();
    assert!(lines.recv().unwrap().is_empty());
    h.join().unwrap();
    assert_eq!(*end.lock().unwrap(), "discarded");
}
