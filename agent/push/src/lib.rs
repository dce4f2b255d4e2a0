//! Delivering profiles to a fleet backend: a bounded queue of periods, retries with backoff,
//! plain HTTP (JVM-free).
//!
//! The crate knows nothing of profiles: a [`Period`] is a body (an OTLP profiles request's
//! protobuf, or a JFR file) with its sample count and time range. [`Pusher::offer`] queues it
//! without waiting on the network; one thread, `hpm-push`, takes the oldest queued period and
//! POSTs it, keeping it and backing off while the backend fails, so the caller never blocks.
//!
//! - [`Format::Otlp`]: `POST {url}` (path `/v1development/profiles` unless given),
//!   `Content-Type: application/x-protobuf`, `Content-Encoding: gzip` (gzipped on the push thread).
//!   A 200 answer's body is read (bounded) but not parsed: OTLP partial success is not reported.
//! - [`Format::Pyroscope`]: `POST {base}/ingest?name=APP{k=v,..}&from=S&until=S&format=jfr&spyName=hpm
//!   &sampleRate=N`, `multipart/form-data` with the JFR in part `jfr` (as pyroscope-java sends it;
//!   its `labels` part carries dynamic labels only and is not sent).
//!
//! An answer 2xx delivers the period; 408, 429, 5xx, 3xx (redirects are not followed), connection
//! errors and timeouts keep it for a retry after a capped exponential backoff with jitter
//! (`Retry-After` in seconds honoured, within the same bounds; a date is ignored); any other 4xx refuses it (counted,
//! not retried: the body is wrong for that backend). There is no TLS: `https://` is refused
//! (push to an OpenTelemetry Collector on the host, which forwards with TLS and credentials), and
//! no proxy from the environment is used.
//!
//! Bounds (defaults of [`Config::new`]; the first six are fields of [`Config`]):
//!
//! | bound | default | what it bounds |
//! |---|---|---|
//! | `max_periods` | 8 | periods queued (plus the one being sent); the oldest is dropped first |
//! | `max_bytes` | 32 MiB | bytes queued (plus the one being sent and its encoded copy); a larger period is dropped |
//! | `connect_timeout` | 2 s | resolving and connecting (never more than `io_timeout`) |
//! | `io_timeout` | 10 s | one whole attempt: connect, send, answer, answer's body |
//! | `backoff_min`..`backoff_max` | 1 s..60 s | the wait after a failed attempt |
//! | response body read | 64 KiB | [`RESPONSE_MAX`]; answer headers: 16 KiB |
//! | URL | 2 KiB | [`URL_MAX`]; Pyroscope name and labels: [`NAME_MAX`] |
//!
//! [`Pusher::stop`] tries to deliver what is queued within its grace, attempting each period once
//! (the first failure ends it: the JVM is exiting), and returns by the grace's end: an attempt
//! still waiting on the network then is counted undelivered and left to end on its own.

mod backoff;
mod http;
mod pusher;
mod queue;
mod status;
mod target;

use std::time::Duration;

pub use http::{pyroscope_app_name, pyroscope_app_ok};
pub use pusher::Pusher;
pub use status::{Outcome, Status};
pub use target::{Format, Target, URL_MAX};

/// At most this much of an answer's body is read.
pub const RESPONSE_MAX: usize = 64 << 10;

/// At most this many bytes of Pyroscope's `name` (the application name with its labels).
pub const NAME_MAX: usize = 1024;

/// How the pusher delivers, and its bounds.
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// Periods queued, not counting the one being sent.
    pub max_periods: usize,
    /// Bytes of queued bodies, not counting the one being sent.
    pub max_bytes: usize,
    /// Resolving and connecting; capped by `io_timeout`.
    pub connect_timeout: Duration,
    /// One attempt from connecting to the end of the answer.
    pub io_timeout: Duration,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// Pyroscope: the application name (`name=`) and its labels.
    pub app_name: String,
    pub labels: Vec<(String, String)>,
    /// Pyroscope: `sampleRate=` in Hz (samples per second of CPU or wall time); 0 leaves it out.
    pub sample_rate_hz: u32,
    /// Called on the push thread first (`true`) and last (`false`).
    pub on_thread: Option<ThreadHook>,
}

/// What the push thread calls as it starts (`true`) and as it ends (`false`): the agent keeps
/// its own threads out of the profile through it, as it does its processor.
#[derive(Clone)]
pub struct ThreadHook(pub std::sync::Arc<dyn Fn(bool) + Send + Sync>);

impl std::fmt::Debug for ThreadHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThreadHook")
    }
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
            sample_rate_hz: 100,
            on_thread: None,
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
