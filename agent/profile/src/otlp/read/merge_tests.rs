//! The merge against hostile messages, built here small: each shape is one a naive merge
//! multiplies (a long string named by many entries, samples of a few bytes, many processes
//! or services), and each test checks the bound by construction (what was copied, made or
//! refused), not by time or measured memory.

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, Line, Location, Profile, ProfilesDictionary, ResourceProfiles, Sample as OtlpSample, Stack as OtlpStack,
    ValueType,
};
use prost::Message;

use super::*;
use crate::otlp::read::process::MAX_LISTED;

/// A message of one dictionary and resources of scopes, each built from strings by index.
struct Msg {
    dict: ProfilesDictionary,
    resources: Vec<ResourceProfiles>,
}

impl Msg {
    /// Strings `""`, `cpu`, `nanoseconds`, `count`, then `extra`; an empty stack 0.
    fn new(extra: &[String]) -> Msg {
        let mut dict = ProfilesDictionary {
            string_table: ["", "cpu", "nanoseconds", "count"].iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        dict.string_table.extend(extra.iter().cloned());
        dict.stack_table.push(OtlpStack::default());
        Msg { dict, resources: Vec::new() }
    }

    /// A resource of `attrs` (key, text or number) whose one scope holds `profiles`.
    fn resource(&mut self, attrs: &[(&str, Value)], profiles: Vec<Profile>) {
        self.resources.push(crate::adversarial::hostile_otlp::resource(attrs, profiles));
    }

    fn build(self) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest { resource_profiles: self.resources, dictionary: Some(self.dict) }
    }
}

fn text(s: &str) -> Value {
    Value::StringValue(s.to_string())
}

/// A profile of type (`t`, `u`), by string index, of `samples`.
fn profile(t: i32, u: i32, samples: Vec<OtlpSample>) -> Profile {
    Profile { sample_type: Some(ValueType { type_strindex: t, unit_strindex: u }), samples, ..Default::default() }
}

/// A `cpu`/`nanoseconds` profile of `n` samples of value 1 on stack `stack`.
fn cpu(n: usize, stack: i32) -> Profile {
    profile(1, 2, vec![OtlpSample { stack_index: stack, values: vec![1], ..Default::default() }; n])
}

fn selection(service: Option<&str>) -> Selection {
    Selection { service: service.map(Into::into), host: None }
}

/// Merges `reqs` as messages of their encoded size.
fn merge(reqs: &[ExportProfilesServiceRequest], sel: Selection) -> (Result<Fleet, Problem>, u64) {
    let mut m = Merger::new(sel);
    for r in reqs {
        if let Err(e) = m.add(r, r.encoded_len()) {
            let spent = m.names_spent;
            return (Err(e), spent);
        }
    }
    let spent = m.names_spent;
    (m.finish(), spent)
}

fn err(r: Result<Fleet, Problem>) -> String {
    r.err().expect("refused").to_string()
}

/// A message of service `svc` whose one scope holds a `cpu` profile and `k` profiles of one
/// type named by a string of `type_bytes` bytes, of units `u0`... (`units` of them, in turn).
fn named_types(k: usize, type_bytes: usize, units: usize) -> ExportProfilesServiceRequest {
    let mut extra = vec!["T".repeat(type_bytes)];
    extra.extend((0..units).map(|i| format!("u{i}")));
    let mut m = Msg::new(&extra);
    let mut profiles = vec![cpu(1, 0)];
    profiles.extend((0..k).map(|i| profile(4, 5 + (i % units) as i32, Vec::new())));
    m.resource(&[("service.name", text("svc"))], profiles);
    m.build()
}

#[test]
fn a_long_type_named_by_many_profiles_is_copied_once_or_refused() {
    // Longer than a name: refused, whatever the selection (no copy is made first).
    let req = named_types(2, MAX_NAME_BYTES + 1, 1);
    let e = err(merge(&[req], selection(Some("nosuch"))).0);
    assert!(e.contains(&format!("a name of {} bytes is longer than hpm reads", MAX_NAME_BYTES + 1)), "{e}");
    // 2,000 profiles of one long type: a service not selected copies none of it (its name
    // only), the one selected copies the type once and counts its profiles.
    let req = named_types(2000, 60_000, 1);
    let (r, spent) = merge(std::slice::from_ref(&req), selection(Some("nosuch")));
    assert!(err(r).contains("no profiles of service nosuch"));
    assert_eq!(spent, "svc".len() as u64);
    let (r, spent) = merge(&[req], selection(None));
    let f = r.unwrap();
    assert!(spent < 61_000, "{spent}");
    assert_eq!(f.notes.len(), 1, "{:?}", f.notes);
    assert!(f.notes[0].ends_with("(u0) left out (2000 of them): hpm reads the samples and counters"));
    // Of as many units: each pair would be a copy, past the message's budget of names.
    let e = err(merge(&[named_types(2000, 60_000, 2000)], selection(None)).0);
    assert!(e.contains("the names copied out of it (methods, sample types, counters) add up to more than"), "{e}");
}

/// A message whose one stack holds `k` functions all named by one string of `name_bytes`
/// bytes, each of its own file name (`distinct_files`: `F{tag}_{i}.java`) or all of one.
fn named_functions(k: usize, name_bytes: usize, distinct_files: bool, tag: usize) -> ExportProfilesServiceRequest {
    let mut extra = vec!["N".repeat(name_bytes)];
    extra.extend((0..k).map(|i| format!("F{tag}_{i}.java")));
    let mut m = Msg::new(&extra);
    for i in 0..k {
        let file = if distinct_files { 5 + i as i32 } else { 5 };
        m.dict.function_table.push(Function { name_strindex: 4, filename_strindex: file, ..Default::default() });
        m.dict.location_table.push(Location {
            lines: vec![Line { function_index: i as i32, line: 1, column: 0 }],
            ..Default::default()
        });
    }
    m.dict.stack_table.push(OtlpStack { location_indices: (0..k as i32).collect() });
    m.resource(&[("service.name", text("svc"))], vec![cpu(1, 1)]);
    m.build()
}

#[test]
fn a_long_name_shared_by_many_functions_is_refused_past_the_names_budget() {
    // Of one file: one method, read.
    let (r, spent) = merge(&[named_functions(300, 60_000, false, 0)], selection(None));
    assert_eq!(r.unwrap().recording.methods.len(), 1);
    assert!(spent < 61_000, "{spent}");
    // Of 300 files: 300 methods of 60 KB names each, 18 MB from 64 KB.
    let e = err(merge(&[named_functions(300, 60_000, true, 0)], selection(None)).0);
    assert!(e.contains("the names copied out of it (methods, sample types, counters) add up to more than"), "{e}");
    // Small messages each within their own budget (16 per byte, and 1 MiB), 200 of them
    // are not: the input's is counted in total.
    let one = named_functions(100, 5_000, true, 0);
    assert!(merge(std::slice::from_ref(&one), selection(None)).0.is_ok());
    let reqs: Vec<_> = (0..200).map(|i| named_functions(100, 5_000, true, i)).collect();
    let e = err(merge(&reqs, selection(None)).0);
    assert!(e.contains("add up to more than"), "{e}");
}

/// A message of service `svc` with a `cpu` profile of `samples`, and `counters` counter
/// profiles (`c0`...) with one sample each, of value 1 on the empty stack.
fn tiny_samples(samples: Vec<OtlpSample>, counters: usize) -> ExportProfilesServiceRequest {
    let mut m = Msg::new(&(0..counters).map(|i| format!("c{i}")).collect::<Vec<_>>());
    let mut profiles = vec![profile(1, 2, samples)];
    let one = OtlpSample { values: vec![1], ..Default::default() };
    profiles.extend((0..counters).map(|i| profile(4 + i as i32, 3, vec![one.clone()])));
    m.resource(&[("service.name", text("svc"))], profiles);
    m.build()
}

#[test]
fn samples_without_values_are_nothing() {
    // 200,000 samples of 2 bytes each, beside 8 counters: no sample is made.
    let req = tiny_samples(vec![OtlpSample::default(); 200_000], 8);
    let f = merge(&[req], selection(None)).0.unwrap();
    assert_eq!(f.recording.samples.len(), 0);
    // The service is still listed as having none.
    let req = tiny_samples(vec![OtlpSample::default(); 10], 0);
    let e = err(merge(&[req.clone(), req, tiny_samples(Vec::new(), 0)], selection(Some("x"))).0);
    assert!(e.contains("the input holds svc (0 samples)"), "{e}");
}

#[test]
fn samples_of_a_few_bytes_are_refused_past_the_sample_budget() {
    // 100,000 samples of 5 bytes, each with a value of the 64th counter only (5 bytes more):
    // a model sample of 64 values each, some 620 bytes from 10.
    let one = OtlpSample { values: vec![1], ..Default::default() };
    let mut req = tiny_samples(vec![one.clone(); 100_000], 64);
    let profiles = &mut req.resource_profiles[0].scope_profiles[0].profiles;
    for p in &mut profiles[1..64] {
        p.samples.clear();
    }
    profiles[64].samples = vec![one.clone(); 100_000];
    let e = err(merge(&[req], selection(None)).0);
    assert!(e.contains("bytes of samples per byte (samples of a few bytes each)"), "{e}");
    // Points of a sample are samples: of real timestamps (9 bytes a point), read.
    let t0 = 1_700_000_000_000_000_000u64;
    let s = OtlpSample {
        values: vec![1; 100_000],
        timestamps_unix_nano: (0..100_000).map(|i| t0 + i).collect(),
        ..Default::default()
    };
    assert_eq!(merge(&[tiny_samples(vec![s], 0)], selection(None)).0.unwrap().recording.samples.len(), 100_000);
}

#[test]
fn counters_of_one_message_cannot_widen_every_other_sample_past_the_budget() {
    // A message of 64 counters with one sample, and one of 300,000 samples with none: every
    // sample would hold 64 values, 150 MB from 1.5 MB.
    let one = OtlpSample { values: vec![1], ..Default::default() };
    let reqs = [tiny_samples(vec![one.clone()], 64), tiny_samples(vec![one.clone(); 300_000], 0)];
    let e = err(merge(&reqs, selection(None)).0);
    assert!(e.contains("300001 samples of 64 counters each are more counter values than hpm reads"), "{e}");
    // With 2 counters, read: the samples without them hold zeros.
    let reqs = [tiny_samples(vec![one.clone()], 2), tiny_samples(vec![one; 1000], 0)];
    let f = merge(&reqs, selection(None)).0.unwrap();
    assert!(f.recording.samples.iter().all(|s| s.counters.len() == 2));
    assert_eq!(f.recording.samples[0].counters, [1, 1]);
}

#[test]
fn many_processes_of_one_service_are_told_apart() {
    // 20,000 resources of one service, each its own pid: looked up by hash, each once.
    let mut m = Msg::new(&[]);
    for pid in 0..20_000 {
        m.resource(&[("service.name", text("svc")), ("process.pid", Value::IntValue(pid))], vec![cpu(1, 0)]);
    }
    let f = merge(&[m.build()], selection(None)).0.unwrap();
    assert_eq!(f.merged.processes, 20_000);
    assert_eq!(f.recording.samples.len(), 20_000);
    assert_eq!(f.recording.threads.len(), 20_000, "a thread per process");
}

#[test]
fn services_are_told_apart_and_selected_by_their_whole_names() {
    let (a, b) = (format!("{}a", "S".repeat(300)), format!("{}b", "S".repeat(300)));
    let mut m = Msg::new(&[]);
    m.resource(&[("service.name", text(&a))], vec![cpu(1, 0)]);
    m.resource(&[("service.name", text(&b))], vec![cpu(2, 0)]);
    let req = m.build();
    let e = err(merge(std::slice::from_ref(&req), selection(None)).0);
    assert!(e.starts_with("profiles of 2 services: "), "{e}");
    let f = merge(std::slice::from_ref(&req), selection(Some(&b))).0.unwrap();
    assert_eq!((f.merged.service.as_str(), f.recording.samples.len()), (b.as_str(), 2));
    // Shown clipped.
    assert!(f.merged.describe().len() < 300, "{}", f.merged.describe());
    // A name longer than a name is refused.
    let mut m = Msg::new(&[]);
    m.resource(&[("service.name", text(&"S".repeat(MAX_NAME_BYTES + 1)))], vec![cpu(1, 0)]);
    assert!(err(merge(&[m.build()], selection(None)).0).contains("is longer than hpm reads"));
}

#[test]
fn an_error_lists_the_services_of_most_samples_and_counts_the_rest() {
    let mut m = Msg::new(&[]);
    for i in 0..1000 {
        let attrs = [("service.name", text(&format!("s{i}"))), ("host.name", text(&format!("h{i}")))];
        m.resource(&attrs, vec![cpu(1 + i % 7, 0)]);
    }
    let req = m.build();
    let e = err(merge(std::slice::from_ref(&req), selection(None)).0);
    // Most samples first, then by name.
    assert!(e.starts_with("profiles of 1000 services: s104 (7 samples), s111 (7 samples), "), "{e}");
    assert!(e.ends_with(", and 980 more; pick one with --service NAME"), "{e}");
    assert_eq!(e.matches(" samples)").count(), MAX_LISTED);
    let e = err(merge(&[req], selection(Some("nosuch"))).0);
    assert!(e.contains(", and 980 more from hosts h0, h1, h10, "), "{e}");
    assert!(e.ends_with(", and 980 more"), "{e}");
    assert!(e.len() < 2000, "{}", e.len());
}

#[test]
fn profiles_of_different_events_are_not_merged_but_named() {
    let mut m = Msg::new(&["cycles".to_string(), "wall".to_string()]);
    let svc = [("service.name", text("svc"))];
    m.resource(&svc, vec![cpu(2, 0)]);
    let one = OtlpSample { values: vec![1], ..Default::default() };
    m.resource(&svc, vec![profile(4, 3, vec![one.clone(); 3])]);
    m.resource(&svc, vec![profile(5, 2, vec![one; 1])]);
    m.resource(&svc, vec![cpu(1, 0)]);
    let e = err(merge(&[m.build()], selection(None)).0);
    assert_eq!(
        e,
        "profiles of 3 events for service svc: cpu (3 samples), cycles (3 samples), wall (1 samples); hpm reads one \
         event at a time: read the files of each event apart"
    );
}
