//! The push into a real OpenTelemetry Collector (built from Go modules by
//! scripts/otelcol/build.sh, run on 127.0.0.1 with the profiles gate and the file exporter):
//! what the collector wrote is checked against the same run's local JFR, read back with `hpm`,
//! merged per service, and read beside async-profiler's own OTLP.
//!
//! Truth by construction: Attachee's workers spend 50/30/20% of their CPU in Shares.a/b/c; its
//! main thread's `spin` runs a and b only. Workloads are sized by CPU time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hpm_tests::collector::{collector_bin, BlackHole, Collector, FileFormat};
use hpm_tests::{
    agent_path, async_profiler, hpm_bin, jdks, jvm_lock, read_collapsed, scratch, workloads, Attachee, Jdk,
};
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

/// Attachee with hpm's `options`, its 2 workers named `PREFIX0`, `PREFIX1`.
fn attachee(jdk: &Jdk, options: &str, prefix: &str, env: &[(&str, &str)]) -> Attachee {
    attachee_with(jdk, options, 2, prefix, env)
}

/// Attachee with hpm's `options` and `threads` workers.
fn attachee_with(jdk: &Jdk, options: &str, threads: u32, prefix: &str, env: &[(&str, &str)]) -> Attachee {
    let mut c = Command::new(jdk.java());
    c.arg(format!("-agentpath:{}={options}", agent_path().display()))
        .args(["-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Shares::*", "-cp"])
        .arg(workloads())
        .args(["Attachee", &threads.to_string(), prefix])
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    Attachee::spawn(c)
}

/// Its standard error, read as it comes (a full pipe must not stop the JVM) until it exits.
fn stderr_of(jvm: &mut Attachee) -> std::thread::JoinHandle<String> {
    let mut err = jvm.child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    })
}

/// The requests the file exporter wrote (`format: proto`: each message after its length as a
/// 4-byte big-endian integer).
fn requests(path: &Path) -> Vec<ExportProfilesServiceRequest> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push(ExportProfilesServiceRequest::decode(&bytes[at + 4..at + 4 + n]).expect("a profiles request"));
        at += 4 + n;
    }
    out
}

/// Per request of `service`: the timestamps of its "samples" profile (one per sample, times its
/// value), and each sample type's total.
struct Period {
    times: Vec<u64>,
    totals: HashMap<String, i64>,
}

fn periods(reqs: &[ExportProfilesServiceRequest], service: &str) -> Vec<Period> {
    let mut out = Vec::new();
    for r in reqs {
        let dict = r.dictionary.as_ref().expect("a dictionary");
        let s = |i: i32| dict.string_table[i as usize].clone();
        for rp in &r.resource_profiles {
            // The collector writes resource attributes back compacted: keys and string values
            // as indexes into the dictionary's string table.
            let name = rp.resource.iter().flat_map(|res| &res.attributes).find_map(|kv| {
                let key = if kv.key.is_empty() { s(kv.key_strindex) } else { kv.key.clone() };
                (key == "service.name").then(|| match kv.value.as_ref()?.value.as_ref()? {
                    Value::StringValue(v) => Some(v.clone()),
                    Value::StringValueStrindex(i) => Some(s(*i)),
                    _ => None,
                })?
            });
            if name.as_deref() != Some(service) {
                continue;
            }
            let mut p = Period { times: Vec::new(), totals: HashMap::new() };
            for prof in rp.scope_profiles.iter().flat_map(|sp| &sp.profiles) {
                let st = prof.sample_type.as_ref().expect("a sample type");
                let ty = s(st.type_strindex);
                let total: i64 = prof.samples.iter().flat_map(|x| &x.values).sum();
                *p.totals.entry(ty.clone()).or_default() += total;
                if ty == "samples" {
                    for x in &prof.samples {
                        let per =
                            x.values.iter().sum::<i64>().max(1) as u64 / x.timestamps_unix_nano.len().max(1) as u64;
                        for t in &x.timestamps_unix_nano {
                            p.times.extend(std::iter::repeat_n(*t, per as usize));
                        }
                    }
                }
            }
            out.push(p);
        }
    }
    out
}

/// The local JFR's sample times (wall ns, each sample as often as it repeats) and counter totals.
fn local(jfr: &Path) -> (Vec<u64>, HashMap<String, u64>) {
    let rec = hpm_profile::jfr::read_recording(jfr).expect("read the local JFR").recording;
    let mut times = Vec::new();
    let mut counters: HashMap<String, u64> = HashMap::new();
    for s in &rec.samples {
        let wall = rec.start_wall_ns + (s.time - rec.start_ticks);
        times.extend(std::iter::repeat_n(wall, s.repeat.max(1) as usize));
        for (i, v) in s.counters.iter().enumerate() {
            *counters.entry(rec.counters[i].clone()).or_default() += v;
        }
    }
    times.sort_unstable();
    (times, counters)
}

/// `hpm flamegraph INPUT -o OUT.collapsed ARGS...` (asserting it succeeds) read back.
fn collapsed(input: &Path, out: &Path, args: &[&str]) -> Vec<(Vec<String>, u64)> {
    let o = Command::new(hpm_bin()).arg("flamegraph").arg(input).arg("-o").arg(out).args(args).output().unwrap();
    assert!(o.status.success(), "hpm flamegraph {} {args:?}: {}", input.display(), String::from_utf8_lossy(&o.stderr));
    read_collapsed(out)
}

/// Each of Shares.a/b/c's share (percent) of the samples in any of them.
fn shares(stacks: &[(Vec<String>, u64)]) -> (u64, [f64; 3]) {
    let names = ["Shares.a", "Shares.b", "Shares.c"];
    let mut n = [0u64; 3];
    for (frames, c) in stacks {
        if let Some(i) = names.iter().position(|m| frames.iter().any(|f| f == m)) {
            n[i] += c;
        }
    }
    let all: u64 = n.iter().sum();
    (all, n.map(|x| 100.0 * x as f64 / all.max(1) as f64))
}

fn setup(name: &str) -> Option<(PathBuf, PathBuf, Jdk)> {
    let bin = collector_bin()?;
    Some((bin, scratch(name), jdks().remove(0)))
}

/// A JVM pushes several periods: the collector's profiles hold the run's samples, period by
/// period within 1% of the same run's local JFR, with the same counter totals and shares.
#[test]
fn pushed_periods_match_the_local_recording() {
    let Some((bin, dir, jdk)) = setup("push-collector-periods") else { return };
    let _jvm = jvm_lock();
    let col = Collector::start(&bin, &dir, 0, "out.pb", FileFormat::Proto);
    let jfr = dir.join("local.jfr");
    let opts = format!(
        "interval=10ms,counters=task-clock,push={},chunk=1s,service=periods,quiet,file={}",
        col.url(),
        jfr.display()
    );
    let mut jvm = attachee(&jdk, &opts, "pushing-", &[]);
    assert_eq!(jvm.say("work 3000"), "worked");
    jvm.finish("the pushing JVM");
    let (out, _log) = col.stop();

    let reqs = requests(&out);
    let ps = periods(&reqs, "periods");
    assert!(ps.len() >= 3, "{} periods pushed, 3 s of CPU on 2 threads at chunk=1s", ps.len());
    let (times, counters) = local(&jfr);
    let pushed: usize = ps.iter().map(|p| p.times.len()).sum();
    let diff = (pushed as f64 - times.len() as f64).abs() / times.len() as f64;
    assert!(diff <= 0.01, "pushed {pushed} samples, the local JFR holds {}", times.len());
    for (i, p) in ps.iter().enumerate() {
        let (Some(lo), Some(hi)) = (p.times.iter().min(), p.times.iter().max()) else { continue };
        let here = times.iter().filter(|t| (*lo..=*hi).contains(*t)).count();
        let d = (here as f64 - p.times.len() as f64).abs();
        assert!(
            d <= (0.01 * here as f64).max(1.0),
            "period {i}: {} samples pushed, {here} in the local JFR over the same times",
            p.times.len()
        );
    }
    let task: i64 = ps.iter().map(|p| p.totals.get("task-clock").copied().unwrap_or(0)).sum();
    let want = counters["task-clock"] as f64;
    assert!((task as f64 - want).abs() <= 0.01 * want, "task-clock pushed {task}, local {want}");

    let from_collector = shares(&collapsed(&out, &dir.join("c.collapsed"), &["--service", "periods"]));
    let from_jfr = shares(&collapsed(&jfr, &dir.join("j.collapsed"), &[]));
    for i in 0..3 {
        assert!(
            (from_collector.1[i] - from_jfr.1[i]).abs() <= 1.0,
            "shares from the collector {from_collector:?}, from the JFR {from_jfr:?}"
        );
    }
}

/// Four JVMs of two services push at once; the collector's output read per service equals the
/// merge of that service's local JFRs.
#[test]
fn four_jvms_two_services_merge_per_service() {
    let Some((bin, dir, jdk)) = setup("push-collector-fleet") else { return };
    let _jvm = jvm_lock();
    let col = Collector::start(&bin, &dir, 0, "fleet.pb", FileFormat::Proto);
    let mut jvms = Vec::new();
    for (i, service) in ["svc-a", "svc-a", "svc-b", "svc-b"].iter().enumerate() {
        let jfr = dir.join(format!("{service}-{i}.jfr"));
        let opts = format!("interval=10ms,push={},chunk=1s,service={service},quiet,file={}", col.url(), jfr.display());
        // Service b has no workers: only its main thread's `spin`.
        let workers = if *service == "svc-a" { 2 } else { 0 };
        jvms.push((service, jfr, attachee_with(&jdk, &opts, workers, &format!("{service}-w"), &[])));
    }
    // Service a: the workers' a/b/c mix; service b: the main thread's a/b only.
    for (service, _, jvm) in &mut jvms {
        let (cmd, answer) = if **service == "svc-a" { ("work 1500", "worked") } else { ("spin 3000", "spun") };
        assert_eq!(jvm.say(cmd), answer);
    }
    let mut local_a = Vec::new();
    for (service, jfr, jvm) in jvms {
        jvm.finish(service);
        if service == &"svc-a" {
            local_a.extend(collapsed(&jfr, &jfr.with_extension("collapsed"), &[]));
        }
    }
    let (out, _) = col.stop();
    let a = shares(&collapsed(&out, &dir.join("a.collapsed"), &["--service", "svc-a"]));
    let want = shares(&local_a);
    for i in 0..3 {
        assert!((a.1[i] - want.1[i]).abs() <= 1.0, "svc-a from the collector {a:?}, its local JFRs {want:?}");
    }
    assert!(a.1[2] > 10.0, "svc-a runs Shares.c 20% of its time: {a:?}");
    let b = shares(&collapsed(&out, &dir.join("b.collapsed"), &["--service", "svc-b"]));
    assert!(b.1[2] < 1.0, "svc-b never runs Shares.c: {b:?} (services mixed?)");
    // Without --service, several services are an error naming them.
    let o = Command::new(hpm_bin()).arg("report").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("svc-a") && err.contains("svc-b"), "{err}");
}

/// The collector stops mid-run and starts again on the same port: every period is delivered to
/// one of the two or counted as not delivered, and pushing resumes.
#[test]
fn collector_restart_loses_nothing_uncounted() {
    let Some((bin, dir, jdk)) = setup("push-collector-restart") else { return };
    let _jvm = jvm_lock();
    let first = Collector::start(&bin, &dir, 0, "first.pb", FileFormat::Proto);
    let port = first.port;
    let jfr = dir.join("local.jfr");
    let opts = format!("interval=10ms,push={},chunk=1s,service=restart,file={}", first.url(), jfr.display());
    let mut jvm = attachee(&jdk, &opts, "restart-", &[]);
    let err = stderr_of(&mut jvm);
    assert_eq!(jvm.say("work 1500"), "worked");
    let (first_out, _) = first.stop();
    // Down for at least two periods' CPU.
    assert_eq!(jvm.say("work 2500"), "worked");
    let second = Collector::start(&bin, &dir, port, "second.pb", FileFormat::Proto);
    assert_eq!(jvm.say("work 1500"), "worked");
    jvm.finish("the pushing JVM");
    let out = err.join().unwrap();
    let (second_out, _) = second.stop();

    let before: usize = periods(&requests(&first_out), "restart").iter().map(|p| p.times.len()).sum();
    let after: usize = periods(&requests(&second_out), "restart").iter().map(|p| p.times.len()).sum();
    assert!(before > 0 && after > 0, "delivered before the stop {before}, after the restart {after}");
    let (times, _) = local(&jfr);
    let lost = not_delivered(&out);
    let accounted = before + after + lost as usize;
    let d = (accounted as f64 - times.len() as f64).abs() / times.len() as f64;
    assert!(
        d <= 0.01,
        "{before} + {after} delivered + {lost} counted lost = {accounted}, the local JFR holds {}\n{out}",
        times.len()
    );
}

/// Samples the push's summary line says were not delivered (after its "not delivered: ", each
/// reason's "(N samples)"), 0 when it says nothing was lost.
fn not_delivered(stderr: &str) -> u64 {
    let Some(line) = stderr.lines().find(|l| l.contains("push to ")) else { panic!("no push summary:\n{stderr}") };
    let Some((_, lost)) = line.split_once("not delivered: ") else { return 0 };
    lost.split('(')
        .skip(1)
        .filter_map(|part| {
            let (n, rest) = part.split_once(' ')?;
            rest.starts_with("sample").then(|| n.replace(',', "").parse::<u64>().ok()).flatten()
        })
        .sum()
}

/// A black hole (accepts, never answers): the JVM runs and exits normally, with one line saying
/// what was not delivered.
#[test]
fn push_into_a_black_hole_exits_normally() {
    let dir = scratch("push-black-hole");
    let jdk = jdks().remove(0);
    let _jvm = jvm_lock();
    let hole = BlackHole::start();
    let opts =
        format!("interval=10ms,push=http://127.0.0.1:{}/,chunk=1s,file={}", hole.port, dir.join("x.jfr").display());
    let mut jvm = attachee(&jdk, &opts, "hole-", &[]);
    let err = stderr_of(&mut jvm);
    assert_eq!(jvm.say("work 1500"), "worked");
    jvm.finish("the JVM pushing into a black hole");
    let stderr = err.join().unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("hpm: push to ")).collect();
    assert_eq!(lines.len(), 1, "one line says what was pushed:\n{stderr}");
    assert!(lines[0].contains("not delivered"), "{}", lines[0]);
    assert!(not_delivered(&stderr) > 0, "{stderr}");
}

/// async-profiler 4.6's OTLP and hpm's, to the same collector: both accepted, `hpm` reads both.
#[test]
fn async_profiler_and_hpm_into_one_collector() {
    let Some((bin, dir, jdk)) = setup("push-collector-peers") else { return };
    let Some(ap) = async_profiler() else { return };
    let _jvm = jvm_lock();
    let col = Collector::start(&bin, &dir, 0, "peers.pb", FileFormat::Proto);
    let mut c = Command::new(jdk.java());
    c.arg(format!("-agentpath:{}=start,quiet,event=cpu,interval=10ms,file={},otlp,loop=1s", ap.display(), col.url()))
        .args(["-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Shares::*", "-cp"])
        .arg(workloads())
        .args(["Attachee", "2", "ap-"])
        .env("OTEL_SERVICE_NAME", "by-async-profiler");
    let mut ap_jvm = Attachee::spawn(c);
    let mut hpm_jvm =
        attachee(&jdk, &format!("interval=10ms,push={},chunk=1s,service=by-hpm,quiet", col.url()), "h-", &[]);
    assert_eq!(ap_jvm.say("work 2500"), "worked");
    assert_eq!(hpm_jvm.say("work 2500"), "worked");
    ap_jvm.finish("async-profiler's JVM");
    hpm_jvm.finish("hpm's JVM");
    let (out, _) = col.stop();
    for service in ["by-async-profiler", "by-hpm"] {
        let (n, s) = shares(&collapsed(&out, &dir.join(format!("{service}.collapsed")), &["--service", service]));
        assert!(n >= 100, "{service}: {n} samples in Shares.a/b/c");
        assert!(s[0] > s[1] && s[1] > s[2], "{service}: a > b > c expected: {s:?}");
    }
}
