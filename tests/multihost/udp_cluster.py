#!/usr/bin/env python3
"""The udp path across hosts: MPI jobs on a cluster of network namespaces.

Usage:
  udp_cluster.py [--build DIR] [--hosts N] [--keep] CASE...      (CASE: all, or below)
Environment (set by meson; --build fills in what is missing): MPIRUN,
NETNS_CLUSTER, MPITEST_DIR, MPITEST_LIST.

Each run makes one cluster (scripts/netns-cluster: N hosts, default 4, on a
bridge, eth0 MTU 1500) and runs mpirun inside its first host with the launch
agent `ip netns exec {host}`, 2 ranks per host, ULMPI_PATH_INCLUDE=self,shm,udp
and ULMPI_UDP_SUBNET set to the cluster's subnet. Cases:

  programs   the tests/mpi programs (each at its largest plain size of 2..8
             ranks, ranks spread over the hosts): all pass
  loss       the same with nft dropping 5 % of the UDP packets on every host:
             all pass, and ULM resent what nft dropped
  lossy      the same with the lossy decorator on udp (corrupt, drop, dup,
             reorder): all pass, CRC failures seen and repaired
  link_down  a host's link goes down for good in the middle of a job: the job
             ends with a message naming the host (the daemon keepalive) or
             the two ranks and the udp path (ULM's retries, made short here),
             and nothing is left on any host
  strays     datagrams from outside the job (this namespace, over the bridge)
             to every udp port of every rank: the job passes, the ranks count
             them refused
  ofi_smoke  the ofi path (docs/ofi.md) instead of udp, once per libfabric
             provider: tcp;ofi_rxm and udp;ofi_rxd on eth0 (path_include
             self,shm,ofi), shm between the ranks of a host with udp between
             hosts (self,udp,ofi); a job shows ofi carried fragments, then a
             few programs pass
  ofi_tcp, ofi_udp, ofi_shm
             every program over that provider

The cluster is torn down however the run ends. Without root or network
namespaces every case is skipped (exit 77). Exit 0 when every case passed.
"""

import argparse
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from proc_marks import pids_with_env  # noqa: E402

CASES = ["programs", "loss", "lossy", "link_down", "strays", "ofi_smoke", "ofi_tcp", "ofi_udp",
         "ofi_shm"]
AGENT = "ip netns exec {host}"


class Skip(Exception):
    pass


class Failure(Exception):
    pass


def env_or(name, default):
    v = os.environ.get(name)
    return v if v else default


# ------------------------------------------------------------------ cluster

class Cluster:
    def __init__(self, tool, nhosts):
        if os.geteuid() != 0:
            raise Skip("needs root to make network namespaces")
        p = subprocess.run([tool, "check"], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise Skip("cannot make network namespaces: " + (p.stdout + p.stderr).strip())
        self.tool_path = tool
        self.name = "ud" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                                   for _ in range(5))
        self.made = True
        self.tool("create", self.name, str(nhosts))
        self.hosts = [self.name + str(i) for i in range(nhosts)]
        root = self.tool("root-addr", self.name).strip()
        self.root_addr = root
        self.subnet = root.rsplit(".", 1)[0] + ".0/24"

    def tool(self, *args):
        p = subprocess.run([self.tool_path] + list(args), capture_output=True, text=True,
                           timeout=120)
        if p.returncode != 0:
            raise Failure("netns-cluster %s failed: %s%s" % (" ".join(args), p.stdout, p.stderr))
        return p.stdout

    def close(self):
        if self.made:
            subprocess.run([self.tool_path, "teardown", self.name], capture_output=True,
                           timeout=120)
            self.made = False

    def nft_dropped(self):
        total = 0
        for h in self.hosts:
            # Every loss table (ulmpi_loss, and ulmpi_loss_rK per rail) has
            # a counter named dropped.
            p = subprocess.run(["ip", "netns", "exec", h, "nft", "list", "counters"],
                               capture_output=True, text=True, timeout=30)
            for m in re.finditer(r"counter dropped \{\s*packets (\d+)", p.stdout):
                total += int(m.group(1))
        return total


# ------------------------------------------------------------------ jobs

def marked(mark):
    return pids_with_env("ULMPI_TEST_MARKER", mark)


class Job:
    """mpirun started in the cluster's first host; output collected."""

    def __init__(self, ctx, args, params=(), np_=8, slots=2):
        self.mark = uuid.uuid4().hex
        env = {k: v for k, v in os.environ.items() if not k.startswith("ULMPI_")}
        env["ULMPI_TEST_MARKER"] = self.mark
        cl = ctx.cluster
        hosts = ",".join("%s:%d" % (h, slots) for h in cl.hosts)
        # Which interfaces udp uses: the cluster's subnet, unless the cluster
        # says otherwise (several rails: udp_rails.py).
        udp = getattr(cl, "udp_params", None) or ["udp_subnet=" + cl.subnet]
        # The paths: self, shm and udp, unless a case says otherwise (ofi_*).
        paths = getattr(cl, "path_params", None) or ["path_include=self,shm,udp"] + udp
        self.argv = (["ip", "netns", "exec", cl.hosts[0], ctx.mpirun, "--launch-agent", AGENT,
                      "--boot-if", cl.subnet, "-H", hosts] +
                     [x for p in paths for x in ("--param", p)] + ["--stats"] +
                     [x for p in params for x in ("--param", p)] + ["-n", str(np_)] + args)
        self.start = time.time()
        self.p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in iter(self.p.stdout.readline, b""):
            with self.lock:
                self.lines.append(line.decode(errors="replace"))

    def text(self):
        with self.lock:
            return "".join(self.lines)

    def finish(self, limit):
        try:
            rc = self.p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
            rc = None
        self.reader.join(5)
        left = []
        deadline = time.time() + 5
        while time.time() < deadline:
            left = marked(self.mark)
            if not left:
                break
            time.sleep(0.1)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return rc, self.text(), time.time() - self.start, left


def counters(text):
    tot = {"retransmits": 0, "crc_header_fail": 0, "crc_payload_fail": 0, "duplicates": 0,
           "refused": 0}
    for line in text.splitlines():
        if not line.startswith("ulmpi-stats"):
            continue
        # The link of each peer counts what reliability did (whatever the
        # rails under it): "ulmpi-stats rank=R peer=P link=alive ...".
        if " link=" in line:
            for k in ("retransmits", "crc_header_fail", "crc_payload_fail", "duplicates"):
                m = re.search(r"\b%s=(\d+)" % k, line)
                tot[k] += int(m.group(1)) if m else 0
        m = re.search(r"refused (\d+) datagrams", line)
        if m:
            tot["refused"] += int(m.group(1))
    return tot


def testlist_programs(path):
    """Per program and arguments, its largest plain run of 2..8 ranks."""
    best = {}
    with open(path) as f:
        for line in f:
            words = line.split("#")[0].split()
            if len(words) < 2 or not words[1].isdigit() or not 2 <= int(words[1]) <= 8:
                continue
            if any("=" in w or w == "xfail" for w in words[2:]):
                continue
            if words[0] == "init_thread":
                continue  # compares the processor name with gethostname(): one host only
            key = (words[0],) + tuple(words[2:])
            if key not in best or int(best[key][1]) < int(words[1]):
                best[key] = words
    return list(best.values())


def run_programs(ctx, title, params=(), only=None):
    progs = testlist_programs(ctx.testlist)
    if only is not None:
        progs = [w for w in progs if w[0] in only]
    failed = []
    total = {}
    t0 = time.time()
    for words in progs:
        exe = os.path.join(ctx.mpitest_dir, words[0])
        job = Job(ctx, ["--map-by", "node", "--timeout", "240", exe] + words[2:], params,
                  np_=int(words[1]))
        rc, text, secs, left = job.finish(300)
        ok = rc == 0 and re.search(r"^No Errors$", text, re.M) and not left
        c = counters(text)
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
        print("  %-5s %-34s %6.1f s  resent %d, crc %d+%d, dup %d" %
              ("PASS" if ok else "FAIL", " ".join(words), secs, c["retransmits"],
               c["crc_header_fail"], c["crc_payload_fail"], c["duplicates"]), flush=True)
        if not ok:
            failed.append(" ".join(words))
            print("    rc %s, left %s\n    %s" % (rc, left, "\n    ".join(text.splitlines()[-30:])))
    print("  %s: %d programs, %d failed, %.0f s; %s" %
          (title, len(progs), len(failed), time.time() - t0,
           ", ".join("%s %d" % kv for kv in total.items())), flush=True)
    return failed, total


# ------------------------------------------------------------------ cases

def case_programs(ctx):
    failed, _ = run_programs(ctx, "programs")
    if failed:
        raise Failure("failed: " + "; ".join(failed))


def case_loss(ctx):
    ctx.cluster.tool("loss", ctx.cluster.name, "5")
    try:
        failed, total = run_programs(ctx, "5 % loss")
        dropped = ctx.cluster.nft_dropped()
    finally:
        ctx.cluster.tool("loss", ctx.cluster.name, "off")
    print("  nft dropped %d UDP packets" % dropped)
    if failed:
        raise Failure("failed under 5 %% loss: " + "; ".join(failed))
    if dropped == 0 or total.get("retransmits", 0) == 0:
        raise Failure("no loss happened (nft dropped %d, resent %d)" %
                      (dropped, total.get("retransmits", 0)))


def case_lossy(ctx):
    spec = "path_lossy=corrupt:0.02,drop:0.02,dup:0.01,reorder:0.02,seed:%d" % ctx.seed
    failed, total = run_programs(ctx, "lossy", [spec, "path_lossy_paths=udp"])
    if failed:
        raise Failure("failed with the lossy decorator: " + "; ".join(failed))
    if total.get("crc_header_fail", 0) + total.get("crc_payload_fail", 0) == 0:
        raise Failure("no corrupted fragment was seen")


def case_link_down(ctx):
    cl = ctx.cluster
    stress = os.path.join(ctx.mpitest_dir, "stress")
    variants = [
        ("daemon keepalive", ["boot_keepalive=3"],
         r"host '%s' lost" % cl.hosts[3]),
        ("udp retries", ["boot_keepalive=600", "ulm_max_retries=8",
                         "ulm_retry_max_timeout_us=100000"],
         r"lost contact with rank \d+: no path can reach it \(rank \d+ does not answer: .*paths: udp"),
    ]
    for title, params, want in variants:
        job = Job(ctx, ["--timeout", "120", stress, "100000000", "3"], params)
        time.sleep(4)  # wired up and busy
        if job.p.poll() is not None:
            raise Failure("the job ended before the link went down:\n" + job.text())
        cl.tool("down", cl.name, cl.hosts[3])
        t = time.time()
        try:
            rc, text, _, left = job.finish(150)
        finally:
            cl.tool("up", cl.name, cl.hosts[3])
        took = time.time() - t
        line = next((l for l in text.splitlines() if re.search(want, l)), None)
        print("  %-18s rc %s after %.1f s: %s" % (title, rc, took, line or "(no message)"))
        if rc in (0, None) or line is None or left:
            raise Failure("%s: rc %s, left %s, expected a line matching %r\n%s" %
                          (title, rc, left, want, "\n".join(text.splitlines()[-30:])))


def udp_ports(pid):
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            if m:
                inodes.add(m.group(1))
        with open("/proc/%d/net/udp" % pid) as f:
            rows = f.read().splitlines()[1:]
    except OSError:
        return []
    out = []
    for row in rows:
        w = row.split()
        if len(w) > 9 and w[9] in inodes:
            ip, port = w[1].split(":")
            out.append((socket.inet_ntoa(struct.pack("<I", int(ip, 16))), int(port, 16)))
    return out


def case_strays(ctx):
    stress = os.path.join(ctx.mpitest_dir, "stress")
    job = Job(ctx, ["--timeout", "240", stress, "20000", "5"])
    ports = []
    deadline = time.time() + 60
    while time.time() < deadline and job.p.poll() is None:
        ports = [pp for pid in marked(job.mark) for pp in udp_ports(pid)]
        if len(ports) >= 16:
            break
        time.sleep(0.1)
    ports = [pp for pp in set(ports) if not pp[0].startswith("127.")]
    rng = random.Random(ctx.seed)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0
    for rnd in range(200):
        for ip, port in ports:
            kind = rnd % 3
            if kind == 0:
                data = os.urandom(rng.randint(1, 1400))
            elif kind == 1:
                data = b""
            else:  # our magic and version with a guessed token
                data = struct.pack("<IBBHIIQIIII", 0x554D4C55, 1, rng.randint(0, 1), 0,
                                   rng.randint(0, 7), rng.randint(0, 7), rng.getrandbits(64),
                                   0, 0, 0, 0) + os.urandom(rng.randint(0, 200))
            try:
                s.sendto(data, (ip, port))
                sent += 1
            except OSError:
                pass
        time.sleep(0.002)
    s.close()
    rc, text, secs, left = job.finish(300)
    c = counters(text)
    print("  sent %d datagrams from outside the job to %d ports; the ranks refused %d; job rc %s "
          "in %.0f s" % (sent, len(ports), c["refused"], rc, secs))
    if rc != 0 or not re.search(r"^No Errors$", text, re.M) or left:
        raise Failure("the job did not pass: rc %s, left %s\n%s" %
                      (rc, left, "\n".join(text.splitlines()[-30:])))
    if len(ports) < 16 or c["refused"] == 0:
        raise Failure("found %d udp ports, %d refused" % (len(ports), c["refused"]))


# ------------------------------------------------------------------ main

class Ctx:
    pass


# The ofi path across the hosts, per libfabric provider: the path parameters
# of every job, and how to tell from --stats that ofi carried the traffic.
OFI = {
    "tcp": ["path_include=self,shm,ofi", "ofi_provider=tcp;ofi_rxm", "ofi_iface=eth0"],
    "udp": ["path_include=self,shm,ofi", "ofi_provider=udp;ofi_rxd", "ofi_iface=eth0"],
    # shm between the ranks of a host, udp between hosts.
    "shm": ["path_include=self,udp,ofi", "ofi_provider=shm", "ofi_everywhere=on"],
}
# udp;ofi_rxd is slow here (bigmsg 3 takes a minute): two quick programs.
OFI_SMOKE = {"tcp": ("p2p_blocking", "bigmsg", "wildcard", "datatypes"),
             "udp": ("wildcard", "datatypes"),
             "shm": ("p2p_blocking", "bigmsg", "wildcard", "datatypes")}


def ofi_used(ctx):
    """Runs one job and checks that the ofi path moved fragments."""
    job = Job(ctx, ["--map-by", "node", "--timeout", "120",
                    os.path.join(ctx.mpitest_dir, "p2p_blocking")], np_=8)
    rc, text, secs, left = job.finish(150)
    sent = sum(int(m.group(1)) for m in
               re.finditer(r"^ulmpi-stats rank=\d+ path=ofi frags_sent=(\d+)", text, re.M))
    if rc != 0 or sent == 0:
        raise Failure("ofi carried nothing (rc %s, %d fragments):\n%s" %
                      (rc, sent, "\n".join(text.splitlines()[-20:])))
    desc = re.search(r"\(ofi: (.*)\)$", text, re.M)
    print("  ofi: %s; %d fragments in an 8-rank job" % (desc.group(1) if desc else "?", sent))


def ofi_case(ctx, provider, only):
    ctx.cluster.path_params = OFI[provider]
    try:
        ofi_used(ctx)
        failed, _ = run_programs(ctx, "ofi " + provider, only=only)
    finally:
        ctx.cluster.path_params = None
    if failed:
        raise Failure("failed over ofi %s: %s" % (provider, "; ".join(failed)))


def case_ofi_smoke(ctx):
    for provider in ("tcp", "udp", "shm"):
        ofi_case(ctx, provider, OFI_SMOKE[provider])


def case_ofi_tcp(ctx):
    ofi_case(ctx, "tcp", None)


def case_ofi_udp(ctx):
    ofi_case(ctx, "udp", None)


def case_ofi_shm(ctx):
    ofi_case(ctx, "shm", None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*", default=["all"])
    ap.add_argument("--build", default=None, help="meson build dir (for the paths)")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--limit", type=int, default=int(os.environ.get("MH_CASE_LIMIT", "3000")))
    args = ap.parse_args()
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    b = os.path.abspath(args.build) if args.build else None
    ctx = Ctx()
    ctx.mpirun = env_or("MPIRUN", b and os.path.join(b, "runtime", "mpirun", "mpirun"))
    ctx.tool = env_or("NETNS_CLUSTER", os.path.join(src, "scripts", "netns-cluster"))
    ctx.mpitest_dir = env_or("MPITEST_DIR", b and os.path.join(b, "tests", "mpi"))
    ctx.testlist = env_or("MPITEST_LIST", os.path.join(src, "tests", "mpi", "testlist"))
    ctx.seed = args.seed
    if not ctx.mpirun or not ctx.mpitest_dir:
        sys.exit("give --build DIR or set MPIRUN and MPITEST_DIR")
    cases = CASES if "all" in args.cases else args.cases
    for c in cases:
        if c not in CASES:
            sys.exit("unknown case %s (cases: %s)" % (c, " ".join(CASES)))

    def stop(signum, frame):
        raise Failure("stopped by signal %d" % signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGALRM, stop)
    signal.alarm(args.limit)
    ctx.cluster = None
    failed = []
    try:
        ctx.cluster = Cluster(ctx.tool, args.hosts)
        print("cluster %s: %d hosts, %s" % (ctx.cluster.name, args.hosts, ctx.cluster.subnet))
        for c in cases:
            print("== %s" % c, flush=True)
            t = time.time()
            try:
                globals()["case_" + c](ctx)
                print("== %s: ok (%.0f s)" % (c, time.time() - t), flush=True)
            except Failure as e:
                print("== %s: FAIL: %s" % (c, e), flush=True)
                failed.append(c)
    except Skip as e:
        print("SKIP: %s" % e)
        return 77
    except Failure as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        signal.alarm(0)
        if ctx.cluster is not None:
            ctx.cluster.close()
    print("failed: " + " ".join(failed) if failed else "ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
