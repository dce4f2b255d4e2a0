//! The report's thread table: per thread its samples, share, counter shares and CPI, and, for
//! recordings whose samples carry a thread state (wall-clock sampling), its share per state.

use std::fmt::Write;

use crate::hash::IntMap;
use crate::model::{Recording, ThreadIdx};

use super::cpi_counters;
use crate::text::{clip, group, pct, ratio};

/// One thread's samples and sums.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadRow {
    pub name: String,
    /// Kernel thread id (0 when unknown).
    pub os_tid: u32,
    /// A Java thread (not one of the VM's own); false for a thread the recording does not list.
    pub is_java: bool,
    /// A virtual thread, or the row standing for several ([`crate::vthreads`]).
    pub is_virtual: bool,
    pub samples: u64,
    /// What its samples weigh (the JVM's events: bytes or ns waited).
    pub weight: u64,
    /// Counter sums, aligned with `Recording::counters`.
    pub counters: Vec<u64>,
    /// Samples per thread state, aligned with `Recording::states`; empty when no sample of the
    /// thread has a state.
    pub states: Vec<u64>,
}

/// Per-thread rows of the recording's samples, most samples first (then by name and id). One
/// pass over the samples; a sample naming a thread the recording does not list gets a row of
/// its own, `[thread #N]`.
pub fn thread_rows(rec: &Recording) -> Vec<ThreadRow> {
    let mut index: IntMap<ThreadIdx, usize> = IntMap::default();
    let mut rows: Vec<ThreadRow> = Vec::new();
    let (k, nstates) = (rec.counters.len(), rec.states.len());
    for s in &rec.samples {
        let i = *index.entry(s.thread).or_insert_with(|| {
            let (name, os_tid, is_java, is_virtual) = match rec.threads.get(s.thread.0 as usize) {
                Some(t) => (t.shown_name().into_owned(), t.os_tid, t.is_java, t.is_virtual),
                None => (format!("[thread #{}]", s.thread), 0, false, false),
            };
            let counters = vec![0; k];
            let states = Vec::new();
            rows.push(ThreadRow { name, os_tid, is_java, is_virtual, samples: 0, weight: 0, counters, states });
            rows.len() - 1
        });
        let row = &mut rows[i];
        row.samples += s.count();
        row.weight = row.weight.saturating_add(s.weight);
        for (sum, v) in row.counters.iter_mut().zip(&s.counters) {
            *sum = sum.saturating_add(*v);
        }
        if let Some(st) = s.state.filter(|&st| (st as usize) < nstates) {
            if row.states.is_empty() {
                row.states = vec![0; nstates];
            }
            row.states[st as usize] += 1;
        }
    }
    sort_rows(&mut rows);
    rows
}

/// Which of a recording's threads have samples, for the `threads:` line of the report header
/// and the agent's summary (`8 sampled (4 Java, 4 VM) of 23 seen by the session`). The agent's
/// tree feed marks each sample's thread as it drains samples; a recording read from a file
/// gives its thread rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampledThreads {
    /// By thread index; never longer than the recording's thread list.
    marked: Vec<bool>,
}

impl SampledThreads {
    /// Marks `t` as having samples; an index the recording does not list is left out, so the
    /// marks never outgrow the thread list.
    pub fn mark(&mut self, t: ThreadIdx, rec: &Recording) {
        let i = t.0 as usize;
        if i >= rec.threads.len() {
            return;
        }
        if i >= self.marked.len() {
            self.marked.resize(i + 1, false);
        }
        self.marked[i] = true;
    }

    /// The marked platform threads: (Java, VM).
    pub fn java_and_vm(&self, rec: &Recording) -> (u64, u64) {
        let mut n = (0, 0);
        for (t, _) in rec.threads.iter().zip(&self.marked).filter(|(t, m)| **m && !t.is_virtual) {
            if t.is_java {
                n.0 += 1;
            } else {
                n.1 += 1;
            }
        }
        n
    }

    /// The marked virtual threads, and whether the entry standing for those past the bound is
    /// among them ([`crate::vthreads::MAX_VIRTUAL_THREADS`]).
    pub fn virtual_threads(&self, rec: &Recording) -> (u64, bool) {
        let marked = || rec.threads.iter().zip(&self.marked).filter(|(t, m)| **m && t.is_virtual);
        (marked().count() as u64, marked().any(|(t, _)| t.is_virtual_group()))
    }

    /// The threads of `rec`'s samples, marked.
    pub fn of(rec: &Recording) -> SampledThreads {
        let mut s = SampledThreads::default();
        for x in &rec.samples {
            s.mark(x.thread, rec);
        }
        s
    }
}

/// Longest thread name shown; longer ones end in `..`.
const NAME_WIDTH: usize = 60;

/// The rows as [`thread_table`] counts them by weight
/// ([`crate::cct::Measure::Weight`]): each row's samples are its weight, heaviest first.
pub(crate) fn by_weight(rows: &[ThreadRow]) -> Vec<ThreadRow> {
    let mut rows: Vec<ThreadRow> = rows.iter().map(|r| ThreadRow { samples: r.weight, ..r.clone() }).collect();
    sort_rows(&mut rows);
    rows
}

/// Most samples first, then by name and kernel id.
fn sort_rows(rows: &mut [ThreadRow]) {
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.name.cmp(&b.name)).then(a.os_tid.cmp(&b.os_tid)));
}

/// Appends the `== Threads ==` table: the `top` threads with most samples, then one line for
/// the rest. `counters` and `states` name the rows' columns; `counted` the first (`samples`,
/// or `weight` for rows [`by_weight`]).
pub(crate) fn thread_table(
    out: &mut String,
    rows: &[ThreadRow],
    counters: &[String],
    states: &[String],
    top: usize,
    counted: &str,
) {
    let _ = writeln!(out, "\n== Threads ==");
    let total: u64 = rows.iter().map(|r| r.samples).sum();
    if total == 0 {
        out.push_str("(no thread information in this profile)\n");
        return;
    }
    let cpi = cpi_counters(counters);
    let sums: Vec<u64> = (0..counters.len())
        .map(|c| rows.iter().map(|r| r.counters.get(c).copied().unwrap_or(0)).fold(0, u64::saturating_add))
        .collect();
    // A state column only for states some thread was seen in.
    let shown_states: Vec<usize> =
        (0..states.len()).filter(|&s| rows.iter().any(|r| r.states.get(s).is_some_and(|&n| n > 0))).collect();
    let cw: Vec<usize> = counters.iter().map(|c| (c.len() + 1).max(8)).collect();
    // JFR's names without their common prefix: `STATE_SLEEPING` heads a column `sleeping%`.
    let label = |s: usize| states[s].strip_prefix("STATE_").unwrap_or(&states[s]).to_ascii_lowercase();
    let sw: Vec<usize> = shown_states.iter().map(|&s| (label(s).len() + 1).max(7)).collect();
    let n = if counted == "samples" { 10 } else { 16 };
    let mut h = format!("{:>n$} {:>8}", counted, "%");
    for (&s, w) in shown_states.iter().zip(&sw) {
        let _ = write!(h, " {:>w$}", format!("{}%", label(s)));
    }
    for (c, w) in counters.iter().zip(&cw) {
        let _ = write!(h, " {:>w$}", format!("{c}%"));
    }
    if cpi.is_some() {
        let _ = write!(h, " {:>6}", "CPI");
    }
    let _ = writeln!(out, "{h} {:>8}  thread", "tid");
    for r in rows.iter().take(top) {
        let mut l = format!("{:>n$} {:>8}", group(r.samples), pct(r.samples, total));
        for (&s, w) in shown_states.iter().zip(&sw) {
            let _ = write!(l, " {:>w$}", pct(r.states.get(s).copied().unwrap_or(0), r.samples));
        }
        for (c, w) in cw.iter().enumerate() {
            let _ = write!(l, " {:>w$}", pct(r.counters.get(c).copied().unwrap_or(0), sums[c]));
        }
        if let Some((c, i)) = cpi {
            let _ = write!(l, " {:>6}", ratio(r.counters[c], r.counters[i]));
        }
        let tid = if r.os_tid == 0 { "-".to_string() } else { r.os_tid.to_string() };
        let _ = writeln!(out, "{l} {tid:>8}  {}", clip(&r.name, NAME_WIDTH));
    }
    if rows.len() > top {
        let rest: u64 = rows[top..].iter().map(|r| r.samples).sum();
        let _ = writeln!(
            out,
            "{:>n$} {:>8}  ({} more threads)",
            group(rest),
            pct(rest, total),
            group((rows.len() - top) as u64)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Frame, FrameKind, MethodInfo, Sample, ThreadInfo, VmComponent};

    fn rec(states: &[&str]) -> Recording {
        let mut rec = Recording {
            counters: vec!["cycles".into(), "instructions".into()],
            states: states.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        rec.add_thread(ThreadInfo {
            os_tid: 10,
            java_id: Some(1),
            name: "main".into(),
            is_java: true,
            is_virtual: false,
        });
        rec.add_thread(ThreadInfo {
            os_tid: 11,
            java_id: None,
            name: "GC Thread#0".into(),
            is_java: false,
            is_virtual: false,
        });
        let m = rec.methods.intern(MethodInfo::java("A", "f", "()V"));
        let stack: crate::model::Stack =
            vec![Frame { method: m, bci: 0, line: 1, kind: FrameKind::JitCompiled }].into();
        let mut push = |thread, n, counters: [u64; 2], state| {
            for _ in 0..n {
                rec.samples.push(Sample {
                    carrier: None,
                    time: 0,
                    thread,
                    stack: stack.clone(),
                    truncated: false,
                    weight: 1,
                    repeat: 1,
                    counters: counters.to_vec(),
                    data_addr: None,
                    data: None,
                    ip: 0,
                    component: VmComponent::Java,
                    state,
                });
            }
        };
        push(ThreadIdx(0), 6, [300, 100], None);
        push(ThreadIdx(1), 3, [100, 100], None);
        push(ThreadIdx(7), 1, [0, 0], None);
        rec
    }

    #[test]
    fn rows_count_samples_and_counters_per_thread() {
        let rows = thread_rows(&rec(&[]));
        let got: Vec<(&str, u32, u64, Vec<u64>)> =
            rows.iter().map(|r| (r.name.as_str(), r.os_tid, r.samples, r.counters.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("main", 10, 6, vec![1800, 600]),
                ("GC Thread#0", 11, 3, vec![300, 300]),
                ("[thread #7]", 0, 1, vec![0, 0])
            ]
        );
        assert!(rows.iter().all(|r| r.states.is_empty()));
    }

    #[test]
    fn table_shows_shares_cpi_and_the_rest() {
        let r = rec(&[]);
        let mut out = String::new();
        thread_table(&mut out, &thread_rows(&r), &r.counters, &r.states, 2, "samples");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], "== Threads ==");
        assert_eq!(lines[2], "   samples        %  cycles% instructions%    CPI      tid  thread");
        assert_eq!(lines[3], "         6   60.00%   85.71%        66.67%   3.00       10  main");
        assert_eq!(lines[4], "         3   30.00%   14.29%        33.33%   1.00       11  GC Thread#0");
        assert_eq!(lines[5], "         1   10.00%  (1 more threads)");
        assert_eq!(lines.len(), 6);
        // No state column: no sample has a state.
        assert!(!out.contains("RUNNABLE"));
    }

    #[test]
    fn states_get_a_column_each_when_samples_carry_them() {
        let mut r = rec(&["STATE_RUNNABLE", "STATE_WAITING", "STATE_BLOCKED"]);
        for (i, s) in r.samples.iter_mut().enumerate() {
            s.state = Some(if s.thread == ThreadIdx(0) && i < 3 { 1 } else { 0 });
        }
        let mut out = String::new();
        thread_table(&mut out, &thread_rows(&r), &[], &r.states, 10, "samples");
        let lines: Vec<&str> = out.lines().collect();
        // BLOCKED was never seen: no column.
        // Columns named without JFR's `STATE_` prefix, in lower case.
        assert_eq!(lines[2], "   samples        % runnable% waiting%      tid  thread");
        assert_eq!(lines[3], "         6   60.00%    50.00%   50.00%       10  main");
        assert_eq!(lines[4], "         3   30.00%   100.00%    0.00%       11  GC Thread#0");
    }

    /// The JVM's events (`--event lock`) rank threads by what they weigh: GC Thread#0's three
    /// samples outweigh main's six once they weigh ten times as much each.
    #[test]
    fn rows_by_weight_rank_and_share_by_weight() {
        let mut r = rec(&[]);
        for s in r.samples.iter_mut() {
            s.weight = if s.thread == ThreadIdx(1) { 1_000 } else { 100 };
        }
        let rows = by_weight(&thread_rows(&r));
        let mut out = String::new();
        thread_table(&mut out, &rows, &[], &[], 2, "weight");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[2], "          weight        %      tid  thread");
        assert_eq!(lines[3], "           3,000   81.08%       11  GC Thread#0", "{out}");
        assert_eq!(lines[4], "             600   16.22%       10  main", "{out}");
    }

    #[test]
    fn no_samples_no_rows() {
        let mut out = String::new();
        thread_table(&mut out, &thread_rows(&Recording::default()), &[], &[], 5, "samples");
        assert!(out.contains("(no thread information in this profile)"), "{out}");
    }
}
