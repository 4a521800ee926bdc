/*
 * MPI_Cancel and MPI_Test_cancelled.
 *   - A receive that can never match must cancel: MPI_Wait (or MPI_Test)
 *     completes it and MPI_Test_cancelled says true; also with
 *     MPI_ANY_SOURCE/MPI_ANY_TAG, and a started persistent receive (which
 *     then works normally when started again).
 *   - A receive whose message already arrived completes normally: not
 *     cancelled, data intact.
 *   - A send may or may not cancel (eager, rendezvous, synchronous,
 *     buffered): the sender tells the receiver which; the message must be
 *     received exactly when the cancel failed.
 *   - A status of a normal receive is not cancelled.
 */
#include "mpitest.h"

static const int k_send_sizes[] = {8, 4096, 100000, 2000000};
#define NSEND ((int)(sizeof k_send_sizes / sizeof k_send_sizes[0]))

int main(int argc, char** argv)
{
    int partner;
    int flag;
    int i;
    MPI_Status st;
    MPI_Request r;
    int buf[4];
    void* bsend_buf;
    int bsend_size = 2 * (2000000 + MPI_BSEND_OVERHEAD);

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    bsend_buf = malloc((size_t)bsend_size);
    MT_OK(MPI_Buffer_attach(bsend_buf, bsend_size));

    /* Receives that can never match (nobody sends tag 12345). */
    {
        int srcs[3] = {partner, MPI_ANY_SOURCE, MPI_ANY_SOURCE};
        int tags[3] = {12345, 12345, MPI_ANY_TAG};
        for (i = 0; i < 3; ++i) {
            MPI_Comm comm = i == 2 ? MPI_COMM_SELF : MPI_COMM_WORLD;
            /* (MPI_ANY_TAG only on MPI_COMM_SELF, where nothing is sent.) */
            MT_OK(MPI_Irecv(buf, 4, MPI_INT, srcs[i], tags[i], comm, &r));
            MT_OK(MPI_Cancel(&r));
            MT_CHECK(r != MPI_REQUEST_NULL, "MPI_Cancel freed the request");
            if (i == 1) {
                flag = 0;
                while (!flag) {
                    MT_OK(MPI_Test(&r, &flag, &st));
                }
            } else {
                MT_OK(MPI_Wait(&r, &st));
            }
            MT_CHECK(r == MPI_REQUEST_NULL, "cancelled request not freed by completion");
            flag = 0;
            MT_OK(MPI_Test_cancelled(&st, &flag));
            MT_CHECK(flag == 1, "receive %d that could never match was not cancelled", i);
        }
    }

    /* A started persistent receive: cancel, then use it for real. */
    {
        MPI_Request p;
        buf[0] = -1;
        MT_OK(MPI_Recv_init(buf, 1, MPI_INT, partner, 33, MPI_COMM_WORLD, &p));
        MT_OK(MPI_Start(&p));
        MT_OK(MPI_Cancel(&p));
        MT_OK(MPI_Wait(&p, &st));
        MT_CHECK(p != MPI_REQUEST_NULL, "a persistent request was freed by MPI_Wait");
        flag = 0;
        MT_OK(MPI_Test_cancelled(&st, &flag));
        MT_CHECK(flag == 1, "persistent receive was not cancelled");
        /* Nobody sends tag 33 before its partner has cancelled: a partner
         * that runs ahead (a barrier released by rank 0 first lets it) would
         * else have its message matched by our receive before the cancel. */
        MT_OK(MPI_Sendrecv(NULL, 0, MPI_BYTE, partner, 36, NULL, 0, MPI_BYTE, partner, 36,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_OK(MPI_Start(&p));
        {
            int v = 4242 + mt_rank;
            MT_OK(MPI_Send(&v, 1, MPI_INT, partner, 33, MPI_COMM_WORLD));
        }
        MT_OK(MPI_Wait(&p, &st));
        flag = 1;
        MT_OK(MPI_Test_cancelled(&st, &flag));
        MT_CHECK(flag == 0, "a completed persistent receive says cancelled");
        MT_CHECK(buf[0] == 4242 + partner, "persistent receive after cancel got %d", buf[0]);
        MT_OK(MPI_Request_free(&p));
    }

    /* A receive whose message already arrived: the cancel fails. */
    {
        int v = 99 + mt_rank;
        int got = -1;
        MT_OK(MPI_Irecv(&got, 1, MPI_INT, partner, 34, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Send(&v, 1, MPI_INT, partner, 34, MPI_COMM_WORLD));
        /* Our partner's message has arrived once its "sent" note has. */
        MT_OK(MPI_Sendrecv(NULL, 0, MPI_BYTE, partner, 35, NULL, 0, MPI_BYTE, partner, 35,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_OK(MPI_Cancel(&r));
        MT_OK(MPI_Wait(&r, &st));
        flag = 1;
        MT_OK(MPI_Test_cancelled(&st, &flag));
        if (flag) {
            /* Allowed only if the message had not matched yet; then it must
             * still be receivable. */
            MT_OK(MPI_Recv(&got, 1, MPI_INT, partner, 34, MPI_COMM_WORLD, &st));
        }
        MT_CHECK(got == 99 + partner, "received %d, expected %d", got, 99 + partner);
        flag = 1;
        MT_OK(MPI_Test_cancelled(&st, &flag));
        MT_CHECK(flag == 0, "the status of a normal receive says cancelled");
    }

    /* Sends: cancel each, tell the partner whether it worked.
     * prepost 1: the partner's receive is posted first (the send can then
     *   complete without it being told anything): Isend and Issend, all sizes;
     *   if the cancel worked, the posted receive must cancel too.
     * prepost 0: the receive comes only if the cancel failed: MPI_Ibsend (all
     *   sizes: it completes at once) and MPI_Isend of a size that is eager on
 *   every path (8 bytes; udp's eager limit is below 4096): an Isend that is
 *   not cancelled and not eager would wait for a receive never posted. */
    {
        int mode, prepost;
        int cancelled_count = 0;
        int tried = 0;
        for (prepost = 1; prepost >= 0; --prepost) {
            for (mode = 0; mode < 3; ++mode) {
                if (prepost && mode == 2) {
                    continue;
                }
                if (!prepost && mode == 1) {
                    continue;
                }
                for (i = 0; i < NSEND; ++i) {
                    int n = k_send_sizes[i];
                    unsigned char* sb;
                    unsigned char* rb;
                    int mine, theirs;
                    int tag = 1000 + prepost * 100 + mode * 10 + i;
                    MPI_Request rr = MPI_REQUEST_NULL;
                    if (!prepost && mode == 0 && n > 100) {
                        continue;
                    }
                    sb = malloc((size_t)n);
                    rb = malloc((size_t)n);
                    memset(rb, 0, (size_t)n);
                    if (prepost) {
                        MT_OK(MPI_Irecv(rb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &rr));
                        MT_OK(MPI_Sendrecv(NULL, 0, MPI_BYTE, partner, 301, NULL, 0, MPI_BYTE,
                                           partner, 301, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    }
                    mt_fill(sb, (size_t)n, (unsigned)(mt_rank * 31 + tag));
                    if (mode == 0) {
                        MT_OK(MPI_Isend(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
                    } else if (mode == 1) {
                        MT_OK(MPI_Issend(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
                    } else {
                        MT_OK(MPI_Ibsend(sb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &r));
                    }
                    MT_OK(MPI_Cancel(&r));
                    MT_OK(MPI_Wait(&r, &st));
                    mine = -1;
                    MT_OK(MPI_Test_cancelled(&st, &mine));
                    MT_CHECK(mine == 0 || mine == 1, "MPI_Test_cancelled flag %d", mine);
                    cancelled_count += mine == 1;
                    ++tried;
                    MT_OK(MPI_Sendrecv(&mine, 1, MPI_INT, partner, 300, &theirs, 1, MPI_INT,
                                       partner, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    if (theirs && prepost) {
                        MT_OK(MPI_Cancel(&rr));
                        MT_OK(MPI_Wait(&rr, &st));
                        flag = 0;
                        MT_OK(MPI_Test_cancelled(&st, &flag));
                        MT_CHECK(flag == 1, "a send of %d bytes (mode %d) was cancelled but "
                                 "its posted receive got a message", n, mode);
                    } else if (theirs) {
                        MT_OK(MPI_Iprobe(partner, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                        MT_CHECK(flag == 0, "a send of %d bytes (mode %d) was cancelled but its "
                                 "message arrived", n, mode);
                    } else {
                        if (prepost) {
                            MT_OK(MPI_Wait(&rr, &st));
                        } else {
                            MT_OK(MPI_Recv(rb, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
                        }
                        flag = 1;
                        MT_OK(MPI_Test_cancelled(&st, &flag));
                        MT_CHECK(flag == 0, "receive says cancelled");
                        MT_CHECK(mt_count(&st) == n, "count %d, expected %d", mt_count(&st), n);
                        MT_VERIFY(rb, n, (unsigned)(partner * 31 + tag),
                                  "message whose cancel failed (mode %d, prepost %d)", mode,
                                  prepost);
                    }
                    free(sb);
                    free(rb);
                }
            }
        }
        if (mt_verbose) {
            printf("[%d] %d of %d sends cancelled\n", mt_rank, cancelled_count, tried);
        }
    }
    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
    }
    free(bsend_buf);
    return mt_finalize();
}
