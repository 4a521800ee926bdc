/*
 * ft_agree -- MPIX_Comm_agree and MPIX_Comm_iagree with failures (ULMPI_FT=ulfm,
 * np 6; three victims, ranks 5, 4 and 3, one per phase; argument: a seed).
 *
 *   before  rank 5 dies before the agreement. Without an acknowledgement
 *           every survivor gets MPIX_ERR_PROC_FAILED, with the AND of the
 *           live contributions as the flag; with half the survivors having
 *           acknowledged, every survivor gets the same class; once all have
 *           acknowledged, MPI_SUCCESS.
 *   during  rank 4 starts MPIX_Comm_iagree and dies (after a seeded delay of
 *           0-3 ms) while the others agree (blocking and nonblocking): one
 *           outcome at every survivor; its flag is the AND of the live
 *           contributions, with or without the victim's.
 *   loop    rank 3 takes part in a series of agreements and dies at a seeded
 *           point of it; the survivors go on (acknowledging after each
 *           MPIX_ERR_PROC_FAILED): every agreement has the same outcome
 *           (flag and class) at every survivor.
 * Uniformity is checked by gathering every survivor's outcomes over a
 * communicator of ranks 0-2 (which contains no victim).
 */
#include "fttest.h"

#define LOOP 24

/* Every survivor of `live` has the same values in v[0..n). */
static void same_everywhere(MPI_Comm live, const int* v, int n, const char* what)
{
    int ln;
    MPI_Comm_size(live, &ln);
    int* all = malloc(sizeof(int) * (size_t)(n * ln));
    MT_OK(MPI_Allgather(v, n, MPI_INT, all, n, MPI_INT, live));
    for (int p = 1; p < ln; ++p) {
        for (int i = 0; i < n; ++i) {
            MT_CHECK(all[p * n + i] == all[i], "%s: value %d is %d at survivor %d, %d at 0", what,
                     i, all[p * n + i], p, all[i]);
        }
    }
    free(all);
}

static int bit(int r) { return ~(1 << r); }

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rank = mt_rank, size = mt_size;
    const unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1;
    mt_rng rng;
    mt_rng_seed(&rng, seed);
    if (size != 6) {
        if (rank == 0) {
            printf("ft_agree needs 6 processes\n");
        }
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) {
        printf("ft_agree seed %u\n", seed);
    }
    MPI_Comm live;
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, rank < 3 ? 0 : MPI_UNDEFINED, rank, &live));
    if (live != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(live, MPI_ERRORS_RETURN);
    }
    const int and_012 = bit(0) & bit(1) & bit(2);

    /* before */
    ft_quiesce(MPI_COMM_WORLD, 5);
    if (rank == 5) {
        ft_die();
    }
    ft_wait_failed(MPI_COMM_WORLD, 1);
    {
        int flag = bit(rank), err, out[4];
        err = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "agree with an unacknowledged failure");
        MT_CHECK(flag == (and_012 & bit(3) & bit(4)), "agree before: flag 0x%x, want 0x%x",
                 (unsigned)flag, (unsigned)(and_012 & bit(3) & bit(4)));
        out[0] = flag;
        out[1] = ft_class(err);
        if (rank % 2 == 0) {
            MT_OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
        }
        flag = bit(rank);
        err = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
        out[2] = flag;
        out[3] = ft_class(err);
        MT_CHECK(out[3] == MPI_SUCCESS || out[3] == MPIX_ERR_PROC_FAILED,
                 "agree half acknowledged: %s", mt_errname(err));
        if (rank % 2 == 1) {
            MT_OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
        }
        flag = bit(rank);
        MT_OK(MPIX_Comm_agree(MPI_COMM_WORLD, &flag));
        MT_CHECK(flag == (and_012 & bit(3) & bit(4)), "agree acknowledged: flag 0x%x",
                 (unsigned)flag);
        if (live != MPI_COMM_NULL) {
            same_everywhere(live, out, 4, "agree before");
        }
    }

    /* during */
    {
        const int delay = (int)mt_rng_below(&rng, 4);
        int flag = bit(rank), err, out[3];
        MPI_Request req;
        if (rank == 4) {
            MT_OK(MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &req));
            if (delay > 0) {
                mt_sleep_ms(delay);
            }
            ft_die();
        }
        if (rank == 1) {
            MT_OK(MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &req));
            err = MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            err = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
        }
        const int surv = and_012 & bit(3);
        MT_CHECK(flag == surv || flag == (surv & bit(4)), "agree during: flag 0x%x", (unsigned)flag);
        MT_CHECK(err == MPI_SUCCESS || ft_class(err) == MPIX_ERR_PROC_FAILED,
                 "agree during: %s", mt_errname(err));
        out[0] = flag;
        out[1] = ft_class(err);
        ft_wait_failed(MPI_COMM_WORLD, 2);
        MT_OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
        flag = bit(rank);
        MT_OK(MPIX_Comm_agree(MPI_COMM_WORLD, &flag));
        MT_CHECK(flag == surv, "agree after the failure during one: 0x%x", (unsigned)flag);
        out[2] = flag;
        if (live != MPI_COMM_NULL) {
            same_everywhere(live, out, 3, "agree during");
        }
    }

    /* loop */
    {
        const int die_at = (int)mt_rng_below(&rng, LOOP);
        int out[2 * LOOP];
        for (int i = 0; i < LOOP; ++i) {
            if (rank == 3 && i == die_at) {
                ft_die();
            }
            int flag = (i % 3 == 0) ? bit(rank) : ~0;
            int err = (i % 2 == 0) ? MPIX_Comm_agree(MPI_COMM_WORLD, &flag) : 0;
            if (i % 2 == 1) {
                MPI_Request req;
                MT_OK(MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &req));
                err = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            out[2 * i] = flag;
            out[2 * i + 1] = ft_class(err);
            MT_CHECK(err == MPI_SUCCESS || ft_class(err) == MPIX_ERR_PROC_FAILED,
                     "agree %d of the loop: %s", i, mt_errname(err));
            if (err != MPI_SUCCESS) {
                MT_OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
            }
        }
        if (live != MPI_COMM_NULL) {
            same_everywhere(live, out, 2 * LOOP, "agree loop");
        }
    }
    if (live != MPI_COMM_NULL) {
        MPI_Comm_free(&live);
    }
    return ft_finalize(3);
}
