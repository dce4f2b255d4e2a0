//! Virtual threads (JDK 21+) in a recording: how many the agent keeps apart, and the three
//! ways the reading commands show their samples (`--vthreads fold|each|carrier`).
//!
//! A sample of a mounted virtual thread names the virtual thread ([`Sample::thread`], a
//! [`ThreadInfo::is_virtual`] entry) and the platform thread carrying it ([`Sample::carrier`]).
//! A program may run millions of virtual threads: past [`MAX_VIRTUAL_THREADS`] distinct ones,
//! the agent charges the samples of the others to one entry ([`ThreadInfo::other_virtual`]),
//! so the thread list stays bounded; the report says how many samples went there.
//!
//! [`Sample::thread`]: crate::model::Sample::thread
//! [`Sample::carrier`]: crate::model::Sample::carrier

use crate::model::{Recording, ThreadIdx, ThreadInfo, VirtualLive};
use crate::text::group;

/// Distinct virtual threads one recording keeps apart (about 100 bytes each in the agent's
/// thread list and map); the samples of more are charged to [`ThreadInfo::other_virtual`].
pub const MAX_VIRTUAL_THREADS: usize = 65_536;

/// Name of the entry standing for the virtual threads past [`MAX_VIRTUAL_THREADS`].
pub const OTHER_VIRTUAL_THREADS: &str = "[other virtual threads]";

impl ThreadInfo {
    /// The entry that stands for the virtual threads past [`MAX_VIRTUAL_THREADS`]: virtual,
    /// without a Java id.
    pub fn other_virtual() -> ThreadInfo {
        ThreadInfo { name: OTHER_VIRTUAL_THREADS.into(), is_java: true, is_virtual: true, ..Default::default() }
    }

    /// Whether this entry stands for many virtual threads (past the bound, or folded).
    pub fn is_virtual_group(&self) -> bool {
        self.is_virtual && self.java_id.is_none()
    }
}

/// How the reading commands show virtual threads' samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Grouping {
    /// One row, `virtual threads (N)`, for all of them: thousands of rows of a few samples
    /// each help nobody.
    #[default]
    Fold,
    /// Each virtual thread its own row.
    Each,
    /// Charged to the platform thread that carried them (as before virtual threads were told
    /// apart, and as a profiler of carriers sees them).
    Carrier,
}

impl Grouping {
    /// `fold`, `each` or `carrier`; an error in one line otherwise.
    pub fn parse(s: &str) -> Result<Grouping, String> {
        match s {
            "fold" => Ok(Grouping::Fold),
            "each" => Ok(Grouping::Each),
            "carrier" => Ok(Grouping::Carrier),
            _ => Err(format!("`{s}`: give fold, each or carrier")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Grouping::Fold => "fold",
            Grouping::Each => "each",
            Grouping::Carrier => "carrier",
        }
    }
}

/// What a recording's samples say of virtual threads, as the report's header tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VirtualSummary {
    /// Distinct virtual threads with samples (the [`OTHER_VIRTUAL_THREADS`] entry counts as one).
    pub threads: u64,
    /// Samples of virtual threads, and of them the ones charged to [`OTHER_VIRTUAL_THREADS`].
    pub samples: u64,
    pub merged: u64,
    /// All the recording's samples.
    pub all_samples: u64,
    pub grouping: Grouping,
    /// Live virtual threads (`event=wall` on JDK 21+).
    pub live: VirtualLive,
}

impl VirtualSummary {
    /// `1,000 sampled (62.50% of the samples), folded into one row (--vthreads each|carrier)`;
    /// `none sampled` where only live ones were counted.
    pub fn line(&self) -> String {
        if self.samples == 0 {
            return "none sampled".into();
        }
        let mut s = format!(
            "{} sampled ({} of the samples)",
            group(self.threads),
            crate::text::pct(self.samples, self.all_samples)
        );
        if self.merged > 0 {
            s.push_str(&format!(
                ", {} samples of those past {} under `{OTHER_VIRTUAL_THREADS}`",
                group(self.merged),
                group(MAX_VIRTUAL_THREADS as u64)
            ));
        }
        s.push_str(match self.grouping {
            Grouping::Fold => ", folded into one row (--vthreads each|carrier)",
            Grouping::Each => ", a row each (--vthreads each)",
            Grouping::Carrier => ", charged to their carriers (--vthreads carrier)",
        });
        s
    }
}

/// `1000.0 live on average (at most 1,000): 7.9 mounted, 992.1 unmounted (parked, sleeping or
/// waiting for a carrier)`; `None` when live virtual threads were not counted.
pub fn live_line(v: &VirtualLive) -> Option<String> {
    let (live, mounted, unmounted) = v.averages()?;
    Some(format!(
        "{live:.1} live on average (at most {}): {mounted:.1} mounted, {unmounted:.1} unmounted (parked, sleeping or \
         waiting for a carrier)",
        group(v.max)
    ))
}

/// Counts the virtual threads of `rec`'s samples; `None` when no sample is of one and live
/// ones were not counted.
pub fn summary(rec: &Recording, grouping: Grouping) -> Option<VirtualSummary> {
    let mut seen = vec![false; rec.threads.len()];
    let mut out = VirtualSummary { grouping, live: rec.virtual_live, ..Default::default() };
    for s in &rec.samples {
        out.all_samples += s.count();
        let Some(t) = rec.threads.get(s.thread.0 as usize).filter(|t| t.is_virtual) else { continue };
        out.samples += s.count();
        if t.is_virtual_group() {
            out.merged += s.count();
        }
        let i = s.thread.0 as usize;
        out.threads += u64::from(!seen[i]);
        seen[i] = true;
    }
    (out.samples > 0 || out.live.span_ns > 0).then_some(out)
}

/// Regroups the samples and events of virtual threads as `grouping` says, before filters and
/// outputs see them (so `--thread REGEX` matches the rows shown); returns what the samples
/// said before. Linear in the samples and events.
pub fn regroup(rec: &mut Recording, grouping: Grouping) -> Option<VirtualSummary> {
    let summary = summary(rec, grouping)?;
    let is_virtual: Vec<bool> = rec.threads.iter().map(|t| t.is_virtual).collect();
    let virtual_idx = |t: ThreadIdx| is_virtual.get(t.0 as usize).copied().unwrap_or(false);
    match grouping {
        Grouping::Each => {}
        Grouping::Carrier => {
            for s in &mut rec.samples {
                if let Some(c) = s.carrier.take().filter(|_| virtual_idx(s.thread)) {
                    s.thread = c;
                }
            }
        }
        Grouping::Fold => {
            let name = format!("virtual threads ({})", group(summary.threads));
            let fold = rec.add_thread(ThreadInfo { name, ..ThreadInfo::other_virtual() });
            for s in rec.samples.iter_mut().filter(|s| virtual_idx(s.thread)) {
                s.thread = fold;
            }
            for e in rec.events.iter_mut().filter(|e| virtual_idx(e.thread)) {
                e.thread = fold;
            }
        }
    }
    Some(summary)
}

#[cfg(test)]
#[path = "vthreads_tests.rs"]
mod tests;
