//! `sampler=asgct`: every thread (Java, GC, JIT) gets a perf group whose overflow signal walks
//! its stack in the handler (signal.rs), with the session's stack source: hpm's own walker, or
//! AsyncGetCallTrace with `stack=asgct`. Threads come from ThreadStart
//! and from a scan of /proc/self/task every other processor round.

use std::sync::Arc;

use crate::options::{Options, SamplerKind};

use super::{EventSource, Planned, SourceDef, SourceTraits, Start};
use crate::code::CodeEvents;
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::perf::PerfSpec;
use crate::signal::{SignalSetup, SignalStats};
use crate::sink::SignalCtx;
use crate::stack_source::StackSite;
use crate::threads::Threads;

pub const SOURCE: SourceDef = SourceDef {
    traits: |opts| {
        (opts.cpu && opts.sampler == SamplerKind::Asgct).then_some(SourceTraits {
            // One sample per period per CPU, through the pool alone.
            stretch_rounds: true,
            // The handler has the interrupted registers.
            data_addresses: true,
            // The code-map events from the start; VMInit replays what start-up made before.
            code_at_load: true,
            ..SourceTraits::plain(StackSite::InThread)
        })
    },
    plan,
};

fn plan(opts: &Options, _: &Jvmti) -> Result<Planned, String> {
    let (spec, event, mut notes) = crate::perf::choose_events(opts, false)?;
    notes.extend(super::depth_note(opts));
    let build = |s: &Start| {
        Ok(Arc::new(AsgctSampler {
            threads: s.threads,
            code: s.code,
            setup: s.signals,
            stats: s.stats,
            jvmti: s.jvmti,
            vm: s.vm,
            spec: s.spec.clone(),
            ctx: s.signal_ctx(s.asgct, s.data),
        }) as Arc<dyn EventSource>)
    };
    Ok(Planned { event: Some((spec, event)), notes, build: Box::new(build) })
}

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

impl EventSource for AsgctSampler {
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
