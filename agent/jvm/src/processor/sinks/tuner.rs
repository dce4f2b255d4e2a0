//! `interval=auto`: Chilingarova & Safonov's self-tuning controller watches each sample's leaf
//! method per thread and changes the sampling period through the sampler.

use std::sync::Arc;

use crate::options::Interval;
use hpm_profile::analysis::tuner::{SelfTuner, TunerConfig};
use hpm_profile::model::{PeriodUnit, Recording, Sample};

use super::ProfileSink;
use crate::processor::Inputs;
use crate::source::EventSource;

pub(in crate::processor) struct TunerSink {
    tuner: SelfTuner,
    sampler: Arc<dyn EventSource>,
    quiet: bool,
}

impl TunerSink {
    /// The controller with `interval=auto`: bounds suit the event (10us..1s for clock events).
    pub(in crate::processor) fn new(inputs: &Inputs) -> Option<TunerSink> {
        if inputs.opts.interval != Interval::Auto {
            return None;
        }
        let mut cfg = TunerConfig::default();
        let period = inputs.event.period;
        if inputs.event.unit != PeriodUnit::Nanoseconds {
            cfg.min_interval = (period / 100).max(1);
            cfg.max_interval = period.saturating_mul(100);
        }
        match SelfTuner::new(cfg, period) {
            Ok(tuner) => Some(TunerSink { tuner, sampler: inputs.sampler.clone(), quiet: inputs.opts.quiet }),
            Err(e) => {
                eprintln!("hpm: interval=auto disabled: {e}");
                None
            }
        }
    }
}

impl ProfileSink for TunerSink {
    fn observe(&mut self, s: &Sample, rec: &mut Recording) {
        let Some(top) = s.stack.first() else { return };
        if let Some(change) = self.tuner.observe(u64::from(s.thread.0), u64::from(top.method.0)) {
            let refused = self.sampler.set_period(change.new);
            rec.event.period = change.new;
            if !self.quiet {
                let kept =
                    if refused > 0 { format!(" ({refused} threads kept the old period)") } else { String::new() };
                eprintln!("hpm: interval=auto: {change}{kept}");
            }
        }
    }
}
