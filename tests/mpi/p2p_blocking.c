/*
 * Blocking point-to-point in every mode: MPI_Send, MPI_Bsend, MPI_Ssend,
 * MPI_Rsend and MPI_Recv, at sizes around every protocol limit (0 bytes,
 * eager, the shm eager limit, rendezvous, single copy, more than one
 * fragment, over a MiB), between every ordered pair of ranks including a
 * rank and itself. Data, source, tag and count are checked.
 *
 * Phase 1: the receiver pre-posts MPI_Irecv, the sender uses the blocking
 *          call (for MPI_Rsend the receiver sends a "ready" token after
 *          posting, and the sender waits for it).
 * Phase 2: ping-pong between rank 0 and every other rank with blocking
 *          sends and blocking MPI_Recv on both sides.
 */
#include "mpitest.h"

enum { M_SEND, M_BSEND, M_SSEND, M_RSEND, M_COUNT };
static const char* k_mode_names[M_COUNT] = {"MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend"};

static const int k_sizes[] = {0, 1, 7, 64, 4095, 4096, 4097, 16383, 16384, 65536, 65537, 200000, 1048579};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))
#define TAG_READY 999

static int do_send(int mode, const void* buf, int n, int dest, int tag)
{
    switch (mode) {
    case M_SEND: return MPI_Send(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
    case M_BSEND: return MPI_Bsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
    case M_SSEND: return MPI_Ssend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
    default: return MPI_Rsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
    }
}

static unsigned seed_of(int from, int to, int size, int mode, int phase)
{
    return (unsigned)(from * 7919 + to * 104729 + size * 31 + mode * 1000003 + phase * 17);
}

static void check_status(const MPI_Status* st, int source, int tag, int size, const char* what)
{
    MT_CHECK(st->MPI_SOURCE == source, "%s: status source %d, expected %d", what, st->MPI_SOURCE,
             source);
    MT_CHECK(st->MPI_TAG == tag, "%s: status tag %d, expected %d", what, st->MPI_TAG, tag);
    MT_CHECK(mt_count(st) == size, "%s: count %d, expected %d", what, mt_count(st), size);
}

int main(int argc, char** argv)
{
    int maxsize = k_sizes[NSIZES - 1];
    unsigned char* sbuf;
    unsigned char* rbuf;
    void* bbuf;
    int bsize = 0;
    int mode, si, k;

    mt_init(&argc, &argv);
    /* Room for every buffered send of phase 1 at once: MPI_Bsend fails (it
     * does not wait) when the buffer is full, and a block is free only once
     * its message has left. */
    for (si = 0; si < NSIZES; ++si) {
        bsize += mt_size * (k_sizes[si] + MPI_BSEND_OVERHEAD + 16);
    }
    sbuf = malloc((size_t)maxsize + 1);
    rbuf = malloc((size_t)maxsize + 1);
    bbuf = malloc((size_t)bsize);
    MT_OK(MPI_Buffer_attach(bbuf, bsize));

    /* Phase 1: pre-posted receives, every ordered pair (k = 0 is oneself). */
    for (mode = 0; mode < M_COUNT; ++mode) {
        for (si = 0; si < NSIZES; ++si) {
            int size = k_sizes[si];
            for (k = 0; k < mt_size; ++k) {
                int to = (mt_rank + k) % mt_size;
                int from = (mt_rank - k + mt_size) % mt_size;
                int tag = mode * 100 + k;
                char what[128];
                MPI_Request rreq;
                MPI_Status st;
                memset(rbuf, 0xee, (size_t)size + 1);
                MT_OK(MPI_Irecv(rbuf, size, MPI_BYTE, from, tag, MPI_COMM_WORLD, &rreq));
                if (mode == M_RSEND) {
                    MT_OK(MPI_Send(NULL, 0, MPI_BYTE, from, TAG_READY, MPI_COMM_WORLD));
                    MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, to, TAG_READY, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
                }
                mt_fill(sbuf, (size_t)size, seed_of(mt_rank, to, size, mode, 1));
                MT_OK(do_send(mode, sbuf, size, to, tag));
                MT_OK(MPI_Wait(&rreq, &st));
                MT_CHECK(rreq == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
                snprintf(what, sizeof what, "%s of %d bytes from %d", k_mode_names[mode], size, from);
                check_status(&st, from, tag, size, what);
                MT_VERIFY(rbuf, size, seed_of(from, mt_rank, size, mode, 1), "%s", what);
                MT_CHECK(rbuf[size] == 0xee, "%s: byte after the message overwritten", what);
            }
        }
    }

    /* Phase 2: blocking ping-pong, rank 0 with each other rank. */
    for (mode = 0; mode < M_COUNT; ++mode) {
        for (si = 0; si < NSIZES; ++si) {
            int size = k_sizes[si];
            int peer;
            for (peer = 1; peer < mt_size; ++peer) {
                MPI_Status st;
                char what[128];
                int tag = 500 + mode;
                if (mt_rank == 0) {
                    if (mode == M_RSEND) {
                        MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE));
                    }
                    mt_fill(sbuf, (size_t)size, seed_of(0, peer, size, mode, 2));
                    MT_OK(do_send(mode, sbuf, size, peer, tag));
                    memset(rbuf, 0, (size_t)size);
                    if (mode == M_RSEND) {
                        MPI_Request r;
                        MT_OK(MPI_Irecv(rbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r));
                        MT_OK(MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD));
                        MT_OK(MPI_Wait(&r, &st));
                    } else {
                        MT_OK(MPI_Recv(rbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
                    }
                    snprintf(what, sizeof what, "ping-pong %s of %d bytes back from %d",
                             k_mode_names[mode], size, peer);
                    check_status(&st, peer, tag, size, what);
                    MT_VERIFY(rbuf, size, seed_of(peer, 0, size, mode, 2), "%s", what);
                } else if (mt_rank == peer) {
                    memset(rbuf, 0, (size_t)size);
                    if (mode == M_RSEND) {
                        MPI_Request r;
                        MT_OK(MPI_Irecv(rbuf, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r));
                        MT_OK(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD));
                        MT_OK(MPI_Wait(&r, &st));
                    } else {
                        MT_OK(MPI_Recv(rbuf, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
                    }
                    snprintf(what, sizeof what, "ping-pong %s of %d bytes from 0",
                             k_mode_names[mode], size);
                    check_status(&st, 0, tag, size, what);
                    MT_VERIFY(rbuf, size, seed_of(0, peer, size, mode, 2), "%s", what);
                    if (mode == M_RSEND) {
                        MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE));
                    }
                    mt_fill(sbuf, (size_t)size, seed_of(peer, 0, size, mode, 2));
                    MT_OK(do_send(mode, sbuf, size, 0, tag));
                }
            }
        }
    }

    /* Typed messages: counts in elements, not bytes. */
    {
        int n = 5000;
        int* ibuf = malloc(sizeof(int) * (size_t)n);
        int* obuf = malloc(sizeof(int) * (size_t)n);
        int to = (mt_rank + 1) % mt_size;
        int from = (mt_rank - 1 + mt_size) % mt_size;
        int i, cnt = -1;
        MPI_Request r;
        MPI_Status st;
        for (i = 0; i < n; ++i) {
            obuf[i] = mt_rank * 1000000 + i;
            ibuf[i] = -1;
        }
        MT_OK(MPI_Irecv(ibuf, n, MPI_INT, from, 77, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Send(obuf, n, MPI_INT, to, 77, MPI_COMM_WORLD));
        MT_OK(MPI_Wait(&r, &st));
        MT_OK(MPI_Get_count(&st, MPI_INT, &cnt));
        MT_CHECK(cnt == n, "MPI_INT count %d, expected %d", cnt, n);
        for (i = 0; i < n; ++i) {
            if (ibuf[i] != from * 1000000 + i) {
                MT_CHECK(0, "int %d is %d, expected %d", i, ibuf[i], from * 1000000 + i);
                break;
            }
        }
        free(ibuf);
        free(obuf);
    }

    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
        MT_CHECK(b == bbuf && s == bsize, "detach gave %p/%d, attached %p/%d", b, s, bbuf, bsize);
    }
    free(bbuf);
    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
