/*
 * spawn_reuse: spawn slots given again. The parents (np of them) spawn
 * `nchild` copies of this program `rounds` times (argv[1], argv[2]) under
 * mpirun --spawn-slots nchild, so from the second round on every child
 * runs in a slot whose last process has just ended (mpirun waits for it to
 * end when the next spawn comes first). Each round: every parent and child
 * exchange a small message and a 200000-byte one (shared-memory buffers,
 * the rendezvous) over the intercommunicator, then merge and allreduce;
 * a child checks that nothing from an earlier round reaches it (the round
 * number is in every message) and reports its errors to parent 0.
 * Run without --spawn-slots it checks that spawning works by default.
 */
#include "spawntest.h"

#include <stdlib.h>

enum { kBig = 200000 };

static int child_main(MPI_Comm parent, int round)
{
    const int wrank = mt_rank;
    int rsize = 0;
    MT_OK(MPI_Comm_remote_size(parent, &rsize));
    char* big = malloc(kBig);
    for (int p = 0; p < rsize; ++p) {
        int got[2] = {-1, -1};
        MT_OK(MPI_Recv(got, 2, MPI_INT, p, 7, parent, MPI_STATUS_IGNORE));
        MT_CHECK(got[0] == round && got[1] == p, "child %d of round %d got (%d, %d) from parent %d",
                 wrank, round, got[0], got[1], p);
        MT_OK(MPI_Recv(big, kBig, MPI_CHAR, p, 8, parent, MPI_STATUS_IGNORE));
        int bad = 0;
        for (int i = 0; i < kBig; ++i) {
            bad += big[i] != (char)(round * 7 + p + i);
        }
        MT_CHECK(bad == 0, "child %d of round %d: %d bad bytes from parent %d", wrank, round, bad,
                 p);
        for (int i = 0; i < kBig; ++i) {
            big[i] = (char)(round * 5 + wrank + i);
        }
        int answer[2] = {round, wrank * 100 + p};
        MT_OK(MPI_Send(answer, 2, MPI_INT, p, 9, parent));
        MT_OK(MPI_Send(big, kBig, MPI_CHAR, p, 10, parent));
    }
    free(big);
    sp_merge_check(parent, 1, "child");
    return sp_child_end(&parent, 11);
}

int main(int argc, char** argv)
{
    MPI_Comm parent = sp_init(&argc, &argv);
    if (parent != MPI_COMM_NULL) {
        return child_main(parent, argc > 2 ? atoi(argv[2]) : -1);
    }
    const int rounds = argc > 1 ? atoi(argv[1]) : 4;
    const int nchild = argc > 2 ? atoi(argv[2]) : 1;
    char* big = malloc(kBig);
    for (int round = 0; round < rounds; ++round) {
        char rtext[16];
        snprintf(rtext, sizeof rtext, "%d", round);
        char* args[] = {"child", rtext, NULL};
        MPI_Comm inter;
        MT_OK(MPI_Comm_spawn(argv[0], args, nchild, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                             MPI_ERRCODES_IGNORE));
        if (inter == MPI_COMM_NULL) {
            break;
        }
        for (int c = 0; c < nchild; ++c) {
            int msg[2] = {round, mt_rank};
            MT_OK(MPI_Send(msg, 2, MPI_INT, c, 7, inter));
            for (int i = 0; i < kBig; ++i) {
                big[i] = (char)(round * 7 + mt_rank + i);
            }
            MT_OK(MPI_Send(big, kBig, MPI_CHAR, c, 8, inter));
        }
        for (int c = 0; c < nchild; ++c) {
            int got[2] = {-1, -1};
            MT_OK(MPI_Recv(got, 2, MPI_INT, c, 9, inter, MPI_STATUS_IGNORE));
            MT_CHECK(got[0] == round && got[1] == c * 100 + mt_rank,
                     "parent %d, round %d: got (%d, %d) from child %d", mt_rank, round, got[0],
                     got[1], c);
            MT_OK(MPI_Recv(big, kBig, MPI_CHAR, c, 10, inter, MPI_STATUS_IGNORE));
            int bad = 0;
            for (int i = 0; i < kBig; ++i) {
                bad += big[i] != (char)(round * 5 + c + i);
            }
            MT_CHECK(bad == 0, "parent %d, round %d: %d bad bytes from child %d", mt_rank, round,
                     bad, c);
        }
        char what[32];
        snprintf(what, sizeof what, "round %d", round);
        sp_merge_check(inter, 0, what);
        sp_children_errors(inter, 11, what);
        MT_OK(MPI_Comm_disconnect(&inter));
    }
    free(big);
    return mt_finalize();
}
