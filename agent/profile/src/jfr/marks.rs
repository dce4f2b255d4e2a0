//! Events recorded from the Java bridge rather than sampled: `hpm.Region` (a code region with
//! the counter deltas of the thread that ran it, Georges et al.'s HPM API) and `hpm.Phase` (a
//! phase or iteration marker, e.g. a benchmark harness starting iteration N, as Hofer et al.
//! mark iterations to leave warm-up out).
//!
//! `hpm.Region` has one `long` field per counter of [`REGION_COUNTERS`], so its type is the
//! same in every file; the `counters` field names those actually measured (the others are 0).

use std::sync::Arc;

use super::by_place::ByPlace;
use super::event::EventBuf;
use super::pools::Pools;
pub use super::schema::{EVENT_HPM_PHASE, EVENT_HPM_REGION, REGION_COUNTERS};
use crate::model::ThreadIdx;

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

/// A phase marker read back from a file; `time` is on the samples' clock (`Sample::time`).
/// Markers named by one string of the file share one copy of the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseMark {
    pub name: Arc<str>,
    pub index: i64,
    pub time: u64,
}

/// The `hpm.Phase` markers of parsed chunks, in time order.
pub fn phases_of<'a>(chunks: impl IntoIterator<Item = &'a super::value::Chunk>) -> Vec<PhaseMark> {
    let mut out = Vec::new();
    for c in chunks {
        add_phases(c, &mut out);
    }
    out.sort_by_key(|p| p.time);
    out
}

/// Appends a chunk's `hpm.Phase` markers to `out`.
fn add_phases(c: &super::value::Chunk, out: &mut Vec<PhaseMark>) {
    let mut names = ByPlace::default();
    for e in c.events_named("hpm.Phase") {
        out.push(PhaseMark {
            name: names.get(e.str("name").unwrap_or(""), Arc::from),
            index: e.i64("index").unwrap_or(-1),
            time: c.header.ticks_to_nanos(e.i64("startTime").unwrap_or(0) as u64),
        });
    }
}

/// The `hpm.Phase` markers of a `.jfr` file (its complete chunks), in time order; one chunk
/// read at a time.
pub fn read_phases(path: &std::path::Path) -> Result<Vec<PhaseMark>, super::error::ReadError> {
    let mut out = Vec::new();
    super::parser::for_each_chunk(path, &|t| &*t.name == "hpm.Phase", |c| {
        add_phases(&c, &mut out);
        Ok(())
    })?;
    out.sort_by_key(|p| p.time);
    Ok(out)
}

/// Keeps the samples from the first marker matching `spec` on: `NAME` (a phase) or
/// `NAME=INDEX` (an iteration, e.g. `iteration=5` leaves out iterations 0..4 as warm-up).
/// Returns how many samples were left out.
pub fn cut_from_phase(
    samples: &mut Vec<crate::model::Sample>,
    phases: &[PhaseMark],
    spec: &str,
) -> Result<usize, String> {
    let (name, index) = match spec.rsplit_once('=') {
        Some((n, i)) => {
            let i = i
                .parse::<i64>()
                .map_err(|_| format!("`{spec}`: the part after `=` must be an iteration number, as in iteration=5"))?;
            (n, Some(i))
        }
        None => (spec, None),
    };
    let Some(from) = phases.iter().find(|p| &*p.name == name && index.is_none_or(|i| p.index == i)) else {
        // The markers there are, each once and in order: the first few, names cut short.
        let mut seen: Vec<String> = Vec::new();
        let mut last: Option<(&Arc<str>, i64)> = None;
        let mut more = false;
        for p in phases {
            if last.is_some_and(|(n, i)| Arc::ptr_eq(n, &p.name) && i == p.index) {
                continue;
            }
            last = Some((&p.name, p.index));
            let shown = match p.name.char_indices().nth(40) {
                Some((at, _)) => format!("{}...", &p.name[..at]),
                None => p.name.to_string(),
            };
            let shown = if p.index >= 0 { format!("{shown}={}", p.index) } else { shown };
            if seen.last() != Some(&shown) {
                if seen.len() == 20 {
                    more = true;
                    break;
                }
                seen.push(shown);
            }
        }
        let seen = if seen.is_empty() {
            "the file has none (mark them with the Java bridge: Hpm.phase / Hpm.iteration)".to_string()
        } else {
            format!("markers: {}{}", seen.join(", "), if more { ", ..." } else { "" })
        };
        return Err(format!("no phase marker `{spec}`; {seen}"));
    };
    let before = samples.len();
    samples.retain(|s| s.time >= from.time);
    Ok(before - samples.len())
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
            Mark::Phase { time: 5_000_000_100, thread: ThreadIdx(1), name: "iteration".into(), index: 3 },
            Mark::Region {
                start: 5_000_000_200,
                end: 5_000_900_200,
                thread: ThreadIdx(0),
                name: "parse".into(),
                counters: vec![("task-clock".into(), 850_000), ("page-faults".into(), 7), ("r01c2".into(), 9)],
            },
            Mark::Phase { time: 5_000_000_300, thread: ThreadIdx(0), name: "warm-up".into(), index: -1 },
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
        let defs = crate::jfr::schema::mark_event_defs();
        let region = defs.iter().find(|d| d.name == "hpm.Region").unwrap();
        let names: Vec<&str> = region.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(&names[..2], ["startTime", "duration"]);
        let events: Vec<String> = REGION_COUNTERS.iter().map(|(e, _)| e.to_string()).collect();
        let expected = crate::jfr::schema::counter_field_names(&events);
        assert_eq!(&names[5..], expected.iter().map(String::as_str).collect::<Vec<_>>().as_slice());
    }
    #[test]
    fn a_profile_is_cut_at_a_phase_or_iteration() {
        let mut rec = sample_recording();
        let samples = crate::jfr::tests::sample_batch(&mut rec, 5_000_000_000, 40);
        let t = |i: usize| samples[i].time;
        let marks = vec![
            Mark::Phase { time: t(0), thread: ThreadIdx(0), name: "warm-up".into(), index: -1 },
            Mark::Phase { time: t(10), thread: ThreadIdx(0), name: "iteration".into(), index: 0 },
            Mark::Phase { time: t(25), thread: ThreadIdx(0), name: "iteration".into(), index: 1 },
        ];
        let bytes = encode_chunk_with_marks(&rec, &samples, &marks, times(5_000_000_000, t(39) + 1));
        let chunks = parse_chunks(&bytes, &|_| true).unwrap();
        let phases = phases_of(&chunks);
        assert_eq!(phases.iter().map(|p| p.index).collect::<Vec<_>>(), [-1, 0, 1]);
        let mut read = crate::jfr::recording_from_chunks(&chunks).unwrap().samples;
        assert_eq!(read.len(), 40);
        assert_eq!(cut_from_phase(&mut read, &phases, "iteration=1"), Ok(25));
        assert_eq!(read.len(), 15);
        let mut all = samples.clone();
        assert_eq!(cut_from_phase(&mut all, &phases, "iteration"), Ok(10));
        let e = cut_from_phase(&mut all, &phases, "iteration=7").unwrap_err();
        assert!(e.contains("warm-up, iteration=0, iteration=1"), "{e}");
        assert!(cut_from_phase(&mut all, &phases, "iteration=x").unwrap_err().contains("iteration number"));
        assert!(cut_from_phase(&mut all, &[], "steady").unwrap_err().contains("Hpm.iteration"));
    }
}
