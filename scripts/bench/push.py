"""The push's cost (docs/benchmarks.md, "Pushing profiles to a collector"), in three parts:

overhead  hpm sessions with `push=URL,chunk=CHUNK,service=...` against the same sessions without
          push, taking turns inside each JVM (bench paired's rotation on the stock JDK: off, P1, P2,
          P2, P1, off, P1 and P2 shuffled per block), at each --intervals. A session started before
          each iteration would push only at its stop, outside the timed part: here every turn lasts
          --span iterations (bench/src/Toggle.java, hpm.bench.span), one session spanning them, so
          the pushes every CHUNK fall into timed iterations. The collector runs on 127.0.0.1 for
          the whole run. A run's overhead is its push iterations' time over its no-push ones' (and
          each over the unsampled ones'); the pushes per session come from hpm's summary lines.
bytes     one JVM with hpm pushing OTLP every CHUNK, then one with async-profiler's
          `file=URL,otlp,loop=CHUNK`, both at --bytes-interval, each for --periods periods: per
          period, the request's size as the collector received it (uncompressed protobuf, its
          file exporter's message), that size gzipped (what hpm sends on the wire; hpm's own count
          of bytes sent is in its summary), and the samples it holds.
memory    one JVM pushing to a closed port (the collector down) with chunk=1s for --down-periods
          periods, and the same run without push: `hpm attach PID status`'s push line (periods and
          bytes queued) and the process's RSS every second.

Run as `python3 scripts/bench push [OPTIONS]` from the repository:

    bench push                               all three parts (about 25 min on 2 cores)
    bench push --parts bytes,memory          only those
    bench push --quick                       seconds-long versions of each (CI: checks the harness)

Results in OUT (default target/bench-results/push-<UTC time>): push.md (the tables), overhead.csv
(one row per measured iteration), each JVM's command, output and the collector's files under
runs/. Timings are benchmarks, never tests."""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time

from .collector import Collector, collector_bin, free_port, gzip_size, json_requests, proto_messages, request_summary
from .common import async_profiler, build_agent, machine, target_dir
from .paired import run_jvm
from .stats import overhead, quartiles, seconds
from .workloads import BY_NAME, compile_drivers, fetch

# "hpm: push to http://...: 3 periods delivered (1,234 samples, 56.7 KiB)"
DELIVERED = re.compile(r"push to \S+: (?:\d+ of )?(\d+) periods? delivered \(([\d,]+) samples?, ([0-9.]+) (B|KiB|MiB|GiB)\)")
ENCODING = re.compile(r"encoding ([0-9.]+) ms of CPU per period")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
# status: "push: push to URL: 0 delivered, 8 queued (1.2 MiB), 3 dropped, 0 refused, 40 attempts; ..."
QUEUED = re.compile(r"(\d+) delivered, (\d+) queued \(([0-9.]+) (B|KiB|MiB|GiB)\), (\d+) dropped")


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench push", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="overhead,bytes,memory")
    ap.add_argument("--workload", default="xalan")
    ap.add_argument("--intervals", default="10ms,1ms", help="overhead: the sampling intervals")
    ap.add_argument("--chunk", default="10s", help="the push period (default 10s)")
    ap.add_argument("--runs", type=int, default=3, help="overhead: JVMs per interval")
    ap.add_argument("--blocks", type=int, default=1, help="overhead: blocks (off, P1, P2, P2, P1, off) per JVM")
    ap.add_argument("--span", type=int, default=120, help="overhead: iterations per turn, one session each (default 120, ~20 s of xalan once warm)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--periods", type=int, default=6, help="bytes: periods per JVM")
    ap.add_argument("--bytes-interval", default="10ms")
    ap.add_argument("--down-periods", type=int, default=16, help="memory: seconds (periods of chunk=1s) with the collector down")
    ap.add_argument("--async-profiler", dest="ap_version", default="4.6")
    ap.add_argument("--java", default="java")
    ap.add_argument("--out")
    ap.add_argument("--down", action="store_true",
                    help="overhead: the push cell pushes to a port where nothing listens (the collector down: "
                         "every attempt refused, retried with backoff, the queue full)")
    ap.add_argument("--quick", action="store_true", help="seconds-long versions of each part (CI)")
    a = ap.parse_args(argv)
    a.parts = a.parts.split(",")
    if a.quick:
        a.intervals, a.chunk, a.runs, a.blocks, a.span, a.warmup = "10ms", "1s", 1, 1, 3, 2
        a.periods, a.down_periods = 2, 3
    a.intervals = a.intervals.split(",")
    a.chunk_s = seconds(a.chunk)
    a.w = BY_NAME[a.workload]
    # paired.run_jvm's settings: the heap fixed and collected before each measured iteration.
    a.iterations = a.warmup + a.blocks * 6 * a.span
    a.workload_args, a.no_gc, a.quiet_jit, a.max_warmup = None, False, 0, 400
    a.out = os.path.abspath(a.out or os.path.join(target_dir(), "bench-results", time.strftime("push-%Y%m%dT%H%M%SZ", time.gmtime())))
    return a


def size(n, unit):
    return float(n) * UNITS[unit]


def kib(n):
    return f"{n / 1024:,.1f}"


def pctq(xs):
    q1, m, q3 = quartiles(xs)
    return f"{m * 100:+.2f}% ({q1 * 100:+.2f} / {q3 * 100:+.2f})"


def overhead_part(a, agent, cp, col, csvw):
    """Each interval's runs; returns the markdown table."""
    rows = []
    closed = free_port()  # with --down: nothing listens there
    for interval in a.intervals:
        res = {"nopush": [], "push": [], "push/nopush": []}
        pushes, per_push_ms, encoding = [], [], []
        for r in range(a.runs):
            workdir = os.path.join(a.out, "runs", "overhead", interval, str(r))
            cells = {}
            for k, name in enumerate(("nopush", "push")):
                sub = os.path.join(workdir, f"cell{k}")
                os.makedirs(sub, exist_ok=True)
                opts = f"interval={interval},file={sub}/profile.jfr"
                if name == "push":
                    url = f"http://127.0.0.1:{closed}" if a.down else col.url()
                    opts += f",push={url},chunk={a.chunk},service={a.w.name}-bench"
                cells[f"c{k}"] = (name, opts)
            props = ["-Dhpm.bench.rotate=" + "|".join(f"{c}=hpm:{o}" for c, (_, o) in cells.items()),
                     f"-Dhpm.bench.seed={r}", f"-Dhpm.bench.span={a.span}"]
            names = {c: n for c, (n, _) in cells.items()}
            out, its, err = run_jvm(a, agent, cp, a.w, workdir, [], props, lambda c: names.get(c, "off"))
            if err:
                sys.exit(f"bench-push: overhead {interval} run {r}: {err}")
            for it, cell, wall, cpu in its:
                csvw.writerow([interval, r, it, cell, wall, cpu])
            by = {c: [x[2:] for x in its if x[1] == c] for c in ("off", "nopush", "push")}
            res["nopush"].append(overhead(by["nopush"], by["off"]))
            res["push"].append(overhead(by["push"], by["off"]))
            res["push/nopush"].append(overhead(by["push"], by["nopush"]))
            # Periods delivered per push session (the last of each at its stop, outside timing).
            sessions = [int(m[0]) for m in DELIVERED.findall(out.err)]
            if len(sessions) != 2 * a.blocks:
                sys.exit(f"bench-push: overhead {interval} run {r}: {len(sessions)} push summaries, "
                         f"expected {2 * a.blocks}: see {workdir}/stderr.txt")
            encoding.extend(float(x) for x in ENCODING.findall(out.err))
            timed = sum(sessions) - len(sessions)
            pushes.append(timed / len(sessions))
            extra_cpu_ms = sum(x[1] for x in by["push"]) - sum(x[1] for x in by["nopush"])
            per_push_ms.append(extra_cpu_ms / timed if timed else float("nan"))
            print(f"bench-push: overhead {interval} run {r + 1}/{a.runs}: push/nopush cpu "
                  f"{res['push/nopush'][-1]['cpu'] * 100:+.2f}% wall {res['push/nopush'][-1]['wall'] * 100:+.2f}%, "
                  f"{timed} timed pushes", flush=True)
        rows.append((interval, res, pushes, per_push_ms, encoding))
    down = " The push cell pushes to a closed port (the collector down)." if a.down else ""
    lines = [f"Each cell's turn: {a.span} iterations of {a.w.name}, one session; {a.blocks} block(s) of "
             f"off, P1, P2, P2, P1, off per JVM; {a.runs} JVMs per interval; chunk={a.chunk}.{down} Median over JVMs "
             "(quartiles):", "",
             "| interval | hpm without push vs off, CPU | with push vs off, CPU | push vs no push, CPU | push vs no push, wall "
             "| timed pushes per session | extra CPU ms per timed push | hpm's encoding, CPU ms per period |",
             "|---|---|---|---|---|---|---|---|"]
    for interval, res, pushes, per_push, encoding in rows:
        lines.append(f"| {interval} | {pctq([o['cpu'] for o in res['nopush']])} | {pctq([o['cpu'] for o in res['push']])} "
                     f"| {pctq([o['cpu'] for o in res['push/nopush']])} | {pctq([o['wall'] for o in res['push/nopush']])} "
                     f"| {statistics.median(pushes):.1f} | {statistics.median(per_push):.1f} "
                     f"| {statistics.median(encoding) if encoding else float('nan'):.1f} |")
    return "\n".join(lines)


def harness_cmd(a, cp, iterations, agent_arg):
    return [a.java, "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch", agent_arg, "-cp", cp, a.w.main, str(iterations)] + a.w.args[1:]


def run_for(cmd, workdir, secs, env=None, every=None):
    """Runs cmd in workdir for `secs` seconds, then SIGTERM and a wait; `every(pid, t)` is called
    about once a second meanwhile. Returns the stderr text."""
    with open(os.path.join(workdir, "command.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    with open(os.path.join(workdir, "stdout.txt"), "w") as out, open(os.path.join(workdir, "stderr.txt"), "w+") as err:
        p = subprocess.Popen(cmd, cwd=workdir, stdout=out, stderr=err, env=env)
        start = time.monotonic()
        while time.monotonic() - start < secs and p.poll() is None:
            time.sleep(1)
            if every and p.poll() is None:
                every(p.pid, time.monotonic() - start)
        if p.poll() is None:
            p.terminate()
        p.wait(timeout=60)
        err.seek(0)
        return err.read()


def bytes_part(a, agent, cp, binary):
    """hpm's and async-profiler's periods, one JVM each; returns the markdown table."""
    aplib = async_profiler(a.ap_version)
    secs = a.chunk_s * a.periods + a.chunk_s / 2
    iterations = 100000  # ended by the harness after `secs`
    rows, said = [], []
    for who in ("hpm", "async-profiler"):
        workdir = os.path.join(a.out, "runs", "bytes", who)
        os.makedirs(workdir, exist_ok=True)
        col = Collector(binary, workdir)
        try:
            env = dict(os.environ, OTEL_SERVICE_NAME=f"{a.w.name}-{who}")
            if who == "hpm":
                arg = f"-agentpath:{agent}=interval={a.bytes_interval},push={col.url()},chunk={a.chunk},service={a.w.name}-hpm"
            else:
                arg = (f"-agentpath:{aplib}=start,event=cpu,interval={a.bytes_interval},"
                       f"file={col.url()},otlp,loop={a.chunk}")
            err = run_for(harness_cmd(a, cp, iterations, arg), workdir, secs, env)
        finally:
            col.stop()
        msgs = proto_messages(col.proto)
        reqs = json_requests(col.json)
        if len(msgs) != len(reqs) or len(msgs) < 2:
            sys.exit(f"bench-push: bytes {who}: {len(msgs)} protobuf and {len(reqs)} JSON requests; see {workdir}")
        # The last request is the partial period sent at exit: the full ones before it count.
        full = list(zip(msgs, reqs))[:-1]
        raw = [len(m) for m, _ in full]
        gz = [gzip_size(m) for m, _ in full]
        summaries = [request_summary(r) for _, r in full]
        types = sorted({t for _, ts, _ in summaries for t in ts})
        messages = [max((n for n, _ in ts.values()), default=0) for _, ts, _ in summaries]
        # Samples: the total of the profile counted in samples (unit `count`), else messages.
        samples = [max((v for t, (_, v) in ts.items() if t.endswith("/count")), default=n)
                   for (_, ts, _), n in zip(summaries, messages)]
        stamped = [st for _, _, st in summaries]
        m = DELIVERED.search(err)
        wire = f"{size(m.group(3), m.group(4)) / int(m.group(1)) / 1024:,.1f}" if m else "-"
        rows.append((who, len(full), statistics.median(raw), statistics.median(gz), wire, statistics.median(samples),
                     statistics.median(messages), statistics.median(stamped), ", ".join(types)))
        line = [x.strip() for x in err.splitlines() if "push to" in x]
        said.append(f"{who}: {line[-1] if line else '(no summary line: async-profiler prints none)'}")
    lines = [f"{a.w.name}, interval={a.bytes_interval}, chunk/loop={a.chunk}; per full period (median over the "
             "periods of one JVM):", "",
             "| profiler | full periods | request, KiB (uncompressed) | gzipped, KiB | sent per period, KiB (its own "
             "count, whole run) | samples | Sample messages per profile | of them with a timestamp | sample types |",
             "|---|---|---|---|---|---|---|---|---|"]
    for who, n, raw, gz, wire, samples, msgs, stamped, types in rows:
        lines.append(f"| {who} | {n} | {kib(raw)} | {kib(gz)} | {wire} | {samples:,.0f} | {msgs:,.0f} | {stamped:,.0f} "
                     f"| {types} |")
    return "\n".join(lines + [""] + [f"    {s}" for s in said])


def status_push(hpm, pid):
    r = subprocess.run([hpm, "attach", str(pid), "status"], capture_output=True, text=True, timeout=30)
    line = next((x for x in r.stdout.splitlines() if x.startswith("push:")), "")
    m = QUEUED.search(line)
    return (int(m.group(2)), size(m.group(3), m.group(4)), int(m.group(5))) if m else None


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


def memory_part(a, agent, hpm, cp):
    """The same JVM pushing to a closed port and without push; returns the markdown table."""
    closed = free_port()  # nothing listens there: every attempt is refused at once
    series = {}
    for who in ("no push", "push, collector down"):
        workdir = os.path.join(a.out, "runs", "memory", who.split(",")[0].replace(" ", ""))
        os.makedirs(workdir, exist_ok=True)
        opts = "interval=10ms"
        if who != "no push":
            opts += f",push=http://127.0.0.1:{closed},chunk=1s,service={a.w.name}-down"
        got = []

        def every(pid, t, got=got, who=who):
            q = status_push(hpm, pid) if who != "no push" else None
            got.append((t, rss_kib(pid), q))

        err = run_for(harness_cmd(a, cp, 100000, f"-agentpath:{agent}={opts}"), workdir,
                      a.down_periods + 2, every=every)
        series[who] = (got, err)
    lines = ["RSS of the JVM (MiB) and what the pusher holds (`hpm attach PID status`), each second "
             f"(chunk=1s, interval=10ms, the port closed: every attempt refused):", "",
             "| second | RSS, no push | RSS, push | push - no push | periods queued | queued, KiB | periods dropped |",
             "|---|---|---|---|---|---|---|"]
    a_, b_ = series["no push"][0], series["push, collector down"][0]
    for (t, r0, _), (_, r1, q) in zip(a_, b_):
        qs = f"{q[0]} | {kib(q[1])} | {q[2]}" if q else "- | - | -"
        d = f"{(r1 - r0) / 1024:+,.1f}" if r0 and r1 else "-"
        lines.append(f"| {t:.0f} | {r0 / 1024 if r0 else 0:,.1f} | {r1 / 1024 if r1 else 0:,.1f} | {d} | {qs} |")
    last = [x.strip() for x in series["push, collector down"][1].splitlines() if "push to" in x]
    return "\n".join(lines + [""] + [f"    {x}" for x in last[-1:]])


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    agent, hpm = build_agent()
    root = fetch([a.w])
    cp = compile_drivers(root, [a.w])[a.w.name]
    binary = collector_bin()
    md = [f"bench push ({' '.join(argv or [])}): {machine(a.java)}", ""]
    if "overhead" in a.parts:
        wd = os.path.join(a.out, "runs")
        os.makedirs(wd, exist_ok=True)
        with Collector(binary, wd, "overhead-collector") as col, open(os.path.join(a.out, "overhead.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["interval", "run", "iteration", "cell", "wall_ms", "cpu_ms"])
            md += ["### Overhead", "", overhead_part(a, agent, cp, col, w), ""]
    if "bytes" in a.parts:
        md += ["### Bytes per period", "", bytes_part(a, agent, cp, binary), ""]
    if "memory" in a.parts:
        md += ["### Collector down", "", memory_part(a, agent, hpm, cp), ""]
    text = "\n".join(md)
    with open(os.path.join(a.out, "push.md"), "w") as f:
        f.write(text)
    print(text)
    print(f"bench-push: {a.out}/push.md")
