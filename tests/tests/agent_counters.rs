//! Per-method counters charged where the counted events happen. One thread
//! alternates short turns of `FaultsOrMath.faults`, whose every store is a page fault, and
//! `FaultsOrMath.math`, arithmetic that touches no new page: by construction math's share of
//! the thread's page faults is ~0, and faults' ~100%. `counters=page-faults` samples itself
//! (its own overflow every 100 faults interrupts the faulting store), so math must get under 2
//! points of them; charged by the interval (the delta since the thread's previous clock sample,
//! as before) math got about half, as much as its share of the CPU. The thread's counted faults
//! are checked against the pages it touched (the workload's own count), and task-clock, a clock,
//! stays interval-attributed and is marked so in the JFR and in the report's header.

use std::collections::HashMap;

use hpm_profile::model::Recording;
use hpm_tests::*;

/// Page faults charged to the alternator's samples: (total, under FaultsOrMath.math, under
/// FaultsOrMath.faults, counter samples).
fn fault_shares(rec: &Recording, k: usize) -> (u64, u64, u64, u64) {
    let alternator = |t: u32| rec.threads.get(t as usize).is_some_and(|t| t.name == "alternator");
    let (mut total, mut math, mut faults, mut own) = (0, 0, 0, 0);
    for s in rec.samples.iter().filter(|s| alternator(s.thread.0)) {
        let n = s.counters.get(k).copied().unwrap_or(0);
        if n == 0 {
            continue;
        }
        own += u64::from(s.is_counter_sample());
        total += n;
        let names: Vec<String> = s.stack.iter().map(|f| rec.method(f.method).display_name()).collect();
        if names.iter().any(|m| m == "FaultsOrMath.math") {
            math += n;
        }
        if names.iter().any(|m| m == "FaultsOrMath.faults") {
            faults += n;
        }
    }
    (total, math, faults, own)
}

#[test]
fn page_faults_are_charged_to_the_method_that_faults() {
    for jdk in jdks() {
        let dir = scratch(&format!("counters-{}", jdk.name));
        let jfr = dir.join("p.jfr");
        let opts = format!("interval=1ms,counters=task-clock+page-faults,quiet,file={}", jfr.display());
        let run = run_java(&jdk, Some(&opts), &[], "FaultsOrMath", &["1.5"]);
        run.assert_ok("FaultsOrMath");
        let touched: u64 = run
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("touched ").and_then(|n| n.trim().parse().ok()))
            .unwrap_or_else(|| panic!("{}: the workload printed no page count:\n{}", jdk.name, run.stdout));
        let rec = hpm_profile::jfr::read_recording(&jfr).unwrap_or_else(|e| panic!("{}: {e}", jdk.name)).recording;
        let index: HashMap<&str, usize> = rec.counters.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
        let (clock, k) = (index["task-clock"], index["page-faults"]);
        assert_eq!(rec.counter_periods.get(clock).copied().unwrap_or(0), 0, "{}: task-clock is a count", jdk.name);
        let period = rec.counter_periods.get(k).copied().unwrap_or(0);
        let (total, math, faults, own) = fault_shares(&rec, k);
        let pct = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
        eprintln!(
            "{}: alternator: {total} page faults counted ({own} own samples, period {period}), {touched} pages \
             touched; FaultsOrMath.math {:.2}%, FaultsOrMath.faults {:.2}%",
            jdk.name,
            pct(math),
            pct(faults)
        );
        assert!(touched >= 20_000, "{}: the workload touched only {touched} pages", jdk.name);
        // Interval-attributed, no sample is a counter's own: the spread is that of the clock's.
        let n = if own > 0 { own } else { rec.samples.len() as u64 };
        // Faults after the thread's last own sample are in none; a few are the JVM's own.
        assert!(
            (total as f64 - touched as f64).abs() <= 0.1 * touched as f64,
            "{}: {total} page faults counted, {touched} pages touched",
            jdk.name
        );
        // Truth: math faults on no page. What may stray: a fault or two of its compilation's
        // first run, and the binomial spread of `own` samples.
        let within = share_tolerance(0.0, n, 2.0);
        assert!(
            pct(math) <= within,
            "{}: FaultsOrMath.math got {:.1}% of the page faults (truth ~0, within {within:.1})",
            jdk.name,
            pct(math)
        );
        assert!(
            pct(faults) >= 100.0 - share_tolerance(0.0, n, 5.0),
            "{}: FaultsOrMath.faults got only {:.1}% of the page faults (truth ~100%)",
            jdk.name,
            pct(faults)
        );

        assert!(period > 0, "{}: page-faults is not sampled by its own overflows (interval-attributed)", jdk.name);
        assert!(own >= 100, "{}: only {own} page-fault samples", jdk.name);

        // The report's header says how each column came to its stacks.
        let report = run_command({
            let mut c = std::process::Command::new(hpm_bin());
            c.arg("report").arg(&jfr);
            c
        });
        report.assert_ok("hpm report");
        let counters = report.stdout.lines().find(|l| l.starts_with("counters:")).unwrap_or("");
        assert!(
            counters.contains("task-clock [interval]")
                && counters.contains(&format!("page-faults [sampled every {period}]")),
            "{}: the report's header does not mark the counters: {counters}",
            jdk.name
        );
    }
}
