//! The atomics of the lock-free hand-over code (batch pool, slot claims): std's, or loom's when
//! built with `RUSTFLAGS="--cfg loom"` so the model checker can explore their interleavings
//! (`cargo test -p hpm-capture --release --lib loom`, run by scripts/test.sh).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// A busy-wait hint (loom must be told, or it explores the spin forever).
pub(crate) fn spin() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
