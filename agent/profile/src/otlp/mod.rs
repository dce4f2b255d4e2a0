//! OTLP profiles (opentelemetry-proto v1.10): hpm's profiles encoded for a fleet backend, and
//! what a fleet pushed read back (skeleton).

pub mod encode;

pub use encode::{encode_recording, PeriodBuilder, Resource};
pub mod read;

pub use read::{is_otlp_path, read_fleet, Fleet, Merged, Selection};
