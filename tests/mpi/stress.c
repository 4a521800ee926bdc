/*
 * Random all-to-all stress: N messages (argument 1, default 10000) among all
 * ranks, random sizes 0 .. 200 KiB weighted to cross the eager, rendezvous
 * and single-copy limits, random (unique) tags, random send modes and
 * receive kinds, every byte checked. Argument 2: the seed (default 1).
 *
 * Every rank draws the same plan from the seed, in rounds of 64 messages.
 * In a round each rank
 *   1. pre-posts an Irecv for each of its "posted" messages: source given or
 *      MPI_ANY_SOURCE, tag given (tags are unique, so both are exact);
 *   2. sends its messages in plan order: to a posted receive by MPI_Send,
 *      MPI_Ssend, MPI_Isend or MPI_Issend; to a late receive by MPI_Isend,
 *      MPI_Issend or MPI_Bsend (a blocking standard or synchronous send
 *      could wait for a receive the peer posts only after its own sends);
 *   3. receives its "late" messages with blocking MPI_Recv: per source in
 *      the order they were sent, each either (source, tag), (ANY_SOURCE,
 *      tag) or (source, MPI_ANY_TAG) - the last gets the earliest late
 *      message of that source not yet received, by non-overtaking;
 *   4. completes its requests with MPI_Waitall, an MPI_Waitany loop, an
 *      MPI_Waitsome loop, or MPI_Testsome then MPI_Waitall.
 * Ranks run ahead of each other freely: a message of a later round may
 * arrive early and wait as unexpected. Each payload is a function of the
 * message's index; the status (source, tag, count) is checked too.
 */
#include "mpitest.h"

#define ROUND 64
#define MAXSIZE (200 * 1024)

enum { R_POSTED_SRC, R_POSTED_ANY, R_LATE_SRC, R_LATE_ANYSRC, R_LATE_ANYTAG };
enum { S_SEND, S_SSEND, S_ISEND, S_ISSEND, S_BSEND };

struct msg {
    int src, dst, size, tag;
    int rkind, skind;
};

static int draw_size(mt_rng* r)
{
    unsigned c = mt_rng_below(r, 10);
    if (c < 4) {
        return (int)mt_rng_below(r, 4097);             /* eager over shm */
    }
    if (c < 6) {
        return 4097 + (int)mt_rng_below(r, 16384 - 4097); /* rendezvous, copied */
    }
    return 16384 + (int)mt_rng_below(r, MAXSIZE - 16384 + 1); /* single copy */
}

static void draw_round(mt_rng* r, int base, int n, int nranks, struct msg* m)
{
    int k;
    for (k = 0; k < n; ++k) {
        m[k].src = (int)mt_rng_below(r, (unsigned)nranks);
        m[k].dst = (int)mt_rng_below(r, (unsigned)nranks);
        m[k].size = draw_size(r);
        m[k].tag = (int)((mt_rng_below(r, 8192) << 17) | (unsigned)((base + k) & 0x1ffff));
        m[k].rkind = (int)mt_rng_below(r, 5);
        if (m[k].rkind <= R_POSTED_ANY) {
            m[k].skind = (int)mt_rng_below(r, 4); /* Send, Ssend, Isend, Issend */
        } else {
            static const int late_modes[3] = {S_ISEND, S_ISSEND, S_BSEND};
            m[k].skind = late_modes[mt_rng_below(r, 3)];
        }
    }
}

/* Payload of message `index`: 8-byte words, then the tail bytes. */
static void fill(unsigned char* p, int n, int index)
{
    uint64_t w = (uint64_t)index * 0x9e3779b97f4a7c15ULL + 1;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(p + i, &w, 8);
        w = w * 6364136223846793005ULL + 1442695040888963407ULL;
    }
    for (; i < n; ++i) {
        p[i] = (unsigned char)(w >> (8 * (i & 7)));
    }
}

int main(int argc, char** argv)
{
    int total = argc > 1 ? atoi(argv[1]) : 10000;
    uint64_t seed = argc > 2 ? (uint64_t)atoll(argv[2]) : 1;
    int nrounds;
    int round;
    mt_rng plan;
    struct msg m[ROUND];
    unsigned char* sbuf[ROUND];
    unsigned char* rbuf[ROUND];
    unsigned char* expect;
    MPI_Request reqs[2 * ROUND];
    int req_msg[2 * ROUND];
    int bsize = 0;
    void* bbuf = NULL;
    long checked = 0;
    int k;

    mt_init(&argc, &argv);
    nrounds = (total + ROUND - 1) / ROUND;
    for (k = 0; k < ROUND; ++k) {
        sbuf[k] = malloc(MAXSIZE);
        rbuf[k] = malloc(MAXSIZE);
    }
    expect = malloc(MAXSIZE);

    /* Buffered sends: room for those of 8 consecutive rounds. */
    {
        int* need = calloc((size_t)nrounds, sizeof(int));
        int best = 0;
        mt_rng_seed(&plan, seed);
        for (round = 0; round < nrounds; ++round) {
            int n = total - round * ROUND < ROUND ? total - round * ROUND : ROUND;
            draw_round(&plan, round * ROUND, n, mt_size, m);
            for (k = 0; k < n; ++k) {
                if (m[k].src == mt_rank && m[k].skind == S_BSEND) {
                    need[round] += m[k].size + MPI_BSEND_OVERHEAD;
                }
            }
        }
        for (round = 0; round < nrounds; ++round) {
            int sum = 0, j;
            for (j = round; j < nrounds && j < round + 8; ++j) {
                sum += need[j];
            }
            best = sum > best ? sum : best;
        }
        bsize = best + MPI_BSEND_OVERHEAD;
        bbuf = malloc((size_t)bsize);
        MT_OK(MPI_Buffer_attach(bbuf, bsize));
        free(need);
    }

    mt_rng_seed(&plan, seed);
    for (round = 0; round < nrounds; ++round) {
        int n = total - round * ROUND < ROUND ? total - round * ROUND : ROUND;
        int nreq = 0;
        int base = round * ROUND;
        mt_rng local;
        draw_round(&plan, base, n, mt_size, m);
        mt_rng_seed(&local, seed * 7919 + (uint64_t)round * 31 + (uint64_t)mt_rank);

        /* 1. Posted receives. */
        for (k = 0; k < n; ++k) {
            if (m[k].dst == mt_rank && m[k].rkind <= R_POSTED_ANY) {
                MT_OK(MPI_Irecv(rbuf[k], MAXSIZE, MPI_BYTE,
                                m[k].rkind == R_POSTED_ANY ? MPI_ANY_SOURCE : m[k].src, m[k].tag,
                                MPI_COMM_WORLD, &reqs[nreq]));
                req_msg[nreq++] = k;
            }
        }
        /* 2. Sends. */
        for (k = 0; k < n; ++k) {
            if (m[k].src != mt_rank) {
                continue;
            }
            fill(sbuf[k], m[k].size, base + k);
            switch (m[k].skind) {
            case S_SEND:
                MT_OK(MPI_Send(sbuf[k], m[k].size, MPI_BYTE, m[k].dst, m[k].tag, MPI_COMM_WORLD));
                break;
            case S_SSEND:
                MT_OK(MPI_Ssend(sbuf[k], m[k].size, MPI_BYTE, m[k].dst, m[k].tag, MPI_COMM_WORLD));
                break;
            case S_BSEND:
                MT_OK(MPI_Bsend(sbuf[k], m[k].size, MPI_BYTE, m[k].dst, m[k].tag, MPI_COMM_WORLD));
                break;
            case S_ISEND:
                MT_OK(MPI_Isend(sbuf[k], m[k].size, MPI_BYTE, m[k].dst, m[k].tag, MPI_COMM_WORLD,
                                &reqs[nreq]));
                req_msg[nreq++] = -1;
                break;
            default:
                MT_OK(MPI_Issend(sbuf[k], m[k].size, MPI_BYTE, m[k].dst, m[k].tag, MPI_COMM_WORLD,
                                 &reqs[nreq]));
                req_msg[nreq++] = -1;
                break;
            }
        }
        /* 3. Late receives: sources in a random order, each source's
         *    messages in the order they were sent. */
        {
            int order[ROUND];
            int nlate = 0, i, j;
            for (k = 0; k < n; ++k) {
                if (m[k].dst == mt_rank && m[k].rkind >= R_LATE_SRC) {
                    order[nlate++] = k;
                }
            }
            /* A random interleaving that keeps per-source order: repeatedly
             * take the first remaining message of a random source. */
            while (nlate > 0) {
                int pick = (int)mt_rng_below(&local, (unsigned)nlate);
                int src = m[order[pick]].src;
                MPI_Status st;
                int want_src, want_tag;
                for (i = 0; i < nlate && m[order[i]].src != src; ++i) {
                }
                k = order[i];
                for (j = i; j + 1 < nlate; ++j) {
                    order[j] = order[j + 1];
                }
                --nlate;
                want_src = m[k].rkind == R_LATE_ANYSRC ? MPI_ANY_SOURCE : m[k].src;
                want_tag = m[k].rkind == R_LATE_ANYTAG ? MPI_ANY_TAG : m[k].tag;
                MT_OK(MPI_Recv(rbuf[k], MAXSIZE, MPI_BYTE, want_src, want_tag, MPI_COMM_WORLD, &st));
                MT_CHECK(st.MPI_SOURCE == m[k].src && st.MPI_TAG == m[k].tag &&
                             mt_count(&st) == m[k].size,
                         "message %d (late, kind %d): expected source %d tag %d size %d, got "
                         "source %d tag %d count %d",
                         base + k, m[k].rkind, m[k].src, m[k].tag, m[k].size, st.MPI_SOURCE,
                         st.MPI_TAG, mt_count(&st));
                fill(expect, m[k].size, base + k);
                MT_CHECK(memcmp(expect, rbuf[k], (size_t)m[k].size) == 0,
                         "message %d (late, %d bytes from %d): data differs", base + k, m[k].size,
                         m[k].src);
                ++checked;
            }
        }
        /* 4. Completion. */
        {
            MPI_Status sts[2 * ROUND];
            int how = (int)mt_rng_below(&local, 4);
            int i;
            int finished[2 * ROUND];
            memset(finished, 0, sizeof finished);
            switch (how) {
            case 0:
                MT_OK(MPI_Waitall(nreq, reqs, sts));
                for (i = 0; i < nreq; ++i) {
                    finished[i] = 1;
                }
                break;
            case 1:
                for (;;) {
                    int idx;
                    MPI_Status st;
                    MT_OK(MPI_Waitany(nreq, reqs, &idx, &st));
                    if (idx == MPI_UNDEFINED || idx < 0 || idx >= nreq) {
                        break;
                    }
                    sts[idx] = st;
                    finished[idx] = 1;
                }
                break;
            default:
                if (how == 3) {
                    int outcount, idx[2 * ROUND];
                    MPI_Status st2[2 * ROUND];
                    MT_OK(MPI_Testsome(nreq, reqs, &outcount, idx, st2));
                    for (i = 0; outcount != MPI_UNDEFINED && i < outcount; ++i) {
                        sts[idx[i]] = st2[i];
                        finished[idx[i]] = 1;
                    }
                }
                for (;;) {
                    int outcount = 0, idx[2 * ROUND];
                    MPI_Status st2[2 * ROUND];
                    MT_OK(MPI_Waitsome(nreq, reqs, &outcount, idx, st2));
                    if (outcount == MPI_UNDEFINED || outcount <= 0) {
                        break;
                    }
                    for (i = 0; i < outcount; ++i) {
                        sts[idx[i]] = st2[i];
                        finished[idx[i]] = 1;
                    }
                }
                break;
            }
            for (i = 0; i < nreq; ++i) {
                MT_CHECK(finished[i] && reqs[i] == MPI_REQUEST_NULL,
                         "round %d: request %d not completed (how %d)", round, i, how);
                k = req_msg[i];
                if (k < 0 || !finished[i]) {
                    continue;
                }
                MT_CHECK(sts[i].MPI_SOURCE == m[k].src && sts[i].MPI_TAG == m[k].tag &&
                             mt_count(&sts[i]) == m[k].size,
                         "message %d (posted, kind %d): expected source %d tag %d size %d, got "
                         "source %d tag %d count %d",
                         base + k, m[k].rkind, m[k].src, m[k].tag, m[k].size, sts[i].MPI_SOURCE,
                         sts[i].MPI_TAG, mt_count(&sts[i]));
                fill(expect, m[k].size, base + k);
                MT_CHECK(memcmp(expect, rbuf[k], (size_t)m[k].size) == 0,
                         "message %d (posted, %d bytes from %d): data differs", base + k,
                         m[k].size, m[k].src);
                ++checked;
            }
        }
    }
    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
    }
    if (mt_verbose) {
        printf("[%d] checked %ld messages\n", mt_rank, checked);
    }
    /* Every message was checked by its receiver: count them at rank 0. */
    if (mt_rank == 0) {
        long sum = checked;
        int i;
        for (i = 1; i < mt_size; ++i) {
            long c = 0;
            MT_OK(MPI_Recv(&c, 1, MPI_LONG, i, 31000, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            sum += c;
        }
        MT_CHECK(mt_errors > 0 || sum == total, "%ld messages checked, %d sent", sum, total);
    } else {
        MT_OK(MPI_Send(&checked, 1, MPI_LONG, 0, 31000, MPI_COMM_WORLD));
    }
    for (k = 0; k < ROUND; ++k) {
        free(sbuf[k]);
        free(rbuf[k]);
    }
    free(expect);
    free(bbuf);
    return mt_finalize();
}
