/*
 * rail_stream -- a long checked stream from rank 0 to rank 1, timed message
 * by message, for the multi-rail tests and figures (tests/multihost/
 * udp_rails.py, tools/bench/rails).
 *
 *   rail_stream TOTAL_MIB MSG_KIB [WINDOW]
 *
 * Rank 0 sends TOTAL_MIB MiB in messages of MSG_KIB KiB, WINDOW (default 8)
 * in flight; every byte carries a pattern of its message and offset, and
 * rank 1 checks all of them. Rank 1 prints, on stdout:
 *   stream: N messages of S bytes in T s: R MB/s
 *   stream-times: the CLOCK_REALTIME (ms, 3 decimals) at which each message
 *                 completed, one line of numbers separated by spaces
 *   No Errors          (or " Found N errors")
 * Exit status: 0 when every byte arrived intact.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned char pattern(long msg, long off)
{
    return (unsigned char)((msg * 131 + off * 7 + (off >> 9) * 13 + 5) & 0xff);
}

static double realtime_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || size != 2) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -n 2 rail_stream TOTAL_MIB MSG_KIB [WINDOW]\n");
        }
        MPI_Finalize();
        return 2;
    }
    const long total = atol(argv[1]) << 20;
    const long msg = atol(argv[2]) << 10;
    const int window = argc > 3 ? atoi(argv[3]) : 8;
    if (total <= 0 || msg <= 0 || window <= 0) {
        if (rank == 0) {
            fprintf(stderr, "rail_stream: sizes and window must be positive\n");
        }
        MPI_Finalize();
        return 2;
    }
    const long count = (total + msg - 1) / msg;
    unsigned char* buf = malloc((size_t)(msg * window));
    MPI_Request* req = malloc(sizeof(MPI_Request) * (size_t)window);
    double* done_at = rank == 1 ? malloc(sizeof(double) * (size_t)count) : NULL;
    long errors = 0;
    if (buf == NULL || req == NULL || (rank == 1 && done_at == NULL)) {
        fprintf(stderr, "rail_stream: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    long next = 0; /* next message to post */
    long finished = 0;
    int live = 0;
    /* A ring of `window` slots: message i uses slot i % window. */
    while (finished < count) {
        while (live < window && next < count) {
            unsigned char* b = buf + (next % window) * msg;
            if (rank == 0) {
                for (long o = 0; o < msg; ++o) {
                    b[o] = pattern(next, o);
                }
                MPI_Isend(b, (int)msg, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &req[next % window]);
            } else {
                MPI_Irecv(b, (int)msg, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &req[next % window]);
            }
            ++next;
            ++live;
        }
        const long i = finished;
        MPI_Wait(&req[i % window], MPI_STATUS_IGNORE);
        if (rank == 1) {
            done_at[i] = realtime_ms();
            const unsigned char* b = buf + (i % window) * msg;
            for (long o = 0; o < msg; ++o) {
                if (b[o] != pattern(i, o)) {
                    if (errors < 5) {
                        fprintf(stderr, "rail_stream: message %ld byte %ld: got 0x%02x, want 0x%02x\n", i, o,
                                b[o], pattern(i, o));
                    }
                    ++errors;
                }
            }
        }
        ++finished;
        --live;
    }
    const double secs = MPI_Wtime() - t0;
    long all_errors = 0;
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 1, MPI_COMM_WORLD);
    if (rank == 1) {
        printf("stream: %ld messages of %ld bytes in %.3f s: %.1f MB/s\n", count, msg, secs,
               (double)(count * msg) / secs / 1e6);
        printf("stream-times:");
        for (long i = 0; i < count; ++i) {
            printf(" %.3f", done_at[i]);
        }
        printf("\n");
        if (all_errors == 0) {
            printf("No Errors\n");
        } else {
            printf(" Found %ld errors\n", all_errors);
        }
        fflush(stdout);
    }
    free(buf);
    free(req);
    free(done_at);
    MPI_Finalize();
    return errors == 0 ? 0 : 1;
}
