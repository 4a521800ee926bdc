/*
 * Every collective on MPI_COMM_WORLD with integer data checked exactly:
 * Barrier, Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v, w),
 * Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan, at counts 0, 1,
 * odd and non-power-of-two ones, and one above the eager limit; roots first,
 * last and middle; every MPI_IN_PLACE form; v forms with uneven counts and
 * gaps between the blocks (gaps must stay untouched).
 *
 * Arguments:
 *   nb     use the nonblocking forms (MPI_I... + MPI_Wait) instead
 *   long   add larger counts (100003 elements)
 * Which algorithm runs comes from the environment (ULMPI_COLL_<NAME>), so
 * the testlist runs this program once per set of forced algorithms.
 */
#include "mpitest.h"

static int g_nb = 0;
static int g_counts[8] = {0, 1, 3, 17, 1000, 20011, 0, 0};
static int g_ncounts = 6;

#define JUNK (-77777)

/* Deterministic element i of rank r's data (salt makes tests differ). */
static int val(int r, int i, int salt)
{
    unsigned x = (unsigned)r * 7919u + (unsigned)i * 31u + (unsigned)salt * 104729u;
    x ^= x >> 13;
    return (int)(x & 0x7fffffffu);
}

/* Small values for reductions (sums never overflow). */
static int small(int r, int i) { return (r + 1) * (i % 1000 + 1) + (i % 7); }

static int* ialloc(size_t n)
{
    int* p = malloc((n == 0 ? 1 : n) * sizeof(int));
    size_t i;
    for (i = 0; i < n; ++i) {
        p[i] = JUNK;
    }
    return p;
}

static void finish(MPI_Request* r)
{
    MT_OK(MPI_Wait(r, MPI_STATUS_IGNORE));
    MT_CHECK(*r == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
}

/* Each wrapper calls the blocking or the nonblocking form. */
#define CALL(blocking, nonblocking)                                                               \
    do {                                                                                          \
        if (g_nb) {                                                                               \
            MPI_Request req_ = MPI_REQUEST_NULL;                                                  \
            MT_OK(nonblocking);                                                                   \
            finish(&req_);                                                                        \
        } else {                                                                                  \
            MT_OK(blocking);                                                                      \
        }                                                                                         \
    } while (0)

static void test_barrier(void)
{
    double before, after;
    double* all;
    int i, j;
    /* Rank 0 arrives late: nobody may leave before it arrived. */
    if (mt_rank == 0) {
        mt_sleep_ms(30);
    }
    before = MPI_Wtime();
    CALL(MPI_Barrier(MPI_COMM_WORLD), MPI_Ibarrier(MPI_COMM_WORLD, &req_));
    after = MPI_Wtime();
    all = malloc(2 * (size_t)mt_size * sizeof(double));
    {
        double mine[2];
        mine[0] = before;
        mine[1] = after;
        MT_OK(MPI_Allgather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD));
    }
    for (i = 0; i < mt_size; ++i) {
        for (j = 0; j < mt_size; ++j) {
            MT_CHECK(all[2 * i + 1] >= all[2 * j], "rank %d left the barrier before rank %d arrived",
                     i, j);
        }
    }
    free(all);
    for (i = 0; i < 3; ++i) {
        CALL(MPI_Barrier(MPI_COMM_WORLD), MPI_Ibarrier(MPI_COMM_WORLD, &req_));
    }
}

static int roots(int* out)
{
    int n = 0;
    out[n++] = 0;
    if (mt_size > 1) {
        out[n++] = mt_size - 1;
    }
    if (mt_size > 2) {
        out[n++] = mt_size / 2;
    }
    return n;
}

static void test_bcast(int count)
{
    int rs[3], nr = roots(rs), k, i;
    int* buf = ialloc((size_t)count);
    for (k = 0; k < nr; ++k) {
        int root = rs[k];
        for (i = 0; i < count; ++i) {
            buf[i] = mt_rank == root ? val(root, i, 1) : JUNK;
        }
        CALL(MPI_Bcast(buf, count, MPI_INT, root, MPI_COMM_WORLD),
             MPI_Ibcast(buf, count, MPI_INT, root, MPI_COMM_WORLD, &req_));
        for (i = 0; i < count; ++i) {
            if (buf[i] != val(root, i, 1)) {
                MT_CHECK(0, "bcast count %d root %d: element %d is %d, expected %d", count, root, i,
                         buf[i], val(root, i, 1));
                break;
            }
        }
    }
    free(buf);
}

static void test_gather(int count, int in_place)
{
    int rs[3], nr = roots(rs), k, i, j;
    int* sbuf = ialloc((size_t)count);
    int* rbuf = ialloc((size_t)count * (size_t)mt_size);
    for (i = 0; i < count; ++i) {
        sbuf[i] = val(mt_rank, i, 2);
    }
    for (k = 0; k < nr; ++k) {
        int root = rs[k];
        const void* s = sbuf;
        for (i = 0; i < count * mt_size; ++i) {
            rbuf[i] = JUNK;
        }
        if (in_place && mt_rank == root) {
            for (i = 0; i < count; ++i) {
                rbuf[root * count + i] = val(root, i, 2);
            }
            s = MPI_IN_PLACE;
        }
        CALL(MPI_Gather(s, count, MPI_INT, rbuf, count, MPI_INT, root, MPI_COMM_WORLD),
             MPI_Igather(s, count, MPI_INT, rbuf, count, MPI_INT, root, MPI_COMM_WORLD, &req_));
        if (mt_rank == root) {
            for (j = 0; j < mt_size; ++j) {
                for (i = 0; i < count; ++i) {
                    if (rbuf[j * count + i] != val(j, i, 2)) {
                        MT_CHECK(0, "gather%s count %d root %d: block %d element %d is %d",
                                 in_place ? " in place" : "", count, root, j, i,
                                 rbuf[j * count + i]);
                        j = mt_size;
                        break;
                    }
                }
            }
        }
    }
    free(sbuf);
    free(rbuf);
}

/* v forms: rank j's block has vcount(j) elements at vdispl(j) (gaps of 2). */
static int vcount(int count, int j) { return count == 0 ? 0 : count + (j * 5) % 7 - (j % 2); }
static int vdispl(int count, int j)
{
    int d = 0, k;
    for (k = 0; k < j; ++k) {
        d += vcount(count, k) + 2;
    }
    return d;
}

static void test_gatherv(int count, int in_place)
{
    int rs[3], nr = roots(rs), k, i, j;
    int total = vdispl(count, mt_size);
    int mine = vcount(count, mt_rank);
    int* counts = malloc((size_t)mt_size * sizeof(int));
    int* displs = malloc((size_t)mt_size * sizeof(int));
    int* sbuf = ialloc((size_t)mine);
    int* rbuf = ialloc((size_t)total);
    for (j = 0; j < mt_size; ++j) {
        counts[j] = vcount(count, j);
        displs[j] = vdispl(count, j);
    }
    for (i = 0; i < mine; ++i) {
        sbuf[i] = val(mt_rank, i, 3);
    }
    for (k = 0; k < nr; ++k) {
        int root = rs[k];
        const void* s = sbuf;
        for (i = 0; i < total; ++i) {
            rbuf[i] = JUNK;
        }
        if (in_place && mt_rank == root) {
            for (i = 0; i < mine; ++i) {
                rbuf[displs[root] + i] = val(root, i, 3);
            }
            s = MPI_IN_PLACE;
        }
        CALL(MPI_Gatherv(s, mine, MPI_INT, rbuf, counts, displs, MPI_INT, root, MPI_COMM_WORLD),
             MPI_Igatherv(s, mine, MPI_INT, rbuf, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                          &req_));
        if (mt_rank == root) {
            for (j = 0; j < mt_size; ++j) {
                for (i = 0; i < counts[j] + 2 && displs[j] + i < total; ++i) {
                    int want = i < counts[j] ? val(j, i, 3) : JUNK;
                    if (rbuf[displs[j] + i] != want) {
                        MT_CHECK(0, "gatherv count %d root %d: block %d element %d is %d, want %d",
                                 count, root, j, i, rbuf[displs[j] + i], want);
                        j = mt_size;
                        break;
                    }
                }
            }
        }
    }
    free(counts);
    free(displs);
    free(sbuf);
    free(rbuf);
}

static void test_scatter(int count, int in_place)
{
    int rs[3], nr = roots(rs), k, i;
    int* sbuf = ialloc((size_t)count * (size_t)mt_size);
    int* rbuf = ialloc((size_t)count);
    for (k = 0; k < nr; ++k) {
        int root = rs[k];
        void* r = rbuf;
        if (mt_rank == root) {
            for (i = 0; i < count * mt_size; ++i) {
                sbuf[i] = val(i / (count ? count : 1), i % (count ? count : 1), 4 + root);
            }
            if (in_place) {
                r = MPI_IN_PLACE;
            }
        }
        for (i = 0; i < count; ++i) {
            rbuf[i] = JUNK;
        }
        CALL(MPI_Scatter(sbuf, count, MPI_INT, r, count, MPI_INT, root, MPI_COMM_WORLD),
             MPI_Iscatter(sbuf, count, MPI_INT, r, count, MPI_INT, root, MPI_COMM_WORLD, &req_));
        if (in_place && mt_rank == root) {
            for (i = 0; i < count * mt_size; ++i) {
                if (sbuf[i] != val(i / count, i % count, 4 + root)) {
                    MT_CHECK(0, "scatter in place: root's buffer changed at %d", i);
                    break;
                }
            }
            continue;
        }
        for (i = 0; i < count; ++i) {
            if (rbuf[i] != val(mt_rank, i, 4 + root)) {
                MT_CHECK(0, "scatter count %d root %d: element %d is %d, expected %d", count, root,
                         i, rbuf[i], val(mt_rank, i, 4 + root));
                break;
            }
        }
    }
    free(sbuf);
    free(rbuf);
}

static void test_scatterv(int count, int in_place)
{
    int rs[3], nr = roots(rs), k, i, j;
    int total = vdispl(count, mt_size);
    int mine = vcount(count, mt_rank);
    int* counts = malloc((size_t)mt_size * sizeof(int));
    int* displs = malloc((size_t)mt_size * sizeof(int));
    int* sbuf = ialloc((size_t)total);
    int* rbuf = ialloc((size_t)mine + 1);
    for (j = 0; j < mt_size; ++j) {
        counts[j] = vcount(count, j);
        displs[j] = vdispl(count, j);
    }
    for (k = 0; k < nr; ++k) {
        int root = rs[k];
        void* r = rbuf;
        if (mt_rank == root) {
            for (j = 0; j < mt_size; ++j) {
                for (i = 0; i < counts[j]; ++i) {
                    sbuf[displs[j] + i] = val(j, i, 5 + root);
                }
            }
            if (in_place) {
                r = MPI_IN_PLACE;
            }
        }
        for (i = 0; i <= mine; ++i) {
            rbuf[i] = JUNK;
        }
        CALL(MPI_Scatterv(sbuf, counts, displs, MPI_INT, r, mine, MPI_INT, root, MPI_COMM_WORLD),
             MPI_Iscatterv(sbuf, counts, displs, MPI_INT, r, mine, MPI_INT, root, MPI_COMM_WORLD,
                           &req_));
        if (in_place && mt_rank == root) {
            continue;
        }
        for (i = 0; i <= mine; ++i) {
            int want = i < mine ? val(mt_rank, i, 5 + root) : JUNK;
            if (rbuf[i] != want) {
                MT_CHECK(0, "scatterv count %d root %d: element %d is %d, expected %d", count, root,
                         i, rbuf[i], want);
                break;
            }
        }
    }
    free(counts);
    free(displs);
    free(sbuf);
    free(rbuf);
}

static void test_allgather(int count, int in_place)
{
    int i, j;
    int* sbuf = ialloc((size_t)count);
    int* rbuf = ialloc((size_t)count * (size_t)mt_size);
    const void* s = sbuf;
    for (i = 0; i < count; ++i) {
        sbuf[i] = val(mt_rank, i, 6);
    }
    if (in_place) {
        for (i = 0; i < count; ++i) {
            rbuf[mt_rank * count + i] = val(mt_rank, i, 6);
        }
        s = MPI_IN_PLACE;
    }
    CALL(MPI_Allgather(s, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD),
         MPI_Iallgather(s, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD, &req_));
    for (j = 0; j < mt_size; ++j) {
        for (i = 0; i < count; ++i) {
            if (rbuf[j * count + i] != val(j, i, 6)) {
                MT_CHECK(0, "allgather%s count %d: block %d element %d is %d",
                         in_place ? " in place" : "", count, j, i, rbuf[j * count + i]);
                j = mt_size;
                break;
            }
        }
    }
    free(sbuf);
    free(rbuf);
}

static void test_allgatherv(int count, int in_place)
{
    int i, j;
    int total = vdispl(count, mt_size);
    int mine = vcount(count, mt_rank);
    int* counts = malloc((size_t)mt_size * sizeof(int));
    int* displs = malloc((size_t)mt_size * sizeof(int));
    int* sbuf = ialloc((size_t)mine);
    int* rbuf = ialloc((size_t)total);
    const void* s = sbuf;
    for (j = 0; j < mt_size; ++j) {
        counts[j] = vcount(count, j);
        displs[j] = vdispl(count, j);
    }
    for (i = 0; i < mine; ++i) {
        sbuf[i] = val(mt_rank, i, 7);
    }
    if (in_place) {
        for (i = 0; i < mine; ++i) {
            rbuf[displs[mt_rank] + i] = val(mt_rank, i, 7);
        }
        s = MPI_IN_PLACE;
    }
    CALL(MPI_Allgatherv(s, mine, MPI_INT, rbuf, counts, displs, MPI_INT, MPI_COMM_WORLD),
         MPI_Iallgatherv(s, mine, MPI_INT, rbuf, counts, displs, MPI_INT, MPI_COMM_WORLD, &req_));
    for (j = 0; j < mt_size; ++j) {
        for (i = 0; i < counts[j] + 2 && displs[j] + i < total; ++i) {
            int want = i < counts[j] ? val(j, i, 7) : JUNK;
            if (rbuf[displs[j] + i] != want) {
                MT_CHECK(0, "allgatherv%s count %d: block %d element %d is %d, want %d",
                         in_place ? " in place" : "", count, j, i, rbuf[displs[j] + i], want);
                j = mt_size;
                break;
            }
        }
    }
    free(counts);
    free(displs);
    free(sbuf);
    free(rbuf);
}

static void test_alltoall(int count, int in_place)
{
    int i, j;
    size_t n = (size_t)count * (size_t)mt_size;
    int* sbuf = ialloc(n);
    int* rbuf = ialloc(n);
    const void* s = sbuf;
    for (j = 0; j < mt_size; ++j) {
        for (i = 0; i < count; ++i) {
            sbuf[j * count + i] = val(mt_rank * mt_size + j, i, 8);
        }
    }
    if (in_place) {
        memcpy(rbuf, sbuf, n * sizeof(int));
        s = MPI_IN_PLACE;
    }
    CALL(MPI_Alltoall(s, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD),
         MPI_Ialltoall(s, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD, &req_));
    for (j = 0; j < mt_size; ++j) {
        for (i = 0; i < count; ++i) {
            if (rbuf[j * count + i] != val(j * mt_size + mt_rank, i, 8)) {
                MT_CHECK(0, "alltoall%s count %d: block from %d element %d is %d",
                         in_place ? " in place" : "", count, j, i, rbuf[j * count + i]);
                j = mt_size;
                break;
            }
        }
    }
    free(sbuf);
    free(rbuf);
}

/* Alltoallv: rank a sends pair(a, b) elements to rank b. */
static int pair(int count, int a, int b) { return count == 0 ? 0 : count + (a + b) % 3 - ((a * b) % 2); }

static void test_alltoallv(int count, int in_place, int w)
{
    int i, j;
    int* sc = malloc((size_t)mt_size * sizeof(int));
    int* sd = malloc((size_t)mt_size * sizeof(int));
    int* rc = malloc((size_t)mt_size * sizeof(int));
    int* rd = malloc((size_t)mt_size * sizeof(int));
    MPI_Datatype* types = malloc((size_t)mt_size * sizeof(MPI_Datatype));
    int stotal = 0, rtotal = 0;
    int *sbuf, *rbuf;
    const void* s;
    for (j = 0; j < mt_size; ++j) {
        sc[j] = pair(count, mt_rank, j);
        rc[j] = pair(count, j, mt_rank);
        /* blocks in reverse order with a gap of 1 */
        types[j] = MPI_INT;
    }
    for (j = mt_size - 1; j >= 0; --j) {
        sd[j] = stotal;
        stotal += sc[j] + 1;
        rd[j] = rtotal;
        rtotal += rc[j] + 1;
    }
    if (in_place) {
        /* in place: send counts are the receive counts; pair() is symmetric */
        for (j = 0; j < mt_size; ++j) {
            sc[j] = rc[j];
            sd[j] = rd[j];
        }
        stotal = rtotal;
    }
    sbuf = ialloc((size_t)stotal);
    rbuf = ialloc((size_t)rtotal);
    for (j = 0; j < mt_size; ++j) {
        for (i = 0; i < sc[j]; ++i) {
            sbuf[sd[j] + i] = val(mt_rank * mt_size + j, i, 9);
        }
    }
    s = sbuf;
    if (in_place) {
        memcpy(rbuf, sbuf, (size_t)rtotal * sizeof(int));
        s = MPI_IN_PLACE;
    }
    if (w) {
        /* byte displacements */
        int* sdb = malloc((size_t)mt_size * sizeof(int));
        int* rdb = malloc((size_t)mt_size * sizeof(int));
        for (j = 0; j < mt_size; ++j) {
            sdb[j] = sd[j] * (int)sizeof(int);
            rdb[j] = rd[j] * (int)sizeof(int);
        }
        CALL(MPI_Alltoallw(s, sc, sdb, types, rbuf, rc, rdb, types, MPI_COMM_WORLD),
             MPI_Ialltoallw(s, sc, sdb, types, rbuf, rc, rdb, types, MPI_COMM_WORLD, &req_));
        free(sdb);
        free(rdb);
    } else {
        CALL(MPI_Alltoallv(s, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD),
             MPI_Ialltoallv(s, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD, &req_));
    }
    for (j = 0; j < mt_size; ++j) {
        for (i = 0; i <= rc[j] && rd[j] + i < rtotal; ++i) {
            int want = i < rc[j] ? val(j * mt_size + mt_rank, i, 9) : JUNK;
            if (rbuf[rd[j] + i] != want) {
                MT_CHECK(0, "alltoall%s%s count %d: block from %d element %d is %d, want %d",
                         w ? "w" : "v", in_place ? " in place" : "", count, j, i, rbuf[rd[j] + i],
                         want);
                j = mt_size;
                break;
            }
        }
    }
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(types);
    free(sbuf);
    free(rbuf);
}

static int sum_upto(int last, int i)
{
    int r, s = 0;
    for (r = 0; r <= last; ++r) {
        s += small(r, i);
    }
    return s;
}

static void test_reduce(int count, int in_place)
{
    int rs[3], nr = roots(rs), k, i;
    int* sbuf = ialloc((size_t)count);
    int* rbuf = ialloc((size_t)count);
    for (k = 0; k < nr; ++k) {
        int root = rs[k];
        const void* s = sbuf;
        for (i = 0; i < count; ++i) {
            sbuf[i] = small(mt_rank, i);
            rbuf[i] = JUNK;
        }
        if (in_place && mt_rank == root) {
            memcpy(rbuf, sbuf, (size_t)count * sizeof(int));
            s = MPI_IN_PLACE;
        }
        CALL(MPI_Reduce(s, rbuf, count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD),
             MPI_Ireduce(s, rbuf, count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req_));
        if (mt_rank == root) {
            for (i = 0; i < count; ++i) {
                if (rbuf[i] != sum_upto(mt_size - 1, i)) {
                    MT_CHECK(0, "reduce%s count %d root %d: element %d is %d, expected %d",
                             in_place ? " in place" : "", count, root, i, rbuf[i],
                             sum_upto(mt_size - 1, i));
                    break;
                }
            }
        } else {
            for (i = 0; i < count; ++i) {
                if (rbuf[i] != JUNK || sbuf[i] != small(mt_rank, i)) {
                    MT_CHECK(0, "reduce count %d: a non-root's buffers changed at %d", count, i);
                    break;
                }
            }
        }
    }
    free(sbuf);
    free(rbuf);
}

static void test_allreduce(int count, int in_place, MPI_Op op)
{
    int i, r;
    int* sbuf = ialloc((size_t)count);
    int* rbuf = ialloc((size_t)count);
    const void* s = sbuf;
    for (i = 0; i < count; ++i) {
        sbuf[i] = small(mt_rank, i);
    }
    if (in_place) {
        memcpy(rbuf, sbuf, (size_t)count * sizeof(int));
        s = MPI_IN_PLACE;
    }
    CALL(MPI_Allreduce(s, rbuf, count, MPI_INT, op, MPI_COMM_WORLD),
         MPI_Iallreduce(s, rbuf, count, MPI_INT, op, MPI_COMM_WORLD, &req_));
    for (i = 0; i < count; ++i) {
        int want = op == MPI_SUM ? sum_upto(mt_size - 1, i) : small(0, i);
        if (op == MPI_MAX) {
            want = small(0, i);
            for (r = 1; r < mt_size; ++r) {
                want = small(r, i) > want ? small(r, i) : want;
            }
        }
        if (rbuf[i] != want) {
            MT_CHECK(0, "allreduce%s %s count %d: element %d is %d, expected %d",
                     in_place ? " in place" : "", op == MPI_SUM ? "sum" : "max", count, i, rbuf[i],
                     want);
            break;
        }
    }
    free(sbuf);
    free(rbuf);
}

static int rs_count(int count, int j, int block) { return block ? count : (count == 0 ? 0 : (count + j) % 5 + (j % 3 == 1 ? 0 : count / 3)); }

static void test_reduce_scatter(int count, int in_place, int block)
{
    int i, j, total = 0, first = 0;
    int* counts = malloc((size_t)mt_size * sizeof(int));
    int *sbuf, *rbuf;
    const void* s;
    for (j = 0; j < mt_size; ++j) {
        counts[j] = rs_count(count, j, block);
        if (j < mt_rank) {
            first += counts[j];
        }
        total += counts[j];
    }
    sbuf = ialloc((size_t)total);
    rbuf = ialloc((size_t)total + 1);
    for (i = 0; i < total; ++i) {
        sbuf[i] = small(mt_rank, i);
    }
    s = sbuf;
    if (in_place) {
        memcpy(rbuf, sbuf, (size_t)total * sizeof(int));
        s = MPI_IN_PLACE;
    }
    if (block) {
        CALL(MPI_Reduce_scatter_block(s, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
             MPI_Ireduce_scatter_block(s, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_));
    } else {
        CALL(MPI_Reduce_scatter(s, rbuf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
             MPI_Ireduce_scatter(s, rbuf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_));
    }
    for (i = 0; i < counts[mt_rank]; ++i) {
        int want = sum_upto(mt_size - 1, first + i);
        if (rbuf[i] != want) {
            MT_CHECK(0, "reduce_scatter%s%s count %d: element %d is %d, expected %d",
                     block ? "_block" : "", in_place ? " in place" : "", count, i, rbuf[i], want);
            break;
        }
    }
    if (!in_place) {
        MT_CHECK(rbuf[counts[mt_rank]] == JUNK, "reduce_scatter wrote past the result");
    }
    free(counts);
    free(sbuf);
    free(rbuf);
}

static void test_scan(int count, int in_place, int ex)
{
    int i;
    int* sbuf = ialloc((size_t)count);
    int* rbuf = ialloc((size_t)count);
    const void* s = sbuf;
    for (i = 0; i < count; ++i) {
        sbuf[i] = small(mt_rank, i);
    }
    if (in_place) {
        memcpy(rbuf, sbuf, (size_t)count * sizeof(int));
        s = MPI_IN_PLACE;
    }
    if (ex) {
        CALL(MPI_Exscan(s, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
             MPI_Iexscan(s, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_));
    } else {
        CALL(MPI_Scan(s, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
             MPI_Iscan(s, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_));
    }
    if (ex && mt_rank == 0) {
        free(sbuf);
        free(rbuf);
        return; /* undefined at rank 0 */
    }
    for (i = 0; i < count; ++i) {
        int want = sum_upto(ex ? mt_rank - 1 : mt_rank, i);
        if (rbuf[i] != want) {
            MT_CHECK(0, "%sscan%s count %d: element %d is %d, expected %d", ex ? "ex" : "",
                     in_place ? " in place" : "", count, i, rbuf[i], want);
            break;
        }
    }
    free(sbuf);
    free(rbuf);
}

int main(int argc, char** argv)
{
    int a, ci, ip;
    mt_init(&argc, &argv);
    for (a = 1; a < argc; ++a) {
        if (strcmp(argv[a], "nb") == 0) {
            g_nb = 1;
        } else if (strcmp(argv[a], "long") == 0) {
            g_counts[g_ncounts++] = 100003;
        }
    }
    test_barrier();
    for (ci = 0; ci < g_ncounts; ++ci) {
        int count = g_counts[ci];
        if (mt_verbose && mt_rank == 0) {
            printf("count %d\n", count);
            fflush(stdout);
        }
        test_bcast(count);
        for (ip = 0; ip < 2; ++ip) {
            test_gather(count, ip);
            test_gatherv(count, ip);
            test_scatter(count, ip);
            test_scatterv(count, ip);
            test_allgather(count, ip);
            test_allgatherv(count, ip);
            test_alltoall(count, ip);
            test_alltoallv(count, ip, 0);
            test_alltoallv(count, ip, 1);
            test_reduce(count, ip);
            test_allreduce(count, ip, MPI_SUM);
            test_allreduce(count, ip, MPI_MAX);
            test_reduce_scatter(count, ip, 0);
            test_reduce_scatter(count, ip, 1);
            test_scan(count, ip, 0);
            test_scan(count, ip, 1);
        }
    }
    return mt_finalize();
}
