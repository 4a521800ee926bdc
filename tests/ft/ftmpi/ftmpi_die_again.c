/*
 * ftmpi_die_again DIES: under FT-MPI REBUILD, rank 1 kills itself right
 * after MPI_Init in each of its first DIES processes (its incarnation,
 * ULMPI_INCARNATION, is below DIES); the others broadcast a flag from rank 0
 * until rank 0 has run for a second and every rank is back, ignoring the
 * errors the failures raise (the recovery is automatic). Tests mpirun's
 * --max-restarts: with DIES above it the job must end with a message, not
 * restart rank 1 forever; with DIES at or below it the job finishes and rank
 * 0 prints "No Errors".
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv)
{
    const int dies = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char* inc = getenv("ULMPI_INCARNATION");
    if (rank == 1 && (inc == NULL ? 0 : atoi(inc)) < dies) {
        raise(SIGKILL);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    alarm(60); /* a hang ends the test */
    const double t0 = MPI_Wtime();
    int stop = 0, rounds = 0;
    while (!stop) {
        if (rank == 0) {
            stop = MPI_Wtime() - t0 > 1.0 && rounds > 10;
        }
        if (MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS) {
            ++rounds;
        } else {
            stop = 0; /* recovered: go on */
        }
        usleep(1000);
    }
    if (rank == 0) {
        printf(" No Errors\n");
    }
    MPI_Finalize();
    return 0;
}
