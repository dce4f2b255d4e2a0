//! What the agent writes for the phase analysis, and what the measurement run reads back:
//! the binary trace's version 2 (per-thread blocks of the paper's compact records) and the
//! phase file (`hpm phases --out`). Encoding only; [`super::phases_trace`] reads both versions.
//!
//! **Trace, version 2** — the magic `HPMTRACE`, the version byte 2, then records (integers
//! little-endian). Top-level records:
//!
//! | tag | record |
//! | --- | --- |
//! | `0x80` method name | u32 method id, u16 length, UTF-8 name |
//! | `0x90` thread name | u16 thread, u16 length, UTF-8 name |
//! | `0xA0` counter name | u8 column, u16 length, UTF-8 name |
//! | `0xB0` thread block | u16 thread, u32 byte length, then that many bytes of the thread's records |
//! | `0xC0` note | u16 length, UTF-8 text: what the agent could not record (records dropped, threads not traced), written last |
//!
//! Inside a thread block, the paper's section 3.1.2 records (1-byte tag whose low nibble is the
//! number of counters n, 1 to 4; a 4-byte method id; 8 bytes per counter):
//!
//! | tag | record |
//! | --- | --- |
//! | `0x1n` enter, `0x2n` exit, `0x3n` exit by exception | u32 method id, n × u64 counters |
//! | `0x4n` VM interval | u32 component id, n × u64: the thread's counters now |
//!
//! A thread's blocks come in its own time order; blocks of different threads interleave in
//! any order (each thread fills its own buffers, a writer thread drains them). A VM interval
//! record closes the span since the same thread's previous one and gives it to the component
//! whose name is the method name of `component id` (e.g. `[GC]`): the paper's per-component
//! measurement of the VM's own threads (section 3.1.3).
//!
//! **Phase file** — UTF-8 text: `#` lines are comments, every other line one selected method,
//! named as in the trace (`pkg.Class.method(descriptor)`).

/// `HPMTRACE`.
pub const MAGIC: &[u8; 8] = b"HPMTRACE";
/// The version the agent writes.
pub const VERSION: u8 = 2;

pub const TAG_ENTER: u8 = 0x10;
pub const TAG_EXIT: u8 = 0x20;
pub const TAG_EXIT_THROW: u8 = 0x30;
pub const TAG_INTERVAL: u8 = 0x40;
pub const TAG_METHOD_NAME: u8 = 0x80;
pub const TAG_THREAD_NAME: u8 = 0x90;
pub const TAG_COUNTER_NAME: u8 = 0xA0;
pub const TAG_THREAD_BLOCK: u8 = 0xB0;
pub const TAG_NOTE: u8 = 0xC0;
/// Notes a reader keeps (a trace has a handful: one per drop reason).
pub const MAX_NOTES: usize = 64;

/// Counters a record holds at most (the low nibble; the paper's four).
pub const MAX_COUNTERS: usize = 4;
/// Bytes of the longest thread record: tag, method id, four counters.
pub const MAX_RECORD: usize = 1 + 4 + 8 * MAX_COUNTERS;
/// Bytes of a thread block's header.
pub const BLOCK_HEADER: usize = 1 + 2 + 4;
/// Longest name a name record holds (longer names are cut at a character boundary).
pub const MAX_NAME: usize = u16::MAX as usize;

/// The file's first bytes.
pub fn header() -> [u8; 9] {
    let mut h = [0u8; 9];
    h[..8].copy_from_slice(MAGIC);
    h[8] = VERSION;
    h
}

/// Writes one thread record (`tag` one of the `TAG_ENTER`..`TAG_INTERVAL`) into the front of
/// `out`; returns its length, or 0 when `out` is too short or `counters` holds 0 or more than
/// [`MAX_COUNTERS`] values. Allocates nothing: the probes call it on application threads.
pub fn encode_record(out: &mut [u8], tag: u8, method: u32, counters: &[u64]) -> usize {
    let n = counters.len();
    let len = 1 + 4 + 8 * n;
    if n == 0 || n > MAX_COUNTERS || out.len() < len {
        return 0;
    }
    out[0] = (tag & 0xF0) | n as u8;
    out[1..5].copy_from_slice(&method.to_le_bytes());
    for (i, v) in counters.iter().enumerate() {
        out[5 + 8 * i..13 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    len
}

/// A thread block's header for `len` bytes of records.
pub fn block_header(thread: u16, len: u32) -> [u8; BLOCK_HEADER] {
    let mut h = [0u8; BLOCK_HEADER];
    h[0] = TAG_THREAD_BLOCK;
    h[1..3].copy_from_slice(&thread.to_le_bytes());
    h[3..7].copy_from_slice(&len.to_le_bytes());
    h
}

fn cut_name(name: &str) -> &str {
    if name.len() <= MAX_NAME {
        return name;
    }
    let mut end = MAX_NAME;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

fn push_name(out: &mut Vec<u8>, name: &str) {
    let name = cut_name(name);
    out.extend((name.len() as u16).to_le_bytes());
    out.extend(name.as_bytes());
}

/// Appends a method name record.
pub fn method_name(out: &mut Vec<u8>, id: u32, name: &str) {
    out.push(TAG_METHOD_NAME);
    out.extend(id.to_le_bytes());
    push_name(out, name);
}

/// Appends a thread name record.
pub fn thread_name(out: &mut Vec<u8>, thread: u16, name: &str) {
    out.push(TAG_THREAD_NAME);
    out.extend(thread.to_le_bytes());
    push_name(out, name);
}

/// Appends a counter name record.
pub fn counter_name(out: &mut Vec<u8>, column: u8, name: &str) {
    out.push(TAG_COUNTER_NAME);
    out.push(column);
    push_name(out, name);
}

/// Appends a note record: one line on what the agent could not record.
pub fn note(out: &mut Vec<u8>, text: &str) {
    out.push(TAG_NOTE);
    push_name(out, text);
}

/// Methods a phase file may select.
pub const MAX_SELECTED: usize = 10_000;
/// Longest line of a phase file.
pub const MAX_PHASE_LINE: usize = 4096;

/// The phase file for `methods`, after a comment line (`comment` may be empty).
pub fn write_phase_file(comment: &str, methods: &[&str]) -> String {
    let mut s = String::new();
    for line in comment.lines() {
        s.push_str("# ");
        s.push_str(line);
        s.push('\n');
    }
    for m in methods {
        s.push_str(m);
        s.push('\n');
    }
    s
}

/// Reads a phase file: its methods, in order, without duplicates. Errors carry the 1-based line.
pub fn parse_phase_file(text: &str) -> Result<Vec<String>, (usize, String)> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        if line.len() > MAX_PHASE_LINE {
            return Err((no, format!("line is longer than {MAX_PHASE_LINE} bytes")));
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.split_whitespace().count() != 1 || !t.contains('(') || !t.contains('.') {
            return Err((no, format!("`{t}` is not a method named `pkg.Class.method(descriptor)`")));
        }
        if seen.insert(t.to_string()) {
            if out.len() == MAX_SELECTED {
                return Err((no, format!("more than {MAX_SELECTED} methods selected")));
            }
            out.push(t.to_string());
        }
    }
    if out.is_empty() {
        return Err((0, "the phase file selects no method (write one with `hpm phases TRACE --out FILE`)".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_layout_is_the_papers() {
        let mut b = [0u8; MAX_RECORD];
        assert_eq!(encode_record(&mut b, TAG_ENTER, 7, &[1, 2, 3]), 29);
        assert_eq!(b[0], 0x13);
        assert_eq!(&b[1..5], &7u32.to_le_bytes());
        assert_eq!(&b[21..29], &3u64.to_le_bytes());
        assert_eq!(encode_record(&mut b, TAG_EXIT, 7, &[]), 0);
        assert_eq!(encode_record(&mut b, TAG_EXIT, 7, &[0; 5]), 0);
        assert_eq!(encode_record(&mut b[..10], TAG_EXIT, 7, &[1, 2]), 0);
    }

    #[test]
    fn phase_file_round_trips_and_refuses_garbage() {
        let text = write_phase_file("selected by hpm phases", &["A.b(I)V", "C.d()J"]);
        assert_eq!(parse_phase_file(&text).unwrap(), vec!["A.b(I)V", "C.d()J"]);
        assert!(parse_phase_file("# only\n").is_err());
        assert_eq!(parse_phase_file("A.b(I)V\nnot a method\n").unwrap_err().0, 2);
        assert_eq!(parse_phase_file(&"x".repeat(5000)).unwrap_err().0, 1);
    }
}
