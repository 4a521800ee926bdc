/*
 * Groups: every MPI-1 group function and MPI_GROUP_EMPTY, with the edge
 * cases: empty results are MPI_GROUP_EMPTY (and may be freed), zero counts,
 * MPI_PROC_NULL in translate_ranks, negative strides and empty ranges,
 * overlapping ranges and repeated ranks refused with MPI_ERR_RANK, stride 0
 * with MPI_ERR_ARG, invalid handles with MPI_ERR_GROUP. Any size.
 */
#include "mpitest.h"

static int group_size(MPI_Group g)
{
    int n = -1;
    MT_OK(MPI_Group_size(g, &n));
    return n;
}

/* World ranks of the members of g, in order (as ranks of MPI_COMM_WORLD). */
static void members(MPI_Group g, int* out, int n)
{
    MPI_Group world;
    int i;
    int* idx = (int*)malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (i = 0; i < n; ++i) {
        idx[i] = i;
    }
    MT_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MT_OK(MPI_Group_translate_ranks(g, n, idx, world, out));
    MT_OK(MPI_Group_free(&world));
    free(idx);
}

static void expect_members(MPI_Group g, const int* want, int n, const char* what)
{
    int got[64];
    int i;
    int size = group_size(g);
    MT_CHECK(size == n, "%s: size %d, expected %d", what, size, n);
    if (size != n || n > 64) {
        return;
    }
    members(g, got, n);
    for (i = 0; i < n; ++i) {
        MT_CHECK(got[i] == want[i], "%s: member %d is world rank %d, expected %d", what, i, got[i],
                 want[i]);
    }
}

int main(int argc, char** argv)
{
    MPI_Group world, self, g, h, e;
    int p, r, i, res;
    int ranks[64], out[64], want[64];

    mt_init(&argc, &argv);
    p = mt_size;
    r = mt_rank;
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MT_OK(MPI_Comm_group(MPI_COMM_SELF, &self));

    /* size, rank */
    MT_CHECK(group_size(world) == p, "world group size");
    MT_OK(MPI_Group_rank(world, &res));
    MT_CHECK(res == r, "world group rank %d", res);
    MT_OK(MPI_Group_rank(self, &res));
    MT_CHECK(res == 0, "self group rank %d", res);
    MT_CHECK(group_size(MPI_GROUP_EMPTY) == 0, "MPI_GROUP_EMPTY size");
    MT_OK(MPI_Group_rank(MPI_GROUP_EMPTY, &res));
    MT_CHECK(res == MPI_UNDEFINED, "rank in MPI_GROUP_EMPTY is %d", res);

    /* compare */
    MT_OK(MPI_Group_compare(world, world, &res));
    MT_CHECK(res == MPI_IDENT, "world vs world: %d", res);
    MT_OK(MPI_Group_compare(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &res));
    MT_CHECK(res == MPI_IDENT, "empty vs empty: %d", res);
    MT_OK(MPI_Group_compare(self, world, &res));
    MT_CHECK(res == (p == 1 ? MPI_IDENT : MPI_UNEQUAL), "self vs world: %d", res);
    /* the world reversed: similar (same members, other order) unless p == 1 */
    for (i = 0; i < p; ++i) {
        ranks[i] = p - 1 - i;
    }
    MT_OK(MPI_Group_incl(world, p, ranks, &g));
    MT_OK(MPI_Group_compare(world, g, &res));
    MT_CHECK(res == (p == 1 ? MPI_IDENT : MPI_SIMILAR), "world vs reversed: %d", res);
    for (i = 0; i < p; ++i) {
        want[i] = p - 1 - i;
    }
    expect_members(g, want, p, "reversed");
    MT_OK(MPI_Group_rank(g, &res));
    MT_CHECK(res == p - 1 - r, "my rank in the reversed group: %d", res);

    /* translate_ranks: PROC_NULL passes through, non-members are UNDEFINED */
    ranks[0] = 0;
    ranks[1] = MPI_PROC_NULL;
    ranks[2] = p - 1;
    MT_OK(MPI_Group_translate_ranks(world, 3, ranks, g, out));
    MT_CHECK(out[0] == p - 1 && out[1] == MPI_PROC_NULL && out[2] == 0,
             "translate to reversed: %d %d %d", out[0], out[1], out[2]);
    MT_OK(MPI_Group_translate_ranks(world, 3, ranks, self, out));
    MT_CHECK(out[0] == (r == 0 ? 0 : MPI_UNDEFINED) && out[1] == MPI_PROC_NULL,
             "translate to self: %d %d", out[0], out[1]);
    MT_OK(MPI_Group_translate_ranks(world, 0, NULL, g, NULL)); /* zero count */
    MT_OK(MPI_Group_translate_ranks(MPI_GROUP_EMPTY, 0, ranks, world, out));
    ranks[0] = p;
    MT_ERR(MPI_ERR_RANK, MPI_Group_translate_ranks(world, 1, ranks, g, out));
    MT_ERR(MPI_ERR_ARG, MPI_Group_translate_ranks(world, -1, ranks, g, out));

    /* union, intersection, difference */
    MT_OK(MPI_Group_union(g, world, &h)); /* g's order, nothing added */
    expect_members(h, want, p, "reversed U world");
    MT_OK(MPI_Group_free(&h));
    MT_OK(MPI_Group_union(self, world, &h)); /* me first, then the rest in world order */
    want[0] = r;
    for (i = 0, res = 1; i < p; ++i) {
        if (i != r) {
            want[res++] = i;
        }
    }
    expect_members(h, want, p, "self U world");
    MT_OK(MPI_Group_free(&h));
    MT_OK(MPI_Group_intersection(world, self, &h));
    want[0] = r;
    expect_members(h, want, 1, "world ^ self");
    MT_OK(MPI_Group_free(&h));
    MT_OK(MPI_Group_intersection(g, world, &h)); /* g's order */
    for (i = 0; i < p; ++i) {
        want[i] = p - 1 - i;
    }
    expect_members(h, want, p, "reversed ^ world");
    MT_OK(MPI_Group_free(&h));
    MT_OK(MPI_Group_difference(world, world, &h));
    MT_CHECK(h == MPI_GROUP_EMPTY, "world - world is not MPI_GROUP_EMPTY");
    MT_OK(MPI_Group_free(&h)); /* freeing MPI_GROUP_EMPTY is allowed */
    MT_CHECK(h == MPI_GROUP_NULL, "freed group not MPI_GROUP_NULL");
    MT_OK(MPI_Group_difference(world, self, &h));
    for (i = 0, res = 0; i < p; ++i) {
        if (i != r) {
            want[res++] = i;
        }
    }
    expect_members(h, want, p - 1, "world - self");
    MT_OK(MPI_Group_free(&h));
    MT_OK(MPI_Group_union(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &h));
    MT_CHECK(h == MPI_GROUP_EMPTY, "empty U empty is not MPI_GROUP_EMPTY");
    MT_OK(MPI_Group_intersection(world, MPI_GROUP_EMPTY, &h));
    MT_CHECK(h == MPI_GROUP_EMPTY, "world ^ empty is not MPI_GROUP_EMPTY");

    /* incl / excl */
    MT_OK(MPI_Group_incl(world, 0, NULL, &h));
    MT_CHECK(h == MPI_GROUP_EMPTY, "incl of nothing is not MPI_GROUP_EMPTY");
    MT_OK(MPI_Group_excl(world, 0, NULL, &h));
    MT_OK(MPI_Group_compare(world, h, &res));
    MT_CHECK(res == MPI_IDENT, "excl of nothing: %d", res);
    MT_OK(MPI_Group_free(&h));
    ranks[0] = 0;
    MT_OK(MPI_Group_excl(world, 1, ranks, &h));
    for (i = 1; i < p; ++i) {
        want[i - 1] = i;
    }
    expect_members(h, want, p - 1, "world excl 0");
    MT_OK(MPI_Group_rank(h, &res));
    MT_CHECK(res == (r == 0 ? MPI_UNDEFINED : r - 1), "rank after excl 0: %d", res);
    MT_OK(MPI_Group_free(&h));
    if (p >= 2) {
        ranks[0] = 1;
        ranks[1] = 1;
        MT_ERR(MPI_ERR_RANK, MPI_Group_incl(world, 2, ranks, &h));
        MT_ERR(MPI_ERR_RANK, MPI_Group_excl(world, 2, ranks, &h));
    }
    ranks[0] = p;
    MT_ERR(MPI_ERR_RANK, MPI_Group_incl(world, 1, ranks, &h));
    ranks[0] = -1;
    MT_ERR(MPI_ERR_RANK, MPI_Group_excl(world, 1, ranks, &h));
    MT_ERR(MPI_ERR_ARG, MPI_Group_incl(world, -1, ranks, &h));

    /* range_incl / range_excl */
    {
        int rg[3][3];
        /* every other rank from the top down: p-1, p-3, ... */
        rg[0][0] = p - 1;
        rg[0][1] = 0;
        rg[0][2] = -2;
        MT_OK(MPI_Group_range_incl(world, 1, rg, &h));
        for (i = p - 1, res = 0; i >= 0; i -= 2) {
            want[res++] = i;
        }
        expect_members(h, want, res, "range (p-1, 0, -2)");
        MT_OK(MPI_Group_free(&h));
        MT_OK(MPI_Group_range_excl(world, 1, rg, &h));
        {
            int n = 0;
            for (i = 0; i < p; ++i) {
                if ((p - 1 - i) % 2 != 0) {
                    want[n++] = i;
                }
            }
            expect_members(h, want, n, "range_excl (p-1, 0, -2)");
        }
        MT_OK(MPI_Group_free(&h));
        /* a range whose last is not reached exactly: (0, p-1, 3) */
        rg[0][0] = 0;
        rg[0][1] = p - 1;
        rg[0][2] = 3;
        MT_OK(MPI_Group_range_incl(world, 1, rg, &h));
        for (i = 0, res = 0; i < p; i += 3) {
            want[res++] = i;
        }
        expect_members(h, want, res, "range (0, p-1, 3)");
        MT_OK(MPI_Group_free(&h));
        /* first > last with a positive stride is empty */
        if (p >= 2) {
            rg[0][0] = 1;
            rg[0][1] = 0;
            rg[0][2] = 1;
            MT_OK(MPI_Group_range_incl(world, 1, rg, &h));
            MT_CHECK(h == MPI_GROUP_EMPTY, "empty range did not give MPI_GROUP_EMPTY");
        }
        /* zero ranges */
        MT_OK(MPI_Group_range_incl(world, 0, rg, &h));
        MT_CHECK(h == MPI_GROUP_EMPTY, "no ranges did not give MPI_GROUP_EMPTY");
        MT_OK(MPI_Group_range_excl(world, 0, rg, &h));
        MT_CHECK(group_size(h) == p, "range_excl of nothing");
        MT_OK(MPI_Group_free(&h));
        /* two ranges: (0,0,1) and (p-1,p-1,1) */
        rg[0][0] = 0;
        rg[0][1] = 0;
        rg[0][2] = 1;
        rg[1][0] = p - 1;
        rg[1][1] = p - 1;
        rg[1][2] = 1;
        if (p >= 2) {
            MT_OK(MPI_Group_range_incl(world, 2, rg, &h));
            want[0] = 0;
            want[1] = p - 1;
            expect_members(h, want, 2, "two ranges");
            MT_OK(MPI_Group_free(&h));
            /* overlapping ranges: (0, p-1, 1) and (p-1, p-1, 1) */
            rg[0][1] = p - 1;
            MT_ERR(MPI_ERR_RANK, MPI_Group_range_incl(world, 2, rg, &h));
            MT_ERR(MPI_ERR_RANK, MPI_Group_range_excl(world, 2, rg, &h));
        }
        rg[0][0] = 0;
        rg[0][1] = 0;
        rg[0][2] = 0;
        MT_ERR(MPI_ERR_ARG, MPI_Group_range_incl(world, 1, rg, &h));
        rg[0][2] = 1;
        rg[0][1] = p;
        MT_ERR(MPI_ERR_RANK, MPI_Group_range_incl(world, 1, rg, &h));
        MT_ERR(MPI_ERR_ARG, MPI_Group_range_excl(world, -1, rg, &h));
    }

    /* invalid handles */
    MT_ERR(MPI_ERR_GROUP, MPI_Group_size(MPI_GROUP_NULL, &res));
    MT_ERR(MPI_ERR_GROUP, MPI_Group_rank(0x48000777, &res));
    MT_ERR(MPI_ERR_GROUP, MPI_Group_union(world, MPI_GROUP_NULL, &h));
    MT_ERR(MPI_ERR_GROUP, MPI_Group_compare(MPI_COMM_WORLD, world, &res));
    e = MPI_GROUP_NULL;
    MT_ERR(MPI_ERR_GROUP, MPI_Group_free(&e));
    MT_ERR(MPI_ERR_ARG, MPI_Group_size(world, NULL));
    MT_ERR(MPI_ERR_COMM, MPI_Comm_group(MPI_COMM_NULL, &h));

    /* a group handle stays usable while a communicator holds the group */
    MT_OK(MPI_Comm_group(MPI_COMM_WORLD, &h));
    MT_OK(MPI_Group_compare(h, world, &res));
    MT_CHECK(res == MPI_IDENT, "two Comm_group results: %d", res);
    MT_OK(MPI_Group_free(&h));
    MT_CHECK(group_size(world) == p, "world group after freeing another reference");

    /* handles round-trip through MPI_Fint */
    MT_CHECK(MPI_Group_f2c(MPI_Group_c2f(g)) == g, "group c2f/f2c");

    MT_OK(MPI_Group_free(&g));
    MT_OK(MPI_Group_free(&self));
    MT_OK(MPI_Group_free(&world));
    return mt_finalize();
}
