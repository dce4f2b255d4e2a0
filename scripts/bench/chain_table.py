"""The paper's Table 1 (Inoue & Nakatani) per workload and interval from the `hpm: callerchain:` lines of a
`bench paired` run with --hpm-options sampler=chain. Usage: python3 scripts/bench chain-table OUT (bench
paired's --out)."""
import glob
import re
import statistics
import sys

PAT = re.compile(r"callerchain: (\d+) of (\d+) samples keyed .*?, (\d+) anchors; tree of (\d+) nodes over (\d+) methods, (\d+) with several callers at the same depth; leaf events' callers unique for 1 level ([\d.]+)%, for 3 levels ([\d.]+)% \(Table 1\); (\d+) stacks completed")
PART = re.compile(r"(\d[\d,]*) samples, .*?stack copy ended, no caller known: ([\d,]+)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit(__doc__)
    root = argv[0]
    print("| workload | interval | sessions | samples keyed | nodes | methods | nodes with several callers | unique 1 level | unique 3 levels | completed | left partial |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for w in ["h2", "lucene", "sunflow", "ecj", "xalan"]:
        for iv in ["1ms", "10ms"]:
            rows, parts = [], []
            # `hpm-IV` (--hpm-options sampler=chain) or `hpm[sampler=chain...]-IV` (--hpm-variants): only chain
            # sessions print callerchain lines.
            for f in glob.glob(f"{root}/runs/{w}/hpm-{iv}/*/stderr.txt") + glob.glob(f"{root}/runs/{w}/hpm[[]*-{iv}/*/stderr.txt"):
                t = open(f).read()
                rows += [tuple(float(x) for x in m.groups()) for m in PAT.finditer(t)]
                parts += [(int(a.replace(',', '')), int(b.replace(',', ''))) for a, b in PART.findall(t)]
            if not rows:
                continue

            def med(i):
                return statistics.median(r[i] for r in rows)
            keyed = statistics.median(r[0] / r[1] * 100 for r in rows)
            comp = statistics.median(r[8] / r[1] * 100 for r in rows)
            lp = statistics.median(b / a * 100 for a, b in parts) if parts else 0
            print(f"| {w} | {iv} | {len(rows)} | {keyed:.1f}% | {med(3):.0f} | {med(4):.0f} | {med(5):.0f} | {med(6):.1f}% | {med(7):.1f}% | {comp:.1f}% | {lp:.1f}% |")
