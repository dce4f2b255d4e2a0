//! The agent's one global: JVMTI callbacks, the JNI natives of the Java bridge and
//! Agent_OnAttach get no user data, so the `extern "C"` trampolines (lifecycle.rs, callbacks.rs,
//! bridge/mod.rs) find the agent here, and only they do: everything below them is handed the
//! narrow parts it needs (the signal handler has its own statics, set in signal.rs).
//!
//! The agent is made of parts, each owned by its module: the JVM handles, the thread registry,
//! the code and GC events, the sessions, the bridge's live state, the signal setup.

use std::path::PathBuf;
use std::sync::OnceLock;

use hpm_profile::jfr::memory::Spill;

use crate::code::CodeEvents;
use crate::control::Sessions;
use crate::jnienv::Vm;
use crate::jvmti::Jvmti;
use crate::live::Live;
use crate::session::Parts;
use crate::signal::{self, SignalSetup, SignalStats, SAMPLE_SIGNALS};
use crate::sink::AsgctFn;
use crate::threads::Threads;

pub struct Agent {
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub threads: Threads,
    pub code: CodeEvents,
    pub sessions: Sessions,
    /// The Java bridge's regions, phase markers and live-profile queries.
    pub live: Live,
    pub signals: SignalSetup,
    pub stats: SignalStats,
    pub asgct: Option<AsgctFn>,
    /// Where a session without a JFR file keeps its JFR for `dump` ([`Spill::default_dirs`]),
    /// read from the environment once, when the agent is set up (at `-agentpath`'s load no
    /// other thread runs yet): reading it races a native library's `setenv` in another thread.
    pub spill_dirs: Vec<PathBuf>,
    /// `OTEL_SERVICE_NAME`, the push's service name when `service=` is not given: read once
    /// here for the same reason.
    pub otel_service_name: Option<String>,
}

static AGENT: OnceLock<Agent> = OnceLock::new();

/// The agent, once Agent_OnLoad / Agent_OnAttach / JNI_OnLoad has set it up. For trampolines.
pub fn get() -> Option<&'static Agent> {
    AGENT.get()
}

/// Sets the agent up once; `Err` with the existing one if it was already (by another path).
pub fn install(jvmti: Jvmti, vm: Vm) -> Result<&'static Agent, &'static Agent> {
    let mut fresh = false;
    let agent = AGENT.get_or_init(|| {
        fresh = true;
        Agent {
            jvmti,
            vm,
            threads: Threads::new(SAMPLE_SIGNALS[0]),
            code: CodeEvents::default(),
            sessions: Sessions::default(),
            live: Live::default(),
            signals: SignalSetup::default(),
            stats: SignalStats::default(),
            asgct: signal::find_asgct(),
            spill_dirs: Spill::default_dirs(),
            otel_service_name: std::env::var("OTEL_SERVICE_NAME").ok(),
        }
    });
    if fresh {
        Ok(agent)
    } else {
        Err(agent)
    }
}

impl Agent {
    /// What a session works with.
    pub fn parts(&'static self) -> Parts {
        Parts {
            jvmti: self.jvmti,
            vm: self.vm,
            threads: &self.threads,
            code: &self.code,
            live: &self.live,
            signals: &self.signals,
            stats: &self.stats,
            asgct: self.asgct,
            spill_dirs: &self.spill_dirs,
            otel_service_name: self.otel_service_name.as_deref(),
        }
    }
}
