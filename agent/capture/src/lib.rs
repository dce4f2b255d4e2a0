//! hpm-capture: what runs inside hpm's signal handlers, and the lock-free parts it shares with the
//! processing thread — the thread slot's claim (`claim`), the batch pool (`batch`), the captured
//! record (`capture`), the perf ring's records (`perf_record`), hpm's JVM stack walker
//! (`hotspot`), the shared code-blob cache (`blob_cache`), the sampled instruction's operand
//! (`operand`) and the heap words around it (`javaheap`).
//!
//! # The async-signal-safety contract
//!
//! Every function of this crate that a handler calls (filling a `capture::Captured` and its
//! `StackKind`, the walker's `Walker::walk` and `FrameSink`, `hotspot::raw_stack_key`,
//! `Claim`, `ThreadQueue`/`Batch`, `BlobCache`'s lookups and inserts, `perf_record::Record`
//! and `Ring` reads, `operand::effective_address`, `javaheap::capture`,
//! `perf_record::is_kernel_address`):
//! - never allocates, frees, locks or blocks, and makes no system call: it writes only into
//!   fixed-size, `Copy` records and preallocated storage handed to it;
//! - reads foreign memory only through `hotspot::Memory`, whose implementation (the agent's)
//!   must not fault on a bad address;
//! - bounds every loop by a constant (frames, segments, hops), never by what it reads;
//! - uses atomics only through `sync` (so `--cfg loom` model-checks them) and never waits on
//!   another thread: a busy slot or a full batch is a counted drop (`Claim::retire`, which
//!   waits for the handlers inside to leave, is the owner's side and never runs in one).
//!
//! What else is here runs outside any handler, and is here because it shares a format or a
//! type with what does: the set-up that reads the VM's tables (`hotspot::VmTable`,
//! `hotspot::Layout::from_table`, `javaheap::HeapLayout`), the readers of the walker's raw
//! slots beside their writer (`hotspot::raw_frames`, `slots_key`, `leaf_slots`), the
//! resolver's decoding of a captured instruction (`operand::sampled_access`, `DataStats`),
//! sizing (`pool_size`), the timer samplers' histogram (`latency`) and the test encoders of
//! perf records (`perf_record::encode_sample*`). `operand::effective_address` builds its
//! decoder's tables on first use: the session calls `operand::prepare()` before any handler
//! can decode. In a handler this crate uses from hpm-profile only `model::FrameKind`,
//! `model::Space` and `hash::Hash128`'s hashing of a stack (a pure function over the frames
//! handed to it), none of which allocates; the agent's handler also reads `hash::seed_if_made`
//! (a load of an initialised `OnceLock`, never its initialisation).

pub mod batch;
pub mod blob_cache;
pub mod capture;
pub mod claim;
pub mod hotspot;
pub mod javaheap;
pub mod latency;
pub mod lockstack;
pub mod native;
pub mod operand;
pub mod perf_record;
pub mod pool_size;
mod sync;
