#!/bin/sh
# mpirun --replicas $REP_REPLICAS (default 2): the runners of other suites
# (tests/coll/runcoll.py, tests/mpi/runtests.py) run their programs
# replicated through it. REP_MPIRUN is the mpirun to use.
exec "$REP_MPIRUN" --replicas "${REP_REPLICAS:-2}" "$@"
