/*
 * MPI_Comm_idup: the new communicator after MPI_Wait works and is isolated;
 * attributes are copied as at the call (one set afterwards is not, one
 * whose copy callback declines is not, a failing copy callback fails the
 * request); several idups outstanding at once on overlapping communicators,
 * started in different orders on different processes, completed in any
 * order, mixed with blocking constructors; MPI_Test polling with traffic
 * alongside; an intercommunicator; MPI_Request_free; members agree on the
 * context id; argument errors. Any size.
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

/* A ring exchange and an allreduce on c; every member has the same id. */
static void exercise(MPI_Comm c, const char* what)
{
    int rank, size, got = -1, sum = 0;
    long id = ctx_of(c), lo = 0, hi = 0;
    MT_OK(MPI_Comm_rank(c, &rank));
    MT_OK(MPI_Comm_size(c, &size));
    MT_OK(MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 7, &got, 1, MPI_INT,
                       (rank + size - 1) % size, 7, c, MPI_STATUS_IGNORE));
    MT_CHECK(got == (rank + size - 1) % size, "%s: ring got %d", what, got);
    MT_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    MT_CHECK(sum == size * (size - 1) / 2, "%s: allreduce %d", what, sum);
    MT_OK(MPI_Allreduce(&id, &lo, 1, MPI_LONG, MPI_MIN, c));
    MT_OK(MPI_Allreduce(&id, &hi, 1, MPI_LONG, MPI_MAX, c));
    MT_CHECK(lo == id && hi == id, "%s: context ids differ (%ld here, %ld..%ld)", what, id, lo,
             hi);
}

static int copies = 0;
static int copy_fn(MPI_Comm c, int k, void* extra, void* in, void* out, int* flag)
{
    (void)c;
    (void)k;
    (void)extra;
    ++copies;
    *(void**)out = (void*)((char*)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}
static int fail_copy_fn(MPI_Comm c, int k, void* extra, void* in, void* out, int* flag)
{
    (void)c;
    (void)k;
    (void)extra;
    (void)in;
    (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

int main(int argc, char** argv)
{
    enum { N = 6 };
    MPI_Comm dup, half, c[N], x;
    MPI_Request req[N];
    int p, r, i, j, flag, key, key2, key3, cls;
    void* val;

    mt_init(&argc, &argv);
    p = mt_size;
    r = mt_rank;
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, r % 2, -r, &half));

    /* ---- one idup; attributes as at the call */
    MT_OK(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    MT_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key2, NULL));
    MT_OK(MPI_Comm_set_attr(dup, key, (void*)(size_t)100));
    MT_OK(MPI_Comm_set_attr(dup, key2, (void*)(size_t)200));
    MT_OK(MPI_Comm_set_name(dup, "dup"));
    MT_OK(MPI_Comm_idup(dup, &c[0], &req[0]));
    MT_OK(MPI_Comm_set_attr(dup, key, (void*)(size_t)500)); /* after the call: not copied */
    MT_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    MT_CHECK(req[0] == MPI_REQUEST_NULL, "request not MPI_REQUEST_NULL after the wait");
    MT_CHECK(copies == 1, "copy callback ran %d times", copies);
    MT_OK(MPI_Comm_get_attr(c[0], key, &val, &flag));
    MT_CHECK(flag && val == (void*)(size_t)101, "copied attribute: flag %d value %p", flag, val);
    MT_OK(MPI_Comm_get_attr(c[0], key2, &val, &flag));
    MT_CHECK(!flag, "an attribute with MPI_COMM_NULL_COPY_FN was copied");
    {
        int res;
        MT_OK(MPI_Comm_compare(c[0], dup, &res));
        MT_CHECK(res == MPI_CONGRUENT, "idup vs its parent: %d", res);
        MT_CHECK(ctx_of(c[0]) != ctx_of(dup), "idup has its parent's context id");
    }
    exercise(c[0], "idup of a dup");
    MT_OK(MPI_Comm_free(&c[0]));

    /* ---- a failing copy callback fails the request, on that process */
    MT_OK(MPI_Comm_create_keyval(fail_copy_fn, MPI_COMM_NULL_DELETE_FN, &key3, NULL));
    MT_OK(MPI_Comm_set_attr(dup, key3, (void*)(size_t)1));
    MT_OK(MPI_Comm_idup(dup, &c[0], &req[0]));
    j = MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    cls = -1;
    if (j != MPI_SUCCESS) {
        MPI_Error_class(j, &cls);
    }
    MT_CHECK(cls == MPI_ERR_OTHER, "failing copy callback: wait returned %d (class %d)", j, cls);
    MT_CHECK(c[0] == MPI_COMM_NULL, "failing copy callback: newcomm is not MPI_COMM_NULL");
    MT_OK(MPI_Comm_delete_attr(dup, key3));
    MT_OK(MPI_Comm_free_keyval(&key3));

    /* ---- several at once on overlapping communicators, waited in reverse */
    for (int round = 0; round < 3; ++round) {
        MPI_Comm parents[N] = {MPI_COMM_WORLD, half, dup, MPI_COMM_WORLD, half, MPI_COMM_SELF};
        long ids[N];
        for (i = 0; i < N; ++i) {
            /* round 1: odd processes start them in another order (the same
             * per parent, as MPI requires) */
            static const int order[N] = {1, 4, 5, 0, 2, 3};
            int k = (r % 2 == 1 && round == 1) ? order[i] : i;
            MT_OK(MPI_Comm_idup(parents[k], &c[k], &req[k]));
        }
        if (round == 2) {
            /* a blocking constructor while they are pending */
            MT_OK(MPI_Comm_dup(dup, &x));
        }
        if (round == 1) {
            int done = 0, all = 0;
            int ping = r, pong = -1;
            while (!all) { /* polling, with traffic alongside, until done everywhere */
                MT_OK(MPI_Sendrecv(&ping, 1, MPI_INT, (r + 1) % p, 3, &pong, 1, MPI_INT,
                                   (r + p - 1) % p, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                MT_OK(MPI_Testall(N, req, &done, MPI_STATUSES_IGNORE));
                MT_OK(MPI_Allreduce(&done, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
            }
        } else {
            for (i = N - 1; i >= 0; --i) {
                MT_OK(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
            }
        }
        for (i = 0; i < N; ++i) {
            char what[64];
            snprintf(what, sizeof what, "round %d, idup %d", round, i);
            exercise(c[i], what);
            ids[i] = ctx_of(c[i]);
            for (j = 0; j < i; ++j) {
                MT_CHECK(ids[i] != ids[j], "%s: context id %ld also in idup %d", what, ids[i], j);
            }
            MT_CHECK(ids[i] != ctx_of(dup) && ids[i] != ctx_of(half), "%s: a parent's id", what);
        }
        if (round == 2) {
            for (i = 0; i < N; ++i) {
                MT_CHECK(ctx_of(x) != ids[i], "blocking dup has the id of idup %d", i);
            }
            exercise(x, "blocking dup among idups");
            MT_OK(MPI_Comm_free(&x));
        }
        for (i = 0; i < N; ++i) {
            MT_OK(MPI_Comm_free(&c[i]));
        }
    }

    /* ---- many at once on one parent */
    {
        enum { M = 24 };
        MPI_Comm m[M];
        MPI_Request mr[M];
        for (i = 0; i < M; ++i) {
            MT_OK(MPI_Comm_idup(MPI_COMM_WORLD, &m[i], &mr[i]));
        }
        MT_OK(MPI_Waitall(M, mr, MPI_STATUSES_IGNORE));
        for (i = 0; i < M; ++i) {
            for (j = 0; j < i; ++j) {
                MT_CHECK(ctx_of(m[i]) != ctx_of(m[j]), "idups %d and %d share an id", i, j);
            }
        }
        exercise(m[M - 1], "24th idup");
        for (i = 0; i < M; ++i) {
            MT_OK(MPI_Comm_free(&m[i]));
        }
    }

    /* ---- MPI_Request_free: newcomm is still set when the idup completes */
    {
        volatile MPI_Comm* pv = &c[0];
        double t0;
        c[0] = MPI_COMM_NULL;
        MT_OK(MPI_Comm_idup(dup, &c[0], &req[0]));
        MT_OK(MPI_Request_free(&req[0]));
        t0 = MPI_Wtime();
        while (*pv == MPI_COMM_NULL && MPI_Wtime() - t0 < 20.0) {
            MT_OK(MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        }
        MT_CHECK(c[0] != MPI_COMM_NULL, "freed idup request: newcomm never set");
        if (c[0] != MPI_COMM_NULL) {
            exercise(c[0], "idup with a freed request");
            MT_OK(MPI_Comm_free(&c[0]));
        }
    }

    /* ---- an intercommunicator between the halves */
    if (p >= 2) {
        MPI_Comm inter, inter2;
        int rsize, rsize2, test, v = -1, mine;
        /* half orders by -rank: its leader is its highest world rank */
        int top_even = (p - 1) % 2 == 0 ? p - 1 : p - 2, top_odd = (p - 1) % 2 == 1 ? p - 1 : p - 2;
        int remote_leader = r % 2 == 0 ? top_odd : top_even;
        MT_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, remote_leader, 55, &inter));
        MT_OK(MPI_Comm_idup(inter, &inter2, &req[0]));
        MT_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        MT_OK(MPI_Comm_test_inter(inter2, &test));
        MT_CHECK(test, "idup of an intercommunicator is not one");
        MT_OK(MPI_Comm_remote_size(inter, &rsize));
        MT_OK(MPI_Comm_remote_size(inter2, &rsize2));
        MT_CHECK(rsize == rsize2, "remote sizes %d and %d", rsize, rsize2);
        MT_OK(MPI_Comm_rank(inter2, &mine));
        if (mine == 0) {
            MT_OK(MPI_Sendrecv(&r, 1, MPI_INT, 0, 9, &v, 1, MPI_INT, 0, 9, inter2,
                               MPI_STATUS_IGNORE));
            MT_CHECK(v == remote_leader, "leaders across the idup: got %d", v);
        }
        MT_CHECK(ctx_of(inter2) != ctx_of(inter), "intercomm idup has its parent's id");
        MT_OK(MPI_Comm_free(&inter2));
        MT_OK(MPI_Comm_free(&inter));
    }

    /* ---- errors */
    MT_ERR(MPI_ERR_COMM, MPI_Comm_idup(MPI_COMM_NULL, &c[0], &req[0]));
    MT_ERR(MPI_ERR_ARG, MPI_Comm_idup(MPI_COMM_WORLD, NULL, &req[0]));
    MT_ERR(MPI_ERR_REQUEST, MPI_Comm_idup(MPI_COMM_WORLD, &c[0], NULL));

    MT_OK(MPI_Comm_free_keyval(&key));
    MT_OK(MPI_Comm_free_keyval(&key2));
    MT_OK(MPI_Comm_free(&half));
    MT_OK(MPI_Comm_free(&dup));
    return mt_finalize();
}
