"""What the randomized kill drivers share for runs across network-namespace
hosts (kill_anywhere.py, ftmpi/ftmpi_random.py): the cluster, made once
under /tmp/ulmpi-netns.lock, the mpirun command line that spreads a job
over it, and finding a host's daemon to kill.

    lock, cluster = open_cluster(tool, nhosts)
                                        # take_lock() (None: the caller holds it),
                                        # then Cluster(tool, nhosts): SystemExit(77)
                                        # when it cannot be had (the lock let go)
    argv = cluster.mpirun_argv(mpirun, np, limit) + program
    argv = cluster.mpirun_base(mpirun) + options     # without -n, --timeout
    argv = cluster.mpirun_base(mpirun, first=1, slots=8) + options
                                        # no rank on mpirun's host (first), 8 a host
    pids = cluster.daemons_on(host_index, marked_pids(mark))
    cluster.close()

marked_pids(mark) lists the processes whose environment holds
ULMPI_TEST_MARKER=mark (every process of a job started with it, daemons and
forked ones included), whichever host namespace they run in.
"""

import fcntl
import os
import sys
import random
import subprocess
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from proc_marks import pids_with_env  # noqa: E402

LOCK = "/tmp/ulmpi-netns.lock"
SLOTS = 2  # ranks a host


def ancestors():
    pids = []
    pid = os.getpid()
    while pid > 1:
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        pids.append(pid)
    return pids


def held_by_caller():
    """Whether a process we run under holds LOCK (`flock LOCK meson test`),
    or ULMPI_NETNS_LOCKED=1 says so: taking it again would wait forever."""
    if os.environ.get("ULMPI_NETNS_LOCKED") == "1":
        return True
    try:
        st = os.stat(LOCK)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    mine = set(ancestors())
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK" or "->" in parts:
            continue
        dev_inode = parts[5].split(":")
        if len(dev_inode) == 3 and int(dev_inode[2]) == st.st_ino and int(parts[4]) in mine:
            return True
    return False


def take_lock():
    """Holds LOCK (unless the caller does already): None or the open file."""
    if held_by_caller():
        return None
    lock = open(LOCK, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def marked_pids(mark):
    return pids_with_env("ULMPI_TEST_MARKER", mark)


def open_cluster(tool, nhosts):
    """take_lock(), then a Cluster of nhosts hosts: (lock, cluster). When the
    cluster cannot be made the lock is let go before the error goes up."""
    lock = take_lock()
    try:
        return lock, Cluster(tool, nhosts)
    except BaseException:
        if lock is not None:
            lock.close()
        raise


def comm_of(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def host_of(pid):
    """The network namespace name of pid (ip netns identify)."""
    p = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True)
    return p.stdout.strip()


class Cluster:
    def __init__(self, tool, nhosts):
        if os.geteuid() != 0:
            raise SystemExit(self.skip("needs root to make network namespaces"))
        p = subprocess.run([tool, "check"], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise SystemExit(self.skip("cannot make network namespaces: " +
                                       (p.stdout + p.stderr).strip()))
        self.tool = tool
        self.name = "ka" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                                   for _ in range(5))
        self.run("create", self.name, str(nhosts))
        self.hosts = [self.name + str(i) for i in range(nhosts)]
        root = self.run("root-addr", self.name).strip()
        self.subnet = root.rsplit(".", 1)[0] + ".0/24"

    @staticmethod
    def skip(why):
        print("SKIP: " + why)
        return 77

    def run(self, *args):
        p = subprocess.run([self.tool] + list(args), capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError("netns-cluster %s: %s%s" % (" ".join(args), p.stdout, p.stderr))
        return p.stdout

    def mpirun_base(self, mpirun, first=0, slots=SLOTS):
        """mpirun started on the first host, `slots` ranks a host from host
        `first` on (first=1: none on mpirun's host, every process under a
        daemon), over udp (the job's size and limit still to add)."""
        hosts = ",".join("%s:%d" % (h, slots) for h in self.hosts[first:])
        return ["ip", "netns", "exec", self.hosts[0], mpirun,
                "--launch-agent", "ip netns exec {host}", "--boot-if", self.subnet,
                "-H", hosts, "--param", "path_include=self,shm,udp",
                "--param", "udp_subnet=" + self.subnet]

    def mpirun_argv(self, mpirun, np, limit):
        return self.mpirun_base(mpirun) + ["-n", str(np), "--timeout", str(int(limit))]

    @staticmethod
    def ranks_of(host_index, np):
        return [r for r in range(np) if r // SLOTS == host_index]

    def daemons_on(self, host_index, pids):
        """The ulmpi daemons among `pids` that run on host `host_index`."""
        host = self.hosts[host_index]
        return [pid for pid in pids if comm_of(pid).startswith("ulmpi_daemon")
                and host_of(pid) == host]

    def close(self):
        subprocess.run([self.tool, "teardown", self.name], capture_output=True, timeout=120)
