//! Method enter/exit traces for the phase analysis (Georges et al., section 3.1.2).
//!
//! **Text**: one event a line, in time order,
//! `enter|exit THREAD METHOD COUNTER [COUNTER...]`, where the first counter orders time
//! (cycles in the paper) and any further ones are other counters read at the same moment.
//! An optional `# counters: cycles instructions ...` line names the columns; other `#` lines
//! and blank lines are skipped.
//!
//! **Binary**: versions 1 and 2 of the paper's compact records, read by [`super::phases_binary`]
//! (layouts there and in [`super::phases_format`]).

use std::collections::HashMap;
use std::path::Path;

use super::fields;
pub use super::phases_binary::parse_binary_trace;
use crate::load::LoadError;

pub const BINARY_MAGIC: &[u8; 8] = b"HPMTRACE";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    Enter,
    Exit,
    /// Exit by an exception thrown through the method.
    Thrown,
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
    pub(super) values: Vec<u64>,
    /// Binary traces name positions by record, text traces by line.
    pub binary: bool,
    /// 0 for text, else the binary version.
    pub version: u8,
    /// Names of the VM components of [`Trace::intervals`] (`[GC]`, `[JIT compiler]`, `[VM]`).
    pub components: Vec<String>,
    /// The VM threads' intervals, apart from the enter/exit events.
    pub intervals: Vec<VmInterval>,
    /// What the agent said it could not record (version 2's note records), at most
    /// [`super::phases_format::MAX_NOTES`].
    pub notes: Vec<String>,
    /// Counter values, `counters.len()` per interval.
    pub(super) interval_values: Vec<u64>,
}

/// One VM interval record: the span of `thread`'s counters since its previous interval (or
/// since its counters were opened, at zero) belongs to component `component`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmInterval {
    pub thread: u32,
    pub component: u32,
    /// Binary record number (1-based).
    pub record: usize,
}

impl Trace {
    /// Counter values of event `i`.
    pub fn values(&self, i: usize) -> &[u64] {
        let w = self.counters.len();
        &self.values[i * w..(i + 1) * w]
    }

    /// Counter values of interval `i`: the thread's counters when it was written.
    pub fn interval_values(&self, i: usize) -> &[u64] {
        let w = self.counters.len();
        &self.interval_values[i * w..(i + 1) * w]
    }

    /// What each interval consumed: its values minus its thread's previous interval's (the
    /// reader checked that they never go backwards), in record order.
    pub fn interval_deltas(&self) -> impl Iterator<Item = (usize, Vec<u64>)> + '_ {
        let mut last: HashMap<u32, usize> = HashMap::new();
        (0..self.intervals.len()).map(move |i| {
            let now = self.interval_values(i);
            let d = match last.insert(self.intervals[i].thread, i) {
                Some(p) => now.iter().zip(self.interval_values(p)).map(|(a, b)| a.saturating_sub(*b)).collect(),
                None => now.to_vec(),
            };
            (i, d)
        })
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
