"""The tables of a paired run (`bench paired`, and `bench paired --report OUT` from a finished
run's paired.csv): each pair of cells compared per workload and interval, the same-JVM
profiler-against-profiler table with its confidence intervals, the kernel floor, and the CPU
attribution by thread group. Reads only the per-run overheads; runs nothing."""
import csv
import statistics

from . import attribute as bench_attribute
from .common import machine
from .stats import geomean, median_interval, overhead, quartiles


def pct(x):
    return f"{x * 100:+.1f}%"


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
            "lock": "lock profiles (interval: shortest wait recorded); ",
            "wall": "wall-clock profiles (event=wall); "}[getattr(a, "mode", "cpu")]
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


def session_cost_table(costs):
    """--same-jvm: each hpm cell's own cost per sample, from its sessions' summaries ("per sample H
    + P us": the signal handler, and the processing thread's resolving without its start)."""
    lines = ["hpm's own cost per sample, us, from each session's summary (handler + processing; every session of "
             "the cell in every run): median (q1 / q3) over sessions:", "",
             "| workload | interval | cell | sessions | handler | processing | all in |", "| --- | --- | --- | --- | --- | --- | --- |"]

    def fmt(xs):
        q = quartiles(sorted(xs))
        return f"{q[1]:.1f} ({q[0]:.1f} / {q[2]:.1f})"
    for (w, i, cell), xs in sorted(costs.items()):
        lines.append(f"| {w} | {i} | {cell} | {len(xs)} | {fmt([h for h, _ in xs])} | {fmt([p for _, p in xs])} | "
                     f"{fmt([h + p for h, p in xs])} |")
    return "\n".join(lines) + "\n"
