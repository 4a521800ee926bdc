/*
 * Persistent requests: MPI_Send_init, MPI_Bsend_init, MPI_Ssend_init,
 * MPI_Rsend_init, MPI_Recv_init, started with MPI_Start and MPI_Startall
 * and reused many times in a ring (the data changes every round, the
 * requests do not), at eager and rendezvous sizes; MPI_PROC_NULL peers;
 * MPI_Request_free at the end. MPI_Rsend_init rounds first exchange ready
 * tokens, themselves persistent requests.
 *
 * Argument "testpoll": complete every round's receive by polling MPI_Test
 * (by default only two rounds in a hundred do; with more ranks than cores a
 * rank that polls keeps its core from the ranks it waits for).
 */
#include "mpitest.h"

static const int k_sizes[] = {0, 8, 4097, 100000};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))
#define ROUNDS 100
#define NMODES 4

static unsigned seed_of(int from, int round, int n) { return (unsigned)(from * 7 + round * 1009 + n); }

int main(int argc, char** argv)
{
    int to, from, si, round, mode, testpoll;
    void* bbuf;
    int bsize = 0;

    mt_init(&argc, &argv);
    testpoll = argc > 1 && strcmp(argv[1], "testpoll") == 0;
    to = (mt_rank + 1) % mt_size;
    from = (mt_rank - 1 + mt_size) % mt_size;
    for (si = 0; si < NSIZES; ++si) {
        bsize += 2 * (k_sizes[si] + MPI_BSEND_OVERHEAD + 16);
    }
    bbuf = malloc((size_t)bsize);
    MT_OK(MPI_Buffer_attach(bbuf, bsize));

    for (si = 0; si < NSIZES; ++si) {
        int n = k_sizes[si];
        unsigned char* sb = malloc((size_t)n + 1);
        unsigned char* rb = malloc((size_t)n + 1);
        MPI_Request send[NMODES];
        MPI_Request recv;
        MPI_Request ready_send, ready_recv;
        MT_OK(MPI_Send_init(sb, n, MPI_BYTE, to, 1, MPI_COMM_WORLD, &send[0]));
        MT_OK(MPI_Bsend_init(sb, n, MPI_BYTE, to, 1, MPI_COMM_WORLD, &send[1]));
        MT_OK(MPI_Ssend_init(sb, n, MPI_BYTE, to, 1, MPI_COMM_WORLD, &send[2]));
        MT_OK(MPI_Rsend_init(sb, n, MPI_BYTE, to, 1, MPI_COMM_WORLD, &send[3]));
        MT_OK(MPI_Recv_init(rb, n, MPI_BYTE, from, 1, MPI_COMM_WORLD, &recv));
        MT_OK(MPI_Send_init(NULL, 0, MPI_BYTE, from, 2, MPI_COMM_WORLD, &ready_send));
        MT_OK(MPI_Recv_init(NULL, 0, MPI_BYTE, to, 2, MPI_COMM_WORLD, &ready_recv));
        for (round = 0; round < ROUNDS; ++round) {
            MPI_Request both[2];
            MPI_Status sts[2];
            mode = round % NMODES;
            mt_fill(sb, (size_t)n, seed_of(mt_rank, round, n));
            memset(rb, 0xdd, (size_t)n + 1);
            if (round % 2 == 0) {
                MT_OK(MPI_Start(&recv));
            }
            if (mode == 3) {
                /* (the receive is always started before the token goes) */
                if (round % 2 != 0) {
                    MT_OK(MPI_Start(&recv));
                }
                both[0] = ready_send;
                both[1] = ready_recv;
                MT_OK(MPI_Startall(2, both));
                MT_OK(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
                MT_CHECK(both[0] == ready_send && both[1] == ready_recv,
                         "MPI_Waitall changed persistent handles");
                MT_OK(MPI_Start(&send[mode]));
            } else if (round % 2 == 0) {
                MT_OK(MPI_Start(&send[mode]));
            } else {
                both[0] = recv;
                both[1] = send[mode];
                MT_OK(MPI_Startall(2, both));
            }
            both[0] = recv;
            both[1] = send[mode];
            if (!testpoll && round % 50 != 1) {
                /* (MPI_Test polling only now and then: a rank that polls
                 * keeps its CPU from the ranks it waits for when they
                 * outnumber the cores) */
                MT_OK(MPI_Waitall(2, both, sts));
            } else {
                int flag = 0;
                MT_OK(MPI_Wait(&both[1], MPI_STATUS_IGNORE));
                while (!flag) {
                    MT_OK(MPI_Test(&both[0], &flag, &sts[0]));
                }
            }
            MT_CHECK(both[0] == recv && both[1] == send[mode], "completion changed the handles");
            MT_CHECK(sts[0].MPI_SOURCE == from && sts[0].MPI_TAG == 1 && mt_count(&sts[0]) == n,
                     "round %d (%d bytes): source %d tag %d count %d", round, n, sts[0].MPI_SOURCE,
                     sts[0].MPI_TAG, mt_count(&sts[0]));
            MT_VERIFY(rb, n, seed_of(from, round, n), "round %d, mode %d, %d bytes", round, mode, n);
            MT_CHECK(rb[n] == 0xdd, "round %d: wrote past the message", round);
        }
        for (mode = 0; mode < NMODES; ++mode) {
            MT_OK(MPI_Request_free(&send[mode]));
            MT_CHECK(send[mode] == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
        }
        MT_OK(MPI_Request_free(&recv));
        MT_OK(MPI_Request_free(&ready_send));
        MT_OK(MPI_Request_free(&ready_recv));
        free(sb);
        free(rb);
    }

    /* MPI_PROC_NULL peers: complete at once, receive status of PROC_NULL. */
    {
        MPI_Request p[5];
        MPI_Status sts[5];
        int x = 5, y = 7;
        MT_OK(MPI_Send_init(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &p[0]));
        MT_OK(MPI_Bsend_init(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &p[1]));
        MT_OK(MPI_Ssend_init(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &p[2]));
        MT_OK(MPI_Rsend_init(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &p[3]));
        MT_OK(MPI_Recv_init(&y, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &p[4]));
        for (round = 0; round < 10; ++round) {
            memset(sts, 0x5a, sizeof sts);
            MT_OK(MPI_Startall(5, p));
            MT_OK(MPI_Waitall(5, p, sts));
            MT_CHECK(sts[4].MPI_SOURCE == MPI_PROC_NULL && sts[4].MPI_TAG == MPI_ANY_TAG &&
                         mt_count(&sts[4]) == 0,
                     "persistent receive from MPI_PROC_NULL: source %d tag %d count %d",
                     sts[4].MPI_SOURCE, sts[4].MPI_TAG, mt_count(&sts[4]));
            MT_CHECK(y == 7, "a receive from MPI_PROC_NULL wrote the buffer");
        }
        for (round = 0; round < 5; ++round) {
            MT_OK(MPI_Request_free(&p[round]));
        }
    }

    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
    }
    free(bbuf);
    return mt_finalize();
}
