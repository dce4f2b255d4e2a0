//! Builders for metadata type declarations (`class`, `field` and `annotation` elements), and
//! the declarations of the JDK's own types that hpm's events refer to.

use super::ids::*;
use super::metadata::Element;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub type_id: u64,
    pub values: Vec<(String, String)>,
}

pub fn label(s: &str) -> Annotation {
    Annotation { type_id: A_LABEL, values: vec![("value".into(), s.into())] }
}

pub fn description(s: &str) -> Annotation {
    Annotation { type_id: A_DESCRIPTION, values: vec![("value".into(), s.into())] }
}

pub fn category(path: &[&str]) -> Annotation {
    let values = path.iter().enumerate().map(|(i, s)| (format!("value-{i}"), s.to_string())).collect();
    Annotation { type_id: A_CATEGORY, values }
}

pub fn timestamp_ticks() -> Annotation {
    Annotation { type_id: A_TIMESTAMP, values: vec![("value".into(), "TICKS".into())] }
}

pub fn marker(type_id: u64) -> Annotation {
    Annotation { type_id, values: vec![] }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDef {
    pub name: String,
    pub type_id: u64,
    pub constant_pool: bool,
    pub array: bool,
    pub annotations: Vec<Annotation>,
}

impl FieldDef {
    pub fn new(name: &str, type_id: u64, label_text: &str) -> FieldDef {
        FieldDef {
            name: name.into(),
            type_id,
            constant_pool: false,
            array: false,
            annotations: vec![label(label_text)],
        }
    }

    /// The field holds a constant-pool key.
    pub fn pooled(mut self) -> FieldDef {
        self.constant_pool = true;
        self
    }

    pub fn array(mut self) -> FieldDef {
        self.array = true;
        self
    }

    pub fn with(mut self, a: Annotation) -> FieldDef {
        self.annotations.push(a);
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDef {
    pub id: u64,
    pub name: String,
    pub super_type: Option<&'static str>,
    pub simple_type: bool,
    pub annotations: Vec<Annotation>,
    pub fields: Vec<FieldDef>,
}

impl TypeDef {
    fn plain(id: u64, name: &str) -> TypeDef {
        TypeDef { id, name: name.into(), super_type: None, simple_type: false, annotations: vec![], fields: vec![] }
    }

    fn annotation(id: u64, name: &str, fields: Vec<FieldDef>, annotations: Vec<Annotation>) -> TypeDef {
        TypeDef {
            id,
            name: name.into(),
            super_type: Some("java.lang.annotation.Annotation"),
            simple_type: false,
            annotations,
            fields,
        }
    }

    pub(crate) fn strukt(id: u64, name: &str, label_text: &str, fields: Vec<FieldDef>) -> TypeDef {
        TypeDef {
            id,
            name: name.into(),
            super_type: None,
            simple_type: false,
            annotations: vec![label(label_text)],
            fields,
        }
    }

    fn simple(id: u64, name: &str, label_text: &str, field: FieldDef) -> TypeDef {
        TypeDef { simple_type: true, ..TypeDef::strukt(id, name, label_text, vec![field]) }
    }

    pub fn to_element(&self) -> Element {
        let mut e = Element::new("class").attr("name", &self.name);
        if let Some(s) = self.super_type {
            e = e.attr("superType", s);
        }
        if self.simple_type {
            e = e.attr("simpleType", "true");
        }
        e = e.attr("id", self.id);
        for f in &self.fields {
            let mut fe = Element::new("field").attr("name", &f.name).attr("class", f.type_id);
            if f.constant_pool {
                fe = fe.attr("constantPool", "true");
            }
            if f.array {
                fe = fe.attr("dimension", "1");
            }
            for a in &f.annotations {
                fe = fe.child(annotation_element(a));
            }
            e = e.child(fe);
        }
        for a in &self.annotations {
            e = e.child(annotation_element(a));
        }
        e
    }
}

fn annotation_element(a: &Annotation) -> Element {
    let mut e = Element::new("annotation").attr("class", a.type_id);
    for (k, v) in &a.values {
        e = e.attr(k, v);
    }
    e
}

/// An event type: `jdk.jfr.Event` subtype with a label, category and description.
#[derive(Clone, Debug)]
pub struct EventDef {
    pub id: u64,
    pub name: &'static str,
    pub label: &'static str,
    pub description: &'static str,
    pub category: &'static [&'static str],
    pub fields: Vec<FieldDef>,
}

impl EventDef {
    pub fn to_type(&self) -> TypeDef {
        TypeDef {
            id: self.id,
            name: self.name.into(),
            super_type: Some("jdk.jfr.Event"),
            simple_type: false,
            annotations: vec![label(self.label), description(self.description), category(self.category)],
            fields: self.fields.clone(),
        }
    }
}

/// `startTime`, the first field of every event type.
pub fn start_time_field() -> FieldDef {
    FieldDef::new("startTime", T_LONG, "Start Time").with(timestamp_ticks())
}

/// `duration`, which must be the second field of an event type that has one.
pub fn duration_field() -> FieldDef {
    FieldDef::new("duration", T_LONG, "Duration")
        .with(Annotation { type_id: A_TIMESPAN, values: vec![("value".into(), "TICKS".into())] })
}

/// A `java.lang.String` field.
pub fn string_field(name: &str, label_text: &str) -> FieldDef {
    FieldDef::new(name, T_STRING, label_text)
}

/// The built-in value types, the `jdk.types.*` structs (as the JDK 17 declares them) and the
/// annotation types hpm uses, in declaration order.
pub fn builtin_types() -> Vec<TypeDef> {
    let sym = |name: &str, l: &str| FieldDef::new(name, T_SYMBOL, l).pooled();
    let mut t = vec![
        TypeDef::plain(T_BOOLEAN, "boolean"),
        TypeDef::plain(T_CHAR, "char"),
        TypeDef::plain(T_FLOAT, "float"),
        TypeDef::plain(T_DOUBLE, "double"),
        TypeDef::plain(T_BYTE, "byte"),
        TypeDef::plain(T_SHORT, "short"),
        TypeDef::plain(T_INT, "int"),
        TypeDef::plain(T_LONG, "long"),
        TypeDef::plain(T_STRING, "java.lang.String"),
        TypeDef::strukt(
            T_THREAD,
            "java.lang.Thread",
            "Thread",
            vec![
                string_field("osName", "OS Thread Name"),
                FieldDef::new("osThreadId", T_LONG, "OS Thread Id"),
                string_field("javaName", "Java Thread Name"),
                FieldDef::new("javaThreadId", T_LONG, "Java Thread Id"),
                FieldDef::new("group", T_THREAD_GROUP, "Java Thread Group").pooled(),
                // As JDK 21+ declare it; files without it (JDK 17's) read as platform threads.
                FieldDef::new("virtual", T_BOOLEAN, "Virtual Thread"),
            ],
        ),
        TypeDef::strukt(
            T_THREAD_GROUP,
            "jdk.types.ThreadGroup",
            "Thread Group",
            vec![FieldDef::new("parent", T_THREAD_GROUP, "Parent").pooled(), string_field("name", "Name")],
        ),
        TypeDef::strukt(
            T_CLASS,
            "java.lang.Class",
            "Java Class",
            vec![
                FieldDef::new("classLoader", T_CLASS_LOADER, "Class Loader").pooled(),
                sym("name", "Name"),
                FieldDef::new("package", T_PACKAGE, "Package").pooled(),
                FieldDef::new("modifiers", T_INT, "Access Modifiers"),
                FieldDef::new("hidden", T_BOOLEAN, "Hidden"),
            ],
        ),
        TypeDef::strukt(
            T_CLASS_LOADER,
            "jdk.types.ClassLoader",
            "Java Class Loader",
            vec![FieldDef::new("type", T_CLASS, "Type").pooled(), sym("name", "Name")],
        ),
        TypeDef::strukt(
            T_PACKAGE,
            "jdk.types.Package",
            "Package",
            vec![
                sym("name", "Name"),
                FieldDef::new("module", T_MODULE, "Module").pooled(),
                FieldDef::new("exported", T_BOOLEAN, "Exported"),
            ],
        ),
        TypeDef::strukt(
            T_MODULE,
            "jdk.types.Module",
            "Module",
            vec![
                sym("name", "Name"),
                sym("version", "Version"),
                sym("location", "Location"),
                FieldDef::new("classLoader", T_CLASS_LOADER, "Class Loader").pooled(),
            ],
        ),
        TypeDef::simple(T_SYMBOL, "jdk.types.Symbol", "Symbol", string_field("string", "String")),
        TypeDef::strukt(
            T_METHOD,
            "jdk.types.Method",
            "Java Method",
            vec![
                FieldDef::new("type", T_CLASS, "Type").pooled(),
                sym("name", "Name"),
                sym("descriptor", "Descriptor"),
                FieldDef::new("modifiers", T_INT, "Access Modifiers"),
                FieldDef::new("hidden", T_BOOLEAN, "Hidden"),
            ],
        ),
        TypeDef::strukt(
            T_STACK_TRACE,
            "jdk.types.StackTrace",
            "Stacktrace",
            vec![
                FieldDef::new("truncated", T_BOOLEAN, "Truncated"),
                FieldDef::new("frames", T_STACK_FRAME, "Stack Frames").array(),
            ],
        ),
        TypeDef {
            annotations: vec![],
            ..TypeDef::strukt(
                T_STACK_FRAME,
                "jdk.types.StackFrame",
                "",
                vec![
                    FieldDef::new("method", T_METHOD, "Java Method").pooled(),
                    FieldDef::new("lineNumber", T_INT, "Line Number"),
                    FieldDef::new("bytecodeIndex", T_INT, "Bytecode Index"),
                    FieldDef::new("type", T_FRAME_TYPE, "Frame Type").pooled(),
                    // Read by the JDK's `RecordedFrame.isJavaFrame()` (see `pools::is_java_frame`).
                    FieldDef::new("javaFrame", T_BOOLEAN, "Java Frame"),
                ],
            )
        },
        TypeDef::simple(T_FRAME_TYPE, "jdk.types.FrameType", "Frame type", string_field("description", "Description")),
        TypeDef::simple(T_THREAD_STATE, "jdk.types.ThreadState", "Java Thread State", string_field("name", "Name")),
    ];
    let s = || vec![FieldDef { annotations: vec![], ..string_field("value", "") }];
    let ct = || marker(A_CONTENT_TYPE);
    t.extend([
        TypeDef::annotation(A_LABEL, "jdk.jfr.Label", s(), vec![]),
        TypeDef::annotation(A_DESCRIPTION, "jdk.jfr.Description", s(), vec![]),
        TypeDef::annotation(A_CATEGORY, "jdk.jfr.Category", vec![FieldDef { array: true, ..s().remove(0) }], vec![]),
        TypeDef::annotation(A_TIMESTAMP, "jdk.jfr.Timestamp", s(), vec![ct(), label("Timestamp")]),
        TypeDef::annotation(A_TIMESPAN, "jdk.jfr.Timespan", s(), vec![ct(), label("Timespan")]),
        TypeDef::annotation(A_UNSIGNED, "jdk.jfr.Unsigned", vec![], vec![ct(), label("Unsigned Value")]),
        TypeDef::annotation(A_MEMORY_ADDRESS, "jdk.jfr.MemoryAddress", vec![], vec![ct(), label("Memory Address")]),
        TypeDef::annotation(A_CONTENT_TYPE, "jdk.jfr.ContentType", vec![], vec![label("Content Type")]),
        TypeDef::annotation(A_DATA_AMOUNT, "jdk.jfr.DataAmount", s(), vec![ct(), label("Data Amount")]),
        TypeDef::annotation(A_PERCENTAGE, "jdk.jfr.Percentage", vec![], vec![ct(), label("Percentage")]),
        TypeDef::annotation(A_EXPERIMENTAL, "jdk.jfr.Experimental", vec![], vec![label("Experimental")]),
    ]);
    t
}
