//! JFR chunks kept in memory for a session that writes no JFR file, so that `dump,file=X.jfr`
//! (and a pprof or JSON dump, read back from them) can still be made: at most a bound of
//! bytes, the oldest chunks dropped first and counted.
//!
//! The bound counts what the chunks hold of the heap, not their length: a chunk is encoded
//! into a growing buffer whose capacity is up to twice its length, and a bound on lengths
//! held up to twice the bound (ecj at 1 ms with a collapsed output alone: 249 MB of agent heap
//! at five minutes, 189 MB with the bound counted so; docs/benchmarks.md, "ecj over longer
//! sessions").

use std::collections::VecDeque;

/// Encoded chunks, oldest first, within `limit` bytes of heap.
pub struct ChunkMemory {
    chunks: VecDeque<Vec<u8>>,
    /// Heap bytes the chunks hold (their capacities).
    held: usize,
    limit: usize,
    dropped: u64,
}

impl ChunkMemory {
    /// Keeps at most `limit` bytes of chunks (and always the newest, whatever its size).
    pub fn new(limit: usize) -> ChunkMemory {
        ChunkMemory { chunks: VecDeque::new(), held: 0, limit, dropped: 0 }
    }

    /// Keeps `chunk` (its buffer trimmed to its length), dropping the oldest past the limit.
    pub fn push(&mut self, mut chunk: Vec<u8>) {
        chunk.shrink_to_fit();
        self.held += chunk.capacity();
        self.chunks.push_back(chunk);
        while self.held > self.limit && self.chunks.len() > 1 {
            if let Some(old) = self.chunks.pop_front() {
                self.held -= old.capacity();
                self.dropped += 1;
            }
        }
    }

    /// Chunks dropped for the limit so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Heap bytes held.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The chunks kept, oldest first, as one JFR file.
    pub fn file(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.chunks.iter().map(Vec::len).sum());
        self.chunks.iter().for_each(|c| out.extend_from_slice(c));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of `len` bytes `b` in a buffer grown to `capacity`.
    fn chunk(len: usize, capacity: usize, b: u8) -> Vec<u8> {
        let mut c = Vec::with_capacity(capacity);
        c.resize(len, b);
        c
    }

    #[test]
    fn the_bound_counts_the_heap_the_chunks_hold() {
        let mut m = ChunkMemory::new(1000);
        // Buffers at twice their length: counted by length, ten of them were within the bound
        // while holding twice it.
        for k in 0..10u8 {
            m.push(chunk(100, 200, k));
            assert!(m.held() <= m.limit(), "{} bytes held", m.held());
            assert_eq!(m.held(), m.chunks.iter().map(Vec::capacity).sum::<usize>());
        }
        assert_eq!(m.dropped(), 0, "trimmed to their length, all ten fit");
        m.push(chunk(300, 300, 10));
        assert_eq!(m.dropped(), 3);
        let file = m.file();
        assert_eq!(file.len(), 7 * 100 + 300);
        assert_eq!((file[0], file[699], file[700]), (3, 9, 10), "oldest first, the oldest dropped");
    }

    #[test]
    fn the_newest_chunk_stays_whatever_its_size() {
        let mut m = ChunkMemory::new(100);
        m.push(chunk(50, 50, 1));
        m.push(chunk(500, 500, 2));
        assert_eq!((m.dropped(), m.file().len()), (1, 500));
        m.push(chunk(10, 10, 3));
        assert_eq!((m.dropped(), m.file()), (2, vec![3; 10]));
    }
}
