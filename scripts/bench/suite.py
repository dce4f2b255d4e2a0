"""The third-party benchmark suite (docs/benchmarks.md, "Third-party workloads"): overhead,
sample rate, peak RSS and profile agreement of hpm (each sampler mode), async-profiler (Maven
Central) and the JDK's Flight Recorder, on real programs from Debian packages, driven by the
harness in bench/src. Interleaved runs; medians with quartiles; nothing fails on a timing.

    python3 scripts/bench suite                 the full suite (prints its expected duration first)
    python3 scripts/bench suite --quick         one workload, one interval, two runs (CI: checks the harness)
    python3 scripts/bench suite --smoke         every workload once on every JDK, every profiler once
    python3 scripts/bench suite --runs 7 --intervals 10ms,1ms,100us --workloads h2,lucene \\
        --profilers none,hpm-asgct,async-profiler,jfr --out DIR

Results: OUT/runs.csv (one row per run), OUT/results.json, OUT/tables.md, OUT/img/*.svg;
the full suite also rewrites the marked results section of docs/benchmarks.md and docs/img/
(--no-docs to leave docs/ alone). OUT defaults to target/bench-results/<UTC time>.
"""
import argparse
import csv
import glob
import json
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from . import profiles as prof
from . import report as bench_report
from .common import ROOT, async_profiler, build_agent, java_version, machine, measure, patched_java, target_dir
from .workloads import BY_NAME, WORKLOADS, compile_drivers, fetch, versions

AP_VERSION = "4.6"  # newest tools.profiler:async-profiler on Maven Central
PROFILERS = ["none", "hpm-asgct", "hpm-jvmti", "hpm-sps", "async-profiler", "jfr"]
EST_RUN_S = {"sunflow": 9, "h2": 9, "lucene": 9, "xalan": 7, "rhino": 9, "ecj": 10}  # wall s, 2 quiet cores
WARMUP = 2  # iterations discarded from the steady-state wall time (Hofer et al.)


def sps_jdk(a):
    return None if a.sps_jdk == "none" else patched_java(a.sps_jdk)


def temurins():
    return sorted(glob.glob("/usr/lib/jvm/*temurin*/bin/java"))


class Cell:
    """One configuration: a profiler at an interval on one JVM ("stock" or "sps" group,
    each with its own `none` baseline)."""

    def __init__(self, profiler, interval, group, java):
        self.profiler, self.interval, self.group, self.java = profiler, interval, group, java

    @property
    def key(self):
        base = self.profiler if self.profiler == "none" else f"{self.profiler} {self.interval}"
        return base + (" (sps JDK)" if self.group == "sps" else "")


def cells_for(w, a, spsjava):
    """The cells of workload w: on the stock JDK none, hpm-asgct, async-profiler and JFR at
    every interval; hpm-jvmti and hpm-sps on the patched JDK with its own none (hpm-jvmti on
    the stock JDK when there is no patched JDK), on multi-threaded workloads only."""
    cells = []
    for i in a.intervals:
        for p in ("hpm-asgct", "async-profiler", "jfr"):
            if p in a.profilers and not (p == "jfr" and prof.seconds(i) < 0.001):
                cells.append(Cell(p, i, "stock", a.java))
    # The stock JDK's own baseline, when something runs there (or it is all that runs).
    if cells or not (spsjava and w.name in a.sps_workloads and {"hpm-jvmti", "hpm-sps"} & set(a.profilers)):
        cells.insert(0, Cell("none", None, "stock", a.java))
    sps_modes = [p for p in ("hpm-jvmti", "hpm-sps") if p in a.profilers]
    if sps_modes and (w.multithreaded or a.quick or a.smoke) and w.name in a.sps_workloads:
        if spsjava:
            cells.append(Cell("none", None, "sps", spsjava))
            cells += [Cell(p, i, "sps", spsjava) for i in a.intervals for p in sps_modes]
        elif "hpm-jvmti" in sps_modes:
            cells += [Cell("hpm-jvmti", i, "stock", a.java) for i in a.intervals]
    return cells


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench suite", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one workload, one interval, two runs (CI)")
    ap.add_argument("--smoke", action="store_true", help="functional check: each workload once per JDK, each profiler once")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--intervals", default="10ms,1ms", help="comma-separated, e.g. 10ms,1ms,100us (JFR is left out below 1ms)")
    ap.add_argument("--workloads", default=",".join(w.name for w in WORKLOADS))
    ap.add_argument("--sps-workloads", default="sunflow,h2,lucene", help="workloads with hpm-jvmti/hpm-sps cells")
    ap.add_argument("--profilers", default=",".join(PROFILERS))
    ap.add_argument("--iterations", type=int, help="override every workload's iteration count")
    ap.add_argument("--warmup", type=int, default=WARMUP,
                    help=f"iterations left out of the steady-state time (default {WARMUP}; Hofer et al. use 20 of 30)")
    ap.add_argument("--java", default="java", help="the stock JDK's java (default: java on PATH, JDK 17)")
    ap.add_argument("--sps-jdk", help="home of the patched JDK (default: HPM_SPS_JDK, then "
                    "/var/cache/hpm/jdk-sps-latest); `none`: no patched JDK, hpm-jvmti on the stock JDK")
    ap.add_argument("--async-profiler", dest="ap_version", default=AP_VERSION, help="Maven Central version")
    ap.add_argument("--shares-seconds", type=float, default=8.0, help="length of each known-share (Shares) run")
    ap.add_argument("--out", help="output directory (default target/bench-results/<UTC time>)")
    ap.add_argument("--no-docs", action="store_true", help="do not touch docs/ (always so with --quick/--smoke)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and its expected duration, run nothing")
    ap.add_argument("--render", metavar="RESULTS_DIR",
                    help="re-render the tables, plots and docs section from a finished run's results.json")
    a = ap.parse_args(argv)
    if a.quick:
        a.workloads, a.runs, a.intervals = "xalan", 2, "10ms"
        a.sps_workloads = "xalan"
        a.iterations = a.iterations or 4
        a.shares_seconds = min(a.shares_seconds, 2.0)
    if a.smoke:
        a.runs, a.iterations = 1, a.iterations or 2
        a.sps_workloads = a.workloads.split(",")[0]
        a.intervals = a.intervals.split(",")[0]
    a.intervals = [i.strip() for i in a.intervals.split(",") if i.strip()]
    a.profilers = [p.strip() for p in a.profilers.split(",")]
    a.sps_workloads = a.sps_workloads.split(",")
    for p in a.profilers:
        if p not in PROFILERS:
            sys.exit(f"unknown profiler `{p}`; choose from {', '.join(PROFILERS)}")
    for i in a.intervals:
        prof.seconds(i)
    unknown = [n for n in a.workloads.split(",") if n not in BY_NAME]
    if unknown:
        sys.exit(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(BY_NAME)}")
    a.workloads = [BY_NAME[n] for n in a.workloads.split(",")]
    a.docs = not (a.no_docs or a.quick or a.smoke)
    # Absolute: each JVM runs in its own directory below it.
    a.out = os.path.abspath(a.out or os.path.join(target_dir(), "bench-results", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))
    return a


def plan(a, spsjava):
    """[(run index, workload, cell)] in interleaved order: every run round visits every
    workload, and the order of cells rotates from one round to the next."""
    jobs = []
    for r in range(a.runs):
        for w in a.workloads:
            cells = cells_for(w, a, spsjava)
            k = r % len(cells)
            jobs += [(r, w, c) for c in cells[k:] + cells[:k]]
    return jobs


def smoke_jobs(a, spsjava):
    """--smoke: each workload without a profiler on JDK 17 and every Temurin JDK, then each
    profiler mode once on the first workload."""
    jobs = []
    for java in [a.java] + temurins():
        jobs += [(0, w, Cell("none", None, "stock", java)) for w in a.workloads]
    w = a.workloads[0]
    jobs += [(0, w, c) for c in cells_for(w, a, spsjava) if c.profiler != "none"]
    return jobs


def render(a):
    """Tables, plots and (unless --no-docs) the docs section again from a saved results.json."""
    with open(os.path.join(a.render, "results.json")) as f:
        results = json.load(f)
    for key, g in results["geomean"].items():  # results saved before steady-state means existed
        if "steady_ratio" not in g:
            cs = [c for c in results["cells"] if c["cell"] == key and c.get("steady_ratio")]
            g["steady_ratio"] = bench_report.geomean([c["steady_ratio"] for c in cs]) if cs else None
    md = bench_report.markdown(results)
    with open(os.path.join(a.render, "tables.md"), "w") as f:
        f.write(md)
    svgs = bench_report.svgs(results, os.path.join(a.render, "img"))
    if a.docs:
        os.makedirs(os.path.join(ROOT, "docs", "img"), exist_ok=True)
        for s in svgs:
            shutil.copy(s, os.path.join(ROOT, "docs", "img", os.path.basename(s)))
        bench_report.rewrite_docs(os.path.join(ROOT, "docs", "benchmarks.md"), md)
    print(f"bench: rendered {a.render}/tables.md" + (" and the docs section" if a.docs else ""))


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        return render(a)
    spsjava = sps_jdk(a)
    os.makedirs(a.out, exist_ok=True)
    agent, hpm = build_agent()
    probe_failures = []
    if spsjava and "hpm-sps" in a.profilers:
        r = measure([spsjava, f"-agentpath:{agent}=sampler=sps,interval=10ms,file={a.out}/probe.jfr,quiet", "-version"])
        if r.status != 0:
            why = " | ".join(r.err.strip().splitlines()[-2:])
            print(f"bench: sampler=sps does not start on {spsjava}: {why}\nbench: the hpm-sps cells are left out", flush=True)
            probe_failures.append(f"hpm-sps on {spsjava}: {why}")
            a.profilers.remove("hpm-sps")
    jobs = smoke_jobs(a, spsjava) if a.smoke else plan(a, spsjava)
    shares_cells = sorted({(c.profiler, c.interval, c.group, c.java) for _, _, c in jobs if c.profiler != "none"},
                          key=lambda t: (t[2], t[0], prof.seconds(t[1])))
    est = sum(EST_RUN_S[w.name] * (a.iterations or w.iterations()) / w.iterations() + 1 for _, w, _ in jobs)
    est += len(shares_cells) * (a.shares_seconds + 1.5) + 60
    print(f"bench: {len(jobs)} workload runs + {len(shares_cells)} known-share runs; expected duration about "
          f"{est / 60:.0f} min on 2 quiet cores (plus the first package fetch)", flush=True)
    if a.dry_run:
        for _, w, c in jobs[:len(jobs) // a.runs]:
            print(f"  {w.name}: {c.key}")
        print(f"  ... x {a.runs} runs; known shares: {', '.join(Cell(*t).key for t in shares_cells)}")
        return
    if not spsjava and any(p in a.profilers for p in ("hpm-sps",)):
        print("bench: no patched JDK (HPM_SPS_JDK or /var/cache/hpm/jdk-sps-latest): sampler=sps cells left out, "
              "sampler=jvmti runs on the stock JDK", flush=True)
    aplib = async_profiler(a.ap_version) if "async-profiler" in a.profilers else None
    root = fetch(a.workloads)
    cps = compile_drivers(root, a.workloads)
    tools = prof.Tools(agent, hpm, aplib, a.out)
    rows, checks = [], [(f, False) for f in probe_failures]
    started = time.monotonic()
    csv_path = os.path.join(a.out, "runs.csv")
    with open(csv_path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=prof.ROW_FIELDS)
        wr.writeheader()
        for n, (r, w, c) in enumerate(jobs):
            args = [str(a.iterations)] + w.args[1:] if a.iterations else w.args
            row = prof.run_cell(tools, w, c, r, cps[w.name], w.main, args, a.warmup)
            rows.append(row)
            wr.writerow(row)
            f.flush()
            done = time.monotonic() - started
            eta = done / (n + 1) * (len(jobs) - n - 1)
            state = "ok" if row["ok"] else f"FAILED: {row['error']}"
            print(f"[{n + 1}/{len(jobs)}] run {r + 1} {w.name} {c.key} ({java_version(c.java) if a.smoke else c.group}): "
                  f"wall {row['wall_s']:.1f}s cpu {row['cpu_s']:.1f}s rss {row['rss_mib']:.0f}MiB"
                  f"{'' if c.profiler == 'none' else ' samples %s' % row['samples']} {state}; ETA {eta / 60:.1f} min",
                  flush=True)
            checks.append((f"{w.name} {c.key} on {java_version(c.java)}", row["ok"]))
    shares = []
    for p, i, g, java in shares_cells:
        res = prof.run_shares(tools, Cell(p, i, g, java), a.shares_seconds)
        shares.append(res)
        print(f"bench: known shares {Cell(p, i, g, java).key}: {res['summary']}", flush=True)
        checks.append((f"shares {Cell(p, i, g, java).key}", res["ok"]))
    agreement = prof.agreement(tools, rows)
    for g in agreement:
        checks.append((f"compare {g['workload']} {g['pair']} {g['interval']}", g["ok"]))
    meta = {
        "command": " ".join(["python3 scripts/bench suite"] + list(sys.argv[1:] if argv is None else argv)),
        "machine": machine(a.java), "java": java_version(a.java),
        "sps_java": java_version(spsjava) if spsjava else None,
        "async_profiler": a.ap_version, "runs": a.runs, "intervals": a.intervals, "warmup": a.warmup,
        "versions": versions(a.workloads), "duration_min": (time.monotonic() - started) / 60,
        "workloads": [{"name": w.name, "threads": w.threads, "what": w.what} for w in a.workloads],
    }
    results = bench_report.aggregate(rows, shares, agreement, meta)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    md = bench_report.markdown(results, img_prefix="img/" if not a.docs else "img/")
    with open(os.path.join(a.out, "tables.md"), "w") as f:
        f.write(md)
    svgs = bench_report.svgs(results, os.path.join(a.out, "img"))
    checks.append(("tables and plots rendered", bool(md) and all(os.path.getsize(s) > 0 for s in svgs)))
    if a.docs:
        os.makedirs(os.path.join(ROOT, "docs", "img"), exist_ok=True)
        for s in svgs:
            shutil.copy(s, os.path.join(ROOT, "docs", "img", os.path.basename(s)))
        bench_report.rewrite_docs(os.path.join(ROOT, "docs", "benchmarks.md"), md)
        print("bench: docs/benchmarks.md results section and docs/img/bench-*.svg rewritten", flush=True)
    with open(os.path.join(a.out, "checks.txt"), "w") as f:
        for name, ok in checks:
            f.write(f"{'ok' if ok else 'FAILED'} {name}\n")
        if not spsjava and "hpm-sps" in a.profilers:
            f.write("SKIPPED hpm-sps cells: no patched JDK (HPM_SPS_JDK or /var/cache/hpm/jdk-sps-latest)\n")
    failed = [n for n, ok in checks if not ok]
    print(f"bench: results in {a.out} (tables.md, results.json, runs.csv, img/); "
          f"{len(checks) - len(failed)} checks ok, {len(failed)} failed" + (": " + "; ".join(failed) if failed else ""))
    sys.exit(1 if failed else 0)
