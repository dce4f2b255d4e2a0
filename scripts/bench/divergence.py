"""How far a collapsed profile's stacks leave the paths the others share.

For each line of a collapsed-stacks file (root first, `;`-separated, count last), the frames
above the deepest node of its path that another line's path also passes (0: the whole path
is shared). Prints the quartiles, the 90th percentile and the mean: how many frames above a
known stack a new stack of the program brings (docs/design.md, "New callers above a known
stack of their own callers").

usage: python3 scripts/bench divergence FILE.collapsed
"""
import collections
import sys


def divergence(path):
    paths = []
    with open(path) as f:
        for line in f:
            stack, _, _count = line.rstrip("\n").rpartition(" ")
            if stack:
                paths.append(tuple(stack.split(";")))
    passing = collections.Counter(p[:i] for p in paths for i in range(1, len(p) + 1))
    above = []
    for p in paths:
        k = len(p)
        while k > 0 and passing[p[:k]] < 2:
            k -= 1
        above.append(len(p) - k)
    above.sort()
    n = len(above)
    if n == 0:
        sys.exit(f"{path}: no stacks")
    q = {p: above[min(n - 1, int(p * n))] for p in (0.25, 0.5, 0.75, 0.9)}
    print(
        f"{n} paths, {sum(map(len, paths)) / n:.1f} frames each; frames above the deepest shared node: "
        f"q1 {q[0.25]}, median {q[0.5]}, q3 {q[0.75]}, p90 {q[0.9]}, mean {sum(above) / n:.2f}"
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit(__doc__)
    divergence(argv[0])
