//! What one message may make, in proportion to its bytes: every frame and name copied out of a
//! message is taken from its budget before it is made, so a message made to
//! be multiplied (one long string named by thousands of entries) is
//! refused with one line instead of taking the machine.

use super::{format_err, Problem};
use crate::limits::{NAME_BYTES_PER_FILE_BYTE, NAME_BYTES_SLACK};

/// Frames that a message's stacks may expand to, per byte of the message (plus one stack of
/// [`crate::limits::MAX_STACK_DEPTH`]): a location with many lines named by a stack many times
/// over would otherwise make frames as the product of the two. Real messages make about one
/// frame per byte or less.
pub const FRAMES_PER_MESSAGE_BYTE: u64 = 4;

/// The budget of one message.
pub(super) struct Budget {
    frames: u64,
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
