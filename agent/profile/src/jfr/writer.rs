//! Writer: encodes one complete, self-contained JFR 2.0 chunk from a [`Recording`]'s metadata
//! and a batch of samples, and appends chunks to a file.
//!
//! Chunk layout: 68-byte header, `hpm.Config`, one `hpm.Drops` per reason, then for every
//! sample a `jdk.ExecutionSample` and an `hpm.Sample`, an `hpm.CompiledCode` per blob of
//! `Recording::code`, the bridge's and the JVM's events, then the constant-pool event, then the
//! metadata event last (JMC's parser stops reading events at the metadata event).

use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use super::event::EventBuf;
use super::marks::Mark;
use super::metadata::Element;
use super::parser::{CONSTANT_POOL_TYPE_ID, HEADER_SIZE, MAGIC, METADATA_TYPE_ID};
use super::pools::{Pools, TableKeys};
use super::schema::{self, *};
use super::varint::{put_i64, put_varint};
use crate::model::{Recording, Sample};
use crate::outfile::{OutputError, PartFile, Target};

/// Time span of a chunk. Ticks are CLOCK_MONOTONIC nanoseconds (ticks per second = 1e9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkTimes {
    pub start_ticks: u64,
    pub end_ticks: u64,
    /// Wall clock at `start_ticks`, nanoseconds since the Unix epoch.
    pub start_wall_ns: u64,
}

pub const TICKS_PER_SECOND: u64 = 1_000_000_000;
pub const MAJOR_VERSION: u16 = 2;
pub const MINOR_VERSION: u16 = 0;
/// Header flags (byte 67): bit 0 = integers are compressed.
pub const FLAG_COMPRESSED_INTS: u32 = 1;

/// Encodes one self-contained chunk: header, `hpm.Config`, `hpm.Drops` (cumulative counts
/// from `rec.drops`), a `jdk.ExecutionSample` and an `hpm.Sample` per sample, the constant
/// pools the samples need, and the metadata. `rec` supplies methods, threads, event and
/// counter metadata and the JVM events (`rec.events`, all written); its `samples` field is
/// not read.
/// `dataIndex` of a sample without one: the int -1.
const NO_INDEX: u64 = u32::MAX as u64;

pub fn encode_chunk(rec: &Recording, samples: &[Sample], chunk: ChunkTimes) -> Vec<u8> {
    encode_chunk_with_marks(rec, samples, &[], chunk)
}

/// [`encode_chunk`] plus the Java bridge's regions and phase markers (after the samples).
pub fn encode_chunk_with_marks(rec: &Recording, samples: &[Sample], marks: &[Mark], chunk: ChunkTimes) -> Vec<u8> {
    encode_chunk_keyed(rec, samples, marks, chunk, &mut TableKeys::default())
}

/// [`encode_chunk_with_marks`] numbering the method table's strings with `keys`, kept from
/// the chunks before: the same keys as a new one would give (they depend only on the table),
/// without scanning the table again.
pub fn encode_chunk_keyed(
    rec: &Recording,
    samples: &[Sample],
    marks: &[Mark],
    chunk: ChunkTimes,
    keys: &mut TableKeys,
) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_SIZE];
    out.reserve(samples.len() * 48 + 4096);
    let mut pools = Pools::new(rec);

    write_config(&mut out, rec, chunk.start_ticks);
    for (reason, count) in &rec.drops {
        let mut e = EventBuf::new(EVENT_HPM_DROPS);
        e.long(chunk.end_ticks).string(Some(&reason.name())).long(*count);
        e.finish(&mut out);
    }

    let mut e = EventBuf::new(EVENT_HPM_SAMPLE);
    for s in samples {
        let thread = pools.thread(s.thread);
        // A platform thread carries itself: no null for the JDK's tools to print as N/A.
        let carrier = s.carrier.map_or(thread, |c| pools.thread(c));
        let stack = pools.stack(s);
        // A sample standing for several (kernel periods counted) is written as that many
        // events, each with its share of the weight: JDK tools and JMC count events.
        for i in 0..s.repeat.max(1) {
            write_sample(&mut out, &mut e, &mut pools, rec, s, (thread, stack, carrier), i == 0);
        }
    }
    let mut hex = String::new();
    for c in &rec.code {
        hex.clear();
        crate::text::push_hex(&mut hex, &c.bytes);
        e.restart(EVENT_HPM_COMPILED_CODE);
        e.long(c.loaded_at).long(pools.method(c.method)).long(c.start).long(c.size).string_header(hex.len());
        e.finish_with(&mut out, hex.as_bytes());
    }
    super::marks::write_marks(&mut out, &mut pools, marks);
    super::jvmevents::write_jvm_events(&mut out, &mut pools, rec);

    // Constant pools: one checkpoint event, the only one of the chunk (delta 0).
    let cp_offset = out.len();
    let mut body = Vec::new();
    put_varint(&mut body, chunk.start_ticks);
    put_varint(&mut body, 0); // duration
    put_varint(&mut body, 0); // delta to the next (older) pool event: none
    body.push(0); // checkpoint flags
    pools.encode(&mut body, keys);
    EventBuf::new(CONSTANT_POOL_TYPE_ID).bytes(&body).finish(&mut out);

    // Metadata.
    let meta_offset = out.len();
    write_metadata(&mut out, &metadata_for(&rec.counters, &rec.counter_periods), chunk.start_ticks);

    let size = out.len() as u64;
    let mut h = Vec::with_capacity(HEADER_SIZE);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&MAJOR_VERSION.to_be_bytes());
    h.extend_from_slice(&MINOR_VERSION.to_be_bytes());
    h.extend_from_slice(&size.to_be_bytes());
    h.extend_from_slice(&(cp_offset as u64).to_be_bytes());
    h.extend_from_slice(&(meta_offset as u64).to_be_bytes());
    h.extend_from_slice(&chunk.start_wall_ns.to_be_bytes());
    h.extend_from_slice(&chunk.end_ticks.saturating_sub(chunk.start_ticks).to_be_bytes());
    h.extend_from_slice(&chunk.start_ticks.to_be_bytes());
    h.extend_from_slice(&TICKS_PER_SECOND.to_be_bytes());
    // File state 0 (finished) in byte 64, flags in byte 67.
    h.extend_from_slice(&FLAG_COMPRESSED_INTS.to_be_bytes());
    debug_assert_eq!(h.len(), HEADER_SIZE);
    out[..HEADER_SIZE].copy_from_slice(&h);
    out
}

/// The events of one of a sample's [`Sample::repeat`]s (`first` of them or not): the JDK's
/// execution or wall-clock sample, then `hpm.Sample` with the weight of one.
fn write_sample(
    out: &mut Vec<u8>,
    e: &mut EventBuf,
    pools: &mut Pools,
    rec: &Recording,
    s: &Sample,
    (thread, stack, carrier): (u64, u64, u64),
    first: bool,
) {
    if s.state.is_some() {
        // A wall-clock sample (any state): not a CPU sample for JMC's method profiling.
        e.restart(EVENT_WALL_CLOCK_SAMPLE);
        e.long(s.time).long(thread).long(stack).long(pools.state(s.state)).long(1);
        e.finish(out);
    } else if !s.is_counter_sample() {
        // A counter's own sample is no CPU sample either: hpm.Sample alone carries it.
        e.restart(EVENT_EXECUTION_SAMPLE);
        e.long(s.time).long(thread).long(stack).long(pools.runnable_state());
        e.finish(out);
    }

    e.restart(EVENT_HPM_SAMPLE);
    e.long(s.time).long(thread).long(stack);
    e.string_ref(pools.event_name()).long(s.weight_each()).string_ref(pools.component(s.component));
    e.long(s.data_addr.unwrap_or(0)).long(s.ip);
    e.string(Some(s.state.and_then(|i| rec.states.get(i as usize)).map_or("", String::as_str)));
    match s.data.as_deref() {
        Some(d) => {
            e.string(Some(d.space.name())).string(Some(d.class.as_deref().unwrap_or("")));
            e.string(Some(d.field.as_deref().unwrap_or(""))).long(d.offset);
            // An int: -1 (none) is five bytes as a varint, where a long's would be ten.
            e.long(d.index.map_or(NO_INDEX, |i| i.min(i32::MAX as u64)));
            e.string(Some(d.source.as_deref().unwrap_or(""))).long(d.latency);
        }
        None => {
            e.string(Some("")).string(Some("")).string(Some("")).long(0).long(NO_INDEX);
            e.string(Some("")).long(0);
        }
    }
    e.long(carrier);
    // The counters are the sum over the repeats: carried by the first.
    for i in 0..rec.counters.len() {
        e.long(if first { s.counters.get(i).copied().unwrap_or(0) } else { 0 });
    }
    e.finish(out);
}

fn write_config(out: &mut Vec<u8>, rec: &Recording, ticks: u64) {
    let ev = &rec.event;
    let mut e = EventBuf::new(EVENT_HPM_CONFIG);
    e.long(ticks)
        .string(Some(&ev.name))
        .string(Some(&ev.requested))
        .string(Some(ev.fallback.as_deref().unwrap_or("")))
        .long(ev.period)
        .string(Some(ev.unit.name()))
        .string(Some(&rec.counters.join(",")))
        .string(Some(ev.sampler.name()))
        .string(Some(&rec.jvm))
        .long(rec.pid as u64)
        .string(Some(ev.kernel.name()))
        .long(ev.alloc_interval)
        .long(rec.threads_seen());
    let v = &rec.virtual_live;
    e.long(v.thread_ns).long(v.span_ns).long(v.max).long(v.mounted_ns);
    e.finish(out);
}

/// A metadata event's content after its start time and duration: the id, then the tree.
struct EncodedMetadata {
    counters: Vec<String>,
    periods: Vec<u64>,
    id: Vec<u8>,
    body: Vec<u8>,
}

/// The metadata of chunks whose samples carry `counters`, encoded once per list of counters
/// (the last one kept): it is the same for every chunk of a session, and building and encoding
/// the tree took a quarter of writing a one-second chunk.
fn metadata_for(counters: &[String], periods: &[u64]) -> Arc<EncodedMetadata> {
    static LAST: Mutex<Option<Arc<EncodedMetadata>>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(m) = last.as_ref().filter(|m| m.counters == counters && m.periods == periods) {
        return m.clone();
    }
    let tree = schema::metadata_tree(&schema::all_types(counters, periods));
    let m = Arc::new(encode_metadata(&tree, counters, periods));
    *last = Some(m.clone());
    m
}

fn encode_metadata(tree: &Element, counters: &[String], periods: &[u64]) -> EncodedMetadata {
    let mut body = Vec::new();
    tree.encode_tree(&mut body);
    // The metadata id changes whenever the content does, so readers that cache the previous
    // chunk's types (the JDK does) never reuse stale ones.
    let id = fnv64(&body) >> 1;
    let mut id_bytes = Vec::new();
    put_i64(&mut id_bytes, id as i64);
    EncodedMetadata { counters: counters.to_vec(), periods: periods.to_vec(), id: id_bytes, body }
}

fn write_metadata(out: &mut Vec<u8>, m: &EncodedMetadata, ticks: u64) {
    let mut e = EventBuf::new(METADATA_TYPE_ID);
    e.long(ticks).long(0).bytes(&m.id).bytes(&m.body).finish(out);
}

fn fnv64(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Appends chunks to a new `.jfr` file, one `write_all` per chunk, so the file is readable after
/// every chunk even if the process dies later. The file grows as `NAME.part` (created with
/// [`crate::outfile`]'s rules: new, exclusive, no link followed) and [`Self::finish`] renames
/// it over `NAME`; a killed process leaves `NAME.part`, complete up to its last chunk.
///
/// A failed write (a full disk, say) cuts the file back to its last complete chunk and stops the
/// writer: the error is returned once, later chunks are dropped, and `finish` still publishes
/// the chunks written before.
pub struct JfrFileWriter {
    part: PartFile,
    chunks: u64,
    bytes: u64,
    /// Why writing stopped, once it did.
    stopped: Option<String>,
    /// [`Self::finish`] was called: later chunks are not written.
    finished: bool,
    /// Unit tests: the next write stores half the chunk, then fails with ENOSPC.
    #[cfg(test)]
    fail_next: bool,
}

impl JfrFileWriter {
    /// Checks `path` and creates `path.part` (see [`crate::outfile::Target::check`]).
    pub fn create(path: &Path) -> Result<JfrFileWriter, OutputError> {
        JfrFileWriter::from_target(Target::check(path)?)
    }

    /// Creates the `.part` file of an already checked target.
    pub fn from_target(target: Target) -> Result<JfrFileWriter, OutputError> {
        Ok(JfrFileWriter {
            part: target.create_part()?,
            chunks: 0,
            bytes: 0,
            stopped: None,
            finished: false,
            #[cfg(test)]
            fail_next: false,
        })
    }

    /// Encodes and appends one chunk.
    pub fn write_chunk(&mut self, rec: &Recording, samples: &[Sample], chunk: ChunkTimes) -> io::Result<()> {
        let data = encode_chunk(rec, samples, chunk);
        self.write_encoded(&data)
    }

    /// Appends an already encoded chunk (e.g. encoded off the sampling thread). After a failure
    /// the file is cut back to its last complete chunk and every later call does nothing.
    pub fn write_encoded(&mut self, chunk: &[u8]) -> io::Result<()> {
        if self.stopped.is_some() || self.finished {
            return Ok(());
        }
        let result = self.write_all(chunk);
        let file = self.part.file();
        if let Err(e) = result {
            // A partial chunk would make the file end in garbage: cut it off.
            let cut = file.set_len(self.bytes).and_then(|_| file.seek(SeekFrom::Start(self.bytes)).map(|_| ()));
            let kept = if cut.is_ok() { "complete chunks" } else { "chunks (the last one partial)" };
            let why = format!(
                "stopped writing {} after {} chunks ({e}); {} holds the {kept} so far",
                self.part.path().display(),
                self.chunks,
                self.part.part_path().display()
            );
            self.stopped = Some(why.clone());
            return Err(io::Error::new(e.kind(), why));
        }
        self.chunks += 1;
        self.bytes += chunk.len() as u64;
        Ok(())
    }

    fn write_all(&mut self, chunk: &[u8]) -> io::Result<()> {
        #[cfg(test)]
        if std::mem::take(&mut self.fail_next) {
            self.part.file().write_all(&chunk[..chunk.len() / 2])?;
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        self.part.file().write_all(chunk)
    }

    #[cfg(test)]
    pub(crate) fn fail_next_write_for_test(&mut self) {
        self.fail_next = true;
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.part.file().flush()
    }

    /// Forces the data to disk (`fsync`).
    pub fn sync(&mut self) -> io::Result<()> {
        self.part.file().sync_data()
    }

    /// The final path (the data is in [`Self::part_path`] until [`Self::finish`]).
    pub fn path(&self) -> &Path {
        self.part.path()
    }

    /// The file being written.
    pub fn part_path(&self) -> PathBuf {
        self.part.part_path()
    }

    /// Why writing stopped, if it did.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Renames `NAME.part` over `NAME` (the chunks written before any failure), if that name
    /// still holds the file created (see [`PartFile::commit`]). The writer takes no chunk after
    /// and still copies what it wrote ([`Self::copy_to`]).
    pub fn finish(&mut self) -> Result<(), OutputError> {
        self.finished = true;
        self.part.commit()
    }

    /// Copies the chunks written so far to `out`, read back through the descriptor the file was
    /// created with (never by its name, which whoever can write the directory could point
    /// elsewhere), through a bounded buffer.
    pub fn copy_to(&self, out: &mut dyn Write) -> io::Result<()> {
        crate::outfile::copy_at(self.part.created(), 0, self.bytes, out)
    }

    /// Chunks written through this writer.
    pub fn chunks_written(&self) -> u64 {
        self.chunks
    }

    /// Current file size as far as this writer knows.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}
