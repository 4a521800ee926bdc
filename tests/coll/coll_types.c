/*
 * Collectives with derived datatypes: strided bcast, gather and alltoall
 * whose send and receive types differ (same type signature), reductions on
 * the basic elements of derived types (vector of MPI_INT, contiguous pairs
 * for MPI_MAXLOC), a user op called with the derived type, and MPI_ERR_OP
 * for a predefined op on a type that mixes basic types; a nonblocking
 * bcast whose datatype is freed before MPI_Wait.
 */
#include "mpitest.h"

static void user_sum2(void* in, void* inout, int* len, MPI_Datatype* type)
{
    int* a = in;
    int* b = inout;
    int i;
    (void)type;
    for (i = 0; i < 2 * *len; ++i) {
        b[i] += a[i];
    }
}

int main(int argc, char** argv)
{
    int i, j;
    MPI_Datatype vec, contig3, pair2, mixed, col;
    mt_init(&argc, &argv);

    /* Every other int of 2n ints. */
    MT_OK(MPI_Type_vector(50, 1, 2, MPI_INT, &vec));
    MT_OK(MPI_Type_commit(&vec));
    MT_OK(MPI_Type_contiguous(3, MPI_INT, &contig3));
    MT_OK(MPI_Type_commit(&contig3));
    MT_OK(MPI_Type_contiguous(2, MPI_2INT, &pair2));
    MT_OK(MPI_Type_commit(&pair2));

    /* Bcast of a strided vector: the gaps stay untouched. */
    {
        int buf[100];
        int root = mt_size - 1;
        for (i = 0; i < 100; ++i) {
            buf[i] = mt_rank == root ? i * 3 + 1 : -1;
        }
        MT_OK(MPI_Bcast(buf, 1, vec, root, MPI_COMM_WORLD));
        for (i = 0; i < 100; ++i) {
            int want = (i % 2 == 0 || mt_rank == root) ? i * 3 + 1 : -1;
            if (buf[i] != want) {
                MT_CHECK(0, "bcast vector: element %d is %d, expected %d", i, buf[i], want);
                break;
            }
        }
    }

    /* Gather: 1 x contiguous(3, INT) sent, 3 x INT received. */
    {
        int mine[3] = {mt_rank, mt_rank * 10, mt_rank * 100};
        int* all = malloc(sizeof(int) * 3 * (size_t)mt_size);
        MT_OK(MPI_Gather(mine, 1, contig3, all, 3, MPI_INT, 0, MPI_COMM_WORLD));
        if (mt_rank == 0) {
            for (j = 0; j < mt_size; ++j) {
                MT_CHECK(all[3 * j] == j && all[3 * j + 1] == 10 * j && all[3 * j + 2] == 100 * j,
                         "gather contiguous: block %d is %d %d %d", j, all[3 * j], all[3 * j + 1],
                         all[3 * j + 2]);
            }
        }
        /* and back: scatter 3 x INT, receive 1 x contiguous(3) */
        MT_OK(MPI_Scatter(all, 3, MPI_INT, mine, 1, contig3, 0, MPI_COMM_WORLD));
        MT_CHECK(mine[0] == mt_rank && mine[1] == 10 * mt_rank && mine[2] == 100 * mt_rank,
                 "scatter contiguous: got %d %d %d", mine[0], mine[1], mine[2]);
        free(all);
    }

    /* Alltoall with a column type: matrix p x p, send column j to rank j. */
    {
        int p = mt_size;
        int* m = malloc(sizeof(int) * (size_t)(p * p));
        int* r = malloc(sizeof(int) * (size_t)(p * p));
        MPI_Datatype c0;
        MT_OK(MPI_Type_vector(p, 1, p, MPI_INT, &c0));
        MT_OK(MPI_Type_create_resized(c0, 0, (MPI_Aint)sizeof(int), &col));
        MT_OK(MPI_Type_commit(&col));
        for (i = 0; i < p * p; ++i) {
            m[i] = mt_rank * 10000 + i;
        }
        MT_OK(MPI_Alltoall(m, 1, col, r, p, MPI_INT, MPI_COMM_WORLD));
        for (j = 0; j < p; ++j) {
            for (i = 0; i < p; ++i) {
                int want = j * 10000 + i * p + mt_rank;
                if (r[j * p + i] != want) {
                    MT_CHECK(0, "alltoall column: from %d element %d is %d, expected %d", j, i,
                             r[j * p + i], want);
                    j = p;
                    break;
                }
            }
        }
        MT_OK(MPI_Type_free(&c0));
        MT_OK(MPI_Type_free(&col));
        free(m);
        free(r);
    }

    /* Allreduce on a vector of MPI_INT: the op runs on the basic ints. */
    {
        int s[100], r[100];
        for (i = 0; i < 100; ++i) {
            s[i] = mt_rank + i;
            r[i] = -1;
        }
        MT_OK(MPI_Allreduce(s, r, 1, vec, MPI_SUM, MPI_COMM_WORLD));
        for (i = 0; i < 100; ++i) {
            int want = i % 2 == 0 ? mt_size * (mt_size - 1) / 2 + mt_size * i : -1;
            if (r[i] != want) {
                MT_CHECK(0, "allreduce vector: element %d is %d, expected %d", i, r[i], want);
                break;
            }
        }
        for (i = 0; i < 100; ++i) {
            r[i] = s[i];
        }
        MT_OK(MPI_Allreduce(MPI_IN_PLACE, r, 1, vec, MPI_MAX, MPI_COMM_WORLD));
        for (i = 0; i < 100; ++i) {
            int want = i % 2 == 0 ? mt_size - 1 + i : s[i];
            if (r[i] != want) {
                MT_CHECK(0, "allreduce in place vector max: element %d is %d, expected %d", i,
                         r[i], want);
                break;
            }
        }
    }

    /* MAXLOC on contiguous(2, MPI_2INT): value rank-dependent, ties. */
    {
        int s[8], r[8];
        for (i = 0; i < 4; ++i) {
            s[2 * i] = i == 0 ? mt_rank : (i == 1 ? 5 : (mt_rank * 7) % 3);
            s[2 * i + 1] = mt_rank;
        }
        MT_OK(MPI_Allreduce(s, r, 2, pair2, MPI_MAXLOC, MPI_COMM_WORLD));
        MT_CHECK(r[0] == mt_size - 1 && r[1] == mt_size - 1, "maxloc pair 0: %d@%d", r[0], r[1]);
        MT_CHECK(r[2] == 5 && r[3] == 0, "maxloc pair 1 (all tie): %d@%d", r[2], r[3]);
        {
            int best = -1, at = -1;
            for (j = 0; j < mt_size; ++j) {
                if ((j * 7) % 3 > best) {
                    best = (j * 7) % 3;
                    at = j;
                }
            }
            MT_CHECK(r[4] == best && r[5] == at, "maxloc pair 2: %d@%d, expected %d@%d", r[4],
                     r[5], best, at);
        }
    }

    /* A user op on contiguous(2, INT) elements. */
    {
        MPI_Datatype two;
        MPI_Op op;
        int s[6], r[6];
        MT_OK(MPI_Type_contiguous(2, MPI_INT, &two));
        MT_OK(MPI_Type_commit(&two));
        MT_OK(MPI_Op_create(user_sum2, 1, &op));
        for (i = 0; i < 6; ++i) {
            s[i] = mt_rank * i;
        }
        MT_OK(MPI_Allreduce(s, r, 3, two, op, MPI_COMM_WORLD));
        for (i = 0; i < 6; ++i) {
            MT_CHECK(r[i] == i * mt_size * (mt_size - 1) / 2, "user op on derived: %d is %d", i,
                     r[i]);
        }
        MT_OK(MPI_Op_free(&op));
        MT_OK(MPI_Type_free(&two));
    }

    /* A type mixing int and double: no predefined op applies. */
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};
        char buf[64], out[64];
        MT_OK(MPI_Type_create_struct(2, bl, d, ts, &mixed));
        MT_OK(MPI_Type_commit(&mixed));
        MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        memset(buf, 0, sizeof buf);
        MT_ERR(MPI_ERR_OP, MPI_Allreduce(buf, out, 1, mixed, MPI_SUM, MPI_COMM_WORLD));
        MT_ERR(MPI_ERR_OP, MPI_Reduce_local(buf, out, 1, mixed, MPI_SUM));
        MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
        MT_OK(MPI_Type_free(&mixed));
    }

    /* A nonblocking bcast whose datatype is freed before the wait. */
    {
        MPI_Datatype tmp;
        MPI_Request req;
        int buf[40];
        MT_OK(MPI_Type_vector(20, 1, 2, MPI_INT, &tmp));
        MT_OK(MPI_Type_commit(&tmp));
        for (i = 0; i < 40; ++i) {
            buf[i] = mt_rank == 0 ? i + 5 : -1;
        }
        MT_OK(MPI_Ibcast(buf, 1, tmp, 0, MPI_COMM_WORLD, &req));
        MT_OK(MPI_Type_free(&tmp));
        MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (i = 0; i < 40; ++i) {
            int want = (i % 2 == 0 || mt_rank == 0) ? i + 5 : -1;
            MT_CHECK(buf[i] == want, "ibcast with a freed type: element %d is %d", i, buf[i]);
        }
    }

    MT_OK(MPI_Type_free(&vec));
    MT_OK(MPI_Type_free(&contig3));
    MT_OK(MPI_Type_free(&pair2));
    return mt_finalize();
}
