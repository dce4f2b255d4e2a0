//! The short summary the agent prints to stderr when the JVM exits, and the pieces of the
//! report header it shares with [`super::report::full_report`].

use std::fmt::Write;

use crate::cct::Cct;
use crate::model::{
    DropClass, EventInfo, KernelMode, PeriodUnit, Recording, Sample, SamplerKind, StackSampler, StateIdx, VmComponent,
};

use super::methods::method_rows;
use super::threads::SampledThreads;
use crate::text::{duration_ns, group, pct};

/// Samples per VM component, in [`VmComponent::ALL`] order, components without samples left
/// out. For recordings read from a file; the agent counts components as it drains samples.
pub fn component_counts(samples: &[Sample]) -> Vec<(VmComponent, u64)> {
    let mut counts = [0u64; VmComponent::ALL.len()];
    for s in samples {
        if let Some(i) = VmComponent::ALL.iter().position(|&c| c == s.component) {
            counts[i] += s.repeats();
        }
    }
    VmComponent::ALL.iter().zip(counts).filter(|(_, n)| *n > 0).map(|(&c, n)| (c, n)).collect()
}

/// Components with samples, largest first (ties in [`VmComponent::ALL`] order), merged if a
/// component is listed twice.
pub(crate) fn sorted_components(components: &[(VmComponent, u64)]) -> Vec<(VmComponent, u64)> {
    let mut v: Vec<(VmComponent, u64)> = Vec::new();
    for &(c, n) in components {
        match v.iter_mut().find(|(x, _)| *x == c) {
            Some((_, m)) => *m += n,
            None => v.push((c, n)),
        }
    }
    v.retain(|(_, n)| *n > 0);
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// `cycles, every 1,000,000 events, sampler asgct` / `cpu-clock, interval 10 ms, sampler asgct`:
/// the sampling event for headers and titles.
pub fn event_line(rec: &Recording) -> String {
    let e = &rec.event;
    let period = match e.unit {
        // No sampling event (`event=alloc` alone), or the JVM's events as samples.
        _ if e.period == 0 => String::new(),
        PeriodUnit::Nanoseconds => format!(", interval {}", duration_ns(e.period)),
        PeriodUnit::Events => format!(", every {} events", group(e.period)),
    };
    let mut s = format!("{}{period}", e.name);
    if e.alloc_interval > 0 {
        let _ = write!(s, ", allocations sampled every {} KiB", e.alloc_interval / 1024);
    }
    if !e.sampler.name().is_empty() {
        let _ = write!(s, ", sampler {}", e.sampler);
    }
    s
}

/// What a session samples, as `hpm attach` and the Java bridge answer `start`: the sampling
/// event (`event cpu-clock every 10 ms, sampler asgct`), allocations (`alloc` option: `alloc
/// every 512 KiB allocated`), lock waits (`lock`: `lock waits of 10 ms or more`), joined by
/// ` + `. `event` is the session's (`none`, period 0: no sampling event).
pub fn sampling_line(event: &EventInfo, alloc: Option<u64>, lock: Option<u64>) -> String {
    let mut parts = Vec::new();
    if event.period > 0 {
        let every = match event.unit {
            PeriodUnit::Nanoseconds => duration_ns(event.period),
            PeriodUnit::Events => format!("{} events", group(event.period)),
        };
        parts.push(format!("event {} every {every}, sampler {}", event.name, event.sampler));
    }
    if let Some(bytes) = alloc {
        let size = if bytes >= 1024 && bytes % 1024 == 0 {
            format!("{} KiB", group(bytes / 1024))
        } else {
            format!("{} bytes", group(bytes))
        };
        parts.push(format!("alloc every {size} allocated"));
    }
    match lock {
        Some(0) => parts.push("every lock wait".into()),
        Some(ns) => parts.push(format!("lock waits of {} or more", duration_ns(ns))),
        None => {}
    }
    if parts.is_empty() {
        return "nothing (no event, alloc or lock)".into();
    }
    parts.join(" + ")
}

/// How kernel time is in a recording made by the agent's perf sampler (`None` for the others).
pub(crate) fn kernel_line(rec: &Recording) -> Option<String> {
    if rec.event.sampler != StackSampler::Kind(SamplerKind::Asgct) {
        return None;
    }
    Some(
        match rec.event.kernel {
            KernelMode::Sampled => "sampled, with kernel call chains",
            KernelMode::Counted => "counted, not sampled: kernel time is the user stack under [kernel]",
            KernelMode::Excluded => "not in the profile (user mode only)",
        }
        .to_string(),
    )
}

/// The fallback explanation, when the requested event was replaced.
pub(crate) fn fallback_line(rec: &Recording) -> Option<String> {
    let e = &rec.event;
    match &e.fallback {
        Some(reason) => {
            Some(format!("requested `{}` could not be used ({reason}); sampled `{}` instead", e.requested, e.name))
        }
        None if e.requested != e.name && !e.requested.is_empty() => {
            Some(format!("requested `{}`, sampled `{}`", e.requested, e.name))
        }
        None => None,
    }
}

/// `12 dropped (ring full: 10, no java frame: 2)` or `none dropped`.
pub(crate) fn drops_line(rec: &Recording) -> String {
    let (lost, kept) = rec.lost_and_kept();
    let list = |class: DropClass| -> String {
        rec.drops
            .iter()
            .filter(|(r, n)| *n > 0 && r.class() == class)
            .map(|(r, n)| format!("{}: {}", r.label(), group(*n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = if lost == 0 {
        "none dropped".to_string()
    } else {
        format!("{} dropped ({})", group(lost), list(DropClass::Lost))
    };
    if kept > 0 {
        s.push_str(&format!("; {} kept without Java stack ({})", group(kept), list(DropClass::KeptWithoutJavaStack)));
    }
    let partial = rec.drops_of(DropClass::Partial);
    if partial > 0 {
        let why = list(DropClass::Partial);
        s.push_str(&format!("; {} with the top of the Java stack only ({why})", group(partial)));
    }
    let not_pushed = rec.drops_of(DropClass::NotPushed);
    if not_pushed > 0 {
        s.push_str(&format!("; {} not pushed ({})", group(not_pushed), list(DropClass::NotPushed)));
    }
    s
}

/// `8 sampled (4 Java, 4 VM) of 23 seen by the session`: the threads with samples (Java and
/// the VM's own), and every thread the profiler saw, with samples or not. The report's header
/// and the agent's summary both say it, under `threads:`. `None` when there are neither.
pub(crate) fn threads_line(rec: &Recording, (java, vm): (u64, u64)) -> Option<String> {
    let seen = rec.threads_seen();
    if java + vm == 0 && seen == 0 {
        return None;
    }
    Some(format!(
        "{} sampled ({} Java, {} VM) of {} seen by the session",
        group(java + vm),
        group(java),
        group(vm),
        group(seen)
    ))
}

/// `Java 80.10%, GC 10.20%, ...` over the given counts; `None` without counts, or where no
/// sample was classified (a wall-clock or `sampler=jvmti` profile: JVMTI does not say how a
/// frame runs, and `Unknown 100.00%` says nothing).
pub(crate) fn components_line(components: &[(VmComponent, u64)]) -> Option<String> {
    let v = sorted_components(components);
    let all: u64 = v.iter().map(|(_, n)| n).sum();
    if all == 0 || v.iter().all(|(c, _)| *c == VmComponent::Unknown) {
        return None;
    }
    Some(v.iter().map(|(c, n)| format!("{} {}", c.name(), pct(*n, all))).collect::<Vec<_>>().join(", "))
}

/// `sleeping 30.00%, parked_timed 27.50%, ...`: the samples per thread state (a wall-clock
/// profile's), largest first, named as the report's thread table names them; `None` where no
/// sample has a state.
pub fn states_line(rec: &Recording, states: &[(StateIdx, u64)]) -> Option<String> {
    let mut v: Vec<(&str, u64)> = Vec::new();
    for &(i, n) in states {
        let name = rec.states.get(usize::from(i)).map_or("unknown", |s| s.as_str());
        match v.iter_mut().find(|(x, _)| *x == name) {
            Some((_, m)) => *m += n,
            None => v.push((name, n)),
        }
    }
    v.retain(|(_, n)| *n > 0);
    let all: u64 = v.iter().map(|(_, n)| n).sum();
    if all == 0 {
        return None;
    }
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let label = |s: &str| s.strip_prefix("STATE_").unwrap_or(s).to_ascii_lowercase();
    Some(v.iter().map(|(s, n)| format!("{} {}", label(s), pct(*n, all))).collect::<Vec<_>>().join(", "))
}

/// The short exit summary (about 20 lines, each starting with `hpm: `): event and fallback,
/// samples and drops, threads, the 10 hottest methods by self samples, the VM component
/// breakdown. Only what was recorded is printed.
pub fn summary(rec: &Recording, cct: &Cct, components: &[(VmComponent, u64)], sampled: &SampledThreads) -> String {
    let mut lines: Vec<String> = Vec::new();
    lines.push(format!("event {}", event_line(rec)));
    if let Some(f) = fallback_line(rec) {
        lines.push(f);
    }
    let total = cct.total_samples();
    lines.push(format!("{} samples, {}", group(total), drops_line(rec)));
    if let Some(t) = threads_line(rec, sampled.java_and_vm(rec)) {
        lines.push(format!("threads: {t}"));
    }
    match sampled.virtual_threads(rec) {
        (0, _) => {}
        (n, false) => lines.push(format!("virtual threads: {} sampled", group(n))),
        (n, true) => lines.push(format!(
            "virtual threads: {} sampled (past {}, the others' samples under `{}`)",
            group(n),
            group(crate::vthreads::MAX_VIRTUAL_THREADS as u64),
            crate::vthreads::OTHER_VIRTUAL_THREADS
        )),
    }
    if let Some(l) = crate::vthreads::live_line(&rec.virtual_live) {
        lines.push(format!("virtual threads: {l}"));
    }
    let rows = method_rows(cct, false);
    let hot: Vec<_> = rows.iter().filter(|r| r.t.self_samples > 0).take(10).collect();
    if !hot.is_empty() {
        lines.push("top methods by self samples:".into());
        for r in hot {
            lines.push(format!("{:>9} {:>10}  {}", pct(r.t.self_samples, total), group(r.t.self_samples), r.name));
        }
    }
    if let Some(c) = components_line(components) {
        lines.push(format!("components: {c}"));
    }
    let mut out = String::new();
    for l in lines {
        out.push_str("hpm: ");
        out.push_str(&l);
        out.push('\n');
    }
    out
}
