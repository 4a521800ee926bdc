#!/usr/bin/env python3
"""Runs rep_check under mpirun with and without replication and compares.

  rep_run.py --mpirun M --exe E --np N [--replicas R ...] [--iters I]
             [--kill-runs K --seed S] [--lose-rank] [--limit SECONDS]

1. A run without replication gives the reference result line
   ("result=<hash> ranks=N").
2. For every R of --replicas: a run with `--replicas R` must exit 0, print
   "No Errors" and exactly the reference result (once per replica of rank 0).
3. --kill-runs K (R >= 2): K runs in which one process, chosen with the
   iteration step from the seed, raises SIGKILL at that step; the job must
   still exit 0 with the reference result. A failing run prints the command
   that repeats it.
4. --lose-rank: every replica of one rank dies; mpirun must exit non-zero
   within the limit with a message naming the rank.
5. --flip-check: with --replica-check, a process flips a bit of a message it
   sends (one the receiver ignores): with 2 replicas the difference is
   reported (rank, destination, tag, message number) and the job ends well;
   with 3 the outvoted replica leaves the job, which still ends well.
Every run has a watchdog (--limit): a hung job fails the test and its
process group is killed.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys

PHASES = 8


def run(cmd, limit):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out
    return p.returncode, out


def results(out):
    return re.findall(r"result=[0-9a-f]+ ranks=\d+", out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--replicas", type=int, action="append", default=[])
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--kill-runs", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--lose-rank", action="store_true")
    ap.add_argument("--flip-check", action="store_true")
    ap.add_argument("--limit", type=float, default=60)
    ap.add_argument("--mpirun-arg", action="append", default=[])
    a = ap.parse_args()
    base = [a.mpirun] + a.mpirun_arg + ["-n", str(a.np)]
    failures = 0

    rc, out = run(base + [a.exe, str(a.iters)], a.limit)
    ref = results(out)
    if rc != 0 or len(ref) != 1 or "No Errors" not in out:
        print("reference run failed (rc=%s):\n%s" % (rc, out))
        return 1
    ref = ref[0]
    print("reference: %s" % ref)

    for r in a.replicas:
        cmd = base + ["--replicas", str(r), a.exe, str(a.iters)]
        rc, out = run(cmd, a.limit)
        got = results(out)
        # mpirun writes a rank's stdout once, whatever the replicas.
        ok = rc == 0 and got == [ref] and out.count("No Errors") == 1
        print("replicas %d: %s" % (r, "ok" if ok else "FAILED (rc=%s)" % rc))
        if not ok:
            print("  command: %s\n%s" % (" ".join(cmd), out))
            failures += 1

    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    reps = [r for r in a.replicas if r >= 2] or [2]
    for i in range(a.kill_runs):
        r = reps[i % len(reps)]
        victim = rng.randrange(a.np * r)
        step = rng.randrange(a.iters * PHASES)
        cmd = base + ["--replicas", str(r), a.exe, str(a.iters), "kill=%d:%d" % (victim, step)]
        rc, out = run(cmd, a.limit)
        got = results(out)
        ok = rc == 0 and got == [ref] and out.count("No Errors") == 1
        print("seed %d run %d: replicas %d, process %d dies at step %d: %s" %
              (seed, i, r, victim, step, "ok" if ok else "FAILED (rc=%s)" % rc))
        if not ok:
            print("  command: %s\n%s" % (" ".join(cmd), out))
            failures += 1

    if a.lose_rank:
        r = reps[0]
        rank = rng.randrange(a.np)
        kills = ["kill=%d:%d" % (rank + k * a.np, 2 * PHASES + 1) for k in range(r)]
        cmd = base + ["--replicas", str(r), a.exe, str(a.iters)] + kills
        rc, out = run(cmd, a.limit)
        ok = rc not in (0, None) and re.search(r"every replica of rank %d" % rank, out)
        print("every replica of rank %d dies: %s" % (rank, "ok" if ok else "FAILED (rc=%s)" % rc))
        if not ok:
            print("  command: %s\n%s" % (" ".join(cmd), out))
            failures += 1

    if a.flip_check:
        for r in (2, 3):
            rank = rng.randrange(a.np)
            victim = rank + (r - 1) * a.np
            it = rng.randrange(a.iters)
            cmd = base + ["--replicas", str(r), "--replica-check", a.exe, str(a.iters),
                          "flip=%d:%d" % (victim, it)]
            rc, out = run(cmd, a.limit)
            got = results(out)
            report = re.search(r"replica check: rank %d's message \d+ to rank \d+ \(tag 8\) "
                               r"differs between replicas" % rank, out)
            ok = rc == 0 and got == [ref] and report is not None
            if r == 3:
                ok = ok and "is outvoted and leaves the job" in out
            print("replica check, %d replicas, process %d flips a bit in iteration %d: %s" %
                  (r, victim, it, "ok" if ok else "FAILED (rc=%s)" % rc))
            if not ok:
                print("  command: %s\n%s" % (" ".join(cmd), out))
                failures += 1
        cmd = base + ["--replicas", "3", "--replica-check", a.exe, str(a.iters)]
        rc, out = run(cmd, a.limit)
        ok = rc == 0 and results(out) == [ref] and "replica check" not in out
        print("replica check without corruption: %s" % ("ok" if ok else "FAILED (rc=%s)" % rc))
        if not ok:
            print("  command: %s\n%s" % (" ".join(cmd), out))
            failures += 1

    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
