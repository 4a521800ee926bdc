/* ftmpi_timing: the time from a kill to a recovered MPI_COMM_WORLD under
 * FT-MPI REBUILD or SHRINK (docs/ftmpi.md), for tools/bench/ftmpi_recover.
 *
 *   ftmpi_timing STAMPFILE [VICTIM] [KILL_AT] [QUIET_MS]
 *
 * Every rank loops over MPI_Barrier on MPI_COMM_WORLD. At iteration KILL_AT
 * (default 20) the rank VICTIM (default size / 2) writes CLOCK_MONOTONIC
 * (ns) into STAMPFILE and kills itself (SIGKILL). Each survivor stamps the
 * moment its failing barrier returned (automatic recovery: the world is
 * recovered by then); under REBUILD the new process stamps the moment its
 * MPI_Init returned. Then every rank sends its stamp to rank 0 over the
 * recovered MPI_COMM_WORLD, which prints
 *   recovered: size N survivors_us S new_process_us I total_us T
 * (microseconds after the kill; I is -1 under SHRINK), then "No Errors".
 * CLOCK_MONOTONIC is one clock for every process of the machine, network
 * namespaces included.
 *
 * QUIET_MS (default 0): under REBUILD the new process waits that long
 * after its MPI_Init before the gather, so that every survivor sits idle
 * in it with the recovery done; an idle rank reads the launcher's failure
 * notices (tests/multihost, ftmpi_rebuild_quiet: a stale notice of the
 * dead process must not fail its successor).
 */
#include <mpi-ext.h>
#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char** argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ftmpi_timing STAMPFILE [VICTIM] [KILL_AT]\n");
        return 2;
    }
    int rc = MPI_Init(&argc, &argv);
    const int restarted = rc == MPI_INIT_RESTARTED_NODE;
    long long mine = restarted ? now_ns() : 0;
    int me = 0, np = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int victim = argc > 2 ? atoi(argv[2]) : np / 2;
    const int kill_at = argc > 3 ? atoi(argv[3]) : 20;
    const int quiet_ms = argc > 4 ? atoi(argv[4]) : 0;
    if (!restarted) {
        for (int i = 0; i < 100000; ++i) {
            if (i == kill_at && me == victim) {
                FILE* f = fopen(argv[1], "w");
                if (f == NULL) {
                    perror(argv[1]);
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
                fprintf(f, "%lld\n", now_ns());
                fclose(f);
                kill(getpid(), SIGKILL);
            }
            if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) {
                mine = now_ns();
                break;
            }
        }
        if (mine == 0) {
            fprintf(stderr, "rank %d: no failure seen\n", me);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (restarted && quiet_ms > 0) {
        usleep((useconds_t)quiet_ms * 1000);
    }
    long long pair[2] = {mine, restarted};
    long long* all = me == 0 ? malloc(sizeof(long long) * 2 * (size_t)np) : NULL;
    if (MPI_Gather(pair, 2, MPI_LONG_LONG, all, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD) !=
        MPI_SUCCESS) {
        fprintf(stderr, "rank %d: gather after the recovery failed\n", me);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    if (me == 0) {
        long long kill_ns = 0;
        FILE* f = fopen(argv[1], "r");
        if (f == NULL || fscanf(f, "%lld", &kill_ns) != 1) {
            fprintf(stderr, "cannot read the kill stamp from %s\n", argv[1]);
            MPI_Abort(MPI_COMM_WORLD, 5);
        }
        fclose(f);
        long long surv = 0, fresh = -1;
        for (int r = 0; r < np; ++r) {
            long long d = all[2 * r] - kill_ns;
            if (all[2 * r + 1]) {
                fresh = d > fresh ? d : fresh;
            } else {
                surv = d > surv ? d : surv;
            }
        }
        long long total = surv > fresh ? surv : fresh;
        printf("recovered: size %d survivors_us %lld new_process_us %lld total_us %lld\n", np,
               surv / 1000, fresh < 0 ? -1 : fresh / 1000, total / 1000);
        printf("No Errors\n");
        free(all);
    }
    MPI_Finalize();
    return 0;
}
