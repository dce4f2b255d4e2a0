//! hpm-profile: the profile and what is done with it, without a JVM or the kernel — the model
//! (`model`, `cct`, `interned`), the code map, the file formats (JFR, collapsed stacks, HTML and
//! SVG flame graphs, pprof, JSON), loading, filtering, the reports and the analyses from the
//! papers. The `hpm` command depends on this crate alone; the agent builds its profile with it.

// Test support: hostile inputs, the fuzz targets' bodies and scratch files, for the unit tests,
// the other crates' tests, the end-to-end tests and fuzz/ (which enable the `test-support`
// feature); the agent and the CLI are built without them.
#[cfg(any(test, feature = "test-support"))]
pub mod adversarial;
pub mod analysis;
pub mod cct;
pub mod codemap;
pub mod duration;
pub mod events;
pub mod filter;
#[cfg(any(test, feature = "test-support"))]
pub mod fuzz_targets;
#[cfg(test)]
mod fuzz_targets_tests;
pub mod hash;
pub mod infile;
pub mod interned;
pub mod jfr;
pub mod limits;
#[cfg(test)]
mod limits_tests;
pub mod load;
pub mod model;
pub mod otlp;
pub mod outfile;
pub mod output;
pub mod phase_timing;
#[cfg(any(test, feature = "test-support"))]
pub mod scratch_tests;
pub mod text;
pub mod tree_feed;
pub mod vthreads;
