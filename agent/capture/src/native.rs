//! Native frames unwound in the signal handler: the caller of a frame in a native library
//! (libjvm.so, libc, a JNI library) from tables built off the signal path out of the
//! library's DWARF call-frame information (`.eh_frame`, `.debug_frame`), or from the frame
//! pointer where no table covers the pc.
//!
//! SKELETON (issue 55): the types and the step the walker calls are fixed here; the tables'
//! builder, the registry's publication and the CFA rules are filled in by the native-unwinding
//! work. Today's `step` follows frame pointers only.

/// How a row finds the canonical frame address (CFA: the caller's stack pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cfa {
    /// CFA = rsp + `cfa_off`.
    Sp,
    /// CFA = rbp + `cfa_off`.
    Fp,
    /// A PLT entry's expression: rsp + 8, or rsp + 16 past the entry's `push`.
    Plt,
    /// The return address is undefined here: the bottom of the stack (a thread's entry).
    Bottom,
}

/// One row of a library's unwind table: applies from `pc` (an offset from the library's
/// load bias) up to the next row's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub pc: u32,
    pub cfa: Cfa,
    pub cfa_off: i32,
    /// Where the caller's rbp was saved: CFA + `fp_off`; 0: rbp still holds it.
    pub fp_off: i16,
}

/// One library's table: `rows` sorted by `pc`, covering `[start, end)` (absolute addresses of
/// its executable mapping), `bias` added to a row's pc gives its absolute address.
#[derive(Debug)]
pub struct LibTable {
    pub start: u64,
    pub end: u64,
    pub bias: u64,
    pub rows: Box<[Row]>,
}

/// Why a native step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeStop {
    /// The thread's entry: the table says there is no caller.
    Bottom,
    /// No table covers the pc and no frame pointer led on.
    NoTable,
    /// A word the rule needed is not on the stack, or the caller's frame is not above.
    Lost,
}

/// The libraries' tables the handler looks pcs up in. Filled off the signal path; read by
/// handlers with no lock and no allocation.
#[derive(Default)]
pub struct NativeTables {
    _private: (),
}

/// Libraries the tables hold at most (a further one is refused, counted by the caller).
pub const MAX_LIBS: usize = 1024;

impl NativeTables {
    /// Publishes `lib` for handlers (off the signal path; one writer at a time). False when
    /// the registry is full or `lib` overlaps a library already held.
    pub fn add(&self, _lib: LibTable) -> bool {
        false
    }

    /// Whether a library's table starting at `start` is held (the rescan adds each once).
    pub fn holds(&self, _start: u64) -> bool {
        false
    }

    /// The caller of the native frame at `pc` (with `exact`, a return address: looked up at
    /// `pc - 1`, the call) whose stack pointer is `sp` and rbp `fp`: the caller's pc, sp and
    /// rbp. `word` reads a stack word, `None` outside the thread's stack. Async-signal-safe.
    pub fn step(
        &self,
        _pc: u64,
        sp: u64,
        fp: u64,
        _exact: bool,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Result<(u64, u64, u64), NativeStop> {
        // Skeleton: frame pointers only.
        if fp <= sp {
            return Err(NativeStop::NoTable);
        }
        let ret = word(fp.wrapping_add(8)).ok_or(NativeStop::Lost)?;
        let link = word(fp).ok_or(NativeStop::Lost)?;
        Ok((ret, fp + 16, link))
    }
}
