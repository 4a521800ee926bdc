#!/usr/bin/env python3
"""Runs the collective test programs under mpirun, driven by tests/coll/testlist.

A testlist line is

    id program np [arg ...] [env=VAR=VAL ...] [timeout=S] [output=REGEX] [nooutput=REGEX]

  id         the test's name (meson test name; unique)
  program    an executable in --bindir; np ranks (mpirun -n np)
  arg        passed to the program
  env=       set for the job (mpirun passes its environment to the ranks)
  timeout=   seconds (default 60): mpirun --timeout S, and the runner kills
             the whole job 15 s later
  output= / nooutput=  a regex the merged output must / must not match
                       (\\s for a blank; words never contain blanks)

A test passes when mpirun exits 0 and a line "No Errors" is printed (rank 0,
see tests/mpi/mpitest.h), and the output regexes hold. Ids containing
".long" belong to the long suite.

  runcoll.py --testlist F --bindir D --mpirun M --id ID     one test (meson)
  runcoll.py --testlist F --bindir D --mpirun M [--filter RE]  a table
  runcoll.py --testlist F --entries [--programs P,...]       "id timeout" a line,
             for the tests of the programs listed (all without --programs):
             what meson.build makes its tests of
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

# A report of a sanitizer (ASan, LSan, UBSan, TSan; scripts/sanitize) fails
# the test even when mpirun exits 0.
SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak|Thread|Memory)Sanitizer|"
                              r"WARNING: ThreadSanitizer|: runtime error: ")


class Entry:
    def __init__(self, words):
        self.id, self.prog, self.np = words[0], words[1], int(words[2])
        self.args, self.env, self.out, self.noout = [], {}, [], []
        self.timeout = 60.0
        for w in words[3:]:
            key, eq, val = w.partition("=")
            if eq and key == "env":
                var, _, v = val.partition("=")
                self.env[var] = v
            elif eq and key == "timeout":
                self.timeout = float(val)
            elif eq and key == "output":
                self.out.append(val)
            elif eq and key == "nooutput":
                self.noout.append(val)
            else:
                self.args.append(w)


def read(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                entries.append(Entry(line.split()))
    return entries


def run(e, a):
    exe = os.path.join(a.bindir, e.prog)
    if not os.access(exe, os.X_OK):
        return False, "no program " + exe, "", 0.0
    env = dict(os.environ)
    env.update(e.env)
    # Slow builds (sanitizers) stretch every limit, as in tests/mpi/runtests.py.
    timeout = e.timeout * float(os.environ.get("ULMPI_TEST_TIMEOUT_SCALE", "1"))
    cmd = [a.mpirun, "-n", str(e.np), "--timeout", str(int(timeout + 0.999)), exe] + e.args
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout + 15)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        text = out.decode("utf-8", "replace")
        return False, "killed after %.0f s" % (timeout + 15), text, time.monotonic() - start
    text = out.decode("utf-8", "replace")
    problems = []
    if p.returncode != 0:
        problems.append("mpirun exited %d" % p.returncode)
    if not re.search(r"^\s*No Errors\s*$", text, re.M):
        problems.append('no "No Errors" line')
    problems += ["output does not match " + r for r in e.out if not re.search(r, text, re.M)]
    problems += ["output matches " + r for r in e.noout if re.search(r, text, re.M)]
    if SANITIZER_REPORT.search(text):
        problems.append("a sanitizer reported an error (in the output)")
    return not problems, "; ".join(problems) or "ok", " ".join(cmd) + "\n" + text, \
        time.monotonic() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--testlist", required=True)
    ap.add_argument("--bindir")
    ap.add_argument("--mpirun")
    ap.add_argument("--entries", action="store_true")
    ap.add_argument("--programs")
    ap.add_argument("--id")
    ap.add_argument("--filter")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    entries = read(a.testlist)
    if a.entries:
        built = set(a.programs.split(",")) if a.programs else None
        for e in entries:
            if built is None or e.prog in built:
                print("%s %d" % (e.id, int(e.timeout + 0.999)))
        return 0
    if not a.bindir or not a.mpirun:
        ap.error("--bindir and --mpirun are needed to run tests")
    if a.id:
        chosen = [e for e in entries if e.id == a.id]
        if not chosen:
            print("no test %s in %s" % (a.id, a.testlist))
            return 1
        ok, msg, text, secs = run(chosen[0], a)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        print("%s: %s (%.1f s)" % (a.id, "PASS" if ok else "FAIL: " + msg, secs))
        return 0 if ok else 1
    rx = re.compile(a.filter) if a.filter else None
    failed, t0 = [], time.monotonic()
    for e in entries:
        if rx and not rx.search(e.id):
            continue
        ok, msg, text, secs = run(e, a)
        print("%-4s %-32s %6.1f s  %s" % ("PASS" if ok else "FAIL", e.id, secs,
                                           "" if ok else msg), flush=True)
        if not ok or a.verbose:
            sys.stdout.write("    " + text.replace("\n", "\n    ").rstrip() + "\n")
        if not ok:
            failed.append(e.id)
    print("%d failed, %.1f s" % (len(failed), time.monotonic() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
