"""Where the agent's heap goes in a steady session, by the agent's function that allocated it.

Runs one suite program under heaptrack, attaches a session after its warm-up (1 ms, a collapsed
output alone, as `bench cost --steady` does), prints `status` when the session has run
--seconds, then kills the JVM with SIGKILL: what the agent had allocated and not freed by then
is heaptrack's "leaked", and is summed here by the innermost function of hpm's own code that
was not inlined (heaptrack lists a frame's inlined callees before it; the allocator's and hash
tables' frames skipped), largest first. What libheaptrack had not yet handed on when the JVM
was killed is lost: the sum is checked against `status`'s "agent heap" printed just before.
heaptrack is installed with apt when missing (root only). A benchmark, not a test: a few
minutes. sunflow's JVM aborts under heaptrack here with no agent at all; ecj runs.

    python3 -B scripts/bench heap --workload ecj --seconds 180
"""
import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .common import build_agent
from .workloads import STEADY_WARM, programs

# Frames that say how, not what, was allocated.
PLUMBING = re.compile(r"heap\.rs|Counting|rust_alloc|RecentMap|hash\.rs")


def ensure_heaptrack():
    if shutil.which("heaptrack") and shutil.which("heaptrack_print"):
        return
    if os.geteuid() != 0:
        sys.exit("bench-heap: heaptrack is missing; install it (apt-get install heaptrack) and run again")
    print("bench-heap: installing heaptrack", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "heaptrack"], check=True, env=env, stdout=subprocess.DEVNULL)


def by_function(collapsed):
    """Bytes per innermost hpm function, from heaptrack's leaked-cost flame graph lines."""
    sums, total, outside = collections.Counter(), 0, 0
    for line in open(collapsed):
        stack, _, v = line.rstrip().rpartition(" ")
        v = int(v)
        total += v
        frames = [re.sub(r"::h[0-9a-f]{16}", "", f) for f in stack.split(";") if f]
        if not any("hpm" in f for f in frames):
            outside += v
            continue
        # hpm's own frames (crates hpm, hpm_agent, hpm_profile/capture/resolve), innermost last.
        own = [f for f in frames if "hpm" in f and not PLUMBING.search(f)]
        sums[own[-1] if own else "(no hpm frame of its own)"] += v
    return sums, total, outside


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench heap", description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="ecj", choices=sorted(STEADY_WARM))
    ap.add_argument("--seconds", type=float, default=180)
    ap.add_argument("--agent", default="", help="a libhpm.so (default: this tree's build)")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args(argv)
    ensure_heaptrack()
    agent, hpm = build_agent()
    agent = a.agent or agent
    out = tempfile.mkdtemp(prefix="hpm-bench-heap-")
    (_, cp, main_class, args), = programs(a.workload, [])
    err = open(os.path.join(out, "stderr.txt"), "w+")
    java = ["java", "-Xmx1g", "-Xms1g", "-XX:+AlwaysPreTouch", "-cp", cp, main_class, "1000000"] + args[1:]
    p = subprocess.Popen(["heaptrack", "-o", os.path.join(out, "heap")] + java,
                         stdout=subprocess.PIPE, stderr=err, text=True, cwd=out)

    def until(done):
        for line in p.stdout:
            if line.startswith("hpm-bench iteration") and done(int(line.split()[2])):
                return
        sys.exit("bench-heap: the program ended early; see " + err.name)

    jvm, done = None, False
    try:
        # heaptrack slows the warm-up; half of bench-cost's iterations reach the compiled code.
        until(lambda i: i >= STEADY_WARM[a.workload] // 2)
        jvm = int(subprocess.check_output(["pgrep", "-n", "-f", "-x", "java .*" + main_class + ".*"]).split()[0])
        env = dict(os.environ, HPM_AGENT=agent)
        attach = [hpm, "attach", str(jvm)]
        subprocess.run(attach + [f"start,interval=1ms,file={out}/s.collapsed"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        end = time.monotonic() + a.seconds
        until(lambda i: time.monotonic() >= end)
        print(subprocess.run(attach + ["status"], env=env, capture_output=True, text=True).stdout, flush=True)
        done = True
    finally:
        # The JVM killed whatever happened above (one left running would load the machine);
        # heaptrack then writes its file and ends, unless the run failed before the JVM was
        # found.
        for pid in [jvm] if jvm is not None else [p.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()
    if not done:
        sys.exit("bench-heap: the session did not run its course")
    data = next(os.path.join(out, f) for f in os.listdir(out) if f.startswith("heap"))
    collapsed = os.path.join(out, "leaked.collapsed")
    subprocess.run(["heaptrack_print", "-f", data, "--shorten-templates", "0", "--flamegraph-cost-type", "leaked",
                    "-F", collapsed],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sums, total, outside = by_function(collapsed)
    mb = 1 << 20
    print(f"| {a.workload}, {a.seconds:.0f} s: live at the kill, by the agent's function | MB |")
    print("| --- | --- |")
    for f, v in sums.most_common(a.top):
        print(f"| `{f}` | {v / mb:.1f} |")
    rest = sum(sums.values()) - sum(v for _, v in sums.most_common(a.top))
    print(f"| the agent's other functions | {rest / mb:.1f} |")
    print(f"| the agent's, in all | {(total - outside) / mb:.1f} |")
    shutil.rmtree(out, ignore_errors=True)
