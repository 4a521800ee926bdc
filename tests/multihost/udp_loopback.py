#!/usr/bin/env python3
"""The udp path on one host: the MPI test programs over ULMPI_PATH_INCLUDE=self,udp.

Runs the tests/mpi testlist entries with 2..4 ranks (tests/mpi/runtests.py does
the running and the checks: exit status, "No Errors", no process left) in
these configurations:

  plain    udp over loopback, nothing else
  lossy    + the lossy decorator on udp (drop/corrupt/dup/reorder, 1-5 %)
  netloss  + real kernel packet loss: in a private network namespace
           (unshare -n) an nft rule drops a random --loss % of the UDP
           datagrams on lo (needs root and nft; skipped with a message if not)
  stray    one long job while this script sends datagrams from outside the
           job to every udp port of every rank: the job must pass and the
           ranks must report them refused (mpirun --stats)

Every configuration prints a table like runtests.py's and a line of counters
summed over the ranks (retransmissions, CRC failures, duplicates, refused
datagrams) from mpirun --stats, so a run shows that faults happened and were
repaired. Exit status 0 when everything behaved.

  tests/multihost/udp_loopback.py --build /work/build-udp [--configs plain,lossy]
      [--np 2,3,4] [--filter REGEX] [--loss 5] [--seed 7]
"""

import argparse
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "mpi"))
import runtests  # noqa: E402

CONFIGS = ["plain", "lossy", "netloss", "stray"]
STAT_KEYS = ["retransmits", "crc_header_fail", "crc_payload_fail", "duplicates"]


def stats_of(text):
    """Sums the per-peer counters of ulmpi-stats lines, and refused datagrams."""
    tot = {k: 0 for k in STAT_KEYS}
    tot["refused"] = 0
    tot["injected"] = 0
    for line in text.splitlines():
        if not line.startswith("ulmpi-stats"):
            continue
        if " peer=" in line:
            for k in STAT_KEYS:
                m = re.search(r"\b%s=(\d+)" % k, line)
                if m:
                    tot[k] += int(m.group(1))
        m = re.search(r"refused (\d+) datagrams", line)
        if m:
            tot["refused"] += int(m.group(1))
        for m in re.finditer(r"(\d+) (?:dropped|duplicated|reordered|delayed)", line):
            tot["injected"] += int(m.group(1))
        m = re.search(r"(\d+)\+(\d+) corrupted", line)
        if m:
            tot["injected"] += int(m.group(1)) + int(m.group(2))
    return tot


def fmt_stats(t):
    return ", ".join("%s %d" % (k, v) for k, v in t.items())


def select(entries, nps, rx):
    out = []
    for e in entries:
        if e.np not in nps:
            continue
        if rx and not rx.search(e.id):
            continue
        out.append(e)
    return out


def run_list(entries, args, env_extra, title):
    """Runs entries with env_extra in the environment; returns (failed ids, stats)."""
    saved = dict(os.environ)
    os.environ.update(env_extra)
    failed = []
    total = {}
    start = time.monotonic()
    print("== %s: %s" % (title, " ".join("%s=%s" % kv for kv in env_extra.items())), flush=True)
    try:
        for e in entries:
            if "--stats" not in e.mpirun_opts:
                e.mpirun_opts.append("--stats")
            ok, msg, text, seconds = runtests.run_entry(e, args)
            good = ok if not e.xfail else not ok
            verdict = ("PASS" if ok else "FAIL") if not e.xfail else ("XFAIL" if not ok else "XPASS")
            print("%-5s %-44s %6.1f s  %s" % (verdict, e.id, seconds, "" if ok else msg), flush=True)
            if not good:
                failed.append(e.id)
                if args.verbose or True:
                    tail = text.splitlines()[-40:]
                    sys.stdout.write("    " + "\n    ".join(tail) + "\n")
            for k, v in stats_of(text).items():
                total[k] = total.get(k, 0) + v
    finally:
        os.environ.clear()
        os.environ.update(saved)
    print("-- %s: %d tests, %d unexpected, %.0f s; counters: %s" %
          (title, len(entries), len(failed), time.monotonic() - start, fmt_stats(total)),
          flush=True)
    return failed, total


# --------------------------------------------------------------------------
# kernel loss in a private network namespace


def netloss_supported():
    if os.geteuid() != 0:
        return "needs root (unshare -n, nft)"
    for tool in ("unshare", "nft", "ip"):
        if shutil.which(tool) is None:
            return "no %s" % tool
    r = subprocess.run(["unshare", "-n", "sh", "-c",
                        "ip link set lo up && nft add table inet t"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return "cannot make a network namespace with nft rules: " + (r.stderr.strip() or "?")
    return None


def nft_loss_rules(percent):
    """nft commands dropping `percent` % of UDP datagrams arriving on lo."""
    per_mille = int(round(percent * 10))
    return [
        "nft add table inet ulmpi_loss",
        "nft add chain inet ulmpi_loss in '{ type filter hook input priority 0; }'",
        "nft add rule inet ulmpi_loss in iifname lo meta l4proto udp "
        "numgen random mod 1000 '<' %d counter drop" % per_mille,
    ]


# --------------------------------------------------------------------------
# strays


def rank_pids(marker):
    return runtests.job_processes(marker)


def udp_ports(pid):
    """(ip, port) of the UDP sockets process pid has open."""
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            m = re.match(r"socket:\[(\d+)\]", link)
            if m:
                inodes.add(m.group(1))
        with open("/proc/%d/net/udp" % pid) as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    out = []
    for line in lines:
        w = line.split()
        if len(w) < 10 or w[9] not in inodes:
            continue
        hexip, hexport = w[1].split(":")
        ip = socket.inet_ntoa(struct.pack("<I", int(hexip, 16)))
        out.append((ip, int(hexport, 16)))
    return out


def junk(rng, kind):
    """A datagram that is not the job's."""
    if kind == 0:
        return b""
    if kind == 1:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 1500)))
    # Our magic and version, both lanes, random ranks and a guessed token.
    lane = rng.randint(0, 1)
    hdr = struct.pack("<IBBHIIQIIII", 0x554D4C55, 1, lane, 0, rng.randint(0, 3),
                      rng.randint(0, 3), rng.getrandbits(64), 0, 0, 0, 0)
    return hdr + bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 200)))


def run_stray(args, entry_line):
    print("== stray: %s with datagrams from outside the job" % entry_line, flush=True)
    e = runtests.Entry(0, entry_line.split())
    marker = uuid.uuid4().hex
    env = dict(os.environ)
    env.update({"ULMPI_PATH_INCLUDE": "self,udp", "ULMPI_TEST_MARKER": marker})
    cmd = [args.mpirun, "-n", str(e.np), "--timeout", "600", "--stats",
           os.path.join(args.bindir, e.name)] + e.args
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    out = runtests.Output(proc.stdout)
    rng = random.Random(args.seed)
    ports = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        ports = []
        for pid in rank_pids(marker):
            ports += udp_ports(pid)
        if len(ports) >= 2 * e.np:
            break
        time.sleep(0.05)
    sent = 0
    problems = []
    if len(ports) < 2 * e.np:
        problems.append("found %d udp ports of the ranks, expected %d" % (len(ports), 2 * e.np))
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for rnd in range(args.strays):
            for (ip, port) in ports:
                if proc.poll() is not None:
                    break
                try:
                    s.sendto(junk(rng, rnd % 3), (ip, port))
                    sent += 1
                except OSError as ex:
                    problems.append("sendto %s:%d: %s" % (ip, port, ex))
                    break
            time.sleep(0.002)
        s.close()
    try:
        rc = proc.wait(timeout=max(1, 660 - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
        problems.append("timed out")
    out.thread.join(timeout=5)
    text = out.text()
    st = stats_of(text)
    if rc != 0:
        problems.append("mpirun exited %d" % rc)
    if not re.search(r"^\s*No Errors\s*$", text, re.M):
        problems.append('no "No Errors" line')
    if sent and st["refused"] == 0:
        problems.append("sent %d strays, no rank reports one refused" % sent)
    left = runtests.job_processes(marker)
    if left:
        problems.append("processes left: %s" % left)
    verdict = "PASS" if not problems else "FAIL"
    print("%-5s %-44s %6.1f s  sent %d strays to %d ports, ranks refused %d  %s" %
          (verdict, e.id + ".strays", time.monotonic() - start, sent, len(ports), st["refused"],
           "; ".join(problems)), flush=True)
    if problems:
        sys.stdout.write("    " + "\n    ".join(text.splitlines()[-40:]) + "\n")
    refused_lines = [l for l in text.splitlines() if "refused" in l and "path=udp" in l]
    for l in refused_lines[:8]:
        m = re.search(r"rank=(\d+).*(refused \d+ datagrams \([^)]*\))", l)
        if m:
            print("    rank %s: %s" % (m.group(1), m.group(2)))
    return [] if not problems else [e.id + ".strays"], st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="meson build dir")
    ap.add_argument("--configs", default="plain,lossy,netloss,stray")
    ap.add_argument("--np", default="2,3,4")
    ap.add_argument("--filter", default=None, help="only tests whose id matches")
    ap.add_argument("--loss", type=float, default=5.0, help="netloss: percent dropped (default 5)")
    ap.add_argument("--lossy", default="drop:0.03,corrupt:0.02,dup:0.01,reorder:0.03,seed:{seed}",
                    help="ULMPI_PATH_LOSSY for the lossy configuration")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--strays", type=int, default=300, help="rounds of strays (one per port each)")
    ap.add_argument("--stray-test", default="stress 4 20000 9")
    ap.add_argument("--timeout-scale", type=float,
                    default=float(os.environ.get("ULMPI_TEST_TIMEOUT_SCALE", "2")))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--inside-netns", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.bindir = os.path.join(os.path.abspath(args.build), "tests", "mpi")
    args.mpirun = os.path.join(os.path.abspath(args.build), "runtime", "mpirun", "mpirun")
    configs = [c for c in args.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            sys.exit("unknown configuration %s (known: %s)" % (c, ", ".join(CONFIGS)))
    nps = {int(x) for x in args.np.split(",")}
    rx = re.compile(args.filter) if args.filter else None
    entries_all = runtests.read_testlist(os.path.join(SRC, "tests", "mpi", "testlist"))
    base = {"ULMPI_PATH_INCLUDE": "self,udp"}

    if args.inside_netns:
        # Re-executed by the netloss configuration inside `unshare -n`.
        for c in ["ip link set lo up"] + nft_loss_rules(args.loss):
            subprocess.run(c, shell=True, check=True)
        failed, _ = run_list(select(entries_all, nps, rx), args, base,
                             "netloss (%g %% of UDP datagrams dropped by nft on lo)" % args.loss)
        r = subprocess.run("nft list chain inet ulmpi_loss in", shell=True, capture_output=True,
                           text=True)
        m = re.search(r"counter packets (\d+)", r.stdout)
        print("-- netloss: nft dropped %s datagrams" % (m.group(1) if m else "?"), flush=True)
        return 1 if failed else 0

    all_failed = []
    skipped = 0
    for c in configs:
        if c == "plain":
            f, _ = run_list(select(entries_all, nps, rx), args, base, "plain")
        elif c == "lossy":
            env = dict(base)
            env["ULMPI_PATH_LOSSY"] = args.lossy.format(seed=args.seed)
            env["ULMPI_PATH_LOSSY_PATHS"] = "udp"
            f, _ = run_list(select(entries_all, nps, rx), args, env, "lossy")
        elif c == "netloss":
            why = netloss_supported()
            if why:
                print("== netloss: SKIPPED: %s" % why, flush=True)
                skipped += 1
                continue
            cmd = ["unshare", "-n", sys.executable, os.path.abspath(__file__), "--inside-netns",
                   "--build", args.build, "--np", args.np, "--loss", str(args.loss),
                   "--timeout-scale", str(args.timeout_scale)]
            if args.filter:
                cmd += ["--filter", args.filter]
            r = subprocess.run(cmd)
            f = [] if r.returncode == 0 else ["netloss"]
        else:
            f, _ = run_stray(args, args.stray_test)
        all_failed += f
    print("== %d unexpected result(s)%s" % (len(all_failed),
                                            (": " + " ".join(all_failed)) if all_failed else ""))
    if all_failed:
        return 1
    return 77 if skipped == len(configs) else 0  # 77: meson's "skipped"


if __name__ == "__main__":
    sys.exit(main())
