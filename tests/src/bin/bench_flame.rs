//! Benchmark of the flame graph page in headless Chromium (run by hand, never by the tests): how
//! soon a page of `--subs` x 1,000 + `--subs` + 1 frames (default 100,101, the profile that
//! tests/tests/flame_browser.rs uses) is on screen, and how long the page takes to answer a hover,
//! a click (zoom), the reset button and a search.
//!
//! ```text
//! cargo run --release -p hpm-tests --bin bench-flame -- [--subs N] [--runs N] [--hpm PATH] [--out DIR]
//! ```
//!
//! Each run starts a fresh Chromium (tests/src/browser.rs) and opens the page once. Times are in
//! milliseconds from the navigation's start (the page's own `performance` clock):
//! - `first paint`, `first contentful`: the browser's paint timing entries (the header can paint
//!   before the graph's script has run: these bound the first thing the user sees);
//! - `graph drawn`: `DOMContentLoaded`, after the page's script parsed the data and drew the
//!   canvas once (the script is inline and draws synchronously);
//! - `graph on screen`: the first frame after that (a `requestAnimationFrame` callback, then a
//!   task), when the drawn canvas has been painted: the time to the first paint of the graph.
//!
//! The gestures are timed from the protocol command to its acknowledgement, which Chromium sends
//! once the page has handled the event (the handlers redraw synchronously): `hover`, `click`
//! (a zoom into a subsystem) and `reset`; `search` is from typing to the page's matched share,
//! including the page's 150 ms debounce. The median and the least of `--runs` runs (default 5)
//! are shown.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use hpm_tests::browser::Browser;
use serde_json::json;

struct Opts {
    subs: usize,
    runs: usize,
    hpm: PathBuf,
    out: PathBuf,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        subs: 100,
        runs: 5,
        hpm: hpm_tests::workspace_root().join("target/release/hpm"),
        out: std::env::temp_dir().join("hpm-bench-flame"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--subs" => o.subs = value()?.parse().map_err(|e| format!("--subs: {e}"))?,
            "--runs" => o.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--hpm" => o.hpm = PathBuf::from(value()?),
            "--out" => o.out = PathBuf::from(value()?),
            _ => {
                return Err(format!(
                    "unknown argument {a}; usage: bench-flame [--subs N] [--runs N] [--hpm PATH] [--out DIR]"
                ))
            }
        }
    }
    if o.subs == 0 || o.runs == 0 {
        return Err("--subs and --runs must be at least 1".into());
    }
    Ok(o)
}

/// Sets `window.__hpmDrawn` at DOMContentLoaded and `window.__hpmOnScreen` at the first frame
/// after it, on every document the page opens.
const PROBE: &str = "document.addEventListener('DOMContentLoaded', function () {
  window.__hpmDrawn = performance.now();
  requestAnimationFrame(function () { setTimeout(function () { window.__hpmOnScreen = performance.now(); }); });
});";

const COLUMNS: [&str; 8] =
    ["first paint", "first contentful", "graph drawn", "graph on screen", "hover", "click", "reset", "search"];

fn one_run(dir: &std::path::Path, page: &std::path::Path) -> Result<[f64; 8], String> {
    let mut b = Browser::launch(dir, 1200, 700)?;
    b.call("Page.addScriptToEvaluateOnNewDocument", json!({ "source": PROBE }))?;
    b.open(page)?;
    let v = b.wait_for(
        "window.__hpmOnScreen && { fp: (performance.getEntriesByName('first-paint')[0] || {}).startTime || 0, \
         fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0, \
         drawn: window.__hpmDrawn, screen: window.__hpmOnScreen }",
        "the graph on screen",
    )?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    // A subsystem's row (depth 1) sits just above the root's, at the bottom of the canvas.
    let g = b.eval(
        "(function () { const c = document.getElementById('fg'); c.scrollIntoView({ block: 'end' }); \
         const r = c.getBoundingClientRect(); return [r.left + r.width * 0.505, r.bottom - 16 - 8]; })()",
    )?;
    let (x, y) = (g[0].as_f64().unwrap(), g[1].as_f64().unwrap());
    let timed = |b: &mut Browser, f: &mut dyn FnMut(&mut Browser) -> Result<(), String>| {
        let t = Instant::now();
        f(b).map(|_| t.elapsed().as_secs_f64() * 1e3)
    };
    let hover = timed(&mut b, &mut |b| b.mouse_move(x, y))?;
    let click = timed(&mut b, &mut |b| b.click(x, y))?;
    let r = b.eval("(function () { const r = document.getElementById('reset').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()")?;
    let reset = timed(&mut b, &mut |b| b.click(r[0].as_f64().unwrap(), r[1].as_f64().unwrap()))?;
    let s = b.eval("(function () { const r = document.getElementById('search').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()")?;
    b.click(s[0].as_f64().unwrap(), s[1].as_f64().unwrap())?;
    let search = timed(&mut b, &mut |b| {
        b.type_text(r"\.c[0369]\.f0$")?;
        b.wait_for("document.getElementById('matched').textContent", "the matched share").map(|_| ())
    })?;
    Ok([f("fp"), f("fcp"), f("drawn"), f("screen"), hover, click, reset, search])
}

fn main() {
    let o = parse_args().unwrap_or_else(|e| {
        eprintln!("bench-flame: {e}");
        std::process::exit(2)
    });
    std::fs::create_dir_all(&o.out).expect("create --out");
    let collapsed = o.out.join("wide.collapsed");
    std::fs::write(&collapsed, hpm_tests::wide_collapsed(o.subs, 10, 100)).expect("write the profile");
    let page = o.out.join("wide.html");
    let t = Instant::now();
    let r = Command::new(&o.hpm)
        .args(["flamegraph", collapsed.to_str().unwrap(), "-o", page.to_str().unwrap()])
        .output()
        .expect("run hpm");
    assert!(r.status.success(), "hpm flamegraph: {}", String::from_utf8_lossy(&r.stderr));
    let frames = 1 + o.subs * (1 + 10 * 100);
    let bytes = std::fs::metadata(&page).map(|m| m.len()).unwrap_or(0);
    println!(
        "page: {frames} frames, {:.1} MB, written by `hpm flamegraph` in {:.0} ms; Chromium {}",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64() * 1e3,
        chromium_version()
    );
    let mut rows = Vec::new();
    for i in 0..o.runs {
        let dir = o.out.join(format!("run{i}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a run's folder");
        match one_run(&dir, &page) {
            Ok(r) => rows.push(r),
            Err(e) => {
                eprintln!("bench-flame: run {i}: {e}");
                std::process::exit(1)
            }
        }
    }
    println!("{:<18} {:>10} {:>10}   (ms, {} runs)", "", "median", "least", o.runs);
    for (c, name) in COLUMNS.iter().enumerate() {
        let mut v: Vec<f64> = rows.iter().map(|r| r[c]).collect();
        v.sort_by(f64::total_cmp);
        println!("{name:<18} {:>10.1} {:>10.1}", v[v.len() / 2], v[0]);
    }
}

fn chromium_version() -> String {
    hpm_tests::browser::chromium()
        .ok()
        .and_then(|c| Command::new(c).arg("--version").output().ok())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}
