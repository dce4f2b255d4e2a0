//! The writer thread (`hpm-phases`): drains the threads' buffers into the trace in the order
//! they come, each as a thread block, with every name record before the first block that uses
//! it; every [`TICK`] it reads every thread's counters ([`super::vmthreads`]). It stops
//! writing past the trace's byte bound, and after a write error (the trace cut back to its last
//! whole block), counting what it drops; it gives every buffer back whatever happens, so that
//! no probe waits forever. A panic in the writer is caught: the trace is cut back to its last
//! whole block, nothing more is written, and the thread goes on giving buffers back until the
//! stop, whose summary says so.

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hpm_profile::analysis::phases_format::{self as format, block_header};

use super::probe::{Ids, ToWriter};
use super::vmthreads::VmThreads;

/// How often the threads' counters are read for the components' intervals.
pub const TICK: Duration = Duration::from_millis(50);

/// Where the trace goes: the `.part` file renamed into place at the end, or memory in tests.
pub trait TraceOut: Send {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// After a failed write: back to the first `len` bytes (a torn record is not left).
    fn cut(&mut self, len: u64);
    /// All is written: make the file durable and give it its name.
    fn finish(self: Box<Self>) -> Result<(), String>;
    /// The session failed to start: no trace is left.
    fn discard(self: Box<Self>) {}
}

impl TraceOut for hpm_profile::outfile::PartFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file().write_all(bytes)
    }

    fn cut(&mut self, len: u64) {
        use std::io::Seek;
        let f = self.file();
        let _ = f.set_len(len).and_then(|()| f.seek(std::io::SeekFrom::Start(len)));
    }

    fn finish(self: Box<Self>) -> Result<(), String> {
        self.commit().map_err(|e| e.to_string())
    }

    fn discard(self: Box<Self>) {
        hpm_profile::outfile::PartFile::discard(*self);
    }
}

/// What the writer counts, for the summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriterStats {
    pub bytes: u64,
    pub blocks: u64,
    pub records: u64,
    /// Records (and name records) not written because the trace reached its bound.
    pub full_records: u64,
    pub full_names: u64,
    /// Records not written after a write error (the first error is kept).
    pub error_records: u64,
    pub error: Option<String>,
}

pub struct Writer {
    out: Option<Box<dyn TraceOut>>,
    max_bytes: u64,
    /// Name records waiting for the next block (or tick).
    names: Vec<u8>,
    /// Thread indexes whose name is written (a bit each).
    named: Vec<u64>,
    full: bool,
    /// The probes' notes, written at the end with the writer's own.
    notes: Vec<String>,
    vm: Option<VmThreads>,
    ids: Arc<Ids>,
    pub stats: WriterStats,
}

impl Writer {
    /// A writer of `out` where `written` bytes (header, counter and component names) are
    /// already; `vm`: the VM threads to read every tick.
    pub fn new(out: Box<dyn TraceOut>, written: u64, max_bytes: u64, vm: Option<VmThreads>, ids: Arc<Ids>) -> Writer {
        Writer {
            out: Some(out),
            max_bytes,
            names: Vec::new(),
            named: vec![0; 1 << 10],
            full: false,
            notes: Vec::new(),
            vm,
            ids,
            stats: WriterStats { bytes: written, ..WriterStats::default() },
        }
    }

    /// Runs until [`ToWriter::Stop`] or [`ToWriter::Abandon`] (or every sender is gone), then
    /// closes the trace (or removes it).
    pub fn run(mut self, rx: Receiver<ToWriter>) {
        let mut next_tick = Instant::now() + TICK;
        loop {
            let now = Instant::now();
            if now >= next_tick {
                self.guarded(|w| w.tick(now));
                next_tick = now + TICK;
            }
            match rx.recv_timeout(next_tick.saturating_duration_since(now)) {
                Ok(ToWriter::Method(id, name)) => format::method_name(&mut self.names, id, &name),
                Ok(ToWriter::Note(text)) if self.notes.len() < format::MAX_NOTES => self.notes.push(text),
                Ok(ToWriter::Note(_)) => {}
                Ok(ToWriter::Block(b)) => {
                    let (index, records) = (b.thread.index, u64::from(b.records));
                    if self.guarded(|w| w.block(index, &b.thread.name, &b.buf[..b.len], records)).is_none() {
                        self.stats.error_records += records;
                    }
                    b.thread.give_back(b.buf);
                }
                Ok(ToWriter::Stop(reply)) => {
                    let lines = self.guarded(|w| w.finish(true)).unwrap_or_else(|| self.panic_lines());
                    let _ = reply.send(lines);
                    return;
                }
                Ok(ToWriter::Abandon(reply)) => {
                    let lines = self.guarded(|w| w.finish(false)).unwrap_or_else(|| self.panic_lines());
                    let _ = reply.send(lines);
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.guarded(|w| w.finish(true));
                    return;
                }
            }
        }
    }

    /// Runs `step`; after a panic in it the trace is cut back to its last whole block and
    /// nothing more is written (every later block is only given back), and `None` returned.
    fn guarded<T>(&mut self, step: impl FnOnce(&mut Self) -> T) -> Option<T> {
        match catch_unwind(AssertUnwindSafe(|| step(self))) {
            Ok(v) => Some(v),
            Err(p) => {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                if self.stats.error.is_none() {
                    self.stats.error = Some(format!("the writer thread failed: {why}"));
                }
                self.vm = None;
                if let Some(out) = self.out.as_mut() {
                    out.cut(self.stats.bytes);
                }
                None
            }
        }
    }

    /// The summary after a panic in [`Self::finish`] itself: the trace left as its `.part`.
    fn panic_lines(&mut self) -> Vec<String> {
        let e = self.stats.error.clone().unwrap_or_default();
        vec![format!(
            "phases: {e}; the trace was not closed ({} records not written): record again",
            self.stats.error_records
        )]
    }

    fn tick(&mut self, now: Instant) {
        if let Some(mut vm) = self.vm.take() {
            let ids = self.ids.clone();
            vm.tick(now, &ids, &mut |i| self.block(i.index, i.name, i.record, 1));
            self.vm = Some(vm);
        }
        if !self.names.is_empty() {
            let names = std::mem::take(&mut self.names);
            self.put(&[&names], 0, true);
        }
    }

    /// Writes one thread block (`records` records in `data`), after the pending names and
    /// the thread's name if it is new.
    pub fn block(&mut self, thread: u16, name: &str, data: &[u8], records: u64) {
        let bit = (usize::from(thread) / 64, 1u64 << (thread % 64));
        if self.named[bit.0] & bit.1 == 0 {
            self.named[bit.0] |= bit.1;
            format::thread_name(&mut self.names, thread, name);
        }
        let names = std::mem::take(&mut self.names);
        let header = block_header(thread, data.len() as u32);
        if self.put(&[&names, &header, data], records, !names.is_empty()) {
            self.stats.blocks += 1;
            self.stats.records += records;
        }
    }

    /// Writes `parts` whole, or nothing when they would pass the bound (then nothing more is
    /// written) or after a write error; what is dropped is counted (`records`, and the name
    /// records if `names`).
    fn put(&mut self, parts: &[&[u8]], records: u64, names: bool) -> bool {
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        if self.stats.error.is_some() || self.out.is_none() {
            self.stats.error_records += records;
            return false;
        }
        if self.full || self.stats.bytes.saturating_add(len) > self.max_bytes {
            self.full = true;
            self.stats.full_records += records;
            self.stats.full_names += u64::from(names);
            return false;
        }
        let Some(out) = self.out.as_mut() else { return false };
        for p in parts.iter().filter(|p| !p.is_empty()) {
            if let Err(e) = out.write(p) {
                self.stats.error = Some(e.to_string());
                self.stats.error_records += records;
                out.cut(self.stats.bytes);
                return false;
            }
        }
        self.stats.bytes += len;
        true
    }

    /// The notes at the trace's end, past its bound if need be (a few lines): what the probes
    /// and the writer could not record, so `hpm phases` says the trace is not whole.
    fn write_notes(&mut self) {
        let s = &self.stats;
        if s.full_records > 0 || s.full_names > 0 {
            let text = format!(
                "{} records not written: the trace reached its bound of {} bytes (phasesmax=)",
                s.full_records, self.max_bytes
            );
            self.notes.push(text);
        }
        let mut bytes = Vec::new();
        for n in &self.notes {
            format::note(&mut bytes, n);
        }
        if let (Some(out), None, false) = (self.out.as_mut(), &self.stats.error, bytes.is_empty()) {
            if out.write(&bytes).is_ok() {
                self.stats.bytes += bytes.len() as u64;
            } else {
                out.cut(self.stats.bytes);
            }
        }
    }

    /// The last VM reading and names written, the trace closed (`keep`) or removed; the
    /// summary lines.
    fn finish(&mut self, keep: bool) -> Vec<String> {
        let mut lines = Vec::new();
        if !keep {
            if let Some(out) = self.out.take() {
                out.discard();
            }
            return lines;
        }
        if self.stats.error.is_none() {
            self.tick(Instant::now());
        }
        self.write_notes();
        if let Some(out) = self.out.take() {
            if let Err(e) = out.finish() {
                lines.push(format!("phases: the trace was not closed: {e}"));
            }
        }
        let s = &self.stats;
        lines.push(format!(
            "phases: {} records in {} blocks, {} bytes written ({} methods registered)",
            s.records,
            s.blocks,
            s.bytes,
            self.ids.methods()
        ));
        if let Some(vm) = &self.vm {
            lines.push(format!(
                "phases: {} threads followed per tick ({} of the application), {} interval records{}{}",
                vm.followed(),
                vm.application(),
                vm.records,
                if vm.failures > 0 { format!(" ({} counter groups failed)", vm.failures) } else { String::new() },
                if vm.past_bound > 0 {
                    format!(
                        " ({} threads past the bound of {} not measured)",
                        vm.past_bound,
                        super::vmthreads::MAX_THREADS
                    )
                } else {
                    String::new()
                }
            ));
        }
        if s.full_records > 0 || s.full_names > 0 {
            lines.push(format!(
                "phases: the trace reached its bound of {} bytes: the {} records after it were not written \
                 (give the trace a larger bound to keep them)",
                self.max_bytes, s.full_records
            ));
        }
        if let Some(e) = &s.error {
            lines.push(format!("phases: writing the trace failed ({e}): {} records not written", s.error_records));
        }
        lines
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
pub(crate) mod tests;
