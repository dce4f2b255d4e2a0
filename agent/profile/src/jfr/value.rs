//! Typed values of a parsed chunk, and views that resolve constant-pool references lazily.
//!
//! Events and pool entries are stored as read: a field in a constant pool is a [`Value::Ref`]
//! until someone looks at it through [`Chunk::resolve`] or an [`ObjectView`], so pools can be
//! read in any order and may refer to each other (or to themselves) without a resolution pass.

use super::metadata::{Metadata, TypeDesc};

pub use crate::hash::{IntHasher, IntMap};

/// One decoded value: 24 bytes (a chunk decodes to up to
/// [`super::parser::VALUES_PER_BYTE`] of them per byte), so structs hold a 32-bit type id and
/// every variable part is a boxed slice.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Byte(i8),
    Char(u16),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    String(Box<str>),
    Array(Box<[Value]>),
    Struct {
        type_id: u32,
        fields: Box<[Value]>,
    },
    /// Entry `key` of the constant pool of type `type_id` (key 0 with no entry means null).
    Ref {
        type_id: u64,
        key: u64,
    },
}

impl Value {
    /// Integral values as i64 (booleans as 0/1).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Bool(b) => Some(b as i64),
            Value::Byte(v) => Some(v as i64),
            Value::Char(v) => Some(v as i64),
            Value::Short(v) => Some(v as i64),
            Value::Int(v) => Some(v as i64),
            Value::Long(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Float(v) => Some(v as f64),
            Value::Double(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }
}

/// The fixed part of a chunk, from its 68-byte header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Absolute file offset of the chunk.
    pub file_offset: u64,
    pub major: u16,
    pub minor: u16,
    pub size: u64,
    /// Offsets relative to the chunk start.
    pub constant_pool_offset: u64,
    pub metadata_offset: u64,
    /// Wall clock at chunk start, ns since the epoch.
    pub start_nanos: u64,
    pub duration_nanos: u64,
    pub start_ticks: u64,
    pub ticks_per_second: u64,
    /// Bytes 64..68: file state (0 = finished) and flags (bit 0 compressed ints, bit 1 final).
    pub features: u32,
}

impl ChunkHeader {
    /// Converts a tick count (a duration) to nanoseconds.
    pub fn ticks_to_nanos(&self, ticks: u64) -> u64 {
        if self.ticks_per_second == 1_000_000_000 || self.ticks_per_second == 0 {
            ticks
        } else {
            (ticks as u128 * 1_000_000_000 / self.ticks_per_second as u128) as u64
        }
    }
}

/// One event as read: its type and field values (in metadata field order).
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub type_id: u64,
    /// Absolute file offset of the event record.
    pub offset: u64,
    pub fields: Box<[Value]>,
}

/// A parsed chunk: header, types, constant pools and the selected events.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    pub header: ChunkHeader,
    pub metadata: Metadata,
    /// type id -> key -> value.
    pub pools: IntMap<u64, IntMap<u64, Value>>,
    pub events: Vec<Event>,
}

/// Following a chain of references longer than this is treated as a cycle.
const MAX_REF_CHAIN: usize = 16;
static NULL: Value = Value::Null;

impl Chunk {
    /// Follows constant-pool references; a missing entry resolves to null.
    pub fn resolve<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..MAX_REF_CHAIN {
            match v {
                Value::Ref { type_id, key } => {
                    v = self.pools.get(type_id).and_then(|p| p.get(key)).unwrap_or(&NULL);
                }
                _ => return v,
            }
        }
        &NULL
    }

    pub fn event_type(&self, e: &Event) -> Option<&TypeDesc> {
        self.metadata.get(e.type_id)
    }

    /// A view of an event's fields by name.
    pub fn event_view<'a>(&'a self, e: &'a Event) -> Option<ObjectView<'a>> {
        Some(ObjectView { chunk: self, ty: self.event_type(e)?, fields: &e.fields })
    }

    /// Events whose type has the given name.
    pub fn events_named<'a>(&'a self, name: &str) -> impl Iterator<Item = ObjectView<'a>> + 'a {
        let id = self.metadata.by_name(name).map(|t| t.id);
        self.events.iter().filter(move |e| Some(e.type_id) == id).filter_map(move |e| self.event_view(e))
    }

    /// A view of a value that is (or refers to) a struct.
    pub fn object<'a>(&'a self, v: &'a Value) -> Option<ObjectView<'a>> {
        match self.resolve(v) {
            Value::Struct { type_id, fields } => {
                Some(ObjectView { chunk: self, ty: self.metadata.get(u64::from(*type_id))?, fields })
            }
            _ => None,
        }
    }

    /// A string value; a struct with a single field (a "simple type" such as `jdk.types.Symbol`)
    /// stands for that field.
    pub fn str_of<'a>(&'a self, v: &'a Value) -> Option<&'a str> {
        let mut v = self.resolve(v);
        for _ in 0..MAX_REF_CHAIN {
            match v {
                Value::String(s) => return Some(s),
                Value::Struct { fields, .. } if fields.len() == 1 => v = self.resolve(&fields[0]),
                _ => return None,
            }
        }
        None
    }

    /// An integral value; single-field structs stand for their field.
    pub fn i64_of(&self, v: &Value) -> Option<i64> {
        let mut v = self.resolve(v);
        for _ in 0..MAX_REF_CHAIN {
            match v {
                Value::Struct { fields, .. } if fields.len() == 1 => v = self.resolve(&fields[0]),
                _ => return v.as_i64(),
            }
        }
        None
    }
}

/// A struct (event or pool entry) with its type, for access by field name.
#[derive(Clone, Copy)]
pub struct ObjectView<'a> {
    pub chunk: &'a Chunk,
    pub ty: &'a TypeDesc,
    pub fields: &'a [Value],
}

impl<'a> ObjectView<'a> {
    pub fn type_name(&self) -> &'a str {
        &self.ty.name
    }

    /// The raw (unresolved) value of a field.
    pub fn raw(&self, name: &str) -> Option<&'a Value> {
        self.ty.field_index(name).and_then(|i| self.fields.get(i))
    }

    /// The resolved value of a field.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.raw(name).map(|v| self.chunk.resolve(v))
    }

    pub fn i64(&self, name: &str) -> Option<i64> {
        self.raw(name).and_then(|v| self.chunk.i64_of(v))
    }

    pub fn bool(&self, name: &str) -> Option<bool> {
        self.i64(name).map(|v| v != 0)
    }

    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.raw(name).and_then(|v| self.chunk.str_of(v))
    }

    pub fn object(&self, name: &str) -> Option<ObjectView<'a>> {
        self.raw(name).and_then(|v| self.chunk.object(v))
    }

    pub fn array(&self, name: &str) -> Option<&'a [Value]> {
        match self.get(name)? {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}
