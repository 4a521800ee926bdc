/*
 * ft_shrink -- MPIX_Comm_shrink and MPIX_Comm_ishrink with failures
 * (ULMPI_FT=ulfm, np 6; argument: a seed).
 *
 *   before  rank 5 dies; the survivors shrink MPI_COMM_WORLD: 5 processes,
 *           in their old order, not revoked, no failure recorded, and a
 *           collective and a wildcard receive work on it without any
 *           acknowledgement. The same with MPIX_Comm_ishrink.
 *   during  rank 4 dies 20 ms after the others entered the shrink
 *           (blocking, and nonblocking at one of them): the survivors get
 *           a communicator of the 4 survivors that works.
 *   twice   ranks 2 and 3 die: one right before the shrink, the other after
 *           starting MPIX_Comm_ishrink (it contributes) and a seeded 1-3 ms:
 *           the two that remain get a communicator of 2 that works, or of
 *           3 with the late victim in it when it died only after the
 *           agreement (ULFM allows it): then that victim is reported
 *           failed on it, and a second shrink gives 2.
 */
#include "fttest.h"

/* The shrunk communicator: size n, ranks in the order of `from`, works. */
static void check_shrunk(MPI_Comm s, MPI_Comm from, int n, const char* what)
{
    int sn = -1, sr = -1, fr = -1, flag = 1;
    MPI_Comm_size(s, &sn);
    MPI_Comm_rank(s, &sr);
    MPI_Comm_rank(from, &fr);
    MT_CHECK(sn == n, "%s: %d processes, want %d", what, sn, n);
    MT_OK(MPIX_Comm_is_revoked(s, &flag));
    MT_CHECK(flag == 0, "%s: the shrunk communicator is revoked", what);
    MT_CHECK(ft_failed_count(s) == 0, "%s: %d failed recorded on the shrunk one", what,
             ft_failed_count(s));
    /* Old order kept: the ranks of `from` increase with the new ranks. */
    int* olds = malloc(sizeof(int) * (size_t)sn);
    MT_OK(MPI_Allgather(&fr, 1, MPI_INT, olds, 1, MPI_INT, s));
    for (int i = 1; i < sn; ++i) {
        MT_CHECK(olds[i] > olds[i - 1], "%s: new rank %d was %d, new rank %d was %d", what, i - 1,
                 olds[i - 1], i, olds[i]);
    }
    free(olds);
    ft_check_works(s, what);
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rank = mt_rank, size = mt_size;
    const unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1;
    mt_rng rng;
    mt_rng_seed(&rng, seed);
    if (size != 6) {
        if (rank == 0) {
            printf("ft_shrink needs 6 processes\n");
        }
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) {
        printf("ft_shrink seed %u\n", seed);
    }

    /* before */
    ft_quiesce(MPI_COMM_WORLD, 5);
    if (rank == 5) {
        ft_die();
    }
    ft_wait_failed(MPI_COMM_WORLD, 1);
    MPI_Comm s5, t5;
    MT_OK(MPIX_Comm_shrink(MPI_COMM_WORLD, &s5));
    MPI_Comm_set_errhandler(s5, MPI_ERRORS_RETURN);
    check_shrunk(s5, MPI_COMM_WORLD, 5, "shrink before");
    {
        MPI_Request req;
        MT_OK(MPIX_Comm_ishrink(MPI_COMM_WORLD, &t5, &req));
        MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MT_CHECK(t5 != MPI_COMM_NULL, "ishrink before: MPI_COMM_NULL");
        if (t5 != MPI_COMM_NULL) {
            MPI_Comm_set_errhandler(t5, MPI_ERRORS_RETURN);
            check_shrunk(t5, MPI_COMM_WORLD, 5, "ishrink before");
            MPI_Comm_free(&t5);
        }
    }

    /* during: world rank 4 dies while the others are inside the shrink
     * (it never joins): the result has the 4 survivors. */
    MPI_Comm s4 = MPI_COMM_NULL;
    {
        if (rank == 4) {
            mt_sleep_ms(20);
            ft_die();
        }
        if (rank == 2) {
            MPI_Request req;
            MT_OK(MPIX_Comm_ishrink(s5, &s4, &req));
            MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            MT_OK(MPIX_Comm_shrink(s5, &s4));
        }
        MT_CHECK(s4 != MPI_COMM_NULL, "shrink during: MPI_COMM_NULL");
        MPI_Comm_set_errhandler(s4, MPI_ERRORS_RETURN);
        check_shrunk(s4, s5, 4, "shrink during a failure");
    }

    /* twice: world ranks 2 and 3 die, one before the shrink and one in it */
    {
        const int first = 2 + (int)mt_rng_below(&rng, 2);
        const int delay = 1 + (int)mt_rng_below(&rng, 3);
        MPI_Comm s2 = MPI_COMM_NULL;
        ft_quiesce(s4, first);
        if (rank == first) {
            ft_die();
        }
        if (rank == 5 - first) {
            MPI_Request req;
            MPI_Comm x;
            MT_OK(MPIX_Comm_ishrink(s4, &x, &req));
            mt_sleep_ms(delay);
            ft_die();
        }
        MT_OK(MPIX_Comm_shrink(s4, &s2));
        MPI_Comm_set_errhandler(s2, MPI_ERRORS_RETURN);
        int n2 = 0;
        MPI_Comm_size(s2, &n2);
        if (n2 == 3) {
            /* The late victim contributed and died after the agreement. */
            MPI_Comm s1;
            ft_wait_failed(s2, 1);
            MT_OK(MPIX_Comm_shrink(s2, &s1));
            MPI_Comm_free(&s2);
            s2 = s1;
            MPI_Comm_set_errhandler(s2, MPI_ERRORS_RETURN);
        }
        check_shrunk(s2, s4, 2, "shrink during two failures");
        MPI_Comm_free(&s2);
    }
    MPI_Comm_free(&s4);
    MPI_Comm_free(&s5);
    return ft_finalize(2);
}
