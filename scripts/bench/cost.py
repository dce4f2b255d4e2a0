"""The agent's own cost per sample (docs/benchmarks.md, "Agent cost per sample") at each program's stack
depth: one run per program at 1 ms (default options: hpm's own walker), the summary line's
"per sample H + P us" (signal handler, without the handlers that were preempted inside, + the
processing thread's resolving, without its start, the outputs it makes, and what a process
reads once: symbol tables, the first reading of every jmethodID) and that one-time part, with
the mean depth of the samples' stacks (frames per sample in the collapsed output), and from the
summary how many distinct stacks the samples had (each is named, added to the tree and to the
stack table once: the processing follows their share), how many methods were named through
JVMTI, and the shares of the walker's code-blob lookups its thread's last walk and the shared
cache answered (the summary's cost line). The demo runs
twice as long a second time, to show the per-method naming that a short run pays. Last, the
synthetic `deep` workload with a recursion --deep frames deep (default 24: stacks of about 30
frames): the cost at that depth once its stacks are known, the steady state a longer run of any
program reaches, apart from what a short run names for the first time.

With --steady SECONDS, the steady state of the suite's programs themselves instead: each runs
without a profiler past its warm-up (the iteration after which bench-paired's --quiet-jit 10
ended its warm-ups in docs/benchmarks.md, "Agent cost per sample"), then `hpm attach` starts a session
at 1 ms for SECONDS and stops it; the same columns from that session's summary. A run's
figures vary by 10-20% from one JVM to the next here: --runs N repeats every program N times
and adds the median of each column's per-sample cost; --agents A.so,B.so compares agents
(another commit's build, say) in interleaved rounds (round 1: every program with A, then with
B; round 2...), so that a slower stretch of the machine weighs on both alike; --variants
'cstack=no;cstack=dwarf' compares agent options the same way (each variant's options added to
the session's, with every agent). --heap-every N
prints the agent's own heap (`status`) every N seconds of each session: what a long session
holds as its memos and tree fill up to their bounds.

    python3 scripts/bench cost [--workloads sunflow,h2,...] [--deep 24] [--java PATH]
    python3 scripts/bench cost --steady 20 [--workloads ...] [--runs 3] [--agents OLD.so,NEW.so] [--heap-every 60]
    python3 scripts/bench cost --steady 20 --workloads h2 --runs 3 --variants 'cstack=no;cstack=dwarf'
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from .common import build_agent, collapsed
from .workloads import STEADY_WARM, WORKLOADS, programs


def depth(path):
    samples = frames = 0
    for stack, n in collapsed(path):
        samples += n
        frames += n * (stack.count(";") + 1)
    return samples, frames / max(samples, 1)




PER_SAMPLE = r"per sample ([\d.]+) \+ ([\d.]+) us"


def per_sample(stderr):
    """The last session's (handler, processing) us per sample in `stderr`, as printed; None."""
    found = re.findall(PER_SAMPLE, stderr)
    return found[-1] if found else None


def summary_row(name, stderr, out):
    """One table row from an agent summary (the last session's in `stderr`) and its collapsed
    output `out`."""
    def last(pattern):
        found = re.findall(pattern, stderr)
        return found[-1] if found else None
    m = per_sample(stderr)
    once = last(r"(\d+) ms of it reading symbol tables")
    first = last(r"named for the first time: ([\d,]+) stacks \((\d+)% of the samples\), [\d,]+ frames "
                 r"of hpm's walker, ([\d,]+) methods")
    blobs = last(r"found in the thread's last walk (\d+)%, in the shared cache (\d+)%")
    samples, mean = depth(out)
    handler, processing = m if m else ("?", "?")
    stacks, methods = (f"{first[0]} ({first[1]}%)", first[2]) if first else ("?", "?")
    cached = f"{blobs[0]}% / {blobs[1]}%" if blobs else "-"
    return (f"| {name} | {samples:,} | {mean:.1f} | {stacks} | {methods} | {handler} | {processing} | {once or 0} "
            f"| {cached} |")


def steady(a, hpm, agents, tmp):
    """--steady: one session of `a.steady` seconds per program, attached after its warm-up,
    `a.runs` times for each agent of `agents` ((label, path, more session options)), in
    interleaved rounds; then the median per-sample costs."""
    costs = {}
    for _ in range(a.runs):
        for label, agent, opts in agents:
            for name, row, handler, processing, phases in steady_round(a, hpm, agent, tmp, opts):
                print(row.replace(f"| {name} ", f"| {name}{label} ", 1), flush=True)
                if phases:
                    # An agent built with --features phase-timing: its resolving by phase.
                    print(f"|   {name}{label}: {phases} |", flush=True)
                costs.setdefault((name, label), []).append((handler, processing))
    if a.runs > 1:
        print("\n| program | runs | handler, us per sample (median) | processing (median) | all in (median) |")
        print("| --- | --- | --- | --- | --- |")
        for (name, label), runs in costs.items():
            runs = [r for r in runs if r[0] is not None]
            if runs:
                h, p = (statistics.median(x) for x in zip(*runs))
                total = statistics.median(x + y for x, y in runs)
                print(f"| {name}{label} | {len(runs)} | {h:.1f} | {p:.1f} | {total:.1f} |")


def steady_round(a, hpm, agent, tmp, opts=""):
    """One steady-state session per program with `agent` (and `opts` added to the session's
    options): yields (name, table row, handler us,
    processing us, the summary's "resolving by phase" line or None)."""
    for name, cp, main_class, args in programs(a.workloads, []):
        out = os.path.join(tmp, "steady.collapsed")
        err_path = os.path.join(tmp, "stderr.txt")
        # As many iterations as it takes: the JVM is ended once the session is written.
        cmd = [a.java, "-Xmx1g", "-Xms1g", "-XX:+AlwaysPreTouch", "-cp", cp, main_class, "1000000"] + args[1:]
        with open(err_path, "w+") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=tmp)
            try:
                def until(done):
                    for line in p.stdout:
                        if line.startswith("hpm-bench iteration") and done(int(line.split()[2])):
                            return
                    sys.exit(f"{name}: the program ended before its session did")
                until(lambda i: i >= STEADY_WARM.get(name, 100))
                env = dict(os.environ, HPM_AGENT=agent)
                attach = [hpm, "attach", str(p.pid)]
                subprocess.run(attach + [f"start,interval=1ms,file={out}" + (f",{opts}" if opts else "")], check=True, env=env, stdout=subprocess.DEVNULL)
                start = time.monotonic()
                end = start + a.steady
                if a.heap_every > 0:
                    # The agent's heap as `status` reports it, every --heap-every seconds.
                    at = start + a.heap_every
                    while at <= end:
                        until(lambda i, at=at: time.monotonic() >= at)
                        status = subprocess.run(attach + ["status"], env=env, capture_output=True, text=True).stdout
                        heap = re.search(r"agent heap: (\d+) KB", status)
                        jfr = re.search(r"JFR kept for dump \(no JFR file\): (\d+) KB of at most \d+ KB: .*?(\d+) KB in memory", status)
                        kept = f", JFR kept for dump {jfr.group(1)} KB ({jfr.group(2)} KB of it in memory)" if jfr else ""
                        print(f"|   {name}: agent heap at {time.monotonic() - start:.0f} s: "
                              f"{heap.group(1) if heap else '?'} KB{kept} |", flush=True)
                        at += a.heap_every
                until(lambda i: time.monotonic() >= end)
                subprocess.run(attach + ["stop"], check=True, env=env, stdout=subprocess.DEVNULL)
            finally:
                p.send_signal(signal.SIGTERM)
                p.stdout.close()
                p.wait()
            err.seek(0)
            text = err.read()
            m = per_sample(text)
            handler, processing = (float(m[0]), float(m[1])) if m else (None, None)
            label = f"{name} (steady, {a.steady} s)"
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                shutil.copy(out, os.path.join(a.keep, f"{name}-{len(os.listdir(a.keep)) + 1}.collapsed"))
            phases = re.findall(r"resolving by phase, (.*)", text)
            yield label, summary_row(label, text, out), handler, processing, phases[-1] if phases else None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench cost", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(w.name for w in WORKLOADS))
    ap.add_argument("--java", default="java")
    ap.add_argument("--demo-seconds", default="8")
    ap.add_argument("--deep", type=int, default=24, help="the deep workload's recursion depth (0: not run)")
    ap.add_argument("--steady", type=int, default=0, help="seconds of one session attached after the warm-up")
    ap.add_argument("--runs", type=int, default=1, help="--steady: sessions per program (and agent)")
    ap.add_argument("--heap-every", type=int, default=0,
                    help="--steady: print the agent's heap (`hpm attach PID status`) every N seconds of the session")
    ap.add_argument("--variants", default="", help="--steady: agent options to compare, `;`-separated "
                    "(e.g. 'cstack=no;cstack=dwarf'), each added to the session's, in the same interleaved rounds")
    ap.add_argument("--keep", default="", help="--steady: a directory to keep each session's collapsed file in "
                    "(NAME-N.collapsed, N counting the files there)")
    ap.add_argument("--agents", default="", help="--steady: libhpm.so paths to compare, comma-separated "
                    "(default: this tree's build)")
    a = ap.parse_args(argv)
    agent, hpm = build_agent()
    header = ("| program | samples | frames per sample | distinct stacks | methods named | handler, us per sample | "
              "processing, us per sample | read once, ms | walker's blobs from its last walk / the shared cache |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    if a.steady:
        paths = [p for p in a.agents.split(",") if p] or [agent]
        variants = [v for v in a.variants.split(";") if v] or [""]
        agents = [((f" [{p}]" if len(paths) > 1 else "") + (f" [{v}]" if len(variants) > 1 else ""), p, v)
                  for p in paths for v in variants]
        print(header)
        with tempfile.TemporaryDirectory() as tmp:
            steady(a, hpm, agents, tmp)
        return
    long_demo = str(int(a.demo_seconds) * 4)
    jobs = programs(a.workloads, [("demo", [a.demo_seconds]), (f"demo ({long_demo} s)", [long_demo])])
    if a.deep:
        # 2 workers, 10 iterations of 150 million calls at the bottom each: about 8 s.
        _, cp, main_class, _ = programs("deep", [])[0]
        jobs.append((f"deep (recursion {a.deep} deep)", cp, main_class, ["10", "2", str(a.deep), "150000000"]))
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for name, cp, main_class, args in jobs:
            out = os.path.join(tmp, "cost.collapsed")
            cmd = [a.java, f"-agentpath:{agent}=interval=1ms,file={out}", "-cp", cp, main_class] + args
            # In a scratch directory: some programs write files where they run.
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
            print(summary_row(name, r.stderr, out), flush=True)
