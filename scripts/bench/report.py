"""Aggregates the runs of python3 scripts/bench suite and renders them: Markdown tables, SVG bar
charts (written here, no plotting library) and the marked results section of
docs/benchmarks.md."""
import math
import os
import statistics

from .stats import geomean, quartiles, seconds

BEGIN = "<!-- bench-suite results: begin (python3 scripts/bench suite rewrites this section) -->"
END = "<!-- bench-suite results: end -->"
GOALS = {"10ms": 0.3, "1ms": 1.0}  # hpm's CPU overhead goal, % (geometric mean)


def base_key(group):
    return "none" if group == "stock" else "none (sps JDK)"


def aggregate(rows, shares, agreement, meta):
    by = {}
    for r in rows:
        if r["ok"]:
            by.setdefault((r["workload"], r["cell"]), []).append(r)
    cells = []
    for (wl, key), rs in by.items():
        r0 = rs[0]
        base = by.get((wl, base_key(r0["group"])))
        c = {"workload": wl, "cell": key, "profiler": r0["profiler"], "interval": r0["interval"], "group": r0["group"],
             "runs": len(rs), "wall": quartiles([r["wall_s"] for r in rs]), "cpu": quartiles([r["cpu_s"] for r in rs]),
             "rss_mib": statistics.median(r["rss_mib"] for r in rs), "steady": statistics.median(r["steady_s"] for r in rs)}
        if base:
            c["cpu_ratio"] = c["cpu"][1] / statistics.median(b["cpu_s"] for b in base)
            c["wall_ratio"] = c["wall"][1] / statistics.median(b["wall_s"] for b in base)
            bs = statistics.median(b["steady_s"] for b in base)
            c["steady_ratio"] = c["steady"] / bs if bs else None
            c["rss_added_mib"] = c["rss_mib"] - statistics.median(b["rss_mib"] for b in base)
        lats = [(float(r["lat_med_us"]), float(r["lat_p95_us"])) for r in rs if r.get("lat_med_us")]
        if lats:
            c["latency_us"] = (statistics.median(x[0] for x in lats), statistics.median(x[1] for x in lats))
        if r0["interval"]:
            rates = [int(r["samples"]) / r["cpu_s"] for r in rs if r["samples"] != ""]
            c["rate"] = statistics.median(rates) if rates else None
            c["asked"] = 1 / seconds(r0["interval"])
        cells.append(c)
    geo = {}
    for key in sorted({c["cell"] for c in cells if c["profiler"] != "none"}):
        cs = [c for c in cells if c["cell"] == key and "cpu_ratio" in c]
        steady = [c["steady_ratio"] for c in cs if c.get("steady_ratio")]
        geo[key] = {"cpu_ratio": geomean([c["cpu_ratio"] for c in cs]), "wall_ratio": geomean([c["wall_ratio"] for c in cs]),
                    "steady_ratio": geomean(steady) if len(steady) == len(cs) else None, "workloads": len(cs)}
    return {"meta": meta, "cells": cells, "geomean": geo, "shares": shares, "agreement": agreement}


def pct(ratio):
    return "—" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def cell_order(keys):
    prof = ["hpm-asgct", "hpm-jvmti", "hpm-sps", "async-profiler", "jfr"]

    def k(key):
        p, _, rest = key.partition(" ")
        i = rest.split(" ")[0] if rest else ""
        return ("sps JDK" in key, -seconds(i) if i else 0, prof.index(p) if p in prof else 9)
    return sorted(keys, key=k)


def markdown(res, img_prefix="img/"):
    m, cells = res["meta"], res["cells"]
    wls = [w["name"] for w in m["workloads"] if any(c["workload"] == w["name"] for c in cells)]
    get = {(c["workload"], c["cell"]): c for c in cells}
    out = ["### Results", "",
           f"Command: `{m['command']}` ({m['runs']} interleaved runs per cell, {m['duration_min']:.0f} min). "
           f"Machine: {m['machine']}" + (f"; patched JDK: {m['sps_java']}" if m["sps_java"] else "") +
           f". async-profiler {m['async_profiler']} (Maven Central). Overheads: median CPU time (user+sys) "
           "and wall time against the same JVM's `none` runs; the geometric mean is over the workloads "
           "each cell ran on.", ""]
    for group in ("stock", "sps"):
        keys = cell_order({c["cell"] for c in cells if c["group"] == group and c["profiler"] != "none"})
        if not keys:
            continue
        out += [f"#### Overhead, CPU time (wall time){' — patched JDK' if group == 'sps' else ''}", "",
                "| workload | " + " | ".join(keys) + " |", "| --- |" + " --- |" * len(keys)]
        for wl in wls:
            if (wl, base_key(group)) not in get:
                continue
            out.append(f"| {wl} | " + " | ".join(
                f"{pct(get[(wl, k)].get('cpu_ratio'))} ({pct(get[(wl, k)].get('wall_ratio'))})" if (wl, k) in get else "—"
                for k in keys) + " |")
        out.append("| **geometric mean** | " + " | ".join(
            f"**{pct(res['geomean'][k]['cpu_ratio'])}** ({pct(res['geomean'][k]['wall_ratio'])})" for k in keys) + " |")
        out += ["", f"![CPU overhead per workload{' (patched JDK)' if group == 'sps' else ''}]"
                f"({img_prefix}bench-overhead-{group}.svg)", ""]
    out += partial_safepoints(res, wls, get)
    keys = cell_order({c["cell"] for c in cells if c["profiler"] != "none"})
    out += ["#### Samples per CPU-second (share of the rate asked for) and peak RSS added", "",
            "| workload | " + " | ".join(keys) + " |", "| --- |" + " --- |" * len(keys)]
    for wl in wls:
        row = []
        for k in keys:
            c = get.get((wl, k))
            if not c or c.get("rate") is None:
                row.append("—")
            else:
                row.append(f"{c['rate']:.0f} ({c['rate'] / c['asked']:.0%}), {c.get('rss_added_mib', 0):+.0f} MiB")
        out.append(f"| {wl} | " + " | ".join(row) + " |")
    out += ["", "#### Timings (seconds: q1 / median / q3)", "",
            "| workload | cell | wall | CPU | steady-state wall (after warm-up) | peak RSS MiB |",
            "| --- | --- | --- | --- | --- | --- |"]
    for wl in wls:
        for k in ["none"] + [k for k in keys if "sps JDK" not in k] + ["none (sps JDK)"] + [k for k in keys if "sps JDK" in k]:
            c = get.get((wl, k))
            if c:
                out.append(f"| {wl} | {k} | {' / '.join(f'{x:.2f}' for x in c['wall'])} | "
                           f"{' / '.join(f'{x:.2f}' for x in c['cpu'])} | {c['steady']:.2f} ({pct(c.get('steady_ratio'))}) | "
                           f"{c['rss_mib']:.0f} |")
    if res["agreement"]:
        out += ["", "#### Agreement between profilers (`hpm compare`, T = 0.1, all runs of a cell merged)", "",
                "\"Java frames\": every non-Java frame dropped first (the native stacks async-profiler records for "
                "JIT, GC and VM threads and under Java code, hpm's pseudo-frames such as `[JIT compiler]`); "
                "\"all samples\": the profiles as written.", "",
                "| workload | interval | pair | scope | overlap | hot-edge coverage | method correlation |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for g in sorted(res["agreement"], key=lambda g: (g["workload"], -seconds(g["interval"]), g["pair"], g["scope"] != "Java frames")):
            f = lambda v, s: "—" if v is None or v != v else s.format(v)  # noqa: E731
            out.append(f"| {g['workload']} | {g['interval']} | {g['pair']} | {g['scope']} | {f(g.get('overlap'), '{:.1f}%')} | "
                       f"{f(g.get('hot_edge_coverage'), '{:.1f}%')} | {f(g.get('method_correlation'), '{:.3f}')} |")
    if res["shares"]:
        out += ["", "#### Known shares (Shares: a 50%, b 30%, c 20%; 2 threads)", "",
                "| profiler | a | b | c | largest error (points) | samples |", "| --- | --- | --- | --- | --- | --- |"]
        for s in res["shares"]:
            sh = s["shares"]
            out.append(f"| {s['cell']} | " + (" | ".join(f"{sh[k]:.1%}" for k in "abc") +
                                              f" | {s['error_points']:.1f} | {s['samples']} |" if sh else "failed | | | | |"))
    out += ["", "#### Against the goals", ""] + goals(res) + [""]
    return "\n".join(out) + "\n"


def partial_safepoints(res, wls, get):
    """jvmti vs sps on the patched JDK: overheads, their ratio and the latency per sample
    (jvm-patches/README.md: the paper's shape is sps overhead <= 1/3 of jvmti's)."""
    ints = sorted({c["interval"] for c in res["cells"] if c["profiler"] == "hpm-sps"}, key=lambda i: -seconds(i))
    if not ints:
        return []
    out = ["#### Partial safepoints: `sampler=jvmti` vs `sampler=sps` (patched JDK)", "",
           "Overheads against the patched JDK's own `none`; \"sps / jvmti\" is the ratio of the overheads "
           "(the paper's shape: at most 1/3). \"Steady state\": wall time of the iterations after the "
           "warm-up ones, as Hofer et al. measure (start-up work such as class loading and JIT is the same "
           "agent code in both modes and is left out). Latency per sample from the agent's summary line, "
           "median over runs of each run's median and p95.", "",
           "| workload | interval | jvmti CPU (wall) | sps CPU (wall) | sps / jvmti, CPU (wall) | "
           "steady state: jvmti / sps (sps / jvmti) | latency jvmti, median / p95 (us) | latency sps, median / p95 (us) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    def ratio(s, j, k):
        a, b = s.get(k), j.get(k)
        if a is None or b is None or b <= 1:
            return "—"
        return "≤ 0" if a <= 1 else f"{(a - 1) / (b - 1):.2f}"
    def lat(c):
        return "—" if "latency_us" not in c else f"{c['latency_us'][0]:.0f} / {c['latency_us'][1]:.0f}"
    for i in ints:
        for wl in wls:
            j, s_ = get.get((wl, f"hpm-jvmti {i} (sps JDK)")), get.get((wl, f"hpm-sps {i} (sps JDK)"))
            if not j or not s_:
                continue
            out.append(f"| {wl} | {i} | {pct(j.get('cpu_ratio'))} ({pct(j.get('wall_ratio'))}) | "
                       f"{pct(s_.get('cpu_ratio'))} ({pct(s_.get('wall_ratio'))}) | {ratio(s_, j, 'cpu_ratio')} "
                       f"({ratio(s_, j, 'wall_ratio')}) | {pct(j.get('steady_ratio'))} / {pct(s_.get('steady_ratio'))} "
                       f"({ratio(s_, j, 'steady_ratio')}) | {lat(j)} | {lat(s_)} |")
        g = res["geomean"]
        j, s_ = g.get(f"hpm-jvmti {i} (sps JDK)"), g.get(f"hpm-sps {i} (sps JDK)")
        if j and s_:
            out.append(f"| **geometric mean** | {i} | **{pct(j['cpu_ratio'])}** ({pct(j['wall_ratio'])}) | "
                       f"**{pct(s_['cpu_ratio'])}** ({pct(s_['wall_ratio'])}) | **{ratio(s_, j, 'cpu_ratio')}** "
                       f"({ratio(s_, j, 'wall_ratio')}) | **{pct(j.get('steady_ratio'))} / {pct(s_.get('steady_ratio'))}** "
                       f"(**{ratio(s_, j, 'steady_ratio')}**) | | |")
    return out + [""]


def goals(res):
    g, lines = res["geomean"], []
    for interval, goal in GOALS.items():
        h, a = g.get(f"hpm-asgct {interval}"), g.get(f"async-profiler {interval}")
        if not h:
            continue
        ho = (h["cpu_ratio"] - 1) * 100
        lines.append(f"- hpm at {interval}: {ho:+.2f}% CPU (geometric mean); goal at most {goal}% — "
                     + ("met." if ho <= goal else f"**not met**, by {ho - goal:.2f} points."))
        if a:
            ao = (a["cpu_ratio"] - 1) * 100
            lines.append(f"- hpm vs async-profiler at {interval}: {ho:+.2f}% vs {ao:+.2f}% — "
                         + ("hpm no higher: met." if ho <= ao else f"**hpm higher by {ho - ao:.2f} points**."))
    for interval in ("10ms", "1ms"):
        j, s = g.get(f"hpm-jvmti {interval} (sps JDK)"), g.get(f"hpm-sps {interval} (sps JDK)")
        if j and s:
            for what in ("cpu_ratio", "wall_ratio", "steady_ratio"):
                if j.get(what) is None or s.get(what) is None:
                    continue
                jo, so = (j[what] - 1) * 100, (s[what] - 1) * 100
                name = {"cpu_ratio": "whole-run CPU", "wall_ratio": "whole-run wall", "steady_ratio": "steady-state wall"}[what]
                met = so <= jo / 3 if jo > 0 else so <= 0
                lines.append(f"- sps vs jvmti at {interval} ({name}, geometric mean): {so:+.2f}% vs {jo:+.2f}% — paper's "
                             f"shape (sps at most 1/3 of jvmti) " + ("holds." if met else "**does not hold**."))
    for scope in ("Java frames", "all samples"):
        lines += agreement_goal(res, scope)
    return lines


def agreement_goal(res, scope):
    lines = []
    ag = [x for x in res["agreement"] if x["pair"] == "hpm-asgct vs async-profiler" and x["scope"] == scope
          and x.get("overlap") is not None]
    if ag:
        ov = statistics.median(x["overlap"] for x in ag)
        he = statistics.median(x["hot_edge_coverage"] for x in ag)
        low = [f"{x['workload']} {x['interval']} ({x['overlap']:.0f}% / {x['hot_edge_coverage']:.0f}%)" for x in ag
               if x["overlap"] < 85 or x["hot_edge_coverage"] < 90]
        lines.append(f"- hpm vs async-profiler agreement ({scope}), median over workloads and intervals: overlap {ov:.1f}% "
                     f"(goal >= 85%), hot-edge coverage {he:.1f}% (goal >= 90%); "
                     + ("every cell meets both." if not low else "below a goal: " + ", ".join(low) + "."))
    return lines


COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def bar_svg(title, groups, series, values):
    """Grouped bars: values[(group, series)] = percent (or None)."""
    W, H, left, top, bottom = 80 + 90 * len(groups) + 160, 340, 60, 40, 60
    vals = [v for v in values.values() if v is not None] + [0]
    lo, hi = min(vals), max(vals)
    lo, hi = min(lo, 0), max(hi, 1)
    span = hi - lo
    ph = H - top - bottom
    y = lambda v: top + (hi - v) / span * ph  # noqa: E731
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2 - 80}" y="20" font-size="13" text-anchor="middle">{title}</text>']
    step = 10 ** math.floor(math.log10(span / 4)) if span > 0 else 1
    step *= 5 if span / step > 20 else 2 if span / step > 8 else 1
    t = math.ceil(lo / step) * step
    while t <= hi + 1e-9:
        s.append(f'<line x1="{left}" x2="{left + 90 * len(groups)}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                 f'<text x="{left - 5}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}%</text>')
        t += step
    bw = 80 / max(1, len(series))
    for gi, g in enumerate(groups):
        x0 = left + 90 * gi + 5
        for si, se in enumerate(series):
            v = values.get((g, se))
            if v is None:
                continue
            y0, y1 = sorted((y(0), y(v)))
            s.append(f'<rect x="{x0 + si * bw:.1f}" y="{y0:.1f}" width="{bw - 1:.1f}" height="{max(y1 - y0, 0.5):.1f}" '
                     f'fill="{COLORS[si % len(COLORS)]}"><title>{g} {se}: {v:+.2f}%</title></rect>')
        s.append(f'<text x="{x0 + 40}" y="{H - bottom + 15}" text-anchor="middle">{g}</text>')
    s.append(f'<line x1="{left}" x2="{left + 90 * len(groups)}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="black"/>')
    for si, se in enumerate(series):
        ly = top + 16 * si
        s.append(f'<rect x="{left + 90 * len(groups) + 15}" y="{ly}" width="10" height="10" fill="{COLORS[si % len(COLORS)]}"/>'
                 f'<text x="{left + 90 * len(groups) + 30}" y="{ly + 9}">{se}</text>')
    s.append(f'<text x="15" y="{top + ph / 2}" transform="rotate(-90 15 {top + ph / 2})" text-anchor="middle">'
             'CPU time overhead vs none (median)</text></svg>')
    return "\n".join(s) + "\n"


def svgs(res, outdir):
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for group in ("stock", "sps"):
        cs = [c for c in res["cells"] if c["group"] == group and c["profiler"] != "none" and "cpu_ratio" in c]
        if not cs:
            continue
        series = cell_order({c["cell"] for c in cs})
        wls = [w["name"] for w in res["meta"]["workloads"] if any(c["workload"] == w["name"] for c in cs)]
        values = {(c["workload"], c["cell"]): (c["cpu_ratio"] - 1) * 100 for c in cs}
        for k in series:
            values[("geomean", k)] = (res["geomean"][k]["cpu_ratio"] - 1) * 100
        title = "CPU overhead per workload" + (" (patched JDK)" if group == "sps" else "")
        p = os.path.join(outdir, f"bench-overhead-{group}.svg")
        with open(p, "w") as f:
            f.write(bar_svg(title, wls + ["geomean"], series, values))
        paths.append(p)
    return paths


def rewrite_docs(path, md):
    text = open(path).read()
    if BEGIN in text and END in text:
        a, b = text.index(BEGIN), text.index(END)
        text = text[:a] + BEGIN + "\n\n" + md + "\n" + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + BEGIN + "\n\n" + md + "\n" + END + "\n"
    with open(path, "w") as f:
        f.write(text)
