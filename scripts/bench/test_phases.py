"""Unit tests of phases.py's choices: step 2's thresholds from the grid and the turns of a
rotation (run by scripts/test.sh: `python3 -m unittest discover -s scripts/bench -t scripts`)."""
import unittest

from bench.phases import choose, parse_args, probe_share, steady, turns


def listing(all_invocations, *phases):
    """A `hpm phases --json` listing: phases (total_share, average_share, calls) as fractions."""
    return {"selection": {"all_invocations": all_invocations, "phases": [
        {"name": f"m{k}", "total_share": t, "average_share": g, "calls": c} for k, (t, g, c) in enumerate(phases)]}}


class Choose(unittest.TestCase):
    def test_finest_grid_point_under_the_budget_with_two_phases(self):
        a = parse_args(["--weights", "1,10", "--grains", "0.5,5", "--out", "/tmp/x"])
        # At (1%, 0.5%) the three methods: 3 + 5 + 500 of 10,000 invocations, 5.08%, over 1%.
        # At (1%, 5%) the first two: 8 of 10,000, under 1%; (10%, 0.5%), the same product but a
        # larger weight, comes after it.
        doc = listing(10_000, (1.0, 1.0, 3), (0.6, 0.1, 5), (0.2, 0.01, 500))
        self.assertEqual(choose(a, doc)[:3], (1.0, 5.0, 2))
        self.assertAlmostEqual(choose(a, doc)[3], 8 / 10_000)

    def test_thresholds_are_strict_and_one_phase_is_not_enough(self):
        a = parse_args(["--weights", "10", "--grains", "10", "--out", "/tmp/x"])
        self.assertIsNone(choose(a, listing(100, (1.0, 1.0, 1), (0.1, 0.1, 1))))

    def test_grid_runs_finest_first(self):
        a = parse_args(["--weights", "5,1", "--grains", "2,0.1", "--out", "/tmp/x"])
        self.assertEqual(a.grid[0], (1.0, 0.1))
        self.assertEqual(a.grid[-1], (5.0, 2.0))


class Turns(unittest.TestCase):
    # (iteration, cell, wall, cpu) as paired.run_jvm gives them: spans of 2, order off S P P S off.
    ITS = [(i, c, 10.0 * (i + 1), 1.0 * (i + 1)) for i, c in
           enumerate(["off", "off", "S", "S", "P", "P", "P", "P", "S", "S", "off", "off"])]

    def test_turns_cut_each_cells_iterations_in_order(self):
        self.assertEqual([[x[0] for x in t] for t in turns(self.ITS, "P", 2)], [[4, 5], [6, 7]])

    def test_steady_drops_each_turns_first_iteration(self):
        by = steady(self.ITS, 2)
        self.assertEqual(by["P"], [(60.0, 6.0), (80.0, 8.0)])
        self.assertEqual(by["off"], [(20.0, 2.0), (120.0, 12.0)])

    def test_steady_drops_as_many_as_asked(self):
        self.assertEqual(steady(self.ITS, 2, 0)["P"], [(50.0, 5.0), (60.0, 6.0), (70.0, 7.0), (80.0, 8.0)])

    def test_steady_keeps_everything_with_turns_of_one(self):
        self.assertEqual(len(steady(self.ITS, 1)["S"]), 4)


class ProbeShare(unittest.TestCase):
    ERR = ("hpm: phases: 1000000 records in 10 blocks, 1 bytes written\nhpm: phases: 5 threads traced; 500 ns per probe here (read(2))\n"
           "hpm: phases: 2000000 records in 10 blocks, 1 bytes written\nhpm: phases: 5 threads traced; 250 ns per probe here (read(2))\n")

    def test_records_times_ns_over_each_sessions_cpu(self):
        # P's turns: CPU 5 + 6 = 11 ms and 7 + 8 = 15 ms; probes 500 ms each.
        self.assertEqual(probe_share(self.ERR, Turns.ITS, "P", 2), [500 / 11, 500 / 15])

    def test_summaries_not_matching_the_sessions_give_nothing(self):
        self.assertEqual(probe_share(self.ERR, Turns.ITS, "P", 1), [])


if __name__ == "__main__":
    unittest.main()
