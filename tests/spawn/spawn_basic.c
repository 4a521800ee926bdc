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
#include "spawntest.h"

static int child_main(MPI_Comm parent)
{
    const int wsize = mt_size, wrank = mt_rank;
    int rsize = 0, lsize = 0, flag = 0;
    MT_OK(MPI_Comm_remote_size(parent, &rsize));
    MT_OK(MPI_Comm_size(parent, &lsize));
    MT_OK(MPI_Comm_test_inter(parent, &flag));
    MT_CHECK(flag, "the parent communicator is not an intercommunicator");
    MT_CHECK(lsize == wsize, "local size of the parent communicator %d, world %d", lsize, wsize);
    sp_check_world("child");
    for (int p = 0; p < rsize; ++p) {
        int got = -1;
        MT_OK(MPI_Recv(&got, 1, MPI_INT, p, 7, parent, MPI_STATUS_IGNORE));
        MT_CHECK(got == p, "child %d got %d from parent %d", wrank, got, p);
        int answer = wrank * 100 + p;
        MT_OK(MPI_Send(&answer, 1, MPI_INT, p, 8, parent));
    }
    sp_merge_check(parent, 1, "child");
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
    MPI_Comm parent = sp_init(&argc, &argv);
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
    sp_merge_check(inter, 0, "parent");
    sp_children_errors(inter, 9, "spawn");
    MT_OK(MPI_Comm_disconnect(&inter));
    return mt_finalize();
}
