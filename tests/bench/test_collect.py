#!/usr/bin/python3
"""Sharding and `qkbench fleet collect`, locally (no Slurm): issue 8 items 1, 3, 4.

    test_collect.py --qkbench PATH --work DIR

A tiny bench, accuracy and sweep run unsharded and as shards 1..3 of one run
into a results root; collect merges them. Checks: the merged case list is the
unsharded one (same order), accuracy rows identical byte for byte and sweep
error metrics identical (timings present and positive), the merged folders
read by report and compare; then on copies of the root: a deleted shard and a
shard left "running" are reported (exit 1) with nothing written before
modified, a case in two shards is reported as duplicated, probe limits that
disagree are reported, a second machine gets its own column in the
cross-machine table. Exit 0 pass, 1 fail.
"""
import argparse
import csv
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qkcheck import check, failures  # noqa: E402


class Q:
    def __init__(self, exe, work):
        self.exe, self.work = exe, work
        self.env = dict(os.environ, QK_MACHINE="fleet-a")
        self.env.pop("SLURM_JOB_ID", None)

    def run(self, *args, env=None, timeout=120):
        p = subprocess.run([self.exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           env=env or self.env)
        return p.returncode, p.stdout, p.stderr

    def ok(self, *args):
        rc, so, se = self.run(*args)
        check(rc == 0, "qkbench %s: exit %d\n%s\n%s" % (" ".join(args), rc, so[-2000:], se[-2000:]))
        return so


BENCH = ["bench", "--shape", "1x256x1024", "--cache", "warm", "--threads", "1", "--group", "32", "--filter", "gemv/W4A8/w4s|quantize/w4s",
         "--min-time", "0.002", "--reps", "2", "--quiet"]
ACC = ["accuracy", "--shape", "2x64x256", "--format", "w4s,w8s,q4_0", "--group", "32,K", "--quiet"]
SWEEP = ["sweep", "--shape", "1x64x256", "--format", "w4s,q8_0", "--group", "32", "--min-time", "0", "--reps", "2", "--quiet"]


def snapshot(root, skip=None):
    """{relative path: sha256} of every file under root (but the folder skip)."""
    out = {}
    for d, dirs, files in os.walk(root):
        if skip and os.path.abspath(d).startswith(os.path.abspath(skip)):
            continue
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def shard_dirs(root, command, run="t"):
    """{I: folder} of the shards of `command` in run `run` under root."""
    out = {}
    for d, dirs, files in os.walk(root):
        if "shard.json" in files:
            j = json.load(open(os.path.join(d, "shard.json")))
            if j["command"] == command and j["run_id"] == run:
                out[j["shard"]] = d
    return out


def load(p):
    with open(p) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qkbench", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = os.path.join(a.work, "fleet")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    q = Q(a.qkbench, work)
    R = os.path.join(work, "results")
    q.ok("probe", "--quick", "--results", R)

    # --list --shard: a partition of the unsharded list
    full = q.ok(*BENCH, "--list").split()
    parts = [q.ok(*BENCH, "--list", "--shard", "%d/3" % i).split() for i in (1, 2, 3)]
    check(sorted(sum(parts, [])) == sorted(full) and len(full) > 3, "bench --list --shard i/3 is not a partition of --list")
    check(all(parts), "a bench shard is empty: %s" % [len(p) for p in parts])
    acc_full = q.ok(*ACC, "--list").split()
    acc_parts = [q.ok(*ACC, "--list", "--shard", "%d/3" % i).split() for i in (1, 2, 3)]
    check(sorted(sum(acc_parts, [])) == sorted(acc_full), "accuracy --list --shard i/3 is not a partition of --list")

    # unsharded, then shards 1..3 of run t
    U = {c: os.path.join(work, "unsharded-" + c) for c in ("bench", "accuracy", "sweep")}
    for args in (BENCH, ACC, SWEEP):
        q.ok(*args, "--results", R, "--out", U[args[0]])
        for i in (1, 2, 3):
            q.ok(*args, "--results", R, "--shard", "%d/3" % i, "--run-id", "t")
    for c in ("bench", "accuracy", "sweep"):
        dirs = shard_dirs(R, c)
        check(sorted(dirs) == [1, 2, 3], "%s: shard folders %s" % (c, sorted(dirs)))
        for i, d in dirs.items():
            s = load(os.path.join(d, "shard.json"))
            check(s["status"] == "complete" and s["done"] == s["cases"] and s["finished"], "%s shard %d: %s" % (c, i, s["status"]))
            check(s["of"] == 3 and s["run_id"] == "t" and s["machine"] == "fleet-a" and s["slurm"] is None, "%s shard %d fields" % (c, i))
            check("--shard" not in s["args"] and "--results" not in s["args"], "%s shard %d args %s" % (c, i, s["args"]))
            check(re.search(r"^\d{8}-\d{6}-.*-t-shard%dof3(-\d+)?$" % i, os.path.basename(d)), "folder name %s" % d)

    before = snapshot(R)
    O1 = os.path.join(work, "out1")
    rc, so, se = q.run("fleet", "collect", R, "--out", O1)
    check(rc == 0, "collect exit %d\n%s\n%s" % (rc, so, se))
    check(snapshot(R) == before, "collect modified something under the results root")
    M = os.path.join(O1, "fleet-a", "t")
    # bench: the same case list in the same order; timings present and positive
    ub, mb = load(os.path.join(U["bench"], "results.json")), load(os.path.join(M, "results.json"))
    check([r["name"] for r in mb["rows"]] == [r["name"] for r in ub["rows"]],
          "merged bench rows differ from the unsharded run:\n%s\n%s" % ([r["name"] for r in mb["rows"]], [r["name"] for r in ub["rows"]]))
    check([r["name"] for r in mb["rows"]] + [s["name"] for s in mb["skipped"]] == [n for n in full if n in
          {r["name"] for r in mb["rows"]} | {s["name"] for s in mb["skipped"]}], "merged rows are not in --list order")
    check(sorted([r["name"] for r in mb["rows"]] + [s["name"] for s in mb["skipped"]]) == sorted(full), "merged bench cases != --list")
    check(all(r["median_s"] > 0 and r["gops"] > 0 and len(r["times_s"]) == 2 for r in mb["rows"]), "merged bench timings")
    check(mb["complete"] is True and mb["machine"] == "fleet-a", "merged results.json meta")
    scal = [r for r in mb["rows"] if r["op"] == "gemv" and r["tier"] != "scalar"]
    check(scal and all(r["speedup_vs_scalar"] > 0 for r in scal), "speed-ups over the scalar row of another shard")
    gb = load(os.path.join(M, "gbench.json"))
    names = []
    for b in gb["benchmarks"]:
        n = b["run_name"].replace("/real_time", "")
        if n not in names:
            names.append(n)
    check(names == [r["name"] for r in mb["rows"]], "merged gbench.json benchmarks out of order or missing")
    with open(os.path.join(M, "results.csv")) as f:
        check(len(list(csv.DictReader(f))) == len(mb["rows"]), "merged results.csv rows")
    for f in ("machine.json", "summary.md", "collect.json"):
        check(os.path.isfile(os.path.join(M, f)), "merged %s missing" % f)
    # accuracy: byte for byte the unsharded files
    for f in ("accuracy.json", "accuracy.csv"):
        x, y = open(os.path.join(U["accuracy"], f)).read(), open(os.path.join(M, f)).read()
        check(x == y, "merged %s differs from the unsharded one" % f)
    # sweep: error metrics identical, timings present
    us, ms = load(os.path.join(U["sweep"], "sweep.json")), load(os.path.join(M, "sweep.json"))
    TIMING = ("time_median_s", "time_min_s", "repetitions", "gbps", "gops")

    def err(r):
        return json.dumps({k: v for k, v in r.items() if k not in TIMING}, sort_keys=False)

    check([err(r) for r in ms["rows"]] == [err(r) for r in us["rows"]] and ms["rows"], "merged sweep error metrics differ")
    check(all(r["time_median_s"] > 0 and r["gbps"] > 0 for r in ms["rows"] if r["status"] == "ok"), "merged sweep timings")
    check(os.path.getsize(os.path.join(M, "sweep.svg")) > 1000, "merged sweep.svg")
    # the merged folder is a results folder: report and compare read it
    rc, so, se = q.run("report", M, timeout=180)
    check(rc == 0 and os.path.isfile(os.path.join(M, "plots", "roofline.png")), "report on the merged folder: %d %s" % (rc, se[-500:]))
    rc, so, se = q.run("compare", U["bench"], M, "--all")
    check(rc in (0, 1) and ("%d rows compared" % len(mb["rows"])) in so and "gemv/W4A8" in so,
          "compare unsharded merged: %d %s %s" % (rc, so[-500:], se[-500:]))
    # the cross-machine table and plots
    with open(os.path.join(O1, "fleet.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == len(mb["rows"]) and "fleet-a gops" in rows[0], "fleet.csv: %d rows, %s" % (len(rows), list(rows[0]) if rows else []))
    gemv = [r for r in rows if r["op"] == "gemv" and r["tier"] != "scalar"]
    # the accuracy run of the same machine covers every format/g/mode: its error sits next to the throughput
    check(gemv and all(float(r["fleet-a gops"]) > 0 and float(r["fleet-a roofline_pct"]) > 0 and float(r["fleet-a q_sqnr_db"]) > 10
                       and float(r["fleet-a kernel_ratio"]) >= 0 for r in gemv), "fleet.csv gemv columns")
    check("fleet-a" in open(os.path.join(O1, "fleet.md")).read(), "fleet.md")
    for p in ("roofline", "speedup", "roofline_fraction", "bandwidth"):
        check(os.path.isfile(os.path.join(O1, "plots", p + ".png")), "fleet plot %s" % p)
    rc, so, se = q.run("fleet", "collect", R, "--out", O1)
    check(rc == 2 and "exists" in se, "collect into an existing --out: exit %d %s" % (rc, se))

    # a deleted shard and a shard left running: exit 1, named, nothing written before modified
    R2 = os.path.join(work, "results2")
    shutil.copytree(R, R2)
    shutil.rmtree(shard_dirs(R2, "bench")[2])
    sj = os.path.join(shard_dirs(R2, "accuracy")[3], "shard.json")
    s = load(sj)
    s["status"], s["done"], s["finished"] = "running", s["cases"][:1], None
    with open(sj, "w") as f:
        json.dump(s, f)
    before = snapshot(R2)
    rc, so, se = q.run("fleet", "collect", R2, "--no-plots")
    check(rc == 1, "collect with a missing and a running shard: exit %d" % rc)
    check("run t, bench on fleet-a: shard 2/3 missing" in so, "missing shard not reported:\n" + so)
    check("run t, accuracy on fleet-a: shard 3/3 incomplete: status running, 1 of" in so and "host " in so, "running shard not reported:\n" + so)
    after = snapshot(R2, skip=os.path.join(R2, "collected"))
    check(after == before, "collect modified a file under the results root")
    col = [os.path.join(R2, "collected", d) for d in os.listdir(os.path.join(R2, "collected"))]
    check(len(col) == 1 and os.path.isfile(os.path.join(col[0], "fleet-a", "t", "sweep.json"))
          and not os.path.exists(os.path.join(col[0], "fleet-a", "t", "results.json")), "only the complete group (sweep) is merged")

    # a case in two shards
    R3 = os.path.join(work, "results3")
    shutil.copytree(R, R3)
    d = shard_dirs(R3, "bench")
    s1, s2 = load(os.path.join(d[1], "shard.json")), load(os.path.join(d[2], "shard.json"))
    s1["cases"].append(s2["cases"][0])
    s1["case_index"].append(s2["case_index"][0])
    s1["done"].append(s2["cases"][0])
    with open(os.path.join(d[1], "shard.json"), "w") as f:
        json.dump(s1, f)
    rc, so, se = q.run("fleet", "collect", R3, "--out", os.path.join(work, "out3"), "--no-plots")
    check(rc == 1 and ("case %s is in shard 1/3" % s2["cases"][0]) in so and "duplicated" in so, "duplicate not reported:\n" + so)

    # a second machine (a copy of the bench shards under another machine key) whose shard 2 probed a slower DRAM
    R4 = os.path.join(work, "results4")
    shutil.copytree(R, R4)
    for i, d in shard_dirs(R4, "bench").items():
        nd = os.path.join(R4, "fleet-b", os.path.basename(d))
        shutil.copytree(d, nd)
        s = load(os.path.join(nd, "shard.json"))
        s["machine"] = "fleet-b"
        with open(os.path.join(nd, "shard.json"), "w") as f:
            json.dump(s, f)
        if i == 2:
            mj = load(os.path.join(nd, "machine.json"))
            for lv in mj["probe"]["levels"]:
                if lv["name"] == "DRAM":
                    lv["read_gbps_1t"] *= 0.6
            with open(os.path.join(nd, "machine.json"), "w") as f:
                json.dump(mj, f)
    O4 = os.path.join(work, "out4")
    rc, so, se = q.run("fleet", "collect", R4, "--out", O4, "--no-plots")
    check(rc == 1 and "run t, bench on fleet-b: probe limits disagree: DRAM read bandwidth, one thread" in so and "-40%" in so,
          "probe disagreement not reported:\n" + so)
    check("fleet-a: probe limits" not in so, "machine fleet-a's shards agree:\n" + so)
    with open(os.path.join(O4, "fleet.csv")) as f:
        hdr = next(csv.reader(f))
    check("fleet-a gops" in hdr and "fleet-b gops" in hdr, "two machines in fleet.csv: %s" % hdr)

    # a shard stopped by SIGTERM (scancel): the case in flight finishes, no other starts, status failed
    R5 = os.path.join(work, "results5")
    p = subprocess.Popen([q.exe, "accuracy", "--shape", "4x1024x4096", "--quiet", "--results", R5, "--shard", "1/1", "--run-id", "k"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=q.env)
    sj, t0 = None, time.time()
    while time.time() - t0 < 60 and p.poll() is None:
        d = shard_dirs(R5, "accuracy", "k") if os.path.isdir(R5) else {}
        if 1 in d:
            try:
                if load(os.path.join(d[1], "shard.json"))["done"]:
                    sj = os.path.join(d[1], "shard.json")
                    break
            except (OSError, ValueError):
                pass
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    se = p.communicate(timeout=120)[1]
    if check(sj is not None, "no accuracy case completed within 60 s"):
        s = load(sj)
        check(p.returncode == 143 and s["status"] == "failed" and 0 < len(s["done"]) < len(s["cases"]) and s["finished"],
              "SIGTERM: exit %d, status %s, %d of %d done: %s" % (p.returncode, s["status"], len(s["done"]), len(s["cases"]), se))
        rc, so, se = q.run("fleet", "collect", R5, "--no-plots")
        check(rc == 1 and "shard 1/1 incomplete: status failed" in so, "a stopped shard is incomplete:\n" + so)

    # usage errors
    for args, msg in ((["fleet", "collect"], "needs the results folder"), (["fleet", "collect", R, "--bogus"], "unknown option"),
                      (["fleet", "collect", os.path.join(work, "nope")], "is not a folder"), (["fleet", "bogus"], "unknown subcommand"),
                      (["sweep", "--shard", "4/3"], "I must be from 1 to N = 3"), (["accuracy", "--shard", "abc"], "expected I/N"),
                      (["bench", "--shard", "1/0"], "N must be from 1")):
        rc, so, se = q.run(*args)
        check(rc == 2 and msg in se, "%s: exit %d, %r" % (" ".join(args), rc, se[:300]))

    if failures:
        print("fleet: %d failed checks" % len(failures))
        return 1
    print("fleet: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
