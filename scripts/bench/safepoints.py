"""Safepoints per iteration (bench paired --safepoints, on by default with --mode wall): each JVM
runs with `-Xlog:safepoint:file=safepoint.log:timemillis`, whose lines carry the wall-clock time
(System.currentTimeMillis) at which each safepoint ended; the harness's iteration lines
(`hpm-bench iteration I START_EPOCH_MS DURATION_MS`) give each iteration's window on the same
clock. A safepoint belongs to iteration I when it ended after its start and no later than its
end: the collection before each measured iteration and the sessions' starts and stops run
outside the timed part and are not counted (one that ends in the iteration's first millisecond
is not either, whichever cell: the clock has millisecond steps). Reads files only."""
import bisect
import re

from .stats import quartiles

# [1732800000123ms] Safepoint "Cleanup", Time since last: 1000137718 ns, Reaching safepoint: ...
LINE = re.compile(r"^\[(\d+)ms\].*?Safepoint \"([^\"]+)\"", re.M)
ITERATION = re.compile(r"^hpm-bench iteration (\d+) (\d+) ([\d.]+)$", re.M)
JVM_FLAG = "-Xlog:safepoint:file=safepoint.log:timemillis:filecount=0"
LOG = "safepoint.log"


def parse(log_text):
    """[(end_ms, operation)] of the log's safepoints, in the log's order."""
    return [(int(ms), op) for ms, op in LINE.findall(log_text)]


def per_iteration(log_text, stdout_text):
    """{iteration: [operation, ...]} for every iteration the harness printed (empty lists too)."""
    events = sorted(parse(log_text))
    times = [t for t, _ in events]
    out = {}
    for i, start, ms in ITERATION.findall(stdout_text):
        start, end = int(start), int(start) + float(ms)
        lo, hi = bisect.bisect_right(times, start), bisect.bisect_right(times, end)
        out[int(i)] = [op for _, op in events[lo:hi]]
    return out


def ops_field(ops):
    """The CSV's `safepoint_ops` field: each operation with its count, `Cleanup=2 ICBufferFull=1`."""
    counts = {}
    for op in ops:
        counts[op] = counts.get(op, 0) + 1
    return " ".join(f"{op}={n}" for op, n in sorted(counts.items()))


def table(rows):
    """The safepoints table from paired.csv's rows (dicts; those without a `safepoints` field are
    left out): per workload, interval and cell, the safepoints that ended inside its iterations."""
    cells = {}
    for r in rows:
        if r.get("safepoints", "") == "":
            continue
        c = cells.setdefault((r["workload"], r["interval"], r["sampler"] if r["sampled"] == "1" else "off"),
                             {"counts": [], "ms": 0.0, "ops": {}})
        c["counts"].append(int(r["safepoints"]))
        c["ms"] += float(r["wall_ms"])
        for item in r.get("safepoint_ops", "").split():
            op, n = item.rsplit("=", 1)
            c["ops"][op] = c["ops"].get(op, 0) + int(n)
    if not cells:
        return ""
    lines = ["Safepoints inside the measured iterations (`-Xlog:safepoint`, each attributed to the iteration "
             "in which it ended; the collection before each iteration and the sessions' starts and stops lie "
             "outside): per cell, its iterations over all runs, the safepoints in all, per iteration "
             "median (q1 / q3, max), per second of those iterations, and which VM operations:", "",
             "| workload | interval | cell | iterations | safepoints | per iteration | per second | operations |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    order = lambda k: (k[0], k[1], k[2] != "off", k[2])  # noqa: E731
    for key in sorted(cells, key=order):
        c = cells[key]
        xs = sorted(c["counts"])
        q = quartiles(xs)
        ops = ", ".join(f"{op} {n}" for op, n in sorted(c["ops"].items(), key=lambda x: -x[1])[:4]) or "—"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(xs)} | {sum(xs)} | {q[1]:g} ({q[0]:g} / {q[2]:g}, "
                     f"{xs[-1]}) | {sum(xs) / (c['ms'] / 1000):.2f} | {ops} |")
    return "\n".join(lines) + "\n"
