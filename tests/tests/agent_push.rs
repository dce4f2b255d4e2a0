//! `push=`: a real JVM pushes its profile every period to a backend that is a listener in the
//! test (tests/src/backend.rs), not a collector. Checked against what the listener received:
//! at least two periods, each a gzipped OTLP profiles request that decodes (prost) and holds
//! the workload's samples under the service named, or, sampling no CPU event, every allocation
//! of the local JFR of the same run; a JVM pushing to a closed port runs and exits normally,
//! with one line saying what was not delivered, its local JFR counting as many samples not
//! pushed as the exit summary; `hpm attach PID start,push=...` joins a running JVM to the
//! backend, `status` shows the push, `stop` ends it.
//! `pushformat=pyroscope`: each request is Pyroscope's `/ingest` form, its `jfr` part a JFR that
//! hpm and the JDK's RecordingFile read, holding the workload's methods and every sample of the
//! session, under a name Pyroscope takes (one found in the environment is made one). A backend
//! answering with an endless body harms no JVM: the answer is read to its bound, the periods
//! are delivered, the JVM exits normally.

use std::io::Write;
use std::net::TcpListener;

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
    assert_eq!(pushed, session_samples(&run.stderr), "samples pushed and in the session");
}

/// The samples of the profiles of sample type `ty` among `received` (OTLP requests).
fn typed_samples(received: &[Request], ty: &str) -> u64 {
    let mut n = 0;
    for r in received {
        let req = r.otlp();
        let dict = req.dictionary.unwrap_or_default();
        let named = |p: &&opentelemetry_proto::tonic::profiles::v1development::Profile| {
            p.sample_type.as_ref().and_then(|t| dict.string_table.get(t.type_strindex as usize)).map(String::as_str)
                == Some(ty)
        };
        let profiles = req.resource_profiles.iter().flat_map(|rp| &rp.scope_profiles).flat_map(|s| &s.profiles);
        n += profiles.filter(named).map(|p| p.samples.len() as u64).sum::<u64>();
    }
    n
}

/// A session sampling no CPU event (`event=alloc`) pushes its allocations: every allocation of
/// the local JFR of the same run is in the backend's "alloc" profiles (it once pushed nothing
/// and said "0 periods delivered").
#[test]
fn an_allocation_only_session_pushes_its_allocations() {
    let jdk = &jdks()[0];
    let backend = Backend::start(200);
    let dir = scratch("push-alloc");
    let jfr = dir.join("alloc.jfr");
    let opts = format!("event=alloc,push={},chunk=1s,file={}", backend.url(), jfr.display());
    let run = run_java(jdk, Some(&opts), &[], "AllocLocks", &["alloc", "1"]);
    run.assert_ok("AllocLocks alloc with push");
    let received = backend.received();
    otlp_periods(&received, "an allocation-only push");
    let (rec, _) = hpm_profile::load::load_recording(&jfr).unwrap_or_else(|e| panic!("{e}"));
    let local = rec.events.iter().filter(|e| e.kind == hpm_profile::model::JvmEventKind::Allocation).count() as u64;
    assert!(local > 0, "no allocation in the local JFR:\n{}", run.stderr);
    assert_eq!(typed_samples(&received, "alloc"), local, "allocations pushed and in the local JFR");
    let line: Vec<&str> = run.stderr.lines().filter(|l| l.contains(&backend.url())).collect();
    assert_eq!(line.len(), 1, "{}", run.stderr);
    assert!(line[0].contains(&format!("({local} samples,")), "{}", line[0]);
}

/// The session's sample count, from the exit summary.
fn session_samples(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("hpm: ")?.split_once(" samples, ")?.0.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no sample count in the summary:\n{stderr}"))
}

#[test]
fn a_jvm_pushing_to_a_closed_port_exits_normally_and_says_what_was_not_delivered() {
    let jdk = &jdks()[0];
    let url = format!("http://127.0.0.1:{}", closed_port());
    let jfr = scratch("push-closed").join("closed.jfr");
    let opts = format!("push={url},chunk=1s,file={}", jfr.display());
    let run = run_java(jdk, Some(&opts), &[], "Shares", &["1", "2", "cpu"]);
    run.assert_ok("Shares pushing to a closed port");
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("hpm: ") && l.contains(&url)).collect();
    assert_eq!(lines.len(), 1, "one push line expected:\n{}", run.stderr);
    assert!(lines[0].contains("not delivered"), "{}", lines[0]);
    // The summary's drops count them too, and the JFR's drops as many: the pusher stops before
    // the JFR's last chunk is written (it once said "Dropped samples (none)").
    let not_pushed: u64 = run
        .stderr
        .lines()
        .find_map(|l| l.split_once(" not pushed")?.0.rsplit("; ").next()?.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no \"not pushed\" in the summary:\n{}", run.stderr));
    assert!(not_pushed > 0, "{}", run.stderr);
    let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{e}")).recording;
    assert_eq!(rec.drops_of(hpm_profile::model::DropClass::NotPushed), not_pushed, "{:?}", rec.drops);
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

/// The query of Pyroscope's request target, as (name, value) pairs still encoded, after
/// checking its path.
fn ingest_query(r: &Request) -> Vec<(String, String)> {
    assert_eq!(r.method, "POST");
    let (path, query) = r.path.split_once('?').unwrap_or_else(|| panic!("no query in {}", r.path));
    assert_eq!(path, "/ingest");
    query.split('&').map(|kv| kv.split_once('=').unwrap_or((kv, ""))).map(|(k, v)| (k.into(), v.into())).collect()
}

/// The content of the one part of a multipart form, named `name`.
fn form_part<'a>(r: &'a Request, name: &str) -> &'a [u8] {
    let ct = r.header("content-type").unwrap_or_default();
    let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap_or_else(|| panic!("{ct}"));
    let open = format!("--{boundary}\r\n");
    let close = format!("\r\n--{boundary}--\r\n");
    let inner = r.body.strip_prefix(open.as_bytes()).and_then(|b| b.strip_suffix(close.as_bytes()));
    let inner = inner.expect("one part between the boundaries");
    let head_end = inner.windows(4).position(|w| w == b"\r\n\r\n").expect("the part's headers");
    let head = String::from_utf8_lossy(&inner[..head_end]);
    assert!(head.contains(&format!("Content-Disposition: form-data; name=\"{name}\"")), "{head}");
    &inner[head_end + 4..]
}

#[test]
fn pyroscope_push_sends_each_period_as_an_ingest_form_with_its_jfr() {
    let jdk = &jdks()[0];
    let backend = Backend::start(200);
    let dir = scratch("push-pyroscope");
    let opts = format!("push={},pushformat=pyroscope,service=app,labels=env=test;zone=a,chunk=1s", backend.url());
    // Two threads, 2 s of CPU time each: at least two periods of 1 s.
    let run = run_java(jdk, Some(&opts), &[], "Shares", &["2", "2", "cpu"]);
    run.assert_ok("Shares pushing to Pyroscope");
    let received = backend.received();
    assert!(received.len() >= 2, "{} periods pushed:\n{}", received.len(), run.stderr);

    let mut pushed = 0;
    let mut methods = std::collections::BTreeSet::new();
    for (i, r) in received.iter().enumerate() {
        let q = ingest_query(r);
        let keys: Vec<&str> = q.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "from", "until", "format", "spyName", "sampleRate"], "{}", r.path);
        // app{env=test,zone=a}, percent-encoded as hpm-push does.
        assert_eq!(q[0].1, "app%7Benv%3Dtest%2Czone%3Da%7D");
        let (from, until): (u64, u64) = (q[1].1.parse().unwrap(), q[2].1.parse().unwrap());
        assert!(from > 1_600_000_000 && until >= from, "{}", r.path);
        assert_eq!((q[3].1.as_str(), q[4].1.as_str()), ("jfr", "hpm"));
        // The default interval, 10 ms of CPU time.
        assert_eq!(q[5].1, "100");
        assert_eq!(r.header("content-encoding"), None);

        let jfr = dir.join(format!("period-{i}.jfr"));
        std::fs::write(&jfr, form_part(r, "jfr")).unwrap();
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("period {i}: {e}")).recording;
        assert!(!rec.samples.is_empty(), "period {i} without samples");
        pushed += rec.samples.iter().map(|s| s.count()).sum::<u64>();
        for s in &rec.samples {
            methods.extend(s.stack.iter().map(|f| rec.method(f.method).display_name()));
        }
        // The JDK's own reader takes it: Pyroscope's server reads JFR as the JDK writes it.
        let jdk_view = check_jfr(jdk, &jfr, "Shares");
        assert!(jdk_view.get("count jdk.ExecutionSample").copied().unwrap_or(0) > 0, "period {i}: {jdk_view:?}");
        assert!(jdk_view.keys().any(|k| k.starts_with("top Shares.")), "period {i}: {jdk_view:?}");
    }
    // Truth by construction: the threads run Shares.run, spending their time in a, b and c.
    for m in ["Shares.run", "Shares.a", "Shares.b", "Shares.c"] {
        assert!(methods.contains(m), "{m} not in the pushed JFRs: {methods:?}");
    }
    assert_eq!(pushed, session_samples(&run.stderr), "samples pushed and in the session");
    let line: Vec<&str> =
        run.stderr.lines().filter(|l| l.contains(&format!("push to {}/ingest", backend.url()))).collect();
    assert_eq!(line.len(), 1, "{}", run.stderr);
    assert!(!line[0].contains("not delivered"), "{}", line[0]);
}

/// A service name found in the environment that Pyroscope cannot take is made one it takes,
/// said in one line: the session runs and pushes (it once refused the session, and no profile
/// was made at all).
#[test]
fn a_found_service_name_pyroscope_cannot_take_is_made_one_it_takes() {
    let jdk = &jdks()[0];
    let backend = Backend::start(200);
    let dir = scratch("push-pyroscope-name");
    let out = dir.join("p.collapsed");
    let opts = format!("push={},pushformat=pyroscope,chunk=1s,file={}", backend.url(), out.display());
    let env = [("OTEL_SERVICE_NAME", "order service")];
    let run = run_java_env(jdk, Some(&opts), &[], "Shares", &["1", "0.5"], &env);
    run.assert_ok("a service name Pyroscope cannot take");
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.contains("\"order service\"")).collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("\"order_service\"") && lines[0].contains("service=NAME"), "{}", lines[0]);
    let received = backend.received();
    assert!(!received.is_empty(), "nothing pushed:\n{}", run.stderr);
    for r in &received {
        assert_eq!(ingest_query(r)[0], ("name".to_string(), "order_service".to_string()), "{}", r.path);
    }
    assert!(total(&read_collapsed(&out)) > 0, "no local profile:\n{}", run.stderr);
}

/// A backend that answers every request with 200 and a body that never ends (no length, the
/// connection never closed by it), writing until the client closes. Its thread outlives the test.
fn endless_body_backend() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    std::thread::spawn(move || {
        let block = [b'x'; 64 << 10];
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                // The request is left unread: the answer starts at once, as a hostile peer may.
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n");
                while conn.write_all(&block).is_ok() {}
            });
        }
    });
    url
}

#[test]
fn a_backend_with_an_endless_answer_harms_no_jvm() {
    let jdk = &jdks()[0];
    let url = endless_body_backend();
    let run = run_java(jdk, Some(&format!("push={url},chunk=1s")), &[], "Shares", &["1", "2", "cpu"]);
    run.assert_ok("Shares pushing to a backend with an endless answer");
    assert!(run.stdout.contains("cpu "), "the workload did not finish:\n{}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("hpm: ") && l.contains(&url)).collect();
    assert_eq!(lines.len(), 1, "one push line expected:\n{}", run.stderr);
    // Each answer is read to its 64 KiB bound and the period counts as delivered; the exit
    // summary says so, and nothing was lost.
    assert!(lines[0].contains(" delivered (") && !lines[0].contains("not delivered"), "{}", lines[0]);
    assert!(!run.stderr.contains("not pushed"), "{}", run.stderr);
}
