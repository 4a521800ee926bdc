/*
 * ft_create_group -- MPI_Comm_create_group is collective over its group
 * only (ULMPI_FT=ulfm, np >= 4; argument: a seed).
 *
 *   known    the last rank dies and every survivor has seen the failure
 *            (a barrier on MPI_COMM_WORLD reported it) before they create
 *            a communicator of the survivors from MPI_COMM_WORLD: it is
 *            created, and it works (allreduce, a wildcard receive)
 *   during   a rank outside the next group dies while the others create a
 *            communicator of a group without it (a seeded 0-3 ms into the
 *            call): created, and it works
 *   member   a member of the group dies before the call: the creation
 *            fails with MPIX_ERR_PROC_FAILED (or MPIX_ERR_REVOKED), and
 *            no process waits for ever
 */
#include "fttest.h"

/* The group of MPI_COMM_WORLD without the ranks in `out` (n of them). */
static MPI_Group world_without(const int* out, int n)
{
    MPI_Group w, g;
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    MPI_Group_excl(w, n, out, &g);
    MPI_Group_free(&w);
    return g;
}

static void check_works(MPI_Comm c, int n, const char* what)
{
    int sn = -1;
    MPI_Comm_size(c, &sn);
    MT_CHECK(sn == n, "%s: %d processes, want %d", what, sn, n);
    ft_check_works(c, what);
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rank = mt_rank, size = mt_size;
    const unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1;
    mt_rng rng;
    mt_rng_seed(&rng, seed);
    if (size < 4) {
        if (rank == 0) {
            fprintf(stderr, "ft_create_group: run with at least 4 processes\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int dead[3];
    int ndead = 0;

    /* known: the last rank dies; the survivors see it, then create. */
    const int first = size - 1;
    ft_quiesce(MPI_COMM_WORLD, first);
    if (rank == first) {
        ft_die();
    }
    dead[ndead++] = first;
    ft_wait_failed(MPI_COMM_WORLD, 1);
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    FT_CLASS(rc, MPIX_ERR_PROC_FAILED, "barrier on MPI_COMM_WORLD with a failed member");
    MPI_Group g = world_without(dead, ndead);
    MPI_Comm c = MPI_COMM_NULL;
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, g, 11, &c);
    FT_CLASS(rc, MPI_SUCCESS, "create_group of the survivors after a known failure");
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        check_works(c, size - ndead, "known");
    }
    MPI_Group_free(&g);

    /* during: the rank before the last dies while the others create a
     * communicator without it. */
    const int second = size - 2;
    ft_quiesce(c, second);
    dead[ndead++] = second;
    MPI_Group g2 = world_without(dead, ndead);
    MPI_Comm c2 = MPI_COMM_NULL;
    if (rank == second) {
        ft_die();
    }
    mt_sleep_ms((int)mt_rng_below(&rng, 4));
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, g2, 12, &c2);
    FT_CLASS(rc, MPI_SUCCESS, "create_group while a process outside the group dies");
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(c2, MPI_ERRORS_RETURN);
        check_works(c2, size - ndead, "during");
    }
    MPI_Group_free(&g2);

    /* member: rank 1 (a member of the next group) dies before the call. */
    const int third = 1;
    if (c2 != MPI_COMM_NULL) {
        ft_quiesce(c2, third); /* rank 1 of c2 is rank 1 of MPI_COMM_WORLD */
        MPI_Comm_free(&c2);
    }
    if (rank == third) {
        ft_die();
    }
    MPI_Group g3 = world_without(dead, ndead); /* still holds rank 1 */
    ft_wait_failed(MPI_COMM_WORLD, 3);
    MPI_Comm c3 = MPI_COMM_NULL;
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, g3, 13, &c3);
    MT_CHECK(ft_class(rc) == MPIX_ERR_PROC_FAILED || ft_class(rc) == MPIX_ERR_REVOKED,
             "create_group with a failed member: %s", mt_errname(rc));
    if (rc == MPI_SUCCESS) {
        MPI_Comm_free(&c3);
    }
    MPI_Group_free(&g3);
    if (c != MPI_COMM_NULL) {
        MPI_Comm_free(&c);
    }
    return ft_finalize(size - 3);
}
