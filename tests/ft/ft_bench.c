/*
 * ft_bench [ITERS] -- time of MPIX_Comm_agree and MPIX_Comm_shrink on
 * MPI_COMM_WORLD, without failures and with one failed process (the last
 * rank kills itself; the survivors acknowledge it first, so that agree
 * succeeds). Run with ULMPI_FT=ulfm. Rank 0 prints one line per case:
 * the median and the maximum over ITERS calls (default 200) of the time
 * one call takes at rank 0, in microseconds, after a barrier-free warm-up.
 * A benchmark, not a test: nothing is asserted about speed.
 */
#include "fttest.h"

static int cmp(const void* a, const void* b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

static void report(const char* what, double* t, int n, int procs)
{
    qsort(t, (size_t)n, sizeof(double), cmp);
    if (mt_rank == 0) {
        printf("%-8s %-14s procs %2d: median %8.1f us, max %8.1f us\n", what,
               procs == mt_size ? "no failure" : "one failed", mt_size, t[n / 2] * 1e6,
               t[n - 1] * 1e6);
        fflush(stdout);
    }
}

static void bench(MPI_Comm c, int iters, int procs)
{
    double* t = malloc(sizeof(double) * (size_t)iters);
    for (int i = 0; i < 10; ++i) {
        int flag = 1;
        MPIX_Comm_agree(c, &flag);
    }
    for (int i = 0; i < iters; ++i) {
        int flag = 1;
        double t0 = MPI_Wtime();
        MT_OK(MPIX_Comm_agree(c, &flag));
        t[i] = MPI_Wtime() - t0;
    }
    report("agree", t, iters, procs);
    for (int i = 0; i < iters / 4; ++i) {
        MPI_Comm s;
        double t0 = MPI_Wtime();
        MT_OK(MPIX_Comm_shrink(c, &s));
        t[i] = MPI_Wtime() - t0;
        MPI_Comm_free(&s);
    }
    report("shrink", t, iters / 4, procs);
    free(t);
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int iters = argc > 1 ? atoi(argv[1]) : 200;
    bench(MPI_COMM_WORLD, iters, mt_size);
    if (mt_size < 2) {
        return ft_finalize(1);
    }
    ft_quiesce(MPI_COMM_WORLD, mt_size - 1);
    if (mt_rank == mt_size - 1) {
        ft_die();
    }
    ft_wait_failed(MPI_COMM_WORLD, 1);
    MPIX_Comm_failure_ack(MPI_COMM_WORLD);
    int flag = 1;
    MPIX_Comm_agree(MPI_COMM_WORLD, &flag); /* every survivor has acknowledged */
    bench(MPI_COMM_WORLD, iters, mt_size - 1);
    return ft_finalize(mt_size - 1);
}
