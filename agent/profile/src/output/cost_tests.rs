use super::*;

fn report() -> CostReport {
    CostReport {
        handler: Handler {
            samples: 1000,
            period: 1_000_000,
            timed: true,
            handler_ns: 20_000_000,
            blob_lookups: 200,
            blob_memo_hits: 150,
            blob_hits: 40,
            ..Default::default()
        },
        processing: Processing {
            cpu_ns: 100_000_000,
            started_ns: 10_000_000,
            resolved_ns: 70_000_000,
            once_ns: 15_000_000,
            once_at_start_ns: 5_000_000,
            early_chunks: 2,
            early_chunks_ns: 4_000_000,
        },
        code_held: 3 << 19,
        code_budget: 64 << 20,
        ..Default::default()
    }
}

/// The CPU line splits the processing thread's time into starting, resolving (less what was
/// read once per process, and the chunks written while sampling) and making the outputs.
#[test]
fn the_cpu_line_splits_the_processing_by_phase() {
    assert_eq!(
        report().render(),
        "hpm: agent CPU 120 ms (12.00% of the sampled CPU time): signal handler 20 ms, processing 100 ms (10 ms \
         starting, 46 ms resolving, 34 ms making the outputs (4 ms of it in 2 JFR chunks written while sampling), 15 \
         ms of it reading symbol tables and method ids once per process); per sample 20.0 + 46.0 us; code blobs the \
         walker looked up found in the thread's last walk 75%, in the shared cache 20%\n\
         hpm: compiled code: 1.5 MB of instructions held for `hpm report --instructions` (64 MB at most)\n"
    );
}

/// A session without samples (or counted events) says no share and no per-sample cost.
#[test]
fn without_samples_no_share_nor_per_sample_cost() {
    let r = CostReport { handler: Handler { timed: true, ..Default::default() }, ..Default::default() };
    assert_eq!(
        r.lines()[0],
        "agent CPU 0 ms: signal handler 0 ms, processing 0 ms (0 ms starting, 0 ms resolving, 0 ms making the outputs)"
    );
    let counted = CostReport { handler: Handler { timed: false, ..report().handler }, ..report() };
    assert!(!counted.lines()[0].contains("sampled CPU time"), "{}", counted.lines()[0]);
}

/// The other parts' lines come in their order, each only when there is something to say;
/// the first sightings and the phase timing only with samples.
#[test]
fn lines_in_order_each_when_it_has_something_to_say() {
    let line = |s: &str| Some(s.to_string());
    let mut r = CostReport {
        first_sightings: line("first"),
        phase_timing: line("phases"),
        events: line("events"),
        signals: line("signals"),
        late: 3,
        settle_ms: 100,
        bounds: Bounds { tree_cut: 7, max_tree_nodes: 10, tree_full: "[tree full]", ..Default::default() },
        compare: line("compare"),
        data: line("data"),
        objects: line("objects"),
        unnamed_frames: 2,
        code_not_copied: 4,
        ..report()
    };
    r.handler.data_captures = 10;
    r.handler.data_ns = 5_000;
    r.translated = 4;
    r.translate_ns = 2_000;
    let lines = r.lines();
    let heads: Vec<&str> = lines.iter().map(|l| l.split([':', ' ']).next().unwrap()).collect();
    assert_eq!(
        heads,
        [
            "agent", "first", "phases", "events", "signals", "late", "the", "compare", "data", "objects", "data", "2",
            "compiled"
        ]
    );
    assert!(lines[5].starts_with("late records: 3 reached"), "{}", lines[5]);
    assert!(lines[6].contains("bound of 10 nodes: 7 samples' stacks end in `[tree full]`"), "{}", lines[6]);
    assert_eq!(
        lines[10],
        "data cost: capture 0.50 us per sample in the handler (10 samples), translation 0.50 us per address"
    );
    assert!(lines[12].ends_with("(64 MB at most), 4 methods not copied"), "{}", lines[12]);
    r.handler.samples = 0;
    assert!(!r.lines().iter().any(|l| l == "first" || l == "phases"));
}
