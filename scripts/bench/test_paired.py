"""Unit tests of paired.py's readers of the agent's summaries (run by scripts/test.sh:
`python3 -m unittest discover -s scripts/bench -t scripts`)."""
import unittest

from bench.paired import sessions_per_sample
from bench.paired_tables import session_cost_table

ERR = """hpm: event cpu-clock, interval 1 ms, sampler asgct
hpm: wrote /out/runs/h2/same-jvm-1ms/0/cell1/profile.jfr
hpm: agent CPU 63 ms (2.1% of the sampled CPU time): signal handler 1 ms, processing 63 ms; per sample 6.8 + 15.4 us; code blobs
hpm: wrote /out/runs/h2/same-jvm-1ms/0/cell0/profile.jfr
hpm: agent CPU 60 ms (2.0% of the sampled CPU time): per sample 4.9 + 12.7 us; code blobs
hpm: agent CPU 1 ms: per sample 9.9 + 9.9 us
"""


class SessionsPerSample(unittest.TestCase):
    def test_each_cost_goes_to_the_cell_that_wrote_before_it(self):
        self.assertEqual(sessions_per_sample(ERR), {1: [(6.8, 15.4)], 0: [(4.9, 12.7)]})

    def test_a_cost_without_a_file_named_before_it_is_left_out(self):
        self.assertEqual(sessions_per_sample("hpm: agent CPU 1 ms: per sample 9.9 + 9.9 us\n"), {})

    def test_table_row(self):
        md = session_cost_table({("h2", "1ms", "hpm[cstack=no]"): [(4.0, 10.0), (5.0, 12.0), (6.0, 14.0)]})
        self.assertIn("| h2 | 1ms | hpm[cstack=no] | 3 | 5.0 (4.5 / 5.5) | 12.0 (11.0 / 13.0) | 17.0 (15.5 / 18.5) |", md)


if __name__ == "__main__":
    unittest.main()
