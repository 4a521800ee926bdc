/*
 * fttest.h -- helpers for the process fault-tolerance programs (tests/ft),
 * on top of tests/mpi/mpitest.h.
 *
 * The programs run with ULMPI_FT=ulfm (or mpirun --with-ft ulfm) and set
 * MPI_ERRORS_RETURN on every communicator they use. A victim ends itself
 * with raise(SIGKILL) at the chosen point (ft_die). mpitest's mt_finalize
 * cannot be used once a process has failed (it gathers over
 * MPI_COMM_WORLD), so the survivors end with ft_finalize: they acknowledge
 * the failures, shrink MPI_COMM_WORLD, check that it holds exactly the
 * expected number of processes, sum their error counts over it, and the
 * first survivor prints "No Errors" (or " Found N errors"); then
 * MPI_Finalize, which must work after failures.
 *
 * Every wait for a failure notice is bounded (ft_wait_failed): a notice
 * that never comes is an error, not a hang.
 */
#ifndef ULMPI_TESTS_FTTEST_H
#define ULMPI_TESTS_FTTEST_H

#include "mpitest.h"

#include <mpi-ext.h>
#include <signal.h>
#include <unistd.h>

/* Seconds a survivor waits for a failure notice before counting an error. */
#define FT_NOTICE_LIMIT 20.0

static inline void ft_init(int* argc, char*** argv)
{
    mt_init(argc, argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

/* The calling process fails here: SIGKILL, no cleanup, no MPI_Finalize. */
static inline void ft_die(void)
{
    fflush(stdout);
    fflush(stderr);
    raise(SIGKILL);
    for (;;) {
        pause();
    }
}

#define FT_TAG_PAST 2147482000

/* A barrier on comm after which `victim` (a rank of comm) may die: a
 * barrier can end at the victim before it ends everywhere, so every other
 * process then tells the victim it is past it (an eager 0-byte send, done
 * locally), and the victim waits for all of them. */
static inline void ft_quiesce(MPI_Comm comm, int victim)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    MT_OK(MPI_Barrier(comm));
    if (r == victim) {
        for (int i = 0; i < n; ++i) {
            if (i != victim) {
                MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, i, FT_TAG_PAST, comm, MPI_STATUS_IGNORE));
            }
        }
    } else {
        MT_OK(MPI_Send(NULL, 0, MPI_BYTE, victim, FT_TAG_PAST, comm));
    }
}

static inline int ft_class(int code)
{
    int cls = -1;
    if (code == MPI_SUCCESS) {
        return MPI_SUCCESS;
    }
    MPI_Error_class(code, &cls);
    return cls;
}

/* Failed processes known on comm (MPIX_Comm_get_failed). */
static inline int ft_failed_count(MPI_Comm comm)
{
    MPI_Group g;
    int n = -1;
    if (MPIX_Comm_get_failed(comm, &g) != MPI_SUCCESS) {
        return -1;
    }
    MPI_Group_size(g, &n);
    MPI_Group_free(&g);
    return n;
}

/* Waits (bounded) until comm knows of at least n failed processes; returns
 * whether it did. Counts an error when not. */
static inline int ft_wait_failed(MPI_Comm comm, int n)
{
    double t0 = MPI_Wtime();
    while (ft_failed_count(comm) < n) {
        if (MPI_Wtime() - t0 > FT_NOTICE_LIMIT) {
            mt_fail(__FILE__, __LINE__, "no notice of %d failed process(es) after %.0f s", n,
                    FT_NOTICE_LIMIT);
            return 0;
        }
        mt_sleep_ms(1);
    }
    return 1;
}

/* The rank in comm of the i-th failed process of `failed` (a group). */
static inline int ft_group_rank_in(MPI_Group failed, int i, MPI_Comm comm)
{
    MPI_Group cg;
    int r = MPI_UNDEFINED;
    MPI_Comm_group(comm, &cg);
    MPI_Group_translate_ranks(failed, 1, &i, cg, &r);
    MPI_Group_free(&cg);
    return r;
}

/* A communicator that works: an allreduce of the ranks, and every other
 * rank's message through a wildcard receive at rank 0. */
static inline void ft_check_works(MPI_Comm c, const char* what)
{
    int sn = -1, sr = -1, sum = -1;
    MPI_Comm_size(c, &sn);
    MPI_Comm_rank(c, &sr);
    MT_OK(MPI_Allreduce(&sr, &sum, 1, MPI_INT, MPI_SUM, c));
    MT_CHECK(sum == sn * (sn - 1) / 2, "%s: allreduce %d", what, sum);
    if (sr == 0) {
        for (int i = 1; i < sn; ++i) {
            int v = -1;
            MPI_Status st;
            MT_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, c, &st));
            MT_CHECK(v == st.MPI_SOURCE, "%s: wildcard got %d from %d", what, v, st.MPI_SOURCE);
        }
    } else {
        MT_OK(MPI_Send(&sr, 1, MPI_INT, 0, 3, c));
    }
}

/* Checks that `code` is of class `cls`; `what` names the operation. */
#define FT_CLASS(code, cls, what)                                                               \
    do {                                                                                        \
        int ft_c_ = ft_class(code);                                                             \
        MT_CHECK(ft_c_ == (cls), "%s: error class %d (%s), want %s", (what), ft_c_,             \
                 mt_errname(code), #cls);                                                       \
    } while (0)

/* The survivors' end (see the top). `survivors`: how many processes of
 * MPI_COMM_WORLD are expected alive. Returns main()'s exit status. */
static inline int ft_finalize(int survivors)
{
    MPI_Comm s = MPI_COMM_NULL;
    int total = 0, n = -1, r = -1, rc;
    MPIX_Comm_failure_ack(MPI_COMM_WORLD);
    rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &s);
    if (rc != MPI_SUCCESS || s == MPI_COMM_NULL) {
        mt_fail(__FILE__, __LINE__, "MPIX_Comm_shrink(MPI_COMM_WORLD) at the end: %s",
                mt_errname(rc));
        fprintf(stderr, "[%d] Found errors (no shrunk communicator)\n", mt_rank);
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    MPI_Comm_size(s, &n);
    MPI_Comm_rank(s, &r);
    MT_CHECK(n == survivors, "the survivors' communicator has %d processes, want %d", n,
             survivors);
    rc = MPI_Allreduce(&mt_errors, &total, 1, MPI_INT, MPI_SUM, s);
    if (rc != MPI_SUCCESS) {
        mt_fail(__FILE__, __LINE__, "MPI_Allreduce over the survivors: %s", mt_errname(rc));
        total = mt_errors;
    }
    if (r == 0) {
        if (total == 0 && mt_errors == 0) {
            printf("No Errors\n");
        } else {
            printf(" Found %d errors\n", total > mt_errors ? total : mt_errors);
        }
        fflush(stdout);
    }
    MPI_Comm_free(&s);
    rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "[%d] MPI_Finalize after failures returned %d\n", mt_rank, rc);
        return 1;
    }
    return mt_errors == 0 ? 0 : 1;
}

#endif /* ULMPI_TESTS_FTTEST_H */
