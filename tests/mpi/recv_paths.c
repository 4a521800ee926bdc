/*
 * The receive side's short paths (a receive posted ahead of its message
 * matched straight from the path, one that finds its message stored, the
 * inline finish of MPI_Irecv requests in Wait/Test/Waitall/Testall) must
 * keep every semantic of the long ones. A seeded random test; every rank
 * pairs with rank ^ 1 (an odd last rank with itself):
 *   - rounds of messages of random sizes (0 B to a rendezvous) and tags,
 *     received by random mixes of MPI_Recv, MPI_Irecv + Wait / Test /
 *     Waitall / Testall, with MPI_ANY_SOURCE and MPI_ANY_TAG or not, some
 *     posted before the messages leave and some after they arrived: each
 *     receive gets its own message (MPI's order), with the right status
 *     (source, tag, count; MPI_ERROR set by the array forms, left as the
 *     program set it by the single ones) and data;
 *   - MPI_Cancel of a posted receive: cancelled status, and the message
 *     sent afterwards with its tag goes to the next receive;
 *   - MPI_Probe then MPI_Recv of what it found;
 *   - a message longer than the buffer: MPI_ERR_TRUNCATE from MPI_Recv,
 *     MPI_Wait, MPI_Test, and MPI_ERR_IN_STATUS with MPI_ERR_TRUNCATE in
 *     the status from MPI_Waitall, posted ahead or found stored.
 *
 *   recv_paths [seed] [rounds]
 */
#include "mpitest.h"

#define MAXN 32
#define TAG_GO 900
#define TAG_DONE 901
#define TAG_BASE 10

static unsigned rng_state;

static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

static const int sizes[] = {0, 1, 8, 48, 56, 57, 120, 121, 1000, 4096, 4097, 70000};

struct plan {
    int n;
    int size[MAXN];
    int tag[MAXN];
    int any_src[MAXN];
    int any_tag[MAXN];
    int how[MAXN]; /* 0 Recv, 1 Wait, 2 Test loop, 3 in the Waitall, 4 in the Testall */
    int ahead;     /* receives posted before the messages leave */
};

/* Both sides draw the same plan from the round's seed. */
static void make_plan(struct plan* p, unsigned seed)
{
    int i;
    rng_state = seed;
    p->n = 1 + (int)rnd(MAXN);
    p->ahead = (int)rnd(2);
    for (i = 0; i < p->n; ++i) {
        p->size[i] = sizes[rnd(sizeof sizes / sizeof sizes[0])];
        p->tag[i] = TAG_BASE + (int)rnd(3);
        p->any_src[i] = rnd(3) == 0;
        p->any_tag[i] = rnd(3) == 0;
        p->how[i] = (int)rnd(5);
        if (!p->ahead && p->how[i] == 0) {
            p->how[i] = 1; /* receives after the fact are all nonblocking first */
        }
    }
}

static void check_status(const MPI_Status* st, int src, int tag, int bytes, int err, const char* what, int i)
{
    int count = -1;
    MT_CHECK(st->MPI_SOURCE == src, "%s %d: source %d, expected %d", what, i, st->MPI_SOURCE, src);
    MT_CHECK(st->MPI_TAG == tag, "%s %d: tag %d, expected %d", what, i, st->MPI_TAG, tag);
    MT_CHECK(st->MPI_ERROR == err, "%s %d: MPI_ERROR %d, expected %d", what, i, st->MPI_ERROR, err);
    MPI_Get_count(st, MPI_BYTE, &count);
    MT_CHECK(count == bytes, "%s %d: count %d, expected %d", what, i, count, bytes);
}

static void round_trip(int partner, unsigned seed)
{
    struct plan p;
    char* in[MAXN];
    char* out[MAXN];
    MPI_Request rq[MAXN];
    MPI_Request arr[MAXN];
    MPI_Status sts[MAXN];
    int arr_idx[MAXN];
    int narr_wait = 0;
    int narr_test = 0;
    int posted = 0;
    int i;
    const int sender = mt_rank <= partner; /* the lower rank of the pair sends (itself too) */
    const int receiver = mt_rank >= partner;

    make_plan(&p, seed);
    for (i = 0; i < p.n; ++i) {
        in[i] = calloc(1, (size_t)p.size[i] + 1);
        out[i] = malloc((size_t)p.size[i] + 1);
        mt_fill(out[i], (size_t)p.size[i], seed + (unsigned)i);
        rq[i] = MPI_REQUEST_NULL;
    }
    /* Receives posted ahead: the nonblocking ones now, then the go. */
    if (receiver && p.ahead) {
        for (i = 0; i < p.n && p.how[i] != 0; ++i) {
            MT_OK(MPI_Irecv(in[i], p.size[i], MPI_BYTE, p.any_src[i] ? MPI_ANY_SOURCE : partner,
                            p.any_tag[i] ? MPI_ANY_TAG : p.tag[i], MPI_COMM_WORLD, &rq[i]));
        }
        posted = i;
        if (partner != mt_rank) {
            MT_OK(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD));
        }
    }
    if (sender) {
        MPI_Request sq[MAXN];
        if (p.ahead && partner != mt_rank) {
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        for (i = 0; i < p.n; ++i) {
            MT_OK(MPI_Isend(out[i], p.size[i], MPI_BYTE, partner, p.tag[i], MPI_COMM_WORLD, &sq[i]));
        }
        MT_OK(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_DONE, MPI_COMM_WORLD));
        if (partner != mt_rank) {
            MT_OK(MPI_Waitall(p.n, sq, MPI_STATUSES_IGNORE));
        } else {
            /* Sends to itself: their rendezvous ones wait for the receives. */
            for (i = 0; i < p.n; ++i) {
                if (rq[i] == MPI_REQUEST_NULL && p.how[i] != 0) {
                    MT_OK(MPI_Irecv(in[i], p.size[i], MPI_BYTE, p.any_src[i] ? MPI_ANY_SOURCE : partner,
                                    p.any_tag[i] ? MPI_ANY_TAG : p.tag[i], MPI_COMM_WORLD, &rq[i]));
                } else if (rq[i] == MPI_REQUEST_NULL) {
                    break;
                }
            }
            posted = i;
            for (; i < p.n; ++i) {
                MPI_Status st;
                st.MPI_ERROR = -7;
                MT_OK(MPI_Recv(in[i], p.size[i], MPI_BYTE, p.any_src[i] ? MPI_ANY_SOURCE : partner,
                               p.any_tag[i] ? MPI_ANY_TAG : p.tag[i], MPI_COMM_WORLD, &st));
                check_status(&st, partner, p.tag[i], p.size[i], -7, "self Recv", i);
                p.how[i] = -1;
            }
            MT_OK(MPI_Waitall(p.n, sq, MPI_STATUSES_IGNORE));
        }
    }
    if (receiver) {
        if (!p.ahead && partner != mt_rank) {
            /* Every message is stored when the later done is matched. */
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        for (i = posted; i < p.n && p.how[i] != -1; ++i) {
            if (p.how[i] == 0) {
                MPI_Status st;
                st.MPI_ERROR = -7;
                MT_OK(MPI_Recv(in[i], p.size[i], MPI_BYTE, p.any_src[i] ? MPI_ANY_SOURCE : partner,
                               p.any_tag[i] ? MPI_ANY_TAG : p.tag[i], MPI_COMM_WORLD, &st));
                check_status(&st, partner, p.tag[i], p.size[i], -7, "Recv", i);
            } else {
                MT_OK(MPI_Irecv(in[i], p.size[i], MPI_BYTE, p.any_src[i] ? MPI_ANY_SOURCE : partner,
                                p.any_tag[i] ? MPI_ANY_TAG : p.tag[i], MPI_COMM_WORLD, &rq[i]));
            }
        }
        for (i = 0; i < p.n; ++i) {
            MPI_Status st;
            int flag = 0;
            st.MPI_ERROR = -7;
            if (p.how[i] == 1) {
                MT_OK(MPI_Wait(&rq[i], &st));
                check_status(&st, partner, p.tag[i], p.size[i], -7, "Wait", i);
            } else if (p.how[i] == 2) {
                while (!flag) {
                    MT_OK(MPI_Test(&rq[i], &flag, &st));
                }
                check_status(&st, partner, p.tag[i], p.size[i], -7, "Test", i);
            } else if (p.how[i] == 3) {
                arr[narr_wait] = rq[i];
                arr_idx[narr_wait++] = i;
                continue;
            } else {
                continue;
            }
            MT_CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        }
        if (narr_wait > 0) {
            for (i = 0; i < narr_wait; ++i) {
                sts[i].MPI_ERROR = -7;
            }
            MT_OK(MPI_Waitall(narr_wait, arr, sts));
            for (i = 0; i < narr_wait; ++i) {
                const int k = arr_idx[i];
                check_status(&sts[i], partner, p.tag[k], p.size[k], MPI_SUCCESS, "Waitall", k);
                MT_CHECK(arr[i] == MPI_REQUEST_NULL, "Waitall left request %d", k);
            }
        }
        for (i = 0; i < p.n; ++i) {
            if (p.how[i] == 4) {
                arr[narr_test] = rq[i];
                arr_idx[narr_test++] = i;
            }
        }
        if (narr_test > 0) {
            int flag = 0;
            while (!flag) {
                MT_OK(MPI_Testall(narr_test, arr, &flag, sts));
            }
            for (i = 0; i < narr_test; ++i) {
                const int k = arr_idx[i];
                check_status(&sts[i], partner, p.tag[k], p.size[k], MPI_SUCCESS, "Testall", k);
                MT_CHECK(arr[i] == MPI_REQUEST_NULL, "Testall left request %d", k);
            }
        }
        if (p.ahead && partner != mt_rank) {
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        if (partner == mt_rank) {
            MT_OK(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        for (i = 0; i < p.n; ++i) {
            MT_VERIFY(in[i], (size_t)p.size[i], seed + (unsigned)i, "seed %u message %d of %d bytes", seed, i,
                      p.size[i]);
        }
    }
    for (i = 0; i < p.n; ++i) {
        free(in[i]);
        free(out[i]);
    }
}

static void cancel_and_probe(int partner)
{
    MPI_Request r;
    MPI_Status st;
    int flag = 0;
    int v = -1;
    const int x = 1234 + mt_rank;

    /* A posted receive cancelled: the message with its tag goes to the next. */
    MT_OK(MPI_Irecv(&v, 1, MPI_INT, partner, 77, MPI_COMM_WORLD, &r));
    MT_OK(MPI_Cancel(&r));
    MT_OK(MPI_Wait(&r, &st));
    MT_OK(MPI_Test_cancelled(&st, &flag));
    MT_CHECK(flag == 1, "a posted receive was not cancelled");
    MT_CHECK(v == -1, "a cancelled receive wrote its buffer");
    mt_barrier();
    MT_OK(MPI_Sendrecv(&x, 1, MPI_INT, partner, 77, &v, 1, MPI_INT, partner, 77, MPI_COMM_WORLD, &st));
    MT_CHECK(v == 1234 + partner, "after a cancel: got %d", v);

    /* Probe, then receive what it found (one wildcard at a time: another
     * rank's barrier message may come meanwhile). */
    MT_OK(MPI_Send(&x, 1, MPI_INT, partner, 78, MPI_COMM_WORLD));
    MT_OK(MPI_Send(&x, 1, MPI_INT, partner, 79, MPI_COMM_WORLD));
    MT_OK(MPI_Probe(MPI_ANY_SOURCE, 78, MPI_COMM_WORLD, &st));
    MT_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 78, "probe found %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    MT_OK(MPI_Get_count(&st, MPI_INT, &flag));
    MT_CHECK(flag == 1, "probe count %d", flag);
    v = -1;
    MT_OK(MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MT_CHECK(v == 1234 + partner, "after a probe: got %d", v);
    MT_OK(MPI_Probe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    MT_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 79, "probe found %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    v = -1;
    MT_OK(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &r));
    MT_OK(MPI_Wait(&r, &st));
    MT_CHECK(v == 1234 + partner && st.MPI_SOURCE == partner && st.MPI_TAG == 79,
             "after a probe: got %d from %d/%d", v, st.MPI_SOURCE, st.MPI_TAG);
    mt_barrier();
}

/* Each form receives 8 bytes into 4, the receive posted ahead (ahead) or
 * the message already stored. */
static void truncation(int partner, int ahead)
{
    const int out[2] = {5, 6};
    int in[2];
    MPI_Request r[2];
    MPI_Status st[2];
    int how;
    int flag;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (how = 0; how < 4; ++how) {
        const int tag = 60 + how;
        int rc;
        int cls = -1;
        in[0] = 0;
        in[1] = -3;
        if (ahead) {
            if (how > 0) {
                MT_OK(MPI_Irecv(in, 1, MPI_INT, partner, tag, MPI_COMM_WORLD, &r[0]));
            }
            mt_barrier();
            MT_OK(MPI_Send(out, 2, MPI_INT, partner, tag, MPI_COMM_WORLD));
        } else {
            MT_OK(MPI_Send(out, 2, MPI_INT, partner, tag, MPI_COMM_WORLD));
            mt_barrier();
            MT_OK(MPI_Probe(partner, tag, MPI_COMM_WORLD, &st[0])); /* stored now */
            if (how > 0) {
                MT_OK(MPI_Irecv(in, 1, MPI_INT, partner, tag, MPI_COMM_WORLD, &r[0]));
            }
        }
        if (how == 0) {
            rc = MPI_Recv(in, 1, MPI_INT, partner, tag, MPI_COMM_WORLD, &st[0]);
        } else if (how == 1) {
            rc = MPI_Wait(&r[0], &st[0]);
        } else if (how == 2) {
            flag = 0;
            do {
                rc = MPI_Test(&r[0], &flag, &st[0]);
            } while (rc == MPI_SUCCESS && !flag);
        } else {
            r[1] = MPI_REQUEST_NULL;
            st[0].MPI_ERROR = -7;
            rc = MPI_Waitall(2, r, st);
        }
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == (how == 3 ? MPI_ERR_IN_STATUS : MPI_ERR_TRUNCATE),
                 "truncation (form %d, ahead %d): class %d", how, ahead, cls);
        if (how == 3) {
            MPI_Error_class(st[0].MPI_ERROR, &cls);
            MT_CHECK(cls == MPI_ERR_TRUNCATE, "Waitall status: class %d", cls);
        }
        if (how > 0) {
            MT_CHECK(r[0] == MPI_REQUEST_NULL, "truncated request (form %d) not freed", how);
        }
        MT_CHECK(in[0] == 5 && in[1] == -3, "truncation (form %d): buffer %d %d", how, in[0], in[1]);
        mt_barrier();
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char** argv)
{
    unsigned seed;
    int rounds;
    int partner;
    int k;

    mt_init(&argc, &argv);
    seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 20261128u;
    rounds = argc > 2 ? atoi(argv[2]) : 200;
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    if (mt_verbose && mt_rank == 0) {
        printf("seed %u rounds %d\n", seed, rounds);
    }
    for (k = 0; k < rounds; ++k) {
        round_trip(partner, seed + (unsigned)k * 7919u);
    }
    mt_barrier();
    cancel_and_probe(partner);
    truncation(partner, 1);
    truncation(partner, 0);
    return mt_finalize();
}
