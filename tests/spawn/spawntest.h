/*
 * spawntest.h -- helpers for the dynamic-process programs (tests/spawn), on
 * top of tests/mpi/mpitest.h.
 *
 * Each program is its own child: sp_init tells the job's processes (no
 * parent) from the spawned ones. A child checks what it sees, then
 * reports its error count to parent 0 and leaves (sp_child_end); parent 0
 * collects those counts (sp_children_errors) before mt_finalize, so that a
 * child's error fails the test even though only the parents' output
 * decides it.
 */
#ifndef ULMPI_TESTS_SPAWNTEST_H
#define ULMPI_TESTS_SPAWNTEST_H

#include "mpitest.h"

/* MPI_Init, mt_rank and mt_size (of this process's MPI_COMM_WORLD); returns
 * the parent intercommunicator, MPI_COMM_NULL in the job's own processes. */
static inline MPI_Comm sp_init(int* argc, char*** argv)
{
    MPI_Comm parent = MPI_COMM_NULL;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    MT_OK(MPI_Comm_get_parent(&parent));
    return parent;
}

/* An allreduce of the ranks over MPI_COMM_WORLD (a child's world works by
 * itself). */
static inline void sp_check_world(const char* what)
{
    int sum = -1;
    MT_OK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_CHECK(sum == mt_size * (mt_size - 1) / 2, "%s: world allreduce %d", what, sum);
}

/* MPI_Intercomm_merge of `inter` (the children with high = 1, the parents
 * with 0): the merged communicator holds both groups, the low one first,
 * and an allreduce of its ranks works; then it is freed. */
static inline void sp_merge_check(MPI_Comm inter, int high, const char* what)
{
    int lsize = 0, lrank = -1, rsize = 0;
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm merged;
    MT_OK(MPI_Intercomm_merge(inter, high, &merged));
    int msize = 0, mrank = -1, total = -1;
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    MT_CHECK(msize == lsize + rsize, "%s: merged size %d, want %d + %d", what, msize, lsize, rsize);
    MT_CHECK(mrank == (high ? rsize : 0) + lrank, "%s: merged rank %d (%s group, rank %d there)",
             what, mrank, high ? "high" : "low", lrank);
    MT_OK(MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, merged));
    MT_CHECK(total == msize * (msize - 1) / 2, "%s: merged allreduce %d", what, total);
    MT_OK(MPI_Comm_free(&merged));
}

/* A child's end: its error count to parent 0 (tag), then it leaves the
 * parents and finalizes. Returns main()'s exit status. */
static inline int sp_child_end(MPI_Comm* parent, int tag)
{
    MT_OK(MPI_Send(&mt_errors, 1, MPI_INT, 0, tag, *parent));
    MT_OK(MPI_Comm_disconnect(parent));
    MPI_Finalize();
    return mt_errors != 0;
}

/* Parent 0: every child's error count (sent by sp_child_end with tag). */
static inline void sp_children_errors(MPI_Comm inter, int tag, const char* what)
{
    int n = 0;
    if (mt_rank != 0) {
        return;
    }
    MPI_Comm_remote_size(inter, &n);
    for (int c = 0; c < n; ++c) {
        int errs = -1;
        MT_OK(MPI_Recv(&errs, 1, MPI_INT, c, tag, inter, MPI_STATUS_IGNORE));
        MT_CHECK(errs == 0, "%s: child %d found %d errors", what, c, errs);
    }
}

#endif /* ULMPI_TESTS_SPAWNTEST_H */
