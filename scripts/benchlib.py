"""Shared pieces of the benchmark scripts (bench-overhead.py, bench-suite.py): running a
command with its CPU time and peak RSS from wait4, async-profiler from Maven Central, the
agent build, quartiles, and the machine line. Timings are benchmarks, never tests."""
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def target_dir():
    """Cargo's target directory (CARGO_TARGET_DIR if set, as cargo does)."""
    return os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")


def build_agent():
    """Builds libhpm.so and the hpm CLI (release); returns (libhpm.so, hpm)."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "hpm-agent", "-p", "hpm-cli"], cwd=ROOT, check=True)
    rel = os.path.join(target_dir(), "release")
    return os.path.join(rel, "libhpm.so"), os.path.join(rel, "hpm")


class Run:
    """One finished process: wall and CPU seconds (user+sys, children included as wait4
    reports them), peak RSS in KiB, exit status, stdout and stderr text."""

    def __init__(self, wall, cpu, rss_kib, status, out, err):
        self.wall, self.cpu, self.rss_kib, self.status, self.out, self.err = wall, cpu, rss_kib, status, out, err


def measure(cmd, cwd=None, stdout_path=None):
    """Runs cmd to the end and measures it with wait4. stdout goes to stdout_path (or a
    temporary file) and is returned as text with stderr."""
    out_f = open(stdout_path, "w+b") if stdout_path else tempfile.TemporaryFile()
    with out_f:
        start = time.monotonic()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out_f, stderr=subprocess.PIPE)
        err = p.stderr.read()
        p.stderr.close()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        out = out_f.read()
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, p.returncode,
               out.decode(errors="replace"), err.decode(errors="replace"))


def run(cmd):
    """Runs cmd, exits on failure; returns its Run."""
    r = measure(cmd)
    if r.status != 0:
        sys.exit(f"benchmark run failed ({r.status}): {' '.join(cmd)}\n{r.err}")
    return r


def async_profiler(version):
    """libasyncProfiler.so from the Maven Central jar `tools.profiler:async-profiler:VERSION`
    (fetched with mvn into ~/.m2), unpacked under the target directory."""
    jar = os.path.expanduser(f"~/.m2/repository/tools/profiler/async-profiler/{version}/async-profiler-{version}.jar")
    if not os.path.exists(jar):
        r = subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact=tools.profiler:async-profiler:{version}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"could not fetch async-profiler {version} from Maven Central with mvn:\n{r.stdout[-2000:]}{r.stderr[-2000:]}\n"
                     "check that mvn is installed (scripts/setup.sh) and the version exists, or pass another version")
    out = os.path.join(target_dir(), f"async-profiler-{version}")
    lib = os.path.join(out, "linux-x64", "libasyncProfiler.so")
    if not os.path.exists(lib):
        with zipfile.ZipFile(jar) as z:
            z.extract("linux-x64/libasyncProfiler.so", out)
    return lib


def quartiles(xs):
    """(q1, median, q3) of xs, inclusive method; a single value gives (x, x, x)."""
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def median_interval(xs, level=0.9):
    """A distribution-free interval holding the median of what xs were drawn from with at least
    `level` probability: (x(k), x(n+1-k)) of the sorted xs, k as large as that allows (the sign
    test's interval: each x falls below the median with probability 1/2). None if even the
    smallest and largest do not reach `level` (fewer than 5 values at 90%)."""
    n, xs = len(xs), sorted(xs)
    best = None
    for k in range(1, n // 2 + 1):
        outside = 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
        if 1 - outside < level:
            break
        best = (xs[k - 1], xs[n - k])
    return best


def patched_java(home=None):
    """bin/java of the patched JDK of jvm-patches/: `home` if given, else HPM_SPS_JDK, else
    build.sh's default /var/cache/hpm/jdk-sps-latest; None if none of them has one."""
    for h in (home, os.environ.get("HPM_SPS_JDK"), "/var/cache/hpm/jdk-sps-latest"):
        if h and os.access(os.path.join(h, "bin", "java"), os.X_OK):
            return os.path.join(h, "bin", "java")
    return None


def java_version(java):
    return subprocess.run([java, "-version"], capture_output=True, text=True).stderr.splitlines()[0]


def machine(java):
    return f"{os.cpu_count()} cores, Linux {platform.release()}, {java_version(java)}"


def collapsed(path):
    """(stack, samples) of each line of a collapsed-stacks file (`frame;frame;... N`)."""
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if stack:
                yield stack, int(n)
