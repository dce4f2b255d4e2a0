//! A GC-heavy program: the GC threads' samples are attributed to the GC component, in
//! proportion to the CPU time of the JVM's GC threads.

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
        // The truth is the CPU time of the GC worker threads (from /proc, at exit): unlike the
        // pause time it does not grow when the machine is loaded. Samples of GC work can also
        // land on the VM thread, hence the wider upper bound.
        let gc_cpu_truth: f64 =
            line.split("gc-cpu ms=").nth(1).and_then(|s| s.split_whitespace().next()?.parse().ok()).expect("gc-cpu");
        let gc_cpu_ms = gc as f64; // 1 sample = 1 ms of CPU
        assert!(
            gc_cpu_ms >= 0.6 * gc_cpu_truth,
            "{}: {gc_cpu_ms} ms of GC samples for {gc_cpu_truth} ms of GC thread CPU",
            jdk.name
        );
        assert!(
            gc_cpu_ms <= 1.5 * gc_cpu_truth + 50.0,
            "{}: {gc_cpu_ms} ms of GC samples for {gc_cpu_truth} ms of GC thread CPU",
            jdk.name
        );
        assert!(comp.contains("GC "), "{}: summary names no GC component: {comp}", jdk.name);
    }
}
