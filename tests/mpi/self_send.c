/*
 * Messages to oneself, on MPI_COMM_WORLD (to my own rank) and on
 * MPI_COMM_SELF (rank 0), at sizes around the self path's eager limit:
 * Isend then Recv (the message waits as unexpected), Irecv then
 * Send/Ssend/Rsend/Bsend, Sendrecv and Sendrecv_replace, a persistent pair,
 * several messages of one tag received in order, MPI_ANY_SOURCE (the status
 * names my rank in the communicator), and the two communicators kept apart
 * (same tag on both; each receive gets its own communicator's message).
 */
#include "mpitest.h"

static const int k_sizes[] = {0, 1, 4096, 65536, 65537, 1048576};
#define NSIZES 6
#define MAXN 1048576

int main(int argc, char** argv)
{
    unsigned char* sb = malloc(MAXN);
    unsigned char* rb = malloc(MAXN + 1);
    void* bbuf = malloc(MAXN + MPI_BSEND_OVERHEAD);
    int c, si;

    mt_init(&argc, &argv);
    MT_OK(MPI_Buffer_attach(bbuf, MAXN + MPI_BSEND_OVERHEAD));

    for (c = 0; c < 2; ++c) {
        MPI_Comm comm = c == 0 ? MPI_COMM_WORLD : MPI_COMM_SELF;
        int me = c == 0 ? mt_rank : 0;
        const char* cname = c == 0 ? "MPI_COMM_WORLD" : "MPI_COMM_SELF";
        for (si = 0; si < NSIZES; ++si) {
            int n = k_sizes[si];
            int mode;
            MPI_Request s, r;
            MPI_Status st;
            /* Isend, then a blocking receive (MPI_ANY_TAG; MPI_ANY_SOURCE on
             * MPI_COMM_SELF: on MPI_COMM_WORLD the others' final messages to
             * rank 0 may come at any time). */
            mt_fill(sb, (size_t)n, (unsigned)(n + 1));
            memset(rb, 0, (size_t)n + 1);
            MT_OK(MPI_Isend(sb, n, MPI_BYTE, me, 1, comm, &s));
            MT_OK(MPI_Recv(rb, n + 1, MPI_BYTE, c == 0 ? me : MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
            MT_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
            MT_CHECK(st.MPI_SOURCE == me && st.MPI_TAG == 1 && mt_count(&st) == n,
                     "%s, %d bytes: source %d tag %d count %d", cname, n, st.MPI_SOURCE, st.MPI_TAG,
                     mt_count(&st));
            MT_VERIFY(rb, n, (unsigned)(n + 1), "%s Isend+Recv of %d bytes", cname, n);
            /* Irecv posted, then each blocking mode. */
            for (mode = 0; mode < 4; ++mode) {
                mt_fill(sb, (size_t)n, (unsigned)(n + 10 + mode));
                memset(rb, 0, (size_t)n);
                MT_OK(MPI_Irecv(rb, n, MPI_BYTE, me, 2, comm, &r));
                switch (mode) {
                case 0: MT_OK(MPI_Send(sb, n, MPI_BYTE, me, 2, comm)); break;
                case 1: MT_OK(MPI_Ssend(sb, n, MPI_BYTE, me, 2, comm)); break;
                case 2: MT_OK(MPI_Rsend(sb, n, MPI_BYTE, me, 2, comm)); break;
                default: MT_OK(MPI_Bsend(sb, n, MPI_BYTE, me, 2, comm)); break;
                }
                MT_OK(MPI_Wait(&r, &st));
                MT_CHECK(st.MPI_SOURCE == me && mt_count(&st) == n, "%s mode %d: source %d count %d",
                         cname, mode, st.MPI_SOURCE, mt_count(&st));
                MT_VERIFY(rb, n, (unsigned)(n + 10 + mode), "%s mode %d, %d bytes", cname, mode, n);
            }
            /* Sendrecv and Sendrecv_replace. */
            mt_fill(sb, (size_t)n, (unsigned)(n + 20));
            memset(rb, 0, (size_t)n);
            MT_OK(MPI_Sendrecv(sb, n, MPI_BYTE, me, 3, rb, n, MPI_BYTE, me, 3, comm, &st));
            MT_CHECK(st.MPI_SOURCE == me && st.MPI_TAG == 3 && mt_count(&st) == n,
                     "%s Sendrecv: source %d tag %d count %d", cname, st.MPI_SOURCE, st.MPI_TAG,
                     mt_count(&st));
            MT_VERIFY(rb, n, (unsigned)(n + 20), "%s Sendrecv of %d bytes", cname, n);
            mt_fill(rb, (size_t)n, (unsigned)(n + 21));
            MT_OK(MPI_Sendrecv_replace(rb, n, MPI_BYTE, me, 4, MPI_ANY_SOURCE, 4, comm, &st));
            MT_VERIFY(rb, n, (unsigned)(n + 21), "%s Sendrecv_replace of %d bytes", cname, n);
            /* A persistent pair, three times. */
            {
                MPI_Request p[2];
                int k;
                MT_OK(MPI_Recv_init(rb, n, MPI_BYTE, me, 5, comm, &p[0]));
                MT_OK(MPI_Send_init(sb, n, MPI_BYTE, me, 5, comm, &p[1]));
                for (k = 0; k < 3; ++k) {
                    mt_fill(sb, (size_t)n, (unsigned)(n + 30 + k));
                    MT_OK(MPI_Startall(2, p));
                    MT_OK(MPI_Waitall(2, p, MPI_STATUSES_IGNORE));
                    MT_VERIFY(rb, n, (unsigned)(n + 30 + k), "%s persistent, round %d", cname, k);
                }
                MT_OK(MPI_Request_free(&p[0]));
                MT_OK(MPI_Request_free(&p[1]));
            }
        }
        /* Several of one tag, received in the order sent. */
        {
            MPI_Request s[8];
            int vals[8], i, v;
            for (i = 0; i < 8; ++i) {
                vals[i] = 100 + i;
                MT_OK(MPI_Isend(&vals[i], 1, MPI_INT, me, 6, comm, &s[i]));
            }
            for (i = 0; i < 8; ++i) {
                MT_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 6, comm, MPI_STATUS_IGNORE));
                MT_CHECK(v == 100 + i, "%s: message %d received as %d (order)", cname, i, v);
            }
            MT_OK(MPI_Waitall(8, s, MPI_STATUSES_IGNORE));
        }
    }

    /* The two communicators are apart: same tag, same process. */
    {
        int a = 1, b = 2, x = 0, y = 0;
        MPI_Request s[2];
        MT_OK(MPI_Isend(&a, 1, MPI_INT, mt_rank, 7, MPI_COMM_WORLD, &s[0]));
        MT_OK(MPI_Isend(&b, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &s[1]));
        MT_OK(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, MPI_STATUS_IGNORE));
        MT_OK(MPI_Recv(&x, 1, MPI_INT, mt_rank, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_OK(MPI_Waitall(2, s, MPI_STATUSES_IGNORE));
        MT_CHECK(x == 1 && y == 2, "MPI_COMM_WORLD got %d, MPI_COMM_SELF got %d", x, y);
    }
    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
    }
    free(bbuf);
    free(sb);
    free(rb);
    return mt_finalize();
}
