//! Hostile OTLP profiles files: small requests whose content a naive merge multiplies, each
//! made to about the size asked, so a test can measure a command's peak memory against the
//! file's size (`tests/tests/cli_hostile.rs`).
//!
//! What each one attacks:
//! - samples of 2 bytes (no value), beside many counters ([`empty_samples`]), in protobuf and
//!   in OTLP/JSON ([`empty_samples_json`]);
//! - samples of 5 bytes, each with a value of the last of 64 counters ([`last_counter_samples`]);
//! - one long sample type named by many profiles, of a service not selected ([`long_type_refs`]);
//! - one long function name shared by many functions of distinct files ([`long_name_functions`]);
//! - many processes of one service ([`many_processes`]), many services ([`many_services`]);
//! - empty profiles, which prost decodes to ~100 times their 2 bytes ([`empty_profiles`]).

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value::Value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, Line, Location, Profile, ProfilesDictionary, ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

/// A hostile OTLP shape: its name, the extension of its file, how to make a file of about
/// `bytes` bytes, and the `hpm` arguments after the file's path that reach what it attacks.
pub struct OtlpShape {
    pub name: &'static str,
    pub ext: &'static str,
    pub make: fn(usize) -> Vec<u8>,
    pub args: &'static [&'static str],
}

/// Every shape, for the tests.
pub const OTLP_SHAPES: &[OtlpShape] = &[
    OtlpShape { name: "empty-samples", ext: "otlp", make: empty_samples, args: &[] },
    OtlpShape { name: "empty-samples-json", ext: "jsonl", make: empty_samples_json, args: &[] },
    OtlpShape { name: "last-counter-samples", ext: "otlp", make: last_counter_samples, args: &[] },
    OtlpShape { name: "long-type-refs", ext: "otlp", make: long_type_refs, args: &["--service", "nosuch"] },
    OtlpShape { name: "long-name-functions", ext: "otlp", make: long_name_functions, args: &[] },
    OtlpShape { name: "many-processes", ext: "otlp", make: many_processes, args: &[] },
    OtlpShape { name: "many-services", ext: "otlp", make: many_services, args: &[] },
    OtlpShape { name: "empty-profiles", ext: "otlp", make: empty_profiles, args: &[] },
];

/// Strings `""`, `cpu`, `nanoseconds`, `count`, then `extra`; an empty stack 0.
fn dict(extra: impl IntoIterator<Item = String>) -> ProfilesDictionary {
    let mut string_table: Vec<String> = ["", "cpu", "nanoseconds", "count"].iter().map(|s| s.to_string()).collect();
    string_table.extend(extra);
    ProfilesDictionary { string_table, stack_table: vec![Stack::default()], ..Default::default() }
}

/// A resource of `attrs` whose one scope holds `profiles` (the reader's tests build theirs so).
pub fn resource(attrs: &[(&str, Value)], profiles: Vec<Profile>) -> ResourceProfiles {
    let attributes = attrs
        .iter()
        .map(|(k, v)| KeyValue {
            key: k.to_string(),
            value: Some(AnyValue { value: Some(v.clone()) }),
            key_strindex: 0,
        })
        .collect();
    ResourceProfiles {
        resource: Some(Resource { attributes, ..Default::default() }),
        scope_profiles: vec![ScopeProfiles { profiles, ..Default::default() }],
        ..Default::default()
    }
}

fn svc(name: &str) -> [(&'static str, Value); 1] {
    [("service.name", Value::StringValue(name.to_string()))]
}

fn profile(t: i32, u: i32, samples: Vec<Sample>) -> Profile {
    Profile { sample_type: Some(ValueType { type_strindex: t, unit_strindex: u }), samples, ..Default::default() }
}

fn one() -> Sample {
    Sample { values: vec![1], ..Default::default() }
}

fn request(dictionary: ProfilesDictionary, resources: Vec<ResourceProfiles>) -> Vec<u8> {
    ExportProfilesServiceRequest { resource_profiles: resources, dictionary: Some(dictionary) }.encode_to_vec()
}

/// A `cpu` profile of `bytes / 2` samples of 2 bytes each (no value), beside 8 counters.
pub fn empty_samples(bytes: usize) -> Vec<u8> {
    let mut profiles = vec![profile(1, 2, vec![Sample::default(); bytes / 2])];
    profiles.extend((0..8).map(|i| profile(4 + i, 3, Vec::new())));
    request(dict((0..8).map(|i| format!("c{i}"))), vec![resource(&svc("svc"), profiles)])
}

/// The same as [`empty_samples`] in OTLP/JSON: samples `{}` of 3 bytes each.
pub fn empty_samples_json(bytes: usize) -> Vec<u8> {
    let samples = vec!["{}"; bytes / 3].join(",");
    format!(
        "{{\"resourceProfiles\":[{{\"resource\":{{\"attributes\":[{{\"key\":\"service.name\",\"value\":\
         {{\"stringValue\":\"svc\"}}}}]}},\"scopeProfiles\":[{{\"profiles\":[{{\"sampleType\":{{\"typeStrindex\":1,\
         \"unitStrindex\":2}},\"samples\":[{samples}]}}]}}]}}],\"dictionary\":{{\"stringTable\":[\"\",\"cpu\",\
         \"nanoseconds\"],\"stackTable\":[{{}}]}}}}\n"
    )
    .into_bytes()
}

/// A `cpu` profile of samples of 5 bytes, each with a value of the last of 64 counters only
/// (5 bytes more): every model sample would hold 64 values.
pub fn last_counter_samples(bytes: usize) -> Vec<u8> {
    let n = bytes / 10;
    let mut profiles = vec![profile(1, 2, vec![one(); n])];
    profiles.extend((0..63).map(|i| profile(4 + i, 3, Vec::new())));
    profiles.push(profile(4 + 63, 3, vec![one(); n]));
    request(dict((0..64).map(|i| format!("c{i}"))), vec![resource(&svc("svc"), profiles)])
}

/// A 60 KB sample type named by as many profiles as fit, each of its own unit.
pub fn long_type_refs(bytes: usize) -> Vec<u8> {
    let k = bytes.saturating_sub(60_000) / 16 + 1;
    let mut profiles = vec![profile(1, 2, vec![one()])];
    profiles.extend((0..k).map(|i| profile(4, 5 + i as i32, Vec::new())));
    let strings = std::iter::once("T".repeat(60_000)).chain((0..k).map(|i| format!("u{i}")));
    request(dict(strings), vec![resource(&svc("svc"), profiles)])
}

/// Functions all named by one 60 KB string, each of its own file, on one stack.
pub fn long_name_functions(bytes: usize) -> Vec<u8> {
    let k = bytes.saturating_sub(60_000) / 24 + 1;
    let mut d = dict(std::iter::once("N".repeat(60_000)).chain((0..k).map(|i| format!("F{i}.java"))));
    for i in 0..k {
        d.function_table.push(Function { name_strindex: 4, filename_strindex: 5 + i as i32, ..Default::default() });
        d.location_table.push(Location {
            lines: vec![Line { function_index: i as i32, line: 1, column: 0 }],
            ..Default::default()
        });
    }
    d.stack_table.push(Stack { location_indices: (0..k as i32).collect() });
    request(d, vec![resource(&svc("svc"), vec![profile(1, 2, vec![Sample { stack_index: 1, ..one() }])])])
}

/// Resources of one service, each its own pid, with one sample each.
pub fn many_processes(bytes: usize) -> Vec<u8> {
    let resources = (0..bytes / 60)
        .map(|pid| {
            let attrs = [svc("svc")[0].clone(), ("process.pid", Value::IntValue(pid as i64))];
            resource(&attrs, vec![profile(1, 2, vec![one()])])
        })
        .collect();
    request(dict([]), resources)
}

/// Resources each of its own service, with one sample each.
pub fn many_services(bytes: usize) -> Vec<u8> {
    let resources =
        (0..bytes / 50).map(|i| resource(&svc(&format!("s{i}")), vec![profile(1, 2, vec![one()])])).collect();
    request(dict([]), resources)
}

/// One resource of one scope holding `bytes / 2` empty profiles.
pub fn empty_profiles(bytes: usize) -> Vec<u8> {
    request(dict([]), vec![resource(&svc("a"), vec![Profile::default(); bytes / 2])])
}
