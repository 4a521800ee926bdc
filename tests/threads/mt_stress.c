/*
 * MPI_THREAD_MULTIPLE under stress: several threads per rank in MPI at once.
 *
 *   mt_stress <part> [threads] [iterations]
 *
 * part:
 *   p2p       every thread exchanges with every other rank on its own tag:
 *             blocking and nonblocking, 0 B, eager and rendezvous sizes,
 *             order per (source, tag) checked from a sequence number inside
 *   wildcard  threads receive with MPI_ANY_SOURCE on their tag, and with
 *             MPI_ANY_SOURCE + MPI_ANY_TAG on a communicator of their own,
 *             while the others send; every message arrives exactly once
 *   mprobe    all threads MPI_Mprobe/MPI_Improbe the same (source, tag):
 *             the message a thread probed is the one it receives (counts and
 *             contents match the probe), none is lost or received twice;
 *             MPI_Probe + MPI_Recv from one thread per tag alongside
 *   coll      every thread builds communicators concurrently (Comm_dup and
 *             Comm_split of a parent of its own, Comm_create_group of its
 *             own parent and of MPI_COMM_WORLD with its own tag), puts an
 *             attribute on them, and runs blocking and nonblocking
 *             collectives on them, checked
 *   ctorcross every thread loops: MPI_Comm_create_group on a parent of its
 *             own (blocking, every rank), then MPI_Comm_dup(MPI_COMM_SELF)
 *             under a mutex of the program's; the threads of two ranks
 *             reach the two in crossing orders (MPICH's
 *             threads/comm/comm_create_group_threads hung on this)
 *   fanout    one thread per rank; thread t exchanges with rank t (itself
 *             included) on MPI_COMM_WORLD, 4 B up to 2 MiB doubling: even
 *             iterations each thread waits for its own pair, odd ones
 *             thread 1 waits for everyone's requests while the others
 *             wait at a barrier (MPICH's threads/pt2pt/multisend4 timed out)
 *   blocked   on ranks 0 and 1: one thread blocks in MPI_Recv for a message
 *             that is sent only after the other thread has done its work
 *             (ping-pongs, MPI_Comm_dup/free of MPI_COMM_SELF, a probe):
 *             a blocking call must not keep the other thread out
 *   cancel    threads post receives that never match and cancel them, or
 *             cancel under another thread's Wait; requests posted by one
 *             thread are completed by MPI_Wait/MPI_Test/MPI_Waitany in
 *             another (a hand-off queue), the sender in yet another
 *   all       every part above, in turn
 *
 * Rank 0 prints "No Errors" when every check passed (tests/mpi/mpitest.h).
 * Every blocking wait is bounded by mpirun --timeout (the runner's watchdog),
 * and by an alarm() here.
 */
#include "../mpi/mpitest.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_THREADS 16

static int g_threads = 4;
static int g_iters = 40;
static atomic_int g_errs;

#define TCHECK(cond, ...)                                                                       \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            atomic_fetch_add(&g_errs, 1);                                                       \
            fprintf(stderr, "[%d] %s:%d: ", mt_rank, __FILE__, __LINE__);                       \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
        }                                                                                       \
    } while (0)

#define TOK(call)                                                                               \
    do {                                                                                        \
        int rc_ = (call);                                                                       \
        TCHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_);                               \
    } while (0)

typedef void* (*body_fn)(void*);

static void run_threads(body_fn fn)
{
    pthread_t t[MAX_THREADS];
    long i;
    for (i = 0; i < g_threads; ++i) {
        if (pthread_create(&t[i], NULL, fn, (void*)i) != 0) {
            TCHECK(0, "pthread_create failed");
            return;
        }
    }
    for (i = 0; i < g_threads; ++i) {
        pthread_join(t[i], NULL);
    }
}

/* Message size for iteration k: 0 B, small, eager, rendezvous. */
static int msg_size(int k)
{
    static const int sizes[4] = {0, 8, 4000, 70000};
    return sizes[k % 4];
}

/* Payload: word 0 = sequence number, the rest mt_fill(seed). */
static unsigned seed_of(int src, int tag, int seq) { return (unsigned)(src * 7919 + tag * 131 + seq); }

static void fill_msg(unsigned char* b, int n, int src, int tag, int seq)
{
    if (n >= 4) {
        memcpy(b, &seq, 4);
        mt_fill(b + 4, (size_t)n - 4, seed_of(src, tag, seq));
    }
}

static void check_msg(const unsigned char* b, int n, int src, int tag, int seq, const char* what)
{
    if (n >= 4) {
        int got;
        memcpy(&got, b, 4);
        TCHECK(got == seq, "%s: from %d tag %d: sequence %d, expected %d", what, src, tag, got, seq);
        TCHECK(mt_verify(b + 4, (size_t)n - 4, seed_of(src, tag, got)) < 0,
               "%s: from %d tag %d seq %d: data differs", what, src, tag, got);
    }
}

/* ---- p2p ---------------------------------------------------------------- */

static void* p2p_body(void* arg)
{
    int tag = (int)(long)arg;
    int n = 70000;
    unsigned char* sbuf = malloc((size_t)n * (size_t)mt_size);
    unsigned char* rbuf = malloc((size_t)n * (size_t)mt_size);
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)mt_size);
    int k;
    for (k = 0; k < g_iters; ++k) {
        int len = msg_size(k + tag);
        int nr = 0;
        int p;
        /* Nonblocking to and from everyone, then blocking around a ring. */
        for (p = 0; p < mt_size; ++p) {
            if (p == mt_rank) {
                continue;
            }
            TOK(MPI_Irecv(rbuf + (size_t)p * (size_t)n, len, MPI_BYTE, p, tag, MPI_COMM_WORLD,
                          &reqs[nr++]));
        }
        for (p = 0; p < mt_size; ++p) {
            if (p == mt_rank) {
                continue;
            }
            fill_msg(sbuf + (size_t)p * (size_t)n, len, mt_rank, tag, k);
            if (k % 3 == 0) {
                TOK(MPI_Issend(sbuf + (size_t)p * (size_t)n, len, MPI_BYTE, p, tag, MPI_COMM_WORLD,
                               &reqs[nr++]));
            } else {
                TOK(MPI_Isend(sbuf + (size_t)p * (size_t)n, len, MPI_BYTE, p, tag, MPI_COMM_WORLD,
                              &reqs[nr++]));
            }
        }
        TOK(MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE));
        for (p = 0; p < mt_size; ++p) {
            if (p != mt_rank) {
                check_msg(rbuf + (size_t)p * (size_t)n, len, p, tag, k, "p2p nonblocking");
            }
        }
        if (mt_size > 1) {
            int right = (mt_rank + 1) % mt_size;
            int left = (mt_rank + mt_size - 1) % mt_size;
            MPI_Status st;
            int count = -1;
            fill_msg(sbuf, len, mt_rank, tag + 100, k);
            TOK(MPI_Sendrecv(sbuf, len, MPI_BYTE, right, tag + 100, rbuf, n, MPI_BYTE, left,
                             tag + 100, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            TCHECK(count == len, "sendrecv: count %d, expected %d", count, len);
            check_msg(rbuf, len, left, tag + 100, k, "p2p sendrecv");
            if (mt_rank % 2 == 0) {
                TOK(MPI_Send(sbuf, len, MPI_BYTE, right, tag + 200, MPI_COMM_WORLD));
                TOK(MPI_Recv(rbuf, n, MPI_BYTE, left, tag + 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                TOK(MPI_Recv(rbuf, n, MPI_BYTE, left, tag + 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                TOK(MPI_Send(sbuf, len, MPI_BYTE, right, tag + 200, MPI_COMM_WORLD));
            }
        }
    }
    free(sbuf);
    free(rbuf);
    free(reqs);
    return NULL;
}

/* ---- wildcard ----------------------------------------------------------- */

static MPI_Comm g_own[MAX_THREADS];

static void* wildcard_body(void* arg)
{
    int t = (int)(long)arg;
    int tag = 1000 + t;
    int expect = (mt_size - 1) * g_iters;
    int* next = calloc((size_t)mt_size, sizeof(int));
    int* next_own = calloc((size_t)mt_size, sizeof(int));
    unsigned char buf[4096];
    unsigned char* out = malloc((size_t)mt_size * 4100);
    MPI_Request* sreq = malloc(sizeof(MPI_Request) * 2 * (size_t)mt_size);
    int k, p, got;
    /* Every iteration: nonblocking sends to every peer, then as many
     * wildcard receives as messages come to this thread, then the sends
     * complete (a rendezvous send needs the peer's receive). */
    for (k = 0; k < g_iters; ++k) {
        int ns = 0;
        for (p = 0; p < mt_size; ++p) {
            unsigned char* o = out + (size_t)p * 4100;
            int len = (k % 2) ? 4 : 3000;
            if (p == mt_rank) {
                continue;
            }
            fill_msg(o, len, mt_rank, tag, k);
            TOK(MPI_Isend(o, len, MPI_BYTE, p, tag, MPI_COMM_WORLD, &sreq[ns++]));
            fill_msg(o + 3000, 4, mt_rank, 7, k);
            TOK(MPI_Isend(o + 3000, 4, MPI_BYTE, p, 7 + k % 5, g_own[t], &sreq[ns++]));
        }
        /* Receive one of each kind per peer as we go. */
        for (p = 0; p < mt_size - 1; ++p) {
            MPI_Status st;
            int count;
            TOK(MPI_Recv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
            TCHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < mt_size && st.MPI_SOURCE != mt_rank,
                   "wildcard: source %d", st.MPI_SOURCE);
            TCHECK(st.MPI_TAG == tag, "wildcard: tag %d, expected %d", st.MPI_TAG, tag);
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < mt_size) {
                check_msg(buf, count, st.MPI_SOURCE, tag, next[st.MPI_SOURCE], "any source");
                ++next[st.MPI_SOURCE];
            }
            TOK(MPI_Recv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, g_own[t], &st));
            TCHECK(st.MPI_TAG >= 7 && st.MPI_TAG < 12, "any tag: tag %d", st.MPI_TAG);
            if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < mt_size) {
                check_msg(buf, 4, st.MPI_SOURCE, 7, next_own[st.MPI_SOURCE], "any source+tag");
                ++next_own[st.MPI_SOURCE];
            }
        }
        TOK(MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE));
    }
    got = 0;
    for (p = 0; p < mt_size; ++p) {
        got += next[p];
        if (p != mt_rank) {
            TCHECK(next[p] == g_iters, "wildcard: %d messages from %d, expected %d", next[p], p,
                   g_iters);
        }
    }
    TCHECK(got == expect, "wildcard: %d messages, expected %d", got, expect);
    free(next);
    free(next_own);
    free(out);
    free(sreq);
    return NULL;
}

/* ---- mprobe ------------------------------------------------------------- */

/* Rank r sends g_iters messages per thread with tag 2000 to every other rank;
 * on the receiving side all threads compete for them through Mprobe. */
static atomic_int g_mprobe_received;
static atomic_int* g_mprobe_seen; /* [src * g_iters * MAX_THREADS + seq] */

static void* mprobe_body(void* arg)
{
    int t = (int)(long)arg;
    const int tag = 2000;
    const int total = (mt_size - 1) * g_iters * g_threads;
    unsigned char out[6000];
    unsigned char in[6000];
    MPI_Request sreq;
    int k, p;
    (void)total;
    for (k = 0; k < g_iters; ++k) {
        int seq = t * g_iters + k;
        int len = 4 + (seq % 3) * 2000;
        /* The same message to every peer; the sends complete after this
         * thread's receives (a rendezvous send needs the peer's receive). */
        MPI_Request* sr = malloc(sizeof(MPI_Request) * (size_t)mt_size);
        int ns = 0;
        fill_msg(out, len, mt_rank, tag, seq);
        for (p = 0; p < mt_size; ++p) {
            if (p != mt_rank) {
                TOK(MPI_Isend(out, len, MPI_BYTE, p, tag, MPI_COMM_WORLD, &sr[ns++]));
            }
        }
        /* Receive about as many as we sent, competing with the others. */
        for (p = 0; p < mt_size - 1; ++p) {
            MPI_Message msg;
            MPI_Status st;
            int count = -1, rcount = -2, flag = 0, seq;
            if ((k + p) % 2 == 0) {
                TOK(MPI_Mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &msg, &st));
            } else {
                while (!flag) {
                    TOK(MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &msg, &st));
                }
            }
            MPI_Get_count(&st, MPI_BYTE, &count);
            if ((k + p) % 3 == 0) {
                MPI_Request r;
                TOK(MPI_Imrecv(in, count, MPI_BYTE, &msg, &r));
                TOK(MPI_Wait(&r, &st));
            } else {
                TOK(MPI_Mrecv(in, count, MPI_BYTE, &msg, &st));
            }
            MPI_Get_count(&st, MPI_BYTE, &rcount);
            TCHECK(rcount == count, "mprobe: probed %d bytes, received %d", count, rcount);
            memcpy(&seq, in, 4);
            if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < mt_size && seq >= 0 &&
                seq < g_iters * g_threads) {
                int prev = atomic_fetch_add(&g_mprobe_seen[st.MPI_SOURCE * g_iters * MAX_THREADS + seq], 1);
                TCHECK(prev == 0, "mprobe: message %d from %d received twice", seq, st.MPI_SOURCE);
                check_msg(in, count, st.MPI_SOURCE, tag, seq, "mprobe");
            } else {
                TCHECK(0, "mprobe: source %d seq %d out of range", st.MPI_SOURCE, seq);
            }
            atomic_fetch_add(&g_mprobe_received, 1);
        }
        TOK(MPI_Waitall(ns, sr, MPI_STATUSES_IGNORE));
        free(sr);
    }
    /* Probe + Recv by one thread per tag: nobody else receives that tag. */
    if (mt_size > 1) {
        int right = (mt_rank + 1) % mt_size;
        int left = (mt_rank + mt_size - 1) % mt_size;
        int ptag = 2100 + t;
        for (k = 0; k < g_iters / 4 + 1; ++k) {
            MPI_Status st;
            int count = -1;
            int len = (k % 2) ? 4 : 5000;
            fill_msg(out, len, mt_rank, ptag, k);
            TOK(MPI_Isend(out, len, MPI_BYTE, right, ptag, MPI_COMM_WORLD, &sreq));
            TOK(MPI_Probe(left, ptag, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            TCHECK(count == len, "probe: count %d, expected %d", count, len);
            TOK(MPI_Recv(in, count, MPI_BYTE, left, ptag, MPI_COMM_WORLD, &st));
            check_msg(in, count, left, ptag, k, "probe+recv");
            TOK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        }
    }
    return NULL;
}

/* ---- coll --------------------------------------------------------------- */

static MPI_Comm g_parent[MAX_THREADS];

static int del_count_cb(MPI_Comm c, int key, void* val, void* extra)
{
    (void)c;
    (void)key;
    (void)val;
    atomic_fetch_add((atomic_int*)extra, 1);
    return MPI_SUCCESS;
}

static void* coll_body(void* arg)
{
    int t = (int)(long)arg;
    MPI_Comm dup, split, fromgroup;
    MPI_Group g;
    int key = MPI_KEYVAL_INVALID, k, flag = 0;
    int* val = NULL;
    atomic_int deleted = 0;
    int attrval = 1000 * mt_rank + t;
    /* Concurrent creation from different parents. */
    TOK(MPI_Comm_dup(g_parent[t], &dup));
    TOK(MPI_Comm_split(g_parent[t], mt_rank % 2, -mt_rank, &split));
    TOK(MPI_Comm_group(g_parent[t], &g));
    TOK(MPI_Comm_create_group(g_parent[t], g, t, &fromgroup));
    TOK(MPI_Group_free(&g));
    /* Several threads on one parent at once, told apart by the tag. */
    {
        MPI_Comm same;
        int n = -1;
        TOK(MPI_Comm_group(MPI_COMM_WORLD, &g));
        TOK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 500 + t, &same));
        TOK(MPI_Group_free(&g));
        TOK(MPI_Allreduce(&t, &n, 1, MPI_INT, MPI_SUM, same));
        TCHECK(n == t * mt_size, "create_group on a shared parent: sum %d", n);
        TOK(MPI_Comm_free(&same));
    }
    TOK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_count_cb, &key, (void*)&deleted));
    TOK(MPI_Comm_set_attr(dup, key, &attrval));
    TOK(MPI_Comm_get_attr(dup, key, &val, &flag));
    TCHECK(flag && val == &attrval, "attribute lost (flag %d)", flag);
    for (k = 0; k < g_iters; ++k) {
        int in = mt_rank + k + t, sum = -1, b = -1, i, ssize, srank, expect = 0;
        int vec[64], res[64];
        MPI_Request r[2];
        TOK(MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, dup));
        TCHECK(sum == mt_size * (mt_size - 1) / 2 + mt_size * (k + t), "allreduce: %d", sum);
        b = (k % mt_size == mt_rank) ? 77 + k + t : -1;
        TOK(MPI_Bcast(&b, 1, MPI_INT, k % mt_size, fromgroup));
        TCHECK(b == 77 + k + t, "bcast: %d", b);
        MPI_Comm_size(split, &ssize);
        MPI_Comm_rank(split, &srank);
        for (i = 0; i < 64; ++i) {
            vec[i] = i + srank + k;
        }
        TOK(MPI_Iallreduce(vec, res, 64, MPI_INT, MPI_MAX, split, &r[0]));
        TOK(MPI_Ibarrier(dup, &r[1]));
        TOK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        for (i = 0; i < 64; ++i) {
            expect += res[i] != i + ssize - 1 + k;
        }
        TCHECK(expect == 0, "iallreduce: %d wrong", expect);
        if (k % 8 == 0) {
            TOK(MPI_Barrier(split));
        }
    }
    TOK(MPI_Comm_free(&dup));
    TCHECK(atomic_load(&deleted) == 1, "delete callback ran %d times", atomic_load(&deleted));
    TOK(MPI_Comm_free_keyval(&key));
    TOK(MPI_Comm_free(&split));
    TOK(MPI_Comm_free(&fromgroup));
    return NULL;
}

/* ---- constructors whose order crosses between ranks --------------------- */

static pthread_mutex_t g_self_lock = PTHREAD_MUTEX_INITIALIZER;

static void* ctorcross_body(void* arg)
{
    int t = (int)(long)arg;
    int k;
    for (k = 0; k < g_iters; ++k) {
        MPI_Group g;
        MPI_Comm made, self_dup;
        int n = -1, one = 1;
        TOK(MPI_Comm_group(g_parent[t], &g));
        TOK(MPI_Comm_create_group(g_parent[t], g, t, &made));
        TOK(MPI_Group_free(&g));
        TOK(MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, made));
        TCHECK(n == mt_size, "create_group %d/%d: sum %d", t, k, n);
        TOK(MPI_Comm_free(&made));
        pthread_mutex_lock(&g_self_lock);
        TOK(MPI_Comm_dup(MPI_COMM_SELF, &self_dup));
        pthread_mutex_unlock(&g_self_lock);
        TOK(MPI_Barrier(self_dup));
        TOK(MPI_Comm_free(&self_dup));
    }
    return NULL;
}

/* ---- one thread per peer, requests completed by another ---------------- */

static pthread_barrier_t g_fan_barrier;
static MPI_Request g_fan_req[2 * MAX_THREADS];

static void* fanout_body(void* arg)
{
    int t = (int)(long)arg;
    int cnt, k;
    for (cnt = 1; cnt <= (1 << 19); cnt *= 2) {
        int* buf = malloc(2 * (size_t)cnt * sizeof(int));
        for (k = 0; k < g_iters; ++k) {
            int i, bad = 0;
            for (i = 0; i < cnt; ++i) {
                buf[i] = mt_rank * 1000003 + t * 7 + i + k;
                buf[cnt + i] = -1;
            }
            pthread_barrier_wait(&g_fan_barrier);
            TOK(MPI_Isend(buf, cnt, MPI_INT, t, cnt, MPI_COMM_WORLD, &g_fan_req[2 * t]));
            TOK(MPI_Irecv(buf + cnt, cnt, MPI_INT, t, cnt, MPI_COMM_WORLD, &g_fan_req[2 * t + 1]));
            if (k % 2 == 0) {
                TOK(MPI_Waitall(2, &g_fan_req[2 * t], MPI_STATUSES_IGNORE));
                pthread_barrier_wait(&g_fan_barrier);
            } else {
                pthread_barrier_wait(&g_fan_barrier);
                if (t == 1 % g_threads) {
                    TOK(MPI_Waitall(2 * g_threads, g_fan_req, MPI_STATUSES_IGNORE));
                }
                pthread_barrier_wait(&g_fan_barrier);
            }
            for (i = 0; i < cnt; ++i) {
                bad += buf[cnt + i] != t * 1000003 + mt_rank * 7 + i + k;
            }
            TCHECK(bad == 0, "fanout %d ints from %d: %d wrong", cnt, t, bad);
        }
        free(buf);
    }
    return NULL;
}

/* ---- a blocked thread does not starve another --------------------------- */

static void* blocked_body(void* arg)
{
    int t = (int)(long)arg;
    int peer = 1 - mt_rank, k, v = -1, flag = 0;
    if (t == 0) {
        if (mt_rank == 0) {
            /* Blocks until the other thread of rank 1 has finished its work. */
            TOK(MPI_Recv(&v, 1, MPI_INT, peer, 900, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            TCHECK(v == 4242, "blocked: received %d", v);
        } else {
            TOK(MPI_Recv(&v, 1, MPI_INT, peer, 902, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            v = 4242;
            TOK(MPI_Send(&v, 1, MPI_INT, peer, 900, MPI_COMM_WORLD));
        }
        return NULL;
    }
    for (k = 0; k < g_iters; ++k) {
        int out = k, in = -1;
        MPI_Comm self_dup;
        TOK(MPI_Sendrecv(&out, 1, MPI_INT, peer, 901, &in, 1, MPI_INT, peer, 901, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
        TCHECK(in == k, "blocked: ping-pong %d got %d", k, in);
        TOK(MPI_Comm_dup(MPI_COMM_SELF, &self_dup));
        TOK(MPI_Comm_free(&self_dup));
        TOK(MPI_Iprobe(peer, 903, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        TCHECK(!flag, "blocked: a message nobody sent");
    }
    if (mt_rank == 0) {
        v = 1;
        TOK(MPI_Send(&v, 1, MPI_INT, peer, 902, MPI_COMM_WORLD)); /* now rank 1 may answer */
    }
    return NULL;
}

/* ---- cancel and hand-off ------------------------------------------------ */

/* Requests posted by the even threads, completed by the odd ones. */
#define SLOTS 8
static pthread_mutex_t g_q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_q_cond = PTHREAD_COND_INITIALIZER;
static MPI_Request g_q[MAX_THREADS][SLOTS];
static unsigned char g_qbuf[MAX_THREADS][SLOTS][128];
static int g_q_ready[MAX_THREADS][SLOTS];

static void* cancel_body(void* arg)
{
    int t = (int)(long)arg;
    int k;
    /* 1. Receives nobody sends: cancelled by the poster. */
    for (k = 0; k < g_iters; ++k) {
        MPI_Request r;
        MPI_Status st;
        int cancelled = 0, flag = 0;
        unsigned char b[16];
        TOK(MPI_Irecv(b, 16, MPI_BYTE, MPI_ANY_SOURCE, 3000 + t, MPI_COMM_WORLD, &r));
        if (k % 2) {
            TOK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
            TCHECK(!flag, "a receive nobody sends completed");
        }
        TOK(MPI_Cancel(&r));
        TOK(MPI_Wait(&r, &st));
        TOK(MPI_Test_cancelled(&st, &cancelled));
        TCHECK(cancelled, "receive %d not cancelled", k);
    }
    /* 2. Hand-off: even thread t posts receives from the partner rank; thread
     * t+1 completes them; the partner's thread t sends. */
    if (mt_size > 1 && g_threads > 1) {
        int partner = mt_rank ^ 1;
        if (partner >= mt_size) {
            return NULL;
        }
        if (t % 2 == 0 && t + 1 < g_threads) {
            for (k = 0; k < g_iters; ++k) {
                int s = k % SLOTS;
                pthread_mutex_lock(&g_q_lock);
                while (g_q_ready[t][s]) {
                    pthread_cond_wait(&g_q_cond, &g_q_lock);
                }
                pthread_mutex_unlock(&g_q_lock);
                TOK(MPI_Irecv(g_qbuf[t][s], 128, MPI_BYTE, partner, 4000 + t, MPI_COMM_WORLD,
                              &g_q[t][s]));
                pthread_mutex_lock(&g_q_lock);
                g_q_ready[t][s] = 1;
                pthread_cond_broadcast(&g_q_cond);
                pthread_mutex_unlock(&g_q_lock);
                /* and send to the partner's completer */
                {
                    unsigned char out[128];
                    fill_msg(out, 128, mt_rank, 4000 + t, k);
                    TOK(MPI_Send(out, 128, MPI_BYTE, partner, 4000 + t, MPI_COMM_WORLD));
                }
            }
        } else if (t % 2 == 1) {
            int owner = t - 1;
            for (k = 0; k < g_iters; ++k) {
                int s = k % SLOTS, flag = 0, idx = -1;
                MPI_Request r;
                MPI_Status st;
                pthread_mutex_lock(&g_q_lock);
                while (!g_q_ready[owner][s]) {
                    pthread_cond_wait(&g_q_cond, &g_q_lock);
                }
                r = g_q[owner][s];
                pthread_mutex_unlock(&g_q_lock);
                switch (k % 3) {
                case 0: TOK(MPI_Wait(&r, &st)); break;
                case 1:
                    while (!flag) {
                        TOK(MPI_Test(&r, &flag, &st));
                    }
                    break;
                default:
                    TOK(MPI_Waitany(1, &r, &idx, &st));
                    TCHECK(idx == 0, "waitany index %d", idx);
                    break;
                }
                TCHECK(st.MPI_SOURCE == partner, "hand-off: source %d", st.MPI_SOURCE);
                check_msg(g_qbuf[owner][s], 128, partner, 4000 + owner, k, "hand-off");
                pthread_mutex_lock(&g_q_lock);
                g_q_ready[owner][s] = 0;
                pthread_cond_broadcast(&g_q_cond);
                pthread_mutex_unlock(&g_q_lock);
            }
        }
    }
    return NULL;
}

/* A receive cancelled by one thread while another waits on it. */
static MPI_Request g_shared_req;
static atomic_int g_waiting;

static void* waiter_body(void* arg)
{
    MPI_Status st;
    int cancelled = 0;
    (void)arg;
    atomic_store(&g_waiting, 1);
    TOK(MPI_Wait(&g_shared_req, &st));
    TOK(MPI_Test_cancelled(&st, &cancelled));
    TCHECK(cancelled, "the receive another thread cancelled was not cancelled");
    return NULL;
}

static void cancel_under_wait(void)
{
    pthread_t w;
    unsigned char b[8];
    TOK(MPI_Irecv(b, 8, MPI_BYTE, MPI_ANY_SOURCE, 3999, MPI_COMM_WORLD, &g_shared_req));
    MPI_Request mine = g_shared_req;
    pthread_create(&w, NULL, waiter_body, NULL);
    while (!atomic_load(&g_waiting)) {
        sched_yield();
    }
    mt_sleep_ms(20);
    TOK(MPI_Cancel(&mine));
    pthread_join(w, NULL);
}

/* ---- main --------------------------------------------------------------- */

static void part(const char* name)
{
    int t;
    if (strcmp(name, "p2p") == 0) {
        run_threads(p2p_body);
    } else if (strcmp(name, "wildcard") == 0) {
        for (t = 0; t < g_threads; ++t) {
            MPI_Comm_dup(MPI_COMM_WORLD, &g_own[t]);
        }
        run_threads(wildcard_body);
        for (t = 0; t < g_threads; ++t) {
            MPI_Comm_free(&g_own[t]);
        }
    } else if (strcmp(name, "mprobe") == 0) {
        g_mprobe_seen = calloc((size_t)mt_size * (size_t)g_iters * MAX_THREADS, sizeof(atomic_int));
        atomic_store(&g_mprobe_received, 0);
        run_threads(mprobe_body);
        TCHECK(atomic_load(&g_mprobe_received) == (mt_size - 1) * g_iters * g_threads,
               "mprobe: received %d, expected %d", atomic_load(&g_mprobe_received),
               (mt_size - 1) * g_iters * g_threads);
        free(g_mprobe_seen);
    } else if (strcmp(name, "coll") == 0) {
        for (t = 0; t < g_threads; ++t) {
            MPI_Comm_dup(MPI_COMM_WORLD, &g_parent[t]);
        }
        run_threads(coll_body);
        for (t = 0; t < g_threads; ++t) {
            MPI_Comm_free(&g_parent[t]);
        }
    } else if (strcmp(name, "ctorcross") == 0) {
        for (t = 0; t < g_threads; ++t) {
            MPI_Comm_dup(MPI_COMM_WORLD, &g_parent[t]);
        }
        run_threads(ctorcross_body);
        for (t = 0; t < g_threads; ++t) {
            MPI_Comm_free(&g_parent[t]);
        }
    } else if (strcmp(name, "fanout") == 0) {
        int saved = g_threads;
        g_threads = mt_size < MAX_THREADS ? mt_size : MAX_THREADS;
        pthread_barrier_init(&g_fan_barrier, NULL, (unsigned)g_threads);
        run_threads(fanout_body);
        pthread_barrier_destroy(&g_fan_barrier);
        g_threads = saved;
    } else if (strcmp(name, "blocked") == 0) {
        if (mt_rank < 2 && mt_size >= 2) {
            int saved = g_threads;
            g_threads = 2;
            run_threads(blocked_body);
            g_threads = saved;
        }
    } else if (strcmp(name, "cancel") == 0) {
        memset(g_q_ready, 0, sizeof g_q_ready);
        run_threads(cancel_body);
        cancel_under_wait();
    } else {
        TCHECK(0, "unknown part '%s'", name);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv)
{
    int provided = -1, is_main = 0;
    const char* what = argc > 1 ? argv[1] : "all";
    if (argc > 2) {
        g_threads = atoi(argv[2]);
        if (g_threads < 1 || g_threads > MAX_THREADS) {
            g_threads = 4;
        }
    }
    if (argc > 3) {
        g_iters = atoi(argv[3]);
    }
    alarm(300); /* a watchdog of our own, beside mpirun --timeout */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    MT_CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, asked MULTIPLE", provided);
    MPI_Is_thread_main(&is_main);
    MT_CHECK(is_main, "MPI_Is_thread_main is false in the main thread");
    if (strcmp(what, "all") == 0) {
        part("p2p");
        part("wildcard");
        part("mprobe");
        part("coll");
        part("ctorcross");
        part("blocked");
        part("cancel");
    } else {
        part(what);
    }
    mt_errors += atomic_load(&g_errs);
    return mt_finalize();
}
