#!/usr/bin/env python3
"""Runs rep_check under mpirun with and without replication and compares.

  rep_run.py --mpirun M --exe E --np N [--replicas R ...] [--iters I]
             [--kill-runs K --seed S] [--kill-each-every E] [--lose-rank]
             [--limit SECONDS] [--hosts H]

1. A run without replication gives the reference result line
   ("result=<hash> ranks=N").
2. For every R of --replicas: a run with `--replicas R` must exit 0, print
   "No Errors" and exactly the reference result (once per replica of rank 0).
3. --kill-runs K (R >= 2): K runs in which one process, chosen with the
   iteration step from the seed, raises SIGKILL at that step; the job must
   still exit 0 with the reference result. A failing run prints the command
   that repeats it. --kill-each-every E: every E-th of them instead kills one
   replica of every rank (a random one each, each at its own step).
4. --lose-rank: every replica of one rank dies; mpirun must exit non-zero
   within the limit with a message naming the rank.
5. --flip-check: with --replica-check, a process flips a bit of a message it
   sends (one the receiver ignores): with 2 replicas the difference is
   reported (rank, destination, tag, message number) and the job ends well;
   with 3 the outvoted replica leaves the job, which still ends well.
6. --recover-runs K (recovery, two replicas): K runs in which one replica
   of a random rank dies at a random step; its substitute re-creates it
   (mpirun says "replica l of rank r is back"), then the driver kills the
   other, original replica of that rank from outside: the job must still
   exit 0 with the reference result. --recover-all: the same with one
   replica of every rank, the others killed once all are back.
   --recover-once: nobody is killed after the re-creation (the job must
   end with the re-created replica and its sibling). --only I (repeatable):
   of the seed's kill and recovery runs, run only run I (repeats a failure). A re-created process
   still running 3 s after mpirun ended fails the run (it must die with
   mpirun, also when the watchdog kills mpirun).
Every run has a watchdog (--limit): a hung job fails the test and its
process group is killed, as is any process of the job (ULMPI_TEST_MARKER)
left after it ended, which fails the run.

--remote-only (with --hosts): mpirun's host runs no process, every process
runs under a host's daemon (--hosts 2: all on the second host, shm between
them, so a recovery re-creates replicas there). Every re-created process
must be named on its host by mpirun ("re-created: process p is pid N on
host h"), and with --tag-output its own "is back" log line must come
labelled with its rank ("[r] ulmpi: rank r replica k: ... is back").
--kill-recreated (recovery runs): once the replicas are back, the driver
kills the re-created processes instead of the original ones: mpirun must
judge their deaths (a line naming each pid, "died from signal 9") and the
originals re-create them again (two "is back" lines a rank).

--hosts H (H >= 2): every job runs across H network-namespace hosts over udp
(tests/ft/netns_hosts.py: 2 ranks of replica 0 a host, mpirun on the first;
needs root, else exit 77; the cluster is made once, under
/tmp/ulmpi-netns.lock, which the script takes unless a caller holds it).
The first replicated run also shows the map (--display-map): the replicas of
every rank must be on different hosts.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ft"))
from netns_hosts import marked_pids, open_cluster  # noqa: E402

PHASES = 8
MARKER = uuid.uuid4().hex  # in the environment of every process of the jobs


def marked():
    return marked_pids(MARKER)


def reap_marked(out, wait=3.0):
    """Kills what is left of the job `wait` seconds after mpirun ended (a
    re-created process, mpirun's child, dies with it through its parent
    death signal); says so in its output."""
    end = time.time() + wait
    left = marked()
    while left and time.time() < end:
        time.sleep(0.1)
        left = marked()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if left:
        out += "rep_run.py: processes of the job left after mpirun ended: %s\n" % left
    return left, out


def run(cmd, limit):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = None
    left, out = reap_marked(out)
    if left and rc == 0:
        rc = -1
    return rc, out


def comm_of(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def process_number(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"ULMPI_RANK="):
                    return int(item[len(b"ULMPI_RANK="):])
    except (OSError, ValueError):
        pass
    return None


def run_recover(cmd, limit, back_wanted, second, recreated=False):
    """Runs cmd; once mpirun has said `back_wanted` replicas are back, kills
    the processes mpirun started for the process numbers in `second` (not
    the re-created ones), or with `recreated` the re-created ones. Returns
    (rc, output, killed, the pids killed)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    lines = []
    state = {"back": 0, "adopted": set(), "killed": 0, "pids": []}

    def reader():
        for line in p.stdout:
            lines.append(line)
            m = re.search(r"re-created: process \d+ is pid (\d+)", line)
            if m:
                state["adopted"].add(int(m.group(1)))
            if re.search(r"^mpirun: replica \d+ of rank \d+ is back", line):
                state["back"] += 1
                if state["back"] == back_wanted and recreated:
                    for pid in sorted(state["adopted"]):
                        try:
                            os.kill(pid, signal.SIGKILL)
                            state["killed"] += 1
                            state["pids"].append(pid)
                        except OSError:
                            pass
                elif state["back"] == back_wanted:
                    # mpirun's children, or a host's daemon's: the marked
                    # processes (not the re-created ones, forks whose
                    # environment is their substitute's).
                    for pid in marked():
                        if pid not in state["adopted"] and process_number(pid) in second and \
                                comm_of(pid) not in ("mpirun", "ulmpi_daemon", "ip"):
                            os.kill(pid, signal.SIGKILL)
                            state["killed"] += 1

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        rc = p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        rc = None
    t.join(5)
    left = left_running(state["adopted"])
    if left:
        lines.append("rep_run.py: re-created processes %s outlived mpirun (killed now)\n" % left)
        rc = rc if rc is None else -1
    others, out = reap_marked("".join(lines))
    if others and rc == 0:
        rc = -1
    return rc, out, state["killed"], state["pids"]


def recreation_problems(out, remote, tagged, killed):
    """What is wrong with the re-created processes in mpirun's output: each
    named on its host (remote), its own "is back" line labelled with its
    rank (tagged), each killed one's death judged by mpirun (killed)."""
    problems = []
    made = re.findall(r"^mpirun: replica (\d+) of rank (\d+) re-created: process \d+ is pid "
                      r"(\d+)( on host \S+)?", out, re.M)
    for k, r, pid, host in made:
        if remote and not host:
            problems.append("process pid %s (replica %s of rank %s) not named on its host" %
                            (pid, k, r))
        if tagged and not re.search(r"^\[%s\] ulmpi: rank %s replica %s: .*replica %s of rank %s "
                                    r"is back" % (r, r, k, k, r), out, re.M):
            problems.append("no labelled \"is back\" line of replica %s of rank %s" % (k, r))
    for pid in killed:
        if not re.search(r"^mpirun: process \d+ \(rank \d+, replica \d+; pid %d%s\) died from "
                         r"signal 9" % (pid, " on \S+" if remote else ""), out, re.M):
            problems.append("the death of re-created pid %d was not judged" % pid)
    return problems


def running(pid):
    """True while pid is a process that has not exited (zombies have)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def left_running(pids, wait=3.0):
    """The re-created processes (adopted by mpirun, outside its process
    group) still running `wait` seconds after mpirun ended: they must die
    with it (a watchdog that kills mpirun must leave nothing behind)."""
    end = time.time() + wait
    while time.time() < end and any(running(p) for p in pids):
        time.sleep(0.1)
    left = [p for p in pids if running(p)]
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    return left


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
    ap.add_argument("--recover-runs", type=int, default=0)
    ap.add_argument("--recover-all", action="store_true")
    ap.add_argument("--recover-once", action="store_true")
    ap.add_argument("--pace", type=int, default=2000)
    ap.add_argument("--only", type=int, action="append", default=[],
                    help="run only these kill/recovery runs of the seed (repeating a failure)")
    ap.add_argument("--kill-each-every", type=int, default=0)
    ap.add_argument("--hosts", type=int, default=0)
    ap.add_argument("--remote-only", action="store_true")
    ap.add_argument("--kill-recreated", action="store_true")
    ap.add_argument("--netns-cluster", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "netns-cluster"))
    a = ap.parse_args()
    os.environ["ULMPI_TEST_MARKER"] = MARKER
    lock = cluster = None
    if a.hosts >= 2:
        lock, cluster = open_cluster(a.netns_cluster, a.hosts)
    try:
        return campaign(a, cluster)
    finally:
        if cluster is not None:
            cluster.close()
        if lock is not None:
            lock.close()


def placement_problems(out, np, replicas):
    """What is wrong with mpirun's --display-map: every process listed, the
    replicas of each rank on different hosts."""
    hosts = {}
    for m in re.finditer(r"^process (\d+) \(rank (\d+), replica (\d+)\) on (\S+)", out, re.M):
        hosts.setdefault(int(m.group(2)), {})[int(m.group(3))] = m.group(4)
    problems = []
    for rank in range(np):
        on = hosts.get(rank, {})
        if len(on) != replicas:
            problems.append("rank %d: %d replica(s) in the map" % (rank, len(on)))
        elif len(set(on.values())) != replicas:
            problems.append("rank %d: replicas on %s" % (rank, on))
    return problems


def campaign(a, cluster):
    if cluster is None:
        base = [a.mpirun] + a.mpirun_arg + ["-n", str(a.np)]
    else:
        place = {"first": 1, "slots": a.np * 3} if a.remote_only else {}
        base = cluster.mpirun_base(a.mpirun, **place) + a.mpirun_arg + [
            "-n", str(a.np), "--timeout", str(int(a.limit))]
    failures = 0

    rc, out = run(base + [a.exe, str(a.iters)], a.limit)
    ref = results(out)
    if rc != 0 or len(ref) != 1 or "No Errors" not in out:
        print("reference run failed (rc=%s):\n%s" % (rc, out))
        return 1
    ref = ref[0]
    print("reference: %s" % ref)

    for r in a.replicas:
        shown = ["--display-map"] if cluster is not None and r >= 2 else []
        cmd = base + ["--replicas", str(r)] + shown + [a.exe, str(a.iters)]
        rc, out = run(cmd, a.limit)
        got = results(out)
        # mpirun writes a rank's stdout once, whatever the replicas.
        ok = rc == 0 and got == [ref] and out.count("No Errors") == 1
        problems = placement_problems(out, a.np, r) if shown else []
        ok = ok and not problems
        print("replicas %d: %s%s" % (r, "ok" if ok else "FAILED (rc=%s)" % rc,
                                     "".join("; " + p for p in problems)))
        if not ok:
            print("  command: %s\n%s" % (" ".join(cmd), out))
            failures += 1

    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    reps = [r for r in a.replicas if r >= 2] or [2]
    for i in range(a.kill_runs):
        r = reps[i % len(reps)]
        if a.kill_each_every > 0 and i % a.kill_each_every == a.kill_each_every - 1:
            # One replica of every rank, never two of one.
            kills = ["kill=%d:%d" % (x + rng.randrange(r) * a.np, rng.randrange(a.iters * PHASES))
                     for x in range(a.np)]
            what = "one replica of every rank dies (%s)" % " ".join(kills)
        else:
            victim = rng.randrange(a.np * r)
            step = rng.randrange(a.iters * PHASES)
            kills = ["kill=%d:%d" % (victim, step)]
            what = "process %d dies at step %d" % (victim, step)
        cmd = base + ["--replicas", str(r), a.exe, str(a.iters)] + kills
        if a.only and i not in a.only:
            continue
        rc, out = run(cmd, a.limit)
        got = results(out)
        ok = rc == 0 and got == [ref] and out.count("No Errors") == 1
        print("seed %d run %d: replicas %d, %s: %s" %
              (seed, i, r, what, "ok" if ok else "FAILED (rc=%s)" % rc), flush=True)
        if not ok:
            print("  command: %s\n%s" % (" ".join(cmd), out))
            failures += 1

    for i in range(a.recover_runs):
        n = a.np
        if a.recover_all:
            ranks = list(range(n))
        else:
            ranks = [rng.randrange(n)]
        first = {}
        for x in ranks:
            first[x] = rng.randrange(2)
        step = rng.randrange(max(1, a.iters * PHASES // 4))
        kills = ["kill=%d:%d" % (x + first[x] * n, step) for x in ranks]
        second = set() if a.recover_once or a.kill_recreated else \
            set(x + (1 - first[x]) * n for x in ranks)
        cmd = base + ["--replicas", "2", a.exe, str(a.iters), "pace=%d" % a.pace] + kills
        if a.only and i not in a.only:
            continue
        rc, out, killed, pids = run_recover(cmd, a.limit, len(ranks), second, a.kill_recreated)
        got = results(out)
        backs = len(re.findall(r"^mpirun: replica \d+ of rank \d+ is back", out, re.M))
        wanted = len(ranks) * (2 if a.kill_recreated else 1)
        problems = recreation_problems(out, a.remote_only, "--tag-output" in a.mpirun_arg, pids)
        ok = (rc == 0 and got == [ref] and out.count("No Errors") == 1 and
              backs >= wanted and not problems and
              killed == (len(ranks) if a.kill_recreated else len(second)))
        print("seed %d recovery run %d: ranks %s lose replica %s at step %d, %d back, %d "
              "others killed: %s" %
              (seed, i, ranks, [first[x] for x in ranks], step, backs, killed,
               "ok" if ok else "FAILED (rc=%s)" % rc) + "".join("; " + p for p in problems))
        if not ok:
            print("  command: %s\n%s" % (" ".join(cmd), out))
            failures += 1

    if a.lose_rank:
        r = reps[0]
        rank = rng.randrange(a.np)
        kills = ["kill=%d:%d" % (rank + k * a.np, 2 * PHASES + 1) for k in range(r)]
        # Recovery off: with it the survivor may re-create its sibling before
        # it dies too, and the rank lives on (a correct outcome, not this test).
        cmd = base + ["--replicas", str(r), "--param", "rep_recover=0", a.exe, str(a.iters)] + kills
        rc, out = run(cmd, a.limit)
        # With recovery the surviving replica may have forked a new one just
        # before it died: the new process then ends the job, naming it.
        ok = rc not in (0, None) and re.search(
            r"every replica of rank %d|\(replica \d+ of rank %d\) died while it re-created" %
            (rank, rank), out)
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
