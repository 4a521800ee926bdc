/*
 * A job in which one rank fails, for tests/fault/testlist.
 *
 *   fault_job WHAT [VICTIM [OTHERS]]
 *
 * WHAT, done by rank VICTIM (a number, or "last", the default):
 *   abort7        MPI_Abort(MPI_COMM_WORLD, 7)
 *   abort256      MPI_Abort(MPI_COMM_WORLD, 256)   (exit status: low 8 bits, or 1)
 *   abortself     MPI_Abort(MPI_COMM_SELF, 5)      (still ends every rank)
 *   segv          a store through a null pointer
 *   exit3         exit(3) without MPI_Finalize
 *   exit0         exit(0) without MPI_Finalize
 *   sigkill       raise(SIGKILL)
 *   sigabrt       abort()
 *   preinit_exit  exit(3) before MPI_Init (the others wait in MPI_Init)
 *   preinit_segv  a null store before MPI_Init
 *   hang          nothing: every rank waits in MPI_Recv forever (for signal tests)
 *   hang_compute  every rank spins outside MPI forever
 *   hang_ignint   every rank spins outside MPI, ignoring SIGINT and SIGTERM
 * OTHERS, what every other rank does meanwhile:
 *   recv (default)  waits in MPI_Recv for a message that never comes
 *   compute         spins outside MPI
 *   sleep           sleeps outside MPI
 *   traffic         the whole job streams 4 MiB messages around a ring; the
 *                   victim fails after 10 rounds, in the middle of traffic
 *
 * Output: "jobid=<ULMPI_JOBID>" (rank 0, so the runner can check
 * /dev/shm), "ready" (rank 0, once every rank is inside MPI), and
 * "t0=<CLOCK_MONOTONIC seconds>" from the victim just before it fails.
 */
#include "mpitest.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

static void say_t0(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("t0=%.6f\n", (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
    fflush(stdout);
}

static void fail(const char* what)
{
    say_t0();
    if (strcmp(what, "abort7") == 0) {
        MPI_Abort(MPI_COMM_WORLD, 7);
    } else if (strcmp(what, "abort256") == 0) {
        MPI_Abort(MPI_COMM_WORLD, 256);
    } else if (strcmp(what, "abortself") == 0) {
        MPI_Abort(MPI_COMM_SELF, 5);
    } else if (strcmp(what, "segv") == 0 || strcmp(what, "preinit_segv") == 0) {
        *(volatile int*)(uintptr_t)0 = 1;
    } else if (strcmp(what, "exit3") == 0 || strcmp(what, "preinit_exit") == 0) {
        exit(3);
    } else if (strcmp(what, "exit0") == 0) {
        exit(0);
    } else if (strcmp(what, "sigkill") == 0) {
        raise(SIGKILL);
    } else if (strcmp(what, "sigabrt") == 0) {
        abort();
    }
    printf("failure '%s' did not end the process\n", what);
    fflush(stdout);
    exit(99);
}

static void others(const char* how)
{
    if (strcmp(how, "compute") == 0) {
        volatile double x = 1.0;
        for (;;) {
            x = x * 1.0000001 + 1e-9;
        }
    } else if (strcmp(how, "sleep") == 0) {
        for (;;) {
            sleep(1000);
        }
    } else {
        int x;
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("rank %d: a receive nobody sends completed\n", mt_rank);
    }
}

int main(int argc, char** argv)
{
    const char* what = argc > 1 ? argv[1] : "abort7";
    const char* victim_arg = argc > 2 ? argv[2] : "last";
    const char* how = argc > 3 ? argv[3] : "recv";
    int victim;

    if (strncmp(what, "preinit_", 8) == 0) {
        const char* r = getenv("ULMPI_RANK");
        /* mpirun's ranks (spawn slots, after them, are not processes yet). */
        const char* n = getenv("ULMPI_FIRST_SLOT") ? getenv("ULMPI_FIRST_SLOT")
                                                   : getenv("ULMPI_SIZE");
        int rank = r != NULL ? atoi(r) : 0;
        int size = n != NULL ? atoi(n) : 1;
        int v = strcmp(victim_arg, "last") == 0 ? size - 1 : atoi(victim_arg);
        if (rank == 0) {
            const char* id = getenv("ULMPI_JOBID");
            printf("jobid=%s\n", id != NULL ? id : "none");
            fflush(stdout);
        }
        if (rank == v) {
            usleep(200000); /* the others are inside MPI_Init by now */
            fail(what);
        }
    }
    if (strcmp(what, "hang_ignint") == 0) {
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
    }
    mt_init(&argc, &argv);
    victim = strcmp(victim_arg, "last") == 0 ? mt_size - 1 : atoi(victim_arg);
    /* (mt_init printed "jobid=" under the runner) */
    mt_barrier();
    if (mt_rank == 0) {
        printf("ready\n");
        fflush(stdout);
    }
    if (strcmp(what, "hang") == 0) {
        others("recv");
        return 1;
    }
    if (strncmp(what, "hang_", 5) == 0) {
        others("compute");
        return 1;
    }

    if (strcmp(how, "traffic") == 0) {
        /* A ring of 4 MiB messages; the victim fails in round 10. */
        int n = 4 << 20;
        unsigned char* sb = malloc((size_t)n);
        unsigned char* rb = malloc((size_t)n);
        int to = (mt_rank + 1) % mt_size, from = (mt_rank - 1 + mt_size) % mt_size;
        int round;
        memset(sb, mt_rank, (size_t)n);
        for (round = 0;; ++round) {
            MPI_Request r[2];
            if (mt_rank == victim && round == 10) {
                /* with a receive posted and a send in flight */
                MPI_Irecv(rb, n, MPI_BYTE, from, 1, MPI_COMM_WORLD, &r[0]);
                MPI_Isend(sb, n, MPI_BYTE, to, 1, MPI_COMM_WORLD, &r[1]);
                fail(what);
            }
            MPI_Irecv(rb, n, MPI_BYTE, from, 1, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(sb, n, MPI_BYTE, to, 1, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
    }
    if (mt_rank == victim) {
        fail(what);
    }
    others(how);
    return 1;
}
