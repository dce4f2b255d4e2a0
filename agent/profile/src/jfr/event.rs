//! One event record being built: the type id, the fields in declared order, then the size in
//! front. Used by the writer for samples and by [`super::marks`] for the bridge's events.

use super::varint::{put_string, put_string_header, put_string_ref, put_varint, varint_len};

/// Builds one event record: `begin` reserves nothing; `finish` prepends the size.
pub struct EventBuf {
    body: Vec<u8>,
}

impl EventBuf {
    pub fn new(type_id: u64) -> EventBuf {
        let mut body = Vec::with_capacity(64);
        put_varint(&mut body, type_id);
        EventBuf { body }
    }

    /// Empties the buffer for a new event of `type_id`, keeping its memory (one buffer serves
    /// every sample of a chunk).
    pub fn restart(&mut self, type_id: u64) -> &mut Self {
        self.body.clear();
        put_varint(&mut self.body, type_id);
        self
    }

    pub fn long(&mut self, v: u64) -> &mut Self {
        put_varint(&mut self.body, v);
        self
    }

    pub fn string(&mut self, s: Option<&str>) -> &mut Self {
        put_string(&mut self.body, s);
        self
    }

    pub fn string_ref(&mut self, key: u64) -> &mut Self {
        put_string_ref(&mut self.body, key);
        self
    }

    /// The header of a (non-null) UTF-8 string of `len` bytes, as [`Self::string`] writes it,
    /// whose bytes [`Self::finish_with`] appends.
    pub fn string_header(&mut self, len: usize) -> &mut Self {
        put_string_header(&mut self.body, len);
        self
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.body.extend_from_slice(b);
        self
    }

    /// Appends the record (size, then body) to `out`. The size counts itself.
    pub fn finish(&self, out: &mut Vec<u8>) {
        self.finish_with(out, &[]);
    }

    /// [`Self::finish`] with `tail` as the body's last bytes, copied once, straight to `out`
    /// (a compiled blob's instructions do not pass through the buffer).
    pub fn finish_with(&self, out: &mut Vec<u8>, tail: &[u8]) {
        let body = self.body.len() + tail.len();
        let mut n = 1;
        while varint_len((body + n) as u64) > n {
            n += 1;
        }
        out.reserve(n + body);
        put_varint(out, (body + n) as u64);
        out.extend_from_slice(&self.body);
        out.extend_from_slice(tail);
    }
}
