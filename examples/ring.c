/* ring: a token goes around all ranks, and each rank in turn times it.
 *
 *   mpicc -o ring examples/ring.c && mpirun -n 4 ./ring [iterations] [bytes]
 *
 * Rank r starts a message of `bytes` bytes (default 8) to rank r+1; every
 * other rank passes it on; it comes back to r from r-1. Each rank does this
 * `iterations` times (default 1000, after 10 untimed warm-up laps) and rank 0
 * prints, for every rank, the shortest, mean and longest round trip and the
 * mean time per hop. Only point-to-point calls are used (results are
 * gathered with MPI_Send/MPI_Recv), and every lap checks the payload. */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP 10

static void fill(unsigned char *buf, int bytes, int origin, int lap)
{
    int i;
    for (i = 0; i < bytes; ++i) {
        buf[i] = (unsigned char)(origin * 31 + lap * 7 + i);
    }
}

static int check(const unsigned char *buf, int bytes, int origin, int lap)
{
    int i;
    for (i = 0; i < bytes; ++i) {
        if (buf[i] != (unsigned char)(origin * 31 + lap * 7 + i)) {
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size, iterations = 1000, bytes = 8;
    int next, prev, origin, lap, bad = 0;
    unsigned char *buf;
    double stats[3] = {1e300, 0.0, 0.0}; /* min, sum, max of my round trips */

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) {
        iterations = atoi(argv[1]);
    }
    if (argc > 2) {
        bytes = atoi(argv[2]);
    }
    if (iterations < 1 || bytes < 1) {
        if (rank == 0) {
            fprintf(stderr, "usage: ring [iterations >= 1] [bytes >= 1]\n");
        }
        MPI_Finalize();
        return 2;
    }
    buf = malloc((size_t)bytes);
    if (buf == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    for (origin = 0; origin < size; ++origin) {
        for (lap = 0; lap < WARMUP + iterations; ++lap) {
            if (rank == origin) {
                double t0 = MPI_Wtime(), dt;
                fill(buf, bytes, origin, lap);
                if (size > 1) {
                    MPI_Send(buf, bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
                    memset(buf, 0, (size_t)bytes);
                    MPI_Recv(buf, bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                dt = MPI_Wtime() - t0;
                bad += !check(buf, bytes, origin, lap);
                if (lap >= WARMUP) {
                    stats[0] = dt < stats[0] ? dt : stats[0];
                    stats[1] += dt;
                    stats[2] = dt > stats[2] ? dt : stats[2];
                }
            } else {
                MPI_Recv(buf, bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                bad += !check(buf, bytes, origin, lap);
                MPI_Send(buf, bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
            }
        }
    }

    if (rank == 0) {
        char name[MPI_MAX_PROCESSOR_NAME];
        int len, r, total_bad = bad;
        MPI_Get_processor_name(name, &len);
        printf("ring: %d ranks on %s, %d laps of %d bytes per rank\n", size, name, iterations,
               bytes);
        printf("%6s %12s %12s %12s %14s\n", "rank", "min rtt us", "mean rtt us", "max rtt us",
               "mean hop us");
        for (r = 0; r < size; ++r) {
            double s[3];
            int their_bad;
            if (r == 0) {
                memcpy(s, stats, sizeof s);
            } else {
                MPI_Recv(s, 3, MPI_DOUBLE, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(&their_bad, 1, MPI_INT, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                total_bad += their_bad;
            }
            printf("%6d %12.2f %12.2f %12.2f %14.2f\n", r, s[0] * 1e6, s[1] / iterations * 1e6,
                   s[2] * 1e6, s[1] / iterations / size * 1e6);
        }
        if (total_bad != 0) {
            printf("ring: %d laps carried a wrong payload\n", total_bad);
        } else {
            printf("ring: every lap came back intact\n");
        }
        bad = total_bad;
    } else {
        MPI_Send(stats, 3, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
        MPI_Send(&bad, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Finalize();
    return bad != 0 ? 1 : 0;
}
