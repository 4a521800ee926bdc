/*
 * Argument errors of the collectives, under MPI_ERRORS_RETURN, each made
 * the same way on every rank (a collective that fails on some ranks only
 * would leave the others waiting): the error class, and that collectives
 * still work afterwards (a failed call uses no collective sequence number).
 */
#include "mpitest.h"

int main(int argc, char** argv)
{
    int a[4] = {1, 2, 3, 4}, b[64];
    int counts[64], displs[64], i;
    MPI_Request req;
    mt_init(&argc, &argv);
    for (i = 0; i < 64; ++i) {
        counts[i] = 1;
        displs[i] = i;
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* communicator */
    MT_ERR(MPI_ERR_COMM, MPI_Barrier(MPI_COMM_NULL));
    MT_ERR(MPI_ERR_COMM, MPI_Bcast(a, 1, MPI_INT, 0, MPI_COMM_NULL));
    MT_ERR(MPI_ERR_COMM, MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, 12345));
    /* root */
    MT_ERR(MPI_ERR_ROOT, MPI_Bcast(a, 1, MPI_INT, mt_size, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ROOT, MPI_Bcast(a, 1, MPI_INT, -1, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ROOT, MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, MPI_ROOT, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ROOT, MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, mt_size + 3, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ROOT, MPI_Iscatter(a, 1, MPI_INT, b, 1, MPI_INT, -7, MPI_COMM_WORLD, &req));
    /* count */
    MT_ERR(MPI_ERR_COUNT, MPI_Bcast(a, -1, MPI_INT, 0, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_COUNT, MPI_Allreduce(a, b, -2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_COUNT, MPI_Alltoall(a, -1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD));
    counts[0] = -1;
    MT_ERR(MPI_ERR_COUNT, MPI_Reduce_scatter(a, b, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_COUNT, MPI_Allgatherv(a, 1, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD));
    counts[0] = 1;
    /* datatype */
    MT_ERR(MPI_ERR_TYPE, MPI_Bcast(a, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_TYPE, MPI_Allreduce(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_TYPE, MPI_Allgather(a, 1, MPI_INT, b, 1, MPI_LB, MPI_COMM_WORLD));
    /* op */
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Reduce(a, b, 1, MPI_INT, 0x58000fff, 0, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Scan(a, b, 1, MPI_DOUBLE, MPI_BOR, MPI_COMM_WORLD));
    /* buffers: aliased, NULL, MPI_IN_PLACE where it does not belong */
    MT_ERR(MPI_ERR_BUFFER, MPI_Allreduce(b, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_BUFFER, MPI_Allgather(b, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_BUFFER, MPI_Alltoall(b, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_BUFFER, MPI_Scan(b, b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_BUFFER, MPI_Bcast(NULL, 3, MPI_INT, 0, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_BUFFER, MPI_Allreduce(NULL, b, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ARG, MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ARG, MPI_Allreduce(a, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ARG, MPI_Allgather(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD));
    /* arrays */
    MT_ERR(MPI_ERR_ARG, MPI_Alltoallv(a, NULL, displs, MPI_INT, b, counts, displs, MPI_INT,
                                      MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ARG, MPI_Allgatherv(a, 1, MPI_INT, b, counts, NULL, MPI_INT, MPI_COMM_WORLD));
    /* request */
    MT_ERR(MPI_ERR_REQUEST, MPI_Ibarrier(MPI_COMM_WORLD, NULL));
    MT_ERR(MPI_ERR_REQUEST, MPI_Iallreduce(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL));

    /* Everything still lines up. */
    {
        int v = mt_rank + 1, sum = 0;
        MT_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        MT_CHECK(sum == mt_size * (mt_size + 1) / 2, "allreduce after errors: %d", sum);
        MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    return mt_finalize();
}
