#!/usr/bin/env python3
"""Runs examples/intra_cg and checks that the result line is the same bits
without replication, with plain replication, with intra-parallel kernels
(--replicas 2 and 3), with a replica killed inside a sparsemv section, and
with a replica killed and re-created (recovery, docs/replication.md), and
with updates staged (intra_stage_min; the staging area must have been used,
and a sibling must have copied updates from it, it being shared memory),
also with a replica killed halfway through writing an update into its
staging area (intra_kill=R:N:stage, N drawn from --seed, after its sibling
mapped the area: the same bits, so no half-written update was taken).

  intra_cg_run.py --mpirun M --exe E [--np N] [--seed S] [--limit SECONDS] [CG options...]

Every run has a watchdog (--limit); a failing run prints its command.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys


def run(cmd, limit):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out + "\n(watchdog: killed after %g s)" % limit
    return p.returncode, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--limit", type=float, default=120)
    ap.add_argument("--seed", type=int, default=None)
    a, cg = ap.parse_known_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    # The update message (of replica 1, counted from the first section) in
    # the middle of whose staging it dies: past the first sections, so that
    # its sibling has mapped the area and read from it.
    stage_kill = random.Random(seed).randint(12, 60)
    print("seed %d: replica 1 dies while staging its update message %d" % (seed, stage_kill))
    base = [a.mpirun, "-n", str(a.np)]
    # (name, mpirun options, program options); the chunking (tasks=) changes
    # the order of ddot's sums, so each chunking has its own reference.
    BIG = ["nx=32", "ny=32", "nz=24"]
    STAGE = ["--param", "intra_stage=on", "--param", "intra_stage_min=4096", "--param",
             "intra_profile=wall"]
    runs = [
        ("no replication", [], []),
        ("no replication, 5 tasks", [], ["tasks=5"]),
        ("no replication, sections", [], ["intra=all"]),
        ("--replicas 2", ["--replicas", "2"], []),
        ("--replicas 2, intra all", ["--replicas", "2"], ["intra=all"]),
        ("--replicas 3, intra all", ["--replicas", "3"], ["intra=all"]),
        ("--replicas 2, intra ddot+sparsemv, 5 tasks", ["--replicas", "2"],
         ["intra=ddot,sparsemv", "tasks=5"]),
        ("--replicas 2, intra all, replica 1 killed in sparsemv", ["--replicas", "2"],
         ["intra=all", "kill=1:3"]),
        ("--replicas 3, intra all, replica 0 killed in sparsemv", ["--replicas", "3"],
         ["intra=all", "kill=0:2"]),
        # Recovery (docs/replication.md): the killed replicas are re-created
        # by their substitutes (mpirun says they are back), same bits. On a
        # larger grid (its own reference first): on the small one the
        # survivors of a loaded machine could finish the whole solve (3 ms)
        # before they heard of the deaths, and nothing was re-created (2
        # runs of 18, three jobs at once).
        ("--replicas 2, larger grid", ["--replicas", "2"], BIG),
        ("--replicas 2, replica 1 killed and re-created", ["--replicas", "2"], BIG + ["kill=1:3"]),
        # Staging (docs/intra_parallelization.md): the updates of 4 KiB or
        # more (sparsemv's 24 KiB ones, which a sibling reads straight from
        # the staging area) packed into it, also with a replica killed.
        ("--replicas 2, larger grid, intra all, staged", ["--replicas", "2"] + STAGE,
         BIG + ["intra=all"]),
        ("--replicas 3, larger grid, intra all, staged, replica 0 killed in sparsemv",
         ["--replicas", "3"] + STAGE, BIG + ["intra=all", "kill=0:2"]),
        ("--replicas 2, larger grid, intra all, staged, replica 1 killed while staging",
         ["--replicas", "2", "--param", "intra_kill=1:%d:stage" % stage_kill,
          "--param", "rep_recover=0"] + STAGE, BIG + ["intra=all"]),
    ]
    refs = {}
    failures = 0
    for name, opts, args in runs:
        cmd = base + opts + [a.exe] + cg + args
        rc, out = run(cmd, a.limit)
        got = re.findall(r"result: iters=\d+ normr=\S+ maxerr=\S+", out)
        key = ("tasks=5" in args, args[:len(BIG)] == BIG)
        ref = refs.get(key)
        bad = rc != 0 or len(got) != 1 or (ref is not None and got[0] != ref)
        if "re-created" in name and not re.search(r"^mpirun: replica 1 of rank \d+ is back", out,
                                                  re.M):
            bad = True
        if "staged" in name and not any(
                int(x) > 0 for x in re.findall(r"sent \d+ bytes, (\d+) of them staged", out)):
            bad = True  # no update left from the staging area
        if "staged" in name and not any(
                int(x) > 0 for x in re.findall(r"read (\d+) bytes from a sibling's shared area", out)):
            bad = True  # no sibling copied from a shared staging area
        if bad:
            failures += 1
            print("FAIL: %s (rc=%s; want %s)\n  repeat: %s\n%s" % (name, rc, ref, " ".join(cmd), out))
            continue
        refs.setdefault(key, got[0])
        print("%s: %s" % (name, got[0]))
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
