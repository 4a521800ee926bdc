/*
 * Under the default MPI_ERRORS_ARE_FATAL one bad call ends the whole job:
 * the last rank makes the call named by the argument while every other rank
 * waits in MPI_Recv for a message that never comes. The testlist checks
 * that mpirun exits non-zero, soon, with a message that names the rank and
 * the call. The program prints "t0=<MPI_Wtime>" just before the bad call
 * (the runner's clock is the same CLOCK_MONOTONIC).
 *
 *   send_rank      MPI_Send to rank `size`             (MPI_ERR_RANK)
 *   recv_tag       MPI_Recv with tag -5                (MPI_ERR_TAG)
 *   count          MPI_Isend with count -1             (MPI_ERR_COUNT)
 *   comm_null      MPI_Send on MPI_COMM_NULL           (MPI_ERR_COMM)
 *   type_null      MPI_Recv of MPI_DATATYPE_NULL       (MPI_ERR_TYPE)
 *   buffer         MPI_Send of NULL, count 3           (MPI_ERR_BUFFER)
 *   request        MPI_Wait on a garbage request       (MPI_ERR_REQUEST)
 *   truncate       MPI_Recv of 8 bytes into 4          (MPI_ERR_TRUNCATE)
 *   bsend          MPI_Bsend with no buffer attached   (MPI_ERR_BUFFER)
 *   self           MPI_Send to rank 1 of MPI_COMM_SELF (MPI_ERR_RANK)
 *   errors_abort   MPI_Send to rank `size` under MPI_ERRORS_ABORT (MPI-4)
 *                  set on MPI_COMM_WORLD                (MPI_ERR_RANK)
 */
#include "mpitest.h"

#include <time.h>

int main(int argc, char** argv)
{
    const char* what = argc > 1 ? argv[1] : "send_rank";
    int x[2] = {1, 2};
    int last;

    mt_init(&argc, &argv);
    last = mt_size - 1;
    /* Everyone is in MPI before the bad call (mt_init printed the job id). */
    mt_barrier();
    if (mt_rank != last) {
        MPI_Recv(x, 2, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("rank %d: the receive that nobody sends completed\n", mt_rank);
        return 1;
    }
    if (strcmp(what, "truncate") == 0) {
        MPI_Send(x, 2, MPI_INT, mt_rank, 1, MPI_COMM_WORLD);
    }
    {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("t0=%.6f\n", (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
        fflush(stdout);
    }
    if (strcmp(what, "send_rank") == 0) {
        MPI_Send(x, 1, MPI_INT, mt_size, 0, MPI_COMM_WORLD);
    } else if (strcmp(what, "recv_tag") == 0) {
        MPI_Recv(x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (strcmp(what, "count") == 0) {
        MPI_Request r;
        MPI_Isend(x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r);
    } else if (strcmp(what, "comm_null") == 0) {
        MPI_Send(x, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    } else if (strcmp(what, "type_null") == 0) {
        MPI_Recv(x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (strcmp(what, "buffer") == 0) {
        MPI_Send(NULL, 3, MPI_INT, 0, 0, MPI_COMM_WORLD);
    } else if (strcmp(what, "request") == 0) {
        MPI_Request r = 0x6c00abcd;
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (strcmp(what, "truncate") == 0) {
        MPI_Recv(x, 1, MPI_INT, mt_rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (strcmp(what, "bsend") == 0) {
        MPI_Bsend(x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    } else if (strcmp(what, "self") == 0) {
        MPI_Send(x, 1, MPI_INT, 1, 0, MPI_COMM_SELF);
    } else if (strcmp(what, "errors_abort") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
        MPI_Send(x, 1, MPI_INT, mt_size, 0, MPI_COMM_WORLD);
    } else {
        printf("unknown case %s\n", what);
        return 2;
    }
    printf("rank %d: the bad call (%s) returned\n", mt_rank, what);
    return 1;
}
