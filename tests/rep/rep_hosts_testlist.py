#!/usr/bin/env python3
"""Runs a testlist (tests/mpi/runtests.py format) across network-namespace hosts.

    rep_hosts_testlist.py --mpirun M --testlist F --bindir D [--hosts 3]
                          [--filter RE] [--netns-cluster PATH]

Makes a cluster of H hosts (tests/ft/netns_hosts.py: needs root, else exit
77; made under /tmp/ulmpi-netns.lock, which is taken unless a caller holds
it), writes a wrapper that starts M on the first host over udp with the
hosts' slots (2 a host), and runs every test of F (or those whose id matches
RE) through runtests.py's table mode with it: each test's own checks
(exit status, "No Errors", its output rules, no process or /dev/shm file of
the job left) and watchdog (its timeout, mpirun's --timeout) hold. The
replicated testlist (tests/rep/testlist_mpi) then runs every program with
the replicas of each rank on different hosts (docs/replication.md,
"Placement"). Exit status: runtests.py's (0 when every test passed).
"""

import argparse
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ft"))
from netns_hosts import open_cluster  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--testlist", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--filter")
    ap.add_argument("--netns-cluster",
                    default=os.path.join(HERE, "..", "..", "scripts", "netns-cluster"))
    a = ap.parse_args()
    lock, cluster = open_cluster(a.netns_cluster, a.hosts)
    try:
        with tempfile.TemporaryDirectory(prefix="ulmpi-rep-hosts-") as tmp:
            wrapper = os.path.join(tmp, "mpirun")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nexec %s \"$@\"\n" %
                        " ".join(shlex.quote(x) for x in cluster.mpirun_base(a.mpirun)))
            os.chmod(wrapper, 0o755)
            cmd = [sys.executable, os.path.join(HERE, "..", "mpi", "runtests.py"),
                   "--testlist", a.testlist, "--bindir", a.bindir, "--mpirun", wrapper]
            if a.filter:
                cmd += ["--filter", a.filter]
            print("hosts: %s; mpirun: %s" % (" ".join(cluster.hosts),
                                             " ".join(cluster.mpirun_base(a.mpirun))), flush=True)
            return subprocess.run(cmd).returncode
    finally:
        cluster.close()
        if lock is not None:
            lock.close()


if __name__ == "__main__":
    sys.exit(main())
