#!/usr/bin/env python3
"""Randomized FT-MPI kill runs (docs/ftmpi.md).

    ftmpi_random.py --mpirun M --bindir D [--runs N] [--seed S] [--np 4,8]
                    [--limit SEC] [--sweep-every K] [--hosts H [--daemon-kills F]]

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

With --hosts H (H >= 2) every job runs across H network-namespace hosts
over udp (2 ranks a host; needs root, else exit 77; the cluster is made
once, under /tmp/ulmpi-netns.lock), and a fraction F of the runs, instead of
a rank killing itself, SIGKILLs the daemon of a host other than mpirun's
(300-800 ms after the start, while a sweep of 8000 tasks runs; in a random
mode): all of that host's ranks fail, and REBUILD starts them again on
mpirun's host. Such a run also fails when no daemon was found to kill.
"""

import argparse
import os
import random
import signal
import sys
import threading
import time

from markedjob import add_common_options, leftovers, run_marked

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from netns_hosts import open_cluster  # noqa: E402


def daemon_killer(cluster, host, delay, marker, found):
    """Kills the daemon of `host` `delay` s from now (the job's processes
    carry ULMPI_TEST_MARKER=marker); appends the pids it killed to `found`."""
    def kill():
        time.sleep(delay)
        for pid in cluster.daemons_on(host, leftovers(marker)):
            try:
                os.kill(pid, signal.SIGKILL)
                found.append(pid)
            except OSError:
                pass
    t = threading.Thread(target=kill, daemon=True)
    t.start()
    return t


def one_run(args, k, cluster):
    seed = args.seed + k
    rnd = random.Random(seed)
    nps = [int(x) for x in args.np.split(",")]
    np = nps[k % len(nps)]
    env = dict(os.environ)
    env["ULMPI_FT"] = "ulfm"
    env["ULMPI_FT_MODE"] = rnd.choice(["blank", "shrink", "rebuild"])
    launch = [args.mpirun, "-n", str(np)]
    if cluster is not None:
        launch = cluster.mpirun_argv(args.mpirun, np, args.limit)
    daemon_host = None
    if cluster is not None and rnd.random() < args.daemon_kills:
        daemon_host = 1 + rnd.randrange(len(cluster.hosts) - 1)
        delay = rnd.uniform(0.3, 0.8)
        cmd = launch + [os.path.join(args.bindir, "ftmpi_sweep"), "8000", "0", str(seed)]
        what = f"sweep {env['ULMPI_FT_MODE']}, daemon of host {daemon_host} killed " \
               f"{delay * 1000:.0f} ms after the start"
    elif args.sweep_every > 0 and k % args.sweep_every == args.sweep_every - 1:
        kills = rnd.randint(1, min(3, np - 2))
        cmd = launch + [os.path.join(args.bindir, "ftmpi_sweep"), "150", str(kills), str(seed)]
        what = f"sweep {env['ULMPI_FT_MODE']} kills={kills}"
    else:
        env["ULMPI_FT_MSG_MODE"] = rnd.choice(["reset", "cont"])
        env["ULMPI_FT_COLL_MODE"] = rnd.choice(["atomic", "nonatomic"])
        env["ULMPI_FT_RECOVERY"] = "manual" if rnd.random() < 0.25 else "auto"
        cmd = launch + [os.path.join(args.bindir, "ftmpi_modes"), str(seed)]
        if env["ULMPI_FT_MODE"] == "rebuild":
            cmd = launch + [os.path.join(args.bindir, "ftmpi_rebuild"), str(seed),
                            str(rnd.randint(1, 3))]
        what = " ".join(env[v] for v in ("ULMPI_FT_MODE", "ULMPI_FT_MSG_MODE",
                                          "ULMPI_FT_COLL_MODE", "ULMPI_FT_RECOVERY"))
    settings = " ".join(f"{v}={env[v]}" for v in sorted(env) if v.startswith("ULMPI_FT"))
    killed = []
    marker = os.urandom(16).hex()
    if daemon_host is not None:
        daemon_killer(cluster, daemon_host, delay, marker, killed)
    rc, text, took, left = run_marked(cmd, env, args.limit, marker)
    hung = rc is None
    missed = daemon_host is not None and not killed
    ok = not hung and rc == 0 and "No Errors" in text and not left and not missed
    print(f"run {k} seed {seed} np {np} {what}: {'ok' if ok else 'FAILED'} ({took:.1f} s)")
    if not ok:
        why = "hung" if hung else f"exit {rc}" if rc != 0 else \
            "left processes" if left else "no daemon found to kill" if missed else \
            "no 'No Errors'"
        print(f"  {why}; repeat: {settings} {' '.join(cmd)}")
        print("  " + text.replace("\n", "\n  ")[-3000:])
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(ap, 16)
    ap.add_argument("--sweep-every", type=int, default=4)
    ap.add_argument("--hosts", type=int, default=0)
    ap.add_argument("--daemon-kills", type=float, default=0.0)
    ap.add_argument("--netns-cluster", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "netns-cluster"))
    args = ap.parse_args()
    lock = cluster = None
    if args.hosts >= 2:
        lock, cluster = open_cluster(args.netns_cluster, args.hosts)
    try:
        failed = sum(0 if one_run(args, k, cluster) else 1 for k in range(args.runs))
    finally:
        if cluster is not None:
            cluster.close()
        if lock is not None:
            lock.close()
    print(f"{args.runs - failed} of {args.runs} runs passed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
