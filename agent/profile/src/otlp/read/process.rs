//! Who sent a resource's profiles, told apart by service, host, pid and runtime, and how an
//! error lists services and hosts (a bounded line, whatever their number).

use std::collections::BTreeMap;

use super::budget::Budget;
use super::dict::Dict;
use super::Problem;
use crate::limits::{LimitError, MAX_NAME_BYTES, MAX_THREAD_NAME_BYTES};

/// The service a resource without `service.name` belongs to (OpenTelemetry's default name).
pub const UNKNOWN_SERVICE: &str = "unknown_service";

/// Who sent a resource's profiles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Process {
    pub(super) service: String,
    pub(super) host: Option<String>,
    pub(super) pid: Option<u32>,
    pub(super) runtime: Option<String>,
    pub(super) sdk: Option<String>,
}

impl Process {
    /// The process a resource names; its strings' copies charged to `budget`. The service is
    /// told apart by its whole name (a name longer than [`MAX_NAME_BYTES`] is refused), the
    /// other strings are clipped to [`MAX_THREAD_NAME_BYTES`].
    pub(super) fn of(
        dict: &Dict<'_>,
        res: Option<&opentelemetry_proto::tonic::resource::v1::Resource>,
        budget: &mut Budget,
    ) -> Result<Process, Problem> {
        let mut p = Process::default();
        let (mut name, mut version) = (None, None);
        for kv in res.map(|r| r.attributes.as_slice()).unwrap_or_default() {
            let key = if kv.key.is_empty() { dict.string(kv.key_strindex)? } else { kv.key.as_str() };
            let v = dict.value(kv.value.as_ref())?;
            let mut clip = |s: Option<String>| -> Result<Option<String>, Problem> {
                let s = s.map(|s| crate::text::clip(&s, MAX_THREAD_NAME_BYTES));
                budget.names(s.as_ref().map_or(0, String::len))?;
                Ok(s)
            };
            match key {
                "service.name" => {
                    let name = v.text().unwrap_or_default();
                    if name.len() > MAX_NAME_BYTES {
                        return Err(Problem::Limit(LimitError::NameTooLong { bytes: name.len() }));
                    }
                    budget.names(name.len())?;
                    p.service = name;
                }
                "host.name" => p.host = clip(v.text())?,
                "process.pid" => p.pid = v.int().and_then(|n| u32::try_from(n).ok()),
                "process.runtime.name" => name = clip(v.text())?,
                "process.runtime.version" => version = clip(v.text())?,
                "telemetry.sdk.name" => p.sdk = clip(v.text())?,
                _ => {}
            }
        }
        if p.service.is_empty() {
            p.service = UNKNOWN_SERVICE.to_string();
        }
        p.runtime = match (name, version) {
            (Some(n), Some(v)) => Some(format!("{n} {v}")),
            (n, v) => n.or(v),
        };
        Ok(p)
    }
}

/// Services or hosts an error lists at most.
pub const MAX_LISTED: usize = 20;

/// `A (30 samples), B (3 samples), and 5 more`: the services of most samples first (then
/// by name), [`MAX_LISTED`] of them, names clipped.
pub(super) fn listed(m: &BTreeMap<String, u64>) -> String {
    let mut by: Vec<(&String, &u64)> = m.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let shown = by
        .iter()
        .take(MAX_LISTED)
        .map(|(s, n)| format!("{} ({} samples)", crate::text::clip(s, MAX_THREAD_NAME_BYTES), crate::text::group(**n)));
    with_more(shown, m.len())
}

/// The first [`MAX_LISTED`] of `count` names, clipped.
pub(super) fn listed_names<'a>(names: impl Iterator<Item = &'a str>, count: usize) -> String {
    with_more(names.take(MAX_LISTED).map(|s| crate::text::clip(s, MAX_THREAD_NAME_BYTES)), count)
}

fn with_more(shown: impl Iterator<Item = String>, count: usize) -> String {
    let mut s = shown.collect::<Vec<_>>().join(", ");
    if count > MAX_LISTED {
        s.push_str(&format!(", and {} more", count - MAX_LISTED));
    }
    s
}
