#!/usr/bin/env python3
"""Runs one mpirun command and checks what it printed.

  rep_expect.py [--limit SECONDS] [--out TEXT ...] [--err TEXT ...] -- COMMAND...

The command must exit 0 within --limit seconds (the watchdog: its process
group is killed then), its stdout must contain every --out text and its
stderr every --err text (e.g. mpirun's line saying that a replica was
re-created, so that a scenario test cannot pass without its scenario).
"""

import argparse
import os
import signal
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=60)
    ap.add_argument("--out", action="append", default=[])
    ap.add_argument("--err", action="append", default=[])
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command given (after --)")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=a.limit)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = None
        err += "\n(watchdog: killed after %g s)" % a.limit
    missing = ["stdout: %r" % t for t in a.out if t not in out]
    missing += ["stderr: %r" % t for t in a.err if t not in err]
    if rc != 0 or missing:
        print("FAIL (rc=%s%s)\n  command: %s\n--- stdout\n%s--- stderr\n%s" %
              (rc, "; missing " + ", ".join(missing) if missing else "", " ".join(cmd), out, err))
        return 1
    print(out, end="")
    print("ok: exit 0%s" % (" and every expected line" if a.out or a.err else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
