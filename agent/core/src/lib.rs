//! hpm-core: everything in hpm that does not need a running JVM or the kernel's perf
//! interface — the profile model, the code map, option parsing, record decoding, the file
//! formats and the analyses from the papers. Tested without a JVM.

// Test support: hostile inputs and the fuzz targets' bodies, for the unit tests, the
// end-to-end tests and fuzz/ (which enable the `test-support` feature); the agent and the CLI
// are built without them.
#[cfg(any(test, feature = "test-support"))]
pub mod adversarial;
pub mod analysis;
pub mod batch;
pub mod blob_cache;
pub mod capture;
pub mod cct;
pub mod claim;
pub mod codemap;
pub mod component;
pub mod duration;
pub mod filter;
#[cfg(any(test, feature = "test-support"))]
pub mod fuzz_targets;
#[cfg(test)]
mod fuzz_targets_tests;
pub mod hash;
pub mod hotspot;
pub mod infile;
pub mod interned;
pub mod javaheap;
pub mod jfr;
pub mod kallsyms;
pub mod latency;
pub mod limits;
#[cfg(test)]
mod limits_tests;
pub mod load;
pub mod model;
pub mod objects;
pub mod operand;
pub mod options;
pub mod outfile;
pub mod output;
pub mod perf_record;
pub mod phase_timing;
pub mod pool_size;
pub mod resolve;
#[cfg(test)]
mod scratch_tests;
pub mod symbols;
mod sync;
pub mod text;
pub mod thread_dump;
#[cfg(test)]
mod thread_dump_tests;
pub mod tree_feed;
