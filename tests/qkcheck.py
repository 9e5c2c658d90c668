"""The check helper shared by the Python test drivers (tests/bench, tests/slurm):
a failed check is printed and remembered, and the driver exits non-zero at the end
if `failures` is not empty."""

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL", msg)
    return cond
