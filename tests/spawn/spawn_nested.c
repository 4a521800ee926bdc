/*
 * spawn_nested: spawned processes spawn in turn (a tree: depth argv[1],
 * default 2, two children per process, spawned one at a time on
 * MPI_COMM_WORLD), as MPICH's concurrent_spawns does. Each process sums its
 * subtree's size and error count from its children and sends them to its
 * parent; the root checks the size (2^(depth+1) - 1 processes) and prints
 * "No Errors". Every process then finalizes: a spawned process's
 * MPI_Finalize fences with its own MPI_COMM_WORLD only, also after it
 * spawned (it once went to the job's fence and waited forever).
 */
#include "mpitest.h"

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    const int depth = argc > 1 ? atoi(argv[1]) : 2;
    int report[2] = {1, 0}; /* processes in my subtree, errors */
    if (depth > 0) {
        char next[16];
        snprintf(next, sizeof next, "%d", depth - 1);
        char* args[] = {next, NULL};
        for (int i = 0; i < 2; ++i) {
            MPI_Comm child;
            MT_OK(MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child,
                                 MPI_ERRCODES_IGNORE));
            int sub[2] = {0, 0};
            MT_OK(MPI_Recv(sub, 2, MPI_INT, 0, 1, child, MPI_STATUS_IGNORE));
            report[0] += sub[0];
            report[1] += sub[1];
            MT_OK(MPI_Comm_disconnect(&child));
        }
    }
    report[1] += mt_errors;
    if (parent != MPI_COMM_NULL) {
        MT_OK(MPI_Send(report, 2, MPI_INT, 0, 1, parent));
        MT_OK(MPI_Comm_disconnect(&parent));
    } else {
        const int want = (1 << (depth + 1)) - 1;
        if (report[0] != want) {
            printf("the tree has %d processes, not %d\n", report[0], want);
            ++report[1];
        }
        printf(report[1] == 0 ? "No Errors\n" : " Found %d errors\n", report[1]);
        fflush(stdout);
    }
    MPI_Finalize();
    return report[1] != 0;
}
