//! `hpm attach`: a JVM started without the agent is profiled late (Agent_OnAttach), dumped while
//! it runs, stopped, and keeps running to a normal exit; on every JDK. Attaching to a process
//! that is not a JVM fails with a clear message and leaves it alone.

use std::process::Command;

use hpm_tests::*;

#[test]
fn attach_start_dump_stop_on_a_running_jvm() {
    for jdk in jdks() {
        let dir = scratch(&format!("attach-{}", jdk.name));
        let mut jvm = Attachee::start(&jdk);
        let pid = jvm.pid;

        // The first attach loads the agent; no session runs yet.
        assert!(attach_ok(pid, "status").contains("state: idle"), "{}: status before start", jdk.name);
        let session = dir.join("session.collapsed");
        let out = attach_ok(pid, &format!("interval=1ms,quiet,file={}", session.display()));
        assert!(out.contains("profiling started"), "{}: {out}", jdk.name);
        let again = hpm(&["attach", &pid.to_string(), "start"]);
        assert!(!again.status.success(), "{}: a second start must be refused", jdk.name);
        assert!(String::from_utf8_lossy(&again.stderr).contains("already running"), "{}: {:?}", jdk.name, again);

        assert_eq!(jvm.say("work 3000"), "worked");
        let status = attach_ok(pid, "status");
        for want in ["state: running", "sampler: asgct", "event: cpu-clock", "interval: 1ms", "samples: ", "duration: "]
        {
            assert!(status.contains(want), "{}: status lacks {want:?}:\n{status}", jdk.name);
        }

        // Dump while profiling: the profile so far, with the known shares (the workers ran 3 s
        // of their CPU time each: ~6,000 samples however busy the machine).
        let dump = dir.join("dump.collapsed");
        attach_ok(pid, &format!("dump,file={}", dump.display()));
        let n = assert_known_shares(
            &read_collapsed(&dump),
            "Attachee.work",
            500,
            3.0,
            &format!("{}: attached dump", jdk.name),
        );
        let jfr = dir.join("dump.jfr");
        attach_ok(pid, &format!("dump,file={}", jfr.display()));
        let report = hpm(&["report", jfr.to_str().unwrap()]);
        assert!(report.status.success(), "{}: hpm report of the JFR dump: {:?}", jdk.name, report);
        assert!(
            String::from_utf8_lossy(&report.stdout).contains("Shares.spin"),
            "{}: JFR dump lacks Shares.spin",
            jdk.name
        );

        // Stop: the session's file is written; the program runs on and exits normally.
        let out = attach_ok(pid, "stop");
        assert!(out.contains("profiling stopped") && out.contains("session.collapsed"), "{}: {out}", jdk.name);
        assert!(
            total(&read_collapsed(&session)) >= n,
            "{}: the session file has fewer samples than the dump",
            jdk.name
        );
        assert!(attach_ok(pid, "status").contains("state: idle"), "{}: status after stop", jdk.name);
        // After stop, dump writes the last session's profile.
        let after = dir.join("after.collapsed");
        attach_ok(pid, &format!("dump,file={}", after.display()));
        assert_eq!(total(&read_collapsed(&after)), total(&read_collapsed(&session)), "{}: dump after stop", jdk.name);
        assert_eq!(jvm.say("work 100"), "worked");
        assert!(jvm.say("exit").starts_with("done"));
        let status = jvm.child.wait().unwrap();
        assert!(status.success(), "{}: the attached JVM exited with {status}", jdk.name);
    }
}

/// A timer-sampler session started late sees the threads that were running before it: jvmti
/// on every JDK, sps on the patched one (its samples name threads by kernel id, which the
/// session must learn for threads it never saw start).
#[test]
fn timer_samplers_attached_late_see_running_threads() {
    let mut cells: Vec<(Jdk, &str)> = jdks().into_iter().map(|j| (j, "jvmti")).collect();
    cells.extend(patched_jdk().map(|j| (j, "sps")));
    for (jdk, sampler) in cells {
        let what = format!("{} sampler={sampler}", jdk.name);
        let dir = scratch(&format!("attach-{sampler}-{}", jdk.name));
        let mut jvm = Attachee::start(&jdk);
        assert_eq!(jvm.say("work 500"), "worked");
        let file = dir.join("late.collapsed");
        let out = attach_ok(jvm.pid, &format!("sampler={sampler},interval=5ms,quiet,file={}", file.display()));
        assert!(out.contains("profiling started"), "{what}: {out}");
        assert_eq!(jvm.say("work 3000"), "worked");
        attach_ok(jvm.pid, "stop");
        assert_known_shares(&read_collapsed(&file), "Attachee.work", 200, 4.0, &what);
        assert!(jvm.say("exit").starts_with("done"));
        assert!(jvm.child.wait().unwrap().success(), "{what}: the attached JVM failed");
    }
}

/// The launcher's main thread started long before the agent, and its OS name ("java") matches
/// no Java thread's name: its samples must still carry its Java stack (the handler learns that
/// the JVM set the thread up from HotSpot's thread key, not from a name).
#[test]
fn a_late_attach_walks_the_main_thread() {
    for jdk in jdks() {
        let dir = scratch(&format!("attach-main-{}", jdk.name));
        let mut jvm = Attachee::start(&jdk);
        let file = dir.join("main.collapsed");
        attach_ok(jvm.pid, &format!("interval=2ms,quiet,file={}", file.display()));
        assert_eq!(jvm.say("spin 1500"), "spun");
        attach_ok(jvm.pid, "stop");
        let stacks = read_collapsed(&file);
        let all: u64 = stacks.iter().map(|(_, n)| n).sum();
        let main: u64 = stacks.iter().filter(|(s, _)| s.iter().any(|f| f == "Attachee.spin")).map(|(_, n)| n).sum();
        // Main spins on one of 2 cores beside two workers: about a third of the samples.
        assert!(
            all >= 300 && main as f64 >= 0.15 * all as f64,
            "{}: {main} of {all} samples in Attachee.spin",
            jdk.name
        );
        assert!(jvm.say("exit").starts_with("done"));
        assert!(jvm.child.wait().unwrap().success(), "{}: the attached JVM failed", jdk.name);
    }
}

#[test]
fn attach_to_a_process_that_is_not_a_jvm_says_so() {
    hpm_bin(); // build first: the sleeper must outlive the build
    let mut sleeper = Command::new("sleep").arg("600").spawn().expect("run sleep");
    let o = hpm(&["attach", &sleeper.id().to_string()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("is not a HotSpot JVM"), "unclear message: {err}");
    assert!(sleeper.try_wait().unwrap().is_none(), "attach must not signal a process that is not a JVM");
    sleeper.kill().unwrap();
    let _ = sleeper.wait();

    let o = hpm(&["attach", "999999999", "status"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no process with PID 999999999"), "{:?}", o);
}

/// The share of JIT-compiled and inlined frames among a JFR file's ExecutionSample frames.
fn compiled_frame_share(jdk: &Jdk, jfr: &std::path::Path) -> f64 {
    let r = check_jfr(jdk, jfr, "Shares");
    let all: u64 = r.iter().filter(|(k, _)| k.starts_with("frametype ")).map(|(_, v)| v).sum();
    let compiled = r.get("frametype JIT_compiled").unwrap_or(&0) + r.get("frametype Inlined").unwrap_or(&0);
    compiled as f64 / all.max(1) as f64
}

/// The agent's own threads (`hpm-processor`, `hpm-sampler`) in `jcmd PID Thread.print`.
fn agent_threads(jdk: &Jdk, pid: u32) -> Vec<String> {
    let o = Command::new(jdk.tool("jcmd")).args([&pid.to_string(), "Thread.print"]).output().expect("run jcmd");
    assert!(o.status.success(), "jcmd Thread.print failed: {o:?}");
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with("\"hpm-")).map(str::to_string).collect()
}

/// Sessions one after another in one JVM: each resolves its samples
/// like the first (the code map outlives a session: a second session used to see ~98% of its
/// samples as unknown), and no session leaves its processing or sampling thread attached to the
/// JVM (each used to stay as a zombie JavaThread).
#[test]
fn every_session_resolves_like_the_first_and_leaves_no_agent_thread() {
    for jdk in jdks() {
        let dir = scratch(&format!("sessions-{}", jdk.name));
        let mut jvm = Attachee::start(&jdk);
        let pid = jvm.pid;
        let mut first_share = None;
        for (i, sampler) in ["asgct", "jvmti", "asgct"].iter().enumerate() {
            let what = format!("{} session {} (sampler={sampler})", jdk.name, i + 1);
            let file = dir.join(format!("s{i}.collapsed"));
            let jfr = dir.join(format!("s{i}.jfr"));
            let files = format!("file={},file={}", file.display(), jfr.display());
            attach_ok(pid, &format!("sampler={sampler},interval=2ms,quiet,{files}"));
            assert_eq!(jvm.say("work 2000"), "worked");
            attach_ok(pid, "stop");
            assert_known_shares(&read_collapsed(&file), "Attachee.work", 200, 4.0, &what);
            // The workers' hot code is JIT-compiled: the signal sampler names it through the code
            // map, which every session must have (without it every frame looked interpreted).
            // The timer samplers get no frame kinds from JVMTI.
            if *sampler == "asgct" {
                let share = compiled_frame_share(&jdk, &jfr);
                let first = *first_share.get_or_insert(share);
                assert!(
                    share >= 0.1 && share >= first / 2.0,
                    "{what}: {share:.2} of frames compiled, first session {first:.2}"
                );
            }
            assert_eq!(agent_threads(&jdk, pid), Vec::<String>::new(), "{what}: agent threads left after stop");
        }
        assert!(jvm.say("exit").starts_with("done"));
        assert!(jvm.child.wait().unwrap().success(), "{}: the attached JVM failed", jdk.name);
    }
}

/// A JVM running one copy of the agent (another path: another build, a renamed file) refuses
/// to set up a second copy beside it, naming the first, whether it comes by `hpm attach` or by
/// a second `-agentpath`; the first keeps running and answers through its own path.
#[test]
fn a_second_copy_of_the_agent_is_refused_and_named() {
    let jdk = &jdks()[0];
    let dir = scratch("second-copy");
    let copy = dir.join("libhpm-other.so");
    std::fs::copy(agent_path(), &copy).unwrap();
    let first = dir.join("first.collapsed");
    let mut jvm = Attachee::spawn({
        let mut c = Command::new(jdk.java());
        c.arg(format!("-agentpath:{}=quiet,file={}", copy.display(), first.display()))
            .args(["-XX:CompileCommand=quiet", "-cp"])
            .arg(workloads())
            .args(["Attachee", "2"]);
        c
    });
    let o = hpm(&["attach", &jvm.pid.to_string(), "status"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "a second copy was set up: {err}");
    assert!(err.contains("another copy of the hpm agent runs in this JVM") && err.contains("libhpm-other.so"), "{err}");
    // The first copy, through its own path, is the one running.
    let o = hpm(&["attach", &jvm.pid.to_string(), "status", "--lib", copy.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("state: running"), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(jvm.say("work 100"), "worked");
    drop(jvm);
    // Two -agentpath copies: the JVM does not start, and says why.
    let o = Command::new(jdk.java())
        .arg(format!("-agentpath:{}=quiet", copy.display()))
        .arg(format!("-agentpath:{}=quiet", agent_path().display()))
        .arg("-version")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("another copy of the hpm agent runs in this JVM"), "{err}");
}

/// Threads that started before a late attach are named as Java names them, whole, even where
/// their OS names (the first 15 bytes) are alike: the VM tells each one's kernel id.
#[test]
fn threads_started_before_an_attach_keep_their_whole_names() {
    for jdk in jdks() {
        let dir = scratch(&format!("attach-names-{}", jdk.name));
        let prefix = "order-processing-worker-";
        let mut jvm = Attachee::spawn({
            let mut c = Attachee::command(&jdk);
            c.arg(prefix);
            c
        });
        let out = dir.join("t.collapsed");
        attach_ok(jvm.pid, &format!("interval=1ms,threads,quiet,file={}", out.display()));
        assert_eq!(jvm.say("work 1000"), "worked");
        attach_ok(jvm.pid, "stop");
        let text = std::fs::read_to_string(&out).unwrap();
        for i in 0..2 {
            let name = format!("[{prefix}{i} tid=");
            assert!(text.lines().any(|l| l.starts_with(&name)), "{}: no stacks under {name}...]", jdk.name);
        }
        jvm.finish(&jdk.name);
    }
}
