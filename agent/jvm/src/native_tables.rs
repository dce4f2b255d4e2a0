//! The process's native unwind tables (`cstack=`): one registry the signal handlers read
//! (`hpm_capture::native::NativeTables`, lock-free, never freed), filled off the signal path
//! with a table for every executable file mapping of `/proc/self/maps`
//! (`hpm_resolve::unwind_tables::table_for`) when a session starts, and again, at most once a
//! second, for the mappings the processor's symbolizer knows (it reads the maps again when the
//! dynamic loader's counts changed: `Symbolizer::refresh_unless`), so a library that
//! `System.loadLibrary` loads mid-run gets its table within a second or two. A mapping is
//! known by its range, offset, device and inode: a library mapped where an unloaded one was
//! gets its own table, which replaces the old one in the registry. What it built, how long it
//! took and what it could not build, by reason, make the summary's one line.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use hpm_capture::native::{NativeTables, Row, MAX_LIBS};
use hpm_resolve::symbols::Mapping;

use crate::options::CStack;
use crate::signal::SignalStats;

/// The tables `cstack=dwarf` walks with.
static TABLES: OnceLock<NativeTables> = OnceLock::new();
/// Never filled: `cstack=fp` steps by the frame pointer alone.
static FRAME_POINTERS: OnceLock<NativeTables> = OnceLock::new();
/// What was built, and the scans' state.
static BUILT: Mutex<Built> = Mutex::new(Built::new());

/// The processor looks for new libraries at most this often.
const RESCAN_NS: u64 = 1_000_000_000;
/// Reasons a table could not be built kept apart in the summary (the rest are "other").
const MAX_REASONS: usize = 8;
/// Tables built at most in the process: each stays allocated (a handler may be reading it)
/// when a library mapped over its library's addresses replaces it.
const MAX_BUILDS: u64 = 2 * MAX_LIBS as u64;
/// Mappings whose table could not be built, remembered so they are not tried again.
const MAX_REFUSED: usize = 4 * MAX_LIBS;

/// A mapping as its maps line names it: start, end, offset, device, inode.
type Key = (u64, u64, u64, u64, u64);

fn key(m: &Mapping) -> Key {
    (m.start, m.end, m.offset, m.dev, m.inode)
}

/// The registry's record of its builds (off the signal path).
#[derive(Debug, Default)]
pub struct Built {
    /// The session's mode: scans run only with `Dwarf`.
    mode: Option<CStack>,
    pub libraries: u64,
    pub bytes: u64,
    pub build_ns: u64,
    /// Libraries without a table, by reason (at most [`MAX_REASONS`], then "other").
    pub failed: Vec<(String, u64)>,
    /// The mappings whose tables the registry holds now (as its index: none overlapping).
    indexed: Vec<Key>,
    /// Mappings whose table could not be built (at most [`MAX_REFUSED`]).
    refused: Option<HashSet<Key>>,
    /// Tables built (at most [`MAX_BUILDS`]).
    builds: u64,
    last_check: u64,
}

impl Built {
    const fn new() -> Built {
        Built {
            mode: None,
            libraries: 0,
            bytes: 0,
            build_ns: 0,
            failed: Vec::new(),
            indexed: Vec::new(),
            refused: None,
            builds: 0,
            last_check: 0,
        }
    }

    fn fail(&mut self, reason: String) {
        let reason = if self.failed.len() >= MAX_REASONS && !self.failed.iter().any(|(r, _)| *r == reason) {
            "other".to_string()
        } else {
            reason
        };
        match self.failed.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.failed.push((reason, 1)),
        }
    }

    /// Whether the mapping `m` needs a table: none built for it, held or refused.
    fn wants(&self, m: &Mapping) -> bool {
        let k = key(m);
        !self.indexed.contains(&k) && !self.refused.as_ref().is_some_and(|r| r.contains(&k))
    }

    /// `m`'s table could not be built (or held) for `reason`: counted, and not tried again.
    fn refuse(&mut self, m: &Mapping, reason: String) {
        self.fail(reason);
        let refused = self.refused.get_or_insert_with(HashSet::new);
        if refused.len() < MAX_REFUSED {
            refused.insert(key(m));
        }
    }

    /// `m`'s table is in the registry, in place of those whose ranges it overlaps.
    fn held(&mut self, m: &Mapping, bytes: u64) {
        self.indexed.retain(|k| k.1 <= m.start || k.0 >= m.end);
        self.indexed.push(key(m));
        self.libraries += 1;
        self.bytes += bytes;
    }
}

fn built() -> std::sync::MutexGuard<'static, Built> {
    BUILT.lock().unwrap_or_else(|p| p.into_inner())
}

/// The tables a walk in the signal handler uses for `mode` (made here, off the signal path:
/// handlers only read them); `None` for `cstack=no`.
pub fn for_walks(mode: CStack) -> Option<&'static NativeTables> {
    match mode {
        CStack::Dwarf => Some(TABLES.get_or_init(NativeTables::default)),
        CStack::Fp => Some(FRAME_POINTERS.get_or_init(NativeTables::frame_pointers)),
        CStack::No => None,
    }
}

/// A session starts walking native frames with `mode`: with `Dwarf`, the tables of every
/// library mapped now are built (those built by an earlier session are kept).
pub fn start(mode: CStack) {
    built().mode = Some(mode);
    if mode == CStack::Dwarf {
        if let Ok(text) = std::fs::read_to_string("/proc/self/maps") {
            add_new(&hpm_resolve::symbols::parse_maps(&text));
        }
    }
}

/// Whether the processor's round should look for new libraries now: with `cstack=dwarf`, at
/// most once a second.
pub fn due() -> bool {
    let now = crate::os::now_ticks();
    let mut b = built();
    if b.mode != Some(CStack::Dwarf) || now.saturating_sub(b.last_check) < RESCAN_NS {
        return false;
    }
    b.last_check = now;
    true
}

/// Builds the table of each executable file mapping of `mappings` that has none (and was not
/// refused).
pub fn add_new(mappings: &[Mapping]) {
    let tables = TABLES.get_or_init(NativeTables::default);
    let todo: Vec<&Mapping> = {
        let b = built();
        mappings
            .iter()
            .filter(|m| {
                m.exec && m.path.starts_with('/') && !m.path.ends_with(hpm_resolve::symbols::DELETED) && b.wants(m)
            })
            .collect()
    };
    for m in todo {
        if built().builds >= MAX_BUILDS {
            built().refuse(m, format!("over {MAX_BUILDS} tables built in this process"));
            continue;
        }
        let start = crate::os::now_ticks();
        let table = hpm_resolve::unwind_tables::table_for(m);
        let ns = crate::os::now_ticks().saturating_sub(start);
        let mut b = built();
        b.build_ns += ns;
        match table {
            Ok(t) => {
                b.builds += 1;
                let bytes = (t.rows.len() * std::mem::size_of::<Row>()) as u64;
                if !tables.add(t) {
                    b.refuse(m, format!("not held (at most {MAX_LIBS} libraries)"));
                    continue;
                }
                b.held(m, bytes);
            }
            Err(e) => b.refuse(m, reason(&m.path, &e)),
        }
    }
}

/// A builder's error without the file's path (the summary counts by reason).
fn reason(path: &str, e: &str) -> String {
    let r = e.strip_prefix(path).map_or(e, |r| r.trim_start_matches([':', ' ']));
    r.chars().take(80).collect()
}

/// What the handlers' native walks did (`SignalStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Walks {
    pub walks: u64,
    pub no_table: u64,
    pub lost: u64,
    pub fell_back: u64,
}

impl Walks {
    pub fn from_stats(s: &SignalStats) -> Walks {
        let load = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
        Walks {
            walks: load(&s.native_walks),
            no_table: load(&s.native_no_table),
            lost: load(&s.native_lost),
            fell_back: load(&s.native_fell_back),
        }
    }
}

/// The summary's line on native stacks, when a session walked them.
pub fn line(stats: &SignalStats) -> Option<String> {
    let b = built();
    summary(b.mode?, &b, Walks::from_stats(stats))
}

/// The line for `mode`, what was built and what the walks did; None when nothing walked.
pub fn summary(mode: CStack, b: &Built, w: Walks) -> Option<String> {
    if mode == CStack::No || w.walks == 0 {
        return None;
    }
    let pct = |n: u64| 100.0 * n as f64 / w.walks as f64;
    let stopped = format!(
        "native unwinding stopped: no table {:.1}%, lost {:.1}% of {} walks ({:.1}% then led on to Java by an anchor)",
        pct(w.no_table),
        pct(w.lost),
        w.walks,
        pct(w.fell_back)
    );
    if mode == CStack::Fp {
        return Some(format!("native stacks: fp (frame pointers only); {stopped}"));
    }
    let mut s = format!(
        "native stacks: dwarf, {} libraries ({:.1} MiB of tables, built in {} ms)",
        b.libraries,
        b.bytes as f64 / (1024.0 * 1024.0),
        b.build_ns / 1_000_000
    );
    if !b.failed.is_empty() {
        let n: u64 = b.failed.iter().map(|(_, n)| n).sum();
        let why: Vec<String> = b.failed.iter().map(|(r, n)| format!("{r}: {n}")).collect();
        s.push_str(&format!(", {n} without a table ({})", why.join(", ")));
    }
    Some(format!("{s}; {stopped}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_was_built_and_where_unwinding_stopped() {
        let mut b = Built { libraries: 41, bytes: 10 * 1024 * 1024, build_ns: 140_000_000, ..Built::default() };
        let w = Walks { walks: 1000, no_table: 3, lost: 1, fell_back: 2 };
        assert_eq!(
            summary(CStack::Dwarf, &b, w).unwrap(),
            "native stacks: dwarf, 41 libraries (10.0 MiB of tables, built in 140 ms); native unwinding stopped: no \
             table 0.3%, lost 0.1% of 1000 walks (0.2% then led on to Java by an anchor)"
        );
        b.fail(reason("/lib/x.so", "/lib/x.so: no .eh_frame"));
        b.fail(reason("/lib/y.so", "/lib/y.so: no .eh_frame"));
        let s = summary(CStack::Dwarf, &b, w).unwrap();
        assert!(
            s.contains("41 libraries (10.0 MiB of tables, built in 140 ms), 2 without a table (no .eh_frame: 2);"),
            "{s}"
        );
        assert!(summary(CStack::Fp, &b, w).unwrap().starts_with("native stacks: fp (frame pointers only); "));
        assert_eq!(summary(CStack::No, &b, w), None);
        assert_eq!(summary(CStack::Dwarf, &b, Walks::default()), None, "nothing walked");
    }

    #[test]
    fn a_library_mapped_where_another_was_wants_its_own_table() {
        let m = |start, end, inode| Mapping {
            start,
            end,
            offset: 0x1000,
            exec: true,
            path: "/lib/x.so".into(),
            dev: 0xfe00,
            inode,
        };
        let mut b = Built::default();
        let (x, y) = (m(0x1000, 0x9000, 7), m(0x1000, 0x9000, 8));
        assert!(b.wants(&x));
        b.held(&x, 10);
        assert!(!b.wants(&x) && b.wants(&y), "same range, another file");
        b.held(&y, 10);
        assert_eq!(b.indexed, vec![key(&y)]);
        assert!(b.wants(&x), "x again where y was: its table again");
        b.held(&m(0x8000, 0xa000, 9), 10);
        assert_eq!(b.indexed, vec![key(&m(0x8000, 0xa000, 9))], "overlapping y: y's entry gone");
        let z = m(0x20_0000, 0x20_1000, 10);
        b.refuse(&z, "no .eh_frame".into());
        assert!(!b.wants(&z), "refused once, not tried again");
        assert_eq!(b.failed, vec![("no .eh_frame".to_string(), 1)]);
    }

    #[test]
    fn failure_reasons_are_bounded() {
        let mut b = Built::default();
        for i in 0..100 {
            b.fail(format!("reason {i}"));
        }
        assert_eq!(b.failed.len(), MAX_REASONS + 1);
        assert_eq!(b.failed.last().unwrap(), &("other".to_string(), 100 - MAX_REASONS as u64));
    }
}
