//! `hpm diff` of two runs of a program whose hot method changes between them
//! names that method first. tests/workloads/Moves.java spends half its CPU in `alpha` and half
//! in `common` with `alpha`, four fifths in `beta` and one fifth in `common` with `beta`: from
//! the first run to the second, `beta` grows by about 80 points of the samples, `alpha` shrinks
//! by about 50, `common` by about 30. On every JDK.

use hpm_tests::*;

/// (self change, method) of the rows of the diff's method table, in order.
fn method_rows(out: &str) -> Vec<(f64, String)> {
    let start = out.find("== Methods by").unwrap_or_else(|| panic!("no method table:\n{out}"));
    out[start..]
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty() && !l.starts_with('('))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0].parse().unwrap_or_else(|_| panic!("row `{l}`")), cols[cols.len() - 1].to_string())
        })
        .collect()
}

#[test]
fn diff_of_two_runs_names_the_method_that_became_hot_first() {
    for jdk in jdks() {
        let dir = scratch(&format!("diff-{}", jdk.name));
        let mut files = Vec::new();
        for mode in ["alpha", "beta"] {
            let jfr = dir.join(format!("{mode}.jfr"));
            let opts = format!("interval=1ms,file={},quiet", jfr.display());
            // 2 s of the main thread's CPU at 1 ms: about 2,000 samples of Moves' methods.
            run_java(&jdk, Some(&opts), &["-XX:CompileCommand=quiet"], "Moves", &[mode, "2"]).assert_ok("Moves");
            files.push(jfr.display().to_string());
        }
        let out = hpm(&["diff", &files[0], &files[1]]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}: hpm diff failed: {}", jdk.name, String::from_utf8_lossy(&out.stderr));
        let rows = method_rows(&text);
        eprintln!("{}: first rows {:?}", jdk.name, &rows[..rows.len().min(4)]);
        let what = format!("{}: hpm diff alpha.jfr beta.jfr\n{text}", jdk.name);
        assert!(rows.len() >= 3, "{what}");
        let (first, second) = (&rows[0], &rows[1]);
        assert_eq!(first.1, "Moves.beta", "the method that became hot comes first: {what}");
        assert!(first.0 > 0.0, "beta grew: {what}");
        // Expected about +80 against alpha's -50: far apart, whatever the noise of ~2,000 samples.
        assert!(first.0 >= 1.2 * second.0.abs(), "beta's change is not well ahead of the next one: {what}");
        let alpha = rows.iter().find(|r| r.1 == "Moves.alpha").unwrap_or_else(|| panic!("no alpha row: {what}"));
        assert!(alpha.0 < 0.0, "alpha shrank: {what}");
        // The diff's samples: both runs long enough to tell 80 points from noise.
        for (i, side) in ["A:", "B:"].iter().enumerate() {
            let line = text.lines().find(|l| l.starts_with(side)).unwrap();
            let n: u64 = line.rsplit_once('(').unwrap().1.split(' ').next().unwrap().replace(',', "").parse().unwrap();
            assert!(n >= 1_000, "{}: run {} has only {n} samples: {what}", jdk.name, i + 1);
        }
    }
}

/// Recordings of the JVM's events alone (agent options `alloc`, `lock`, no
/// CPU event) have no samples; `hpm diff` compares them on the events both have, without a
/// flag, and its header names what the numbers are (bytes allocated, time waited), never
/// "samples". Two recordings with both kinds: allocations, with a note naming `--event lock`.
/// AllocLocks' lockers wait on HotLock three times as long as on ColdLock, so both show in the
/// lock diff. (The choice is the CLI's, the same on every JDK: run on the first.)
#[test]
fn diff_of_event_recordings_compares_the_events_both_have_in_their_units() {
    let jdk = &jdks()[0];
    let dir = scratch("diff-events");
    let record = |name: &str, event: &str, mode: &str| {
        let jfr = dir.join(format!("{name}.jfr"));
        let opts = format!("event={event},quiet,file={}", jfr.display());
        run_java(jdk, Some(&opts), &[], "AllocLocks", &[mode, "1"]).assert_ok("AllocLocks");
        jfr.display().to_string()
    };
    let (lock, alloc) = (record("lock", "lock", "lock"), record("alloc", "alloc", "alloc"));
    let (both1, both2) = (record("both1", "alloc,lock", "both"), record("both2", "alloc,lock", "both"));
    let (lock, alloc, both1, both2) = (lock.as_str(), alloc.as_str(), both1.as_str(), both2.as_str());
    let diff = |args: &[&str]| {
        let mut all = vec!["diff", "--top", "50"];
        all.extend_from_slice(args);
        let out = hpm(&all);
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status,
        )
    };
    let header = |text: &str, side: &str| text.lines().find(|l| l.starts_with(side)).unwrap_or_default().to_string();

    // Lock waits only in A, both kinds in B: the one kind they share, in time waited.
    let (text, err, status) = diff(&[lock, both1]);
    assert!(status.success(), "lock vs both: {err}");
    for side in ["A:", "B:"] {
        let h = header(&text, side);
        assert!(h.ends_with(" waited)") && !h.contains("samples"), "lock vs both: header `{h}`\n{text}");
    }
    assert!(text.contains("B's share of its time waited minus A's"), "{text}");
    assert!(text.contains("AllocLocks$HotLock"), "the monitor's class as the leaf:\n{text}");
    assert!(err.is_empty(), "one shared kind needs no note: {err}");

    // Both kinds in both: allocations, said, in bytes; --event lock picks the waits.
    let (text, err, status) = diff(&[both1, both2]);
    assert!(status.success(), "both vs both: {err}");
    assert!(header(&text, "A:").ends_with(" allocated)"), "{text}");
    assert!(err.contains("comparing alloc (bytes allocated); pick the other with --event lock"), "{err}");
    let (text, _, status) = diff(&["--event", "lock", both1, both2]);
    assert!(status.success() && header(&text, "B:").ends_with(" waited)"), "{text}");

    // Nothing in common: the error says what each has.
    let (_, err, status) = diff(&[alloc, lock]);
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("A has only alloc events, B has only lock events"), "{err}");

    // `--event` is found at the top of `hpm diff --help`, before the output options.
    let help = String::from_utf8_lossy(&hpm(&["diff", "--help"]).stdout).into_owned();
    let (event, output) = (help.find("--event"), help.find("--output"));
    assert!(event.is_some() && event < output, "--event before --output:\n{help}");

    // The report and the flame graph say the same units.
    let out = hpm(&["report", "--event", "lock", lock]);
    let report = String::from_utf8_lossy(&out.stdout);
    let samples = report.lines().find(|l| l.starts_with("samples:")).unwrap_or_default();
    assert!(samples.contains(" events (") && samples.contains(" waited)"), "report: `{samples}`");
    assert!(report.contains("== Top 20 methods by self ns waited =="), "{report}");
    let html = dir.join("alloc.html");
    let out = hpm(&["flamegraph", "--event", "alloc", alloc, "-o", html.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(" events, ") && err.contains(" allocated, "), "flamegraph: {err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("\"unit\":\"bytes allocated\""), "the page's unit");
}
