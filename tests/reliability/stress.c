/* Many messages of mixed sizes between all ranks, every byte checked.
 *
 *   stress [messages] [seed] [max_size]
 *
 * Every rank derives the same plan from the seed: message i goes from
 * plan[i].src to plan[i].dst with plan[i].size bytes (0 .. max_size, most
 * small, some crossing the eager and rendezvous limits; a max_size of 1024
 * or less: every size 0 .. max_size alike). The plan is walked
 * in batches: each rank posts the sends and receives it takes part in, then
 * waits for all of them. Payload byte k of message i is a function of (i, k),
 * so the receiver checks every byte. Rank 0 prints "No Errors" at the end. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int src, dst, size, tag;
} Msg;

static uint64_t rng_state;
static uint64_t next_rand(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static unsigned char pattern(long i, long k) { return (unsigned char)((i * 131 + k * 7 + (k >> 8)) & 0xff); }

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long total = argc > 1 ? atol(argv[1]) : 100000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 12345;
    int max_size = argc > 3 ? atoi(argv[3]) : 256 * 1024;
    if (size < 2) {
        if (rank == 0) printf("No Errors\n");
        MPI_Finalize();
        return 0;
    }
    enum { kBatch = 64 };
    Msg plan[kBatch];
    unsigned char* bufs[kBatch];
    MPI_Request reqs[kBatch];
    for (int j = 0; j < kBatch; j++) bufs[j] = malloc((size_t)max_size + 1);
    long errors = 0;
    long bytes = 0;
    for (long base = 0; base < total; base += kBatch) {
        int n = (int)(total - base < kBatch ? total - base : kBatch);
        int nreq = 0;
        for (int j = 0; j < n; j++) {
            Msg* m = &plan[j];
            m->src = (int)(next_rand() % (uint64_t)size);
            m->dst = (int)(next_rand() % (uint64_t)(size - 1));
            if (m->dst >= m->src) m->dst++;
            uint64_t r = next_rand() % 100;
            if (max_size <= 1024) m->size = (int)(next_rand() % ((uint64_t)max_size + 1));
            else if (r < 70) m->size = (int)(next_rand() % 1025);
            else if (r < 90) m->size = (int)(next_rand() % 32768);
            else m->size = (int)(next_rand() % ((uint64_t)max_size + 1));
            m->tag = j;
        }
        for (int j = 0; j < n; j++) {
            Msg* m = &plan[j];
            long i = base + j;
            if (m->dst == rank) {
                memset(bufs[j], 0xEE, (size_t)m->size);
                MPI_Irecv(bufs[j], m->size, MPI_BYTE, m->src, m->tag, MPI_COMM_WORLD, &reqs[nreq++]);
            } else if (m->src == rank) {
                for (long k = 0; k < m->size; k++) bufs[j][k] = pattern(i, k);
                MPI_Isend(bufs[j], m->size, MPI_BYTE, m->dst, m->tag, MPI_COMM_WORLD, &reqs[nreq++]);
            }
        }
        MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
        for (int j = 0; j < n; j++) {
            Msg* m = &plan[j];
            long i = base + j;
            if (m->dst != rank) continue;
            bytes += m->size;
            for (long k = 0; k < m->size; k++) {
                if (bufs[j][k] != pattern(i, k)) {
                    if (errors++ < 5)
                        printf("rank %d: message %ld from %d (%d bytes) differs at byte %ld\n", rank, i, m->src,
                               m->size, k);
                    break;
                }
            }
        }
    }
    /* Gather the error counts on rank 0 without collectives. */
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            long e;
            MPI_Recv(&e, 1, MPI_LONG, r, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += e;
        }
        if (errors == 0) printf("No Errors\n");
        else printf("Found %ld errors\n", errors);
    } else {
        MPI_Send(&errors, 1, MPI_LONG, 0, 999, MPI_COMM_WORLD);
    }
    for (int j = 0; j < kBatch; j++) free(bufs[j]);
    MPI_Finalize();
    return errors == 0 ? 0 : 1;
}
