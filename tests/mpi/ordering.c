/*
 * Message ordering (non-overtaking, MPI-3.1 section 3.5) with wildcard
 * receives interleaved, at sizes that mix eager and rendezvous messages.
 *
 * Ranks work in pairs (rank ^ 1; a rank without partner with itself); in
 * each round one side sends P messages with tags A/B drawn at random, the
 * other receives them with receives of three kinds (tag A, tag B,
 * MPI_ANY_TAG; source the partner or MPI_ANY_SOURCE). Both sides draw the
 * same plan from a shared seed and compute the expected outcome:
 *
 * posted:  every receive is posted before the sender is told to go; a
 *          message goes to the first posted receive that matches it (the
 *          receives are shuffled from message order, keeping a complete
 *          matching).
 * late:    messages are sent first; blocking receives, one at a time,
 *          each of a kind that still has a message; each gets the earliest
 *          unreceived message that matches.
 *
 * The payload carries the message's index, checked against the expected
 * receive. Rank 0 uses MPI_ANY_SOURCE only when it has no other peer (others
 * send it their error counts as soon as they are done).
 */
#include "mpitest.h"

#define P 40
#define TAG_A 11
#define TAG_B 12
#define TAG_GO 99
#define MAXSIZE 100000

static const int k_sizes[] = {0, 16, 4096, 4097, 20000, MAXSIZE};

struct plan {
    int tag[P];      /* message i's tag */
    int size[P];     /* message i's size */
    int kind[P];     /* receive j's tag: TAG_A, TAG_B or MPI_ANY_TAG */
    int anysrc[P];   /* receive j uses MPI_ANY_SOURCE */
    int expect[P];   /* receive j gets message expect[j] */
};

static int matches(int kind, int tag) { return kind == MPI_ANY_TAG || kind == tag; }

/* posted: message i goes to the first unmatched receive that matches. */
static int simulate_posted(const struct plan* p, int* expect)
{
    int used[P] = {0};
    int i, j;
    for (i = 0; i < P; ++i) {
        for (j = 0; j < P; ++j) {
            if (!used[j] && matches(p->kind[j], p->tag[i])) {
                break;
            }
        }
        if (j == P) {
            return 0;
        }
        used[j] = 1;
        expect[j] = i;
    }
    return 1;
}

static void make_plan(struct plan* p, mt_rng* rng, int late)
{
    int i, j;
    for (i = 0; i < P; ++i) {
        p->tag[i] = mt_rng_below(rng, 2) ? TAG_A : TAG_B;
        p->size[i] = k_sizes[mt_rng_below(rng, 6)];
        p->anysrc[i] = (int)mt_rng_below(rng, 2);
    }
    if (!late) {
        /* Receives in message order, each of its message's tag or ANY;
         * then random swaps that keep a complete matching. */
        for (i = 0; i < P; ++i) {
            p->kind[i] = mt_rng_below(rng, 3) == 0 ? MPI_ANY_TAG : p->tag[i];
        }
        for (i = 0; i < 4 * P; ++i) {
            int a = (int)mt_rng_below(rng, P), b = (int)mt_rng_below(rng, P);
            int t = p->kind[a];
            p->kind[a] = p->kind[b];
            p->kind[b] = t;
            if (!simulate_posted(p, p->expect)) {
                p->kind[b] = p->kind[a];
                p->kind[a] = t;
            }
        }
        simulate_posted(p, p->expect);
    } else {
        /* Each receive takes the earliest unreceived matching message. */
        int got[P] = {0};
        for (j = 0; j < P; ++j) {
            int kind = (int)mt_rng_below(rng, 3);
            int want = kind == 0 ? MPI_ANY_TAG : kind == 1 ? TAG_A : TAG_B;
            for (;;) {
                for (i = 0; i < P; ++i) {
                    if (!got[i] && matches(want, p->tag[i])) {
                        break;
                    }
                }
                if (i < P) {
                    break;
                }
                want = MPI_ANY_TAG; /* no message of that tag left */
            }
            p->kind[j] = want;
            p->expect[j] = i;
            got[i] = 1;
        }
    }
}

int main(int argc, char** argv)
{
    int partner, round, late;
    unsigned char* sbuf[P];
    unsigned char* rbuf[P];
    int i;

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    for (i = 0; i < P; ++i) {
        sbuf[i] = malloc(MAXSIZE);
        rbuf[i] = malloc(MAXSIZE);
    }

    for (late = 0; late < 2; ++late) {
        for (round = 0; round < 4; ++round) {
            int lo = mt_rank < partner ? mt_rank : partner;
            int sender = round % 2 == 0 ? lo : (lo == mt_rank ? partner : mt_rank);
            int am_sender = sender == mt_rank;
            int am_receiver = partner == mt_rank || !am_sender; /* alone: both */
            int allow_any = !(mt_rank == 0 && mt_size > 2);
            struct plan p;
            mt_rng rng;
            MPI_Request sreq[P], rreq[P];
            MPI_Status st;
            mt_rng_seed(&rng, (uint64_t)(lo * 1000 + round * 10 + late));
            make_plan(&p, &rng, late);
            if (!allow_any) {
                for (i = 0; i < P; ++i) {
                    p.anysrc[i] = 0;
                }
            }
            if (am_receiver && !late) {
                for (i = 0; i < P; ++i) {
                    MT_OK(MPI_Irecv(rbuf[i], MAXSIZE, MPI_BYTE, p.anysrc[i] ? MPI_ANY_SOURCE : partner,
                                    p.kind[i], MPI_COMM_WORLD, &rreq[i]));
                }
                if (partner != mt_rank) {
                    MT_OK(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD));
                }
            }
            if (am_sender) {
                if (!late && partner != mt_rank) {
                    MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
                }
                for (i = 0; i < P; ++i) {
                    int hdr[2] = {i, round};
                    mt_fill(sbuf[i], (size_t)p.size[i], (unsigned)(i * 7 + round));
                    if (p.size[i] >= 8) {
                        memcpy(sbuf[i], hdr, sizeof hdr);
                    }
                    if (!late && partner != mt_rank && i % 4 == 0) {
                        /* Blocking: every receive is posted. */
                        MT_OK(MPI_Send(sbuf[i], p.size[i], MPI_BYTE, partner, p.tag[i], MPI_COMM_WORLD));
                        sreq[i] = MPI_REQUEST_NULL;
                    } else if (!late && partner != mt_rank && i % 4 == 1) {
                        MT_OK(MPI_Ssend(sbuf[i], p.size[i], MPI_BYTE, partner, p.tag[i], MPI_COMM_WORLD));
                        sreq[i] = MPI_REQUEST_NULL;
                    } else {
                        MT_OK(MPI_Isend(sbuf[i], p.size[i], MPI_BYTE, partner, p.tag[i],
                                        MPI_COMM_WORLD, &sreq[i]));
                    }
                }
            }
            if (am_receiver) {
                for (i = 0; i < P; ++i) {
                    int m = p.expect[i];
                    if (late) {
                        MT_OK(MPI_Recv(rbuf[i], MAXSIZE, MPI_BYTE,
                                       p.anysrc[i] ? MPI_ANY_SOURCE : partner, p.kind[i],
                                       MPI_COMM_WORLD, &st));
                    } else {
                        MT_OK(MPI_Wait(&rreq[i], &st));
                    }
                    MT_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == p.tag[m] &&
                                 mt_count(&st) == p.size[m],
                             "%s round %d receive %d (tag %d): expected message %d (tag %d, %d "
                             "bytes), status source %d tag %d count %d",
                             late ? "late" : "posted", round, i, p.kind[i], m, p.tag[m], p.size[m],
                             st.MPI_SOURCE, st.MPI_TAG, mt_count(&st));
                    if (p.size[m] >= 8 && mt_count(&st) >= 8) {
                        int hdr[2];
                        memcpy(hdr, rbuf[i], sizeof hdr);
                        MT_CHECK(hdr[0] == m && hdr[1] == round,
                                 "%s round %d receive %d got message %d of round %d, expected "
                                 "message %d", late ? "late" : "posted", round, i, hdr[0], hdr[1], m);
                        if (hdr[0] == m) {
                            int k;
                            for (k = 8; k < p.size[m]; ++k) {
                                if (rbuf[i][k] != mt_byte((unsigned)(m * 7 + round), (size_t)k)) {
                                    MT_CHECK(0, "message %d: data differs at byte %d", m, k);
                                    break;
                                }
                            }
                        }
                    }
                }
            }
            if (am_sender) {
                MT_OK(MPI_Waitall(P, sreq, MPI_STATUSES_IGNORE));
            }
        }
    }
    for (i = 0; i < P; ++i) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    return mt_finalize();
}
