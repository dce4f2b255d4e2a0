"""Method-level phases (Georges et al. 2004) in a running JVM: what each step costs, and the
paper's tables on three programs of the suite (docs/analysis.md, `hpm phases`).

Per workload, two JVMs per run, each taking turns (bench paired's rotation, bench/src/Toggle.java:
blocks off, cells, cells reversed, off, the cells' order shuffled per block):

step 1   off, S (`interval=10ms`: sampling alone), P1 (`interval=10ms,phases=TRACE`: the size
         heuristic, more than 50 bytes of bytecode or a loop). Each turn lasts --span1 iterations, one
         session, its own trace. Step 1's overhead: P1's iterations over S's (the instrumentation
         beside the same sampling), and each over off's.
step 2   `hpm phases` on run 0's first P1 trace: one pass at thresholds near zero lists every
         method's total share, average share and calls; the grid of (--weights x --grains), the
         finest first (smallest weight x grain), gives the first selection with at least 2 phases
         whose estimated overhead (its methods' invocations over all invocations) is under
         --budget, as the paper chose its thresholds; `hpm phases --out` writes it and says its
         own estimate, which is the one reported.
step 3   off, S, P3 (`interval=10ms,phases=TRACE,select=PHASEFILE`), --span iterations a turn;
         `hpm phases TRACE --select PHASEFILE --profile STEP1TRACE --json` (Tables 3, 5, 6) and
         `--svg` on run 0's first P3 trace.

at load  step 3's cost without sessions toggled: separate JVMs (--runs per cell: off, S, P3, each
         from -agentpath for the whole run), --at-load iterations, the second half's median wall
         time; P3 over S per run. What the turns above cannot show: a session's start and stop
         retransform the phases' classes, and the JIT compiles them and their callers again.

A session's start retransforms the loaded classes (and its stop may again): with --span above 1
the first iteration of every turn (every cell's, off's too) is dropped from the ratios, so what
remains is the steady cost of a running session. Trace bytes per second: each turn's trace size
over the wall time of its iterations.

Run as `python3 scripts/bench phases [OPTIONS]` from the repository:

    bench phases                     h2, xalan, lucene; 2 runs (about 20 min on 2 cores)
    bench phases --quick             h2 with 2 clients x 100 transactions, 1 run (about a minute of JVMs: checks the harness)

Results in OUT (default target/bench-results/phases-<UTC time>): phases.md (the tables),
iterations.csv (one row per measured iteration), each workload's phase file, Table JSON and SVG,
each JVM's command and output under runs/. Traces other than the two analysed are deleted once
measured (--keep-traces keeps them: step 1's are hundreds of MB each). Timings are benchmarks,
never tests."""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import time

from .common import build_agent, machine, target_dir
from .paired import run_jvm
from .stats import overhead, quartiles
from .workloads import BY_NAME, compile_drivers, fetch

# The agent's summary of each phases session: "phases: 385025 records in 794 blocks, ..." and
# "phases: 5 threads traced; 475 ns per probe here (read(2))".
RECORDS = re.compile(r"phases: (\d+) records in ")
PROBE_NS = re.compile(r"threads traced; (\d+) ns per probe here")
# The thresholds near zero of step 2's one listing pass (percent): every method with time.
LIST_ALL = "1e-9"


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench phases", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="h2,xalan,lucene",
                    help="default h2, xalan, lucene: step 1 stays bounded on them (sunflow's heuristic "
                         "instruments its inner loops: over 2 GiB of trace per frame)")
    ap.add_argument("--runs", type=int, default=2, help="JVMs per step and workload (default 2)")
    ap.add_argument("--blocks", type=int, default=1, help="blocks (off, cells, cells reversed, off) per JVM")
    ap.add_argument("--span1", type=int, default=2, help="step 1: iterations per turn (default 2; a P1 iteration "
                    "takes 10-15 s and writes ~0.5 GB)")
    ap.add_argument("--span", type=int, default=4, help="step 3: iterations per turn (default 4)")
    ap.add_argument("--drop", type=int, help="step 3: iterations dropped at the start of every turn, every cell's "
                    "(default 1 when a turn lasts more than one, else 0; step 1 drops 1 when --span1 is above 1): a session's start retransforms the "
                    "loaded classes, and their code is compiled again over the next iterations")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--interval", default="10ms", help="the sampling of S, P1 and P3")
    ap.add_argument("--weights", default="0.5,1,2,5,10", help="step 2's grid of theta_weight, percent")
    ap.add_argument("--grains", default="0.001,0.01,0.1,1,5", help="step 2's grid of theta_grain, percent")
    ap.add_argument("--budget", type=float, default=1.0, help="step 2: estimated overhead below this, percent")
    ap.add_argument("--top", type=int, default=8, help="Table 6's rows shown (the phases with most time)")
    ap.add_argument("--workload-args", help="the workload's arguments after the iteration count (one workload)")
    ap.add_argument("--at-load", type=int, default=60, metavar="N",
                    help="step 3 loaded with the JVM: N iterations per JVM (S and P3 from -agentpath, no session "
                         "toggled), the second half measured; 0: not run (default 60)")
    ap.add_argument("--keep-traces", action="store_true")
    ap.add_argument("--java", default="java")
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true", help="h2 at 2 clients x 100 transactions, 1 run (about a minute of JVMs: checks the harness)")
    a = ap.parse_args(argv)
    if a.quick:
        a.workloads, a.runs, a.blocks, a.span1, a.span, a.warmup = "h2", 1, 1, 1, 2, 2
        a.workload_args = "2 100"
        a.at_load = min(a.at_load, 4)
    a.workloads = [BY_NAME[w] for w in a.workloads.split(",")]
    if a.workload_args and len(a.workloads) != 1:
        sys.exit("bench-phases: --workload-args needs exactly one workload")
    if min(a.span1, a.span, a.runs, a.blocks) < 1:
        sys.exit("bench-phases: --span1, --span, --runs and --blocks must be at least 1")
    if a.drop is not None and not 0 <= a.drop < a.span:
        sys.exit("bench-phases: --drop must leave an iteration of every turn: below --span")
    a.grid = sorted(((float(w), float(g)) for w in a.weights.split(",") for g in a.grains.split(",")),
                    key=lambda wg: (wg[0] * wg[1], wg[0]))
    # paired.run_jvm's settings: the heap fixed and collected before each measured iteration.
    a.no_gc, a.quiet_jit, a.max_warmup = False, 0, 400
    a.out = os.path.abspath(a.out or os.path.join(target_dir(), "bench-results", time.strftime("phases-%Y%m%dT%H%M%SZ", time.gmtime())))
    return a


def pctq(xs):
    q1, m, q3 = quartiles(xs)
    return f"{m * 100:+.1f}% ({q1 * 100:+.1f} / {q3 * 100:+.1f})"


def turns(its, cell, span):
    """The cell's measured iterations in order, cut into turns of `span` (one session each)."""
    mine = [x for x in its if x[1] == cell]
    return [mine[k:k + span] for k in range(0, len(mine), span)]


def steady(its, span, drop=None):
    """Every turn's iterations but its first `drop` (default: 1 when turns last more than one;
    start and stop costs fall on the first), by cell: {cell: [(wall, cpu)]}."""
    drop = (1 if span > 1 else 0) if drop is None else drop
    out = {}
    for cell in {x[1] for x in its}:
        for t in turns(its, cell, span):
            out.setdefault(cell, []).extend(x[2:] for x in t[drop:])
    return out


def rotation(a, agent, cp, w, step, r, cells, span, csvw):
    """One JVM taking turns between off and `cells` ({name: options}, `%n` the session's index).
    Returns (iterations, workdir, the JVM's stderr)."""
    workdir = os.path.join(a.out, "runs", w.name, step, str(r))
    os.makedirs(workdir, exist_ok=True)
    names = list(cells)
    props = ["-Dhpm.bench.rotate=" + "|".join(f"{n}=hpm:{cells[n].format(dir=workdir)}" for n in names),
             f"-Dhpm.bench.seed={r}", f"-Dhpm.bench.span={span}"]
    b = argparse.Namespace(**vars(a))
    b.iterations = a.warmup + a.blocks * 2 * (len(names) + 1) * span
    res, its, err = run_jvm(b, agent, cp, w, workdir, [], props, lambda c: c)
    if err:
        sys.exit(f"bench-phases: {w.name} {step} run {r}: {err} (see {workdir}/stderr.txt)")
    for it, cell, wall, cpu in its:
        csvw.writerow([w.name, step, r, it, cell, wall, cpu])
    return its, workdir, res.err


def probe_share(stderr, its, cell, span):
    """The probes' own CPU (records x the agent's measured ns per probe) over the cell's CPU, per
    session, from the agent's summaries in session order; [] when it printed none."""
    records, ns = [int(x) for x in RECORDS.findall(stderr)], [int(x) for x in PROBE_NS.findall(stderr)]
    cpu = [sum(x[3] for x in t) for t in turns(its, cell, span)]
    if not (len(records) == len(ns) == len(cpu)):
        return []
    return [r * n / 1e6 / c for r, n, c in zip(records, ns, cpu) if c > 0]


def trace_rates(its, cell, span, workdir, prefix):
    """(sizes in bytes, bytes per second) of the cell's traces, turn k's in PREFIX-k.hpmtrace."""
    sizes, rates = [], []
    for k, t in enumerate(turns(its, cell, span)):
        path = os.path.join(workdir, f"{prefix}-{k}.hpmtrace")
        if not os.path.exists(path):
            sys.exit(f"bench-phases: {path} was not written: see {workdir}/stderr.txt")
        n = os.path.getsize(path)
        sizes.append(n)
        rates.append(n / (sum(x[2] for x in t) / 1000))
    return sizes, rates


def hpm_json(hpm, args, workdir, name):
    """`hpm phases ARGS --json`, its output kept as NAME.json; the document."""
    r = subprocess.run([hpm, "phases"] + args + ["--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-phases: hpm phases {' '.join(args)}: {r.stderr.strip()}")
    with open(os.path.join(workdir, name + ".json"), "w") as f:
        f.write(r.stdout)
    return json.loads(r.stdout)


def choose(a, listing):
    """The grid's first (weight, grain) whose selection has at least 2 phases and an estimated
    overhead under the budget, from the listing of every method: (weight, grain, phases,
    estimate), or None."""
    sel = listing["selection"]
    every = sel["all_invocations"]
    for wt, gr in a.grid:
        chosen = [p for p in sel["phases"] if p["total_share"] > wt / 100 and p["average_share"] > gr / 100]
        est = sum(p["calls"] for p in chosen) / every if every else 1
        if len(chosen) >= 2 and est < a.budget / 100:
            return wt, gr, len(chosen), est
    return None


def share(xs):
    """The median of per-session fractions as a percentage, `-` for none."""
    return f"{statistics.median(xs) * 100:.1f}%" if xs else "-"


def num(x, fmt="{:.3g}"):
    return "-" if x is None else fmt.format(x)


def table5(doc):
    t = doc["table5"]
    rows = [f"application {t['application_share'] * 100:.2f}%"] if t.get("application_share") is not None else []
    rows += [f"{c['name']} {c['share'] * 100:.2f}%" for c in t["components"] if c.get("share") is not None]
    return ", ".join(rows)


def table6(doc, top):
    t = doc["table6"]
    cols = t["columns"]
    phases = sorted((r for r in t["rows"] if r["kind"] == "phase"), key=lambda r: -(r["share"] or 0))[:top]
    rest = [r for r in t["rows"] if r["kind"] != "phase"]
    lines = ["| phase | share of " + doc["counters"][0] + " | " + " | ".join(cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for r in phases + rest:
        vals = " | ".join(num(v) for v in r["values"])
        lines.append(f"| {r['name']} | {num(r['share'] and r['share'] * 100, '{:.2f}%')} | {vals} |")
    return "\n".join(lines)


def anova(doc):
    out = []
    for m in doc.get("metrics", []):
        an = m.get("anova") or {}
        p = f"F={an['f']:.1f}, p={an['p']:.2g}" if "f" in an and an["f"] is not None else an.get("error", "-")
        out.append(f"{m['metric']}: weighted CoV {num(m.get('weighted_cov'))}, ANOVA {p}")
    return "; ".join(out)


def step_runs(a, agent, cp, w, csvw, step, cell, opts, span, dropped, said):
    """One step's --runs JVMs, each taking turns between off, S (sampling alone) and `cell` (with
    `opts`): ({"S/off", "CELL/off", "CELL/S": [overheads]}, trace sizes, bytes per second, the
    probes' shares, the first trace kept for the analysis). `said(ratios, sizes)` words a run's
    progress line."""
    base = f"interval={a.interval}"
    ratios = {"S/off": [], f"{cell}/off": [], f"{cell}/S": []}
    sizes_all, rates, probes, keep = [], [], [], None
    prefix = cell.lower()
    for r in range(a.runs):
        its, d, err = rotation(a, agent, cp, w, step, r, {"S": base + ",file={dir}/s-%n.jfr", cell: opts}, span, csvw)
        by = steady(its, span, dropped)
        ratios["S/off"].append(overhead(by["S"], by["off"]))
        ratios[f"{cell}/off"].append(overhead(by[cell], by["off"]))
        ratios[f"{cell}/S"].append(overhead(by[cell], by["S"]))
        sizes, rs = trace_rates(its, cell, span, d, prefix)
        sizes_all += sizes
        probes += probe_share(err, its, cell, span)
        rates += rs
        keep = keep or os.path.join(d, f"{prefix}-0.hpmtrace")
        print(f"bench-phases: {w.name} {step.replace('step', 'step ')} run {r + 1}/{a.runs}: {said(ratios, sizes)}",
              flush=True)
        drop(a, d, prefix, keep)
    return ratios, sizes_all, rates, probes, keep


def workload(a, agent, hpm, cp, w, csvw):
    """The three steps on one workload: its section of phases.md."""
    wd = os.path.join(a.out, w.name)
    os.makedirs(wd, exist_ok=True)
    base = f"interval={a.interval}"
    # Step 1.
    s1, size1, rate1, probes1, keep1 = step_runs(
        a, agent, cp, w, csvw, "step1", "P1", base + ",file={dir}/p1-%n.jfr,phases={dir}/p1-%n.hpmtrace",
        a.span1, None, lambda s1, sizes: f"P1/S CPU {s1['P1/S'][-1]['cpu'] * 100:+.0f}%, "
                                       f"{statistics.median(sizes) / 1e6:.0f} MB per trace")
    # Step 2.
    listing = hpm_json(hpm, [keep1, "--weight", LIST_ALL, "--grain", LIST_ALL], wd, "step2-listing")
    pick = choose(a, listing)
    if pick is None:
        sys.exit(f"bench-phases: {w.name}: no (weight, grain) of the grid selects 2 phases under {a.budget}% "
                 f"estimated overhead; widen --weights/--grains (listing in {wd}/step2-listing.json)")
    wt, gr, _, _ = pick
    phase_file = os.path.join(wd, "phases.txt")
    if os.path.exists(phase_file):
        os.unlink(phase_file)
    sel = hpm_json(hpm, [keep1, "--weight", f"{wt:g}", "--grain", f"{gr:g}", "--out", phase_file], wd, "step2")
    est = sel["table3"]["estimated_overhead"]
    print(f"bench-phases: {w.name} step 2: weight {wt:g}% grain {gr:g}%: {len(sel['selection']['phases'])} phases, "
          f"estimated overhead {est * 100:.3f}%", flush=True)
    # Step 3.
    s3, size3, rate3, probes3, keep3 = step_runs(
        a, agent, cp, w, csvw, "step3", "P3",
        base + f",file={{dir}}/p3-%n.jfr,phases={{dir}}/p3-%n.hpmtrace,select={phase_file}",
        a.span, a.drop, lambda s3, _: f"P3/S CPU {s3['P3/S'][-1]['cpu'] * 100:+.2f}%")
    load_lines = []
    if a.at_load > 0:
        base_file = base + ",quiet,file={dir}/p.jfr"
        loaded = at_load(a, agent, cp, w, {"off": "", "S": base_file,
                                           "P3": base_file + ",phases={dir}/p3.hpmtrace,select=" + phase_file})
        ratios = {k: [p / q - 1 for p, q in zip(loaded[k], loaded[b])] for k, b in (("S", "off"), ("P3", "S"))}
        print(f"bench-phases: {w.name} step 3 at load: P3/S wall {statistics.median(ratios['P3']) * 100:+.2f}%",
              flush=True)
        load_lines = [
            f"Step 3 loaded with the JVM ({a.runs} JVMs per cell, {a.at_load} iterations each, the median of the "
            "second half; no session toggled, so nothing retransformed): "
            f"S vs off {pctq(ratios['S'])}, P3 vs S {pctq(ratios['P3'])} (wall, median over runs of each run's "
            f"ratio; medians ms: off {statistics.median(loaded['off']):.1f}, S {statistics.median(loaded['S']):.1f}, "
            f"P3 {statistics.median(loaded['P3']):.1f}).", ""]
    svg = os.path.join(wd, "phases.svg")
    doc = hpm_json(hpm, [keep3, "--select", phase_file, "--profile", keep1, "--svg", svg], wd, "step3")
    t3 = doc["table3"]
    return "\n".join([
        f"### {w.name}", "",
        f"Step 1 (heuristic) against step 3 ({a.runs} JVMs each; median over JVMs, quartiles; each turn's first "
        f"iteration dropped when a turn lasts more than one"
        f"{'' if a.drop is None else f', in step 3 its first {a.drop}'}):", "",
        "| | S vs off, CPU | P vs off, CPU | P vs S, CPU | P vs S, wall | probes' own CPU, of P's | trace MB per turn "
        "| trace MB/s |",
        "|---|---|---|---|---|---|---|---|",
        f"| step 1 (span {a.span1}) | {pctq([o['cpu'] for o in s1['S/off']])} | {pctq([o['cpu'] for o in s1['P1/off']])} "
        f"| {pctq([o['cpu'] for o in s1['P1/S']])} | {pctq([o['wall'] for o in s1['P1/S']])} | {share(probes1)} "
        f"| {statistics.median(size1) / 1e6:,.1f} | {statistics.median(rate1) / 1e6:,.1f} |",
        f"| step 3 (span {a.span}) | {pctq([o['cpu'] for o in s3['S/off']])} | {pctq([o['cpu'] for o in s3['P3/off']])} "
        f"| {pctq([o['cpu'] for o in s3['P3/S']])} | {pctq([o['wall'] for o in s3['P3/S']])} | {share(probes3)} "
        f"| {statistics.median(size3) / 1e6:,.3f} | {statistics.median(rate3) / 1e6:,.3f} |", "",
        "Table 3's row (thresholds from step 2's grid: the first with 2 phases or more under "
        f"{a.budget:g}% estimated):", "",
        "| theta_weight | theta_grain | static phases | dynamic phases | estimated overhead | measured (P3 vs S, CPU) "
        "| step 1 trace, bytes/s | step 3 trace, bytes/s |",
        "|---|---|---|---|---|---|---|---|",
        f"| {wt:g}% | {gr:g}% | {t3['static_phases']} | {t3['dynamic_phases']:,} "
        f"| {num(t3['estimated_overhead'] and t3['estimated_overhead'] * 100, '{:.3f}%')} "
        f"| {statistics.median([o['cpu'] for o in s3['P3/S']]) * 100:+.2f}% | {statistics.median(rate1):,.0f} "
        f"| {statistics.median(rate3):,.0f} |", "",
        *load_lines,
        f"Table 5 (step 3's first trace, counter {doc['counters'][0]}): {table5(doc)}", "",
        f"Table 6 (top {a.top} phases, then the rest):", "", table6(doc, a.top), "",
        f"Statistics: {anova(doc)}", "",
        f"Phase file {phase_file}; plot {svg}.", ""])


ITERATION = re.compile(r"hpm-bench iteration (\d+) \d+ ([0-9.]+)")


def at_load(a, agent, cp, w, cells):
    """Separate JVMs, each with one cell's options from -agentpath for its whole run (no session
    started or stopped in it, so nothing is retransformed): per run, the JVMs in an order rotated
    by the run. Returns {cell: [median wall ms of the second half of each JVM's iterations]}."""
    out = {c: [] for c in cells}
    names = list(cells)
    for r in range(a.runs):
        for c in names[r % len(names):] + names[:r % len(names)]:
            workdir = os.path.join(a.out, "runs", w.name, "at-load", f"{c}-{r}")
            os.makedirs(workdir, exist_ok=True)
            args = [str(a.at_load)] + (a.workload_args.split() if a.workload_args else w.args[1:])
            opts = cells[c].format(dir=workdir)
            cmd = [a.java, "-Xmx1g", "-Xms1g", "-XX:+AlwaysPreTouch"] + \
                ([f"-agentpath:{agent}={opts}"] if opts else []) + ["-cp", cp, w.main] + args
            with open(os.path.join(workdir, "command.txt"), "w") as f:
                f.write(" ".join(cmd) + "\n")
            res = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
            with open(os.path.join(workdir, "stderr.txt"), "w") as f:
                f.write(res.stderr)
            ms = [float(x[1]) for x in ITERATION.findall(res.stdout)]
            if res.returncode != 0 or len(ms) < 2:
                sys.exit(f"bench-phases: {w.name} at load {c}: exit {res.returncode}, {len(ms)} iterations (see {workdir})")
            out[c].append(statistics.median(ms[len(ms) // 2:]))
    return out


def drop(a, workdir, prefix, keep):
    """Deletes the run's PREFIX-*.hpmtrace but `keep` (measured already), unless --keep-traces."""
    if a.keep_traces:
        return
    for f in os.listdir(workdir):
        p = os.path.join(workdir, f)
        if f.startswith(prefix + "-") and f.endswith(".hpmtrace") and p != keep:
            os.unlink(p)


def main(argv):
    a = parse_args(argv)
    agent, hpm = build_agent()
    jar = os.path.join(os.path.dirname(agent), "hpm-phases.jar")
    if not os.path.exists(jar):
        sys.exit(f"bench-phases: {jar} is missing: build it with `bash scripts/phases-jar.sh`")
    cps = compile_drivers(fetch(a.workloads), a.workloads)
    os.makedirs(a.out, exist_ok=True)
    md = [f"bench phases ({' '.join(argv or [])}): {machine(a.java)}", ""]
    with open(os.path.join(a.out, "iterations.csv"), "w", newline="") as f:
        csvw = csv.writer(f)
        csvw.writerow(["workload", "step", "run", "iteration", "cell", "wall_ms", "cpu_ms"])
        for w in a.workloads:
            md.append(workload(a, agent, hpm, cps[w.name], w, csvw))
    text = "\n".join(md)
    with open(os.path.join(a.out, "phases.md"), "w") as f:
        f.write(text)
    print(text)
    print(f"bench-phases: {a.out}/phases.md")
    return 0
