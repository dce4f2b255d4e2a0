//! Byte-level encoding of JFR 2.x: compressed ("varint") integers, the string encodings, and
//! big-endian raw fields of the chunk header.
//!
//! A compressed integer stores 7 bits per byte, least significant group first, with the high
//! bit set on every byte but the last; the ninth byte, if reached, carries a full 8 bits. Every
//! `short`, `char`, `int` and `long` in an event, constant pool or metadata record is written
//! this way; `byte` and `boolean` are one raw byte, `float`/`double` raw big-endian.

use std::fmt;

/// String encodings (first byte of every string value).
pub const STRING_NULL: u8 = 0;
pub const STRING_EMPTY: u8 = 1;
pub const STRING_CONSTANT_POOL: u8 = 2;
pub const STRING_UTF8: u8 = 3;
pub const STRING_CHAR_ARRAY: u8 = 4;
pub const STRING_LATIN1: u8 = 5;

/// Appends `v` as a compressed integer.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Number of bytes `put_varint(v)` writes.
pub fn varint_len(v: u64) -> usize {
    let mut n = 1;
    let mut v = v >> 7;
    while v != 0 && n < 9 {
        n += 1;
        v >>= 7;
    }
    n
}

/// Appends a Java `int`: compressed, as its 32-bit two's complement pattern (so `-1` takes five
/// bytes, which both the JDK and JMC readers truncate back to `-1`).
pub fn put_i32(out: &mut Vec<u8>, v: i32) {
    put_varint(out, v as u32 as u64);
}

/// Appends a Java `long`: compressed, two's complement.
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_varint(out, v as u64);
}

pub fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(v as u8);
}

/// Appends a string value: null, empty, or UTF-8 bytes with a compressed length.
pub fn put_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(STRING_NULL),
        Some(s) => {
            put_string_header(out, s.len());
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// What [`put_string`] writes before the bytes of a (non-null) string of `len` bytes.
pub fn put_string_header(out: &mut Vec<u8>, len: usize) {
    if len == 0 {
        out.push(STRING_EMPTY);
    } else {
        out.push(STRING_UTF8);
        put_varint(out, len as u64);
    }
}

/// Appends a string that refers to entry `key` of the `java.lang.String` constant pool.
pub fn put_string_ref(out: &mut Vec<u8>, key: u64) {
    out.push(STRING_CONSTANT_POOL);
    put_varint(out, key);
}

/// A decoding error at an absolute byte offset of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: u64,
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

pub type DResult<T> = Result<T, DecodeError>;

/// A decoded string: inline text, or a reference into the string constant pool.
#[derive(Clone, Debug, PartialEq)]
pub enum RawString {
    Null,
    Text(String),
    PoolRef(u64),
}

/// A bounds-checked cursor over a byte slice. Offsets in errors are absolute: `base` is the
/// file offset of `data[0]`.
#[derive(Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], base: u64) -> Reader<'a> {
        Reader { data, pos: 0, base }
    }

    /// Absolute file offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Position relative to the start of the slice.
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn seek(&mut self, pos: usize) -> DResult<()> {
        if pos > self.data.len() {
            return Err(self.error_at(
                self.base + pos as u64,
                format!("position is past the end of the data ({} bytes)", self.data.len()),
            ));
        }
        self.pos = pos;
        Ok(())
    }

    pub fn error(&self, message: impl Into<String>) -> DecodeError {
        DecodeError { offset: self.offset(), message: message.into() }
    }

    fn error_at(&self, offset: u64, message: impl Into<String>) -> DecodeError {
        DecodeError { offset, message: message.into() }
    }

    fn eof(&self, what: &str) -> DecodeError {
        self.error(format!("unexpected end of data while reading {what}"))
    }

    pub fn bytes(&mut self, n: usize) -> DResult<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.eof(&format!("{n} bytes")));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> DResult<u8> {
        let b = *self.data.get(self.pos).ok_or_else(|| self.eof("a byte"))?;
        self.pos += 1;
        Ok(b)
    }

    pub fn be_u16(&mut self) -> DResult<u16> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn be_u32(&mut self) -> DResult<u32> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes(b.try_into().unwrap()))
    }

    pub fn be_u64(&mut self) -> DResult<u64> {
        let b = self.bytes(8)?;
        Ok(u64::from_be_bytes(b.try_into().unwrap()))
    }

    pub fn varint(&mut self) -> DResult<u64> {
        let mut v = 0u64;
        for i in 0..8 {
            let b = self.u8().map_err(|_| self.eof("a compressed integer"))?;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        let b = self.u8().map_err(|_| self.eof("a compressed integer"))?;
        Ok(v | ((b as u64) << 56))
    }

    /// A compressed Java `int` (the low 32 bits of the decoded value, as Java does).
    pub fn varint_i32(&mut self) -> DResult<i32> {
        Ok(self.varint()? as u32 as i32)
    }

    /// A compressed count that must be plausible: at most `remaining bytes / min_item_size`
    /// items can follow, which keeps garbage from triggering huge allocations.
    pub fn count(&mut self, what: &str, min_item_size: usize) -> DResult<usize> {
        let at = self.offset();
        let n = self.varint()? as i64 as i32;
        if n < 0 {
            return Err(self.error_at(at, format!("negative {what} count {n}")));
        }
        let n = n as usize;
        if n.saturating_mul(min_item_size.max(1)) > self.remaining() {
            return Err(self.error_at(at, format!("{what} count {n} exceeds the {} bytes left", self.remaining())));
        }
        Ok(n)
    }

    pub fn bool(&mut self) -> DResult<bool> {
        Ok(self.u8()? != 0)
    }

    pub fn f32(&mut self) -> DResult<f32> {
        Ok(f32::from_bits(self.be_u32()?))
    }

    pub fn f64(&mut self) -> DResult<f64> {
        Ok(f64::from_bits(self.be_u64()?))
    }

    /// A string value in any of the JFR encodings.
    pub fn string(&mut self) -> DResult<RawString> {
        let at = self.offset();
        match self.u8()? {
            STRING_NULL => Ok(RawString::Null),
            STRING_EMPTY => Ok(RawString::Text(String::new())),
            STRING_CONSTANT_POOL => Ok(RawString::PoolRef(self.varint()?)),
            STRING_UTF8 => {
                let n = self.count("string byte", 1)?;
                let b = self.bytes(n)?;
                Ok(RawString::Text(String::from_utf8_lossy(b).into_owned()))
            }
            STRING_LATIN1 => {
                let n = self.count("string byte", 1)?;
                let b = self.bytes(n)?;
                Ok(RawString::Text(b.iter().map(|&c| c as char).collect()))
            }
            STRING_CHAR_ARRAY => {
                let n = self.count("string char", 1)?;
                let mut units = Vec::with_capacity(n);
                for _ in 0..n {
                    units.push(self.varint()? as u16);
                }
                Ok(RawString::Text(String::from_utf16_lossy(&units)))
            }
            e => Err(self.error_at(at, format!("unknown string encoding {e}"))),
        }
    }

    /// A string that must be inline (metadata string table).
    pub fn inline_string(&mut self) -> DResult<String> {
        let at = self.offset();
        match self.string()? {
            RawString::Null => Ok(String::new()),
            RawString::Text(s) => Ok(s),
            RawString::PoolRef(_) => Err(self.error_at(at, "constant-pool string where an inline string is required")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_length() {
        let mut values = vec![0u64, 1, 0x7f, 0x80, 0x3fff, 0x4000, u32::MAX as u64, u64::MAX];
        for shift in 0..64 {
            values.push(1u64 << shift);
            values.push((1u64 << shift) - 1);
        }
        for v in values {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v), "length of {v:#x}");
            assert!(buf.len() <= 9);
            let mut r = Reader::new(&buf, 0);
            assert_eq!(r.varint().unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn known_encodings() {
        let mut b = Vec::new();
        put_varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02]);
        b.clear();
        put_i32(&mut b, -1);
        assert_eq!(b, [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(Reader::new(&b, 0).varint_i32().unwrap(), -1);
        b.clear();
        put_i64(&mut b, -1);
        assert_eq!(b.len(), 9);
        assert_eq!(Reader::new(&b, 0).varint().unwrap() as i64, -1);
    }

    #[test]
    fn strings_round_trip() {
        let mut b = Vec::new();
        put_string(&mut b, None);
        put_string(&mut b, Some(""));
        put_string(&mut b, Some("héllo"));
        put_string_ref(&mut b, 42);
        let mut r = Reader::new(&b, 0);
        assert_eq!(r.string().unwrap(), RawString::Null);
        assert_eq!(r.string().unwrap(), RawString::Text(String::new()));
        assert_eq!(r.string().unwrap(), RawString::Text("héllo".into()));
        assert_eq!(r.string().unwrap(), RawString::PoolRef(42));
    }

    #[test]
    fn other_string_encodings_decode() {
        // Latin-1 "é", char array "ab".
        let b = [STRING_LATIN1, 1, 0xe9, STRING_CHAR_ARRAY, 2, b'a', b'b'];
        let mut r = Reader::new(&b, 0);
        assert_eq!(r.string().unwrap(), RawString::Text("é".into()));
        assert_eq!(r.string().unwrap(), RawString::Text("ab".into()));
    }

    #[test]
    fn truncation_and_garbage_are_errors_with_offsets() {
        let mut r = Reader::new(&[0x80, 0x80], 100);
        let e = r.varint().unwrap_err();
        assert_eq!(e.offset, 102);
        let mut r = Reader::new(&[STRING_UTF8, 10, b'a'], 0);
        assert!(r.string().is_err());
        let mut r = Reader::new(&[9], 7);
        assert_eq!(r.string().unwrap_err().offset, 7);
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x07], 0);
        assert!(r.count("thing", 1).is_err());
    }
}
