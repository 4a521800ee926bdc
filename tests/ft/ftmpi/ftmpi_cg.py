#!/usr/bin/env python3
"""The CG example with an XOR-parity checkpoint (examples/ftmpi_cg.c) in
FT-MPI's REBUILD mode: a rank killed mid-solve is replaced and the answer is
the same, to the bit, as without the failure.

    ftmpi_cg.py --mpirun M --bindir D [--runs N] [--seed S] [--np 4,8]
                [--limit SEC] [--rows R]

Run k (0 <= k < N) uses the seed S + k to pick the job size (the --np list
in turn; R grid rows in all, default 128), the victim, the iteration it dies at (1..300) and the checkpoint
interval (5..20), and runs ftmpi_cg twice in a row: without a failure and
with it. A run passes when both exit 0 within the limit with "No Errors",
mpirun says the rank was started again, the two "answer:" lines are equal
and no process of the job is left (each carries ULMPI_TEST_MARKER). Both
run times are printed (the figure of docs/ftmpi.md). Exit status 0 when
every run passed; a failing run prints the command that repeats it.
"""

import argparse
import os
import random
import re
import sys

from markedjob import add_common_options, run_marked


def job(args, cmd):
    return run_marked(cmd, os.environ, args.limit)


def one_run(args, k):
    seed = args.seed + k
    rnd = random.Random(seed)
    nps = [int(x) for x in args.np.split(",")]
    np = nps[k % len(nps)]
    rows = max(1, args.rows // np)
    victim = rnd.randrange(np)
    when = rnd.randint(1, 300)
    every = rnd.randint(5, 20)
    exe = os.path.join(args.bindir, "ftmpi_cg")
    base = [args.mpirun, "-n", str(np), "--ft-mode", "rebuild", exe, str(rows)]
    results = []
    for cmd in (base + ["-1", "1", str(every)], base + [str(victim), str(when), str(every)]):
        rc, out, seconds, left = job(args, cmd)
        answer = re.search(r"^answer: .*$", out, re.M)
        problems = []
        if rc is None:
            problems.append(f"no end within {args.limit} s")
        elif rc != 0:
            problems.append(f"mpirun exited {rc}")
        if "No Errors" not in out:
            problems.append("no 'No Errors'")
        if answer is None:
            problems.append("no answer line")
        if left:
            problems.append(f"processes left: {left}")
        if cmd[-3] != "-1" and f"rank {victim} started again" not in out:
            problems.append("mpirun did not start the victim again")
        results.append((cmd, out, seconds, answer.group(0) if answer else None, problems))
    (c0, o0, s0, a0, p0), (c1, o1, s1, a1, p1) = results
    if a0 != a1 and a0 is not None and a1 is not None:
        p1.append(f"answers differ: {a0!r} without the failure, {a1!r} with it")
    what = f"np={np} victim={victim} at={when} every={every}"
    if p0 or p1:
        for cmd, out, problems in ((c0, o0, p0), (c1, o1, p1)):
            if problems:
                print(f"run {k} (seed {seed}, {what}): FAIL: {'; '.join(problems)}")
                print("  repeat: " + " ".join(cmd))
                print("  " + out.strip().replace("\n", "\n  "))
        return False, s0, s1
    print(f"run {k} (seed {seed}, {what}): ok, {s0:.2f} s without the failure, "
          f"{s1:.2f} s with it")
    return True, s0, s1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_options(ap, 3)
    ap.add_argument("--rows", type=int, default=128)
    args = ap.parse_args()
    ok = 0
    times = []
    for k in range(args.runs):
        good, s0, s1 = one_run(args, k)
        ok += good
        times.append((s0, s1))
    med = lambda v: sorted(v)[len(v) // 2]
    print(f"{ok} of {args.runs} runs passed; median job time {med([t[0] for t in times]):.2f} s "
          f"without a failure, {med([t[1] for t in times]):.2f} s with one")
    return 0 if ok == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
