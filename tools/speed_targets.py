#!/usr/bin/python3
"""The x86 speed targets of DESIGN §7, read off the results folders that
tools/speed_targets.sh makes: one table per kind of run, one cell per target,
bold where the cell misses. Every number is copied from, or is a ratio of two
numbers in, the files qkbench wrote (results.json, machine.json); nothing is
measured here.

  tools/speed_targets.py [--decode DIR] [--prefill DIR] [--convert DIR ...] [--other DIR ...] [--replaced TEXT ...]
  tools/speed_targets.py --check-core DIR

Decode (gemv, M = 1, cold): the best SIMD variant of W4A8, W8A8 and W4A32 per
format, g, shape and threads; the cell is its rate against a plain read of the
same buffers around its calls ("of read") and against the probe's DRAM read,
target 90% (W4A32 80%) on each.
Prefill (gemm, warm): avx512vnni for W8A8 (75%) and W4A8 (60% and 500 GOP/s),
avx512 for W4A32 (60% of the f32 FMA peak); the fraction is of the probe's
1-thread peak of that tier, and (where the row has it) of the same peak loop run
in bursts between the row's calls ("of peak now"). Under the table, when it has
int8 rows at g = 32: the probe's int8 loop with the per-group rescale at g = 32,
against its plain dot, the ceiling of any int8 kernel at that group size.
Convert (quantize, dequantize): the best SIMD variant; cold rows against a
plain stream of their own reads and writes beside their calls (80%: a
dequantize's bytes are mostly writes, which DRAM takes slower than reads), with
the plain read of their buffers beside it (runs made before qkbench measured the
stream: against that read), warm rows against the probe's L2 read and,
where the row has it, against a read of their own cached buffers between its
calls (50% each).
Then every op and mode without a target of its own, from the decode and
prefill runs and the --other runs (actquant, pack): the fastest SIMD
variant's fraction of its roofline, not counted.
Each run's own DRAM and core checks (what the host gave during it) head its
table: a cell from a slow spell misses for the host, not only the kernel.
--replaced lists, under the title, the runs that speed_targets.sh made again.

--check-core DIR prints the run's worst core figure as a percentage of the
probe's, and which (e.g. "67 int8 dot"; "100 -" for a run without a core
check), and exits 1 when it is under 90%: the rule by which summary.md says
"this run met a slow core" (the core check before and after the cases, and
the first quartiles of the warm rows' peak loops and of the warm conversions'
reads of their buffers in L2 beside their calls, which catch a slow spell
between the two). speed_targets.sh runs such a run again.
"""
import argparse
import json
import os
import sys

SIMD = ("avx2", "avxvnni", "avx512", "avx512vnni", "neon", "neondot", "neoni8mm")


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


class Tally:
    def __init__(self):
        self.met = self.cells = 0

    def cell(self, text, ok):
        self.cells += 1
        self.met += ok
        return text if ok else "**%s**" % text

    def also(self, frac, want, what):
        """A second fraction after a cell's first: ", 61.2% of read", bold when under want."""
        return ", %s %s" % (self.cell("%.1f%%" % (100 * frac), frac >= want), what)


def header(d, res):
    out = ["Run `%s` (commit `%s`, %s): `%s`" % (os.path.basename(os.path.normpath(d)), res.get("commit", "?"),
                                                    res.get("date", "?"), res.get("command", "?"))]
    dr = res.get("dram_read_during_run")
    if dr:
        line = "- DRAM read during the run, before / after: %.1f / %.1f GB/s (1 thread)" % (dr["before_gbps_1t"], dr["after_gbps_1t"])
        if dr["threads"] > 1:
            line += ", %.1f / %.1f GB/s (%d threads)" % (dr["before_gbps_threads"], dr["after_gbps_threads"], dr["threads"])
        out.append(line)
    cr = res.get("core_during_run")
    if cr:
        out.append("- one core during the run (%s), before / after: int8 dot %.0f / %.0f GOP/s, f32 FMA %.0f / %.0f GFLOP/s, "
                   "L2 read %.0f / %.0f GB/s" % (cr["tier"], cr["before_i8_gops"], cr["after_i8_gops"], cr["before_f32_gflops"],
                                                 cr["after_f32_gflops"], cr["before_l2_gbps"], cr["after_l2_gbps"]))
    return out + [""]


SLOW_CORE = 0.9  # bench/rows.c core_line: a figure under 90% of the probe's


def core_check(d):
    """The run's worst core figure against the probe it was held to, as bench/rows.c core_line
    judges it: (ratio, what), the lowest of the core check before / after its cases, the first
    quartile of its warm compute-bound rows' peak loop beside their calls, and the first quartile
    of its warm one-thread conversions' read of their own buffers in L2 beside their calls, against
    the probe's L2 read (a quarter of the rows at or under it: a slow spell between the two
    checks); (1.0, "-") when the run has none of them."""
    res = load(d, "results.json")
    worst, what = 1.0, "-"
    cr = res.get("core_during_run")
    rows = res["rows"]
    reads = [r for r in rows if r.get("read_gbps", 0) > 0 and r.get("threads") == 1 and r.get("cache") == "warm"
             and r.get("level") == "L2" and r.get("op") in ("quantize", "dequantize")]
    probe = load(d, "machine.json")["probe"] if cr or reads else {}
    l2 = [l["read_gbps_1t"] for l in probe.get("levels", []) if l["name"] == "L2"]
    if cr:
        peak = {p["tier"]: p for p in probe["peaks"]}.get(cr["tier"], {})
        ref = (("int8 dot", "i8_gops", peak.get("i8_gops_1t", 0)), ("f32 FMA", "f32_gflops", peak.get("f32_gflops_1t", 0)),
               ("L2 read", "l2_gbps", l2[0] if l2 else 0))
        for name, key, v in ref:
            for when in ("before", "after"):
                x = cr.get(when + "_" + key, 0)
                if v > 0 and x > 0 and x / v < worst:
                    worst, what = x / v, name

    def q1(v):  # the first quartile: a quarter of the values at or under it
        v = sorted(v)
        return v[(len(v) + 3) // 4 - 1] if v else 1.0

    pk = q1(r["peak_now_gops"] / r["peak_gops"] for r in rows if r.get("peak_now_gops", 0) > 0 and r.get("peak_gops", 0) > 0)
    if pk < worst:
        worst, what = pk, "the peak loop beside a quarter of the rows"
    rd = q1(r["read_gbps"] / l2[0] for r in reads) if l2 else 1.0
    if rd < worst:
        worst, what = rd, "the L2 read beside a quarter of the conversions"
    return worst, what


def cells(values, fmt):
    """A table row's cells: fmt(v) for each value, "-" where there is none (in order: fmt may count)."""
    return [fmt(v) if v else "-" for v in values]


def gname(r):
    return "K" if r["group"] == r["K"] and r["op"] in ("quantize", "dequantize") else str(r["group"])


def decode(d, t):
    res = load(d, "results.json")
    best = {}
    for r in res["rows"]:
        if r["op"] != "gemv" or r["cache"] != "cold" or r["tier"] not in SIMD or r["what"] not in ("W4A8", "W8A8", "W4A32"):
            continue
        if not r.get("of_read"):
            continue
        k, c = (r["what"], r["format"], r["group"]), (r["threads"], "%dx%d" % (r["N"], r["K"]))
        b = best.setdefault((k, c), {"of_read": r, "roofline": r})
        for m in b:
            if r[m] > b[m][m]:
                b[m] = r
    cols = sorted({c for _, c in best}, key=lambda c: (c[0], c[1]))
    out = ["### Decode: gemv on DRAM-resident weights, best SIMD variant", ""] + header(d, res)
    out += ["| mode | fmt | g | " + " | ".join("%dt %s" % c for c in cols) + " | target |",
            "|---|---|---|" + "---|" * len(cols) + "---|"]
    for k in sorted({k for k, _ in best}):
        want = 0.8 if k[0] == "W4A32" else 0.9

        def cell(r):
            a, b = r["of_read"], r["roofline"]
            return "%s of read (%.1f GB/s), %s of DRAM" % (t.cell("%.1f%%" % (100 * a["of_read"]), a["of_read"] >= want), a["gbps"],
                                                          t.cell("%.1f%%" % (100 * b["roofline"]), b["roofline"] >= want))
        row = cells((best.get((k, c)) for c in cols), cell)
        out.append("| %s | %s | %s | %s | %d%% |" % (k[0], k[1], k[2], " | ".join(row), round(100 * want)))
    return out + [""]


def prefill(d, t):
    res, m = load(d, "results.json"), load(d, "machine.json")
    peaks = {p["tier"]: p for p in m["probe"]["peaks"]}
    tier_of = {"W8A8": "avx512vnni", "W4A8": "avx512vnni", "W4A32": "avx512"}
    found, shapes = {}, set()
    for r in res["rows"]:
        if r["op"] != "gemm" or r["what"] not in tier_of or r["tier"] != tier_of[r["what"]] or r["tier"] not in peaks:
            continue
        s = "%dx%dx%d" % (r["M"], r["N"], r["K"])
        shapes.add(s)
        p = peaks[r["tier"]]
        peak = p["f32_gflops_1t"] if r["what"] == "W4A32" else p["i8_gops_1t"]
        found[(r["what"], r["format"], r["group"], s)] = (r["gops"], r["gops"] / peak, r.get("of_peak_now", 0))
    shapes = sorted(shapes, key=lambda s: tuple(int(x) for x in s.split("x"))[::-1])
    out = ["### Prefill: gemm, one thread, of the tier's peak in the probe (GOP/s) and of its peak loop beside the calls", ""] + header(d, res)
    out += ["| mode (tier) | fmt | g | " + " | ".join(shapes) + " | target |", "|---|---|---|" + "---|" * len(shapes) + "---|"]
    want = {"W8A8": (0.75, 0), "W4A8": (0.60, 500), "W4A32": (0.60, 0)}
    for k in sorted({c[:3] for c in found}):
        frac, gops = want[k[0]]

        def cell(c):
            text = t.cell("%.1f%% (%.0f)" % (100 * c[1], c[0]), c[1] >= frac and c[0] >= gops)
            return text + t.also(c[2], frac, "of peak now") if c[2] else text
        row = cells((found.get(k + (s,)) for s in shapes), cell)
        out.append("| %s (%s) | %s | %s | %s | %d%%%s |" % (k[0], tier_of[k[0]], k[1], k[2], " | ".join(row), round(100 * frac),
                                                           ", %d GOP/s" % gops if gops else ""))
    p = peaks.get(tier_of["W8A8"], {})
    if p.get("i8_g32_gops_1t") and p.get("i8_gops_1t") and any(c[2] == 32 and c[0] in ("W8A8", "W4A8") for c in found):
        g32, dot, frac = p["i8_g32_gops_1t"], p["i8_gops_1t"], want["W8A8"][0]
        out += ["", "At g = 32 the probe's int8 loop with the per-group rescale (%s, then a convert, a multiply and an FMA per "
                "accumulator and group) ran %.0f GOP/s, %.1f%% of its plain dot: the most an int8 kernel with g = 32 gets on this "
                "core; %d%% of the dot (W8A8's target) is %.1f%% of it." % (p.get("i8_instructions", tier_of["W8A8"]), g32,
                                                                           100 * g32 / dot, round(100 * frac), 100 * frac * dot / g32)]
    return out + [""]


def convert(d, t):
    res = load(d, "results.json")
    best = {}
    for r in res["rows"]:
        if r["op"] not in ("quantize", "dequantize") or r["tier"] not in SIMD:
            continue
        v = (r.get("of_stream") or r.get("of_read")) if r["cache"] == "cold" else r["roofline"]
        if not v:
            continue
        k = (r["op"], r["format"], gname(r), r["cache"], "%dx%d" % (r["N"], r["K"]), r["threads"])
        if k not in best or v > best[k][0]:
            best[k] = (v, r)
    cols = sorted({k[3:] for k in best})
    out = ["### Quantize and dequantize: best SIMD variant (cold: of a plain stream of its own reads and writes beside its calls, "
           "and of a read of its buffers; warm: of the probe's L2 read, and of a read of its own buffers beside its calls)", ""] + header(d, res)
    out += ["| op | fmt | g | " + " | ".join("%s %s %dt" % (c[1], c[0], c[2]) for c in cols) + " |",
            "|---|---|---|" + "---|" * len(cols)]
    for k in sorted({k[:3] for k in best}, key=lambda k: (k[0], k[1], k[2] == "K", int(k[2]) if k[2] != "K" else 0)):
        def cell(b):
            want = 0.8 if b[1]["cache"] == "cold" else 0.5
            text = t.cell("%.1f%% (%.1f GB/s)" % (100 * b[0], b[1]["gbps"]), b[0] >= want)
            if b[1]["cache"] == "warm" and b[1].get("of_read"):  # and of a read of its own cached buffers beside its calls
                return text + t.also(b[1]["of_read"], want, "of read")
            if b[1].get("of_stream") and b[1].get("of_read"):  # for reference, not a target: the read of its buffers
                return text + ", %.1f%% of read" % (100 * b[1]["of_read"])
            return text
        row = cells((best.get(k + c) for c in cols), cell)
        out.append("| %s | %s | %s | %s |" % (k[0], k[1], k[2], " | ".join(row)))
    return out + [""]


TARGET_MODES = ("W4A8", "W8A8", "W4A32")  # gemv and gemm modes with targets of their own (the tables above)


def others(dirs, extra):
    """Every op and mode without a target of its own in the runs (gemv and gemm of W4A4, W8A32,
    q4_0xq8_0 and q8_0xq8_0; actquant; pack, one row per packed layout): the fastest SIMD variant of
    each case and its fraction of the roofline, cold rows also of the read beside their calls.
    Not counted. dirs: runs already named above; extra: runs that get their header here."""
    best, heads = {}, []
    for d in dirs + extra:
        res = load(d, "results.json")
        if d in extra:
            heads += header(d, res)
        for r in res["rows"]:
            if r["tier"] not in SIMD or r["op"] in ("quantize", "dequantize") or not r.get("roofline"):
                continue
            if r["op"] in ("gemv", "gemm") and r["what"] in TARGET_MODES:
                continue
            parts = r["name"].split("/")
            i = next((j for j, x in enumerate(parts) if x[:1] == "t" and x[1:].isdigit()), 0)
            layout = r["kernel"].rsplit("__", 1)[0] if r["op"] == "pack" else ""
            k, c = (r["op"], r["what"], r["format"], gname(r), layout), (parts[i - 1] if i else "?", r["threads"], r["cache"])
            if (k, c) not in best or r.get("median_s", 1e30) < best[(k, c)].get("median_s", 1e30):  # the fastest tier, not the best fraction of its own
                best[(k, c)] = r
    if not best:
        return []
    out = ["### Every other op and mode: fastest SIMD variant, fraction of its roofline (no target of its own; not counted)", "",
           "The roofline is the rate over min(the tier's peak, the bandwidth of the level the working set lives in x the "
           "arithmetic intensity), from the probe; cold rows also give the fraction of a plain read of their buffers beside "
           "their calls. Pack rows: one per packed layout (kernel).", ""] + heads
    for op in ("gemv", "gemm", "actquant", "pack"):
        keys = sorted({k for k, _ in best if k[0] == op})
        if not keys:
            continue
        cols = sorted({c for k, c in best if k[0] == op}, key=lambda c: (c[2], c[1], [int(x) for x in c[0].split("x") if x.isdigit()]))
        out += ["#### %s" % op, "", "| mode | fmt | g | " + ("layout | " if op == "pack" else "") +
                " | ".join("%s %dt %s" % c for c in cols) + " |", "|---|---|---|" + ("---|" if op == "pack" else "") + "---|" * len(cols)]
        def cell(r):
            rate = "%.1f GB/s" % r["gbps"] if r.get("bound") == "memory" else "%.0f GOP/s" % r["gops"]
            text = "%.1f%% (%s, %s; %s)" % (100 * r["roofline"], rate, r.get("level", "?"), r["tier"])
            return text + ", %.1f%% of read" % (100 * r["of_read"]) if r["cache"] == "cold" and r.get("of_read") else text
        for k in keys:
            row = cells((best.get((k, c)) for c in cols), cell)
            out.append("| %s | %s | %s | %s%s |" % (k[1], k[2], k[3], k[4] + " | " if op == "pack" else "", " | ".join(row)))
        out.append("")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--decode")
    ap.add_argument("--prefill")
    ap.add_argument("--convert", action="append", default=[])
    ap.add_argument("--other", action="append", default=[], help="a run of ops without targets (actquant, pack): listed with "
                    "the decode and prefill runs' gemv and gemm modes that have none")
    ap.add_argument("--replaced", action="append", default=[], help="a run made again, and why (listed under the title)")
    ap.add_argument("--check-core", metavar="DIR", help="exit 1 when the run in DIR met a slow core")
    a = ap.parse_args()
    if a.check_core:
        try:
            worst, what = core_check(a.check_core)
        except (OSError, ValueError, KeyError) as e:
            print("speed_targets.py: cannot read the results: %s" % e, file=sys.stderr)
            return 2
        print("%d %s" % (round(100 * worst), what))
        return 0 if worst >= SLOW_CORE else 1
    if not (a.decode or a.prefill or a.convert or a.other):
        ap.error("name at least one results folder")
    t, out = Tally(), ["## Speed targets (DESIGN §7)", ""]
    if a.replaced:
        out += ["Runs made again because they met a slow core (their core check before or after their cases, or the peak "
                "loop or the L2 read beside a quarter of their warm rows' calls, under %d%% of the probe's):" % round(100 * SLOW_CORE), ""] + ["- %s" % r for r in a.replaced] + [""]
    try:
        if a.decode:
            out += decode(a.decode, t)
        if a.prefill:
            out += prefill(a.prefill, t)
        for d in a.convert:
            out += convert(d, t)
        out += others([x for x in (a.decode, a.prefill) if x], a.other)
    except (OSError, ValueError, KeyError) as e:
        print("speed_targets.py: cannot read the results: %s" % e, file=sys.stderr)
        return 2
    out.append("%d of %d cells meet their target (bold: missed)." % (t.met, t.cells))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
