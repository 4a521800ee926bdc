/*
 * intra_check: intra-parallel sections (MPIX_Intra_*, mpi-ext.h) checked on
 * every replica after every section.
 *
 *   intra_check [sections] [kill=REPLICA:SECTION:TASK ...] [errors]
 *
 * Sections of 1 to 1,000 tasks (the sizes cycle) with two task types:
 *  A (varargs register/launch): in a[L], out b[L], inout c[L] (c = c/2 + a,
 *    c carried from section to section), out d (one double), in task number;
 *  B (registerv/launchv with per-task counts): in a[n_t] (n_t = L - t % 3),
 *    out e: every third int of a row (MPI_Type_vector: the other ints keep
 *    a sentinel that must survive), out d.
 * After each section every process recomputes every task from its own copy
 * of the inputs and compares (bitwise): every replica must hold every
 * task's results. An Allreduce (BXOR of the bit patterns) between sections
 * makes a result line "result=<hash> ranks=N", the same with or without
 * replication and whatever replica died.
 *
 * kill=R:S:T (up to 4): replica R raises SIGKILL in task T of section S
 * (before its update leaves). errors: the argument checks (MPI_ERRORS_RETURN).
 * stderr: "intra_check: rank r replica k ran N tasks" (the split; a process
 * re-created by recovery says so instead, with the first section it ran
 * and the tasks it ran from there on: its slot's share).
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L 16
#define MAXT 1000

static const int sizes[] = {1, 2, 3, 5, 8, 16, 100, 1000, 7, 64, 33, 4};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static int replica, replicas, cur_section;
#define MAXKILL 4
static int nkill, kill_rep[MAXKILL], kill_sec[MAXKILL], kill_task[MAXKILL];
static long ran;

static double a[MAXT * L], b[MAXT * L], c[MAXT * L], d[MAXT];
static int e[MAXT * L * 3];
static double c_before[MAXT * L];

static void maybe_die(int task)
{
    ++ran;
    for (int i = 0; i < nkill; ++i) {
        if (replica == kill_rep[i] && cur_section == kill_sec[i] && task == kill_task[i]) {
            fflush(NULL);
            raise(SIGKILL);
        }
    }
}

static void task_a(void *args[], const int counts[])
{
    const double *x = args[0];
    double *y = args[1];
    double *z = args[2];
    double *s = args[3];
    const int t = *(const int *)args[4];
    maybe_die(t);
    double acc = 0;
    for (int i = 0; i < counts[0]; ++i) {
        y[i] = 3 * x[i] + t;
        z[i] = z[i] / 2 + x[i];
        acc += x[i] * z[i];
    }
    *s = acc;
}

static void task_b(void *args[], const int counts[])
{
    const double *x = args[0];
    int *row = args[1];
    double *s = args[2];
    const int t = *(const int *)args[3];
    maybe_die(t);
    double acc = 0;
    for (int i = 0; i < counts[0]; ++i) {
        acc += x[i] * (i + 1);
    }
    for (int i = 0; i < L; ++i) {
        row[3 * i] = (int)(acc * 7) + i;
    }
    *s = -acc;
}

static int uses_b(int s, int t) { return (s % 2) == 1 && (t % 2) == 1; }

/* The expected results of task t of section s, from c_before. */
static int check_task(int s, int t)
{
    int bad = 0;
    if (!uses_b(s, t)) {
        double acc = 0;
        for (int i = 0; i < L; ++i) {
            const double x = a[t * L + i];
            const double z = c_before[t * L + i] / 2 + x;
            bad += b[t * L + i] != 3 * x + t;
            bad += c[t * L + i] != z;
            acc += x * z;
        }
        bad += d[t] != acc;
    } else {
        const int n = L - t % 3;
        double acc = 0;
        for (int i = 0; i < n; ++i) {
            acc += a[t * L + i] * (i + 1);
        }
        for (int i = 0; i < L; ++i) {
            bad += e[(t * L + i) * 3] != (int)(acc * 7) + i;
            bad += e[(t * L + i) * 3 + 1] != -7 || e[(t * L + i) * 3 + 2] != -7;
        }
        bad += d[t] != -acc;
        for (int i = 0; i < L; ++i) {
            bad += c[t * L + i] != c_before[t * L + i]; /* untouched by B */
        }
    }
    return bad;
}

static uint64_t bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static int check_errors(void)
{
    int bad = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int tags[1] = {MPIX_INTRA_IN};
    MPI_Datatype types[1] = {MPI_DOUBLE};
    int counts[1] = {1};
    int id = -5;
    void *ptrs[1] = {a};
    /* out of a section */
    bad += MPIX_Intra_Task_registerv(task_a, 1, tags, types, counts, &id) != MPI_ERR_OTHER;
    bad += MPIX_Intra_Task_launchv(0, 1, ptrs, NULL) != MPI_ERR_OTHER;
    bad += MPIX_Intra_Section_end() != MPI_ERR_OTHER;
    bad += MPIX_Intra_Section_begin() != MPI_SUCCESS;
    bad += MPIX_Intra_Section_begin() != MPI_ERR_OTHER; /* no nesting */
    /* bad registrations */
    bad += MPIX_Intra_Task_register(task_a, 9, MPI_DOUBLE, 1, MPIX_INTRA_END) != -1;
    bad += MPIX_Intra_Task_registerv(NULL, 1, tags, types, counts, &id) != MPI_ERR_ARG;
    bad += MPIX_Intra_Task_registerv(task_a, -1, tags, types, counts, &id) != MPI_ERR_ARG;
    counts[0] = -1;
    bad += MPIX_Intra_Task_registerv(task_a, 1, tags, types, counts, &id) != MPI_ERR_COUNT;
    counts[0] = 1;
    types[0] = MPI_DATATYPE_NULL;
    bad += MPIX_Intra_Task_registerv(task_a, 1, tags, types, counts, &id) != MPI_ERR_TYPE;
    types[0] = MPI_DOUBLE;
    bad += MPIX_Intra_Task_registerv(task_a, 1, tags, types, counts, &id) != MPI_SUCCESS || id != 0;
    /* bad launches */
    bad += MPIX_Intra_Task_launchv(1, 1, ptrs, NULL) != MPI_ERR_ARG;  /* no type 1 */
    bad += MPIX_Intra_Task_launchv(0, 2, ptrs, NULL) != MPI_ERR_ARG;  /* 2 pointers for 1 */
    ptrs[0] = NULL;
    bad += MPIX_Intra_Task_launchv(0, 1, ptrs, NULL) != MPI_ERR_BUFFER;
    bad += MPIX_Intra_Section_end() != MPI_SUCCESS; /* nothing launched */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return bad;
}

int main(int argc, char **argv)
{
    int nsec = 12, errors = 0, rank, size;
    for (int i = 1; i < argc; ++i) {
        if (nkill < MAXKILL && sscanf(argv[i], "kill=%d:%d:%d", &kill_rep[nkill],
                                      &kill_sec[nkill], &kill_task[nkill]) == 3) {
            ++nkill;
            continue;
        }
        if (strcmp(argv[i], "errors") == 0) {
            errors = 1;
        } else {
            nsec = atoi(argv[i]);
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Replica_info(&replica, &replicas);

    int bad = errors ? check_errors() : 0;
    for (int i = 0; i < MAXT * L; ++i) {
        c[i] = (double)((i * 7 + rank) % 13);
    }
    for (int i = 0; i < MAXT * L * 3; ++i) {
        e[i] = -7;
    }
    MPI_Datatype every3;
    MPI_Type_vector(L, 1, 3, MPI_INT, &every3);
    MPI_Type_commit(&every3);
    uint64_t hash = 0;
    int task_no[MAXT];
    for (int t = 0; t < MAXT; ++t) {
        task_no[t] = t;
    }
    int new_at = nsec; /* a re-created process: the first section it runs */
    long ran_before_new = 0;
    for (int s = 0; s < nsec; ++s) {
        const int n = sizes[s % NSIZES];
        cur_section = s;
        if (new_at == nsec) {
            int k = replica, nr = replicas;
            MPIX_Replica_info(&k, &nr);
            if (k != replica) {
                new_at = s, ran_before_new = ran;
            }
        }
        for (int i = 0; i < n * L; ++i) {
            a[i] = (double)(((i + s * 31 + rank * 5) % 17) - 8);
        }
        memcpy(c_before, c, sizeof c);
        MPIX_Intra_Section_begin();
        int ida = Intra_Task_register(task_a, INTRA_IN, MPI_DOUBLE, L, INTRA_OUT, MPI_DOUBLE, L,
                                      INTRA_INOUT, MPI_DOUBLE, L, INTRA_OUT, MPI_DOUBLE, 1,
                                      INTRA_IN, MPI_INT, 1, INTRA_END);
        int idb = -1;
        if (s % 2 == 1) {
            const int tags[4] = {MPIX_INTRA_IN, MPIX_INTRA_OUT, MPIX_INTRA_OUT, MPIX_INTRA_IN};
            const MPI_Datatype types[4] = {MPI_DOUBLE, every3, MPI_DOUBLE, MPI_INT};
            const int counts[4] = {L, 1, 1, 1};
            MPIX_Intra_Task_registerv(task_b, 4, tags, types, counts, &idb);
        }
        for (int t = 0; t < n; ++t) {
            if (uses_b(s, t)) {
                void *ptrs[4] = {&a[t * L], &e[t * L * 3], &d[t], &task_no[t]};
                const int counts[4] = {L - t % 3, 1, 1, 1};
                MPIX_Intra_Task_launchv(idb, 4, ptrs, counts);
            } else {
                Intra_Task_launch(ida, &a[t * L], &b[t * L], &c[t * L], &d[t], &task_no[t]);
            }
        }
        Intra_Section_end();
        for (int t = 0; t < n; ++t) {
            const int wrong = check_task(s, t);
            if (wrong && bad < 10) {
                fprintf(stderr, "intra_check: rank %d replica %d: section %d task %d: %d wrong\n",
                        rank, replica, s, t, wrong);
            }
            bad += wrong;
        }
        uint64_t h = (uint64_t)s * 0x9e3779b97f4a7c15ull;
        for (int t = 0; t < n; ++t) {
            h = h * 31 + bits(d[t]);
            for (int i = 0; i < L; ++i) {
                h = h * 31 + bits(c[t * L + i]) + (uint64_t)e[(t * L + i) * 3];
            }
        }
        uint64_t all = 0;
        MPI_Allreduce(&h, &all, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
        hash = hash * 1000003u ^ all;
    }
    MPI_Type_free(&every3);
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* A process re-created by recovery is a copy of its sibling: its task
     * count is the sibling's up to the fork, and its replica index is the
     * dead one's now. Its line must not stand for the sibling's. */
    int now = replica, nrep = replicas;
    MPIX_Replica_info(&now, &nrep);
    if (now != replica) {
        fprintf(stderr,
                "intra_check: rank %d replica %d (re-created from replica %d's copy) from "
                "section %d on ran %ld tasks\n",
                rank, now, replica, new_at, new_at < nsec ? ran - ran_before_new : 0L);
    } else {
        fprintf(stderr, "intra_check: rank %d replica %d ran %ld tasks\n", rank, replica, ran);
    }
    if (rank == 0) {
        printf("result=%016llx ranks=%d\n", (unsigned long long)hash, size);
        if (total == 0) {
            printf("No Errors\n");
        } else {
            printf("Found %d errors\n", total);
        }
    }
    MPI_Finalize();
    return total != 0;
}
