//! `push=`: a real JVM pushes its profile every period to a backend that is a listener in the
//! test (tests/src/backend.rs), not a collector. Checked against what the listener received:
//! at least two periods, each a gzipped OTLP profiles request that decodes (prost) and holds
//! the workload's samples under the service named; a JVM pushing to a closed port runs and
//! exits normally, with one line saying what was not delivered; `hpm attach PID
//! start,push=...` joins a running JVM to the backend, `status` shows the push, `stop` ends it.

use hpm_tests::backend::{closed_port, Backend, Request};
use hpm_tests::*;

/// The OTLP requests among `received`, after checking how each was sent.
fn otlp_periods(received: &[Request], what: &str) -> Vec<(u64, Vec<String>, Option<String>)> {
    received
        .iter()
        .map(|r| {
            assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1development/profiles"), "{what}");
            assert_eq!(r.header("content-type"), Some("application/x-protobuf"), "{what}");
            assert_eq!(r.header("content-encoding"), Some("gzip"), "{what}");
            let req = r.otlp();
            let dict = req.dictionary.clone().unwrap_or_default();
            let names: Vec<String> = dict
                .function_table
                .iter()
                .filter_map(|f| dict.string_table.get(f.name_strindex as usize).cloned())
                .collect();
            let rp = req.resource_profiles.first().unwrap_or_else(|| panic!("{what}: no resource profiles"));
            let service = rp.resource.as_ref().and_then(|res| {
                res.attributes.iter().find(|kv| kv.key == "service.name").and_then(|kv| {
                    match kv.value.as_ref()?.value.as_ref()? {
                        opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(s) => Some(s.clone()),
                        _ => None,
                    }
                })
            });
            // The "samples" profile counts each sample once.
            let samples: u64 = rp
                .scope_profiles
                .iter()
                .flat_map(|s| &s.profiles)
                .filter(|p| {
                    p.sample_type.as_ref().and_then(|t| dict.string_table.get(t.type_strindex as usize))
                        == Some(&"samples".to_string())
                })
                .flat_map(|p| &p.samples)
                .map(|s| s.values.iter().sum::<i64>() as u64)
                .sum();
            (samples, names, service)
        })
        .collect()
}

#[test]
fn a_jvm_pushes_every_period_to_the_backend() {
    let jdk = &jdks()[0];
    let backend = Backend::start(200);
    let dir = scratch("push-otlp");
    let opts =
        format!("push={},chunk=1s,service=shares-test,file={}", backend.url(), dir.join("p.collapsed").display());
    // Two threads, 2 s of CPU time each: at least 2 s of wall time, so at least two periods of
    // 1 s however busy the machine is.
    let run = run_java(jdk, Some(&opts), &[], "Shares", &["2", "2", "cpu"]);
    run.assert_ok("Shares with push");
    let line: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("hpm: ") && l.contains(&backend.url())).collect();
    assert_eq!(line.len(), 1, "one push line expected:\n{}", run.stderr);

    let periods = otlp_periods(&backend.received(), "push to a listener");
    assert!(periods.len() >= 2, "{} periods pushed:\n{}", periods.len(), run.stderr);
    let mut pushed = 0;
    for (samples, names, service) in &periods {
        assert_eq!(service.as_deref(), Some("shares-test"));
        assert!(*samples > 0, "a period without samples was pushed");
        pushed += samples;
        assert!(names.iter().any(|n| n.starts_with("Shares.")), "no Shares frame in {names:?}");
    }
    // Every sample of the session went to the backend, none twice (the exit summary's count).
    let total: u64 = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("hpm: ")?.split_once(" samples, ")?.0.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no sample count in the summary:\n{}", run.stderr));
    assert_eq!(pushed, total, "samples pushed and in the session");
}

#[test]
fn a_jvm_pushing_to_a_closed_port_exits_normally_and_says_what_was_not_delivered() {
    let jdk = &jdks()[0];
    let url = format!("http://127.0.0.1:{}", closed_port());
    let run = run_java(jdk, Some(&format!("push={url},chunk=1s")), &[], "Shares", &["1", "2", "cpu"]);
    run.assert_ok("Shares pushing to a closed port");
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("hpm: ") && l.contains(&url)).collect();
    assert_eq!(lines.len(), 1, "one push line expected:\n{}", run.stderr);
    assert!(lines[0].contains("not delivered"), "{}", lines[0]);
    // The summary's drops count them too.
    assert!(run.stderr.contains("not pushed"), "{}", run.stderr);
}

#[test]
fn attach_joins_a_running_jvm_to_the_backend_and_stop_ends_the_push() {
    let jdk = &jdks()[0];
    let backend = Backend::start(200);
    let mut jvm = Attachee::start(jdk);
    let pid = jvm.pid;
    let dir = scratch("push-attach");
    let out = attach_ok(
        pid,
        &format!(
            "start,push={}/v1development/profiles,chunk=1s,quiet,file={}",
            backend.url(),
            dir.join("a.jfr").display()
        ),
    );
    assert!(out.contains("profiling started"), "{out}");
    assert_eq!(jvm.say("work 2000"), "worked");
    let status = attach_ok(pid, "status");
    assert!(status.lines().any(|l| l.starts_with("push: ")), "status lacks the push:\n{status}");
    let out = attach_ok(pid, "stop");
    assert!(out.contains("profiling stopped"), "{out}");
    // The pusher has stopped: what it delivered is all the backend will get.
    let periods = otlp_periods(&backend.received(), "push from an attached session");
    assert!(!periods.is_empty(), "nothing pushed from the attached session");
    assert!(periods.iter().any(|(_, names, _)| names.iter().any(|n| n.starts_with("Shares."))));
    jvm.finish("attached JVM with push");
}
