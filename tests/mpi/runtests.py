#!/usr/bin/env python3
"""Runs MPI test programs under mpirun, driven by a testlist (MPICH style).

A testlist line is

    name np [arg ...] [key=value ...] [xfail[=why]]

  name          the program (an executable in --bindir)
  np            number of ranks (mpirun -n np)
  arg           passed to the program
  env=VAR=VAL   set in mpirun's environment (repeatable); mpirun passes its
                whole environment to the ranks
  mpirun=OPT    an extra mpirun option (repeatable), e.g. mpirun=--tag-output
  timeout=S     seconds before the job is ended (default 60): the runner then
                prints every rank's stack (gdb, unless ULMPI_TEST_STACKS=0)
                and ends the job; mpirun's own --timeout (S + 20) is the
                backstop
  rc=N|nonzero  the exit status mpirun must have (default 0; -S: killed by
                signal S). With rc=0 the output must hold a line "No Errors"
                (printed by rank 0).
  output=REGEX  must match the output (stdout and stderr, merged); repeatable.
                No spaces: write \\s instead.
  nooutput=REGEX must not match the output; repeatable
  when=REGEX    with kill=: wait until the output matches, then signal mpirun
  kill=SIG[,SIG...]  signals sent to mpirun's process group (as a terminal
                does; after when=), killgap= apart
  killgap=S     seconds between the signals of kill= (default 0.5)
  within=S      the job must end within S seconds of its trigger: the first
                signal of kill=, or else the time the program printed as
                "t0=<CLOCK_MONOTONIC seconds>"
  xfail         the test is expected to fail (a known open bug: say which)

Words are separated by blanks; there is no quoting (a regex writes \s for a
blank). Lines starting with # are comments. A test's id is name.np followed by its
plain arguments, its env= settings and its kill= signals ("kill_INT"), other
characters than [A-Za-z0-9_+-] made "_" (e.g. init_thread.1.multiple,
bigmsg.2.ULMPI_SHM_SINGLE_COPY_off, fault_job.4.hang.kill_INT_INT).

After every run the runner checks that no process of the job is left (every
rank carries ULMPI_TEST_MARKER=<random> in its environment) and, when the
output names the job ("jobid=<id>"), that no /dev/shm/ulmpi-<id>* is left.

Modes:
  runtests.py --testlist F --bindir D --mpirun M --id ID   one test (meson)
  runtests.py --testlist F --bindir D --mpirun M [--filter RE] [--summary]
                                                           every test, a table
  runtests.py --testlist F --list                          the ids
  runtests.py --testlist F --entries                       "id timeout xfail|-" a
                                                           line: what meson.build
                                                           makes its tests of
Exit status: 0 when the test(s) behaved as expected (an xfail test that
fails counts as expected only in the table mode; meson inverts it itself).
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

DEFAULT_TIMEOUT = 60.0

# A report of a sanitizer (ASan, LSan, UBSan, TSan; scripts/sanitize) in any
# process of the job fails the test, whatever its expected exit status.
SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak|Thread|Memory)Sanitizer|"
                              r"WARNING: ThreadSanitizer|: runtime error: ")


class Entry:
    def __init__(self, lineno, tokens):
        self.lineno = lineno
        self.name = tokens[0]
        self.np = int(tokens[1])
        self.args = []
        self.env = {}
        self.mpirun_opts = []
        self.timeout = DEFAULT_TIMEOUT
        self.rc = 0
        self.outputs = []
        self.nooutputs = []
        self.when = None
        self.kill = []
        self.kill_text = None
        self.killgap = 0.5
        self.within = None
        self.xfail = None
        for t in tokens[2:]:
            key, eq, val = t.partition("=")
            if t == "xfail" or key == "xfail":
                self.xfail = val or "expected to fail"
            elif not eq or key not in KEYS:
                self.args.append(t)
            elif key == "env":
                var, _, v = val.partition("=")
                self.env[var] = v
            elif key == "mpirun":
                self.mpirun_opts.append(val)
            elif key == "timeout":
                self.timeout = float(val)
            elif key == "rc":
                self.rc = val if val == "nonzero" else int(val)
            elif key == "output":
                self.outputs.append(val)
            elif key == "nooutput":
                self.nooutputs.append(val)
            elif key == "when":
                self.when = val
            elif key == "kill":
                self.kill = [parse_signal(s) for s in val.split(",")]
                self.kill_text = val
            elif key == "killgap":
                self.killgap = float(val)
            elif key == "within":
                self.within = float(val)

    @property
    def id(self):
        parts = [self.name, str(self.np)] + self.args + ["%s=%s" % kv for kv in self.env.items()]
        if self.kill_text:
            parts.append("kill_" + self.kill_text)
        return ".".join(re.sub(r"[^A-Za-z0-9_+-]", "_", p) for p in parts)


KEYS = {"env", "mpirun", "timeout", "rc", "output", "nooutput", "when", "kill", "killgap",
        "within", "xfail"}


def parse_signal(s):
    s = s.strip().upper()
    if s.isdigit():
        return int(s)
    if not s.startswith("SIG"):
        s = "SIG" + s
    return int(getattr(signal, s))


def read_testlist(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            entries.append(Entry(lineno, line.split()))
    return entries


class Output:
    """Collects the merged output of mpirun with arrival times."""

    def __init__(self, stream):
        self.lines = []
        self.cond = threading.Condition()
        self.done = False
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream):
        for raw in iter(stream.readline, b""):
            with self.cond:
                self.lines.append(raw.decode("utf-8", "replace"))
                self.cond.notify_all()
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def text(self):
        with self.cond:
            return "".join(self.lines)

    def wait_for(self, regex, deadline):
        rx = re.compile(regex, re.M)
        with self.cond:
            while True:
                if rx.search("".join(self.lines)):
                    return True
                if self.done or time.monotonic() >= deadline:
                    return False
                self.cond.wait(timeout=0.05)


def job_processes(marker):
    """pids of processes whose environment holds the job's marker."""
    needle = ("ULMPI_TEST_MARKER=" + marker).encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            pids.append(int(d))
    return pids


def process_desc(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().split(")")[-1].split()[0]
        return "pid %d (%s) state %s" % (pid, cmd, state)
    except OSError:
        return "pid %d" % pid


def dump_stacks(marker, deadline):
    """Backtraces of the job's processes (gdb), for a test that hangs."""
    gdb = shutil.which("gdb")
    if gdb is None or os.environ.get("ULMPI_TEST_STACKS", "1") == "0":
        return ""
    out = ["--- stacks of the job's processes (the test hung) ---\n"]
    for pid in sorted(job_processes(marker)):
        left = deadline - time.monotonic()
        if left <= 1:
            out.append("(no time left for pid %d)\n" % pid)
            continue
        try:
            res = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex",
                                  "thread apply all bt 20"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 timeout=min(left, 15), check=False)
            frames = [l for l in res.stdout.decode(errors="replace").splitlines()
                      if l.startswith("#") or l.startswith("Thread")]
        except (subprocess.TimeoutExpired, OSError):
            frames = ["(gdb gave nothing in time)"]
        out.append("%s\n" % process_desc(pid))
        out.extend("  %s\n" % f for f in frames)
    return "".join(out)


def run_entry(e, args):
    """Runs one entry; returns (ok, message, output, seconds)."""
    exe = os.path.join(args.bindir, e.name)
    if not os.access(exe, os.X_OK):
        return False, "no program %s" % exe, "", 0.0
    marker = uuid.uuid4().hex
    env = dict(os.environ)
    env.update(e.env)
    env["ULMPI_TEST_MARKER"] = marker
    timeout = e.timeout * args.timeout_scale
    # mpirun's own limit is the backstop: the runner acts first (stacks).
    cmd = [args.mpirun, "-n", str(e.np), "--timeout", str(int(timeout + 20.999))]
    for o in e.mpirun_opts:
        cmd += shlex.split(o)
    cmd += [exe] + e.args
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    out = Output(proc.stdout)
    problems = []
    trigger = None
    if e.kill:
        if e.when and not out.wait_for(e.when, start + timeout):
            problems.append("the output never matched when=%s" % e.when)
        else:
            for i, sig in enumerate(e.kill):
                if i > 0:
                    time.sleep(e.killgap)
                if proc.poll() is not None:
                    break
                if trigger is None:
                    trigger = time.monotonic()
                # To mpirun's process group, as a terminal's Ctrl-C would.
                os.killpg(proc.pid, sig)
    stacks = ""
    timed_out = False
    try:
        rc = proc.wait(timeout=max(0.1, start + timeout - time.monotonic()))
    except subprocess.TimeoutExpired:
        # Hung: say where every rank is, then end the job (SIGTERM through
        # mpirun, then SIGKILL).
        timed_out = True
        stacks = dump_stacks(marker, deadline=time.monotonic() + 30)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            rc = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
    ended = time.monotonic()
    out.thread.join(timeout=5)
    text = out.text() + stacks
    seconds = ended - start

    # Leftovers: processes of the job, shared-memory files.
    left = job_processes(marker)
    if left:
        time.sleep(0.5)  # a process being reaped right now is not a leftover
        left = job_processes(marker)
    if left:
        problems.append("processes of the job left after mpirun exited: " +
                        "; ".join(process_desc(p) for p in left))
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    for jobid in set(re.findall(r"jobid=([0-9A-Za-z_-]+)", text)):
        files = [f for f in os.listdir("/dev/shm") if f.startswith("ulmpi-" + jobid)]
        if files:
            problems.append("files left in /dev/shm: " + " ".join(files))

    # Exit status and output.
    if timed_out:
        problems.append("timed out after %.0f s (stacks of the ranks in the output)" % timeout)
    elif rc == 124 and e.rc != 124:
        problems.append("timed out after %.0f s (mpirun --timeout)" % timeout)
    elif e.rc == "nonzero":
        if rc == 0:
            problems.append("mpirun exited 0, expected a non-zero status")
    elif rc != e.rc:
        problems.append("mpirun exited %d, expected %d" % (rc, e.rc))
    if e.rc == 0 and not re.search(r"^\s*No Errors\s*$", text, re.M):
        problems.append('no "No Errors" line in the output')
    for rx in e.outputs:
        if not re.search(rx, text, re.M):
            problems.append("output does not match %s" % rx)
    for rx in e.nooutputs:
        if re.search(rx, text, re.M):
            problems.append("output matches %s" % rx)
    if SANITIZER_REPORT.search(text):
        problems.append("a sanitizer reported an error (in the output)")
    if e.within is not None:
        t0 = trigger
        if t0 is None:
            m = re.search(r"t0=([0-9.]+)", text)
            t0 = float(m.group(1)) if m else None
        if t0 is None:
            problems.append("within=%g: no trigger time (no kill= and no t0= in the output)"
                            % e.within)
        elif ended - t0 > e.within:
            problems.append("the job ended %.2f s after its trigger, more than %g s"
                            % (ended - t0, e.within))
    ok = not problems
    msg = "; ".join(problems) if problems else "ok"
    return ok, msg, "$ " + " ".join(shlex.quote(c) for c in cmd) + "\n" + text, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--testlist", required=True)
    ap.add_argument("--bindir")
    ap.add_argument("--mpirun")
    ap.add_argument("--id", help="run only the test with this id (for meson)")
    ap.add_argument("--filter", help="run the tests whose id matches this regex")
    ap.add_argument("--list", action="store_true", help="print the test ids")
    ap.add_argument("--entries", action="store_true",
                    help="print 'id timeout xfail|-' per test (for meson.build)")
    ap.add_argument("--timeout-scale", type=float,
                    default=float(os.environ.get("ULMPI_TEST_TIMEOUT_SCALE", "1")))
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test's output")
    args = ap.parse_args()

    entries = read_testlist(args.testlist)
    if args.list:
        for e in entries:
            print(e.id + ("  (xfail: %s)" % e.xfail if e.xfail else ""))
        return 0
    if args.entries:
        for e in entries:
            print("%s %d %s" % (e.id, int(round(e.timeout)), "xfail" if e.xfail else "-"))
        return 0
    if not args.bindir or not args.mpirun:
        ap.error("--bindir and --mpirun are needed to run tests")
    if args.id:
        chosen = [e for e in entries if e.id == args.id]
        if not chosen:
            print("no test %s in %s" % (args.id, args.testlist))
            return 1
        e = chosen[0]
        ok, msg, text, seconds = run_entry(e, args)
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        print("%s: %s (%.1f s)%s" % (e.id, "PASS" if ok else "FAIL: " + msg, seconds,
                                     "  [xfail: %s]" % e.xfail if e.xfail else ""))
        return 0 if ok else 1

    rx = re.compile(args.filter) if args.filter else None
    failed = []
    total_start = time.monotonic()
    n = 0
    for e in entries:
        if rx and not rx.search(e.id):
            continue
        n += 1
        ok, msg, text, seconds = run_entry(e, args)
        if e.xfail:
            verdict = "XFAIL" if not ok else "XPASS"
            good = not ok
        else:
            verdict = "PASS" if ok else "FAIL"
            good = ok
        print("%-5s %-44s %6.1f s  %s" % (verdict, e.id, seconds,
                                          "" if ok else msg) +
              ("  [xfail: %s]" % e.xfail if e.xfail else ""), flush=True)
        if args.verbose or not good:
            sys.stdout.write("    " + text.replace("\n", "\n    ").rstrip() + "\n")
        if not good:
            failed.append(e.id)
    print("%d tests, %d unexpected results, %.1f s" % (n, len(failed),
                                                       time.monotonic() - total_start))
    for f in failed:
        print("  unexpected: " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
