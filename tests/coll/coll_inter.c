/*
 * Intercommunicator collectives: MPI_COMM_WORLD split into even and odd
 * ranks (group A = even, group B = odd), joined by MPI_Intercomm_create.
 * Every MPI-1 collective in both directions, results from the other group
 * checked exactly; MPI_Iallreduce; MPI_Scan refused with MPI_ERR_COMM.
 * Needs at least 2 ranks (with 1 it only prints the verdict).
 */
#include "mpitest.h"

#define C 7

static int g_grank, g_gsize, g_rsize, g_a; /* rank/size in my group, remote size, am I in A */

/* World rank of rank r of group A (even) or B (odd). */
static int world_of(int in_a, int r) { return in_a ? 2 * r : 2 * r + 1; }
static int v(int world, int i) { return world * 1000 + i; }

static void rooted(MPI_Comm ic)
{
    int root_group, k;
    for (root_group = 0; root_group < 2; ++root_group) {
        int in_root_group = g_a == (root_group == 0);
        int root_here = 0; /* rank 0 of the root group is the root */
        int root_arg = in_root_group ? (g_grank == root_here ? MPI_ROOT : MPI_PROC_NULL) : root_here;
        int root_world = world_of(root_group == 0, root_here);
        int buf[C], i;
        int* all = malloc(sizeof(int) * C * (size_t)(g_rsize > g_gsize ? g_rsize : g_gsize) * 2);
        int counts[64], displs[64];
        /* Bcast */
        for (i = 0; i < C; ++i) {
            buf[i] = root_arg == MPI_ROOT ? v(root_world, i) : -1;
        }
        MT_OK(MPI_Bcast(buf, C, MPI_INT, root_arg, ic));
        if (!in_root_group) {
            for (i = 0; i < C; ++i) {
                MT_CHECK(buf[i] == v(root_world, i), "inter bcast element %d is %d", i, buf[i]);
            }
        }
        /* Gather and Gatherv: the root collects the other group's blocks */
        for (i = 0; i < C; ++i) {
            buf[i] = v(mt_rank, i);
        }
        MT_OK(MPI_Gather(buf, C, MPI_INT, all, C, MPI_INT, root_arg, ic));
        if (root_arg == MPI_ROOT) {
            for (k = 0; k < g_rsize; ++k) {
                for (i = 0; i < C; ++i) {
                    MT_CHECK(all[k * C + i] == v(world_of(!g_a, k), i), "inter gather %d/%d", k, i);
                }
            }
        }
        for (k = 0; k < g_rsize && k < 64; ++k) {
            counts[k] = k % 3 + 1;
            displs[k] = k * (C + 1);
        }
        MT_OK(MPI_Gatherv(buf, in_root_group ? 0 : g_grank % 3 + 1, MPI_INT, all, counts, displs,
                          MPI_INT, root_arg, ic));
        if (root_arg == MPI_ROOT) {
            for (k = 0; k < g_rsize; ++k) {
                for (i = 0; i < counts[k]; ++i) {
                    MT_CHECK(all[displs[k] + i] == v(world_of(!g_a, k), i), "inter gatherv %d/%d", k, i);
                }
            }
        }
        /* Scatter */
        if (root_arg == MPI_ROOT) {
            for (k = 0; k < g_rsize; ++k) {
                for (i = 0; i < C; ++i) {
                    all[k * C + i] = v(world_of(!g_a, k), i) + 7;
                }
            }
        }
        MT_OK(MPI_Scatter(all, C, MPI_INT, buf, C, MPI_INT, root_arg, ic));
        if (!in_root_group) {
            for (i = 0; i < C; ++i) {
                MT_CHECK(buf[i] == v(mt_rank, i) + 7, "inter scatter element %d is %d", i, buf[i]);
            }
        }
        MT_OK(MPI_Scatterv(all, counts, displs, MPI_INT, buf, in_root_group ? 0 : g_grank % 3 + 1,
                           MPI_INT, root_arg, ic));
        /* Reduce: sum of the other group's vectors at the root */
        for (i = 0; i < C; ++i) {
            buf[i] = v(mt_rank, i);
        }
        MT_OK(MPI_Reduce(buf, all, C, MPI_INT, MPI_SUM, root_arg, ic));
        if (root_arg == MPI_ROOT) {
            for (i = 0; i < C; ++i) {
                int want = 0;
                for (k = 0; k < g_rsize; ++k) {
                    want += v(world_of(!g_a, k), i);
                }
                MT_CHECK(all[i] == want, "inter reduce element %d is %d, want %d", i, all[i], want);
            }
        }
        free(all);
    }
}

static void all_to_all(MPI_Comm ic)
{
    int i, k;
    int buf[C], out[C];
    int* all = malloc(sizeof(int) * C * (size_t)g_rsize);
    int* sc = malloc(sizeof(int) * (size_t)g_rsize);
    int* sd = malloc(sizeof(int) * (size_t)g_rsize);
    MPI_Request req;
    MT_OK(MPI_Barrier(ic));
    for (i = 0; i < C; ++i) {
        buf[i] = v(mt_rank, i);
    }
    MT_OK(MPI_Allgather(buf, C, MPI_INT, all, C, MPI_INT, ic));
    for (k = 0; k < g_rsize; ++k) {
        for (i = 0; i < C; ++i) {
            MT_CHECK(all[k * C + i] == v(world_of(!g_a, k), i), "inter allgather %d/%d", k, i);
        }
    }
    for (k = 0; k < g_rsize; ++k) {
        sc[k] = 1;
        sd[k] = k;
        all[k] = v(mt_rank, k);
    }
    {
        int* r = malloc(sizeof(int) * (size_t)g_rsize);
        MT_OK(MPI_Alltoall(all, 1, MPI_INT, r, 1, MPI_INT, ic));
        for (k = 0; k < g_rsize; ++k) {
            MT_CHECK(r[k] == v(world_of(!g_a, k), g_grank), "inter alltoall from %d: %d", k, r[k]);
        }
        MT_OK(MPI_Alltoallv(all, sc, sd, MPI_INT, r, sc, sd, MPI_INT, ic));
        for (k = 0; k < g_rsize; ++k) {
            MT_CHECK(r[k] == v(world_of(!g_a, k), g_grank), "inter alltoallv from %d: %d", k, r[k]);
        }
        free(r);
    }
    /* Allreduce: the other group's sum */
    MT_OK(MPI_Allreduce(buf, out, C, MPI_INT, MPI_SUM, ic));
    for (i = 0; i < C; ++i) {
        int want = 0;
        for (k = 0; k < g_rsize; ++k) {
            want += v(world_of(!g_a, k), i);
        }
        MT_CHECK(out[i] == want, "inter allreduce element %d is %d, want %d", i, out[i], want);
    }
    MT_OK(MPI_Iallreduce(buf, out, C, MPI_INT, MPI_MAX, ic, &req));
    MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MT_CHECK(out[0] == v(world_of(!g_a, g_rsize - 1), 0), "inter iallreduce max %d", out[0]);
    /* Reduce_scatter_block: my group gets the other group's sums, rc per
     * rank; both groups' vectors have the same length (rc = remote size,
     * so g_gsize * g_rsize elements). */
    {
        int rc = g_rsize, total = g_gsize * g_rsize, j;
        int* big = malloc(sizeof(int) * (size_t)total);
        int* mine = malloc(sizeof(int) * (size_t)rc);
        for (i = 0; i < total; ++i) {
            big[i] = mt_rank + i;
        }
        MT_OK(MPI_Reduce_scatter_block(big, mine, rc, MPI_INT, MPI_SUM, ic));
        for (j = 0; j < rc; ++j) {
            int want = 0;
            for (k = 0; k < g_rsize; ++k) {
                want += world_of(!g_a, k) + g_grank * rc + j;
            }
            MT_CHECK(mine[j] == want, "inter reduce_scatter_block element %d: %d, want %d", j,
                     mine[j], want);
        }
        free(big);
        free(mine);
    }
    MT_OK(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN));
    MT_ERR(MPI_ERR_COMM, MPI_Scan(buf, out, C, MPI_INT, MPI_SUM, ic));
    free(all);
    free(sc);
    free(sd);
}

int main(int argc, char** argv)
{
    MPI_Comm half, ic;
    mt_init(&argc, &argv);
    if (mt_size >= 2) {
        g_a = mt_rank % 2 == 0;
        MT_OK(MPI_Comm_split(MPI_COMM_WORLD, g_a ? 0 : 1, mt_rank, &half));
        MPI_Comm_rank(half, &g_grank);
        MPI_Comm_size(half, &g_gsize);
        MT_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, g_a ? 1 : 0, 77, &ic));
        MPI_Comm_remote_size(ic, &g_rsize);
        rooted(ic);
        all_to_all(ic);
        MT_OK(MPI_Comm_free(&ic));
        MT_OK(MPI_Comm_free(&half));
    }
    return mt_finalize();
}
