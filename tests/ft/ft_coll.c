/*
 * ft_coll COLL [COUNT [ROUNDS [VICTIM]]] -- a process fails while the others are inside
 * a collective (ULMPI_FT=ulfm; the victim is the middle rank unless given).
 *
 * Every rank runs ROUNDS (default 3) rounds of COLL (barrier, bcast,
 * reduce, allreduce, allgather, alltoall, reduce_scatter (the block form),
 * ibarrier, iallreduce) with COUNT
 * ints per process (default 1; 262144 makes the messages rendezvous
 * ones), checking the results. In the last round the victim sleeps 20 ms
 * and kills itself instead of joining, so the others are waiting inside the
 * collective when it dies. Each survivor's collective must end — never
 * hang — with MPIX_ERR_PROC_FAILED, except that a rooted one may succeed at
 * a rank that did not depend on the victim (then with the right data).
 * Later collectives on MPI_COMM_WORLD raise MPIX_ERR_PROC_FAILED at once.
 * The survivors then shrink and run COLL on the shrunk communicator with
 * the right result; ft_finalize checks the rest.
 */
#include "fttest.h"

static int value(int r, int i) { return r * 131 + i; }

/* One COLL on comm; returns the error code; checks the data when it succeeds. */
static int run(const char* coll, MPI_Comm comm, int count, int round)
{
    int r, n, err = MPI_SUCCESS;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    const size_t cnt = (size_t)count;
    int* in = malloc(sizeof(int) * cnt * (size_t)n);
    int* out = malloc(sizeof(int) * cnt * (size_t)n);
    for (size_t i = 0; i < cnt * (size_t)n; ++i) {
        in[i] = value(r, (int)i + round);
        out[i] = -1;
    }
    MPI_Request q;
    if (strcmp(coll, "barrier") == 0) {
        err = MPI_Barrier(comm);
    } else if (strcmp(coll, "ibarrier") == 0) {
        err = MPI_Ibarrier(comm, &q);
        if (err == MPI_SUCCESS) {
            err = MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
    } else if (strcmp(coll, "bcast") == 0) {
        int* b = r == 0 ? in : out;
        err = MPI_Bcast(b, count, MPI_INT, 0, comm);
        for (size_t i = 0; err == MPI_SUCCESS && i < cnt; ++i) {
            MT_CHECK(b[i] == value(0, (int)i + round), "bcast: [%zu] = %d", i, b[i]);
            if (b[i] != value(0, (int)i + round)) {
                break;
            }
        }
    } else if (strcmp(coll, "reduce") == 0 || strcmp(coll, "allreduce") == 0 ||
               strcmp(coll, "iallreduce") == 0) {
        const int all = coll[0] != 'r';
        if (strcmp(coll, "iallreduce") == 0) {
            err = MPI_Iallreduce(in, out, count, MPI_INT, MPI_SUM, comm, &q);
            if (err == MPI_SUCCESS) {
                err = MPI_Wait(&q, MPI_STATUS_IGNORE);
            }
        } else if (all) {
            err = MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
        } else {
            err = MPI_Reduce(in, out, count, MPI_INT, MPI_SUM, 0, comm);
        }
        if (err == MPI_SUCCESS && (all || r == 0)) {
            for (size_t i = 0; i < cnt; ++i) {
                int want = 0;
                for (int p = 0; p < n; ++p) {
                    want += value(p, (int)i + round);
                }
                if (out[i] != want) {
                    MT_CHECK(0, "%s: [%zu] = %d, want %d", coll, i, out[i], want);
                    break;
                }
            }
        }
    } else if (strcmp(coll, "allgather") == 0) {
        err = MPI_Allgather(in, count, MPI_INT, out, count, MPI_INT, comm);
        for (int p = 0; err == MPI_SUCCESS && p < n; ++p) {
            MT_CHECK(out[(size_t)p * cnt] == value(p, round), "allgather: block %d = %d", p,
                     out[(size_t)p * cnt]);
        }
    } else if (strcmp(coll, "alltoall") == 0) {
        err = MPI_Alltoall(in, count, MPI_INT, out, count, MPI_INT, comm);
        for (int p = 0; err == MPI_SUCCESS && p < n; ++p) {
            int want = value(p, (int)((size_t)r * cnt) + round);
            MT_CHECK(out[(size_t)p * cnt] == want, "alltoall: block %d = %d, want %d", p,
                     out[(size_t)p * cnt], want);
        }
    } else if (strcmp(coll, "reduce_scatter") == 0) {
        err = MPI_Reduce_scatter_block(in, out, count, MPI_INT, MPI_SUM, comm);
        for (size_t i = 0; err == MPI_SUCCESS && i < cnt; ++i) {
            int want = 0;
            for (int p = 0; p < n; ++p) {
                want += value(p, (int)((size_t)r * cnt + i) + round);
            }
            if (out[i] != want) {
                MT_CHECK(0, "reduce_scatter: [%zu] = %d, want %d", i, out[i], want);
                break;
            }
        }
    } else {
        fprintf(stderr, "ft_coll: unknown collective '%s'\n", coll);
        exit(2);
    }
    free(in);
    free(out);
    return err;
}

int main(int argc, char** argv)
{
    ft_init(&argc, &argv);
    const int rank = mt_rank, size = mt_size;
    const char* coll = argc > 1 ? argv[1] : "barrier";
    const int count = argc > 2 ? atoi(argv[2]) : 1;
    const int rounds = argc > 3 ? atoi(argv[3]) : 3;
    /* The middle rank, or the one given (0: the member that releases a
     * shared-memory barrier of more ranks than CPUs). */
    const int victim = argc > 4 ? atoi(argv[4]) : size / 2;
    const int rooted = strcmp(coll, "bcast") == 0 || strcmp(coll, "reduce") == 0;

    for (int i = 0; i < rounds; ++i) {
        if (i == rounds - 1) {
            ft_quiesce(MPI_COMM_WORLD, victim); /* the rounds before ended everywhere */
        }
        if (i == rounds - 1 && rank == victim) {
            mt_sleep_ms(20);
            ft_die();
        }
        int err = run(coll, MPI_COMM_WORLD, count, i);
        if (i < rounds - 1) {
            MT_CHECK(err == MPI_SUCCESS, "%s round %d: %s", coll, i, mt_errname(err));
        } else if (!(rooted && err == MPI_SUCCESS)) {
            char w[64];
            snprintf(w, sizeof w, "%s while the victim dies", coll);
            FT_CLASS(err, MPIX_ERR_PROC_FAILED, w);
        }
    }
    ft_wait_failed(MPI_COMM_WORLD, 1);
    FT_CLASS(run(coll, MPI_COMM_WORLD, count, 0), MPIX_ERR_PROC_FAILED, "a collective after it");

    MPI_Comm s;
    MT_OK(MPIX_Comm_shrink(MPI_COMM_WORLD, &s));
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    MT_OK(run(coll, s, count, 5));
    MPI_Comm_free(&s);
    return ft_finalize(size - 1);
}
