//! Native unwind tables built from a library's DWARF call-frame information, off the signal
//! path, for `hpm_capture::native::NativeTables`.
//!
//! SKELETON (issue 55): the builder's signature; the parsing comes with the native-unwinding
//! work.

use hpm_capture::native::LibTable;

use crate::symbols::Mapping;

/// The table of the executable mapping `m` of a library (its file read from `m.path`):
/// rows for every pc its `.eh_frame` (or `.debug_frame`) covers.
pub fn table_for(m: &Mapping) -> Result<LibTable, String> {
    Err(format!("{}: unwind tables not built yet", m.path))
}
