/*
 * Intracommunicator constructors and queries: Comm_dup, Comm_create (a
 * subgroup; disjoint groups on different processes; MPI_GROUP_EMPTY),
 * Comm_create_group, Comm_split (MPI_UNDEFINED colours, keys that reverse
 * the order, equal keys ordered by rank), Comm_split_type
 * (MPI_COMM_TYPE_SHARED, MPI_UNDEFINED), Comm_compare, Comm_free (also with
 * a receive pending), Comm_test_inter, names, info hints and
 * Comm_dup_with_info; traffic on every new communicator (point-to-point and
 * a collective) does not leak into another; many create/free cycles reuse
 * context ids; argument errors with their classes. Any size.
 */
#include "mpitest.h"

/* A ring exchange and an allreduce on c: checks ranks and isolation. */
static void exercise(MPI_Comm c, const char* what)
{
    int rank, size, next, prev, got = -1, sum = 0, want;
    MPI_Status st;
    MT_OK(MPI_Comm_rank(c, &rank));
    MT_OK(MPI_Comm_size(c, &size));
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    MT_OK(MPI_Sendrecv(&rank, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, c, &st));
    MT_CHECK(got == prev, "%s: got %d from the left, expected %d", what, got, prev);
    MT_CHECK(st.MPI_SOURCE == prev, "%s: status source %d, expected %d", what, st.MPI_SOURCE, prev);
    MT_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    want = size * (size - 1) / 2;
    MT_CHECK(sum == want, "%s: allreduce gave %d, expected %d", what, sum, want);
}

static int world_rank_of(MPI_Comm c, int r)
{
    MPI_Group g, w;
    int out = -1;
    MT_OK(MPI_Comm_group(c, &g));
    MT_OK(MPI_Comm_group(MPI_COMM_WORLD, &w));
    MT_OK(MPI_Group_translate_ranks(g, 1, &r, w, &out));
    MT_OK(MPI_Group_free(&g));
    MT_OK(MPI_Group_free(&w));
    return out;
}

int main(int argc, char** argv)
{
    MPI_Comm dup, dup2, c, d;
    MPI_Group wg, g;
    int p, r, i, res, size, rank, flag, len;
    char name[MPI_MAX_OBJECT_NAME];

    mt_init(&argc, &argv);
    p = mt_size;
    r = mt_rank;
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MT_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));

    /* ---- dup, compare, test_inter, names */
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MT_OK(MPI_Comm_compare(dup, MPI_COMM_WORLD, &res));
    MT_CHECK(res == MPI_CONGRUENT, "dup vs world: %d", res);
    MT_OK(MPI_Comm_compare(dup, dup, &res));
    MT_CHECK(res == MPI_IDENT, "dup vs dup: %d", res);
    MT_OK(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_WORLD, &res));
    MT_CHECK(res == (p == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "self vs world: %d", res);
    MT_OK(MPI_Comm_test_inter(dup, &flag));
    MT_CHECK(flag == 0, "a dup of the world is an intercommunicator");
    MT_ERR(MPI_ERR_COMM, MPI_Comm_remote_size(dup, &size));
    MT_ERR(MPI_ERR_COMM, MPI_Comm_remote_group(dup, &g));
    MT_OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    MT_CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name \"%s\"", name);
    MT_OK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    MT_CHECK(strcmp(name, "MPI_COMM_SELF") == 0, "self name \"%s\"", name);
    MT_OK(MPI_Comm_get_name(dup, name, &len));
    MT_CHECK(len == 0 && name[0] == '\0', "a new communicator is named \"%s\"", name);
    MT_OK(MPI_Comm_set_name(dup, "my dup"));
    MT_OK(MPI_Comm_get_name(dup, name, &len));
    MT_CHECK(strcmp(name, "my dup") == 0 && len == 6, "name \"%s\" (%d)", name, len);
    {
        char longname[300];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = '\0';
        MT_OK(MPI_Comm_set_name(dup, longname));
        MT_OK(MPI_Comm_get_name(dup, name, &len));
        MT_CHECK(len == MPI_MAX_OBJECT_NAME - 1, "a long name kept %d characters", len);
    }
    exercise(dup, "dup");
    /* a dup of a dup; the name is not inherited */
    MT_OK(MPI_Comm_dup(dup, &dup2));
    MT_OK(MPI_Comm_get_name(dup2, name, &len));
    MT_CHECK(len == 0, "the name was inherited: \"%s\"", name);
    MT_OK(MPI_Comm_compare(dup, dup2, &res));
    MT_CHECK(res == MPI_CONGRUENT, "dup vs dup2: %d", res);
    /* isolation: the same tag on dup and dup2 and world, received in reverse order */
    if (p >= 2) {
        int a = 1, b = 2, cval = 3, x = 0, y = 0, z = 0;
        if (r == 0) {
            MT_OK(MPI_Send(&a, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
            MT_OK(MPI_Send(&b, 1, MPI_INT, 1, 5, dup));
            MT_OK(MPI_Send(&cval, 1, MPI_INT, 1, 5, dup2));
        } else if (r == 1) {
            MT_OK(MPI_Recv(&z, 1, MPI_INT, 0, 5, dup2, MPI_STATUS_IGNORE));
            MT_OK(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, MPI_STATUS_IGNORE));
            MT_OK(MPI_Recv(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MT_CHECK(x == 1 && y == 2 && z == 3, "messages crossed communicators: %d %d %d", x, y,
                     z);
        }
    }
    MT_OK(MPI_Comm_free(&dup2));
    MT_CHECK(dup2 == MPI_COMM_NULL, "freed communicator is not MPI_COMM_NULL");

    /* ---- create: the even ranks; odd ranks get MPI_COMM_NULL */
    {
        int rg[1][3] = {{0, p - 1, 2}};
        MT_OK(MPI_Group_range_incl(wg, 1, rg, &g));
        MT_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        if (r % 2 == 0) {
            MT_CHECK(c != MPI_COMM_NULL, "even rank got MPI_COMM_NULL");
            if (c != MPI_COMM_NULL) {
                MT_OK(MPI_Comm_size(c, &size));
                MT_OK(MPI_Comm_rank(c, &rank));
                MT_CHECK(size == (p + 1) / 2 && rank == r / 2, "create: size %d rank %d", size,
                         rank);
                exercise(c, "create evens");
                MT_OK(MPI_Comm_free(&c));
            }
        } else {
            MT_CHECK(c == MPI_COMM_NULL, "odd rank got a communicator");
        }
        MT_OK(MPI_Group_free(&g));
    }
    /* create from a dup, with MPI_GROUP_EMPTY: everyone gets MPI_COMM_NULL */
    MT_OK(MPI_Comm_create(dup, MPI_GROUP_EMPTY, &c));
    MT_CHECK(c == MPI_COMM_NULL, "create with MPI_GROUP_EMPTY gave a communicator");
    /* MPI-2.2: disjoint groups, one per process pair */
    {
        int pair[2];
        int n = 0;
        pair[n++] = r - r % 2;
        if (r - r % 2 + 1 < p) {
            pair[n++] = r - r % 2 + 1;
        }
        MT_OK(MPI_Group_incl(wg, n, pair, &g));
        MT_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        MT_CHECK(c != MPI_COMM_NULL, "disjoint create gave MPI_COMM_NULL");
        if (c != MPI_COMM_NULL) {
            MT_OK(MPI_Comm_size(c, &size));
            MT_CHECK(size == n, "disjoint create: size %d, expected %d", size, n);
            exercise(c, "disjoint create");
            MT_OK(MPI_Comm_free(&c));
        }
        MT_OK(MPI_Group_free(&g));
    }
    /* the whole world in reverse order: similar */
    {
        int* rev = (int*)malloc(sizeof(int) * (size_t)p);
        for (i = 0; i < p; ++i) {
            rev[i] = p - 1 - i;
        }
        MT_OK(MPI_Group_incl(wg, p, rev, &g));
        MT_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        MT_OK(MPI_Comm_rank(c, &rank));
        MT_CHECK(rank == p - 1 - r, "reversed create: rank %d", rank);
        MT_OK(MPI_Comm_compare(c, MPI_COMM_WORLD, &res));
        MT_CHECK(res == (p == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "reversed vs world: %d", res);
        exercise(c, "reversed create");
        MT_OK(MPI_Comm_free(&c));
        MT_OK(MPI_Group_free(&g));
        free(rev);
    }

    /* ---- create_group: the upper half, called only by its members */
    {
        int rg[1][3] = {{p / 2, p - 1, 1}};
        MT_OK(MPI_Group_range_incl(wg, 1, rg, &g));
        if (r >= p / 2) {
            MT_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 42, &c));
            MT_CHECK(c != MPI_COMM_NULL, "create_group gave MPI_COMM_NULL");
            if (c != MPI_COMM_NULL) {
                MT_OK(MPI_Comm_rank(c, &rank));
                MT_CHECK(rank == r - p / 2, "create_group rank %d", rank);
                exercise(c, "create_group");
                MT_OK(MPI_Comm_free(&c));
            }
        }
        /* a non-member: a local call returning MPI_COMM_NULL */
        MT_OK(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_EMPTY, 1, &c));
        MT_CHECK(c == MPI_COMM_NULL, "create_group of MPI_GROUP_EMPTY");
        MT_ERR(MPI_ERR_TAG, MPI_Comm_create_group(MPI_COMM_WORLD, g, -3, &c));
        MT_OK(MPI_Group_free(&g));
    }

    /* ---- split */
    /* colour r % 3 (MPI_UNDEFINED for r % 4 == 3), key -r: reversed order */
    {
        int color = r % 4 == 3 ? MPI_UNDEFINED : r % 3;
        MT_OK(MPI_Comm_split(MPI_COMM_WORLD, color, -r, &c));
        if (color == MPI_UNDEFINED) {
            MT_CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED colour got a communicator");
        } else {
            int expect_size = 0, expect_rank = 0, j;
            for (j = 0; j < p; ++j) {
                int cj = j % 4 == 3 ? MPI_UNDEFINED : j % 3;
                if (cj == color) {
                    ++expect_size;
                    if (j > r) {
                        ++expect_rank; /* higher world ranks come first */
                    }
                }
            }
            MT_OK(MPI_Comm_size(c, &size));
            MT_OK(MPI_Comm_rank(c, &rank));
            MT_CHECK(size == expect_size && rank == expect_rank,
                     "split: size %d rank %d, expected %d %d", size, rank, expect_size,
                     expect_rank);
            MT_CHECK(world_rank_of(c, 0) >= world_rank_of(c, size - 1), "split order");
            exercise(c, "split");
            MT_OK(MPI_Comm_free(&c));
        }
    }
    /* equal keys: parent order; everyone MPI_UNDEFINED: all MPI_COMM_NULL */
    MT_OK(MPI_Comm_split(dup, 0, 0, &c));
    MT_OK(MPI_Comm_compare(c, dup, &res));
    MT_CHECK(res == MPI_CONGRUENT, "split with one colour and equal keys: %d", res);
    MT_OK(MPI_Comm_free(&c));
    MT_OK(MPI_Comm_split(dup, MPI_UNDEFINED, r, &c));
    MT_CHECK(c == MPI_COMM_NULL, "all-undefined split gave a communicator");
    /* a split of a split of a dup */
    MT_OK(MPI_Comm_split(dup, r % 2, r, &c));
    MT_OK(MPI_Comm_split(c, 0, 0, &d));
    MT_OK(MPI_Comm_compare(c, d, &res));
    MT_CHECK(res == MPI_CONGRUENT, "split of a split: %d", res);
    exercise(d, "split of a split");
    MT_OK(MPI_Comm_free(&d));
    MT_OK(MPI_Comm_free(&c));
    MT_ERR(MPI_ERR_ARG, MPI_Comm_split(MPI_COMM_WORLD, -7, 0, &c));

    /* ---- split_type (comm_hosts checks it over several hosts) */
    {
        char me[MPI_MAX_PROCESSOR_NAME], first[MPI_MAX_PROCESSOR_NAME];
        int same, all_same = 0;
        memset(me, 0, sizeof me);
        MT_OK(MPI_Get_processor_name(me, &len));
        memcpy(first, me, sizeof me);
        MT_OK(MPI_Bcast(first, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD));
        same = strcmp(me, first) == 0;
        MT_OK(MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
        MT_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &c));
        exercise(c, "split_type");
        if (all_same) {
            MT_OK(MPI_Comm_compare(c, MPI_COMM_WORLD, &res));
            MT_CHECK(res == MPI_CONGRUENT, "split_type shared on one host: %d", res);
            MT_OK(MPI_Comm_free(&c));
            MT_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -r, MPI_INFO_NULL,
                                      &c));
            MT_OK(MPI_Comm_rank(c, &rank));
            MT_CHECK(rank == p - 1 - r, "split_type key order: rank %d", rank);
        }
        MT_OK(MPI_Comm_free(&c));
    }
    MT_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &c));
    MT_CHECK(c == MPI_COMM_NULL, "split_type MPI_UNDEFINED gave a communicator");
    MT_ERR(MPI_ERR_ARG, MPI_Comm_split_type(MPI_COMM_WORLD, 77, 0, MPI_INFO_NULL, &c));

    /* ---- info hints */
    {
        MPI_Info in, out;
        char v[64];
        MT_OK(MPI_Info_create(&in));
        MT_OK(MPI_Info_set(in, "color", "blue"));
        MT_OK(MPI_Comm_dup_with_info(dup, in, &c));
        MT_OK(MPI_Comm_get_info(c, &out));
        MT_OK(MPI_Info_get(out, "color", 63, v, &flag));
        MT_CHECK(flag && strcmp(v, "blue") == 0, "dup_with_info lost the hint");
        MT_OK(MPI_Info_free(&out));
        MT_OK(MPI_Info_set(in, "color", "red"));
        MT_OK(MPI_Info_set(in, "size", "big"));
        MT_OK(MPI_Comm_set_info(c, in));
        MT_OK(MPI_Comm_dup(c, &d)); /* Comm_dup keeps the hints */
        MT_OK(MPI_Comm_get_info(d, &out));
        MT_OK(MPI_Info_get(out, "color", 63, v, &flag));
        MT_CHECK(flag && strcmp(v, "red") == 0, "set_info/dup lost the hint");
        MT_OK(MPI_Info_get(out, "size", 63, v, &flag));
        MT_CHECK(flag && strcmp(v, "big") == 0, "set_info/dup lost the second hint");
        MT_OK(MPI_Info_free(&out));
        exercise(d, "dup of dup_with_info");
        MT_OK(MPI_Comm_free(&d));
        MT_OK(MPI_Comm_free(&c));
        MT_OK(MPI_Comm_dup_with_info(dup, MPI_INFO_NULL, &c));
        MT_OK(MPI_Comm_get_info(c, &out));
        MT_OK(MPI_Info_get(out, "color", 63, v, &flag));
        MT_CHECK(!flag, "dup_with_info(MPI_INFO_NULL) kept a hint");
        MT_OK(MPI_Info_free(&out));
        MT_OK(MPI_Comm_free(&c));
        MT_ERR(MPI_ERR_INFO, MPI_Comm_dup_with_info(dup, 0x5c000777, &c));
        MT_OK(MPI_Info_free(&in));
    }

    /* ---- free with a receive pending: the receive still completes */
    if (p >= 2) {
        int v = -1, one = 1;
        MPI_Request req;
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        if (r == 1) {
            MT_OK(MPI_Irecv(&v, 1, MPI_INT, 0, 3, c, &req));
            MT_OK(MPI_Comm_free(&c));
            MT_OK(MPI_Barrier(MPI_COMM_WORLD));
            MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            MT_CHECK(v == 1, "receive on a freed communicator got %d", v);
        } else {
            MT_OK(MPI_Barrier(MPI_COMM_WORLD));
            if (r == 0) {
                MT_OK(MPI_Send(&one, 1, MPI_INT, 1, 3, c));
            }
            MT_OK(MPI_Comm_free(&c));
        }
    }

    /* ---- many create/free cycles: context ids are reused */
    for (i = 0; i < 5000; ++i) {
        MT_OK(MPI_Comm_dup(dup, &c));
        MT_OK(MPI_Comm_free(&c));
    }
    for (i = 0; i < 200; ++i) {
        MT_OK(MPI_Comm_split(MPI_COMM_WORLD, r % 2, 0, &c));
        MT_OK(MPI_Comm_free(&c));
    }
    exercise(dup, "dup after 5200 cycles");

    /* ---- argument errors */
    MT_ERR(MPI_ERR_COMM, MPI_Comm_dup(MPI_COMM_NULL, &c));
    MT_ERR(MPI_ERR_COMM, MPI_Comm_dup(0x44000777, &c));
    c = MPI_COMM_WORLD;
    MT_ERR(MPI_ERR_COMM, MPI_Comm_free(&c));
    c = MPI_COMM_SELF;
    MT_ERR(MPI_ERR_COMM, MPI_Comm_free(&c));
    c = MPI_COMM_NULL;
    MT_ERR(MPI_ERR_COMM, MPI_Comm_free(&c));
    MT_ERR(MPI_ERR_GROUP, MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &c));
    MT_ERR(MPI_ERR_ARG, MPI_Comm_dup(MPI_COMM_WORLD, NULL));
    MT_ERR(MPI_ERR_COMM, MPI_Comm_compare(MPI_COMM_NULL, MPI_COMM_WORLD, &res));
    MT_ERR(MPI_ERR_COMM, MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &c));
    if (p >= 2) {
        /* a group that is not a subgroup of the communicator */
        MT_ERR(MPI_ERR_GROUP, MPI_Comm_create(MPI_COMM_SELF, wg, &c));
    }
    MT_CHECK(MPI_Comm_f2c(MPI_Comm_c2f(dup)) == dup, "comm c2f/f2c");

    MT_OK(MPI_Comm_free(&dup));
    MT_OK(MPI_Group_free(&wg));
    return mt_finalize();
}
