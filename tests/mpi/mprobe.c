/*
 * Matched probe (MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv):
 *  - MPI_PROC_NULL: MPI_MESSAGE_NO_PROC, empty statuses, the buffer untouched;
 *  - a pair exchanging eager and rendezvous sizes (up to 4 MiB), received by
 *    Mrecv and Imrecv in turn, data and statuses checked, also into a
 *    derived datatype and from a synchronous send;
 *  - a matched message is out of matching: a later Recv, Probe or Iprobe
 *    with the same envelope sees the next message, and matched messages
 *    may be received in any order; MPI_Cancel of an Imrecv does not cancel;
 *  - MPI_ANY_SOURCE / MPI_ANY_TAG at rank 0 from every rank, each source's
 *    messages in the order sent;
 *  - Improbe that finds nothing (flag 0, message left as it was);
 *  - truncation (MPI_ERR_TRUNCATE; the message is consumed all the same);
 *  - a communicator freed while a message taken on it waits;
 *  - error classes: MPI_MESSAGE_NULL and bad handles (MPI_ERR_REQUEST),
 *    NULL pointers (MPI_ERR_ARG), rank, tag, datatype, count (the message
 *    stays valid after an argument error);
 *  - MPI_ERROR of a single status is left as it was (as MPICH's test wants);
 *  - Message_c2f / f2c.
 * Argument "leftover": rank 1 matches a rendezvous and an eager message
 * from rank 0 and never receives them; MPI_Finalize must release rank 0's
 * blocked MPI_Send (and warn).
 */
#include "mpitest.h"

static const int k_sizes[] = {0, 12, 4096, 4097, 100000, 4 << 20};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))

static unsigned seed_of(int from, int tag) { return (unsigned)(from * 7919 + tag * 13); }

static void proc_null_part(void)
{
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st;
    MPI_Request req;
    int flag = 0, buf[2] = {7, 8};

    memset(&st, 0x5a, sizeof st);
    st.MPI_ERROR = MPI_ERR_DIMS;
    MT_OK(MPI_Mprobe(MPI_PROC_NULL, 4, MPI_COMM_WORLD, &msg, &st));
    MT_CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(MPI_PROC_NULL) gave message 0x%x", (unsigned)msg);
    MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count(&st) == 0,
             "Mprobe(MPI_PROC_NULL) status: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
             mt_count(&st));
    MT_CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Mprobe wrote MPI_ERROR (%d)", st.MPI_ERROR);
    memset(&st, 0x5a, sizeof st);
    st.MPI_ERROR = MPI_ERR_DIMS;
    MT_OK(MPI_Mrecv(buf, 2, MPI_INT, &msg, &st));
    MT_CHECK(msg == MPI_MESSAGE_NULL, "Mrecv(NO_PROC) left message 0x%x", (unsigned)msg);
    MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count(&st) == 0,
             "Mrecv(NO_PROC) status: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
             mt_count(&st));
    MT_CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Mrecv wrote MPI_ERROR (%d)", st.MPI_ERROR);
    MT_CHECK(buf[0] == 7 && buf[1] == 8, "Mrecv(NO_PROC) wrote the buffer");

    msg = MPI_MESSAGE_NULL;
    MT_OK(MPI_Improbe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st));
    MT_CHECK(flag == 1 && msg == MPI_MESSAGE_NO_PROC, "Improbe(MPI_PROC_NULL): flag %d message 0x%x",
             flag, (unsigned)msg);
    MT_OK(MPI_Imrecv(buf, 2, MPI_INT, &msg, &req));
    MT_CHECK(msg == MPI_MESSAGE_NULL && req != MPI_REQUEST_NULL, "Imrecv(NO_PROC)");
    memset(&st, 0x5a, sizeof st);
    st.MPI_ERROR = MPI_ERR_TOPOLOGY;
    flag = 0;
    MT_OK(MPI_Test(&req, &flag, &st));
    MT_CHECK(flag == 1 && req == MPI_REQUEST_NULL, "Imrecv(NO_PROC) not complete at once");
    MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count(&st) == 0,
             "Imrecv(NO_PROC) status: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
             mt_count(&st));
    MT_CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY, "MPI_Test wrote MPI_ERROR (%d)", st.MPI_ERROR);
    MT_CHECK(buf[0] == 7 && buf[1] == 8, "Imrecv(NO_PROC) wrote the buffer");

    MT_CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC &&
                 MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL,
             "Message_c2f/f2c do not round-trip");
}

/* Sender side of the pair part: every size, tag = index + 1; then the same
 * sizes by MPI_Ssend (tags 101...). */
static void pair_send(int peer)
{
    int i;
    for (i = 0; i < NSIZES; ++i) {
        unsigned char* b = malloc((size_t)k_sizes[i] + 1);
        mt_fill(b, (size_t)k_sizes[i], seed_of(mt_rank, i + 1));
        MT_OK(MPI_Send(b, k_sizes[i], MPI_BYTE, peer, i + 1, MPI_COMM_WORLD));
        mt_fill(b, (size_t)k_sizes[i], seed_of(mt_rank, i + 101));
        MT_OK(MPI_Ssend(b, k_sizes[i], MPI_BYTE, peer, i + 101, MPI_COMM_WORLD));
        free(b);
    }
}

static void pair_recv_one(int peer, int tag, int n, int use_imrecv, int any)
{
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st, rst;
    unsigned char* b = malloc((size_t)n + 1);
    int src = any ? MPI_ANY_SOURCE : peer;
    memset(&st, 0, sizeof st);
    if (use_imrecv) {
        int flag = 0;
        while (!flag) {
            MT_OK(MPI_Improbe(src, any ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &flag, &msg, &st));
        }
    } else {
        MT_OK(MPI_Mprobe(src, any ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &msg, &st));
    }
    MT_CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "probe gave message 0x%x",
             (unsigned)msg);
    MT_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag && mt_count(&st) == n,
             "probe of tag %d: source %d tag %d count %d (expected %d)", tag, st.MPI_SOURCE,
             st.MPI_TAG, mt_count(&st), n);
    memset(b, 0xee, (size_t)n + 1);
    if (use_imrecv) {
        MPI_Request req = MPI_REQUEST_NULL;
        MT_OK(MPI_Imrecv(b, n, MPI_BYTE, &msg, &req));
        MT_CHECK(msg == MPI_MESSAGE_NULL, "Imrecv left the message handle");
        MT_OK(MPI_Wait(&req, &rst));
    } else {
        MT_OK(MPI_Mrecv(b, n, MPI_BYTE, &msg, &rst));
        MT_CHECK(msg == MPI_MESSAGE_NULL, "Mrecv left the message handle");
    }
    MT_CHECK(rst.MPI_SOURCE == peer && rst.MPI_TAG == tag && mt_count(&rst) == n,
             "receive of tag %d: source %d tag %d count %d", tag, rst.MPI_SOURCE, rst.MPI_TAG,
             mt_count(&rst));
    MT_VERIFY(b, n, seed_of(peer, tag), "%s of %d bytes, tag %d", use_imrecv ? "Imrecv" : "Mrecv",
              n, tag);
    MT_CHECK(b[n] == 0xee, "wrote past the message (%d bytes)", n);
    free(b);
}

static void pair_part(void)
{
    int i;
    if (mt_size < 2 || mt_rank > 1) {
        return;
    }
    if (mt_rank == 0) {
        pair_send(1);
        return;
    }
    for (i = 0; i < NSIZES; ++i) {
        pair_recv_one(0, i + 1, k_sizes[i], i % 2, i == 2);
        pair_recv_one(0, i + 101, k_sizes[i], (i + 1) % 2, i == 3);
    }
}

/* Matched messages are out of matching; received in any order. */
static void interleave_part(void)
{
    enum { N = 5 };
    const int sizes[N] = {16, 200000, 40, 3000000, 8};
    if (mt_size < 2 || mt_rank > 1) {
        return;
    }
    if (mt_rank == 0) {
        int i;
        MPI_Request r[N];
        unsigned char* b[N];
        for (i = 0; i < N; ++i) {
            b[i] = malloc((size_t)sizes[i]);
            mt_fill(b[i], (size_t)sizes[i], seed_of(0, 200 + i));
            MT_OK(MPI_Isend(b[i], sizes[i], MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r[i]));
        }
        MT_OK(MPI_Waitall(N, r, MPI_STATUSES_IGNORE));
        for (i = 0; i < N; ++i) {
            free(b[i]);
        }
    } else {
        MPI_Message m0, m2, m3;
        MPI_Status st;
        MPI_Request req;
        unsigned char* b = malloc(3000000);
        int flag = 0;
        /* m0 = message 0; then Probe and Recv see message 1 */
        MT_OK(MPI_Mprobe(0, 7, MPI_COMM_WORLD, &m0, &st));
        MT_CHECK(mt_count(&st) == sizes[0], "first Mprobe: count %d", mt_count(&st));
        MT_OK(MPI_Probe(0, 7, MPI_COMM_WORLD, &st));
        MT_CHECK(mt_count(&st) == sizes[1], "Probe after Mprobe saw count %d, expected %d",
                 mt_count(&st), sizes[1]);
        MT_OK(MPI_Recv(b, sizes[1], MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        MT_CHECK(mt_count(&st) == sizes[1], "Recv after Mprobe got count %d", mt_count(&st));
        MT_VERIFY(b, sizes[1], seed_of(0, 201), "message 1 by Recv");
        /* m2 by Improbe, m3 by Mprobe; message 4 by Irecv posted before
         * anything is received */
        while (!flag) {
            MT_OK(MPI_Improbe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m2, &st));
        }
        MT_CHECK(mt_count(&st) == sizes[2], "Improbe: count %d", mt_count(&st));
        MT_OK(MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &m3, &st));
        MT_CHECK(mt_count(&st) == sizes[3], "second Mprobe: count %d", mt_count(&st));
        {
            unsigned char small[8];
            MT_OK(MPI_Irecv(small, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &req));
            MT_OK(MPI_Wait(&req, &st));
            MT_VERIFY(small, 8, seed_of(0, 204), "message 4 by Irecv");
        }
        flag = 1;
        MT_OK(MPI_Iprobe(0, 7, MPI_COMM_WORLD, &flag, &st));
        MT_CHECK(flag == 0, "Iprobe still sees a message after all were matched");
        /* receive in the order 3, 0, 2; cancelling the Imrecv of a
         * matched message fails (it is matched): it completes normally */
        MT_OK(MPI_Imrecv(b, sizes[3], MPI_BYTE, &m3, &req));
        MT_OK(MPI_Cancel(&req));
        MT_OK(MPI_Wait(&req, &st));
        flag = 1;
        MT_OK(MPI_Test_cancelled(&st, &flag));
        MT_CHECK(flag == 0, "the Imrecv of a matched message was cancelled");
        MT_CHECK(mt_count(&st) == sizes[3], "Imrecv of message 3: count %d", mt_count(&st));
        MT_VERIFY(b, sizes[3], seed_of(0, 203), "message 3 by Imrecv");
        MT_OK(MPI_Mrecv(b, sizes[0], MPI_BYTE, &m0, &st));
        MT_VERIFY(b, sizes[0], seed_of(0, 200), "message 0 by Mrecv");
        MT_OK(MPI_Mrecv(b, sizes[2], MPI_BYTE, &m2, &st));
        MT_VERIFY(b, sizes[2], seed_of(0, 202), "message 2 by Mrecv");
        free(b);
    }
}

/* Everyone sends 3 messages to rank 0 with tags rank*10 + k; rank 0 takes
 * them with MPI_ANY_SOURCE / MPI_ANY_TAG: each source's in order. (On a
 * duplicate of MPI_COMM_WORLD, where mt_barrier's messages are not.) */
static void any_part(void)
{
    int k;
    MPI_Comm comm;
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    if (mt_rank != 0) {
        for (k = 0; k < 3; ++k) {
            int v[2] = {mt_rank, k};
            MT_OK(MPI_Send(v, 2, MPI_INT, 0, mt_rank * 10 + k, comm));
        }
    } else {
        int* next = calloc((size_t)mt_size, sizeof(int));
        int i;
        for (i = 0; i < 3 * (mt_size - 1); ++i) {
            MPI_Message m;
            MPI_Status st;
            int v[2] = {-1, -1};
            int s;
            if (i % 2) {
                int flag = 0;
                while (!flag) {
                    MT_OK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &m, &st));
                }
            } else {
                MT_OK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &m, &st));
            }
            s = st.MPI_SOURCE;
            if (s <= 0 || s >= mt_size) {
                MT_CHECK(0, "Mprobe(ANY_SOURCE) gave source %d", s);
                break;
            }
            MT_CHECK(st.MPI_TAG == s * 10 + next[s], "from %d: tag %d, expected %d", s, st.MPI_TAG,
                     s * 10 + next[s]);
            MT_OK(MPI_Mrecv(v, 2, MPI_INT, &m, &st));
            MT_CHECK(v[0] == s && v[1] == next[s], "from %d: got %d %d", s, v[0], v[1]);
            ++next[s];
        }
        free(next);
    }
    MT_OK(MPI_Comm_free(&comm));
    mt_barrier();
}

static void derived_and_truncate_part(void)
{
    if (mt_size < 2 || mt_rank > 1) {
        return;
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (mt_rank == 0) {
        int v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        unsigned char* big = malloc(300000);
        mt_fill(big, 300000, 77);
        MT_OK(MPI_Send(v, 4, MPI_INT, 1, 30, MPI_COMM_WORLD));
        MT_OK(MPI_Send(v, 8, MPI_INT, 1, 31, MPI_COMM_WORLD));
        MT_OK(MPI_Send(big, 300000, MPI_BYTE, 1, 32, MPI_COMM_WORLD));
        MT_OK(MPI_Send(v, 3, MPI_INT, 1, 33, MPI_COMM_WORLD));
        free(big);
    } else {
        MPI_Datatype vec;
        MPI_Message m;
        MPI_Status st;
        int r[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int n = -1;
        unsigned char* big = malloc(300000);
        MT_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
        MT_OK(MPI_Type_commit(&vec));
        MT_OK(MPI_Mprobe(0, 30, MPI_COMM_WORLD, &m, &st));
        MT_OK(MPI_Get_count(&st, vec, &n));
        MT_CHECK(n == 1, "Get_count(vector) of the probe: %d", n);
        MT_OK(MPI_Mrecv(r, 1, vec, &m, &st));
        MT_CHECK(r[0] == 1 && r[1] == 0 && r[2] == 2 && r[4] == 3 && r[6] == 4 && r[7] == 0,
                 "vector receive: %d %d %d %d %d %d", r[0], r[1], r[2], r[4], r[6], r[7]);
        MT_OK(MPI_Type_free(&vec));

        /* eager, truncated */
        MT_OK(MPI_Mprobe(0, 31, MPI_COMM_WORLD, &m, &st));
        MT_ERR(MPI_ERR_TRUNCATE, MPI_Mrecv(r, 5, MPI_INT, &m, &st));
        MT_CHECK(m == MPI_MESSAGE_NULL, "truncated Mrecv left the message");
        MT_CHECK(mt_count(&st) == 20 && st.MPI_TAG == 31, "truncated status: count %d tag %d",
                 mt_count(&st), st.MPI_TAG);
        /* rendezvous, truncated through Imrecv: the error shows at Wait */
        MT_OK(MPI_Mprobe(0, 32, MPI_COMM_WORLD, &m, &st));
        {
            MPI_Request req;
            MT_OK(MPI_Imrecv(big, 100000, MPI_BYTE, &m, &req));
            MT_ERR(MPI_ERR_TRUNCATE, MPI_Wait(&req, &st));
            MT_CHECK(mt_count(&st) == 100000, "truncated Imrecv: count %d", mt_count(&st));
            MT_VERIFY(big, 100000, 77, "truncated Imrecv prefix");
        }
        /* argument errors leave the message valid */
        MT_OK(MPI_Mprobe(0, 33, MPI_COMM_WORLD, &m, &st));
        MT_ERR(MPI_ERR_TYPE, MPI_Mrecv(r, 3, MPI_DATATYPE_NULL, &m, &st));
        MT_ERR(MPI_ERR_COUNT, MPI_Mrecv(r, -1, MPI_INT, &m, &st));
        MT_ERR(MPI_ERR_ARG, MPI_Imrecv(r, 3, MPI_INT, &m, NULL));
        MT_CHECK(m != MPI_MESSAGE_NULL, "an argument error consumed the message");
        MT_OK(MPI_Mrecv(r, 3, MPI_INT, &m, &st));
        MT_CHECK(r[0] == 1 && r[1] == 2 && r[2] == 3, "after the errors: %d %d %d", r[0], r[1],
                 r[2]);
        free(big);
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void error_part(void)
{
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status st;
    int flag, x = 0;
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_ERR(MPI_ERR_REQUEST, MPI_Mrecv(&x, 1, MPI_INT, &m, &st));
    MT_ERR(MPI_ERR_REQUEST, MPI_Imrecv(&x, 1, MPI_INT, &m, NULL));
    m = 0x70000777; /* a message kind that names nothing */
    MT_ERR(MPI_ERR_REQUEST, MPI_Mrecv(&x, 1, MPI_INT, &m, &st));
    m = MPI_COMM_WORLD; /* another kind */
    MT_ERR(MPI_ERR_REQUEST, MPI_Mrecv(&x, 1, MPI_INT, &m, &st));
    MT_ERR(MPI_ERR_ARG, MPI_Mrecv(&x, 1, MPI_INT, NULL, &st));
    MT_ERR(MPI_ERR_ARG, MPI_Mprobe(0, 0, MPI_COMM_WORLD, NULL, &st));
    MT_ERR(MPI_ERR_ARG, MPI_Improbe(0, 0, MPI_COMM_WORLD, NULL, &m, &st));
    MT_ERR(MPI_ERR_ARG, MPI_Improbe(0, 0, MPI_COMM_WORLD, &flag, NULL, &st));
    MT_ERR(MPI_ERR_RANK, MPI_Mprobe(mt_size, 0, MPI_COMM_WORLD, &m, &st));
    MT_ERR(MPI_ERR_RANK, MPI_Improbe(-5, 0, MPI_COMM_WORLD, &flag, &m, &st));
    MT_ERR(MPI_ERR_TAG, MPI_Mprobe(0, -7, MPI_COMM_WORLD, &m, &st));
    MT_ERR(MPI_ERR_COMM, MPI_Mprobe(0, 0, MPI_COMM_NULL, &m, &st));
    /* nothing to find: flag 0, message untouched */
    m = MPI_MESSAGE_NULL;
    flag = 1;
    MT_OK(MPI_Improbe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, &m, &st));
    MT_CHECK(flag == 0 && m == MPI_MESSAGE_NULL, "Improbe of nothing: flag %d message 0x%x", flag,
             (unsigned)m);
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* A message taken on a communicator that the program frees before
 * receiving it; to oneself, on MPI_COMM_SELF too. */
static void comm_part(void)
{
    MPI_Comm dup;
    MPI_Message m, ms;
    MPI_Request r;
    MPI_Status st;
    int out = 42 + mt_rank, in = 0;
    MT_OK(MPI_Comm_dup(MPI_COMM_SELF, &dup));
    MT_OK(MPI_Isend(&out, 1, MPI_INT, 0, 5, dup, &r));
    MT_OK(MPI_Mprobe(0, 5, dup, &m, &st));
    MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MT_OK(MPI_Comm_free(&dup));
    MT_OK(MPI_Isend(&out, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &r));
    MT_OK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &ms, &st));
    MT_CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 6, "COMM_SELF Mprobe: source %d tag %d",
             st.MPI_SOURCE, st.MPI_TAG);
    MT_OK(MPI_Mrecv(&in, 1, MPI_INT, &m, &st));
    MT_CHECK(in == out && st.MPI_SOURCE == 0 && st.MPI_TAG == 5,
             "Mrecv on a freed communicator: %d, source %d tag %d", in, st.MPI_SOURCE, st.MPI_TAG);
    in = 0;
    MT_OK(MPI_Mrecv(&in, 1, MPI_INT, &ms, &st));
    MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MT_CHECK(in == out, "COMM_SELF Mrecv: %d", in);
}

static int leftover(void)
{
    if (mt_rank == 0 && mt_size > 1) {
        unsigned char* big = calloc(1, 1 << 20);
        int v = 5;
        MT_OK(MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD));
        MT_OK(MPI_Send(big, 1 << 20, MPI_BYTE, 1, 2, MPI_COMM_WORLD)); /* returns at 1's Finalize */
        free(big);
    } else if (mt_rank == 1) {
        MPI_Message a, b;
        MT_OK(MPI_Mprobe(0, 1, MPI_COMM_WORLD, &a, MPI_STATUS_IGNORE));
        MT_OK(MPI_Mprobe(0, 2, MPI_COMM_WORLD, &b, MPI_STATUS_IGNORE));
    }
    return mt_finalize();
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "leftover") == 0) {
        return leftover();
    }
    proc_null_part();
    pair_part();
    mt_barrier();
    interleave_part();
    mt_barrier();
    any_part();
    derived_and_truncate_part();
    mt_barrier();
    error_part();
    comm_part();
    return mt_finalize();
}
