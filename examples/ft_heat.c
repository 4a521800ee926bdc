/* ft_heat: a 1-D heat equation solver that survives the loss of a process
 * (User-Level Failure Mitigation: MPIX_Comm_revoke / agree / shrink).
 *
 *   mpicc -o ft_heat examples/ft_heat.c
 *   mpirun --with-ft ulfm -n 4 ./ft_heat [points] [steps] [kill_rank kill_step]
 *
 * (or ULMPI_FT=ulfm mpirun -n 4 ...). A rod of `points` cells (default
 * 4096) with its ends held at 100 and 0 degrees relaxes for `steps` explicit
 * time steps (default 3000). Each process owns a contiguous block and
 * exchanges one halo cell with each neighbour per step.
 *
 * Fault tolerance, the way an application does it with ULFM:
 *   - every CKPT steps each process copies its block into memory and sends
 *     a copy to its right-hand neighbour (buddy checkpointing): every block
 *     is then held twice, on two different processes;
 *   - a failed operation (MPIX_ERR_PROC_FAILED, or MPIX_ERR_REVOKED when
 *     another process saw the failure first) makes the process revoke the
 *     communicator, so that nobody stays blocked, and the survivors agree
 *     (MPIX_Comm_agree) that this step failed;
 *   - the survivors shrink the communicator, rebuild the whole rod at the
 *     last checkpoint — their own copies plus, for each lost process, the
 *     copy its buddy kept — split it evenly among themselves and go on from
 *     that step.
 * The result does not depend on the failure: rank 0 compares the final rod
 * with a serial run of the same steps (the arithmetic per cell is the same,
 * so the sums match to the last bit) and prints "result ... OK".
 * With kill_rank and kill_step the given process kills itself (SIGKILL) at
 * that step, to show the recovery. Two adjacent processes lost between two
 * checkpoints lose a block for good: the program then says so and aborts.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKPT 100
#define ALPHA 0.25

typedef struct {
    MPI_Comm comm;
    int rank, size;
    int lo, n;          /* my block: global cells [lo, lo + n) */
    double* u;          /* n + 2 cells: halo, block, halo */
    double* tmp;
    int ckpt_step;      /* the step of the last checkpoint */
    double* mine;       /* my block at ckpt_step */
    int mine_lo, mine_n;
    double* buddy;      /* my left neighbour's block at ckpt_step */
    int buddy_lo, buddy_n;
} Solver;

static int g_points;

static void split(int points, int size, int r, int* lo, int* n)
{
    int base = points / size, extra = points % size;
    *lo = r * base + (r < extra ? r : extra);
    *n = base + (r < extra ? 1 : 0);
}

static double initial(int i) { return i == 0 ? 100.0 : 0.0; }

/* Sets the solver's block from the global rod `rod` (or the initial state). */
static void distribute(Solver* s, const double* rod)
{
    split(g_points, s->size, s->rank, &s->lo, &s->n);
    free(s->u);
    free(s->tmp);
    s->u = malloc(sizeof(double) * (size_t)(s->n + 2));
    s->tmp = malloc(sizeof(double) * (size_t)(s->n + 2));
    for (int i = 0; i < s->n; ++i) {
        s->u[i + 1] = rod != NULL ? rod[s->lo + i] : initial(s->lo + i);
    }
}

static void relax(const double* u, double* out, int n, int lo)
{
    for (int i = 1; i <= n; ++i) {
        int g = lo + i - 1;
        if (g == 0 || g == g_points - 1) {
            out[i] = u[i]; /* fixed ends */
        } else {
            out[i] = u[i] + ALPHA * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
    }
}

/* One time step: halo exchange, then relaxation. MPI_SUCCESS or the error. */
static int step(Solver* s)
{
    int left = s->rank > 0 ? s->rank - 1 : MPI_PROC_NULL;
    int right = s->rank < s->size - 1 ? s->rank + 1 : MPI_PROC_NULL;
    s->u[0] = s->u[1];
    s->u[s->n + 1] = s->u[s->n];
    int e = MPI_Sendrecv(&s->u[1], 1, MPI_DOUBLE, left, 1, &s->u[s->n + 1], 1, MPI_DOUBLE, right,
                         1, s->comm, MPI_STATUS_IGNORE);
    if (e == MPI_SUCCESS) {
        e = MPI_Sendrecv(&s->u[s->n], 1, MPI_DOUBLE, right, 2, &s->u[0], 1, MPI_DOUBLE, left, 2,
                         s->comm, MPI_STATUS_IGNORE);
    }
    if (e != MPI_SUCCESS) {
        return e;
    }
    relax(s->u, s->tmp, s->n, s->lo);
    memcpy(&s->u[1], &s->tmp[1], sizeof(double) * (size_t)s->n);
    return MPI_SUCCESS;
}

/* Buddy checkpoint: my block to my right neighbour, theirs from the left.
 * The copies become the checkpoint only when every process has them
 * (commit_checkpoint, after the agreement). */
typedef struct {
    double* copy;
    double* theirs;
    int their[2];
} Pending;

static int exchange_checkpoint(Solver* s, Pending* p)
{
    int right = (s->rank + 1) % s->size, left = (s->rank + s->size - 1) % s->size;
    int meta[2] = {s->lo, s->n};
    p->copy = malloc(sizeof(double) * (size_t)s->n);
    memcpy(p->copy, &s->u[1], sizeof(double) * (size_t)s->n);
    p->theirs = NULL;
    int e = MPI_Sendrecv(meta, 2, MPI_INT, right, 3, p->their, 2, MPI_INT, left, 3, s->comm,
                         MPI_STATUS_IGNORE);
    if (e == MPI_SUCCESS) {
        p->theirs = malloc(sizeof(double) * (size_t)(p->their[1] > 0 ? p->their[1] : 1));
        e = MPI_Sendrecv(p->copy, s->n, MPI_DOUBLE, right, 4, p->theirs, p->their[1], MPI_DOUBLE,
                         left, 4, s->comm, MPI_STATUS_IGNORE);
    }
    return e;
}

static void commit_checkpoint(Solver* s, Pending* p, int at)
{
    free(s->mine);
    free(s->buddy);
    s->mine = p->copy;
    s->mine_lo = s->lo;
    s->mine_n = s->n;
    s->buddy = p->theirs;
    s->buddy_lo = p->their[0];
    s->buddy_n = p->their[1];
    s->ckpt_step = at;
    p->copy = p->theirs = NULL;
}

/* After a failure: shrink, rebuild the rod at the last checkpoint from the
 * survivors' copies, and split it among them. */
static void recover(Solver* s)
{
    MPI_Comm old = s->comm, shrunk;
    int old_rank = s->rank;
    MPIX_Comm_failure_ack(old);
    if (MPIX_Comm_shrink(old, &shrunk) != MPI_SUCCESS) {
        fprintf(stderr, "ft_heat: MPIX_Comm_shrink failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    /* Which old ranks failed: those not in the shrunk communicator. */
    int old_size = s->size;
    MPI_Group og, ng;
    MPI_Comm_group(old, &og);
    MPI_Comm_group(shrunk, &ng);
    int* olds = malloc(sizeof(int) * (size_t)old_size);
    int* news = malloc(sizeof(int) * (size_t)old_size);
    for (int i = 0; i < old_size; ++i) {
        olds[i] = i;
    }
    MPI_Group_translate_ranks(og, old_size, olds, ng, news);
    /* My contribution: my own checkpointed block, and my left buddy's if it
     * is gone. Everyone assembles the rod from all contributions. */
    int left = (old_rank + old_size - 1) % old_size;
    int give_buddy = news[left] == MPI_UNDEFINED;
    double* rod = calloc((size_t)g_points, sizeof(double));
    char* have = calloc((size_t)g_points, 1);
    for (int i = 0; i < s->mine_n; ++i) {
        rod[s->mine_lo + i] = s->mine[i];
    }
    if (give_buddy) {
        for (int i = 0; i < s->buddy_n; ++i) {
            rod[s->buddy_lo + i] = s->buddy[i];
        }
    }
    /* Each cell is written by exactly one process: a sum rebuilds the rod;
     * a count finds cells that nobody had. */
    for (int i = 0; i < s->mine_n; ++i) {
        have[s->mine_lo + i] = 1;
    }
    for (int i = 0; give_buddy && i < s->buddy_n; ++i) {
        have[s->buddy_lo + i] = 1;
    }
    int* count = malloc(sizeof(int) * (size_t)g_points);
    for (int i = 0; i < g_points; ++i) {
        count[i] = have[i];
    }
    int e = MPI_Allreduce(MPI_IN_PLACE, rod, g_points, MPI_DOUBLE, MPI_SUM, shrunk);
    if (e == MPI_SUCCESS) {
        e = MPI_Allreduce(MPI_IN_PLACE, count, g_points, MPI_INT, MPI_SUM, shrunk);
    }
    for (int i = 0; e == MPI_SUCCESS && i < g_points; ++i) {
        if (count[i] != 1) {
            fprintf(stderr, "ft_heat: cell %d is lost (neighbouring processes failed between two "
                            "checkpoints)\n", i);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    if (e != MPI_SUCCESS) {
        fprintf(stderr, "ft_heat: another failure during the recovery\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    MPI_Comm_free(&old);
    s->comm = shrunk;
    MPI_Comm_rank(shrunk, &s->rank);
    MPI_Comm_size(shrunk, &s->size);
    distribute(s, rod);
    if (s->rank == 0) {
        printf("recovered: %d processes left, back to step %d\n", s->size, s->ckpt_step);
        fflush(stdout);
    }
    free(rod);
    free(have);
    free(count);
    free(olds);
    free(news);
    MPI_Group_free(&og);
    MPI_Group_free(&ng);
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    g_points = argc > 1 ? atoi(argv[1]) : 4096;
    const int steps = argc > 2 ? atoi(argv[2]) : 3000;
    const int kill_rank = argc > 4 ? atoi(argv[3]) : -1;
    const int kill_step = argc > 4 ? atoi(argv[4]) : -1;
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

    Solver s;
    memset(&s, 0, sizeof s);
    MPI_Comm_dup(MPI_COMM_WORLD, &s.comm);
    MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(s.comm, &s.rank);
    MPI_Comm_size(s.comm, &s.size);
    if (g_points < 2 * s.size) {
        if (s.rank == 0) {
            fprintf(stderr, "ft_heat: %d points are too few for %d processes\n", g_points, s.size);
        }
        MPI_Finalize();
        return 1;
    }
    distribute(&s, NULL);
    /* Rounds of CKPT steps, each ending with a checkpoint and an agreement
     * on whether the round succeeded everywhere. A process that sees an
     * error revokes the communicator (so that no one waits for it) and goes
     * straight to the agreement: every process calls the same collectives
     * (agree, then shrink if needed) in the same order. */
    int t = 0, recoveries = 0, round_end = 0;
    for (;;) {
        int e = MPI_SUCCESS;
        for (; t < round_end && e == MPI_SUCCESS; ++t) {
            if (world_rank == kill_rank && t == kill_step) {
                printf("rank %d: killing myself at step %d\n", world_rank, t);
                fflush(stdout);
                raise(SIGKILL);
            }
            e = step(&s);
        }
        Pending p = {NULL, NULL, {0, 0}};
        if (e == MPI_SUCCESS) {
            e = exchange_checkpoint(&s, &p);
        }
        if (e != MPI_SUCCESS) {
            MPIX_Comm_revoke(s.comm);
        }
        int ok = e == MPI_SUCCESS;
        int ea = MPIX_Comm_agree(s.comm, &ok);
        if (ea == MPI_SUCCESS && ok) {
            commit_checkpoint(&s, &p, t);
            if (t >= steps) {
                break;
            }
        } else {
            free(p.copy);
            free(p.theirs);
            recover(&s);
            t = s.ckpt_step;
            ++recoveries;
        }
        round_end = t + CKPT < steps ? t + CKPT : steps;
    }
    /* The rod at rank 0, and the serial run to compare with. */
    double* rod = s.rank == 0 ? malloc(sizeof(double) * (size_t)g_points) : NULL;
    int* counts = NULL;
    int* displs = NULL;
    if (s.rank == 0) {
        counts = malloc(sizeof(int) * (size_t)s.size);
        displs = malloc(sizeof(int) * (size_t)s.size);
        for (int r = 0; r < s.size; ++r) {
            split(g_points, s.size, r, &displs[r], &counts[r]);
        }
    }
    int e = MPI_Gatherv(&s.u[1], s.n, MPI_DOUBLE, rod, counts, displs, MPI_DOUBLE, 0, s.comm);
    if (e != MPI_SUCCESS) {
        fprintf(stderr, "ft_heat: a failure after the last step; no result\n");
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
    if (s.rank == 0) {
        double* u = malloc(sizeof(double) * (size_t)(g_points + 2));
        double* v = malloc(sizeof(double) * (size_t)(g_points + 2));
        for (int i = 0; i < g_points; ++i) {
            u[i + 1] = initial(i);
        }
        for (int k = 0; k < steps; ++k) {
            u[0] = u[1];
            u[g_points + 1] = u[g_points];
            relax(u, v, g_points, 0);
            memcpy(&u[1], &v[1], sizeof(double) * (size_t)g_points);
        }
        double sum = 0, serial = 0;
        for (int i = 0; i < g_points; ++i) {
            sum += rod[i];
            serial += u[i + 1];
        }
        printf("result: %d points, %d steps, %d processes at the end, %d recoveries: heat %.12f, "
               "serial %.12f %s\n",
               g_points, steps, s.size, recoveries, sum, serial,
               sum == serial ? "OK" : "DIFFERENT");
        if (sum == serial) {
            printf("No Errors\n"); /* what ulmpi's test runner looks for */
        }
        free(u);
        free(v);
    }
    free(rod);
    free(counts);
    free(displs);
    MPI_Comm_free(&s.comm);
    free(s.u);
    free(s.tmp);
    free(s.mine);
    free(s.buddy);
    MPI_Finalize();
    return 0;
}
