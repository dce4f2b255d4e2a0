use super::*;
use crate::model::{FrameKind, MethodInfo, Stack, ThreadInfo};
use crate::output::collapsed::{to_collapsed, CountBy};
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
            Frame { method: rng.below(METHODS as usize) as u32, bci: rng.below(3) as i32, line: 1, kind }
        })
        .collect()
}

/// The stacks a resolver makes, in the ways it makes them: parts (a new stack's callers, made
/// from nothing or above another part, levels deep), samples' stacks above a part, stacks
/// interned whole, and stacks met again; each sample of a random thread.
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
        s.thread = rng.below(threads) as u32;
        s.weight = 1 + rng.below(5) as u64;
        out.push(s);
    }
    out
}

/// The collapsed stacks of the samples fed through a [`TreeFeed`], and of the same samples
/// added to a tree of the same bound from the root one by one, name by name.
fn both(seed: u64, n: usize, max_nodes: usize, keep_table: bool, per_thread: bool) -> (String, String) {
    let mut rec = recording(3);
    let mut interner = StackInterner::default();
    let samples = samples(seed, n, 3, &mut interner);
    let table = if keep_table {
        let full = rec.methods.intern(MethodInfo::native(crate::output::stacks::STACK_TABLE_FULL));
        StackTable::with_limit(TableLimit { entries: 1 << 10, frames: 1 << 14, full })
    } else {
        StackTable::default()
    };
    let mut feed = TreeFeed::new(Cct::with_limit(Vec::new(), max_nodes), table, keep_table, per_thread);
    let mut plain = Cct::with_limit(Vec::new(), max_nodes);
    for s in &samples {
        feed.add(s, &rec, &interner);
        plain.add_sample(&rec, s, per_thread);
    }
    feed.cct.fill_totals();
    plain.fill_totals();
    assert_eq!(feed.cct.total_samples(), samples.len() as u64);
    assert_eq!(feed.components, vec![(VmComponent::Java, samples.len() as u64)]);
    (to_collapsed(&feed.cct, CountBy::Weight), to_collapsed(&plain, CountBy::Weight))
}

#[test]
fn samples_land_where_their_names_lead_from_the_root() {
    for seed in 1..=40u64 {
        for (keep_table, per_thread) in [(false, false), (false, true), (true, false)] {
            let (fed, plain) = both(seed, 600, usize::MAX, keep_table, per_thread);
            assert_eq!(fed, plain, "seed {seed}, table {keep_table}, per thread {per_thread}");
        }
    }
}

#[test]
fn past_the_bound_paths_end_in_the_same_tree_full_nodes() {
    // Small bounds: most sessions here fill the tree part way through, so new stacks' paths are
    // cut while their bases are entered (a base's node is not learnt from a cut path).
    let mut cut = 0;
    for seed in 1..=60u64 {
        for max_nodes in [8, 30, 90] {
            let (fed, plain) = both(seed, 400, max_nodes, false, seed % 2 == 0);
            assert_eq!(fed, plain, "seed {seed}, bound {max_nodes}");
            cut += usize::from(fed.contains(crate::cct::TREE_FULL));
        }
    }
    assert!(cut > 100, "the bounds cut too few sessions to test anything: {cut}");
}

#[test]
fn renamed_threads_hang_anew_and_a_reset_forgets_the_old_tree() {
    let mut rec = recording(1);
    let mut interner = StackInterner::default();
    let samples = samples(7, 200, 1, &mut interner);
    let mut feed = TreeFeed::new(Cct::new(Vec::new()), StackTable::default(), false, true);
    let roots = |feed: &mut TreeFeed| {
        feed.cct.fill_totals();
        let mut roots = std::collections::BTreeMap::new();
        for line in to_collapsed(&feed.cct, CountBy::Samples).lines() {
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
    feed.reset(Cct::new(Vec::new()), StackTable::default());
    for s in &samples {
        feed.add(s, &rec, &interner);
    }
    assert_eq!(roots(&mut feed), [("[renamed tid=100]".to_string(), n)].into_iter().collect());
    assert_eq!(feed.components, vec![(VmComponent::Java, n)], "counted anew");
}
