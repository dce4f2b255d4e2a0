"""`python3 scripts/bench SUBCOMMAND [OPTIONS]` (or `python3 -m bench ...` from scripts/): runs one
subcommand of the benchmark harness; `--help` after a subcommand gives its options."""
import importlib
import os
import sys

if not __package__:
    # Run as `python3 scripts/bench`: the package's parent, not the package, is what imports it.
    sys.path[0] = os.path.dirname(os.path.abspath(sys.path[0]))

# Subcommand: (module, what it measures). Adding one is a module and a line here.
COMMANDS = {
    "suite": ("suite", "the third-party programs under every profiler, separate JVMs (--quick: CI)"),
    "paired": ("paired", "sampled against unsampled iterations inside each JVM (--same-jvm: profilers take turns)"),
    "overhead": ("overhead", "the demo at a fixed amount of work: CPU and wall time without a profiler, with hpm, with async-profiler"),
    "cost": ("cost", "the agent's own cost per sample at each program's stack depth; steady sessions (--steady)"),
    "data": ("data", "what the `data` option finds on real programs, and its cost per sample"),
    "heap": ("heap", "the agent's heap under heaptrack over a long session"),
    "stacks": ("stacks", "Java stack completeness: hpm's walker against AsyncGetCallTrace (stack=compare)"),
    "instructions": ("instructions", "how concentrated samples are on compiled code's instructions (Schneider & Gross)"),
    "attribute": ("attribute", "where a same-JVM run's CPU went, by thread group and code (perf record)"),
    "chain-table": ("chain_table", "the caller-chain statistics (Inoue & Nakatani's Table 1) of a paired run"),
    "push": ("push", "the push to a collector: overhead paired in one JVM, bytes per period against async-profiler, memory while it is down"),
    "phases": ("phases", "method-level phases: step 1 and step 3 overhead paired in one JVM, thresholds, Tables 3, 5, 6"),
    "divergence": ("divergence", "frames a collapsed profile's stacks have above the paths the others share"),
}


def usage():
    width = max(map(len, COMMANDS))
    lines = [__doc__.strip(), "", "subcommands:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"bench: no subcommand `{name}`\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{COMMANDS[name][0]}")
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
