#!/usr/bin/env python3
"""Paired overhead of sampler=jvmti against sampler=sps inside each JVM (docs/benchmarks.md,
"Partial safepoints"). Separate JVMs differ by ±10-15% from run to run on this machine (JIT
decisions, heap layout, the host), which hides a cost of a few percent. Here every run is one
JVM on the patched JDK that loads the agent through the Java bridge, runs the warm-up
iterations, then the measured ones in the order off, on, on, off, ... with a session of the
cell's sampler started before each "on" iteration and stopped after it (bench/src/Toggle.java).
A run's overhead is its "on" iterations' total time over its "off" ones' (wall, and the CPU time
of the whole process, agent threads included); a cell is the median and quartiles over runs.
Hofer et al. measure steady state too (30 iterations, the first 20 discarded).

    scripts/bench-paired.py                          3 workloads x {jvmti,sps} x {10ms,1ms}, 5 runs
    scripts/bench-paired.py --runs 3 --workloads h2 --intervals 1ms
    scripts/bench-paired.py --workloads h2 --workload-args "16 250" --intervals 10ms   16 clients
    scripts/bench-paired.py --samplers jvmti,sps,isps  incremental stack tracing too (issue 16): tables
                                                     jvmti/sps, jvmti/isps and sps/isps
    scripts/bench-paired.py --dry-run                the plan and its expected duration
    scripts/bench-paired.py --quick                  one short run of xalan at 10ms (CI: checks the harness;
                                                     with --same-jvm, one block of every cell)
    scripts/bench-paired.py --versus-async-profiler  hpm (sampler=asgct) against async-profiler 4.6
                                                     (event=cpu, its Java API) on the stock JDK
    scripts/bench-paired.py --data                   hpm with the `data` option against hpm without it
                                                     (issue 13), on the stock JDK
    scripts/bench-paired.py --versus-async-profiler --hpm-variants 'sampler=chain;sampler=asgct' --kernel-floor
                                                     two hpm configurations and async-profiler in the same
                                                     invocation, and the kernel's own cost of the samples:
                                                     `perf record -e cpu-clock` without call chains, enabled
                                                     and disabled around the same iterations (--control fifo)
    scripts/bench-paired.py --versus-async-profiler --hpm-variants 'sampler=chain;sampler=asgct' --kernel-floor --same-jvm
                                                     the same cells taking turns inside each JVM (off, P1..Pn,
                                                     Pn..P1, off, ...): the profilers meet the same compiled
                                                     code; raise --iterations (10 per block of 4 cells)
    scripts/bench-paired.py --versus-async-profiler --same-jvm --attribute
                                                     each JVM under `perf record -k CLOCK_REALTIME`: every
                                                     cell's CPU per iteration by thread group and code
                                                     (scripts/bench_attribute.py), in OUT/attribution.md
    scripts/bench-paired.py --versus-async-profiler --mode alloc   hpm's event=alloc against async-profiler's,
                                                     at the --intervals as allocation intervals (default 512k)
    scripts/bench-paired.py --versus-async-profiler --mode lock    the same for event=lock, --intervals as
                                                     the shortest wait recorded (default 10us)

Before each measured iteration the harness collects the heap (System.gc(), outside the timed
part; --no-gc leaves it out): otherwise a young collection every k iterations falls on the same
positions of every block (bench/src/Toggle.java, `collect`). The heap is then fixed at 1 GB and
touched at start (-Xms1g -XX:+AlwaysPreTouch): shrunk after each full collection, it was
faulted in again by every iteration.

With --quiet-jit PCT the warm-up lasts at least --warmup iterations and then until the JIT
compilers' time over the last 10 iterations is at most PCT% of their wall time (at most
--max-warmup iterations): the suite's programs compile for 100-200 iterations, and an iteration
that meets a burst of compilation is slower on 2 cores whatever its cell (Toggle.afterIteration).

Results: OUT/paired.csv (one row per measured iteration), OUT/paired.md (the table). OUT
defaults to target/bench-results/paired-<UTC time>. Timings are benchmarks, never tests."""
import argparse
import csv
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import async_profiler, build_agent, machine, measure, median_interval, patched_java, quartiles, target_dir  # noqa: E402
from bench_profiles import LATENCY  # noqa: E402
import bench_attribute  # noqa: E402
from bench_report import geomean  # noqa: E402
from bench_workloads import BY_NAME, compile_drivers, fetch  # noqa: E402

PAIRED = re.compile(r"^hpm-bench paired (\d+) (\S+) ([0-9.]+) ([0-9.]+)$", re.M)
# "hpm: 1,153 samples, none dropped": the count has thousands separators.
SAMPLES = re.compile(r"^hpm: ([\d,]+) samples", re.M)
# Seconds per iteration on 2 quiet cores, for the expected duration.
EST_ITER_S = {"sunflow": 0.7, "h2": 0.3, "lucene": 0.5, "xalan": 0.5, "rhino": 0.6, "ecj": 1.0}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="sunflow,h2,lucene")
    ap.add_argument("--samplers", default="jvmti,sps")
    ap.add_argument("--intervals", default="10ms,1ms")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=30, help="per run, warm-up included (default 30, as Hofer et al.)")
    ap.add_argument("--warmup", type=int, default=10, help="iterations before the measured ones (default 10)")
    ap.add_argument("--workload-args", help="the workload's arguments after the iteration count (one workload only), "
                    "e.g. `16 1000` for h2 with 16 clients")
    ap.add_argument("--java", help="java of the patched JDK (default: HPM_SPS_JDK, then /var/cache/hpm/jdk-sps-latest)")
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--hpm-options", help="more agent options for hpm's sessions with --versus-async-profiler or --data, "
                    "e.g. stack=asgct")
    ap.add_argument("--quick", action="store_true", help="one run of 8 iterations of xalan at 10ms (CI)")
    ap.add_argument("--versus-async-profiler", dest="versus", action="store_true",
                    help="compare hpm's default sampler with async-profiler (event=cpu) on the stock JDK")
    ap.add_argument("--async-profiler", dest="ap_version", default="4.6", help="Maven Central version")
    ap.add_argument("--hpm-variants", help="with --versus-async-profiler: several hpm configurations separated by `;` "
                    "(each a cell, each compared with async-profiler), e.g. 'sampler=chain;sampler=asgct'")
    ap.add_argument("--kernel-floor", action="store_true",
                    help="with --versus-async-profiler (cpu): also `perf record -e cpu-clock -c PERIOD` without call "
                    "chains, enabled around the sampled iterations: what the kernel's samples alone cost")
    ap.add_argument("--same-jvm", action="store_true",
                    help="with --versus-async-profiler (cpu): every cell takes turns in each JVM (off, P1..Pn, Pn..P1, "
                    "off, ..., the cells' order shuffled per block) instead of one JVM per cell; profilers are then "
                    "compared on the same compiled code")
    ap.add_argument("--attribute", action="store_true",
                    help="with --same-jvm: each JVM under `perf record -k CLOCK_REALTIME -e cpu-clock` (1 ms), and "
                    "every cell's CPU per iteration by thread group and code in OUT/attribution.md (perf's own "
                    "samples cost every cell alike, ~1.3%%); each run's perf data stays beside it (attribution.data) "
                    "for `perf report`")
    ap.add_argument("--no-gc", action="store_true", help="no full collection before each measured iteration")
    ap.add_argument("--quiet-jit", type=float, default=0, metavar="PCT",
                    help="warm up past --warmup until the JIT compilers' time over 10 iterations is at most PCT%% "
                    "of their wall time (default 0: --warmup iterations)")
    ap.add_argument("--max-warmup", type=int, default=400, help="with --quiet-jit: the longest warm-up (default 400)")
    ap.add_argument("--report", metavar="OUT", help="only make the tables again from OUT/paired.csv (give the cells' "
                    "options as when it was measured)")
    ap.add_argument("--data", action="store_true", help="compare hpm's sessions with and without the `data` option")
    ap.add_argument("--mode", choices=("cpu", "alloc", "lock"), default="cpu",
                    help="with --versus-async-profiler: what both profile (alloc, lock: --intervals are their settings)")
    a = ap.parse_args()
    if a.mode != "cpu" and not a.versus:
        sys.exit("bench-paired: --mode needs --versus-async-profiler")
    if a.mode != "cpu" and a.intervals == "10ms,1ms":
        a.intervals = "512k" if a.mode == "alloc" else "10us"
    if a.versus and a.data:
        sys.exit("bench-paired: --versus-async-profiler or --data, not both")
    if (a.hpm_variants or a.kernel_floor) and not (a.versus and a.mode == "cpu"):
        sys.exit("bench-paired: --hpm-variants and --kernel-floor need --versus-async-profiler (cpu)")
    if a.same_jvm and not (a.versus and a.mode == "cpu"):
        sys.exit("bench-paired: --same-jvm needs --versus-async-profiler (cpu)")
    if a.attribute and (not a.same_jvm or a.kernel_floor):
        sys.exit("bench-paired: --attribute needs --same-jvm, and not --kernel-floor (both run the JVM under perf)")
    if a.hpm_variants and a.hpm_options:
        sys.exit("bench-paired: --hpm-variants or --hpm-options, not both")
    if a.hpm_variants and "," in a.hpm_variants.replace(";", ""):
        # The cells are named `hpm[OPTIONS]` in a comma-separated list.
        sys.exit("bench-paired: --hpm-variants: one option per variant (`sampler=chain;sampler=asgct`); "
                 "several options in one variant are not supported")
    if a.versus:
        variants = [f"hpm[{v}]" for v in a.hpm_variants.split(";")] if a.hpm_variants else ["hpm"]
        a.samplers = ",".join(variants + ["async-profiler"] + (["perf"] if a.kernel_floor else []))
        a.java = a.java or "java"
    if a.data:
        a.samplers = "hpm,hpm-data"
        a.java = a.java or "java"
    if a.quick:
        a.workloads, a.intervals, a.runs, a.iterations, a.warmup = "xalan", "10ms", 1, 8, 4
    a.workloads = [BY_NAME[w] for w in a.workloads.split(",")]
    a.samplers, a.intervals = a.samplers.split(","), a.intervals.split(",")
    if a.workload_args and len(a.workloads) != 1:
        sys.exit("bench-paired: --workload-args needs exactly one workload")
    if a.same_jvm:
        # One palindromic block: off, every cell, every cell again in reverse, off.
        block = 2 * (len(a.samplers) + 1)
        if a.quick:
            a.iterations = a.warmup + block
        if (a.iterations - a.warmup) % block or a.iterations <= a.warmup:
            sys.exit(f"bench-paired: --same-jvm with {len(a.samplers)} cells measures whole blocks of {block} "
                     "iterations: --iterations minus --warmup must be a multiple of it")
    if a.iterations - a.warmup < 4:
        sys.exit("bench-paired: need at least 4 measured iterations (one off-on-on-off block)")
    a.java = a.java or patched_java()
    if not a.java and a.quick:
        print("SKIPPED bench-paired sps: no patched JDK (bash jvm-patches/build.sh); jvmti on the stock JDK", flush=True)
        a.java, a.samplers = "java", [s for s in a.samplers if s not in ("sps", "isps")]
    if not a.java and ("sps" in a.samplers or "isps" in a.samplers):
        sys.exit("bench-paired: no patched JDK; build it with `bash jvm-patches/build.sh` or give --java")
    a.attributions = {}
    a.out = os.path.abspath(a.out or os.path.join(target_dir(), "bench-results", time.strftime("paired-%Y%m%dT%H%M%SZ", time.gmtime())))
    return a


def parse_ns(interval):
    """`1ms`, `10ms`, `500us`, `100000` (ns) as nanoseconds."""
    for suffix, mult in (("ms", 1_000_000), ("us", 1_000), ("ns", 1), ("s", 1_000_000_000)):
        if interval.endswith(suffix):
            return int(float(interval[:-len(suffix)]) * mult)
    return int(interval)


def pct(x):
    return f"{x * 100:+.1f}%"


def cell_setup(a, workdir, sampler, interval):
    """A cell's session options, JVM flags, command prefix and its kind for a rotation (hpm, ap, perf)."""
    extra, prefix, kind = [], [], "hpm"
    if sampler == "async-profiler":
        # Its own JFR, written at each stop (outside the timed iterations), as hpm's is.
        opts = {"cpu": f"start,event=cpu,interval={interval}", "alloc": f"start,event=alloc,alloc={interval}",
                "lock": f"start,event=lock,lock={interval}"}[a.mode] + f",file={workdir}/profile-ap.jfr"
        extra, kind = [f"-Dhpm.bench.async-profiler={a.aplib[0]}"], "ap"
    elif sampler == "perf":
        kind = "perf"
        # The kernel's samples alone: perf record (IP, TID, time; no call chains) starts disabled
        # and Toggle enables it around the sampled iterations through perf's control FIFOs.
        ctl, ack = os.path.join(workdir, "perf-ctl"), os.path.join(workdir, "perf-ack")
        for fifo in (ctl, ack):
            if os.path.exists(fifo):
                os.unlink(fifo)
            os.mkfifo(fifo)
        opts, extra = "perf", [f"-Dhpm.bench.perf-control={ctl},{ack}"]
        period = parse_ns(interval)
        prefix = ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(period), "-D", "-1",
                  "--control", f"fifo:{ctl},{ack}", "-o", os.path.join(workdir, "perf.data"), "--"]
    elif sampler in ("hpm", "hpm-data") or sampler.startswith("hpm["):
        mode = {"cpu": f"interval={interval}", "alloc": f"event=alloc,alloc={interval}",
                "lock": f"event=lock,lock={interval}"}[a.mode]
        more = sampler[4:-1] if sampler.startswith("hpm[") else a.hpm_options
        opts = f"{mode},file={workdir}/profile.jfr" + (f",{more}" if more else "")
        opts += ",data" if sampler == "hpm-data" else ""
    else:
        opts = f"sampler={sampler},interval={interval},file={workdir}/profile.jfr"
    return opts, extra, prefix, kind


def run_one(a, agent, cp, w, sampler, interval, r):
    workdir = os.path.join(a.out, "runs", w.name, f"{sampler}-{interval}", str(r))
    os.makedirs(workdir, exist_ok=True)
    opts, extra, prefix, kind = cell_setup(a, workdir, sampler, interval)
    if kind == "ap":
        cp = f"{cp}:{a.aplib[1]}"
    res, its, err = run_jvm(a, agent, cp, w, workdir, prefix, [f"-Dhpm.bench.toggle={opts}"] + extra,
                            lambda k: k == "on")
    if err:
        return None, its, err
    err = check_outputs(a, workdir, sampler, res.err)
    if err:
        return None, its, err
    ov = overhead([x[2:] for x in its if x[1]], [x[2:] for x in its if not x[1]])
    lat = [float(median) for median, _p95 in LATENCY.findall(res.err)]
    ov["latency_us"] = statistics.median(lat) if lat else None
    return ov, its, None


def run_jvm(a, agent, cp, w, workdir, prefix, props, label):
    """Runs one JVM of workload `w` with the toggle's `props` in `workdir` (command, stdout and stderr
    kept there). Returns (result, measured iterations as (i, label(cell), wall, cpu), error or None)."""
    args = [str(a.iterations)] + (a.workload_args.split() if a.workload_args else w.args[1:])
    # With the collection before each iteration, the heap is fixed and touched at start: a heap
    # that shrinks after each full collection is faulted in again by the next iteration (30-45
    # ms of page faults per lucene iteration, in the kernel of the program's threads).
    gc = ["-Dhpm.bench.gc=false"] if a.no_gc else ["-Xms1g", "-XX:+AlwaysPreTouch"]
    quiet = [f"-Dhpm.bench.quiet-jit={a.quiet_jit}", f"-Dhpm.bench.max-warmup={a.max_warmup}"] if a.quiet_jit > 0 else []
    cmd = prefix + [a.java, "-Xmx1g", f"-Dhpm.agent.path={agent}", f"-Dhpm.bench.warmup={a.warmup}"] + gc + quiet + \
        props + ["-cp", cp, w.main] + args
    with open(os.path.join(workdir, "command.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    res = measure(cmd, cwd=workdir, stdout_path=os.path.join(workdir, "stdout.txt"))
    with open(os.path.join(workdir, "stderr.txt"), "w") as f:
        f.write(res.err)
    its = [(int(i), label(k), float(wall), float(cpu)) for i, k, wall, cpu in PAIRED.findall(res.out)]
    if res.status != 0 or len(its) != a.iterations - a.warmup:
        tail = " | ".join(res.err.strip().splitlines()[-3:])
        return res, its, f"exit {res.status}, {len(its)} measured iterations: {tail}"
    return res, its, None


def overhead(on, off):
    """Wall and CPU of the sampled iterations' mean over the unsampled ones', minus 1; each
    iteration a (wall, cpu) pair."""
    return {m: sum(x[k] for x in on) / len(on) / (sum(x[k] for x in off) / len(off)) - 1
            for m, k in (("wall", 0), ("cpu", 1))}


def run_rotation(a, agent, cp, w, interval, r):
    """One JVM in which every cell takes turns (Toggle's hpm.bench.rotate): each cell's overhead
    against the same JVM's unsampled iterations. Returns ({cell: overhead}, iterations, error)."""
    workdir = os.path.join(a.out, "runs", w.name, f"same-jvm-{interval}", str(r))
    os.makedirs(workdir, exist_ok=True)
    specs, extra, prefix, names = [], [], [], {}
    for k, s in enumerate(a.samplers):
        sub = os.path.join(workdir, f"cell{k}")
        os.makedirs(sub, exist_ok=True)
        opts, e, p, kind = cell_setup(a, sub, s, interval)
        names[f"c{k}"] = s
        specs.append(f"c{k}={kind}:{opts}")
        extra += [x for x in e if x not in extra]
        prefix = prefix or p
        if kind == "ap":
            cp = f"{cp}:{a.aplib[1]}"
    props = ["-Dhpm.bench.rotate=" + "|".join(specs), f"-Dhpm.bench.seed={r}"] + extra
    data = os.path.join(workdir, "attribution.data")
    if a.attribute:
        prefix = ["perf", "record", "-q", "-k", "CLOCK_REALTIME", "-e", "cpu-clock", "-c",
                  str(int(bench_attribute.PERIOD_MS * 1_000_000)), "-o", data, "--"]
    res, its, err = run_jvm(a, agent, cp, w, workdir, prefix, props, lambda k: names.get(k, "off"))
    if err:
        return None, its, err
    if a.attribute:
        per_cell, per_it, cells, _ = bench_attribute.attribute(data, res.out, bench_attribute.PERIOD_MS)
        per_cell = {names.get(c, c): v for c, v in per_cell.items()}
        a.attributions.setdefault((w.name, interval), []).append(per_cell)
        with open(os.path.join(workdir, "attribution.md"), "w") as f:
            f.write(bench_attribute.table(per_cell, ["off"] + a.samplers) + "\n\nGC threads, ms per measured "
                    "iteration: " + bench_attribute.gc_sequence(per_it, {i: names.get(c, c) for i, c in cells.items()}) + "\n")
    for k, s in enumerate(a.samplers):
        sub = os.path.join(workdir, f"cell{k}")
        err = check_outputs(a, sub, s, res.err)
        # The samples check reads every hpm cell's summaries at once: each cell's file too.
        jfr = os.path.join(sub, "profile.jfr")
        if not err and s.startswith("hpm") and not (os.path.exists(jfr) and os.path.getsize(jfr) > 0):
            err = f"{s} wrote no profile: see {workdir}/stderr.txt"
        if err:
            return None, its, err
    off = [x for x in its if x[1] == "off"]
    out = {}
    for s in a.samplers:
        on = [x for x in its if x[1] == s]
        if not on or not off:
            return None, its, f"no iterations of {s} or unsampled ones: raise --iterations"
        out[s] = overhead([x[2:] for x in on], [x[2:] for x in off])
        out[s]["latency_us"] = None
    return out, its, None


def check_outputs(a, workdir, sampler, err_text):
    """None, or why the sessions of `sampler` did not profile."""
    if sampler == "perf":
        pass  # perf's file is not read: its samples are not the point, their cost is
    elif sampler == "async-profiler":
        ap_jfr = os.path.join(workdir, "profile-ap.jfr")
        if not os.path.exists(ap_jfr) or os.path.getsize(ap_jfr) == 0:
            return f"async-profiler wrote no profile: see {workdir}/stderr.txt"
    else:
        samples = [int(n.replace(",", "")) for n in SAMPLES.findall(err_text)]
        # A lock profile of a workload without contention is empty, rightly.
        if not samples or (min(samples) == 0 and a.mode != "lock"):
            return f"a session resolved no samples ({samples}): see {workdir}/stderr.txt"
    return None


def results_from_csv(a, path):
    """The per-run overheads of a finished invocation, from its paired.csv."""
    runs = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            key = (row["workload"], row["interval"], row["run"]) + (() if a.same_jvm else (row["sampler"],))
            cell = row["sampler"] if row["sampled"] == "1" else "off"
            runs.setdefault(key, {}).setdefault(cell, []).append((float(row["wall_ms"]), float(row["cpu_ms"])))
    results = {}
    for key in sorted(runs, key=lambda k: (k[0], k[1], int(k[2])) + k[3:]):
        cells = runs[key]
        off = cells.get("off")
        if not off or len(cells) < 2:
            continue
        for cell, its in cells.items():
            if cell == "off":
                continue
            ov = overhead(its, off)
            ov["latency_us"] = None
            results.setdefault((key[0], cell, key[1]), []).append(ov)
    return results


def main():
    a = parse_args()
    if a.report:
        print(report(a, results_from_csv(a, os.path.join(a.report, "paired.csv"))))
        return
    # Interleaved: each run visits every workload and cell, the cells' order rotating.
    cells = [(s, i) for i in a.intervals for s in a.samplers]
    if a.same_jvm:
        # Every cell in each JVM: one job per run, workload and interval.
        jobs = [(r, w, None, i) for r in range(a.runs) for w in a.workloads for i in a.intervals]
    else:
        jobs = [(r, w) + c for r in range(a.runs) for w in a.workloads
                for c in cells[r % len(cells):] + cells[:r % len(cells)]]
    est = sum(EST_ITER_S.get(w.name, 1.0) * a.iterations * 1.15 + 3 for _, w, _, _ in jobs)
    warm = f"{a.warmup} warm-up" + (f" at least, until the JIT is quiet ({a.quiet_jit:g}%)" if a.quiet_jit > 0 else "")
    print(f"bench-paired: {len(jobs)} runs of {a.iterations} iterations ({warm}); expected about "
          f"{est / 60:.0f} min on 2 quiet cores", flush=True)
    if a.dry_run:
        return
    os.makedirs(a.out, exist_ok=True)
    agent, _ = build_agent()
    if "async-profiler" in a.samplers:
        lib = async_profiler(a.ap_version)
        jar = os.path.expanduser(f"~/.m2/repository/tools/profiler/async-profiler/{a.ap_version}/"
                                 f"async-profiler-{a.ap_version}.jar")
        a.aplib = (lib, jar)
    root = fetch(a.workloads)
    cps = compile_drivers(root, a.workloads)
    results, failed = {}, 0
    started = time.monotonic()
    with open(os.path.join(a.out, "paired.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["workload", "sampler", "interval", "run", "iteration", "sampled", "wall_ms", "cpu_ms"])
        for k, (r, w, s, i) in enumerate(jobs):
            # Only runs that succeeded go to the csv, so --report makes the same tables.
            if a.same_jvm:
                ovs, its, err = run_rotation(a, agent, cps[w.name], w, i, r)
                rows = [[w.name, cell, i, r, it, int(cell != "off"), wall, cpu] for it, cell, wall, cpu in its]
            else:
                ov, its, err = run_one(a, agent, cps[w.name], w, s, i, r)
                ovs = {s: ov}
                rows = [[w.name, s, i, r, it, int(on), wall, cpu] for it, on, wall, cpu in its]
            if not err:
                wr.writerows(rows)
            f.flush()
            eta = (time.monotonic() - started) / (k + 1) * (len(jobs) - k - 1)
            what = f"{w.name} {'every cell' if a.same_jvm else s} {i} run {r + 1}"
            if err:
                print(f"[{k + 1}/{len(jobs)}] {what}: FAILED: {err}", flush=True)
                failed += 1
                continue
            for cell, ov in ovs.items():
                results.setdefault((w.name, cell, i), []).append(ov)
            said = "; ".join(f"{c} wall {pct(o['wall'])} cpu {pct(o['cpu'])}" for c, o in ovs.items())
            print(f"[{k + 1}/{len(jobs)}] {what}: {said}; ETA {eta / 60:.1f} min", flush=True)
    md = report(a, results)
    with open(os.path.join(a.out, "paired.md"), "w") as f:
        f.write(md)
    print(md)
    if a.attributions:
        md = attribution_report(a)
        with open(os.path.join(a.out, "attribution.md"), "w") as f:
            f.write(md)
        print(md)
    print(f"bench-paired: {a.out}/paired.md, paired.csv; {len(jobs) - failed} runs ok, {failed} failed")
    if failed:
        sys.exit(1)


def report(a, results):
    # The pair compared: the baseline first (jvmti / async-profiler), the candidate second.
    if a.versus:
        cands = [s for s in a.samplers if s.startswith("hpm")]
        tables = [report_pair(a, results, "async-profiler", c) for c in cands]
        if "perf" in a.samplers:
            tables.append(floor_table(a, results, cands))
        if a.same_jvm:
            pairs = [(c, "async-profiler") for c in cands] + [(b, c) for k, b in enumerate(cands) for c in cands[k + 1:]]
            tables.append(same_jvm_table(a, results, pairs))
        return "\n".join(tables)
    if a.data:
        return report_pair(a, results, "hpm", "hpm-data")
    # Each patched-JVM sampler against the global-safepoint baseline, and isps against sps.
    pairs = [("jvmti", c) for c in a.samplers if c != "jvmti" and "jvmti" in a.samplers]
    if "sps" in a.samplers and "isps" in a.samplers:
        pairs.append(("sps", "isps"))
    return "\n".join(report_pair(a, results, b, c) for b, c in pairs)


def attribution_report(a):
    """--attribute: per workload and interval, each cell's CPU per iteration by group, the mean
    over runs."""
    out = [f"CPU per measured iteration (ms), by thread group and code, from `perf record -k CLOCK_REALTIME -e "
           f"cpu-clock -c {bench_attribute.PERIOD_MS}ms` of each JVM; the mean over runs "
           "(each run's tables and its collections per iteration: runs/WORKLOAD/same-jvm-INTERVAL/RUN/attribution.md).",
           ""]
    order = ["off"] + a.samplers
    for (w, i), runs in sorted(a.attributions.items()):
        mean = {c: {g: statistics.mean(r.get(c, {}).get(g, 0.0) for r in runs) for g in bench_attribute.GROUPS}
                for c in order}
        out += [f"{w} at {i} ({len(runs)} runs):", "", bench_attribute.table(mean, order), ""]
    return "\n".join(out)


def same_jvm_table(a, results, pairs):
    """--same-jvm: each pair's CPU compared run by run, inside the same JVMs (the cells' lists are
    aligned by run: a run gives every cell or none)."""
    lines = ["Same JVM, profiler against profiler: per run, the CPU of A's iterations over B's (the JVM's "
             "unsampled iterations cancel out), minus 1; median (q1 / q3) over runs, in how many runs A cost "
             "less, and where the median lies with 90% confidence (the sign test's interval: a cell whose interval "
             "holds 0 does not rank the two); the geometric mean over workloads of the medians:", "",
             "| workload | interval | " + " | ".join(f"{x} vs {y}" for x, y in pairs) + " |",
             "|" + " --- |" * (len(pairs) + 2)]
    for i in a.intervals:
        gm = {}
        for w in a.workloads:
            row = []
            for x, y in pairs:
                xs, ys = results.get((w.name, x, i), []), results.get((w.name, y, i), [])
                rs = [(1 + p["cpu"]) / (1 + q["cpu"]) - 1 for p, q in zip(xs, ys)]
                if not rs:
                    row.append("—")
                    continue
                q1, med, q3 = quartiles(rs)
                gm.setdefault((x, y), []).append(1 + med)
                ci = median_interval(rs)
                row.append(f"{pct(med)} ({pct(q1)} / {pct(q3)}), {sum(r < 0 for r in rs)}/{len(rs)} less"
                           + (f", 90%: {pct(ci[0])} to {pct(ci[1])}" if ci else ""))
            lines.append(f"| {w.name} | {i} | " + " | ".join(row) + " |")
        g = [pct(geomean(gm[p]) - 1) if len(gm.get(p, [])) == len(a.workloads) else "—" for p in pairs]
        lines.append(f"| **geometric mean** | {i} | " + " | ".join(f"**{x}**" for x in g) + " |")
    return "\n".join(lines) + "\n"


def floor_table(a, results, cands):
    """CPU overhead per cell with the kernel's floor (perf record without call chains) beside it."""
    cols = cands + ["async-profiler", "perf"]
    lines = ["Kernel floor: `perf record -e cpu-clock -c PERIOD` (IP, TID, time; no call chains) enabled around the "
             "same iterations. CPU overhead of the JVM process (perf's own reader process is not in it), median over "
             "runs:", "",
             "| workload | interval | " + " | ".join(cols) + " |", "|" + " --- |" * (len(cols) + 2)]
    for i in a.intervals:
        gm = {}
        for w in a.workloads:
            row = []
            for s in cols:
                xs = [o["cpu"] for o in results.get((w.name, s, i), [])]
                if xs:
                    gm.setdefault(s, []).append(statistics.median(xs))
                row.append(pct(statistics.median(xs)) if xs else "—")
            lines.append(f"| {w.name} | {i} | " + " | ".join(row) + " |")
        g = [pct(geomean([1 + x for x in gm[s]]) - 1) if len(gm.get(s, [])) == len(a.workloads) else "—" for s in cols]
        lines.append(f"| **geometric mean** | {i} | " + " | ".join(f"**{x}**" for x in g) + " |")
    return "\n".join(lines) + "\n"


def warmup_words(a):
    """How each run's iterations were measured, for the tables' first line."""
    measured = a.iterations - a.warmup
    if getattr(a, "quiet_jit", 0) > 0:
        return (f"{measured} measured iterations each after a warm-up of at least {a.warmup} that went on until the "
                f"JIT compilers' time over 10 iterations was at most {a.quiet_jit:g}% of their wall time (at most "
                f"{a.max_warmup} iterations; each run's in its stdout.txt, `hpm-bench warmed-up`)")
    return f"{a.iterations} iterations each, the first {a.warmup} not measured"


def report_pair(a, results, base, cand):
    what = {"cpu": "", "alloc": "allocation profiles (interval: bytes); ",
            "lock": "lock profiles (interval: shortest wait recorded); "}[getattr(a, "mode", "cpu")]
    lines = [f"Machine: {machine(a.java)}; {what}{a.runs} runs per cell, {warmup_words(a)}; "
             "overhead = sampled iterations / unsampled ones in the same JVM, "
             "median (q1 / q3) over runs.", "",
             f"| workload | interval | {base} wall | {cand} wall | {cand} / {base} (wall) | {base} CPU | {cand} CPU | "
             f"{cand} / {base} (CPU) | latency {base} / {cand} (us) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def cell(w, s, i, m):
        xs = [o[m] for o in results.get((w, s, i), [])]
        return quartiles(xs) if xs else None

    def fmt(q):
        return f"{pct(q[1])} ({pct(q[0])} / {pct(q[2])})" if q else "—"

    def ratio(j, s):
        if not (j and s):
            return "—"
        return f"{s[1] / j[1]:.2f}" if j[1] > 0 else f"n/a ({base} ≤ 0)"

    for i in a.intervals:
        gm = {}
        for w in a.workloads:
            row = {}
            for s in (base, cand):
                for m in ("wall", "cpu"):
                    row[s, m] = cell(w.name, s, i, m)
                    if row[s, m]:
                        gm.setdefault((s, m), []).append(row[s, m][1])
            lat = [[o["latency_us"] for o in results.get((w.name, s, i), []) if o["latency_us"]] for s in (base, cand)]
            lat = " / ".join(f"{statistics.median(x):.0f}" if x else "—" for x in lat)
            lines.append(f"| {w.name} | {i} | {fmt(row[base, 'wall'])} | {fmt(row[cand, 'wall'])} | "
                         f"{ratio(row[base, 'wall'], row[cand, 'wall'])} | {fmt(row[base, 'cpu'])} | "
                         f"{fmt(row[cand, 'cpu'])} | {ratio(row[base, 'cpu'], row[cand, 'cpu'])} | "
                         f"{lat} |")
        g = {k: geomean([1 + x for x in v]) - 1 for k, v in gm.items() if len(v) == len(a.workloads)}
        if len(g) == 4:
            lines.append(f"| **geometric mean** | {i} | **{pct(g[base, 'wall'])}** | **{pct(g[cand, 'wall'])}** | "
                         f"**{ratio((0, g[base, 'wall'], 0), (0, g[cand, 'wall'], 0))}** | **{pct(g[base, 'cpu'])}** | "
                         f"**{pct(g[cand, 'cpu'])}** | **{ratio((0, g[base, 'cpu'], 0), (0, g[cand, 'cpu'], 0))}** | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
