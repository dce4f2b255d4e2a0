"""Unit tests of safepoints.py: safepoints attributed to the harness's iterations (run by
scripts/test.sh: `python3 -m unittest discover -s scripts/bench -t scripts`)."""
import unittest

from bench.safepoints import ops_field, parse, per_iteration, table

# As JDK 17 writes them with `-Xlog:safepoint:file=...:timemillis`.
LOG = """[1000ms] Safepoint "G1CollectFull", Time since last: 5000000 ns, Reaching safepoint: 2000 ns, At safepoint: 9000000 ns, Total: 9002000 ns
[1005ms] Safepoint "Cleanup", Time since last: 1000000 ns, Reaching safepoint: 2500 ns, At safepoint: 6300 ns, Total: 8800 ns
[1050ms] Safepoint "ICBufferFull", Time since last: 1000000 ns, Reaching safepoint: 2500 ns, At safepoint: 6300 ns, Total: 8800 ns
[1100ms] Safepoint "Cleanup", Time since last: 1000000 ns, Reaching safepoint: 2500 ns, At safepoint: 6300 ns, Total: 8800 ns
[1101ms] Safepoint "Cleanup", Time since last: 1000000 ns, Reaching safepoint: 2500 ns, At safepoint: 6300 ns, Total: 8800 ns
"""
# Iteration 0 from 1000 ms for 100 ms, iteration 1 from 1200 ms.
OUT = """hpm-bench start wall iterations 2 cpus 2
hpm-bench iteration 0 1000 100.000
hpm-bench paired 0 off 100.000 190.000
hpm-bench iteration 1 1200 50.500
hpm-bench paired 1 c0 50.500 99.000
"""


class Parse(unittest.TestCase):
    def test_stamps_and_operations(self):
        self.assertEqual(parse(LOG)[:2], [(1000, "G1CollectFull"), (1005, "Cleanup")])
        self.assertEqual(len(parse(LOG)), 5)

    def test_other_lines_are_not_safepoints(self):
        self.assertEqual(parse("[1000ms] Entering safepoint region: Cleanup\nnot a log line\n"), [])


class PerIteration(unittest.TestCase):
    def test_inside_from_after_start_to_end(self):
        # 1000 is the collection before the iteration, in its first millisecond: left out;
        # 1100 = start + duration: in; 1101: after it.
        got = per_iteration(LOG, OUT)
        self.assertEqual(got[0], ["Cleanup", "ICBufferFull", "Cleanup"])

    def test_every_iteration_has_a_list(self):
        self.assertEqual(per_iteration(LOG, OUT)[1], [])
        self.assertEqual(per_iteration("", OUT), {0: [], 1: []})


class Table(unittest.TestCase):
    def test_ops_field_counts(self):
        self.assertEqual(ops_field(["Cleanup", "ICBufferFull", "Cleanup"]), "Cleanup=2 ICBufferFull=1")
        self.assertEqual(ops_field([]), "")

    def test_cells_totals_and_rate(self):
        row = {"workload": "wall", "interval": "10ms", "run": "0"}
        rows = [dict(row, sampler="off", sampled="0", wall_ms="500", safepoints="0", safepoint_ops=""),
                dict(row, sampler="hpm", sampled="1", wall_ms="500", safepoints="0", safepoint_ops=""),
                dict(row, sampler="old", sampled="1", wall_ms="250", safepoints="50", safepoint_ops="GetThreadListStackTraces=50"),
                dict(row, sampler="old", sampled="1", wall_ms="250", safepoints="48", safepoint_ops="GetThreadListStackTraces=47 Cleanup=1")]
        lines = table(rows).splitlines()
        self.assertIn("| wall | 10ms | off | 1 | 0 | 0 (0 / 0, 0) | 0.00 | — |", lines)
        self.assertIn("| wall | 10ms | old | 2 | 98 | 49 (48.5 / 49.5, 50) | 196.00 | GetThreadListStackTraces 97, Cleanup 1 |", lines)
        # Off first within a workload and interval.
        self.assertLess(lines.index(next(x for x in lines if "| off |" in x)), lines.index(next(x for x in lines if "| hpm |" in x)))

    def test_rows_without_counts_make_no_table(self):
        self.assertEqual(table([{"workload": "h2", "sampled": "0", "safepoints": ""}]), "")


if __name__ == "__main__":
    unittest.main()
