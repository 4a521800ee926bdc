#!/usr/bin/env python3
"""Runs one MPI test program under another MPI's launcher, as a PMI client test.

    other_launcher.py TIMEOUT LAUNCHER [ARGS...] -- PROGRAM [ARGS...]

MPICH's mpiexec.hydra serves PMI-2 on PMI_FD, Open MPI's mpirun a PMIx
server: our bootstraps must find every rank through them. Passes when the
launcher exits 0 and the output has exactly one "No Errors" line (ranks
that fell back to singletons would each print one).
"""
import subprocess
import sys


def main():
    timeout = float(sys.argv[1])
    cmd = sys.argv[2:]
    cmd.remove("--")
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("ULMPI_BOOT_ADDR", "PMIX_NAMESPACE", "PMI_FD", "PMI_RANK")}
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=timeout, env=env, start_new_session=True)
    except subprocess.TimeoutExpired as e:
        print(f"did not end within {timeout:.0f} s: {' '.join(cmd)}")
        print(e.stdout or "")
        return 1
    print(p.stdout)
    lines = [l for l in p.stdout.splitlines() if l.strip() == "No Errors"]
    if p.returncode != 0 or len(lines) != 1:
        print(f"FAILED: exit status {p.returncode}, {len(lines)} 'No Errors' line(s): {' '.join(cmd)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
