//! A GC-heavy program: the GC threads' samples are attributed to the GC component, in
//! proportion to the GC time the JVM itself measured.

use hpm_tests::*;

#[test]
fn gc_time_goes_to_the_gc_component() {
    for jdk in jdks() {
        let dir = scratch(&format!("gc-{}", jdk.name));
        let out = dir.join("p.collapsed");
        let opts = format!("interval=1ms,file={}", out.display());
        let run = run_java(&jdk, Some(&opts), &["-Xmx200m", "-XX:+UseParallelGC"], "GcHeavy", &["4"]);
        run.assert_ok("GcHeavy");
        let line = run.stdout.lines().find(|l| l.starts_with("gc ms=")).expect("gc line");
        let gc_ms: f64 = line.split(|c: char| !c.is_ascii_digit()).find_map(|s| s.parse().ok()).unwrap();
        let stacks = read_collapsed(&out);
        let all = total(&stacks);
        let gc: u64 = stacks.iter().filter(|(f, _)| f[0] == "[GC]").map(|(_, n)| n).sum();
        let comp = run.stderr.lines().find(|l| l.contains("components:")).unwrap_or("").to_string();
        eprintln!("{}: {line}; {gc} of {all} samples under [GC]; {comp}", jdk.name);
        assert!(gc_ms >= 200.0, "{}: the workload did too little GC ({gc_ms} ms) to judge", jdk.name);
        // Parallel GC works with up to 2 threads here: GC CPU time is at least the pause time
        // (one thread busy) and at most twice it. Allow for samples landing elsewhere.
        let gc_cpu_ms = gc as f64; // 1 sample = 1 ms of CPU
        assert!(gc_cpu_ms >= 0.5 * gc_ms, "{}: {gc_cpu_ms} ms of GC samples for {gc_ms} ms of GC", jdk.name);
        assert!(gc_cpu_ms <= 3.0 * gc_ms, "{}: {gc_cpu_ms} ms of GC samples for {gc_ms} ms of GC", jdk.name);
        assert!(comp.contains("GC "), "{}: summary names no GC component: {comp}", jdk.name);
    }
}
