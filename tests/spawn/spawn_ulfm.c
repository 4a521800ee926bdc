/*
 * spawn_ulfm: the ULFM recovery pattern with a new process — a rank dies,
 * the survivors revoke and shrink, spawn one replacement, merge with it and
 * go on computing as a full-size job. mpirun --with-ft ulfm --spawn-slots 1
 * (np 4, or more).
 *
 * Every process holds the value (rank + 1) of its role (its rank in the
 * working communicator) and the job sums them with MPI_Allreduce, round
 * after round (6 rounds). In round 2 the last rank dies (SIGKILL). The
 * survivors see the allreduce fail (MPIX_ERR_PROC_FAILED or MPIX_ERR_REVOKED),
 * revoke, shrink (np-1 processes), spawn this program once with the argument
 * "replacement", merge with it (the replacement high: it takes the last
 * role) and redo the round; the replacement learns the round from the
 * merged communicator. Every round's sum must be np(np+1)/2; the errors are
 * summed over the merged communicator and its rank 0 prints "No Errors".
 */
#include "fttest.h"

#define ROUNDS 6
#define KILL_ROUND 2

static int run_rounds(MPI_Comm work, int first_round, int end_round)
{
    int n = 0, r = 0;
    MPI_Comm_size(work, &n);
    MPI_Comm_rank(work, &r);
    for (int round = first_round; round < end_round; ++round) {
        int mine = r + 1, sum = 0;
        int rc = MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, work);
        if (rc != MPI_SUCCESS) {
            return round; /* the caller recovers and redoes this round */
        }
        MT_CHECK(sum == n * (n + 1) / 2, "round %d: sum %d over %d processes", round, sum, n);
    }
    return end_round;
}

/* Survivors and replacement alike, on the merged communicator. */
static void finish(MPI_Comm merged, int round)
{
    int n = 0, r = 0;
    MPI_Comm_size(merged, &n);
    MPI_Comm_rank(merged, &r);
    int done = run_rounds(merged, round, ROUNDS);
    MT_CHECK(done == ROUNDS, "a round failed after the recovery (round %d)", done);
    int total = 0;
    MT_OK(MPI_Allreduce(&mt_errors, &total, 1, MPI_INT, MPI_SUM, merged));
    if (r == 0) {
        printf(total == 0 ? "No Errors\n" : " Found %d errors\n", total);
        fflush(stdout);
    }
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        /* The replacement. */
        MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
        MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
        MT_CHECK(argc == 2 && strcmp(argv[1], "replacement") == 0, "replacement argv");
        MPI_Comm merged;
        MT_OK(MPI_Intercomm_merge(parent, 1, &merged));
        MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
        int round = -1;
        MT_OK(MPI_Bcast(&round, 1, MPI_INT, 0, merged));
        MT_CHECK(round == KILL_ROUND, "the survivors resume at round %d", round);
        finish(merged, round);
        MPI_Comm_free(&merged);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return mt_errors != 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int victim = mt_size - 1;
    MPI_Comm work;
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &work));
    MPI_Comm_set_errhandler(work, MPI_ERRORS_RETURN);
    int round = run_rounds(work, 0, KILL_ROUND); /* nobody dies before KILL_ROUND */
    MT_CHECK(round == KILL_ROUND, "round %d failed before anyone died", round);
    /* Again, with the death in round KILL_ROUND. */
    if (mt_rank == victim) {
        ft_quiesce(work, victim);
        ft_die();
    }
    ft_quiesce(work, victim);
    int mine = mt_rank + 1, sum = 0;
    int rc = MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, work);
    if (rc == MPI_SUCCESS) {
        /* ULFM allows the collective to succeed here (the victim's part may
         * have been in before it died); the next one fails then. */
        rc = MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, work);
    }
    const int cls = ft_class(rc);
    MT_CHECK(cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED,
             "the allreduce after the death returned %s", mt_errname(rc));
    MT_OK(MPIX_Comm_revoke(work));
    MPI_Comm shrunk;
    MT_OK(MPIX_Comm_shrink(work, &shrunk));
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    int ssize = 0;
    MPI_Comm_size(shrunk, &ssize);
    MT_CHECK(ssize == mt_size - 1, "shrunk to %d processes", ssize);
    char* args[] = {"replacement", NULL};
    MPI_Comm inter;
    int code = -1;
    MT_OK(MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, shrunk, &inter, &code));
    MT_CHECK(code == MPI_SUCCESS, "errcode %d", code);
    MPI_Comm merged;
    MT_OK(MPI_Intercomm_merge(inter, 0, &merged));
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    int mrank = -1, msize = 0;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    MT_CHECK(msize == mt_size && mrank == mt_rank, "merged: rank %d of %d", mrank, msize);
    int resume = KILL_ROUND;
    MT_OK(MPI_Bcast(&resume, 1, MPI_INT, 0, merged));
    finish(merged, resume);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&inter);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&work);
    MPI_Finalize();
    return mt_errors != 0;
}
