//! What the resolver counts for the summary: walks kept with a pseudo-frame or cut short,
//! frames and methods named for the first time, and `stack=compare`'s agreement of the two
//! walkers.

use super::*;

/// Counts of samples kept with a pseudo-frame because their Java stack could not be walked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub java_ok: u64,
    /// Walks that succeeded only when restarted from the caller of a frameless stub/prologue.
    pub from_caller: u64,
    pub vm_thread: u64,
    pub failed: Vec<(String, u64)>,
    /// hpm's own walker: stacks kept whose bottom was not reached (a partial stack), by the
    /// reason the walk stopped.
    pub partial: Vec<(String, u64)>,
    /// hpm's own walker: frames dropped because their method was not known to the JVM's ids.
    pub unnamed_frames: u64,
    /// `stack=compare`: the two walkers on the same samples.
    pub compare: Comparison,
    /// `data`: samples given an address from their instruction, and why the others were not.
    pub data: hpm_capture::operand::DataStats,
    /// What was named for the first time (each costs more than a sample of what is known):
    /// physical frames of hpm's walker, methods (through `JavaMethods::describe`) and native
    /// code addresses. Distinct stacks: `SampleResolver::stacks_made`.
    pub frames_named: u64,
    pub methods_named: u64,
    pub sites_named: u64,
}

impl WalkStats {
    /// The summary's line of what was named for the first time, `stacks` distinct stacks
    /// among `samples` and the JVM's `events` (`alloc`, `lock`: their stacks are named alike;
    /// the processing per sample follows their share: each new one is named, shared, added to
    /// the tree and to the stack table once).
    pub fn first_sightings_line(&self, stacks: u64, samples: u64, events: u64) -> String {
        use hpm_profile::text::group;
        format!(
            "named for the first time: {} stacks ({:.0}% of the samples{}), {} frames of hpm's walker, {} methods, {} \
             native code addresses",
            group(stacks),
            stacks as f64 * 100.0 / (samples + events).max(1) as f64,
            if events > 0 { " and events" } else { "" },
            group(self.frames_named),
            group(self.methods_named),
            group(self.sites_named)
        )
    }
}

/// How hpm's own walker and AsyncGetCallTrace agreed on the same samples (`stack=compare`):
/// stacks compared as method sequences, leaf first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Samples of Java threads both walked.
    pub samples: u64,
    /// Both found Java frames ...
    pub both: u64,
    /// ... the same methods in the same order (up to the shorter one when either was cut at
    /// the depth limit) ...
    pub same_stack: u64,
    /// ... or at least the same leaf method ...
    pub same_leaf: u64,
    /// ... and where the stacks differ, one is the other with frames added at the bottom.
    pub vm_deeper: u64,
    pub asgct_deeper: u64,
    /// Only one walker found Java frames.
    pub vm_only: u64,
    pub asgct_only: u64,
}

impl Comparison {
    pub fn record(&mut self, vm: &[MethodIdx], asgct: &[MethodIdx], cut: bool) {
        self.samples += 1;
        match (vm.is_empty(), asgct.is_empty()) {
            (true, true) => return,
            (false, true) => {
                self.vm_only += 1;
                return;
            }
            (true, false) => {
                self.asgct_only += 1;
                return;
            }
            (false, false) => self.both += 1,
        }
        let n = vm.len().min(asgct.len());
        if vm == asgct || (cut && vm[..n] == asgct[..n]) {
            self.same_stack += 1;
        } else if vm[..n] == asgct[..n] {
            if vm.len() > n {
                self.vm_deeper += 1;
            } else {
                self.asgct_deeper += 1;
            }
        }
        if vm[0] == asgct[0] {
            self.same_leaf += 1;
        }
    }

    /// The summary line, None when nothing was compared.
    pub fn line(&self) -> Option<String> {
        if self.samples == 0 {
            return None;
        }
        let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
        Some(format!(
            "stack walkers on the same {} samples: Java frames found by hpm's {:.2}%, by AsyncGetCallTrace {:.2}% \
             (hpm only {}, ASGCT only {}); where both found some ({}): same stack {:.2}%, same leaf method {:.2}%, \
             hpm's deeper {}, ASGCT's deeper {}",
            self.samples,
            pct(self.both + self.vm_only, self.samples),
            pct(self.both + self.asgct_only, self.samples),
            self.vm_only,
            self.asgct_only,
            self.both,
            pct(self.same_stack, self.both),
            pct(self.same_leaf, self.both),
            self.vm_deeper,
            self.asgct_deeper,
        ))
    }
}
