//! The binary trace reader: version 1 (one stream of records, a thread id in each) and version
//! 2 (per-thread blocks, [`super::phases_format`]), into one [`Trace`].
//!
//! Version 1 (the paper's records, single-file variant; integers little-endian): the magic
//! `HPMTRACE`, the version byte 1, then records whose tag's high nibble is the type and low
//! nibble the number of counters (1 to 4):
//!
//! | tag | record |
//! | --- | --- |
//! | `0x1n` enter, `0x2n` exit, `0x3n` exit by exception | u16 thread, u32 method id, n × u64 counters |
//! | `0x80` method name | u32 method id, u16 length, UTF-8 name |
//! | `0x90` thread name | u16 thread, u16 length, UTF-8 name |
//! | `0xA0` counter name | u8 column, u16 length, UTF-8 name |
//!
//! Names may come before or after their use; a method without a name is shown as `#id`.
//!
//! Hostile files: every length is checked against the bytes left before it is used (a thread
//! block against the file, a record against its block), so a record never reads past its block
//! and a block cannot hold another block. Memory grows only with records actually read (at least
//! 9 bytes each, at most one event or interval and `n` values per record, no per-record string).

use std::collections::HashMap;

use super::phases_format as fmt;
use super::phases_trace::{Trace, TraceEvent, TraceKind, VmInterval, BINARY_MAGIC};

type Fail = (usize, String);

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
    }
    fn name(&mut self) -> Option<Result<String, String>> {
        let len = self.u16()? as usize;
        let bytes = self.take(len)?;
        Some(String::from_utf8(bytes.to_vec()).map_err(|_| "name is not UTF-8".to_string()))
    }
}

/// Where a record starts, for error messages: its number and absolute byte offset.
#[derive(Clone, Copy)]
struct At {
    record: usize,
    byte: usize,
}

impl At {
    fn cut(self, what: &str) -> Fail {
        (self.record, format!("record at byte {} is cut short in its {what}", self.byte))
    }
    fn fail(self, what: String) -> Fail {
        (self.record, format!("record at byte {}: {what}", self.byte))
    }
}

/// Raw ids of the file mapped to dense indices, and the names read so far.
#[derive(Default)]
struct Reading {
    t: Trace,
    thread_ids: HashMap<u16, u32>,
    method_ids: HashMap<u32, u32>,
    component_ids: HashMap<u32, u32>,
    thread_names: HashMap<u16, String>,
    method_names: HashMap<u32, String>,
    counter_names: HashMap<u8, String>,
    width: Option<usize>,
    /// Per thread index, its last interval.
    last_interval: HashMap<u32, usize>,
}

fn dense<K: std::hash::Hash + Eq>(ids: &mut HashMap<K, u32>, raw: K) -> u32 {
    let next = ids.len() as u32;
    *ids.entry(raw).or_insert(next)
}

impl Reading {
    /// A name record (`ty` 8, 9 or 0xA), after its tag.
    fn name_record(&mut self, r: &mut Reader, ty: u8, at: At) -> Result<(), Fail> {
        match ty {
            8 => {
                let id = r.u32().ok_or_else(|| at.cut("method id"))?;
                let name = r.name().ok_or_else(|| at.cut("name"))?.map_err(|m| (at.record, m))?;
                self.method_names.insert(id, name);
            }
            9 => {
                let id = r.u16().ok_or_else(|| at.cut("thread id"))?;
                let name = r.name().ok_or_else(|| at.cut("name"))?.map_err(|m| (at.record, m))?;
                self.thread_names.insert(id, name);
            }
            _ => {
                let col = r.u8().ok_or_else(|| at.cut("column"))?;
                let name = r.name().ok_or_else(|| at.cut("name"))?.map_err(|m| (at.record, m))?;
                self.counter_names.insert(col, name);
            }
        }
        Ok(())
    }

    /// A thread record (`ty` 1 to 4) with `n` counters, after its tag (and, in version 1, its
    /// thread id).
    fn thread_record(&mut self, r: &mut Reader, ty: u8, n: usize, thread: u16, at: At) -> Result<(), Fail> {
        if !(1..=fmt::MAX_COUNTERS).contains(&n) {
            return Err(at.fail(format!("{n} counters, expected 1 to {}", fmt::MAX_COUNTERS)));
        }
        match self.width {
            None => self.width = Some(n),
            Some(w) if w != n => return Err(at.fail(format!("{n} counters, earlier records had {w}"))),
            _ => {}
        }
        let id = r.u32().ok_or_else(|| at.cut("method id"))?;
        // All counters are in the record's slice before any is kept.
        let mut values = [0u64; fmt::MAX_COUNTERS];
        for v in values.iter_mut().take(n) {
            *v = r.u64().ok_or_else(|| at.cut("counters"))?;
        }
        let values = &values[..n];
        let thread = dense(&mut self.thread_ids, thread);
        if ty == 4 {
            if let Some(&p) = self.last_interval.get(&thread) {
                for (k, (a, b)) in self.t.interval_values(p).iter().zip(values).enumerate() {
                    if b < a {
                        return Err(at.fail(format!(
                            "VM interval counter {k} is {b}, below the thread's previous interval's {a}"
                        )));
                    }
                }
            }
            // Width is known now: interval_values reads with it.
            if self.t.counters.len() != n {
                self.t.counters = vec![String::new(); n];
            }
            let component = dense(&mut self.component_ids, id);
            self.last_interval.insert(thread, self.t.intervals.len());
            self.t.intervals.push(VmInterval { thread, component, record: at.record });
            self.t.interval_values.extend_from_slice(values);
            return Ok(());
        }
        let kind = match ty {
            1 => TraceKind::Enter,
            2 => TraceKind::Exit,
            _ => TraceKind::Thrown,
        };
        let method = dense(&mut self.method_ids, id);
        self.t.events.push(TraceEvent { kind, thread, method, line: at.record });
        self.t.values.extend_from_slice(values);
        Ok(())
    }

    fn finish(mut self) -> Trace {
        let name_of = |ids: &HashMap<u32, u32>, names: &HashMap<u32, String>, prefix: &str| {
            let mut v = vec![String::new(); ids.len()];
            for (&raw, &i) in ids {
                v[i as usize] = names.get(&raw).cloned().unwrap_or_else(|| format!("{prefix}{raw}"));
            }
            v
        };
        self.t.methods = name_of(&self.method_ids, &self.method_names, "#");
        // One method, several ids (its class retransformed again, or loaded by several loaders):
        // its events go to the first id of its name, so it is one method in the call graph.
        let mut first: HashMap<&str, u32> = HashMap::new();
        let canon: Vec<u32> =
            self.t.methods.iter().enumerate().map(|(i, n)| *first.entry(n.as_str()).or_insert(i as u32)).collect();
        if canon.iter().enumerate().any(|(i, &c)| c != i as u32) {
            for e in &mut self.t.events {
                e.method = canon[e.method as usize];
            }
        }
        self.t.components = name_of(&self.component_ids, &self.method_names, "#");
        let thread_ids: HashMap<u32, u32> = self.thread_ids.iter().map(|(&k, &v)| (k as u32, v)).collect();
        let thread_names: HashMap<u32, String> =
            self.thread_names.iter().map(|(&k, v)| (k as u32, v.clone())).collect();
        self.t.threads = name_of(&thread_ids, &thread_names, "thread ");
        let w = self.width.unwrap_or(0);
        self.t.counters = (0..w)
            .map(|k| {
                self.counter_names.get(&(k as u8)).cloned().unwrap_or_else(|| {
                    if k == 0 {
                        "counter".into()
                    } else {
                        format!("counter{}", k + 1)
                    }
                })
            })
            .collect();
        self.t
    }
}

/// Parses a binary trace (version 1 or 2); errors carry the 1-based record number and the
/// byte offset.
pub fn parse_binary_trace(bytes: &[u8]) -> Result<Trace, Fail> {
    if bytes.len() < 9 || &bytes[..8] != BINARY_MAGIC {
        return Err((0, "not a binary hpm trace (no HPMTRACE header)".into()));
    }
    let version = bytes[8];
    if version != 1 && version != fmt::VERSION {
        return Err((0, format!("binary trace version {version} is not supported (expected 1 or 2)")));
    }
    let mut st = Reading::default();
    st.t.binary = true;
    st.t.version = version;
    let mut r = Reader { b: bytes, pos: 9 };
    let mut record = 0;
    while r.pos < bytes.len() {
        record += 1;
        let at = At { record, byte: r.pos };
        let tag = r.u8().ok_or_else(|| at.cut("tag"))?;
        let (ty, n) = (tag >> 4, (tag & 0xF) as usize);
        match (version, ty) {
            (_, 8..=0xA) => st.name_record(&mut r, ty, at)?,
            (2, 0xC) => {
                let note = r.name().ok_or_else(|| at.cut("note"))?.map_err(|m| (at.record, m))?;
                if st.t.notes.len() < fmt::MAX_NOTES {
                    st.t.notes.push(note);
                }
            }
            (1, 1..=3) => {
                let thread = r.u16().ok_or_else(|| at.cut("thread"))?;
                st.thread_record(&mut r, ty, n, thread, at)?;
            }
            (2, 0xB) => {
                let thread = r.u16().ok_or_else(|| at.cut("thread"))?;
                let len = r.u32().ok_or_else(|| at.cut("block length"))? as usize;
                let left = bytes.len() - r.pos;
                if len > left {
                    return Err(at.fail(format!("thread block of {len} bytes, but only {left} bytes follow")));
                }
                let base = r.pos;
                let block = r.take(len).ok_or_else(|| at.cut("block"))?;
                let mut b = Reader { b: block, pos: 0 };
                while b.pos < block.len() {
                    record += 1;
                    let at = At { record, byte: base + b.pos };
                    let tag = b.u8().ok_or_else(|| at.cut("tag"))?;
                    let (ty, n) = (tag >> 4, (tag & 0xF) as usize);
                    match ty {
                        1..=4 => st.thread_record(&mut b, ty, n, thread, at)?,
                        0xB => return Err(at.fail("a thread block inside a thread block".into())),
                        _ => return Err(at.fail(format!("record type 0x{tag:02x} inside a thread block"))),
                    }
                }
            }
            (2, 1..=4) => return Err(at.fail(format!("record 0x{tag:02x} outside a thread block"))),
            _ => return Err(at.fail(format!("unknown record type 0x{tag:02x}"))),
        }
    }
    Ok(st.finish())
}

/// Version 1 of a trace, as the tests' reference encoder.
#[cfg(test)]
pub(super) fn encode_binary(t: &Trace) -> Vec<u8> {
    let mut b = BINARY_MAGIC.to_vec();
    b.push(1);
    for (i, name) in t.counters.iter().enumerate() {
        fmt::counter_name(&mut b, i as u8, name);
    }
    for (i, e) in t.events.iter().enumerate() {
        let ty = match e.kind {
            TraceKind::Enter => 0x10,
            TraceKind::Exit => 0x20,
            TraceKind::Thrown => 0x30,
        };
        b.push(ty | t.counters.len() as u8);
        b.extend((e.thread as u16).to_le_bytes());
        b.extend((e.method + 100).to_le_bytes());
        for v in t.values(i) {
            b.extend(v.to_le_bytes());
        }
    }
    for (i, name) in t.methods.iter().enumerate() {
        fmt::method_name(&mut b, i as u32 + 100, name);
    }
    for (i, name) in t.threads.iter().enumerate() {
        fmt::thread_name(&mut b, i as u16, name);
    }
    b
}
