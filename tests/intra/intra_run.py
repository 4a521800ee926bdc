#!/usr/bin/env python3
"""Runs intra_check under mpirun with and without replication and compares.

  intra_run.py --mpirun M --exe E --np N [--replicas R ...] [--sections S]
               [--kill-runs K --seed SEED] [--kill HOW ...] [--errors]
               [--limit SECONDS]

1. A run without replication gives the reference line "result=<hash> ranks=N".
2. For every R of --replicas: `--replicas R` must exit 0, print "No Errors"
   and the reference result, and every replica must have run exactly its
   share of the tasks (the static split: slot k runs tasks [k*n/R, (k+1)*n/R)
   of each section of n tasks), as it reports on stderr.
3. --kill-runs K (for every R >= 2): K runs in which one replica dies at a
   point drawn from the seed: half of them inside one of its own tasks
   (kill=R:S:T, before the task's update leaves; a survivor must then have
   run more than its share), half right after its N-th update message
   (--param intra_kill=R:N: a partial update). The job must exit 0 with the
   reference result. A failing run prints the command that repeats it.
   --kill HOW: the same for one fixed point (kill=R:S:T, several joined by
   "+" for several deaths, intra_kill=R:N, or intra_kill=R:N:stage: replica R
   dies halfway through writing its N-th update message into its staging
   area, or right before posting it when it is not staged; a survivor must
   then have run more than its share: a half-written update is not taken).
   With --stage, half of the --kill-runs update kills are :stage ones.
   --shared (with three or more replicas and one death, kill=R:S:T): the
   survivors share the dead replica's tasks in the sections after its
   death: together they ran at most each task once, plus the dead one's share
   of section S (run again where its update did not come) and of section
   S+1 (survivors that did not know of the death yet); running the dead
   one's share on every survivor in every later section fails the check.
   A process re-created by recovery (two replicas) must have run exactly
   its slot's share in every section from the first one it ran.
4. --errors: the argument checks (intra_check errors) under --replicas 1 and 2.
--param K=V (repeatable) passes mpirun --param K=V to every run. --stage
MIN:MAX stages the updates of MIN bytes or more in an area of MAX bytes
(--param intra_stage=on, intra_stage_min, intra_stage_max; docs/intra_parallelization.md,
"Staging"); "--stage random" draws MIN (1-200, around intra_check's 8, 64
and 128 byte updates) and MAX (0-8,000) for each run from the seed. The
--replicas runs then check, from intra_profile's lines, that some updates
left from the staging area (when MIN <= 128 <= MAX).
Every run has a watchdog (--limit): a hung job fails the test and its process
group is killed.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys

SIZES = [1, 2, 3, 5, 8, 16, 100, 1000, 7, 64, 33, 4]


def run(cmd, limit):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err + "\n(watchdog: killed after %g s)" % limit
    return p.returncode, out, err


def results(out):
    return re.findall(r"result=[0-9a-f]+ ranks=\d+", out)


def share(n, r, k):
    return (k + 1) * n // r - k * n // r


def first(n, r, k):
    return k * n // r


def ran(err):
    """{(rank, replica): tasks run} from the stderr lines."""
    return {(int(a), int(b)): int(c)
            for a, b, c in re.findall(r"intra_check: rank (\d+) replica (\d+) ran (\d+) tasks", err)}


def recreated(err):
    """[(rank, replica, first section, tasks run since)] of re-created processes."""
    return [tuple(map(int, m)) for m in re.findall(
        r"intra_check: rank (\d+) replica (\d+) \(re-created from replica \d+'s copy\) "
        r"from section (\d+) on ran (\d+) tasks", err)]


def updates(sections, r, k):
    """Update messages replica k sends when none dies (A: 3 written, B: 2)."""
    m = 0
    for s in range(sections):
        n = SIZES[s % len(SIZES)]
        for t in range(first(n, r, k), first(n, r, k) + share(n, r, k)):
            m += (2 if (s % 2 == 1 and t % 2 == 1) else 3) * (r - 1)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--replicas", type=int, action="append", default=[])
    ap.add_argument("--sections", type=int, default=12)
    ap.add_argument("--kill-runs", type=int, default=0)
    ap.add_argument("--kill", action="append", default=[],
                    help="a fixed kill: kill=R:S:T (several joined by +) or intra_kill=R:N "
                         "(for every R >= 2 that has replica R)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--errors", action="store_true")
    ap.add_argument("--shared", action="store_true")
    ap.add_argument("--limit", type=float, default=60)
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--stage", default=None, help="MIN:MAX, or random (from the seed)")
    a = ap.parse_args()
    stage_rng = random.Random(a.seed)
    base_fixed = [a.mpirun, "-n", str(a.np)]
    for kv in a.param:
        base_fixed += ["--param", kv]
    stage = [None]  # the (MIN, MAX) of the run being built

    def base():
        """mpirun and its options for a new run (its staging drawn now)."""
        if a.stage is None:
            stage[0] = None
            return list(base_fixed)
        if a.stage == "random":
            lo, hi = stage_rng.randint(1, 200), stage_rng.randint(0, 8000)
        else:
            lo, hi = (int(x) for x in a.stage.split(":"))
        stage[0] = (lo, hi)
        return base_fixed + ["--param", "intra_stage=on", "--param", "intra_stage_min=%d" % lo, "--param",
                             "intra_stage_max=%d" % hi, "--param", "intra_profile=wall"]

    failures = 0

    def fail(what, cmd, rc, out, err):
        nonlocal failures
        failures += 1
        print("FAIL: %s (rc=%s)\n  repeat: %s\n%s\n%s" % (what, rc, " ".join(cmd), out, err))

    cmd = base() + [a.exe, str(a.sections)]
    rc, out, err = run(cmd, a.limit)
    ref = results(out)
    if rc != 0 or len(ref) != 1 or "No Errors" not in out:
        fail("reference run", cmd, rc, out, err)
        return 1
    ref = ref[0]
    print("reference: %s" % ref)

    for r in a.replicas:
        cmd = base() + ["--replicas", str(r), a.exe, str(a.sections)]
        rc, out, err = run(cmd, a.limit)
        if rc != 0 or results(out) != [ref] or "No Errors" not in out:
            fail("--replicas %d" % r, cmd, rc, out, err)
            continue
        got = ran(err)
        want = {(i, k): sum(share(SIZES[s % len(SIZES)], r, k) for s in range(a.sections))
                for i in range(a.np) for k in range(r)}
        if got != want:
            fail("--replicas %d: tasks run per (rank, replica) %s, the split says %s" %
                 (r, sorted(got.items()), sorted(want.items())), cmd, rc, out, err)
            continue
        if stage[0] is not None and stage[0][0] <= 128 <= stage[0][1]:
            staged = sum(int(x) for x in re.findall(r"sent \d+ bytes, (\d+) of them staged", err))
            if staged == 0:
                fail("--replicas %d, stage %s: no update left from the staging area" %
                     (r, stage[0]), cmd, rc, out, err)
                continue
        print("--replicas %d: ok (tasks per replica %s)%s" %
              (r, sorted(set(got.values())), "" if stage[0] is None else " (stage %d:%d)" % stage[0]))

    def kill_run(r, how):
        # "kill=R:S:T", several joined by "+", or "intra_kill=R:N"
        if how.startswith("kill="):
            cmd = base() + ["--replicas", str(r), a.exe, str(a.sections)] + how.split("+")
        else:
            cmd = base() + ["--replicas", str(r), "--param", how, a.exe, str(a.sections)]
        dead = [int(h.split("=")[1].split(":")[0]) for h in how.split("+")]
        if any(k >= r for k in dead):
            return
        rc, out, err = run(cmd, a.limit)
        if rc != 0 or ref not in results(out) or "No Errors" not in out:
            fail("--replicas %d, %s" % (r, how), cmd, rc, out, err)
            return
        got = ran(err)
        if any(kk in dead for (_, kk) in got):
            fail("--replicas %d, %s: a replica did not die" % (r, how), cmd, rc, out, err)
            return
        more = [(key, v) for key, v in got.items()
                if v > sum(share(SIZES[s % len(SIZES)], r, key[1]) for s in range(a.sections))]
        if (how.startswith("kill=") or how.endswith(":stage")) and not more:
            fail("--replicas %d, %s: no survivor ran the dead replica's tasks %s" %
                 (r, how, sorted(got.items())), cmd, rc, out, err)
            return
        # Recovery (two replicas): a re-created process takes its slot's
        # share in every section from its first one on.
        for rank, k, s0, n in recreated(err):
            want = sum(share(SIZES[s % len(SIZES)], r, k) for s in range(s0, a.sections))
            if n != want:
                fail("--replicas %d, %s: rank %d's re-created replica %d ran %d tasks from section "
                     "%d on, its share is %d" % (r, how, rank, k, n, s0, want), cmd, rc, out, err)
                return
        if a.shared and r >= 3 and how.startswith("kill=") and len(dead) == 1:
            d, sd = dead[0], int(how.split(":")[1])
            n_of = lambda s: SIZES[s % len(SIZES)] if s < a.sections else 0
            bound = (sum(n_of(s) for s in range(a.sections)) + share(n_of(sd), r, d) +
                     (r - 2) * share(n_of(sd + 1), r, d))
            for i in range(a.np):
                total = sum(v for (rank, _), v in got.items() if rank == i)
                if total > bound:
                    fail("--replicas %d, %s: rank %d's survivors ran %d tasks, more than %d: "
                         "they did not share the dead replica's tasks" % (r, how, i, total, bound),
                         cmd, rc, out, err)
                    return
        print("--replicas %d, %s: ok (survivors that ran more than their share: %s; "
              "re-created: %s)" % (r, how, sorted(more), recreated(err)))

    for r in [x for x in a.replicas if x >= 2]:
        for how in a.kill:
            kill_run(r, how)

    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    if a.kill_runs:
        print("kill runs: seed %d" % seed)
    for r in [x for x in a.replicas if x >= 2]:
        for i in range(a.kill_runs):
            k = rng.randrange(r)
            if i % 2 == 0:
                while True:
                    s = rng.randrange(a.sections)
                    n = SIZES[s % len(SIZES)]
                    if share(n, r, k) > 0:
                        break
                t = first(n, r, k) + rng.randrange(share(n, r, k))
                kill_run(r, "kill=%d:%d:%d" % (k, s, t))
            else:
                n = rng.randint(1, updates(a.sections, r, k))
                tail = ":stage" if a.stage is not None and rng.randrange(2) else ""
                kill_run(r, "intra_kill=%d:%d%s" % (k, n, tail))

    if a.errors:
        for r in (1, 2):
            cmd = base_fixed[:1] + ["-n", "1", "--replicas", str(r), a.exe, "1", "errors"]
            rc, out, err = run(cmd, a.limit)
            if rc != 0 or "No Errors" not in out:
                fail("argument checks, --replicas %d" % r, cmd, rc, out, err)
            else:
                print("argument checks, --replicas %d: ok" % r)

    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
