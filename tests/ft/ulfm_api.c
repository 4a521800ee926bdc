/*
 * ulfm_api -- the ULFM calls in a job where nothing fails (they must work
 * with and without mpirun --with-ft ulfm): revoke reaches every member and
 * interrupts a pending receive with MPIX_ERR_REVOKED; operations on a
 * revoked communicator raise MPIX_ERR_REVOKED but agree and shrink work;
 * agree ANDs the flags (blocking and nonblocking, many in a row); shrink
 * (and ishrink) of a communicator without failures is a working duplicate;
 * get_failed / failure_get_acked are empty; ack_failed acknowledges
 * nothing; the error classes and strings; the MPIX_FT attribute; a revoke
 * reaches processes that never called an MPIX_ function; agree
 * called where another member calls shrink raises MPI_ERR_OTHER at both.
 */
#include "mpitest.h"

#include <mpi-ext.h>

static void check_class(int code, int want, const char* what)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    MT_CHECK(cls == want, "%s: error class %d (%s), want %d", what, cls, mt_errname(code), want);
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int rank = mt_rank, size = mt_size;

    /* First of all (before any other MPIX_ call here): one process revokes,
     * the others, which never called an MPIX_ function, wait in a barrier
     * on the communicator and must see MPIX_ERR_REVOKED (without
     * --with-ft, the machinery was once made on first use only: they never
     * heard the revoke and waited forever; MPICH's ft/revoke_nofail). */
    {
        MPI_Comm d;
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        if (rank == size - 1) {
            MT_OK(MPIX_Comm_revoke(d));
        }
        check_class(MPI_Barrier(d), MPIX_ERR_REVOKED,
                    "a barrier on a communicator another process revoked");
        MT_OK(MPI_Comm_free(&d));
    }

    /* Error classes and strings. */
    MT_CHECK(MPIX_ERR_PROC_FAILED == 75 && MPIX_ERR_PROC_FAILED_PENDING == 76 && MPIX_ERR_REVOKED == 77,
             "error class values %d %d %d", MPIX_ERR_PROC_FAILED, MPIX_ERR_PROC_FAILED_PENDING,
             MPIX_ERR_REVOKED);
    {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MT_OK(MPI_Error_string(MPIX_ERR_REVOKED, s, &len));
        MT_CHECK(strstr(s, "revoked") != NULL, "MPI_Error_string(MPIX_ERR_REVOKED) = '%s'", s);
        MT_OK(MPI_Error_string(MPIX_ERR_PROC_FAILED, s, &len));
        MT_CHECK(strstr(s, "failed") != NULL, "MPI_Error_string(MPIX_ERR_PROC_FAILED) = '%s'", s);
    }
    /* The MPIX_FT attribute: present on every communicator. */
    {
        int* v = NULL;
        int flag = 0;
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &v, &flag));
        MT_CHECK(flag && v != NULL && (*v == 0 || *v == 1), "MPIX_FT: flag %d", flag);
    }

    /* Agree: the AND of every flag, many times over. */
    for (int i = 0; i < 50; ++i) {
        int flag = ~(1 << (rank % 31));
        MT_OK(MPIX_Comm_agree(MPI_COMM_WORLD, &flag));
        int want = ~0;
        for (int r = 0; r < size; ++r) {
            want &= ~(1 << (r % 31));
        }
        MT_CHECK(flag == want, "agree %d: flag 0x%x, want 0x%x", i, (unsigned)flag, (unsigned)want);
    }
    {
        int flags[4];
        MPI_Request reqs[4];
        for (int i = 0; i < 4; ++i) {
            flags[i] = rank == i % size ? 0 : 1;
            MT_OK(MPIX_Comm_iagree(MPI_COMM_WORLD, &flags[i], &reqs[i]));
        }
        MT_OK(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 4; ++i) {
            MT_CHECK(flags[i] == 0, "iagree %d: flag %d", i, flags[i]);
        }
    }

    /* No failures: nothing to get or acknowledge. */
    {
        MPI_Group g;
        int n = -1, acked = -1;
        MT_OK(MPIX_Comm_get_failed(MPI_COMM_WORLD, &g));
        MPI_Group_size(g, &n);
        MT_CHECK(n == 0, "get_failed: %d processes", n);
        MPI_Group_free(&g);
        MT_OK(MPIX_Comm_ack_failed(MPI_COMM_WORLD, 10, &acked));
        MT_CHECK(acked == 0, "ack_failed: %d acknowledged", acked);
        MT_OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
        MT_OK(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &g));
        MPI_Group_size(g, &n);
        MT_CHECK(n == 0, "failure_get_acked: %d processes", n);
        MPI_Group_free(&g);
    }

    /* Shrink without failures: a working communicator of everyone. */
    {
        MPI_Comm s, t;
        MPI_Request req;
        int r2 = -1, n2 = -1, sum = 0, cmp = -1;
        MT_OK(MPIX_Comm_shrink(MPI_COMM_WORLD, &s));
        MPI_Comm_rank(s, &r2);
        MPI_Comm_size(s, &n2);
        MT_CHECK(r2 == rank && n2 == size, "shrink: rank %d of %d", r2, n2);
        MT_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, s));
        MT_CHECK(sum == size * (size - 1) / 2, "allreduce on the shrunk communicator: %d", sum);
        MT_OK(MPI_Comm_compare(s, MPI_COMM_WORLD, &cmp));
        MT_CHECK(cmp == MPI_CONGRUENT, "shrunk vs world: %d", cmp);
        MT_OK(MPIX_Comm_ishrink(s, &t, &req));
        MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MT_CHECK(t != MPI_COMM_NULL, "ishrink gave MPI_COMM_NULL");
        if (t != MPI_COMM_NULL) {
            MT_OK(MPI_Barrier(t));
            MPI_Comm_free(&t);
        }
        MPI_Comm_free(&s);
    }

    /* Revoke: one process revokes; everyone's pending receive and later
     * operations on it raise MPIX_ERR_REVOKED; agree and shrink still work. */
    {
        MPI_Comm d;
        MPI_Request req;
        int buf = 0, flag = 0, err;
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        MT_OK(MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 5, d, &req));
        MT_OK(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == size - 1) {
            MT_OK(MPIX_Comm_revoke(d));
        }
        err = MPI_Wait(&req, MPI_STATUS_IGNORE);
        check_class(err, MPIX_ERR_REVOKED, "a receive pending on a revoked communicator");
        MT_OK(MPIX_Comm_is_revoked(d, &flag));
        MT_CHECK(flag == 1, "is_revoked: %d", flag);
        err = MPI_Send(&buf, 1, MPI_INT, (rank + 1) % size, 6, d);
        check_class(err, MPIX_ERR_REVOKED, "MPI_Send on a revoked communicator");
        err = MPI_Barrier(d);
        check_class(err, MPIX_ERR_REVOKED, "MPI_Barrier on a revoked communicator");
        flag = 1;
        MT_OK(MPIX_Comm_agree(d, &flag));
        MT_CHECK(flag == 1, "agree on a revoked communicator: %d", flag);
        MPI_Comm s;
        MT_OK(MPIX_Comm_shrink(d, &s));
        MT_OK(MPI_Barrier(s));
        MT_OK(MPIX_Comm_is_revoked(s, &flag));
        MT_CHECK(flag == 0, "a shrunk revoked communicator is not revoked");
        MPI_Comm_free(&s);
        MT_OK(MPI_Comm_free(&d));
    }
    /* A program error: the last process shrinks where the others agree (on
     * a revoked communicator, as a process whose collective succeeded may
     * when another's failed). Both calls raise MPI_ERR_OTHER everywhere,
     * blocking and nonblocking, instead of waiting for each other. */
    if (size >= 2) {
        MPI_Comm d, s = MPI_COMM_NULL;
        MPI_Request req;
        int flag = 1, err;
        MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        MT_OK(MPIX_Comm_revoke(d));
        for (int nb = 0; nb < 2; ++nb) {
            if (rank == size - 1) {
                if (nb) {
                    MT_OK(MPIX_Comm_ishrink(d, &s, &req));
                    err = MPI_Wait(&req, MPI_STATUS_IGNORE);
                } else {
                    err = MPIX_Comm_shrink(d, &s);
                }
                check_class(err, MPI_ERR_OTHER, "shrink where the others agree");
                MT_CHECK(s == MPI_COMM_NULL, "shrink where the others agree made a communicator");
            } else {
                if (nb) {
                    MT_OK(MPIX_Comm_iagree(d, &flag, &req));
                    err = MPI_Wait(&req, MPI_STATUS_IGNORE);
                } else {
                    err = MPIX_Comm_agree(d, &flag);
                }
                check_class(err, MPI_ERR_OTHER, "agree where another shrinks");
            }
        }
        MT_OK(MPI_Comm_free(&d));
    }
    /* MPI_COMM_WORLD was never revoked: it still works. */
    MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    return mt_finalize();
}
