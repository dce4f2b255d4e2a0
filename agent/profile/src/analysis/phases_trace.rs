//! Method enter/exit traces for the phase analysis (Georges et al., section 3.1.2).
//!
//! **Text**: one event a line, in time order,
//! `enter|exit THREAD METHOD COUNTER [COUNTER...]`, where the first counter orders time
//! (cycles in the paper) and any further ones are other counters read at the same moment.
//! An optional `# counters: cycles instructions ...` line names the columns; other `#` lines
//! and blank lines are skipped.
//!
//! **Binary** (the paper's record layout, single-file variant with a thread id): the magic
//! `HPMTRACE`, a version byte (1), then records starting with a tag byte whose high nibble is
//! the type and low nibble the number of counters (1 to 4). All integers are little-endian.
//!
//! | tag | record |
//! | --- | --- |
//! | `0x1n` enter, `0x2n` exit, `0x3n` exit by exception | u16 thread, u32 method id, n × u64 counters |
//! | `0x80` method name | u32 method id, u16 length, UTF-8 name |
//! | `0x90` thread name | u16 thread, u16 length, UTF-8 name |
//! | `0xA0` counter name | u8 column, u16 length, UTF-8 name |
//!
//! Names may come before or after their use; a method without a name is shown as `#id`.

use std::collections::HashMap;
use std::path::Path;

use super::fields;
use crate::load::LoadError;

pub const BINARY_MAGIC: &[u8; 8] = b"HPMTRACE";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    Enter,
    Exit,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub kind: TraceKind,
    pub thread: u32,
    pub method: u32,
    /// Text line (1-based) or binary record number (1-based), for error messages.
    pub line: usize,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub threads: Vec<String>,
    pub methods: Vec<String>,
    /// Counter column names; the first orders time.
    pub counters: Vec<String>,
    pub events: Vec<TraceEvent>,
    /// Counter values, `counters.len()` per event.
    values: Vec<u64>,
    /// Binary traces name positions by record, text traces by line.
    pub binary: bool,
}

impl Trace {
    /// Counter values of event `i`.
    pub fn values(&self, i: usize) -> &[u64] {
        let w = self.counters.len();
        &self.values[i * w..(i + 1) * w]
    }
}

#[derive(Default)]
struct Interner {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Interner {
    fn get(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.names.push(s.to_string());
        self.index.insert(s.to_string(), self.names.len() as u32 - 1);
        self.names.len() as u32 - 1
    }
}

/// Parses a text trace; errors carry the 1-based line.
pub fn parse_text_trace(text: &str) -> Result<Trace, (usize, String)> {
    let (mut threads, mut methods) = (Interner::default(), Interner::default());
    let mut t = Trace::default();
    let mut width: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        if let Some(rest) = line.trim().strip_prefix("# counters:") {
            if width.is_some() {
                return Err((no, "`# counters:` must come before the first event".into()));
            }
            t.counters = rest.split_whitespace().map(str::to_string).collect();
            if t.counters.is_empty() {
                return Err((no, "`# counters:` names no counter".into()));
            }
            width = Some(t.counters.len());
            continue;
        }
        let Some(f) = fields(line) else { continue };
        let kind = match f[0] {
            "enter" => TraceKind::Enter,
            "exit" => TraceKind::Exit,
            other => {
                return Err((
                    no,
                    format!("unknown event `{other}`; expected `enter THREAD METHOD COUNTER...` or `exit ...`"),
                ))
            }
        };
        if f.len() < 4 {
            return Err((no, format!("expected `{} THREAD METHOD COUNTER [COUNTER...]`", f[0])));
        }
        let n = f.len() - 3;
        match width {
            None => {
                width = Some(n);
                t.counters =
                    (0..n).map(|k| if k == 0 { "counter".into() } else { format!("counter{}", k + 1) }).collect();
            }
            Some(w) if w != n => {
                return Err((no, format!("{n} counter values, but the trace has {w} counter columns")))
            }
            _ => {}
        }
        for v in &f[3..] {
            t.values.push(v.parse().map_err(|_| (no, format!("counter value `{v}` is not a whole number")))?);
        }
        t.events.push(TraceEvent { kind, thread: threads.get(f[1]), method: methods.get(f[2]), line: no });
    }
    t.threads = threads.names;
    t.methods = methods.names;
    Ok(t)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.pos..self.pos + n)?;
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

/// Parses a binary trace; errors carry the 1-based record number and byte offset.
pub fn parse_binary_trace(bytes: &[u8]) -> Result<Trace, (usize, String)> {
    if bytes.len() < 9 || &bytes[..8] != BINARY_MAGIC {
        return Err((0, "not a binary hpm trace (no HPMTRACE header)".into()));
    }
    if bytes[8] != 1 {
        return Err((0, format!("binary trace version {} is not supported (expected 1)", bytes[8])));
    }
    let mut r = Reader { b: bytes, pos: 9 };
    let mut t = Trace { binary: true, ..Trace::default() };
    let (mut thread_ids, mut method_ids) = (HashMap::new(), HashMap::new());
    let (mut thread_names, mut method_names) = (HashMap::new(), HashMap::new());
    let mut counter_names: HashMap<u8, String> = HashMap::new();
    let mut width = None;
    let mut record = 0;
    while r.pos < bytes.len() {
        record += 1;
        let start = r.pos;
        let cut = |what: &str| (record, format!("record at byte {start} is cut short in its {what}"));
        let tag = r.u8().ok_or_else(|| cut("tag"))?;
        let (ty, n) = (tag >> 4, (tag & 0xF) as usize);
        match ty {
            1..=3 => {
                if !(1..=4).contains(&n) {
                    return Err((record, format!("record at byte {start}: {n} counters, expected 1 to 4")));
                }
                match width {
                    None => width = Some(n),
                    Some(w) if w != n => {
                        return Err((record, format!("record at byte {start}: {n} counters, earlier records had {w}")))
                    }
                    _ => {}
                }
                let thread = r.u16().ok_or_else(|| cut("thread"))?;
                let method = r.u32().ok_or_else(|| cut("method id"))?;
                for _ in 0..n {
                    t.values.push(r.u64().ok_or_else(|| cut("counters"))?);
                }
                let next = thread_ids.len() as u32;
                let thread = *thread_ids.entry(thread).or_insert(next);
                let next = method_ids.len() as u32;
                let method = *method_ids.entry(method).or_insert(next);
                let kind = if ty == 1 { TraceKind::Enter } else { TraceKind::Exit };
                t.events.push(TraceEvent { kind, thread, method, line: record });
            }
            8 => {
                let id = r.u32().ok_or_else(|| cut("method id"))?;
                let name = r.name().ok_or_else(|| cut("name"))?.map_err(|m| (record, m))?;
                method_names.insert(id, name);
            }
            9 => {
                let id = r.u16().ok_or_else(|| cut("thread id"))?;
                let name = r.name().ok_or_else(|| cut("name"))?.map_err(|m| (record, m))?;
                thread_names.insert(id, name);
            }
            0xA => {
                let col = r.u8().ok_or_else(|| cut("column"))?;
                let name = r.name().ok_or_else(|| cut("name"))?.map_err(|m| (record, m))?;
                counter_names.insert(col, name);
            }
            _ => return Err((record, format!("record at byte {start}: unknown record type 0x{tag:02x}"))),
        }
    }
    let name_of = |ids: &HashMap<u32, u32>, names: &HashMap<u32, String>, prefix: &str| {
        let mut v = vec![String::new(); ids.len()];
        for (&raw, &i) in ids {
            v[i as usize] = names.get(&raw).cloned().unwrap_or_else(|| format!("{prefix}{raw}"));
        }
        v
    };
    t.methods = name_of(&method_ids, &method_names, "#");
    let thread_ids: HashMap<u32, u32> = thread_ids.into_iter().map(|(k, v)| (k as u32, v)).collect();
    let thread_names: HashMap<u32, String> = thread_names.into_iter().map(|(k, v)| (k as u32, v)).collect();
    t.threads = name_of(&thread_ids, &thread_names, "thread ");
    let w = width.unwrap_or(0);
    t.counters = (0..w)
        .map(|k| {
            counter_names.get(&(k as u8)).cloned().unwrap_or_else(|| {
                if k == 0 {
                    "counter".into()
                } else {
                    format!("counter{}", k + 1)
                }
            })
        })
        .collect();
    Ok(t)
}

/// Reads a trace file, binary if it starts with the magic, text otherwise.
pub fn load_trace(path: &Path) -> Result<Trace, LoadError> {
    let bytes = crate::infile::read_regular(path).map_err(|e| LoadError::io(path, &e))?;
    if bytes.starts_with(BINARY_MAGIC) {
        return parse_binary_trace(&bytes).map_err(|(rec, message)| {
            LoadError::format(path, 0, if rec > 0 { format!("record {rec}: {message}") } else { message })
        });
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        LoadError::format(
            path,
            0,
            format!(
                "neither a binary trace (HPMTRACE header) nor UTF-8 text: invalid byte at offset {}",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    parse_text_trace(&text).map_err(|(line, message)| LoadError::format(path, line, message))
}

#[cfg(test)]
pub(super) fn encode_binary(t: &Trace) -> Vec<u8> {
    let mut b = BINARY_MAGIC.to_vec();
    b.push(1);
    for (i, name) in t.counters.iter().enumerate() {
        b.push(0xA0);
        b.push(i as u8);
        b.extend((name.len() as u16).to_le_bytes());
        b.extend(name.as_bytes());
    }
    for (i, e) in t.events.iter().enumerate() {
        let ty = if e.kind == TraceKind::Enter { 0x10 } else { 0x20 };
        b.push(ty | t.counters.len() as u8);
        b.extend((e.thread as u16).to_le_bytes());
        b.extend((e.method + 100).to_le_bytes());
        for v in t.values(i) {
            b.extend(v.to_le_bytes());
        }
    }
    for (i, name) in t.methods.iter().enumerate() {
        b.push(0x80);
        b.extend((i as u32 + 100).to_le_bytes());
        b.extend((name.len() as u16).to_le_bytes());
        b.extend(name.as_bytes());
    }
    for (i, name) in t.threads.iter().enumerate() {
        b.push(0x90);
        b.extend((i as u16).to_le_bytes());
        b.extend((name.len() as u16).to_le_bytes());
        b.extend(name.as_bytes());
    }
    b
}
