/*
 * ulmpi_bench — point-to-point and collective micro-benchmarks for any MPI.
 *
 * Plain C99 + MPI; nothing here knows ulmpi, so the very same source is built
 * with each MPI's own compiler wrapper and the numbers are comparable.
 *
 * Tests (see docs/benchmarks.md for what each number means):
 *   pingpong   half round-trip time of a blocking Send/Recv exchange between
 *              ranks 0 and 1, in microseconds (like osu_latency).
 *   bw         streaming bandwidth 0 -> 1: a window of Isend/Irecv, then a
 *              small ack from 1 to 0, in MB/s = 1e6 bytes/s (like osu_bw).
 *   bibw       bidirectional bandwidth: ranks 0 and 1 each post a window of
 *              Irecv, then a window of Isend to the other, and wait for all;
 *              bytes moved both ways per second, in MB/s (like osu_bibw).
 *   barrier, allreduce (MPI_DOUBLE sum), bcast (root 0), alltoall,
 *   allgather, reduce_scatter (MPI_Reduce_scatter_block, MPI_DOUBLE sum):
 *              time per operation in microseconds; each rank averages over
 *              its loop, the reported value is the maximum over ranks.
 *
 * Every point runs in these steps:
 *   1. one checked exchange: buffers are filled with a pattern that depends on
 *      size, rank and slot, receive buffers are poisoned first, and the data
 *      is verified; a mismatch is reported (the point prints as FAIL) and the
 *      program goes on to the next point, then exits with 3;
 *   2. one probe iteration, then warm-up iterations (at most --warmup, scaled
 *      with size, and cut to a quarter of --target-time from the probe), timed
 *      to estimate the cost of one iteration (max over ranks);
 *   3. rank 0 chooses the iteration count (--iters scaled down with size, cut
 *      so that the loop takes about --target-time seconds, never below
 *      --min-iters) and broadcasts it, so every rank runs the same loop;
 *   4. the timed loop, between a barrier and the clock read on each rank.
 * Ranks other than 0 and 1 take part in the barriers and reductions of steps
 * 1-3 only during pingpong, bw and bibw.
 *
 * Output: a human table by default, or with -x one line per point:
 *   <test> <size-in-bytes> <value> <unit>
 * where unit is "us" or "MB/s", and value is "FAIL" when the data check failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KIB 1024L
#define MIB (1024L * 1024L)
#define MAX_SIZES 64
#define TAG_DATA 11
#define TAG_ACK 12
#define TAG_CHECK 13

static int g_thread_multiple = 0;

enum test_id {
    T_PINGPONG,
    T_BW,
    T_BIBW,
    T_BARRIER,
    T_ALLREDUCE,
    T_BCAST,
    T_ALLTOALL,
    T_ALLGATHER,
    T_REDUCE_SCATTER,
    T_COUNT
};

static const char *const test_names[T_COUNT] = {"pingpong",  "bw",        "bibw",
                                                "barrier",   "allreduce", "bcast",
                                                "alltoall",  "allgather", "reduce_scatter"};

struct options {
    int run[T_COUNT];
    long min_size;         /* -1: test default */
    long max_size;         /* -1: test default */
    long sizes[MAX_SIZES]; /* explicit list, overrides min/max */
    int nsizes;
    long iters;     /* iterations for small messages (<= 8 KiB), before scaling */
    long warmup;    /* warm-up iterations for small messages, before scaling */
    long min_iters; /* never fewer timed iterations than this */
    double target;  /* seconds per point; 0 = no time-based cut */
    int window;     /* bw, bibw: messages in flight per iteration (each way) */
    int machine;    /* one line per point */
    int timeout;    /* seconds; 0 = none */
};

static int g_rank;
static int g_size;
static int g_failed;
static struct options g_opt;

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

static void die(const char *msg)
{
    if (g_rank == 0) {
        fprintf(stderr, "ulmpi_bench: %s\n", msg);
    }
    MPI_Finalize();
    exit(2);
}

static void on_alarm(int sig)
{
    static const char msg[] = "ulmpi_bench: timeout reached, aborting\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more we can do */
    }
    _exit(124);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n == 0 ? 1 : n);
    if (p == NULL) {
        fprintf(stderr, "ulmpi_bench: rank %d: out of memory (%lu bytes)\n", g_rank,
                (unsigned long)n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 0, n == 0 ? 1 : n); /* touch every page before timing */
    return p;
}

/* Byte i of the pattern for (seed): position-dependent, so shifted, truncated or
 * swapped data is caught, not only missing data. */
static unsigned char pattern_byte(long i, unsigned seed)
{
    uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u + 0x9e3779b9u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (unsigned char)x;
}

static unsigned seed_of(long size, int rank, int slot)
{
    return (unsigned)size * 131u + (unsigned)rank * 7919u + (unsigned)slot * 104729u + 1u;
}

static void fill(unsigned char *buf, long n, unsigned seed)
{
    long i;
    for (i = 0; i < n; i++) {
        buf[i] = pattern_byte(i, seed);
    }
}

/* Poison: the complement of the expected pattern, so every byte differs. */
static void poison(unsigned char *buf, long n, unsigned seed)
{
    long i;
    for (i = 0; i < n; i++) {
        buf[i] = (unsigned char)~pattern_byte(i, seed);
    }
}

/* Returns 1 if good; reports the first bad byte otherwise. */
static int verify(const char *test, const unsigned char *buf, long n, unsigned seed, int from)
{
    long i;
    for (i = 0; i < n; i++) {
        unsigned char want = pattern_byte(i, seed);
        if (buf[i] != want) {
            fprintf(stderr,
                    "ulmpi_bench: %s: WRONG DATA on rank %d from rank %d, size %ld: "
                    "byte %ld is 0x%02x, expected 0x%02x\n",
                    test, g_rank, from, n, i, buf[i], want);
            return 0;
        }
    }
    return 1;
}

/* All ranks learn whether any rank saw bad data. */
static int agree_ok(int ok)
{
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        g_failed = 1;
    }
    return all_ok;
}

/* Iteration counts scaled down with size: full count up to 8 KiB, then in
 * proportion to 8 KiB / size, never below floor_ (nor above base). */
static long scaled(long base, long size, long floor_)
{
    long n = base;
    if (floor_ > base) {
        floor_ = base;
    }
    if (size > 8 * KIB) {
        n = (long)((double)base * (double)(8 * KIB) / (double)size);
    }
    return n < floor_ ? floor_ : n;
}

static double max_over_ranks(double t)
{
    double m = 0;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* Cut a wanted count so that it takes about `budget` seconds at `per` seconds
 * per iteration; never below `floor_` (nor above `want`). */
static long fit_count(long want, double per, double budget, long floor_)
{
    long n = want;
    if (g_opt.target > 0 && per > 0 && budget / per < (double)n) {
        n = (long)(budget / per);
    }
    if (n < floor_) {
        n = floor_ < want ? floor_ : want;
    }
    return n;
}

/* One benchmark loop: n iterations of the test on this rank's share. */
typedef void (*loop_fn)(void *ctx, long size, long n);

/* Probe, warm up, choose the iteration count, run the timed loop. Every rank
 * calls it (ranks with no part in a point-to-point test run empty loops).
 *   probe:  one iteration, max over ranks;
 *   warm:   up to `warm` iterations, cut to a quarter of --target-time;
 *   count:  rank 0 cuts `max_iters` to --target-time from the warm-up rate,
 *           not below --min-iters, and broadcasts it so all loops agree;
 *   timed:  returns this rank's elapsed seconds; *iters gets the count. */
static double measure(loop_fn f, void *ctx, long size, long warm, long max_iters, long *iters)
{
    double t0, probe, per;
    long n;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    f(ctx, size, 1);
    probe = max_over_ranks(MPI_Wtime() - t0);
    per = probe;

    n = warm > 1 ? fit_count(warm - 1, probe, 0.25 * g_opt.target, 1) : 0;
    if (n > 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        f(ctx, size, n);
        per = max_over_ranks(MPI_Wtime() - t0) / (double)n;
    }

    n = fit_count(max_iters, per, g_opt.target, g_opt.min_iters);
    MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    f(ctx, size, n);
    *iters = n;
    return MPI_Wtime() - t0;
}

static void header(int t, const char *what, const char *unit)
{
    if (g_rank != 0 || g_opt.machine) {
        return;
    }
    printf("# %s: %s, %d ranks\n", test_names[t], what, g_size);
    printf("# %12s %14s %10s\n", "size(B)", unit, "iters");
    fflush(stdout);
}

static void point(int t, long size, double value, const char *unit, long iters, int ok)
{
    if (g_rank != 0) {
        return;
    }
    if (g_opt.machine) {
        if (ok) {
            printf("%s %ld %.3f %s\n", test_names[t], size, value, unit);
        } else {
            printf("%s %ld FAIL %s\n", test_names[t], size, unit);
        }
    } else if (ok) {
        printf("  %12ld %14.3f %10ld\n", size, value, iters);
    } else {
        printf("  %12ld %14s %10s\n", size, "WRONG-DATA", "-");
    }
    fflush(stdout);
}

/* Sizes: the explicit list if given; else 0 (if min is 0), then powers of two
 * from max(min,1) up to max, then max itself if it is not a power of two. */
static int make_sizes(long *out, long def_min, long def_max)
{
    long lo = g_opt.min_size >= 0 ? g_opt.min_size : def_min;
    long hi = g_opt.max_size >= 0 ? g_opt.max_size : def_max;
    long s;
    int n = 0;
    if (g_opt.nsizes > 0) {
        memcpy(out, g_opt.sizes, sizeof(long) * (size_t)g_opt.nsizes);
        return g_opt.nsizes;
    }
    if (lo == 0) {
        out[n++] = 0;
    }
    for (s = 1; s <= hi && n < MAX_SIZES - 1; s *= 2) {
        if (s >= lo) {
            out[n++] = s;
        }
    }
    if (hi > 0 && n > 0 && out[n - 1] != hi && hi >= lo) {
        out[n++] = hi;
    }
    return n;
}

static long max_of(const long *v, int n)
{
    long m = 0;
    int i;
    for (i = 0; i < n; i++) {
        if (v[i] > m) {
            m = v[i];
        }
    }
    return m;
}

/* ------------------------------------------------------------------------ */
/* pingpong                                                                  */

struct pp_bufs {
    unsigned char *sbuf;
    unsigned char *rbuf;
};

static void pingpong_loop(void *ctx, long size, long n)
{
    struct pp_bufs *b = ctx;
    long i;
    MPI_Status st;
    if (g_rank == 0) {
        for (i = 0; i < n; i++) {
            MPI_Send(b->sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(b->rbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &st);
        }
    } else if (g_rank == 1) {
        for (i = 0; i < n; i++) {
            MPI_Recv(b->rbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &st);
            MPI_Send(b->sbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
        }
    }
}

/* The checked exchange: each side sends its own pattern into a poisoned buffer. */
static int pingpong_check(struct pp_bufs *b, long size)
{
    int peer = 1 - g_rank;
    MPI_Status st;
    if (g_rank > 1) {
        return 1;
    }
    fill(b->sbuf, size, seed_of(size, g_rank, 0));
    poison(b->rbuf, size, seed_of(size, peer, 0));
    if (g_rank == 0) {
        MPI_Send(b->sbuf, (int)size, MPI_BYTE, 1, TAG_CHECK, MPI_COMM_WORLD);
        MPI_Recv(b->rbuf, (int)size, MPI_BYTE, 1, TAG_CHECK, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(b->rbuf, (int)size, MPI_BYTE, 0, TAG_CHECK, MPI_COMM_WORLD, &st);
        MPI_Send(b->sbuf, (int)size, MPI_BYTE, 0, TAG_CHECK, MPI_COMM_WORLD);
    }
    return verify("pingpong", b->rbuf, size, seed_of(size, peer, 0), peer);
}

static void run_pingpong(void)
{
    long sizes[MAX_SIZES];
    int ns = make_sizes(sizes, 0, 4 * MIB);
    long maxs = max_of(sizes, ns);
    struct pp_bufs b;
    int k;

    b.sbuf = xmalloc((size_t)maxs);
    b.rbuf = xmalloc((size_t)maxs);
    header(T_PINGPONG, "half round-trip time, ranks 0 <-> 1", "latency(us)");
    for (k = 0; k < ns; k++) {
        long size = sizes[k];
        long n = 0;
        double t;
        if (!agree_ok(pingpong_check(&b, size))) {
            point(T_PINGPONG, size, 0, "us", 0, 0);
            continue;
        }
        t = measure(pingpong_loop, &b, size, scaled(g_opt.warmup, size, 2),
                    scaled(g_opt.iters, size, 100), &n);
        point(T_PINGPONG, size, t * 1e6 / (2.0 * (double)n), "us", n, 1);
    }
    free(b.sbuf);
    free(b.rbuf);
}

/* ------------------------------------------------------------------------ */
/* bw                                                                        */

/* A windowed bandwidth test over the sizes: each size checked once (every
 * message of a window carries its own pattern), then measured; one
 * iteration moves a whole window each way, so a tenth of the pingpong
 * counts. `ways` 2: both directions, timed at the slower rank (both are done
 * only then). */
static void window_sweep(int test, const long *sizes, int ns, loop_fn loop,
                         int (*check)(void *ctx, long size), void *ctx, int ways)
{
    int k;
    for (k = 0; k < ns; k++) {
        long size = sizes[k];
        long n = 0;
        double t;
        if (!agree_ok(check(ctx, size))) {
            point(test, size, 0, "MB/s", 0, 0);
            continue;
        }
        t = measure(loop, ctx, size, scaled(g_opt.warmup / 10 > 2 ? g_opt.warmup / 10 : 2, size, 2),
                    scaled(g_opt.iters / 10 > 1 ? g_opt.iters / 10 : 1, size, 10), &n);
        if (ways > 1) {
            t = max_over_ranks(t);
        }
        point(test, size, (double)ways * (double)size * g_opt.window * (double)n / t / 1e6, "MB/s",
              n, 1);
    }
}

struct bw_bufs {
    unsigned char *sbuf;  /* one send buffer, read by all sends of a window */
    unsigned char *rbufs; /* window distinct receive buffers of max size */
    MPI_Request *reqs;
    MPI_Status *stats; /* an array, not MPI_STATUSES_IGNORE: like osu_bw, and
                        * gcc warns wrongly on MPICH's ignore constant */
    long stride;
};

/* n iterations of: a window of sends 0 -> 1, then a 1-byte ack 1 -> 0. */
static void bw_loop(void *ctx, long size, long n)
{
    struct bw_bufs *b = ctx;
    int w = g_opt.window;
    int j;
    long i;
    char ack = 0;
    MPI_Status st;
    for (i = 0; i < n; i++) {
        if (g_rank == 0) {
            for (j = 0; j < w; j++) {
                MPI_Isend(b->sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &b->reqs[j]);
            }
            MPI_Waitall(w, b->reqs, b->stats);
            MPI_Recv(&ack, 1, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, &st);
        } else if (g_rank == 1) {
            for (j = 0; j < w; j++) {
                MPI_Irecv(b->rbufs + (long)j * b->stride, (int)size, MPI_BYTE, 0, TAG_DATA,
                          MPI_COMM_WORLD, &b->reqs[j]);
            }
            MPI_Waitall(w, b->reqs, b->stats);
            MPI_Send(&ack, 1, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    }
}

/* The checked window: every message of the window carries its own pattern,
 * so a message landing in the wrong buffer (broken ordering) is caught. */
static int bw_check(void *ctx, long size)
{
    struct bw_bufs *b = ctx;
    int w = g_opt.window;
    int j;
    int ok = 1;
    char ack = 0;
    MPI_Status st;
    unsigned char *sends = NULL;
    if (g_rank == 0) {
        sends = xmalloc((size_t)(size * w));
        for (j = 0; j < w; j++) {
            fill(sends + (long)j * size, size, seed_of(size, 0, j));
        }
        for (j = 0; j < w; j++) {
            MPI_Isend(sends + (long)j * size, (int)size, MPI_BYTE, 1, TAG_CHECK, MPI_COMM_WORLD,
                      &b->reqs[j]);
        }
        MPI_Waitall(w, b->reqs, b->stats);
        MPI_Recv(&ack, 1, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, &st);
        free(sends);
    } else if (g_rank == 1) {
        for (j = 0; j < w; j++) {
            poison(b->rbufs + (long)j * b->stride, size, seed_of(size, 0, j));
            MPI_Irecv(b->rbufs + (long)j * b->stride, (int)size, MPI_BYTE, 0, TAG_CHECK,
                      MPI_COMM_WORLD, &b->reqs[j]);
        }
        MPI_Waitall(w, b->reqs, b->stats);
        MPI_Send(&ack, 1, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
        for (j = 0; j < w && ok; j++) {
            ok = verify("bw", b->rbufs + (long)j * b->stride, size, seed_of(size, 0, j), 0);
        }
    }
    return ok;
}

static void run_bw(void)
{
    long sizes[MAX_SIZES];
    int ns = make_sizes(sizes, 1, 4 * MIB);
    long maxs = max_of(sizes, ns);
    struct bw_bufs b;

    b.stride = maxs;
    b.sbuf = xmalloc((size_t)maxs);
    b.rbufs = g_rank == 1 ? xmalloc((size_t)(maxs * g_opt.window)) : NULL;
    b.reqs = xmalloc(sizeof(MPI_Request) * (size_t)g_opt.window);
    b.stats = xmalloc(sizeof(MPI_Status) * (size_t)g_opt.window);
    if (g_rank == 0) {
        fill(b.sbuf, maxs, 12345u);
    }

    {
        char what[96];
        snprintf(what, sizeof what, "streaming bandwidth 0 -> 1, window %d, MB/s = 1e6 B/s",
                 g_opt.window);
        header(T_BW, what, "bw(MB/s)");
    }
    window_sweep(T_BW, sizes, ns, bw_loop, bw_check, &b, 1);
    free(b.sbuf);
    free(b.rbufs);
    free(b.reqs);
    free(b.stats);
}

/* ------------------------------------------------------------------------ */
/* bibw                                                                      */

struct bibw_bufs {
    unsigned char *sbuf;  /* one send buffer, read by all sends of a window */
    unsigned char *rbufs; /* window distinct receive buffers of max size */
    MPI_Request *reqs;    /* window receives, then window sends */
    MPI_Status *stats;
    long stride;
};

/* n iterations of: each of ranks 0 and 1 posts a window of receives from the
 * other, sends it a window, and waits for all of them. */
static void bibw_loop(void *ctx, long size, long n)
{
    struct bibw_bufs *b = ctx;
    int w = g_opt.window;
    int peer = 1 - g_rank;
    int j;
    long i;
    if (g_rank > 1) {
        return;
    }
    for (i = 0; i < n; i++) {
        for (j = 0; j < w; j++) {
            MPI_Irecv(b->rbufs + (long)j * b->stride, (int)size, MPI_BYTE, peer, TAG_DATA,
                      MPI_COMM_WORLD, &b->reqs[j]);
        }
        for (j = 0; j < w; j++) {
            MPI_Isend(b->sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &b->reqs[w + j]);
        }
        MPI_Waitall(2 * w, b->reqs, b->stats);
    }
}

/* The checked window, both ways: every message carries its own pattern. */
static int bibw_check(void *ctx, long size)
{
    struct bibw_bufs *b = ctx;
    int w = g_opt.window;
    int peer = 1 - g_rank;
    int j;
    int ok = 1;
    unsigned char *sends;
    if (g_rank > 1) {
        return 1;
    }
    sends = xmalloc((size_t)(size * w));
    for (j = 0; j < w; j++) {
        fill(sends + (long)j * size, size, seed_of(size, g_rank, j));
        poison(b->rbufs + (long)j * b->stride, size, seed_of(size, peer, j));
        MPI_Irecv(b->rbufs + (long)j * b->stride, (int)size, MPI_BYTE, peer, TAG_CHECK,
                  MPI_COMM_WORLD, &b->reqs[j]);
    }
    for (j = 0; j < w; j++) {
        MPI_Isend(sends + (long)j * size, (int)size, MPI_BYTE, peer, TAG_CHECK, MPI_COMM_WORLD,
                  &b->reqs[w + j]);
    }
    MPI_Waitall(2 * w, b->reqs, b->stats);
    for (j = 0; j < w && ok; j++) {
        ok = verify("bibw", b->rbufs + (long)j * b->stride, size, seed_of(size, peer, j), peer);
    }
    free(sends);
    return ok;
}

static void run_bibw(void)
{
    long sizes[MAX_SIZES];
    int ns = make_sizes(sizes, 1, 4 * MIB);
    long maxs = max_of(sizes, ns);
    struct bibw_bufs b;

    b.stride = maxs;
    b.sbuf = xmalloc((size_t)maxs);
    b.rbufs = g_rank <= 1 ? xmalloc((size_t)(maxs * g_opt.window)) : NULL;
    b.reqs = xmalloc(sizeof(MPI_Request) * 2 * (size_t)g_opt.window);
    b.stats = xmalloc(sizeof(MPI_Status) * 2 * (size_t)g_opt.window);
    fill(b.sbuf, maxs, 54321u + (unsigned)g_rank);

    {
        char what[96];
        snprintf(what, sizeof what,
                 "bidirectional bandwidth 0 <-> 1, window %d each way, MB/s = 1e6 B/s",
                 g_opt.window);
        header(T_BIBW, what, "bw(MB/s)");
    }
    window_sweep(T_BIBW, sizes, ns, bibw_loop, bibw_check, &b, 2);
    free(b.sbuf);
    free(b.rbufs);
    free(b.reqs);
    free(b.stats);
}

/* ------------------------------------------------------------------------ */
/* collectives                                                               */

struct coll_bufs {
    unsigned char *a;
    unsigned char *b;
};

struct coll_ctx {
    int t;
    struct coll_bufs *cb;
};

static void coll_op(int t, struct coll_bufs *cb, long size);

static void coll_loop(void *ctx, long size, long n)
{
    struct coll_ctx *c = ctx;
    long i;
    for (i = 0; i < n; i++) {
        coll_op(c->t, c->cb, size);
    }
}

/* One operation of collective test t on size bytes (per rank / per peer). */
static void coll_op(int t, struct coll_bufs *cb, long size)
{
    switch (t) {
    case T_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case T_ALLREDUCE:
        MPI_Allreduce(cb->a, cb->b, (int)(size / (long)sizeof(double)), MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD);
        break;
    case T_BCAST:
        MPI_Bcast(cb->a, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case T_ALLTOALL:
        MPI_Alltoall(cb->a, (int)size, MPI_BYTE, cb->b, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case T_ALLGATHER:
        MPI_Allgather(cb->a, (int)size, MPI_BYTE, cb->b, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case T_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(cb->a, cb->b, (int)(size / (long)sizeof(double)), MPI_DOUBLE,
                                 MPI_SUM, MPI_COMM_WORLD);
        break;
    default:
        break;
    }
}

/* One checked operation; returns this rank's verdict. */
static int coll_check(int t, struct coll_bufs *cb, long size)
{
    int ok = 1;
    long i;
    int p;
    switch (t) {
    case T_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        return 1;
    case T_ALLREDUCE: {
        /* x[i] = (rank+1)*(i%97+1): the sum is exact in double */
        long n = size / (long)sizeof(double);
        double *in = (double *)(void *)cb->a;
        double *out = (double *)(void *)cb->b;
        double ranks = (double)g_size * (double)(g_size + 1) / 2.0;
        for (i = 0; i < n; i++) {
            in[i] = (double)(g_rank + 1) * (double)(i % 97 + 1);
            out[i] = -1.0;
        }
        coll_op(t, cb, size);
        for (i = 0; i < n && ok; i++) {
            double want = ranks * (double)(i % 97 + 1);
            if (out[i] != want) {
                fprintf(stderr,
                        "ulmpi_bench: allreduce: WRONG DATA on rank %d, %ld doubles: "
                        "element %ld is %.17g, expected %.17g\n",
                        g_rank, n, i, out[i], want);
                ok = 0;
            }
        }
        return ok;
    }
    case T_BCAST:
        if (g_rank == 0) {
            fill(cb->a, size, seed_of(size, 0, 0));
        } else {
            poison(cb->a, size, seed_of(size, 0, 0));
        }
        coll_op(t, cb, size);
        return verify("bcast", cb->a, size, seed_of(size, 0, 0), 0);
    case T_ALLTOALL:
        for (p = 0; p < g_size; p++) {
            fill(cb->a + (long)p * size, size, seed_of(size, g_rank, p));
            poison(cb->b + (long)p * size, size, seed_of(size, p, g_rank));
        }
        coll_op(t, cb, size);
        for (p = 0; p < g_size && ok; p++) {
            ok = verify("alltoall", cb->b + (long)p * size, size, seed_of(size, p, g_rank), p);
        }
        return ok;
    case T_ALLGATHER:
        fill(cb->a, size, seed_of(size, g_rank, 0));
        for (p = 0; p < g_size; p++) {
            poison(cb->b + (long)p * size, size, seed_of(size, p, 0));
        }
        coll_op(t, cb, size);
        for (p = 0; p < g_size && ok; p++) {
            ok = verify("allgather", cb->b + (long)p * size, size, seed_of(size, p, 0), p);
        }
        return ok;
    case T_REDUCE_SCATTER: {
        /* block of rank q, element i: x = (rank+1)*((q*n+i)%97+1), summed exactly */
        long n = size / (long)sizeof(double);
        double *in = (double *)(void *)cb->a;
        double *out = (double *)(void *)cb->b;
        double ranks = (double)g_size * (double)(g_size + 1) / 2.0;
        for (i = 0; i < n * g_size; i++) {
            in[i] = (double)(g_rank + 1) * (double)(i % 97 + 1);
        }
        for (i = 0; i < n; i++) {
            out[i] = -1.0;
        }
        coll_op(t, cb, size);
        for (i = 0; i < n && ok; i++) {
            double want = ranks * (double)(((long)g_rank * n + i) % 97 + 1);
            if (out[i] != want) {
                fprintf(stderr,
                        "ulmpi_bench: reduce_scatter: WRONG DATA on rank %d, %ld doubles per "
                        "rank: element %ld is %.17g, expected %.17g\n",
                        g_rank, n, i, out[i], want);
                ok = 0;
            }
        }
        return ok;
    }
    default:
        return 1;
    }
}

static void run_coll(int t)
{
    long def_sizes[2];
    int ndef = 1;
    long sizes[MAX_SIZES];
    int ns;
    long maxs;
    struct coll_bufs cb;
    long per_rank_factor =
        t == T_ALLTOALL || t == T_ALLGATHER || t == T_REDUCE_SCATTER ? g_size : 1;
    int k;
    const char *what = "";

    switch (t) {
    case T_BARRIER:
        def_sizes[0] = 0;
        what = "time per MPI_Barrier, max over ranks";
        break;
    case T_ALLREDUCE:
        def_sizes[0] = 8;
        def_sizes[1] = 64 * KIB;
        ndef = 2;
        what = "time per MPI_Allreduce (MPI_DOUBLE, MPI_SUM), max over ranks";
        break;
    case T_BCAST:
        def_sizes[0] = 1 * MIB;
        what = "time per MPI_Bcast from rank 0, max over ranks";
        break;
    case T_ALLGATHER:
        def_sizes[0] = 8;
        def_sizes[1] = 64 * KIB;
        ndef = 2;
        what = "time per MPI_Allgather, size = bytes per rank, max over ranks";
        break;
    case T_REDUCE_SCATTER:
        def_sizes[0] = 8;
        def_sizes[1] = 64 * KIB;
        ndef = 2;
        what = "time per MPI_Reduce_scatter_block (MPI_DOUBLE, MPI_SUM), size = bytes of each "
               "rank's block, max over ranks";
        break;
    default:
        def_sizes[0] = 8;
        what = "time per MPI_Alltoall, size = bytes per peer, max over ranks";
        break;
    }
    if (t == T_BARRIER) {
        sizes[0] = 0;
        ns = 1;
    } else if (g_opt.nsizes > 0 || g_opt.min_size >= 0 || g_opt.max_size >= 0) {
        ns = make_sizes(sizes, def_sizes[0], def_sizes[ndef - 1]);
    } else {
        memcpy(sizes, def_sizes, sizeof(long) * (size_t)ndef);
        ns = ndef;
    }
    maxs = max_of(sizes, ns);
    cb.a = xmalloc((size_t)(maxs * per_rank_factor));
    cb.b = xmalloc((size_t)(maxs * per_rank_factor));

    header(t, what, "time(us)");
    for (k = 0; k < ns; k++) {
        long size = sizes[k];
        long n = 0;
        double t1;
        struct coll_ctx ctx;

        if ((t == T_ALLREDUCE || t == T_REDUCE_SCATTER) && size % (long)sizeof(double) != 0) {
            continue; /* whole doubles only */
        }
        if (!agree_ok(coll_check(t, &cb, size))) {
            point(t, size, 0, "us", 0, 0);
            continue;
        }
        ctx.t = t;
        ctx.cb = &cb;
        t1 = measure(coll_loop, &ctx, size, scaled(g_opt.warmup, size * per_rank_factor, 2),
                     scaled(g_opt.iters, size * per_rank_factor, 100), &n);
        point(t, size, max_over_ranks(t1 * 1e6 / (double)n), "us", n, 1);
    }
    free(cb.a);
    free(cb.b);
}

/* ------------------------------------------------------------------------ */
/* command line                                                              */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: mpirun -n N ulmpi_bench [options] TEST [TEST...]\n"
        "tests: pingpong bw bibw barrier allreduce bcast alltoall allgather reduce_scatter\n"
        "       | p2p (= pingpong bw bibw) | coll (= the six collectives) | all | info\n"
        "options:\n"
        "  -m, --min-size N     smallest size (pingpong 0, bw 1); K/M suffixes = KiB/MiB\n"
        "  -M, --max-size N     largest size (default 4M); sizes are powers of two\n"
        "  -s, --sizes A,B,...  explicit size list (bytes; K/M suffixes), overrides -m/-M\n"
        "                       (collectives default: allreduce 8,64K  bcast 1M\n"
        "                        alltoall 8 per peer; allgather, reduce_scatter 8,64K\n"
        "                        per rank; -m/-M/-s apply to them too)\n"
        "  -i, --iters N        timed iterations up to 8 KiB (default 10000; bw: N/10 windows),\n"
        "                       scaled by 8 KiB/size above that, not below 100 (bw: 10)\n"
        "  -w, --warmup N       warm-up iterations up to 8 KiB (default 200; bw: N/10)\n"
        "      --min-iters N    never fewer timed iterations after the time cut (default 10)\n"
        "  -T, --target-time S  cut iterations so a point takes about S seconds\n"
        "                       (default 0.5; 0 = never cut)\n"
        "  -W, --window N       bw, bibw: messages in flight per iteration, each way (default 64)\n"
        "  -x, --machine        one line per point: TEST SIZE VALUE UNIT\n"
        "      --timeout S      each rank exits with 124 after S seconds (default 0 = off)\n"
        "      --thread-multiple  MPI_Init_thread(MPI_THREAD_MULTIPLE) instead of MPI_Init\n"
        "  -h, --help\n"
        "info prints the MPI library's version line.\n"
        "Exit status: 0 ok, 2 usage/setup error, 3 wrong data seen.\n");
}

static long parse_size(const char *s)
{
    char *end = NULL;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || v < 0) {
        return -1;
    }
    if (*end == 'k' || *end == 'K') {
        v *= KIB;
        end++;
    } else if (*end == 'm' || *end == 'M') {
        v *= MIB;
        end++;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > 1024 * MIB) {
        return -1;
    }
    return v;
}

static int parse_sizes(const char *s)
{
    char buf[1024];
    char *tok;
    char *save = NULL;
    if (strlen(s) >= sizeof buf) {
        return 0;
    }
    strcpy(buf, s);
    g_opt.nsizes = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        long v = parse_size(tok);
        if (v < 0 || g_opt.nsizes >= MAX_SIZES) {
            return 0;
        }
        g_opt.sizes[g_opt.nsizes++] = v;
    }
    return g_opt.nsizes > 0;
}

static int is_opt(const char *a, const char *s, const char *l)
{
    return strcmp(a, s) == 0 || strcmp(a, l) == 0;
}

/* Returns 1 to go on, 0 to stop quietly (help/info), -1 on error. */
static int parse_args(int argc, char **argv, int *want_info)
{
    int i, t;
    int any = 0;
    memset(&g_opt, 0, sizeof g_opt);
    g_opt.min_size = -1;
    g_opt.max_size = -1;
    g_opt.iters = 10000;
    g_opt.warmup = 200;
    g_opt.min_iters = 10;
    g_opt.target = 0.5;
    g_opt.window = 64;
    *want_info = 0;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (is_opt(a, "-h", "--help")) {
            if (g_rank == 0) {
                usage(stdout);
            }
            return 0;
        } else if (is_opt(a, "-x", "--machine")) {
            g_opt.machine = 1;
            takes = 0;
        } else if (strcmp(a, "--thread-multiple") == 0) {
            takes = 0; /* read in main() before MPI_Init_thread */
        } else if (a[0] == '-' && v == NULL) {
            if (g_rank == 0) {
                fprintf(stderr, "ulmpi_bench: %s needs a value\n", a);
            }
            return -1;
        } else if (is_opt(a, "-m", "--min-size")) {
            g_opt.min_size = parse_size(v);
            if (g_opt.min_size < 0) {
                return -1;
            }
        } else if (is_opt(a, "-M", "--max-size")) {
            g_opt.max_size = parse_size(v);
            if (g_opt.max_size < 0) {
                return -1;
            }
        } else if (is_opt(a, "-s", "--sizes")) {
            if (!parse_sizes(v)) {
                return -1;
            }
        } else if (is_opt(a, "-i", "--iters")) {
            g_opt.iters = atol(v);
        } else if (is_opt(a, "-w", "--warmup")) {
            g_opt.warmup = atol(v);
        } else if (strcmp(a, "--min-iters") == 0) {
            g_opt.min_iters = atol(v);
        } else if (is_opt(a, "-T", "--target-time")) {
            g_opt.target = atof(v);
        } else if (is_opt(a, "-W", "--window")) {
            g_opt.window = atoi(v);
        } else if (strcmp(a, "--timeout") == 0) {
            g_opt.timeout = atoi(v);
        } else if (a[0] == '-') {
            if (g_rank == 0) {
                fprintf(stderr, "ulmpi_bench: unknown option %s\n", a);
            }
            return -1;
        } else {
            takes = 0;
            any = 1;
            if (strcmp(a, "all") == 0) {
                for (t = 0; t < T_COUNT; t++) {
                    g_opt.run[t] = 1;
                }
            } else if (strcmp(a, "p2p") == 0) {
                g_opt.run[T_PINGPONG] = g_opt.run[T_BW] = g_opt.run[T_BIBW] = 1;
            } else if (strcmp(a, "coll") == 0) {
                for (t = T_BARRIER; t < T_COUNT; t++) {
                    g_opt.run[t] = 1;
                }
            } else if (strcmp(a, "info") == 0) {
                *want_info = 1;
            } else {
                int found = 0;
                for (t = 0; t < T_COUNT; t++) {
                    if (strcmp(a, test_names[t]) == 0) {
                        g_opt.run[t] = 1;
                        found = 1;
                    }
                }
                if (!found) {
                    if (g_rank == 0) {
                        fprintf(stderr, "ulmpi_bench: unknown test %s\n", a);
                    }
                    return -1;
                }
            }
        }
        i += takes;
    }
    if (!any) {
        if (g_rank == 0) {
            usage(stderr);
        }
        return -1;
    }
    if (g_opt.iters < 1 || g_opt.warmup < 0 || g_opt.min_iters < 1 || g_opt.window < 1 ||
        g_opt.window > 4096 || g_opt.target < 0) {
        if (g_rank == 0) {
            fprintf(stderr, "ulmpi_bench: bad iteration, window or time value\n");
        }
        return -1;
    }
    if (g_opt.iters < g_opt.min_iters) {
        g_opt.min_iters = g_opt.iters;
    }
    return 1;
}

static void print_info(void)
{
    if (g_rank != 0) {
        return;
    }
#if defined(MPI_VERSION) && MPI_VERSION >= 3
    {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1];
        int len = 0;
        char *nl;
        MPI_Get_library_version(lib, &len);
        lib[len < MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING] = '\0';
        nl = strchr(lib, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        printf("library: %s\n", lib);
    }
#else
    printf("library: unknown (MPI_VERSION < 3)\n");
#endif
    printf("ranks: %d\n", g_size);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int want_info = 0;
    int rc;
    int t;

    /* --thread-multiple: the same tests after MPI_Init_thread(MULTIPLE), to
     * measure what thread safety costs one thread (docs/threads.md). */
    for (t = 1; t < argc; ++t) {
        if (strcmp(argv[t], "--thread-multiple") == 0) {
            g_thread_multiple = 1;
        }
    }
    if (g_thread_multiple) {
        int provided = MPI_THREAD_SINGLE;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "ulmpi_bench: MPI_THREAD_MULTIPLE asked, %d provided\n", provided);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    rc = parse_args(argc, argv, &want_info);
    if (rc < 0) {
        die("bad arguments (see --help)");
    }
    if (rc == 0) {
        MPI_Finalize();
        return 0;
    }
    if (g_opt.timeout > 0) {
        signal(SIGALRM, on_alarm);
        alarm((unsigned)g_opt.timeout);
    }
    if (want_info) {
        print_info();
    }
    if ((g_opt.run[T_PINGPONG] || g_opt.run[T_BW] || g_opt.run[T_BIBW]) && g_size < 2) {
        die("pingpong, bw and bibw need at least 2 ranks");
    }

    for (t = 0; t < T_COUNT; t++) {
        if (!g_opt.run[t]) {
            continue;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (t == T_PINGPONG) {
            run_pingpong();
        } else if (t == T_BW) {
            run_bw();
        } else if (t == T_BIBW) {
            run_bibw();
        } else {
            run_coll(t);
        }
    }

    MPI_Finalize();
    return g_failed ? 3 : 0;
}
