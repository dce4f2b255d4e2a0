//! Delivering profiles to a fleet backend (skeleton: the interface the agent's push sink uses).

use std::time::Duration;

/// What the backend speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OTLP profiles over HTTP (`/v1development/profiles`), gzipped protobuf.
    Otlp,
    /// Pyroscope's `/ingest?format=jfr`.
    Pyroscope,
}

/// Where `push=` sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub format: Format,
    url: String,
}

impl Target {
    pub fn parse(url: &str, format: Format) -> Result<Target, String> {
        Ok(Target { format, url: url.to_string() })
    }

    pub fn display(&self) -> String {
        self.url.clone()
    }
}

/// How the pusher delivers, and its bounds.
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    pub max_periods: usize,
    pub max_bytes: usize,
    pub connect_timeout: Duration,
    pub io_timeout: Duration,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// Pyroscope: the application name (`name=`) and its labels.
    pub app_name: String,
    pub labels: Vec<(String, String)>,
}

impl Config {
    pub fn new(target: Target, app_name: String) -> Config {
        Config {
            target,
            max_periods: 8,
            max_bytes: 32 << 20,
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(10),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            app_name,
            labels: Vec::new(),
        }
    }
}

/// One period's profile: an OTLP request's protobuf (the pusher gzips it) or a JFR file's bytes.
#[derive(Clone, Debug, Default)]
pub struct Period {
    pub body: Vec<u8>,
    pub samples: u64,
    pub from_unix_ns: u64,
    pub until_unix_ns: u64,
}

/// The last attempt's outcome.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub at_unix_ns: u64,
    pub ok: bool,
    pub what: String,
}

/// What the pusher did so far.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub delivered_periods: u64,
    pub delivered_samples: u64,
    pub delivered_bytes: u64,
    pub queued_periods: u64,
    pub queued_bytes: u64,
    pub dropped_full_periods: u64,
    pub dropped_full_samples: u64,
    pub refused_periods: u64,
    pub refused_samples: u64,
    pub undelivered_periods: u64,
    pub undelivered_samples: u64,
    pub attempts: u64,
    pub last: Option<Outcome>,
}

impl Status {
    pub fn summary_line(&self, target: &Target) -> String {
        format!("pushed {} periods to {}", self.delivered_periods, target.display())
    }

    pub fn status_line(&self, target: &Target) -> String {
        self.summary_line(target)
    }
}

/// Delivers periods from its own thread, `hpm-push`.
pub struct Pusher {
    cfg: Config,
}

impl Pusher {
    pub fn start(cfg: Config) -> std::io::Result<Pusher> {
        Ok(Pusher { cfg })
    }

    /// Queues `p` without waiting on the network.
    pub fn offer(&self, p: Period) {
        let _ = (&self.cfg, p);
    }

    pub fn status(&self) -> Status {
        Status::default()
    }

    /// Delivers what it can within `grace`, then stops.
    pub fn stop(self, grace: Duration) -> Status {
        let _ = grace;
        Status::default()
    }
}
