/*
 * The extremes of message size, data checked word by word:
 *   - zero bytes: NULL buffers with count 0, every send mode, status count 0,
 *     a zero-byte message into a non-empty receive buffer;
 *   - 64 MiB (argument: MiB, default 64): blocking both ways between rank 0
 *     and every other rank, a simultaneous nonblocking exchange, Sendrecv,
 *     counted in MPI_INT, into a larger buffer (the count says 64 MiB), and
 *     to oneself (MPI_COMM_WORLD and MPI_COMM_SELF).
 */
#include "mpitest.h"

static void fill64(uint64_t* p, size_t n, uint64_t seed)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        p[i] = seed * 0x9e3779b97f4a7c15ULL + i;
    }
}

static long verify64(const uint64_t* p, size_t n, uint64_t seed)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        if (p[i] != seed * 0x9e3779b97f4a7c15ULL + i) {
            return (long)i;
        }
    }
    return -1;
}

#define CHECK64(buf, words, seed, what)                                                         \
    do {                                                                                        \
        long at_ = verify64((buf), (words), (seed));                                            \
        MT_CHECK(at_ < 0, "%s: word %ld of %zu differs", what, at_, (size_t)(words));           \
    } while (0)

int main(int argc, char** argv)
{
    size_t mib = 64;
    size_t bytes, words;
    uint64_t* sb;
    uint64_t* rb;
    MPI_Status st;
    int peer;

    mt_init(&argc, &argv);
    if (argc > 1) {
        mib = (size_t)atoi(argv[1]);
    }
    bytes = mib << 20;
    words = bytes / 8;

    /* Zero bytes. */
    {
        int partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
        char small[16];
        MPI_Request r[4];
        int i;
        void* bbuf = malloc(4 * MPI_BSEND_OVERHEAD);
        MT_OK(MPI_Buffer_attach(bbuf, 4 * MPI_BSEND_OVERHEAD));
        for (i = 0; i < 4; ++i) {
            MT_OK(MPI_Irecv(i < 2 ? NULL : small, i < 2 ? 0 : 16, MPI_BYTE, partner, i,
                            MPI_COMM_WORLD, &r[i]));
        }
        MT_OK(MPI_Sendrecv(NULL, 0, MPI_BYTE, partner, 9, NULL, 0, MPI_BYTE, partner, 9,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_OK(MPI_Send(NULL, 0, MPI_INT, partner, 0, MPI_COMM_WORLD));
        MT_OK(MPI_Ssend(NULL, 0, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD));
        MT_OK(MPI_Bsend(NULL, 0, MPI_BYTE, partner, 2, MPI_COMM_WORLD));
        MT_OK(MPI_Rsend(small, 0, MPI_BYTE, partner, 3, MPI_COMM_WORLD));
        for (i = 0; i < 4; ++i) {
            int cnt = -1;
            MT_OK(MPI_Wait(&r[i], &st));
            MT_OK(MPI_Get_count(&st, MPI_INT, &cnt));
            MT_CHECK(cnt == 0 && st.MPI_SOURCE == partner && st.MPI_TAG == i,
                     "zero-byte message %d: count %d source %d tag %d", i, cnt, st.MPI_SOURCE,
                     st.MPI_TAG);
        }
        {
            void* b;
            int s;
            MT_OK(MPI_Buffer_detach(&b, &s));
        }
        free(bbuf);
    }

    sb = malloc(bytes + 64);
    rb = malloc(bytes + 64);
    if (sb == NULL || rb == NULL) {
        MT_CHECK(0, "cannot allocate 2 x %zu MiB", mib);
        return mt_finalize();
    }

    /* Rank 0 with every other rank, one at a time: blocking both ways. */
    for (peer = 1; peer < mt_size; ++peer) {
        if (mt_rank == 0) {
            fill64(sb, words, (uint64_t)peer);
            MT_OK(MPI_Send(sb, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
            memset(rb, 0, bytes);
            MT_OK(MPI_Recv(rb, (int)(bytes / 4), MPI_INT, peer, 2, MPI_COMM_WORLD, &st));
            MT_CHECK(mt_count(&st) == (int)bytes, "count %d", mt_count(&st));
            CHECK64(rb, words, (uint64_t)(1000 + peer), "64 MiB back from the peer");
        } else if (mt_rank == peer) {
            memset(rb, 0, bytes);
            /* Into a buffer larger than the message. */
            MT_OK(MPI_Recv(rb, (int)bytes + 64, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
            MT_CHECK(mt_count(&st) == (int)bytes, "count %d, expected %zu", mt_count(&st), bytes);
            CHECK64(rb, words, (uint64_t)peer, "64 MiB from rank 0");
            fill64(sb, words, (uint64_t)(1000 + peer));
            MT_OK(MPI_Send(sb, (int)(bytes / 4), MPI_INT, 0, 2, MPI_COMM_WORLD));
        }
    }

    /* Pairs: simultaneous nonblocking exchange, then Sendrecv. */
    {
        int partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
        MPI_Request r[2];
        fill64(sb, words, (uint64_t)(2000 + mt_rank));
        memset(rb, 0, bytes);
        MT_OK(MPI_Irecv(rb, (int)bytes, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &r[0]));
        MT_OK(MPI_Isend(sb, (int)bytes, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &r[1]));
        MT_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK64(rb, words, (uint64_t)(2000 + partner), "Isend/Irecv exchange");
        fill64(sb, words, (uint64_t)(3000 + mt_rank));
        memset(rb, 0, bytes);
        MT_OK(MPI_Sendrecv(sb, (int)bytes, MPI_BYTE, partner, 4, rb, (int)bytes, MPI_BYTE, partner,
                           4, MPI_COMM_WORLD, &st));
        MT_CHECK(mt_count(&st) == (int)bytes, "Sendrecv count %d", mt_count(&st));
        CHECK64(rb, words, (uint64_t)(3000 + partner), "Sendrecv");
    }

    /* To oneself. */
    {
        MPI_Request r;
        fill64(sb, words, 4000);
        memset(rb, 0, bytes);
        MT_OK(MPI_Isend(sb, (int)bytes, MPI_BYTE, mt_rank, 5, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Recv(rb, (int)bytes, MPI_BYTE, mt_rank, 5, MPI_COMM_WORLD, &st));
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MT_CHECK(mt_count(&st) == (int)bytes, "self count %d", mt_count(&st));
        CHECK64(rb, words, 4000, "64 MiB to oneself");
        memset(rb, 0, bytes);
        MT_OK(MPI_Irecv(rb, (int)bytes, MPI_BYTE, 0, 6, MPI_COMM_SELF, &r));
        MT_OK(MPI_Send(sb, (int)bytes, MPI_BYTE, 0, 6, MPI_COMM_SELF));
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK64(rb, words, 4000, "64 MiB on MPI_COMM_SELF");
    }
    free(sb);
    free(rb);
    return mt_finalize();
}
