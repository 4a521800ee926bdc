/*
 * rep_cut_switch.c -- replica recovery (docs/replication.md "Recovery"): a
 * message whose sender stopped serving its receiver, and then died before
 * the receiver had its data, is sent again by the receiver's new server.
 *
 * Run as `mpirun -n 2 --replicas 2 --param rep_fork_delay_ms=500`: processes
 * 0 and 2 are the replicas of rank 0, 1 and 3 those of rank 1.
 *  1. Rank 0 sends rank 1 a rendezvous-sized message; process 0 dies right
 *     after. Process 1 (replica 0 of rank 1) asks process 2, the substitute,
 *     for it: process 2 sends it a copy, which process 1 stores (its
 *     program does not receive yet).
 *  2. Process 2 re-creates process 0 (500 ms after the death, so after it
 *     sent the copy); process 1 now receives rank 0's messages from the new
 *     process 0, from the message after the stored one.
 *  3. Process 2 dies (1.5 s after the start) before process 1 took the
 *     data of its stored copy: process 1 must get that message again from
 *     the new process 0, numbered as before, while the new process's later
 *     messages (small ones, sent meanwhile) are in flight.
 *  4. At 3 s rank 1 receives everything; every replica checks the data.
 * Before the fix the receive in 4 waited forever on process 1 (mpirun's
 * --timeout ends it).
 */
#define _POSIX_C_SOURCE 200809L
#include "rep_scenario.h"

#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define BIG 65536 /* ints: 256 KiB, above every path's eager limit */
#define SMALL 8

int main(int argc, char** argv)
{
    const pid_t first_pid = getpid();
    int rank, replica, errors = 0;
    scenario_init(&argc, &argv, "rep_cut_switch", &rank, &replica);
    int* big = malloc(sizeof(int) * BIG);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (rank == 0) {
        for (int i = 0; i < BIG; ++i) {
            big[i] = i ^ 0x2545;
        }
        MPI_Request req;
        MPI_Isend(big, BIG, MPI_INT, 1, 5, MPI_COMM_WORLD, &req);
        if (replica == 0 && getpid() == first_pid) {
            int flag = 0;
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE); /* its first fragment leaves */
            raise(SIGKILL);
        }
        /* The substitute (and the process it re-creates, a fork of it). */
        progress_until(t0, 1.0);
        for (int m = 0; m < SMALL; ++m) {
            MPI_Send(&m, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
        }
        if (replica == 1 && getpid() == first_pid) {
            progress_until(t0, 1.5);
            raise(SIGKILL);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        progress_until(t0, 3.0);
        MPI_Recv(big, BIG, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < BIG; ++i) {
            errors += big[i] != (i ^ 0x2545);
        }
        for (int m = 0; m < SMALL; ++m) {
            int got = -1;
            MPI_Recv(&got, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += got != m;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(errors == 0 ? "No Errors\n" : "%d errors\n", errors);
    }
    free(big);
    MPI_Finalize();
    return errors != 0;
}
