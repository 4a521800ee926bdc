/*
 * A fault-tolerant manager-worker parameter sweep in FT-MPI style: rank 0
 * hands out tasks, the workers compute and send back results, and workers
 * may die at any time. Run it with an FT-MPI communicator mode (BLANK,
 * SHRINK or REBUILD) and the RESET message mode (the defaults of ulmpi):
 *
 *   mpirun -n 5 --ft-mode shrink ./ftmpi_sweep [tasks] [kills] [seed]
 *   mpirun -n 5 --ft-mode rebuild ./ftmpi_sweep 200 2
 *   (or ULMPI_FT_MODE=blank mpirun -n 5 ./ftmpi_sweep)
 *
 * How it survives (docs/ftmpi.md): the call that meets a failure returns
 * an error and MPI_COMM_WORLD is already recovered (automatic recovery);
 * in RESET mode every message in flight is dropped, so the manager puts
 * every task that has no result back in the queue, and every worker whose
 * call failed says again that it is ready. Workers are known by their
 * original rank (sent with every message), replies go to the rank the
 * message came from, which is right in both modes (SHRINK renumbers, BLANK
 * leaves holes; REBUILD replaces a dead worker by a new process, whose
 * MPI_Init returns MPI_INIT_RESTARTED_NODE: it simply starts as a worker).
 * `kills` workers (chosen by the seed) kill themselves after a few tasks to
 * show it. The manager checks the sum of all results
 * against a sequential computation and prints "No Errors".
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { TAG_RESULT = 1, TAG_WORK = 2 };

/* One point of the sweep: a slowly converging series at parameter x. */
static double compute(int task)
{
    const double x = 0.5 + task * 0.01;
    double s = 0.0;
    for (int k = 1; k <= 20000; ++k) {
        s += sin(x * k) / ((double)k * k);
    }
    return s;
}

struct msg {
    double value;
    int id;   /* the worker's original rank */
    int task; /* -1: ready (no result) */
};

static void watchdog(int sig)
{
    (void)sig;
    static const char m[] = "ftmpi_sweep: watchdog expired (a hang)\n";
    (void)!write(2, m, sizeof m - 1);
    _exit(3);
}

static int manager(int ntasks)
{
    double* result = calloc((size_t)ntasks, sizeof(double));
    char* done = calloc((size_t)ntasks, 1);
    char* given = calloc((size_t)ntasks, 1);
    int ndone = 0, next = 0, recoveries = 0;
    while (ndone < ntasks) {
        struct msg m;
        MPI_Status st;
        int rc = MPI_Recv(&m, (int)sizeof m, MPI_BYTE, MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD,
                          &st);
        if (rc != MPI_SUCCESS) {
            /* A worker died; MPI_COMM_WORLD is recovered and every message
             * in flight is gone: every task without a result goes back. */
            ++recoveries;
            for (int t = 0; t < ntasks; ++t) {
                given[t] = done[t];
            }
            next = 0;
            continue;
        }
        if (m.task >= 0 && m.task < ntasks && !done[m.task]) {
            done[m.task] = 1;
            given[m.task] = 1;
            result[m.task] = m.value;
            ++ndone;
        }
        while (next < ntasks && given[next]) {
            ++next;
        }
        int task = next < ntasks ? next : -2; /* -2: nothing now, ask again */
        if (task >= 0) {
            given[task] = 1;
        }
        if (ndone == ntasks) {
            break;
        }
        if (MPI_Send(&task, 1, MPI_INT, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD) != MPI_SUCCESS) {
            ++recoveries;
            for (int t = 0; t < ntasks; ++t) {
                given[t] = done[t];
            }
            next = 0;
        }
    }
    /* Stop every live worker; a failure in the middle renumbers (SHRINK):
     * start the round again (a worker stopped twice ignores the second). */
    int stop = -1, again = 1;
    while (again) {
        again = 0;
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        for (int r = 1; r < size; ++r) {
            int rc = MPI_Send(&stop, 1, MPI_INT, r, TAG_WORK, MPI_COMM_WORLD);
            int now;
            MPI_Comm_size(MPI_COMM_WORLD, &now);
            int cls = MPI_SUCCESS;
            MPI_Error_class(rc, &cls);
            /* A hole (BLANK) answers MPIX_ERR_PROC_FAILED: skip it. Any
             * other error, or a new size, was a new failure: once more. */
            if (rc != MPI_SUCCESS && (cls != MPIX_ERR_PROC_FAILED || now != size)) {
                again = 1;
                ++recoveries;
                break;
            }
        }
    }
    double sum = 0.0, check = 0.0;
    for (int t = 0; t < ntasks; ++t) {
        sum += result[t];
        check += compute(t);
    }
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("%d tasks done; %d recoveries; MPI_COMM_WORLD has %d ranks now; sum %.12f\n", ntasks,
           recoveries, size, sum);
    const int ok = fabs(sum - check) < 1e-9;
    printf(ok ? " No Errors\n" : " Found 1 errors: the sum should be %.12f\n", check);
    free(result);
    free(done);
    free(given);
    return ok ? 0 : 1;
}

static void worker(int id, int victim_after)
{
    struct msg m = {0.0, id, -1};
    int tasks = 0;
    for (;;) {
        if (MPI_Send(&m, (int)sizeof m, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD) != MPI_SUCCESS) {
            m.task = -1; /* recovered; the result was lost with the old messages */
            continue;
        }
        int task;
        if (MPI_Recv(&task, 1, MPI_INT, 0, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS) {
            m.task = -1;
            continue;
        }
        if (task == -1) {
            return;
        }
        if (task == -2) {
            m.task = -1;
            usleep(1000);
            continue;
        }
        if (victim_after >= 0 && tasks == victim_after) {
            raise(SIGKILL);
        }
        m.task = task;
        m.value = compute(task);
        ++tasks;
    }
}

int main(int argc, char** argv)
{
    signal(SIGALRM, watchdog);
    alarm(100);
    const int restarted = MPI_Init(&argc, &argv) == MPI_INIT_RESTARTED_NODE;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int ntasks = argc > 1 ? atoi(argv[1]) : 200;
    const int kills = argc > 2 ? atoi(argv[2]) : 1;
    const unsigned seed = argc > 3 ? (unsigned)atoi(argv[3]) : 1u;
    int rc = 0;
    if (rank == 0) {
        rc = manager(ntasks);
    } else {
        /* Workers 1..kills after the seed's offset die, each after a few
         * tasks (a new process that replaced one does not). */
        const int k = (rank - 1 + (int)seed) % (size - 1);
        worker(rank, !restarted && k < kills && kills < size - 1 ? 2 + k * 3 : -1);
    }
    MPI_Finalize();
    return rc;
}
