"""Where a same-JVM run's CPU went, iteration by iteration (`bench paired --same-jvm --attribute`).

The JVM runs under `perf record -k CLOCK_REALTIME -e cpu-clock -c PERIOD`: every thread's CPU is
sampled with wall-clock time stamps, which the harness's iteration lines (`hpm-bench iteration
I EPOCH_MS WALL_MS`) place in iterations. Each sample goes to one group: the application's
threads by the code they ran (JIT-compiled code, the JVM, the kernel, a profiler's library: its
signal handler, other native code), or the JVM's own threads (JIT compilers, GC) and the
profilers' threads. Per cell, the mean CPU per iteration of each group, so that a profiler's
cost is seen where it falls, and a cost that is not the profiler's (a collection, a burst of
compilation) is seen as such.

    python3 scripts/bench attribute PERF_DATA STDOUT [PERIOD_MS] [GROUP]
        a run's attribution.data and stdout.txt; PERIOD_MS, perf's period (bench paired: 1);
        GROUP (e.g. "app: kernel"): also that group's functions, ms per iteration per cell
    python3 scripts/bench attribute --blocks N PERF_DATA STDOUT
        any harness run (sampled or not) under the same perf record: per block of N iterations,
        the mean wall time, JIT compiler threads' CPU and all CPU per iteration (how long the
        JIT compiles: what bench paired's --quiet-jit waits out)
    python3 scripts/bench attribute --own OUT
        from the runs of a `bench paired --same-jvm --attribute --out OUT`: each profiler's
        own cost per iteration (its library in the program's threads, its own threads, and the
        program threads' kernel time beyond the unsampled iterations'), the mean over runs
    python3 scripts/bench attribute --ends OUT
        the same runs: each profiler's CPU between the iterations, per session (its sessions'
        starts and stops, which the iterations' CPU leaves out)
    python3 scripts/bench attribute --sessions OUT
        the same runs: what hpm's sessions named for the first time (stacks, frames of its
        walker, methods) and its cost per sample, from each session's summary, the mean over
        sessions (each run's first left out: it reads what a process reads once)
"""
import bisect
import collections
import glob
import os
import re
import statistics
import subprocess
import sys

ITERATION = re.compile(r"^hpm-bench iteration (\d+) (\d+) ([\d.]+)$", re.M)
PAIRED = re.compile(r"^hpm-bench paired (\d+) (\S+) ", re.M)
SAMPLE = re.compile(r"^\s*(.+?)\s+(\d+\.\d+):\s+[0-9a-f]+\s*(.*?)\s*\((.*)\)\s*$")
# Each profiler's library (in the program's threads) and its threads' names' prefixes.
PROFILER_LIBS = {"libhpm.so": "hpm", "libasyncProfiler.so": "async-profiler"}
PROFILER_THREADS = {"hpm": "hpm", "async-profiler": "async-profiler", "Async-profiler": "async-profiler"}
# perf's sampling period: 1 ms costs the run ~1.3% (13 us per sample here), alike in every cell.
PERIOD_MS = 1
GROUPS = ["app: JIT code", "app: JVM", "app: kernel", "app: profiler library", "app: other native",
          "JIT compiler threads", "GC threads", "profiler threads", "other JVM threads"]
VM_THREADS = ("VM Thread", "VM Periodic Tas", "Service Thread", "Sweeper thread", "Monitor Deflati",
              "Reference Handl", "Finalizer", "Signal Dispatch", "Common-Cleaner", "Notification Th",
              "Attach Listener", "G1 Service")


def group(comm, dso):
    """The group of one sample: by its thread's name, and for the application's threads by the
    code it was in."""
    if comm.startswith(("C1 CompilerThre", "C2 CompilerThre")):
        return "JIT compiler threads"
    if comm.startswith(("GC Thread", "G1 Conc", "G1 Main", "G1 Refine", "G1 Young")):
        return "GC threads"
    if comm.startswith(tuple(PROFILER_THREADS)):
        return "profiler threads"
    if comm.startswith(VM_THREADS):
        return "other JVM threads"
    name = dso.rsplit("/", 1)[-1]
    if name.startswith("[kernel"):
        return "app: kernel"
    if name in PROFILER_LIBS:
        return "app: profiler library"
    if name == "libjvm.so":
        return "app: JVM"
    if name in ("unknown", "[unknown]") or name.startswith(("perf-", "[anon", "memfd:")) or not name:
        return "app: JIT code"
    return "app: other native"


def iterations(stdout_text):
    """(start s, end s, iteration) of every iteration, and each measured iteration's cell."""
    wins = sorted((int(ms) / 1000.0, int(ms) / 1000.0 + float(wall) / 1000.0, int(i))
                  for i, ms, wall in ITERATION.findall(stdout_text))
    cells = {int(i): c for i, c in PAIRED.findall(stdout_text)}
    return wins, cells


def samples_in(perf_data, wins):
    """(iteration, group, function, thread, library) of each sample of `perf_data` that fell in
    one of the spans `wins` ((start s, end s, iteration), sorted)."""
    starts = [w[0] for w in wins]
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "comm,time,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        t = float(m.group(2))
        k = bisect.bisect_right(starts, t) - 1
        if k < 0 or t > wins[k][1]:
            continue
        comm, dso = m.group(1).strip(), m.group(4)
        yield wins[k][2], group(comm, dso), m.group(3) or "[unknown]", comm, dso.rsplit("/", 1)[-1]


def attribute(perf_data, stdout_text, period_ms, detail=None):
    """{cell: {group: mean ms per iteration}}, {iteration: {group: ms}} over the measured
    iterations, their cells, and {cell: {function: mean ms per iteration}} of the samples of
    group `detail` (empty without one)."""
    wins, cells = iterations(stdout_text)
    per_it = collections.defaultdict(collections.Counter)
    funcs = collections.defaultdict(collections.Counter)
    for i, g, func, _, _ in samples_in(perf_data, wins):
        if i not in cells:
            continue
        per_it[i][g] += period_ms
        if g == detail:
            funcs[cells[i]][func] += period_ms
    n = collections.Counter(cells.values())
    per_cell = {c: collections.Counter() for c in n}
    for i, c in cells.items():
        per_cell[c].update(per_it[i])
    mean = {c: {g: v / n[c] for g, v in per_cell[c].items()} for c in n}
    return mean, {i: per_it[i] for i in cells}, cells, {c: {f: v / n[c] for f, v in funcs[c].items()} for c in n}


def table(per_cell, order):
    """Markdown: one row per group, one column per cell (ms per iteration)."""
    rows = [f"| group | {' | '.join(order)} |", "| --- |" + " --- |" * len(order)]
    for g in GROUPS + ["all"]:
        vals = [sum(per_cell[c].values()) if g == "all" else per_cell[c].get(g, 0.0) for c in order]
        if g != "all" and max(vals) < 0.05:
            continue
        label = f"**{g}**" if g == "all" else g
        rows.append(f"| {label} | " + " | ".join(f"{v:.2f}" for v in vals) + " |")
    return "\n".join(rows)


def gc_sequence(per_it, cells):
    """The GC threads' ms in each measured iteration, in order, with its cell: collections
    that fall on the same positions of every block show here."""
    return " ".join(f"{i}:{cells[i]}:{per_it[i].get('GC threads', 0.0):.0f}" for i in sorted(cells))


def read_table(path):
    """A run's attribution.md: (cells in column order, {group: [ms per cell]})."""
    cells, rows = None, {}
    with open(path) as f:
        for line in f:
            if not line.startswith("|"):
                if rows:
                    break
                continue
            parts = [x.strip().strip("*") for x in line.strip().strip("|").split("|")]
            if parts[0] == "group":
                cells = parts[1:]
            elif parts[0] != "---" and cells:
                rows[parts[0]] = [float(x) for x in parts[1:]]
    return cells, rows


def workload_dirs(out_dir):
    """(workload, interval, directory of its runs) of a `bench paired --same-jvm --out OUT`."""
    for d in sorted(glob.glob(os.path.join(out_dir, "runs", "*", "same-jvm-*"))):
        yield os.path.basename(os.path.dirname(d)), os.path.basename(d)[len("same-jvm-"):], d


def own(out_dir):
    """The profilers' own cost per iteration, per workload and interval, the mean over runs."""
    print("| workload | interval | profiler | own, ms per iteration | its library | its threads | program threads' "
          "kernel beyond unsampled | all CPU of an unsampled iteration |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for w, interval, d in workload_dirs(out_dir):
        tables = [read_table(p) for p in sorted(glob.glob(os.path.join(d, "*", "attribution.md")))]
        if not tables:
            continue
        cells = tables[0][0]
        mean = {g: [statistics.mean(t[1].get(g, [0.0] * len(cells))[k] for t in tables) for k in range(len(cells))]
                for g in GROUPS + ["all"]}
        off = cells.index("off")
        for k, c in enumerate(cells):
            if k == off:
                continue
            lib, threads = mean["app: profiler library"][k], mean["profiler threads"][k]
            kernel = mean["app: kernel"][k] - mean["app: kernel"][off]
            print(f"| {w} | {interval} | {c} | {lib + threads + kernel:.2f} | {lib:.2f} | {threads:.2f} | {kernel:+.2f} | "
                  f"{mean['all'][off]:.0f} |")


# A cell of bench-paired's rotation and the profiler it runs (`c0=hpm:...|c1=ap:...`).
CELL_ROLE = re.compile(r"(c\d+)=(hpm|ap):")


def profiler_of(comm, lib):
    """Which profiler a sample outside the iterations worked for: its thread's name or its
    library (a session's start and stop run in the harness's thread), else None."""
    prefix = next((p for p in PROFILER_THREADS if comm.startswith(p)), None)
    return PROFILER_THREADS[prefix] if prefix else PROFILER_LIBS.get(lib)


def ends(out_dir, period_ms=PERIOD_MS):
    """Each profiler's CPU between the measured iterations (its sessions' starts and stops:
    threads attached and detached, the last samples resolved, the outputs written), per
    session, the mean over runs: what the iterations' CPU leaves out. Its first session's
    start is left out (it reads what a process reads once), and so is the kernel's side
    (perf events opened and closed), which is not told apart."""
    print("| workload | interval | hpm, ms per session outside the iterations | async-profiler's |")
    print("| --- | --- | --- | --- |")
    for w, interval, d in workload_dirs(out_dir):
        per_run = collections.defaultdict(list)
        for run in sorted(glob.glob(os.path.join(d, "*", "attribution.data"))):
            with open(os.path.join(os.path.dirname(run), "stdout.txt")) as f:
                wins, cells = iterations(f.read())
            # Each gap is named by the iteration after it.
            gaps = [(a[1], b[0], b[2]) for a, b in zip(wins, wins[1:])]
            with open(os.path.join(os.path.dirname(run), "command.txt")) as f:
                roles = {c: ("hpm" if p == "hpm" else "async-profiler") for c, p in CELL_ROLE.findall(f.read())}
            # A profiler's first start reads what a process reads once (symbol tables, every
            # jmethodID): left out, as the summary leaves it out of the per-sample figure.
            first = {roles[c]: min(i for i, x in cells.items() if x == c) for c in roles}
            ms = collections.Counter()
            for i, _, _, comm, lib in samples_in(run, gaps):
                who = profiler_of(comm, lib)
                if who and i != first.get(who):
                    ms[who] += period_ms
            sessions = collections.Counter(cells.values())
            for cell, who in roles.items():
                per_run[who].append(ms[who] / max(sessions[cell], 1))
        if per_run:
            mean = {who: f"{statistics.mean(v):.2f}" if v else "—" for who, v in per_run.items()}
            print(f"| {w} | {interval} | {mean.get('hpm', '—')} | {mean.get('async-profiler', '—')} |")


# hpm's summary lines, one of each per session.
NAMED = re.compile(r"^hpm: named for the first time: ([\d,]+) stacks .*?, ([\d,]+) frames of hpm's walker, "
                   r"([\d,]+) methods", re.M)
PER_SAMPLE = re.compile(r"^hpm: agent CPU .*; per sample ([\d.]+) \+ ([\d.]+) us$", re.M)


def sessions(out_dir):
    """What hpm's sessions named for the first time and their cost per sample (handler +
    processing, the summary's), the mean over every run's sessions but its first."""
    print("| workload | interval | sessions | stacks named per session | frames of hpm's walker | methods | "
          "per sample, us (handler + processing) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    num = lambda x: int(x.replace(",", ""))
    for w, interval, d in workload_dirs(out_dir):
        named, cost = [], []
        for path in sorted(glob.glob(os.path.join(d, "*", "stderr.txt"))):
            with open(path) as f:
                text = f.read()
            named += [tuple(map(num, m)) for m in NAMED.findall(text)][1:]
            cost += [tuple(map(float, m)) for m in PER_SAMPLE.findall(text)][1:]
        if not named or not cost:
            continue
        col = lambda rows, k: statistics.mean(r[k] for r in rows)
        print(f"| {w} | {interval} | {len(named)} | {col(named, 0):.0f} | {col(named, 1):.0f} | {col(named, 2):.0f} | "
              f"{col(cost, 0):.1f} + {col(cost, 1):.1f} |")


def blocks(perf_data, stdout_text, n, period_ms=PERIOD_MS):
    """Markdown: per block of `n` iterations, the mean wall time, JIT compiler threads' CPU and
    all CPU per iteration (ms)."""
    wins, _ = iterations(stdout_text)
    jit, cpu = collections.Counter(), collections.Counter()
    for i, g, _, _, _ in samples_in(perf_data, wins):
        cpu[i] += period_ms
        if g == "JIT compiler threads":
            jit[i] += period_ms
    rows = ["| iterations | wall | JIT compiler threads | all CPU |", "| --- | --- | --- | --- |"]
    ids = [w[2] for w in wins]
    walls = {w[2]: (w[1] - w[0]) * 1000 for w in wins}
    for a in range(0, len(ids), n):
        b = ids[a:a + n]
        rows.append(f"| {b[0]}-{b[-1]} | {sum(walls[i] for i in b) / len(b):.1f} | "
                    f"{sum(jit[i] for i in b) / len(b):.1f} | {sum(cpu[i] for i in b) / len(b):.1f} |")
    return "\n".join(rows)


def main(argv=None):
    argv = ["attribute"] + list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 3 and argv[1] == "--own":
        own(argv[2])
        return
    if len(argv) == 3 and argv[1] == "--ends":
        ends(argv[2])
        return
    if len(argv) == 3 and argv[1] == "--sessions":
        sessions(argv[2])
        return
    if len(argv) == 5 and argv[1] == "--blocks":
        with open(argv[4]) as f:
            print(blocks(argv[3], f.read(), int(argv[2])))
        return
    if len(argv) not in (3, 4, 5):
        sys.exit(__doc__)
    with open(argv[2]) as f:
        text = f.read()
    period = float(argv[3]) if len(argv) >= 4 else PERIOD_MS
    detail = argv[4] if len(argv) == 5 else None
    per_cell, per_it, cells, funcs = attribute(argv[1], text, period, detail)
    order = ["off"] + sorted(c for c in per_cell if c != "off")
    print(table(per_cell, order))
    print()
    print("GC threads, ms per measured iteration:", gc_sequence(per_it, cells))
    if detail is not None:
        total = collections.Counter()
        for c in order:
            total.update(funcs.get(c, {}))
        print()
        print(f"| {detail}: function | {' | '.join(order)} |")
        print("| --- |" + " --- |" * len(order))
        for f, _ in total.most_common(25):
            print(f"| {f} | " + " | ".join(f"{funcs.get(c, {}).get(f, 0.0):.2f}" for c in order) + " |")

