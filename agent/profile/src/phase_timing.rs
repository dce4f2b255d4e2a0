//! The processing thread's resolving timed by phase, in a build with the `phase-timing`
//! feature only (`cargo build --release -p hpm-agent --features phase-timing`): the summary
//! then prints how long each phase took per sample of the session. Without the feature every
//! call here compiles to nothing. The figures include the clock's own reads (two per phase,
//! ~20-30 ns each on this machine's TSC clock), so they are for comparing phases and builds
//! of this kind, not for the summary's per-sample cost. They are wall-clock time: a JVMTI call
//! made while a safepoint is in progress waits for its end (on ecj, 6 of a session's 2,202
//! `GetMethodName` calls waited 22 ms of the 31 ms all of them took), which the summary's
//! thread CPU time does not count.

/// What a sample's resolving does, timed apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The sample's pc placed (the leaf's code blob, library or kernel).
    Place,
    /// A compiled leaf's blob noted for the chunk's code list (its method named at its first
    /// sample in the chunk).
    NoteCode,
    /// hpm's walker's frames, from a raw stack met before.
    RawKnown,
    /// ... from a raw stack new to the resolver whose named stack was not.
    RawNewStackKnown,
    /// ... from a raw stack whose named stack was new too.
    RawNewStackNew,
    /// Of a new raw stack: its leaf frame named.
    Leaf,
    /// Of a new raw stack: its callers looked up (named when new).
    Callers,
    /// Of a new raw stack: the whole's shared copy found or made, and entered.
    Whole,
    /// The whole of `SampleResolver::resolve`.
    Resolve,
    /// The calling context tree and stack table given a stack met before (by thread).
    TreeKnown,
    /// ... a stack new to them, from the root.
    TreeNew,
    /// ... a stack new to them, above its callers' node.
    TreeAbove,
    /// A method new to the resolver named by the JVM (inside the phases above).
    Describe,
    /// A frame's line looked up (its method's table asked of the JVM at its first use).
    Line,
}

const PHASES: &[(Phase, &str)] = &[
    (Phase::Place, "placing the pc"),
    (Phase::NoteCode, "noting its blob"),
    (Phase::RawKnown, "raw stack known"),
    (Phase::RawNewStackKnown, "raw stack new, stack known"),
    (Phase::RawNewStackNew, "raw stack new, stack new"),
    (Phase::Leaf, "of new raw stacks: leaf frame"),
    (Phase::Callers, "callers"),
    (Phase::Whole, "whole"),
    (Phase::Resolve, "resolving in all"),
    (Phase::TreeKnown, "tree, stack known"),
    (Phase::TreeNew, "tree, stack new"),
    (Phase::TreeAbove, "tree, stack new above known callers"),
    (Phase::Describe, "of these: methods named by the JVM"),
    (Phase::Line, "lines"),
];

#[cfg(feature = "phase-timing")]
mod imp {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    pub static NS: [AtomicU64; super::PHASES.len()] = [const { AtomicU64::new(0) }; super::PHASES.len()];
    pub static COUNT: [AtomicU64; super::PHASES.len()] = [const { AtomicU64::new(0) }; super::PHASES.len()];

    pub struct Timer(std::time::Instant);

    impl Timer {
        #[inline(always)]
        pub fn start() -> Timer {
            Timer(std::time::Instant::now())
        }

        #[inline(always)]
        pub fn lap(&mut self, p: super::Phase) {
            let now = std::time::Instant::now();
            NS[p as usize].fetch_add((now - self.0).as_nanos() as u64, Relaxed);
            COUNT[p as usize].fetch_add(1, Relaxed);
            self.0 = now;
        }
    }
}

#[cfg(not(feature = "phase-timing"))]
mod imp {
    pub struct Timer;

    impl Timer {
        #[inline(always)]
        pub fn start() -> Timer {
            Timer
        }

        #[inline(always)]
        pub fn lap(&mut self, _: super::Phase) {}
    }
}

pub use imp::Timer;

impl Timer {
    /// Adds the time since the start (or the last lap) to `p`.
    #[inline(always)]
    pub fn stop(mut self, p: Phase) {
        self.lap(p);
    }
}

/// The phases' times so far (us per sample of `samples`, and per time the phase ran), reset;
/// `None` without the feature.
pub fn take_line(samples: u64) -> Option<String> {
    #[cfg(feature = "phase-timing")]
    {
        use std::sync::atomic::Ordering::Relaxed;
        let parts: Vec<String> = PHASES
            .iter()
            .map(|&(p, name)| {
                let ns = imp::NS[p as usize].swap(0, Relaxed) as f64;
                let n = imp::COUNT[p as usize].swap(0, Relaxed);
                format!("{name} {:.2} ({n} x {:.2})", ns / 1e3 / samples.max(1) as f64, ns / 1e3 / n.max(1) as f64)
            })
            .collect();
        Some(format!("resolving by phase, us per sample (times x us each): {}", parts.join(", ")))
    }
    #[cfg(not(feature = "phase-timing"))]
    {
        let _ = (samples, PHASES);
        None
    }
}
