//! The metadata event: a string table plus an element tree (`root` > `metadata` > `class` >
//! `field`/`annotation`/`setting`, and `root` > `region`) that declares every type of a chunk.
//!
//! This module holds the generic tree (read and written the same way), and the type model the
//! reader derives from it: [`TypeDesc`]s with their [`FieldDesc`]s and annotations.
//!
//! Every string of the tree is an index into the metadata event's string table, and one
//! string may be named by any number of elements: the tree and the type model share the
//! table's strings ([`Arc<str>`]) rather than copy them, so a long string named many times
//! costs a pointer per naming, not its length.

use std::collections::HashMap;
use std::sync::Arc;

use super::varint::{put_string, put_varint, DResult, Reader};
use crate::hash::IntMap;

/// Nesting deeper than this in a metadata tree or in a value is treated as corrupt data.
pub const MAX_DEPTH: usize = 64;

/// One element of the metadata tree, e.g. `<field name="startTime" class="5"/>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Element {
    pub name: Arc<str>,
    pub attributes: Vec<(Arc<str>, Arc<str>)>,
    pub children: Vec<Element>,
}

impl Element {
    pub fn new(name: &str) -> Element {
        Element { name: name.into(), ..Default::default() }
    }

    /// Builder: adds an attribute.
    pub fn attr(mut self, key: &str, value: impl ToString) -> Element {
        self.attributes.push((key.into(), value.to_string().into()));
        self
    }

    /// Builder: adds a child.
    pub fn child(mut self, e: Element) -> Element {
        self.children.push(e);
        self
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.shared(key).map(|v| &**v)
    }

    /// The value of attribute `key`, shared.
    pub fn shared(&self, key: &str) -> Option<&Arc<str>> {
        self.attributes.iter().find(|(k, _)| &**k == key).map(|(_, v)| v)
    }

    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| &*c.name == name)
    }

    /// Appends the string table and the tree: the body of a metadata event after its id field.
    pub fn encode_tree(&self, out: &mut Vec<u8>) {
        let mut strings: Vec<&str> = Vec::new();
        let mut index: HashMap<&str, u64> = HashMap::new();
        self.collect_strings(&mut strings, &mut index);
        put_varint(out, strings.len() as u64);
        for s in &strings {
            put_string(out, Some(s));
        }
        self.encode_element(out, &index);
    }

    fn collect_strings<'a>(&'a self, strings: &mut Vec<&'a str>, index: &mut HashMap<&'a str, u64>) {
        let mut add = |s: &'a str| {
            index.entry(s).or_insert_with(|| {
                strings.push(s);
                strings.len() as u64 - 1
            });
        };
        add(&self.name);
        for (k, v) in &self.attributes {
            add(k);
            add(v);
        }
        for c in &self.children {
            c.collect_strings(strings, index);
        }
    }

    fn encode_element(&self, out: &mut Vec<u8>, index: &HashMap<&str, u64>) {
        put_varint(out, index[&*self.name]);
        put_varint(out, self.attributes.len() as u64);
        for (k, v) in &self.attributes {
            put_varint(out, index[&**k]);
            put_varint(out, index[&**v]);
        }
        put_varint(out, self.children.len() as u64);
        for c in &self.children {
            c.encode_element(out, index);
        }
    }

    /// The tree as indented XML-like text (for debugging and `hpm` diagnostics).
    pub fn to_xml(&self) -> String {
        let mut out = String::new();
        self.xml_into(&mut out, 0);
        out
    }

    fn xml_into(&self, out: &mut String, indent: usize) {
        out.push_str(&"  ".repeat(indent));
        out.push('<');
        out.push_str(&self.name);
        for (k, v) in &self.attributes {
            out.push_str(&format!(" {k}=\"{v}\""));
        }
        if self.children.is_empty() {
            out.push_str("/>\n");
            return;
        }
        out.push_str(">\n");
        for c in &self.children {
            c.xml_into(out, indent + 1);
        }
        out.push_str(&"  ".repeat(indent));
        out.push_str(&format!("</{}>\n", self.name));
    }

    /// Reads a string table and element tree written by [`Element::encode_tree`]. The
    /// elements share the table's strings.
    pub fn decode_tree(r: &mut Reader) -> DResult<Element> {
        let n = r.count("metadata string", 1)?;
        let mut strings = Vec::with_capacity(n);
        // Empty strings share one allocation (an `Arc` has one even when empty).
        let empty: Arc<str> = Arc::from("");
        for _ in 0..n {
            let s = r.inline_string()?;
            strings.push(if s.is_empty() { empty.clone() } else { s.into() });
        }
        decode_element(r, &strings, 0)
    }
}

fn decode_element(r: &mut Reader, strings: &[Arc<str>], depth: usize) -> DResult<Element> {
    if depth > MAX_DEPTH {
        return Err(r.error("metadata elements nested too deeply"));
    }
    let string = |r: &mut Reader| -> DResult<Arc<str>> {
        let at = r.offset();
        let i = r.varint()?;
        strings.get(i as usize).cloned().ok_or_else(|| super::varint::DecodeError {
            offset: at,
            message: format!("metadata string index {i} out of range ({} strings)", strings.len()),
        })
    };
    let mut e = Element { name: string(r)?, ..Default::default() };
    let na = r.count("metadata attribute", 2)?;
    for _ in 0..na {
        let k = string(r)?;
        let v = string(r)?;
        e.attributes.push((k, v));
    }
    let nc = r.count("metadata child element", 3)?;
    for _ in 0..nc {
        e.children.push(decode_element(r, strings, depth + 1)?);
    }
    Ok(e)
}

/// An annotation on a type or field: the annotation type's id and its attribute values
/// (`value`, or `value-0`, `value-1`... for arrays).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotationDesc {
    pub type_id: u64,
    pub values: Vec<(Arc<str>, Arc<str>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    pub name: Arc<str>,
    pub type_id: u64,
    /// Encoding of the field's type (filled in once all types are known).
    pub kind: Kind,
    pub array: bool,
    pub constant_pool: bool,
    pub annotations: Vec<AnnotationDesc>,
}

/// How values of a type are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Boolean,
    Byte,
    Char,
    Short,
    Int,
    Long,
    Float,
    Double,
    String,
    /// A struct: its fields in order (possibly none).
    Struct,
}

impl Kind {
    fn of(name: &str, has_fields: bool) -> Kind {
        if has_fields {
            return Kind::Struct;
        }
        match name {
            "boolean" => Kind::Boolean,
            "byte" => Kind::Byte,
            "char" => Kind::Char,
            "short" => Kind::Short,
            "int" => Kind::Int,
            "long" => Kind::Long,
            "float" => Kind::Float,
            "double" => Kind::Double,
            "java.lang.String" => Kind::String,
            _ => Kind::Struct,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDesc {
    pub id: u64,
    pub name: Arc<str>,
    pub super_type: Option<Arc<str>>,
    pub simple_type: bool,
    pub kind: Kind,
    pub fields: Vec<FieldDesc>,
    pub annotations: Vec<AnnotationDesc>,
}

impl TypeDesc {
    pub fn is_event(&self) -> bool {
        self.super_type.as_deref() == Some("jdk.jfr.Event")
    }

    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| &*f.name == name)
    }
}

/// The types declared by one chunk's metadata event.
#[derive(Clone, Debug, Default)]
pub struct Metadata {
    pub types: IntMap<u64, TypeDesc>,
    by_name: HashMap<Arc<str>, u64>,
    pub root: Element,
}

impl Metadata {
    /// Builds the type model from the tree. Checks that every referenced type id is declared.
    /// Names stay shared with the tree; a name given to many types is hashed once (by the
    /// string it is, not by its text), so neither copies nor hashing grow with how often a
    /// long name is used.
    pub fn from_tree(root: Element) -> Result<Metadata, String> {
        let meta =
            root.children_named("metadata").next().ok_or_else(|| "metadata has no <metadata> element".to_string())?;
        let mut types = IntMap::default();
        // Each distinct name string once, in first-use order, with the id of the last type of
        // that name; `seen` finds it by the string's address.
        let mut names: Vec<(Arc<str>, u64)> = Vec::new();
        let mut seen: IntMap<usize, usize> = IntMap::default();
        let empty: Arc<str> = Arc::from("");
        for c in meta.children_named("class") {
            let id = parse_id(c, "id")?;
            let name = c.shared("name").unwrap_or(&empty).clone();
            let fields = c
                .children_named("field")
                .map(|f| {
                    Ok(FieldDesc {
                        name: f.shared("name").unwrap_or(&empty).clone(),
                        type_id: parse_id(f, "class")?,
                        kind: Kind::Struct,
                        array: f.get("dimension").is_some_and(|d| d != "0"),
                        constant_pool: f.get("constantPool") == Some("true"),
                        annotations: annotations(f)?,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            let slot = *seen.entry(Arc::as_ptr(&name) as *const u8 as usize).or_insert_with(|| {
                names.push((name.clone(), id));
                names.len() - 1
            });
            names[slot].1 = id;
            let t = TypeDesc {
                id,
                kind: Kind::of(&name, !fields.is_empty()),
                name,
                super_type: c.shared("superType").cloned(),
                simple_type: c.get("simpleType") == Some("true"),
                fields,
                annotations: annotations(c)?,
            };
            types.insert(id, t);
        }
        let by_name = names.into_iter().collect();
        let kinds: IntMap<u64, Kind> = types.iter().map(|(id, t)| (*id, t.kind)).collect();
        for t in types.values_mut() {
            for f in &mut t.fields {
                f.kind = *kinds.get(&f.type_id).ok_or_else(|| {
                    format!("field {}.{} refers to undeclared type id {}", short(&t.name), short(&f.name), f.type_id)
                })?;
            }
        }
        Ok(Metadata { types, by_name, root })
    }

    pub fn get(&self, id: u64) -> Option<&TypeDesc> {
        self.types.get(&id)
    }

    pub fn by_name(&self, name: &str) -> Option<&TypeDesc> {
        self.by_name.get(name).and_then(|id| self.types.get(id))
    }

    /// The `value` of the first annotation of type `annotation` (e.g. `jdk.jfr.Label`).
    pub fn annotation_value<'a>(&'a self, anns: &'a [AnnotationDesc], annotation: &str) -> Option<&'a str> {
        let id = *self.by_name.get(annotation)?;
        anns.iter()
            .find(|a| a.type_id == id)
            .and_then(|a| a.values.iter().find(|(k, _)| &**k == "value").map(|(_, v)| &**v))
    }
}

fn parse_id(e: &Element, key: &str) -> Result<u64, String> {
    let v = e.get(key).ok_or_else(|| format!("<{}> element without `{key}` attribute", short(&e.name)))?;
    v.parse::<i64>()
        .map(|x| x as u64)
        .map_err(|_| format!("<{}> element has non-numeric `{key}` attribute `{}`", short(&e.name), short(v)))
}

/// A name for an error message: its first 80 characters.
fn short(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s.to_string(),
    }
}

fn annotations(e: &Element) -> Result<Vec<AnnotationDesc>, String> {
    e.children_named("annotation")
        .map(|a| {
            Ok(AnnotationDesc {
                type_id: parse_id(a, "class")?,
                values: a.attributes.iter().filter(|(k, _)| &**k != "class").cloned().collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_tree() -> Element {
        Element::new("root")
            .child(
                Element::new("metadata")
                    .child(Element::new("class").attr("id", 1).attr("name", "long"))
                    .child(
                        Element::new("class")
                            .attr("id", 2)
                            .attr("name", "jdk.jfr.Label")
                            .attr("superType", "java.lang.annotation.Annotation"),
                    )
                    .child(
                        Element::new("class")
                            .attr("id", 3)
                            .attr("name", "x.Event")
                            .attr("superType", "jdk.jfr.Event")
                            .child(Element::new("annotation").attr("class", 2).attr("value", "X"))
                            .child(Element::new("field").attr("name", "startTime").attr("class", 1)),
                    ),
            )
            .child(Element::new("region").attr("locale", "en_US"))
    }

    #[test]
    fn tree_round_trips_and_builds_types() {
        let t = sample_tree();
        let mut buf = Vec::new();
        t.encode_tree(&mut buf);
        let back = Element::decode_tree(&mut Reader::new(&buf, 0)).unwrap();
        assert_eq!(back, t);
        let m = Metadata::from_tree(back).unwrap();
        let ev = m.by_name("x.Event").unwrap();
        assert!(ev.is_event());
        assert_eq!(ev.kind, Kind::Struct);
        assert_eq!(m.get(1).unwrap().kind, Kind::Long);
        assert_eq!(m.annotation_value(&ev.annotations, "jdk.jfr.Label"), Some("X"));
    }

    #[test]
    fn undeclared_field_type_is_an_error() {
        let t = Element::new("root").child(
            Element::new("metadata").child(
                Element::new("class")
                    .attr("id", 3)
                    .attr("name", "E")
                    .child(Element::new("field").attr("name", "f").attr("class", 99)),
            ),
        );
        assert!(Metadata::from_tree(t).unwrap_err().contains("99"));
    }

    #[test]
    fn bad_string_index_is_an_error() {
        // One string, then an element whose name index is 5.
        let buf = [1u8, 3, 1, b'a', 5, 0, 0];
        assert!(Element::decode_tree(&mut Reader::new(&buf, 0)).is_err());
    }
}
