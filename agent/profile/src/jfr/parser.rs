//! Generic JFR reading: chunk headers, the metadata event, constant pools and events as typed
//! [`Value`]s, for any JFR 1.x/2.x file (ours, the JDK's, async-profiler's).
//!
//! A chunk is laid out as a 68-byte header, then event records. Every record starts with its
//! size (compressed, counting itself) and type id; type 0 is the metadata event, type 1 a
//! constant-pool ("checkpoint") event. The header points at the metadata event and at the
//! newest constant-pool event, which links to older ones by a relative offset.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::error::{ChunksRead, LostTail, ReadError, ReadErrorKind};
use super::metadata::{Element, Kind, Metadata, TypeDesc, MAX_DEPTH};
use super::value::{Chunk, ChunkHeader, Event, IntMap, Value};
use super::varint::{DResult, DecodeError, RawString, Reader};

pub const MAGIC: &[u8; 4] = b"FLR\0";
pub const HEADER_SIZE: usize = 68;
pub const METADATA_TYPE_ID: u64 = 0;
pub const CONSTANT_POOL_TYPE_ID: u64 = 1;

fn err(offset: u64, message: impl Into<String>) -> DecodeError {
    DecodeError { offset, message: message.into() }
}

/// Parses the 68-byte header at the start of `data` (`base` is its file offset).
pub fn parse_header(data: &[u8], base: u64) -> DResult<ChunkHeader> {
    if !MAGIC.starts_with(&data[..data.len().min(4)]) || data.is_empty() {
        return Err(err(base, "not a JFR chunk (magic `FLR\\0` missing)"));
    }
    if data.len() < HEADER_SIZE {
        return Err(err(base, format!("incomplete chunk header ({} of {HEADER_SIZE} bytes)", data.len())));
    }
    let mut r = Reader::new(&data[..HEADER_SIZE], base);
    if r.bytes(4)? != MAGIC {
        return Err(err(base, "not a JFR chunk (magic `FLR\\0` missing)"));
    }
    let h = ChunkHeader {
        file_offset: base,
        major: r.be_u16()?,
        minor: r.be_u16()?,
        size: r.be_u64()?,
        constant_pool_offset: r.be_u64()?,
        metadata_offset: r.be_u64()?,
        start_nanos: r.be_u64()?,
        duration_nanos: r.be_u64()?,
        start_ticks: r.be_u64()?,
        ticks_per_second: r.be_u64()?,
        features: r.be_u32()?,
    };
    if h.major != 1 && h.major != 2 {
        return Err(err(base + 4, format!("unsupported JFR version {}.{}", h.major, h.minor)));
    }
    if h.features >> 24 != 0 {
        return Err(err(base + 64, "chunk is unfinished (still being written, or the writer died)"));
    }
    if h.size < HEADER_SIZE as u64 {
        return Err(err(base + 8, format!("chunk size {} is smaller than the header", h.size)));
    }
    if h.metadata_offset == 0 || h.metadata_offset >= h.size {
        return Err(err(
            base + 24,
            format!("metadata offset {} is outside the chunk ({} bytes)", h.metadata_offset, h.size),
        ));
    }
    if h.constant_pool_offset >= h.size {
        return Err(err(
            base + 16,
            format!("constant pool offset {} is outside the chunk ({} bytes)", h.constant_pool_offset, h.size),
        ));
    }
    Ok(h)
}

/// Reads the metadata event of a chunk.
pub fn parse_metadata(data: &[u8], h: &ChunkHeader) -> DResult<Metadata> {
    let at = h.file_offset + h.metadata_offset;
    let mut r = Reader::new(data, h.file_offset);
    r.seek(h.metadata_offset as usize)?;
    let (_size, mut r) = record(&mut r)?;
    let ty = r.varint()?;
    if ty != METADATA_TYPE_ID {
        return Err(err(at, format!("expected the metadata event (type 0), found type {ty}")));
    }
    r.varint()?; // start time
    r.varint()?; // duration
    r.varint()?; // metadata id
    let tree = Element::decode_tree(&mut r)?;
    Metadata::from_tree(tree).map_err(|m| err(at, format!("bad metadata: {m}")))
}

/// Reads a record's size and returns a reader limited to the record (positioned after the
/// size field).
fn record<'a>(r: &mut Reader<'a>) -> DResult<(usize, Reader<'a>)> {
    let start = r.pos();
    let at = r.offset();
    let size = r.varint()?;
    if size == 0 || size as usize > r.remaining() + (r.pos() - start) {
        return Err(err(at, format!("event size {size} is zero or runs past the end of the chunk")));
    }
    let header_len = r.pos() - start;
    if (size as usize) <= header_len {
        return Err(err(at, format!("event size {size} is smaller than its own size field")));
    }
    let body = r.bytes(size as usize - header_len)?;
    Ok((size as usize, Reader::new(body, at + header_len as u64)))
}

/// Values a chunk may decode to, per byte of the chunk (and [`VALUE_SLACK`] more); a struct's
/// fields and an array's elements count one more, for their allocation. A value of a struct
/// type with no fields takes no bytes, so arrays of them, or structs made of them, could
/// otherwise make a few bytes decode to billions of values (an array's count is checked
/// against the bytes left, which such elements never use). Real files decode to about one
/// value per byte at most (the JDK's recordings 0.1, hpm's own up to 1: a stack frame is six
/// in four bytes or more), so the bound only refuses what no writer produces, and keeps the
/// memory (24 bytes a [`Value`]) and time of decoding linear in the chunk's size.
pub const VALUES_PER_BYTE: u64 = 2;
pub const VALUE_SLACK: u64 = 4096;

/// What is left of a chunk's [`VALUES_PER_BYTE`] budget.
struct Budget {
    left: u64,
    allowed: u64,
    chunk_bytes: usize,
}

impl Budget {
    fn for_chunk(bytes: usize) -> Budget {
        let allowed = (bytes as u64).saturating_mul(VALUES_PER_BYTE).saturating_add(VALUE_SLACK);
        Budget { left: allowed, allowed, chunk_bytes: bytes }
    }

    /// Takes `n` values from the budget, before they are made (or allocated).
    fn take(&mut self, r: &Reader, n: usize) -> DResult<()> {
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(r.error(format!(
                "the chunk's {} bytes decode to more than {} values (structs without fields, repeated or nested); \
                 the file is damaged or made to exhaust memory",
                self.chunk_bytes, self.allowed
            ))),
        }
    }
}

/// Reads one value of type `type_id` (not a pool reference).
fn read_value(r: &mut Reader, meta: &Metadata, type_id: u64, depth: usize, budget: &mut Budget) -> DResult<Value> {
    let t = meta.get(type_id).ok_or_else(|| r.error(format!("undeclared type id {type_id}")))?;
    match t.kind {
        Kind::Struct => {
            if depth > MAX_DEPTH {
                return Err(r.error("values nested too deeply (recursive inline type?)"));
            }
            let type_id =
                u32::try_from(type_id).map_err(|_| r.error(format!("struct type id {type_id} is out of range")))?;
            let fields = read_fields(r, meta, t, depth + 1, budget)?;
            Ok(Value::Struct { type_id, fields })
        }
        k => read_primitive(r, k, type_id),
    }
}

fn read_primitive(r: &mut Reader, kind: Kind, type_id: u64) -> DResult<Value> {
    Ok(match kind {
        Kind::Boolean => Value::Bool(r.bool()?),
        Kind::Byte => Value::Byte(r.u8()? as i8),
        Kind::Char => Value::Char(r.varint()? as u16),
        Kind::Short => Value::Short(r.varint()? as i16),
        Kind::Int => Value::Int(r.varint_i32()?),
        Kind::Long => Value::Long(r.varint()? as i64),
        Kind::Float => Value::Float(r.f32()?),
        Kind::Double => Value::Double(r.f64()?),
        Kind::String => match r.string()? {
            RawString::Null => Value::Null,
            RawString::Text(s) => Value::String(s.into_boxed_str()),
            RawString::PoolRef(key) => Value::Ref { type_id, key },
        },
        Kind::Struct => unreachable!("structs are read by read_value"),
    })
}

/// The fields of a struct of type `t`. Every value made, field or array element, is taken
/// from `budget` first.
fn read_fields(
    r: &mut Reader,
    meta: &Metadata,
    t: &TypeDesc,
    depth: usize,
    budget: &mut Budget,
) -> DResult<Box<[Value]>> {
    budget.take(r, allocated(t.fields.len()))?;
    let mut out = Vec::with_capacity(t.fields.len());
    for f in &t.fields {
        let one = |r: &mut Reader, budget: &mut Budget| -> DResult<Value> {
            match (f.constant_pool, f.kind) {
                (true, _) => Ok(Value::Ref { type_id: f.type_id, key: r.varint()? }),
                (false, Kind::Struct) => read_value(r, meta, f.type_id, depth, budget),
                (false, k) => read_primitive(r, k, f.type_id),
            }
        };
        if f.array {
            let n = r.count("array element", 1)?;
            budget.take(r, allocated(n))?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(one(r, budget)?);
            }
            out.push(Value::Array(items.into_boxed_slice()));
        } else {
            out.push(one(r, budget)?);
        }
    }
    Ok(out.into_boxed_slice())
}

/// What `n` values held in one allocation take from the budget: one more for the allocation.
fn allocated(n: usize) -> usize {
    n + usize::from(n > 0)
}

/// Reads every constant-pool event of the chunk (following the chain of relative offsets).
fn parse_pools(
    data: &[u8],
    h: &ChunkHeader,
    meta: &Metadata,
    budget: &mut Budget,
) -> DResult<IntMap<u64, IntMap<u64, Value>>> {
    let mut pools: IntMap<u64, IntMap<u64, Value>> = IntMap::default();
    let mut seen = HashSet::new();
    let mut pos = h.constant_pool_offset;
    while pos != 0 {
        if !seen.insert(pos) || pos >= h.size {
            return Err(err(h.file_offset + pos, "constant pool chain loops or leaves the chunk"));
        }
        let mut r = Reader::new(data, h.file_offset);
        r.seek(pos as usize)?;
        let at = r.offset();
        let (_size, mut r) = record(&mut r)?;
        let ty = r.varint()?;
        if ty != CONSTANT_POOL_TYPE_ID {
            return Err(err(at, format!("expected a constant pool event (type 1), found type {ty}")));
        }
        r.varint()?; // start time
        r.varint()?; // duration
        let delta = r.varint()? as i64;
        r.u8()?; // flush / checkpoint type flags
        let npools = r.count("constant pool", 2)?;
        for _ in 0..npools {
            let tat = r.offset();
            let type_id = r.varint()?;
            if meta.get(type_id).is_none() {
                return Err(err(tat, format!("constant pool for undeclared type id {type_id}")));
            }
            let n = r.count("constant", 1)?;
            let pool = pools.entry(type_id).or_default();
            for _ in 0..n {
                let key = r.varint()?;
                budget.take(&r, 1)?;
                let v = read_value(&mut r, meta, type_id, 0, budget)?;
                pool.insert(key, v);
            }
        }
        pos = if delta == 0 { 0 } else { (pos as i64).wrapping_add(delta) as u64 };
    }
    Ok(pools)
}

/// Parses one complete chunk held in `data` (which starts at the chunk header; `base` is its
/// file offset). Only events whose type passes `want` are decoded; others are skipped by size.
pub fn parse_chunk(data: &[u8], base: u64, want: &dyn Fn(&TypeDesc) -> bool) -> DResult<Chunk> {
    let header = parse_header(data, base)?;
    if (data.len() as u64) < header.size {
        return Err(err(base + 8, format!("chunk size {} but only {} bytes present", header.size, data.len())));
    }
    let data = &data[..header.size as usize];
    let metadata = parse_metadata(data, &header)?;
    let mut budget = Budget::for_chunk(data.len());
    let pools = parse_pools(data, &header, &metadata, &mut budget)?;
    let mut events = Vec::new();
    let mut r = Reader::new(data, base);
    r.seek(HEADER_SIZE)?;
    while r.remaining() > 0 {
        let at = r.offset();
        let (_size, mut body) = record(&mut r)?;
        let type_id = body.varint()?;
        if type_id == METADATA_TYPE_ID || type_id == CONSTANT_POOL_TYPE_ID {
            continue;
        }
        let Some(t) = metadata.get(type_id) else {
            continue;
        };
        if !want(t) {
            continue;
        }
        budget.take(&body, 1)?;
        let fields = read_fields(&mut body, &metadata, t, 1, &mut budget)?;
        events.push(Event { type_id, offset: at, fields });
    }
    Ok(Chunk { header, metadata, pools, events })
}

/// Reads every chunk of a file in order, handing each to `f`. Chunks are read one at a time,
/// so memory use is bounded by the largest chunk. Errors name the file, the chunk and the byte
/// offset. An incomplete last chunk (the file was cut while a chunk was being written: a crash,
/// a full disk, a recording still in progress) ends the reading without an error; the result
/// says what was lost.
pub fn for_each_chunk(
    path: &Path,
    want: &dyn Fn(&TypeDesc) -> bool,
    mut f: impl FnMut(Chunk) -> Result<(), ReadErrorKind>,
) -> Result<ChunksRead, ReadError> {
    let name = path.display().to_string();
    let fail = |chunk: Option<usize>, kind: ReadErrorKind| ReadError { path: name.clone(), chunk, kind };
    let io = |e: std::io::Error| fail(None, ReadErrorKind::Io(e.to_string()));
    // A regular file only (a pipe would hang the reader, a device feed it without end), read
    // up to the size it had when opened.
    let (mut file, len) = crate::infile::open_regular(path).map_err(io)?;
    if len == 0 {
        return Err(fail(None, ReadErrorKind::Empty));
    }
    let mut offset = 0u64;
    let mut index = 0usize;
    while offset < len {
        let mut head = [0u8; HEADER_SIZE];
        let n = read_at(&mut file, offset, &mut head).map_err(io)?;
        let lost = |declared: Option<u64>, why: &'static str| LostTail {
            chunk: index,
            offset,
            present: len - offset,
            declared,
            why,
        };
        let tail = incomplete_tail(&head[..n], len - offset).map(|(declared, why)| lost(declared, why)).or_else(|| {
            (head[0] == 0 && read_is_all_zero(&mut file, offset, len))
                .then(|| lost(None, "zero bytes where it should be"))
        });
        if let Some(t) = tail {
            if index == 0 {
                return Err(fail(None, ReadErrorKind::NoCompleteChunk(t)));
            }
            return Ok(ChunksRead { chunks: index, lost: Some(t) });
        }
        let ctx = |e: DecodeError| fail(Some(index), ReadErrorKind::Format(e));
        let header = parse_header(&head[..n], offset).map_err(ctx)?;
        let mut data = vec![0u8; header.size as usize];
        read_at(&mut file, offset, &mut data).map_err(io)?;
        let chunk = parse_chunk(&data, offset, want).map_err(ctx)?;
        f(chunk).map_err(|k| fail(Some(index), k))?;
        offset += header.size;
        index += 1;
    }
    Ok(ChunksRead { chunks: index, lost: None })
}

/// Whether the bytes at a chunk boundary are a chunk that was cut short: fewer bytes than a
/// header (that start like one), a header whose file state says "being written", or a size
/// past the end of the file. Returns the declared size, if known, and why.
fn incomplete_tail(head: &[u8], left: u64) -> Option<(Option<u64>, &'static str)> {
    let magic_ok = MAGIC.starts_with(&head[..head.len().min(MAGIC.len())]);
    if head.len() < HEADER_SIZE {
        return magic_ok.then_some((None, "the file ends inside the chunk header"));
    }
    if !magic_ok {
        return None;
    }
    let size = u64::from_be_bytes(head[8..16].try_into().unwrap_or([0; 8]));
    if head[64] != 0 {
        return Some(((size >= HEADER_SIZE as u64).then_some(size), "its header says it is still being written"));
    }
    (size > left).then_some((Some(size), "the file ends before the chunk does"))
}

/// Whether everything from `offset` to the end of the file is zero (space allocated for data
/// that was never written).
fn read_is_all_zero(file: &mut File, offset: u64, len: u64) -> bool {
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = offset;
    while at < len {
        let want = ((len - at) as usize).min(buf.len());
        match read_at(file, at, &mut buf[..want]) {
            Ok(n) if n > 0 => {
                if buf[..n].iter().any(|&b| b != 0) {
                    return false;
                }
                at += n as u64;
            }
            _ => return false,
        }
    }
    true
}

/// Reads up to `buf.len()` bytes at `offset`; returns how many were read.
fn read_at(file: &mut File, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    file.seek(SeekFrom::Start(offset))?;
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Reads all complete chunks of a file, decoding the events `want` selects.
pub fn read_chunks(path: &Path, want: &dyn Fn(&TypeDesc) -> bool) -> Result<(Vec<Chunk>, ChunksRead), ReadError> {
    let mut out = Vec::new();
    let read = for_each_chunk(path, want, |c| {
        out.push(c);
        Ok(())
    })?;
    Ok((out, read))
}

/// Parses every chunk in an in-memory file image.
pub fn parse_chunks(data: &[u8], want: &dyn Fn(&TypeDesc) -> bool) -> DResult<Vec<Chunk>> {
    let mut out = Vec::new();
    for_each_chunk_in(data, want, |_, c| {
        out.push(c);
        Ok::<(), DecodeError>(())
    })
    .map_err(|(_, e)| e)?;
    Ok(out)
}

/// Calls `f` with each chunk of an in-memory file image in turn (its index, the chunk), one
/// parsed at a time; the first error, the parser's or `f`'s, stops it, with the chunk's index.
/// (A chunk's size is at least its header: `parse_header` refuses smaller.)
pub fn for_each_chunk_in<E: From<DecodeError>>(
    data: &[u8],
    want: &dyn Fn(&TypeDesc) -> bool,
    mut f: impl FnMut(usize, Chunk) -> Result<(), E>,
) -> Result<(), (usize, E)> {
    let mut offset = 0usize;
    let mut n = 0usize;
    while offset < data.len() {
        let c = parse_chunk(&data[offset..], offset as u64, want).map_err(|e| (n, E::from(e)))?;
        offset += c.header.size as usize;
        f(n, c).map_err(|e| (n, e))?;
        n += 1;
    }
    Ok(())
}
