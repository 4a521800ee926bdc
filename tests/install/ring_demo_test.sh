#!/usr/bin/env bash
# The README's demo, as the README runs it: examples/ring.c built with the
# build-tree mpicc and run with `mpirun -n 4`; every rank reports its round
# trips and every lap comes back intact. Then once more with large messages
# (the rendezvous protocol).
source "$(dirname "$0")/lib.sh"
need_mpirun
cd "$work"

run "$build/tools/mpicc" -Wall -Wextra -Werror -o ring "$ULMPI_TEST_SOURCE_ROOT/examples/ring.c"
uses_libmpi_from ring "$build/mpi"
run_job out "$build/tools/mpirun" 4 ./ring 200
expect out "^ring: 4 ranks on .*, 200 laps of 8 bytes per rank$" \
    "^ring: every lap came back intact$"
for r in 0 1 2 3; do
    expect out "^ +$r( +[0-9]+\\.[0-9]+){4}$"
done
run_job out_big "$build/tools/mpirun" 2 ./ring 20 1048576
expect out_big "^ring: 2 ranks on .*, 20 laps of 1048576 bytes per rank$" \
    "^ring: every lap came back intact$"
echo "PASS"
