/*
 * Context ids are agreed among the members and deterministic: the same
 * sequence of creations and frees gives the same ids on every rank and in
 * every run. The id of a communicator is read from MPI_Comm_get_info (key
 * "ulmpi_context_id", its point-to-point context; docs/communicators.md).
 * Every step checks the id against the value the allocation rule (lowest
 * pair free on every member; world 0, self 2) predicts, and that every
 * member sees the same one (an allgather over MPI_COMM_WORLD, so the
 * colours of a split are compared too). Ranks with different histories
 * (a communicator only some of them made, a split where some took
 * MPI_UNDEFINED) still agree. Any size.
 */
#include "mpitest.h"

static int ctxid(MPI_Comm c)
{
    MPI_Info info;
    char v[64];
    int flag = 0;
    if (c == MPI_COMM_NULL) {
        return -1;
    }
    MT_OK(MPI_Comm_get_info(c, &info));
    MT_OK(MPI_Info_get(info, "ulmpi_context_id", 63, v, &flag));
    MT_OK(MPI_Info_free(&info));
    MT_CHECK(flag, "no ulmpi_context_id in MPI_Comm_get_info");
    return flag ? atoi(v) : -2;
}

/* Every rank of the world that holds a communicator in this step (id >= 0)
 * must report `expect`; rank 0 prints the step when asked. */
static void check(MPI_Comm c, int expect, const char* what)
{
    int mine = ctxid(c);
    int* all = (int*)malloc(sizeof(int) * (size_t)mt_size);
    int i;
    MT_OK(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
    for (i = 0; i < mt_size; ++i) {
        if (all[i] >= 0) {
            MT_CHECK(all[i] == expect, "%s: rank %d has context %d, expected %d", what, i, all[i],
                     expect);
        }
    }
    if (mt_verbose && mt_rank == 0) {
        printf("%-40s context %d\n", what, expect);
    }
    free(all);
}

int main(int argc, char** argv)
{
    MPI_Comm d1, d2, d3, d4, s, half, grp = MPI_COMM_NULL, inter, merged, und, x, selfdup;
    MPI_Group wg, lower;
    int p, r, nlow;

    mt_init(&argc, &argv);
    p = mt_size;
    r = mt_rank;
    nlow = (p + 1) / 2;

    check(MPI_COMM_WORLD, 0, "MPI_COMM_WORLD");
    check(MPI_COMM_SELF, 2, "MPI_COMM_SELF");
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d1));
    check(d1, 4, "first dup");
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &s));
    check(s, 6, "split by parity (both colours)");
    MT_OK(MPI_Comm_free(&d1));
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d2));
    check(d2, 4, "dup after the first was freed");

    /* only the lower half makes a communicator: it holds pair 4 (context 8) */
    MT_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    {
        int rg[1][3] = {{0, nlow - 1, 1}};
        MT_OK(MPI_Group_range_incl(wg, 1, rg, &lower));
    }
    if (r < nlow) {
        MT_OK(MPI_Comm_create_group(MPI_COMM_WORLD, lower, 9, &grp));
    }
    check(grp, 8, "create_group of the lower half");
    /* the next world-wide one must avoid pair 4: pair 5 */
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d3));
    check(d3, 10, "dup while the lower half holds 8");
    if (grp != MPI_COMM_NULL) {
        MT_OK(MPI_Comm_free(&grp));
    }
    MT_OK(MPI_Comm_dup(d3, &d4));
    check(d4, 8, "dup after the lower half freed 8");

    /* halves, an intercommunicator between them, its merge */
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, r < nlow ? 0 : 1, r, &half));
    check(half, 12, "split in halves");
    if (p >= 2) {
        MT_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, r < nlow ? nlow : 0, 77, &inter));
        check(inter, 14, "Intercomm_create between the halves");
        MT_OK(MPI_Intercomm_merge(inter, r >= nlow, &merged));
        check(merged, 16, "Intercomm_merge");
        MT_OK(MPI_Comm_dup(inter, &x));
        check(x, 18, "dup of the intercommunicator");
        MT_OK(MPI_Comm_free(&x));
        MT_OK(MPI_Comm_free(&merged));
        MT_OK(MPI_Comm_free(&inter));
    } else {
        check(MPI_COMM_NULL, 0, "(no intercommunicator with one rank)");
        check(MPI_COMM_NULL, 0, "(no merge with one rank)");
        check(MPI_COMM_NULL, 0, "(no intercommunicator dup with one rank)");
    }

    /* rank 0 stays out of a split: it does not reserve the pair the others take */
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, r == 0 ? MPI_UNDEFINED : 0, r, &und));
    check(und, 14, "split without rank 0");
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &x));
    check(x, p >= 2 ? 16 : 14, "dup after that split");
    /* alone, rank 0 still has pair 7 free; the others do not */
    MT_OK(MPI_Comm_dup(MPI_COMM_SELF, &selfdup));
    {
        int mine = ctxid(selfdup);
        int expect = r == 0 ? 14 : 18;
        if (p == 1) {
            expect = 16;
        }
        MT_CHECK(mine == expect, "rank %d: dup of MPI_COMM_SELF has context %d, expected %d", r,
                 mine, expect);
    }
    MT_OK(MPI_Comm_free(&selfdup));
    MT_OK(MPI_Comm_free(&x));
    if (und != MPI_COMM_NULL) {
        MT_OK(MPI_Comm_free(&und));
    }

    /* a long mixed sequence: the ids stay equal everywhere */
    {
        MPI_Comm live[8];
        int i, k;
        for (i = 0; i < 8; ++i) {
            live[i] = MPI_COMM_NULL;
        }
        for (i = 0; i < 60; ++i) {
            k = (i * 5) % 8;
            if (live[k] != MPI_COMM_NULL) {
                MT_OK(MPI_Comm_free(&live[k]));
            }
            if (i % 3 == 0) {
                MT_OK(MPI_Comm_split(d2, (r + i) % 3, -r, &live[k]));
            } else {
                MT_OK(MPI_Comm_dup(i % 2 ? d3 : d4, &live[k]));
            }
            {
                int mine = ctxid(live[k]);
                int* all = (int*)malloc(sizeof(int) * (size_t)p);
                int j;
                MT_OK(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
                for (j = 1; j < p; ++j) {
                    MT_CHECK(all[j] == all[0], "step %d: rank %d has context %d, rank 0 %d", i, j,
                             all[j], all[0]);
                }
                free(all);
            }
        }
        for (i = 0; i < 8; ++i) {
            if (live[i] != MPI_COMM_NULL) {
                MT_OK(MPI_Comm_free(&live[i]));
            }
        }
    }

    MT_OK(MPI_Group_free(&lower));
    MT_OK(MPI_Group_free(&wg));
    MT_OK(MPI_Comm_free(&half));
    MT_OK(MPI_Comm_free(&d4));
    MT_OK(MPI_Comm_free(&d3));
    MT_OK(MPI_Comm_free(&d2));
    MT_OK(MPI_Comm_free(&s));
    return mt_finalize();
}
