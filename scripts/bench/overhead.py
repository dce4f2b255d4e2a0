"""Overhead of the hpm agent on a fixed-work multi-threaded program (the demo with a fixed
number of order batches per worker): wall time and CPU time (user+sys of the JVM process) of
interleaved runs without a profiler, with hpm and with async-profiler (from Maven Central,
`tools.profiler:async-profiler`, same perf cpu-clock event) at 10ms and 1ms. Prints a Markdown
table with medians, quartiles and the median ratios, plus the command and the machine.

    python3 scripts/bench overhead [--runs 9] [--batches 1200] [--workers 2] [--java java]

Timings are a benchmark, never a test: nothing here fails on a number.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from .common import ROOT, async_profiler, build_agent, run as measure_run
from .stats import quartiles


LATENCY = re.compile(r"latency per sample median ([0-9.]+) us, p95 ([0-9.]+) us")


def run(cmd):
    r = measure_run(cmd)
    m = LATENCY.search(r.err)
    latency = (float(m.group(1)), float(m.group(2))) if m else None
    return r.wall, r.cpu, latency


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench overhead")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--batches", type=int, default=1200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--java", default="java")
    ap.add_argument("--async-profiler", default="4.2", help="version from Maven Central; '' to leave it out")
    ap.add_argument("--samplers", action="store_true",
                    help="compare sampler=jvmti and sampler=sps instead (give the patched JDK's java with --java)")
    a = ap.parse_args(argv)
    agent, _ = build_agent()
    classes = os.path.join(ROOT, "target/demo")
    os.makedirs(classes, exist_ok=True)
    subprocess.run(["javac", "-d", classes, os.path.join(ROOT, "java/demo/Demo.java")], check=True)
    out = "/tmp/hpm-bench.jfr"
    base = [a.java, "-cp", classes]
    configs = [
        ("none", base),
        ("hpm 10ms", [a.java, f"-agentpath:{agent}=interval=10ms,file={out},quiet", "-cp", classes]),
        ("hpm 1ms", [a.java, f"-agentpath:{agent}=interval=1ms,file={out},quiet", "-cp", classes]),
    ]
    if a.samplers:
        configs = [configs[0]] + [
            (f"{s} {i}", [a.java, f"-agentpath:{agent}=sampler={s},interval={i},file={out}", "-cp", classes])
            for i in ("10ms", "1ms") for s in ("jvmti", "sps")
        ]
    elif a.async_profiler:
        lib = async_profiler(a.async_profiler)
        for interval in ("10ms", "1ms"):
            opts = f"start,event=cpu,interval={interval},file=/tmp/hpm-bench-ap.collapsed"
            configs.append((f"async-profiler {interval}", [a.java, f"-agentpath:{lib}={opts}", "-cp", classes]))
    program = ["Demo", "0", str(a.batches), str(a.workers)]
    results = {name: ([], [], []) for name, _ in configs}
    run(base + program)  # warm the file cache
    for r in range(a.runs):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for name, cmd in order:
            wall, cpu, latency = run(cmd + program)
            results[name][0].append(wall)
            results[name][1].append(cpu)
            if latency:
                results[name][2].append(latency)
            print(f"run {r + 1}/{a.runs} {name}: wall {wall:.2f}s cpu {cpu:.2f}s", file=sys.stderr)

    none_wall = statistics.median(results["none"][0])
    none_cpu = statistics.median(results["none"][1])
    java_version = subprocess.run([a.java, "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    which = "--samplers" if a.samplers else f"--async-profiler '{a.async_profiler}'"
    print(f"Command: `python3 scripts/bench overhead --runs {a.runs} --batches {a.batches} --workers {a.workers} --java {a.java} {which}`\n")
    print(f"Machine: {os.cpu_count()} cores, Linux {platform.release()}, {java_version}; "
          f"workload: `java Demo 0 {a.batches} {a.workers}` ({a.workers} worker threads, fixed work), {a.runs} interleaved runs per configuration.\n")
    lat_col = a.samplers
    print("| configuration | wall s (q1 / median / q3) | CPU s (q1 / median / q3) | wall overhead | CPU overhead |"
          + (" latency per sample, median / p95 (us) |" if lat_col else ""))
    print("| --- | --- | --- | --- | --- |" + (" --- |" if lat_col else ""))
    for name, _ in configs:
        w, c, lat = results[name]
        wq, cq = quartiles(w), quartiles(c)
        wo = (wq[1] / none_wall - 1) * 100
        co = (cq[1] / none_cpu - 1) * 100
        row = (f"| {name} | {wq[0]:.2f} / {wq[1]:.2f} / {wq[2]:.2f} | {cq[0]:.2f} / {cq[1]:.2f} / {cq[2]:.2f} | "
               f"{wo:+.2f}% | {co:+.2f}% |")
        if lat_col:
            row += (f" {statistics.median(l[0] for l in lat):.0f} / {statistics.median(l[1] for l in lat):.0f} |"
                    if lat else " |")
        print(row)
