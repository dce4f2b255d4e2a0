//! Every error path gives its one line, and the JVM refuses to start; the hardware-event
//! fallback says what it used instead.

use hpm_tests::*;

fn refused(options: &str, env: &[(&str, &str)], expect: &[&str]) {
    let jdk = &jdks()[0];
    let run = run_java_env(jdk, Some(options), &[], "Shares", &["1", "0.1"], env);
    assert!(!run.status.success(), "`{options}` should stop the JVM; stderr: {}", run.stderr);
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("hpm: "))
        .unwrap_or_else(|| panic!("no hpm line for `{options}`: {}", run.stderr));
    for e in expect {
        assert!(line.contains(e), "`{options}`: {line:?} lacks {e:?}");
    }
    assert!(!line.contains('\x1b'), "`{options}`: {line:?} holds an escape");
}

#[test]
fn bad_options_name_the_problem_and_the_choices() {
    refused("event=cyclez", &[], &["unknown event `cyclez`", "cpu-clock", "dTLB-load-misses", "rXXXX"]);
    refused("bogus=1", &[], &["unknown option `bogus`", "interval"]);
    refused("interval=fast", &[], &["interval=fast", "10ms"]);
    refused("event=page-faults,interval=1ms", &[], &["is a time, but page-faults counts events"]);
    refused(
        "file=/nonexistent-dir/p.jfr",
        &[],
        &["cannot write /nonexistent-dir/p.jfr", "no such directory", "writable"],
    );
    refused("file=p.txt", &[], &[".jfr, .collapsed, .html, .svg, .pb.gz (pprof) or .json"]);
    refused("counters=task-clock+nope", &[], &["unknown event `nope`"]);
    refused("sampler=sps", &[], &["sampler=sps", "sampler=asgct"]);
    // Used to start, and its timer's next tick wrapped into the past: samples without pause.
    refused("sampler=jvmti,interval=18446744073709551615", &[], &["give a time from 10us to 60s"]);
}

/// The push options refuse the session as the others do, each with its one line (the unit
/// tests of agent/jvm/src/options/push.rs hold the rest of the grammar).
#[test]
fn push_options_are_refused_with_one_line() {
    refused("push=https://127.0.0.1:4318", &[], &["push=https://127.0.0.1:4318", "no TLS", "OpenTelemetry Collector"]);
    refused("push=http://user:pw@127.0.0.1:4318/", &[], &["credentials", "refused"]);
    refused("push=http://127.0.0.1:4318,chunk=0", &[], &["chunk=0", "from 1s to 1h"]);
    refused("push=http://127.0.0.1:4318,chunk=2h", &[], &["chunk=2h", "from 1s to 1h"]);
    // The control character is not echoed to the terminal as it is.
    refused("push=http://127.0.0.1:4318,service=a\x1b[2Jb", &[], &["service=", "printable ASCII"]);
    refused("push=http://127.0.0.1:4318,pushformat=\x1b[2J", &[], &["pushformat=\\x1b[2J", "otlp or pyroscope"]);
    refused("push=http://127.0.0.1:4318,chunk=\x1b[2J", &[], &["chunk=\\x1b[2J", "from 1s to 1h"]);
    refused("push=http://127.0.0.1:4318,labels=env=prod", &[], &["labels=", "Pyroscope's", "resource processor"]);
    refused("chunk=10s", &[], &["chunk=", "give push=URL too"]);
    refused("sampler=chain,push=http://127.0.0.1:4318", &[], &["sampler=chain", "default sampler"]);
    // A name given that Pyroscope cannot take is refused when read, with one it takes.
    refused(
        "push=http://127.0.0.1:4040,pushformat=pyroscope,service=a;b",
        &[],
        &["service=a;b", "Pyroscope takes", "service=a_b"],
    );
}

#[test]
fn denied_perf_names_the_sysctl() {
    // HPM_TEST_PERF_ERRNO makes perf_event_open fail as the kernel would (13 = EACCES).
    refused("", &[("HPM_TEST_PERF_ERRNO", "13")], &["denied", "perf_event_paranoid"]);
    refused("", &[("HPM_TEST_PERF_ERRNO", "24")], &["ulimit -n"]);
}

#[test]
fn help_lists_options_and_exits() {
    let run = run_java(&jdks()[0], Some("help"), &[], "Shares", &["1", "0.1"]);
    assert!(run.status.success());
    for word in ["event=", "interval=", "counters=", "file=", "threads", "quiet", "cycles", "page-faults"] {
        assert!(run.stdout.contains(word), "help lacks {word}: {}", run.stdout);
    }
    assert!(!run.stdout.contains("done"), "the program must not run after help");
}

/// A hardware event: either the PMU exists and it is used, or one line says which software
/// event replaced it. Never a made-up hardware number.
#[test]
fn hardware_events_fall_back_with_one_line() {
    let dir = scratch("fallback");
    let out = dir.join("p.collapsed");
    let run = run_java(
        &jdks()[0],
        Some(&format!("event=cycles,counters=instructions+task-clock,file={}", out.display())),
        &[],
        "Shares",
        &["1", "1"],
    );
    run.assert_ok("Shares with event=cycles");
    let pmu = run.stderr.lines().find(|l| l.starts_with("hpm: event "));
    if run.stderr.contains("no hardware PMU for cycles") {
        let fallback: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains("no hardware PMU for cycles") && l.contains("sampling cpu-clock"))
            .collect();
        assert_eq!(fallback.len(), 1, "{}", run.stderr);
        assert!(run.stderr.contains("counter instructions is not available"), "{}", run.stderr);
        assert!(pmu.unwrap().contains("cpu-clock"), "{}", run.stderr);
    } else {
        assert!(pmu.unwrap().contains("cycles"), "{}", run.stderr);
    }
    assert!(total(&read_collapsed(&out)) > 0);
}
