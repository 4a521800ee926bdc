"""What the FT-MPI test scripts (ftmpi_random.py, ftmpi_cg.py) share: their
common options, and one mpirun job, its processes marked so that any left
afterwards are found and killed.

    add_common_options(argparser, runs)   --mpirun --bindir --runs --seed --np --limit

    rc, text, seconds, left = run_marked(cmd, env, limit[, marker])

`env` gets ULMPI_TEST_MARKER=<marker, random when not given> (mpirun passes its environment to
every rank); rc is None when the job did not end within `limit` seconds
(its whole session is killed then); `left` lists the pids of marked
processes still there after it ended (they are killed too)."""

import os
import signal
import subprocess
import time
import uuid


def leftovers(marker):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"ULMPI_TEST_MARKER={marker}".encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def run_marked(cmd, env, limit, marker=None):
    env = dict(env)
    marker = marker or uuid.uuid4().hex
    env["ULMPI_TEST_MARKER"] = marker
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = None
    seconds = time.monotonic() - start
    time.sleep(0.05)
    left = leftovers(marker)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return rc, out.decode(errors="replace"), seconds, left


def add_common_options(ap, runs):
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--np", default="4,8")
    ap.add_argument("--limit", type=float, default=60.0)
