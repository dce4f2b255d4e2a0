//! A source for tests: a fixed number of synthetic samples of one fixed thread, written at
//! start. Built only for tests, and selected only on a thread where a test asks for it, so the
//! agent's other tests never see it. It shows what a new source is: this module and its line in
//! [`super::SOURCES`].

use std::cell::Cell;
use std::sync::Arc;

use crate::options::Options;

use super::{EventSource, Planned, SourceDef, SourceTraits, Start};
use crate::jvmti::Jvmti;
use crate::sink::Sink;
use crate::stack_source::StackSite;

/// The kernel thread id of every synthetic sample.
const TID: u32 = 4242;

thread_local! {
    /// Samples the source writes, asked for by a test on its own thread (0: not selected).
    static SAMPLES: Cell<u32> = const { Cell::new(0) };
}

pub const SOURCE: SourceDef =
    SourceDef { traits: |_| (SAMPLES.get() > 0).then_some(SourceTraits::plain(StackSite::Jvm)), plan };

fn plan(_: &Options, _: &Jvmti) -> Result<Planned, String> {
    let n = SAMPLES.get();
    let build = move |s: &Start| Ok(Arc::new(Synthetic { sink: s.sink.clone(), n }) as Arc<dyn EventSource>);
    Ok(Planned {
        event: None,
        notes: vec![format!("test source: {n} samples of thread {TID}")],
        build: Box::new(build),
    })
}

/// Writes its samples into the session's sink at start.
struct Synthetic {
    sink: Arc<Sink>,
    n: u32,
}

impl EventSource for Synthetic {
    fn start(&self) -> Result<(), String> {
        for i in 0..self.n {
            let _ = self.sink.timer_queue.push_with(&self.sink.pool, |c| {
                c.raw.tid = TID;
                c.raw.time = u64::from(i);
                true
            });
        }
        Ok(())
    }

    fn stop(&self) -> Vec<String> {
        vec![format!("test source: {} samples written", self.n)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{traits, Sources};

    #[test]
    fn the_listed_source_is_selected_and_writes_its_samples_into_the_sink() {
        let opts = crate::options::parse("interval=10ms").unwrap();
        assert!(traits(&opts).stretch_rounds, "asgct alone stretches the processor's rounds");
        SAMPLES.set(3);
        // Selected through the listing: the session's traits are now both sources' together.
        assert!(!traits(&opts).stretch_rounds, "a source beside asgct that did not allow it");
        let sink = Arc::new(Sink::new(hpm_capture::pool_size::PoolSize { start: 1, capacity: 1 }));
        sink.grow(1);
        let sources = Sources(vec![Arc::new(Synthetic { sink: sink.clone(), n: SAMPLES.get() })]);
        sources.start().unwrap();
        assert_eq!(sources.stop(), ["test source: 3 samples written"]);
        let batch = sink.timer_queue.steal().expect("a batch with the samples");
        let tids: Vec<u32> = sink.pool.get(&batch).filled().iter().map(|c| c.raw.tid).collect();
        assert_eq!(tids, [TID; 3]);
        sink.pool.recycle(batch);
        SAMPLES.set(0);
    }
}
