//! One line of OTLP/JSON (the collector's file exporter, `format: json`) as the protobuf
//! message it stands for, field by field: camelCase names, 64-bit integers as strings or
//! numbers, absent fields as their zero value (the OTLP/JSON mapping). Only the fields hpm
//! reads are mapped. The proto crate's own serde support does not take this mapping (it wants
//! every field present and 64-bit values as numbers), so it is not used.
//!
//! serde_json bounds nesting (128 levels); the line is bounded by the caller.

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Location, Profile, ProfilesDictionary, ResourceProfiles, Sample, ScopeProfiles,
    Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde_json::{Map, Value};

use super::{format_err, Problem};

type Obj = Map<String, Value>;
type R<T> = Result<T, Problem>;

/// The request a line holds (a `ProfilesData` or an `ExportProfilesServiceRequest`: the same
/// fields).
pub(super) fn request(line: &[u8]) -> R<ExportProfilesServiceRequest> {
    let v: Value = serde_json::from_slice(line).map_err(|e| {
        format_err(format!("not JSON ({e}); .json/.jsonl is the collector file exporter's format json"))
    })?;
    let o = v.as_object().ok_or_else(|| format_err("not a JSON object"))?;
    if !o.contains_key("resourceProfiles") && !o.contains_key("dictionary") {
        return Err(format_err(
            "not OTLP profiles JSON (no resourceProfiles); .json/.jsonl is the collector file exporter's format json",
        ));
    }
    Ok(ExportProfilesServiceRequest {
        resource_profiles: list(o, "resourceProfiles", resource_profiles)?,
        dictionary: opt(o, "dictionary", dictionary)?,
    })
}

fn field<'a>(o: &'a Obj, k: &str) -> Option<&'a Value> {
    o.get(k).filter(|v| !v.is_null())
}

fn obj<'a>(v: &'a Value, what: &str) -> R<&'a Obj> {
    v.as_object().ok_or_else(|| format_err(format!("`{what}` is not an object")))
}

fn list<T>(o: &Obj, k: &str, f: fn(&Obj) -> R<T>) -> R<Vec<T>> {
    match field(o, k) {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(|v| obj(v, k).and_then(f)).collect(),
        Some(_) => Err(format_err(format!("`{k}` is not an array"))),
    }
}

fn opt<T>(o: &Obj, k: &str, f: fn(&Obj) -> R<T>) -> R<Option<T>> {
    field(o, k).map(|v| obj(v, k).and_then(f)).transpose()
}

/// A 64-bit integer: a number or a string of one (OTLP/JSON writes 64-bit values as strings).
fn int_value(v: &Value, k: &str) -> R<i128> {
    let n = match v {
        Value::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
        Value::String(s) => s.parse::<i128>().ok(),
        _ => None,
    };
    n.filter(|n| (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(n))
        .ok_or_else(|| format_err(format!("`{k}` is not an integer")))
}

fn int<T: TryFrom<i128> + Default>(o: &Obj, k: &str) -> R<T> {
    match field(o, k) {
        None => Ok(T::default()),
        Some(v) => T::try_from(int_value(v, k)?).map_err(|_| format_err(format!("`{k}` is out of range"))),
    }
}

fn ints<T: TryFrom<i128>>(o: &Obj, k: &str) -> R<Vec<T>> {
    match field(o, k) {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| T::try_from(int_value(v, k)?).map_err(|_| format_err(format!("`{k}` is out of range"))))
            .collect(),
        Some(_) => Err(format_err(format!("`{k}` is not an array"))),
    }
}

fn string(o: &Obj, k: &str) -> R<String> {
    match field(o, k) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format_err(format!("`{k}` is not a string"))),
    }
}

fn resource_profiles(o: &Obj) -> R<ResourceProfiles> {
    Ok(ResourceProfiles {
        resource: opt(o, "resource", |r| {
            Ok(Resource { attributes: list(r, "attributes", key_value)?, ..Default::default() })
        })?,
        scope_profiles: list(o, "scopeProfiles", |s| {
            Ok(ScopeProfiles { profiles: list(s, "profiles", profile)?, ..Default::default() })
        })?,
        ..Default::default()
    })
}

fn key_value(o: &Obj) -> R<KeyValue> {
    Ok(KeyValue { key: string(o, "key")?, key_strindex: int(o, "keyStrindex")?, value: opt(o, "value", any_value)? })
}

fn any_value(o: &Obj) -> R<AnyValue> {
    use any_value::Value as V;
    let value = if let Some(Value::String(s)) = field(o, "stringValue") {
        Some(V::StringValue(s.clone()))
    } else if field(o, "stringValueStrindex").is_some() {
        Some(V::StringValueStrindex(int(o, "stringValueStrindex")?))
    } else if field(o, "intValue").is_some() {
        Some(V::IntValue(int(o, "intValue")?))
    } else if let Some(Value::Bool(b)) = field(o, "boolValue") {
        Some(V::BoolValue(*b))
    } else {
        None
    };
    Ok(AnyValue { value })
}

fn value_type(o: &Obj) -> R<ValueType> {
    Ok(ValueType { type_strindex: int(o, "typeStrindex")?, unit_strindex: int(o, "unitStrindex")? })
}

fn profile(o: &Obj) -> R<Profile> {
    Ok(Profile {
        sample_type: opt(o, "sampleType", value_type)?,
        samples: list(o, "samples", sample)?,
        time_unix_nano: int(o, "timeUnixNano")?,
        duration_nano: int(o, "durationNano")?,
        period_type: opt(o, "periodType", value_type)?,
        period: int(o, "period")?,
        ..Default::default()
    })
}

fn sample(o: &Obj) -> R<Sample> {
    Ok(Sample {
        stack_index: int(o, "stackIndex")?,
        attribute_indices: ints(o, "attributeIndices")?,
        link_index: int(o, "linkIndex")?,
        values: ints(o, "values")?,
        timestamps_unix_nano: ints(o, "timestampsUnixNano")?,
    })
}

fn dictionary(o: &Obj) -> R<ProfilesDictionary> {
    let strings = match field(o, "stringTable") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(|| format_err("`stringTable` holds a non-string")))
            .collect::<R<_>>()?,
        Some(_) => return Err(format_err("`stringTable` is not an array")),
    };
    Ok(ProfilesDictionary {
        string_table: strings,
        function_table: list(o, "functionTable", |f| {
            Ok(Function {
                name_strindex: int(f, "nameStrindex")?,
                system_name_strindex: int(f, "systemNameStrindex")?,
                filename_strindex: int(f, "filenameStrindex")?,
                start_line: int(f, "startLine")?,
            })
        })?,
        location_table: list(o, "locationTable", |l| {
            Ok(Location {
                mapping_index: int(l, "mappingIndex")?,
                address: int(l, "address")?,
                lines: list(l, "lines", |n| {
                    Ok(Line {
                        function_index: int(n, "functionIndex")?,
                        line: int(n, "line")?,
                        column: int(n, "column")?,
                    })
                })?,
                attribute_indices: ints(l, "attributeIndices")?,
            })
        })?,
        stack_table: list(o, "stackTable", |s| Ok(Stack { location_indices: ints(s, "locationIndices")? }))?,
        attribute_table: list(o, "attributeTable", |a| {
            Ok(KeyValueAndUnit {
                key_strindex: int(a, "keyStrindex")?,
                value: opt(a, "value", any_value)?,
                unit_strindex: int(a, "unitStrindex")?,
            })
        })?,
        ..Default::default()
    })
}
