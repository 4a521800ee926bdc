/*
 * msg_cost: instructions per message of the nonblocking small-message path,
 * for callgrind (tools/bench/msg_cost runs it). Rank 1 posts a window of 64
 * MPI_Irecv, rank 0 then sends 64 MPI_Isend and calls MPI_Waitall, and only
 * then does rank 1 call MPI_Waitall, with every message already in its
 * FIFO. Named POSIX semaphores hand the turn over, so no collected MPI call
 * waits for the other rank: the counts of MPI_Isend + MPI_Waitall (rank 0)
 * and MPI_Irecv + MPI_Waitall (rank 1) are the library's cost, not polling.
 * The sender must complete its sends alone: keep the size small (on ulmpi
 * up to the shm slot's 120 bytes; Open MPI's sender (vader) waited for the
 * receiver at 64 B and 512 B and hung: 8 B is the size that compares).
 *
 *   msg_cost <windows> <bytes> <name>   (name: unique per concurrent run)
 */
#include <mpi.h>

#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 64

int main(int argc, char** argv)
{
    int rank;
    int windows;
    int size;
    char name_a[64];
    char name_b[64];
    sem_t* a;
    sem_t* b;
    char* buf;
    MPI_Request rq[WINDOW];

    MPI_Init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "usage: msg_cost <windows> <bytes> <name>\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    windows = atoi(argv[1]);
    size = atoi(argv[2]);
    snprintf(name_a, sizeof name_a, "/msg_cost_a_%s", argv[3]);
    snprintf(name_b, sizeof name_b, "/msg_cost_b_%s", argv[3]);
    if (rank == 0) {
        sem_unlink(name_a);
        sem_unlink(name_b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    a = sem_open(name_a, O_CREAT, 0600, 0);
    b = sem_open(name_b, O_CREAT, 0600, 0);
    if (a == SEM_FAILED || b == SEM_FAILED) {
        perror("sem_open");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    buf = calloc(WINDOW, size > 0 ? (size_t)size : 1);
    for (int w = 0; w < windows; ++w) {
        if (rank == 1) {
            for (int i = 0; i < WINDOW; ++i) {
                MPI_Irecv(buf + (size_t)i * size, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &rq[i]);
            }
            sem_post(a);
            sem_wait(b);
            MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
        } else if (rank == 0) {
            sem_wait(a);
            for (int i = 0; i < WINDOW; ++i) {
                MPI_Isend(buf + (size_t)i * size, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &rq[i]);
            }
            MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
            sem_post(b);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        sem_unlink(name_a);
        sem_unlink(name_b);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
