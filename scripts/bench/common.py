"""What the benchmark subcommands share besides their statistics (stats.py): running a command
with its CPU time and peak RSS from wait4, async-profiler from Maven Central, the agent build,
the patched JDK, and the machine line. Timings are benchmarks, never tests."""
import os
import platform
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
