//! The encoder against recordings of known stacks, threads and counters: each request is
//! encoded to bytes and decoded with prost, and read back through its tables.

use std::sync::Arc;

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};
use opentelemetry_proto::tonic::profiles::v1development as pb;
use prost::Message;

use super::*;
use crate::model::{EventInfo, Frame, JvmEvent, MethodInfo, Stack, ThreadInfo};
use crate::output::format::{render, Format, Look, Profile};
use crate::output::stacks::StackTable;

const START_WALL: u64 = 1_700_000_000_000_000_000;
const START_TICKS: u64 = 5_000;
const MS: u64 = 1_000_000;

/// Bytes and back: what a receiver sees.
fn round_trip(req: &ExportProfilesServiceRequest) -> ExportProfilesServiceRequest {
    ExportProfilesServiceRequest::decode(req.encode_to_vec().as_slice()).expect("decodes")
}

fn dict(req: &ExportProfilesServiceRequest) -> &pb::ProfilesDictionary {
    req.dictionary.as_ref().expect("dictionary")
}

fn profiles(req: &ExportProfilesServiceRequest) -> &[pb::Profile] {
    &req.resource_profiles[0].scope_profiles[0].profiles
}

fn string(req: &ExportProfilesServiceRequest, i: i32) -> &str {
    &dict(req).string_table[i as usize]
}

/// (type, unit) of each profile.
fn types(req: &ExportProfilesServiceRequest) -> Vec<(String, String)> {
    profiles(req)
        .iter()
        .map(|p| {
            let t = p.sample_type.expect("sample type");
            (string(req, t.type_strindex).to_string(), string(req, t.unit_strindex).to_string())
        })
        .collect()
}

fn profile<'a>(req: &'a ExportProfilesServiceRequest, ty: &str) -> &'a pb::Profile {
    profiles(req)
        .iter()
        .find(|p| string(req, p.sample_type.unwrap().type_strindex) == ty)
        .unwrap_or_else(|| panic!("no {ty} profile"))
}

fn total(p: &pb::Profile) -> i64 {
    p.samples.iter().flat_map(|s| &s.values).sum()
}

/// A frame of a sample, leaf first: Java name, JVM name, file, line, frame type.
#[derive(Debug, PartialEq)]
struct Named {
    name: String,
    system: String,
    file: String,
    line: i64,
    frame_type: Option<String>,
}

fn attr_str(req: &ExportProfilesServiceRequest, i: i32) -> (String, Option<any_value::Value>) {
    let a = &dict(req).attribute_table[i as usize];
    (string(req, a.key_strindex).to_string(), a.value.clone().and_then(|v: AnyValue| v.value))
}

fn frames(req: &ExportProfilesServiceRequest, s: &pb::Sample) -> Vec<Named> {
    let d = dict(req);
    d.stack_table[s.stack_index as usize]
        .location_indices
        .iter()
        .map(|&l| {
            let loc = &d.location_table[l as usize];
            assert_eq!((loc.mapping_index, loc.address, loc.lines.len()), (0, 0, 1));
            let f = &d.function_table[loc.lines[0].function_index as usize];
            let frame_type = loc.attribute_indices.iter().map(|&a| attr_str(req, a)).find_map(|(k, v)| match v {
                Some(any_value::Value::StringValue(s)) if k == "profile.frame.type" => Some(s),
                _ => None,
            });
            Named {
                name: string(req, f.name_strindex).into(),
                system: string(req, f.system_name_strindex).into(),
                file: string(req, f.filename_strindex).into(),
                line: loc.lines[0].line,
                frame_type,
            }
        })
        .collect()
}

fn sample_attrs(req: &ExportProfilesServiceRequest, s: &pb::Sample) -> Vec<(String, Option<any_value::Value>)> {
    s.attribute_indices.iter().map(|&a| attr_str(req, a)).collect()
}

fn str_value(s: &str) -> Option<any_value::Value> {
    Some(any_value::Value::StringValue(s.into()))
}

fn frame(method: MethodIdx, line: i32, kind: FrameKind) -> Frame {
    Frame { method, bci: 0, line, kind }
}

/// Two threads, a Java stack, a stack under native and kernel frames, two counters, and a
/// counter's own sample; cpu-clock every 10 ms.
fn recording() -> Recording {
    let mut rec = Recording {
        start_wall_ns: START_WALL,
        start_ticks: START_TICKS,
        end_ticks: START_TICKS + 1_000 * MS,
        pid: 4242,
        jvm: "HotSpot 21.0.5+11".into(),
        event: EventInfo { name: "cpu-clock".into(), period: 10 * MS, ..EventInfo::default() },
        counters: vec!["cycles".into(), "instructions".into()],
        ..Recording::default()
    };
    let mut put = MethodInfo::java("java.util.HashMap", "putVal", "(Ljava/lang/Object;)V");
    put.source_file = Some("HashMap.java".into());
    let put = rec.methods.intern(put);
    let mut main = MethodInfo::java("Main", "main", "([Ljava/lang/String;)V");
    main.source_file = Some("Main.java".into());
    let main = rec.methods.intern(main);
    let memcpy = rec.methods.intern(MethodInfo::native("memcpy"));
    let syscall = rec.methods.intern(MethodInfo::native("do_syscall_64"));
    let t_main = rec.add_thread(ThreadInfo { os_tid: 100, name: "main".into(), is_java: true, ..Default::default() });
    let t_work =
        rec.add_thread(ThreadInfo { os_tid: 101, name: "worker-1".into(), is_java: true, ..Default::default() });
    let java: Stack = Arc::from([frame(put, 10, FrameKind::JitCompiled), frame(main, 5, FrameKind::Interpreted)]);
    let deep: Stack = Arc::from([
        frame(syscall, -1, FrameKind::Kernel),
        frame(memcpy, -1, FrameKind::Native),
        frame(put, 11, FrameKind::Inlined),
        frame(main, 5, FrameKind::JitCompiled),
    ]);
    let at = |ms: u64, thread, stack: &Stack, weight, repeat, counters: [u64; 2]| Sample {
        time: START_TICKS + ms * MS,
        thread,
        weight,
        repeat,
        counters: counters.to_vec(),
        ..Sample::of_stack(stack.clone())
    };
    rec.samples = vec![
        at(100, t_main, &java, 10 * MS, 1, [100, 50]),
        at(200, t_work, &java, 30 * MS, 3, [0, 7]),
        at(300, t_main, &deep, 10 * MS, 1, [1, 1]),
        // The cycles counter's own overflow sample: no cpu time, no sample counted.
        at(400, t_work, &deep, 0, 1, [500, 0]),
    ];
    rec
}

fn resource() -> Resource {
    Resource {
        service: "orders".into(),
        host: None,
        pid: 4242,
        runtime_name: Some("OpenJDK Runtime Environment".into()),
        runtime_version: Some("21.0.5+11".into()),
        runtime_description: None,
    }
}

/// Every table starts with its zero value and every index points into its table.
fn assert_well_formed(req: &ExportProfilesServiceRequest) {
    let d = dict(req);
    assert_eq!(d.string_table[0], "");
    assert_eq!(d.mapping_table, [pb::Mapping::default()]);
    assert_eq!(d.link_table, [pb::Link::default()]);
    assert_eq!(d.location_table[0], pb::Location::default());
    assert_eq!(d.function_table[0], pb::Function::default());
    assert_eq!(d.stack_table[0], pb::Stack::default());
    assert_eq!(d.attribute_table[0], pb::KeyValueAndUnit::default());
    let strings = d.string_table.len() as i32;
    for f in &d.function_table {
        assert!([f.name_strindex, f.system_name_strindex, f.filename_strindex].iter().all(|&i| i < strings));
    }
    for l in &d.location_table[1..] {
        assert!(l.lines.iter().all(|ln| (ln.function_index as usize) < d.function_table.len()));
        assert!(l.attribute_indices.iter().all(|&a| (a as usize) < d.attribute_table.len()));
    }
    for s in &d.stack_table {
        assert!(s.location_indices.iter().all(|&l| l > 0 && (l as usize) < d.location_table.len()));
    }
    assert!(d.attribute_table.iter().all(|a| a.key_strindex < strings));
    for p in profiles(req) {
        assert_eq!(p.profile_id.len(), 16);
        assert!(p.profile_id.iter().any(|&b| b != 0));
        for s in &p.samples {
            assert!((s.stack_index as usize) < d.stack_table.len());
            assert!(s.attribute_indices.iter().all(|&a| a > 0 && (a as usize) < d.attribute_table.len()));
            assert_eq!(s.values.len(), 1);
            assert!(s.timestamps_unix_nano.len() <= 1);
            for &t in &s.timestamps_unix_nano {
                assert!(t >= p.time_unix_nano && t < p.time_unix_nano + p.duration_nano, "{t} outside the profile");
            }
        }
    }
}

#[test]
fn a_recording_becomes_one_profile_per_sample_type() {
    let rec = recording();
    let req = round_trip(&encode_recording(&rec, &resource()));
    assert_well_formed(&req);
    let ty = |t: &str, u: &str| (t.to_string(), u.to_string());
    assert_eq!(
        types(&req),
        [ty("cpu", "nanoseconds"), ty("samples", "count"), ty("cycles", "count"), ty("instructions", "count")]
    );
    assert_eq!(total(profile(&req, "cpu")), 50 * MS as i64);
    assert_eq!(total(profile(&req, "samples")), 5);
    assert_eq!(total(profile(&req, "cycles")), 601);
    assert_eq!(total(profile(&req, "instructions")), 58);
    // The counter's own sample is in the cycles profile only.
    assert_eq!(profile(&req, "cpu").samples.len(), 3);
    assert_eq!(profile(&req, "cycles").samples.len(), 3);
    for p in profiles(&req) {
        assert_eq!((p.time_unix_nano, p.duration_nano), (START_WALL, 1_000 * MS));
        let period = p.period_type.unwrap();
        assert_eq!(
            (string(&req, period.type_strindex), string(&req, period.unit_strindex)),
            ("cpu-clock", "nanoseconds")
        );
        assert_eq!(p.period, 10 * MS as i64);
    }
    let ids: std::collections::HashSet<_> = profiles(&req).iter().map(|p| p.profile_id.clone()).collect();
    assert_eq!(ids.len(), 4, "profile ids repeat");
}

#[test]
fn frames_are_named_in_java_form_leaf_first_with_files_lines_and_types() {
    let req = round_trip(&encode_recording(&recording(), &resource()));
    let cpu = profile(&req, "cpu");
    let named = |name: &str, system: &str, file: &str, line, ty: &str| Named {
        name: name.into(),
        system: system.into(),
        file: file.into(),
        line,
        frame_type: Some(ty.into()),
    };
    let put = |line| {
        named("java.util.HashMap.putVal", "java/util/HashMap.putVal(Ljava/lang/Object;)V", "HashMap.java", line, "jvm")
    };
    let main = named("Main.main", "Main.main([Ljava/lang/String;)V", "Main.java", 5, "jvm");
    assert_eq!(frames(&req, &cpu.samples[0]), [put(10), main]);
    let main = named("Main.main", "Main.main([Ljava/lang/String;)V", "Main.java", 5, "jvm");
    assert_eq!(
        frames(&req, &cpu.samples[2]),
        [named("do_syscall_64", "", "", 0, "kernel"), named("memcpy", "", "", 0, "native"), put(11), main]
    );
    // One stack for both threads' samples of it.
    assert_eq!(cpu.samples[0].stack_index, cpu.samples[1].stack_index);
    assert_ne!(cpu.samples[0].stack_index, cpu.samples[2].stack_index);
    // Each function once.
    assert_eq!(dict(&req).function_table.len(), 5);
}

#[test]
fn samples_carry_their_thread_time_and_values() {
    let req = round_trip(&encode_recording(&recording(), &resource()));
    let cpu = profile(&req, "cpu");
    let thread = |name: &str, tid| {
        vec![
            ("thread.name".to_string(), str_value(name)),
            ("thread.id".to_string(), Some(any_value::Value::IntValue(tid))),
        ]
    };
    assert_eq!(sample_attrs(&req, &cpu.samples[0]), thread("main", 100));
    assert_eq!(sample_attrs(&req, &cpu.samples[1]), thread("worker-1", 101));
    let times: Vec<_> = cpu.samples.iter().map(|s| s.timestamps_unix_nano.clone()).collect();
    assert_eq!(times, [[START_WALL + 100 * MS], [START_WALL + 200 * MS], [START_WALL + 300 * MS]]);
    let values: Vec<_> = cpu.samples.iter().map(|s| s.values.clone()).collect();
    assert_eq!(values, [[10 * MS as i64], [30 * MS as i64], [10 * MS as i64]]);
    let counts: Vec<_> = profile(&req, "samples").samples.iter().map(|s| s.values[0]).collect();
    assert_eq!(counts, [1, 3, 1]);
}

#[test]
fn the_resource_says_what_is_known_with_plain_keys() {
    let req = round_trip(&encode_recording(&recording(), &resource()));
    let attrs: Vec<_> = req.resource_profiles[0]
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .iter()
        .map(|kv| {
            assert_eq!(kv.key_strindex, 0);
            (kv.key.as_str(), kv.value.clone().and_then(|v| v.value))
        })
        .collect();
    assert_eq!(
        attrs,
        [
            ("service.name", str_value("orders")),
            ("process.pid", Some(any_value::Value::IntValue(4242))),
            ("process.runtime.name", str_value("OpenJDK Runtime Environment")),
            ("process.runtime.version", str_value("21.0.5+11")),
            ("telemetry.sdk.name", str_value("hpm")),
            ("telemetry.sdk.version", str_value(env!("CARGO_PKG_VERSION"))),
        ]
    );
    let scope = req.resource_profiles[0].scope_profiles[0].scope.as_ref().unwrap();
    assert_eq!((scope.name.as_str(), scope.version.as_str()), ("hpm", env!("CARGO_PKG_VERSION")));
    let of_rec = Resource::of_recording(&recording());
    assert_eq!(
        (of_rec.service.as_str(), of_rec.pid, of_rec.runtime_description.as_deref()),
        (UNKNOWN_SERVICE, 4242, Some("HotSpot 21.0.5+11"))
    );
}

#[test]
fn wall_samples_are_wall_time_with_their_thread_state() {
    let mut rec = recording();
    rec.event = EventInfo { name: "wall".into(), sampler: SamplerKind::Wall.into(), ..rec.event };
    let waiting = rec.state_idx("WAITING");
    rec.samples.truncate(1);
    rec.samples[0].state = Some(waiting);
    let req = round_trip(&encode_recording(&rec, &resource()));
    assert_well_formed(&req);
    let wall = profile(&req, "wall");
    assert_eq!(string(&req, wall.sample_type.unwrap().unit_strindex), "nanoseconds");
    assert_eq!(sample_attrs(&req, &wall.samples[0])[2], ("thread.state".to_string(), str_value("WAITING")));
}

#[test]
fn a_count_event_is_its_own_sample_type() {
    let mut rec = recording();
    rec.event = EventInfo { name: "page-faults".into(), period: 1, unit: PeriodUnit::Events, ..rec.event };
    let req = round_trip(&encode_recording(&rec, &resource()));
    assert_eq!(types(&req)[0], ("page-faults".to_string(), "count".to_string()));
    assert_eq!(total(profile(&req, "page-faults")), 50 * MS as i64);
}

#[test]
fn jvm_events_are_alloc_and_lock_profiles_of_their_own_stacks() {
    let mut rec = recording();
    let stack = rec.samples[0].stack.clone();
    let event = |kind, ms: u64, weight| JvmEvent {
        time: START_TICKS + ms * MS,
        weight,
        thread: ThreadIdx(1),
        ..JvmEvent::of(kind, stack.clone())
    };
    rec.events = vec![
        event(JvmEventKind::Allocation, 10, 4096),
        event(JvmEventKind::Allocation, 20, 512),
        event(JvmEventKind::MonitorEnter, 30, 2 * MS),
        event(JvmEventKind::ThreadPark, 40, 3 * MS),
    ];
    rec.event.alloc_interval = 512 * 1024;
    let req = round_trip(&encode_recording(&rec, &resource()));
    assert_well_formed(&req);
    assert_eq!(types(&req)[4..], [("alloc".into(), "bytes".into()), ("lock".into(), "nanoseconds".into())]);
    assert_eq!(total(profile(&req, "alloc")), 4608);
    assert_eq!(total(profile(&req, "lock")), 5 * MS as i64);
    assert_eq!(profile(&req, "alloc").period, 512 * 1024);
    let lock = profile(&req, "lock");
    assert_eq!(lock.samples[1].timestamps_unix_nano, [START_WALL + 40 * MS]);
    assert_eq!(frames(&req, &lock.samples[0])[0].name, "java.util.HashMap.putVal");
}

/// The agent's method table grows between chunks; the period names each chunk's samples by
/// the table as it was when the chunk came.
#[test]
fn a_period_of_two_chunks_whose_method_table_changed() {
    let mut rec = Recording {
        start_wall_ns: START_WALL,
        start_ticks: START_TICKS,
        counters: vec!["cycles".into()],
        ..Recording::default()
    };
    let a = rec.methods.intern(MethodInfo::java("p.A", "a", "()V"));
    rec.add_thread(ThreadInfo { os_tid: 7, name: "t".into(), ..Default::default() });
    let sample = |ms: u64, stack: Stack, cycles| Sample {
        time: START_TICKS + ms * MS,
        counters: vec![cycles],
        weight: 10 * MS,
        ..Sample::of_stack(stack)
    };
    let one = vec![sample(10, Arc::from([frame(a, 3, FrameKind::JitCompiled)]), 5)];
    let mut b = PeriodBuilder::new(START_WALL);
    assert!(b.is_empty());
    let empty_bytes = b.approx_bytes();
    b.add(&rec, &one);
    assert_eq!((b.samples(), b.is_empty()), (1, false));
    assert!(b.approx_bytes() > empty_bytes);

    // The next chunk's table: another method where `a` was, `a` and a new one after it.
    let mut next = Recording { methods: Default::default(), samples: Vec::new(), ..rec.clone() };
    next.methods.intern(MethodInfo::java("p.X", "x", "()V"));
    let a2 = next.methods.intern(MethodInfo::java("p.A", "a", "()V"));
    let c = next.methods.intern(MethodInfo::java("p.C", "c", "()V"));
    next.counters = vec!["instructions".into(), "cycles".into()];
    let mut two = vec![
        sample(20, Arc::from([frame(a2, 3, FrameKind::JitCompiled)]), 0),
        sample(30, Arc::from([frame(c, 8, FrameKind::JitCompiled), frame(a2, 4, FrameKind::JitCompiled)]), 0),
    ];
    two[0].counters = vec![9, 6];
    two[1].counters = vec![1, 0];
    b.add(&next, &two);
    assert_eq!(b.samples(), 3);

    let req = round_trip(&b.finish(START_WALL + 1_000 * MS, &resource()));
    assert!(b.is_empty() && b.samples() == 0, "finish resets the builder");
    assert_well_formed(&req);
    let cpu = profile(&req, "cpu");
    let names = |s| frames(&req, s).into_iter().map(|f| (f.name, f.line)).collect::<Vec<_>>();
    assert_eq!(names(&cpu.samples[0]), [("p.A.a".to_string(), 3)]);
    assert_eq!(names(&cpu.samples[1]), [("p.A.a".to_string(), 3)]);
    assert_eq!(names(&cpu.samples[2]), [("p.C.c".to_string(), 8), ("p.A.a".to_string(), 4)]);
    assert_eq!(cpu.samples[0].stack_index, cpu.samples[1].stack_index, "one stack across the chunks");
    assert!(!dict(&req).string_table.iter().any(|s| s == "p.X.x"), "a method no sample ran is named");
    // Counters by name, whatever their order in each chunk.
    assert_eq!(total(profile(&req, "cycles")), 11);
    assert_eq!(total(profile(&req, "instructions")), 10);
    assert_eq!(total(profile(&req, "samples")), 3);
}

/// A chunk's samples taken before the period began widen it: every timestamp is inside.
#[test]
fn the_profiles_cover_samples_outside_the_period() {
    let rec = recording();
    let mut b = PeriodBuilder::new(START_WALL + 250 * MS);
    b.add(&rec, &rec.samples);
    let req = round_trip(&b.finish(START_WALL + 260 * MS, &resource()));
    assert_well_formed(&req);
    let cpu = profile(&req, "cpu");
    assert_eq!((cpu.time_unix_nano, cpu.duration_nano), (START_WALL + 100 * MS, 300 * MS + 1));
}

/// `.otlp` through the one format table: sample by sample from a recording read back, summed
/// from the table where the recording no longer holds its samples; the same totals.
#[test]
fn the_otlp_file_is_rendered_from_the_recording_or_its_table() {
    let mut rec = recording();
    let table = StackTable::from_recording(&rec);
    let otlp = |rec: &Recording| {
        let bytes = render(Format::Otlp, Profile { tree: None, table: Some((rec, &table)) }, &Look::default());
        ExportProfilesServiceRequest::decode(bytes.expect("rendered").as_slice()).expect("decodes")
    };
    let whole = otlp(&rec);
    assert_well_formed(&whole);
    assert_eq!(profile(&whole, "cpu").samples[0].timestamps_unix_nano.len(), 1);
    rec.samples.clear();
    let summed = otlp(&rec);
    assert_well_formed(&summed);
    assert_eq!(types(&summed), types(&whole));
    for ty in ["cpu", "samples", "cycles", "instructions"] {
        if ty != "samples" {
            assert_eq!(total(profile(&summed, ty)), total(profile(&whole, ty)), "{ty}");
        }
        assert!(profile(&summed, ty).samples.iter().all(|s| s.timestamps_unix_nano.is_empty()));
    }
    // The table counts the counter's own sample as a sample.
    assert_eq!(total(profile(&summed, "samples")), table.total_samples() as i64);
    let cpu = profile(&summed, "cpu");
    let deep = cpu.samples.iter().find(|s| frames(&summed, s).len() == 4).unwrap();
    let types: Vec<_> = frames(&summed, deep).into_iter().map(|f| f.frame_type).collect();
    assert_eq!(types, [None, None, Some("jvm".into()), Some("jvm".into())]);
}
