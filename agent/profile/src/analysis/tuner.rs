//! Self-tuning sampling interval (Chilingarova & Safonov, section 3.3).
//!
//! The profiler tracks how often the same activation record is on top of the stack in
//! consecutive samples of a thread. Every time at least `window` samples (1000 in the paper)
//! have been processed since the last evaluation, it computes the share of such repetitions:
//! above `max_repeat` (15%) samples are redundant and the interval is lengthened, below
//! `min_repeat` (1%) the interval is considered too long and is shortened. The paper evaluates
//! after a whole batch of samples, so the window can be exceeded; [`SelfTuner::observe_batch`]
//! does the same, [`SelfTuner::observe`] evaluates as soon as the window is full.
//!
//! The caller decides what "the same activation record" is: the agent passes a key for the
//! top frame (method and frame address), `observe` compares it with the thread's previous one.

use std::collections::HashMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct TunerConfig {
    /// Share of repeated top frames below which the interval is shortened (paper: 1%).
    pub min_repeat: f64,
    /// Share above which the interval is lengthened (paper: 15%).
    pub max_repeat: f64,
    /// Samples between evaluations (paper: 1000).
    pub window: u64,
    /// Factor by which the interval is lengthened or shortened.
    pub factor: f64,
    /// Bounds of the interval, in the sampling event's unit (ns for clock events).
    pub min_interval: u64,
    pub max_interval: u64,
}

impl Default for TunerConfig {
    fn default() -> Self {
        TunerConfig {
            min_repeat: 0.01,
            max_repeat: 0.15,
            window: 1000,
            factor: 2.0,
            min_interval: 100_000,       // 100 us
            max_interval: 1_000_000_000, // 1 s
        }
    }
}

impl TunerConfig {
    /// Checks the thresholds and bounds make sense.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.min_repeat) || !(0.0..=1.0).contains(&self.max_repeat) {
            return Err("repeat thresholds must be shares between 0 and 1".into());
        }
        if self.min_repeat >= self.max_repeat {
            return Err(format!(
                "the low repeat threshold ({}) must be below the high one ({})",
                self.min_repeat, self.max_repeat
            ));
        }
        if self.window == 0 {
            return Err("the evaluation window must be at least 1 sample".into());
        }
        if !(self.factor > 1.0 && self.factor.is_finite()) {
            return Err(format!("the interval factor must be above 1, got {}", self.factor));
        }
        if self.min_interval == 0 || self.min_interval > self.max_interval {
            return Err(format!(
                "interval bounds {}..{} are empty or start at 0",
                self.min_interval, self.max_interval
            ));
        }
        Ok(())
    }
}

/// A change of the sampling interval decided by the tuner; the agent applies it and logs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalChange {
    pub old: u64,
    pub new: u64,
    /// Share of samples whose top frame repeated in the evaluated window.
    pub repeat_share: f64,
    /// Samples in the evaluated window.
    pub samples: u64,
}

impl fmt::Display for IntervalChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = if self.new > self.old { "lengthened" } else { "shortened" };
        write!(
            f,
            "sampling interval {dir} from {} to {}: top frame repeated in {:.1}% of {} samples",
            self.old,
            self.new,
            self.repeat_share * 100.0,
            self.samples
        )
    }
}

#[derive(Clone, Debug)]
pub struct SelfTuner {
    config: TunerConfig,
    interval: u64,
    last_top: HashMap<u64, u64>,
    seen: u64,
    repeats: u64,
}

impl SelfTuner {
    /// A tuner starting at `initial_interval`, clamped to the configured bounds.
    pub fn new(config: TunerConfig, initial_interval: u64) -> Result<SelfTuner, String> {
        config.validate()?;
        let interval = initial_interval.clamp(config.min_interval, config.max_interval);
        Ok(SelfTuner { config, interval, last_top: HashMap::new(), seen: 0, repeats: 0 })
    }

    pub fn interval(&self) -> u64 {
        self.interval
    }

    pub fn config(&self) -> &TunerConfig {
        &self.config
    }

    /// Records one sample of `thread` whose top frame is `top_frame`; evaluates when the window
    /// is full and returns the change, if the interval changed.
    pub fn observe(&mut self, thread: u64, top_frame: u64) -> Option<IntervalChange> {
        self.record(thread, top_frame);
        if self.seen >= self.config.window {
            self.evaluate()
        } else {
            None
        }
    }

    /// Records a batch of (thread, top frame) samples, then evaluates once if at least a
    /// window's worth of samples has accumulated — the paper's manager thread does this.
    pub fn observe_batch(&mut self, samples: impl IntoIterator<Item = (u64, u64)>) -> Option<IntervalChange> {
        for (t, f) in samples {
            self.record(t, f);
        }
        if self.seen >= self.config.window {
            self.evaluate()
        } else {
            None
        }
    }

    /// Records a sample whose stack walk already told whether the top frame was visited before
    /// (the paper's marked frames).
    pub fn observe_repeat(&mut self, repeated: bool) -> Option<IntervalChange> {
        self.seen += 1;
        self.repeats += repeated as u64;
        if self.seen >= self.config.window {
            self.evaluate()
        } else {
            None
        }
    }

    /// Forgets a thread that ended.
    pub fn thread_ended(&mut self, thread: u64) {
        self.last_top.remove(&thread);
    }

    fn record(&mut self, thread: u64, top_frame: u64) {
        self.seen += 1;
        if self.last_top.insert(thread, top_frame) == Some(top_frame) {
            self.repeats += 1;
        }
    }

    fn evaluate(&mut self) -> Option<IntervalChange> {
        let share = self.repeats as f64 / self.seen as f64;
        let samples = self.seen;
        self.seen = 0;
        self.repeats = 0;
        let old = self.interval;
        let c = &self.config;
        let new = if share > c.max_repeat {
            ((old as f64 * c.factor).round() as u64).min(c.max_interval)
        } else if share < c.min_repeat {
            ((old as f64 / c.factor).round() as u64).max(c.min_interval)
        } else {
            old
        };
        if new == old {
            return None;
        }
        self.interval = new;
        Some(IntervalChange { old, new, repeat_share: share, samples })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TunerConfig {
        TunerConfig { min_interval: 1_000, max_interval: 64_000, ..TunerConfig::default() }
    }

    /// Simulates a program whose top frame changes every `run` samples of the current interval;
    /// a longer interval sees fewer repeats (each sample spans more of the program).
    fn simulate(t: &mut SelfTuner, rounds: usize, run_ns: u64) -> Vec<IntervalChange> {
        let mut changes = Vec::new();
        let mut clock = 0u64;
        for _ in 0..rounds {
            let batch: Vec<(u64, u64)> = (0..100)
                .map(|_| {
                    clock += t.interval();
                    (1, clock / run_ns)
                })
                .collect();
            changes.extend(t.observe_batch(batch));
        }
        changes
    }

    #[test]
    fn high_repeat_share_lengthens_until_stable_or_bounded() {
        // Top frame changes every 18 us: at 1 us 94% of samples repeat, at 16 us 11%.
        let mut t = SelfTuner::new(cfg(), 1_000).unwrap();
        let changes = simulate(&mut t, 200, 18_000);
        assert_eq!(changes.len(), 4, "{changes:?}");
        assert!(changes.iter().all(|c| c.new == 2 * c.old && c.repeat_share > 0.15));
        assert_eq!(t.interval(), 16_000);
        // Every change was evaluated over at least the window.
        assert!(changes.iter().all(|c| c.samples >= 1000));
    }

    #[test]
    fn low_repeat_share_shortens_and_respects_minimum() {
        // Top frame changes every sample: repeats 0% -> shorten to the minimum and stay there.
        let mut t = SelfTuner::new(cfg(), 64_000).unwrap();
        let mut changes = Vec::new();
        for i in 0..20_000u64 {
            changes.extend(t.observe(i % 4, i));
        }
        assert_eq!(t.interval(), 1_000);
        assert_eq!(changes.len(), 6); // 64 -> 32 -> 16 -> 8 -> 4 -> 2 -> 1 us
        assert!(changes.iter().all(|c| c.new < c.old && c.repeat_share < 0.01));
        assert_eq!(changes[0].samples, 1000);
    }

    #[test]
    fn upper_bound_and_middle_band_keep_interval() {
        let mut t = SelfTuner::new(cfg(), 64_000).unwrap();
        // All repeats, but already at the maximum: no change reported.
        for _ in 0..5000 {
            assert_eq!(t.observe(7, 42), None);
        }
        // 5% repeats is inside [1%, 15%]: unchanged.
        let mut t = SelfTuner::new(cfg(), 8_000).unwrap();
        for i in 0..10_000u64 {
            let top = if i % 20 == 0 && i > 0 { i - 1 } else { i };
            assert_eq!(t.observe(1, top), None, "at sample {i}");
        }
        assert_eq!(t.interval(), 8_000);
    }

    #[test]
    fn marked_frame_repeats_and_config_validation() {
        let mut t = SelfTuner::new(cfg(), 2_000).unwrap();
        let mut last = None;
        for i in 0..1000 {
            last = t.observe_repeat(i % 5 == 0); // 20% repeated
        }
        let c = last.unwrap();
        assert_eq!((c.old, c.new), (2_000, 4_000));
        assert!(c.to_string().contains("lengthened from 2000 to 4000"), "{c}");
        let bad = TunerConfig { min_repeat: 0.2, ..cfg() };
        assert!(SelfTuner::new(bad, 1).is_err());
        assert!(SelfTuner::new(TunerConfig { factor: 1.0, ..cfg() }, 1).is_err());
        assert_eq!(SelfTuner::new(cfg(), 1).unwrap().interval(), 1_000);
    }
}
