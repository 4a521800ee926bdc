#!/usr/bin/env python3
"""Kill anywhere: seeded random process failures in a resilient program.

    kill_anywhere.py --mpirun M --exe ft_anywhere [--runs N] [--seed S | --seeds LIST]
                     [--np 4,8] [--iters I] [--victims V] [--limit SEC] [--hosts H]
                     [--daemon-kills FRACTION] [--survivors-only]

Run k (0 <= k < N) uses the seed S + k (or, with --seeds 506,510,513, runs
exactly those seeds, in that order; a seed may repeat): it picks, from that seed alone, the
job size (the --np list in turn), V victims, and for each the iteration, the
phase of ft_anywhere (ring, coll, any, rndv, shrink, agree), at its start
or in its middle, and a delay of 0-3 ms; the victim kills itself with
SIGKILL there. With --hosts H (H >= 2) the job runs across H network
namespace hosts over udp (scripts/netns-cluster, 2 slots a host, needs root;
the cluster is made once, under /tmp/ulmpi-netns.lock), and a --daemon-kills
fraction of the runs instead SIGKILLs the daemon of a random host other than
the first at a random moment (50-800 ms after the program is ready; the
program then sleeps 300 ms at the start of each iteration, so that it still
runs, and a run where no daemon was found to kill fails): all of that
host's ranks fail.

Every run passes when
  * mpirun exits 0 (a fault-tolerant job whose survivors finished; with
    --survivors-only the status is not judged, for a launcher without that
    rule) within the limit (default 60 s: no hang);
  * every survivor printed "survivor R: answer A ok" with the right answer,
    and the first one "No Errors" (tests/ft/fttest.h);
  * no process of the job (they carry ULMPI_TEST_MARKER) and no
    /dev/shm/ulmpi-<jobid>* is left.
Each run prints its seed and kills; a failing one prints the command that
repeats it (--seed SEED --runs 1, with the same --np). Exit 0 when all
passed, 77 when --hosts cannot be had (not root, no namespaces).
"""

import argparse
import glob
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

from netns_hosts import marked_pids, open_cluster

PHASES = ["ring", "coll", "any", "rndv", "shrink", "agree"]
# ft_anywhere's pace (ms per iteration) when a daemon is killed: the job
# then lasts beyond the latest kill moment (800 ms after ready).
DAEMON_PACE_MS = 300
HERE = os.path.dirname(os.path.abspath(__file__))


class Plan:
    """What run `seed` does, from the seed alone."""

    def __init__(self, seed, nps, victims, iters, hosts, daemon_kills):
        rng = random.Random(seed)
        self.seed = seed
        self.np = nps[rng.randrange(len(nps))] if len(nps) > 1 else nps[0]
        self.kills = []
        self.daemon_host = None
        self.daemon_delay = 0.0
        if hosts >= 2 and rng.random() < daemon_kills:
            self.daemon_host = 1 + rng.randrange(hosts - 1)
            self.daemon_delay = rng.uniform(0.05, 0.8)
        else:
            for r in rng.sample(range(self.np), victims):
                self.kills.append("%d:%d:%s:%d:%d" % (r, rng.randrange(iters),
                                                     rng.choice(PHASES), rng.randrange(2),
                                                     rng.randrange(3000)))

    def describe(self):
        if self.daemon_host is not None:
            return "np %d, daemon of host %d killed %.0f ms after ready" % (
                self.np, self.daemon_host, self.daemon_delay * 1000)
        return "np %d, kill %s" % (self.np, " ".join(self.kills))


def run_once(a, plan, cluster):
    mark = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith("ULMPI_")}
    env["ULMPI_TEST_MARKER"] = mark
    env["ULMPI_FT"] = "ulfm"
    limit = a.limit
    prog = [a.exe, str(a.iters)] + plan.kills
    if cluster is None:
        argv = [a.mpirun, "-n", str(plan.np), "--timeout", str(int(limit))] + prog
    else:
        argv = cluster.mpirun_argv(a.mpirun, plan.np, limit) + prog
    expected = set(range(plan.np))
    for k in plan.kills:
        expected.discard(int(k.split(":")[0]))
    if plan.daemon_host is not None:
        lost = cluster.ranks_of(plan.daemon_host, plan.np)
        expected -= set(lost)
        # The program must expect them gone: a kill it never reaches itself;
        # and it must still run when the daemon is killed (up to 800 ms
        # after ready), so its iterations are paced.
        argv += ["%d:-1:ring:0:0" % r for r in lost] + ["pace:%d" % DAEMON_PACE_MS]
    t0 = time.time()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, start_new_session=True)
    lines = []
    ready = threading.Event()

    def reader():
        for raw in iter(p.stdout.readline, b""):
            line = raw.decode(errors="replace")
            lines.append(line)
            if line.strip() == "ready":
                ready.set()
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    daemon_note = ""
    if plan.daemon_host is not None:
        if ready.wait(limit):
            time.sleep(plan.daemon_delay)
            pids = cluster.daemons_on(plan.daemon_host, marked_pids(mark))
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            daemon_note = " (daemon pids %s)" % pids
            if not pids:
                daemon_note += " (no daemon found: nothing was killed)"
    try:
        rc = p.wait(timeout=limit + 15)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        rc = None
    th.join(5)
    secs = time.time() - t0
    text = "".join(lines)
    left = []
    deadline = time.time() + 5
    while time.time() < deadline:
        left = marked_pids(mark)
        if not left:
            break
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    problems = []
    if plan.daemon_host is not None and "nothing was killed" in daemon_note:
        problems.append("the daemon of host %d was not found to be killed" % plan.daemon_host)
    if rc is None:
        problems.append("hung: killed after %.0f s" % (limit + 15))
    elif rc != 0 and not a.survivors_only:
        problems.append("mpirun exit status %d" % rc)
    ok = set(int(m.group(1)) for m in re.finditer(r"^survivor (\d+): answer \d+ ok", text, re.M))
    if ok != expected:
        problems.append("survivors with the right answer: %s, want %s" %
                        (sorted(ok), sorted(expected)))
    if not re.search(r"^No Errors$", text, re.M):
        problems.append("no 'No Errors'")
    if left:
        problems.append("processes left: %s" % left)
    m = re.search(r"^jobid=([0-9a-f]+)", text, re.M)
    if m:
        shm = glob.glob("/dev/shm/ulmpi-%s*" % m.group(1))
        if cluster is not None:
            for h in cluster.hosts:
                q = subprocess.run(["ip", "netns", "exec", h, "sh", "-c",
                                    "ls /dev/shm/ulmpi-%s* 2>/dev/null" % m.group(1)],
                                   capture_output=True, text=True)
                shm += q.stdout.split()
        if shm:
            problems.append("shared memory left: %s" % sorted(set(shm)))
    return problems, secs, text, daemon_note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=None,
                    help="first seed (default: from the clock; printed)")
    ap.add_argument("--seeds", default=None,
                    help="comma-separated seeds to run instead of --seed/--runs (regressions)")
    ap.add_argument("--np", default="4,8")
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--victims", type=int, default=1)
    ap.add_argument("--limit", type=float, default=60)
    ap.add_argument("--hosts", type=int, default=0)
    ap.add_argument("--daemon-kills", type=float, default=0.0)
    ap.add_argument("--survivors-only", action="store_true")
    ap.add_argument("--netns-cluster", default=os.path.join(HERE, "..", "..", "scripts",
                                                             "netns-cluster"))
    a = ap.parse_args()
    nps = [int(x) for x in a.np.split(",")]
    env_seed = os.environ.get("KILL_ANYWHERE_SEED")
    base = a.seed if a.seed is not None else (int(env_seed) if env_seed else
                                              int(time.time()) % 1000000)
    if a.seeds is not None:
        try:
            seeds = [int(x) for x in a.seeds.split(",")]
        except ValueError:
            ap.error("--seeds wants comma-separated integers, got '%s'" % a.seeds)
        shown = "seeds " + a.seeds
    else:
        seeds = [base + k for k in range(a.runs)]
        shown = "seeds %d..%d" % (base, base + a.runs - 1)
    print("kill_anywhere: %s, np %s, %d victim(s), %d iterations%s" %
          (shown, a.np, a.victims, a.iters,
           ", %d hosts over udp" % a.hosts if a.hosts else ""), flush=True)
    lock = None
    cluster = None
    if a.hosts >= 2:
        lock, cluster = open_cluster(a.netns_cluster, a.hosts)
    failed = []
    t_all = time.time()
    try:
        for seed in seeds:
            plan = Plan(seed, nps, a.victims, a.iters, a.hosts, a.daemon_kills)
            problems, secs, text, note = run_once(a, plan, cluster)
            print("seed %d: %s%s: %s (%.1f s)" % (plan.seed, plan.describe(), note,
                                                  "PASS" if not problems else "FAIL", secs),
                  flush=True)
            if problems:
                failed.append(plan.seed)
                print("  " + "\n  ".join(problems))
                print("  output (last 40 lines):\n    " +
                      "\n    ".join(text.splitlines()[-40:]))
                print("  repeat: %s --mpirun %s --exe %s --seed %d --runs 1 --np %d "
                      "--iters %d --victims %d%s" %
                      (sys.argv[0], a.mpirun, a.exe, plan.seed, plan.np, a.iters, a.victims,
                       " --hosts %d --daemon-kills %g" % (a.hosts, a.daemon_kills)
                       if a.hosts else ""), flush=True)
    finally:
        if cluster is not None:
            cluster.close()
        if lock is not None:
            lock.close()
    print("kill_anywhere: %d runs, %d failed%s, %.0f s" %
          (len(seeds), len(failed), (" (seeds %s)" % failed) if failed else "",
           time.time() - t_all))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
