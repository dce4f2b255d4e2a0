use super::*;
use crate::cct::Measure;
use crate::model::{DataTarget, FrameKind, MethodInfo, Space, Stack, ThreadInfo};
use crate::model::{MethodIdx, ThreadIdx};
use crate::output::collapsed::to_collapsed;
use crate::output::stacks::TableLimit;

/// xorshift64*: the same stacks on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const METHODS: u32 = 12;

fn recording(threads: usize) -> Recording {
    let mut rec = Recording::default();
    for m in 0..METHODS {
        rec.methods.intern(MethodInfo::java("p.C", &format!("m{m}"), "()V"));
    }
    for t in 0..threads {
        rec.threads.push(ThreadInfo {
            is_virtual: false,
            os_tid: 100 + t as u32,
            java_id: Some(t as u64),
            name: format!("worker-{t}"),
            is_java: true,
        });
    }
    rec
}

fn frames(rng: &mut Rng, max: usize) -> Vec<Frame> {
    let n = 1 + rng.below(max);
    (0..n)
        .map(|_| {
            let kind = if rng.below(4) == 0 { FrameKind::Inlined } else { FrameKind::JitCompiled };
            Frame { method: MethodIdx(rng.below(METHODS as usize) as u32), bci: rng.below(3) as i32, line: 1, kind }
        })
        .collect()
}

const COMPONENTS: [VmComponent; 3] = [VmComponent::Java, VmComponent::Interpreter, VmComponent::Kernel];

/// The stacks a resolver makes, in the ways it makes them: parts (a new stack's callers, made
/// from nothing or above another part, levels deep), samples' stacks above a part, stacks
/// interned whole, and stacks met again; each sample of a random thread and component, with a
/// counter's delta, one in twenty with a data target (never memoized: the table keys by it).
fn samples(seed: u64, n: usize, threads: usize, interner: &mut StackInterner) -> Vec<Sample> {
    let mut rng = Rng(seed);
    let mut parts: Vec<Stack> = Vec::new();
    let mut made: Vec<Stack> = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let stack = match rng.below(8) {
            0 => {
                let f = frames(&mut rng, 4);
                parts.push(interner.intern_part(&f));
                continue;
            }
            1 | 2 if !parts.is_empty() => {
                let base = parts[rng.below(parts.len())].clone();
                let f = frames(&mut rng, 3);
                parts.push(interner.intern_part_above(&f, &base));
                continue;
            }
            3 | 4 if !parts.is_empty() => {
                let base = parts[rng.below(parts.len())].clone();
                let f = frames(&mut rng, 2);
                interner.intern_above(&f, &base)
            }
            5 => {
                let f = frames(&mut rng, 8);
                interner.intern(&f)
            }
            _ if !made.is_empty() => made[rng.below(made.len())].clone(),
            _ => continue,
        };
        made.push(stack.clone());
        let mut s = Sample::of_stack(stack);
        s.thread = ThreadIdx(rng.below(threads) as u32);
        s.weight = 1 + rng.below(5) as u64;
        s.counters = vec![rng.below(100) as u64];
        s.component = COMPONENTS[rng.below(COMPONENTS.len())];
        if rng.below(20) == 0 {
            let field = format!("f{}", rng.below(2));
            s.data = Some(Box::new(DataTarget {
                space: Space::Eden,
                class: Some("p.C".into()),
                field: Some(field.into()),
                offset: 16,
                index: None,
                source: None,
                latency: 0,
            }));
        }
        out.push(s);
    }
    out
}

fn table(rec: &mut Recording, keep_table: bool, entries: usize) -> StackTable {
    if !keep_table {
        return StackTable::default();
    }
    let full = rec.methods.intern(MethodInfo::native(crate::output::stacks::STACK_TABLE_FULL));
    StackTable::with_limit(TableLimit { entries, frames: 1 << 14, full })
}

/// Feeds the samples through a [`TreeFeed`] and, one by one from the root, name by name, into
/// a tree and a table of the same bounds: both trees must have the same nodes with the same
/// sums (the samples land on the same nodes, cut at the same places), and both tables the same
/// entries. The feed's entry counts.
fn same_as_from_the_root(seed: u64, n: usize, bounds: (usize, usize), keep_table: bool, per_thread: bool) -> Entered {
    let (max_nodes, max_entries) = bounds;
    let mut rec = recording(3);
    let mut interner = StackInterner::default();
    let samples = samples(seed, n, 3, &mut interner);
    let counters = vec!["c".to_string()];
    let mut feed = TreeFeed::new(
        Cct::with_limit(counters.clone(), max_nodes),
        table(&mut rec, keep_table, max_entries),
        keep_table,
        per_thread,
    );
    let mut plain = Cct::with_limit(counters, max_nodes);
    let mut plain_table = table(&mut rec, keep_table, max_entries);
    for s in &samples {
        feed.add(s, &rec, &interner);
        plain.add_sample(&rec, s, per_thread);
        if keep_table {
            plain_table.add(s);
        }
    }
    feed.cct.fill_totals();
    let case = format!("seed {seed}, bounds {bounds:?}, table {keep_table}, per thread {per_thread}");
    assert_eq!(feed.cct.nodes, plain.nodes, "{case}");
    assert_eq!(feed.stacks.entries, plain_table.entries, "{case}");
    assert_eq!(feed.cct.total_samples(), samples.len() as u64, "{case}");
    for c in COMPONENTS {
        let n = samples.iter().filter(|s| s.component == c).count() as u64;
        assert_eq!(feed.components.iter().find(|e| e.0 == c).map_or(0, |e| e.1), n, "{case}");
    }
    feed.entered
}

#[test]
fn samples_land_where_their_names_lead_from_the_root() {
    let mut entered = Entered::default();
    for seed in 1..=40u64 {
        for (keep_table, per_thread) in [(false, false), (false, true), (true, false), (true, true)] {
            let e = same_as_from_the_root(seed, 600, (usize::MAX, 1 << 16), keep_table, per_thread);
            (entered.known, entered.above, entered.root) =
                (entered.known + e.known, entered.above + e.above, entered.root + e.root);
        }
    }
    // Every way in taken, many times: the memo of stacks met, the bases' nodes, the root.
    assert!(entered.known > 10_000 && entered.above > 5_000 && entered.root > 5_000, "{entered:?}");
}

#[test]
fn past_the_bounds_paths_end_in_the_same_full_nodes_and_entries() {
    // Small bounds: most sessions here fill the tree (and the table) part way through, so new
    // stacks' paths are cut while their bases are entered (a base's node is not learnt from a
    // cut path).
    let mut cut = 0;
    for seed in 1..=60u64 {
        for max_nodes in [8, 30, 90] {
            let keep_table = seed % 3 == 0;
            same_as_from_the_root(seed, 400, (max_nodes, 40), keep_table, seed % 2 == 0);
            let mut rec = recording(3);
            let mut interner = StackInterner::default();
            let mut feed =
                TreeFeed::new(Cct::with_limit(Vec::new(), max_nodes), table(&mut rec, false, 0), false, false);
            for s in &samples(seed, 400, 3, &mut interner) {
                feed.add(s, &rec, &interner);
            }
            cut += usize::from(feed.cct.cut_samples() > 0);
        }
    }
    assert!(cut > 100, "the bounds cut too few sessions to test anything: {cut}");
}

#[test]
fn renamed_threads_hang_anew_and_a_reset_starts_from_nothing() {
    let mut rec = recording(1);
    let mut interner = StackInterner::default();
    let samples = samples(7, 200, 1, &mut interner);
    let mut feed = TreeFeed::new(Cct::new(Vec::new()), StackTable::default(), false, true);
    let roots = |feed: &mut TreeFeed| {
        feed.cct.fill_totals();
        let mut roots = std::collections::BTreeMap::new();
        for line in to_collapsed(&feed.cct, Measure::Samples).lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            *roots.entry(stack.split(';').next().unwrap().to_string()).or_insert(0) += n.parse::<u64>().unwrap();
        }
        roots
    };
    for s in &samples {
        feed.add(s, &rec, &interner);
    }
    // Renamed: the stacks met again hang below the new name, the old samples stay where they were.
    rec.threads[0].name = "renamed".into();
    feed.forget_stacks();
    for s in &samples {
        feed.add(s, &rec, &interner);
    }
    let n = samples.len() as u64;
    let expected = [("[renamed tid=100]".to_string(), n), ("[worker-0 tid=100]".to_string(), n)];
    assert_eq!(roots(&mut feed), expected.into_iter().collect());
    // After a reset, the same as a new tree fed from the root (no name, node or count of the
    // old tree's left).
    feed.reset(Cct::new(Vec::new()), StackTable::default());
    let mut plain = Cct::new(Vec::new());
    for s in &samples {
        feed.add(s, &rec, &interner);
        plain.add_sample(&rec, s, true);
    }
    feed.cct.fill_totals();
    assert_eq!(feed.cct.nodes, plain.nodes);
    let components = COMPONENTS.iter().map(|&c| samples.iter().filter(|s| s.component == c).count()).sum::<usize>();
    assert_eq!(feed.components.iter().map(|e| e.1).sum::<u64>(), components as u64, "counted anew");
    assert_eq!(feed.entered.known + feed.entered.above + feed.entered.root, n, "counted anew");
}

/// Each third record of `own` with kernel time counted before it (1 to 7 periods, one record
/// 65,536): the samples as the processor adds them, in the former form (`clones`: one sample
/// per period) or as one sample standing for them all ([`Sample::repeat`]).
fn with_kernel_time(rec: &mut Recording, interner: &mut StackInterner, own: &[Sample], clones: bool) -> Vec<Sample> {
    let kernel = rec.methods.intern(MethodInfo::native("[kernel]"));
    let mut out = Vec::new();
    for (i, s) in own.iter().enumerate() {
        if i % 3 == 0 {
            let periods = if i == 42 { 1 << 16 } else { 1 + (i as u32 / 3) % 7 };
            let mut stack = vec![Frame { method: kernel, bci: -1, line: -1, kind: FrameKind::Kernel }];
            stack.extend_from_slice(&s.stack);
            let k = Sample {
                stack: interner.intern(&stack),
                counters: vec![0; s.counters.len()],
                data: None,
                component: VmComponent::Kernel,
                ..s.clone()
            };
            if clones {
                out.extend(std::iter::repeat_n(k, periods as usize));
            } else {
                out.push(Sample { weight: k.weight * u64::from(periods), repeat: periods, ..k });
            }
        }
        out.push(s.clone());
    }
    out
}

/// Kernel time counted (`kernel=counted`) is one sample per record standing for its periods:
/// the tree, the stack table, the tallies, every output, the summary, the report and the JFR
/// chunk are byte for byte those of the former form, one cloned sample per period; and the
/// recording holds two samples for such a record, not 65,537.
#[test]
fn counted_kernel_periods_make_the_outputs_of_their_clones() {
    use crate::output::format::{render, Format, Look, Profile};
    let mut rec = recording(3);
    let mut interner = StackInterner::default();
    let own = samples(11, 300, 3, &mut interner);
    rec.counters = vec!["c".to_string()];
    let forms: Vec<Vec<Sample>> =
        [true, false].iter().map(|&c| with_kernel_time(&mut rec, &mut interner, &own, c)).collect();
    assert_eq!(forms[1].len(), own.len() + own.len().div_ceil(3), "one kernel sample per record");
    assert!(forms[0].len() > 1 << 16);
    let outputs = |samples: &[Sample]| {
        let mut rec = rec.clone();
        let mut feed = TreeFeed::new(Cct::new(rec.counters.clone()), table(&mut rec, true, 1 << 16), true, false);
        for s in samples {
            feed.add(s, &rec, &interner);
        }
        feed.cct.fill_totals();
        let mut out: Vec<Vec<u8>> = Vec::new();
        for by in [Measure::Samples, Measure::Weight] {
            for format in [Format::Collapsed, Format::Html, Format::Svg, Format::Pprof, Format::Json] {
                let profile = Profile { tree: Some(&feed.cct), table: Some((&rec, &feed.stacks)) };
                out.push(render(format, profile, &Look { by, ..Look::default() }).expect("rendered"));
            }
        }
        out.push(crate::output::summary(&rec, &feed.cct, &feed.components, &feed.sampled_threads).into_bytes());
        out.push(format!("{:?} {:?}", feed.components, feed.cct.total_samples()).into_bytes());
        // The report as `hpm report` makes it of a recording.
        rec.samples = samples.to_vec();
        let cct = Cct::from_recording(&rec, false);
        let opts = crate::output::ReportOptions::default();
        out.push(crate::output::full_report(Some(&rec), &cct, &crate::output::Tallies::of(&rec), &opts).into_bytes());
        let times = crate::jfr::writer::ChunkTimes { start_ticks: 0, end_ticks: 1_000, start_wall_ns: 0 };
        out.push(crate::jfr::writer::encode_chunk(&rec, samples, times));
        out
    };
    let (cloned, repeated) = (outputs(&forms[0]), outputs(&forms[1]));
    assert_eq!(cloned.len(), repeated.len());
    for (i, (a, b)) in cloned.iter().zip(&repeated).enumerate() {
        assert!(a == b, "output {i} differs:\n{}\n---\n{}", String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    }
    // JDK tools read an event per period.
    let back = crate::jfr::recording_from_bytes(repeated.last().unwrap(), "repeated.jfr").expect("read back");
    assert_eq!(back.samples.len(), forms[0].len());
}
