/*
 * Many messages in flight at once (argument: messages per sender, default
 * 20000): every rank floods rank 0 with small nonblocking sends (eager,
 * some rendezvous) while rank 0 sleeps, so they queue behind full
 * shared-memory FIFOs and pile up as unexpected messages; then rank 0 receives
 * them all with MPI_ANY_SOURCE and checks each sender's order. Then the
 * other way: rank 0 posts one receive per message first (tens of thousands
 * of requests alive at once) and everyone sends. Every payload is checked.
 */
#include "mpitest.h"

static int size_of(int j) { return j % 97 == 0 ? 5000 : 8 + (j % 5) * 4; }

int main(int argc, char** argv)
{
    int per = argc > 1 ? atoi(argv[1]) : 20000;
    int j, s;

    mt_init(&argc, &argv);

    /* Phase 1: sends first; rank 0 waits for a go it sends itself last. */
    if (mt_rank != 0 || mt_size == 1) {
        MPI_Request* r = malloc(sizeof(MPI_Request) * (size_t)per);
        size_t off = 0, ints = 0;
        int* bufs;
        for (j = 0; j < per; ++j) {
            ints += (size_t)(size_of(j) / 4) + 1;
        }
        bufs = malloc(sizeof(int) * ints);
        for (j = 0; j < per; ++j) {
            int n = size_of(j);
            int* b = bufs + off;
            off += (size_t)(n / 4) + 1;
            b[0] = mt_rank;
            b[n / 4 - 1] = j;
            MT_OK(MPI_Isend(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[j]));
        }
        if (mt_rank != 0) {
            MT_OK(MPI_Waitall(per, r, MPI_STATUSES_IGNORE));
            free(r);
            free(bufs);
        } else {
            /* alone: receive them, then complete the sends */
            int* in = malloc(5000);
            for (j = 0; j < per; ++j) {
                MPI_Status st;
                MT_OK(MPI_Recv(in, 5000, MPI_BYTE, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st));
                MT_CHECK(mt_count(&st) == size_of(j) && in[size_of(j) / 4 - 1] == j,
                         "message %d: count %d, index %d", j, mt_count(&st),
                         in[size_of(j) / 4 - 1]);
            }
            MT_OK(MPI_Waitall(per, r, MPI_STATUSES_IGNORE));
            free(in);
            free(r);
            free(bufs);
        }
    }
    if (mt_rank == 0 && mt_size > 1) {
        int* next = calloc((size_t)mt_size, sizeof(int));
        int* in = malloc(5000);
        long total = (long)per * (mt_size - 1);
        long k;
        /* Let the senders run ahead and fill the FIFOs to rank 0. */
        mt_sleep_ms(300);
        for (k = 0; k < total; ++k) {
            MPI_Status st;
            int src, idx, n;
            MT_OK(MPI_Recv(in, 5000, MPI_BYTE, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st));
            src = st.MPI_SOURCE;
            if (src <= 0 || src >= mt_size) {
                MT_CHECK(0, "source %d", src);
                break;
            }
            n = size_of(next[src]);
            idx = mt_count(&st) >= 8 ? in[mt_count(&st) / 4 - 1] : -1;
            MT_CHECK(mt_count(&st) == n && in[0] == src && idx == next[src],
                     "from %d: expected message %d (%d bytes), got index %d, %d bytes", src,
                     next[src], n, idx, mt_count(&st));
            ++next[src];
        }
        for (s = 1; s < mt_size; ++s) {
            MT_CHECK(next[s] == per, "rank %d: %d of %d messages", s, next[s], per);
        }
        free(next);
        free(in);
    }

    /* Phase 2: rank 0 posts every receive first, with one token per sender. */
    if (mt_size > 1) {
        if (mt_rank == 0) {
            long total = (long)per * (mt_size - 1);
            MPI_Request* r = malloc(sizeof(MPI_Request) * (size_t)total);
            int* in = malloc(sizeof(int) * 2 * (size_t)total);
            long k;
            for (k = 0; k < total; ++k) {
                int src = 1 + (int)(k % (mt_size - 1));
                MT_OK(MPI_Irecv(in + 2 * k, 2, MPI_INT, src, 3, MPI_COMM_WORLD, &r[k]));
            }
            for (s = 1; s < mt_size; ++s) {
                MT_OK(MPI_Send(NULL, 0, MPI_BYTE, s, 4, MPI_COMM_WORLD));
            }
            MT_OK(MPI_Waitall((int)total, r, MPI_STATUSES_IGNORE));
            for (k = 0; k < total; ++k) {
                int src = 1 + (int)(k % (mt_size - 1));
                long j2 = k / (mt_size - 1);
                if (in[2 * k] != src || in[2 * k + 1] != (int)j2) {
                    MT_CHECK(0, "posted receive %ld: got (%d, %d), expected (%d, %ld)", k,
                             in[2 * k], in[2 * k + 1], src, j2);
                    break;
                }
            }
            free(r);
            free(in);
        } else {
            MPI_Request* r = malloc(sizeof(MPI_Request) * (size_t)per);
            int* out = malloc(sizeof(int) * 2 * (size_t)per);
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (j = 0; j < per; ++j) {
                out[2 * j] = mt_rank;
                out[2 * j + 1] = j;
                MT_OK(MPI_Isend(out + 2 * j, 2, MPI_INT, 0, 3, MPI_COMM_WORLD, &r[j]));
            }
            MT_OK(MPI_Waitall(per, r, MPI_STATUSES_IGNORE));
            free(r);
            free(out);
        }
    }
    return mt_finalize();
}
