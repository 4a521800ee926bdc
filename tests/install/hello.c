/* Installation test program (C): every rank passes its rank to the next one
 * around a ring and rank 0 names the library it was linked with, so a test
 * can tell ulmpi from another MPI that happens to be installed. */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, got = -1, len = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 7, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
        MPI_Get_library_version(version, &len);
        printf("library: %s\n", version);
    }
    printf("c rank %d of %d: got %d %s\n", rank, size, got,
           got == (rank + size - 1) % size ? "ok" : "WRONG");
    MPI_Finalize();
    return got == (rank + size - 1) % size ? 0 : 1;
}
