/* FT-MPI REBUILD (docs/ftmpi.md): ranks are killed at seeded points and
 * replaced by new processes; the job goes on at full size.
 *
 *   ftmpi_rebuild SEED [KILLS]
 *
 * The seed picks KILLS (default 1) victims and the iterations they die at
 * (a victim may be a rank that was already replaced once: its new process
 * dies again). Every iteration is a ring exchange and an allreduce over a
 * communicator duplicated after every recovery (its context id must agree
 * between survivors and new processes), each result checked. After every
 * failure (automatic recovery, or manual when ULMPI_FT_RECOVERY=manual)
 * all ranks resynchronise on MPI_COMM_WORLD: the iteration to go on from,
 * which ranks are new processes, how often each rank was replaced.
 *
 * Checked: MPI_Init returns MPI_INIT_RESTARTED_NODE exactly in the new
 * processes (and MPI_SUCCESS at start); MPI_COMM_WORLD keeps its size and
 * every rank its rank; the new processes are exactly the victims; the
 * attributes (FTMPI_COMM_MODE, FTMPI_NUM_FAILED_PROCS, the text of
 * FTMPI_ERROR_FAILURE naming the victim) agree between survivors and new
 * processes; messages sent to a victim just before it died (eager and
 * rendezvous) never reach its new process; MPI_Comm_split works across old
 * and new processes; every iteration's results are right. Prints
 * "No Errors" at rank 0.
 */
#include <mpi-ext.h>
#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NITER 60
#define MAXKILLS 4
#define TAG_GHOST 30000
#define GHOST_BIG (1 << 20)

static int me, np, errs;
static int nkills, victim[MAXKILLS], kill_at[MAXKILLS];
static int deaths[64];     /* times each rank was replaced, as far as known here */
static int gen;            /* resynchronisations so far: part of every tag */
static int restarted;
static char *ghost;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            ++errs;                                                                      \
            fprintf(stderr, "rank %d (line %d): ", me, __LINE__);                        \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
        }                                                                                \
    } while (0)

static unsigned next(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static void pick(unsigned seed, int kills)
{
    unsigned s = seed * 2654435761u + 7;
    nkills = kills;
    int at = 2;
    for (int i = 0; i < kills; ++i) {
        /* Every rank can die, rank 0 and a replaced one included. */
        victim[i] = (int)(next(&s) % (unsigned)np);
        at += 3 + (int)(next(&s) % 12);
        kill_at[i] = at;
    }
}

/* The victim of kill i dies at its iteration if its rank has died as often
 * as the earlier kills of the same rank say (so a new process that resumes
 * at that iteration does not die again). */
static void maybe_die(int iter)
{
    for (int i = 0; i < nkills; ++i) {
        if (victim[i] != me || kill_at[i] != iter) {
            continue;
        }
        int earlier = 0;
        for (int j = 0; j < i; ++j) {
            earlier += victim[j] == me;
        }
        if (deaths[me] == earlier) {
            raise(SIGKILL);
        }
    }
}

/* Before kill i, the rank to the victim's left sends it messages it never
 * receives: an eager one and a rendezvous one (left pending). */
static void send_ghosts(int iter, MPI_Request *reqs)
{
    for (int i = 0; i < nkills; ++i) {
        int earlier = 0;
        for (int j = 0; j < i; ++j) {
            earlier += victim[j] == victim[i];
        }
        if (kill_at[i] == iter + 1 && (victim[i] + np - 1) % np == me && victim[i] != me &&
            deaths[victim[i]] == earlier) {
            int small = 4242;
            MPI_Send(&small, 1, MPI_INT, victim[i], TAG_GHOST, MPI_COMM_WORLD);
            if (reqs[0] == MPI_REQUEST_NULL) {
                MPI_Isend(ghost, GHOST_BIG, MPI_CHAR, victim[i], TAG_GHOST + 1, MPI_COMM_WORLD,
                          &reqs[0]);
            }
        }
    }
}

/* A step given up (a failure met it): its requests are cancelled and
 * completed here, while `in` and `out` still exist (in the CONT message
 * mode a receive from a live rank could still match later). Completion
 * may fail (a dead peer, a recovery that interrupted it): ignored. Left
 * pending, each would also keep `work` allocated after MPI_Comm_free
 * until the end (LeakSanitizer reports it). */
static int give_up(MPI_Request *rq, int n, int rc)
{
    for (int i = 0; i < n; ++i) {
        if (rq[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&rq[i]);
        }
    }
    MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
    return rc;
}

static int step(MPI_Comm work, int iter)
{
    int right = (me + 1) % np, left = (me + np - 1) % np;
    int out = me * 1000 + iter, in = -1;
    int tag = (gen % 16) * 1024 + iter;
    /* Nonblocking, and a call on the communicator in every pass: in the
     * CONT message mode a blocked receive from a live rank that gave up
     * this iteration would not be interrupted by the recovery; the probe
     * is the call that meets the failure. */
    MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc = MPI_Irecv(&in, 1, MPI_INT, left, tag, work, &rq[0]);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Isend(&out, 1, MPI_INT, right, tag, work, &rq[1]);
    }
    for (int done = 0; rc == MPI_SUCCESS && !done;) {
        int flag;
        rc = MPI_Testall(2, rq, &done, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS && !done) {
            rc = MPI_Iprobe(MPI_ANY_SOURCE, TAG_GHOST + 7, work, &flag, MPI_STATUS_IGNORE);
        }
    }
    if (rc != MPI_SUCCESS) {
        return give_up(rq, 2, rc);
    }
    CHECK(in == left * 1000 + iter, "iteration %d: got %d from rank %d", iter, in, left);
    long v = (long)(me + 1) * (iter + 1), sum = 0;
    rc = MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, work);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    CHECK(sum == (long)np * (np + 1) / 2 * (iter + 1), "iteration %d: allreduce %ld", iter, sum);
    return MPI_SUCCESS;
}

static void check_attributes(void)
{
    int *v, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, FTMPI_COMM_MODE, &v, &flag);
    CHECK(flag && *v == FTMPI_COMM_MODE_REBUILD, "FTMPI_COMM_MODE is %d", flag ? *v : -1);
    MPI_Comm_get_attr(MPI_COMM_WORLD, FTMPI_NUM_FAILED_PROCS, &v, &flag);
    CHECK(flag && *v == 1, "FTMPI_NUM_FAILED_PROCS is %d", flag ? *v : -1);
    /* Every rank has the text; rank 0 compares them all. */
    MPI_Comm_get_attr(MPI_COMM_WORLD, FTMPI_ERROR_FAILURE, &v, &flag);
    char text[MPI_MAX_ERROR_STRING] = "", all[64][96];
    int len = 0;
    if (flag) {
        MPI_Error_string(*v, text, &len);
    }
    char mine[96];
    snprintf(mine, sizeof mine, "%.95s", text);
    MPI_Gather(mine, 96, MPI_CHAR, all, 96, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (me == 0) {
        for (int r = 1; r < np; ++r) {
            CHECK(strcmp(all[r], all[0]) == 0, "FTMPI_ERROR_FAILURE: rank %d says '%s', rank 0 '%s'",
                  r, all[r], all[0]);
        }
    }
}

/* After a failure: everyone agrees where to go on. Returns MPI_SUCCESS or
 * the error of a failure during it. */
static int resync(int *iter, int *new_ranks_out)
{
    int mine[3 + 64];
    mine[0] = restarted ? -1 : *iter;
    mine[1] = gen;
    mine[2] = 0;
    for (int r = 0; r < np; ++r) {
        mine[3 + r] = restarted ? 0 : deaths[r];
    }
    int all[3 + 64];
    int rc = MPI_Allreduce(mine, all, 3 + np, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    int is_new[64];
    rc = MPI_Allgather(&restarted, 1, MPI_INT, is_new, 1, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *iter = all[0];
    gen = all[1] + 1;
    int n = 0;
    for (int r = 0; r < np; ++r) {
        deaths[r] = all[3 + r] + (is_new[r] ? 1 : 0);
        n += is_new[r];
    }
    *new_ranks_out = n;
    return MPI_SUCCESS;
}

static void watchdog(int sig)
{
    (void)sig;
    static const char m[] = "ftmpi_rebuild: watchdog expired (a hang)\n";
    (void)!write(2, m, sizeof m - 1);
    _exit(3);
}

int main(int argc, char **argv)
{
    signal(SIGALRM, watchdog);
    alarm(100);
    int rc0 = MPI_Init(&argc, &argv);
    restarted = rc0 == MPI_INIT_RESTARTED_NODE;
    const int started_new = restarted;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc < 2 || np > 64) {
        if (me == 0) {
            fprintf(stderr, "usage: ftmpi_rebuild SEED [KILLS] (at most 64 ranks)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    CHECK(rc0 == MPI_SUCCESS || rc0 == MPI_INIT_RESTARTED_NODE, "MPI_Init returned %d", rc0);
    pick((unsigned)atoi(argv[1]), argc > 2 ? atoi(argv[2]) : 1);
    const int manual = getenv("ULMPI_FT_RECOVERY") && !strcmp(getenv("ULMPI_FT_RECOVERY"), "manual");
    ghost = calloc(GHOST_BIG, 1);
    MPI_Request ghost_req[1] = {MPI_REQUEST_NULL};

    MPI_Comm work = MPI_COMM_NULL;
    int iter = 0, recoveries = 0, pending = restarted;
    while (iter < NITER) {
        if (pending) {
            /* Recovered (or new): resynchronise, then a fresh communicator. */
            if (manual && !restarted) {
                MPIX_Ftmpi_recover();
            }
            int fresh = 0;
            int rc = resync(&iter, &fresh);
            if (rc != MPI_SUCCESS) {
                continue; /* another failure meanwhile: again */
            }
            pending = 0;
            ++recoveries;
            CHECK(fresh >= 1, "resync: no new process");
            int size, rank;
            MPI_Comm_size(MPI_COMM_WORLD, &size);
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            CHECK(size == np && rank == me, "size %d rank %d after the recovery", size, rank);
            if (ghost_req[0] != MPI_REQUEST_NULL) {
                MPI_Wait(&ghost_req[0], MPI_STATUS_IGNORE); /* fails: its receiver died */
                ghost_req[0] = MPI_REQUEST_NULL;
            }
            const int was_new = restarted;
            restarted = 0; /* from now on a rank like the others */
            if (was_new) {
                /* Nothing the survivors sent to the dead process comes here. */
                int flag = 1;
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                CHECK(!flag, "a message sent before the failure reached the new process");
            } else {
                MPI_Barrier(MPI_COMM_WORLD);
            }
            if (fresh == 1) {
                check_attributes();
            }
            if (work != MPI_COMM_NULL) {
                MPI_Comm_free(&work);
            }
            continue;
        }
        if (work == MPI_COMM_NULL) {
            if (MPI_Comm_dup(MPI_COMM_WORLD, &work) != MPI_SUCCESS) {
                pending = 1;
                continue;
            }
            MPI_Comm_set_errhandler(work, MPI_ERRORS_RETURN);
            /* A split across old and new processes: odd and even ranks. */
            MPI_Comm half;
            if (MPI_Comm_split(work, me % 2, -me, &half) == MPI_SUCCESS) {
                int hs, hr;
                MPI_Comm_size(half, &hs);
                MPI_Comm_rank(half, &hr);
                CHECK(hs == (np + 1 - me % 2) / 2, "split: size %d", hs);
                CHECK(hr == hs - 1 - me / 2, "split: rank %d", hr);
                MPI_Comm_free(&half);
            } else {
                pending = 1;
                continue;
            }
        }
        maybe_die(iter);
        send_ghosts(iter, ghost_req);
        if (step(work, iter) != MPI_SUCCESS) {
            pending = 1;
            continue;
        }
        ++iter;
    }
    if (work != MPI_COMM_NULL) {
        MPI_Comm_free(&work);
    }
    if (started_new) {
        CHECK(recoveries >= 1, "a new process that never resynchronised");
    }
    int all_errs = 0;
    MPI_Reduce(&errs, &all_errs, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    int replaced = 0;
    for (int r = 0; r < np; ++r) {
        replaced += deaths[r];
    }
    if (me == 0) {
        if (replaced != nkills) {
            fprintf(stderr, "%d process(es) replaced, %d killed\n", replaced, nkills);
            ++all_errs;
        }
        if (all_errs == 0) {
            printf("No Errors\n");
        } else {
            printf("Found %d errors\n", all_errs);
        }
    }
    free(ghost);
    MPI_Finalize();
    return 0;
}
