/*
 * spawn_basic: MPI_Comm_spawn of this program, MPI_Comm_get_parent, traffic
 * over the intercommunicator both ways, MPI_Intercomm_merge and a
 * collective over the merged communicator, MPI_UNIVERSE_SIZE.
 *
 * Parents (the job's ranks, np of them) spawn `nchild` copies (argv[1],
 * default 2) with root 0 and MPI_ARGV_NULL. Every child: MPI_COMM_WORLD of
 * nchild ranks, a parent intercommunicator whose remote group has np
 * ranks; every parent rank sends its rank to every child, every child
 * answers with rank * 100 + parent rank; both sides merge (children high)
 * and sum the merged ranks, then disconnect.
 */
#include "mpitest.h"

static int child_main(MPI_Comm parent)
{
    int wsize = 0, wrank = 0, rsize = 0, lsize = 0, flag = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MT_OK(MPI_Comm_remote_size(parent, &rsize));
    MT_OK(MPI_Comm_size(parent, &lsize));
    MT_OK(MPI_Comm_test_inter(parent, &flag));
    MT_CHECK(flag, "the parent communicator is not an intercommunicator");
    MT_CHECK(lsize == wsize, "local size of the parent communicator %d, world %d", lsize, wsize);
    /* My world works by itself. */
    int sum = 0;
    MT_OK(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MT_CHECK(sum == wsize * (wsize - 1) / 2, "world allreduce %d", sum);
    for (int p = 0; p < rsize; ++p) {
        int got = -1;
        MT_OK(MPI_Recv(&got, 1, MPI_INT, p, 7, parent, MPI_STATUS_IGNORE));
        MT_CHECK(got == p, "child %d got %d from parent %d", wrank, got, p);
        int answer = wrank * 100 + p;
        MT_OK(MPI_Send(&answer, 1, MPI_INT, p, 8, parent));
    }
    MPI_Comm merged;
    MT_OK(MPI_Intercomm_merge(parent, 1, &merged));
    int msize = 0, mrank = 0, total = 0;
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    MT_CHECK(msize == wsize + rsize, "merged size %d", msize);
    MT_CHECK(mrank == rsize + wrank, "merged rank %d (high: after the parents)", mrank);
    MT_OK(MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, merged));
    MT_CHECK(total == msize * (msize - 1) / 2, "merged allreduce %d", total);
    MT_OK(MPI_Comm_free(&merged));
    /* Report the errors to the parents, then leave them. */
    MT_OK(MPI_Send(&mt_errors, 1, MPI_INT, 0, 9, parent));
    MT_OK(MPI_Comm_disconnect(&parent));
    MPI_Comm again;
    MPI_Comm_get_parent(&again);
    MT_CHECK(again == MPI_COMM_NULL, "MPI_Comm_get_parent after disconnect is not MPI_COMM_NULL");
    MPI_Finalize();
    return mt_errors != 0;
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    MPI_Comm parent;
    MT_OK(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) {
        return child_main(parent);
    }
    const int nchild = argc > 1 ? atoi(argv[1]) : 2;
    int* usize = NULL;
    int flag = 0;
    MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag));
    MT_CHECK(flag && *usize >= mt_size + nchild, "MPI_UNIVERSE_SIZE %d (set %d) below %d + %d",
             flag ? *usize : -1, flag, mt_size, nchild);

    MPI_Comm inter;
    int errcodes[64];
    for (int i = 0; i < 64; ++i) {
        errcodes[i] = -1;
    }
    MT_OK(MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, nchild, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                         errcodes));
    for (int i = 0; i < nchild; ++i) {
        MT_CHECK(errcodes[i] == MPI_SUCCESS, "errcodes[%d] = %d", i, errcodes[i]);
    }
    int rsize = 0, lsize = 0, lrank = -1;
    MT_OK(MPI_Comm_remote_size(inter, &rsize));
    MT_OK(MPI_Comm_size(inter, &lsize));
    MT_OK(MPI_Comm_rank(inter, &lrank));
    MT_CHECK(rsize == nchild, "remote size %d, spawned %d", rsize, nchild);
    MT_CHECK(lsize == mt_size && lrank == mt_rank, "local size %d rank %d", lsize, lrank);
    for (int c = 0; c < nchild; ++c) {
        MT_OK(MPI_Send(&mt_rank, 1, MPI_INT, c, 7, inter));
    }
    for (int c = 0; c < nchild; ++c) {
        int got = -1;
        MT_OK(MPI_Recv(&got, 1, MPI_INT, c, 8, inter, MPI_STATUS_IGNORE));
        MT_CHECK(got == c * 100 + mt_rank, "parent %d got %d from child %d", mt_rank, got, c);
    }
    MPI_Comm merged;
    MT_OK(MPI_Intercomm_merge(inter, 0, &merged));
    int msize = 0, mrank = 0, total = 0;
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    MT_CHECK(msize == mt_size + nchild && mrank == mt_rank, "merged size %d rank %d", msize, mrank);
    MT_OK(MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, merged));
    MT_CHECK(total == msize * (msize - 1) / 2, "merged allreduce %d", total);
    MT_OK(MPI_Comm_free(&merged));
    if (mt_rank == 0) {
        for (int c = 0; c < nchild; ++c) {
            int errs = -1;
            MT_OK(MPI_Recv(&errs, 1, MPI_INT, c, 9, inter, MPI_STATUS_IGNORE));
            MT_CHECK(errs == 0, "child %d found %d errors", c, errs);
        }
    }
    MT_OK(MPI_Comm_disconnect(&inter));
    return mt_finalize();
}
