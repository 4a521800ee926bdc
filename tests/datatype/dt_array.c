/*
 * dt_array.c -- MPI_Type_create_subarray and MPI_Type_create_darray, shapes
 * checked element by element.
 *
 * The global array holds its own linear index in every element; packing
 * (or sending) it with the type must yield exactly the indexes the shape
 * selects, in type-map order. Subarrays are checked in 1-3 dimensions and
 * both orders; darrays on the job's own process grid with block, cyclic,
 * cyclic(k) and none distributions: every rank checks its piece against
 * the distribution formula and rank 0 checks that the pieces tile the
 * array exactly once (point-to-point only).
 */
#include "dttest.h"

static void subarray_case(int ndims, const int* sizes, const int* subs, const int* starts,
                          int order)
{
    MPI_Datatype t;
    int total = 1, n = 1, i, d, pos = 0, bad = 0, size;
    int *arr, *packed;
    MPI_Aint lb, ext;
    int idx[3] = {0, 0, 0};
    for (d = 0; d < ndims; ++d) {
        total *= sizes[d];
        n *= subs[d];
    }
    arr = (int*)malloc(sizeof(int) * (size_t)total);
    packed = (int*)malloc(sizeof(int) * (size_t)(n + 1));
    for (i = 0; i < total; ++i) {
        arr[i] = i;
    }
    MT_OK(MPI_Type_create_subarray(ndims, sizes, subs, starts, order, MPI_INT, &t));
    MT_OK(MPI_Type_commit(&t));
    MT_OK(MPI_Type_size(t, &size));
    MT_OK(MPI_Type_get_extent(t, &lb, &ext));
    MT_CHECK(size == 4 * n, "subarray size %d, expected %d", size, 4 * n);
    MT_CHECK(lb == 0 && ext == 4 * (MPI_Aint)total, "subarray lb %ld extent %ld", (long)lb,
             (long)ext);
    MT_OK(MPI_Pack(arr, 1, t, packed, 4 * (n + 1), &pos, MPI_COMM_WORLD));
    /* Walk the selected indexes in type-map order: the fastest dimension is
     * the last in C order, the first in Fortran order. */
    for (i = 0; i < n && !bad; ++i) {
        long lin = 0;
        int k;
        if (order == MPI_ORDER_C) {
            for (k = 0; k < ndims; ++k) {
                lin = lin * sizes[k] + starts[k] + idx[k];
            }
        } else {
            for (k = ndims - 1; k >= 0; --k) {
                lin = lin * sizes[k] + starts[k] + idx[k];
            }
        }
        if (packed[i] != lin) {
            mt_fail(__FILE__, __LINE__, "subarray %dd %s: element %d is %d, expected %ld", ndims,
                    order == MPI_ORDER_C ? "C" : "Fortran", i, packed[i], lin);
            bad = 1;
        }
        /* next index, fastest dimension first */
        for (k = order == MPI_ORDER_C ? ndims - 1 : 0; order == MPI_ORDER_C ? k >= 0 : k < ndims;
             k += order == MPI_ORDER_C ? -1 : 1) {
            if (++idx[k] < subs[k]) {
                break;
            }
            idx[k] = 0;
        }
    }
    /* Two elements of the type: the second is a whole array further. */
    {
        int* two = (int*)malloc(sizeof(int) * 2 * (size_t)total);
        int* p2 = (int*)malloc(sizeof(int) * 2 * (size_t)(n + 1));
        pos = 0;
        for (i = 0; i < 2 * total; ++i) {
            two[i] = i;
        }
        MT_OK(MPI_Pack(two, 2, t, p2, 8 * (n + 1), &pos, MPI_COMM_WORLD));
        for (i = 0; i < n; ++i) {
            MT_CHECK(p2[n + i] == p2[i] + total, "subarray count 2: element %d", n + i);
        }
        free(two);
        free(p2);
    }
    MT_OK(MPI_Type_free(&t));
    free(arr);
    free(packed);
}

static void subarrays(void)
{
    int s1[1] = {10}, u1[1] = {4}, t1[1] = {3};
    int s2[2] = {6, 7}, u2[2] = {3, 2}, t2[2] = {2, 5};
    int s3[3] = {4, 5, 6}, u3[3] = {2, 3, 4}, t3[3] = {1, 0, 2};
    int z3[3] = {0, 0, 0};
    int o;
    for (o = 0; o < 2; ++o) {
        int order = o == 0 ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        subarray_case(1, s1, u1, t1, order);
        subarray_case(2, s2, u2, t2, order);
        subarray_case(3, s3, u3, t3, order);
        subarray_case(3, s3, s3, z3 /* whole array */, order);
    }
    {
        /* A zero-size subarray still spans the whole array. */
        MPI_Datatype t;
        int z[3] = {0, 0, 0};
        int sub0[3] = {2, 0, 4};
        MPI_Aint lb, ext;
        int size;
        MT_OK(MPI_Type_create_subarray(3, s3, sub0, z, MPI_ORDER_C, MPI_INT, &t));
        MT_OK(MPI_Type_size(t, &size));
        MT_OK(MPI_Type_get_extent(t, &lb, &ext));
        MT_CHECK(size == 0 && ext == 4 * 120, "empty subarray: size %d extent %ld", size,
                 (long)ext);
        MT_OK(MPI_Type_free(&t));
    }
    {
        MPI_Datatype t;
        int bad[2] = {5, 7};
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MT_ERR(MPI_ERR_ARG, MPI_Type_create_subarray(2, s2, u2, bad, MPI_ORDER_C, MPI_INT, &t));
        MT_ERR(MPI_ERR_ARG, MPI_Type_create_subarray(2, s2, u2, t2, 99, MPI_INT, &t));
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
}

/* Owner coordinate of global index i in one dimension. */
static int owner(int i, int g, int p, int dist, int darg)
{
    int b;
    if (dist == MPI_DISTRIBUTE_NONE) {
        return 0;
    }
    if (dist == MPI_DISTRIBUTE_BLOCK) {
        b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        return i / b;
    }
    b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    return (i / b) % p;
}

static void darray_case(const int* gsizes, const int* distribs, const int* dargs, const int* psizes,
                        int order, int tag)
{
    enum { ND = 3 };
    MPI_Datatype t;
    int total = gsizes[0] * gsizes[1] * gsizes[2], i, pos = 0, size, n;
    int* arr = (int*)malloc(sizeof(int) * (size_t)total);
    int* packed = (int*)malloc(sizeof(int) * (size_t)total + 4);
    int coord[ND], r = mt_rank, k;
    long last = -1;
    MPI_Aint lb, ext;
    for (k = ND - 1; k >= 0; --k) { /* the process grid is row-major */
        coord[k] = r % psizes[k];
        r /= psizes[k];
    }
    for (i = 0; i < total; ++i) {
        arr[i] = i;
    }
    MT_OK(MPI_Type_create_darray(mt_size, mt_rank, ND, gsizes, distribs, dargs, psizes, order,
                                 MPI_INT, &t));
    MT_OK(MPI_Type_commit(&t));
    MT_OK(MPI_Type_size(t, &size));
    MT_OK(MPI_Type_get_extent(t, &lb, &ext));
    MT_CHECK(lb == 0 && ext == 4 * (MPI_Aint)total, "darray lb %ld extent %ld", (long)lb,
             (long)ext);
    MT_OK(MPI_Pack(arr, 1, t, packed, 4 * total + 4, &pos, MPI_COMM_WORLD));
    n = size / 4;
    for (i = 0; i < n; ++i) {
        int e = packed[i], g[ND], ok = 1;
        if (order == MPI_ORDER_C) {
            g[2] = e % gsizes[2];
            g[1] = (e / gsizes[2]) % gsizes[1];
            g[0] = e / (gsizes[2] * gsizes[1]);
        } else {
            g[0] = e % gsizes[0];
            g[1] = (e / gsizes[0]) % gsizes[1];
            g[2] = e / (gsizes[0] * gsizes[1]);
        }
        for (k = 0; k < ND; ++k) {
            ok = ok && owner(g[k], gsizes[k], psizes[k], distribs[k], dargs[k]) == coord[k];
        }
        if (!ok || e <= last) {
            mt_fail(__FILE__, __LINE__, "darray case %d: element %d (global %d) %s", tag, i, e,
                    ok ? "out of order" : "belongs to another rank");
            break;
        }
        last = e;
    }
    /* Rank 0 checks that the pieces tile the array exactly once. */
    if (mt_rank == 0) {
        int* seen = (int*)calloc((size_t)total, sizeof(int));
        int src;
        for (i = 0; i < n; ++i) {
            seen[packed[i]]++;
        }
        for (src = 1; src < mt_size; ++src) {
            MPI_Status st;
            int m;
            MT_OK(MPI_Recv(arr, total, MPI_INT, src, 100 + tag, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_INT, &m);
            for (i = 0; i < m; ++i) {
                seen[arr[i]]++;
            }
        }
        for (i = 0; i < total; ++i) {
            if (seen[i] != 1) {
                mt_fail(__FILE__, __LINE__, "darray case %d: element %d held %d times", tag, i,
                        seen[i]);
                break;
            }
        }
        free(seen);
    } else {
        /* Send the piece straight from the global array with the darray type. */
        MT_OK(MPI_Send(arr, 1, t, 0, 100 + tag, MPI_COMM_WORLD));
    }
    MT_OK(MPI_Type_free(&t));
    free(arr);
    free(packed);
}

static void darrays(void)
{
    int psizes[3] = {1, 1, 1};
    int gs[3] = {7, 5, 9};
    int tag = 0;
    /* A grid for the job size: factor it over the dimensions. */
    int left = mt_size, d = 0;
    while (left > 1) {
        int f = 2;
        while (left % f != 0) {
            ++f;
        }
        psizes[d % 3] *= f;
        left /= f;
        ++d;
    }
    {
        int dist[4][3] = {
            {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK},
            {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC},
            {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
            {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK},
        };
        int darg[4][3] = {
            {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
            {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
            {2, MPI_DISTRIBUTE_DFLT_DARG, 3},
            {4, 2, 9},
        };
        int c, o;
        for (c = 0; c < 4; ++c) {
            int dd[3], k, ok = 1;
            for (k = 0; k < 3; ++k) {
                dd[k] = darg[c][k];
                /* explicit block sizes must cover the dimension */
                if (dist[c][k] == MPI_DISTRIBUTE_BLOCK && dd[k] != MPI_DISTRIBUTE_DFLT_DARG &&
                    dd[k] * psizes[k] < gs[k]) {
                    ok = 0;
                }
            }
            if (!ok) {
                continue;
            }
            for (o = 0; o < 2; ++o) {
                darray_case(gs, dist[c], dd, psizes, o == 0 ? MPI_ORDER_C : MPI_ORDER_FORTRAN,
                            tag++);
            }
        }
    }
    if (psizes[2] == 1) {
        /* DISTRIBUTE_NONE on a dimension the grid does not split */
        int dist[3] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE};
        int dd[3] = {MPI_DISTRIBUTE_DFLT_DARG, 2, MPI_DISTRIBUTE_DFLT_DARG};
        darray_case(gs, dist, dd, psizes, MPI_ORDER_C, tag++);
    }
    {
        MPI_Datatype t;
        int dist[3] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_NONE};
        int dd[3] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
        int p2[3] = {2, 1, 1};
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MT_ERR(MPI_ERR_ARG,
               MPI_Type_create_darray(2, 0, 3, gs, dist, dd, p2, MPI_ORDER_C, MPI_INT, &t));
        MT_ERR(MPI_ERR_RANK,
               MPI_Type_create_darray(2, 2, 3, gs, dist, dd, psizes, MPI_ORDER_C, MPI_INT, &t));
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    if (mt_rank == 0) {
        subarrays();
    }
    darrays();
    return mt_finalize();
}
