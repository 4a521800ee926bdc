#!/usr/bin/env python3
"""Randomized FT-MPI kill runs (docs/ftmpi.md).

    ftmpi_random.py --mpirun M --bindir D [--runs N] [--seed S] [--np 4,8]
                    [--limit SEC] [--sweep-every K]

Run k (0 <= k < N) uses the seed S + k: from it alone it picks the job size
(the --np list in turn), the communicator mode (blank, shrink, rebuild), the
message mode (reset, cont), the collective mode (atomic, nonatomic) and the
recovery (auto, or manual one run in four), and runs ftmpi_modes with that
seed (which picks the victim, the iteration and the moment it kills itself;
in rebuild mode ftmpi_rebuild, with one to three kills); every
K-th run is instead the manager-worker sweep (examples/ftmpi_sweep.c) with
one to three workers killed. A run passes when mpirun exits 0 within the
limit (no hang), the output holds "No Errors", and no process of the job is
left (each carries ULMPI_TEST_MARKER). A failing run prints the command that
repeats it. Exit status 0 when every run passed.
"""

import argparse
import os
import random
import sys

from markedjob import add_common_options, run_marked


def one_run(args, k):
    seed = args.seed + k
    rnd = random.Random(seed)
    nps = [int(x) for x in args.np.split(",")]
    np = nps[k % len(nps)]
    env = dict(os.environ)
    env["ULMPI_FT"] = "ulfm"
    env["ULMPI_FT_MODE"] = rnd.choice(["blank", "shrink", "rebuild"])
    if args.sweep_every > 0 and k % args.sweep_every == args.sweep_every - 1:
        kills = rnd.randint(1, min(3, np - 2))
        cmd = [args.mpirun, "-n", str(np), os.path.join(args.bindir, "ftmpi_sweep"), "150",
               str(kills), str(seed)]
        what = f"sweep {env['ULMPI_FT_MODE']} kills={kills}"
    else:
        env["ULMPI_FT_MSG_MODE"] = rnd.choice(["reset", "cont"])
        env["ULMPI_FT_COLL_MODE"] = rnd.choice(["atomic", "nonatomic"])
        env["ULMPI_FT_RECOVERY"] = "manual" if rnd.random() < 0.25 else "auto"
        cmd = [args.mpirun, "-n", str(np), os.path.join(args.bindir, "ftmpi_modes"), str(seed)]
        if env["ULMPI_FT_MODE"] == "rebuild":
            cmd = [args.mpirun, "-n", str(np), os.path.join(args.bindir, "ftmpi_rebuild"),
                   str(seed), str(rnd.randint(1, 3))]
        what = " ".join(env[v] for v in ("ULMPI_FT_MODE", "ULMPI_FT_MSG_MODE",
                                          "ULMPI_FT_COLL_MODE", "ULMPI_FT_RECOVERY"))
    settings = " ".join(f"{v}={env[v]}" for v in sorted(env) if v.startswith("ULMPI_FT"))
    rc, text, took, left = run_marked(cmd, env, args.limit)
    hung = rc is None
    ok = not hung and rc == 0 and "No Errors" in text and not left
    print(f"run {k} seed {seed} np {np} {what}: {'ok' if ok else 'FAILED'} ({took:.1f} s)")
    if not ok:
        why = "hung" if hung else f"exit {rc}" if rc != 0 else \
            "left processes" if left else "no 'No Errors'"
        print(f"  {why}; repeat: {settings} {' '.join(cmd)}")
        print("  " + text.replace("\n", "\n  ")[-3000:])
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(ap, 16)
    ap.add_argument("--sweep-every", type=int, default=4)
    args = ap.parse_args()
    failed = sum(0 if one_run(args, k) else 1 for k in range(args.runs))
    print(f"{args.runs - failed} of {args.runs} runs passed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
