//! OTLP profiles (opentelemetry-proto v1.10, "v1development"): hpm's profiles encoded for a
//! fleet backend (an OpenTelemetry Collector, Pyroscope's OTLP ingest), and what a fleet
//! pushed read back.
//!
//! hpm's convention, shared by the encoder ([`encode`]), the reader and the agent's pusher:
//! - One `ExportProfilesServiceRequest` per period per JVM; its `ProfilesDictionary` holds every
//!   table, index 0 of each the zero value (`dict.rs`).
//! - One `ResourceProfiles` whose resource has plain string keys ([`encode::Resource`]):
//!   `service.name`, `host.name`, `process.pid` (int), `process.runtime.name`/`.version`/
//!   `.description`, `telemetry.sdk.name` = "hpm", `telemetry.sdk.version`; unknown values are
//!   left out. One `ScopeProfiles`, scope "hpm" at the crate's version.
//! - One `Profile` per sample type over the period (`time_unix_nano`, `duration_nano`), each
//!   with a random `profile_id` and `period_type`/`period` of the sampling event: "cpu" (or
//!   "wall") in nanoseconds for time events, the event's name in "count" otherwise (value: the
//!   sample's weight); "samples"/"count" (value: its repeat); one per counter read with every
//!   sample (its name, "count"; value: the sample's delta); "alloc"/"bytes" and
//!   "lock"/"nanoseconds" for the JVM's events, with their own stacks. Samples whose value is 0
//!   are left out of that profile.
//! - A `Sample` has one value and one timestamp (wall ns), `thread.name`, `thread.id` (OS tid)
//!   and, for wall samples, `thread.state` attributes. A stack table's aggregate (the agent's
//!   `file=x.otlp` after chunks were written) has a summed value and no timestamp.
//! - Stacks leaf first; a `Location` per (function, line, frame type) with one `Line` and the
//!   attribute `profile.frame.type` ("jvm", "native", "kernel"); a `Function` named in Java form
//!   (`java.util.HashMap.putVal`), with its JVM form (`java/util/HashMap.putVal(...)V`) as
//!   system name and its source file (`HashMap.java`).

mod dict;
pub mod encode;

pub mod read;

pub use encode::{encode_recording, PeriodBuilder, Resource};
pub use read::{is_otlp_path, read_fleet, Fleet, Merged, Selection};
