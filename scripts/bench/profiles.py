"""Running one suite cell (a workload under a profiler) and reading what it produced: the
profiler's command-line options, sample counts, iteration markers, the known-share check
(tests/workloads/Shares.java: 50/30/20) and `hpm compare` between profilers."""
import os
import re
import shutil
import subprocess

from .common import measure
from .stats import seconds
from .workloads import classes_dir

ROW_FIELDS = ["workload", "cell", "profiler", "interval", "group", "run", "ok", "error", "wall_s", "cpu_s",
              "rss_mib", "steady_s", "iterations", "samples", "profile", "lat_med_us", "lat_p95_us"]
# The timer samplers' summary line: time to obtain each sample (jvm-patches, Hofer et al.).
LATENCY = re.compile(r"latency per sample median ([0-9.]+) us, p95 ([0-9.]+) us")
MARKER = re.compile(r"^hpm-bench iteration (\d+) (\d+) ([0-9.]+)$", re.M)
SAMPLES = re.compile(r"\((\d+) samples")


def jfr_period(interval):
    """JFR's period syntax: `10 ms`."""
    return f"{seconds(interval) * 1e3:g} ms"


class Tools:
    def __init__(self, agent, hpm, aplib, out):
        self.agent, self.hpm, self.aplib, self.out = agent, hpm, aplib, out


def profiler_args(tools, cell, workdir):
    """JVM options and the profile path of a cell (None for `none`)."""
    p, i = cell.profiler, cell.interval
    if p == "none":
        return [], None
    if p.startswith("hpm-"):
        path = os.path.join(workdir, "profile.jfr")
        # The timer samplers print their latency per sample in the summary, which quiet hides;
        # jvmti and sps cells are compared with each other, so both pay for the summary alike.
        quiet = "" if p in ("hpm-jvmti", "hpm-sps") else ",quiet"
        return [f"-agentpath:{tools.agent}=sampler={p[4:]},interval={i},file={path}{quiet}"], path
    if p == "async-profiler":
        path = os.path.join(workdir, "profile.collapsed")
        # `ann` marks Java frames (_[j], _[i], _[0], _[1]) so the Java-only comparison can
        # tell them from native ones; hpm compare removes the marks.
        return [f"-agentpath:{tools.aplib}=start,event=cpu,interval={i},collapsed,ann,file={path}"], path
    if p == "jfr":
        path = os.path.join(workdir, "profile.jfr")
        jfc = os.path.join(workdir, "sampling.jfc")
        with open(jfc, "w") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<configuration version="2.0" label="hpm-bench" description="method sampling only">\n'
                    f'  <event name="jdk.ExecutionSample"><setting name="enabled">true</setting>'
                    f'<setting name="period">{jfr_period(i)}</setting></event>\n</configuration>\n')
        return [f"-XX:StartFlightRecording=filename={path},settings={jfc}", "-Xlog:jfr+startup=warning"], path
    raise ValueError(p)


def count_samples(tools, path):
    """Samples in a profile: collapsed counts summed; .jfr files go through `hpm flamegraph
    -o X.collapsed` (which reads ours and the JDK's)."""
    if path is None or not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    if path.endswith(".jfr"):
        col = path[:-4] + ".collapsed"
        r = subprocess.run([tools.hpm, "flamegraph", path, "-o", col], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        path = col
    total = 0
    with open(path, errors="replace") as f:
        for line in f:
            head, _, n = line.rstrip("\n").rpartition(" ")
            if head and n.isdigit():
                total += int(n)
    return total


def run_cell(tools, w, cell, r, cp, main, args, warmup):
    """One run of workload w under cell; returns a runs.csv row."""
    workdir = os.path.join(tools.out, "runs", w.name, cell.key.replace(" ", "_").replace("(", "").replace(")", ""), str(r))
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    popts, path = profiler_args(tools, cell, workdir)
    cmd = [cell.java, "-Xmx1g"] + popts + ["-cp", cp, main] + args
    with open(os.path.join(workdir, "command.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    res = measure(cmd, cwd=workdir, stdout_path=os.path.join(workdir, "stdout.txt"))
    with open(os.path.join(workdir, "stderr.txt"), "w") as f:
        f.write(res.err)
    iters = [(int(i), float(ms) / 1e3) for i, _, ms in MARKER.findall(res.out)]
    samples = count_samples(tools, path)
    lat = LATENCY.search(res.err)
    error = ""
    if res.status != 0:
        error = f"exit {res.status}: " + " | ".join(res.err.strip().splitlines()[-3:])
    elif len(iters) != int(args[0]):
        error = f"{len(iters)} of {args[0]} iteration markers"
    elif path is not None and not samples:
        error = f"no samples in {path}"
    return {"workload": w.name, "cell": cell.key, "profiler": cell.profiler, "interval": cell.interval or "",
            "group": cell.group, "run": r, "ok": not error, "error": error, "wall_s": res.wall, "cpu_s": res.cpu,
            "rss_mib": res.rss_kib / 1024, "steady_s": sum(s for i, s in iters if i >= warmup),
            "iterations": len(iters), "samples": samples if samples is not None else "", "profile": path or "",
            "lat_med_us": lat.group(1) if lat else "", "lat_p95_us": lat.group(2) if lat else ""}


def shares_of(collapsed):
    """Shares of Shares.a/b/c among samples that are in one of them (the innermost wins)."""
    counts = {"a": 0, "b": 0, "c": 0}
    with open(collapsed, errors="replace") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not n.isdigit():
                continue
            for frame in reversed(stack.split(";")):
                m = re.fullmatch(r"Shares\.([abc])(_\[\w+\])?", frame)
                if m:
                    counts[m.group(1)] += int(n)
                    break
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()} if total else None


def run_shares(tools, cell, secs):
    """Known-share program: 2 threads for secs; error = largest |measured - true| share."""
    workdir = os.path.join(tools.out, "shares", cell.key.replace(" ", "_").replace("(", "").replace(")", ""))
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    popts, path = profiler_args(tools, cell, workdir)
    cmd = [cell.java] + popts + ["-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Shares::*",
                                 "-cp", classes_dir(), "Shares", "2", str(secs)]
    res = measure(cmd, cwd=workdir)
    n = count_samples(tools, path) if res.status == 0 else None
    col = path[:-4] + ".collapsed" if path.endswith(".jfr") else path
    sh = shares_of(col) if n else None
    truth = {"a": 0.5, "b": 0.3, "c": 0.2}
    err = max(abs(sh[k] - truth[k]) for k in truth) if sh else None
    summary = (f"a {sh['a']:.1%} b {sh['b']:.1%} c {sh['c']:.1%}, max error {err * 100:.1f} points ({n} samples)"
               if sh else f"FAILED (exit {res.status}, {n} samples)")
    return {"cell": cell.key, "profiler": cell.profiler, "interval": cell.interval, "group": cell.group,
            "ok": sh is not None, "shares": sh, "error_points": err * 100 if sh else None, "samples": n,
            "summary": summary}


COMPARE = {"overlap": re.compile(r"^overlap: ([0-9.]+)%", re.M),
           "hot_edge_coverage": re.compile(r"^hot-edge coverage: ([0-9.]+)%", re.M),
           "method_correlation": re.compile(r"^method correlation: (-?[0-9.]+|NaN)", re.M)}


def compare(tools, a, b):
    r = subprocess.run([tools.hpm, "compare", a, b, "--threshold", "0.1"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    out = {}
    for k, rx in COMPARE.items():
        m = rx.search(r.stdout)
        out[k] = float(m.group(1)) if m and m.group(1) != "NaN" else None
    return out if out["overlap"] is not None else None


def merged(tools, paths, dest):
    """One collapsed profile with the samples of every run (the .jfr profiles were converted
    to .collapsed by count_samples)."""
    with open(dest, "w") as out:
        for p in paths:
            col = p[:-4] + ".collapsed" if p.endswith(".jfr") else p
            with open(col, errors="replace") as f:
                out.write(f.read().rstrip("\n") + "\n")
    return dest


AP_JAVA = re.compile(r"_\[(j|i|0|1)\]$")
AP_MARK = re.compile(r"_\[\w{1,3}\]$")
JAVA_NAME = re.compile(r"^[\w$<>+-]+([./][\w$<>+-]+)+$")


def java_frame(frame, annotated):
    """Is this a Java method frame? async-profiler's marks decide when present (`ann`);
    otherwise Java frames look like pkg.Class.method (native ones have `::`, no dot, a path,
    or are pseudo-frames in brackets)."""
    if AP_MARK.search(frame):
        return bool(AP_JAVA.search(frame))
    return not annotated and not frame.startswith(("[", "/")) and bool(JAVA_NAME.match(frame))


def java_only(src, dest):
    """The profile with every non-Java frame dropped (JIT, GC and VM threads' native stacks,
    native leaves under Java code, pseudo-frames such as `[JIT compiler]`); samples with no
    Java frame left are dropped."""
    with open(src, errors="replace") as f:
        lines = f.read().splitlines()
    annotated = any(AP_JAVA.search(fr) for ln in lines[:500] for fr in ln.rpartition(" ")[0].split(";"))
    with open(dest, "w") as out:
        for ln in lines:
            stack, _, n = ln.rpartition(" ")
            frames = [fr for fr in stack.split(";") if java_frame(fr, annotated)]
            if frames and n.isdigit():
                out.write(";".join(frames) + " " + n + "\n")
    return dest


def agreement(tools, rows):
    """hpm (each mode) vs async-profiler and vs JFR, and async-profiler vs JFR, per workload
    and interval: `hpm compare` of the profiles of all runs of each cell merged. As the noise
    floor, each profiler against itself: the runs split in two halves (even, odd)."""
    prof = {}
    for row in rows:
        if row["ok"] and row["profile"]:
            prof.setdefault((row["workload"], row["profiler"], row["interval"]), []).append(row["profile"])
    mdir = os.path.join(tools.out, "merged")
    os.makedirs(mdir, exist_ok=True)
    pairs = [(f"{m} vs {o}", m, o) for m in ("hpm-asgct", "hpm-jvmti", "hpm-sps") for o in ("async-profiler", "jfr")]
    pairs.append(("async-profiler vs jfr", "async-profiler", "jfr"))
    out = []
    for wl, interval in sorted({(k[0], k[2]) for k in prof}):
        files = {}
        for (w, p, i), paths in prof.items():
            if (w, i) == (wl, interval):
                base = os.path.join(mdir, f"{wl}-{p}-{i}")
                files[p] = merged(tools, paths, base + ".collapsed")
                if len(paths) >= 2:
                    files[p + "/even"] = merged(tools, paths[0::2], base + "-even.collapsed")
                    files[p + "/odd"] = merged(tools, paths[1::2], base + "-odd.collapsed")
        todo = [(n, x, y) for n, x, y in pairs if x in files and y in files]
        todo += [(f"{p} vs itself (half the runs each)", p + "/even", p + "/odd")
                 for p in ("hpm-asgct", "async-profiler", "jfr") if p + "/even" in files]
        for name, x, y in todo:
            for scope in ("Java frames", "all samples"):
                fx, fy = files[x], files[y]
                if scope == "Java frames":
                    fx = java_only(fx, fx[:-10] + ".java.collapsed")
                    fy = java_only(fy, fy[:-10] + ".java.collapsed")
                got = compare(tools, fx, fy)
                out.append({"workload": wl, "interval": interval, "pair": name, "scope": scope,
                            "runs": len(prof[(wl, x.split("/")[0], interval)]), "ok": got is not None, **(got or {})})
    return out
