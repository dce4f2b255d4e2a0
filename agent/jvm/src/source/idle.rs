//! `event=alloc` / `event=lock` alone: no CPU event is sampled; the threads are named and get
//! indices so the JVM events of each are told apart.

use std::sync::Arc;

use crate::options::Options;
use hpm_profile::model::{EventInfo, KernelMode, PeriodUnit};

use super::{EventSource, Planned, SourceDef, SourceTraits, Start};
use crate::code::CodeEvents;
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::perf::PerfSpec;
use crate::stack_source::StackSite;
use crate::threads::Threads;

pub const SOURCE: SourceDef = SourceDef {
    // The JVM events' stacks are walked in their threads, by hpm's walker, which names methods
    // by the ids the code events make the JVM create: on from the JVM's load, as for the signal
    // sampler (at VMInit start-up's code is replayed either way).
    traits: |opts| {
        (!opts.cpu).then_some(SourceTraits { code_at_load: true, ..SourceTraits::plain(StackSite::InThread) })
    },
    plan,
};

fn plan(opts: &Options, _: &Jvmti) -> Result<Planned, String> {
    let info = EventInfo {
        name: "none".into(),
        requested: "none".into(),
        period: 0,
        unit: PeriodUnit::Nanoseconds,
        fallback: None,
        sampler: hpm_profile::model::StackSampler::None,
        kernel: KernelMode::Excluded,
        alloc_interval: 0,
    };
    let spec = PerfSpec::new(opts.event, opts.period(), Vec::new(), KernelMode::Excluded);
    let build = |s: &Start| {
        Ok(Arc::new(Idle { threads: s.threads, code: s.code, jvmti: s.jvmti, vm: s.vm }) as Arc<dyn EventSource>)
    };
    Ok(Planned { event: Some((spec, info)), notes: Vec::new(), build: Box::new(build) })
}

pub struct Idle {
    threads: &'static Threads,
    code: &'static CodeEvents,
    jvmti: Jvmti,
    vm: Vm,
}

impl EventSource for Idle {
    fn start(&self) -> Result<(), String> {
        // The events' stacks, walked by hpm's walker, name methods by the ids the code-map
        // events make the JVM create (as the signal sampler's do).
        let jni = self.vm.env().ok_or("the calling thread is not attached to the JVM")?;
        self.code.enable(&self.jvmti, Some(jni)).map_err(|e| format!("cannot enable the compiled-code events: {e}"))?;
        self.threads.begin(crate::threads::Mode::Identity);
        self.threads.hint_java_threads(super::java_threads(&self.jvmti, self.vm));
        self.threads.scan();
        Ok(())
    }

    fn stop(&self) -> Vec<String> {
        self.threads.stop_all();
        Vec::new()
    }
}
