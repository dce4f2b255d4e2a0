//! Version 2 traces, built with the agent's encoder (`phases_format`): blocks of two threads
//! interleaved, exits by exception, VM intervals, and hostile shapes.

use super::phases::CallGraph;
use super::phases_format as fmt;
use super::{parse_binary_trace, TraceKind};

/// A version 2 trace under construction.
pub(super) struct V2 {
    pub out: Vec<u8>,
}

impl V2 {
    pub fn new(counters: &[&str]) -> V2 {
        let mut out = fmt::header().to_vec();
        for (i, c) in counters.iter().enumerate() {
            fmt::counter_name(&mut out, i as u8, c);
        }
        V2 { out }
    }
    pub fn method(&mut self, id: u32, name: &str) -> &mut V2 {
        fmt::method_name(&mut self.out, id, name);
        self
    }
    pub fn thread(&mut self, id: u16, name: &str) -> &mut V2 {
        fmt::thread_name(&mut self.out, id, name);
        self
    }
    /// A thread block of `(tag, method or component id, counters)` records.
    pub fn block(&mut self, thread: u16, records: &[(u8, u32, &[u64])]) -> &mut V2 {
        let mut body = Vec::new();
        for (tag, id, values) in records {
            let mut b = [0u8; fmt::MAX_RECORD];
            let n = fmt::encode_record(&mut b, *tag, *id, values);
            assert!(n > 0);
            body.extend_from_slice(&b[..n]);
        }
        self.out.extend(fmt::block_header(thread, body.len() as u32));
        self.out.extend(body);
        self
    }
}

use fmt::{TAG_ENTER as EN, TAG_EXIT as EX, TAG_EXIT_THROW as TH, TAG_INTERVAL as IV};

/// Threads 1 (`main`) and 2 (`worker`), their blocks interleaved; `C.f` throws once; a GC
/// thread (3) and a JIT thread (4) with intervals.
pub(super) fn two_threads() -> Vec<u8> {
    let mut t = V2::new(&["task-clock", "page-faults", "context-switches"]);
    t.method(1, "A.main([Ljava/lang/String;)V").method(2, "C.f(I)J").method(9, "[GC]").method(10, "[JIT compiler]");
    t.thread(1, "main").thread(2, "worker").thread(3, "G1 Young RemSet").thread(4, "C2 CompilerThread0");
    t.block(1, &[(EN, 1, &[0, 0, 0]), (EN, 2, &[100, 1, 0])]);
    t.block(2, &[(EN, 2, &[5, 0, 0]), (EX, 2, &[405, 40, 1])]);
    t.block(3, &[(IV, 9, &[1000, 10, 2])]);
    t.block(1, &[(TH, 2, &[300, 3, 0]), (EN, 2, &[310, 3, 0]), (EX, 2, &[410, 4, 1]), (EX, 1, &[500, 5, 1])]);
    t.block(3, &[(IV, 9, &[1500, 12, 2])]);
    t.block(4, &[(IV, 10, &[700, 0, 5])]);
    t.out.clone()
}

#[test]
fn blocks_interleave_and_keep_each_threads_order() {
    let t = parse_binary_trace(&two_threads()).unwrap();
    assert_eq!((t.version, t.binary), (2, true));
    assert_eq!(t.counters, ["task-clock", "page-faults", "context-switches"]);
    assert_eq!(t.events.len(), 8);
    let main: Vec<(TraceKind, &str)> = t
        .events
        .iter()
        .filter(|e| t.threads[e.thread as usize] == "main")
        .map(|e| (e.kind, t.methods[e.method as usize].as_str()))
        .collect();
    use TraceKind::*;
    assert_eq!(
        main,
        [
            (Enter, "A.main([Ljava/lang/String;)V"),
            (Enter, "C.f(I)J"),
            (Thrown, "C.f(I)J"),
            (Enter, "C.f(I)J"),
            (Exit, "C.f(I)J"),
            (Exit, "A.main([Ljava/lang/String;)V")
        ]
    );
    // Exits by exception close their invocation as exits do.
    let g = CallGraph::build(&t).unwrap();
    assert_eq!((g.unclosed, g.early_exits), (0, 0));
    assert_eq!(g.total_time(), 500 + 400);
    let f = g.method_stats().into_iter().find(|s| s.name == "C.f(I)J").unwrap();
    assert_eq!((f.calls, f.total), (3, 200 + 100 + 400));
}

#[test]
fn vm_intervals_stay_apart_and_span_since_the_threads_previous_one() {
    let t = parse_binary_trace(&two_threads()).unwrap();
    assert_eq!(t.components, ["[GC]", "[JIT compiler]"]);
    assert_eq!(t.intervals.len(), 3);
    assert!(t.methods.iter().all(|m| !m.starts_with('[')));
    let spans: Vec<(String, String, Vec<u64>)> = t
        .interval_deltas()
        .map(|(i, d)| {
            let v = &t.intervals[i];
            (t.components[v.component as usize].clone(), t.threads[v.thread as usize].clone(), d)
        })
        .collect();
    assert_eq!(
        spans,
        [
            ("[GC]".into(), "G1 Young RemSet".into(), vec![1000, 10, 2]),
            ("[GC]".into(), "G1 Young RemSet".into(), vec![500, 2, 0]),
            ("[JIT compiler]".into(), "C2 CompilerThread0".into(), vec![700, 0, 5]),
        ]
    );
    assert_eq!(t.interval_values(1), [1500, 12, 2]);
}

#[test]
fn exits_of_methods_not_open_are_skipped() {
    let mut t = V2::new(&["task-clock"]);
    t.method(1, "A.run()V").block(1, &[(EX, 1, &[10]), (EN, 1, &[20]), (EX, 1, &[30])]);
    let tr = parse_binary_trace(&t.out).unwrap();
    let g = CallGraph::build(&tr).unwrap();
    assert_eq!((g.early_exits, g.repaired, g.invocations.len(), g.total_time()), (1, 0, 1, 10));
    // An exit of a method not open, under an open one: skipped, the open one intact.
    let mut t = V2::new(&["task-clock"]);
    t.method(1, "A.run()V").method(2, "B.x()V").block(1, &[(EN, 1, &[10]), (EX, 2, &[30]), (EX, 1, &[40])]);
    let tr = parse_binary_trace(&t.out).unwrap();
    let g = CallGraph::build(&tr).unwrap();
    assert_eq!((g.early_exits, g.repaired, g.unclosed, g.total_time()), (1, 0, 0, 30));
}

#[test]
fn an_exit_below_lost_exits_closes_the_invocations_above_it() {
    // driver calls rec, rec recurses twice; two of the three lose their exits (a
    // StackOverflowError in the exit probe). A record cannot tell recursive invocations apart:
    // the one exit left closes the innermost, and driver's exit closes the other two, after
    // work, which was entered under them.
    let mut t = V2::new(&["task-clock", "page-faults"]);
    t.method(1, "Soe.driver()V").method(2, "Soe.rec(I)J").method(3, "Soe.work(I)J");
    t.block(1, &[(EN, 1, &[0, 0]), (EN, 2, &[10, 0]), (EN, 2, &[20, 1]), (EN, 2, &[30, 1]), (TH, 2, &[60, 2])]);
    t.block(1, &[(EN, 3, &[70, 2]), (EX, 3, &[170, 3]), (EX, 1, &[200, 3])]);
    let tr = parse_binary_trace(&t.out).unwrap();
    let g = CallGraph::build(&tr).unwrap();
    assert_eq!((g.repaired, g.early_exits, g.unclosed), (2, 0, 0));
    let ends: Vec<(u32, usize, usize)> = g.invocations.iter().map(|v| (v.method, v.enter, v.exit)).collect();
    assert_eq!(ends, [(0, 0, 7), (1, 1, 7), (1, 2, 7), (1, 3, 4), (2, 5, 6)]);
    assert_eq!(g.total_time(), 200);
    let rec = g.method_stats().into_iter().find(|s| s.name == "Soe.rec(I)J").unwrap();
    assert_eq!((rec.calls, rec.total), (3, 190));
    // The nesting count is balanced again: a later rec is not nested.
    let mut t = V2::new(&["task-clock"]);
    t.method(1, "D.d()V").method(2, "R.r()V");
    t.block(1, &[(EN, 1, &[0]), (EN, 2, &[1]), (EN, 2, &[2]), (EX, 1, &[3]), (EN, 2, &[4]), (EX, 2, &[5])]);
    let tr = parse_binary_trace(&t.out).unwrap();
    let g = CallGraph::build(&tr).unwrap();
    assert_eq!((g.repaired, g.early_exits), (2, 0));
    assert!(!g.invocations[3].nested && g.invocations[3].parent.is_none());
}

#[test]
fn a_text_trace_must_stay_balanced() {
    let tr = super::parse_text_trace("enter t main 0\nenter t f 1\nexit t main 5\n").unwrap();
    assert!(CallGraph::build(&tr).unwrap_err().1.contains("innermost open method is f"));
}

fn err(bytes: &[u8]) -> String {
    match parse_binary_trace(bytes) {
        Ok(_) => panic!("parsed a hostile trace"),
        Err((_, m)) => m,
    }
}

#[test]
fn hostile_shapes_are_refused_with_their_place() {
    let good = two_threads();
    // Every cut of the file either parses (at a record boundary) or says where it was cut.
    for len in 9..good.len() {
        if let Err((_, m)) = parse_binary_trace(&good[..len]) {
            assert!(m.contains("cut short") || m.contains("only"), "{len}: {m}");
        }
    }
    let head = fmt::header().to_vec();
    // A block claiming more than the file holds: refused before anything is read or allocated.
    let mut b = head.clone();
    b.extend(fmt::block_header(1, u32::MAX));
    b.extend([0x11, 0, 0, 0, 0]);
    assert!(err(&b).contains("thread block of 4294967295 bytes, but only 5 bytes follow"), "{}", err(&b));
    // A block inside a block.
    let mut b = head.clone();
    b.extend(fmt::block_header(1, 7));
    b.extend(fmt::block_header(2, 0));
    assert!(err(&b).contains("a thread block inside a thread block"));
    // A record cut by its block's end, though the file goes on.
    let mut b = head.clone();
    b.extend(fmt::block_header(1, 6));
    b.extend([0x11, 1, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7]);
    assert!(err(&b).contains("cut short in its counters"), "{}", err(&b));
    // Zero counters, and more than four.
    for tag in [0x10u8, 0x15] {
        let mut b = head.clone();
        b.extend(fmt::block_header(1, 5));
        b.extend([tag, 1, 0, 0, 0]);
        assert!(err(&b).contains("expected 1 to 4"), "{}", err(&b));
    }
    // Records of differing widths, an event outside a block, an unknown type inside one.
    let mut t = V2::new(&[]);
    t.block(1, &[(EN, 1, &[1, 2])]).block(1, &[(EX, 1, &[3])]);
    assert!(err(&t.out).contains("1 counters, earlier records had 2"));
    let mut b = head.clone();
    b.extend([0x11, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(err(&b).contains("outside a thread block"));
    let mut b = head.clone();
    b.extend(fmt::block_header(1, 1));
    b.push(0x80);
    assert!(err(&b).contains("record type 0x80 inside a thread block"));
    // A VM thread's counters going backwards.
    let mut t = V2::new(&["task-clock"]);
    t.block(3, &[(IV, 9, &[100]), (IV, 9, &[50])]);
    assert!(err(&t.out).contains("below the thread's previous interval's 100"));
    // Version 1 has no blocks.
    let mut b = b"HPMTRACE\x01".to_vec();
    b.extend(fmt::block_header(1, 0));
    assert!(err(&b).contains("unknown record type 0xb0"));
}

#[test]
fn records_carry_the_record_number_across_blocks() {
    let mut t = V2::new(&["c"]);
    t.block(1, &[(EN, 1, &[10])]).block(1, &[(EN, 2, &[5])]);
    let tr = parse_binary_trace(&t.out).unwrap();
    // Record 1 is the counter name, 2 the first block, 3 its record, 4 the second block.
    assert_eq!(tr.events.iter().map(|e| e.line).collect::<Vec<_>>(), [3, 5]);
    assert_eq!(CallGraph::build(&tr).unwrap_err().0, 5);
}

#[test]
fn notes_say_what_the_agent_could_not_record_and_are_bounded() {
    let mut t = V2::new(&["task-clock"]);
    t.method(1, "A.run()V").block(1, &[(EN, 1, &[10]), (EX, 1, &[30])]);
    for i in 0..fmt::MAX_NOTES + 5 {
        fmt::note(&mut t.out, &format!("{i} records not written"));
    }
    let tr = parse_binary_trace(&t.out).unwrap();
    assert_eq!(tr.notes.len(), fmt::MAX_NOTES);
    assert_eq!(tr.notes[0], "0 records not written");
    // Cut inside a note: refused with its place, as any record.
    let cut = &t.out[..t.out.len() - 3];
    assert!(err(cut).contains("note"), "{}", err(cut));
}

#[test]
fn a_method_registered_twice_is_one_method() {
    // Ids 1 and 2 name the same method (its class transformed twice): one invocation nested in
    // the other is recursion, one method's calls.
    let mut t = V2::new(&["task-clock"]);
    t.method(1, "A.run()V")
        .method(2, "A.run()V")
        .block(1, &[(EN, 1, &[10]), (EN, 2, &[20]), (EX, 2, &[30]), (EX, 1, &[40])]);
    let tr = parse_binary_trace(&t.out).unwrap();
    let g = CallGraph::build(&tr).unwrap();
    let stats = g.method_stats();
    assert_eq!(stats.len(), 1, "{stats:?}");
    assert_eq!((stats[0].calls, stats[0].total), (2, 30));
}
