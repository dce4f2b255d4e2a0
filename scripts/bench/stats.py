"""The numbers behind the benchmark tables: quartiles, the median's confidence interval, the
geometric mean, a paired run's overhead, and the interval notations the harness takes. Pure
functions of their arguments (tested by test_stats.py); timings are benchmarks, never tests."""
import math
import re
import statistics


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


def geomean(xs):
    """The geometric mean of positive xs (ratios: 1.02 for +2%); None for no values."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def overhead(on, off):
    """Wall and CPU of the sampled iterations' mean over the unsampled ones', minus 1; each
    iteration a (wall, cpu) pair."""
    return {m: sum(x[k] for x in on) / len(on) / (sum(x[k] for x in off) / len(off)) - 1
            for m, k in (("wall", 0), ("cpu", 1))}


def seconds(interval):
    """A sampling interval written `10ms`, `1ms`, `100us` or `1s`, in seconds; exits on anything else."""
    m = re.fullmatch(r"([0-9.]+)(ms|us|s)", interval)
    if not m:
        raise SystemExit(f"bad interval `{interval}`: use e.g. 10ms, 1ms, 100us")
    return float(m.group(1)) * {"s": 1, "ms": 1e-3, "us": 1e-6}[m.group(2)]


def parse_ns(interval):
    """`1ms`, `10ms`, `500us`, `100ns`, `2s` or a bare number (nanoseconds) as integer nanoseconds."""
    for suffix, mult in (("ms", 1_000_000), ("us", 1_000), ("ns", 1), ("s", 1_000_000_000)):
        if interval.endswith(suffix):
            return int(float(interval[:-len(suffix)]) * mult)
    return int(interval)
