/*
 * A conjugate-gradient solver that survives the loss of a rank, in FT-MPI's
 * REBUILD mode, with an in-memory checkpoint protected by XOR parity.
 *
 *   mpirun -n 4 --ft-mode rebuild ./ftmpi_cg [rows] [victim] [kill_iter] [every]
 *
 * The problem: the 5-point Laplacian on a grid of `rows` x size rows by 64
 * columns, split by rows (each rank `rows` rows, default 32), right-hand
 * side b = A x* for a known x*. CG runs from x = 0 until the residual is
 * 1e-10 of b's norm.
 *
 * Checkpoint (every `every` iterations, default 10, and before the first):
 * each rank keeps its own state (iteration, rho, its blocks of x, r and p)
 * and the XOR of every rank's state, the parity (MPI_Allreduce with
 * MPI_BXOR over 64-bit words), so that any one rank's state can be rebuilt
 * from the others'. A checkpoint counts once the parity allreduce succeeded;
 * in FT-MPI's ATOMIC collective mode (the default) it then succeeded
 * everywhere.
 *
 * Failure: rank `victim` (default: none, -1) kills itself (SIGKILL) at
 * iteration `kill_iter` (default 25). The call that meets the failure at a
 * survivor returns an error, and MPI_COMM_WORLD is already rebuilt with a
 * new process in the dead rank's place (automatic recovery); the new
 * process's MPI_Init returns MPI_INIT_RESTARTED_NODE. Everybody then runs
 * recover(): the ranks find who lacks a checkpoint (the new process), the
 * survivors XOR their checkpoints and the parity into it (MPI_Reduce with
 * MPI_BXOR), they pass it the parity, and all roll back to the checkpoint.
 * The rest of the run repeats the same operations in the same order, so
 * the answer is the same, to the bit, as without the failure; it prints
 *
 *   answer: iterations K residual R error E checksum S
 *
 * (rank 0), then "No Errors" when the error against x* is small. Two ranks
 * lost between two checkpoints cannot be rebuilt from one parity: the job
 * then ends with MPI_Abort saying so. docs/ftmpi.md, "Examples".
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NX = 64, TAG_HALO = 5 };

struct solver {
    int rank, size, rows; /* rows of this rank, NX columns each */
    int n;                /* rows * NX */
    double *x, *r, *p, *q, *b;
    double *halo_lo, *halo_hi; /* the neighbours' edge rows of p */
    double rho, norm_b;
    int iter;
};

/* The checkpoint: a header and x, r, p, as 64-bit words (XOR works on them). */
struct ckpt {
    size_t words;
    uint64_t* mine;   /* this rank's last committed state */
    uint64_t* parity; /* XOR of every rank's committed state */
    uint64_t* next;   /* the state being committed */
    uint64_t* parity_next;
    int have;         /* 0 in a new process until recover() rebuilt it */
};

static double exact(int gi, int j) { return sin(0.05 * gi + 0.11 * j) + 0.001 * j; }

/* q = A v for the rows of this rank (v's neighbour rows in lo and hi). */
static void apply(const struct solver* s, const double* v, const double* lo, const double* hi,
                  double* q)
{
    for (int i = 0; i < s->rows; ++i) {
        for (int j = 0; j < NX; ++j) {
            double c = v[i * NX + j];
            double up = i > 0 ? v[(i - 1) * NX + j] : lo[j];
            double down = i + 1 < s->rows ? v[(i + 1) * NX + j] : hi[j];
            double left = j > 0 ? v[i * NX + j - 1] : 0.0;
            double right = j + 1 < NX ? v[i * NX + j + 1] : 0.0;
            q[i * NX + j] = 4.0 * c - up - down - left - right;
        }
    }
}

static int exchange(struct solver* s, double* v)
{
    int lo = s->rank > 0 ? s->rank - 1 : MPI_PROC_NULL;
    int hi = s->rank + 1 < s->size ? s->rank + 1 : MPI_PROC_NULL;
    int rc = MPI_Sendrecv(v, NX, MPI_DOUBLE, lo, TAG_HALO, s->halo_hi, NX, MPI_DOUBLE, hi,
                          TAG_HALO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return MPI_Sendrecv(v + (s->rows - 1) * NX, NX, MPI_DOUBLE, hi, TAG_HALO, s->halo_lo, NX,
                        MPI_DOUBLE, lo, TAG_HALO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static int dot(const struct solver* s, const double* a, const double* b, double* out)
{
    double local = 0.0;
    for (int i = 0; i < s->n; ++i) {
        local += a[i] * b[i];
    }
    return MPI_Allreduce(&local, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static void pack(const struct solver* s, uint64_t* w)
{
    double head[4] = {(double)s->iter, s->rho, s->norm_b, 0.0};
    memcpy(w, head, sizeof head);
    memcpy(w + 4, s->x, sizeof(double) * (size_t)s->n);
    memcpy(w + 4 + s->n, s->r, sizeof(double) * (size_t)s->n);
    memcpy(w + 4 + 2 * (size_t)s->n, s->p, sizeof(double) * (size_t)s->n);
}

static void unpack(struct solver* s, const uint64_t* w)
{
    double head[4];
    memcpy(head, w, sizeof head);
    s->iter = (int)head[0];
    s->rho = head[1];
    s->norm_b = head[2];
    memcpy(s->x, w + 4, sizeof(double) * (size_t)s->n);
    memcpy(s->r, w + 4 + s->n, sizeof(double) * (size_t)s->n);
    memcpy(s->p, w + 4 + 2 * (size_t)s->n, sizeof(double) * (size_t)s->n);
}

static int checkpoint(const struct solver* s, struct ckpt* c)
{
    pack(s, c->next);
    int rc = MPI_Allreduce(c->next, c->parity_next, (int)c->words, MPI_UINT64_T, MPI_BXOR,
                           MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) {
        memcpy(c->mine, c->next, sizeof(uint64_t) * c->words);
        memcpy(c->parity, c->parity_next, sizeof(uint64_t) * c->words);
        c->have = 1;
    }
    return rc;
}

/* After a failure (or in a new process): rebuild the checkpoint of the rank
 * that lacks one, then roll everybody back to the checkpoint. */
static int recover(struct solver* s, struct ckpt* c)
{
    int need = !c->have;
    int* needs = malloc(sizeof(int) * (size_t)s->size);
    int rc = MPI_Allgather(&need, 1, MPI_INT, needs, 1, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(needs);
        return rc;
    }
    int lost = -1, nlost = 0;
    for (int i = 0; i < s->size; ++i) {
        if (needs[i]) {
            lost = i;
            ++nlost;
        }
    }
    free(needs);
    if (nlost > 1) {
        if (s->rank == 0) {
            fprintf(stderr, "ftmpi_cg: %d ranks lost their state since the last checkpoint; one "
                            "parity rebuilds one\n", nlost);
        }
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    if (nlost == 1) {
        const int donor = lost == 0 ? 1 : 0; /* adds the parity in */
        uint64_t* w = calloc(c->words, sizeof(uint64_t));
        if (s->rank != lost) {
            memcpy(w, c->mine, sizeof(uint64_t) * c->words);
        }
        if (s->rank == donor) {
            for (size_t i = 0; i < c->words; ++i) {
                w[i] ^= c->parity[i];
            }
        }
        rc = MPI_Reduce(s->rank == lost ? MPI_IN_PLACE : w, w, (int)c->words, MPI_UINT64_T,
                        MPI_BXOR, lost, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Bcast(c->parity, (int)c->words, MPI_UINT64_T, donor, MPI_COMM_WORLD);
        }
        if (rc == MPI_SUCCESS && s->rank == lost) {
            memcpy(c->mine, w, sizeof(uint64_t) * c->words);
            c->have = 1;
        }
        free(w);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    unpack(s, c->mine);
    return MPI_SUCCESS;
}

static void watchdog(int sig)
{
    (void)sig;
    static const char m[] = "ftmpi_cg: watchdog expired (a hang)\n";
    (void)!write(2, m, sizeof m - 1);
    _exit(3);
}

int main(int argc, char** argv)
{
    int init_rc = MPI_Init(&argc, &argv);
    const int restarted = init_rc == MPI_INIT_RESTARTED_NODE;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    signal(SIGALRM, watchdog);
    alarm(120);

    struct solver s;
    memset(&s, 0, sizeof s);
    MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.size);
    s.rows = argc > 1 ? atoi(argv[1]) : 32;
    const int victim = argc > 2 ? atoi(argv[2]) : -1;
    const int kill_iter = argc > 3 ? atoi(argv[3]) : 25;
    const int every = argc > 4 ? atoi(argv[4]) : 10;
    if (s.rows < 1 || every < 1 || kill_iter < 1 || s.size < 2) {
        if (s.rank == 0) {
            fprintf(stderr, "usage: ftmpi_cg [rows>0] [victim] [kill_iter>0] [every>0], 2 ranks "
                            "or more\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    s.n = s.rows * NX;
    s.x = calloc((size_t)s.n, sizeof(double));
    s.r = calloc((size_t)s.n, sizeof(double));
    s.p = calloc((size_t)s.n, sizeof(double));
    s.q = calloc((size_t)s.n, sizeof(double));
    s.b = calloc((size_t)s.n, sizeof(double));
    s.halo_lo = calloc(NX, sizeof(double));
    s.halo_hi = calloc(NX, sizeof(double));

    /* b = A x*, computed locally (x* is known everywhere). */
    {
        double* xs = calloc((size_t)s.n, sizeof(double));
        double lo[NX], hi[NX];
        const int g0 = s.rank * s.rows;
        for (int i = 0; i < s.rows; ++i) {
            for (int j = 0; j < NX; ++j) {
                xs[i * NX + j] = exact(g0 + i, j);
            }
        }
        for (int j = 0; j < NX; ++j) {
            lo[j] = s.rank > 0 ? exact(g0 - 1, j) : 0.0;
            hi[j] = s.rank + 1 < s.size ? exact(g0 + s.rows, j) : 0.0;
        }
        apply(&s, xs, lo, hi, s.b);
        free(xs);
    }

    struct ckpt c;
    c.words = 4 + 3 * (size_t)s.n;
    c.mine = calloc(c.words, sizeof(uint64_t));
    c.parity = calloc(c.words, sizeof(uint64_t));
    c.next = calloc(c.words, sizeof(uint64_t));
    c.parity_next = calloc(c.words, sizeof(uint64_t));
    c.have = 0;

    int rc = MPI_SUCCESS;
    int recoveries = 0;
    if (!restarted) {
        /* x = 0: r = p = b. */
        memcpy(s.r, s.b, sizeof(double) * (size_t)s.n);
        memcpy(s.p, s.b, sizeof(double) * (size_t)s.n);
        rc = dot(&s, s.r, s.r, &s.rho);
        s.norm_b = sqrt(s.rho);
        if (rc == MPI_SUCCESS) {
            rc = checkpoint(&s, &c);
        }
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "ftmpi_cg: a failure before the first checkpoint\n");
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    } else {
        rc = MPI_ERR_OTHER; /* a new process starts by recovering */
    }

    const int maxit = 2000;
    double t0 = MPI_Wtime();
    for (;;) {
        if (rc != MPI_SUCCESS) {
            do {
                if (++recoveries > 20) {
                    fprintf(stderr, "ftmpi_cg: rank %d: 20 recoveries, giving up\n", s.rank);
                    MPI_Abort(MPI_COMM_WORLD, 5);
                }
                rc = recover(&s, &c);
            } while (rc != MPI_SUCCESS);
        }
        if (sqrt(s.rho) <= 1e-10 * s.norm_b || s.iter >= maxit) {
            break;
        }
        if (s.iter > 0 && s.iter % every == 0 && c.have) {
            if ((rc = checkpoint(&s, &c)) != MPI_SUCCESS) {
                continue;
            }
        }
        if (!restarted && s.rank == victim && s.iter == kill_iter) {
            raise(SIGKILL);
        }
        if ((rc = exchange(&s, s.p)) != MPI_SUCCESS) {
            continue;
        }
        apply(&s, s.p, s.halo_lo, s.halo_hi, s.q);
        double pq = 0.0;
        if ((rc = dot(&s, s.p, s.q, &pq)) != MPI_SUCCESS) {
            continue;
        }
        const double alpha = s.rho / pq;
        for (int i = 0; i < s.n; ++i) {
            s.x[i] += alpha * s.p[i];
            s.r[i] -= alpha * s.q[i];
        }
        double rho_new = 0.0;
        if ((rc = dot(&s, s.r, s.r, &rho_new)) != MPI_SUCCESS) {
            continue;
        }
        const double beta = rho_new / s.rho;
        for (int i = 0; i < s.n; ++i) {
            s.p[i] = s.r[i] + beta * s.p[i];
        }
        s.rho = rho_new;
        ++s.iter;
    }
    double seconds = MPI_Wtime() - t0;

    /* The answer: its error against x*, and a checksum of x's bits. */
    double err = 0.0, errmax = 0.0;
    uint64_t sum = 0, total = 0;
    const int g0 = s.rank * s.rows;
    for (int i = 0; i < s.rows; ++i) {
        for (int j = 0; j < NX; ++j) {
            err = fmax(err, fabs(s.x[i * NX + j] - exact(g0 + i, j)));
            uint64_t w;
            memcpy(&w, &s.x[i * NX + j], sizeof w);
            sum += w * (uint64_t)(g0 * NX + i * NX + j + 1);
        }
    }
    rc = MPI_Reduce(&err, &errmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Reduce(&sum, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "ftmpi_cg: rank %d: a failure after the solve\n", s.rank);
        MPI_Abort(MPI_COMM_WORLD, 6);
    }
    if (s.rank == 0) {
        printf("answer: iterations %d residual %.17g error %.3g checksum %016llx\n", s.iter,
               sqrt(s.rho) / s.norm_b, errmax, (unsigned long long)total);
        printf("rank 0: %d recoveries, %.3f s\n", recoveries, seconds);
        printf(errmax < 1e-6 ? "No Errors\n" : "ftmpi_cg: the answer is wrong\n");
    }
    free(s.x);
    free(s.r);
    free(s.p);
    free(s.q);
    free(s.b);
    free(s.halo_lo);
    free(s.halo_hi);
    free(c.mine);
    free(c.parity);
    free(c.next);
    free(c.parity_next);
    MPI_Finalize();
    return 0;
}
