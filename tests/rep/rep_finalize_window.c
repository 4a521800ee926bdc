/*
 * rep_finalize_window.c -- replica recovery (docs/replication.md "Recovery"):
 * a process that is in MPI_Finalize still keeps, and serves, what a replica
 * being re-created will ask it for. mpirun grants a re-creation until a
 * finalize fence reaches it, so a new process can be forked while others
 * are already finishing.
 *
 * Run as `mpirun -n 2 --replicas 2 --param rep_fork_delay_ms=300`:
 * processes 0 and 2 are the replicas of rank 0, 1 and 3 those of rank 1.
 *  1. Process 2 (replica 1 of rank 0) dies at the start. Process 3 sends
 *     its message to rank 0 (kept for the replica of rank 0 to come) and
 *     enters MPI_Finalize, where it waits for process 0's acknowledgement.
 *  2. Process 0 re-creates process 2 (300 ms after the death). The new
 *     process, a copy of process 0 that has not received the message yet,
 *     stays out of the library until 3 s, so its request to process 3 (its
 *     server for rank 1's messages) leaves only then.
 *  3. At 1.5 s process 1 sends the same message; process 0 receives it and
 *     acknowledges it to process 3, whose finalize wait then ends.
 *  4. At 3 s the new process asks process 3 for the message: process 3 must
 *     still hold it. Before the fix it had dropped it at its MPI_Finalize
 *     ("asks for message 1 to rank 0, which is no longer held"): the new
 *     process waited in MPI_Recv and process 1 at MPI_Finalize for its
 *     acknowledgement (mpirun's --timeout ends it).
 */
#define _POSIX_C_SOURCE 200809L
#include "rep_scenario.h"

#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define N 16

int main(int argc, char** argv)
{
    const pid_t first_pid = getpid();
    int rank, replica, errors = 0;
    scenario_init(&argc, &argv, "rep_finalize_window", &rank, &replica);
    int msg[N];
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (rank == 0) {
        if (replica == 1 && getpid() == first_pid) {
            raise(SIGKILL);
        }
        /* Process 0, and the process it re-creates (a fork of it). */
        while (since(t0) < 1.0) {
            int flag = 0, now = replica, nrep = 2;
            MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            MPIX_Replica_info(&now, &nrep);
            if (now != replica) {
                /* The new process: out of the library until 3 s. */
                while (since(t0) < 3.0) {
                    nap();
                }
                break;
            }
            nap();
        }
        MPI_Recv(msg, N, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < N; ++i) {
            errors += msg[i] != i * 7 + 3;
        }
        int now = replica, nrep = 2;
        MPIX_Replica_info(&now, &nrep);
        if (now == replica) {
            printf(errors == 0 ? "No Errors\n" : "%d errors\n", errors);
        } else if (errors != 0) {
            fprintf(stderr, "rep_finalize_window: the re-created process got %d wrong\n", errors);
        }
    } else {
        for (int i = 0; i < N; ++i) {
            msg[i] = i * 7 + 3;
        }
        progress_until(t0, replica == 1 ? 0.2 : 1.5);
        MPI_Send(msg, N, MPI_INT, 0, 5, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return errors != 0;
}
