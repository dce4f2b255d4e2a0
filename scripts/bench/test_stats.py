"""Unit tests of stats.py, the numbers behind the benchmark tables (run by scripts/test.sh:
`python3 -m unittest discover -s scripts/bench -t scripts`)."""
import math
import unittest

from bench.stats import geomean, median_interval, overhead, parse_ns, quartiles, seconds


class Quartiles(unittest.TestCase):
    def test_one_value_is_all_three(self):
        self.assertEqual(quartiles([7.0]), (7.0, 7.0, 7.0))

    def test_inclusive_method(self):
        self.assertEqual(quartiles([1, 2, 3, 4, 5]), (2, 3, 4))
        self.assertEqual(quartiles([4, 1, 3, 2]), (1.75, 2.5, 3.25))


class MedianInterval(unittest.TestCase):
    def test_too_few_values_give_none(self):
        # Four values: the widest interval (min, max) holds the median with 1 - 2/16 = 87.5% < 90%.
        self.assertIsNone(median_interval([1, 2, 3, 4]))
        self.assertIsNone(median_interval([]))

    def test_five_values_span_min_to_max(self):
        # 1 - 2/32 = 93.75% >= 90%; k = 2 would give 1 - 12/32 < 90%.
        self.assertEqual(median_interval([5, 1, 4, 2, 3]), (1, 5))

    def test_narrows_as_values_grow(self):
        xs = list(range(1, 21))
        # n = 20: k = 6 keeps 1 - 2 * P(X <= 5) = 95.9%; k = 7 drops to 88.5%.
        self.assertEqual(median_interval(xs), (6, 15))
        self.assertEqual(median_interval(xs, level=0.5), (8, 13))

    def test_coverage_is_at_least_the_level(self):
        for n in range(5, 40):
            lo, hi = median_interval(list(range(n)))
            k = lo + 1
            coverage = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
            self.assertGreaterEqual(coverage, 0.9)
            self.assertEqual(hi, n - k)


class Geomean(unittest.TestCase):
    def test_of_ratios(self):
        self.assertAlmostEqual(geomean([1.0, 4.0]), 2.0)
        self.assertAlmostEqual(geomean([1.1, 1.1, 1.1]), 1.1)

    def test_empty_is_none(self):
        self.assertIsNone(geomean([]))


class Overhead(unittest.TestCase):
    def test_ratio_of_means_minus_one(self):
        ov = overhead([(110, 220), (110, 220)], [(100, 200), (100, 200)])
        self.assertAlmostEqual(ov["wall"], 0.10)
        self.assertAlmostEqual(ov["cpu"], 0.10)

    def test_means_not_per_pair(self):
        ov = overhead([(150, 100)], [(100, 100), (200, 100)])
        self.assertAlmostEqual(ov["wall"], 0.0)
        self.assertAlmostEqual(ov["cpu"], 0.0)


class Intervals(unittest.TestCase):
    def test_seconds(self):
        self.assertAlmostEqual(seconds("10ms"), 0.01)
        self.assertAlmostEqual(seconds("100us"), 1e-4)
        self.assertAlmostEqual(seconds("2s"), 2.0)
        with self.assertRaises(SystemExit):
            seconds("100000")

    def test_parse_ns(self):
        self.assertEqual(parse_ns("1ms"), 1_000_000)
        self.assertEqual(parse_ns("500us"), 500_000)
        self.assertEqual(parse_ns("100ns"), 100)
        self.assertEqual(parse_ns("2s"), 2_000_000_000)
        self.assertEqual(parse_ns("100000"), 100_000)


if __name__ == "__main__":
    unittest.main()
