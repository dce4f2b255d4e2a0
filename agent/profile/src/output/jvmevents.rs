//! Allocation and lock profiles from the JVM's events (`alloc`, `lock`; [`JvmEvent`]): the
//! report's tables by class and by site, and the events as samples for flame graphs and every
//! other output (`--event alloc|lock|monitor|park|pinned`), weighted by bytes or nanoseconds
//! waited.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::model::{EventInfo, Frame, FrameKind, JvmEvent, JvmEventKind, MethodInfo, PeriodUnit, Recording, Sample};
use crate::output::idle::{waits_for_work, IdleJudge, IDLE_ROW};

/// Which JVM events a reading command looks at instead of the CPU samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventSel {
    Alloc,
    Monitor,
    Park,
    /// Monitor enters and parks.
    Lock,
    /// Virtual threads' parks on their carriers (each is a park of `Park` too).
    Pinned,
}

impl EventSel {
    pub fn parse(s: &str) -> Result<EventSel, String> {
        match s {
            "alloc" => Ok(EventSel::Alloc),
            "monitor" => Ok(EventSel::Monitor),
            "park" => Ok(EventSel::Park),
            "lock" => Ok(EventSel::Lock),
            "pinned" => Ok(EventSel::Pinned),
            other => Err(format!("--event {other}: expected alloc, lock, monitor, park or pinned")),
        }
    }

    pub fn matches(self, k: JvmEventKind) -> bool {
        match self {
            EventSel::Alloc => k == JvmEventKind::Allocation,
            EventSel::Monitor => k == JvmEventKind::MonitorEnter,
            EventSel::Park => k == JvmEventKind::ThreadPark,
            // A pinned park is a park too: counted once.
            EventSel::Lock => matches!(k, JvmEventKind::MonitorEnter | JvmEventKind::ThreadPark),
            EventSel::Pinned => k == JvmEventKind::VirtualThreadPinned,
        }
    }

    /// What the events weigh: bytes allocated, or ns waited.
    pub fn unit(self) -> crate::text::Unit {
        match self {
            EventSel::Alloc => crate::text::Unit::Bytes,
            _ => crate::text::Unit::NsWaited,
        }
    }

    /// The selections a recording has events for, of `alloc` and `lock` (what a profile of
    /// its events is made of when it has no samples).
    pub fn present(rec: &Recording) -> Vec<EventSel> {
        [EventSel::Alloc, EventSel::Lock].into_iter().filter(|s| rec.events.iter().any(|e| s.matches(e.kind))).collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            EventSel::Alloc => "alloc",
            EventSel::Monitor => "monitor",
            EventSel::Park => "park",
            EventSel::Lock => "lock",
            EventSel::Pinned => "pinned",
        }
    }
}

/// An event as a sample: its stack under a leaf frame naming the class (the allocated
/// object's, the monitor's, the park blocker's, or `[no blocker]`; an idle pool thread's park,
/// [`IDLE_ROW`]), weighted by bytes or ns.
pub fn as_sample(rec: &mut Recording, ev: &JvmEvent) -> Sample {
    let idle = waits_for_work(rec, ev);
    let method = leaf_method(rec, ev, idle);
    sample_in(ev, method)
}

/// The method standing for an event's class (its name shared with the event), or for the idle
/// row.
fn leaf_method(rec: &mut Recording, ev: &JvmEvent, idle: bool) -> crate::model::MethodIdx {
    let leaf: std::sync::Arc<str> = match (&ev.class, ev.kind) {
        _ if idle => IDLE_ROW.into(),
        (Some(c), _) => c.clone(),
        (None, JvmEventKind::ThreadPark) => "[no blocker]".into(),
        (None, _) => "[unknown class]".into(),
    };
    rec.methods.intern(MethodInfo { name: leaf, ..Default::default() })
}

/// [`as_sample`] with the class's method known.
fn sample_in(ev: &JvmEvent, method: crate::model::MethodIdx) -> Sample {
    let mut frames = Vec::with_capacity(ev.stack.len() + 1);
    frames.push(Frame { method, bci: -1, line: -1, kind: FrameKind::Unknown });
    frames.extend_from_slice(&ev.stack);
    let mut s = Sample::of_stack(frames.into());
    s.time = ev.time;
    s.thread = ev.thread;
    s.truncated = ev.truncated;
    s.weight = ev.weight;
    s
}

/// Replaces the recording's samples by its events that `sel` selects, as samples (see
/// [`as_sample`]); the event becomes `alloc` (bytes) or `lock`/`monitor`/`park` (ns). Returns
/// how many there were. The CPU samples' counters do not apply to them: none are kept.
pub fn project(rec: &mut Recording, sel: EventSel) -> usize {
    let events = std::mem::take(&mut rec.events);
    // A class's method found once per class name (events of a class share its name).
    let mut methods: HashMap<(usize, JvmEventKind), crate::model::MethodIdx> = HashMap::new();
    let mut judge = IdleJudge::default();
    let samples: Vec<Sample> = events
        .iter()
        .filter(|e| sel.matches(e.kind))
        .map(|e| {
            let idle = judge.is_idle(rec, e);
            let key = match e.class {
                _ if idle => (usize::MAX, JvmEventKind::ThreadPark),
                Some(_) => (class_id(e), JvmEventKind::Allocation),
                None => (0, e.kind),
            };
            let m = *methods.entry(key).or_insert_with(|| leaf_method(rec, e, idle));
            sample_in(e, m)
        })
        .collect();
    rec.events = events;
    rec.counters.clear();
    rec.samples = samples;
    let unit = if sel == EventSel::Alloc { "bytes" } else { "ns waited" };
    rec.event = EventInfo {
        name: format!("{} (weight in {unit})", sel.name()),
        requested: format!("{} (weight in {unit})", sel.name()),
        period: 0,
        unit: PeriodUnit::Events,
        fallback: None,
        sampler: rec.event.sampler.clone(),
        kernel: rec.event.kernel,
        alloc_interval: rec.event.alloc_interval,
    };
    rec.samples.len()
}

/// Where an event happened, for the site tables: the first frame (leaf first) outside the JDK's
/// lock machinery (`Unsafe.park`, `LockSupport`, the `java.util.concurrent.locks` classes, a
/// virtual thread's park), as `Class.method:line`.
pub fn site(rec: &Recording, ev: &JvmEvent) -> String {
    let skip = |c: &str| {
        c == "jdk.internal.misc.Unsafe"
            || c == "java.lang.VirtualThread"
            || c.starts_with("java.lang.System$")
            || c.starts_with("java.util.concurrent.locks.")
            || (ev.kind == JvmEventKind::Allocation && c.is_empty())
    };
    let f = ev.stack.iter().find(|f| !skip(&rec.method(f.method).class_name)).or(ev.stack.first());
    match f {
        Some(f) => {
            let name = rec.method(f.method).display_name();
            if f.line > 0 {
                format!("{name}:{}", f.line)
            } else {
                name
            }
        }
        None => "[no stack]".into(),
    }
}

/// One row of a table: events, summed weight, key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    pub events: u64,
    pub weight: u64,
}

/// Events of `kinds` summed by `key`, heaviest first (ties by key). Events that `same` gives
/// one value are summed first and their key made once: `same` must give events of different
/// keys different values (e.g. [`by_class`], [`by_site`]), so that a key costing the length of
/// a long name is made per name or stack, not per event.
pub fn table(
    rec: &Recording,
    kinds: &[JvmEventKind],
    same: impl Fn(&JvmEvent) -> (usize, usize, JvmEventKind),
    key: impl Fn(&JvmEvent) -> String,
) -> Vec<Row> {
    let mut groups: HashMap<(usize, usize, JvmEventKind), (usize, u64, u64)> = HashMap::new();
    for (i, e) in rec.events.iter().enumerate().filter(|(_, e)| kinds.contains(&e.kind)) {
        let g = groups.entry(same(e)).or_insert((i, 0, 0));
        g.1 += 1;
        g.2 = g.2.saturating_add(e.weight);
    }
    let mut by: HashMap<String, (u64, u64)> = HashMap::new();
    for (first, events, weight) in groups.into_values() {
        let v = by.entry(key(&rec.events[first])).or_default();
        v.0 += events;
        v.1 = v.1.saturating_add(weight);
    }
    let mut rows: Vec<Row> = by.into_iter().map(|(key, (events, weight))| Row { key, events, weight }).collect();
    rows.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.key.cmp(&b.key)));
    rows
}

/// What [`table`] groups by for a key of the class (and kind): the class name's address.
pub fn by_class(e: &JvmEvent) -> (usize, usize, JvmEventKind) {
    (class_id(e), 0, e.kind)
}

/// What [`table`] groups by for a key of the site: the stack (and kind, which the site of a
/// park or an allocation looks at).
pub fn by_site(e: &JvmEvent) -> (usize, usize, JvmEventKind) {
    (e.stack.as_ptr() as usize, e.stack.len(), e.kind)
}

/// The address of an event's class name (0: none): events of one name share it.
fn class_id(e: &JvmEvent) -> usize {
    e.class.as_ref().map_or(0, |c| std::sync::Arc::as_ptr(c) as *const u8 as usize)
}

/// A class's name for the tables (`[no blocker]` for a park without one).
pub fn class_key(e: &JvmEvent) -> String {
    match &e.class {
        Some(c) => c.to_string(),
        None if e.kind == JvmEventKind::ThreadPark => "[no blocker]".into(),
        None => "[unknown class]".into(),
    }
}

/// The paper's overlap of two profiles (Inoue & Nakatani §7.2): the sum over keys of the
/// smaller of the two shares, in [0, 1]; 1 for identical distributions.
pub fn overlap(a: &[(String, f64)], b: &[(String, f64)]) -> f64 {
    let (ta, tb) = (a.iter().map(|x| x.1).sum::<f64>(), b.iter().map(|x| x.1).sum::<f64>());
    if ta <= 0.0 || tb <= 0.0 {
        return 0.0;
    }
    let bm: HashMap<&str, f64> = b.iter().map(|(k, v)| (k.as_str(), *v / tb)).collect();
    a.iter().map(|(k, v)| (v / ta).min(bm.get(k.as_str()).copied().unwrap_or(0.0))).sum()
}

fn amount(kind_alloc: bool, w: u64) -> String {
    if kind_alloc {
        format!("{:.1} MiB", w as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} ms", w as f64 / 1e6)
    }
}

fn write_rows(out: &mut String, rows: &[Row], total: u64, alloc: bool, what: &str, top: usize) {
    let _ = writeln!(out, "  {:>12} {:>6} {:>8}  {what}", if alloc { "bytes" } else { "waited" }, "%", "events");
    for r in rows.iter().take(top) {
        let share = if total > 0 { r.weight as f64 * 100.0 / total as f64 } else { 0.0 };
        let _ = writeln!(out, "  {:>12} {share:>5.1}% {:>8}  {}", amount(alloc, r.weight), r.events, r.key);
    }
    if rows.len() > top {
        let _ = writeln!(out, "  ... {} more", rows.len() - top);
    }
}

/// Lock rows with the idle row, if any, after the top ones; shares of `contended` (the rest).
fn write_lock_rows(out: &mut String, mut rows: Vec<Row>, contended: u64, what: &str, top: usize) {
    let idle = rows.iter().position(|r| r.key == IDLE_ROW).map(|i| rows.remove(i));
    write_rows(out, &rows, contended, false, what, top);
    if let Some(r) = idle {
        let _ = writeln!(out, "  {:>12} {:>6} {:>8}  {}", amount(false, r.weight), "-", r.events, r.key);
    }
}

/// The report's sections for a recording with JVM events: allocations by class and by site,
/// lock waits by lock class and by site. Empty when it has none.
pub fn report(rec: &Recording, top: usize) -> String {
    let mut out = String::new();
    let alloc = [JvmEventKind::Allocation];
    let n_alloc = rec.events.iter().filter(|e| e.kind == JvmEventKind::Allocation).count();
    if n_alloc > 0 {
        let by_class = table(rec, &alloc, by_class, class_key);
        let total: u64 = by_class.iter().map(|r| r.weight).sum();
        let _ = writeln!(
            out,
            "\nAllocations ({}): {n_alloc} samples standing for {} allocated",
            if rec.alloc_source.is_empty() { "jdk.ObjectAllocationSample" } else { &rec.alloc_source },
            amount(true, total)
        );
        write_rows(&mut out, &by_class, total, true, "class", top);
        out.push('\n');
        write_rows(&mut out, &table(rec, &alloc, by_site, |e| site(rec, e)), total, true, "allocation site", top);
    }
    let lock = [JvmEventKind::MonitorEnter, JvmEventKind::ThreadPark];
    let n_lock = rec.events.iter().filter(|e| lock.contains(&e.kind)).count();
    if n_lock > 0 {
        // Idle pool threads' parks are summed in a row of their own (one key, one group), shown
        // last: the shares and the top rows are the contended waits.
        let judge = std::cell::RefCell::new(IdleJudge::default());
        let is_idle = |e: &JvmEvent| judge.borrow_mut().is_idle(rec, e);
        let apart = |same: fn(&JvmEvent) -> (usize, usize, JvmEventKind)| {
            move |e: &JvmEvent| if is_idle(e) { (usize::MAX, 0, JvmEventKind::ThreadPark) } else { same(e) }
        };
        let class_row = |e: &JvmEvent| {
            if is_idle(e) {
                IDLE_ROW.to_string()
            } else {
                format!("{} ({})", class_key(e), e.kind.name())
            }
        };
        let site_row = |e: &JvmEvent| if is_idle(e) { IDLE_ROW.to_string() } else { site(rec, e) };
        let by_class = table(rec, &lock, apart(by_class), class_row);
        let total: u64 = by_class.iter().map(|r| r.weight).sum();
        let idle_ns: u64 = by_class.iter().filter(|r| r.key == IDLE_ROW).map(|r| r.weight).sum();
        let _ = write!(
            out,
            "\nLock waits (jdk.JavaMonitorEnter, jdk.ThreadPark): {n_lock} waits, {} in all",
            amount(false, total)
        );
        if idle_ns > 0 {
            let _ = write!(
                out,
                "; {} of them idle pool threads waiting for work, in the last row (shares are of the other {}; \
                 --no-idle leaves them out)",
                amount(false, idle_ns),
                amount(false, total - idle_ns)
            );
        }
        out.push('\n');
        write_lock_rows(&mut out, by_class, total - idle_ns, "lock class (monitor or park)", top);
        out.push('\n');
        write_lock_rows(&mut out, table(rec, &lock, apart(by_site), site_row), total - idle_ns, "site", top);
    }
    out
}

/// The size of the object an allocation sample of weight `w` was taken of, when the mean
/// interval was `interval`: the inverse of `w = s / (1 - exp(-s / interval))` (see the agent's
/// `allocation_weight`), found by bisection; `w` itself without an interval.
pub fn sampled_size(w: u64, interval: u64) -> f64 {
    if interval == 0 || w <= interval {
        return if interval == 0 { w as f64 } else { 1.0 };
    }
    let (i, w) = (interval as f64, w as f64);
    let f = |s: f64| s / -(-s / i).exp_m1();
    let (mut lo, mut hi) = (0.0f64, w);
    for _ in 0..64 {
        let mid = (lo + hi) / 2.0;
        if f(mid) < w {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ((lo + hi) / 2.0).max(1.0)
}

/// Sums by a cheap key (an address), each with the name made once, in the order first seen.
struct Groups<K> {
    index: HashMap<K, usize>,
    sums: Vec<(String, f64)>,
}

impl<K> Default for Groups<K> {
    fn default() -> Self {
        Groups { index: HashMap::new(), sums: Vec::new() }
    }
}

impl<K: std::hash::Hash + Eq> Groups<K> {
    fn add(&mut self, k: K, n: f64, name: impl FnOnce() -> String) {
        let i = *self.index.entry(k).or_insert_with(|| {
            self.sums.push((name(), 0.0));
            self.sums.len() - 1
        });
        self.sums[i].1 += n;
    }
}

/// Objects created per class and per site, by the two ways: the allocation samples (each
/// standing for weight / size objects) and the creation samples of `data` (stores of a new
/// object's class word, Inoue & Nakatani §5.1). Keys: class names, and site methods.
pub struct Creation {
    pub by_class: [Vec<(String, f64)>; 2],
    pub by_site: [Vec<(String, f64)>; 2],
    /// Creation samples, allocation samples.
    pub samples: [u64; 2],
}

impl Creation {
    pub fn of(rec: &Recording) -> Creation {
        let mut maps: [[HashMap<String, f64>; 2]; 2] = Default::default();
        let mut samples = [0u64; 2];
        let leaf_java = |stack: &[Frame]| -> Option<String> {
            let f = stack.iter().find(|f| !rec.method(f.method).class_name.is_empty())?;
            Some(rec.method(f.method).display_name())
        };
        // Summed first by the class name's and the stack's address (in the order first seen,
        // so the sums are the same at every run), so that each name and site is made once,
        // not once per sample or event.
        let mut classes: [Groups<usize>; 2] = Default::default();
        let mut sites: [Groups<(usize, usize)>; 2] = Default::default();
        for s in &rec.samples {
            let Some(d) = s.data.as_deref() else { continue };
            if d.field.as_deref() != Some(crate::model::NEW_OBJECT) {
                continue;
            }
            samples[0] += 1;
            let id = d.class.as_ref().map_or(0, |c| std::sync::Arc::as_ptr(c) as *const u8 as usize);
            classes[0].add(id, 1.0, || d.class.as_deref().unwrap_or("?").to_string());
            let site = || leaf_java(&s.stack).unwrap_or_else(|| "[no stack]".into());
            sites[0].add((s.stack.as_ptr() as usize, s.stack.len()), 1.0, site);
        }
        for e in rec.events.iter().filter(|e| e.kind == JvmEventKind::Allocation) {
            samples[1] += 1;
            let objects = e.weight as f64 / sampled_size(e.weight, rec.event.alloc_interval);
            classes[1].add(class_id(e), objects, || class_key(e));
            let site = || leaf_java(&e.stack).unwrap_or_else(|| "[no stack]".into());
            sites[1].add((e.stack.as_ptr() as usize, e.stack.len()), objects, site);
        }
        for (i, (c, s)) in classes.into_iter().zip(sites).enumerate() {
            for (key, n) in c.sums {
                *maps[0][i].entry(key).or_default() += n;
            }
            for (key, n) in s.sums {
                *maps[1][i].entry(key).or_default() += n;
            }
        }
        let sorted = |m: &HashMap<String, f64>| {
            let mut v: Vec<(String, f64)> = m.iter().map(|(k, v)| (k.clone(), *v)).collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v
        };
        let [c, si] = &maps;
        Creation { by_class: [sorted(&c[0]), sorted(&c[1])], by_site: [sorted(&si[0]), sorted(&si[1])], samples }
    }

    /// The report's section: both profiles side by side and their overlap; empty unless the
    /// recording has creation samples.
    pub fn report(&self, top: usize) -> String {
        let mut out = String::new();
        if self.samples[0] == 0 {
            return out;
        }
        let _ = writeln!(
            out,
            "\nObject creation from samples (stores of a new object's class word, Inoue & Nakatani 5.1): {} samples",
            self.samples[0]
        );
        let share = |v: &[(String, f64)], k: &str| {
            let t: f64 = v.iter().map(|x| x.1).sum();
            v.iter().find(|x| x.0 == k).map_or(0.0, |x| x.1 * 100.0 / t.max(1e-9))
        };
        for (what, lists) in [("class", &self.by_class), ("site", &self.by_site)] {
            let _ = writeln!(out, "  {:>9} {:>9}  {what} (share of objects created)", "samples", "alloc");
            for (k, _) in lists[0].iter().take(top) {
                let alloc = if self.samples[1] > 0 { format!("{:.1}%", share(&lists[1], k)) } else { "-".into() };
                let _ = writeln!(out, "  {:>8.1}% {alloc:>9}  {k}", share(&lists[0], k));
            }
            if self.samples[1] > 0 {
                let _ = writeln!(
                    out,
                    "  overlap with the allocation samples ({} of them) by {what}: {:.1}%",
                    self.samples[1],
                    overlap(&lists[0], &lists[1]) * 100.0
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Stack, ThreadInfo};
    use std::sync::Arc;

    fn rec_with_events() -> Recording {
        let mut rec = Recording::default();
        rec.add_thread(ThreadInfo { name: "main".into(), is_java: true, ..Default::default() });
        let mut stack = |class: &str, m: &str, line: i32| -> Stack {
            let main = rec.methods.intern(MethodInfo::java("app.Main", "main", "()V"));
            let leaf = rec.methods.intern(MethodInfo::java(class, m, "()V"));
            Arc::from(vec![
                Frame { method: leaf, bci: 1, line, kind: FrameKind::JitCompiled },
                Frame { method: main, bci: 1, line: 3, kind: FrameKind::Interpreted },
            ])
        };
        let (a, b) = (stack("app.Main", "fill", 10), stack("app.Main", "copy", 20));
        let park = stack("java.util.concurrent.locks.LockSupport", "park", 5);
        let mut evs = Vec::new();
        for (s, class, w, n) in [(&a, "byte[]", 1_000u64, 3), (&b, "java.lang.String", 500, 2)] {
            for _ in 0..n {
                let mut e = JvmEvent::of(JvmEventKind::Allocation, s.clone());
                e.class = Some(class.into());
                e.weight = w;
                evs.push(e);
            }
        }
        let mut m = JvmEvent::of(JvmEventKind::MonitorEnter, a.clone());
        m.class = Some("app.Account".into());
        m.weight = 3_000_000;
        evs.push(m);
        let mut p = JvmEvent::of(JvmEventKind::ThreadPark, park);
        p.weight = 1_000_000;
        evs.push(p);
        rec.events = evs;
        rec
    }

    #[test]
    fn tables_sum_weights_by_class_and_site() {
        let rec = rec_with_events();
        let rows = table(&rec, &[JvmEventKind::Allocation], by_class, class_key);
        assert_eq!(rows[0], Row { key: "byte[]".into(), events: 3, weight: 3_000 });
        assert_eq!(rows[1], Row { key: "java.lang.String".into(), events: 2, weight: 1_000 });
        let text = report(&rec, 10);
        assert!(text.contains("Allocations (jdk.ObjectAllocationSample): 5 samples"), "{text}");
        assert!(text.contains("75.0%        3  app.Main.fill:10"), "{text}");
        // The park's site skips LockSupport: the caller.
        assert!(text.contains("25.0%        1  app.Main.main:3"), "{text}");
        assert!(text.contains("[no blocker] (park)"), "{text}");
        // Another recorder's TLAB events, read as allocations, are named as what they are.
        let mut tlab = rec_with_events();
        tlab.alloc_source = "jdk.ObjectAllocationInNewTLAB/OutsideTLAB".into();
        let text = report(&tlab, 10);
        assert!(text.contains("Allocations (jdk.ObjectAllocationInNewTLAB/OutsideTLAB): 5 samples"), "{text}");
    }

    #[test]
    fn events_project_to_samples_under_their_class() {
        let mut rec = rec_with_events();
        assert_eq!(project(&mut rec, EventSel::Alloc), 5);
        let s = &rec.samples[0];
        assert_eq!(&*rec.method(s.stack[0].method).name, "byte[]");
        assert_eq!(s.stack.len(), 3);
        assert_eq!(rec.samples.iter().map(|s| s.weight).sum::<u64>(), 4_000);
        assert_eq!(project(&mut rec, EventSel::Lock), 2);
        assert!(EventSel::parse("locks").is_err());
    }

    #[test]
    fn sampled_sizes_invert_the_weights() {
        for size in [16u64, 64, 8192, 524_288, 4 << 20] {
            let w = (size as f64 / -(-(size as f64) / 524_288.0).exp_m1()).round() as u64;
            let s = sampled_size(w, 524_288);
            assert!((s - size as f64).abs() <= 2.0 + size as f64 * 1e-6, "{size}: {s}");
        }
        assert_eq!(sampled_size(100, 0), 100.0);
    }

    #[test]
    fn overlap_is_the_shared_share() {
        let a = vec![("x".to_string(), 3.0), ("y".to_string(), 1.0)];
        let b = vec![("x".to_string(), 1.0), ("y".to_string(), 1.0)];
        assert!((overlap(&a, &b) - 0.75).abs() < 1e-9);
        assert!((overlap(&a, &a) - 1.0).abs() < 1e-9);
        assert_eq!(overlap(&a, &[]), 0.0);
    }
}
