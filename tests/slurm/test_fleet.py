#!/usr/bin/python3
"""Tests of `qkbench fleet` (issue 8).

    test_fleet.py --qkbench PATH --work DIR [--source DIR] TEST

TEST is one of:
  submit   fleet submit without a cluster: --dry-run, the usage errors (exit 2), the script and
           manifest it writes and the sbatch command lines it runs (a stand-in sbatch records
           them), a failing sbatch (exit 1, its stderr shown), sbatch missing (exit 2)
  slurm    a real single-node Slurm (tests/slurm/slurm_cluster.sh: munged, slurmctld, slurmd on
           127.0.0.1, all in DIR): an array job per shard, collect, the merged result against a
           local unsharded run, a cancelled task reported missing and completed by --only-missing
Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE).
"""
import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qkcheck import check, failures  # noqa: E402


def run(cmd, env=None, timeout=120):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def fresh(work, name):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# ---------------------------------------------------------------- submit (no cluster)

def test_submit(a):
    q = a.qkbench
    d = fresh(a.work, "submit")
    res = os.path.join(d, "results")

    # --dry-run: the script and the sbatch lines on stdout, nothing written
    rc, out, err = run([q, "fleet", "submit", "--dry-run", "--shards", "3", "--results", res, "--name", "dry",
                        "--target", "zen5:--constraint=zen5", "--target", "a64:--nodelist=arm1 --partition=arm",
                        "--time", "30", "--sbatch-arg", "--qos=low", "--qkbench", "/opt/qk/bin/qkbench",
                        "--", "bench", "--suite", "quick", "--filter", "gemv.*(t1)"])
    check(rc == 0, f"dry run exit {rc}: {err}")
    check(not os.path.exists(res), "dry run wrote nothing")
    check(out.startswith("#!/bin/bash\n"), "dry run prints the script")
    for want in ["#SBATCH --exclusive", "#SBATCH --nodes=1", "#SBATCH --ntasks=1", "#SBATCH --mem=0",
                 f"#SBATCH --output={res}/fleet/logs/dry-%A_%a.out", f"#SBATCH --error={res}/fleet/logs/dry-%A_%a.err",
                 f"/opt/qk/bin/qkbench bench --shard \"$shard/3\" --run-id dry --results {res} --suite quick --filter 'gemv.*(t1)'",
                 f"sbatch --parsable --time=30 --qos=low --constraint=zen5 --array=1-3 {res}/fleet/dry.sbatch zen5",
                 f"sbatch --parsable --time=30 --qos=low --nodelist=arm1 --partition=arm --array=1-3 {res}/fleet/dry.sbatch a64"]:
        check(want in out, f"dry run output has: {want}")
    # the script is valid bash
    script = os.path.join(d, "dry.sbatch")
    with open(script, "w") as f:
        f.write(out)
    rc, _, err = run(["bash", "-n", script])
    check(rc == 0, f"the script parses as bash: {err}")

    # without --qkbench the script runs this binary (/proc/self/exe)
    rc, out, err = run([q, "fleet", "submit", "--dry-run", "--results", res, "--", "accuracy", "--shape", "2x64x256"])
    check(rc == 0 and f"{os.path.realpath(q)} accuracy --shard \"$shard/1\" --run-id accuracy-" in out,
          f"default qkbench is the running binary: {out[-600:]} {err}")

    # usage errors: exit 2 and a message naming the problem
    bad = [
        (["--shards", "0", "--", "bench"], "--shards '0'"),
        (["--shards", "x", "--", "bench"], "--shards 'x'"),
        (["--", "probe"], "cannot shard 'probe'"),
        (["--", "bench", "--shard", "1/2"], "'--shard' in the command"),
        (["--", "bench", "--results=/x"], "'--results=/x' in the command"),
        (["--", "sweep", "--out", "x"], "'--out' in the command"),
        (["--", "accuracy", "--run-id", "r"], "'--run-id' in the command"),
        (["--name", "a/b", "--", "bench"], "--name 'a/b'"),
        (["--name", "", "--", "bench"], "--name needs a value"),
        (["--target", "x y", "--", "bench"], "--target 'x y'"),
        (["--target", "x:nodes", "--", "bench"], "'nodes' is not an sbatch option"),
        (["--target", "x:", "--", "bench"], "no sbatch options after ':'"),
        (["--target", "x", "--target", "x:--qos=a", "--", "bench"], "'x' is given twice"),
        (["--sbatch-arg", "--array=1-4", "--", "bench"], "'--array=1-4' is set by fleet submit"),
        (["--sbatch-arg", "-o", "--", "bench"], "'-o' is set by fleet submit"),
        (["--sbatch-arg", "--output=x", "--", "bench"], "'--output=x' is set by fleet submit"),
        (["--target", "t:--wrap=ls", "--", "bench"], "'--wrap=ls' is set by fleet submit"),
        (["--bogus", "--", "bench"], "unknown option '--bogus'"),
        (["bench"], "goes after '--'"),
        (["--shards", "2"], "give the command to run after '--'"),
        (["--"], "nothing after '--'"),
        (["--time"], "--time needs a value"),
    ]
    for args, msg in bad:
        rc, out, err = run([q, "fleet", "submit", "--dry-run", "--results", res] + args)
        check(rc == 2 and msg in err, f"fleet submit {' '.join(args)}: exit {rc} (want 2), stderr has {msg!r}: {err.strip()}")
    check(not os.path.exists(res), "usage errors write nothing")
    rc, out, err = run([q, "fleet", "frobnicate"])
    check(rc == 2 and "unknown subcommand 'frobnicate'" in err, f"fleet frobnicate: {rc} {err}")
    rc, out, err = run([q, "fleet", "submit", "--help"])
    check(rc == 0 and "--only-missing DIR" in out and "--dry-run" in out, f"fleet submit --help: {rc}")

    # a stand-in sbatch: records its arguments and environment, prints a job id
    fake = os.path.join(d, "sbatch")
    log = os.path.join(d, "sbatch.log")
    write_exe(fake, "#!/bin/sh\n"
                    f"echo \"ARGS $*\" >> {log}\n"
                    f"echo \"QK_MACHINE=${{QK_MACHINE-unset}} QK_RESULTS=${{QK_RESULTS-unset}} KEEP=${{KEEP-unset}}\" >> {log}\n"
                    "n=$(grep -c ARGS " + log + ")\n"
                    "echo $((4240 + n))\n")
    env = dict(os.environ, QK_MACHINE="submit-host", QK_RESULTS="/elsewhere", KEEP="yes")
    rc, out, err = run([q, "fleet", "submit", "--sbatch", fake, "--shards", "3", "--results", res, "--name", "r1",
                        "--target", "m1:--constraint=zen5", "--target", "m2:--nodelist=arm1 --exclusive",
                        "--partition", "batch", "--", "accuracy", "--shape", "2x64x256"], env=env)
    check(rc == 0, f"submit with a stand-in sbatch: exit {rc}: {err}")
    check("job 4241" in out and "job 4242" in out, f"the job ids are printed: {out}")
    with open(log) as f:
        lines = f.read().splitlines()
    args = [l[5:] for l in lines if l.startswith("ARGS ")]
    check(args == [f"--parsable --partition=batch --constraint=zen5 --array=1-3 {res}/fleet/r1.sbatch m1",
                   f"--parsable --partition=batch --nodelist=arm1 --exclusive --array=1-3 {res}/fleet/r1.sbatch m2"],
          f"sbatch command lines: {args}")
    check(all(l == "QK_MACHINE=unset QK_RESULTS=unset KEEP=yes" for l in lines if l.startswith("QK_")),
          f"sbatch gets the environment without QK_MACHINE/QK_RESULTS: {lines}")
    man = os.path.join(res, "fleet", "r1.json")
    try:
        with open(man) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"manifest {man}: {e}")
        m = {}
    check(m.get("name") == "r1" and m.get("run_id") == "r1" and m.get("job_id") == "4241", f"manifest name/job: {m}")
    check(m.get("command") == ["accuracy", "--shape", "2x64x256"] and m.get("shards") == 3, "manifest command/shards")
    check(m.get("script") == f"{res}/fleet/r1.sbatch" and m.get("logs") == f"{res}/fleet/logs/", "manifest script/logs")
    check(m.get("sbatch") == ["--partition=batch"], f"manifest common sbatch: {m.get('sbatch')}")
    check(m.get("targets") == [{"name": "m1", "sbatch": ["--constraint=zen5"]},
                               {"name": "m2", "sbatch": ["--nodelist=arm1", "--exclusive"]}], f"manifest targets: {m.get('targets')}")
    check(m.get("tasks") == [{"index": k, "target": k // 3, "shard": k % 3 + 1} for k in range(6)], f"manifest tasks: {m.get('tasks')}")
    jobs = m.get("jobs", [])
    check([(j.get("job_id"), j.get("target"), j.get("array"), j.get("only_missing")) for j in jobs] ==
          [("4241", 0, "1-3", False), ("4242", 1, "1-3", False)], f"manifest jobs: {jobs}")
    check(os.path.isdir(os.path.join(res, "fleet", "logs")), "logs folder made")
    check(not [f for f in os.listdir(os.path.join(res, "fleet")) if ".tmp" in f], "no temporary files left")
    with open(os.path.join(res, "fleet", "r1.sbatch")) as f:
        s = f.read()
    check(f"--shard \"$shard/3\" --run-id r1 --results {res} --shape 2x64x256" in s, "the written script runs the shard")

    # the script itself: run it outside Slurm with a stand-in qkbench, as task 2 of target m2
    stand = os.path.join(d, "qkstand")
    write_exe(stand, "#!/bin/sh\necho \"qkbench $*\"\nexit 3\n")
    rc, out, err = run([q, "fleet", "submit", "--dry-run", "--shards", "4", "--results", res, "--name", "r9",
                        "--qkbench", stand, "--", "sweep", "--format", "w4s"])
    tmp = os.path.join(d, "r9.sbatch")
    with open(tmp, "w") as f:
        f.write(out)
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="2", SLURM_ARRAY_JOB_ID="77", SLURMD_NODENAME="nodeA")
    rc, out, err = run(["bash", tmp, "m2"], env=env)
    check(rc == 3, f"the script exits with qkbench's status (3): {rc}")
    outl = out.splitlines()
    check(len(outl) == 3 and outl[0].startswith("qkbench-fleet: run=r9 target=m2 shard=2 of=4 job=77_2 node=nodeA cpus=")
          and outl[1] == f"qkbench sweep --shard 2/4 --run-id r9 --results {res} --format w4s"
          and outl[2].startswith("qkbench-fleet: run=r9 target=m2 shard=2 of=4 job=77_2 node=nodeA exit=3 end="),
          f"the script records task/shard/node, runs the shard, records the exit: {out}")

    # --only-missing without a cluster: no shard folder of r1 exists, so every shard of both targets
    rc, out, err = run([q, "fleet", "submit", "--only-missing", res, "--name", "r1", "--dry-run", "--exclude", "bad1"])
    check(rc == 0 and f"sbatch --parsable --partition=batch --constraint=zen5 --exclude=bad1 --array=1,2,3 {res}/fleet/r1.sbatch m1" in out
          and f"--nodelist=arm1 --exclusive --exclude=bad1 --array=1,2,3 {res}/fleet/r1.sbatch m2" in out,
          f"--only-missing --dry-run: {rc} {out} {err}")
    for args, msg in [(["--only-missing", d + "/none"], "no fleet runs there"),
                      (["--only-missing", res, "--name", "zz"], "no run 'zz'"),
                      (["--only-missing", res, "--name", "r1", "--shards", "2"], "takes the command"),
                      (["--only-missing", res, "--name", "r1", "--", "bench"], "takes the command")]:
        rc, out, err = run([q, "fleet", "submit", "--dry-run"] + args)
        check(rc == 2 and msg in err, f"fleet submit {' '.join(args)}: exit {rc}, want 2 and {msg!r}: {err}")
    # a stand-in squeue next to the stand-in sbatch: r1's jobs are still queued, then gone
    sq = os.path.join(d, "squeue")
    write_exe(sq, "#!/bin/sh\necho '4241_2 PENDING'\n")
    rc, out, err = run([q, "fleet", "submit", "--sbatch", fake, "--only-missing", res, "--name", "r1"])
    check(rc == 2 and "still has tasks in the queue" in err and "4241_2 PENDING" in err, f"--only-missing while queued: {rc} {err}")
    write_exe(sq, "#!/bin/sh\nexit 0\n")
    rc, out, err = run([q, "fleet", "submit", "--sbatch", fake, "--only-missing", res, "--name", "r1", "--exclude", "bad1"])
    check(rc == 0 and "6 shards resubmitted" in out, f"--only-missing with a stand-in sbatch: {rc} {out} {err}")
    with open(man) as f:
        m = json.load(f)
    check([(j.get("target"), j.get("array"), j.get("only_missing"), j.get("sbatch")) for j in m.get("jobs", [])] ==
          [(0, "1-3", False, []), (1, "1-3", False, []), (0, "1,2,3", True, ["--exclude=bad1"]), (1, "1,2,3", True, ["--exclude=bad1"])],
          f"the manifest appends the resubmissions: {m.get('jobs')}")
    check(m.get("sbatch") == ["--partition=batch"] and m.get("job_id") == "4241", "the run's own options and first job stay")
    os.remove(sq)

    # the run exists: no second submit with that name (nothing overwritten)
    before = open(man).read()
    rc, out, err = run([q, "fleet", "submit", "--sbatch", fake, "--results", res, "--name", "r1", "--", "bench"])
    check(rc == 2 and "run 'r1' exists already" in err, f"same name again: {rc} {err}")
    check(open(man).read() == before, "the manifest is untouched")

    # sbatch fails: exit 1, its stderr shown, the manifest says no job
    bad_sb = os.path.join(d, "sbatch-bad")
    write_exe(bad_sb, "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1\n")
    rc, out, err = run([q, "fleet", "submit", "--sbatch", bad_sb, "--results", res, "--name", "r2", "--", "bench"])
    check(rc == 1 and "sbatch failed for target 'default'" in err and "Invalid partition name specified" in err,
          f"failing sbatch: exit {rc}: {err}")
    with open(os.path.join(res, "fleet", "r2.json")) as f:
        m2 = json.load(f)
    check(m2.get("job_id") is None and m2.get("jobs") == [], f"failed submission leaves no job: {m2.get('jobs')}")
    # sbatch prints something that is not a job id
    odd = os.path.join(d, "sbatch-odd")
    write_exe(odd, "#!/bin/sh\necho 'Submitted batch job'\n")
    rc, out, err = run([q, "fleet", "submit", "--sbatch", odd, "--results", res, "--name", "r3", "--", "bench"])
    check(rc == 1 and "sbatch printed: Submitted batch job" in err, f"sbatch without a job id: {rc} {err}")
    # sbatch missing
    env = dict(os.environ, PATH=d + "/nothing")
    rc, out, err = run([q, "fleet", "submit", "--results", res, "--name", "r4", "--", "bench"], env=env)
    check(rc == 2 and "sbatch not found in PATH" in err, f"no sbatch: {rc} {err}")
    check(not os.path.exists(os.path.join(res, "fleet", "r4.json")), "no sbatch: nothing written")
    rc, out, err = run([q, "fleet", "submit", "--sbatch", d + "/nope", "--results", res, "--", "bench"])
    check(rc == 2 and "--sbatch " + d + "/nope: not an executable file" in err, f"--sbatch missing file: {rc} {err}")


# ---------------------------------------------------------------- slurm (a real cluster)

class Cluster:
    """tests/slurm/slurm_cluster.sh in DIR: start, the clients' environment, stop."""

    def __init__(self, source, d):
        self.sh = os.path.join(source, "tests", "slurm", "slurm_cluster.sh")
        self.d = d
        self.env = dict(os.environ, SLURM_CONF=os.path.join(d, "etc", "slurm.conf"))

    def start(self):
        run(["bash", self.sh, "stop", self.d])  # leftovers of a run that was killed
        shutil.rmtree(self.d, ignore_errors=True)
        rc, out, err = run(["bash", self.sh, "start", self.d], timeout=120)
        sys.stdout.write(out)
        sys.stderr.write(err)
        return rc

    def stop(self):
        rc, out, err = run(["bash", self.sh, "stop", self.d], timeout=120)
        check(rc == 0, f"cluster stop: {rc} {out} {err}")

    def logs(self):
        for f in ["slurmctld.log", "slurmd.log"]:
            p = os.path.join(self.d, "log", f)
            if os.path.exists(p):
                print(f"---- {p} (last lines)")
                with open(p) as fh:
                    print("".join(fh.readlines()[-25:]))

    def run(self, cmd, timeout=60):
        return run(cmd, env=self.env, timeout=timeout)

    def tasks(self, job):
        """{task id: (state, node)} of an array job, from scontrol (the cluster keeps finished jobs for an hour)."""
        rc, out, err = self.run(["scontrol", "-o", "show", "job", str(job)])
        res = {}
        for line in out.splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            if f.get("ArrayJobId") == str(job) and f.get("ArrayTaskId", "").isdigit():
                res[int(f["ArrayTaskId"])] = (f.get("JobState"), f.get("NodeList"))
        return res

    def wait(self, jobs, timeout):
        """Wait until no task of `jobs` is pending or running; False on timeout."""
        t0 = time.time()
        while time.time() - t0 < timeout:
            rc, out, err = self.run(["squeue", "-h", "-j", ",".join(str(j) for j in jobs), "-o", "%i %T"])
            if rc == 0 and not out.strip():
                return True
            time.sleep(1)
        print(f"timeout after {timeout} s; squeue:\n{out}")
        return False


def job_ids(out):
    return [int(l.split()[3]) for l in out.splitlines() if l.startswith("target ") and len(l.split()) > 3 and l.split()[2] == "job"]


def slurm_standin(a, c, d):
    """fleet submit against real Slurm, with a stand-in for qkbench: every shard runs once, on a whole node."""
    res = fresh(d, "standin")
    stand = os.path.join(d, "qkstand")
    write_exe(stand, "#!/bin/sh\n"
                     f"echo \"$* cpus=$(nproc)\" > {res}/ran-$SLURM_ARRAY_TASK_ID\n")
    rc, out, err = c.run([a.qkbench, "fleet", "submit", "--qkbench", stand, "--shards", "3", "--results", res,
                          "--name", "smoke", "--time", "5", "--", "accuracy", "--shape", "2x64x256"])
    if not check(rc == 0, f"fleet submit (stand-in): exit {rc}: {out} {err}"):
        return
    jobs = job_ids(out)
    check(len(jobs) == 1, f"one array job: {out}")
    if not check(c.wait(jobs, 60), "the stand-in array finished within 60 s"):
        return
    tasks = c.tasks(jobs[0])
    host = os.uname().nodename.split(".")[0]
    check(tasks == {i: ("COMPLETED", host) for i in (1, 2, 3)}, f"three tasks completed on {host}: {tasks}")
    for i in (1, 2, 3):
        p = os.path.join(res, f"ran-{i}")
        got = open(p).read().strip() if os.path.exists(p) else "(not run)"
        check(got == f"accuracy --shard {i}/3 --run-id smoke --results {res} --shape 2x64x256 cpus={os.cpu_count()}",
              f"task {i} ran its shard with every CPU of the node ({os.cpu_count()}): {got}")
        log = os.path.join(res, "fleet", "logs", f"smoke-{jobs[0]}_{i}.out")
        txt = open(log).read() if os.path.exists(log) else ""
        check(f"qkbench-fleet: run=smoke target=default shard={i} of=3 job={jobs[0]}_{i} node={host} cpus=" in txt
              and " exit=0 end=" in txt, f"log {log} records task, shard, node and exit: {txt!r}")


ACC = ["accuracy", "--shape", "2x64x256", "--quiet"]
BENCH_FILTER = "^(quantize|dequantize)/(w4s|q8_0)/g32/16x4096/t1/warm/"
BENCH = ["bench", "--filter", BENCH_FILTER, "--reps", "2", "--min-time", "0.002", "--quiet"]
# slower shards (about 2 s each), so that one can be cancelled while it runs
BENCH_SLOW = ["bench", "--filter", BENCH_FILTER, "--reps", "2", "--min-time", "0.15", "--quiet"]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{path}: {e}")
        return {}


def submit(a, c, res, name, cmd, extra=(), shards=3):
    rc, out, err = c.run([a.qkbench, "fleet", "submit", "--shards", str(shards), "--results", res, "--name", name, "--time", "10"]
                         + list(extra) + ["--"] + cmd)
    check(rc == 0, f"fleet submit {name}: exit {rc}: {out} {err}")
    jobs = job_ids(out)
    check(len(jobs) == max(1, list(extra).count("--target")), f"fleet submit {name}: one array job per target: {out}")
    return jobs


def machine_dir(out):
    subs = [e for e in sorted(os.listdir(out)) if os.path.isdir(os.path.join(out, e)) and e != "plots"] if os.path.isdir(out) else []
    check(len(subs) == 1, f"collect made one machine folder in {out}: {subs}")
    return os.path.join(out, subs[0]) if subs else out


def slurm_e2e(a, c, d):
    """Real shards as Slurm array tasks; collect equals a local unsharded run; a cancelled task is
    reported and completed by --only-missing."""
    q = a.qkbench
    res = fresh(d, "shared")
    loc = fresh(d, "local")
    host = os.uname().nodename.split(".")[0]
    # one probe: the shards and the local run reuse res/<machine>/machine.json
    rc, out, err = run([q, "probe", "--quick", "--results", res], timeout=120)
    if not check(rc == 0, f"probe: {rc} {err}"):
        return
    rc, out, err = run([q] + ACC + ["--out", os.path.join(loc, "acc")])
    check(rc == 0, f"local accuracy: {rc} {err}")
    rc, out, err = run([q] + BENCH + ["--results", res, "--out", os.path.join(loc, "bench")])
    check(rc == 0, f"local bench: {rc} {err}")

    jobs = submit(a, c, res, "acc", ACC) + submit(a, c, res, "bq", BENCH)
    if not check(c.wait(jobs, 120), "the accuracy and bench arrays finished within 120 s"):
        return
    for j in jobs:
        check(c.tasks(j) == {i: ("COMPLETED", host) for i in (1, 2, 3)}, f"job {j}: three tasks completed: {c.tasks(j)}")

    # --only-missing with nothing missing submits nothing
    rc, out, err = c.run([q, "fleet", "submit", "--only-missing", res, "--name", "acc"])
    check(rc == 0 and "nothing to submit" in out, f"--only-missing on a complete run: {rc} {out} {err}")

    col = os.path.join(d, "collect1")
    shutil.rmtree(col, ignore_errors=True)
    rc, out, err = c.run([q, "fleet", "collect", res, "--out", col, "--no-plots"], timeout=120)
    check(rc == 0, f"collect: exit {rc}: {out} {err}")
    md = machine_dir(col)
    # accuracy: the same rows, case for case, with identical error metrics
    merged = load(os.path.join(md, "acc", "accuracy.json")).get("rows", [])
    local = load(os.path.join(loc, "acc", "accuracy.json")).get("rows", [])
    check(len(local) > 20 and merged == local,
          f"merged accuracy equals the local run: {len(merged)} rows vs {len(local)}"
          + ("" if merged == local else f"; first difference: {next(((m, l) for m, l in zip(merged, local) if m != l), None)}"))
    # bench: the same case list (and skipped list), every row timed
    mb = load(os.path.join(md, "bq", "results.json"))
    lb = load(os.path.join(loc, "bench", "results.json"))
    mn = [r.get("name") for r in mb.get("rows", [])]
    ln = [r.get("name") for r in lb.get("rows", [])]
    check(len(ln) >= 6 and sorted(mn) == sorted(ln), f"merged bench has the local run's cases: {mn} vs {ln}")
    check(sorted(x.get("name", "") for x in mb.get("skipped", [])) == sorted(x.get("name", "") for x in lb.get("skipped", [])),
          "merged bench skips what the local run skips")
    for r in mb.get("rows", []):
        check(r.get("median_s", 0) > 0 and len(r.get("times_s", [])) == 2 and r.get("gbps", 0) > 0,
              f"row {r.get('name')} has its timings: {r.get('median_s')} {r.get('times_s')}")
    check(os.path.exists(os.path.join(col, "fleet.md")), "the cross-machine table is written")

    # a task cancelled while it runs: collect names the shard and the node, exit 1
    jc = submit(a, c, res, "cut", BENCH_SLOW)
    victim, t0 = None, time.time()
    while victim is None and time.time() - t0 < 90:
        for i, (state, node) in sorted(c.tasks(jc[0]).items()):
            log = os.path.join(res, "fleet", "logs", f"cut-{jc[0]}_{i}.out")
            if state == "RUNNING" and os.path.exists(log) and "start=" in open(log).read():
                victim = i
                break
        time.sleep(0.2)
    if not check(victim is not None, "a task of run cut was seen running"):
        return
    # the shard writes shard.json at its start: cancel once it has
    t0 = time.time()
    while time.time() - t0 < 20 and not any(f"cut-shard{victim}of3" in p for p, _, fs in os.walk(res) if "shard.json" in fs):
        time.sleep(0.1)
    rc, out, err = c.run(["scancel", f"{jc[0]}_{victim}"])
    check(rc == 0, f"scancel {jc[0]}_{victim}: {rc} {err}")
    print(f"cancelled task {jc[0]}_{victim} while it ran")
    if not check(c.wait(jc, 120), "run cut finished within 120 s"):
        return
    states = c.tasks(jc[0])
    check(states.get(victim, ("",))[0] == "CANCELLED", f"task {victim} was cancelled: {states}")
    before = {}
    for p, _, fs in os.walk(res):
        for f in fs:
            if "-cut-shard" in p:
                before[os.path.join(p, f)] = open(os.path.join(p, f), "rb").read()
    col2 = os.path.join(d, "collect2")
    shutil.rmtree(col2, ignore_errors=True)
    rc, out, err = c.run([q, "fleet", "collect", res, "--out", col2, "--no-plots"], timeout=120)
    lines = [l for l in (out + err).splitlines() if f"shard {victim}/3" in l and "run cut" in l]
    check(rc == 1, f"collect with a cancelled task exits 1: {rc}")
    check(any(("missing" in l or "incomplete" in l) and host in l for l in lines),
          f"collect names shard {victim}/3 of run cut and node {host}: {lines} (all: {out} {err})")

    # --only-missing resubmits just that shard, with the same run id and N
    rc, out, err = c.run([q, "fleet", "submit", "--only-missing", res, "--name", "cut"])
    check(rc == 0 and f"shards {victim} of 3" in out, f"--only-missing resubmits shard {victim}: {rc} {out} {err}")
    jr = job_ids(out)
    # while it is queued, a second --only-missing refuses
    if states and jr:
        rc2, out2, err2 = c.run([q, "fleet", "submit", "--only-missing", res, "--name", "cut"])
        if c.tasks(jr[0]).get(victim, ("",))[0] in ("PENDING", "RUNNING"):
            check(rc2 == 2 and "still has tasks in the queue" in err2, f"--only-missing while queued: {rc2} {err2}")
    if not check(len(jr) == 1 and c.wait(jr, 120), "the resubmitted shard finished"):
        return
    check(c.tasks(jr[0]) == {victim: ("COMPLETED", host)}, f"one task, shard {victim}, completed: {c.tasks(jr[0])}")
    m = load(os.path.join(res, "fleet", "cut.json"))
    check([(j.get("array"), j.get("only_missing")) for j in m.get("jobs", [])] == [("1-3", False), (str(victim), True)],
          f"the manifest lists both submissions: {m.get('jobs')}")
    for p, b in before.items():
        check(os.path.exists(p) and open(p, "rb").read() == b, f"{p} is untouched by the resubmission")
    col3 = os.path.join(d, "collect3")
    shutil.rmtree(col3, ignore_errors=True)
    rc, out, err = c.run([q, "fleet", "collect", res, "--out", col3, "--no-plots"], timeout=120)
    check(rc == 0, f"collect after --only-missing: exit {rc}: {out} {err}")
    cut = load(os.path.join(machine_dir(col3), "cut", "results.json"))
    check(sorted(r.get("name") for r in cut.get("rows", [])) == sorted(ln), "run cut now has every case")

    # two targets, two machines (named through sbatch's --export, the probe copied so none runs):
    # one array job each, one merged result each, one column each in the cross-machine table
    mach = os.path.basename(machine_dir(col3))
    for fake in ("fleetA", "fleetB"):
        os.makedirs(os.path.join(res, fake), exist_ok=True)
        shutil.copy(os.path.join(res, mach, "machine.json"), os.path.join(res, fake, "machine.json"))
    jt = submit(a, c, res, "two", BENCH, shards=2, extra=["--target", "a:--export=ALL,QK_MACHINE=fleetA",
                                                          "--target", "b:--export=ALL,QK_MACHINE=fleetB"])
    if not check(len(jt) == 2 and c.wait(jt, 120), "the two targets' arrays finished"):
        return
    col4 = os.path.join(d, "collect4")
    shutil.rmtree(col4, ignore_errors=True)
    rc, out, err = c.run([q, "fleet", "collect", res, "--out", col4, "--no-plots"], timeout=120)
    check(rc == 0, f"collect with two machines: exit {rc}: {out} {err}")
    for fake, tg in (("fleetA", "a"), ("fleetB", "b")):
        r = load(os.path.join(col4, fake, "two", "results.json"))
        check(sorted(x.get("name") for x in r.get("rows", [])) == sorted(ln), f"{fake}: every case of the run")
        check(f"run two: bench on {fake} (target {tg})" in out, f"collect reports {fake} as target {tg}: {out}")
    table = open(os.path.join(col4, "fleet.md")).read() if os.path.exists(os.path.join(col4, "fleet.md")) else ""
    hdr = [l for l in table.splitlines() if l.startswith("| op |")]
    check(hdr and "fleetA" in hdr[0] and "fleetB" in hdr[0], f"the cross-machine table has a column per machine: {hdr}")


def test_slurm(a):
    d = os.path.join(a.work, "slurm")
    os.makedirs(d, exist_ok=True)
    c = Cluster(a.source, os.path.join(d, "cluster"))
    t0 = time.time()
    rc = c.start()
    if rc == 77:
        return 77
    if not check(rc == 0, f"the single-node cluster started (exit {rc})"):
        c.logs()
        c.stop()
        return 1
    print(f"cluster up in {time.time() - t0:.1f} s")
    try:
        slurm_standin(a, c, d)
        if not failures:
            slurm_e2e(a, c, d)
    finally:
        if failures:
            c.logs()
        c.stop()
    print(f"slurm test: {time.time() - t0:.1f} s")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--qkbench", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    p.add_argument("test", choices=["submit", "slurm"])
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rc = {"submit": test_submit, "slurm": test_slurm}[a.test](a)
    if rc == 77:
        return 77
    print(f"{a.test}: {'FAILED' if failures else 'passed'} ({len(failures)} failure{'s' if len(failures) != 1 else ''})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
