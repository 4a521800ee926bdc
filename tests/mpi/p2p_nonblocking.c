/*
 * Nonblocking point-to-point in every mode: MPI_Isend, MPI_Ibsend,
 * MPI_Issend, MPI_Irsend and MPI_Irecv, many in flight at once, every ordered
 * pair of ranks (oneself included), sizes around the protocol limits.
 *
 * Phase 1 (per mode): every rank posts all its receives, then (MPI_Irsend:
 *   after a ready token from each receiver) all its sends, then completes
 *   them with a different completion call per mode: MPI_Waitall, MPI_Wait in
 *   reverse order, MPI_Testall polling, MPI_Waitany.
 * Phase 2: sends first, receives late (blocking MPI_Recv, in the reverse
 *   order of sending): messages wait as unexpected, eager and rendezvous.
 */
#include "mpitest.h"

enum { M_ISEND, M_IBSEND, M_ISSEND, M_IRSEND, M_COUNT };
static const char* k_mode_names[M_COUNT] = {"MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend"};

static const int k_sizes[] = {0, 1, 64, 4095, 4096, 4097, 16383, 16384, 65537, 200000};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))
#define TAG_READY 999

static int start_send(int mode, const void* buf, int n, int dest, int tag, MPI_Request* r)
{
    switch (mode) {
    case M_ISEND: return MPI_Isend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r);
    case M_IBSEND: return MPI_Ibsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r);
    case M_ISSEND: return MPI_Issend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r);
    default: return MPI_Irsend(buf, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r);
    }
}

static unsigned seed_of(int from, int to, int size, int mode, int phase)
{
    return (unsigned)(from * 7919 + to * 104729 + size * 31 + mode * 1000003 + phase * 17);
}

int main(int argc, char** argv)
{
    int nmsg;
    unsigned char** sbufs;
    unsigned char** rbufs;
    MPI_Request* sreq;
    MPI_Request* rreq;
    MPI_Status* rst;
    void* bbuf;
    int bsize = 0;
    int mode, si, k, i;

    mt_init(&argc, &argv);
    nmsg = mt_size * NSIZES;
    sbufs = calloc((size_t)nmsg, sizeof *sbufs);
    rbufs = calloc((size_t)nmsg, sizeof *rbufs);
    sreq = calloc((size_t)nmsg, sizeof *sreq);
    rreq = calloc((size_t)nmsg, sizeof *rreq);
    rst = calloc((size_t)nmsg, sizeof *rst);
    for (k = 0; k < mt_size; ++k) {
        for (si = 0; si < NSIZES; ++si) {
            i = k * NSIZES + si;
            sbufs[i] = malloc((size_t)k_sizes[si] + 1);
            rbufs[i] = malloc((size_t)k_sizes[si] + 1);
            bsize += k_sizes[si] + MPI_BSEND_OVERHEAD + 16;
        }
    }
    bbuf = malloc((size_t)bsize);
    MT_OK(MPI_Buffer_attach(bbuf, bsize));

    for (mode = 0; mode < M_COUNT; ++mode) {
        /* Receives. Message i = (k, si) comes from rank - k with tag i. */
        for (k = 0; k < mt_size; ++k) {
            int from = (mt_rank - k + mt_size) % mt_size;
            for (si = 0; si < NSIZES; ++si) {
                i = k * NSIZES + si;
                memset(rbufs[i], 0xee, (size_t)k_sizes[si] + 1);
                MT_OK(MPI_Irecv(rbufs[i], k_sizes[si], MPI_BYTE, from, i, MPI_COMM_WORLD, &rreq[i]));
            }
        }
        if (mode == M_IRSEND) {
            for (k = 0; k < mt_size; ++k) {
                MT_OK(MPI_Send(NULL, 0, MPI_BYTE, (mt_rank - k + mt_size) % mt_size, TAG_READY,
                               MPI_COMM_WORLD));
            }
            for (k = 0; k < mt_size; ++k) {
                MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, (mt_rank + k) % mt_size, TAG_READY,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            }
        }
        /* Sends. */
        for (k = 0; k < mt_size; ++k) {
            int to = (mt_rank + k) % mt_size;
            for (si = 0; si < NSIZES; ++si) {
                i = k * NSIZES + si;
                mt_fill(sbufs[i], (size_t)k_sizes[si], seed_of(mt_rank, to, k_sizes[si], mode, 1));
                MT_OK(start_send(mode, sbufs[i], k_sizes[si], to, i, &sreq[i]));
            }
        }
        /* Completion, a different way per mode. */
        switch (mode) {
        case M_ISEND:
            MT_OK(MPI_Waitall(nmsg, rreq, rst));
            MT_OK(MPI_Waitall(nmsg, sreq, MPI_STATUSES_IGNORE));
            break;
        case M_IBSEND:
            for (i = nmsg - 1; i >= 0; --i) {
                MT_OK(MPI_Wait(&sreq[i], MPI_STATUS_IGNORE));
                MT_OK(MPI_Wait(&rreq[i], &rst[i]));
            }
            break;
        case M_ISSEND: {
            int flag = 0;
            while (!flag) {
                MT_OK(MPI_Testall(nmsg, rreq, &flag, rst));
            }
            flag = 0;
            while (!flag) {
                MT_OK(MPI_Testall(nmsg, sreq, &flag, MPI_STATUSES_IGNORE));
            }
            break;
        }
        default: {
            int left = nmsg;
            while (left > 0) {
                int idx = -1;
                MPI_Status st;
                MT_OK(MPI_Waitany(nmsg, rreq, &idx, &st));
                if (idx < 0 || idx >= nmsg) {
                    MT_CHECK(0, "MPI_Waitany index %d", idx);
                    break;
                }
                MT_CHECK(rreq[idx] == MPI_REQUEST_NULL, "MPI_Waitany left request %d set", idx);
                rst[idx] = st;
                --left;
            }
            MT_OK(MPI_Waitall(nmsg, sreq, MPI_STATUSES_IGNORE));
            break;
        }
        }
        for (i = 0; i < nmsg; ++i) {
            char what[128];
            int from;
            k = i / NSIZES;
            si = i % NSIZES;
            from = (mt_rank - k + mt_size) % mt_size;
            MT_CHECK(rreq[i] == MPI_REQUEST_NULL && sreq[i] == MPI_REQUEST_NULL,
                     "%s: request %d not MPI_REQUEST_NULL after completion", k_mode_names[mode], i);
            snprintf(what, sizeof what, "%s of %d bytes from %d", k_mode_names[mode], k_sizes[si],
                     from);
            MT_CHECK(rst[i].MPI_SOURCE == from, "%s: source %d", what, rst[i].MPI_SOURCE);
            MT_CHECK(rst[i].MPI_TAG == i, "%s: tag %d, expected %d", what, rst[i].MPI_TAG, i);
            MT_CHECK(mt_count(&rst[i]) == k_sizes[si], "%s: count %d", what, mt_count(&rst[i]));
            MT_VERIFY(rbufs[i], k_sizes[si], seed_of(from, mt_rank, k_sizes[si], mode, 1), "%s",
                      what);
            MT_CHECK(rbufs[i][k_sizes[si]] == 0xee, "%s: byte after the message overwritten", what);
        }
    }

    /* Phase 2: sends first, blocking receives late, in reverse order. */
    for (k = 0; k < mt_size; ++k) {
        int to = (mt_rank + k) % mt_size;
        for (si = 0; si < NSIZES; ++si) {
            i = k * NSIZES + si;
            mt_fill(sbufs[i], (size_t)k_sizes[si], seed_of(mt_rank, to, k_sizes[si], 9, 2));
            MT_OK(MPI_Isend(sbufs[i], k_sizes[si], MPI_BYTE, to, i, MPI_COMM_WORLD, &sreq[i]));
        }
    }
    for (i = nmsg - 1; i >= 0; --i) {
        MPI_Status st;
        int from;
        k = i / NSIZES;
        si = i % NSIZES;
        from = (mt_rank - k + mt_size) % mt_size;
        memset(rbufs[i], 0, (size_t)k_sizes[si]);
        MT_OK(MPI_Recv(rbufs[i], k_sizes[si], MPI_BYTE, from, i, MPI_COMM_WORLD, &st));
        MT_CHECK(st.MPI_SOURCE == from && st.MPI_TAG == i && mt_count(&st) == k_sizes[si],
                 "late receive %d: source %d tag %d count %d", i, st.MPI_SOURCE, st.MPI_TAG,
                 mt_count(&st));
        MT_VERIFY(rbufs[i], k_sizes[si], seed_of(from, mt_rank, k_sizes[si], 9, 2),
                  "late receive of %d bytes from %d", k_sizes[si], from);
    }
    MT_OK(MPI_Waitall(nmsg, sreq, MPI_STATUSES_IGNORE));

    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
    }
    for (i = 0; i < nmsg; ++i) {
        free(sbufs[i]);
        free(rbufs[i]);
    }
    free(sbufs);
    free(rbufs);
    free(sreq);
    free(rreq);
    free(rst);
    free(bbuf);
    return mt_finalize();
}
