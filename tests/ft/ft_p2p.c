/*
 * ft_p2p -- point-to-point after a process failure (ULMPI_FT=ulfm, np >= 4;
 * the victim is the last rank).
 *
 * Before the victim dies, the others post operations that depend on it: a
 * small and a large (rendezvous) receive from it, a large send to it that it
 * never matches, and receives from MPI_ANY_SOURCE on MPI_COMM_WORLD and on a
 * duplicate. Then it kills itself (SIGKILL) and the survivors check:
 *   - every operation with the victim completes with MPIX_ERR_PROC_FAILED,
 *     and so do new sends and receives naming it;
 *   - MPIX_Comm_get_failed names it (in every communicator that contains it);
 *     MPIX_Comm_failure_get_acked is empty until MPIX_Comm_failure_ack;
 *   - a pending ANY_SOURCE receive raises MPIX_ERR_PROC_FAILED_PENDING in
 *     MPI_Wait and MPI_Test and stays pending; a blocking one and a blocking
 *     MPI_Probe raise MPIX_ERR_PROC_FAILED; after the acknowledgement
 *     (MPIX_Comm_failure_ack on one communicator, MPIX_Comm_ack_failed on
 *     the other, which acknowledges only its own) they complete normally;
 *   - a communicator without the victim reports nothing: its wildcard
 *     receives and collectives work without any acknowledgement;
 *   - traffic between live processes goes on undisturbed (a checked ring,
 *     eager and rendezvous sizes);
 *   - a collective on MPI_COMM_WORLD raises MPIX_ERR_PROC_FAILED at every
 *     survivor, and MPI_Error_string of the code names the failed rank;
 *   - MPI_Finalize works after the failure (ft_finalize).
 */
#include "fttest.h"

#define BIG (1 << 20)

static void live_ring(MPI_Comm live, int rounds, size_t bytes)
{
    int r, n;
    MPI_Comm_rank(live, &r);
    MPI_Comm_size(live, &n);
    unsigned char* out = malloc(bytes);
    unsigned char* in = malloc(bytes);
    for (int i = 0; i < rounds; ++i) {
        mt_fill(out, bytes, (unsigned)(r * 1000 + i));
        MT_OK(MPI_Sendrecv(out, (int)bytes, MPI_BYTE, (r + 1) % n, 30, in, (int)bytes, MPI_BYTE,
                           (r + n - 1) % n, 30, live, MPI_STATUS_IGNORE));
        MT_VERIFY(in, bytes, (unsigned)(((r + n - 1) % n) * 1000 + i), "ring between survivors");
    }
    free(out);
    free(in);
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rank = mt_rank, size = mt_size, victim = size - 1;
    if (size < 4) {
        if (rank == 0) {
            printf("ft_p2p needs 4 processes or more\n");
        }
        MPI_Finalize();
        return 1;
    }
    MPI_Comm dup, live;
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? MPI_UNDEFINED : 0, rank, &live));

    int small = 0, any_buf = -1, dup_buf = -1;
    char* big_in = malloc(BIG);
    char* big_out = malloc(BIG);
    mt_fill(big_out, BIG, 7);
    MPI_Request small_req = MPI_REQUEST_NULL, big_rreq = MPI_REQUEST_NULL;
    MPI_Request big_sreq = MPI_REQUEST_NULL, any_req = MPI_REQUEST_NULL;
    MPI_Request dup_req = MPI_REQUEST_NULL;
    if (rank == 0) {
        MT_OK(MPI_Irecv(&small, 1, MPI_INT, victim, 1, MPI_COMM_WORLD, &small_req));
        MT_OK(MPI_Irecv(big_in, BIG, MPI_BYTE, victim, 2, MPI_COMM_WORLD, &big_rreq));
        MT_OK(MPI_Irecv(&any_buf, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &any_req));
        MT_OK(MPI_Irecv(&dup_buf, 1, MPI_INT, MPI_ANY_SOURCE, 5, dup, &dup_req));
    }
    if (rank == 1) {
        MT_OK(MPI_Isend(big_out, BIG, MPI_BYTE, victim, 3, MPI_COMM_WORLD, &big_sreq));
    }
    ft_quiesce(MPI_COMM_WORLD, victim);
    if (rank == victim) {
        ft_die();
    }

    /* Operations that depend on the victim fail. */
    if (rank == 0) {
        FT_CLASS(MPI_Wait(&small_req, MPI_STATUS_IGNORE), MPIX_ERR_PROC_FAILED,
                 "a receive posted from the victim");
        FT_CLASS(MPI_Wait(&big_rreq, MPI_STATUS_IGNORE), MPIX_ERR_PROC_FAILED,
                 "a large receive posted from the victim");
    }
    if (rank == 1) {
        FT_CLASS(MPI_Wait(&big_sreq, MPI_STATUS_IGNORE), MPIX_ERR_PROC_FAILED,
                 "a rendezvous send to the victim");
    }
    ft_wait_failed(MPI_COMM_WORLD, 1);
    {
        int x = 0, err;
        err = MPI_Recv(&x, 1, MPI_INT, victim, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "MPI_Recv from the victim");
        err = MPI_Send(big_out, BIG, MPI_BYTE, victim, 6, MPI_COMM_WORLD);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "MPI_Send (rendezvous) to the victim");
        /* A nonblocking send to a known-failed process fails at once or
         * in its completion. */
        MPI_Request q = MPI_REQUEST_NULL;
        int e2 = MPI_Isend(&x, 1, MPI_INT, victim, 6, dup, &q);
        if (e2 == MPI_SUCCESS) {
            e2 = MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        FT_CLASS(e2, MPIX_ERR_PROC_FAILED, "MPI_Isend to the victim on a duplicate");
        /* MPI_Error_string names the failed process. */
        char s[MPI_MAX_ERROR_STRING];
        char want[32];
        int len = 0;
        MT_OK(MPI_Error_string(err, s, &len));
        snprintf(want, sizeof want, "rank %d", victim);
        MT_CHECK(strstr(s, want) != NULL, "MPI_Error_string(%d) = '%s' does not name %s", err, s,
                 want);
    }

    /* Who failed: on every communicator that contains the victim. */
    for (int k = 0; k < 2; ++k) {
        MPI_Comm c = k == 0 ? MPI_COMM_WORLD : dup;
        MPI_Group g;
        int n = -1;
        MT_OK(MPIX_Comm_get_failed(c, &g));
        MPI_Group_size(g, &n);
        MT_CHECK(n == 1, "get_failed: %d processes, want 1", n);
        if (n == 1) {
            int r = ft_group_rank_in(g, 0, c);
            MT_CHECK(r == victim, "get_failed names rank %d, want %d", r, victim);
        }
        MPI_Group_free(&g);
        MT_OK(MPIX_Comm_failure_get_acked(c, &g));
        MPI_Group_size(g, &n);
        MT_CHECK(n == 0, "failure_get_acked before any acknowledgement: %d processes", n);
        MPI_Group_free(&g);
    }
    MT_CHECK(ft_failed_count(live) == 0, "a communicator without the victim reports %d failed",
             ft_failed_count(live));

    /* Live traffic goes on; the communicator without the victim needs no
     * acknowledgement for wildcards or collectives. */
    live_ring(live, 50, 64);
    live_ring(live, 5, BIG);
    {
        int lr, ln, v = -1, sum = 0;
        MPI_Comm_rank(live, &lr);
        MPI_Comm_size(live, &ln);
        if (lr == 0) {
            for (int i = 1; i < ln; ++i) {
                MPI_Status st;
                MT_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 8, live, &st));
                MT_CHECK(v == st.MPI_SOURCE * 3, "wildcard on the live communicator: %d from %d",
                         v, st.MPI_SOURCE);
            }
        } else {
            v = lr * 3;
            MT_OK(MPI_Send(&v, 1, MPI_INT, 0, 8, live));
        }
        MT_OK(MPI_Allreduce(&lr, &sum, 1, MPI_INT, MPI_SUM, live));
        MT_CHECK(sum == ln * (ln - 1) / 2, "allreduce on the live communicator: %d", sum);
    }

    /* ANY_SOURCE on communicators with an unacknowledged failure. */
    if (rank == 0) {
        int flag = 1, x = 0, err;
        MPI_Status st;
        err = MPI_Wait(&any_req, MPI_STATUS_IGNORE);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED_PENDING, "MPI_Wait on a pending ANY_SOURCE receive");
        MT_CHECK(any_req != MPI_REQUEST_NULL, "the pending ANY_SOURCE request was freed");
        err = MPI_Test(&any_req, &flag, MPI_STATUS_IGNORE);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED_PENDING, "MPI_Test on a pending ANY_SOURCE receive");
        MT_CHECK(!flag && any_req != MPI_REQUEST_NULL, "MPI_Test: flag %d", flag);
        err = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "a blocking ANY_SOURCE receive");
        err = MPI_Probe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "a blocking ANY_SOURCE probe");
        err = MPI_Wait(&dup_req, MPI_STATUS_IGNORE);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED_PENDING, "ANY_SOURCE receive on the duplicate");
        /* Acknowledge on MPI_COMM_WORLD only. */
        MT_OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
        MPI_Group g;
        int n = -1;
        MT_OK(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &g));
        MPI_Group_size(g, &n);
        MT_CHECK(n == 1, "failure_get_acked after failure_ack: %d processes", n);
        MPI_Group_free(&g);
        err = MPI_Test(&dup_req, &flag, MPI_STATUS_IGNORE);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED_PENDING,
                 "the duplicate's wildcard after acknowledging on MPI_COMM_WORLD only");
        int acked = -1;
        MT_OK(MPIX_Comm_ack_failed(dup, 1, &acked));
        MT_CHECK(acked == 1, "MPIX_Comm_ack_failed: %d acknowledged", acked);
        MT_OK(MPIX_Comm_failure_get_acked(dup, &g));
        MPI_Group_size(g, &n);
        MT_CHECK(n == 1, "failure_get_acked after ack_failed: %d processes", n);
        MPI_Group_free(&g);
    }
    MT_OK(MPI_Barrier(live)); /* rank 0 acknowledged: now the matches */
    if (rank == 1) {
        int v = 41, w = 42, u = 43;
        MT_OK(MPI_Send(&v, 1, MPI_INT, 0, 4, MPI_COMM_WORLD));
        MT_OK(MPI_Send(&w, 1, MPI_INT, 0, 5, dup));
        MT_OK(MPI_Send(&u, 1, MPI_INT, 0, 4, MPI_COMM_WORLD));
    }
    if (rank == 0) {
        MPI_Status st;
        int u = 0;
        MT_OK(MPI_Wait(&any_req, &st));
        MT_CHECK(any_buf == 41 && st.MPI_SOURCE == 1, "the acknowledged wildcard got %d from %d",
                 any_buf, st.MPI_SOURCE);
        MT_OK(MPI_Wait(&dup_req, &st));
        MT_CHECK(dup_buf == 42 && st.MPI_SOURCE == 1, "the duplicate's wildcard got %d from %d",
                 dup_buf, st.MPI_SOURCE);
        MT_OK(MPI_Recv(&u, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st));
        MT_CHECK(u == 43, "a blocking wildcard after the acknowledgement got %d", u);
    }

    /* A collective on MPI_COMM_WORLD fails at every survivor. */
    {
        int x = rank, y = 0, err;
        err = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "MPI_Allreduce on MPI_COMM_WORLD");
        err = MPI_Barrier(dup);
        FT_CLASS(err, MPIX_ERR_PROC_FAILED, "MPI_Barrier on the duplicate");
    }
    MT_OK(MPI_Barrier(live));
    free(big_in);
    free(big_out);
    MPI_Comm_free(&live);
    MPI_Comm_free(&dup);
    return ft_finalize(size - 1);
}
