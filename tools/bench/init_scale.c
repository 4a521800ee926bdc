/* init_scale: what start-up costs at a given rank count (plain C99 + POSIX).
 *
 * Each rank times MPI_Init, then the first MPI_Allreduce after it (8 bytes,
 * the wire-up's real cost shows there when connections are made lazily),
 * then a second one (the steady state), reads its own memory figures from
 * /proc/self/status (VmRSS, RssAnon, RssShmem) and /proc/self/smaps_rollup
 * (Pss), and rank 0 prints one line of key=value pairs: averages and maxima
 * over the ranks. The time of the whole job (launch, MPI_Init, MPI_Finalize,
 * exit) is measured by whoever starts mpirun (tools/bench/scale).
 *
 * Memory is read after the collectives and a barrier, so every rank has
 * done the work a small program does and what MPI_Init mapped is in.
 * Exit status: 0 ok, 3 the allreduce gave a wrong sum.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Value in kB of the line "name:   123 kB" of a /proc file, or -1. */
static double proc_kb(const char *file, const char *name)
{
    FILE *f = fopen(file, "r");
    char line[256];
    size_t n = strlen(name);
    double v = -1.0;
    if (f == NULL) {
        return -1.0;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            v = strtod(line + n + 1, NULL);
            break;
        }
    }
    fclose(f);
    return v;
}

enum { F_INIT, F_FIRST, F_SECOND, F_RSS, F_ANON, F_SHMEM, F_PSS, F_COUNT };
static const char *const names[F_COUNT] = {"init_s", "first_allreduce_ms", "second_allreduce_ms",
                                           "rss_mb", "anon_mb", "shmem_mb", "pss_mb"};

int main(int argc, char **argv)
{
    double v[F_COUNT], sum[F_COUNT], max[F_COUNT];
    double t0 = now();
    double t;
    long in, out = 0;
    int rank, size, i, bad = 0;

    MPI_Init(&argc, &argv);
    v[F_INIT] = now() - t0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    in = rank;
    t = now();
    MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    v[F_FIRST] = (now() - t) * 1e3;
    bad |= out != (long)size * (size - 1) / 2;
    in = 1;
    t = now();
    MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    v[F_SECOND] = (now() - t) * 1e3;
    bad |= out != size;
    MPI_Barrier(MPI_COMM_WORLD);

    v[F_RSS] = proc_kb("/proc/self/status", "VmRSS") / 1024.0;
    v[F_ANON] = proc_kb("/proc/self/status", "RssAnon") / 1024.0;
    v[F_SHMEM] = proc_kb("/proc/self/status", "RssShmem") / 1024.0;
    v[F_PSS] = proc_kb("/proc/self/smaps_rollup", "Pss") / 1024.0;

    MPI_Reduce(v, sum, F_COUNT, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(v, max, F_COUNT, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ranks=%d", size);
        for (i = 0; i < F_COUNT; ++i) {
            printf(" %s_avg=%.4g %s_max=%.4g", names[i], sum[i] / size, names[i], max[i]);
        }
        printf("\n");
        fflush(stdout);
    }
    if (bad) {
        fprintf(stderr, "init_scale: rank %d: wrong allreduce sum\n", rank);
    }
    MPI_Finalize();
    return bad ? 3 : 0;
}
