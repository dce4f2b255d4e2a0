//! Pinned virtual threads (`event=lock`: `jdk.VirtualThreadPinned`), against a truth by
//! construction (tests/workloads/VPinned.java, tests/native/vpinned.c): N virtual threads
//! each park (once, but for early wake-ups) inside a JNI call back into Java while holding a
//! `PinLock`, which on JDK 24+
//! pins them (a native frame on the stack, JEP 491), and N plain virtual threads each park
//! once, which unmounts them. Each pinned park is one pinned event with the JDK's reason for a
//! native frame, the native method in its stack and the monitor's class; the plain parks make
//! none. On a JDK without virtual threads (17) the same tasks run on platform threads and
//! `event=lock` records their parks as before, none pinned. The JDK's own reader counts what
//! hpm's reads.

use hpm_profile::model::{JvmEventKind, Recording};
use hpm_tests::*;

/// Tasks of each kind, and each park's length (ms, above the threshold of 1 ms).
const TASKS: usize = 8;
const PARK_MS: u64 = 20;

fn run(jdk: &Jdk) -> (Run, Recording, std::path::PathBuf) {
    let dir = scratch(&format!("pinned-{}", jdk.name));
    let file = dir.join("p.jfr");
    let opts = format!("event=lock,lock=1ms,quiet,file={}", file.display());
    let lib = native_lib("vpinned");
    let (n, ms) = (TASKS.to_string(), PARK_MS.to_string());
    let run = run_java(jdk, Some(&opts), &[], "VPinned", &[lib.to_str().unwrap(), &n, &ms]);
    run.assert_ok("VPinned");
    let (rec, _) = hpm_profile::load::load_recording(&file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name));
    (run, rec, file)
}

fn names(rec: &Recording, e: &hpm_profile::model::JvmEvent) -> Vec<String> {
    e.stack.iter().map(|f| rec.method(f.method).display_name()).collect()
}

#[test]
fn a_park_inside_a_jni_callback_is_pinned_with_its_native_frame_and_monitor() {
    for jdk in jdks() {
        let (run, rec, file) = run(&jdk);
        let pinned: Vec<_> = rec.events.iter().filter(|e| e.kind == JvmEventKind::VirtualThreadPinned).collect();
        if run.stdout.contains("threads platform") {
            // No virtual threads: the parks are recorded as before, none pinned.
            let parks = rec.events.iter().filter(|e| e.kind == JvmEventKind::ThreadPark).count();
            eprintln!("{}: no virtual threads: {parks} parks, {} pinned", jdk.name, pinned.len());
            assert!(parks >= 2 * TASKS, "{}: {parks} parks", jdk.name);
            assert!(pinned.is_empty(), "{}: {} pinned events without virtual threads", jdk.name, pinned.len());
            continue;
        }
        eprintln!("{}: {} pinned events", jdk.name, pinned.len());
        assert!(pinned.len() >= TASKS, "{}: {} pinned events for {TASKS} pinned tasks", jdk.name, pinned.len());
        let parked: u64 = pinned.iter().map(|e| e.duration).sum();
        let least = TASKS as u64 * PARK_MS * 1_000_000 * 9 / 10;
        assert!(parked >= least, "{}: pinned parks {parked} ns in all", jdk.name);
        for e in &pinned {
            let frames = names(&rec, e);
            assert!(frames.iter().any(|f| f == "VPinned.nPark"), "{}: no native method in {frames:?}", jdk.name);
            assert!(!frames.iter().any(|f| f == "VPinned.freePark"), "{}: a free park pinned: {frames:?}", jdk.name);
            assert_eq!(e.reason.as_deref(), Some(hpm_profile::output::pinned::NATIVE), "{}", jdk.name);
            assert_eq!(e.class.as_deref(), Some("VPinned$PinLock"), "{}: monitor class", jdk.name);
            assert_eq!(hpm_profile::output::pinned::pinning_frame(&rec, e), "VPinned.nPark");
        }
        // Each pinned park is a park too, once.
        let parks_in_pin = rec
            .events
            .iter()
            .filter(|e| e.kind == JvmEventKind::ThreadPark && names(&rec, e).iter().any(|f| f == "VPinned.nPark"))
            .count();
        assert_eq!(parks_in_pin, TASKS, "{}: parks in the pinned tasks", jdk.name);
        let counts = check_jfr(&jdk, &file, "");
        assert_eq!(
            counts.get("count jdk.VirtualThreadPinned").copied(),
            Some(TASKS as u64),
            "{}: JDK reader",
            jdk.name
        );

        let out = std::process::Command::new(hpm_bin()).arg("report").arg(&file).output().expect("hpm report");
        let text = String::from_utf8_lossy(&out.stdout);
        let section = text.split("Virtual threads pinned").nth(1).unwrap_or_else(|| panic!("no section in {text}"));
        for row in ["Native or VM frame on stack", "VPinned.nPark", "VPinned$PinLock"] {
            assert!(section.contains(row), "{}: no {row} in the pinned section:{section}", jdk.name);
        }
    }
}
