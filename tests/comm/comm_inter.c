/*
 * Intercommunicators: MPI_Intercomm_create between the two halves of the
 * world (and between single processes over MPI_COMM_SELF), the queries
 * (test_inter, sizes, remote group, compare), point-to-point across (ranks
 * name the remote group; MPI_ANY_SOURCE and status sources; MPI_PROC_NULL;
 * probe; a remote rank out of range), Comm_dup isolation, Intercomm_merge
 * with high/low in both orders and tied, Comm_split and Comm_create on an
 * intercommunicator (with MPI_UNDEFINED colours and empty groups), a
 * collective across, and the refusals: a self-intercommunicator
 * (overlapping groups), an intercommunicator as local_comm, a bad leader.
 * Needs 2 ranks or more; any size.
 */
#include "mpitest.h"

static int nlow;

/* World rank of rank `i` of the remote (remote = 1) or local group. */
static int world_of(MPI_Comm inter, int remote, int i)
{
    MPI_Group g, w;
    int out = -1;
    if (remote) {
        MT_OK(MPI_Comm_remote_group(inter, &g));
    } else {
        MT_OK(MPI_Comm_group(inter, &g));
    }
    MT_OK(MPI_Comm_group(MPI_COMM_WORLD, &w));
    MT_OK(MPI_Group_translate_ranks(g, 1, &i, w, &out));
    MT_OK(MPI_Group_free(&g));
    MT_OK(MPI_Group_free(&w));
    return out;
}

/* Every local rank sends its world rank to every remote rank; each checks
 * what arrives (any source, then the status). */
static void all_to_remote(MPI_Comm inter, int tag, const char* what)
{
    int lsize, rsize, lrank, i, v, seen = 0;
    MPI_Request* reqs;
    int* out;
    MPI_Status st;
    MT_OK(MPI_Comm_size(inter, &lsize));
    MT_OK(MPI_Comm_remote_size(inter, &rsize));
    MT_OK(MPI_Comm_rank(inter, &lrank));
    reqs = (MPI_Request*)malloc(sizeof(MPI_Request) * (size_t)rsize);
    out = (int*)malloc(sizeof(int) * (size_t)rsize);
    for (i = 0; i < rsize; ++i) {
        out[i] = mt_rank;
        MT_OK(MPI_Isend(&out[i], 1, MPI_INT, i, tag, inter, &reqs[i]));
    }
    for (i = 0; i < rsize; ++i) {
        MT_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, tag, inter, &st));
        MT_CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize, "%s: status source %d", what,
                 st.MPI_SOURCE);
        if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize) {
            MT_CHECK(v == world_of(inter, 1, st.MPI_SOURCE),
                     "%s: from remote rank %d got world rank %d, expected %d", what, st.MPI_SOURCE,
                     v, world_of(inter, 1, st.MPI_SOURCE));
            seen |= 1 << (st.MPI_SOURCE % 30);
        }
    }
    MT_OK(MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE));
    free(reqs);
    free(out);
    (void)seen;
}

static void check_merge(MPI_Comm inter, int high, int low_first_expected, const char* what)
{
    MPI_Comm m;
    int size, rank, lsize, rsize, lrank, expect, sum = 0;
    MT_OK(MPI_Intercomm_merge(inter, high, &m));
    MT_OK(MPI_Comm_size(m, &size));
    MT_OK(MPI_Comm_rank(m, &rank));
    MT_OK(MPI_Comm_size(inter, &lsize));
    MT_OK(MPI_Comm_remote_size(inter, &rsize));
    MT_OK(MPI_Comm_rank(inter, &lrank));
    MT_CHECK(size == mt_size, "%s: merged size %d", what, size);
    /* am I in the group that comes first? */
    {
        int i_am_low = mt_rank < nlow;
        int mine_first = i_am_low ? low_first_expected : !low_first_expected;
        expect = mine_first ? lrank : rsize + lrank;
    }
    MT_CHECK(rank == expect, "%s: merged rank %d, expected %d", what, rank, expect);
    MT_OK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, m));
    MT_CHECK(sum == mt_size * (mt_size - 1) / 2, "%s: allreduce on the merge gave %d", what, sum);
    MT_OK(MPI_Comm_free(&m));
}

int main(int argc, char** argv)
{
    MPI_Comm half, inter, dup, x, wdup;
    int p, r, low, flag, size, res, i, lrank;

    mt_init(&argc, &argv);
    p = mt_size;
    r = mt_rank;
    if (p < 2) {
        if (r == 0) {
            printf("needs 2 ranks\nNo Errors\n");
        }
        MPI_Finalize();
        return 0;
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    nlow = (p + 1) / 2;
    low = r < nlow;
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, low ? 0 : 1, r, &half));
    MT_OK(MPI_Comm_rank(half, &lrank));
    /* the peer is a dup of the world, remote leaders named in it */
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &wdup));
    MT_OK(MPI_Intercomm_create(half, 0, wdup, low ? nlow : 0, 1234, &inter));

    /* ---- queries */
    MT_OK(MPI_Comm_test_inter(inter, &flag));
    MT_CHECK(flag == 1, "test_inter said %d", flag);
    MT_OK(MPI_Comm_size(inter, &size));
    MT_CHECK(size == (low ? nlow : p - nlow), "local size %d", size);
    MT_OK(MPI_Comm_remote_size(inter, &size));
    MT_CHECK(size == (low ? p - nlow : nlow), "remote size %d", size);
    MT_OK(MPI_Comm_rank(inter, &res));
    MT_CHECK(res == lrank, "rank in the intercommunicator %d, expected %d", res, lrank);
    for (i = 0; i < size; ++i) {
        int w = world_of(inter, 1, i);
        MT_CHECK(w == (low ? nlow + i : i), "remote rank %d is world rank %d", i, w);
    }
    MT_OK(MPI_Comm_compare(inter, half, &res));
    MT_CHECK(res == MPI_UNEQUAL, "inter vs intra: %d", res);
    MT_OK(MPI_Comm_dup(inter, &dup));
    MT_OK(MPI_Comm_compare(inter, dup, &res));
    MT_CHECK(res == MPI_CONGRUENT, "inter vs its dup: %d", res);
    MT_OK(MPI_Comm_test_inter(dup, &flag));
    MT_CHECK(flag == 1, "the dup of an intercommunicator is not one");

    /* ---- point-to-point across */
    all_to_remote(inter, 11, "inter");
    all_to_remote(dup, 11, "dup of inter");
    /* the same tag on inter and its dup, received in the other order */
    if (lrank == 0) {
        int a = 100 + r, b = 200 + r, x1 = -1, x2 = -1;
        MPI_Request q[2];
        MT_OK(MPI_Isend(&a, 1, MPI_INT, 0, 5, inter, &q[0]));
        MT_OK(MPI_Isend(&b, 1, MPI_INT, 0, 5, dup, &q[1]));
        MT_OK(MPI_Recv(&x2, 1, MPI_INT, 0, 5, dup, MPI_STATUS_IGNORE));
        MT_OK(MPI_Recv(&x1, 1, MPI_INT, 0, 5, inter, MPI_STATUS_IGNORE));
        MT_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        {
            int other = low ? nlow : 0;
            MT_CHECK(x1 == 100 + other && x2 == 200 + other,
                     "leaders: inter gave %d, dup gave %d", x1, x2);
        }
    }
    /* probe, MPI_PROC_NULL, Sendrecv */
    {
        MPI_Status st;
        int v = r, got = -1, rsize;
        MT_OK(MPI_Comm_remote_size(inter, &rsize));
        if (lrank < rsize) {
            /* pairs: local i <-> remote i */
            MT_OK(MPI_Sendrecv(&v, 1, MPI_INT, lrank, 21, &got, 1, MPI_INT, lrank, 21, inter, &st));
            MT_CHECK(got == world_of(inter, 1, lrank) && st.MPI_SOURCE == lrank,
                     "sendrecv across: got %d from %d", got, st.MPI_SOURCE);
            if (low) {
                MT_OK(MPI_Send(&v, 1, MPI_INT, lrank, 22, inter));
            } else {
                MT_OK(MPI_Probe(MPI_ANY_SOURCE, 22, inter, &st));
                MT_CHECK(st.MPI_SOURCE == lrank, "probe source %d", st.MPI_SOURCE);
                MT_OK(MPI_Recv(&got, 1, MPI_INT, st.MPI_SOURCE, 22, inter, MPI_STATUS_IGNORE));
            }
        }
        MT_OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 3, inter));
        MT_OK(MPI_Recv(&got, 1, MPI_INT, MPI_PROC_NULL, 3, inter, &st));
        MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "recv from MPI_PROC_NULL: source %d",
                 st.MPI_SOURCE);
        MT_ERR(MPI_ERR_RANK, MPI_Send(&v, 1, MPI_INT, rsize, 3, inter));
        {
            MPI_Request q;
            MT_ERR(MPI_ERR_RANK, MPI_Irecv(&got, 1, MPI_INT, rsize + 3, 3, inter, &q));
        }
    }
    /* a collective across */
    {
        int v = low ? 7 : -1;
        MT_OK(MPI_Barrier(inter));
        if (low) {
            MT_OK(MPI_Bcast(&v, 1, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
        } else {
            MT_OK(MPI_Bcast(&v, 1, MPI_INT, 0, inter));
            MT_CHECK(v == 7, "bcast across gave %d", v);
        }
    }

    /* ---- merge */
    check_merge(inter, low ? 0 : 1, 1, "merge low/high");
    check_merge(inter, low ? 1 : 0, 0, "merge high/low");
    check_merge(inter, 0, 1, "merge tied (the lower leader first)");
    check_merge(dup, 1, 1, "merge tied on the dup");

    /* ---- split of the intercommunicator: colour local rank % 2; on the low
     * side local rank 2 takes MPI_UNDEFINED */
    {
        int color = lrank % 2;
        int lsize, rsize, my_count = 0, remote_count = 0, j;
        if (low && lrank == 2) {
            color = MPI_UNDEFINED;
        }
        MT_OK(MPI_Comm_size(inter, &lsize));
        MT_OK(MPI_Comm_remote_size(inter, &rsize));
        for (j = 0; j < lsize; ++j) {
            my_count += (j % 2 == color) && !(low && j == 2);
        }
        for (j = 0; j < rsize; ++j) {
            remote_count += (j % 2 == color) && !(!low && j == 2);
        }
        MT_OK(MPI_Comm_split(inter, color, -lrank, &x));
        if (color == MPI_UNDEFINED || remote_count == 0) {
            MT_CHECK(x == MPI_COMM_NULL, "split of inter: expected MPI_COMM_NULL");
        } else {
            MT_CHECK(x != MPI_COMM_NULL, "split of inter: got MPI_COMM_NULL");
            if (x != MPI_COMM_NULL) {
                MT_OK(MPI_Comm_test_inter(x, &flag));
                MT_OK(MPI_Comm_size(x, &size));
                MT_OK(MPI_Comm_remote_size(x, &res));
                MT_CHECK(flag && size == my_count && res == remote_count,
                         "split of inter: inter %d size %d/%d remote %d/%d", flag, size,
                         my_count, res, remote_count);
                MT_OK(MPI_Comm_rank(x, &res));
                MT_CHECK(world_of(x, 0, 0) >= world_of(x, 0, size - 1), "split key order");
                all_to_remote(x, 31, "split of inter");
                MT_OK(MPI_Comm_free(&x));
            }
        }
    }

    /* ---- create on the intercommunicator: even local ranks on each side */
    {
        MPI_Group lg, sub;
        int rg[1][3];
        int lsize, rsize;
        MT_OK(MPI_Comm_size(inter, &lsize));
        MT_OK(MPI_Comm_remote_size(inter, &rsize));
        MT_OK(MPI_Comm_group(inter, &lg));
        rg[0][0] = 0;
        rg[0][1] = lsize - 1;
        rg[0][2] = 2;
        MT_OK(MPI_Group_range_incl(lg, 1, rg, &sub));
        MT_OK(MPI_Comm_create(inter, sub, &x));
        if (lrank % 2 == 0) {
            MT_CHECK(x != MPI_COMM_NULL, "create on inter: even rank got MPI_COMM_NULL");
            if (x != MPI_COMM_NULL) {
                MT_OK(MPI_Comm_size(x, &size));
                MT_OK(MPI_Comm_remote_size(x, &res));
                MT_CHECK(size == (lsize + 1) / 2 && res == (rsize + 1) / 2,
                         "create on inter: sizes %d/%d", size, res);
                all_to_remote(x, 41, "create on inter");
                MT_OK(MPI_Comm_free(&x));
            }
        } else {
            MT_CHECK(x == MPI_COMM_NULL, "create on inter: odd rank got a communicator");
        }
        /* one side gives MPI_GROUP_EMPTY: nobody gets a communicator */
        MT_OK(MPI_Comm_create(inter, low ? sub : MPI_GROUP_EMPTY, &x));
        MT_CHECK(x == MPI_COMM_NULL, "create on inter with an empty side gave a communicator");
        MT_OK(MPI_Group_free(&sub));
        MT_OK(MPI_Group_free(&lg));
    }

    /* ---- single-process groups over MPI_COMM_SELF: pairs r, r ^ 1 */
    if ((r ^ 1) < p) {
        int v = r, got = -1;
        MT_OK(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, r ^ 1, 99, &x));
        MT_OK(MPI_Comm_remote_size(x, &size));
        MT_CHECK(size == 1, "pair intercommunicator: remote size %d", size);
        MT_OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 0, &got, 1, MPI_INT, 0, 0, x, MPI_STATUS_IGNORE));
        MT_CHECK(got == (r ^ 1), "pair intercommunicator: got %d", got);
        MT_OK(MPI_Comm_free(&x));
    }

    /* ---- refusals */
    /* the world with itself: the groups overlap */
    MT_ERR(MPI_ERR_COMM, MPI_Intercomm_create(MPI_COMM_WORLD, 0, MPI_COMM_WORLD, 0, 5, &x));
    /* a half with itself (each half's leader names its own leader) */
    MT_ERR(MPI_ERR_COMM, MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? 0 : nlow, 6, &x));
    /* everything still works after a refusal */
    all_to_remote(inter, 12, "inter after the refusals");
    MT_ERR(MPI_ERR_COMM, MPI_Intercomm_create(inter, 0, MPI_COMM_WORLD, 0, 5, &x));
    MT_ERR(MPI_ERR_RANK, MPI_Intercomm_create(half, -1, MPI_COMM_WORLD, 0, 5, &x));
    MT_ERR(MPI_ERR_RANK, MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, p + 3, 5, &x));
    MT_ERR(MPI_ERR_TAG, MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, 0, -5, &x));
    MT_ERR(MPI_ERR_COMM, MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_NULL, 0, 5, &x));
    MT_ERR(MPI_ERR_COMM, MPI_Intercomm_merge(half, 0, &x));
    MT_ERR(MPI_ERR_COMM, MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &x));

    MT_OK(MPI_Comm_free(&dup));
    MT_OK(MPI_Comm_free(&inter));
    MT_OK(MPI_Comm_free(&wdup));
    MT_OK(MPI_Comm_free(&half));
    return mt_finalize();
}
