/*
 * Blocking collectives with per-rank data above coll_shm_max, which the
 * one-host shared-memory path moves in chunks (mpi/coll/shm_coll_large.cpp),
 * between small ones (data in the call's cache line or in the slots):
 * a seeded random sequence of bcast, allgather, alltoall, allreduce,
 * reduce_scatter and reduce_scatter_block with counts that cross the chunk
 * size (run with a small ULMPI_COLL_SHM_CHUNK), MPI_IN_PLACE, a strided
 * datatype with gaps that must stay untouched (bcast, allgather, alltoall),
 * MPI_SUM and a non-commutative user op (composition of affine maps mod
 * 2^16 packed in an int: rank order matters), every result checked exactly
 * at every rank. Random roots; several calls in a row so that members run
 * steps apart through the slot sets and bcast's ring. Allgather and
 * alltoall also with a strided type at rank 0 only and plain ints elsewhere
 * (the same signature): the single-copy path must then give way to the
 * copies at every rank.
 *
 * The rounds run on MPI_COMM_WORLD, then half as many on the halves of a
 * split (ranks reversed), which set up segments of their own.
 *
 * Arguments: [seed] [rounds] (default 1, 60).
 */
#include "mpitest.h"

#define JUNK (-55555)

/* The communicator under test: MPI_COMM_WORLD, then the halves of a split. */
static MPI_Comm g_comm;
static int g_rank, g_size;

static unsigned g_rng;
static unsigned rnd(void)
{
    g_rng = g_rng * 1103515245u + 12345u;
    return (g_rng >> 8) & 0xffffffu;
}

/* Element i of rank r's data in call k. */
static int val(int k, int r, int i)
{
    unsigned x = (unsigned)k * 2654435761u ^ (unsigned)r * 7919u ^ (unsigned)i * 31u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (int)(x & 0x7fffffffu);
}

/* Affine map x -> a x + b (mod 2^15), a odd, as (a << 16) | b. in op inout:
 * inout = in o inout (apply inout first, then in). */
static int aff(int v)
{
    unsigned a = (((unsigned)v >> 16) & 0x7fffu) | 1u, b = (unsigned)v & 0x7fffu;
    return (int)((a << 16) | b);
}
static int compose(int f, int g)
{
    unsigned fa = ((unsigned)f >> 16) & 0x7fffu, fb = (unsigned)f & 0x7fffu;
    unsigned ga = ((unsigned)g >> 16) & 0x7fffu, gb = (unsigned)g & 0x7fffu;
    unsigned a = (fa * ga) & 0x7fffu, b = (fa * gb + fb) & 0x7fffu;
    return (int)((a << 16) | b);
}
static void aff_op(void* in, void* inout, int* len, MPI_Datatype* t)
{
    int i;
    (void)t;
    for (i = 0; i < *len; ++i) {
        ((int*)inout)[i] = compose(((int*)in)[i], ((int*)inout)[i]);
    }
}

static MPI_Op g_aff;
static MPI_Datatype g_strided; /* 2 ints at stride 2: extent 3 ints, a gap at 1 */

/* Ints a buffer of count elements takes, and whether int j of it is data. */
static size_t ints_of(int strided, size_t count) { return strided ? 3 * count : count; }
static int is_data(int strided, size_t j) { return !strided || j % 3 != 1; }

static int* fill(int k, int r, int strided, size_t count, int junk_gaps)
{
    size_t n = ints_of(strided, count), j, d = 0;
    int* b = malloc((n ? n : 1) * sizeof(int));
    for (j = 0; j < n; ++j) {
        b[j] = is_data(strided, j) ? val(k, r, (int)d++) : (junk_gaps ? JUNK : 0);
    }
    return b;
}

/* Checks block `blk` of count elements in buf against rank r's data of call k. */
static int check_block(const char* what, int k, const int* buf, int strided, size_t count,
                       int r, int data_from)
{
    size_t n = ints_of(strided, count), j, d = (size_t)data_from;
    for (j = 0; j < n; ++j) {
        int want = is_data(strided, j) ? val(k, r, (int)d++) : JUNK;
        if (buf[j] != want) {
            MT_CHECK(0, "call %d %s: int %zu of the block from rank %d is %d, expected %d", k,
                     what, j, r, buf[j], want);
            return 1;
        }
    }
    return 0;
}

static void t_bcast(int k, size_t count, int strided)
{
    int root = (int)(rnd() % (unsigned)g_size);
    MPI_Datatype t = strided ? g_strided : MPI_INT;
    int* b = fill(k, root, strided, count, 1);
    if (g_rank != root) {
        size_t j, n = ints_of(strided, count);
        for (j = 0; j < n; ++j) {
            b[j] = JUNK;
        }
    }
    MT_OK(MPI_Bcast(b, (int)count, t, root, g_comm));
    check_block("bcast", k, b, strided, count, root, 0);
    free(b);
}

static void t_allgather(int k, size_t count, int strided, int in_place)
{
    MPI_Datatype t = strided ? g_strided : MPI_INT;
    size_t blk = ints_of(strided, count), j;
    int* s = fill(k, g_rank, strided, count, 1);
    int* r = malloc(blk * (size_t)g_size * sizeof(int) + sizeof(int));
    int q;
    for (j = 0; j < blk * (size_t)g_size; ++j) {
        r[j] = JUNK;
    }
    if (in_place) {
        memcpy(r + blk * (size_t)g_rank, s, blk * sizeof(int));
    }
    MT_OK(MPI_Allgather(in_place ? MPI_IN_PLACE : s, (int)count, t, r, (int)count, t,
                        g_comm));
    for (q = 0; q < g_size; ++q) {
        if (check_block(in_place ? "allgather in place" : "allgather", k, r + blk * (size_t)q,
                        strided, count, q, 0)) {
            break;
        }
    }
    free(s);
    free(r);
}

static void t_alltoall(int k, size_t count, int strided, int in_place)
{
    MPI_Datatype t = strided ? g_strided : MPI_INT;
    size_t blk = ints_of(strided, count);
    /* Rank q's block for rank m: elements m * count .. of q's data. */
    int* s = fill(k, g_rank, strided, count * (size_t)g_size, 1);
    int* r = malloc(blk * (size_t)g_size * sizeof(int) + sizeof(int));
    size_t j;
    int q;
    for (j = 0; j < blk * (size_t)g_size; ++j) {
        r[j] = in_place ? s[j] : JUNK;
    }
    MT_OK(MPI_Alltoall(in_place ? MPI_IN_PLACE : s, (int)count, t, r, (int)count, t,
                       g_comm));
    for (q = 0; q < g_size; ++q) {
        if (check_block(in_place ? "alltoall in place" : "alltoall", k, r + blk * (size_t)q,
                        strided, count, q,
                        (int)(count * (size_t)g_rank * (strided ? 2 : 1)))) {
            break;
        }
    }
    free(s);
    free(r);
}

/* The expected reduction of element i in rank order. */
static int reduced(int k, int user, int i)
{
    int q, acc;
    if (!user) {
        unsigned sum = 0;
        for (q = 0; q < g_size; ++q) {
            sum += (unsigned)(val(k, q, i) & 0xffff);
        }
        return (int)sum;
    }
    acc = aff(val(k, g_size - 1, i));
    for (q = g_size - 2; q >= 0; --q) {
        acc = compose(aff(val(k, q, i)), acc);
    }
    return acc;
}

static int* reduce_input(int k, int user, size_t n)
{
    int* b = malloc((n ? n : 1) * sizeof(int));
    size_t i;
    for (i = 0; i < n; ++i) {
        int v = val(k, g_rank, (int)i);
        b[i] = user ? aff(v) : (v & 0xffff);
    }
    return b;
}

static void t_allreduce(int k, size_t count, int user, int in_place)
{
    int* s = reduce_input(k, user, count);
    int* r = malloc((count ? count : 1) * sizeof(int));
    size_t i;
    if (in_place) {
        memcpy(r, s, count * sizeof(int));
    }
    MT_OK(MPI_Allreduce(in_place ? MPI_IN_PLACE : s, r, (int)count, MPI_INT,
                        user ? g_aff : MPI_SUM, g_comm));
    for (i = 0; i < count; ++i) {
        int want = reduced(k, user, (int)i);
        if (r[i] != want) {
            MT_CHECK(0, "call %d allreduce%s%s count %zu: element %zu is %d, expected %d", k,
                     user ? " (affine)" : "", in_place ? " in place" : "", count, i, r[i], want);
            break;
        }
    }
    free(s);
    free(r);
}

static void t_reduce_scatter(int k, size_t count, int user, int in_place, int block)
{
    int* counts = malloc(sizeof(int) * (size_t)g_size);
    size_t total = 0, first = 0, i;
    int q;
    for (q = 0; q < g_size; ++q) {
        /* uneven, some empty; block: all alike */
        counts[q] = block ? (int)count : (int)((count * (size_t)(q + 1) / 2) % (count + 7));
        if (q < g_rank) {
            first += (size_t)counts[q];
        }
        total += (size_t)counts[q];
    }
    {
        int* s = reduce_input(k, user, total);
        int* r = malloc((total ? total : 1) * sizeof(int));
        MPI_Op op = user ? g_aff : MPI_SUM;
        const void* sb = in_place ? MPI_IN_PLACE : s;
        if (in_place) {
            memcpy(r, s, total * sizeof(int));
        }
        if (block) {
            MT_OK(MPI_Reduce_scatter_block(sb, r, (int)count, MPI_INT, op, g_comm));
        } else {
            MT_OK(MPI_Reduce_scatter(sb, r, counts, MPI_INT, op, g_comm));
        }
        for (i = 0; i < (size_t)counts[g_rank]; ++i) {
            int want = reduced(k, user, (int)(first + i));
            if (r[i] != want) {
                MT_CHECK(0, "call %d reduce_scatter%s%s%s: element %zu is %d, expected %d", k,
                         block ? "_block" : "", user ? " (affine)" : "",
                         in_place ? " in place" : "", i, r[i], want);
                break;
            }
        }
        free(s);
        free(r);
    }
    free(counts);
}

int main(int argc, char** argv)
{
    int seed, rounds, k;
    mt_init(&argc, &argv);
    seed = argc > 1 ? atoi(argv[1]) : 1;
    rounds = argc > 2 ? atoi(argv[2]) : 60;
    g_rng = (unsigned)seed;
    MT_OK(MPI_Op_create(aff_op, 0, &g_aff));
    MT_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &g_strided));
    MT_OK(MPI_Type_commit(&g_strided));
    for (k = 0; k < rounds + rounds / 2; ++k) {
        if (k == 0 || k == rounds) {
            /* Then on the halves of the world (ranks reversed), whose
             * segments are made on their first call. */
            if (k == rounds) {
                MT_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, -mt_rank, &g_comm));
            } else {
                g_comm = MPI_COMM_WORLD;
            }
            MT_OK(MPI_Comm_rank(g_comm, &g_rank));
            MT_OK(MPI_Comm_size(g_comm, &g_size));
        }
        /* Counts from just above the small limit to several chunks, and one
         * call in three small (1 to 40 ints: data in the call's cache line
         * or in the slots), so that the three kinds of call take turns in
         * the same slot sets; every rank draws the same numbers. */
        unsigned what = rnd() % 8;
        size_t count = rnd() % 3 == 0 ? 1 + rnd() % 40 : 1025 + rnd() % 40000;
        int strided = (int)(rnd() % 2), in_place = (int)(rnd() % 2), user = (int)(rnd() % 2);
        if (mt_verbose && mt_rank == 0) {
            printf("call %d: %u count %zu strided %d in place %d user %d\n", k, what, count,
                   strided, in_place, user);
            fflush(stdout);
        }
        switch (what) {
        case 0:
            t_bcast(k, count, strided);
            break;
        case 1:
            t_allgather(k, count, strided, in_place);
            break;
        case 2:
            t_alltoall(k, count / 2 + 1, strided, in_place);
            break;
        case 3:
            t_allreduce(k, count, user, in_place);
            break;
        case 4:
            t_reduce_scatter(k, count / (size_t)g_size + 1, user, in_place, 1);
            break;
        case 5:
            t_reduce_scatter(k, count / (size_t)g_size + 1, user, in_place, 0);
            break;
        case 6: /* the same signature, strided at rank 0 only */
            t_allgather(k, g_rank == 0 ? count : 2 * count, g_rank == 0, in_place);
            break;
        default:
            count = count / 2 + 1;
            t_alltoall(k, g_rank == 0 ? count : 2 * count, g_rank == 0, in_place);
            break;
        }
    }
    if (g_comm != MPI_COMM_WORLD) {
        MT_OK(MPI_Comm_free(&g_comm));
    }
    MT_OK(MPI_Type_free(&g_strided));
    MT_OK(MPI_Op_free(&g_aff));
    return mt_finalize();
}
