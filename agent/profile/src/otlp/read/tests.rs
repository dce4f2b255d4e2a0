//! The reader against requests built here with prost, as hpm's convention writes them, and
//! against a real collector's output of async-profiler 4.6 (tests/data/otlp).

use std::path::{Path, PathBuf};

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value::Value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Location, Profile, ProfilesDictionary, ResourceProfiles, Sample, ScopeProfiles,
    Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::*;
use crate::model::FrameKind;
use crate::scratch_tests::ScratchDir;

/// A request builder: one dictionary, resources each with one scope of `cpu`, `samples` and a
/// `cycles` counter profile, samples of two stacks on the threads named.
#[derive(Default)]
struct Req {
    dict: ProfilesDictionary,
    resources: Vec<ResourceProfiles>,
}

impl Req {
    fn new() -> Req {
        let mut r = Req::default();
        r.dict.string_table.push(String::new());
        r.dict.function_table.push(Function::default());
        r.dict.location_table.push(Location::default());
        r.dict.stack_table.push(Stack::default());
        r.dict.attribute_table.push(KeyValueAndUnit::default());
        // Stack 1: Main.work <- Main.main (leaf first); stack 2: read (native) <- Main.main.
        let work = r.function("Main.work", "Main.work()V", "Main.java");
        let main = r.function("Main.main", "Main.main([Ljava/lang/String;)V", "Main.java");
        let read = r.function("read", "", "");
        let (lw, lm, lr) = (r.location(work, 12, "jvm"), r.location(main, 3, "jvm"), r.location(read, 0, "native"));
        r.dict.stack_table.push(Stack { location_indices: vec![lw, lm] });
        r.dict.stack_table.push(Stack { location_indices: vec![lr, lm] });
        r
    }

    fn s(&mut self, s: &str) -> i32 {
        if let Some(i) = self.dict.string_table.iter().position(|x| x == s) {
            return i as i32;
        }
        self.dict.string_table.push(s.to_string());
        self.dict.string_table.len() as i32 - 1
    }

    fn function(&mut self, name: &str, system: &str, file: &str) -> i32 {
        let f = Function {
            name_strindex: self.s(name),
            system_name_strindex: self.s(system),
            filename_strindex: self.s(file),
            start_line: 0,
        };
        self.dict.function_table.push(f);
        self.dict.function_table.len() as i32 - 1
    }

    fn attr(&mut self, key: &str, v: Value) -> i32 {
        let a =
            KeyValueAndUnit { key_strindex: self.s(key), value: Some(AnyValue { value: Some(v) }), unit_strindex: 0 };
        self.dict.attribute_table.push(a);
        self.dict.attribute_table.len() as i32 - 1
    }

    fn location(&mut self, f: i32, line: i64, kind: &str) -> i32 {
        let a = self.attr("profile.frame.type", Value::StringValue(kind.into()));
        let l = Location {
            lines: vec![Line { function_index: f, line, column: 0 }],
            attribute_indices: vec![a],
            ..Default::default()
        };
        self.dict.location_table.push(l);
        self.dict.location_table.len() as i32 - 1
    }

    fn vt(&mut self, t: &str, u: &str) -> Option<ValueType> {
        Some(ValueType { type_strindex: self.s(t), unit_strindex: self.s(u) })
    }

    /// A resource of `service` on `host` (pid `pid`) whose samples are `(stack, thread, tid,
    /// time, cycles)`, each one 10 ms sample.
    fn resource(&mut self, service: &str, host: &str, pid: i64, samples: &[(i32, &str, i64, u64, i64)]) {
        let kv =
            |k: &str, v: Value| KeyValue { key: k.into(), value: Some(AnyValue { value: Some(v) }), key_strindex: 0 };
        let attributes = vec![
            kv("service.name", Value::StringValue(service.into())),
            kv("host.name", Value::StringValue(host.into())),
            kv("process.pid", Value::IntValue(pid)),
            kv("process.runtime.name", Value::StringValue("OpenJDK Runtime Environment".into())),
            kv("process.runtime.version", Value::StringValue("17.0.19".into())),
            kv("telemetry.sdk.name", Value::StringValue("hpm".into())),
        ];
        let mut rows = Vec::new();
        for &(stack, name, tid, time, cycles) in samples {
            let attrs = vec![
                self.attr("thread.name", Value::StringValue(name.into())),
                self.attr("thread.id", Value::IntValue(tid)),
            ];
            rows.push((stack, attrs, time, cycles));
        }
        let profile = |vt: Option<ValueType>, value: &dyn Fn(i64) -> i64, period_type: Option<ValueType>| Profile {
            sample_type: vt,
            samples: rows
                .iter()
                .map(|(stack, attrs, time, cycles)| Sample {
                    stack_index: *stack,
                    attribute_indices: attrs.clone(),
                    link_index: 0,
                    values: vec![value(*cycles)],
                    timestamps_unix_nano: vec![*time],
                })
                .collect(),
            time_unix_nano: 1_000_000_000,
            duration_nano: 10_000_000_000,
            period_type,
            period: 10_000_000,
            ..Default::default()
        };
        let (cpu, samples, cycles) =
            (self.vt("cpu", "nanoseconds"), self.vt("samples", "count"), self.vt("cycles", "count"));
        let period = self.vt("cpu-clock", "nanoseconds");
        let profiles = vec![
            profile(cpu, &|_| 10_000_000, period),
            profile(samples, &|_| 1, period),
            profile(cycles, &|c| c, period),
        ];
        self.resources.push(ResourceProfiles {
            resource: Some(Resource { attributes, ..Default::default() }),
            scope_profiles: vec![ScopeProfiles { profiles, ..Default::default() }],
            ..Default::default()
        });
    }

    fn build(self) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest { resource_profiles: self.resources, dictionary: Some(self.dict) }
    }
}

fn framed(reqs: &[ExportProfilesServiceRequest]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in reqs {
        let b = r.encode_to_vec();
        out.extend_from_slice(&(b.len() as u32).to_be_bytes());
        out.extend_from_slice(&b);
    }
    out
}

fn read(path: &Path, service: Option<&str>, host: Option<&str>) -> Result<Fleet, ReadError> {
    read_fleet(&[path.to_path_buf()], &Selection { service: service.map(Into::into), host: host.map(Into::into) })
}

/// Two services, A on two hosts (two JVMs) and B on one.
fn fleet() -> ExportProfilesServiceRequest {
    let mut r = Req::new();
    r.resource("A", "h1", 100, &[(1, "main", 7, 2_000_000_000, 50), (2, "main", 7, 2_010_000_000, 5)]);
    r.resource("A", "h2", 200, &[(1, "main", 7, 3_000_000_000, 40)]);
    r.resource(
        "B",
        "h1",
        300,
        &[(2, "io", 9, 2_500_000_000, 1), (2, "io", 9, 2_600_000_000, 1), (1, "io", 9, 2_700_000_000, 1)],
    );
    r.build()
}

#[test]
fn one_service_of_two_hosts_merges_into_one_recording() {
    let d = ScratchDir::new("otlp");
    let p = d.join("fleet.pb");
    std::fs::write(&p, framed(&[fleet()])).unwrap();
    let f = read(&p, Some("A"), None).unwrap();
    let rec = &f.recording;
    assert_eq!(f.merged.describe(), "2 JVMs of service A on 2 hosts");
    assert!(rec.jvm.starts_with("2 JVMs of service A on 2 hosts (OpenJDK Runtime Environment 17.0.19)"), "{}", rec.jvm);
    assert_eq!(rec.samples.len(), 3);
    // The same thread name and id in two JVMs are two threads.
    assert_eq!(rec.threads.len(), 2);
    assert!(rec.threads.iter().all(|t| t.name == "main" && t.os_tid == 7 && t.is_java));
    assert_eq!(rec.event.name, "cpu-clock");
    assert_eq!(rec.counters, ["cycles"]);
    let cycles: u64 = rec.samples.iter().map(|s| s.counters[0]).sum();
    assert_eq!(cycles, 95);
    assert!(rec.samples.iter().all(|s| s.weight == 10_000_000 && s.repeat == 1));
    let leaf = rec.method(rec.samples[0].stack[0].method);
    assert_eq!((leaf.class_name.as_ref(), leaf.name.as_ref(), leaf.descriptor.as_ref()), ("Main", "work", "()V"));
    assert_eq!(leaf.source_file.as_deref(), Some("Main.java"));
    assert_eq!((rec.samples[0].stack[0].line, rec.samples[0].stack[0].kind), (12, FrameKind::JitCompiled));
    let native = &rec.samples[1].stack[0];
    assert_eq!((rec.method(native.method).display_name(), native.kind), ("read".to_string(), FrameKind::Native));
    assert_eq!((rec.start_wall_ns, rec.start_ticks), (1_000_000_000, 1_000_000_000));
    assert_eq!(rec.samples[2].time, 3_000_000_000);
    // One host: one JVM, and its pid.
    let f = read(&p, Some("A"), Some("h2")).unwrap();
    assert_eq!((f.merged.describe().as_str(), f.recording.pid), ("1 JVM of service A on 1 host", 200));
}

#[test]
fn several_services_without_service_are_listed_and_a_missing_one_is_named() {
    let d = ScratchDir::new("otlp");
    let p = d.join("two.pb");
    std::fs::write(&p, framed(&[fleet()])).unwrap();
    let e = read(&p, None, None).err().unwrap().to_string();
    assert!(e.contains("profiles of 2 services: A (3 samples), B (3 samples); pick one with --service NAME"), "{e}");
    let e = read(&p, Some("C"), None).err().unwrap().to_string();
    assert!(
        e.contains("no profiles of service C; the input holds A (3 samples), B (3 samples) from hosts h1, h2"),
        "{e}"
    );
    assert_eq!(read(&p, None, Some("h2")).unwrap().merged.service, "A");
}

/// A second period of the fleet: A's first JVM now spends its time in `read`.
fn fleet_later() -> ExportProfilesServiceRequest {
    let mut r = Req::new();
    r.resource("A", "h1", 100, &[(2, "main", 7, 12_000_000_000, 7), (2, "main", 7, 12_010_000_000, 5)]);
    r.resource("A", "h2", 200, &[(1, "main", 7, 13_000_000_000, 40)]);
    r.resource("B", "h1", 300, &[(1, "io", 9, 12_500_000_000, 1)]);
    r.build()
}

/// tests/data/otlp/fleet/ (the CLI's tests read it) holds what this builder makes: two periods
/// of services A (two JVMs on two hosts) and B, as .pb (framed) and .jsonl; `one.otlp` is the
/// first period bare. `HPM_BLESS=1` writes them.
#[test]
fn the_checked_in_fleet_files_are_what_the_builder_makes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/otlp/fleet");
    let files: [(&str, Vec<u8>); 3] = [
        ("monday.pb", framed(&[fleet()])),
        ("today.jsonl", format!("{}\n", to_json(&fleet_later())).into_bytes()),
        ("../one.otlp", fleet().encode_to_vec()),
    ];
    for (name, bytes) in files {
        let p = dir.join(name);
        if std::env::var_os("HPM_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&p, &bytes).unwrap();
        }
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{name}: run with HPM_BLESS=1 and review");
    }
}

#[test]
fn json_lines_read_as_the_same_messages() {
    // The collector's JSON as written by `format: json` for a request of each service.
    let req = fleet();
    let json = crate::otlp::read::tests::to_json(&req);
    let d = ScratchDir::new("otlp");
    let p = d.join("fleet.jsonl");
    std::fs::write(&p, format!("{json}\n\n{json}\n")).unwrap();
    let f = read(&p, Some("B"), None).unwrap();
    assert_eq!(f.recording.samples.len(), 6);
    assert_eq!(f.merged.messages, 2);
    assert_eq!(f.recording.threads.len(), 1, "one JVM's thread across its messages");
}

/// OTLP/JSON of the fields the reader maps, as the collector writes them (int64 as strings,
/// zero values left out).
pub(super) fn to_json(r: &ExportProfilesServiceRequest) -> String {
    use serde_json::json;
    let d = r.dictionary.clone().unwrap_or_default();
    let any = |v: &Option<AnyValue>| match v.as_ref().and_then(|v| v.value.clone()) {
        Some(Value::StringValue(s)) => json!({ "stringValue": s }),
        Some(Value::IntValue(n)) => json!({ "intValue": n.to_string() }),
        _ => json!({}),
    };
    let vt = |v: &Option<ValueType>| {
        v.as_ref().map(|v| json!({ "typeStrindex": v.type_strindex, "unitStrindex": v.unit_strindex }))
    };
    let rps: Vec<_> = r
        .resource_profiles
        .iter()
        .map(|rp| {
            let attrs: Vec<_> = rp.resource.as_ref().unwrap().attributes.iter().map(|kv| json!({ "key": kv.key, "value": any(&kv.value) })).collect();
            let profiles: Vec<_> = rp.scope_profiles[0]
                .profiles
                .iter()
                .map(|p| {
                    let samples: Vec<_> = p
                        .samples
                        .iter()
                        .map(|s| json!({
                            "stackIndex": s.stack_index,
                            "attributeIndices": s.attribute_indices,
                            "values": s.values.iter().map(i64::to_string).collect::<Vec<_>>(),
                            "timestampsUnixNano": s.timestamps_unix_nano.iter().map(u64::to_string).collect::<Vec<_>>(),
                        }))
                        .collect();
                    json!({ "sampleType": vt(&p.sample_type), "samples": samples, "timeUnixNano": p.time_unix_nano.to_string(),
                            "durationNano": p.duration_nano.to_string(), "periodType": vt(&p.period_type), "period": p.period.to_string() })
                })
                .collect();
            json!({ "resource": { "attributes": attrs }, "scopeProfiles": [{ "scope": {}, "profiles": profiles }] })
        })
        .collect();
    let dict = json!({
        "stringTable": d.string_table,
        "functionTable": d.function_table.iter().map(|f| json!({ "nameStrindex": f.name_strindex, "systemNameStrindex": f.system_name_strindex, "filenameStrindex": f.filename_strindex })).collect::<Vec<_>>(),
        "locationTable": d.location_table.iter().map(|l| json!({ "lines": l.lines.iter().map(|n| json!({ "functionIndex": n.function_index, "line": n.line.to_string() })).collect::<Vec<_>>(), "attributeIndices": l.attribute_indices })).collect::<Vec<_>>(),
        "stackTable": d.stack_table.iter().map(|s| json!({ "locationIndices": s.location_indices })).collect::<Vec<_>>(),
        "attributeTable": d.attribute_table.iter().map(|a| json!({ "keyStrindex": a.key_strindex, "value": any(&a.value) })).collect::<Vec<_>>(),
    });
    json!({ "resourceProfiles": rps, "dictionary": dict }).to_string()
}

#[test]
fn a_hostile_index_is_one_line_naming_the_message() {
    let mut bad = fleet();
    bad.dictionary.as_mut().unwrap().stack_table[1].location_indices.push(9999);
    let d = ScratchDir::new("otlp");
    let p = d.join("bad.pb");
    std::fs::write(&p, framed(&[fleet(), bad])).unwrap();
    let e = read(&p, Some("A"), None).err().unwrap();
    assert_eq!(e.message_no, 2);
    let text = e.to_string();
    assert!(text.contains("bad.pb: message 2: location index 9999 is out of range"), "{text}");
    assert_eq!(text.lines().count(), 1);
    for (i, f) in [-1, i32::MAX].into_iter().enumerate() {
        let mut bad = fleet();
        bad.dictionary.as_mut().unwrap().location_table[1].lines[0].function_index = f;
        let d = ScratchDir::new("otlp");
        let p = d.join(format!("bad{i}.otlp"));
        std::fs::write(&p, bad.encode_to_vec()).unwrap();
        let e = read(&p, Some("A"), None).err().unwrap().to_string();
        assert!(e.contains("message 1: function index"), "{e}");
    }
}

#[test]
fn framing_is_checked_against_the_content() {
    let req = fleet().encode_to_vec();
    // A bare request named .pb: its first bytes read as a length.
    let d = ScratchDir::new("otlp");
    let p = d.join("bare.pb");
    std::fs::write(&p, &req).unwrap();
    let e = read(&p, Some("A"), None).err().unwrap().to_string();
    assert!(e.contains("bare.pb: message 1:") && e.contains("a bare request is .otlp"), "{e}");
    // A cut message, a huge length, compressed files, other extensions.
    let d = ScratchDir::new("otlp");
    let p = d.join("cut.pb");
    let mut f = framed(&[fleet()]);
    f.truncate(f.len() - 3);
    std::fs::write(&p, f).unwrap();
    assert!(read(&p, None, None).err().unwrap().to_string().contains("the file ends"));
    std::fs::write(&p, [0xff, 0xff, 0xff, 0xff, 0]).unwrap();
    assert!(read(&p, None, None).err().unwrap().to_string().contains("more than hpm reads"));
    std::fs::write(&p, [0x28, 0xb5, 0x2f, 0xfd, 0]).unwrap();
    assert!(read(&p, None, None).err().unwrap().to_string().contains("zstd-compressed"));
    let d = ScratchDir::new("otlp");
    let p = d.join("x.json");
    std::fs::write(&p, "{\"schema\":\"hpm-profile/1\"}\n").unwrap();
    assert!(read(&p, None, None).err().unwrap().to_string().contains("message 1: not OTLP profiles JSON"));
    std::fs::write(&p, "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"period\":\"x\"}]}]}]}\n").unwrap();
    assert!(read(&p, None, None).err().unwrap().to_string().contains("`period` is not an integer"));
    let e = read(Path::new("x.txt"), None, None).err().unwrap().to_string();
    assert!(e.contains("not an OTLP profiles file"), "{e}");
    // Empty input holds no profiles.
    let d = ScratchDir::new("otlp");
    let p = d.join("empty.pb");
    std::fs::write(&p, []).unwrap();
    assert!(read(&p, None, None).err().unwrap().to_string().contains("holds no OTLP profiles"));
}

#[test]
fn a_location_named_many_times_cannot_multiply_frames_past_the_budget() {
    let mut r = Req::new();
    r.resource("A", "h", 1, &[(1, "t", 1, 1, 1)]);
    let mut req = r.build();
    let d = req.dictionary.as_mut().unwrap();
    d.location_table[1].lines = vec![Line { function_index: 1, line: 1, column: 0 }; 4000];
    for _ in 0..400 {
        d.stack_table.push(Stack { location_indices: vec![1; 1000] });
    }
    let n = d.stack_table.len() as i32;
    let s = &mut req.resource_profiles[0].scope_profiles[0].profiles;
    for p in s.iter_mut() {
        let one = p.samples[0].clone();
        p.samples = (3..n).map(|i| Sample { stack_index: i, ..one.clone() }).collect();
    }
    let d = ScratchDir::new("otlp");
    let p = d.join("amplify.otlp");
    std::fs::write(&p, req.encode_to_vec()).unwrap();
    let e = read(&p, None, None).err().unwrap().to_string();
    assert!(e.contains("deeper than hpm reads") || e.contains("more frames than a message"), "{e}");
}

fn async_profiler(ext: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/data/otlp/async-profiler-4.6.{ext}"))
}

/// A real collector's file exporter output of async-profiler 4.6 pushing `event=cpu,
/// interval=10ms,otlp,loop=2s` for Shares (a 50%, b 30%, c 20%), in both formats: the same
/// samples, its JVM-form names read as hpm's, kernel frames by their `_[k]`.
#[test]
fn async_profilers_pushes_read_alike_in_both_formats() {
    let pb = read(&async_profiler("pb"), None, None).unwrap();
    let json = read(&async_profiler("json"), None, None).unwrap();
    let (a, b) = (&pb.recording, &json.recording);
    assert_eq!(pb.merged.service, "apdemo");
    assert_eq!(a.samples.len(), b.samples.len());
    let total: u64 = a.samples.iter().map(|s| s.count()).sum();
    assert_eq!(total, b.samples.iter().map(|s| s.count()).sum::<u64>());
    assert!(total > 100, "{total}");
    assert_eq!(a.event.period, 10_000_000);
    assert!(a.samples.iter().all(|s| s.weight == s.repeats() * 10_000_000));
    let names: std::collections::BTreeSet<String> = a.methods.iter().map(|(_, m)| m.display_name()).collect();
    assert!(names.contains("java.lang.Thread.run") && names.contains("Shares.spin"), "{names:?}");
    let kernel = a.samples.iter().flat_map(|s| s.stack.iter()).find(|f| f.kind == FrameKind::Kernel);
    if let Some(f) = kernel {
        assert!(!a.method(f.method).name.ends_with("_[k]"));
    }
}
