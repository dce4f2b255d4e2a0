"""Java stack completeness at 1 ms (docs/benchmarks.md, "Complete Java stacks"): on the demo and each suite workload, one
run with stack=compare (hpm's walker and AsyncGetCallTrace on the same samples) per JDK. Prints
a Markdown table: samples, share kept without a Java frame with hpm's walker (the profile's
`[no Java stack: …]` samples; ASGCT's share of samples of Java threads without Java frames from
the comparison line), with a partial stack, agreement where both found frames.

    python3 scripts/bench stacks [--workloads sunflow,h2,...] [--java PATH ...]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from .common import build_agent, collapsed
from .workloads import WORKLOADS, programs


def collapsed_counts(path):
    total = none = 0
    for stack, n in collapsed(path):
        total += n
        if "[no Java stack" in stack:
            none += n
    return total, none


def run(java, cp, main, args, agent, out, cwd):
    opts = f"interval=1ms,stack=compare,file={out}"
    cmd = [java, f"-agentpath:{agent}={opts}", "-cp", cp, main] + args
    # In a scratch directory: some programs write files where they run (sunflow's image).
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return r.stderr


def parse(stderr):
    line = next((l for l in stderr.splitlines() if "stack walkers on the same" in l), "")
    m = re.search(r"by hpm's ([\d.]+)%, by AsyncGetCallTrace ([\d.]+)%.*same stack ([\d.]+)%", line)
    partial = re.search(r"([\d,]+) with the top of the Java stack only", stderr)
    return (m.groups() if m else ("?", "?", "?")), (int(partial.group(1).replace(",", "")) if partial else 0)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench stacks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(w.name for w in WORKLOADS))
    ap.add_argument("--java", action="append", help="java binaries (default: java, and Temurin 25 if installed)")
    ap.add_argument("--demo-seconds", default="8")
    a = ap.parse_args(argv)
    javas = a.java or ["java"] + [j for j in ["/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"] if os.path.exists(j)]
    agent = build_agent()[0]
    jobs = programs(a.workloads, [("demo", [a.demo_seconds])])
    print("| JDK | program | samples | no Java frame, hpm | partial, hpm | Java frames found: hpm / ASGCT | same stack |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for java in javas:
            jdk = "25" if "temurin-25" in java else "17"
            for name, cp, main_class, args in jobs:
                out = os.path.join(tmp, f"{name}-{jdk}.collapsed")
                stderr = run(java, cp, main_class, args, agent, out, tmp)
                total, none = collapsed_counts(out)
                (vm, asgct, same), partial = parse(stderr)
                print(f"| {jdk} | {name} | {total:,} | {100.0 * none / max(total, 1):.2f}% | "
                      f"{100.0 * partial / max(total, 1):.2f}% | {vm}% / {asgct}% | {same}% |", flush=True)
