#!/usr/bin/python3
"""Write results/README.md: an index of every run folder under results/, per
machine, newest first, from each folder's own results.json and machine.json
(the command that made it, the commit, the probe it was held against, and the
DRAM read and one core's limits the run measured itself before and after its cases). No number in
the index is computed here but one: a run that met a slow core (summary.md's rule, as
tools/speed_targets.py --check-core applies it today, also to folders written before a part of
that rule existed) is marked with its worst figure against the probe.

  tools/results_index.py [RESULTS_DIR]      (default: results/ beside tools/)
"""
import argparse
import json
import os
import sys

from speed_targets import SLOW_CORE, core_check


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def probe_line(m):
    p = (m or {}).get("probe") or {}
    if not p:
        return "-"
    lv = {l.get("name"): l for l in p.get("levels", [])}
    i8 = max((t.get("i8_gops_1t", 0) for t in p.get("peaks", [])), default=0)
    f32 = max((t.get("f32_gflops_1t", 0) for t in p.get("peaks", [])), default=0)
    dram = lv.get("DRAM", {})
    return "v%s %s: DRAM %.1f / %.1f GB/s, L2 %.0f GB/s, FMA %.0f GFLOP/s, int8 %.0f GOP/s" % (
        p.get("version", "?"), p.get("date", "?")[:16].replace("T", " "), dram.get("read_gbps_1t", 0),
        dram.get("read_gbps_all", 0), lv.get("L2", {}).get("read_gbps_1t", 0), f32, i8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results"))
    root = ap.parse_args().results_dir
    if not os.path.isdir(root):
        print("results_index.py: %s is not a results folder" % root, file=sys.stderr)
        return 2
    out = ["# Results index", "",
           "Every run folder under `results/`, per machine, newest first: the command that made it, the",
           "commit it ran, and the probe (`machine.json`) its fractions are held to. Each folder's",
           "`summary.md` has the tables. Written by `tools/results_index.py` from the folders' own files.",
           "A run marked \"met a slow core\" is one that summary.md's rule of today flags (`tools/speed_targets.py",
           "--check-core`); a folder written before a part of that rule existed does not say so itself.", ""]
    for machine in sorted(os.listdir(root)):
        mdir = os.path.join(root, machine)
        if not os.path.isdir(mdir):
            continue
        runs = sorted((d for d in os.listdir(mdir) if os.path.isdir(os.path.join(mdir, d))), reverse=True)
        cpu = ((load(os.path.join(mdir, "machine.json")) or {}).get("cpu") or {}).get("brand", "").strip()
        out += ["## %s" % machine, "", "CPU: %s. Cached probe ([machine.json](%s/machine.json)): %s." % (
            cpu or "?", machine, probe_line(load(os.path.join(mdir, "machine.json")))), "",
            "| run | command | DRAM read during the run (1 thread, all; before -> after) "
            "| one core during the run (int8 dot, f32 FMA, L2 read; before -> after) | probe held to |",
            "|---|---|---|---|---|"]
        for d in runs:
            r = load(os.path.join(mdir, d, "results.json")) or {}
            dr = r.get("dram_read_during_run") or {}
            during = "-"
            if dr:
                during = "%.1f -> %.1f, %.1f -> %.1f GB/s" % (dr.get("before_gbps_1t", 0), dr.get("after_gbps_1t", 0),
                                                            dr.get("before_gbps_threads", 0), dr.get("after_gbps_threads", 0))
            cr = r.get("core_during_run") or {}
            core = "-"
            if cr:
                core = "%s: %.0f -> %.0f GOP/s, %.0f -> %.0f GFLOP/s, %.0f -> %.0f GB/s" % (
                    cr.get("tier", "?"), cr.get("before_i8_gops", 0), cr.get("after_i8_gops", 0), cr.get("before_f32_gflops", 0),
                    cr.get("after_f32_gflops", 0), cr.get("before_l2_gbps", 0), cr.get("after_l2_gbps", 0))
            state = "" if r.get("complete", True) else " (incomplete)"
            try:
                worst, what = core_check(os.path.join(mdir, d))
                if worst < SLOW_CORE:
                    state += " (met a slow core: %s at %.0f%% of the probe's)" % (what, 100 * worst)
            except (OSError, ValueError, KeyError):
                pass
            out.append("| [%s](%s/%s/summary.md)%s | `%s` | %s | %s | %s |" % (
                d, machine, d, state, r.get("command", "?").replace("|", "\\|"), during, core,
                probe_line(load(os.path.join(mdir, d, "machine.json")))))
        out.append("")
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
