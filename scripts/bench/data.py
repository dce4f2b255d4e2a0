"""What `data` finds on real programs (docs/benchmarks.md, "Objects from data
addresses"): one run per program at 1 ms with `data`, JDK 17 by default; from the agent's
summary the data-address line (how many samples' instructions gave an address), the objects
line (identification rate and why the rest failed) and the cost per sample (handler +
processing); from the recording, `hpm report --by class` and `--by field` (top rows).
A second run of each program without `data` gives the cost per sample it is compared with
(separate JVMs: the per-sample figures, not the programs' run times; the run-time overhead is
`python3 scripts/bench paired --data`, paired in one JVM).

    python3 scripts/bench data [--workloads h2,lucene,sunflow] [--java PATH] [--top 5]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from .common import build_agent
from .workloads import programs

COST = re.compile(r"per sample ([\d.]+) \+ ([\d.]+) us")


def line(stderr, start):
    """The last line of the summary that starts so (the start-up notes come first)."""
    found = [l[len("hpm: "):] for l in stderr.splitlines()
             if l.startswith("hpm: " + start) and (" of " in l or " per " in l)]
    return found[-1] if found else "(none)"


def table(hpm, jfr, by, top):
    out = subprocess.run([hpm, "report", jfr, "--by", by, "--top", str(top)], capture_output=True, text=True, check=True).stdout
    return out[out.index("\n== Data"):].strip() if "\n== Data" in out else "(no data table)"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench data", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="h2,lucene,sunflow")
    ap.add_argument("--java", default="java")
    ap.add_argument("--top", type=int, default=5)
    a = ap.parse_args(argv)
    agent, hpm = build_agent()
    with tempfile.TemporaryDirectory() as tmp:
        for name, cp, main_class, args in programs(a.workloads, []):
            costs = {}
            for data in (False, True):
                jfr = os.path.join(tmp, f"{name}.jfr")
                opts = f"interval=1ms,file={jfr}" + (",data" if data else "")
                cmd = [a.java, f"-agentpath:{agent}={opts}", "-cp", cp, main_class] + args
                r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp)
                if r.returncode != 0:
                    sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
                m = COST.search(r.stderr)
                costs[data] = m.groups() if m else ("?", "?")
            print(f"### {name}\n")
            print(f"- {line(r.stderr, 'data addresses:')}")
            print(f"- {line(r.stderr, 'objects:')}")
            print(f"- per sample (handler + processing, us): without data {costs[False][0]} + {costs[False][1]}, "
                  f"with data {costs[True][0]} + {costs[True][1]}")
            print(f"- {line(r.stderr, 'data cost:')}\n")
            print("```")
            print(table(hpm, jfr, "class", a.top))
            print()
            print(table(hpm, jfr, "field", a.top))
            print("```\n", flush=True)
