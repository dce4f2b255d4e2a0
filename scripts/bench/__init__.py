"""hpm's benchmark harness: one package, one module per subcommand (see __main__.py for the list).

Run it from the repository as `python3 scripts/bench SUBCOMMAND [OPTIONS]`, or from scripts/ as
`python3 -m bench SUBCOMMAND [OPTIONS]`. The subcommands share common.py (running a command and
measuring it, the agent build, async-profiler, the patched JDK), workloads.py (the third-party
programs and their drivers in bench/src), profiles.py (one suite cell under a profiler) and
stats.py (quartiles, the median's interval, geometric means: unit-tested by test_stats.py).
Timings are benchmarks, never tests: a subcommand fails only when a run fails or produces nothing."""
