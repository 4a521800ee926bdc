/*
 * A synchronous send completes only once its receive has matched.
 *
 *   - MPI_Issend, then many MPI_Test / MPI_Testall / MPI_Waitany-free polls
 *     while the receiver cannot have posted (it waits for our token, sent
 *     after the polls): none may complete;
 *   - blocking MPI_Ssend (and MPI_Ssend_init + MPI_Start + MPI_Wait) to a
 *     receiver that sleeps 100 ms, then reads MPI_Wtime and posts: the send
 *     must return at or after that time (both ranks read the same
 *     CLOCK_MONOTONIC on this host);
 *   - to oneself: MPI_Issend does not complete until the receive is posted.
 * Sizes: 0 bytes, eager, rendezvous. Pairs rank ^ 1 take both roles in turn.
 */
#include "mpitest.h"

static const int k_sizes[] = {0, 8, 4096, 100000};
#define NSIZES 4
#define POLLS 2000

int main(int argc, char** argv)
{
    int partner, si, role;
    unsigned char* sb = malloc(100000);
    unsigned char* rb = malloc(100000);

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;

    if (partner != mt_rank) {
        for (role = 0; role < 2; ++role) {
            int sender = (role == 0) == (mt_rank < partner);
            for (si = 0; si < NSIZES; ++si) {
                int n = k_sizes[si];
                int variant;
                /* 1. Issend polled while no receive can exist. */
                if (sender) {
                    MPI_Request r, arr[2];
                    int i, flag = 0, idx;
                    mt_fill(sb, (size_t)n, (unsigned)(si + 1));
                    MT_OK(MPI_Issend(sb, n, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &r));
                    for (i = 0; i < POLLS && !flag; ++i) {
                        MT_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
                    }
                    MT_CHECK(!flag, "MPI_Issend of %d bytes completed before its receive was "
                             "posted (MPI_Test)", n);
                    arr[0] = MPI_REQUEST_NULL;
                    arr[1] = r;
                    if (!flag) {
                        MT_OK(MPI_Testall(2, arr, &flag, MPI_STATUSES_IGNORE));
                        MT_CHECK(!flag, "MPI_Issend of %d bytes completed early (MPI_Testall)", n);
                    }
                    if (!flag) {
                        MT_OK(MPI_Testany(2, arr, &idx, &flag, MPI_STATUS_IGNORE));
                        MT_CHECK(!flag, "MPI_Issend of %d bytes completed early (MPI_Testany)", n);
                    }
                    MT_OK(MPI_Send(NULL, 0, MPI_BYTE, partner, 2, MPI_COMM_WORLD));
                    if (!flag) {
                        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
                    }
                } else {
                    MPI_Status st;
                    MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    memset(rb, 0, (size_t)n);
                    MT_OK(MPI_Recv(rb, n, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &st));
                    MT_CHECK(mt_count(&st) == n, "count %d", mt_count(&st));
                    MT_VERIFY(rb, n, (unsigned)(si + 1), "Issend data");
                }
                /* 2. Blocking Ssend / persistent, receiver late by 100 ms. */
                for (variant = 0; variant < 2; ++variant) {
                    if (sender) {
                        double returned, posted = 0.0;
                        mt_fill(sb, (size_t)n, (unsigned)(si + 10 + variant));
                        if (variant == 0) {
                            MT_OK(MPI_Ssend(sb, n, MPI_BYTE, partner, 3, MPI_COMM_WORLD));
                        } else {
                            MPI_Request p;
                            MT_OK(MPI_Ssend_init(sb, n, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &p));
                            MT_OK(MPI_Start(&p));
                            MT_OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
                            MT_OK(MPI_Request_free(&p));
                        }
                        returned = MPI_Wtime();
                        MT_OK(MPI_Recv(&posted, 1, MPI_DOUBLE, partner, 4, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE));
                        MT_CHECK(returned >= posted,
                                 "%s of %d bytes returned at %.6f, before the receive was posted "
                                 "at %.6f", variant ? "MPI_Ssend_init" : "MPI_Ssend", n, returned,
                                 posted);
                    } else {
                        double posted;
                        mt_sleep_ms(100);
                        memset(rb, 0, (size_t)n);
                        posted = MPI_Wtime();
                        MT_OK(MPI_Recv(rb, n, MPI_BYTE, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                        MT_VERIFY(rb, n, (unsigned)(si + 10 + variant), "Ssend data");
                        MT_OK(MPI_Send(&posted, 1, MPI_DOUBLE, partner, 4, MPI_COMM_WORLD));
                    }
                }
            }
        }
    }

    /* To oneself. */
    for (si = 0; si < NSIZES; ++si) {
        int n = k_sizes[si];
        MPI_Request s, r;
        int i, flag = 0;
        mt_fill(sb, (size_t)n, (unsigned)(si + 20));
        MT_OK(MPI_Issend(sb, n, MPI_BYTE, mt_rank, 5, MPI_COMM_WORLD, &s));
        for (i = 0; i < POLLS && !flag; ++i) {
            MT_OK(MPI_Test(&s, &flag, MPI_STATUS_IGNORE));
        }
        MT_CHECK(!flag, "MPI_Issend of %d bytes to oneself completed with no receive posted", n);
        memset(rb, 0, (size_t)n);
        MT_OK(MPI_Irecv(rb, n, MPI_BYTE, mt_rank, 5, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (!flag) {
            MT_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        }
        MT_VERIFY(rb, n, (unsigned)(si + 20), "Issend to oneself");
        /* Blocking, with the receive posted first. */
        MT_OK(MPI_Irecv(rb, n, MPI_BYTE, 0, 6, MPI_COMM_SELF, &r));
        MT_OK(MPI_Ssend(sb, n, MPI_BYTE, 0, 6, MPI_COMM_SELF));
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    free(sb);
    free(rb);
    return mt_finalize();
}
