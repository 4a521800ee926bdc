/*
 * mt_rate — message rate of several threads per rank under
 * MPI_THREAD_MULTIPLE, each thread ping-ponging on its own: what an MPI's
 * locking lets threads do at once. Plain C + pthreads + MPI; nothing here
 * knows ulmpi, so the same source builds with any MPI's mpicc.
 *
 *   mt_rate [-m peers|comms] [-t THREADS] [-s BYTES] [-n ROUNDTRIPS] [-w WARMUP]
 *
 *   peers  (default) rank 0 runs THREADS threads; thread i ping-pongs with
 *          rank i+1 (one thread there): run with THREADS + 1 ranks.
 *   comms  2 ranks, THREADS threads each; thread i of rank 0 ping-pongs
 *          with thread i of rank 1 on a communicator of its own (a dup of
 *          MPI_COMM_WORLD per thread).
 *
 * Every thread runs WARMUP round trips, then all wait at a barrier (threads
 * of rank 0 and MPI_Barrier), then ROUNDTRIPS timed round trips of blocking
 * MPI_Send/MPI_Recv with BYTES bytes (checked: the first byte carries the
 * round number). Rank 0 prints one line:
 *   mt_rate <mode> <threads> <bytes> <messages per second> <us per round trip>
 * where messages per second counts both directions of every thread's round
 * trips over the slowest thread's time, and the last field is the mean
 * round trip of one thread. Exit status 3 when a check failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 64

static int g_rank, g_size, g_threads = 2, g_comms = 0;
static long g_bytes = 0, g_rounds = 20000, g_warmup = 2000;
static MPI_Comm g_comm[MAX_THREADS];
static double g_time[MAX_THREADS];
static int g_bad[MAX_THREADS];
static pthread_barrier_t g_barrier;

static void rounds(int t, MPI_Comm comm, int peer, unsigned char* buf, long n, int first)
{
    long i;
    for (i = 0; i < n; ++i) {
        unsigned char mark = (unsigned char)(i + 1);
        if (first) {
            if (g_bytes > 0) {
                buf[0] = mark;
            }
            MPI_Send(buf, (int)g_bytes, MPI_BYTE, peer, t, comm);
            MPI_Recv(buf, (int)g_bytes, MPI_BYTE, peer, t, comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)g_bytes, MPI_BYTE, peer, t, comm, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)g_bytes, MPI_BYTE, peer, t, comm);
        }
        if (g_bytes > 0 && buf[0] != mark) {
            g_bad[t] = 1;
        }
    }
}

static void* body(void* arg)
{
    int t = (int)(long)arg;
    unsigned char* buf = calloc((size_t)(g_bytes > 0 ? g_bytes : 1), 1);
    MPI_Comm comm = g_comms ? g_comm[t] : MPI_COMM_WORLD;
    int peer = g_comms ? 1 - g_rank : (g_rank == 0 ? t + 1 : 0);
    int first = g_rank == 0;
    double t0;
    rounds(t, comm, peer, buf, g_warmup, first);
    pthread_barrier_wait(&g_barrier);
    t0 = MPI_Wtime();
    rounds(t, comm, peer, buf, g_rounds, first);
    g_time[t] = MPI_Wtime() - t0;
    free(buf);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: mt_rate [-m peers|comms] [-t THREADS] [-s BYTES] [-n ROUNDTRIPS] "
                    "[-w WARMUP]\n");
}

int main(int argc, char** argv)
{
    int provided = 0, opt, nthreads, i, bad = 0, allbad = 0;
    pthread_t th[MAX_THREADS];
    double slowest = 0, sum = 0;
    while ((opt = getopt(argc, argv, "m:t:s:n:w:h")) != -1) {
        switch (opt) {
        case 'm': g_comms = strcmp(optarg, "comms") == 0; break;
        case 't': g_threads = atoi(optarg); break;
        case 's': g_bytes = atol(optarg); break;
        case 'n': g_rounds = atol(optarg); break;
        case 'w': g_warmup = atol(optarg); break;
        default: usage(); return 2;
        }
    }
    if (g_threads < 1 || g_threads > MAX_THREADS || g_bytes < 0 || g_rounds < 1) {
        usage();
        return 2;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "mt_rate: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if ((g_comms && g_size != 2) || (!g_comms && g_size != g_threads + 1)) {
        if (g_rank == 0) {
            fprintf(stderr, "mt_rate: mode %s with %d threads needs %d ranks, not %d\n",
                    g_comms ? "comms" : "peers", g_threads, g_comms ? 2 : g_threads + 1, g_size);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (g_comms) {
        for (i = 0; i < g_threads; ++i) {
            MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[i]);
        }
    }
    /* Threads here: all of them on rank 0 and in comms mode, else one. */
    nthreads = (g_comms || g_rank == 0) ? g_threads : 1;
    pthread_barrier_init(&g_barrier, NULL, (unsigned)nthreads);
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < nthreads; ++i) {
        long t = (g_comms || g_rank == 0) ? i : g_rank - 1;
        pthread_create(&th[i], NULL, body, (void*)t);
    }
    for (i = 0; i < nthreads; ++i) {
        pthread_join(th[i], NULL);
    }
    for (i = 0; i < MAX_THREADS; ++i) {
        bad |= g_bad[i];
    }
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0) {
        for (i = 0; i < g_threads; ++i) {
            slowest = g_time[i] > slowest ? g_time[i] : slowest;
            sum += g_time[i];
        }
        printf("mt_rate %s %d %ld %.0f %.3f%s\n", g_comms ? "comms" : "peers", g_threads, g_bytes,
               2.0 * (double)g_rounds * g_threads / slowest,
               1e6 * sum / g_threads / (double)g_rounds, allbad ? " FAIL" : "");
    }
    if (g_comms) {
        for (i = 0; i < g_threads; ++i) {
            MPI_Comm_free(&g_comm[i]);
        }
    }
    pthread_barrier_destroy(&g_barrier);
    MPI_Finalize();
    return allbad ? 3 : 0;
}
