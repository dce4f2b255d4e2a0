//! The request's `ProfilesDictionary` as it is built: each table interned (a value is held
//! once, found by its hash), entry 0 of each the zero value the format requires.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, ProfilesDictionary, Stack,
};
use smallvec::SmallVec;

use crate::hash::{FastBuild, IntMap};

/// Heap bytes a table entry holds beside its own size (for [`Interned::approx_bytes`]).
pub(super) trait Heap {
    fn heap(&self) -> usize;
}

impl Heap for String {
    fn heap(&self) -> usize {
        self.len()
    }
}

impl Heap for Box<[i32]> {
    fn heap(&self) -> usize {
        self.len() * 4
    }
}

/// Distinct values by index, found by their hash (equal hashes compared in full).
pub(super) struct Interned<T> {
    items: Vec<T>,
    index: IntMap<u64, SmallVec<[u32; 1]>>,
    build: FastBuild,
    heap: usize,
}

impl<T: Hash + Eq + Heap> Interned<T> {
    /// A table holding `zero` at index 0; `findable`: a value equal to it gets index 0 (else
    /// an index of its own, so that 0 keeps meaning "none" where it is referenced).
    pub(super) fn new(zero: T, findable: bool) -> Self {
        let mut t = Interned { items: Vec::new(), index: IntMap::default(), build: FastBuild::default(), heap: 0 };
        if findable {
            t.id(zero);
        } else {
            t.heap += zero.heap();
            t.items.push(zero);
        }
        t
    }

    /// The index of `v`, added if new.
    pub(super) fn id(&mut self, v: T) -> i32 {
        let h = self.build.hash_one(&v);
        match self.find(h, &v) {
            Some(i) => i,
            None => self.push(h, v),
        }
    }

    /// The index of the value `v` borrows as, made with `make` if new (no copy when known).
    pub(super) fn id_of<Q>(&mut self, v: &Q, make: impl FnOnce() -> T) -> i32
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let h = self.build.hash_one(v);
        match self.find(h, v) {
            Some(i) => i,
            None => self.push(h, make()),
        }
    }

    fn find<Q>(&self, h: u64, v: &Q) -> Option<i32>
    where
        T: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let same = self.index.get(&h)?;
        same.iter().find(|&&i| self.items[i as usize].borrow() == v).map(|&i| i as i32)
    }

    fn push(&mut self, h: u64, item: T) -> i32 {
        let i = self.items.len() as u32;
        self.heap += item.heap();
        self.items.push(item);
        self.index.entry(h).or_default().push(i);
        i as i32
    }

    pub(super) fn get(&self, i: u32) -> &T {
        &self.items[i as usize]
    }

    /// Memory held: the entries, what they point at, and the index.
    pub(super) fn approx_bytes(&self) -> usize {
        self.items.len() * (std::mem::size_of::<T>() + 24) + self.heap
    }

    fn into_items(self) -> Vec<T> {
        self.items
    }
}

/// A function: its Java name, its JVM name, its source file (string indices).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct FuncKey {
    pub name: i32,
    pub system_name: i32,
    pub file: i32,
}

/// A location: one line of one function, with its frame type attribute (0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct LocKey {
    pub function: i32,
    pub line: i64,
    pub frame_type: i32,
}

/// An attribute's value (the zero attribute has none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) enum AttrValue {
    #[default]
    None,
    Str(Box<str>),
    Int(i64),
}

/// An attribute: its key (a string index) and value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct AttrKey {
    pub key: i32,
    pub value: AttrValue,
}

impl Heap for FuncKey {
    fn heap(&self) -> usize {
        0
    }
}

impl Heap for LocKey {
    fn heap(&self) -> usize {
        0
    }
}

impl Heap for AttrKey {
    fn heap(&self) -> usize {
        match &self.value {
            AttrValue::Str(s) => s.len(),
            _ => 0,
        }
    }
}

/// The dictionary's tables. Mappings and links are not used: theirs hold the zero value only.
pub(super) struct Dict {
    pub strings: Interned<String>,
    pub functions: Interned<FuncKey>,
    pub locations: Interned<LocKey>,
    pub stacks: Interned<Box<[i32]>>,
    pub attributes: Interned<AttrKey>,
}

impl Default for Dict {
    fn default() -> Self {
        Dict {
            strings: Interned::new(String::new(), true),
            functions: Interned::new(FuncKey::default(), true),
            locations: Interned::new(LocKey::default(), false),
            stacks: Interned::new(Box::default(), true),
            attributes: Interned::new(AttrKey::default(), true),
        }
    }
}

impl Dict {
    pub(super) fn string(&mut self, s: &str) -> i32 {
        self.strings.id_of(s, || s.to_string())
    }

    /// The index of attribute `key` = `value`.
    pub(super) fn attribute(&mut self, key: &str, value: AttrValue) -> i32 {
        let key = self.string(key);
        self.attributes.id(AttrKey { key, value })
    }

    pub(super) fn approx_bytes(&self) -> usize {
        self.strings.approx_bytes()
            + self.functions.approx_bytes()
            + self.locations.approx_bytes()
            + self.stacks.approx_bytes()
            + self.attributes.approx_bytes()
    }

    /// The tables as the request carries them.
    pub(super) fn into_proto(self) -> ProfilesDictionary {
        ProfilesDictionary {
            mapping_table: vec![Mapping::default()],
            location_table: self
                .locations
                .into_items()
                .into_iter()
                .enumerate()
                .map(|(i, l)| match i {
                    0 => Location::default(),
                    _ => Location {
                        mapping_index: 0,
                        address: 0,
                        lines: vec![Line { function_index: l.function, line: l.line, column: 0 }],
                        attribute_indices: if l.frame_type == 0 { Vec::new() } else { vec![l.frame_type] },
                    },
                })
                .collect(),
            function_table: self
                .functions
                .into_items()
                .into_iter()
                .map(|f| Function {
                    name_strindex: f.name,
                    system_name_strindex: f.system_name,
                    filename_strindex: f.file,
                    start_line: 0,
                })
                .collect(),
            link_table: vec![Link::default()],
            string_table: self.strings.into_items(),
            attribute_table: self
                .attributes
                .into_items()
                .into_iter()
                .map(|a| KeyValueAndUnit {
                    key_strindex: a.key,
                    value: match a.value {
                        AttrValue::None => None,
                        AttrValue::Str(s) => Some(AnyValue { value: Some(any_value::Value::StringValue(s.into())) }),
                        AttrValue::Int(n) => Some(AnyValue { value: Some(any_value::Value::IntValue(n)) }),
                    },
                    unit_strindex: 0,
                })
                .collect(),
            stack_table: self
                .stacks
                .into_items()
                .into_iter()
                .map(|s| Stack { location_indices: s.into_vec() })
                .collect(),
        }
    }
}
