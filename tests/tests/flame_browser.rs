//! `hpm flamegraph`'s HTML page used as a user uses it, in a real headless Chromium (driven over
//! the DevTools protocol by tests/src/browser.rs): the mouse hovers over a frame and the tooltip
//! names it with its samples and share; a click zooms (the clicked frame then spans the canvas,
//! drawn and hit-tested edge to edge); the search box highlights the matching frames and reports
//! their share; the reset button restores the whole tree; and a profile of 100,000 frames
//! answers the same gestures (its time to first paint is a benchmark, docs/benchmarks.md, not a
//! test). The truth is the profile itself, written here: every name, sample count and share is
//! known by construction. Screenshots of each state go to target/test-scratch/flame-browser/.
//!
//! No JVM. Needs Chromium (scripts/setup.sh installs Debian's `chromium`); without it the test
//! fails and says how to install it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use hpm_tests::browser::Browser;

/// One Chromium at a time: the machine has two cores.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

/// The page's row height in CSS pixels (`FRAME_H` in agent/profile/src/output/flame.js).
const FRAME_H: f64 = 16.0;
/// The colour of a frame that matches the search (flame.js draws matches `#e03ce0`).
const MATCH_RGB: [u64; 3] = [0xe0, 0x3c, 0xe0];

/// 100 samples: main 95 (Hot.loop 85 with HashMap.get 25 under it, Cold.run 5 with HashMap.get
/// 5 under it), [GC] 5.
const SMALL: &str = "\
app.Main.main;app.Hot.loop 60
app.Main.main;app.Hot.loop;java.util.HashMap.get 25
app.Main.main;app.Cold.run;java.util.HashMap.get 5
app.Main.main 5
[GC];G1ParScanThreadState::trim_queue 5
";

fn flamegraph(dir: &Path, name: &str, collapsed: &str) -> PathBuf {
    let input = dir.join(format!("{name}.collapsed"));
    std::fs::write(&input, collapsed).unwrap();
    let page = dir.join(format!("{name}.html"));
    let r = Command::new(hpm_tests::hpm_bin())
        .args(["flamegraph", input.to_str().unwrap(), "-o", page.to_str().unwrap()])
        .output()
        .expect("run hpm");
    assert!(r.status.success(), "hpm flamegraph: {}", String::from_utf8_lossy(&r.stderr));
    page
}

fn launch(dir: &Path) -> Browser {
    Browser::launch(dir, 1200, 700).unwrap_or_else(|e| panic!("Chromium: {e}"))
}

/// What the page shows, read and driven as a user would: rows found by their place on the canvas,
/// frames found by hovering along a row and reading the tooltip.
struct Page<'a> {
    b: &'a mut Browser,
    shots: PathBuf,
}

/// A row of the canvas in viewport coordinates.
#[derive(Clone, Copy, Debug)]
struct Row {
    left: f64,
    width: f64,
    y: f64,
}

impl Page<'_> {
    fn eval(&mut self, js: &str) -> serde_json::Value {
        self.b.eval(js).unwrap_or_else(|e| panic!("{e}"))
    }

    fn shot(&mut self, name: &str) {
        let path = self.shots.join(format!("{name}.png"));
        self.b.screenshot(&path).unwrap_or_else(|e| panic!("{e}"));
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(len > 1000, "screenshot {} has {len} bytes", path.display());
    }

    /// The canvas row of frames at `depth` (the root is 0, drawn at the bottom), scrolled into
    /// the part of the window that the sticky header and the fixed footer leave visible.
    fn row(&mut self, depth: u32) -> Row {
        let js = format!(
            "(function () {{ const c = document.getElementById('fg'), H = {FRAME_H};
               const rows = Math.round(c.clientHeight / H), row = document.getElementById('icicle').checked ? {depth} : rows - 1 - {depth};
               const top = document.querySelector('header').getBoundingClientRect().bottom, bottom = document.getElementById('status').getBoundingClientRect().top;
               let r = c.getBoundingClientRect(), y = r.top + row * H + H / 2;
               if (y < top + H || y > bottom - H) {{ window.scrollBy(0, y - (top + bottom) / 2); r = c.getBoundingClientRect(); }}
               return {{ left: r.left, width: r.width, y: r.top + row * H + H / 2, rows: rows }}; }})()"
        );
        let v = self.eval(&js);
        assert!(v["rows"].as_u64().unwrap() > depth as u64, "the canvas has no row {depth}: {v}");
        Row { left: v["left"].as_f64().unwrap(), width: v["width"].as_f64().unwrap(), y: v["y"].as_f64().unwrap() }
    }

    /// Moves the mouse to `x` (from the canvas' left edge) on `row` and returns the tooltip's
    /// lines, empty when it is hidden.
    fn hover(&mut self, row: Row, x: f64) -> Vec<String> {
        self.b.mouse_move(row.left + x, row.y).unwrap_or_else(|e| panic!("{e}"));
        let v = self.eval(
            "(function () { const t = document.getElementById('tip'); return t.hidden ? '' : t.textContent; })()",
        );
        v.as_str().unwrap().lines().map(str::to_string).collect()
    }

    /// The tooltip's frame names at `n` evenly spaced points along `row`, 0.5 px inside each
    /// edge.
    fn scan(&mut self, row: Row, n: usize) -> Vec<(f64, String)> {
        (0..n)
            .map(|k| {
                let x = 0.5 + (row.width - 1.0) * k as f64 / (n - 1) as f64;
                (x, self.hover(row, x).first().cloned().unwrap_or_default())
            })
            .collect()
    }

    /// The part of `row`'s width where hovering names `name`, as fractions of the width
    /// (first, last point), from a scan of `n` points.
    fn span(&mut self, row: Row, name: &str, n: usize) -> (f64, f64) {
        let hits: Vec<f64> =
            self.scan(row, n).into_iter().filter(|(_, s)| s == name).map(|(x, _)| x / row.width).collect();
        assert!(!hits.is_empty(), "no point of the row at y={} names {name}", row.y);
        (hits[0], hits[hits.len() - 1])
    }

    /// The colour the canvas holds at `x` on `row`, 2 px below the row's top (above any label,
    /// below the hover outline): [r, g, b, alpha].
    fn pixel(&mut self, row: Row, x: f64) -> [u64; 4] {
        self.pixel_at(row, x, 2.0)
    }

    /// The colour at `x` on `row`, `dy` pixels below the row's top (0: where the hovered frame's
    /// outline is drawn).
    fn pixel_at(&mut self, row: Row, x: f64, dy: f64) -> [u64; 4] {
        let js = format!(
            "(function () {{ const c = document.getElementById('fg'), r = c.getBoundingClientRect();
               const d = c.getContext('2d').getImageData(Math.floor({x}), Math.floor({y} - r.top - {FRAME_H} / 2 + {dy}), 1, 1).data;
               return [d[0], d[1], d[2], d[3]]; }})()",
            y = row.y
        );
        let v = self.eval(&js);
        let a: Vec<u64> = v.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect();
        [a[0], a[1], a[2], a[3]]
    }

    /// Clicks the centre of the element `id`.
    fn click_element(&mut self, id: &str) {
        let v = self.eval(&format!(
            "(function () {{ const r = document.getElementById('{id}').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ));
        self.b.click(v[0].as_f64().unwrap(), v[1].as_f64().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    }

    fn text_of(&mut self, id: &str) -> String {
        self.eval(&format!("document.getElementById('{id}').textContent")).as_str().unwrap().to_string()
    }

    fn reset_disabled(&mut self) -> bool {
        self.eval("document.getElementById('reset').disabled").as_bool().unwrap()
    }

    /// Moves the mouse off the canvas (onto the header): no tooltip, no hover outline.
    fn leave(&mut self) {
        self.b.mouse_move(2.0, 2.0).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Types `text` into the search box and waits until the page reports a match share.
    fn search(&mut self, text: &str) -> String {
        self.click_element("search");
        self.b.type_text(text).unwrap_or_else(|e| panic!("{e}"));
        let v = self
            .b
            .wait_for("document.getElementById('matched').textContent", &format!("the share matched by `{text}`"))
            .unwrap_or_else(|e| panic!("{e}"));
        v.as_str().unwrap().to_string()
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn hover_zoom_search_and_reset_in_chromium() {
    let _one = ONE_BROWSER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = hpm_tests::shared_scratch("flame-browser").join("small");
    std::fs::create_dir_all(&dir).unwrap();
    let html = flamegraph(&dir, "small", SMALL);
    let mut browser = launch(&dir);
    browser.open(&html).unwrap_or_else(|e| panic!("{e}"));
    let mut p = Page { b: &mut browser, shots: dir.clone() };
    p.shot("1-loaded");
    const N: usize = 101;

    // Hover: Hot.loop (depth 2) spans 85% of the width; its tooltip gives name, samples, share.
    let row2 = p.row(2);
    let (a, z) = p.span(row2, "app.Hot.loop", N);
    let step = 1.0 / (N - 1) as f64;
    assert!(close(z - a, 0.85, 2.0 * step), "Hot.loop spans {:.3} of the width, 0.85 expected", z - a);
    let tip = p.hover(row2, (a + z) / 2.0 * row2.width);
    assert_eq!(tip.first().map(String::as_str), Some("app.Hot.loop"), "tooltip: {tip:?}");
    assert!(tip.iter().any(|l| l == "85 samples, 85.00% of total"), "tooltip: {tip:?}");
    assert!(tip.iter().any(|l| l == "self: 60 samples (60.00%)"), "tooltip: {tip:?}");
    let status = p.text_of("status");
    assert!(status.starts_with("app.Hot.loop | 85 samples, 85.00% of total"), "status line: {status}");
    let tip_box = p.eval(
        "(function () { const r = document.getElementById('tip').getBoundingClientRect(); \
         return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight; })()",
    );
    assert_eq!(tip_box.as_bool(), Some(true), "the tooltip is not inside the window");
    // The hovered frame is outlined in black, and only while the mouse is on it.
    let mid = (a + z) / 2.0 * row2.width;
    assert_eq!(p.pixel_at(row2, mid, 0.0), [0, 0, 0, 255], "no outline on the hovered Hot.loop");
    p.shot("2-hover");
    p.hover(row2, row2.width - 1.0);
    assert_ne!(p.pixel_at(row2, mid, 0.0)[..3], [0, 0, 0], "Hot.loop keeps its outline after the mouse left it");
    p.hover(row2, mid);

    // Click zooms: Hot.loop then spans the whole width, drawn and hit-tested at both edges, and
    // its child HashMap.get (25 of its 85 samples) 29.4% of it.
    p.b.click(row2.left + (a + z) / 2.0 * row2.width, row2.y).unwrap_or_else(|e| panic!("{e}"));
    assert!(!p.reset_disabled(), "reset is still disabled after a zoom");
    let (za, zz) = p.span(row2, "app.Hot.loop", N);
    assert!(
        za < step / 2.0 && zz > 1.0 - step / 2.0,
        "zoomed Hot.loop spans {za:.3}..{zz:.3}, the whole width expected"
    );
    let row3 = p.row(3);
    let (ca, cz) = p.span(row3, "java.util.HashMap.get", N);
    assert!(
        close(cz - ca, 25.0 / 85.0, 2.0 * step),
        "HashMap.get spans {:.3} of the zoomed width, 0.294 expected",
        cz - ca
    );
    let tip = p.hover(row3, (ca + cz) / 2.0 * row3.width);
    assert!(tip.iter().any(|l| l == "25 samples, 25.00% of total, 29.41% of zoomed frame"), "tooltip: {tip:?}");
    p.leave();
    let (left, right) = (p.pixel(row2, 1.0), p.pixel(row2, row2.width - 2.0));
    assert!(
        left[3] == 255 && left == right,
        "zoomed Hot.loop's row is not one frame edge to edge: {left:?} .. {right:?}"
    );
    p.shot("3-zoomed");

    // Reset: the whole tree again.
    p.click_element("reset");
    assert!(p.reset_disabled(), "reset stays enabled after resetting");
    let (ra, rz) = p.span(row2, "app.Hot.loop", N);
    assert!(close(rz - ra, 0.85, 2.0 * step), "after reset Hot.loop spans {:.3}, 0.85 expected", rz - ra);
    p.leave();
    p.shot("4-reset");

    // Search: both HashMap.get frames (25 + 5 samples) turn the match colour, nothing else does,
    // and the page reports 30% matched.
    let matched = p.search("HashMap");
    assert_eq!(matched, "Matched: 30.00% (30 samples)");
    p.leave();
    let frames = p.scan(row3, N);
    let mut seen = 0;
    for (x, name) in frames.iter().filter(|(_, n)| !n.is_empty()) {
        p.leave();
        let px = p.pixel(row3, *x);
        let is_match = px[..3] == MATCH_RGB;
        assert_eq!(is_match, name == "java.util.HashMap.get", "{name} at x={x:.1} is drawn {px:?}");
        seen += usize::from(is_match);
    }
    assert!(seen > 0, "no HashMap.get frame found on row 3");
    let main = p.pixel(row2, 1.0);
    assert_ne!(main[..3], MATCH_RGB, "Hot.loop is highlighted but does not match");
    p.shot("5-search");

    // Search and zoom together: the matched share of the zoomed frame too.
    p.b.click(row2.left + row2.width / 2.0, row2.y).unwrap_or_else(|e| panic!("{e}"));
    let matched = p.text_of("matched");
    assert_eq!(matched, "Matched: 30.00% (30 samples), 29.41% of zoomed frame");
    p.leave();
    p.shot("6-search-zoomed");
}

#[test]
fn a_page_of_100_000_frames_answers_every_gesture() {
    let _one = ONE_BROWSER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = hpm_tests::shared_scratch("flame-browser").join("wide");
    std::fs::create_dir_all(&dir).unwrap();
    // 100 subsystems of 10 chains of 100 frames: 100,101 frames; each subsystem has 19 samples
    // (chains of 1, 2, 3, 1, 2, 3, 1, 2, 3, 1), 1,900 in all.
    let html = flamegraph(&dir, "wide", &hpm_tests::wide_collapsed(100, 10, 100));
    let mut browser = launch(&dir);
    browser.open(&html).unwrap_or_else(|e| panic!("{e}"));
    let mut p = Page { b: &mut browser, shots: dir.clone() };
    let frames = p.eval("(function () { const d = JSON.parse(document.getElementById('fg-data').textContent); return d.nodes.length / d.stride; })()");
    assert_eq!(frames.as_u64(), Some(100_101), "frames embedded in the page");
    p.shot("1-loaded");

    // Hover over a subsystem: 19 of 1,900 samples.
    let row1 = p.row(1);
    let tip = p.hover(row1, row1.width * 0.505);
    assert!(tip.first().is_some_and(|n| n.starts_with("sub")), "tooltip: {tip:?}");
    assert!(tip.iter().any(|l| l == "19 samples, 1.00% of total"), "tooltip: {tip:?}");
    let sub = tip[0].clone();

    // Click zooms it to the full width; hovering its first chain frame gives that chain's share.
    p.b.click(row1.left + row1.width * 0.505, row1.y).unwrap_or_else(|e| panic!("{e}"));
    let (za, zz) = p.span(row1, &sub, 41);
    assert!(za < 0.02 && zz > 0.98, "zoomed {sub} spans {za:.3}..{zz:.3}, the whole width expected");
    p.leave();
    p.shot("2-zoomed");

    // Search: `\.c[0369]\.f0$` matches the first frame of chains 0, 3, 6 and 9, of 1 sample
    // each: 4 of each subsystem's 19 samples, 400 of 1,900.
    p.click_element("reset");
    let matched = p.search(r"\.c[0369]\.f0$");
    assert_eq!(matched, "Matched: 21.05% (400 samples)");
    p.leave();
    p.shot("3-search");
}
