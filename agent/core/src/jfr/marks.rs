//! Events recorded from the Java bridge rather than sampled: `hpm.Region` (a code region with
//! the counter deltas of the thread that ran it, Georges et al.'s HPM API) and `hpm.Phase` (a
//! phase or iteration marker, e.g. a benchmark harness starting iteration N, as Hofer et al.
//! mark iterations to leave warm-up out).
//!
//! `hpm.Region` has one `long` field per counter of [`REGION_COUNTERS`], so its type is the
//! same in every file; the `counters` field names those actually measured (the others are 0).

use super::pools::Pools;
use super::schema::*;
use super::writer::EventBuf;
use crate::model::ThreadIdx;

pub const EVENT_HPM_REGION: u64 = 104;
pub const EVENT_HPM_PHASE: u64 = 105;

/// The counters a region can carry: (perf event name, JFR field name).
pub const REGION_COUNTERS: &[(&str, &str)] = &[
    ("cycles", "cycles"),
    ("instructions", "instructions"),
    ("task-clock", "taskClock"),
    ("page-faults", "pageFaults"),
    ("context-switches", "contextSwitches"),
];

/// One bridge event, with ticks on the recording's clock (CLOCK_MONOTONIC ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    Region {
        start: u64,
        end: u64,
        thread: ThreadIdx,
        name: String,
        /// (counter name, delta over the region); names outside [`REGION_COUNTERS`] are
        /// listed in the `counters` field only.
        counters: Vec<(String, u64)>,
    },
    Phase {
        time: u64,
        thread: ThreadIdx,
        name: String,
        /// Iteration number, or -1 for a named phase without one.
        index: i64,
    },
}

impl Mark {
    /// When the mark starts (a region's start, a phase marker's time).
    pub fn time(&self) -> u64 {
        match self {
            Mark::Region { start, .. } => *start,
            Mark::Phase { time, .. } => *time,
        }
    }
}

/// The `hpm.Region` and `hpm.Phase` event types.
pub fn event_defs() -> Vec<EventDef> {
    let mut region = vec![
        start_time_field(),
        duration_field(),
        FieldDef::new("eventThread", T_THREAD, "Thread").pooled(),
        string_field("name", "Region"),
        string_field("counters", "Counters Measured")
            .with(description("Counters read at the region's start and end, comma-separated; the other counter fields are 0")),
    ];
    for (event, field) in REGION_COUNTERS {
        region.push(
            FieldDef::new(field, T_LONG, event)
                .with(description(&format!("Counter `{event}`: delta over the region")))
                .with(marker(A_UNSIGNED)),
        );
    }
    vec![
        EventDef {
            id: EVENT_HPM_REGION,
            name: "hpm.Region",
            label: "hpm Region",
            description: "A code region marked through the Java bridge, with the counter deltas of the thread that ran it",
            category: HPM_CATEGORY,
            fields: region,
        },
        EventDef {
            id: EVENT_HPM_PHASE,
            name: "hpm.Phase",
            label: "hpm Phase",
            description: "The start of a phase or iteration, marked through the Java bridge; samples after it belong to it",
            category: HPM_CATEGORY,
            fields: vec![
                start_time_field(),
                FieldDef::new("eventThread", T_THREAD, "Thread").pooled(),
                string_field("name", "Phase"),
                FieldDef::new("index", T_LONG, "Iteration").with(description("Iteration number, -1 for a phase without one")),
            ],
        },
    ]
}

/// Appends one event record per mark.
pub fn write_marks(out: &mut Vec<u8>, pools: &mut Pools, marks: &[Mark]) {
    for m in marks {
        match m {
            Mark::Region { start, end, thread, name, counters } => {
                let mut e = EventBuf::new(EVENT_HPM_REGION);
                let names: Vec<&str> = counters.iter().map(|(n, _)| n.as_str()).collect();
                e.long(*start).long(end.saturating_sub(*start)).long(pools.thread(*thread));
                e.string(Some(name)).string(Some(&names.join(",")));
                for (event, _) in REGION_COUNTERS {
                    e.long(counters.iter().find(|(n, _)| n == event).map_or(0, |(_, v)| *v));
                }
                e.finish(out);
            }
            Mark::Phase { time, thread, name, index } => {
                let mut e = EventBuf::new(EVENT_HPM_PHASE);
                e.long(*time).long(pools.thread(*thread)).string(Some(name)).long(*index as u64);
                e.finish(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jfr::parser::parse_chunks;
    use crate::jfr::tests::{sample_recording, times};
    use crate::jfr::writer::encode_chunk_with_marks;

    #[test]
    fn regions_and_phases_read_back_with_their_fields() {
        let rec = sample_recording();
        let marks = vec![
            Mark::Phase { time: 5_000_000_100, thread: 1, name: "iteration".into(), index: 3 },
            Mark::Region {
                start: 5_000_000_200,
                end: 5_000_900_200,
                thread: 0,
                name: "parse".into(),
                counters: vec![("task-clock".into(), 850_000), ("page-faults".into(), 7), ("r01c2".into(), 9)],
            },
            Mark::Phase { time: 5_000_000_300, thread: 0, name: "warm-up".into(), index: -1 },
        ];
        let bytes = encode_chunk_with_marks(&rec, &[], &marks, times(5_000_000_000, 5_001_000_000));
        let chunk = &parse_chunks(&bytes, &|_| true).unwrap()[0];

        let regions: Vec<_> = chunk.events_named("hpm.Region").collect();
        assert_eq!(regions.len(), 1);
        let r = &regions[0];
        assert_eq!(r.i64("startTime"), Some(5_000_000_200));
        assert_eq!(r.i64("duration"), Some(900_000));
        assert_eq!(r.str("name"), Some("parse"));
        assert_eq!(r.str("counters"), Some("task-clock,page-faults,r01c2"));
        assert_eq!(r.i64("taskClock"), Some(850_000));
        assert_eq!(r.i64("pageFaults"), Some(7));
        assert_eq!(r.i64("cycles"), Some(0));
        assert_eq!(r.object("eventThread").and_then(|t| t.str("javaName")), Some("main"));

        let phases: Vec<_> = chunk.events_named("hpm.Phase").collect();
        assert_eq!(phases.len(), 2);
        assert_eq!(phases[0].str("name"), Some("iteration"));
        assert_eq!(phases[0].i64("index"), Some(3));
        assert_eq!(phases[0].object("eventThread").and_then(|t| t.str("javaName")), Some("worker-1"));
        assert_eq!(phases[1].i64("index"), Some(-1));
    }

    #[test]
    fn region_counter_fields_are_fixed_and_named_like_sample_counters() {
        let defs = event_defs();
        let region = defs.iter().find(|d| d.name == "hpm.Region").unwrap();
        let names: Vec<&str> = region.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(&names[..2], ["startTime", "duration"]);
        let events: Vec<String> = REGION_COUNTERS.iter().map(|(e, _)| e.to_string()).collect();
        let expected = crate::jfr::schema::counter_field_names(&events);
        assert_eq!(&names[5..], expected.iter().map(String::as_str).collect::<Vec<_>>().as_slice());
    }
}
