//! A headless Chromium driven over the DevTools protocol, to use `hpm flamegraph`'s page as a
//! user does: move the mouse, click, type, and read what the page shows (docs/design.md, "The
//! flame graph page in a real browser"). Chromium talks the protocol on two pipes
//! (`--remote-debugging-pipe`: it reads commands from its fd 3 and writes replies and events to
//! its fd 4, each message JSON ended by a NUL byte), so this needs no WebDriver, no WebSocket and
//! no port: a child process and two pipes.
//!
//! Nothing here sleeps to synchronise: a command returns when Chromium has done it (an input
//! event is acknowledged once the page has handled it), and [`Browser::wait_for`] waits for a
//! condition inside the page. Every wait ends at one generous deadline ([`DEADLINE`]) with an
//! error naming what was awaited, so a hung browser fails the test instead of hanging it.

use std::io::{BufRead, BufReader, PipeWriter, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// How long any one command or wait may take before it is an error: long enough for a page of
/// 100,000 frames on a busy two-core machine, short enough that a hung browser does not hold
/// the test run.
pub const DEADLINE: Duration = Duration::from_secs(180);

/// The Chromium to run: `HPM_CHROMIUM`, else the first of Debian's and Google's names on PATH
/// (scripts/setup.sh installs Debian's `chromium`).
pub fn chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("HPM_CHROMIUM") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome", "chrome-headless-shell"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err("no Chromium on PATH: run scripts/setup.sh (it installs Debian's `chromium`), \
         or set HPM_CHROMIUM to a Chromium or Chrome binary"
        .into())
}

/// One headless Chromium with one page (a tab) attached.
pub struct Browser {
    child: Child,
    to_browser: PipeWriter,
    from_browser: Receiver<Value>,
    /// Events read while waiting for a reply, oldest first.
    events: Vec<Value>,
    next_id: u64,
    session: String,
    log: PathBuf,
}

impl Browser {
    /// Starts Chromium with its profile and log in `dir` and opens a page of `width` x `height`
    /// CSS pixels at a device scale of 1 (a screenshot's pixels are the page's).
    pub fn launch(dir: &Path, width: u32, height: u32) -> Result<Browser, String> {
        let exe = chromium()?;
        let log = dir.join("chromium.log");
        let log_file = std::fs::File::create(&log).map_err(|e| format!("create {}: {e}", log.display()))?;
        let (commands_read, to_browser) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let (from_browser, replies_write) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        // The child's ends are moved above fd 4 first, so that neither dup2 below overwrites the
        // other's source; they are close-on-exec, as are the parent's ends.
        let child_in = high_fd(commands_read.into())?;
        let child_out = high_fd(replies_write.into())?;
        let (fd_in, fd_out) = (child_in.as_raw_fd(), child_out.as_raw_fd());
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--headless",
            // Chromium's sandbox refuses to start as root, and the tests run as root here (CI
            // too); the page is our own file, loaded from disk, with no network.
            "--no-sandbox",
            "--remote-debugging-pipe",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--mute-audio",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--window-size={width},{height}"))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file);
        // SAFETY: the closure runs in the forked child before exec and calls only dup2, which is
        // async-signal-safe; fd_in and fd_out are open (owned by child_in/child_out, which live
        // until after spawn) and above 4, so dup2 onto 3 and 4 clobbers neither. The copies on
        // 3 and 4 lose close-on-exec, as the protocol needs.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd_in, 3) < 0 || libc::dup2(fd_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| format!("start {}: {e}", exe.display()))?;
        drop((child_in, child_out));

        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from_browser);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                let Ok(v) = serde_json::from_slice::<Value>(&buf) else { return };
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut b = Browser {
            child,
            to_browser,
            from_browser: rx,
            events: Vec::new(),
            next_id: 1,
            session: String::new(),
            log,
        };
        let target = b.send(None, "Target.createTarget", json!({ "url": "about:blank" }))?;
        let target_id = target["targetId"].as_str().ok_or("Target.createTarget: no targetId")?.to_string();
        let attached = b.send(None, "Target.attachToTarget", json!({ "targetId": target_id, "flatten": true }))?;
        b.session = attached["sessionId"].as_str().ok_or("Target.attachToTarget: no sessionId")?.to_string();
        b.call("Page.enable", json!({}))?;
        b.call("Runtime.enable", json!({}))?;
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )?;
        Ok(b)
    }

    /// Sends a command to the browser (`session` None) or a page and returns its result.
    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .map_err(|e| format!("{method}: write to Chromium: {e}{}", self.log_tail()))?;
        let deadline = Instant::now() + DEADLINE;
        loop {
            let v = self.next_message(deadline, method)?;
            if v["id"].as_u64() == Some(id) {
                if let Some(err) = v.get("error") {
                    return Err(format!("{method}: {err}"));
                }
                return Ok(v["result"].clone());
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    fn next_message(&mut self, deadline: Instant, what: &str) -> Result<Value, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.from_browser.recv_timeout(left) {
            Ok(v) => Ok(v),
            Err(RecvTimeoutError::Timeout) => {
                Err(format!("{what}: no answer from Chromium in {}s", DEADLINE.as_secs()))
            }
            Err(RecvTimeoutError::Disconnected) => Err(format!("{what}: Chromium closed its pipe{}", self.log_tail())),
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!("; last lines of {}:\n{}", self.log.display(), lines[lines.len().saturating_sub(20)..].join("\n"))
    }

    /// A command to the page (`Input.dispatchMouseEvent`, `Page.navigate`, ...).
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    /// Waits for the page's event `method` (e.g. `Page.loadEventFired`) and returns its params.
    pub fn wait_event(&mut self, method: &str) -> Result<Value, String> {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return Ok(self.events.remove(i)["params"].clone());
        }
        let deadline = Instant::now() + DEADLINE;
        loop {
            let v = self.next_message(deadline, method)?;
            if v["method"] == method {
                return Ok(v["params"].clone());
            }
        }
    }

    /// Opens `path` and returns once its load event fired (the page's scripts have run).
    pub fn open(&mut self, path: &Path) -> Result<(), String> {
        self.events.clear();
        let url = format!("file://{}", path.display());
        let r = self.call("Page.navigate", json!({ "url": url }))?;
        if let Some(e) = r.get("errorText") {
            return Err(format!("open {url}: {e}"));
        }
        self.wait_event("Page.loadEventFired").map(|_| ())
    }

    /// The value of a JavaScript expression in the page (a promise is awaited).
    pub fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("`{expression}` threw: {}", ex["exception"]["description"].as_str().unwrap_or("?")));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Waits until `condition` (a JavaScript expression) is truthy in the page and returns its
    /// value. The page checks it every 10 ms; `what` names it in the error at the deadline.
    pub fn wait_for(&mut self, condition: &str, what: &str) -> Result<Value, String> {
        let expr = format!(
            "new Promise(function (done) {{ (function poll() {{ let v; try {{ v = ({condition}); }} catch (e) {{ v = null; }} \
             if (v) done(v); else setTimeout(poll, 10); }})(); }})"
        );
        self.eval(&expr).map_err(|e| format!("waiting for {what}: {e}"))
    }

    /// Moves the mouse to (x, y), in CSS pixels of the viewport.
    pub fn mouse_move(&mut self, x: f64, y: f64) -> Result<(), String> {
        self.call("Input.dispatchMouseEvent", json!({ "type": "mouseMoved", "x": x, "y": y, "button": "none" }))
            .map(|_| ())
    }

    /// A left click at (x, y): the mouse moves there, is pressed and released.
    pub fn click(&mut self, x: f64, y: f64) -> Result<(), String> {
        self.mouse_move(x, y)?;
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1 }),
            )?;
        }
        Ok(())
    }

    /// Types `text` into the focused element, as the keyboard's input would.
    pub fn type_text(&mut self, text: &str) -> Result<(), String> {
        self.call("Input.insertText", json!({ "text": text })).map(|_| ())
    }

    /// Writes a PNG of the viewport to `path`.
    pub fn screenshot(&mut self, path: &Path) -> Result<(), String> {
        let r = self.call("Page.captureScreenshot", json!({ "format": "png" }))?;
        let data = r["data"].as_str().ok_or("Page.captureScreenshot: no data")?;
        let png = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("screenshot: {e}"))?;
        std::fs::write(path, png).map_err(|e| format!("write {}: {e}", path.display()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.send(None, "Browser.close", json!({}));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A close-on-exec copy of `fd` numbered 10 or above; `fd` is closed.
fn high_fd(fd: OwnedFd) -> Result<OwnedFd, String> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on an open descriptor we own; it returns a new descriptor
    // or -1 and touches no memory.
    let n = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    if n < 0 {
        return Err(format!("fcntl: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: n is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}
