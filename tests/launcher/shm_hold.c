/* shm_hold: the ranks wire up (shared memory between them), rank 0 prints
 * "ready", and every rank then waits in MPI_Recv for a message that never
 * comes, until the test kills mpirun (SIGKILL: the ranks die with it). The
 * test looks for shared-memory files of the job while it runs and after.
 * A receive that returns is a failure (exit 1). */
#include <mpi.h>

#include <stdio.h>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* A round of messages over shared memory before saying ready. */
    int x = rank;
    int sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ready %d\n", sum);
        fflush(stdout);
    }
    int rc = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: the receive returned %d\n", rank, rc);
    return 1;
}
