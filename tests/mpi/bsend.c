/*
 * Buffered mode: MPI_Buffer_attach / MPI_Buffer_detach, MPI_Bsend,
 * MPI_Ibsend, MPI_Bsend_init.
 *   - detach returns the attached buffer and size;
 *   - detach waits until every buffered message has left the buffer: a
 *     rendezvous-sized MPI_Bsend whose receiver posts late; after detach
 *     returns, the sender scribbles over the buffer, and the receiver must
 *     still get the original data (and the receive was posted before detach
 *     returned: both ranks read the same CLOCK_MONOTONIC through MPI_Wtime);
 *   - a buffer of exactly size + MPI_BSEND_OVERHEAD holds one message of
 *     `size` bytes (MPI-3.1 section 3.6.1);
 *   - with MPI_ERRORS_RETURN: no buffer attached, a buffer too small (Bsend,
 *     Ibsend, Bsend_init + Start) give MPI_ERR_BUFFER; attaching twice fails;
 *   - buffered sends to oneself.
 */
#include "mpitest.h"

#define BIG 1000000

int main(int argc, char** argv)
{
    int partner;
    unsigned char* buf;
    unsigned char* data;
    void* b;
    int s;

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    data = malloc(BIG);

    /* Attach / detach give back what was attached. */
    {
        int size = 10000;
        buf = malloc((size_t)size);
        MT_OK(MPI_Buffer_attach(buf, size));
        MT_OK(MPI_Buffer_detach(&b, &s));
        MT_CHECK(b == buf && s == size, "detach: %p/%d, attached %p/%d", b, s, (void*)buf, size);
        free(buf);
    }

    /* Detach waits for a message the receiver takes late. */
    if (partner != mt_rank) {
        int size = BIG + MPI_BSEND_OVERHEAD + 64;
        double posted_at = 0.0, detached_at = 0.0;
        buf = malloc((size_t)size);
        if (mt_rank < partner) {
            MT_OK(MPI_Buffer_attach(buf, size));
            mt_fill(data, BIG, 11);
            MT_OK(MPI_Bsend(data, BIG, MPI_BYTE, partner, 1, MPI_COMM_WORLD));
            memset(data, 0, BIG); /* a buffered send's data is ours again at once */
            MT_OK(MPI_Buffer_detach(&b, &s));
            detached_at = MPI_Wtime();
            MT_CHECK(b == buf && s == size, "detach: %p/%d, attached %p/%d", b, s, (void*)buf, size);
            memset(buf, 0xff, (size_t)size); /* the buffer is ours again too */
            MT_OK(MPI_Recv(&posted_at, 1, MPI_DOUBLE, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MT_CHECK(detached_at >= posted_at,
                     "MPI_Buffer_detach returned at %.6f, before the receive was posted at %.6f",
                     detached_at, posted_at);
        } else {
            MPI_Request r;
            MPI_Status st;
            mt_sleep_ms(300);
            memset(data, 0, BIG);
            posted_at = MPI_Wtime();
            MT_OK(MPI_Irecv(data, BIG, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &r));
            MT_OK(MPI_Wait(&r, &st));
            MT_CHECK(mt_count(&st) == BIG, "count %d", mt_count(&st));
            MT_VERIFY(data, BIG, 11, "buffered message (the sender scribbles after detach)");
            MT_OK(MPI_Send(&posted_at, 1, MPI_DOUBLE, partner, 2, MPI_COMM_WORLD));
        }
        free(buf);
    }

    /* Exactly size + MPI_BSEND_OVERHEAD, for one and for two messages. */
    {
        static const int sizes[] = {0, 1, 1001, 4097, 100003};
        int i;
        for (i = 0; i < 5; ++i) {
            int n = sizes[i];
            int k, nmsg;
            for (nmsg = 1; nmsg <= 2; ++nmsg) {
                int size = nmsg * (n + MPI_BSEND_OVERHEAD);
                buf = malloc((size_t)size);
                MT_OK(MPI_Buffer_attach(buf, size));
                mt_fill(data, (size_t)n, (unsigned)n);
                for (k = 0; k < nmsg; ++k) {
                    int rc = MPI_Bsend(data, n, MPI_BYTE, partner, 3, MPI_COMM_WORLD);
                    MT_CHECK(rc == MPI_SUCCESS, "MPI_Bsend #%d of %d bytes into a buffer of %d "
                             "(%d x (size + MPI_BSEND_OVERHEAD)) failed: %s", k + 1, n, size, nmsg,
                             mt_errname(rc));
                }
                for (k = 0; k < nmsg; ++k) {
                    unsigned char* in = malloc((size_t)n + 1);
                    MT_OK(MPI_Recv(in, n, MPI_BYTE, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    MT_VERIFY(in, n, (unsigned)n, "buffered message of %d bytes", n);
                    free(in);
                }
                MT_OK(MPI_Buffer_detach(&b, &s));
                free(buf);
            }
        }
    }

    /* Errors, returned. */
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    {
        MPI_Request r;
        int small = 100 + MPI_BSEND_OVERHEAD;
        MT_ERR(MPI_ERR_BUFFER, MPI_Bsend(data, 10, MPI_BYTE, partner, 4, MPI_COMM_WORLD));
        MT_ERR(MPI_ERR_BUFFER, MPI_Ibsend(data, 10, MPI_BYTE, partner, 4, MPI_COMM_WORLD, &r));
        buf = malloc((size_t)small);
        MT_OK(MPI_Buffer_attach(buf, small));
        {
            int rc = MPI_Buffer_attach(data, 1000);
            MT_CHECK(rc != MPI_SUCCESS, "a second MPI_Buffer_attach succeeded");
        }
        MT_ERR(MPI_ERR_BUFFER, MPI_Bsend(data, 1000, MPI_BYTE, partner, 4, MPI_COMM_WORLD));
        MT_ERR(MPI_ERR_BUFFER, MPI_Ibsend(data, 1000, MPI_BYTE, partner, 4, MPI_COMM_WORLD, &r));
        {
            MPI_Request p;
            MT_OK(MPI_Bsend_init(data, 1000, MPI_BYTE, partner, 4, MPI_COMM_WORLD, &p));
            MT_ERR(MPI_ERR_BUFFER, MPI_Start(&p));
            MT_OK(MPI_Request_free(&p));
        }
        /* A message that fits still goes, after the failures. */
        mt_fill(data, 100, 5);
        MT_OK(MPI_Bsend(data, 100, MPI_BYTE, partner, 5, MPI_COMM_WORLD));
        {
            unsigned char in[100];
            MT_OK(MPI_Recv(in, 100, MPI_BYTE, partner, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MT_VERIFY(in, 100, 5, "buffered message after failed ones");
        }
        MT_OK(MPI_Buffer_detach(&b, &s));
        MT_CHECK(b == buf && s == small, "detach after errors: %p/%d", b, s);
        free(buf);
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

    /* To oneself: Bsend, Ibsend, Bsend_init, then receive. */
    {
        int size = 3 * (70000 + MPI_BSEND_OVERHEAD + 64);
        MPI_Request r[2];
        unsigned char* in = malloc(70000);
        int k;
        buf = malloc((size_t)size);
        MT_OK(MPI_Buffer_attach(buf, size));
        mt_fill(data, 70000, 21);
        MT_OK(MPI_Bsend(data, 70000, MPI_BYTE, mt_rank, 6, MPI_COMM_WORLD));
        MT_OK(MPI_Ibsend(data, 70000, MPI_BYTE, mt_rank, 7, MPI_COMM_WORLD, &r[0]));
        MT_OK(MPI_Bsend_init(data, 70000, MPI_BYTE, mt_rank, 8, MPI_COMM_WORLD, &r[1]));
        MT_OK(MPI_Start(&r[1]));
        MT_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        memset(data, 0, 70000);
        for (k = 8; k >= 6; --k) {
            memset(in, 0, 70000);
            MT_OK(MPI_Recv(in, 70000, MPI_BYTE, mt_rank, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MT_VERIFY(in, 70000, 21, "buffered message to oneself, tag %d", k);
        }
        MT_OK(MPI_Request_free(&r[1]));
        MT_OK(MPI_Buffer_detach(&b, &s));
        free(buf);
        free(in);
    }
    free(data);
    return mt_finalize();
}
