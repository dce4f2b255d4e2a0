//! A message's dictionary, every index checked: an index out of its table is a one-line
//! format error naming the table, never a panic.

use opentelemetry_proto::tonic::common::v1::{any_value::Value, AnyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Location, ProfilesDictionary, Stack as OtlpStack,
};

use super::{format_err, Problem};

/// The dictionary's tables, every index checked.
pub(super) struct Dict<'a>(pub(super) &'a ProfilesDictionary);

fn at<'t, T>(table: &'t [T], i: i32, what: &str) -> Result<&'t T, Problem> {
    usize::try_from(i).ok().and_then(|i| table.get(i)).ok_or_else(|| {
        format_err(format!(
            "{what} index {i} is out of range (the table has {} entries); the file is damaged",
            table.len()
        ))
    })
}

impl<'a> Dict<'a> {
    pub(super) fn string(&self, i: i32) -> Result<&'a str, Problem> {
        at(&self.0.string_table, i, "string").map(String::as_str)
    }
    pub(super) fn attr(&self, i: i32) -> Result<&'a KeyValueAndUnit, Problem> {
        at(&self.0.attribute_table, i, "attribute")
    }
    pub(super) fn function(&self, i: i32) -> Result<&'a Function, Problem> {
        at(&self.0.function_table, i, "function")
    }
    pub(super) fn location(&self, i: i32) -> Result<&'a Location, Problem> {
        at(&self.0.location_table, i, "location")
    }
    pub(super) fn stack(&self, i: i32) -> Result<&'a OtlpStack, Problem> {
        at(&self.0.stack_table, i, "stack")
    }

    /// A value as text or number, however it is stored (inline or in the string table).
    pub(super) fn value(&self, v: Option<&'a AnyValue>) -> Result<Val<'a>, Problem> {
        Ok(match v.and_then(|v| v.value.as_ref()) {
            Some(Value::StringValue(s)) => Val::Str(s),
            Some(Value::StringValueStrindex(i)) => Val::Str(self.string(*i)?),
            Some(Value::IntValue(n)) => Val::Int(*n),
            _ => Val::Other,
        })
    }
}

pub(super) enum Val<'a> {
    Str(&'a str),
    Int(i64),
    Other,
}

impl Val<'_> {
    pub(super) fn text(&self) -> Option<String> {
        match self {
            Val::Str(s) => Some(s.to_string()),
            Val::Int(n) => Some(n.to_string()),
            Val::Other => None,
        }
    }
    pub(super) fn int(&self) -> Option<i64> {
        match self {
            Val::Int(n) => Some(*n),
            Val::Str(s) => s.parse().ok(),
            Val::Other => None,
        }
    }
}
