/*
 * Nonblocking collectives beyond "start then wait":
 *  - several collectives in flight at once on one communicator, completed
 *    in reverse order (MPI_Wait), all at once (MPI_Waitall) or by polling
 *    (MPI_Testall / MPI_Test);
 *  - progress while the program waits on something else: rank 0 blocks in
 *    MPI_Recv for a message rank 1 sends only after its MPI_Ibarrier
 *    completed, so rank 0's barrier must advance inside MPI_Recv;
 *  - point-to-point traffic on the same communicator between start and
 *    completion (collective messages never match it);
 *  - many outstanding operations (64 MPI_Iallreduce);
 *  - MPI_Request_free on a nonblocking barrier (it completes on its own).
 */
#include "mpitest.h"

#define NV 1001

static int expect_sum(int i) { return mt_size * (mt_size - 1) / 2 + mt_size * i; }

static void several_in_flight(int how)
{
    int a[NV], b[NV], c[NV], d[64];
    int* all = malloc(sizeof(int) * 2 * (size_t)mt_size);
    int mine[2] = {mt_rank, -mt_rank};
    MPI_Request req[5];
    int i, root = mt_size > 1 ? 1 : 0;
    for (i = 0; i < NV; ++i) {
        a[i] = mt_rank + i;
        c[i] = mt_rank == root ? 3 * i : -1;
    }
    for (i = 0; i < 64; ++i) {
        d[i] = mt_rank;
    }
    MT_OK(MPI_Ibarrier(MPI_COMM_WORLD, &req[0]));
    MT_OK(MPI_Iallreduce(a, b, NV, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[1]));
    MT_OK(MPI_Ibcast(c, NV, MPI_INT, root, MPI_COMM_WORLD, &req[2]));
    MT_OK(MPI_Iallgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD, &req[3]));
    MT_OK(MPI_Iscan(MPI_IN_PLACE, d, 64, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req[4]));
    if (how == 0) {
        for (i = 4; i >= 0; --i) {
            MT_OK(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        }
    } else if (how == 1) {
        MPI_Status st[5];
        MT_OK(MPI_Waitall(5, req, st));
        for (i = 0; i < 5; ++i) {
            MT_CHECK(st[i].MPI_ERROR == MPI_SUCCESS, "status %d has error %d", i, st[i].MPI_ERROR);
        }
    } else {
        int flag = 0;
        long polls = 0;
        while (!flag) {
            MT_OK(MPI_Testall(5, req, &flag, MPI_STATUSES_IGNORE));
            ++polls;
        }
    }
    for (i = 0; i < 5; ++i) {
        MT_CHECK(req[i] == MPI_REQUEST_NULL, "request %d not freed", i);
    }
    for (i = 0; i < NV; ++i) {
        if (b[i] != expect_sum(i) || c[i] != 3 * i) {
            MT_CHECK(0, "in flight (mode %d): element %d: sum %d (want %d), bcast %d (want %d)",
                     how, i, b[i], expect_sum(i), c[i], 3 * i);
            break;
        }
    }
    for (i = 0; i < mt_size; ++i) {
        MT_CHECK(all[2 * i] == i && all[2 * i + 1] == -i, "in flight: allgather block %d", i);
    }
    for (i = 0; i < 64; ++i) {
        MT_CHECK(d[i] == mt_rank, "in flight: scan max element %d is %d", i, d[i]);
    }
    free(all);
}

static void progress_elsewhere(void)
{
    MPI_Request bar;
    int token = 42, got = 0;
    if (mt_size < 2) {
        return;
    }
    MT_OK(MPI_Ibarrier(MPI_COMM_WORLD, &bar));
    if (mt_rank == 0) {
        /* Rank 1 sends only once its barrier completed, which needs us. */
        MT_OK(MPI_Recv(&got, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_CHECK(got == 42, "token %d", got);
        MT_OK(MPI_Wait(&bar, MPI_STATUS_IGNORE));
    } else if (mt_rank == 1) {
        MT_OK(MPI_Wait(&bar, MPI_STATUS_IGNORE));
        MT_OK(MPI_Send(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
    } else {
        MT_OK(MPI_Wait(&bar, MPI_STATUS_IGNORE));
    }
}

static void with_p2p(void)
{
    int s[NV], r[NV], i;
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    int out = mt_rank * 7, in = -1;
    MPI_Request coll, p2p[2];
    for (i = 0; i < NV; ++i) {
        s[i] = mt_rank + i;
    }
    MT_OK(MPI_Iallreduce(s, r, NV, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &coll));
    /* the same tag a collective might use, on purpose: tags do not mix */
    MT_OK(MPI_Irecv(&in, 1, MPI_INT, left, 0, MPI_COMM_WORLD, &p2p[0]));
    MT_OK(MPI_Isend(&out, 1, MPI_INT, right, 0, MPI_COMM_WORLD, &p2p[1]));
    MT_OK(MPI_Waitall(2, p2p, MPI_STATUSES_IGNORE));
    MT_CHECK(in == left * 7, "p2p during a collective: got %d", in);
    MT_OK(MPI_Wait(&coll, MPI_STATUS_IGNORE));
    for (i = 0; i < NV; ++i) {
        if (r[i] != expect_sum(i)) {
            MT_CHECK(0, "allreduce with p2p: element %d is %d", i, r[i]);
            break;
        }
    }
}

static void many(void)
{
    enum { K = 64 };
    MPI_Request req[K];
    int s[K][3], r[K][3], k, i;
    for (k = 0; k < K; ++k) {
        for (i = 0; i < 3; ++i) {
            s[k][i] = mt_rank * k + i;
        }
        MT_OK(MPI_Iallreduce(s[k], r[k], 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[k]));
    }
    /* complete them in a scrambled order */
    for (k = 0; k < K; ++k) {
        int j = (k * 37) % K;
        int flag = 0;
        while (!flag) {
            MT_OK(MPI_Test(&req[j], &flag, MPI_STATUS_IGNORE));
        }
    }
    for (k = 0; k < K; ++k) {
        for (i = 0; i < 3; ++i) {
            int want = k * mt_size * (mt_size - 1) / 2 + mt_size * i;
            MT_CHECK(r[k][i] == want, "many: op %d element %d is %d, want %d", k, i, r[k][i], want);
        }
    }
}

static void freed_request(void)
{
    MPI_Request req;
    MT_OK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    MT_OK(MPI_Request_free(&req));
    MT_CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free did not set MPI_REQUEST_NULL");
    MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    /* The freed barrier finishes in the background; MPI gives no way to
     * know when, so poll for a while (its messages are small and local)
     * before anything else, MPI_Finalize included. */
    {
        double until = MPI_Wtime() + 0.05;
        int flag;
        while (MPI_Wtime() < until) {
            MT_OK(MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        }
    }
    MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    /* a later collective still lines up */
    {
        int v = 1, sum = 0;
        MT_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        MT_CHECK(sum == mt_size, "after a freed request: sum %d", sum);
    }
}

int main(int argc, char** argv)
{
    int how;
    mt_init(&argc, &argv);
    for (how = 0; how < 3; ++how) {
        several_in_flight(how);
    }
    progress_elsewhere();
    with_p2p();
    many();
    freed_request();
    return mt_finalize();
}
