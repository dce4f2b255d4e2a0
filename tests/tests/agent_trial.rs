//! A new user's trial program (tests/workloads/HttpServerTrial.java): an embedded HTTP server
//! with a synchronized price cache, `String.format` summaries and an audit file, loaded by 12
//! HttpClient requesters in the same JVM, recorded with `event=cpu,alloc,lock` on both JDKs. The
//! truth by construction: every request runs `PriceCache.price`, a synchronized method that
//! computes near a millisecond and allocates 8 KiB while it holds the cache's monitor, so it is
//! the program's hot method, one of its main allocation sites and its contended lock; and the
//! server's pool has 48 threads for 12 requesters, so most of its threads sit idle in
//! `ThreadPoolExecutor.getTask`, waiting far longer than anyone waits for the cache.
//!
//! Each profile of the server's threads (`--thread 'price-worker-.*'`) must name the cache:
//! the CPU profile and the allocation profile by its share, and the lock profile with the cache's
//! monitor among its top rows and at least a quarter of the contended waits. Before idle threads had
//! a row of their own, the idle pool's parks (`ConditionObject (park)`) held 89.5% of the lock table and the cache 8.8%.

use std::process::Command;

use hpm_profile::model::{JvmEventKind, Recording};
use hpm_tests::*;

const CACHE: &str = "HttpServerTrial$PriceCache.price";
const WORKERS: &str = "price-worker-.*";

fn worker(rec: &Recording, thread: u32) -> bool {
    rec.threads.get(thread as usize).is_some_and(|t| t.name.starts_with("price-worker-"))
}

/// Share (%) of `weights` whose stack has the cache's method.
fn cache_share<'a>(rec: &Recording, items: impl Iterator<Item = (&'a [hpm_profile::model::Frame], u64)>) -> (f64, u64) {
    let (mut all, mut cache, mut n) = (0u64, 0u64, 0u64);
    for (stack, w) in items {
        n += 1;
        all += w;
        if stack.iter().any(|f| rec.method(f.method).display_name() == CACHE) {
            cache += w;
        }
    }
    (cache as f64 * 100.0 / all.max(1) as f64, n)
}

/// The rows of the report's lock table by class: (share %, key), top first; the idle row apart.
fn lock_rows(report: &str) -> Vec<(Option<f64>, String)> {
    let mut lines = report.lines().skip_while(|l| !l.starts_with("Lock waits")).skip(2);
    let mut rows = Vec::new();
    for l in lines.by_ref() {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.len() < 5 || cols[0] == "..." {
            if l.trim().is_empty() {
                break;
            }
            continue;
        }
        let share = cols[2].strip_suffix('%').and_then(|s| s.parse().ok());
        rows.push((share, cols[4..].join(" ")));
    }
    rows
}

fn hpm(args: &[&str]) -> String {
    let out = Command::new(hpm_bin()).args(args).output().expect("run hpm");
    assert!(out.status.success(), "hpm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_trial_servers_cpu_alloc_and_lock_profiles_name_its_cache_on_both_jdks() {
    for jdk in jdks() {
        let dir = scratch(&format!("trial-{}", jdk.name));
        let file = dir.join("trial.jfr");
        let audit = dir.join("audit.log");
        let opts = format!("event=cpu,interval=2ms,alloc,lock,file={}", file.display());
        let run = run_java(&jdk, Some(&opts), &[], "HttpServerTrial", &["3", audit.to_str().unwrap()]);
        run.assert_ok(&format!("{}: HttpServerTrial", jdk.name));
        let (rec, _) = hpm_profile::load::load_recording(&file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name));

        // CPU: the cache's method holds most of the server threads' samples (it is nearly all
        // their work; the HTTP exchange and the summaries are the rest).
        let (cpu, n) =
            cache_share(&rec, rec.samples.iter().filter(|s| worker(&rec, s.thread.0)).map(|s| (&s.stack[..], 1)));
        // Allocation: 8 KiB of the cache's per request, beside the server's buffers and the
        // request's objects.
        let (alloc, na) = cache_share(
            &rec,
            rec.events
                .iter()
                .filter(|e| e.kind == JvmEventKind::Allocation && worker(&rec, e.thread.0))
                .map(|e| (&e.stack[..], e.weight)),
        );
        // Lock: the report's table of the server threads' waits, as the user reads it.
        let path = file.to_str().unwrap();
        let report = hpm(&["report", path, "--thread", WORKERS, "--top", "10"]);
        let rows = lock_rows(&report);
        eprintln!(
            "{}: PriceCache.price: {cpu:.1}% of {n} CPU samples, {alloc:.1}% of {na} allocation samples' bytes; \
             lock rows {rows:?}",
            jdk.name
        );
        assert!(n >= 200, "{}: {n} CPU samples of the server's threads", jdk.name);
        assert!(cpu >= 25.0, "{}: PriceCache.price in {cpu:.1}% of the CPU samples", jdk.name);
        assert!(na >= 50, "{}: {na} allocation samples of the server's threads", jdk.name);
        assert!(alloc >= 8.0, "{}: PriceCache.price in {alloc:.1}% of the allocated bytes", jdk.name);
        let at = rows.iter().position(|r| r.1 == "HttpServerTrial$PriceCache (monitor)");
        let top: Vec<_> = rows.iter().take(3).collect();
        assert!(
            at.is_some_and(|i| i < 3),
            "{}: the cache's monitor is not in the top rows {top:?}\n{report}",
            jdk.name
        );
        let share = rows[at.unwrap()].0.unwrap_or(0.0);
        assert!(share >= 25.0, "{}: the cache's monitor has {share:.1}% of the waits\n{report}", jdk.name);
        assert!(
            rows.last().is_some_and(|r| r.1 == "(idle: waiting for work)" && r.0.is_none()),
            "{}: the idle pool's parks are not in the last row\n{report}",
            jdk.name
        );

        // The same as samples (`--event lock`, what flame graphs and diff show): the idle waits
        // under a leaf of their own, and gone with --no-idle.
        let idle = "(idle: waiting for work)";
        let as_samples = hpm(&["report", path, "--event", "lock", "--thread", WORKERS, "--top", "40"]);
        assert!(as_samples.contains(idle), "{}: --event lock has no idle row\n{as_samples}", jdk.name);
        let without = hpm(&["report", path, "--event", "lock", "--no-idle", "--thread", WORKERS, "--top", "40"]);
        assert!(!without.contains(idle), "{}: --no-idle kept the idle waits\n{without}", jdk.name);
        assert!(without.contains("HttpServerTrial$PriceCache"), "{}: --no-idle\n{without}", jdk.name);
    }
}
