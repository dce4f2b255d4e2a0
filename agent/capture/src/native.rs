//! Native frames unwound in the signal handler: the caller of a frame in a native library
//! (libjvm.so, libc, a JNI library) from tables built off the signal path out of the
//! library's DWARF call-frame information (`hpm_resolve::unwind_tables`), or from the frame
//! pointer where no table covers the pc.
//!
//! # Publication
//!
//! [`NativeTables`] is an index of at most [`MAX_LIBS`] libraries, `(start, end, table)` in
//! fixed atomics kept sorted by `start`, under a sequence lock: the writer ([`NativeTables::add`],
//! off the signal path) makes the sequence odd, updates the index, and makes it even again; a
//! reader ([`NativeTables::step`]) reads the sequence, searches the index, and checks the
//! sequence is the same even number afterwards — if not, a writer was in the middle and the
//! step gives up (`NoTable`) rather than wait. A table, once added, is never freed (leaked):
//! a handler may hold its pointer at any time. A library mapped where another was (unloaded)
//! replaces it in the index; the old table stays allocated, no longer found. The writer
//! bounds how many tables it builds; each is at most [`MAX_ROWS`] rows of 12 bytes
//! (libjvm.so's is a few MB).

use crate::sync::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// How a row finds the canonical frame address (CFA: the caller's stack pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cfa {
    /// CFA = rsp + `cfa_off`.
    Sp,
    /// CFA = rbp + `cfa_off`.
    Fp,
    /// A PLT entry's expression: CFA = rsp + 8, + 8 more where `pc & 15 >= cfa_off` (past the
    /// entry's `push`).
    Plt,
    /// The return address is undefined here: the bottom of the stack (a thread's entry).
    Bottom,
    /// A rule the step cannot follow (a CFA expression, a return address not at CFA - 8, a pc
    /// between functions): the step refuses rather than guess.
    Refuse,
}

/// One row of a library's unwind table: applies from `pc` (an offset from the library's
/// load bias) up to the next row's. 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub pc: u32,
    pub cfa_off: i32,
    /// Where the caller's rbp was saved: CFA + `fp_off`; 0: rbp still holds it.
    pub fp_off: i16,
    pub cfa: Cfa,
}

impl Row {
    /// A row the step refuses, from `pc` on.
    pub fn refuse(pc: u32) -> Row {
        Row { pc, cfa_off: 0, fp_off: 0, cfa: Cfa::Refuse }
    }
}

/// Rows one table holds at most (96 MiB); libjvm.so has a few hundred thousand.
pub const MAX_ROWS: usize = 8 << 20;

/// One library's table: `rows` sorted by `pc`, covering `[start, end)` (absolute addresses of
/// its executable mapping), `bias` added to a row's pc gives its absolute address.
#[derive(Debug)]
pub struct LibTable {
    pub start: u64,
    pub end: u64,
    pub bias: u64,
    pub rows: Box<[Row]>,
}

impl LibTable {
    /// The row that applies at `pc` (absolute), None below the first row.
    fn row(&self, pc: u64) -> Option<&Row> {
        let rel = u32::try_from(pc.wrapping_sub(self.bias)).ok()?;
        let rows = &self.rows[..];
        if rows.first()?.pc > rel {
            return None;
        }
        // The last row at or below rel, by halving without a branch on the data (a
        // conditional move): log2(rows) steps, no mispredictions (half the cost of
        // `partition_point` on libc's table).
        let (mut base, mut size) = (0, rows.len());
        while size > 1 {
            let half = size / 2;
            base = if rows[base + half].pc <= rel { base + half } else { base };
            size -= half;
        }
        Some(&rows[base])
    }

    /// The step by `row` from the frame at `pc` with `sp` and `fp`.
    fn step(
        row: &Row,
        pc: u64,
        sp: u64,
        fp: u64,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Result<(u64, u64, u64), NativeStop> {
        let off = i64::from(row.cfa_off);
        let cfa = match row.cfa {
            Cfa::Sp => sp.checked_add_signed(off),
            Cfa::Fp => fp.checked_add_signed(off),
            Cfa::Plt => sp.checked_add(if (pc & 15) as i64 >= off { 16 } else { 8 }),
            Cfa::Bottom => return Err(NativeStop::Bottom),
            Cfa::Refuse => return Err(NativeStop::Refused),
        };
        let cfa = cfa.filter(|&c| c > sp && c.is_multiple_of(8)).ok_or(NativeStop::Lost)?;
        let ret = word(cfa - 8).ok_or(NativeStop::Lost)?;
        let caller_fp = match row.fp_off {
            0 => fp,
            o => word(cfa.checked_add_signed(i64::from(o)).ok_or(NativeStop::Lost)?).ok_or(NativeStop::Lost)?,
        };
        Ok((ret, cfa, caller_fp))
    }
}

/// Why a native step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeStop {
    /// The thread's entry: the table says there is no caller.
    Bottom,
    /// No table covers the pc and no frame pointer led on (or a table was being added).
    NoTable,
    /// The pc's library has a table, but its rule there is one the step cannot follow.
    Refused,
    /// A word the rule needed is not on the stack, or the caller's frame is not above.
    Lost,
}

/// Libraries the tables hold at most (a further one is refused, counted by the caller).
pub const MAX_LIBS: usize = if cfg!(loom) { 4 } else { 1024 };

/// One library in the index.
struct Entry {
    start: AtomicU64,
    end: AtomicU64,
    table: AtomicPtr<LibTable>,
}

impl Entry {
    fn new() -> Entry {
        Entry { start: AtomicU64::new(0), end: AtomicU64::new(0), table: AtomicPtr::new(std::ptr::null_mut()) }
    }
}

/// The libraries' tables the handler looks pcs up in. Filled off the signal path by one
/// writer at a time; read by handlers with no lock and no allocation (see the module's doc).
pub struct NativeTables {
    /// Even: the index is stable; odd: a writer is updating it.
    seq: AtomicU64,
    len: AtomicUsize,
    /// `[0, len)` sorted by start, not overlapping.
    index: Box<[Entry]>,
    /// Frame pointers only (`cstack=fp`): no table is ever added, and the rbp rule is the
    /// walker's only one.
    frame_pointers: bool,
}

impl Default for NativeTables {
    fn default() -> NativeTables {
        NativeTables {
            seq: AtomicU64::new(0),
            len: AtomicUsize::new(0),
            index: (0..MAX_LIBS).map(|_| Entry::new()).collect(),
            frame_pointers: false,
        }
    }
}

/// A library found in the index.
enum Found<'a> {
    Table(&'a LibTable),
    None,
    /// A writer was updating the index.
    Busy,
}

impl NativeTables {
    /// A registry that stays empty: steps follow frame pointers only.
    pub fn frame_pointers() -> NativeTables {
        NativeTables { frame_pointers: true, ..NativeTables::default() }
    }

    /// Whether this registry is for frame pointers only (see [`NativeTables::frame_pointers`]).
    pub fn frame_pointers_only(&self) -> bool {
        self.frame_pointers
    }

    /// Publishes `lib` for handlers: its table is leaked, never freed. Libraries held whose
    /// range `lib` overlaps (unmapped since, their addresses reused) leave the index; their
    /// tables stay allocated. Off the signal path; one writer at a time (a second concurrent
    /// writer is refused, not waited for). False when the registry is full, `lib` is empty
    /// or another writer is inside.
    pub fn add(&self, lib: LibTable) -> bool {
        if lib.start >= lib.end {
            return false;
        }
        let s = self.seq.load(Ordering::Relaxed);
        if s % 2 == 1 || self.seq.compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return false;
        }
        // Release: a reader that loads any of the stores below also sees the odd sequence.
        fence(Ordering::Release);
        let ok = self.insert(lib);
        // Release: the index (and the table it points to) before the even sequence.
        self.seq.store(s + 2, Ordering::Release);
        ok
    }

    /// Inserts `lib` at its place in the index, in place of the entries it overlaps (the
    /// writer, inside the odd sequence).
    fn insert(&self, lib: LibTable) -> bool {
        let len = self.len.load(Ordering::Relaxed);
        // The entries lib overlaps: [at, past), contiguous (sorted, not overlapping).
        let at = (0..len).find(|&i| self.index[i].end.load(Ordering::Relaxed) > lib.start).unwrap_or(len);
        let past = (at..len).find(|&i| self.index[i].start.load(Ordering::Relaxed) >= lib.end).unwrap_or(len);
        let new_len = len - (past - at) + 1;
        if new_len > MAX_LIBS {
            return false;
        }
        let copy = |from: usize, to: usize| {
            let (from, to) = (&self.index[from], &self.index[to]);
            to.start.store(from.start.load(Ordering::Relaxed), Ordering::Relaxed);
            to.end.store(from.end.load(Ordering::Relaxed), Ordering::Relaxed);
            to.table.store(from.table.load(Ordering::Relaxed), Ordering::Relaxed);
        };
        // The entries from `past` on move to `at + 1` on: up when lib replaces none, down
        // when it replaces more than one.
        if past == at {
            (at..len).rev().for_each(|i| copy(i, i + 1));
        } else {
            (past..len).for_each(|i| copy(i, i - (past - at) + 1));
        }
        let (start, end) = (lib.start, lib.end);
        let table = Box::into_raw(Box::new(lib));
        let e = &self.index[at];
        e.start.store(start, Ordering::Relaxed);
        e.end.store(end, Ordering::Relaxed);
        e.table.store(table, Ordering::Relaxed);
        self.len.store(new_len, Ordering::Relaxed);
        true
    }

    /// Whether a library held (with a table) covers `pc`: a return address elsewhere, outside
    /// the code cache too, is not believed. False while a writer is inside. Async-signal-safe.
    pub fn covers(&self, pc: u64) -> bool {
        matches!(self.find(pc), Found::Table(_))
    }

    /// Libraries held.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table whose library holds `pc`. Async-signal-safe: at most log2(MAX_LIBS) + 1
    /// probes, no waiting.
    fn find(&self, pc: u64) -> Found<'_> {
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 % 2 == 1 {
            return Found::Busy;
        }
        let len = self.len.load(Ordering::Relaxed).min(MAX_LIBS);
        // The last entry starting at or below pc.
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.index[mid].start.load(Ordering::Relaxed) <= pc {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let hit = lo
            .checked_sub(1)
            .map(|i| &self.index[i])
            .and_then(|e| (pc < e.end.load(Ordering::Relaxed)).then(|| e.table.load(Ordering::Relaxed)));
        // Acquire: the loads above before the sequence is read again; had any of them seen a
        // writer's store, this load sees its odd (or a later) sequence.
        fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != s1 {
            return Found::Busy;
        }
        match hit {
            // SAFETY: a pointer read under an unchanged even sequence was stored by `insert`
            // from `Box::into_raw` before the sequence's release store the first load
            // acquired, so the table is initialised; tables are never freed.
            Some(t) if !t.is_null() => Found::Table(unsafe { &*t }),
            _ => Found::None,
        }
    }

    /// The caller of the native frame at `pc` (with `exact`, a return address: looked up at
    /// `pc - 1`, the call) whose stack pointer is `sp` and rbp `fp`: the caller's pc, sp and
    /// rbp. `word` reads a stack word, `None` outside the thread's stack. Where no table
    /// holds pc: the frame-pointer rule, if rbp is above sp. Async-signal-safe: no
    /// allocation, no lock, two binary searches and at most two reads through `word`.
    pub fn step(
        &self,
        pc: u64,
        sp: u64,
        fp: u64,
        exact: bool,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Result<(u64, u64, u64), NativeStop> {
        self.step_by(pc, sp, fp, exact, true, word)
    }

    /// As [`NativeTables::step`], but where no table holds pc the frame-pointer rule only
    /// with `frame_pointer` (else `NoTable`): the walker prefers an anchor to it.
    pub fn step_by(
        &self,
        pc: u64,
        sp: u64,
        fp: u64,
        exact: bool,
        frame_pointer: bool,
        word: &impl Fn(u64) -> Option<u64>,
    ) -> Result<(u64, u64, u64), NativeStop> {
        let at = if exact { pc.wrapping_sub(1) } else { pc };
        match self.find(at) {
            Found::Table(t) => {
                let row = t.row(at).ok_or(NativeStop::Refused)?;
                LibTable::step(row, pc, sp, fp, word)
            }
            Found::Busy => Err(NativeStop::NoTable),
            Found::None => {
                if !frame_pointer || fp <= sp || !fp.is_multiple_of(8) {
                    return Err(NativeStop::NoTable);
                }
                let ret = word(fp.wrapping_add(8)).ok_or(NativeStop::Lost)?;
                let link = word(fp).ok_or(NativeStop::Lost)?;
                Ok((ret, fp.checked_add(16).ok_or(NativeStop::Lost)?, link))
            }
        }
    }
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
