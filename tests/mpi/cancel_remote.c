/*
 * MPI_Cancel of sends whose first fragment has already reached the receiver
 * (MPICH's scancel, pscancel, cancelrecv hung on this): rank 0 sends to
 * rank 1, which has posted nothing, with MPI_Issend (eager size and large),
 * MPI_Isend of rendezvous sizes and a persistent MPI_Ssend_init; rank 1
 * confirms the message is there (MPI_Probe), then rank 0 cancels and waits.
 * ulmpi withdraws such a message from the receiver: the status must say
 * cancelled, and rank 1 must then see no such message (MPI_Iprobe), while
 * the next message with the same tag arrives intact. Finally a send the
 * receiver has already taken is cancelled: the cancel fails and the data
 * arrives. Pairs (0,1), (2,3), ... with any even number of ranks.
 */
#include "mpitest.h"

static const int k_sizes[] = {8, 4000, 100000, 262144, 2000000};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))

int main(int argc, char** argv)
{
    int i, mode;
    mt_init(&argc, &argv);
    if (mt_size % 2 != 0) {
        MT_CHECK(0, "needs an even number of ranks, not %d", mt_size);
        return mt_finalize();
    }
    {
        int sender = mt_rank % 2 == 0;
        int partner = sender ? mt_rank + 1 : mt_rank - 1;
        for (mode = 0; mode < 3; ++mode) {
            for (i = 0; i < NSIZES; ++i) {
                int n = k_sizes[i];
                int tag = 100 + mode * 10 + i;
                unsigned char* b = malloc((size_t)n);
                MPI_Status st;
                if (mode == 1 && n < 100000) {
                    free(b);
                    continue; /* a plain Isend of eager size completes at once */
                }
                if (sender) {
                    MPI_Request r;
                    int flag = -1, ok = 0;
                    mt_fill(b, (size_t)n, (unsigned)tag);
                    if (mode == 0) {
                        MT_OK(MPI_Issend(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
                    } else if (mode == 1) {
                        MT_OK(MPI_Isend(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
                    } else {
                        MT_OK(MPI_Ssend_init(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
                        MT_OK(MPI_Start(&r));
                    }
                    /* the receiver has the message (unexpected) */
                    MT_OK(MPI_Recv(&ok, 1, MPI_INT, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    MT_OK(MPI_Cancel(&r));
                    MT_OK(MPI_Wait(&r, &st));
                    MT_OK(MPI_Test_cancelled(&st, &flag));
                    MT_CHECK(flag == 1, "mode %d, %d bytes: an unmatched send was not cancelled", mode, n);
                    if (mode == 2) {
                        MT_OK(MPI_Request_free(&r));
                    }
                    MT_OK(MPI_Send(&flag, 1, MPI_INT, partner, 2, MPI_COMM_WORLD));
                    /* the same tag again, received normally */
                    mt_fill(b, (size_t)n, (unsigned)(tag + 7));
                    MT_OK(MPI_Send(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD));
                } else {
                    int ok = 1, flag = 1, theirs = 0;
                    MT_OK(MPI_Probe(partner, tag, MPI_COMM_WORLD, &st));
                    MT_OK(MPI_Send(&ok, 1, MPI_INT, partner, 1, MPI_COMM_WORLD));
                    MT_OK(MPI_Recv(&theirs, 1, MPI_INT, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    if (theirs == 1) {
                        /* the cancelled message is gone; the new one may not be here yet,
                         * so probe for it and check it is the second one */
                        MT_OK(MPI_Recv(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
                        MT_CHECK(mt_verify(b, (size_t)n, (unsigned)(tag + 7)) < 0,
                                 "mode %d, %d bytes: after the cancel, a wrong message arrived", mode, n);
                    } else {
                        MT_OK(MPI_Recv(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
                        MT_OK(MPI_Recv(b, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
                    }
                    MT_OK(MPI_Iprobe(partner, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                    MT_CHECK(flag == 0, "mode %d, %d bytes: a message too many", mode, n);
                }
                free(b);
            }
        }
        /* A send the receiver has taken: the cancel fails, the data arrives. */
        {
            int n = 262144;
            unsigned char* b = malloc((size_t)n);
            MPI_Status st;
            int flag = -1;
            if (sender) {
                MPI_Request r;
                mt_fill(b, (size_t)n, 77u);
                MT_OK(MPI_Isend(b, n, MPI_BYTE, partner, 200, MPI_COMM_WORLD, &r));
                MT_OK(MPI_Recv(&flag, 1, MPI_INT, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                MT_OK(MPI_Cancel(&r));
                MT_OK(MPI_Wait(&r, &st));
                MT_OK(MPI_Test_cancelled(&st, &flag));
                MT_CHECK(flag == 0, "a send already received says cancelled");
            } else {
                MT_OK(MPI_Recv(b, n, MPI_BYTE, partner, 200, MPI_COMM_WORLD, &st));
                MT_CHECK(mt_verify(b, (size_t)n, 77u) < 0, "the data of a send cancelled too late is wrong");
                MT_OK(MPI_Send(&flag, 1, MPI_INT, partner, 3, MPI_COMM_WORLD));
            }
            free(b);
        }
    }
    return mt_finalize();
}
