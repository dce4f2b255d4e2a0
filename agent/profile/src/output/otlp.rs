//! The `.otlp` file: an OTLP profiles request's protobuf bytes, uncompressed (what the
//! collector's OTLP/HTTP receiver takes as `application/x-protobuf`), in hpm's convention
//! (`crate::otlp`).

use prost::Message;

use crate::model::Recording;
use crate::otlp::encode::{recording_end, Summed};
use crate::otlp::{encode_recording, PeriodBuilder, Resource};

use super::stacks::StackTable;

/// `rec` as an OTLP request. A recording that holds its table's samples (a file read back) is
/// encoded sample by sample, with each one's time; the agent's, whose samples leave it with
/// every chunk written, from its stack table: one sample per entry, summed, without times.
/// The resource is what the recording knows ([`Resource::of_recording`]).
pub fn otlp_file(rec: &Recording, table: &StackTable) -> Vec<u8> {
    let resource = Resource::of_recording(rec);
    let whole = holds_table(rec, table);
    let request = if whole {
        encode_recording(rec, &resource)
    } else {
        let mut b = PeriodBuilder::new(rec.start_wall_ns);
        for e in &table.entries {
            let summed = Summed {
                frames: &e.key.frames,
                thread: e.key.thread,
                samples: e.samples,
                weight: e.weight,
                counters: &e.counters,
            };
            b.add_summed(rec, &summed);
        }
        b.finish(recording_end(rec), &resource)
    };
    request.encode_to_vec()
}

/// Whether the recording's samples are the table's: as many (a table counts a counter's own
/// sample as one or not, as it was built), and some.
fn holds_table(rec: &Recording, table: &StackTable) -> bool {
    let total = table.total_samples();
    let counted: u64 = rec.samples.iter().map(|s| s.count()).sum();
    let repeats: u64 = rec.samples.iter().map(|s| s.repeats()).sum();
    !rec.samples.is_empty() && (counted == total || repeats == total)
}
