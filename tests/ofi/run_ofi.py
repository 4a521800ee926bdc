#!/usr/bin/env python3
"""Runs one MPI test (tests/mpi/runtests.py) over the ofi path with one
libfabric provider on loopback: ULMPI_PATH_INCLUDE=self,ofi,
ULMPI_OFI_PROVIDER=<provider> (and ULMPI_OFI_IFACE=lo for the network
providers). Skips (exit 77) when libfabric does not offer the provider here,
as ulmpi_info tells.

    run_ofi.py --provider P --info ULMPI_INFO -- <runtests.py arguments>
"""
import argparse
import os
import subprocess
import sys


def offered(info, env):
    out = subprocess.run([info], env=env, capture_output=True, text=True, timeout=60).stdout
    for line in out.splitlines():
        if line.strip().startswith("a job on one host:"):
            return "none (" not in line, line.strip()
    return False, "ulmpi_info printed no libfabric line"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--provider", required=True)
    ap.add_argument("--info", required=True)
    ap.add_argument("--runtests", required=True)
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    rest = a.rest[1:] if a.rest and a.rest[0] == "--" else a.rest
    env = dict(os.environ)
    env["ULMPI_PATH_INCLUDE"] = "self,ofi"
    env["ULMPI_OFI_PROVIDER"] = a.provider
    if a.provider != "shm":
        env["ULMPI_OFI_IFACE"] = "lo"
    ok, why = offered(a.info, env)
    if not ok:
        print("SKIP: provider %s is not offered here: %s" % (a.provider, why))
        return 77
    return subprocess.call([sys.executable, a.runtests] + rest, env=env)


if __name__ == "__main__":
    sys.exit(main())
