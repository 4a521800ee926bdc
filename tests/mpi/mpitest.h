/*
 * mpitest.h -- helpers shared by the MPI test programs (tests/mpi, tests/fault).
 *
 * The MPICH convention: a program counts its errors, mt_finalize() gathers
 * the counts at rank 0 (point-to-point only: the library has no collectives
 * yet), and rank 0 prints "No Errors" when the total is zero, otherwise
 * " Found N errors". Every failed check prints one line naming the rank, the
 * file and line and what was wrong. The process also exits non-zero when it
 * saw an error itself, so the runner sees failures twice.
 *
 * Reserved: tags MT_TAG_BARRIER and MT_TAG_FINALIZE on MPI_COMM_WORLD. A test
 * must not have a wildcard-tag receive pending when it calls mt_barrier().
 */
#ifndef ULMPI_TESTS_MPITEST_H
#define ULMPI_TESTS_MPITEST_H

#include <mpi.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MT_TAG_BARRIER 2147483000
#define MT_TAG_FINALIZE 2147483001

#define MT_UNUSED __attribute__((unused))
static int mt_errors MT_UNUSED = 0;
static int mt_rank MT_UNUSED = -1;
static int mt_size MT_UNUSED = 0;
static int mt_verbose MT_UNUSED = 0;

static inline const char* mt_errname(int code)
{
    static char buf[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (code < 0 || MPI_Error_string(code, buf, &len) != MPI_SUCCESS) {
        return "?";
    }
    return buf;
}

static inline void mt_fail(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void mt_fail(const char* file, int line, const char* fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ++mt_errors;
    if (mt_errors <= 50) {
        fprintf(stderr, "[%d] %s:%d: %s\n", mt_rank, file, line, msg);
        fflush(stderr);
    }
}

/* MT_CHECK(condition, "printf format", args...) */
#define MT_CHECK(cond, ...)                                                                     \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            mt_fail(__FILE__, __LINE__, __VA_ARGS__);                                           \
        }                                                                                       \
    } while (0)

/* An MPI call that must succeed. */
#define MT_OK(call)                                                                             \
    do {                                                                                        \
        int mt_rc_ = (call);                                                                    \
        if (mt_rc_ != MPI_SUCCESS) {                                                            \
            mt_fail(__FILE__, __LINE__, "%s returned %d (%s)", #call, mt_rc_,                   \
                    mt_errname(mt_rc_));                                                        \
        }                                                                                       \
    } while (0)

/* An MPI call (under MPI_ERRORS_RETURN) that must fail with error class cls. */
#define MT_ERR(cls, call)                                                                       \
    do {                                                                                        \
        int mt_rc_ = (call);                                                                    \
        int mt_cls_ = -1;                                                                       \
        if (mt_rc_ != MPI_SUCCESS) {                                                            \
            MPI_Error_class(mt_rc_, &mt_cls_);                                                  \
        }                                                                                       \
        if (mt_cls_ != (cls)) {                                                                 \
            mt_fail(__FILE__, __LINE__, "%s returned %d (class %d, %s), expected %s", #call,    \
                    mt_rc_, mt_cls_, mt_errname(mt_cls_), #cls);                                \
        }                                                                                       \
    } while (0)

/* MT_THREAD_LEVEL=multiple in the environment: MPI_Init_thread with
 * MPI_THREAD_MULTIPLE (the program's calls stay in one thread; what changes
 * is the library's mode, e.g. the constructors' confirm round). */
static inline void mt_init(int* argc, char*** argv)
{
    const char* level = getenv("MT_THREAD_LEVEL");
    if (level != NULL && strcmp(level, "multiple") == 0) {
        int provided = 0;
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(argc, argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    mt_verbose = getenv("MT_VERBOSE") != NULL;
    /* Under runtests.py: name the job, so that the runner can check that
     * nothing of it is left in /dev/shm. */
    if (mt_rank == 0 && getenv("ULMPI_TEST_MARKER") != NULL && getenv("ULMPI_JOBID") != NULL) {
        printf("jobid=%s\n", getenv("ULMPI_JOBID"));
        fflush(stdout);
    }
}

static inline void mt_sleep_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* A barrier out of point-to-point messages (gather at 0, then release). */
static inline void mt_barrier(void)
{
    int i;
    if (mt_rank == 0) {
        for (i = 1; i < mt_size; ++i) {
            MPI_Recv(NULL, 0, MPI_BYTE, i, MT_TAG_BARRIER, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        for (i = 1; i < mt_size; ++i) {
            MPI_Send(NULL, 0, MPI_BYTE, i, MT_TAG_BARRIER, MPI_COMM_WORLD);
        }
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, 0, MT_TAG_BARRIER, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, MT_TAG_BARRIER, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* Gathers the error counts, prints the verdict at rank 0, finalizes.
 * Returns the exit status for main(). */
static inline int mt_finalize(void)
{
    int total = mt_errors;
    int i;
    /* Whatever handler the test left on MPI_COMM_WORLD, these must work. */
    if (mt_rank == 0) {
        for (i = 1; i < mt_size; ++i) {
            int e = 0;
            MPI_Recv(&e, 1, MPI_INT, i, MT_TAG_FINALIZE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += e;
        }
        if (total == 0) {
            printf("No Errors\n");
        } else {
            printf(" Found %d errors\n", total);
        }
        fflush(stdout);
    } else {
        MPI_Send(&mt_errors, 1, MPI_INT, 0, MT_TAG_FINALIZE, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return mt_errors == 0 ? 0 : 1;
}

/* Deterministic data: byte i of a buffer made with `seed`. */
static inline unsigned char mt_byte(unsigned seed, size_t i)
{
    uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + (uint64_t)i * 0x2545f4914f6cdd1dULL;
    x ^= x >> 29;
    return (unsigned char)(x ^ (x >> 17) ^ (i >> 8));
}

static inline void mt_fill(void* buf, size_t n, unsigned seed)
{
    unsigned char* p = (unsigned char*)buf;
    size_t i;
    for (i = 0; i < n; ++i) {
        p[i] = mt_byte(seed, i);
    }
}

/* Index of the first byte that differs from mt_fill(seed), or -1. */
static inline long mt_verify(const void* buf, size_t n, unsigned seed)
{
    const unsigned char* p = (const unsigned char*)buf;
    size_t i;
    for (i = 0; i < n; ++i) {
        if (p[i] != mt_byte(seed, i)) {
            return (long)i;
        }
    }
    return -1;
}

/* Checks a buffer against mt_fill(seed) and reports the first difference. */
#define MT_VERIFY(buf, n, seed, ...)                                                            \
    do {                                                                                        \
        long mt_at_ = mt_verify((buf), (size_t)(n), (seed));                                    \
        if (mt_at_ >= 0) {                                                                      \
            char mt_what_[256];                                                                 \
            snprintf(mt_what_, sizeof mt_what_, __VA_ARGS__);                                   \
            mt_fail(__FILE__, __LINE__, "%s: data differs at byte %ld of %zu", mt_what_,        \
                    mt_at_, (size_t)(n));                                                       \
        }                                                                                       \
    } while (0)

/* Received size in bytes of a status (MPI_Get_count with MPI_BYTE). */
static inline int mt_count(const MPI_Status* st)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    return n;
}

/* A small deterministic generator (xorshift64*), the same on every rank. */
typedef struct {
    uint64_t s;
} mt_rng;

static inline void mt_rng_seed(mt_rng* r, uint64_t seed)
{
    r->s = seed * 0x9e3779b97f4a7c15ULL + 0x1234567ULL;
    if (r->s == 0) {
        r->s = 1;
    }
}

static inline uint64_t mt_rng_next(mt_rng* r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n). */
static inline unsigned mt_rng_below(mt_rng* r, unsigned n)
{
    return n == 0 ? 0 : (unsigned)(mt_rng_next(r) % n);
}

#endif /* ULMPI_TESTS_MPITEST_H */
