"""Processes of a test run, found by a marker in their environment.

The test drivers put NAME=<unique value> into a job's environment (mpirun
passes it to every rank and daemon) and look for processes left behind by
it through /proc; zombies have no environment and are not found.
"""
import os


def pids_with_env(name, value):
    """Pids (not this process) whose environment holds NAME=value."""
    needle = ("%s=%s" % (name, value)).encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found
