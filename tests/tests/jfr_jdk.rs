//! hpm's JFR files checked with the JDK's own tools (`jfr summary`, `jfr print`,
//! `jdk.jfr.consumer.RecordingFile`), and recordings made by the JDK read with hpm's reader.
//!
//! Every check runs on each installed JDK: the one whose `jfr` is on PATH (required) and
//! Temurin 25 under /usr/lib/jvm (if present; if not, the test says so). Each check prints
//! the JDK it ran on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hpm_profile::jfr::{self, counter_field_names, ChunkTimes, JfrFileWriter};
use hpm_profile::model::*;

// ---------------------------------------------------------------------------------------------
// JDKs and processes

struct Jdk {
    label: String,
    home: PathBuf,
}

impl Jdk {
    fn tool(&self, name: &str) -> PathBuf {
        self.home.join("bin").join(name)
    }
}

const TEMURIN_25: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

fn jdk_at(home: PathBuf) -> Jdk {
    let out = Command::new(home.join("bin/java")).arg("-version").output().expect("run java -version");
    let text = String::from_utf8_lossy(&out.stderr);
    let version = text.lines().next().unwrap_or("?").to_string();
    Jdk { label: format!("{version} at {}", home.display()), home }
}

/// The JDK on PATH (must exist) and Temurin 25 (reported if missing).
fn jdks() -> Vec<Jdk> {
    let on_path = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("jfr")).find(|f| f.is_file()))
        .expect("the `jfr` tool must be on PATH for these tests");
    let home = std::fs::canonicalize(&on_path).unwrap().parent().unwrap().parent().unwrap().to_path_buf();
    let mut out = vec![jdk_at(home.clone())];
    let temurin = PathBuf::from(TEMURIN_25);
    if temurin.join("bin/jfr").is_file() {
        if std::fs::canonicalize(&temurin).unwrap() != home {
            out.push(jdk_at(temurin));
        }
    } else {
        println!("NOTE: Temurin 25 not found at {TEMURIN_25}: its checks are not run on this machine");
    }
    out
}

fn run(cmd: &mut Command) -> Output {
    let shown = format!("{cmd:?}");
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {shown}: {e}"));
    if !out.status.success() {
        panic!(
            "{shown} failed with {}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// Runs a JDK tool that must succeed with nothing on stderr; returns stdout.
fn run_clean(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = run(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "{shown} wrote to stderr:\n{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Like [`run_clean`], for output about our files, which has no reason to mention errors.
fn run_no_errors(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let stdout = run_clean(cmd);
    for bad in ["Exception", "Error", "error", "could not", "Could not", "N/A"] {
        assert!(!stdout.contains(bad), "{shown} printed `{bad}`:\n{}", &stdout[..stdout.len().min(4000)]);
    }
    stdout
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hpm-jfr-jdk-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/jfr")
}

// ---------------------------------------------------------------------------------------------
// A recording written with hpm's writer

struct Written {
    rec: Recording,
    samples: Vec<Sample>,
    /// The sampled thread's name when each sample's chunk was written.
    thread_names: Vec<String>,
    chunks: usize,
}

/// A Java method with the source file of its class (`App.java` for `demo.App`).
fn method(rec: &mut Recording, class: &str, name: &str, desc: &str) -> MethodIdx {
    let file = format!("{}.java", class.rsplit('.').next().unwrap_or(class));
    rec.methods.intern(MethodInfo { source_file: Some(file.into()), ..MethodInfo::java(class, name, desc) })
}

/// Three chunks: Java frames of every kind, JNI + native + C++ + kernel frames, a pseudo-frame,
/// three threads (one not Java), three counters, two drop reasons.
fn write_recording(path: &Path) -> Written {
    let mut rec = Recording {
        pid: 777,
        jvm: "test JVM".into(),
        event: EventInfo {
            name: "cycles".into(),
            requested: "cycles".into(),
            period: 500_000,
            unit: PeriodUnit::Events,
            fallback: None,
            sampler: "asgct".into(),
            kernel: hpm_profile::model::KernelMode::Sampled,
            alloc_interval: 0,
        },
        counters: vec!["task-clock".into(), "cycles".into(), "r01c2".into()],
        ..Default::default()
    };
    let main = rec.add_thread(ThreadInfo {
        os_tid: 4001,
        java_id: Some(1),
        name: "main".into(),
        is_java: true,
        is_virtual: false,
    });
    let worker = rec.add_thread(ThreadInfo {
        os_tid: 4002,
        java_id: Some(21),
        name: "pool-1-thread-1".into(),
        is_java: true,
        is_virtual: false,
    });
    let gc = rec.add_thread(ThreadInfo {
        os_tid: 4003,
        java_id: None,
        name: "GC Thread#0".into(),
        is_java: false,
        is_virtual: false,
    });
    let m_main = method(&mut rec, "demo.App", "main", "([Ljava/lang/String;)V");
    let m_loop = method(&mut rec, "demo.App", "loop", "(J)J");
    let m_hash = method(&mut rec, "java.util.HashMap", "hash", "(Ljava/lang/Object;)I");
    let m_read = method(&mut rec, "java.io.FileInputStream", "readBytes", "([BII)I");
    let m_libc = rec.methods.intern(MethodInfo::native("read"));
    let m_kern = rec.methods.intern(MethodInfo::native("ksys_read"));
    let m_cpp = rec.methods.intern(MethodInfo::native("G1CollectedHeap::do_collection_pause()"));
    let m_gc = rec.methods.intern(MethodInfo::native("[GC]"));
    let f = |method, bci, line, kind| Frame { method, bci, line, kind };
    let shapes: Vec<(ThreadIdx, Vec<Frame>, VmComponent)> = vec![
        (
            main,
            vec![
                f(m_hash, 9, 339, FrameKind::Inlined),
                f(m_loop, 17, 42, FrameKind::JitCompiled),
                f(m_main, 4, 10, FrameKind::Interpreted),
            ],
            VmComponent::Java,
        ),
        (
            worker,
            vec![
                f(m_kern, -1, -1, FrameKind::Kernel),
                f(m_libc, -1, -1, FrameKind::Native),
                f(m_read, -1, -1, FrameKind::Native),
                f(m_loop, 3, 40, FrameKind::Interpreted),
            ],
            VmComponent::Kernel,
        ),
        (gc, vec![f(m_cpp, -1, -1, FrameKind::Cpp), f(m_gc, -1, -1, FrameKind::Unknown)], VmComponent::Gc),
    ];
    let mut w = JfrFileWriter::create(path).unwrap();
    let mut all = Vec::new();
    let mut names = Vec::new();
    let t0 = 1_000_000_000_000u64;
    let chunks = 3;
    for c in 0..chunks as u64 {
        let start = t0 + c * 1_000_000_000;
        let batch: Vec<Sample> = (0..30u64)
            .map(|i| {
                let (thread, stack, component) = shapes[(i % 3) as usize].clone();
                let n = c * 100 + i;
                Sample {
                    carrier: None,
                    time: start + 1_000 + i * 10_000_000,
                    thread,
                    stack: stack.into(),
                    truncated: i == 7,
                    weight: 500_000 + n,
                    repeat: 1,
                    counters: vec![1_000 + n, 2_000_000 + 7 * n, n % 4],
                    data_addr: if i % 2 == 0 { Some(0x10_0000 + n) } else { None },
                    data: (i % 2 == 0).then(|| {
                        Box::new(hpm_profile::model::DataTarget {
                            space: hpm_capture::javaheap::Space::Old,
                            class: Some("java.lang.Object[]".into()),
                            field: Some("[]".into()),
                            offset: 16 + 4 * i,
                            index: Some(i),
                            source: None,
                            latency: 0,
                        })
                    }),
                    ip: 0x7f00_0000_0000 + n,
                    component,
                    state: None,
                }
            })
            .collect();
        rec.add_drops("ring full", 2);
        rec.add_drops("no java frame", 1);
        if c == chunks as u64 - 1 {
            // Threads get their Java names late; the last chunk must show the new name.
            rec.threads[worker.0 as usize].name = "renamed-worker".into();
        }
        names.extend(batch.iter().map(|s| rec.threads[s.thread.0 as usize].name.clone()));
        let times = ChunkTimes {
            start_ticks: start,
            end_ticks: start + 1_000_000_000,
            start_wall_ns: 1_750_000_000_000_000_000 + c * 1_000_000_000,
        };
        w.write_chunk(&rec, &batch, times).unwrap();
        all.extend(batch);
    }
    w.finish().unwrap();
    Written { rec, samples: all, thread_names: names, chunks }
}

// ---------------------------------------------------------------------------------------------
// A minimal JSON reader for `jfr print --json`

#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> &Json {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v).unwrap_or(&Json::Null),
            _ => &Json::Null,
        }
    }
    fn at(&self, path: &[&str]) -> &Json {
        path.iter().fold(self, |j, k| j.get(k))
    }
    fn str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    fn i64(&self) -> i64 {
        match self {
            Json::Num(n) => n.parse().unwrap_or_else(|_| panic!("not an integer: {n}")),
            Json::Str(s) if s.starts_with("0x") || s.starts_with("0X") => i64::from_str_radix(&s[2..], 16).unwrap(),
            other => panic!("not a number: {other:?}"),
        }
    }
    fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(a) => a,
            other => panic!("not an array: {other:?}"),
        }
    }
}

fn parse_json(text: &str) -> Json {
    let mut p = JsonParser { b: text.as_bytes(), i: 0 };
    let v = p.value();
    p.ws();
    assert_eq!(p.i, p.b.len(), "trailing text after JSON");
    v
}

/// Just enough JSON for `jfr print --json` (which escapes `/` and uses `\u` escapes).
struct JsonParser<'a> {
    b: &'a [u8],
    i: usize,
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let ok = self.b.get(self.i) == Some(&c);
        self.i += ok as usize;
        ok
    }

    fn value(&mut self) -> Json {
        self.ws();
        if self.eat(b'{') {
            let mut m = Vec::new();
            while !self.eat(b'}') {
                let Json::Str(k) = self.value() else { panic!("object key at byte {}", self.i) };
                assert!(self.eat(b':'), "`:` expected at byte {}", self.i);
                m.push((k, self.value()));
                self.eat(b',');
            }
            return Json::Obj(m);
        }
        if self.eat(b'[') {
            let mut a = Vec::new();
            while !self.eat(b']') {
                a.push(self.value());
                self.eat(b',');
            }
            return Json::Arr(a);
        }
        if self.eat(b'"') {
            let mut out = Vec::new();
            loop {
                let c = self.b[self.i];
                self.i += 1;
                match (c, self.b.get(self.i).copied().unwrap_or(0)) {
                    (b'"', _) => return Json::Str(String::from_utf8(out).unwrap()),
                    (b'\\', b'u') => {
                        let hex = std::str::from_utf8(&self.b[self.i + 1..self.i + 5]).unwrap();
                        let ch = char::from_u32(u32::from_str_radix(hex, 16).unwrap()).unwrap_or('?');
                        out.extend_from_slice(ch.to_string().as_bytes());
                        self.i += 5;
                    }
                    (b'\\', e) => {
                        out.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'r' => b'\r',
                            other => other,
                        });
                        self.i += 1;
                    }
                    (c, _) => out.push(c),
                }
            }
        }
        let start = self.i;
        while self.b.get(self.i).is_some_and(|c| !b",]} \n\r\t".contains(c)) {
            self.i += 1;
        }
        match &self.b[start..self.i] {
            b"true" => Json::Bool(true),
            b"false" => Json::Bool(false),
            b"null" => Json::Null,
            t => Json::Num(String::from_utf8_lossy(t).into_owned()),
        }
    }
}

fn print_json_events(jdk: &Jdk, file: &Path, event: &str) -> Vec<Json> {
    let text = run_no_errors(
        Command::new(jdk.tool("jfr")).args(["print", "--json", "--stack-depth", "64", "--events", event]).arg(file),
    );
    let j = parse_json(&text);
    j.at(&["recording", "events"]).arr().to_vec()
}

// ---------------------------------------------------------------------------------------------
// Our files, read by the JDK

#[test]
fn jdk_tools_accept_hpm_recordings() {
    let dir = temp_dir("ours");
    let file = dir.join("hpm.jfr");
    let w = write_recording(&file);

    for jdk in jdks() {
        println!("[{}] checking {}", jdk.label, file.display());

        let summary = run_no_errors(Command::new(jdk.tool("jfr")).arg("summary").arg(&file));
        assert!(summary.contains(&format!("Chunks: {}", w.chunks)), "{summary}");
        println!("[{}] jfr summary: ok", jdk.label);
        let printed = run_no_errors(Command::new(jdk.tool("jfr")).arg("print").arg(&file));
        assert!(printed.contains("hpm.Sample") && printed.contains("jdk.ExecutionSample"));
        println!("[{}] jfr print: ok ({} bytes)", jdk.label, printed.len());
        // The source-file pool is a type of its own, declared like any other.
        let meta = run_no_errors(Command::new(jdk.tool("jfr")).arg("metadata").arg(&file));
        assert!(meta.contains("hpm.types.SourceFile"), "{meta}");
        println!("[{}] jfr metadata: hpm.types.SourceFile declared", jdk.label);

        // jdk.ExecutionSample: threads, methods, lines, bytecode indexes, frame types.
        let events = print_json_events(&jdk, &file, "jdk.ExecutionSample");
        assert_eq!(events.len(), w.samples.len());
        for ((e, s), expected_name) in events.iter().zip(&w.samples).zip(&w.thread_names) {
            let v = e.get("values");
            let t = v.get("sampledThread");
            let name = t.get("javaName").str().or(t.get("osName").str()).unwrap();
            assert_eq!(name, *expected_name);
            assert_eq!(v.at(&["state"]).str(), Some("STATE_RUNNABLE"));
            assert_eq!(v.at(&["stackTrace", "truncated"]), &Json::Bool(s.truncated), "truncated flag");
            let frames = v.at(&["stackTrace", "frames"]).arr();
            assert_eq!(frames.len(), s.stack.len());
            for (jf, f) in frames.iter().zip(s.stack.iter()) {
                let m = w.rec.method(f.method);
                assert_eq!(jf.at(&["method", "name"]).str(), Some(&*m.name));
                // Native symbols in a class named by their kind, and not Java frames to the
                // JDK's `isJavaFrame()` (pseudo-frames neither).
                let class = match (m.class_name.is_empty(), f.kind) {
                    (true, FrameKind::Native) => "native".to_string(),
                    (true, FrameKind::Cpp) => "libjvm.so".to_string(),
                    (true, FrameKind::Kernel) => "kernel".to_string(),
                    _ => m.class_name.replace('.', "/"),
                };
                assert_eq!(jf.at(&["method", "type", "name"]).str(), Some(class.as_str()));
                assert_eq!(jf.get("javaFrame"), &Json::Bool(!m.class_name.is_empty()), "javaFrame of {}", m.name);
                assert_eq!(jf.get("lineNumber").i64(), f.line as i64);
                assert_eq!(jf.get("bytecodeIndex").i64(), f.bci as i64);
                assert_eq!(jf.get("type").str(), Some(f.kind.jfr_name()));
            }
        }
        println!("[{}] jfr print --json jdk.ExecutionSample: {} events match", jdk.label, events.len());

        // hpm.Sample: counters as named long fields, and the rest of what the agent measured.
        let fields = counter_field_names(&w.rec.counters);
        assert_eq!(fields, ["taskClock", "cycles", "r01c2"]);
        let events = print_json_events(&jdk, &file, "hpm.Sample");
        assert_eq!(events.len(), w.samples.len());
        for (e, s) in events.iter().zip(&w.samples) {
            let v = e.get("values");
            for (field, value) in fields.iter().zip(&s.counters) {
                assert_eq!(v.get(field).i64(), *value as i64, "counter field {field}");
            }
            assert_eq!(v.get("period").i64(), s.weight as i64);
            assert_eq!(v.get("event").str(), Some("cycles"));
            assert_eq!(v.get("component").str(), Some(s.component.name()));
            assert_eq!(v.get("ip").i64(), s.ip as i64);
            assert_eq!(v.get("dataAddress").i64(), s.data_addr.unwrap_or(0) as i64);
            let d = s.data.as_deref();
            assert_eq!(v.get("dataSpace").str(), Some(d.map_or("", |d| d.space.name())));
            assert_eq!(v.get("dataClass").str(), Some(d.and_then(|d| d.class.as_deref()).unwrap_or("")));
            assert_eq!(v.get("dataIndex").i64(), d.and_then(|d| d.index).map_or(-1, |i| i as i64));
            assert_eq!(v.get("dataOffset").i64(), d.map_or(0, |d| d.offset as i64));
            assert_eq!(v.at(&["stackTrace", "frames"]).arr().len(), s.stack.len());
        }
        println!("[{}] jfr print --json hpm.Sample: counters {fields:?} present with the values written", jdk.label);

        let config = print_json_events(&jdk, &file, "hpm.Config");
        assert_eq!(config.len(), w.chunks);
        let c = config[0].get("values");
        assert_eq!(c.get("counters").str(), Some("task-clock,cycles,r01c2"));
        assert_eq!(c.get("periodUnit").str(), Some("events"));
        let drops = print_json_events(&jdk, &file, "hpm.Drops");
        assert_eq!(drops.len(), 2 * w.chunks);
        let last = drops.last().unwrap().get("values");
        assert_eq!((last.get("reason").str(), last.get("count").i64()), (Some("no java frame"), 3));
        println!("[{}] hpm.Config and hpm.Drops: ok", jdk.label);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn recording_file_api_reads_every_event() {
    let dir = temp_dir("check");
    let file = dir.join("hpm.jfr");
    let w = write_recording(&file);
    let check = data_dir().join("Check.java");
    for jdk in jdks() {
        let out = run(Command::new(jdk.tool("java")).arg(&check).arg(&file));
        let text = String::from_utf8_lossy(&out.stdout);
        let mut counts = BTreeMap::new();
        let mut sums = BTreeMap::new();
        let mut frames = 0u64;
        let mut threads = String::new();
        for line in text.lines() {
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "count" | "sum" => {
                    let (name, n) = rest.rsplit_once(' ').unwrap();
                    let map = if key == "count" { &mut counts } else { &mut sums };
                    map.insert(name.to_string(), n.parse::<u64>().unwrap());
                }
                "frames" => frames = rest.parse().unwrap(),
                "threads" => threads = rest.to_string(),
                _ => panic!("unexpected line from Check.java: {line}"),
            }
        }
        let n = w.samples.len() as u64;
        let expected: BTreeMap<String, u64> = [
            ("hpm.Config", w.chunks as u64),
            ("hpm.Drops", 2 * w.chunks as u64),
            ("hpm.Sample", n),
            ("jdk.ExecutionSample", n),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(counts, expected, "[{}] event counts", jdk.label);
        let stack_frames: u64 = w.samples.iter().map(|s| s.stack.len() as u64).sum();
        assert_eq!(frames, 2 * stack_frames, "[{}] frames", jdk.label);
        assert_eq!(threads, "GC Thread#0,main,pool-1-thread-1,renamed-worker");
        for (i, field) in counter_field_names(&w.rec.counters).iter().enumerate() {
            let total: u64 = w.samples.iter().map(|s| s.counters[i]).sum();
            assert_eq!(sums[field], total, "[{}] sum of {field}", jdk.label);
        }
        assert_eq!(sums["period"], w.samples.iter().map(|s| s.weight).sum::<u64>());
        println!("[{}] RecordingFile read {counts:?}, counter sums match", jdk.label);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hpm_reader_round_trips_the_written_file() {
    let dir = temp_dir("roundtrip");
    let file = dir.join("hpm.jfr");
    let w = write_recording(&file);
    let back = jfr::read_recording(&file).unwrap().recording;
    assert_eq!(back.samples.len(), w.samples.len());
    assert_eq!(back.counters, w.rec.counters);
    assert_eq!(back.drops, w.rec.drops);
    assert_eq!(back.event, w.rec.event);
    for (a, b) in w.samples.iter().zip(&back.samples) {
        assert_eq!(w.rec.stack_names_root_first(a), back.stack_names_root_first(b));
        // Source files come back through hpm's hpm.types.SourceFile pool.
        for (x, y) in a.stack.iter().zip(b.stack.iter()) {
            assert_eq!(w.rec.method(x.method).source_file, back.method(y.method).source_file);
        }
        assert_eq!(
            (a.weight, &a.counters, a.data_addr, a.ip, a.component),
            (b.weight, &b.counters, b.data_addr, b.ip, b.component)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// The JDK's files, read by hpm

/// `jfr summary` event counts (without the metadata and constant-pool pseudo-events, which
/// JDK 17 calls jdk.Metadata/jdk.CheckPoint and JDK 25 jdk.Metadata/jdk.Checkpoint).
fn summary_counts(jdk: &Jdk, file: &Path) -> BTreeMap<String, u64> {
    let text = run_clean(Command::new(jdk.tool("jfr")).arg("summary").arg(file));
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() == 3
            && parts[0].contains('.')
            && !parts[0].eq_ignore_ascii_case("jdk.Metadata")
            && !parts[0].eq_ignore_ascii_case("jdk.CheckPoint")
        {
            if let Ok(n) = parts[1].parse::<u64>() {
                if n > 0 {
                    out.insert(parts[0].to_string(), n);
                }
            }
        }
    }
    out
}

#[test]
fn hpm_reads_recordings_made_by_the_jdk() {
    for jdk in jdks() {
        let dir = temp_dir(&format!("jdk-{}", jdk.home.file_name().unwrap().to_string_lossy()));
        run(Command::new(jdk.tool("javac")).arg("-d").arg(&dir).arg(data_dir().join("Busy.java")));
        let file = dir.join("busy.jfr");
        run(Command::new(jdk.tool("java"))
            .arg(format!("-XX:StartFlightRecording=filename={},settings=profile", file.display()))
            .arg("-cp")
            .arg(&dir)
            .args(["Busy", "2000"]));

        // Generic layer: every event of every type, counted like `jfr summary` does.
        let (chunks, _) = jfr::parser::read_chunks(&file, &|_| true).unwrap();
        let mut ours: BTreeMap<String, u64> = BTreeMap::new();
        for c in &chunks {
            for e in &c.events {
                *ours.entry(c.event_type(e).unwrap().name.to_string()).or_default() += 1;
            }
        }
        let theirs = summary_counts(&jdk, &file);
        assert_eq!(ours, theirs, "[{}] per-type event counts vs jfr summary", jdk.label);
        println!("[{}] generic reader: {} event types, counts equal to jfr summary", jdk.label, ours.len());

        let rec = jfr::read_recording(&file).unwrap().recording;
        let n = rec.samples.len();
        assert_eq!(n as u64, theirs["jdk.ExecutionSample"], "[{}] samples", jdk.label);
        assert!(n >= 20, "[{}] only {n} samples", jdk.label);
        assert_eq!(rec.event.name, "jfr-execution-sample");
        assert_eq!(rec.event.period, 10_000_000, "[{}] period from the profile settings", jdk.label);
        assert!(rec.samples.iter().all(|s| s.weight == 10_000_000));
        assert!(rec.threads.iter().any(|t| t.name == "main" && t.is_java && t.java_id.is_some()));
        assert!(rec.jvm.contains("VM"), "[{}] jvm = {}", jdk.label, rec.jvm);
        assert!(rec.pid > 0);
        let in_spin = rec
            .samples
            .iter()
            .filter(|s| s.stack.iter().any(|f| rec.method(f.method).display_name() == "Busy.spin"))
            .count();
        assert!(in_spin * 2 >= n, "[{}] Busy.spin in only {in_spin} of {n} samples", jdk.label);
        let spin = rec.methods.iter().find(|(_, m)| m.display_name() == "Busy.spin").unwrap().1;
        assert_eq!(&*spin.descriptor, "(J)J");
        let kinds: std::collections::BTreeSet<FrameKind> =
            rec.samples.iter().flat_map(|s| s.stack.iter()).map(|f| f.kind).collect();
        assert!(kinds.iter().all(|k| k.is_java() || *k == FrameKind::Native), "[{}] frame types {kinds:?}", jdk.label);
        assert!(rec.samples.iter().any(|s| s.stack.iter().any(|f| f.line > 0 && f.bci >= 0)));
        println!(
            "[{}] hpm reader: {n} samples, Busy.spin in {in_spin}, period {} ns, frame types {kinds:?}",
            jdk.label, rec.event.period
        );

        // A JFR file is a sequence of chunks: the recording twice over reads as two chunks,
        // with threads and methods deduplicated across them.
        let bytes = std::fs::read(&file).unwrap();
        let twice = dir.join("twice.jfr");
        std::fs::write(&twice, [bytes.clone(), bytes].concat()).unwrap();
        let rec2 = jfr::read_recording(&twice).unwrap().recording;
        assert_eq!(rec2.samples.len(), 2 * n);
        assert_eq!(rec2.threads.len(), rec.threads.len());
        assert_eq!(rec2.methods.len(), rec.methods.len());
        let theirs2 = summary_counts(&jdk, &twice);
        assert_eq!(theirs2["jdk.ExecutionSample"], 2 * n as u64);
        println!("[{}] two-chunk JDK file: {} samples, threads and methods deduplicated", jdk.label, 2 * n);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
