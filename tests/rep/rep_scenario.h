/*
 * rep_scenario.h -- what the step-by-step recovery scenarios of tests/rep
 * (rep_cut_switch.c, rep_finalize_window.c) share: a clock from a common
 * start, polling the library while waiting, and the 2 ranks x 2 replicas
 * they run as.
 */
#ifndef ULMPI_TESTS_REP_SCENARIO_H
#define ULMPI_TESTS_REP_SCENARIO_H

#include <mpi.h>
#include <mpi-ext.h>

#include <stdio.h>
#include <time.h>

static inline double since(double t0) { return MPI_Wtime() - t0; }

static inline void nap(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

/* Polls the library (so that control messages and recovery progress)
 * until `until` seconds after t0. */
static inline void progress_until(double t0, double until)
{
    while (since(t0) < until) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        nap();
    }
}

/* MPI_Init, then this process's rank and replica index; the job must be
 * `-n 2 --replicas 2` (else it aborts, naming the program). */
static inline void scenario_init(int* argc, char*** argv, const char* name, int* rank,
                                 int* replica)
{
    int size = 0, replicas = 1;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    *replica = 0;
    MPIX_Replica_info(replica, &replicas);
    if (size != 2 || replicas != 2) {
        if (*rank == 0) {
            fprintf(stderr, "%s: run with -n 2 --replicas 2\n", name);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

#endif
