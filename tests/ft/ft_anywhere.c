/*
 * ft_anywhere -- the program of the kill-anywhere driver (kill_anywhere.py):
 * a resilient computation that survives the failure of any rank at any
 * point (ULMPI_FT=ulfm).
 *
 *   ft_anywhere ITERS [KILL ...] [pace:MS]   KILL = rank:iter:phase:how:delay_us
 *
 * pace:MS makes each iteration start with an MS-millisecond sleep, so that
 * a failure from outside (the driver kills a host's daemon at a random
 * moment) finds the job still running.
 *
 * Each iteration computes T(i) = sum of g(k, i) over W work items, spread
 * over the current communicator's members by rank (so the value does not
 * depend on who is alive), in four phases, each of which must give T(i):
 *   ring     a token carries the partial sums around the ring and back;
 *   coll     allreduce, bcast from the last rank, allgather of the partials;
 *   any      rank 0 receives the partials from MPI_ANY_SOURCE, sends T back;
 *   rndv     a 512 KiB message to the next rank (rendezvous), its partial
 *            inside, checked, then a reduce to rank 0 and a bcast;
 * then an agreement on whether the iteration succeeded everywhere (phase
 * `agree`). On any error a survivor revokes the communicator; the agreement
 * (uniform) then says to recover: acknowledge, shrink, and redo the
 * iteration on the survivors. When it says the iteration succeeded, the
 * communicator is replaced by its shrink (phase `shrink`, a periodic
 * refresh). The refresh comes after the agreement, never before it: a
 * collective may end without error at some members and with one at others
 * (ULFM does not make errors uniform), so a survivor whose last collective
 * succeeded would enter the shrink while one whose collective failed enters
 * the agreement — two different collectives on one communicator, which no
 * MPI library can match (seed 513 with 2 victims at 8 ranks hung so). Only
 * the agreement's result is the same everywhere, so only it may choose the
 * next collective. A KILL makes `rank` (of MPI_COMM_WORLD)
 * die in iteration `iter` at phase `phase`: how 0 at the start of the
 * phase; how 1 in the middle — after posting its part (rendezvous in
 * flight, an iagree or ishrink started) or while the others wait for it —
 * after `delay_us` microseconds.
 *
 * Each survivor prints "survivor R: answer A ok" (or "... WRONG, want B")
 * with the sum of T(i) over the iterations; then ft_finalize (the expected
 * survivors: the job size minus the KILLs).
 */
#include "fttest.h"

#define W 97
#define RNDV_BYTES (512 * 1024)

enum { P_RING, P_COLL, P_ANY, P_RNDV, P_SHRINK, P_AGREE, P_COUNT };
static const char* const phase_names[P_COUNT] = {"ring", "coll", "any", "rndv", "shrink", "agree"};

typedef struct {
    int rank, iter, phase, how, delay_us;
} Kill;

static Kill kills[8];
static int nkills;
static int pace_ms; /* sleep at the start of each iteration (pace:MS) */

static long g(int k, int i) { return (long)((k * 7 + i * 13) % 101 + 1); }

static long total(int i)
{
    long t = 0;
    for (int k = 0; k < W; ++k) {
        t += g(k, i);
    }
    return t;
}

static long partial(MPI_Comm c, int i)
{
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    long t = 0;
    for (int k = r; k < W; k += n) {
        t += g(k, i);
    }
    return t;
}

/* The kill of this process at (iter, phase, how), if any: dies there. */
static const Kill* my_kill(int iter, int phase)
{
    for (int j = 0; j < nkills; ++j) {
        if (kills[j].rank == mt_rank && kills[j].iter == iter && kills[j].phase == phase) {
            return &kills[j];
        }
    }
    return NULL;
}

static void die_now(const Kill* k)
{
    if (k != NULL) {
        ft_die();
    }
}

static void die_later(const Kill* k)
{
    if (k != NULL) {
        struct timespec ts = {0, (long)k->delay_us * 1000L};
        nanosleep(&ts, NULL);
        ft_die();
    }
}

#define TRY(call)                                                                               \
    do {                                                                                        \
        int e_ = (call);                                                                        \
        if (e_ != MPI_SUCCESS) {                                                                \
            return e_;                                                                          \
        }                                                                                       \
    } while (0)

static int check_total(long got, int i, const char* phase)
{
    if (got != total(i)) {
        mt_fail(__FILE__, __LINE__, "iteration %d, %s: %ld, want %ld", i, phase, got, total(i));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static int phase_ring(MPI_Comm c, int i, const Kill* k)
{
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    long tok = 0;
    if (k != NULL && k->how == 0) {
        die_now(k);
    }
    if (n == 1) {
        return check_total(partial(c, i), i, "ring");
    }
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    if (r == 0) {
        tok = partial(c, i);
        TRY(MPI_Send(&tok, 1, MPI_LONG, next, 10, c));
        TRY(MPI_Recv(&tok, 1, MPI_LONG, prev, 10, c, MPI_STATUS_IGNORE));
        TRY(MPI_Send(&tok, 1, MPI_LONG, next, 11, c));
        long back = 0;
        TRY(MPI_Recv(&back, 1, MPI_LONG, prev, 11, c, MPI_STATUS_IGNORE));
    } else {
        die_later(k);
        TRY(MPI_Recv(&tok, 1, MPI_LONG, prev, 10, c, MPI_STATUS_IGNORE));
        tok += partial(c, i);
        TRY(MPI_Send(&tok, 1, MPI_LONG, next, 10, c));
        TRY(MPI_Recv(&tok, 1, MPI_LONG, prev, 11, c, MPI_STATUS_IGNORE));
        TRY(MPI_Send(&tok, 1, MPI_LONG, next, 11, c));
    }
    die_later(k);
    return check_total(tok, i, "ring");
}

static int phase_coll(MPI_Comm c, int i, const Kill* k)
{
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    long p = partial(c, i), t = 0, b = 0;
    if (k != NULL && k->how == 0) {
        die_now(k);
    }
    TRY(MPI_Allreduce(&p, &t, 1, MPI_LONG, MPI_SUM, c));
    TRY(check_total(t, i, "allreduce"));
    b = r == n - 1 ? t : 0;
    die_later(k);
    TRY(MPI_Bcast(&b, 1, MPI_LONG, n - 1, c));
    TRY(check_total(b, i, "bcast"));
    long* all = malloc(sizeof(long) * (size_t)n);
    int e = MPI_Allgather(&p, 1, MPI_LONG, all, 1, MPI_LONG, c);
    long s = 0;
    for (int q = 0; e == MPI_SUCCESS && q < n; ++q) {
        s += all[q];
    }
    free(all);
    TRY(e);
    return check_total(s, i, "allgather");
}

static int phase_any(MPI_Comm c, int i, const Kill* k)
{
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    long p = partial(c, i), t = 0;
    if (k != NULL && k->how == 0) {
        die_now(k);
    }
    if (r == 0) {
        t = p;
        for (int q = 1; q < n; ++q) {
            long v = 0;
            TRY(MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, 20, c, MPI_STATUS_IGNORE));
            t += v;
        }
        die_later(k);
        for (int q = 1; q < n; ++q) {
            TRY(MPI_Send(&t, 1, MPI_LONG, q, 21, c));
        }
    } else {
        die_later(k);
        TRY(MPI_Send(&p, 1, MPI_LONG, 0, 20, c));
        TRY(MPI_Recv(&t, 1, MPI_LONG, 0, 21, c, MPI_STATUS_IGNORE));
    }
    return check_total(t, i, "any-source");
}

static int phase_rndv(MPI_Comm c, int i, const Kill* k, long* result)
{
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    if (k != NULL && k->how == 0) {
        die_now(k);
    }
    long* out = malloc(RNDV_BYTES);
    long* in = malloc(RNDV_BYTES);
    const size_t words = RNDV_BYTES / sizeof(long);
    long p = partial(c, i);
    for (size_t j = 0; j < words; ++j) {
        out[j] = j == 0 ? p : (long)(j * 2654435761u + (unsigned)r + (unsigned)i);
    }
    MPI_Request q[2];
    int e = MPI_Irecv(in, (int)words, MPI_LONG, prev, 30, c, &q[0]);
    if (e == MPI_SUCCESS) {
        e = MPI_Isend(out, (int)words, MPI_LONG, next, 30, c, &q[1]);
        if (e != MPI_SUCCESS) {
            MPI_Cancel(&q[0]);
            MPI_Request_free(&q[0]);
        }
    }
    if (e == MPI_SUCCESS) {
        die_later(k); /* both posted: in flight */
        e = MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        if (e == MPI_ERR_IN_STATUS) {
            e = MPIX_ERR_PROC_FAILED; /* which one does not matter here */
        }
    }
    for (size_t j = 1; e == MPI_SUCCESS && j < words; ++j) {
        if (in[j] != (long)(j * 2654435761u + (unsigned)prev + (unsigned)i)) {
            mt_fail(__FILE__, __LINE__, "iteration %d, rendezvous data from %d differs at %zu", i,
                    prev, j);
            e = MPI_ERR_OTHER;
        }
    }
    long got = in[0], t = 0;
    free(out);
    free(in);
    TRY(e);
    TRY(MPI_Reduce(&got, &t, 1, MPI_LONG, MPI_SUM, 0, c));
    TRY(MPI_Bcast(&t, 1, MPI_LONG, 0, c));
    *result = t;
    return check_total(t, i, "rendezvous");
}

static int phase_shrink(MPI_Comm* c, const Kill* k)
{
    MPI_Comm s = MPI_COMM_NULL;
    if (k != NULL && k->how == 0) {
        die_now(k);
    }
    if (k != NULL) {
        MPI_Request q;
        MPIX_Comm_ishrink(*c, &s, &q);
        die_later(k);
    }
    TRY(MPIX_Comm_shrink(*c, &s));
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    MPI_Comm_free(c);
    *c = s;
    return MPI_SUCCESS;
}

/* One iteration on c; MPI_SUCCESS when every phase gave T(i) here (the
 * last phase's value in *result). */
static int iteration(MPI_Comm c, int i, long* result)
{
    TRY(phase_ring(c, i, my_kill(i, P_RING)));
    TRY(phase_coll(c, i, my_kill(i, P_COLL)));
    TRY(phase_any(c, i, my_kill(i, P_ANY)));
    return phase_rndv(c, i, my_kill(i, P_RNDV), result);
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int iters = argc > 1 ? atoi(argv[1]) : 4;
    for (int a = 2; a < argc && nkills < 8; ++a) {
        Kill k;
        char ph[16];
        if (sscanf(argv[a], "pace:%d", &pace_ms) == 1) {
            continue;
        }
        if (sscanf(argv[a], "%d:%d:%15[a-z]:%d:%d", &k.rank, &k.iter, ph, &k.how,
                   &k.delay_us) != 5) {
            fprintf(stderr, "ft_anywhere: bad kill '%s' (rank:iter:phase:how:delay_us)\n",
                    argv[a]);
            return 2;
        }
        k.phase = -1;
        for (int p = 0; p < P_COUNT; ++p) {
            if (strcmp(ph, phase_names[p]) == 0) {
                k.phase = p;
            }
        }
        if (k.phase < 0) {
            fprintf(stderr, "ft_anywhere: unknown phase '%s'\n", ph);
            return 2;
        }
        kills[nkills++] = k;
    }
    if (mt_rank == 0) {
        printf("ready\n");
        fflush(stdout);
    }
    /* The working communicator. A process may die as soon as its dup
     * ended, while the dup still runs elsewhere: there it fails (ULFM does
     * not make errors uniform), and its communicator is not there. So the
     * survivors agree on whether every dup succeeded, and shrink
     * MPI_COMM_WORLD instead when one did not (seed 1025 at 8 ranks: an
     * unchecked dup left `c` unset, and a division by its size raised
     * SIGFPE). */
    MPI_Comm c = MPI_COMM_NULL;
    const int ed = MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int dup_ok = ed == MPI_SUCCESS;
    const int eda = MPIX_Comm_agree(MPI_COMM_WORLD, &dup_ok);
    if (eda != MPI_SUCCESS || !dup_ok) {
        if (ed == MPI_SUCCESS) {
            MPI_Comm_free(&c);
        }
        MPIX_Comm_failure_ack(MPI_COMM_WORLD);
        const int es = MPIX_Comm_shrink(MPI_COMM_WORLD, &c);
        if (es != MPI_SUCCESS) {
            mt_fail(__FILE__, __LINE__, "shrink after a failed dup returned %s", mt_errname(es));
            return ft_finalize(-1);
        }
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    long answer = 0, want = 0;
    int recoveries = 0;
    for (int i = 0; i < iters; ++i) {
        if (pace_ms > 0) {
            mt_sleep_ms(pace_ms);
        }
        want += total(i);
        long value = 0;
        for (int attempt = 0;; ++attempt) {
            if (attempt > 8) {
                mt_fail(__FILE__, __LINE__, "iteration %d: still failing after 8 recoveries", i);
                return ft_finalize(-1);
            }
            int e = iteration(c, i, &value);
            if (e != MPI_SUCCESS) {
                MPIX_Comm_revoke(c);
            }
            const Kill* k = my_kill(i, P_AGREE);
            int flag = e == MPI_SUCCESS;
            if (k != NULL) {
                MPI_Request q;
                if (k->how == 0) {
                    die_now(k);
                }
                MPIX_Comm_iagree(c, &flag, &q);
                die_later(k);
            }
            int ea = MPIX_Comm_agree(c, &flag);
            if (ea == MPI_SUCCESS && flag) {
                /* Every survivor took this branch (the agreement is uniform). */
                int er = phase_shrink(&c, my_kill(i, P_SHRINK));
                if (er != MPI_SUCCESS) {
                    mt_fail(__FILE__, __LINE__, "iteration %d: the refresh shrink returned %s", i,
                            mt_errname(er));
                    return ft_finalize(-1);
                }
                break;
            }
            if (ea != MPI_SUCCESS && ft_class(ea) != MPIX_ERR_PROC_FAILED) {
                mt_fail(__FILE__, __LINE__, "iteration %d: agree returned %s", i, mt_errname(ea));
            }
            /* Recover: the survivors of c go on. */
            MPI_Comm s = MPI_COMM_NULL;
            MPIX_Comm_failure_ack(c);
            int es = MPIX_Comm_shrink(c, &s);
            if (es != MPI_SUCCESS) {
                mt_fail(__FILE__, __LINE__, "iteration %d: shrink returned %s", i,
                        mt_errname(es));
                return ft_finalize(-1);
            }
            MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
            MPI_Comm_free(&c);
            c = s;
            ++recoveries;
        }
        /* The agreed iteration's value (each phase checked it, too). */
        answer += value;
    }
    int n = 0;
    MPI_Comm_size(c, &n);
    if (answer == want && mt_errors == 0) {
        printf("survivor %d: answer %ld ok (%d recoveries, %d left)\n", mt_rank, answer,
               recoveries, n);
    } else {
        printf("survivor %d: answer %ld WRONG, want %ld (%d errors)\n", mt_rank, answer, want,
               mt_errors);
    }
    fflush(stdout);
    MPI_Comm_free(&c);
    return ft_finalize(mt_size - nkills);
}
