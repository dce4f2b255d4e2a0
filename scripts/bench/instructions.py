"""Schneider & Gross's Figures 4-5 on the suite: how concentrated the samples are on compiled
code's instructions. Each workload runs once under the agent (cpu-clock at INTERVAL, default
1ms, sampler=asgct unless --hpm-options says otherwise) into a .jfr; `hpm report --instructions
--top 100` then gives the samples in compiled code, the distinct instructions, the share the
top 10 and top 100 hold, and the hottest instruction. The agent's summary gives the compiled
code it held for this. Usage:
  python3 scripts/bench instructions [--workloads h2,lucene,sunflow,ecj,xalan] [--interval 1ms]
                                [--hpm-options sampler=chain] [--out target/bench-results/instructions]
A benchmark (a table for docs/benchmarks.md), not a test."""
import argparse
import os
import re
import subprocess
import sys

from .common import build_agent, target_dir
from .workloads import programs


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench instructions", description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="h2,lucene,sunflow,ecj,xalan")
    ap.add_argument("--interval", default="1ms")
    ap.add_argument("--hpm-options", default="")
    ap.add_argument("--out", default=os.path.join(target_dir(), "bench-results", "instructions"))
    a = ap.parse_args(argv)
    a.out = os.path.abspath(a.out)
    agent, hpm = build_agent()
    os.makedirs(a.out, exist_ok=True)
    extra = f",{a.hpm_options}" if a.hpm_options else ""
    print(f"| workload | samples in compiled code | distinct instructions | top 10 hold | top 100 hold "
          f"| hottest instruction | code held |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, cp, main_class, args in programs(a.workloads, []):
        jfr = os.path.join(a.out, f"{label}.jfr")
        cmd = ["java", f"-agentpath:{agent}=interval={a.interval},file={jfr}{extra}", "-cp", cp, main_class] + args
        # In the output directory: sunflow writes its rendered image to the working directory.
        run = subprocess.run(cmd, cwd=a.out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        with open(os.path.join(a.out, f"{label}.stderr.txt"), "w") as f:
            f.write(run.stderr)
        if run.returncode != 0:
            sys.exit(f"{label}: exit {run.returncode}; see {a.out}/{label}.stderr.txt")
        rep = subprocess.run([hpm, "report", "--instructions", "--top", "100", jfr], capture_output=True, text=True)
        if rep.returncode != 0:
            sys.exit(f"{label}: hpm report --instructions failed: {rep.stderr}")
        with open(os.path.join(a.out, f"{label}.instructions.txt"), "w") as f:
            f.write(rep.stdout)
        head = re.search(r"(\d+) samples in compiled code \(([\d.]+)% of (\d+).*?\), (\d+) distinct", rep.stdout)
        top100 = re.search(r"Top \d+ instructions by samples: ([\d.]+)%", rep.stdout)
        rows = [line for line in rep.stdout.split("by samples:", 1)[1].splitlines()[2:] if line.strip()]
        top10 = rows[min(9, len(rows) - 1)].split()[3] if rows else "-"
        hottest = "-"
        if rows:
            cols = rows[0].split()
            off = next(i for i, c in enumerate(cols) if c.startswith("+0x"))
            hottest = f"{cols[2]} at {' '.join(cols[4:off])}: `{' '.join(cols[off + 1:])}`"
        held = re.search(r"compiled code: ([\d.]+) MB of instructions held", run.stderr)
        print(f"| {label} | {head.group(1)} ({head.group(2)}%) | {head.group(4)} | {top10} | {top100.group(1)}% "
              f"| {hottest} | {held.group(1) if held else '-'} MB |")
