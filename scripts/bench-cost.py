#!/usr/bin/env python3
"""The agent's own cost per sample (issue 12, "Agent cost per sample") at each program's stack
depth: one run per program at 1 ms (default options: hpm's own walker), the summary line's
"per sample H + P us" (signal handler, without the handlers that were preempted inside, + the
processing thread's resolving, without its start, the outputs it makes, and what a process
reads once: symbol tables, the first reading of every jmethodID) and that one-time part, with
the mean depth of the samples' stacks (frames per sample in the collapsed output), and from the
summary how many distinct stacks the samples had (each is named, added to the tree and to the
stack table once: the processing follows their share) and how many methods were named through
JVMTI. The demo runs
twice as long a second time, to show the per-method naming that a short run pays. Last, the
synthetic `deep` workload with a recursion --deep frames deep (default 24: stacks of about 30
frames): the cost at that depth once its stacks are known, the steady state a longer run of any
program reaches, apart from what a short run names for the first time.

    python3 scripts/bench-cost.py [--workloads sunflow,h2,...] [--deep 24] [--java PATH]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import build_agent, collapsed  # noqa: E402
from bench_workloads import WORKLOADS, programs  # noqa: E402


def depth(path):
    samples = frames = 0
    for stack, n in collapsed(path):
        samples += n
        frames += n * (stack.count(";") + 1)
    return samples, frames / max(samples, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(w.name for w in WORKLOADS))
    ap.add_argument("--java", default="java")
    ap.add_argument("--demo-seconds", default="8")
    ap.add_argument("--deep", type=int, default=24, help="the deep workload's recursion depth (0: not run)")
    a = ap.parse_args()
    agent = build_agent()[0]
    long_demo = str(int(a.demo_seconds) * 4)
    jobs = programs(a.workloads, [("demo", [a.demo_seconds]), (f"demo ({long_demo} s)", [long_demo])])
    if a.deep:
        # 2 workers, 10 iterations of 150 million calls at the bottom each: about 8 s.
        _, cp, main_class, _ = programs("deep", [])[0]
        jobs.append((f"deep (recursion {a.deep} deep)", cp, main_class, ["10", "2", str(a.deep), "150000000"]))
    print("| program | samples | frames per sample | distinct stacks | methods named | handler, us per sample | "
          "processing, us per sample | read once, ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, cp, main_class, args in jobs:
            out = os.path.join(tmp, "cost.collapsed")
            cmd = [a.java, f"-agentpath:{agent}=interval=1ms,file={out}", "-cp", cp, main_class] + args
            # In a scratch directory: some programs write files where they run.
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
            m = re.search(r"per sample ([\d.]+) \+ ([\d.]+) us", r.stderr)
            once = re.search(r"(\d+) ms of it reading symbol tables", r.stderr)
            first = re.search(r"named for the first time: ([\d,]+) stacks \((\d+)% of the samples\), [\d,]+ frames "
                              r"of hpm's walker, ([\d,]+) methods", r.stderr)
            samples, mean = depth(out)
            handler, processing = m.groups() if m else ("?", "?")
            stacks, methods = (f"{first.group(1)} ({first.group(2)}%)", first.group(3)) if first else ("?", "?")
            print(f"| {name} | {samples:,} | {mean:.1f} | {stacks} | {methods} | {handler} | {processing} | "
                  f"{once.group(1) if once else 0} |", flush=True)


if __name__ == "__main__":
    main()
