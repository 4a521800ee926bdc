/*
 * ft_dup -- a communicator constructor has the same result at every member,
 * even when a member dies right after its own call returned (ULMPI_FT=ulfm,
 * np >= 3; arguments: rounds, seed).
 *
 * Each round, on the survivors' communicator `cur` (MPI_COMM_WORLD at
 * first), a seeded victim (never rank 0 of cur) calls MPI_Comm_dup (rounds
 * 1, 5, ...: MPI_Comm_create of the whole group; rounds 2, 6, ...:
 * MPI_Comm_split with one colour; rounds 3, 7, ...: MPI_Intercomm_merge of
 * an intercommunicator between cur's even and odd ranks, made before the
 * round) and dies as soon as the call
 * returns, or a seeded 0-2 ms before its call; the others call it too.
 * MPICH's ft/agree_shrink does the first (the others' dup failed there in 14
 * runs of 20 when the constructor was an allreduce that the failure
 * interrupted at some members only). Checked at every survivor:
 *   - the victim died after its call returned: the call succeeded here;
 *     before it: any of success, MPIX_ERR_PROC_FAILED, MPIX_ERR_REVOKED;
 *   - whatever it was, every survivor had the same result (an agree over
 *     the survivors);
 *   - the new communicator (when made) has the dead member in it; the
 *     survivors shrink it (or cur) and go on with the result, which works.
 */
#include "fttest.h"

static const char* const kWhat[4] = {"dup", "create", "split", "merge"};

/* For a merge round: the intercommunicator between cur's even and odd
 * ranks (made before anybody dies). */
static MPI_Comm halves(MPI_Comm cur)
{
    int me;
    MPI_Comm_rank(cur, &me);
    MPI_Comm half, inter;
    MT_OK(MPI_Comm_split(cur, me % 2, me, &half));
    MT_OK(MPI_Intercomm_create(half, 0, cur, me % 2 == 0 ? 1 : 0, 77, &inter));
    MPI_Comm_free(&half);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    return inter;
}

static int make(MPI_Comm cur, MPI_Comm inter, int round, MPI_Comm* out)
{
    if (round % 4 == 3) {
        int me;
        MPI_Comm_rank(cur, &me);
        return MPI_Intercomm_merge(inter, me % 2, out);
    }
    if (round % 4 == 0) {
        return MPI_Comm_dup(cur, out);
    }
    if (round % 4 == 2) {
        int me;
        MPI_Comm_rank(cur, &me);
        return MPI_Comm_split(cur, 0, me, out);
    }
    MPI_Group g;
    MPI_Comm_group(cur, &g);
    int rc = MPI_Comm_create(cur, g, out);
    MPI_Group_free(&g);
    return rc;
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rounds = argc > 1 ? atoi(argv[1]) : 2;
    const unsigned seed = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1;
    if (mt_size < rounds + 2) {
        if (mt_rank == 0) {
            fprintf(stderr, "ft_dup: %d rounds need at least %d processes\n", rounds,
                    rounds + 2);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mt_rng rng;
    mt_rng_seed(&rng, seed); /* the same draws at every process */
    MPI_Comm cur = MPI_COMM_WORLD;
    for (int round = 0; round < rounds; ++round) {
        int n, me;
        MPI_Comm_size(cur, &n);
        MPI_Comm_rank(cur, &me);
        const int victim = 1 + (int)mt_rng_below(&rng, (unsigned)(n - 1));
        const int before = mt_rng_below(&rng, 3) == 0; /* dies before its call */
        const int delay = (int)mt_rng_below(&rng, 3);
        MPI_Comm inter = round % 4 == 3 ? halves(cur) : MPI_COMM_NULL;
        ft_quiesce(cur, victim);
        MPI_Comm made = MPI_COMM_NULL;
        if (me == victim && before) {
            mt_sleep_ms(delay);
            ft_die();
        }
        int rc = make(cur, inter, round, &made);
        if (me == victim) {
            ft_die();
        }
        const int cls = ft_class(rc);
        if (!before) {
            char what[64];
            snprintf(what, sizeof what, "round %d: %s, the victim died after it", round,
                     kWhat[round % 4]);
            FT_CLASS(rc, MPI_SUCCESS, what);
        } else {
            MT_CHECK(cls == MPI_SUCCESS || cls == MPIX_ERR_PROC_FAILED ||
                         cls == MPIX_ERR_REVOKED,
                     "round %d: %s with the victim dead before it: %s", round,
                     kWhat[round % 4], mt_errname(rc));
        }
        /* The same result everywhere: agree on "I succeeded" and on "I
         * failed" (both ANDs must not be 0 and 0). The agreement raises
         * MPIX_ERR_PROC_FAILED (at every member) when the victim's failure
         * was not acknowledged everywhere, and gives the flag all the same. */
        MPIX_Comm_failure_ack(cur);
        int ok = cls == MPI_SUCCESS, bad = cls != MPI_SUCCESS;
        int rca = MPIX_Comm_agree(cur, &ok);
        int rcb = MPIX_Comm_agree(cur, &bad);
        MT_CHECK((rca == MPI_SUCCESS || ft_class(rca) == MPIX_ERR_PROC_FAILED) &&
                     (rcb == MPI_SUCCESS || ft_class(rcb) == MPIX_ERR_PROC_FAILED),
                 "round %d: agree: %s / %s", round, mt_errname(rca), mt_errname(rcb));
        MT_CHECK(ok || bad, "round %d: %s succeeded at some survivors only", round,
                 kWhat[round % 4]);
        if (inter != MPI_COMM_NULL) {
            MPI_Comm_free(&inter);
        }
        MPI_Comm next = MPI_COMM_NULL;
        if (made != MPI_COMM_NULL) {
            MPI_Comm_set_errhandler(made, MPI_ERRORS_RETURN);
            int mn = -1;
            MPI_Comm_size(made, &mn);
            MT_CHECK(mn == n, "round %d: the new communicator has %d members, want %d", round,
                     mn, n);
            MPIX_Comm_failure_ack(made);
            MT_OK(MPIX_Comm_shrink(made, &next));
            MPI_Comm_free(&made);
        } else {
            MT_OK(MPIX_Comm_shrink(cur, &next));
        }
        MPI_Comm_set_errhandler(next, MPI_ERRORS_RETURN);
        int nn = -1;
        MPI_Comm_size(next, &nn);
        MT_CHECK(nn == n - 1, "round %d: %d survivors, want %d", round, nn, n - 1);
        ft_check_works(next, "the survivors");
        if (cur != MPI_COMM_WORLD) {
            MPI_Comm_free(&cur);
        }
        cur = next;
    }
    if (cur != MPI_COMM_WORLD) {
        MPI_Comm_free(&cur);
    }
    return ft_finalize(mt_size - rounds);
}
