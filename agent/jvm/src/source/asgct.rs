//! `sampler=asgct`: every thread (Java, GC, JIT) gets a perf group whose overflow signal walks
//! its stack with AsyncGetCallTrace in the handler (signal.rs). Threads come from ThreadStart
//! and from a scan of /proc/self/task every other processor round.

use std::sync::Arc;

use crate::code::CodeEvents;
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::perf::PerfSpec;
use crate::signal::{SignalSetup, SignalStats};
use crate::sink::SignalCtx;
use crate::threads::Threads;

pub struct AsgctSampler {
    pub threads: &'static Threads,
    pub code: &'static CodeEvents,
    pub setup: &'static SignalSetup,
    pub stats: &'static SignalStats,
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub spec: PerfSpec,
    pub ctx: Arc<SignalCtx>,
}

impl super::Sampler for AsgctSampler {
    fn start(&self) -> Result<(), String> {
        self.setup.ensure_installed(self.threads, self.stats)?;
        if self.ctx.asgct.is_none() {
            eprintln!("hpm: this JVM does not export AsyncGetCallTrace; samples will carry native frames only");
        }
        // Sessions start at VMInit or later: what was loaded and compiled before is replayed.
        super::start_perf_groups(self.threads, self.code, &self.jvmti, self.vm, &self.spec, &self.ctx)
    }

    fn tick(&self, _round: u64, scan: bool) {
        // Another handler took hpm's signal (the program's sun.misc.Signal, a profiler loaded
        // later): hpm leaves it that signal and moves to another.
        if let Some(moved) = self.setup.check(self.threads) {
            eprintln!("hpm: {}", moved.line());
        }
        // New VM threads get perf groups (Java threads are announced by ThreadStart).
        if scan {
            self.threads.scan_if_changed();
        }
    }

    fn set_period(&self, period: u64) -> usize {
        self.threads.set_period(period)
    }

    fn stop(&self) -> Vec<String> {
        self.threads.stop_all();
        Vec::new()
    }
}
