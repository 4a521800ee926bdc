/*
 * MPI_Sendrecv and MPI_Sendrecv_replace:
 *   - every shift k of a ring (all-to-all in n-1 steps, k = 0 is oneself) at
 *     sizes around the protocol limits, data and status checked;
 *   - a chain with MPI_PROC_NULL at both ends (the status of a receive from
 *     MPI_PROC_NULL; the buffer of Sendrecv_replace is then unchanged);
 *   - different send and receive types and counts; MPI_ANY_SOURCE and
 *     MPI_ANY_TAG on the receive side; MPI_STATUS_IGNORE.
 */
#include "mpitest.h"

static const int k_sizes[] = {0, 1, 4096, 4097, 16384, 65536, 300000};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))

static unsigned seed_of(int from, int to, int n, int phase)
{
    return (unsigned)(from * 131 + to * 7 + n * 3 + phase * 100003);
}

int main(int argc, char** argv)
{
    int maxn = k_sizes[NSIZES - 1];
    unsigned char* sb;
    unsigned char* rb;
    int si, k;
    MPI_Status st;

    mt_init(&argc, &argv);
    sb = malloc((size_t)maxn + 1);
    rb = malloc((size_t)maxn + 1);

    /* Every shift, Sendrecv and Sendrecv_replace. */
    for (si = 0; si < NSIZES; ++si) {
        int n = k_sizes[si];
        for (k = 0; k < mt_size; ++k) {
            int to = (mt_rank + k) % mt_size;
            int from = (mt_rank - k + mt_size) % mt_size;
            int wild = (k + si) % 3; /* 0: specific, 1: ANY_SOURCE, 2: ANY_TAG */
            int tag = 10 + k;
            mt_fill(sb, (size_t)n, seed_of(mt_rank, to, n, 1));
            memset(rb, 0xcc, (size_t)n + 1);
            MT_OK(MPI_Sendrecv(sb, n, MPI_BYTE, to, tag, rb, n, MPI_BYTE,
                               wild == 1 ? MPI_ANY_SOURCE : from, wild == 2 ? MPI_ANY_TAG : tag,
                               MPI_COMM_WORLD, &st));
            MT_CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag && mt_count(&st) == n,
                     "Sendrecv shift %d, %d bytes: source %d tag %d count %d", k, n, st.MPI_SOURCE,
                     st.MPI_TAG, mt_count(&st));
            MT_VERIFY(rb, n, seed_of(from, mt_rank, n, 1), "Sendrecv shift %d", k);
            MT_CHECK(rb[n] == 0xcc, "Sendrecv wrote past the message");
            MT_VERIFY(sb, n, seed_of(mt_rank, to, n, 1), "Sendrecv changed its send buffer");

            mt_fill(rb, (size_t)n, seed_of(mt_rank, to, n, 2));
            rb[n] = 0xcc;
            MT_OK(MPI_Sendrecv_replace(rb, n, MPI_BYTE, to, tag + 1000,
                                       wild == 1 ? MPI_ANY_SOURCE : from,
                                       wild == 2 ? MPI_ANY_TAG : tag + 1000, MPI_COMM_WORLD, &st));
            MT_CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag + 1000 && mt_count(&st) == n,
                     "Sendrecv_replace shift %d, %d bytes: source %d tag %d count %d", k, n,
                     st.MPI_SOURCE, st.MPI_TAG, mt_count(&st));
            MT_VERIFY(rb, n, seed_of(from, mt_rank, n, 2), "Sendrecv_replace shift %d", k);
            MT_CHECK(rb[n] == 0xcc, "Sendrecv_replace wrote past the message");
        }
    }

    /* A chain: rank 0 receives from MPI_PROC_NULL, the last sends to it. */
    for (si = 0; si < NSIZES; ++si) {
        int n = k_sizes[si];
        int right = mt_rank + 1 < mt_size ? mt_rank + 1 : MPI_PROC_NULL;
        int left = mt_rank > 0 ? mt_rank - 1 : MPI_PROC_NULL;
        mt_fill(sb, (size_t)n, seed_of(mt_rank, right, n, 3));
        memset(rb, 0xcc, (size_t)n + 1);
        memset(&st, 0x5a, sizeof st);
        MT_OK(MPI_Sendrecv(sb, n, MPI_BYTE, right, 5, rb, n, MPI_BYTE, left, 5, MPI_COMM_WORLD, &st));
        if (left == MPI_PROC_NULL) {
            MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG &&
                         mt_count(&st) == 0,
                     "receive from MPI_PROC_NULL: source %d tag %d count %d", st.MPI_SOURCE,
                     st.MPI_TAG, mt_count(&st));
            MT_CHECK(rb[0] == 0xcc, "a receive from MPI_PROC_NULL wrote the buffer");
        } else {
            MT_CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 5 && mt_count(&st) == n,
                     "chain: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, mt_count(&st));
            MT_VERIFY(rb, n, seed_of(left, mt_rank, n, 3), "chain");
        }
        mt_fill(rb, (size_t)n, seed_of(mt_rank, right, n, 4));
        memset(&st, 0x5a, sizeof st);
        MT_OK(MPI_Sendrecv_replace(rb, n, MPI_BYTE, right, 6, left, 6, MPI_COMM_WORLD, &st));
        if (left == MPI_PROC_NULL) {
            MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG &&
                         mt_count(&st) == 0,
                     "Sendrecv_replace from MPI_PROC_NULL: source %d tag %d count %d",
                     st.MPI_SOURCE, st.MPI_TAG, mt_count(&st));
            MT_VERIFY(rb, n, seed_of(mt_rank, right, n, 4),
                      "Sendrecv_replace from MPI_PROC_NULL changed the buffer");
        } else {
            MT_VERIFY(rb, n, seed_of(left, mt_rank, n, 4), "chain Sendrecv_replace");
        }
    }

    /* Different types and counts on the two sides; MPI_STATUS_IGNORE. */
    {
        int to = (mt_rank + 1) % mt_size;
        int from = (mt_rank - 1 + mt_size) % mt_size;
        int ints[10];
        unsigned char bytes[64];
        double d[3] = {1.5, -2.25, 1e300};
        double dr[8];
        int i, cnt = -1;
        for (i = 0; i < 10; ++i) {
            ints[i] = mt_rank * 100 + i;
        }
        memset(bytes, 0, sizeof bytes);
        MT_OK(MPI_Sendrecv(ints, 10, MPI_INT, to, 8, bytes, 64, MPI_BYTE, from, 8, MPI_COMM_WORLD,
                           &st));
        MT_OK(MPI_Get_count(&st, MPI_INT, &cnt));
        MT_CHECK(cnt == 10, "int count %d", cnt);
        for (i = 0; i < 10; ++i) {
            int v;
            memcpy(&v, bytes + 4 * i, 4);
            MT_CHECK(v == from * 100 + i, "int %d is %d", i, v);
        }
        MT_OK(MPI_Sendrecv(d, 3, MPI_DOUBLE, to, 9, dr, 8, MPI_DOUBLE, from, 9, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
        MT_CHECK(dr[0] == 1.5 && dr[1] == -2.25 && dr[2] == 1e300, "doubles %g %g %g", dr[0], dr[1],
                 dr[2]);
        MT_OK(MPI_Sendrecv_replace(d, 3, MPI_DOUBLE, to, 10, from, 10, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
        MT_CHECK(d[0] == 1.5 && d[1] == -2.25 && d[2] == 1e300, "replaced doubles %g %g %g", d[0],
                 d[1], d[2]);
    }

    free(sb);
    free(rb);
    return mt_finalize();
}
