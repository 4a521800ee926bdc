/*
 * MPI_Probe and MPI_Iprobe: nothing to find (flag 0), a specific source and
 * tag, MPI_ANY_SOURCE and MPI_ANY_TAG (the earliest message of a source
 * first), probing does not consume (probe twice, same message), the count
 * of eager and rendezvous messages, probe then receive into a buffer sized
 * from the status, messages to oneself, MPI_PROC_NULL; single-status calls
 * leave MPI_ERROR alone.
 */
#include "mpitest.h"

static const int k_sizes[] = {12, 0, 100000, 4097, 40000};
#define NMSG 5

static unsigned seed_of(int from, int to, int i) { return (unsigned)(from * 1000 + to * 37 + i); }

int main(int argc, char** argv)
{
    int partner;
    int i, flag;
    MPI_Status st;

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;

    /* MPI_PROC_NULL: found at once, empty-of-data status. */
    flag = 0;
    memset(&st, 0x5a, sizeof st);
    MT_OK(MPI_Iprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &st));
    MT_CHECK(flag == 1, "MPI_Iprobe(MPI_PROC_NULL): flag %d", flag);
    MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count(&st) == 0,
             "MPI_Iprobe(MPI_PROC_NULL) status: source %d tag %d count %d", st.MPI_SOURCE,
             st.MPI_TAG, mt_count(&st));
    memset(&st, 0x5a, sizeof st);
    MT_OK(MPI_Probe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count(&st) == 0,
             "MPI_Probe(MPI_PROC_NULL) status: source %d tag %d count %d", st.MPI_SOURCE,
             st.MPI_TAG, mt_count(&st));

    /* Calls that return one status leave its MPI_ERROR as it was (MPICH
     * and Open MPI do; MPICH's tests check it). */
    {
        int out = 1, in = 0;
        MPI_Request r;
        st.MPI_ERROR = MPI_ERR_DIMS;
        MT_OK(MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
        MT_OK(MPI_Isend(&out, 1, MPI_INT, mt_rank, 77, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Probe(mt_rank, 77, MPI_COMM_WORLD, &st));
        MT_OK(MPI_Wait(&r, &st));
        MT_OK(MPI_Recv(&in, 1, MPI_INT, mt_rank, 77, MPI_COMM_WORLD, &st));
        MT_CHECK(st.MPI_ERROR == MPI_ERR_DIMS && st.MPI_TAG == 77,
                 "single-status calls wrote MPI_ERROR (%d) or lost the tag (%d)", st.MPI_ERROR,
                 st.MPI_TAG);
        MT_OK(MPI_Irecv(&in, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Wait(&r, &st));
        MT_CHECK(st.MPI_ERROR == MPI_ERR_DIMS && st.MPI_SOURCE == MPI_PROC_NULL,
                 "MPI_Wait wrote MPI_ERROR (%d)", st.MPI_ERROR);
    }

    /* Everyone sends to rank 0, which probes MPI_ANY_SOURCE/MPI_ANY_TAG: the
     * others wait for a reply, so nothing else can reach rank 0 meanwhile. */
    if (mt_rank == 0) {
        int* got = calloc((size_t)mt_size, sizeof(int));
        for (i = 1; i < mt_size; ++i) {
            int v[2];
            MT_OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            MT_CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < mt_size && st.MPI_TAG == 500 &&
                         mt_count(&st) == 8,
                     "MPI_Probe(ANY_SOURCE, ANY_TAG): source %d tag %d count %d", st.MPI_SOURCE,
                     st.MPI_TAG, mt_count(&st));
            if (st.MPI_SOURCE <= 0 || st.MPI_SOURCE >= mt_size) {
                break;
            }
            MT_OK(MPI_Recv(v, 2, MPI_INT, st.MPI_SOURCE, 500, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MT_CHECK(v[0] == st.MPI_SOURCE && v[1] == -st.MPI_SOURCE, "from %d got %d %d",
                     st.MPI_SOURCE, v[0], v[1]);
            MT_CHECK(got[st.MPI_SOURCE] == 0, "rank %d probed twice", st.MPI_SOURCE);
            got[st.MPI_SOURCE] = 1;
        }
        for (i = 1; i < mt_size; ++i) {
            MT_OK(MPI_Send(NULL, 0, MPI_BYTE, i, 501, MPI_COMM_WORLD));
        }
        free(got);
    } else {
        int v[2] = {mt_rank, -mt_rank};
        MT_OK(MPI_Send(v, 2, MPI_INT, 0, 500, MPI_COMM_WORLD));
        MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 501, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }

    /* Pairs. Only the partner sends to us until the end of this part, except
     * to rank 0, which others tell when they are done: rank 0 uses wildcard
     * sources only when it has no one but its partner. */
    {
        int any_src = (mt_rank == 0 && mt_size > 2) ? partner : MPI_ANY_SOURCE;
        int first = mt_rank <= partner;
        MPI_Request sreq[NMSG];
        unsigned char* sbuf[NMSG];

        /* Nothing to find: the partner sends only after our token (the lower
         * rank looks first, then the higher). */
        if (!first) {
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, 900, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        for (i = 0; i < 50; ++i) {
            flag = 1;
            MT_OK(MPI_Iprobe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
            if (flag) {
                MT_CHECK(0, "MPI_Iprobe found a message before anything was sent (tag %d)",
                         st.MPI_TAG);
                break;
            }
            flag = 1;
            MT_OK(MPI_Iprobe(any_src, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            MT_CHECK(flag == 0, "MPI_Iprobe(MPI_ANY_SOURCE) found a message before anything was "
                     "sent");
        }
        MT_OK(MPI_Send(NULL, 0, MPI_BYTE, partner, 900, MPI_COMM_WORLD));
        if (first) {
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, 900, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }

        /* The partner's messages: tag i + 1, sizes k_sizes[i]. */
        for (i = 0; i < NMSG; ++i) {
            sbuf[i] = malloc((size_t)k_sizes[i] + 1);
            mt_fill(sbuf[i], (size_t)k_sizes[i], seed_of(mt_rank, partner, i));
            MT_OK(MPI_Isend(sbuf[i], k_sizes[i], MPI_BYTE, partner, i + 1, MPI_COMM_WORLD, &sreq[i]));
        }
        /* Specific tag (the third message), twice: probing does not consume. */
        MT_OK(MPI_Probe(partner, 3, MPI_COMM_WORLD, &st));
        MT_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 3 && mt_count(&st) == k_sizes[2],
                 "MPI_Probe(tag 3): source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
                 mt_count(&st));
        MT_OK(MPI_Probe(partner, 3, MPI_COMM_WORLD, &st));
        MT_CHECK(st.MPI_TAG == 3 && mt_count(&st) == k_sizes[2], "second MPI_Probe(tag 3): tag %d",
                 st.MPI_TAG);
        MT_OK(MPI_Probe(any_src, 4, MPI_COMM_WORLD, &st));
        MT_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 4 && mt_count(&st) == k_sizes[3],
                 "MPI_Probe(ANY_SOURCE, tag 4): source %d tag %d count %d", st.MPI_SOURCE,
                 st.MPI_TAG, mt_count(&st));
        /* ANY_TAG finds the earliest. */
        flag = 0;
        while (!flag) {
            MT_OK(MPI_Iprobe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        }
        MT_CHECK(st.MPI_TAG == 1 && mt_count(&st) == k_sizes[0],
                 "MPI_Iprobe(ANY_TAG): tag %d count %d, expected the first message", st.MPI_TAG,
                 mt_count(&st));
        {
            int n = -1;
            MT_OK(MPI_Get_count(&st, MPI_INT, &n));
            MT_CHECK(n == k_sizes[0] / 4, "MPI_Get_count(MPI_INT) of a probe: %d", n);
        }
        /* Receive everything in probe order, buffers sized from the status. */
        for (i = 0; i < NMSG; ++i) {
            int n = -1;
            unsigned char* buf;
            MPI_Status rst;
            MT_OK(MPI_Probe(any_src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            MT_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == i + 1,
                     "MPI_Probe(ANY, ANY) #%d: source %d tag %d", i, st.MPI_SOURCE, st.MPI_TAG);
            MT_OK(MPI_Get_count(&st, MPI_BYTE, &n));
            MT_CHECK(n == k_sizes[i], "MPI_Probe #%d count %d, expected %d", i, n, k_sizes[i]);
            if (n < 0) {
                n = 0;
            }
            buf = malloc((size_t)n + 1);
            MT_OK(MPI_Recv(buf, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &rst));
            MT_CHECK(rst.MPI_SOURCE == st.MPI_SOURCE && rst.MPI_TAG == st.MPI_TAG &&
                         mt_count(&rst) == n,
                     "receive after probe: source %d tag %d count %d", rst.MPI_SOURCE, rst.MPI_TAG,
                     mt_count(&rst));
            MT_VERIFY(buf, n, seed_of(partner, mt_rank, st.MPI_TAG - 1), "message %d", i);
            free(buf);
        }
        MT_OK(MPI_Waitall(NMSG, sreq, MPI_STATUSES_IGNORE));
        for (i = 0; i < NMSG; ++i) {
            free(sbuf[i]);
        }
        /* (Rank 0's partner may already have said it is done: tags only.) */
        for (i = 0; i < NMSG; ++i) {
            flag = 1;
            MT_OK(MPI_Iprobe(any_src, i + 1, MPI_COMM_WORLD, &flag, &st));
            MT_CHECK(flag == 0, "MPI_Iprobe found tag %d again after it was received", i + 1);
        }
    }
    /* Done with the pairs: tell rank 0, wait for everybody. */
    if (mt_rank == 0) {
        for (i = 1; i < mt_size; ++i) {
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, i, 600, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        for (i = 1; i < mt_size; ++i) {
            MT_OK(MPI_Send(NULL, 0, MPI_BYTE, i, 601, MPI_COMM_WORLD));
        }
    } else {
        MT_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 600, MPI_COMM_WORLD));
        MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 601, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }

    /* To oneself. */
    {
        int out[3] = {1, 2, 3};
        int in[3] = {0, 0, 0};
        MPI_Request r;
        MT_OK(MPI_Isend(out, 3, MPI_INT, mt_rank, 42, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Probe(mt_rank, 42, MPI_COMM_WORLD, &st));
        MT_CHECK(st.MPI_SOURCE == mt_rank && st.MPI_TAG == 42 && mt_count(&st) == 12,
                 "self probe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, mt_count(&st));
        MT_OK(MPI_Recv(in, 3, MPI_INT, mt_rank, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MT_CHECK(in[0] == 1 && in[1] == 2 && in[2] == 3, "self message %d %d %d", in[0], in[1],
                 in[2]);
        /* On MPI_COMM_SELF too. */
        MT_OK(MPI_Isend(out, 3, MPI_INT, 0, 43, MPI_COMM_SELF, &r));
        flag = 0;
        while (!flag) {
            MT_OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, &st));
        }
        MT_CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 43, "MPI_COMM_SELF probe: source %d tag %d",
                 st.MPI_SOURCE, st.MPI_TAG);
        flag = 1;
        MT_OK(MPI_Iprobe(MPI_ANY_SOURCE, 43, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        MT_CHECK(flag == 0, "a message on MPI_COMM_SELF was found on MPI_COMM_WORLD");
        MT_OK(MPI_Recv(in, 3, MPI_INT, 0, 43, MPI_COMM_SELF, MPI_STATUS_IGNORE));
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    return mt_finalize();
}
