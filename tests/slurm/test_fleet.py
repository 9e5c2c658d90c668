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

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL", msg)
    return cond


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
