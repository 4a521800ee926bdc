/*
 * ft_crowd SEED -- a member dies at a random moment of a loop of barriers
 * and bcasts (ULMPI_FT=ulfm), on a communicator with more members than the
 * host has CPUs (4 and 8 ranks on 2 cores) when run so: there the
 * shared-memory barrier is released by member 0 alone and the others wait
 * for its `done` (coll_shm_barrier_root, docs/collectives.md), so member 0
 * is a victim of its own.
 *
 * From SEED alone (the same at every rank): the victim (member 0 in half
 * of the seeds, else any other), the iteration at whose start it arms a
 * timer, the timer's delay (0-3 ms, so the victim dies inside a barrier,
 * inside a bcast or between them, wherever the signal finds it), and per
 * iteration the call: a barrier, or an 8-byte bcast from member 0 or from
 * another member. Every rank loops until a call fails. Each survivor's
 * first failed call must return MPIX_ERR_PROC_FAILED (never hang: the
 * runner's timeout), and every bcast that succeeds must carry the root's
 * data. ft_finalize checks the rest (the survivors shrink and sum their
 * errors).
 */
#include "fttest.h"

#include <signal.h>
#include <stdint.h>
#include <sys/time.h>

/* The loop's bound: the victim dies within 3 ms of arming its timer and
 * nobody passes a barrier it did not enter, so this many calls mean the
 * timer never ended it (the victim reports that; a survivor whose calls
 * all succeeded fails the FT_CLASS check). */
#define MAX_CALLS 200000L

static uint64_t rng_state;

static uint64_t next_random(void)
{
    /* splitmix64: the same sequence at every rank */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int below(int n) { return (int)(next_random() % (uint64_t)n); }

static void die_now(int sig)
{
    (void)sig;
    raise(SIGKILL);
}

static int64_t payload(long call, int root) { return call * 1000003L + root; }

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rank = mt_rank, size = mt_size;
    const uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    rng_state = seed;
    const int victim = size < 2 || below(2) == 0 ? 0 : 1 + below(size - 1);
    const long arm_at = below(200);
    const int delay_us = below(3000);
    if (rank == 0) {
        printf("seed %llu: %d ranks, victim %d arms a %d us timer at call %ld\n",
               (unsigned long long)seed, size, victim, delay_us, arm_at);
        fflush(stdout);
    }
    if (rank == victim) {
        signal(SIGALRM, die_now);
    }
    int err = MPI_SUCCESS;
    long call = 0;
    const char* what = "";
    for (; err == MPI_SUCCESS && call < MAX_CALLS; ++call) {
        if (rank == victim && call == arm_at) {
            struct itimerval t = {{0, 0}, {0, delay_us + 1}};
            setitimer(ITIMER_REAL, &t, NULL);
        }
        const int kind = below(4); /* 0, 1: barrier; 2: bcast from 0; 3: from another */
        const int root = kind == 3 ? below(size) : 0;
        if (kind < 2) {
            what = "barrier";
            err = MPI_Barrier(MPI_COMM_WORLD);
        } else {
            what = "bcast";
            int64_t v = rank == root ? payload(call, root) : -1;
            err = MPI_Bcast(&v, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
            if (err == MPI_SUCCESS && v != payload(call, root)) {
                MT_CHECK(0, "call %ld: bcast from %d gave %lld", call, root, (long long)v);
            }
        }
    }
    if (rank == victim) {
        /* Not reached unless the timer failed to end this process. */
        MT_CHECK(0, "the victim left the loop after %ld calls: %s", call, mt_errname(err));
    } else {
        char w[96];
        snprintf(w, sizeof w, "%s (call %ld) after the victim died", what, call - 1);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, w);
        printf("survivor %d: %s\n", rank, w);
    }
    return ft_finalize(size - 1);
}
