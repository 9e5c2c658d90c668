#!/usr/bin/env python3
"""A/B of two qkbench builds on this machine: time per call of every case, side by side.

usage: tools/ab.py [--rounds N] [--pin CPU] [--rename OLD=NEW] QKBENCH_A QKBENCH_B [-- BENCH ARGS...]

Runs `qkbench bench --no-save --quiet BENCH ARGS` with each binary, N rounds (default 3),
alternating which goes first, and prints per case the median over rounds of B's time per
call over A's (below 1: B is faster) with every round's ratio, and A's median time per call.
Timings on a shared machine drift from minute to minute, so only ratios of runs made close
together mean much; --pin runs both under `taskset -c CPU` (one core may be busier than
another). --rename OLD=NEW replaces OLD by NEW in A's case names, so that a kernel renamed
between the builds (a new register tile in its name) is compared with itself. A Google Benchmark iteration is a calibrated batch of calls, so the time per call
is the repetitions' median real_time divided by calls_per_iteration (real_time alone is
about the same for every build, and its ratio says nothing).
Exits 2 on a usage error, 1 when a run fails or the two builds report different cases."""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def usage(msg):
    print(f"ab.py: {msg}\nusage: tools/ab.py [--rounds N] [--pin CPU] [--rename OLD=NEW] QKBENCH_A QKBENCH_B [-- BENCH ARGS...]",
          file=sys.stderr)
    sys.exit(2)


def parse(argv):
    rounds, pin, bins, rest, renames = 3, None, [], [], []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest = argv[i + 1:]
            break
        if a in ("--rounds", "--pin", "--rename"):
            if i + 1 >= len(argv):
                usage(f"{a} needs a value")
            v = argv[i + 1]
            if a == "--rename":
                if "=" not in v or v.startswith("="):
                    usage(f"--rename takes OLD=NEW, not '{v}'")
                renames.append(tuple(v.split("=", 1)))
            elif a == "--rounds":
                if not v.isdigit() or int(v) < 1:
                    usage(f"--rounds must be a whole number >= 1, not '{v}'")
                rounds = int(v)
            else:
                if not v.isdigit():
                    usage(f"--pin takes one CPU number, not '{v}'")
                pin = v
            i += 2
            continue
        if a.startswith("-"):
            usage(f"unknown option '{a}'")
        bins.append(a)
        i += 1
    if len(bins) != 2:
        usage(f"two qkbench binaries are needed, {len(bins)} given")
    for b in bins:
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            usage(f"'{b}' is not an executable file")
    return rounds, pin, bins, rest, renames


def per_call(binary, pin, args, renames=()):
    """{case: seconds per call} of one run, case names with renames applied."""
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        cmd = (["taskset", "-c", pin] if pin is not None else []) + [
            binary, "bench", "--no-save", "--quiet", *args, f"--benchmark_out={out}", "--benchmark_out_format=json"]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(f"ab.py: {' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()[-400:]}", file=sys.stderr)
            sys.exit(1)
        with open(out) as f:
            doc = json.load(f)
    finally:
        os.unlink(out)
    t = {}
    for x in doc.get("benchmarks", []):
        if x.get("aggregate_name") != "median":
            continue
        name = x["run_name"].rsplit("/real_time", 1)[0]
        for old, new in renames:
            name = name.replace(old, new)
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[x.get("time_unit", "ns")]
        t[name] = x["real_time"] * scale / x.get("calls_per_iteration", 1)
    if not t:
        print(f"ab.py: {binary} ran no case (check the filter)", file=sys.stderr)
        sys.exit(1)
    return t


def fmt_time(s):
    return f"{s * 1e6:.2f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main():
    rounds, pin, bins, args, renames = parse(sys.argv[1:])
    runs = ([], [])  # by position: A and B may be one binary (an A/A run)
    for r in range(rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            runs[i].append(per_call(bins[i], pin, args, renames if i == 0 else ()))
    cases = set(runs[0][0])
    if any(set(t) != cases for side in runs for t in side):
        print("ab.py: the two builds (or two rounds) ran different cases", file=sys.stderr)
        sys.exit(1)
    print(f"B/A time per call, median of {rounds} round(s) [each round]; A = {bins[0]}, B = {bins[1]}")
    for c in sorted(cases):
        ratios = [tb[c] / ta[c] for ta, tb in zip(*runs)]
        ta = statistics.median(t[c] for t in runs[0])
        print(f"{c}  {statistics.median(ratios):.3f} [{' '.join(f'{v:.2f}' for v in ratios)}]  A {fmt_time(ta)}")


if __name__ == "__main__":
    main()
