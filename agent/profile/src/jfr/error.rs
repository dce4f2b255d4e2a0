//! What reading a `.jfr` file can go wrong with, as types the callers decide on: a damaged or
//! foreign file is an error, a limit is a refusal, and a last chunk cut short (a crash or a full
//! disk while the file was written) is not an error at all: the complete chunks are read and
//! [`LostTail`] says what was lost.

use std::fmt;

use super::varint::DecodeError;
use crate::limits::LimitError;

/// The incomplete end of a file: the chunk that was being written when the writer stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostTail {
    /// Index of the incomplete chunk (= the number of complete chunks before it).
    pub chunk: usize,
    /// Its file offset, and the bytes from there to the end of the file.
    pub offset: u64,
    pub present: u64,
    /// The size its header declares, when the header is there and says.
    pub declared: Option<u64>,
    /// Why it counts as incomplete.
    pub why: &'static str,
}

impl fmt::Display for LostTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = match self.declared {
            Some(d) => format!("{} of its {d} bytes", self.present),
            None => format!("{} bytes", self.present),
        };
        write!(
            f,
            "chunk {} at byte {} is incomplete ({size}: {}); its events are lost, the {} complete chunk{} before it \
             were read",
            self.chunk,
            self.offset,
            self.why,
            self.chunk,
            if self.chunk == 1 { "" } else { "s" }
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// The file could not be opened or read.
    Io(String),
    /// The file is empty.
    Empty,
    /// Not JFR, or damaged inside a complete chunk.
    Format(DecodeError),
    /// Over one of hpm's limits ([`crate::limits`]).
    Limit(LimitError),
    /// The file holds no complete chunk: the first one is already cut short.
    NoCompleteChunk(LostTail),
}

impl From<DecodeError> for ReadErrorKind {
    fn from(e: DecodeError) -> Self {
        ReadErrorKind::Format(e)
    }
}

/// An error reading a `.jfr` file: the path, the chunk (when one is concerned) and the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub path: String,
    pub chunk: Option<usize>,
    pub kind: ReadErrorKind,
}

impl ReadError {
    pub fn is_limit(&self) -> bool {
        matches!(self.kind, ReadErrorKind::Limit(_))
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        if let Some(c) = self.chunk {
            write!(f, "chunk {c}: ")?;
        }
        match &self.kind {
            ReadErrorKind::Io(m) => write!(f, "{m}"),
            ReadErrorKind::Empty => write!(f, "empty file, not a JFR recording"),
            ReadErrorKind::Format(e) => write!(f, "{e}"),
            ReadErrorKind::Limit(l) => write!(f, "{l}"),
            ReadErrorKind::NoCompleteChunk(t) => write!(
                f,
                "no complete chunk: the first one is cut short ({} bytes present{}: {}); nothing to read",
                t.present,
                t.declared.map(|d| format!(" of {d}")).unwrap_or_default(),
                t.why
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// What [`super::parser::for_each_chunk`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunksRead {
    pub chunks: usize,
    pub lost: Option<LostTail>,
}
