//! A real OpenTelemetry Collector for the push tests: the binary `scripts/otelcol/build.sh`
//! builds from Go modules (cached by its manifest's hash, as the patched JDK is), run on
//! 127.0.0.1 with the profiles feature gate, an OTLP/HTTP receiver and the file exporter, so a
//! test reads what the collector received with `hpm` itself.
//!
//! Readiness is the collector's own "Everything is ready" log line, not a wait; a stop is a
//! SIGTERM and a wait for the process, after which the file exporter has written everything it
//! accepted.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;

use crate::workspace_root;

/// The collector binary: `HPM_OTELCOL`, else what `scripts/otelcol/build.sh` prints (it only
/// prints the cached build's path when the manifest is unchanged; scripts/test.sh builds it
/// before the tests). None, with NOT RUN and the reason printed, if it cannot be had.
pub fn collector_bin() -> Option<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        if let Some(b) = std::env::var_os("HPM_OTELCOL") {
            return Ok(PathBuf::from(b));
        }
        let out = Command::new("bash")
            .arg(workspace_root().join("scripts/otelcol/build.sh"))
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run scripts/otelcol/build.sh: {e}"))?;
        let said = String::from_utf8_lossy(&out.stdout);
        let path = PathBuf::from(said.trim().lines().last().unwrap_or(""));
        if out.status.success() && path.is_file() {
            Ok(path)
        } else {
            Err("scripts/otelcol/build.sh did not build it (see its output above)".into())
        }
    });
    match bin {
        Ok(b) => Some(b.clone()),
        Err(e) => {
            eprintln!("NOT RUN with the OpenTelemetry Collector: {e}");
            None
        }
    }
}

/// What the file exporter writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// Length-prefixed protobuf messages.
    Proto,
    /// One JSON message per line.
    Json,
}

/// A running collector. Killed (not gracefully stopped) when dropped.
pub struct Collector {
    child: Option<Child>,
    /// Its OTLP/HTTP port on 127.0.0.1.
    pub port: u16,
    /// The file exporter's output.
    pub out: PathBuf,
    log: mpsc::Receiver<String>,
}

impl Collector {
    /// Starts the collector in `dir` listening on `port` (0: a free one), its file exporter
    /// writing `out_name` in `format`; returns once it says it is ready. Panics with its log if
    /// it exits first.
    pub fn start(bin: &Path, dir: &Path, port: u16, out_name: &str, format: FileFormat) -> Collector {
        // A port free a moment ago: nothing listens there now.
        let port = if port == 0 { crate::backend::closed_port() } else { port };
        let out = dir.join(out_name);
        let config = dir.join(format!("{out_name}.yaml"));
        let format_name = match format {
            FileFormat::Proto => "proto",
            FileFormat::Json => "json",
        };
        std::fs::write(
            &config,
            format!(
                "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n\
                 exporters:\n  file:\n    path: {}\n    format: {format_name}\n\
                 service:\n  telemetry:\n    metrics:\n      level: none\n\
                 \x20 pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n",
                out.display()
            ),
        )
        .unwrap();
        let mut child = Command::new(bin)
            .arg("--feature-gates=service.profilesSupport")
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()));
        let stderr = child.stderr.take().unwrap();
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut c = Collector { child: Some(child), port, out, log };
        let mut said = Vec::new();
        // Every line until ready; the channel ends when the collector closes its stderr (exits).
        for line in c.log.iter() {
            let ready = line.contains("Everything is ready");
            said.push(line);
            if ready {
                return c;
            }
        }
        let status = c.child.take().map(|mut ch| ch.wait());
        panic!("the collector exited before it was ready ({status:?}):\n{}", said.join("\n"));
    }

    /// Its OTLP/HTTP base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops it gracefully (SIGTERM; the file exporter flushes) and waits; returns its output
    /// file and its log.
    pub fn stop(mut self) -> (PathBuf, String) {
        let mut child = self.child.take().unwrap();
        // SAFETY: kill(2) on the child's pid, which is ours until we wait for it below.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().unwrap();
        let log: Vec<String> = self.log.try_iter().collect();
        assert!(status.success() || status.code().is_none(), "the collector failed: {status}\n{}", log.join("\n"));
        (self.out.clone(), log.join("\n"))
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A peer that accepts connections and never answers (a black hole), until dropped.
pub struct BlackHole {
    pub port: u16,
    _listener: TcpListener,
}

impl BlackHole {
    /// Listening on a free port; the kernel completes the handshakes (the backlog), nobody reads.
    pub fn start() -> BlackHole {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        BlackHole { port: listener.local_addr().unwrap().port(), _listener: listener }
    }
}
