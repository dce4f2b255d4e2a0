//! Issue 12, item 5: `hpm diff` of two runs of a program whose hot method changes between them
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
