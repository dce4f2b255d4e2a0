//! What one message may make, in proportion to its bytes: every frame, model sample and name
//! copied out of a message is taken from its budget before it is made, so a message made to
//! be multiplied (one long string named by thousands of entries, samples of a few bytes) is
//! refused with one line instead of taking the machine.

use super::{format_err, Problem};
use crate::limits::{NAME_BYTES_PER_FILE_BYTE, NAME_BYTES_SLACK};

/// Frames that a message's stacks may expand to, per byte of the message (plus one stack of
/// [`crate::limits::MAX_STACK_DEPTH`]): a location with many lines named by a stack many times
/// over would otherwise make frames as the product of the two. Real messages make about one
/// frame per byte or less.
pub const FRAMES_PER_MESSAGE_BYTE: u64 = 4;

/// Bytes of model samples (the sample and its counter values) a message may make per byte
/// of it, past [`SAMPLE_SLACK`] bytes: a model sample takes some 110 bytes and 8 a counter,
/// an OTLP sample with a value as few as 5. Real messages take 20 bytes or more per sample
/// (stack, thread attributes, value and timestamp, and as much again in the `samples` and
/// counter profiles), some 6 bytes of samples per byte.
pub const SAMPLE_BYTES_PER_MESSAGE_BYTE: u64 = 24;
pub const SAMPLE_SLACK: u64 = 1 << 20;

/// Counter values (8 bytes each) the merged samples may hold, per byte of input (past
/// [`COUNTER_VALUE_SLACK`]): every sample keeps a value for every counter of the recording,
/// so one message naming 64 counters would otherwise make every other message's samples
/// take 512 bytes more. Real fleets (8 counters at most, 20 bytes or more a sample) hold
/// under half a value per byte.
pub const COUNTER_VALUES_PER_INPUT_BYTE: u64 = 2;
pub const COUNTER_VALUE_SLACK: u64 = 1 << 20;

/// The budget of one message.
pub(super) struct Budget {
    bytes: u64,
    frames: u64,
    sample_bytes: u64,
    /// Bytes of names left to this message, and to the input as a whole.
    names: u64,
    names_total: u64,
    names_spent: u64,
}

/// Bytes of names `bytes` bytes of input may have copied out of them.
fn names_allowed(bytes: u64) -> u64 {
    bytes.saturating_mul(NAME_BYTES_PER_FILE_BYTE).saturating_add(NAME_BYTES_SLACK)
}

impl Budget {
    /// The budget of a message of `bytes` bytes, the last of `input` bytes read so far from
    /// which `names_spent` bytes of names were copied before it.
    pub(super) fn for_message(bytes: usize, input: u64, names_spent: u64) -> Budget {
        let b = bytes as u64;
        Budget {
            bytes: b,
            sample_bytes: b.saturating_mul(SAMPLE_BYTES_PER_MESSAGE_BYTE).saturating_add(SAMPLE_SLACK),
            frames: b.saturating_mul(FRAMES_PER_MESSAGE_BYTE).saturating_add(crate::limits::MAX_STACK_DEPTH as u64),
            names: names_allowed(b),
            names_total: names_allowed(input).saturating_sub(names_spent),
            names_spent: 0,
        }
    }

    /// Takes `n` frames, before they are made.
    pub(super) fn frames(&mut self, n: usize) -> Result<(), Problem> {
        self.frames = self.frames.checked_sub(n as u64).ok_or_else(|| {
            format_err(
                "its stacks expand to more frames than a message of its size holds; the file is damaged or made to \
                 exhaust memory",
            )
        })?;
        Ok(())
    }

    /// Takes a model sample of `counters` counter values, before it is made.
    pub(super) fn sample(&mut self, counters: usize) -> Result<(), Problem> {
        let cost = (std::mem::size_of::<crate::model::Sample>() + 8 * counters) as u64;
        self.sample_bytes = self.sample_bytes.checked_sub(cost).ok_or_else(|| {
            format_err(format!(
                "its {} bytes make more than {SAMPLE_BYTES_PER_MESSAGE_BYTE} bytes of samples per byte (samples of a \
                 few bytes each); the file is damaged or made to exhaust memory",
                self.bytes
            ))
        })?;
        Ok(())
    }

    /// Takes `n` bytes of names copied out of the message (methods, sample types, counters),
    /// before they are copied.
    pub(super) fn names(&mut self, n: usize) -> Result<(), Problem> {
        let n = n as u64;
        match (self.names.checked_sub(n), self.names_total.checked_sub(n)) {
            (Some(left), Some(total)) => {
                (self.names, self.names_total) = (left, total);
                self.names_spent += n;
                Ok(())
            }
            _ => Err(format_err(format!(
                "the names copied out of it (methods, sample types, counters) add up to more than \
                 {NAME_BYTES_PER_FILE_BYTE} bytes per byte of input (and 1 MiB); the file is damaged or made to \
                 exhaust memory"
            ))),
        }
    }

    /// Bytes of names this message had copied.
    pub(super) fn names_spent(&self) -> u64 {
        self.names_spent
    }
}

/// Refuses merged samples whose counter values would take more than
/// [`COUNTER_VALUES_PER_INPUT_BYTE`] per byte of `input` bytes.
pub(super) fn check_counter_values(samples: usize, counters: usize, input: u64) -> Result<(), Problem> {
    let values = (samples as u64).saturating_mul(counters as u64);
    let allowed = input.saturating_mul(COUNTER_VALUES_PER_INPUT_BYTE).saturating_add(COUNTER_VALUE_SLACK);
    if values > allowed {
        return Err(format_err(format!(
            "{samples} samples of {counters} counters each are more counter values than hpm reads from {input} bytes \
             ({COUNTER_VALUES_PER_INPUT_BYTE} per byte); the input joins profiles of many counters with many samples \
             of none: read them one by one"
        )));
    }
    Ok(())
}
