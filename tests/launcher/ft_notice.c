/* ft_notice: a rank is killed while every other rank is blocked in MPI_Recv
 * from it; each survivor must get MPIX_ERR_PROC_FAILED (run it with
 * mpirun --with-ft ulfm --initial-errhandler mpi_errors_return).
 *
 *   ft_notice VICTIM STAMPFILE
 *
 * The victim sleeps 100 ms (so that the others are blocked in the receive),
 * writes CLOCK_REALTIME to STAMPFILE and kills itself with SIGKILL. A
 * survivor prints
 *     rank R: recv from V: MPIX_ERR_PROC_FAILED after U us
 * with U = its time of the error minus the victim's stamp (the namespace
 * hosts of the multi-host tests share this machine's clock), then checks that
 * the others still communicate (a barrier would include the dead rank:
 * a ring of sends among survivors instead), finalizes and exits 0. It prints
 * MPI_INFO_ENV's mpi_initial_errhandler first (rank 0). Any other outcome
 * exits 1 with a line saying what happened. */
#define _GNU_SOURCE
#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char** argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ft_notice VICTIM STAMPFILE\n");
        return 2;
    }
    int victim = atoi(argv[1]);
    const char* stamp = argv[2];
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        char value[MPI_MAX_INFO_VAL];
        int flag = 0;
        MPI_Info_get(MPI_INFO_ENV, "mpi_initial_errhandler", MPI_MAX_INFO_VAL - 1, value, &flag);
        printf("initial errhandler: %s\n", flag ? value : "(none)");
        fflush(stdout);
    }
    if (size < 2 || victim < 0 || victim >= size) {
        fprintf(stderr, "ft_notice: needs 2 ranks or more and a victim among them\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim) {
        usleep(100 * 1000);
        FILE* f = fopen(stamp, "w");
        if (f == NULL) {
            perror("ft_notice: stamp file");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        fprintf(f, "%lld\n", now_ns());
        fclose(f);
        raise(SIGKILL);
    }
    int x = 0;
    int rc = MPI_Recv(&x, 1, MPI_INT, victim, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    long long t1 = now_ns();
    int cls = 0;
    MPI_Error_class(rc, &cls);
    if (cls != MPIX_ERR_PROC_FAILED) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        printf("rank %d: recv from %d: error class %d (%s), not MPIX_ERR_PROC_FAILED\n", rank,
               victim, cls, rc == MPI_SUCCESS ? "success" : text);
        return 1;
    }
    long long t0 = 0;
    FILE* f = fopen(stamp, "r");
    if (f == NULL || fscanf(f, "%lld", &t0) != 1) {
        printf("rank %d: no stamp from the victim in %s\n", rank, stamp);
        return 1;
    }
    fclose(f);
    printf("rank %d: recv from %d: MPIX_ERR_PROC_FAILED after %lld us\n", rank, victim,
           (t1 - t0) / 1000);
    fflush(stdout);

    /* The survivors still talk: a ring that skips the victim. */
    int next = (rank + 1) % size == victim ? (rank + 2) % size : (rank + 1) % size;
    int prev = (rank - 1 + size) % size == victim ? (rank - 2 + 2 * size) % size
                                                   : (rank - 1 + size) % size;
    if (next != rank) {
        int out = rank;
        int in = -1;
        rc = MPI_Sendrecv(&out, 1, MPI_INT, next, 9, &in, 1, MPI_INT, prev, 9, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || in != prev) {
            printf("rank %d: the ring among survivors failed (rc %d, got %d from %d)\n", rank, rc,
                   in, prev);
            return 1;
        }
    }
    MPI_Finalize();
    return 0;
}
