/* intra_cg: an HPCCG-like conjugate gradient whose three kernels (waxpby,
 * ddot, sparsemv) are intra-parallelized (mpi-ext.h, docs/intra_parallelization.md).
 *
 *   mpicc -o intra_cg examples/intra_cg.c
 *   mpirun -n 2 ./intra_cg                              no replication
 *   mpirun -n 1 --replicas 2 ./intra_cg nz=128           plain replication
 *   mpirun -n 1 --replicas 2 ./intra_cg nz=128 intra=all  replicas share the kernels
 *
 * It also builds with another MPI (Open MPI, MPICH), without sections, for
 * reference runs.
 *
 * Options (name=value): nx, ny, nz (local grid of each rank, default
 * 32 x 32 x 64), iters (CG iterations, default 50), tasks (tasks per
 * section, default 8 as in the paper), intra=all|none|a list of
 * ddot,sparsemv,waxpby (which kernels run as intra-parallel sections;
 * default none), kill=REPLICA:ITERATION (that replica raises SIGKILL in a
 * sparsemv task of that iteration; the others finish the job),
 * hugepages=1 (the big arrays on transparent huge pages, see big_alloc).
 *
 * As HPCCG: a 27-point stencil on a 3-D grid split over the ranks along z,
 * 27 on the diagonal and -1 elsewhere, b = A * ones, x0 = 0; the halo
 * planes of p are exchanged before each sparsemv, ddot ends with an
 * MPI_Allreduce. A kernel always works in `tasks` chunks, summed in chunk
 * order, with or without sections: the result line is the same bits
 * whatever runs it. Rank 0 prints "result: iters=... normr=..." and the
 * time spent in each kernel (the reduction and the halo exchange left out,
 * as in the paper), the longest over the ranks. */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE under -std=c11 */
#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#ifndef ULMPI_HAVE_INTRA
/* Another MPI (reference runs without replication): every kernel runs its
 * chunks directly; intra= is refused. */
#define MPIX_INTRA_IN 1
#define MPIX_INTRA_OUT 2
#define MPIX_INTRA_INOUT 3
typedef void MPIX_Intra_task_fn(void *args[], const int counts[]);
static int MPIX_Intra_Section_begin(void) { return MPI_ERR_OTHER; }
static int MPIX_Intra_Section_end(void) { return MPI_ERR_OTHER; }
static int MPIX_Intra_Task_registerv(MPIX_Intra_task_fn *fn, int nargs, const int tags[],
                                     const MPI_Datatype types[], const int counts[], int *id)
{
    (void)fn, (void)nargs, (void)tags, (void)types, (void)counts, (void)id;
    return MPI_ERR_OTHER;
}
static int MPIX_Intra_Task_launchv(int id, int nargs, void *const ptrs[], const int counts[])
{
    (void)id, (void)nargs, (void)ptrs, (void)counts;
    return MPI_ERR_OTHER;
}
static int MPIX_Replica_info(int *replica, int *replicas)
{
    *replica = 0, *replicas = 1;
    return MPI_SUCCESS;
}
#endif

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int nx = 32, ny = 32, nz = 64, iters = 50, ntasks = 8;
static int intra_ddot, intra_spmv, intra_waxpby;
static int kill_replica = -1, kill_iter = -1, cur_iter = -1, replica, hugepages;

/* The big arrays, zeroed. hugepages=1: 2 MiB aligned and marked for
 * transparent huge pages before first touch (Linux madvise; in every
 * configuration alike): fewer TLB misses, and an update read from a
 * sibling's memory (process_vm_readv) pins one page instead of 512. */
static void *big_alloc(size_t bytes)
{
    if (!hugepages) {
        return calloc(bytes > 0 ? bytes : 1, 1);
    }
    const size_t huge = (size_t)2 << 20;
    const size_t len = (bytes + huge - 1) / huge * huge;
    void *p = aligned_alloc(huge, len > 0 ? len : huge);
#ifdef MADV_HUGEPAGE
    if (p != NULL) {
        (void)madvise(p, len, MADV_HUGEPAGE);
    }
#endif
    if (p != NULL) {
        memset(p, 0, len);
    }
    return p;
}

/* The matrix (CSR over the local rows; columns index the vector with its
 * two halo planes: entry i of the vector is at i + nx*ny) */
static int nrows, nplane;
static int *row_start, *cols;
static double *vals;

/* ---- the task functions (one chunk of a kernel each) ---- */

/* in range[2], in x[n], in y[n], out s: s = sum x*y over the chunk */
static void ddot_task(void *args[], const int counts[])
{
    const double *x = args[1], *y = args[2];
    double s = 0;
    for (int i = 0; i < counts[1]; ++i) {
        s += x[i] * y[i];
    }
    *(double *)args[3] = s;
    (void)counts;
}

/* in range[2] (first row, rows), in p (the whole vector, read through the
 * globals' columns), out y[rows] */
static void spmv_task(void *args[], const int counts[])
{
    const int *range = args[0];
    const double *p = args[1];
    double *y = args[2];
    if (replica == kill_replica && cur_iter == kill_iter) {
        fflush(NULL);
        raise(SIGKILL);
    }
    for (int r = 0; r < range[1]; ++r) {
        const int row = range[0] + r;
        double s = 0;
        for (int j = row_start[row]; j < row_start[row + 1]; ++j) {
            s += vals[j] * p[cols[j]];
        }
        y[r] = s;
    }
    (void)counts;
}

/* in coef[2] (alpha, beta), in x[n], in y[n], out w[n]: w = alpha x + beta y */
static void waxpby_task(void *args[], const int counts[])
{
    const double *c = args[0], *x = args[1], *y = args[2];
    double *w = args[3];
    for (int i = 0; i < counts[3]; ++i) {
        w[i] = c[0] * x[i] + c[1] * y[i];
    }
}

/* in coef[2], in x[n], inout w[n]: w = alpha x + beta w (HPCCG's waxpby
 * with w = y: read and written, so copied for a re-run) */
static void update_task(void *args[], const int counts[])
{
    const double *c = args[0], *x = args[1];
    double *w = args[2];
    for (int i = 0; i < counts[2]; ++i) {
        w[i] = c[0] * x[i] + c[1] * w[i];
    }
}

/* ---- the kernels: `ntasks` chunks, in a section or not ---- */

static double t_ddot, t_spmv, t_waxpby, t_reduce;
static double *partial;
static int *chunk; /* chunk t: rows [chunk[2t], chunk[2t] + chunk[2t+1]) */

static void run_chunks(int intra, MPIX_Intra_task_fn *fn, int nargs, const int tags[],
                       const MPI_Datatype types[], void *ptrs[][4], int counts[][4])
{
    if (!intra) {
        for (int t = 0; t < ntasks; ++t) {
            fn(ptrs[t], counts[t]);
        }
        return;
    }
    int id;
    const int one[4] = {1, 1, 1, 1};
    MPIX_Intra_Section_begin();
    MPIX_Intra_Task_registerv(fn, nargs, tags, types, one, &id);
    for (int t = 0; t < ntasks; ++t) {
        MPIX_Intra_Task_launchv(id, nargs, ptrs[t], counts[t]);
    }
    MPIX_Intra_Section_end();
}

static double ddot(const double *x, const double *y)
{
    static const int tags[4] = {MPIX_INTRA_IN, MPIX_INTRA_IN, MPIX_INTRA_IN, MPIX_INTRA_OUT};
    static const MPI_Datatype types[4] = {MPI_INT, MPI_DOUBLE, MPI_DOUBLE, MPI_DOUBLE};
    void *ptrs[ntasks][4];
    int counts[ntasks][4];
    const double t0 = MPI_Wtime();
    for (int t = 0; t < ntasks; ++t) {
        const int b = chunk[2 * t], n = chunk[2 * t + 1];
        ptrs[t][0] = &chunk[2 * t], ptrs[t][1] = (void *)(x + b), ptrs[t][2] = (void *)(y + b);
        ptrs[t][3] = &partial[t];
        counts[t][0] = 2, counts[t][1] = n, counts[t][2] = n, counts[t][3] = 1;
    }
    run_chunks(intra_ddot, ddot_task, 4, tags, types, ptrs, counts);
    double local = 0, global = 0;
    for (int t = 0; t < ntasks; ++t) {
        local += partial[t];
    }
    const double t1 = MPI_Wtime();
    t_ddot += t1 - t0;
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t_reduce += MPI_Wtime() - t1;
    return global;
}

static void sparsemv(const double *p_ext, double *y)
{
    static const int tags[3] = {MPIX_INTRA_IN, MPIX_INTRA_IN, MPIX_INTRA_OUT};
    static const MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_DOUBLE};
    void *ptrs[ntasks][4];
    int counts[ntasks][4];
    const double t0 = MPI_Wtime();
    for (int t = 0; t < ntasks; ++t) {
        ptrs[t][0] = &chunk[2 * t], ptrs[t][1] = (void *)p_ext, ptrs[t][2] = y + chunk[2 * t];
        /* p is read through the matrix's columns: declared with count 0 (an
         * in parameter is neither copied nor sent) */
        counts[t][0] = 2, counts[t][1] = 0, counts[t][2] = chunk[2 * t + 1];
    }
    run_chunks(intra_spmv, spmv_task, 3, tags, types, ptrs, counts);
    t_spmv += MPI_Wtime() - t0;
}

/* w = alpha x + beta y; y == w allowed (then w is inout) */
static void waxpby(double alpha, const double *x, double beta, const double *y, double *w)
{
    double coef[2] = {alpha, beta};
    void *ptrs[ntasks][4];
    int counts[ntasks][4];
    const double t0 = MPI_Wtime();
    for (int t = 0; t < ntasks; ++t) {
        const int b = chunk[2 * t], n = chunk[2 * t + 1];
        ptrs[t][0] = coef, ptrs[t][1] = (void *)(x + b);
        counts[t][0] = 2, counts[t][1] = n;
        if (y == w) {
            ptrs[t][2] = w + b, counts[t][2] = n;
        } else {
            ptrs[t][2] = (void *)(y + b), ptrs[t][3] = w + b;
            counts[t][2] = n, counts[t][3] = n;
        }
    }
    if (y == w) {
        static const int tags[3] = {MPIX_INTRA_IN, MPIX_INTRA_IN, MPIX_INTRA_INOUT};
        static const MPI_Datatype types[3] = {MPI_DOUBLE, MPI_DOUBLE, MPI_DOUBLE};
        run_chunks(intra_waxpby, update_task, 3, tags, types, ptrs, counts);
    } else {
        static const int tags[4] = {MPIX_INTRA_IN, MPIX_INTRA_IN, MPIX_INTRA_IN, MPIX_INTRA_OUT};
        static const MPI_Datatype types[4] = {MPI_DOUBLE, MPI_DOUBLE, MPI_DOUBLE, MPI_DOUBLE};
        run_chunks(intra_waxpby, waxpby_task, 4, tags, types, ptrs, counts);
    }
    t_waxpby += MPI_Wtime() - t0;
}

/* ---- set-up ---- */

static void build_matrix(int rank, int size)
{
    nplane = nx * ny;
    nrows = nplane * nz;
    row_start = big_alloc(sizeof(int) * (size_t)(nrows + 1));
    cols = big_alloc(sizeof(int) * (size_t)nrows * 27);
    vals = big_alloc(sizeof(double) * (size_t)nrows * 27);
    const int gz0 = rank * nz, gnz = size * nz;
    int k = 0;
    for (int z = 0; z < nz; ++z) {
        for (int y = 0; y < ny; ++y) {
            for (int x = 0; x < nx; ++x) {
                const int row = (z * ny + y) * nx + x;
                row_start[row] = k;
                for (int dz = -1; dz <= 1; ++dz) {
                    for (int dy = -1; dy <= 1; ++dy) {
                        for (int dx = -1; dx <= 1; ++dx) {
                            const int gz = gz0 + z + dz, yy = y + dy, xx = x + dx;
                            if (gz < 0 || gz >= gnz || yy < 0 || yy >= ny || xx < 0 || xx >= nx) {
                                continue;
                            }
                            cols[k] = ((z + dz) * ny + yy) * nx + xx + nplane;
                            vals[k] = (dz == 0 && dy == 0 && dx == 0) ? 27.0 : -1.0;
                            ++k;
                        }
                    }
                }
            }
        }
    }
    row_start[nrows] = k;
}

static void exchange_halo(double *v_ext, int rank, int size)
{
    const int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    const int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    /* my top plane up, their bottom plane into my upper halo; and back */
    MPI_Sendrecv(v_ext + (size_t)nz * nplane, nplane, MPI_DOUBLE, up, 1, v_ext, nplane, MPI_DOUBLE,
                 down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(v_ext + nplane, nplane, MPI_DOUBLE, down, 2, v_ext + (size_t)(nz + 1) * nplane,
                 nplane, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (sscanf(a, "nx=%d", &nx) == 1 || sscanf(a, "ny=%d", &ny) == 1 ||
            sscanf(a, "nz=%d", &nz) == 1 || sscanf(a, "iters=%d", &iters) == 1 ||
            sscanf(a, "tasks=%d", &ntasks) == 1 || sscanf(a, "hugepages=%d", &hugepages) == 1 ||
            sscanf(a, "kill=%d:%d", &kill_replica, &kill_iter) == 2) {
            continue;
        }
        if (strncmp(a, "intra=", 6) == 0) {
            const char *l = a + 6;
            const int all = strcmp(l, "all") == 0;
            intra_ddot = all || strstr(l, "ddot") != NULL;
            intra_spmv = all || strstr(l, "sparsemv") != NULL;
            intra_waxpby = all || strstr(l, "waxpby") != NULL;
            continue;
        }
        fprintf(stderr, "intra_cg: unknown option %s\n", a);
        exit(2);
    }
#ifndef ULMPI_HAVE_INTRA
    if (intra_ddot || intra_spmv || intra_waxpby) {
        fprintf(stderr, "intra_cg: this MPI has no intra-parallel sections (intra=)\n");
        exit(2);
    }
#endif
    if (nx < 1 || ny < 1 || nz < 1 || iters < 1 || ntasks < 1 || ntasks > nx * ny * nz) {
        fprintf(stderr, "intra_cg: bad sizes\n");
        exit(2);
    }
}

int main(int argc, char **argv)
{
    int rank, size, replicas;
    MPI_Init(&argc, &argv);
    parse(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Replica_info(&replica, &replicas);
    build_matrix(rank, size);

    partial = malloc(sizeof(double) * (size_t)ntasks);
    chunk = malloc(sizeof(int) * 2 * (size_t)ntasks);
    for (int t = 0; t < ntasks; ++t) {
        const int b = (int)((long long)t * nrows / ntasks);
        const int e = (int)((long long)(t + 1) * nrows / ntasks);
        chunk[2 * t] = b, chunk[2 * t + 1] = e - b;
    }
    const size_t n_ext = (size_t)(nz + 2) * nplane;
    double *x = big_alloc(sizeof(double) * (size_t)nrows);
    double *b = big_alloc(sizeof(double) * (size_t)nrows);
    double *r = big_alloc(sizeof(double) * (size_t)nrows);
    double *ap = big_alloc(sizeof(double) * (size_t)nrows);
    double *p_ext = big_alloc(sizeof(double) * n_ext);
    double *p = p_ext + nplane;
    double *ones = big_alloc(sizeof(double) * n_ext);
    for (size_t i = 0; i < n_ext; ++i) {
        ones[i] = 1.0;
    }
    /* b = A * ones (the exact solution is all ones) */
    for (int row = 0; row < nrows; ++row) {
        double s = 0;
        for (int j = row_start[row]; j < row_start[row + 1]; ++j) {
            s += vals[j];
        }
        b[row] = s;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    /* r = b - A x0 = b; p = r */
    waxpby(1.0, b, 0.0, b, r);
    waxpby(1.0, r, 0.0, r, p);
    double rtrans = ddot(r, r), normr = sqrt(rtrans);
    int k;
    for (k = 1; k <= iters && normr > 1e-12; ++k) {
        cur_iter = k;
        if (k > 1) {
            const double old = rtrans;
            rtrans = ddot(r, r);
            waxpby(1.0, r, rtrans / old, p, p); /* p = r + beta p */
        }
        normr = sqrt(rtrans);
        exchange_halo(p_ext, rank, size);
        sparsemv(p_ext, ap);
        const double alpha = rtrans / ddot(p, ap);
        waxpby(alpha, p, 1.0, x, x);   /* x = x + alpha p */
        waxpby(-alpha, ap, 1.0, r, r); /* r = r - alpha Ap */
    }
    const double total = MPI_Wtime() - t0;
    double err = 0;
    for (int i = 0; i < nrows; ++i) {
        err = fmax(err, fabs(x[i] - 1.0));
    }
    double times[6] = {t_ddot, t_spmv, t_waxpby, total, err, t_ddot + t_reduce}, maxt[6];
    MPI_Reduce(times, maxt, 6, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: iters=%d normr=%.15e maxerr=%.6e\n", k - 1, normr, maxt[4]);
        printf("times: ddot %.6f sparsemv %.6f waxpby %.6f total %.6f (s; %d ranks x %d replicas, "
               "grid %dx%dx%d per rank, %d tasks, intra:%s%s%s)\n",
               maxt[0], maxt[1], maxt[2], maxt[3], size, replicas, nx, ny, nz, ntasks,
               intra_ddot ? " ddot" : "", intra_spmv ? " sparsemv" : "",
               intra_waxpby ? " waxpby" : "");
        /* ddot with its reductions, which its time leaves out as in the
         * paper: there the ranks wait for each other (one rank's replicas
         * wait for each other in the sections instead) */
        printf("with reductions: ddot %.6f (s)\n", maxt[5]);
    }
    free(x), free(b), free(r), free(ap), free(p_ext), free(ones), free(partial), free(chunk);
    free(row_start), free(cols), free(vals);
    MPI_Finalize();
    return 0;
}
