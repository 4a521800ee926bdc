/*
 * ft_revoke -- MPIX_Comm_revoke during operations, on intercommunicators,
 * and with a failed member; agree and shrink on intercommunicators
 * (ULMPI_FT=ulfm, np 6; rank 5 is the victim).
 *
 *   collective  every rank but the last enters MPI_Allreduce on a duplicate
 *               of MPI_COMM_WORLD; the last revokes it instead: every
 *               survivor's allreduce ends with MPIX_ERR_REVOKED, every later
 *               operation on it (send, receive, probe, collective) raises
 *               MPIX_ERR_REVOKED, MPIX_Comm_is_revoked says so everywhere,
 *               and agree and shrink still work (a shrunk communicator that
 *               is not revoked);
 *   inter       an intercommunicator of the even and the odd ranks: an even
 *               rank revokes it while an odd one waits in a receive from the
 *               other side: the receive ends with MPIX_ERR_REVOKED, both
 *               groups see it revoked; agree over it ANDs both groups; its
 *               shrink is an intercommunicator of the same groups that works;
 *   failure     rank 5 (odd) dies: the intercommunicator reports it on both
 *               sides, the even ranks' own communicator does not; agree
 *               raises MPIX_ERR_PROC_FAILED until acknowledged, then ANDs the
 *               live contributions; shrink leaves groups of 3 and 2 that
 *               talk; a revoke by rank 0 of a duplicate that contains the
 *               dead rank reaches every survivor blocked in a receive on it.
 */
#include "fttest.h"

/* Bounded wait until comm is revoked here. */
static void wait_revoked(MPI_Comm c, const char* what)
{
    int flag = 0;
    double t0 = MPI_Wtime();
    while (!flag && MPI_Wtime() - t0 < FT_NOTICE_LIMIT) {
        MT_OK(MPIX_Comm_is_revoked(c, &flag));
        if (!flag) {
            mt_sleep_ms(1);
        }
    }
    MT_CHECK(flag, "%s: not revoked after %.0f s", what, FT_NOTICE_LIMIT);
}

static void revoked_everything(MPI_Comm c, int peer, const char* what)
{
    int x = 0, flag = 0;
    MPI_Request q;
    MPI_Status st;
    char w[128];
    snprintf(w, sizeof w, "%s: MPI_Send", what);
    FT_CLASS(MPI_Send(&x, 1, MPI_INT, peer, 1, c), MPIX_ERR_REVOKED, w);
    snprintf(w, sizeof w, "%s: MPI_Recv", what);
    FT_CLASS(MPI_Recv(&x, 1, MPI_INT, peer, 1, c, MPI_STATUS_IGNORE), MPIX_ERR_REVOKED, w);
    snprintf(w, sizeof w, "%s: MPI_Irecv + MPI_Wait", what);
    int err = MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 1, c, &q);
    if (err == MPI_SUCCESS) {
        err = MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    FT_CLASS(err, MPIX_ERR_REVOKED, w);
    snprintf(w, sizeof w, "%s: MPI_Iprobe", what);
    FT_CLASS(MPI_Iprobe(MPI_ANY_SOURCE, 1, c, &flag, &st), MPIX_ERR_REVOKED, w);
    snprintf(w, sizeof w, "%s: MPI_Barrier", what);
    FT_CLASS(MPI_Barrier(c), MPIX_ERR_REVOKED, w);
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rank = mt_rank, size = mt_size;
    if (size != 6) {
        if (rank == 0) {
            printf("ft_revoke needs 6 processes\n");
        }
        MPI_Finalize();
        return 1;
    }

    /* collective */
    {
        MPI_Comm d, s;
        int x = rank, y = 0, flag;
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        if (rank == size - 1) {
            mt_sleep_ms(50);
            MT_OK(MPIX_Comm_revoke(d));
        } else {
            FT_CLASS(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, d), MPIX_ERR_REVOKED,
                     "an allreduce that the revoker never joined");
        }
        wait_revoked(d, "revoked during a collective");
        revoked_everything(d, (rank + 1) % size, "after a revoke");
        flag = rank == 2 ? 0x6 : 0x7;
        MT_OK(MPIX_Comm_agree(d, &flag));
        MT_CHECK(flag == 0x6, "agree on a revoked communicator: 0x%x", (unsigned)flag);
        MT_OK(MPIX_Comm_shrink(d, &s));
        MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
        MT_OK(MPIX_Comm_is_revoked(s, &flag));
        MT_CHECK(flag == 0, "the shrink of a revoked communicator is revoked");
        MT_OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, s));
        MT_CHECK(y == size * (size - 1) / 2, "allreduce on the shrunk one: %d", y);
        MPI_Comm_free(&s);
        MPI_Comm_free(&d);
    }

    /* inter */
    MPI_Comm half, ic, ic2;
    const int even = rank % 2 == 0;
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    MT_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, even ? 1 : 0, 77, &ic));
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    {
        int x = 0, flag;
        if (rank == 1) {
            FT_CLASS(MPI_Recv(&x, 1, MPI_INT, 0, 9, ic, MPI_STATUS_IGNORE), MPIX_ERR_REVOKED,
                     "a receive on an intercommunicator the other side revoked");
        } else if (rank == 0) {
            mt_sleep_ms(30);
            MT_OK(MPIX_Comm_revoke(ic));
        }
        wait_revoked(ic, "intercommunicator");
        revoked_everything(ic, 0, "a revoked intercommunicator");
        flag = rank == 3 ? 0x5 : 0xf;
        MT_OK(MPIX_Comm_agree(ic, &flag));
        MT_CHECK(flag == 0x5, "agree on an intercommunicator: 0x%x", (unsigned)flag);
        MT_OK(MPIX_Comm_shrink(ic, &ic2));
        MPI_Comm_set_errhandler(ic2, MPI_ERRORS_RETURN);
        int inter = 0, ln = 0, rn = 0, lr = -1;
        MPI_Comm_test_inter(ic2, &inter);
        MPI_Comm_size(ic2, &ln);
        MPI_Comm_remote_size(ic2, &rn);
        MPI_Comm_rank(ic2, &lr);
        MT_CHECK(inter && ln == 3 && rn == 3 && lr == rank / 2,
                 "shrunk intercommunicator: inter %d, sizes %d/%d, rank %d", inter, ln, rn, lr);
        int v = rank, got = -1;
        MT_OK(MPI_Sendrecv(&v, 1, MPI_INT, lr, 4, &got, 1, MPI_INT, lr, 4, ic2,
                           MPI_STATUS_IGNORE));
        MT_CHECK(got == (even ? rank + 1 : rank - 1), "across the shrunk intercommunicator: %d",
                 got);
    }

    /* failure */
    MPI_Comm d3;
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d3));
    MPI_Comm_set_errhandler(d3, MPI_ERRORS_RETURN);
    ft_quiesce(MPI_COMM_WORLD, 5);
    if (rank == 5) {
        ft_die();
    }
    {
        ft_wait_failed(ic2, 1);
        MT_CHECK(ft_failed_count(ic2) == 1, "intercommunicator: %d failed", ft_failed_count(ic2));
        if (even) {
            MT_CHECK(ft_failed_count(half) == 0, "the even ranks' communicator reports %d failed",
                     ft_failed_count(half));
            MT_OK(MPI_Barrier(half));
        }
        int flag = rank == 0 ? 0x3 : 0xb, err;
        err = MPIX_Comm_agree(ic2, &flag);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "agree on an intercommunicator, unacknowledged");
        MT_OK(MPIX_Comm_failure_ack(ic2));
        flag = rank == 1 ? 0x9 : 0xb;
        MT_OK(MPIX_Comm_agree(ic2, &flag));
        MT_CHECK(flag == 0x9, "agree on an intercommunicator, acknowledged: 0x%x", (unsigned)flag);
        MPI_Comm ic3;
        MT_OK(MPIX_Comm_shrink(ic2, &ic3));
        MPI_Comm_set_errhandler(ic3, MPI_ERRORS_RETURN);
        int ln = 0, rn = 0, lr = -1;
        MPI_Comm_size(ic3, &ln);
        MPI_Comm_remote_size(ic3, &rn);
        MPI_Comm_rank(ic3, &lr);
        MT_CHECK(ln == (even ? 3 : 2) && rn == (even ? 2 : 3), "shrunk again: sizes %d/%d", ln,
                 rn);
        if (even) {
            for (int r = 0; r < rn && lr == 0; ++r) {
                int v = 100 + r;
                MT_OK(MPI_Send(&v, 1, MPI_INT, r, 5, ic3));
            }
        } else {
            int got = -1;
            MT_OK(MPI_Recv(&got, 1, MPI_INT, 0, 5, ic3, MPI_STATUS_IGNORE));
            MT_CHECK(got == 100 + lr, "over the twice shrunk intercommunicator: %d", got);
        }
        MPI_Comm_free(&ic3);
    }
    {
        int x = 0;
        if (rank == 0) {
            mt_sleep_ms(20);
            MT_OK(MPIX_Comm_revoke(d3));
        } else {
            FT_CLASS(MPI_Recv(&x, 1, MPI_INT, 0, 3, d3, MPI_STATUS_IGNORE), MPIX_ERR_REVOKED,
                     "a receive on a communicator with a dead member, revoked");
        }
        wait_revoked(d3, "revoked with a dead member");
    }
    MPI_Comm_free(&d3);
    MPI_Comm_free(&ic2);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
    return ft_finalize(5);
}
