#!/usr/bin/env python3
"""Launcher tests: mpirun with non-MPI programs.

Usage: launcher_test.py CASE   (environment: MPIRUN, MPIEXEC, BOOT_CLIENT)

Every case runs mpirun under a watchdog (subprocess timeout; meson adds its
own), checks exit status and messages, and then checks that no process of the
job is left: each run carries a unique ULMPI_TEST_MARK in its environment and
/proc is searched for it. Exits 0 on success, 77 (skip) or 1 with a reason.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from proc_marks import pids_with_env  # noqa: E402

MPIRUN = os.environ["MPIRUN"]
MPIEXEC = os.environ.get("MPIEXEC", MPIRUN)
CLIENT = os.environ["BOOT_CLIENT"]
WATCHDOG = 20  # seconds for any single mpirun


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, what, res=None):
    if not cond:
        extra = ""
        if res is not None:
            extra = "\n--- rc %s\n--- stdout\n%s--- stderr\n%s" % (res.rc, res.out, res.err)
        raise Failure(what + extra)


class Result:
    def __init__(self, rc, out, err, elapsed):
        self.rc, self.out, self.err, self.elapsed = rc, out, err, elapsed


def marked_processes(mark):
    """Pids whose environment holds ULMPI_TEST_MARK=mark (zombies have none)."""
    return pids_with_env("ULMPI_TEST_MARK", mark)


def assert_no_leftovers(mark):
    deadline = time.time() + 2.0
    while True:
        left = marked_processes(mark)
        if not left:
            return
        if time.time() > deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            raise Failure("processes left after mpirun ended: %s" % left)
        time.sleep(0.05)


def job_env(extra=None, drop=()):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("ULMPI_") or k == "MPIEXEC_TIMEOUT" or k in drop:
            del env[k]
    # No spawn slots (mpirun keeps some by default): these jobs check the
    # launcher contract of the job's own ranks (ULMPI_SIZE = -n), with raw
    # bootstrap clients that know nothing of slots; tests/spawn has those.
    env["ULMPI_SPAWN_SLOTS"] = "0"
    env.update(extra or {})
    return env


def run(args, extra_env=None, stdin=subprocess.DEVNULL, drop_env=(), prog=None):
    """Runs mpirun ARGS and waits; returns a Result. Checks for leftovers."""
    mark = uuid.uuid4().hex
    env = job_env(extra_env, drop_env)
    env["ULMPI_TEST_MARK"] = mark
    start = time.time()
    if isinstance(stdin, str):
        data, stdin = stdin.encode(), subprocess.PIPE
    else:
        data = None
    p = subprocess.Popen([prog or MPIRUN] + args, stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    try:
        out, err = p.communicate(data, timeout=WATCHDOG)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise Failure("mpirun %s hung (killed after %d s)\n%s%s" %
                      (" ".join(args), WATCHDOG, out.decode(errors="replace"),
                       err.decode(errors="replace")))
    res = Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                 time.time() - start)
    assert_no_leftovers(mark)
    return res


def start(args, extra_env=None):
    """Starts mpirun ARGS in the background: (Popen, mark)."""
    mark = uuid.uuid4().hex
    env = job_env(extra_env)
    env["ULMPI_TEST_MARK"] = mark
    p = subprocess.Popen([MPIRUN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    return p, mark


def wait_ready(p, count):
    """Reads stdout until COUNT lines starting with 'ready' arrived."""
    seen = 0
    deadline = time.time() + WATCHDOG
    lines = []
    while seen < count:
        if time.time() > deadline:
            p.kill()
            raise Failure("ranks never became ready: %r" % lines)
        line = p.stdout.readline().decode()
        if not line:
            raise Failure("mpirun ended before the ranks were ready: %r" % lines)
        lines.append(line)
        if line.startswith("ready"):
            seen += 1


def finish(p, mark, limit):
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Failure("mpirun did not end within %s s" % limit)
    assert_no_leftovers(mark)
    return Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), 0)


# ---------------------------------------------------------------- the cases

def case_nonmpi_success():
    r = run(["-n", "4", "hostname"])
    check(r.rc == 0, "hostname job failed", r)
    check(len(r.out.splitlines()) == 4, "expected 4 lines", r)
    check(r.err == "", "mpirun printed something on success", r)


def case_mpiexec_name():
    r = run(["-n", "2", "true"], prog=MPIEXEC)
    check(r.rc == 0 and r.err == "", "mpiexec -n 2 true failed", r)


def case_env_contract():
    r = run(["-n", "3", "sh", "-c",
             "echo $ULMPI_RANK $ULMPI_SIZE $ULMPI_LOCAL_RANK $ULMPI_LOCAL_SIZE $ULMPI_NODE_ID "
             "$ULMPI_NUM_NODES $ULMPI_HOST $ULMPI_JOBID $ULMPI_BOOT_ADDR $ULMPI_JOB_SECRET "
             "$ULMPI_UNIVERSE_SIZE $ULMPI_APPNUM"],
            extra_env={"ULMPI_RESTARTED": "1", "ULMPI_RANK": "77"})
    check(r.rc == 0, "env job failed", r)
    rows = sorted(line.split() for line in r.out.splitlines())
    check(len(rows) == 3, "expected 3 lines", r)
    host = os.uname().nodename
    jobids = set()
    for i, row in enumerate(rows):
        check(len(row) == 12, "a contract variable is missing", r)
        rank, size, lrank, lsize, node, nnodes, h, jobid, addr, secret, universe, app = row
        check(rank == str(i) and size == "3" and lrank == str(i) and lsize == "3", "ranks", r)
        check(node == "0" and nnodes == "1" and h == host, "node/host", r)
        check(re.fullmatch(r"[0-9a-f]{16}", jobid) is not None, "jobid is not hex", r)
        check(addr == "unix-abstract:ulmpi-" + jobid, "boot address", r)
        check(re.fullmatch(r"[0-9a-f]{32}", secret) is not None, "secret is not 128-bit hex", r)
        check(int(universe) >= 3 and app == "0", "universe/appnum", r)
        jobids.add(jobid)
    check(len(jobids) == 1, "ranks disagree on the job id", r)
    # An inherited contract variable (nested mpirun) does not leak into the job.
    r = run(["-n", "1", "sh", "-c", "echo restarted=${ULMPI_RESTARTED:-unset}"],
            extra_env={"ULMPI_RESTARTED": "1"})
    check(r.out.strip() == "restarted=unset", "ULMPI_RESTARTED leaked into the job", r)
    # Job ids differ between jobs.
    r2 = run(["-n", "1", "printenv", "ULMPI_JOBID"])
    check(r2.out.strip() not in jobids, "two jobs got the same id", r2)


def case_bootstrap_env():
    r = run(["-n", "3", CLIENT, "env"])
    check(r.rc == 0, "env client failed", r)
    lines = sorted(r.out.splitlines())
    check(len(lines) == 3, "expected 3 lines", r)
    for i, line in enumerate(lines):
        check(line.startswith("rank=%d size=3 local_rank=%d local_size=3 node=0 num_nodes=1 " %
                              (i, i)), "job info", r)
        check("nodes=000 impl=ulmpi" in line, "node_of_rank / implementation", r)


def case_kv_fence():
    r = run(["-n", "4", CLIENT, "kv"])
    check(r.rc == 0, "kv job failed", r)
    check(sorted(r.out.splitlines()) == ["rank %d of 4 ok" % i for i in range(4)], "kv output", r)
    check(r.err == "", "unexpected messages", r)


def case_kv_tcp():
    r = run(["--boot", "tcp", "-n", "3", CLIENT, "kv"])
    check(r.rc == 0 and len(r.out.splitlines()) == 3, "kv over tcp failed", r)
    r = run(["--boot", "tcp", "-n", "1", "printenv", "ULMPI_BOOT_ADDR"])
    check(re.fullmatch(r"tcp:127\.0\.0\.1:\d+", r.out.strip()) is not None, "tcp address", r)


def case_kv_oversubscribed():
    r = run(["-n", "12", CLIENT, "kv"])
    check(r.rc == 0 and len(r.out.splitlines()) == 12, "12-rank kv job failed", r)


def case_mpmd():
    r = run(["-n", "1", CLIENT, "env", ":", "-n", "2", CLIENT, "env"])
    check(r.rc == 0, "MPMD job failed", r)
    apps = sorted(re.search(r"rank=(\d).*appnum=(\d)", l).groups() for l in r.out.splitlines())
    check(apps == [("0", "0"), ("1", "1"), ("2", "1")], "appnum per app context", r)
    r = run(["-n", "1", "sh", "-c", "echo a$ULMPI_APPNUM", ":", "-n", "1", "sh", "-c",
             "echo b$ULMPI_APPNUM"])
    check(sorted(r.out.split()) == ["a0", "b1"], "MPMD programs", r)


def case_abort():
    r = run(["-n", "3", CLIENT, "abort", "5"])
    check(r.rc == 5, "exit status is not the abort code", r)
    check(re.search(r"^mpirun: rank 2 called MPI_Abort with code 5.*; ending the job$", r.err,
                    re.M) is not None, "abort message", r)
    check(r.err.count("mpirun:") == 1, "more than one message", r)
    check(r.elapsed < 5, "abort took too long (%.1f s)" % r.elapsed, r)


def case_abort_code_256():
    r = run(["-n", "2", CLIENT, "abort", "256"])
    check(r.rc == 1, "abort(256) must not exit 0", r)


def case_segv():
    r = run(["-n", "3", CLIENT, "segv", "1"])
    check(r.rc == 128 + 11, "exit status for SIGSEGV", r)
    check(re.search(r"^mpirun: rank 1 \(pid \d+\) died from signal 11 \(Segmentation fault\) "
                    r"before MPI_Finalize; ending the job$", r.err, re.M) is not None,
          "segfault message", r)


def case_exit_without_finalize():
    r = run(["-n", "3", CLIENT, "exit", "1", "0"])
    check(r.rc == 1, "exit 0 before finalize must fail", r)
    check(re.search(r"rank 1 \(pid \d+\) exited with status 0 before MPI_Finalize; ending the job",
                    r.err) is not None, "message", r)
    r = run(["-n", "3", CLIENT, "exit", "2", "9"])
    check(r.rc == 9, "exit 9 before finalize", r)
    check("rank 2" in r.err and "exited with status 9 before MPI_Finalize" in r.err, "message", r)


def case_lost_connection():
    r = run(["-n", "2", CLIENT, "closeconn", "1"])
    check(r.rc == 1, "a rank without its connection must end the job", r)
    check("rank 1" in r.err and "lost its connection" in r.err, "message", r)
    check(r.elapsed < 6, "took too long", r)


def case_fence_without_rank():
    # Rank 0 is not an MPI program: the others would wait for it forever.
    r = run(["-n", "1", "true", ":", "-n", "2", CLIENT, "kv"])
    check(r.rc == 1, "expected failure", r)
    check("rank 0" in r.err and "fence" in r.err, "message", r)


def case_nonmpi_exit_code():
    r = run(["-n", "3", "sh", "-c", 'if [ "$ULMPI_RANK" = 1 ]; then exit 7; fi; sleep 30'])
    check(r.rc == 7, "a rank's exit status becomes mpirun's", r)
    check(re.search(r"rank 1 \(pid \d+\) exited with status 7; ending the job", r.err), "msg", r)
    check(r.elapsed < 5, "the others were not ended quickly", r)
    r = run(["-n", "1", "sh", "-c", "kill -TERM $$"])
    check(r.rc == 128 + 15, "killed by SIGTERM", r)
    check("died from signal 15 (Terminated)" in r.err, "message", r)


def case_timeout_option():
    r = run(["--timeout", "1", "-n", "2", CLIENT, "sleep"])
    check(r.rc == 124, "timeout exit status", r)
    check("time limit of 1 s; ending the job" in r.err, "timeout message", r)
    check(r.elapsed < 5, "timeout too slow", r)


def case_timeout_env():
    r = run(["-n", "2", "sleep", "30"], extra_env={"MPIEXEC_TIMEOUT": "1"})
    check(r.rc == 124 and r.elapsed < 5, "MPIEXEC_TIMEOUT", r)
    r = run(["--timeout", "20", "-n", "1", "true"], extra_env={"MPIEXEC_TIMEOUT": "1"})
    check(r.rc == 0, "--timeout must win over MPIEXEC_TIMEOUT", r)
    r = run(["-n", "1", "true"], extra_env={"MPIEXEC_TIMEOUT": "soon"})
    check(r.rc == 2 and "MPIEXEC_TIMEOUT" in r.err, "bad MPIEXEC_TIMEOUT", r)


def case_sigint():
    p, mark = start(["-n", "3", CLIENT, "sleep"])
    wait_ready(p, 3)
    t = time.time()
    p.send_signal(signal.SIGINT)
    r = finish(p, mark, 6)
    check(r.rc == 130, "SIGINT exit status", r)
    check(time.time() - t < 4, "SIGINT took too long", r)


def case_sigterm_stubborn_ranks():
    p, mark = start(["-n", "2", CLIENT, "sleep-stubborn"])
    wait_ready(p, 2)
    t = time.time()
    p.send_signal(signal.SIGTERM)
    r = finish(p, mark, 8)
    took = time.time() - t
    check(r.rc == 143, "SIGTERM exit status", r)
    check(1.5 < took < 5, "ranks ignoring SIGTERM must be killed after ~2 s (%.1f)" % took, r)


def case_double_sigint():
    p, mark = start(["-n", "2", CLIENT, "sleep-stubborn"])
    wait_ready(p, 2)
    t = time.time()
    p.send_signal(signal.SIGINT)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    r = finish(p, mark, 8)
    check(r.rc == 130, "exit status", r)
    check(time.time() - t < 1.5, "a second Ctrl-C must kill at once", r)


def case_ranks_die_with_mpirun():
    p, mark = start(["-n", "3", CLIENT, "sleep-stubborn"])
    wait_ready(p, 3)
    p.kill()  # SIGKILL: mpirun cannot pass anything on
    p.communicate(timeout=WATCHDOG)
    assert_no_leftovers(mark)


def case_no_interleave():
    n, length = 200, 3000
    r = run(["-n", "8", CLIENT, "lines", str(n), str(length)])
    check(r.rc == 0, "lines job failed", r)
    lines = r.out.split("\n")
    check(lines[-1] == "", "output does not end with a newline", r)
    lines = lines[:-1]
    check(len(lines) == 8 * n, "expected %d lines, got %d" % (8 * n, len(lines)))
    per_rank = {}
    for line in lines:
        m = re.fullmatch(r"(\d):(\d+):([a-z]+)", line)
        if m is None or len(line) != length or set(m.group(3)) != {chr(ord("a") +
                                                                            int(m.group(1)))}:
            raise Failure("a mangled line: %r..." % line[:80])
        per_rank.setdefault(m.group(1), []).append(int(m.group(2)))
    for rank, seq in per_rank.items():
        check(seq == list(range(n)), "rank %s lines out of order" % rank)


def case_tag_output():
    r = run(["--tag-output", "-n", "2", "sh", "-c",
             "echo out$ULMPI_RANK; echo err$ULMPI_RANK >&2; printf tail"])
    check(r.rc == 0, "failed", r)
    out = sorted(r.out.splitlines())
    check(out == ["[0] out0", "[0] tail", "[1] out1", "[1] tail"], "tagged stdout", r)
    check(sorted(r.err.splitlines()) == ["[0] err0", "[1] err1"], "tagged stderr", r)


def case_partial_line():
    r = run(["-n", "1", "sh", "-c", "printf abc"])
    check(r.rc == 0 and r.out == "abc", "a partial last line must come out as it is", r)


def case_export_x():
    r = run(["-x", "FOO=bar baz", "-x", "KEEP", "-n", "2", "sh", "-c", 'echo "$FOO|$KEEP"'],
            extra_env={"KEEP": "kept"})
    check(r.rc == 0 and r.out.splitlines() == ["bar baz|kept"] * 2, "-x", r)
    r = run(["-x", "NOT_SET_ANYWHERE_1234", "-n", "1", "true"])
    check(r.rc == 0 and "NOT_SET_ANYWHERE_1234" in r.err, "-x of an unset variable warns", r)
    r = run(["-x", "1BAD", "-n", "1", "true"])
    check(r.rc == 2 and "1BAD" in r.err, "-x with a bad name", r)


def case_param():
    r = run(["--param", "ulm_eager_limit=8k", "--param", "Path_Udp_Foo=1", "-n", "1", "sh", "-c",
             "echo $ULMPI_ULM_EAGER_LIMIT $ULMPI_PATH_UDP_FOO"])
    check(r.rc == 0 and r.out.strip() == "8k 1", "--param", r)
    for bad in ["novalue", "=1", "bad-name=1"]:
        r = run(["--param", bad, "-n", "1", "true"])
        check(r.rc == 2 and "--param" in r.err, "--param %s must be refused" % bad, r)


def case_usage_errors():
    r = run(["--frobnicate", "-n", "1", "true"])
    check(r.rc == 2 and "'--frobnicate'" in r.err, "unknown option", r)
    r = run(["-n", "0", "true"])
    check(r.rc == 2 and "-n" in r.err, "-n 0", r)
    r = run([])
    check(r.rc == 2 and "no program" in r.err, "no program", r)
    r = run(["-n", "1", "true", ":"])
    check(r.rc == 2, "trailing ':'", r)
    r = run(["--bind-to", "socket", "true"])
    check(r.rc == 2 and "socket" in r.err, "--bind-to socket", r)
    r = run(["--wdir", "/nonexistent/dir", "true"])
    check(r.rc == 2 and "/nonexistent/dir" in r.err, "--wdir missing", r)
    # Another host needs a daemon; a launch agent that fails names the host.
    r = run(["-H", "some-remote-host", "--launch-agent", "false", "true"])
    check(r.rc == 1 and "host 'some-remote-host' lost" in r.err and "never connected" in r.err,
          "remote host whose daemon cannot start", r)
    r = run(["--map-by", "socket", "true"])
    check(r.rc == 2 and "--map-by" in r.err, "--map-by socket", r)
    r = run(["--npernode", "1", "-n", "3", "true"])
    check(r.rc == 2 and "--npernode 1" in r.err, "--npernode below -n", r)
    r = run(["--max-restarts", "-1", "true"])
    check(r.rc == 2 and "--max-restarts: '-1'" in r.err, "--max-restarts -1", r)
    r = run(["--help"])
    check(r.rc == 0 and "Exit status" in r.out and "--tag-output" in r.out, "--help", r)
    r = run(["--version"])
    check(r.rc == 0 and re.fullmatch(r"ulmpi \d+\.\d+\.\d+\n", r.out) is not None, "--version", r)
    r = run(["-np", "2", "--oversubscribe", "-H", "localhost:1", "true"])
    check(r.rc == 0, "-np, --oversubscribe, -H localhost", r)


def case_exec_failures():
    r = run(["-n", "2", "no-such-program-xyz"])
    check(r.rc == 127 and "no-such-program-xyz" in r.err, "not found", r)
    r = run(["-n", "2", "./no/such/path"])
    check(r.rc == 127 and "./no/such/path" in r.err, "not found (path)", r)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("not a program\n")
    try:
        os.chmod(f.name, 0o644)
        r = run(["-n", "2", f.name])
        check(r.rc == 126 and f.name in r.err, "not executable", r)
    finally:
        os.unlink(f.name)


def case_stdin():
    r = run(["-n", "3", "sh", "-c", 'cat; echo "done$ULMPI_RANK"'], stdin="line one\nline two\n")
    check(r.rc == 0, "failed", r)
    out = r.out.splitlines()
    check(out.count("line one") == 1 and out.count("line two") == 1, "stdin goes to rank 0", r)
    check(sorted(l for l in out if l.startswith("done")) == ["done0", "done1", "done2"], "EOF", r)
    r = run(["--stdin", "none", "-n", "1", "cat"], stdin="data\n")
    check(r.rc == 0 and r.out == "", "--stdin none", r)
    r = run(["--stdin", "1", "-n", "2", "sh", "-c", 'cat | sed "s/^/$ULMPI_RANK:/"'], stdin="x\n")
    check(r.out == "1:x\n", "--stdin 1", r)


def case_wdir():
    r = run(["--wdir", "/tmp", "-n", "1", "pwd"])
    check(r.rc == 0 and r.out.strip() == "/tmp", "--wdir", r)
    # A relative program path still resolves from mpirun's directory.
    here = os.path.dirname(CLIENT)
    p = subprocess.run([MPIRUN, "--wdir", "/tmp", "-n", "1", "./" + os.path.basename(CLIENT),
                        "env"], cwd=here, capture_output=True, text=True, timeout=WATCHDOG,
                       env=job_env())
    check(p.returncode == 0, "relative program with --wdir: %s %s" % (p.stdout, p.stderr))


def cpus_of(line):
    out = set()
    for part in line.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def case_bind_to():
    allowed = os.sched_getaffinity(0)
    show = ["sh", "-c", "grep Cpus_allowed_list /proc/self/status | cut -f2"]
    r = run(["--bind-to", "none", "-n", "2"] + show)
    check(all(cpus_of(l) == allowed for l in r.out.split()), "--bind-to none", r)
    if len(allowed) < 2:
        raise Skip("needs 2 CPUs")
    r = run(["--bind-to", "hwthread", "-n", "2"] + show)
    sets = [cpus_of(l) for l in r.out.split()]
    check(all(len(s) == 1 for s in sets) and sets[0] != sets[1], "--bind-to hwthread", r)
    r = run(["-n", "2"] + show)  # fits: bound by default
    sets = [cpus_of(l) for l in r.out.split()]
    check(all(s < allowed or s == allowed and len(allowed) == 1 for s in sets), "default", r)
    r = run(["-n", str(len(allowed) * 2 + 1)] + show)  # oversubscribed: not bound
    check(all(cpus_of(l) == allowed for l in r.out.split()), "oversubscribed default", r)


def case_events():
    r = run(["-n", "2", CLIENT, "events"])
    check(r.rc == 128 + 9, "rank 1 killed itself", r)
    check(re.search(r"^event rank_failed 1 died from signal 9", r.out, re.M) is not None,
          "rank 0 got no rank_failed event", r)
    check("event job_ending" in r.out, "rank 0 got no job_ending event", r)


def case_straggler_holding_output():
    # The rank ends at once, but what it started in the background keeps the
    # output pipe open: mpirun waits a little, then kills that process group.
    r = run(["-n", "2", "sh", "-c", "sleep 30 & echo started"])
    check(r.rc == 0, "the ranks succeeded", r)
    check(r.out.splitlines() == ["started", "started"], "output", r)
    check(r.elapsed < 5, "mpirun waited too long for the stragglers (%.1f s)" % r.elapsed, r)


def case_refused_secret():
    r = run(["-n", "1", CLIENT, "refused"])
    check(r.rc == 0, "a rank that never joined and exits 0 is fine", r)
    check("refused" in r.out and "wrong job secret" in r.out, "the wrong secret is refused", r)


def case_shm_cleanup():
    r = run(["-n", "2", CLIENT, "shm"])
    check(r.rc == 3, "abort code", r)
    m = re.search(r"created (/dev/shm/\S+)", r.out)
    check(m is not None, "no file created", r)
    check(not os.path.exists(m.group(1)), "%s left behind" % m.group(1), r)


SHM_HOLD = os.environ.get("SHM_HOLD", "")


def case_shm_mpirun_killed():
    # The host's shared memory has no name in /dev/shm while the job runs
    # (mpirun hands the ranks an anonymous segment), so a SIGKILLed mpirun
    # leaves nothing: with spawn slots (the default), with --spawn-slots 0,
    # and in a job that can respawn ranks (--ft-mode rebuild).
    if not SHM_HOLD:
        raise Skip("SHM_HOLD is not set")
    for opts in [[], ["--spawn-slots", "0"], ["--with-ft", "ulfm", "--ft-mode", "rebuild"]]:
        p, mark = start(opts + ["-n", "3", "sh", "-c",
                                'echo "jobid $ULMPI_JOBID"; exec "$0" "$@"', SHM_HOLD])
        jobid = None
        deadline = time.time() + WATCHDOG
        while True:
            line = p.stdout.readline().decode()
            if not line or time.time() > deadline:
                p.kill()
                out, err = p.communicate()
                raise Failure("mpirun %s: no 'ready' line (%r, %r)" % (opts, out, err))
            m = re.match(r"jobid ([0-9a-f]+)$", line.strip())
            if m:
                jobid = m.group(1)
            if line.startswith("ready"):
                check(line.split() == ["ready", "3"], "mpirun %s: allreduce: %r" % (opts, line))
                break
        check(jobid is not None, "mpirun %s: no job id printed" % opts)
        check(shm_of(jobid) == [], "mpirun %s: named shared memory while the job runs: %s" %
              (opts, shm_of(jobid)))
        p.kill()  # SIGKILL: mpirun cleans nothing up
        p.communicate(timeout=WATCHDOG)
        assert_no_leftovers(mark)
        check(shm_of(jobid) == [], "mpirun %s: shared-memory files left: %s" %
              (opts, shm_of(jobid)))


def case_singleton():
    env = job_env()
    p = subprocess.run([CLIENT, "singleton"], capture_output=True, text=True, env=env,
                       timeout=WATCHDOG)
    check(p.returncode == 0 and p.stdout == "singleton ok\n", "singleton: %s %s" %
          (p.stdout, p.stderr))
    p = subprocess.run([CLIENT, "singleton-abort", "6"], capture_output=True, text=True, env=env,
                       timeout=WATCHDOG)
    check(p.returncode == 6 and "code 6" in p.stderr, "singleton abort: %s" % p.stderr)


# ------------------------------------------------ fault tolerance (--with-ft)

FT_NOTICE = os.environ.get("FT_NOTICE", "")


def case_ft_options():
    for bad, words in [(["--with-ft", "yes"], ["--with-ft", "'yes'", "ulfm, mpi or no"]),
                       (["--with-ft=ULFM"], ["--with-ft", "ulfm, mpi or no"]),
                       (["--initial-errhandler", "mpi_errors_ignore"],
                        ["--initial-errhandler", "mpi_errors_are_fatal", "mpi_errors_abort",
                         "mpi_errors_return"]),
                       (["--param", "ft=maybe"], ["--param", "ft"])]:
        r = run(bad + ["-n", "1", "true"])
        check(r.rc == 2, "%s must be refused with status 2" % bad, r)
        for w in words:
            check(w in r.err, "the message must say %r" % w, r)
    r = run(["--with-ft"])
    check(r.rc == 2 and "--with-ft" in r.err and "needs a value" in r.err, "missing value", r)
    for opts, ft in [(["--with-ft", "ulfm"], "ulfm"), (["--with-ft", "mpi"], "mpi"),
                     (["-disable-auto-cleanup"], "ulfm"), (["--with-ft", "no"], "no"),
                     (["--disable-auto-cleanup", "--with-ft", "no"], "no"), ([], "unset")]:
        r = run(opts + ["-n", "1", "sh", "-c",
                        'echo ${ULMPI_FT:-unset} ${ULMPI_NOTICE_FD:-nofd}; '
                        '[ -n "$ULMPI_NOTICE_FD" ] && readlink /proc/$$/fd/$ULMPI_NOTICE_FD; '
                        'true'])
        check(r.rc == 0, "mpirun %s" % opts, r)
        words = r.out.split()
        check(words[0] == ft, "ULMPI_FT for %s" % opts, r)
        if ft in ("ulfm", "mpi"):
            check(words[1].isdigit() and "memfd:ulmpi-notices" in r.out,
                  "a fault-tolerant rank inherits the notice board", r)
        else:
            check(words[1] == "nofd", "no notice board without --with-ft", r)
    # mpirun's own environment chooses too; the command line wins.
    r = run(["-n", "1", "sh", "-c", "echo ${ULMPI_NOTICE_FD:-nofd}"], extra_env={"ULMPI_FT": "ulfm"})
    check(r.out.strip().isdigit(), "ULMPI_FT=ulfm in mpirun's environment", r)
    r = run(["--with-ft", "no", "-n", "1", "sh", "-c", "echo ${ULMPI_NOTICE_FD:-nofd}"],
            extra_env={"ULMPI_FT": "ulfm"})
    check(r.out.strip() == "nofd", "--with-ft no wins over ULMPI_FT", r)
    for value in ["mpi_errors_return", "MPI_ERRORS_ABORT", "mpi_errors_are_fatal"]:
        r = run(["--initial-errhandler", value, "-n", "1", "printenv",
                 "ULMPI_INITIAL_ERRHANDLER"])
        check(r.rc == 0 and r.out.strip() == value.lower(), "--initial-errhandler %s" % value, r)
    r = run(["--help"])
    for w in ["--with-ft ulfm|mpi|no", "--disable-auto-cleanup", "--initial-errhandler",
              "Exit status with --with-ft ulfm"]:
        check(w in r.out, "--help must mention %r" % w, r)


def case_ft_notice_board():
    # The survivors spin on the notice word alone until it changes, then
    # fence twice without the failed rank and finish: exit 0.
    for how, victim, n in [("kill", 2, 4), ("exit0", 0, 3), ("close", 1, 3), ("kill", 5, 12)]:
        r = run(["--with-ft", "ulfm", "-n", str(n), CLIENT, "ft", str(victim), how])
        check(r.rc == 0, "ft %s: the survivors finished, exit status 0" % how, r)
        oks = sorted(re.findall(r"^rank (\d+) ft ok$", r.out, re.M), key=int)
        check(oks == [str(i) for i in range(n) if i != victim], "every survivor finished", r)
        notices = re.findall(r"^rank \d+ notice rank_failed %d " % victim, r.out, re.M)
        check(len(notices) == n - 1, "every survivor got the notice once", r)
        check(re.search(r"^mpirun: rank %d \(pid \d+\) .*; .*the job goes on \(--with-ft\)$" %
                        victim, r.err, re.M), "a line naming the failed rank", r)
        check(re.search(r"^mpirun: rank %d failed; the %d other ranks finished \(MPI_Finalize, "
                        r"exit status 0\)$" % (victim, n - 1), r.err, re.M), "the summary", r)
        check("ending the job" not in r.err, "the job must not be ended", r)


def case_ft_exit_rule():
    # Every rank failed: the first failure's status.
    r = run(["--with-ft", "ulfm", "-n", "2", "sh", "-c", "kill -9 $$"])
    check(r.rc == 128 + 9, "every rank died: 137", r)
    check(re.search(r"^mpirun: every rank failed \(ranks \d, \d\); the job did not finish$",
                    r.err, re.M), "summary naming the ranks", r)
    # A survivor that exits non-zero after MPI_Finalize: its status.
    r = run(["--with-ft", "ulfm", "-n", "3", CLIENT, "final-exit", "1", "6"])
    check(r.rc == 6, "a rank's status after MPI_Finalize", r)
    check(re.search(r"^mpirun: rank 1 \(pid \d+\) exited with status 6 after MPI_Finalize$",
                    r.err, re.M), "message", r)
    r = run(["-n", "3", CLIENT, "final-exit", "1", "6"])
    check(r.rc == 6 and "ending the job" in r.err, "the same without FT ends the job", r)
    # A failure, then a survivor that ends badly: that survivor's status.
    r = run(["--with-ft", "ulfm", "-n", "3", "sh", "-c",
             'case $ULMPI_RANK in 0) kill -9 $$;; 2) sleep 0.3; exit 4;; esac; exit 0'])
    check(r.rc == 0, "non-MPI ranks: exit 4 without MPI_Init is a failure too", r)
    check(re.search(r"^mpirun: ranks (0, 2|2, 0) failed; the 1 other rank finished", r.err,
                    re.M),
          "summary", r)
    # What still ends a fault-tolerant job at once.
    r = run(["--with-ft", "ulfm", "-n", "3", CLIENT, "abort", "5"])
    check(r.rc == 5 and "called MPI_Abort with code 5" in r.err and "ending the job" in r.err,
          "MPI_Abort ends a fault-tolerant job", r)
    r = run(["--with-ft", "ulfm", "--timeout", "1", "-n", "2", CLIENT, "sleep"])
    check(r.rc == 124 and r.elapsed < 5, "the time limit ends a fault-tolerant job", r)
    r = run(["--with-ft", "ulfm", "-n", "2", "/nonexistent/prog"])
    check(r.rc == 127, "a program that cannot start ends the job", r)
    # MPICH's spelling, MPICH's rule (its FT tests take any output line but
    # theirs as an error, and want a non-zero status): nothing said, the
    # first failure's status although the survivors finished.
    r = run(["-disable-auto-cleanup", "-n", "4", CLIENT, "ft", "2", "kill"])
    check(r.rc == 128 + 9, "-disable-auto-cleanup: the victim's status", r)
    check("mpirun:" not in r.err, "-disable-auto-cleanup: mpirun says nothing", r)
    oks = re.findall(r"^rank \d+ ft ok$", r.out, re.M)
    check(len(oks) == 3, "-disable-auto-cleanup: the survivors finished", r)


def shm_of(jobid):
    return [f for f in os.listdir("/dev/shm") if f.startswith("ulmpi-" + jobid)]


def ft_recv_run(opts, n, victim):
    with tempfile.TemporaryDirectory() as d:
        stamp = os.path.join(d, "stamp")
        r = run(opts + ["-n", str(n), "sh", "-c",
                        'echo "jobid $ULMPI_JOBID"; exec "$0" "$@"', FT_NOTICE, str(victim),
                        stamp])
    m = re.search(r"^jobid ([0-9a-f]+)$", r.out, re.M)
    check(m is not None, "no job id printed", r)
    check(shm_of(m.group(1)) == [], "shared-memory files left: %s" % shm_of(m.group(1)), r)
    return r


def case_ft_mpi_recv():
    if not FT_NOTICE:
        raise Skip("FT_NOTICE is not set")
    lat = []
    for n, victim in [(4, 2), (3, 0), (2, 1)]:
        r = ft_recv_run(["--with-ft", "ulfm", "--initial-errhandler", "mpi_errors_return"], n,
                        victim)
        check(r.rc == 0, "the survivors finished: exit 0", r)
        check("initial errhandler: mpi_errors_return" in r.out, "MPI_INFO_ENV", r)
        got = re.findall(r"^rank (\d+): recv from %d: MPIX_ERR_PROC_FAILED after (-?\d+) us$" %
                         victim, r.out, re.M)
        check(sorted(int(g[0]) for g in got) == [i for i in range(n) if i != victim],
              "every survivor blocked in MPI_Recv from the victim gets MPIX_ERR_PROC_FAILED", r)
        lat += [int(g[1]) for g in got]
    # The notice arrives; how fast is a figure (tools), not a test.
    print("kill -> MPIX_ERR_PROC_FAILED (us):", sorted(lat))
    # FT alone keeps MPI_ERRORS_ARE_FATAL: the survivor's failed receive ends
    # the job through MPI_Abort with the error class.
    r = ft_recv_run(["--with-ft", "ulfm"], 2, 1)
    check("initial errhandler: mpi_errors_are_fatal" in r.out, "default initial handler", r)
    check(r.rc == 75 and re.search(r"rank 0 called MPI_Abort with code 75 .*"
                                   r"MPIX_ERR_PROC_FAILED", r.err),
          "MPI_ERRORS_ARE_FATAL on the survivor", r)


def case_ft_without_ft():
    if not FT_NOTICE:
        raise Skip("FT_NOTICE is not set")
    r = ft_recv_run(["--initial-errhandler", "mpi_errors_return"], 3, 1)
    check(r.rc == 128 + 9, "without --with-ft a killed rank ends the job (137)", r)
    check(re.search(r"^mpirun: rank 1 \(pid \d+\) died from signal 9 \(Killed\) before "
                    r"MPI_Finalize; ending the job$", r.err, re.M), "message", r)


def main():
    if len(sys.argv) != 2 or "case_" + sys.argv[1] not in globals():
        names = sorted(k[5:] for k in globals() if k.startswith("case_"))
        print("usage: launcher_test.py CASE\ncases: " + " ".join(names))
        return 2
    try:
        globals()["case_" + sys.argv[1]]()
    except Skip as e:
        print("SKIP: %s" % e)
        return 77
    except Failure as e:
        print("FAIL: %s" % e)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
