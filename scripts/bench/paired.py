"""Paired overhead of sampler=jvmti against sampler=sps inside each JVM (docs/benchmarks.md,
"Partial safepoints"). Separate JVMs differ by ±10-15% from run to run on this machine (JIT
decisions, heap layout, the host), which hides a cost of a few percent. Here every run is one
JVM on the patched JDK that loads the agent through the Java bridge, runs the warm-up
iterations, then the measured ones in the order off, on, on, off, ... with a session of the
cell's sampler started before each "on" iteration and stopped after it (bench/src/Toggle.java).
A run's overhead is its "on" iterations' total time over its "off" ones' (wall, and the CPU time
of the whole process, agent threads included); a cell is the median and quartiles over runs.
Hofer et al. measure steady state too (30 iterations, the first 20 discarded).

Run as `python3 scripts/bench paired [OPTIONS]` from the repository:

    bench paired                                     3 workloads x {jvmti,sps} x {10ms,1ms}, 5 runs
    bench paired --runs 3 --workloads h2 --intervals 1ms
    bench paired --workloads h2 --workload-args "16 250" --intervals 10ms   16 clients
    bench paired --samplers jvmti,sps,isps           incremental stack tracing too: tables
                                                     jvmti/sps, jvmti/isps and sps/isps
    bench paired --dry-run                           the plan and its expected duration
    bench paired --quick                             one short run of xalan at 10ms (CI: checks the harness;
                                                     with --same-jvm, one block of every cell)
    bench paired --versus-async-profiler             hpm (sampler=asgct) against async-profiler 4.6
                                                     (event=cpu, its Java API) on the stock JDK
    bench paired --data                              hpm with the `data` option against hpm without it,
                                                     on the stock JDK
    bench paired --versus-async-profiler --hpm-variants 'sampler=chain;sampler=asgct' --kernel-floor
                                                     two hpm configurations and async-profiler in the same
                                                     invocation, and the kernel's own cost of the samples:
                                                     `perf record -e cpu-clock` without call chains, enabled
                                                     and disabled around the same iterations (--control fifo)
    bench paired --versus-async-profiler --hpm-variants 'sampler=chain;sampler=asgct' --kernel-floor --same-jvm
                                                     the same cells taking turns inside each JVM (off, P1..Pn,
                                                     Pn..P1, off, ...): the profilers meet the same compiled
                                                     code; raise --iterations (10 per block of 4 cells)
    bench paired --versus-async-profiler --same-jvm --attribute
                                                     each JVM under `perf record -k CLOCK_REALTIME`: every
                                                     cell's CPU per iteration by thread group and code
                                                     (bench attribute), in OUT/attribution.md
    bench paired --versus-async-profiler --mode alloc   hpm's event=alloc against async-profiler's,
                                                     at the --intervals as allocation intervals (default 512k)
    bench paired --versus-async-profiler --mode lock    the same for event=lock, --intervals as
                                                     the shortest wait recorded (default 10us)
    bench paired --versus-async-profiler --mode wall --same-jvm --workloads wall
                                                     hpm's event=wall against async-profiler's (default
                                                     10ms) on 10 busy + 1,000 idle threads (bench/src/
                                                     WallBench.java), with the safepoints of each cell
    bench paired --versus-async-profiler --hpm-variants 'cstack=no;cstack=dwarf' --same-jvm --intervals 1ms
                                                     native unwinding's cost: hpm without and with it,
                                                     and async-profiler's default, in turns in each JVM

Before each measured iteration the harness collects the heap (System.gc(), outside the timed
part; --no-gc leaves it out): otherwise a young collection every k iterations falls on the same
positions of every block (bench/src/Toggle.java, `collect`). The heap is then fixed at 1 GB and
touched at start (-Xms1g -XX:+AlwaysPreTouch): shrunk after each full collection, it was
faulted in again by every iteration.

With --quiet-jit PCT the warm-up lasts at least --warmup iterations and then until the JIT
compilers' time over the last 10 iterations is at most PCT% of their wall time (at most
--max-warmup iterations): the suite's programs compile for 100-200 iterations, and an iteration
that meets a burst of compilation is slower on 2 cores whatever its cell (Toggle.afterIteration).

With --safepoints (the default with --mode wall) each JVM logs its safepoints
(`-Xlog:safepoint`, wall-clock stamps) and every measured iteration gets those that ended inside it
(bench/safepoints.py): a table of safepoints per iteration and per second by cell.

Results: OUT/paired.csv (one row per measured iteration), OUT/paired.md (the table). OUT
defaults to target/bench-results/paired-<UTC time>. Timings are benchmarks, never tests."""
import argparse
import csv
import os
import re
import statistics
import sys
import time

from . import attribute as bench_attribute
from . import safepoints as bench_safepoints
from .common import async_profiler, build_agent, measure, patched_java, target_dir
from .paired_tables import attribution_report, pct, report, results_from_csv, session_cost_table
from .profiles import LATENCY
from .stats import overhead, parse_ns
from .workloads import BY_NAME, compile_drivers, fetch

PAIRED = re.compile(r"^hpm-bench paired (\d+) (\S+) ([0-9.]+) ([0-9.]+)$", re.M)
# "hpm: 1,153 samples, none dropped": the count has thousands separators.
SAMPLES = re.compile(r"^hpm: ([\d,]+) samples", re.M)
# Seconds per iteration on 2 quiet cores, for the expected duration.
EST_ITER_S = {"sunflow": 0.7, "h2": 0.3, "lucene": 0.5, "xalan": 0.5, "rhino": 0.6, "ecj": 1.0, "wall": 0.5}


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench paired", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
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
    ap.add_argument("--mode", choices=("cpu", "alloc", "lock", "wall"), default="cpu",
                    help="with --versus-async-profiler: what both profile (alloc, lock: --intervals are their settings; "
                    "wall: event=wall at --intervals, default 10ms)")
    ap.add_argument("--safepoints", action="store_true",
                    help="count the safepoints in each measured iteration (-Xlog:safepoint); on with --mode wall")
    a = ap.parse_args(argv)
    if a.mode != "cpu" and not a.versus:
        sys.exit("bench-paired: --mode needs --versus-async-profiler")
    if a.mode != "cpu" and a.intervals == "10ms,1ms":
        a.intervals = {"alloc": "512k", "lock": "10us", "wall": "10ms"}[a.mode]
    a.safepoints = a.safepoints or a.mode == "wall"
    # The modes whose cells are sampled stacks at an interval: variants and turns in one JVM apply.
    sampled = a.versus and a.mode in ("cpu", "wall")
    if a.versus and a.data:
        sys.exit("bench-paired: --versus-async-profiler or --data, not both")
    if a.kernel_floor and not (a.versus and a.mode == "cpu"):
        sys.exit("bench-paired: --kernel-floor needs --versus-async-profiler (cpu)")
    if a.hpm_variants and not sampled:
        sys.exit("bench-paired: --hpm-variants needs --versus-async-profiler (cpu or wall)")
    if a.same_jvm and not sampled:
        sys.exit("bench-paired: --same-jvm needs --versus-async-profiler (cpu or wall)")
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
    a.session_costs = {}
    a.out = os.path.abspath(a.out or os.path.join(target_dir(), "bench-results", time.strftime("paired-%Y%m%dT%H%M%SZ", time.gmtime())))
    return a


def cell_setup(a, workdir, sampler, interval):
    """A cell's session options, JVM flags, command prefix and its kind for a rotation (hpm, ap, perf)."""
    extra, prefix, kind = [], [], "hpm"
    if sampler == "async-profiler":
        # Its own JFR, written at each stop (outside the timed iterations), as hpm's is.
        opts = {"cpu": f"start,event=cpu,interval={interval}", "alloc": f"start,event=alloc,alloc={interval}",
                "lock": f"start,event=lock,lock={interval}", "wall": f"start,event=wall,interval={interval}"}[a.mode] + f",file={workdir}/profile-ap.jfr"
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
                "lock": f"event=lock,lock={interval}", "wall": f"event=wall,interval={interval}"}[a.mode]
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
    ov = overhead([x[2:4] for x in its if x[1]], [x[2:4] for x in its if not x[1]])
    lat = [float(median) for median, _p95 in LATENCY.findall(res.err)]
    ov["latency_us"] = statistics.median(lat) if lat else None
    return ov, its, None


def run_jvm(a, agent, cp, w, workdir, prefix, props, label):
    """Runs one JVM of workload `w` with the toggle's `props` in `workdir` (command, stdout and stderr
    kept there). Returns (result, measured iterations as (i, label(cell), wall, cpu, safepoints),
    error or None); safepoints is None without --safepoints, else the operations that ended inside
    the iteration."""
    args = [str(a.iterations)] + (a.workload_args.split() if a.workload_args else w.args[1:])
    # With the collection before each iteration, the heap is fixed and touched at start: a heap
    # that shrinks after each full collection is faulted in again by the next iteration (30-45
    # ms of page faults per lucene iteration, in the kernel of the program's threads).
    gc = ["-Dhpm.bench.gc=false"] if a.no_gc else ["-Xms1g", "-XX:+AlwaysPreTouch"]
    quiet = [f"-Dhpm.bench.quiet-jit={a.quiet_jit}", f"-Dhpm.bench.max-warmup={a.max_warmup}"] if a.quiet_jit > 0 else []
    log = [bench_safepoints.JVM_FLAG] if a.safepoints else []
    cmd = prefix + [a.java, "-Xmx1g", f"-Dhpm.agent.path={agent}", f"-Dhpm.bench.warmup={a.warmup}"] + gc + quiet + \
        log + props + ["-cp", cp, w.main] + args
    with open(os.path.join(workdir, "command.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    res = measure(cmd, cwd=workdir, stdout_path=os.path.join(workdir, "stdout.txt"))
    with open(os.path.join(workdir, "stderr.txt"), "w") as f:
        f.write(res.err)
    sp = {}
    if a.safepoints:
        with open(os.path.join(workdir, bench_safepoints.LOG), errors="replace") as f:
            sp = bench_safepoints.per_iteration(f.read(), res.out)
    its = [(int(i), label(k), float(wall), float(cpu), sp.get(int(i)) if a.safepoints else None)
           for i, k, wall, cpu in PAIRED.findall(res.out)]
    if res.status != 0 or len(its) != a.iterations - a.warmup:
        tail = " | ".join(res.err.strip().splitlines()[-3:])
        return res, its, f"exit {res.status}, {len(its)} measured iterations: {tail}"
    return res, its, None


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
    for k, costs in sessions_per_sample(res.err).items():
        a.session_costs.setdefault((w.name, interval, names[f"c{k}"]), []).extend(costs)
    off = [x for x in its if x[1] == "off"]
    out = {}
    for s in a.samplers:
        on = [x for x in its if x[1] == s]
        if not on or not off:
            return None, its, f"no iterations of {s} or unsampled ones: raise --iterations"
        out[s] = overhead([x[2:4] for x in on], [x[2:4] for x in off])
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


# "hpm: wrote DIR/cellK/profile.jfr" then, in the same session's summary, "per sample H + P us".
WROTE_CELL = re.compile(r"^hpm: wrote .*/cell(\d+)/[^/]*$")
PER_SAMPLE = re.compile(r"per sample ([\d.]+) \+ ([\d.]+) us")


def sessions_per_sample(err_text):
    """{cell index: [(handler us, processing us) per session]} from a rotation's stderr: each hpm
    session's summary names its file (in the cell's directory) before its per-sample cost."""
    out, cell = {}, None
    for line in err_text.splitlines():
        m = WROTE_CELL.match(line)
        if m:
            cell = int(m.group(1))
            continue
        m = PER_SAMPLE.search(line)
        if m and cell is not None:
            out.setdefault(cell, []).append((float(m.group(1)), float(m.group(2))))
            cell = None
    return out


def sp_fields(ops):
    """The CSV's safepoints and safepoint_ops fields of an iteration (empty without --safepoints)."""
    return ["", ""] if ops is None else [len(ops), bench_safepoints.ops_field(ops)]


def main(argv=None):
    a = parse_args(argv)
    if a.report:
        path = os.path.join(a.report, "paired.csv")
        print(report(a, results_from_csv(a, path)))
        with open(path) as f:
            print(bench_safepoints.table(list(csv.DictReader(f))))
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
        wr.writerow(["workload", "sampler", "interval", "run", "iteration", "sampled", "wall_ms", "cpu_ms",
                     "safepoints", "safepoint_ops"])
        for k, (r, w, s, i) in enumerate(jobs):
            # Only runs that succeeded go to the csv, so --report makes the same tables.
            if a.same_jvm:
                ovs, its, err = run_rotation(a, agent, cps[w.name], w, i, r)
                rows = [[w.name, cell, i, r, it, int(cell != "off"), wall, cpu] + sp_fields(sp)
                        for it, cell, wall, cpu, sp in its]
            else:
                ov, its, err = run_one(a, agent, cps[w.name], w, s, i, r)
                ovs = {s: ov}
                rows = [[w.name, s, i, r, it, int(on), wall, cpu] + sp_fields(sp) for it, on, wall, cpu, sp in its]
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
    if a.safepoints:
        with open(os.path.join(a.out, "paired.csv")) as f:
            md += "\n" + bench_safepoints.table(list(csv.DictReader(f)))
    with open(os.path.join(a.out, "paired.md"), "w") as f:
        f.write(md)
    print(md)
    if a.session_costs:
        md = session_cost_table(a.session_costs)
        with open(os.path.join(a.out, "per-sample.md"), "w") as f:
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

