/*
 * MPI_Request_free on requests that are still active: the operation goes on
 * and completes normally, nobody waits for it.
 *   - sends (Isend, Issend, Ibsend, a started persistent send) of eager and
 *     rendezvous sizes: the partner receives every one intact;
 *   - receives (Irecv, a started persistent receive): the message sent first
 *     matches the freed receive (non-overtaking: it was posted first), the
 *     next one a normal receive; the freed receive's buffer fills in.
 *   - inactive persistent requests.
 * Buffers of freed operations stay allocated until the end.
 */
#include "mpitest.h"

static const int k_sizes[] = {0, 16, 4096, 5000, 70000, 1000000};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))
#define NKINDS 4

int main(int argc, char** argv)
{
    int partner;
    int si, kind;
    unsigned char* keep[NSIZES * NKINDS * 2];
    int nkeep = 0;
    void* bbuf;
    int bsize = 0;
    MPI_Request r;
    MPI_Status st;

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    for (si = 0; si < NSIZES; ++si) {
        bsize += k_sizes[si] + MPI_BSEND_OVERHEAD + 16;
    }
    bbuf = malloc((size_t)bsize);
    MT_OK(MPI_Buffer_attach(bbuf, bsize));

    /* Sends freed while active. */
    for (kind = 0; kind < NKINDS; ++kind) {
        for (si = 0; si < NSIZES; ++si) {
            int n = k_sizes[si];
            int tag = 100 + kind * 10 + si;
            unsigned char* sb = malloc((size_t)n + 1);
            unsigned char* rb = malloc((size_t)n + 1);
            keep[nkeep++] = sb;
            mt_fill(sb, (size_t)n, (unsigned)(tag * 7 + mt_rank));
            switch (kind) {
            case 0: MT_OK(MPI_Isend(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r)); break;
            case 1: MT_OK(MPI_Issend(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r)); break;
            case 2: MT_OK(MPI_Ibsend(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r)); break;
            default: {
                MPI_Request p;
                MT_OK(MPI_Send_init(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &p));
                MT_OK(MPI_Start(&p));
                r = p;
                break;
            }
            }
            MT_OK(MPI_Request_free(&r));
            MT_CHECK(r == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
            memset(rb, 0, (size_t)n + 1);
            MT_OK(MPI_Recv(rb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
            MT_CHECK(mt_count(&st) == n, "count %d, expected %d", mt_count(&st), n);
            MT_VERIFY(rb, n, (unsigned)(tag * 7 + partner), "freed send kind %d of %d bytes", kind,
                      n);
            free(rb);
        }
    }

    /* Receives freed while active. The partner sends A then B, same tag;
     * A matches the freed receive (posted first), B the blocking receive. */
    for (kind = 0; kind < 2; ++kind) {
        for (si = 0; si < NSIZES; ++si) {
            int n = k_sizes[si];
            int tag = 300 + kind * 10 + si;
            unsigned char* a = malloc((size_t)n + 1);
            unsigned char* b = malloc((size_t)n + 1);
            unsigned char* sa = malloc((size_t)n + 1);
            unsigned char* sb = malloc((size_t)n + 1);
            MPI_Request sr[2];
            double deadline;
            keep[nkeep++] = a;
            memset(a, 0, (size_t)n + 1);
            if (kind == 0) {
                MT_OK(MPI_Irecv(a, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
            } else {
                MT_OK(MPI_Recv_init(a, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
                MT_OK(MPI_Start(&r));
            }
            MT_OK(MPI_Request_free(&r));
            MT_CHECK(r == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
            /* Both sides have posted (and freed) before anything is sent. */
            MT_OK(MPI_Sendrecv(NULL, 0, MPI_BYTE, partner, 299, NULL, 0, MPI_BYTE, partner, 299,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            mt_fill(sa, (size_t)n, (unsigned)(tag * 11 + mt_rank));
            mt_fill(sb, (size_t)n, (unsigned)(tag * 13 + mt_rank));
            MT_OK(MPI_Isend(sa, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &sr[0]));
            MT_OK(MPI_Isend(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &sr[1]));
            memset(b, 0, (size_t)n + 1);
            MT_OK(MPI_Recv(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
            MT_VERIFY(b, n, (unsigned)(tag * 13 + partner),
                      "second message (the first went to a freed receive, kind %d)", kind);
            /* The freed receive's data lands sooner or later (a rendezvous may
             * still be streaming): keep the library progressing until it has. */
            deadline = MPI_Wtime() + 20.0;
            while (mt_verify(a, (size_t)n, (unsigned)(tag * 11 + partner)) >= 0 &&
                   MPI_Wtime() < deadline) {
                int flag;
                MPI_Iprobe(partner, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            }
            MT_VERIFY(a, n, (unsigned)(tag * 11 + partner), "message into a freed receive "
                      "(kind %d)", kind);
            MT_OK(MPI_Waitall(2, sr, MPI_STATUSES_IGNORE));
            free(b);
            free(sa);
            free(sb);
        }
    }

    /* Inactive persistent requests, never started or finished. */
    {
        int x = 0;
        MPI_Request p;
        MT_OK(MPI_Recv_init(&x, 1, MPI_INT, partner, 5, MPI_COMM_WORLD, &p));
        MT_OK(MPI_Request_free(&p));
        MT_CHECK(p == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
        MT_OK(MPI_Ssend_init(&x, 1, MPI_INT, partner, 5, MPI_COMM_WORLD, &p));
        MT_OK(MPI_Request_free(&p));
        MT_OK(MPI_Bsend_init(&x, 1, MPI_INT, partner, 5, MPI_COMM_WORLD, &p));
        MT_OK(MPI_Request_free(&p));
        MT_OK(MPI_Rsend_init(&x, 1, MPI_INT, partner, 5, MPI_COMM_WORLD, &p));
        MT_OK(MPI_Request_free(&p));
    }

    /* Everything freed has finished once both sides got here and flushed. */
    MT_OK(MPI_Sendrecv(NULL, 0, MPI_BYTE, partner, 298, NULL, 0, MPI_BYTE, partner, 298,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
    }
    free(bbuf);
    {
        int rc = mt_finalize();
        while (nkeep > 0) {
            free(keep[--nkeep]);
        }
        return rc;
    }
}
