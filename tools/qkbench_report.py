#!/usr/bin/python3
"""Plots of a qkbench results folder (qkbench report DIR runs this).

Reads DIR/results.json and DIR/machine.json (written by `qkbench bench` and the
default run) and writes into DIR/plots/, each as PNG and SVG:

  roofline      every matmul row (one thread) as a point at its arithmetic
                intensity and GOP/s, under the probe's limits: the read
                bandwidth of each level times intensity, and each tier's f32
                FMA and int8 dot peaks
  bandwidth     quantize / dequantize / actquant / pack rows: GB/s of the best
                variant per tier against the bandwidth of the level their
                working set lives in
  speedup       speed-up over the scalar reference per tier, for the rows of
                the compact table (one thread)
  threads       thread scaling: time on one thread / time on N threads, per
                kernel, for every row measured at both
  roofline_fraction   % of roofline per tier for the compact-table rows

With --fleet OUT (qkbench fleet collect runs this), the same plots across
machines, one series per machine: OUT/fleet.json lists the machines' merged
result folders, and OUT/plots/ gets roofline (each machine's best variant per
matmul configuration under its own DRAM bandwidth and int8 peak), speedup and
roofline_fraction (best variant per configuration, bars per machine),
bandwidth (each machine's bar and its level's bandwidth) and threads (time on
one thread / time on all of that machine's cores).

Needs matplotlib (Debian: python3-matplotlib).
"""
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.stderr.write("qkbench report: needs matplotlib (Debian: apt-get install python3-matplotlib)\n")
    sys.exit(2)

TIERS = ["scalar", "avx2", "avxvnni", "avx512", "avx512vnni", "neon", "neondot", "neoni8mm"]
COLORS = {
    "scalar": "#7f7f7f",
    "avx2": "#1f77b4",
    "avxvnni": "#17becf",
    "avx512": "#ff7f0e",
    "avx512vnni": "#d62728",
    "neon": "#2ca02c",
    "neondot": "#9467bd",
    "neoni8mm": "#8c564b",
}
MARKERS = {"gemv": "o", "gemm": "s"}
INT8_MODES = {"W4A8", "W8A8", "W4A4", "q4_0xq8_0", "q8_0xq8_0"}


def tier_rank(t):
    return TIERS.index(t) if t in TIERS else len(TIERS)


def save(fig, outdir, name, written):
    for ext in ("png", "svg"):
        path = os.path.join(outdir, name + "." + ext)
        tmp = path + ".tmp"
        fig.savefig(tmp, format=ext, dpi=130, bbox_inches="tight")
        os.replace(tmp, path)
        written.append(path)
    plt.close(fig)


def config_key(r):
    return (r["op"], r["what"], r["format"], r["group"], r["scales"], r["M"], r["N"], r["K"], r["threads"], r["cache"])


def plot_roofline(rows, probe, outdir, title, written):
    mm = [r for r in rows if r["op"] in ("gemv", "gemm") and r["threads"] == 1 and r["median_s"] > 0]
    if not mm or not probe:
        return
    fig, ax = plt.subplots(figsize=(10, 6.5))
    ais = [r["ai"] for r in mm]
    xmin, xmax = min(ais) / 3, max(ais) * 3
    top = max([p["i8_gops_1t"] for p in probe["peaks"]] + [p["f32_gflops_1t"] for p in probe["peaks"]] + [1]) * 1.5
    for lv in probe["levels"]:
        bw = lv["read_gbps_1t"]
        x1 = min(xmax, top / bw)
        ax.plot([xmin, x1], [bw * xmin, bw * x1], color="#444444", lw=0.8, ls="-" if lv["name"] == "DRAM" else ":")
        ax.text(xmin * 1.05, bw * xmin * 1.15, "%s %.0f GB/s" % (lv["name"], bw), fontsize=7, color="#444444")
    for p in probe["peaks"]:
        t = p["tier"]
        for key, ls in (("f32_gflops_1t", "--"), ("i8_gops_1t", "-.")):
            ax.axhline(p[key], color=COLORS.get(t, "k"), lw=0.8, ls=ls, alpha=0.7)
        ax.text(xmax / 1.05, p["i8_gops_1t"] * 1.03, "%s int8 %.0f" % (t, p["i8_gops_1t"]), fontsize=6, ha="right",
                color=COLORS.get(t, "k"))
        ax.text(xmax / 1.05, p["f32_gflops_1t"] * 0.9, "%s f32 %.0f" % (t, p["f32_gflops_1t"]), fontsize=6, ha="right",
                color=COLORS.get(t, "k"), va="top")
    seen = set()
    for r in sorted(mm, key=lambda r: tier_rank(r["tier"])):
        lab = "%s %s" % (r["tier"], r["op"])
        ax.scatter(r["ai"], r["gops"], color=COLORS.get(r["tier"], "k"), marker=MARKERS.get(r["op"], "x"),
                   s=28, edgecolors="k" if r["mode"] in INT8_MODES else "none", linewidths=0.4,
                   label=None if lab in seen else lab, zorder=3)
        seen.add(lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (ops per byte of weights + activations + output)")
    ax.set_ylabel("GOP/s (2·M·N·K / median time)")
    ax.set_title("Roofline, one thread: %s\nlines: read bandwidth × intensity per level; dashed f32 FMA peak, "
                 "dash-dot int8 dot peak per tier; black edge = integer-dot mode" % title, fontsize=9)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    save(fig, outdir, "roofline", written)


def best_per_tier(rows):
    """{config: {tier: row}} keeping the fastest variant of each tier."""
    out = {}
    for r in rows:
        if r["median_s"] <= 0:
            continue
        d = out.setdefault(config_key(r), {})
        cur = d.get(r["tier"])
        if cur is None or r["median_s"] < cur["median_s"]:
            d[r["tier"]] = r
    return out


def label(r):
    mode = r["what"] if r["what"] != r["format"] else ""
    shape = "%dx%dx%d" % (r["M"], r["N"], r["K"]) if r["op"] in ("gemv", "gemm") else (
        "%dx%d" % (r["M"], r["K"]) if r["op"] == "actquant" else "%dx%d" % (r["N"], r["K"]))
    return "%s %s %s g%d %s %s" % (r["op"], mode, r["format"], r["group"], shape, r["cache"])


def grouped_bars(ax, groups, tiers, value, ylabel, logy=False):
    n = len(tiers)
    width = 0.8 / max(n, 1)
    for i, t in enumerate(tiers):
        xs, ys = [], []
        for gi, (lab, d) in enumerate(groups):
            if t in d and value(d[t]) is not None:
                xs.append(gi - 0.4 + width * (i + 0.5))
                ys.append(value(d[t]))
        ax.bar(xs, ys, width=width, color=COLORS.get(t, "k"), label=t)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)


def plot_speedup(rows, outdir, title, written):
    head = [r for r in rows if r["headline"] and r["threads"] == 1]
    groups = [(label(next(iter(d.values()))), d) for k, d in best_per_tier(head).items()]
    groups = [g for g in groups if "scalar" in g[1]]
    if not groups:
        return
    tiers = sorted({t for _, d in groups for t in d}, key=tier_rank)
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(groups) + 3), 5.5))
    grouped_bars(ax, groups, tiers, lambda r: r["speedup_vs_scalar"] or None, "speed-up over the scalar reference (×)", logy=True)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_title("Speed-up per tier, best variant of each tier, one thread: %s" % title, fontsize=9)
    save(fig, outdir, "speedup", written)

    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(groups) + 3), 5.5))
    grouped_bars(ax, groups, tiers, lambda r: 100 * r["roofline"], "% of roofline")
    ax.set_title("Fraction of roofline per tier (min of the tier's peak and the level's bandwidth × intensity): %s" % title,
                 fontsize=9)
    save(fig, outdir, "roofline_fraction", written)


def plot_bandwidth(rows, outdir, title, written):
    mem = [r for r in rows if r["op"] in ("quantize", "dequantize", "actquant", "pack") and r["threads"] == 1]
    groups = [(label(next(iter(d.values()))), d) for k, d in best_per_tier(mem).items()]
    if not groups:
        return
    tiers = sorted({t for _, d in groups for t in d}, key=tier_rank)
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(groups) + 3), 5.5))
    grouped_bars(ax, groups, tiers, lambda r: r["gbps"], "GB/s (bytes read + written / median time)", logy=True)
    for gi, (_, d) in enumerate(groups):
        r = next(iter(d.values()))
        ax.plot([gi - 0.45, gi + 0.45], [r["bw_gbps"]] * 2, color="k", lw=1.2)
    ax.set_title("Memory-bound ops, best variant per tier; black line: the probe's read bandwidth of the level "
                 "the working set lives in: %s" % title, fontsize=9)
    save(fig, outdir, "bandwidth", written)


def plot_threads(rows, outdir, title, written):
    """Per configuration measured on 1 and N threads: the best variant of each tier
    (by its one-thread time) and its time on 1 thread / time on N threads."""
    by = {}
    for r in rows:
        if r["median_s"] > 0:
            by.setdefault(config_key(r)[:8] + (r["cache"],), {}).setdefault(r["kernel"], {})[r["threads"]] = r
    groups = []
    tmax = 1
    for k, kernels in by.items():
        d = {}
        for kern, th in kernels.items():
            if 1 not in th or len(th) < 2:
                continue
            t = max(th)
            tmax = max(tmax, t)
            r1 = th[1]
            if r1["tier"] not in d or r1["median_s"] < d[r1["tier"]][0]["median_s"]:
                d[r1["tier"]] = (r1, th[t])
        if d:
            groups.append((label(next(iter(d.values()))[0]), d))
    if not groups:
        return
    tiers = sorted({t for _, d in groups for t in d}, key=tier_rank)
    fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(groups) + 3), 5.5))
    n = len(tiers)
    width = 0.8 / max(n, 1)
    for i, t in enumerate(tiers):
        xs, ys = [], []
        for gi, (_, d) in enumerate(groups):
            if t in d:
                xs.append(gi - 0.4 + width * (i + 0.5))
                ys.append(d[t][0]["median_s"] / d[t][1]["median_s"])
        ax.bar(xs, ys, width=width, color=COLORS.get(t, "k"), label=t)
    ax.axhline(1, color="k", lw=0.8)
    ax.axhline(tmax, color="k", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("time on 1 thread / time on %d threads (median)" % tmax)
    ax.set_title("Thread scaling, best variant of each tier (pinned, one thread per core; dotted: linear): %s" % title,
                 fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, outdir, "threads", written)


MACHINE_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]


def best_variant(rows):
    """{config: row} keeping the fastest variant over every tier."""
    out = {}
    for r in rows:
        if r["median_s"] <= 0:
            continue
        k = config_key(r)
        if k not in out or r["median_s"] < out[k]["median_s"]:
            out[k] = r
    return out


def fleet_key(r, cores):
    """A configuration across machines: all cores of each machine is one column."""
    k = list(config_key(r))
    k[8] = "all" if r["threads"] > 1 and r["threads"] == cores else r["threads"]
    return tuple(k)


def fleet_bars(ax, labels, machines, per, value, ylabel, logy=False):
    n = len(machines)
    width = 0.8 / max(n, 1)
    for i, m in enumerate(machines):
        xs, ys = [], []
        for gi, d in enumerate(per):
            r = d.get(m["label"])
            if r is not None and value(r) is not None:
                xs.append(gi - 0.4 + width * (i + 0.5))
                ys.append(value(r))
        ax.bar(xs, ys, width=width, color=m["color"], label=m["label"])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)


def fleet_groups(machines, select):
    """[(label, {machine label: best row})] for the configurations `select` keeps, in first-seen order."""
    order, per = [], {}
    for m in machines:
        for k, r in best_variant([r for r in m["rows"] if select(r)]).items():
            fk = fleet_key(r, m["cores"])
            if fk not in per:
                per[fk] = {}
                order.append((fk, r))
            per[fk][m["label"]] = r
    return [(label(r).replace(" t%d" % r["threads"], ""), per[fk]) for fk, r in order]


def fleet(out):
    try:
        with open(os.path.join(out, "fleet.json")) as f:
            machines = json.load(f)["machines"]
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write("qkbench report: cannot read %s/fleet.json: %s\n" % (out, e))
        return 2
    for i, m in enumerate(machines):
        m["color"] = MACHINE_COLORS[i % len(MACHINE_COLORS)]
        try:
            with open(os.path.join(m["dir"], "results.json")) as f:
                m["rows"] = json.load(f).get("rows", [])
        except (OSError, ValueError):
            m["rows"] = []
        for r in m["rows"]:
            r.setdefault("mode", r.get("what", ""))
        try:
            with open(os.path.join(m["dir"], "machine.json")) as f:
                m["probe"] = json.load(f).get("probe")
        except (OSError, ValueError):
            m["probe"] = None
    outdir = os.path.join(out, "plots")
    os.makedirs(outdir, exist_ok=True)
    written = []
    title = ", ".join(m["label"] for m in machines)

    # roofline: each machine's best variant per matmul configuration (one thread)
    pts = [(m, r) for m in machines for r in best_variant(
        [r for r in m["rows"] if r["op"] in ("gemv", "gemm") and r["threads"] == 1]).values()]
    if pts:
        fig, ax = plt.subplots(figsize=(10, 6.5))
        ais = [r["ai"] for _, r in pts]
        xmin, xmax = min(ais) / 3, max(ais) * 3
        for m in machines:
            p = m["probe"]
            if not p:
                continue
            dram = [lv for lv in p["levels"] if lv["name"] == "DRAM"]
            if dram:
                bw = dram[0]["read_gbps_1t"]
                ax.plot([xmin, xmax], [bw * xmin, bw * xmax], color=m["color"], lw=0.8, ls="-")
            if p["peaks"]:
                top = max(p["peaks"], key=lambda q: q["i8_gops_1t"])
                ax.axhline(top["i8_gops_1t"], color=m["color"], lw=0.8, ls="-.")
                ax.text(xmax / 1.05, top["i8_gops_1t"] * 1.03, "%s %s int8 %.0f" % (m["label"], top["tier"], top["i8_gops_1t"]),
                        fontsize=6, ha="right", color=m["color"])
        seen = set()
        for m, r in pts:
            ax.scatter(r["ai"], r["gops"], color=m["color"], marker=MARKERS.get(r["op"], "x"), s=28,
                       label=None if m["label"] in seen else m["label"], zorder=3)
            seen.add(m["label"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (ops per byte of weights + activations + output)")
        ax.set_ylabel("GOP/s (2·M·N·K / median time)")
        ax.set_title("Roofline across machines, one thread, best variant per configuration: %s\n"
                     "lines: each machine's DRAM read bandwidth × intensity and its best int8 dot peak" % title, fontsize=9)
        ax.grid(True, which="both", alpha=0.2)
        ax.legend(fontsize=7, loc="lower right")
        save(fig, outdir, "roofline", written)

    groups = fleet_groups(machines, lambda r: r["headline"] and r["threads"] == 1)
    if groups:
        labels, per = [g[0] for g in groups], [g[1] for g in groups]
        fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(groups) + 3), 5.5))
        fleet_bars(ax, labels, machines, per, lambda r: r["speedup_vs_scalar"] or None, "speed-up over the machine's scalar reference (×)", True)
        ax.axhline(1, color="k", lw=0.8)
        ax.set_title("Speed-up of the best variant over scalar, one thread, per machine: %s" % title, fontsize=9)
        save(fig, outdir, "speedup", written)
        fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(groups) + 3), 5.5))
        fleet_bars(ax, labels, machines, per, lambda r: 100 * r["roofline"], "% of the machine's own roofline")
        ax.set_title("Fraction of roofline of the best variant, per machine: %s" % title, fontsize=9)
        save(fig, outdir, "roofline_fraction", written)

    groups = fleet_groups(machines, lambda r: r["op"] in ("quantize", "dequantize", "actquant", "pack") and r["threads"] == 1)
    if groups:
        labels, per = [g[0] for g in groups], [g[1] for g in groups]
        fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(groups) + 3), 5.5))
        fleet_bars(ax, labels, machines, per, lambda r: r["gbps"], "GB/s (bytes read + written / median time)", True)
        n = len(machines)
        width = 0.8 / max(n, 1)
        for gi, d in enumerate(per):
            for i, m in enumerate(machines):
                r = d.get(m["label"])
                if r is not None:
                    x = gi - 0.4 + width * (i + 0.5)
                    ax.plot([x - width / 2, x + width / 2], [r["bw_gbps"]] * 2, color="k", lw=1.2)
        ax.set_title("Memory-bound ops, best variant per machine; black ticks: that machine's read bandwidth of the level "
                     "the working set lives in: %s" % title, fontsize=9)
        save(fig, outdir, "bandwidth", written)

    # threads: per configuration, each machine's best one-thread kernel, time on 1 / time on all its cores
    per, order = {}, []
    for m in machines:
        by = {}
        for r in m["rows"]:
            if r["median_s"] > 0:
                by.setdefault(config_key(r)[:8] + (r["cache"],), {}).setdefault(r["kernel"], {})[r["threads"]] = r
        for k, kernels in by.items():
            best = None
            for kern, th in kernels.items():
                if 1 in th and len(th) >= 2 and (best is None or th[1]["median_s"] < best[0]["median_s"]):
                    best = (th[1], th[max(th)])
            if best:
                if k not in per:
                    per[k] = {}
                    order.append((k, best[0]))
                per[k][m["label"]] = best
    if order:
        labels = [label(r) for _, r in order]
        fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(order) + 3), 5.5))
        fleet_bars(ax, labels, machines, [{lab: b for lab, b in per[k].items()} for k, _ in order],
                   lambda b: b[0]["median_s"] / b[1]["median_s"], "time on 1 thread / time on all cores (median)", True)
        ax.axhline(1, color="k", lw=0.8)
        ax.set_title("Thread scaling of the best variant, per machine (each on all its cores): %s" % title, fontsize=9)
        save(fig, outdir, "threads", written)
    for p in written:
        print(p)
    if not written:
        sys.stderr.write("qkbench report: the machines in %s/fleet.json have no rows to plot\n" % out)
        return 1
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--fleet":
        return fleet(argv[2])
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: qkbench_report.py DIR   (a qkbench results folder)\n"
              "       qkbench_report.py --fleet OUT   (a qkbench fleet collect folder)")
        return 0 if len(argv) == 2 else 2
    d = argv[1]
    try:
        with open(os.path.join(d, "results.json")) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("qkbench report: cannot read %s/results.json: %s\n" % (d, e))
        return 2
    probe = None
    try:
        with open(os.path.join(d, "machine.json")) as f:
            probe = json.load(f).get("probe")
    except (OSError, ValueError):
        pass
    rows = res.get("rows", [])
    for r in rows:
        r.setdefault("mode", r.get("what", ""))
    title = "%s, commit %s" % (res.get("machine", "?"), res.get("commit", "?"))
    outdir = os.path.join(d, "plots")
    os.makedirs(outdir, exist_ok=True)
    written = []
    plot_roofline(rows, probe, outdir, title, written)
    plot_speedup(rows, outdir, title, written)
    plot_bandwidth(rows, outdir, title, written)
    plot_threads(rows, outdir, title, written)
    for p in written:
        print(p)
    if not written:
        sys.stderr.write("qkbench report: %s has no rows to plot\n" % d)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
