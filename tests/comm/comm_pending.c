/*
 * Communicators freed with operations pending (MPI-3.1 6.4.3: MPI_Comm_free
 * only marks the communicator; it goes once its pending operations are
 * done). Nonblocking collectives, point-to-point and persistent requests on
 * a communicator freed before they complete still complete with the right
 * data; a request freed with MPI_Request_free keeps the communicator (and
 * its context id) until the operation behind it is done: a communicator
 * made meanwhile (a dup of MPI_COMM_SELF, which takes the lowest context id
 * free on this process) must not get the freed one's id, and gets it once
 * the operation finished. Any size; the context-id cases need 2 ranks.
 */
#include "mpitest.h"

static long ctx_of(MPI_Comm c)
{
    MPI_Info info;
    char v[64];
    int flag = 0;
    MT_OK(MPI_Comm_get_info(c, &info));
    MT_OK(MPI_Info_get(info, "ulmpi_context_id", 63, v, &flag));
    MT_OK(MPI_Info_free(&info));
    MT_CHECK(flag, "no ulmpi_context_id in MPI_Comm_get_info");
    return flag ? strtol(v, NULL, 10) : -1;
}

/* Context id of a fresh dup of MPI_COMM_SELF (freed again at once). */
static long self_dup_ctx(void)
{
    MPI_Comm s;
    long id;
    MT_OK(MPI_Comm_dup(MPI_COMM_SELF, &s));
    id = ctx_of(s);
    MT_OK(MPI_Comm_free(&s));
    return id;
}

/* Waits (making progress) until a dup of MPI_COMM_SELF gets context id
 * `id` again, i.e. until the freed communicator that had it is gone. */
static void expect_released(long id, const char* what)
{
    double t0 = MPI_Wtime();
    int flag;
    while (self_dup_ctx() != id) {
        MT_OK(MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        if (MPI_Wtime() - t0 > 20.0) {
            mt_fail(__FILE__, __LINE__, "%s: context id %ld never released", what, id);
            return;
        }
        mt_sleep_ms(1);
    }
}

static void go(int to) { MT_OK(MPI_Send(NULL, 0, MPI_BYTE, to, 77, MPI_COMM_WORLD)); }
static void wait_go(int from)
{
    MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, from, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

int main(int argc, char** argv)
{
    MPI_Comm c;
    MPI_Request req, reqs[3];
    int p, r, i;

    mt_init(&argc, &argv);
    p = mt_size;
    r = mt_rank;
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* ---- nonblocking collectives, communicator freed before the wait */
    for (i = 0; i < 3; ++i) {
        int in = r + 1, sum = -1, bval = (r == 0) ? 42 : -1, want = p * (p + 1) / 2;
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        if (r == 0) {
            mt_sleep_ms(20); /* the others free theirs while still waiting for rank 0 */
        }
        MT_OK(MPI_Ibarrier(c, &reqs[0]));
        MT_OK(MPI_Iallreduce(&in, &sum, 1, MPI_INT, MPI_SUM, c, &reqs[1]));
        MT_OK(MPI_Ibcast(&bval, 1, MPI_INT, 0, c, &reqs[2]));
        MT_OK(MPI_Comm_free(&c));
        MT_CHECK(c == MPI_COMM_NULL, "freed communicator is not MPI_COMM_NULL");
        if (i == 1) {
            int done = 0;
            while (!done) { /* polling instead of waiting */
                MT_OK(MPI_Testall(3, reqs, &done, MPI_STATUSES_IGNORE));
            }
        } else {
            MT_OK(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE));
        }
        MT_CHECK(sum == want, "iallreduce on a freed communicator gave %d, expected %d", sum, want);
        MT_CHECK(bval == 42, "ibcast on a freed communicator gave %d", bval);
    }

    if (p >= 2) {
        long id;
        int v = -1, one = 1;

        /* ---- a freed request of a nonblocking collective keeps the
         * communicator's context id until the collective is done */
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        id = ctx_of(c);
        if (r == 0) {
            /* The others start theirs only after the go: this one pends. */
            MT_OK(MPI_Ibarrier(c, &req));
            MT_OK(MPI_Request_free(&req));
            MT_OK(MPI_Comm_free(&c));
            MT_CHECK(self_dup_ctx() != id,
                     "ibarrier pending: its freed communicator's context id %ld was reused", id);
            for (i = 1; i < p; ++i) {
                go(i);
            }
            expect_released(id, "ibarrier with a freed request");
        } else {
            wait_go(0);
            MT_OK(MPI_Ibarrier(c, &req));
            MT_OK(MPI_Comm_free(&c));
            MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
        MT_OK(MPI_Barrier(MPI_COMM_WORLD));

        /* ---- the same with point-to-point: a freed receive */
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        id = ctx_of(c);
        if (r == 0) {
            volatile int* pv = &v;
            double t0;
            int flag;
            MT_OK(MPI_Irecv(&v, 1, MPI_INT, 1, 5, c, &req));
            MT_OK(MPI_Request_free(&req));
            MT_OK(MPI_Comm_free(&c));
            MT_CHECK(self_dup_ctx() != id,
                     "receive pending: its freed communicator's context id %ld was reused", id);
            go(1);
            t0 = MPI_Wtime();
            while (*pv != 1 && MPI_Wtime() - t0 < 20.0) {
                MT_OK(MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            }
            MT_CHECK(*pv == 1, "a freed receive on a freed communicator got %d", *pv);
            expect_released(id, "receive with a freed request");
        } else {
            if (r == 1) {
                wait_go(0);
                MT_OK(MPI_Send(&one, 1, MPI_INT, 0, 5, c));
            }
            MT_OK(MPI_Comm_free(&c));
        }
        MT_OK(MPI_Barrier(MPI_COMM_WORLD));

        /* ---- and a freed synchronous send, matched only after the go */
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        id = ctx_of(c);
        if (r == 1) {
            MT_OK(MPI_Issend(&one, 1, MPI_INT, 0, 5, c, &req));
            MT_OK(MPI_Request_free(&req));
            MT_OK(MPI_Comm_free(&c));
            MT_CHECK(self_dup_ctx() != id,
                     "ssend pending: its freed communicator's context id %ld was reused", id);
            go(0);
            expect_released(id, "ssend with a freed request");
        } else {
            if (r == 0) {
                v = -1;
                wait_go(1);
                MT_OK(MPI_Recv(&v, 1, MPI_INT, 1, 5, c, MPI_STATUS_IGNORE));
                MT_CHECK(v == 1, "receive from a freed ssend got %d", v);
            }
            MT_OK(MPI_Comm_free(&c));
        }
        MT_OK(MPI_Barrier(MPI_COMM_WORLD));

        /* ---- persistent requests on a freed communicator */
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        id = ctx_of(c);
        if (r == 0) {
            MT_OK(MPI_Recv_init(&v, 1, MPI_INT, 1, 6, c, &req));
            MT_OK(MPI_Comm_free(&c));
            for (i = 0; i < 3; ++i) {
                v = -1;
                MT_OK(MPI_Start(&req));
                go(1);
                MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
                MT_CHECK(v == 10 + i, "persistent receive on a freed communicator got %d", v);
            }
            MT_CHECK(self_dup_ctx() != id,
                     "persistent request alive: its freed communicator's id %ld was reused", id);
            MT_OK(MPI_Request_free(&req));
            MT_CHECK(self_dup_ctx() == id, "context id %ld not released with the last request",
                     id);
        } else if (r == 1) {
            int val;
            MT_OK(MPI_Send_init(&val, 1, MPI_INT, 0, 6, c, &req));
            MT_OK(MPI_Comm_free(&c));
            for (i = 0; i < 3; ++i) {
                val = 10 + i;
                wait_go(0);
                MT_OK(MPI_Start(&req));
                MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            }
            MT_OK(MPI_Request_free(&req));
        } else {
            MT_OK(MPI_Comm_free(&c));
        }
        MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    return mt_finalize();
}
