/*
 * Sends that complete inside MPI_Isend (an eager message that left at once:
 * the library may hand back one shared, already complete request for all
 * of them, as MPICH's built-in requests do) must behave like any request:
 *   - two such sends in flight at once are waited for one by one, in any
 *     order, and in arrays mixed with receives, MPI_REQUEST_NULL, sends to
 *     MPI_PROC_NULL, rendezvous sends and the same handle value twice:
 *     Waitall, Testall, Waitany, Waitsome, Testsome set every finished
 *     entry to MPI_REQUEST_NULL, a send's status says MPI_SUCCESS and not
 *     cancelled; MPI_Request_get_status leaves the request live;
 *   - MPI_Cancel finds nothing to cancel (the message arrives exactly
 *     once), MPI_Request_free drops it and the message still arrives;
 *   - a flood of them (more than the FIFO holds, so some take the queued
 *     path) arrives whole and in order, also behind a rendezvous send to
 *     the same peer;
 *   - MPI_Issend never completes inside its call while no receive matches.
 * Every rank pairs with rank ^ 1 (an odd last rank sends to itself).
 */
#include "mpitest.h"

#define FLOOD 3000
#define BIG (1 << 20)

static void check_send_status(const MPI_Status* st, const char* what)
{
    int flag = 1;
    MT_CHECK(st->MPI_ERROR == MPI_SUCCESS, "%s: MPI_ERROR %d", what, st->MPI_ERROR);
    MT_OK(MPI_Test_cancelled(st, &flag));
    MT_CHECK(flag == 0, "%s: a send's status says cancelled", what);
}

int main(int argc, char** argv)
{
    int partner;
    int i;
    int flag;
    int idx;
    int n;
    int live;
    int idxs[8];
    MPI_Status sts[8];
    MPI_Request rq[8];
    int out[8];
    int in[8];
    int* flood;
    char* big;
    char* bigin;

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    flood = malloc(sizeof(int) * FLOOD);
    big = malloc(BIG);
    bigin = malloc(BIG);

    /* Two eager sends pending at once, waited for in reverse order, and a
     * third through MPI_Request_get_status first. */
    for (i = 0; i < 3; ++i) {
        out[i] = 100 * mt_rank + i;
    }
    for (i = 0; i < 3; ++i) {
        MT_OK(MPI_Irecv(&in[i], 1, MPI_INT, partner, 10 + i, MPI_COMM_WORLD, &rq[4 + i]));
    }
    for (i = 0; i < 3; ++i) {
        MT_OK(MPI_Isend(&out[i], 1, MPI_INT, partner, 10 + i, MPI_COMM_WORLD, &rq[i]));
        MT_CHECK(rq[i] != MPI_REQUEST_NULL, "MPI_Isend returned MPI_REQUEST_NULL");
    }
    sts[0].MPI_ERROR = -7;
    MT_OK(MPI_Wait(&rq[1], &sts[0]));
    MT_CHECK(rq[1] == MPI_REQUEST_NULL, "MPI_Wait left the send's request");
    MT_CHECK(sts[0].MPI_ERROR == -7, "MPI_Wait set MPI_ERROR");
    MT_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    flag = 0;
    do {
        MT_OK(MPI_Request_get_status(rq[2], &flag, &sts[0]));
    } while (!flag);
    MT_CHECK(rq[2] != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
    MT_OK(MPI_Test(&rq[2], &flag, MPI_STATUS_IGNORE));
    MT_CHECK(flag && rq[2] == MPI_REQUEST_NULL, "MPI_Test of a complete send");
    MT_OK(MPI_Waitall(3, &rq[4], MPI_STATUSES_IGNORE));
    for (i = 0; i < 3; ++i) {
        MT_CHECK(in[i] == 100 * partner + i, "message %d: %d, want %d", i, in[i], 100 * partner + i);
    }

    /* Arrays: receive, eager send, MPI_REQUEST_NULL, send to MPI_PROC_NULL,
     * eager send again, the same handle value copied, a rendezvous send. */
    for (int round = 0; round < 5; ++round) {
        MPI_Request big_rq;
        memset(in, -1, sizeof in);
        MT_OK(MPI_Irecv(&in[0], 1, MPI_INT, partner, 20, MPI_COMM_WORLD, &rq[0]));
        MT_OK(MPI_Irecv(&in[1], 1, MPI_INT, partner, 21, MPI_COMM_WORLD, &rq[7]));
        MT_OK(MPI_Irecv(bigin, BIG, MPI_CHAR, partner, 22, MPI_COMM_WORLD, &big_rq));
        out[0] = 7 * mt_rank + round;
        MT_OK(MPI_Isend(&out[0], 1, MPI_INT, partner, 20, MPI_COMM_WORLD, &rq[1]));
        rq[2] = MPI_REQUEST_NULL;
        MT_OK(MPI_Isend(&out[0], 1, MPI_INT, MPI_PROC_NULL, 20, MPI_COMM_WORLD, &rq[3]));
        MT_OK(MPI_Isend(&out[0], 1, MPI_INT, partner, 21, MPI_COMM_WORLD, &rq[4]));
        /* The same value twice only where it names one shared request
         * (else the copy would be a freed handle: an erroneous program). */
        rq[5] = rq[4] == rq[1] ? rq[4] : MPI_REQUEST_NULL;
        MT_OK(MPI_Isend(big, BIG, MPI_CHAR, partner, 22, MPI_COMM_WORLD, &rq[6]));
        live = 0;
        for (i = 0; i < 8; ++i) {
            live += rq[i] != MPI_REQUEST_NULL;
        }
        for (i = 0; i < 8; ++i) {
            sts[i].MPI_ERROR = -7;
        }
        switch (round) {
        case 0:
            MT_OK(MPI_Waitall(8, rq, sts));
            break;
        case 1:
            do {
                MT_OK(MPI_Testall(8, rq, &flag, sts));
            } while (!flag);
            break;
        case 2:
            for (i = 0; i < live; ++i) {
                MT_OK(MPI_Waitany(8, rq, &idx, &sts[0]));
                MT_CHECK(idx != MPI_UNDEFINED && idx != 2, "MPI_Waitany gave %d", idx);
            }
            MT_OK(MPI_Waitany(8, rq, &idx, &sts[0]));
            MT_CHECK(idx == MPI_UNDEFINED, "MPI_Waitany after all: %d", idx);
            break;
        default:
            for (int done = 0; done < live;) {
                if (round == 3) {
                    MT_OK(MPI_Waitsome(8, rq, &n, idxs, sts));
                } else {
                    MT_OK(MPI_Testsome(8, rq, &n, idxs, sts));
                }
                MT_CHECK(n != MPI_UNDEFINED, "Waitsome/Testsome: nothing live after %d", done);
                if (n == MPI_UNDEFINED) {
                    break;
                }
                for (i = 0; i < n; ++i) {
                    MT_CHECK(rq[idxs[i]] == MPI_REQUEST_NULL, "index %d not freed", idxs[i]);
                    if (idxs[i] != 0 && idxs[i] != 7) {
                        check_send_status(&sts[i], "Waitsome/Testsome");
                    }
                }
                done += n;
            }
            break;
        }
        for (i = 0; i < 8; ++i) {
            MT_CHECK(rq[i] == MPI_REQUEST_NULL, "round %d: request %d left", round, i);
        }
        if (round <= 1) {
            for (i = 1; i < 7; ++i) {
                check_send_status(&sts[i], round == 0 ? "Waitall" : "Testall");
            }
        }
        MT_OK(MPI_Wait(&big_rq, MPI_STATUS_IGNORE));
        MT_CHECK(in[0] == 7 * partner + round && in[1] == 7 * partner + round,
                 "round %d: got %d %d", round, in[0], in[1]);
    }

    /* MPI_Cancel on a send that has left, and MPI_Request_free. */
    out[0] = 4000 + mt_rank;
    out[1] = 5000 + mt_rank;
    MT_OK(MPI_Isend(&out[0], 1, MPI_INT, partner, 30, MPI_COMM_WORLD, &rq[0]));
    MT_OK(MPI_Cancel(&rq[0]));
    MT_OK(MPI_Wait(&rq[0], &sts[0]));
    MT_OK(MPI_Test_cancelled(&sts[0], &flag));
    MT_CHECK(flag == 0, "an eager send that left was cancelled");
    MT_OK(MPI_Isend(&out[1], 1, MPI_INT, partner, 31, MPI_COMM_WORLD, &rq[1]));
    MT_OK(MPI_Request_free(&rq[1]));
    MT_CHECK(rq[1] == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
    MT_OK(MPI_Recv(&in[0], 1, MPI_INT, partner, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MT_OK(MPI_Recv(&in[1], 1, MPI_INT, partner, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MT_CHECK(in[0] == 4000 + partner && in[1] == 5000 + partner, "after cancel/free: %d %d", in[0], in[1]);
    flag = 0;
    MT_OK(MPI_Iprobe(partner, 30, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    MT_CHECK(flag == 0, "the message of a failed cancel arrived twice");

    /* A rendezvous send, then a flood of eager ones behind it to the same
     * peer (more than the FIFO holds) before any receive is posted: all
     * arrive, in order, the first after the large one. */
    mt_barrier();
    {
        MPI_Request* frq = malloc(sizeof(MPI_Request) * (FLOOD + 1));
        mt_fill(big, BIG, 99 + (unsigned)mt_rank);
        MT_OK(MPI_Isend(big, BIG, MPI_CHAR, partner, 40, MPI_COMM_WORLD, &frq[FLOOD]));
        for (i = 0; i < FLOOD; ++i) {
            flood[i] = i ^ (mt_rank << 20);
            MT_OK(MPI_Isend(&flood[i], 1, MPI_INT, partner, 40, MPI_COMM_WORLD, &frq[i]));
        }
        if (partner != mt_rank) {
            mt_sleep_ms(20); /* let the partner's flood fill our FIFO */
        }
        MT_OK(MPI_Recv(bigin, BIG, MPI_CHAR, partner, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_CHECK(mt_verify(bigin, BIG, 99 + (unsigned)partner) < 0, "the large message is damaged");
        for (i = 0; i < FLOOD; ++i) {
            int v = -1;
            MT_OK(MPI_Recv(&v, 1, MPI_INT, partner, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (v != (i ^ (partner << 20))) {
                MT_CHECK(0, "flood message %d: %d, want %d", i, v, i ^ (partner << 20));
                break;
            }
        }
        MT_OK(MPI_Waitall(FLOOD + 1, frq, MPI_STATUSES_IGNORE));
        for (i = 0; i <= FLOOD; ++i) {
            if (frq[i] != MPI_REQUEST_NULL) {
                MT_CHECK(0, "flood request %d left", i);
                break;
            }
        }
        free(frq);
    }

    /* MPI_Issend stays pending until a receive matches. */
    mt_barrier();
    if (partner != mt_rank) {
        out[0] = 9;
        MT_OK(MPI_Issend(&out[0], 1, MPI_INT, partner, 50, MPI_COMM_WORLD, &rq[0]));
        mt_sleep_ms(10);
        MT_OK(MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE));
        MT_CHECK(flag == 0, "MPI_Issend completed before any receive was posted");
        mt_barrier(); /* the partner posts its receive only now */
        MT_OK(MPI_Recv(&in[0], 1, MPI_INT, partner, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    } else {
        mt_barrier();
    }

    free(big);
    free(bigin);
    free(flood);
    return mt_finalize();
}
