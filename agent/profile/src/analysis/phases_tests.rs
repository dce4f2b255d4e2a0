//! Phase analysis tests: the paper's Figure 3, trace checks, nested phases and statistics.

use super::phases::*;
use super::phases_binary::encode_binary;
use super::{parse_binary_trace, parse_text_trace, Trace};

/// Writes a text trace from a call tree: `(method, self time before callees, callees, self
/// time after)`; a second counter runs at `ipc` instructions per cycle of self time.
struct Writer {
    out: String,
    clock: u64,
    instr: u64,
}

impl Writer {
    fn new(header: bool) -> Writer {
        let out = if header { "# counters: cycles instructions\n".to_string() } else { String::new() };
        Writer { out, clock: 0, instr: 0 }
    }
    fn event(&mut self, kind: &str, thread: &str, m: &str) {
        self.out.push_str(&format!("{kind} {thread} {m} {} {}\n", self.clock, self.instr));
    }
    fn work(&mut self, cycles: u64, ipc10: u64) {
        self.clock += cycles;
        self.instr += cycles * ipc10 / 10;
    }
    /// A leaf method called `n` times, `t` cycles each.
    fn leaves(&mut self, thread: &str, m: &str, n: u64, t: u64) {
        for _ in 0..n {
            self.event("enter", thread, m);
            self.work(t, 10);
            self.event("exit", thread, m);
        }
    }
}

/// The fictive sort program of Figure 3 (Georges et al.): main calls init, readData (which
/// calls readElement 50 times and print), sortData (compare 300 times, swap 250 times) and
/// printData (printElement 50 times). Times as in the figure's table.
pub(super) fn figure3() -> String {
    let mut w = Writer::new(false);
    let t = "main";
    w.event("enter", t, "main");
    w.leaves(t, "init", 1, 30);
    w.event("enter", t, "readData");
    w.work(35, 10);
    w.leaves(t, "readElement", 50, 4);
    w.leaves(t, "print", 1, 30);
    w.work(35, 10);
    w.event("exit", t, "readData");
    w.event("enter", t, "sortData");
    for i in 0..300 {
        w.leaves(t, "compare", 1, 2);
        if i < 250 {
            w.leaves(t, "swap", 1, 2);
        }
    }
    w.work(200, 10);
    w.event("exit", t, "sortData");
    w.event("enter", t, "printData");
    w.leaves(t, "printElement", 50, 3);
    w.work(20, 10);
    w.event("exit", t, "printData");
    w.event("exit", t, "main");
    w.out.lines().map(|l| l.rsplit_once(' ').map_or(l, |x| x.0)).collect::<Vec<_>>().join("\n")
}

fn names(s: &Selection) -> Vec<&str> {
    s.phases.iter().map(|p| p.stats.name.as_str()).collect()
}

#[test]
fn figure3_selects_exactly_main_read_data_and_sort_data() {
    let trace = parse_text_trace(&figure3()).unwrap();
    let g = CallGraph::build(&trace).unwrap();
    assert_eq!(g.total_time(), 1800);
    // The figure's table: total time, time per call, calls. (It prints 200 per call for
    // readData's single call of 300; the tree adds up only with 300.)
    let table: Vec<(String, u64, f64, u64)> =
        g.method_stats().into_iter().map(|s| (s.name.clone(), s.total, s.average(), s.calls)).collect();
    let expect = [
        ("main", 1800, 1800.0, 1),
        ("sortData", 1300, 1300.0, 1),
        ("compare", 600, 2.0, 300),
        ("swap", 500, 2.0, 250),
        ("readData", 300, 300.0, 1),
        ("readElement", 200, 4.0, 50),
        ("printData", 170, 170.0, 1),
        ("printElement", 150, 3.0, 50),
        ("init", 30, 30.0, 1),
        ("print", 30, 30.0, 1),
    ];
    let expect: Vec<(String, u64, f64, u64)> = expect.iter().map(|e| (e.0.to_string(), e.1, e.2, e.3)).collect();
    assert_eq!(table, expect);
    // theta_weight = 10%, theta_grain = 5%: total > 180 and average > 90.
    let s = g.select(0.10, 0.05);
    assert_eq!(names(&s), ["main", "sortData", "readData"]);
    assert_eq!((s.profiled_invocations, s.all_invocations), (3, 656));
    assert!((s.overhead() - 3.0 / 656.0).abs() < 1e-12);
    assert!((s.phases[1].total_share - 1300.0 / 1800.0).abs() < 1e-12);
    // printData passes the grain (170 > 90) but not the weight (170 < 180); compare, swap
    // and readElement the weight but not the grain.
    assert_eq!(names(&g.select(0.10, 0.0)), ["main", "sortData", "compare", "swap", "readData", "readElement"]);
    assert_eq!(names(&g.select(0.0, 0.05)), ["main", "sortData", "readData", "printData"]);
    assert_eq!(names(&g.select(0.5, 0.5)), ["main", "sortData"]);
}

#[test]
fn binary_trace_gives_the_same_result() {
    let text = parse_text_trace(&figure3()).unwrap();
    let bin = parse_binary_trace(&encode_binary(&text)).unwrap();
    assert!(bin.binary);
    assert_eq!((&bin.methods, &bin.threads, &bin.counters), (&text.methods, &text.threads, &text.counters));
    assert_eq!(bin.events.len(), text.events.len());
    let sel = |t: &Trace| CallGraph::build(t).unwrap().select(0.10, 0.05);
    assert_eq!(sel(&bin), sel(&text));
    let mut bytes = encode_binary(&text);
    bytes.truncate(bytes.len() - 3);
    assert!(parse_binary_trace(&bytes).unwrap_err().1.contains("cut short"));
    assert!(parse_binary_trace(b"HPMTRACE\x01\x55").unwrap_err().1.contains("unknown record type"));
    assert!(parse_binary_trace(b"HPMTRACE\x03").unwrap_err().1.contains("version 3"));
}

#[test]
fn bad_traces_name_the_line() {
    let err = |t: &str| {
        let trace = match parse_text_trace(t) {
            Ok(tr) => tr,
            Err(e) => return e,
        };
        CallGraph::build(&trace).map(|_| ()).unwrap_err()
    };
    let (l, m) = err("enter t main 0\nexit t other 5\n");
    assert_eq!(l, 2);
    assert!(m.contains("innermost open method is main"), "{m}");
    let (l, m) = err("enter t main 0\nexit t main 5\nexit t main 6\n");
    assert_eq!(l, 3);
    assert!(m.contains("no method is open"), "{m}");
    let (l, m) = err("enter t main 10\nenter t f 5\n");
    assert_eq!(l, 2);
    assert!(m.contains("below the previous value 10"), "{m}");
    assert_eq!(err("enter t main 0\nleave t main 1\n").0, 2);
    assert_eq!(err("enter t main 0 1\nexit t main 1\n").0, 2);
    assert_eq!(err("enter t main x\n").0, 1);
    assert_eq!(err("enter t main\n").0, 1);
    assert_eq!(err("enter t main 0\n# counters: a\n").0, 2);
}

#[test]
fn open_invocations_recursion_and_threads() {
    // f recursive; the trace ends with main still open on thread a.
    let t = "enter a main 0\nenter a f 10\nenter a f 20\nexit a f 30\nexit a f 40\nenter b g 0\nexit b g 60\nenter a h 45\nexit a h 50\n";
    let trace = parse_text_trace(t).unwrap();
    let g = CallGraph::build(&trace).unwrap();
    assert_eq!(g.unclosed, 1);
    assert_eq!(g.total_time(), 50 + 60);
    let f = g.method_stats().into_iter().find(|s| s.name == "f").unwrap();
    assert_eq!((f.calls, f.total, f.inclusive_sum, f.self_time), (2, 30, 40, 30));
    assert_eq!(f.average(), 20.0);
}

/// main runs `work` 10 times; work's own IPC varies around 2.0, main's own part runs at 1.0.
fn nested_trace() -> String {
    let mut w = Writer::new(true);
    w.event("enter", "t", "main");
    w.work(100, 10);
    for i in 0..10u64 {
        w.event("enter", "t", "work");
        w.work(100, 18 + i % 5); // IPC 1.8 .. 2.2
        w.leaves("t", "helper", 2, 10); // helpers run at IPC 1.0 inside the phase
        w.event("exit", "t", "work");
    }
    w.work(100, 10);
    w.event("exit", "t", "main");
    w.out
}

#[test]
fn phase_metrics_take_nested_phases_out() {
    let trace = parse_text_trace(&nested_trace()).unwrap();
    let g = CallGraph::build(&trace).unwrap();
    let s = g.select(0.2, 0.05);
    assert_eq!(names(&s), ["main", "work"]);
    let m = g.phase_metrics(&s);
    assert_eq!(m.metric_names, ["instructions per cycles"]);
    let main = &m.phases[0];
    // main's own part: 200 cycles at IPC 1.0, one observation.
    assert_eq!((main.weight, main.values[0].clone()), (200.0, vec![1.0]));
    let work = &m.phases[1];
    assert_eq!(work.weight, 1200.0);
    assert_eq!(work.values[0].len(), 10);
    // 100 cycles at 1.8..2.2 plus 20 at 1.0, per 120 cycles.
    assert!((work.values[0][0] - (180.0 + 20.0) / 120.0).abs() < 1e-12);
    let sum = &m.summarize()[0];
    assert_eq!(sum.per_phase.len(), 2);
    assert_eq!(sum.per_phase[0].3, Some(0.0));
    assert!(sum.weighted_cov.unwrap() > 0.0 && sum.weighted_cov.unwrap() < 0.1);
    let a = sum.anova.as_ref().unwrap();
    assert_eq!(a.df, (1, 9));
    assert!(a.f > 20.0 && a.p < 1e-3, "{a:?}");
}

#[test]
fn anova_on_given_phase_metrics_matches_plant_growth() {
    let text = "ctrl 4.17\nctrl 5.58\nctrl 5.18\nctrl 6.11\nctrl 4.50\nctrl 4.61\nctrl 5.17\nctrl 4.53\nctrl 5.33\nctrl 5.14\n\
                trt1 4.81\ntrt1 4.17\ntrt1 4.41\ntrt1 3.59\ntrt1 5.87\ntrt1 3.83\ntrt1 6.03\ntrt1 4.89\ntrt1 4.32\ntrt1 4.69\n\
                trt2 6.31\ntrt2 5.12\ntrt2 5.54\ntrt2 5.50\ntrt2 5.37\ntrt2 5.29\ntrt2 4.92\ntrt2 6.15\ntrt2 5.80\ntrt2 5.26\n";
    let pairs = parse_metric_pairs(text).unwrap();
    let s = PhaseMetrics::from_pairs("weight", &pairs).summarize();
    let a = s[0].anova.as_ref().unwrap();
    assert_eq!(a.df, (2, 27));
    assert!((a.f - 4.846).abs() < 5e-4 && (a.p - 0.0159).abs() < 5e-5, "{a:?}");
    assert_eq!(parse_metric_pairs("a 1\nb\n").unwrap_err().0, 2);
    assert_eq!(parse_metric_pairs("a NaN\n").unwrap_err().0, 1);
}
