//! What a fleet pushed, read back: OTLP profiles requests (opentelemetry-proto v1.10) as the
//! OpenTelemetry Collector's file exporter writes them, merged per service into one
//! [`Recording`] that every reading command takes.
//!
//! Files are told apart by their extension, and their content is checked against it:
//! - `.otlp`: one bare `ExportProfilesServiceRequest` (what `hpm convert` writes);
//! - `.pb`, `.binpb`: the file exporter's `format: proto`, each message preceded by its length
//!   as a 4-byte big-endian integer;
//! - `.json`, `.jsonl`: the file exporter's `format: json`, one OTLP/JSON message per line.
//!
//! A directory is read as every such file in it (not its subdirectories), in name order.
//! How the messages become a recording is [`merge`]'s; this module frames, bounds and names
//! the message a problem is in.

mod budget;
mod dict;
mod json;
mod merge;
mod process;
#[cfg(test)]
mod tests;
mod wire;

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use prost::Message;

use crate::infile::open_regular;
use crate::limits::LimitError;
use crate::model::Recording;

pub use merge::{Merged, Selection};

/// Bytes of one protobuf message: the collector's OTLP receiver takes requests of up to 20 MiB
/// by default, and a period of one JVM is a few hundred KB.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// Bytes of one line of OTLP/JSON: the same messages, written some 4 times longer.
pub const MAX_JSON_LINE_BYTES: usize = 256 << 20;
/// Files read from one directory.
pub const MAX_FILES: usize = 10_000;

/// How a file holds its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// One message, the whole file (`.otlp`).
    Bare,
    /// Messages each after its length, 4 bytes big-endian (`.pb`, `.binpb`).
    LengthPrefixed,
    /// One OTLP/JSON message per line (`.json`, `.jsonl`).
    JsonLines,
}

impl Framing {
    /// The framing the extension of `path` says, if it names one.
    pub fn of_path(path: &Path) -> Option<Framing> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("otlp") => Some(Framing::Bare),
            Some("pb" | "binpb") => Some(Framing::LengthPrefixed),
            Some("json" | "jsonl") => Some(Framing::JsonLines),
            _ => None,
        }
    }
}

/// Whether `path` is read as OTLP profiles: a directory, or a file of a [`Framing`]'s extension.
pub fn is_otlp_path(path: &Path) -> bool {
    path.is_dir() || Framing::of_path(path).is_some()
}

/// What is wrong, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadError {
    pub path: String,
    /// 1-based number of the message (line, for JSON) the problem is in; 0 if none.
    pub message_no: u64,
    pub problem: Problem,
}

/// The kinds of problem, for callers that decide on them.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    Io(String),
    Format(String),
    Limit(LimitError),
    /// Nothing or too much selected (no `--service` among several, none matching).
    Selection(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Io(m) | Problem::Format(m) | Problem::Selection(m) => f.write_str(m),
            Problem::Limit(l) => write!(f, "{l}"),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message_no {
            0 => write!(f, "{}: {}", self.path, self.problem),
            n => write!(f, "{}: message {n}: {}", self.path, self.problem),
        }
    }
}

impl std::error::Error for ReadError {}

fn format_err(m: impl Into<String>) -> Problem {
    Problem::Format(m.into())
}

/// The profiles of the services selected, merged: the recording, what was merged, and notes
/// to show (profiles left out, counters that could not be matched).
pub struct Fleet {
    pub recording: Recording,
    pub merged: Merged,
    pub notes: Vec<String>,
}

/// Reads the files (or directories) at `paths` and merges the profiles `sel` selects.
pub fn read_fleet(paths: &[PathBuf], sel: &Selection) -> Result<Fleet, ReadError> {
    let mut merger = merge::Merger::new(sel.clone());
    let shown = paths.first().map(|p| p.display().to_string()).unwrap_or_default();
    for (path, framing) in expand(paths)? {
        let at =
            |message_no: u64, problem: Problem| ReadError { path: path.display().to_string(), message_no, problem };
        each_message(&path, framing, &mut |req, no, bytes| merger.add(&req, bytes).map_err(|p| at(no, p)))?;
    }
    merger.finish().map_err(|problem| ReadError { path: shown, message_no: 0, problem })
}

/// The files to read, each with its framing: directories listed (bounded), others as given.
fn expand(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Framing)>, ReadError> {
    let err = |p: &Path, problem: Problem| ReadError { path: p.display().to_string(), message_no: 0, problem };
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|e| err(p, Problem::Io(format!("cannot list it: {e}"))))?;
            let mut files = Vec::new();
            for e in rd {
                let e = e.map_err(|e| err(p, Problem::Io(format!("cannot list it: {e}"))))?;
                let f = e.path();
                if let (Some(framing), true) = (Framing::of_path(&f), e.file_type().is_ok_and(|t| t.is_file())) {
                    if files.len() == MAX_FILES {
                        return Err(err(
                            p,
                            format_err(format!(
                            "more than {MAX_FILES} OTLP files in one directory; give fewer (a subdirectory per day)"
                        )),
                        ));
                    }
                    files.push((f, framing));
                }
            }
            if files.is_empty() {
                return Err(err(p, format_err("no OTLP files (.otlp, .pb, .binpb, .json, .jsonl) in this directory")));
            }
            files.sort_by(|a, b| a.0.cmp(&b.0));
            out.extend(files);
        } else {
            let framing = Framing::of_path(p).ok_or_else(|| {
                err(
                    p,
                    format_err(
                        "not an OTLP profiles file: give .otlp (one request), .pb/.binpb (the collector's \
                                   file exporter, format proto) or .json/.jsonl (format json)",
                    ),
                )
            })?;
            out.push((p.clone(), framing));
        }
    }
    Ok(out)
}

type Sink<'a> = dyn FnMut(ExportProfilesServiceRequest, u64, usize) -> Result<(), ReadError> + 'a;

/// Calls `sink` with each message of the file, its 1-based number and its size in bytes.
fn each_message(path: &Path, framing: Framing, sink: &mut Sink<'_>) -> Result<(), ReadError> {
    let at = |no: u64, problem: Problem| ReadError { path: path.display().to_string(), message_no: no, problem };
    let (file, _) = open_regular(path).map_err(|e| at(0, Problem::Io(format!("cannot read it: {e}"))))?;
    let mut r = BufReader::new(file);
    let head = r.fill_buf().map_err(|e| at(0, Problem::Io(e.to_string())))?;
    if let Some(what) = compressed(head) {
        return Err(at(
            0,
            format_err(format!(
                "the file is {what}-compressed; decompress it first (or set no `compression` in the file exporter)"
            )),
        ));
    }
    let decode = |buf: &[u8], no: u64| {
        wire::check_containers(buf).map_err(|e| at(no, format_err(e)))?;
        ExportProfilesServiceRequest::decode(buf)
            .map_err(|e| at(no, format_err(format!("not an OTLP profiles request ({e}); {}", framing_hint(framing)))))
    };
    match framing {
        Framing::Bare => {
            let buf = read_bounded(&mut r, MAX_MESSAGE_BYTES).map_err(|p| at(1, p))?;
            sink(decode(&buf, 1)?, 1, buf.len())
        }
        Framing::LengthPrefixed => {
            let mut no = 0u64;
            let mut buf = Vec::new();
            loop {
                let mut len = [0u8; 4];
                match read_exact_or_eof(&mut r, &mut len).map_err(|e| at(no + 1, Problem::Io(e.to_string())))? {
                    0 => return Ok(()),
                    4 => {}
                    n => return Err(at(no + 1, format_err(format!("the file ends {n} bytes into a length prefix")))),
                }
                no += 1;
                let len = u32::from_be_bytes(len) as usize;
                if len > MAX_MESSAGE_BYTES {
                    return Err(at(
                        no,
                        format_err(format!(
                            "a length prefix of {len} bytes is more than hpm reads ({MAX_MESSAGE_BYTES}); {}",
                            framing_hint(framing)
                        )),
                    ));
                }
                buf.clear();
                let got =
                    (&mut r).take(len as u64).read_to_end(&mut buf).map_err(|e| at(no, Problem::Io(e.to_string())))?;
                if got < len {
                    return Err(at(no, format_err(format!("the file ends {got} bytes into a message of {len}"))));
                }
                sink(decode(&buf, no)?, no, len)?;
            }
        }
        Framing::JsonLines => {
            let mut no = 0u64;
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = (&mut r)
                    .take(MAX_JSON_LINE_BYTES as u64 + 1)
                    .read_until(b'\n', &mut line)
                    .map_err(|e| at(no + 1, Problem::Io(e.to_string())))?;
                if n == 0 {
                    return Ok(());
                }
                no += 1;
                if n > MAX_JSON_LINE_BYTES {
                    return Err(at(
                        no,
                        format_err(format!(
                            "a line longer than hpm reads ({MAX_JSON_LINE_BYTES} bytes); {}",
                            framing_hint(framing)
                        )),
                    ));
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let req = json::request(&line).map_err(|p| at(no, p))?;
                sink(req, no, n)?;
            }
        }
    }
}

/// The compression whose magic number `head` starts with.
fn compressed(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("zstd")
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Some("gzip")
    } else {
        None
    }
}

fn framing_hint(f: Framing) -> &'static str {
    match f {
        Framing::Bare => ".otlp is one bare request; the collector's file exporter writes .pb (format proto) or .json",
        Framing::LengthPrefixed => {
            ".pb/.binpb is the file exporter's format proto (4-byte length before each message); a bare request is .otlp"
        }
        Framing::JsonLines => ".json/.jsonl is the file exporter's format json, one OTLP/JSON message per line",
    }
}

/// The rest of `r`, refused past `max` bytes.
fn read_bounded(r: &mut impl Read, max: usize) -> Result<Vec<u8>, Problem> {
    let mut buf = Vec::new();
    r.take(max as u64 + 1).read_to_end(&mut buf).map_err(|e| Problem::Io(e.to_string()))?;
    if buf.len() > max {
        return Err(format_err(format!("a request of more than {max} bytes is more than hpm reads")));
    }
    Ok(buf)
}

/// Fills `buf`, or returns how many bytes there were before the end.
fn read_exact_or_eof(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
