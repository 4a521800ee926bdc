/*
 * MPI_ANY_SOURCE and MPI_ANY_TAG receives, and the order they must keep.
 *
 * Each rank in turn collects: every other rank sends it M messages (tag
 * (s + j) % 4, sizes crossing the eager and rendezvous limits, the payload
 * starting with (s, j)), then waits for the collector's "turn done". The
 * collector receives with four kinds of receive chosen by a fixed random
 * sequence: (ANY_SOURCE, ANY_TAG), (ANY_SOURCE, tag), (source, ANY_TAG),
 * (source, tag), and checks for each message:
 *   - the status (source, tag, count) matches the payload;
 *   - non-overtaking: with a wildcard tag the message is the earliest not
 *     yet received from that source; with a given tag the earliest of that
 *     tag from that source.
 * The last quarter is received by Irecvs (ANY_SOURCE, ANY_TAG) posted all at
 * once: per source, the messages fill the receives in posting order. Some
 * receives use MPI_STATUS_IGNORE (the payload says what came).
 */
#include "mpitest.h"

#define M 12
#define TAGS 4

static int size_of(int s, int j)
{
    static const int sizes[] = {8, 100, 4096, 4097, 20000, 70000, 16, 16384};
    return sizes[(s * 3 + j) % 8];
}

static int tag_of(int s, int j) { return (s + j) % TAGS; }

int main(int argc, char** argv)
{
    int turn;
    unsigned char* buf;
    mt_rng rng;

    mt_init(&argc, &argv);
    buf = malloc(100000);
    mt_rng_seed(&rng, 12345 + (uint64_t)mt_rank);

    for (turn = 0; turn < mt_size; ++turn) {
        if (mt_rank != turn) {
            int j;
            MPI_Request r[M];
            unsigned char* out[M];
            for (j = 0; j < M; ++j) {
                int n = size_of(mt_rank, j);
                int hdr[2] = {mt_rank, j};
                out[j] = malloc((size_t)n);
                mt_fill(out[j], (size_t)n, (unsigned)(mt_rank * 100 + j));
                memcpy(out[j], hdr, sizeof hdr);
                /* Blocking only for tiny messages, eager on every path (udp's eager
                 * limit is below 1500 bytes): a standard send that is not buffered
                 * waits for a receive the collector may post only after a later
                 * message, and MPI does not promise buffering. */
                if (j % 3 == 0 && n <= 100) {
                    MT_OK(MPI_Send(out[j], n, MPI_BYTE, turn, tag_of(mt_rank, j), MPI_COMM_WORLD));
                    r[j] = MPI_REQUEST_NULL;
                } else {
                    MT_OK(MPI_Isend(out[j], n, MPI_BYTE, turn, tag_of(mt_rank, j), MPI_COMM_WORLD,
                                    &r[j]));
                }
            }
            MT_OK(MPI_Waitall(M, r, MPI_STATUSES_IGNORE));
            for (j = 0; j < M; ++j) {
                free(out[j]);
            }
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, turn, 1000, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            continue;
        }
        /* The collector. */
        {
            int total = (mt_size - 1) * M;
            unsigned char* got = calloc((size_t)mt_size * M, 1);
            int received = 0;
            int s, j;
            while (received < total - total / 4) {
                int kind = (int)mt_rng_below(&rng, 4);
                int want_src = MPI_ANY_SOURCE, want_tag = MPI_ANY_TAG;
                int ms, mj, i, hdr[2];
                int use_ignore = mt_rng_below(&rng, 5) == 0;
                MPI_Status st;
                /* A source and tag that still have messages to come. */
                {
                    int pick = (int)mt_rng_below(&rng, (unsigned)(total - received));
                    for (i = 0; i < mt_size * M; ++i) {
                        if (i / M != turn && !got[i]) {
                            if (pick-- == 0) {
                                break;
                            }
                        }
                    }
                    if (kind == 1 || kind == 3) {
                        want_tag = tag_of(i / M, i % M);
                    }
                    if (kind == 2 || kind == 3) {
                        want_src = i / M;
                    }
                }
                MT_OK(MPI_Recv(buf, 100000, MPI_BYTE, want_src, want_tag, MPI_COMM_WORLD,
                               use_ignore ? MPI_STATUS_IGNORE : &st));
                memcpy(hdr, buf, sizeof hdr);
                ms = hdr[0];
                mj = hdr[1];
                if (ms < 0 || ms >= mt_size || ms == turn || mj < 0 || mj >= M || got[ms * M + mj]) {
                    MT_CHECK(0, "turn %d: bad or repeated message (%d, %d)", turn, ms, mj);
                    break;
                }
                if (!use_ignore) {
                    MT_CHECK(st.MPI_SOURCE == ms && st.MPI_TAG == tag_of(ms, mj) &&
                                 mt_count(&st) == size_of(ms, mj),
                             "message (%d, %d): status source %d tag %d count %d", ms, mj,
                             st.MPI_SOURCE, st.MPI_TAG, mt_count(&st));
                }
                MT_CHECK(want_src == MPI_ANY_SOURCE || want_src == ms,
                         "asked for source %d, got %d", want_src, ms);
                MT_CHECK(want_tag == MPI_ANY_TAG || want_tag == tag_of(ms, mj),
                         "asked for tag %d, got %d", want_tag, tag_of(ms, mj));
                /* Non-overtaking. */
                for (i = 0; i < mj; ++i) {
                    if (!got[ms * M + i] &&
                        (want_tag == MPI_ANY_TAG || tag_of(ms, i) == tag_of(ms, mj))) {
                        MT_CHECK(0, "receive (%d, %d) got message %d of rank %d before its "
                                 "message %d (tag %d), which also matched", want_src, want_tag,
                                 mj, ms, i, tag_of(ms, i));
                        break;
                    }
                }
                {
                    /* The data after the header. */
                    int n = size_of(ms, mj);
                    unsigned char* expect = malloc((size_t)n);
                    mt_fill(expect, (size_t)n, (unsigned)(ms * 100 + mj));
                    MT_CHECK(n <= 8 || memcmp(expect + 8, buf + 8, (size_t)n - 8) == 0,
                             "message (%d, %d): data differs", ms, mj);
                    free(expect);
                }
                got[ms * M + mj] = 1;
                ++received;
            }
            /* The rest: Irecv(ANY_SOURCE, ANY_TAG) all posted at once. */
            {
                int rest = total - received;
                MPI_Request* r = malloc(sizeof(MPI_Request) * (size_t)rest);
                MPI_Status* sts = malloc(sizeof(MPI_Status) * (size_t)rest);
                unsigned char* bufs = malloc((size_t)rest * 70000);
                int* last = malloc(sizeof(int) * (size_t)mt_size);
                int k;
                for (s = 0; s < mt_size; ++s) {
                    last[s] = -1;
                }
                for (k = 0; k < rest; ++k) {
                    MT_OK(MPI_Irecv(bufs + (size_t)k * 70000, 70000, MPI_BYTE, MPI_ANY_SOURCE,
                                    MPI_ANY_TAG, MPI_COMM_WORLD, &r[k]));
                }
                MT_OK(MPI_Waitall(rest, r, sts));
                for (k = 0; k < rest; ++k) {
                    int hdr[2];
                    memcpy(hdr, bufs + (size_t)k * 70000, sizeof hdr);
                    s = hdr[0];
                    j = hdr[1];
                    if (s < 0 || s >= mt_size || s == turn || j < 0 || j >= M || got[s * M + j]) {
                        MT_CHECK(0, "turn %d: bad or repeated message (%d, %d) in Irecv %d", turn, s,
                                 j, k);
                        continue;
                    }
                    MT_CHECK(sts[k].MPI_SOURCE == s && sts[k].MPI_TAG == tag_of(s, j) &&
                                 mt_count(&sts[k]) == size_of(s, j),
                             "Irecv %d: message (%d, %d) with source %d tag %d count %d", k, s, j,
                             sts[k].MPI_SOURCE, sts[k].MPI_TAG, mt_count(&sts[k]));
                    MT_CHECK(j > last[s], "Irecv %d got message %d of rank %d after its message %d "
                             "(posting order broken)", k, j, s, last[s]);
                    last[s] = j;
                    got[s * M + j] = 1;
                }
                for (k = 0; k < mt_size * M; ++k) {
                    MT_CHECK(k / M == turn || got[k], "turn %d: message (%d, %d) never came", turn,
                             k / M, k % M);
                }
                free(r);
                free(sts);
                free(bufs);
                free(last);
            }
            for (s = 0; s < mt_size; ++s) {
                if (s != turn) {
                    MT_OK(MPI_Send(NULL, 0, MPI_BYTE, s, 1000, MPI_COMM_WORLD));
                }
            }
            free(got);
        }
    }
    free(buf);
    return mt_finalize();
}
