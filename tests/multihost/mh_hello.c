/* Prints where each rank runs: the processor name must be the job-map host
 * (ULMPI_HOST), not gethostname(). Uses no point-to-point traffic, so it runs
 * across hosts even without a network path between them... as long as MPI_Init
 * can reach every peer (one host, or a network path such as udp). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv)
{
    int rank = -1;
    int size = 0;
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    const char* host = getenv("ULMPI_HOST");
    int ok = host != NULL && strcmp(host, name) == 0 && (int)strlen(name) == len;
    printf("hello rank=%d size=%d name=%s %s\n", rank, size, name, ok ? "ok" : "MISMATCH");
    fflush(stdout);
    MPI_Finalize();
    return ok ? 0 : 1;
}
