#!/usr/bin/env python3
"""Runs one MPI test (tests/mpi/runtests.py) over the verbs path on the
software device: sets ULMPI_PATH_INCLUDE=self,verbs and
ULMPI_VERBS_DEVICE=soft:<library>,name=<fabric>, then removes the fabric's
shared-memory file if a rank that died left it behind.

    run_soft.py --lib L --name N -- <runtests.py arguments>
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--runtests", required=True)
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    rest = a.rest[1:] if a.rest and a.rest[0] == "--" else a.rest
    name = a.name.replace("/", "_") + "-" + str(os.getpid())
    env = dict(os.environ)
    env["ULMPI_PATH_INCLUDE"] = "self,verbs"
    env["ULMPI_VERBS_DEVICE"] = "soft:%s,name=%s" % (a.lib, name)
    try:
        rc = subprocess.call([sys.executable, a.runtests] + rest, env=env)
    finally:
        try:
            os.unlink("/dev/shm/verbs-soft-" + name)
        except FileNotFoundError:
            pass
    return rc


if __name__ == "__main__":
    sys.exit(main())
