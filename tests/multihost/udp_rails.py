#!/usr/bin/env python3
"""Multi-rail udp: jobs over two network rails between namespace hosts.

Usage:
  udp_rails.py [--build DIR] [--long] [--keep] CASE...      (CASE: all, or below)
Environment (set by meson; --build fills in what is missing): MPIRUN,
NETNS_CLUSTER, MPITEST_DIR, MPITEST_LIST, RAIL_STREAM.

Each run makes one cluster (scripts/netns-cluster --rails 2: every host has
eth0 and eth1 on two bridges and subnets) and runs mpirun inside its first
host with ULMPI_UDP_IF=eth0,eth1: udp is two paths, udp0 and udp1, which
ULM's per-peer link stripes over and fails over between. Cases:

  programs_loss  the tests/mpi programs (as udp_cluster.py runs them) with
                 nft dropping 5 % of the UDP packets arriving on rail 1 only:
                 all pass, and both rails carried data
  stream_down    a checked stream (rail_stream) between two hosts; rail 1 of
                 the receiving host goes down in the middle, and up again
                 later: every byte arrives, rank 0's udp1 was declared down and
                 taken back, and data flowed over it again after; the longest
                 pause after the link went down is printed (a figure, not a
                 pass/fail check: timings are for benchmarks)
  ofi_udp_down   stream_down over two kinds of path: udp on eth0, ofi
                 (tcp;ofi_rxm) on eth1; both carry the stream, ofi goes down
                 and comes back (skipped when ofi is not built)
  ofi_read_down  a link taken down in the middle of single-copy reads: udp on
                 eth0, ofi (tcp;ofi_rxm) on eth1; eth0 of the receiving host
                 goes down, so the stream's messages go as rendezvous reads
                 over ofi (fi_read, a read per message); then, after a seeded
                 24-48 MiB over eth1 alone, eth1 goes down with reads in
                 flight and eth0 comes back: the reads in flight fail over
                 (the receiver gives them up and the sender streams those
                 messages over udp); every byte arrives, well before the
                 path's 60 s read limit, and eth1 is taken back after it
                 comes up (skipped without ofi)
  stress_down    tests/mpi/stress (random sizes, tags and sources, data
                 checked) between two hosts, with rail 1 down and up again in
                 the middle: passes

--long makes the stream 1 GiB and the stress 100,000 messages (suite long);
the default sizes keep each case under a minute. Without root or network
namespaces every case is skipped (exit 77).
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import udp_cluster as uc  # noqa: E402

CASES = ["programs_loss", "stream_down", "stress_down", "ofi_udp_down", "ofi_read_down"]


class RailCluster(uc.Cluster):
    """A netns cluster whose hosts have two rails (eth0, eth1)."""

    def __init__(self, tool, nhosts):
        if os.geteuid() != 0:
            raise uc.Skip("needs root to make network namespaces")
        p = subprocess.run([tool, "check"], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise uc.Skip("cannot make network namespaces: " + (p.stdout + p.stderr).strip())
        self.tool_path = tool
        self.name = "ur%d" % (os.getpid() % 100000)
        self.made = True
        self.tool("create", self.name, str(nhosts), "--rails", "2")
        self.hosts = [self.name + str(i) for i in range(nhosts)]
        self.subnet = self.tool("root-addr", self.name).strip().rsplit(".", 1)[0] + ".0/24"
        self.udp_params = ["udp_if=eth0,eth1"]

    def nft_dropped(self):
        total = 0
        for h in self.hosts:
            p = subprocess.run(["ip", "netns", "exec", h, "nft", "list", "counter", "inet",
                                "ulmpi_loss_r1", "dropped"], capture_output=True, text=True,
                               timeout=30)
            m = re.search(r"packets (\d+)", p.stdout)
            total += int(m.group(1)) if m else 0
        return total


def rail_lines(text, rank, peer):
    """Rank's view of its rails to peer: {name: {counter: value}}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"ulmpi-stats rank=%d peer=%d rail=(\S+) state=(\S+) (.*)" % (rank, peer), line)
        if m:
            d = {"state": m.group(2)}
            for k, v in re.findall(r"(\w+)=([\d.]+)", m.group(3)):
                d[k] = float(v)
            out[m.group(1)] = d
    return out


def rx_bytes(host, devs=("eth0", "eth1")):
    """Bytes received so far on the rails `devs` of namespace host `host`."""
    total = 0
    for dev in devs:
        p = subprocess.run(["ip", "netns", "exec", host, "cat",
                            "/sys/class/net/%s/statistics/rx_bytes" % dev],
                           capture_output=True, text=True, timeout=30)
        total += int(p.stdout.strip() or 0)
    return total


def wait_for_traffic(host, nbytes, limit=180, devs=("eth0", "eth1")):
    """Until `host` received `nbytes` more over its rails: the job is past
    MPI_Init (on a loaded machine that took 4 s, and a rail set down before
    a rank opened its paths left the rank without that path)."""
    start = rx_bytes(host, devs)
    end = time.time() + limit
    while time.time() < end and rx_bytes(host, devs) - start < nbytes:
        time.sleep(0.05)


def flap(ctx, host, down_after, up_after, events, traffic=1 << 20):
    """Takes rail 1 of `host` down `down_after` s after the job's traffic
    began, up `up_after` s later."""
    wait_for_traffic(host, traffic)
    time.sleep(down_after)
    events.append(("down", time.time()))
    ctx.cluster.tool("down", ctx.cluster.name, host, "--rail", "1")
    time.sleep(up_after)
    events.append(("up", time.time()))
    ctx.cluster.tool("up", ctx.cluster.name, host, "--rail", "1")


def two_host_job(ctx, args, params=()):
    return uc.Job(ctx, ["--map-by", "node"] + args, params, np_=2, slots=1)


def case_programs_loss(ctx):
    cl = ctx.cluster
    for h in cl.hosts:
        cl.tool("loss", cl.name, "5", "--rail", "1", h)
    try:
        failed, total = uc.run_programs(ctx, "programs over two rails, 5 % loss on rail 1")
        dropped = cl.nft_dropped()  # before the tables (and their counters) go
    finally:
        for h in cl.hosts:
            cl.tool("loss", cl.name, "off", "--rail", "1", h)
    if failed:
        raise uc.Failure("failed: " + ", ".join(failed))
    print("  nft dropped %d datagrams on rail 1; ULM resent %d fragments" %
          (dropped, total.get("retransmits", 0)))
    if dropped == 0 or total.get("retransmits", 0) == 0:
        raise uc.Failure("no loss happened (nft dropped %d, resent %d)" %
                         (dropped, total.get("retransmits", 0)))


def case_stream_down(ctx):
    stream_flap(ctx, "udp0", "udp1")


def case_ofi_udp_down(ctx):
    if not ctx.have_ofi:
        print("  skipped: ulmpi was built without the ofi path (libfabric)")
        return
    ctx.cluster.path_params = ["path_include=self,shm,udp,ofi", "udp_if=eth0",
                               "ofi_provider=tcp;ofi_rxm", "ofi_iface=eth1"]
    try:
        stream_flap(ctx, "udp", "ofi")
    finally:
        ctx.cluster.path_params = None


def case_ofi_read_down(ctx):
    if not ctx.have_ofi:
        print("  skipped: ulmpi was built without the ofi path (libfabric)")
        return
    cl = ctx.cluster
    cl.path_params = ["path_include=self,shm,udp,ofi", "udp_if=eth0",
                      "ofi_provider=tcp;ofi_rxm", "ofi_iface=eth1"]
    rng = random.Random(ctx.seed)
    # eth1 goes down once this much came over it alone (eth0 down): the
    # messages are reads by then however slow the machine is.
    read_mib = 24 + rng.randint(0, 24)
    print("  seed %d: eth1 (ofi) of the receiver goes down after %d MiB over it alone" %
          (ctx.seed, read_mib))
    cl.tool("rate", cl.name, "500mbit")
    host = cl.hosts[1]
    events = []

    def flaps():
        wait_for_traffic(host, 8 << 20)
        time.sleep(1.5)
        events.append(("udp_down", time.time()))
        cl.tool("down", cl.name, host, "--rail", "0")
        wait_for_traffic(host, read_mib << 20, devs=("eth1",))
        events.append(("ofi_down", time.time()))
        cl.tool("down", cl.name, host, "--rail", "1")
        cl.tool("up", cl.name, host, "--rail", "0")
        time.sleep(4.0)
        events.append(("ofi_up", time.time()))
        cl.tool("up", cl.name, host, "--rail", "1")

    try:
        job = two_host_job(ctx, ["--timeout", "600", ctx.rail_stream, "512", "1024"],
                           ["log_level=info", "log_time=1"])
        t = threading.Thread(target=flaps, daemon=True)
        t.start()
        rc, text, secs, left = job.finish(660)
        t.join(30)
    finally:
        cl.path_params = None
        cl.tool("rate", cl.name, "off")
    if ctx.show:
        print(text)
    if rc != 0 or not re.search(r"^No Errors$", text, re.M) or left:
        raise uc.Failure("rc %s, left %s:\n%s" % (rc, left, "\n".join(text.splitlines()[-40:])))
    for line in text.splitlines():
        if re.search(r"info: rank \d+: path \S+ to rank \d+ (is down|answers again)", line):
            print("  " + line.strip())
    m = re.search(r"^stream: .*$", text, re.M)
    print("  " + (m.group(0) if m else "(no stream line)"))
    marks = dict(events)
    times = re.search(r"^stream-times: (.*)$", text, re.M)
    ts = [float(x) / 1e3 for x in times.group(1).split()] if times else []
    if "ofi_down" not in marks or not ts or ts[-1] < marks["ofi_down"]:
        raise uc.Failure("the stream ended before eth1 went down (%.1f s): nothing was tested" % secs)
    # The receiver read over ofi, and gave reads in flight up when eth1 died.
    reads = re.search(r"^ulmpi-stats rank=1 path=ofi .* gets=(\d+)", text, re.M)
    rails = rail_lines(text, 1, 0)
    ofi = rails.get("ofi", {})
    print("  rank 1 <- 0: ofi reads %s, ofi rail %s" % (
        reads.group(1) if reads else "?",
        {k: int(v) for k, v in ofi.items() if k in ("downs", "ups", "reads_given_up")}))
    if reads is None or int(reads.group(1)) == 0:
        raise uc.Failure("rank 1 read nothing over ofi: no single-copy reads were tested")
    if ofi.get("reads_given_up", 0) < 1:
        raise uc.Failure("eth1 went down and no read in flight over ofi was given up: %s" % ofi)
    after = [b - a for a, b in zip(ts, ts[1:]) if b > marks["ofi_down"]]
    pause = max(after) if after else 0.0
    print("  longest pause after eth1 went down: %.0f ms" % (1e3 * pause))
    if pause >= 30:
        raise uc.Failure("the stream stood %.0f s after eth1 went down: the reads waited for "
                         "the path's read limit instead of failing over" % pause)


def stream_flap(ctx, keep, flapped):
    """The checked stream over two rails, `flapped` (on eth1) down and up again."""
    # Both rails at 500 Mbit/s (tc tbf), as the test bed: about 5 s
    # for 512 MiB over two rails, 10 s for 1 GiB.
    total_mib = 1024 if ctx.long else 512
    ctx.cluster.tool("rate", ctx.cluster.name, "500mbit")
    # log_level=info: each rank says which rail it declared down, why, and
    # when it took it back (printed below, for whoever reads a failure).
    job = two_host_job(ctx, ["--timeout", "600", ctx.rail_stream, str(total_mib), "1024"],
                       ["log_level=info", "log_time=1"])
    events = []
    # The receiving host (rank 1, mapped by node to host 1) loses rail 1.
    t = threading.Thread(target=flap, args=(ctx, ctx.cluster.hosts[1], 1.5, 2.0, events), daemon=True)
    t.start()
    rc, text, secs, left = job.finish(660)
    t.join(30)
    ctx.cluster.tool("rate", ctx.cluster.name, "off")
    if ctx.show:
        print(text)
    if rc != 0 or not re.search(r"^No Errors$", text, re.M) or left:
        raise uc.Failure("rc %s, left %s:\n%s" % (rc, left, "\n".join(text.splitlines()[-40:])))
    # Each decision with its time after the link went down or up (the log
    # lines carry the wall clock, UTC, as the events do).
    marks = dict(events)
    for line in text.splitlines():
        m = re.match(r"(\d\d):(\d\d):(\d\d\.\d+) .*info: (rank \d+: path \S+ to rank \d+ "
                     r"(is down|answers again).*)", line)
        if m:
            at = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
            ref = "up" if m.group(5) == "answers again" else "down"
            since = at - (marks.get(ref, 0) % 86400) if ref in marks else float("nan")
            print("  %+.0f ms after %s: %s" % (1e3 * since, ref, m.group(4)))
    m = re.search(r"^stream: .*$", text, re.M)
    print("  " + (m.group(0) if m else "(no stream line)"))
    times = re.search(r"^stream-times: (.*)$", text, re.M)
    ts = [float(x) / 1e3 for x in times.group(1).split()] if times else []
    if len(events) < 2 or not ts or ts[-1] < dict(events)["up"]:
        raise uc.Failure("the stream ended before rail 1 went down and up again (%.1f s)" % secs)
    rails = rail_lines(text, 0, 1)
    r1 = rails.get(flapped)
    if r1 is None or keep not in rails:
        raise uc.Failure("rank 0 does not show rails %s and %s to rank 1:\n%s" %
                         (keep, flapped, text[-3000:]))
    print("  rank 0 -> 1: %s %s, %s %s" % (
        keep, {k: int(v) for k, v in rails[keep].items() if k in ("bytes_sent", "downs", "ups")},
        flapped, {k: int(v) for k, v in r1.items() if k in ("bytes_sent", "downs", "ups", "probes")}))
    if r1.get("downs", 0) < 1 or r1.get("ups", 0) < 1:
        raise uc.Failure("rail %s was not declared down and taken back: %s" % (flapped, r1))
    total = sum(r.get("bytes_sent", 0) for r in rails.values())
    for name in (keep, flapped):
        if rails[name].get("bytes_sent", 0) < 0.1 * total:
            raise uc.Failure("rail %s carried under a tenth of the stream: %s" % (name, rails))
    # The figure: the longest wait between two messages that spans or starts
    # within 500 ms after the link went down, against the same in the 500 ms
    # before (what the machine's own noise costs), and the rates.
    if ts:
        down = dict(events)["down"]
        up = dict(events)["up"]

        def longest(lo, hi):
            gaps = [b - a for a, b in zip(ts, ts[1:]) if b > lo and a < hi]
            return 1e3 * max(gaps) if gaps else -1

        during = [x for x in ts if down <= x < up]
        print("  longest pause within 500 ms after the link went down: %.0f ms (500 ms before: "
              "%.0f ms); messages while down: %d (%.1f MB/s), before: %.1f MB/s" % (
                  longest(down, down + 0.5), longest(down - 0.5, down), len(during),
                  len(during) * 1.048576 / (up - down),
                  len([x for x in ts if x < down]) * 1.048576 / max(1e-3, down - ts[0])))


def case_stress_down(ctx):
    # About 14,000 messages a second here: the default count outlasts the
    # flap (down at 1.5 s, up at 3.5 s) on a quiet machine.
    msgs = 100000 if ctx.long else 60000
    exe = os.path.join(ctx.mpitest_dir, "stress")
    job = two_host_job(ctx, ["--timeout", "600", exe, str(msgs), "7"])
    events = []
    t = threading.Thread(target=flap, args=(ctx, ctx.cluster.hosts[1], 1.5, 2.0, events), daemon=True)
    t.start()
    rc, text, secs, left = job.finish(660)
    ended = time.time()
    t.join(30)
    if rc != 0 or not re.search(r"^No Errors$", text, re.M) or left:
        raise uc.Failure("rc %s, left %s:\n%s" % (rc, left, "\n".join(text.splitlines()[-40:])))
    rails = rail_lines(text, 0, 1)
    downs = sum(r.get("downs", 0) for r in rails.values()) + \
        sum(r.get("downs", 0) for r in rail_lines(text, 1, 0).values())
    down_at = dict(events).get("down")
    print("  %d messages in %.1f s; rail downs seen: %d" % (msgs, secs, downs))
    if down_at is None or ended < down_at:
        raise uc.Failure("the stress ended before rail 1 went down: nothing was tested")
    if downs == 0:
        raise uc.Failure("rail 1 went down during the stress, and no rank declared a rail down")


def ofi_built(build):
    """Whether ulmpi_info of this build lists the ofi path as built."""
    p = subprocess.run([os.path.join(build, "tools", "ulmpi_info")], capture_output=True,
                       text=True, timeout=60)
    return re.search(r"^\s+ofi\s+priority\s+\d+\s+built", p.stdout + p.stderr, re.M) is not None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*", default=["all"])
    ap.add_argument("--build", default=None, help="meson build dir (for the paths)")
    ap.add_argument("--long", action="store_true", help="1 GiB stream, 100,000-message stress")
    ap.add_argument("--show", action="store_true", help="print the whole output of each job")
    ap.add_argument("--limit", type=int, default=int(os.environ.get("MH_CASE_LIMIT", "3000")))
    args = ap.parse_args()
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    b = os.path.abspath(args.build) if args.build else None
    ctx = uc.Ctx()
    ctx.mpirun = uc.env_or("MPIRUN", b and os.path.join(b, "runtime", "mpirun", "mpirun"))
    ctx.tool = uc.env_or("NETNS_CLUSTER", os.path.join(src, "scripts", "netns-cluster"))
    ctx.mpitest_dir = uc.env_or("MPITEST_DIR", b and os.path.join(b, "tests", "mpi"))
    ctx.testlist = uc.env_or("MPITEST_LIST", os.path.join(src, "tests", "mpi", "testlist"))
    ctx.rail_stream = uc.env_or("RAIL_STREAM", b and os.path.join(b, "tests", "multihost", "rail_stream"))
    ctx.long = args.long
    ctx.show = args.show
    ctx.have_ofi = os.environ.get("HAVE_OFI") == "1" or (
        "HAVE_OFI" not in os.environ and b is not None and ofi_built(b))
    ctx.seed = int(os.environ.get("ULMPI_TEST_SEED", "3"))
    if not ctx.mpirun or not ctx.mpitest_dir or not ctx.rail_stream:
        sys.exit("give --build DIR or set MPIRUN, MPITEST_DIR and RAIL_STREAM")
    cases = CASES if "all" in args.cases else args.cases
    for c in cases:
        if c not in CASES:
            sys.exit("unknown case %s (cases: %s)" % (c, " ".join(CASES)))

    def stop(signum, frame):
        raise uc.Failure("stopped by signal %d" % signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGALRM, stop)
    signal.alarm(args.limit)
    ctx.cluster = None
    failed = []
    try:
        ctx.cluster = RailCluster(ctx.tool, 2 if cases != ["programs_loss"] else 4)
        print("cluster %s: %d hosts, two rails" % (ctx.cluster.name, len(ctx.cluster.hosts)))
        for c in cases:
            print("== %s" % c, flush=True)
            t = time.time()
            try:
                globals()["case_" + c](ctx)
                print("== %s: ok (%.0f s)" % (c, time.time() - t), flush=True)
            except uc.Failure as e:
                print("== %s: FAIL: %s" % (c, e), flush=True)
                failed.append(c)
    except uc.Skip as e:
        print("SKIP: %s" % e)
        return 77
    except uc.Failure as e:
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
