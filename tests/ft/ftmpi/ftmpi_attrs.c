/*
 * FT-MPI modes in a job where nothing fails (docs/ftmpi.md): the
 * attributes answer the modes the job started with; the modes can be set
 * on MPI_COMM_WORLD (a value of the wrong family, a read-only key and
 * another communicator are refused with a clear error class); a recovery
 * without a failure does nothing; communication and collectives (ATOMIC or
 * not) work as usual.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int errors = 0;
static int me = -1;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: line %d: ", me, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            ++errors;                                                                              \
        }                                                                                          \
    } while (0)

static void watchdog(int sig)
{
    (void)sig;
    static const char m[] = "ftmpi_attrs: watchdog expired (a hang)\n";
    (void)!write(2, m, sizeof m - 1);
    _exit(3);
}

static int attr(int key)
{
    int* v = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, key, &v, &flag);
    return flag && v != NULL ? *v : -1;
}

static int cls_of(int rc)
{
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char** argv)
{
    signal(SIGALRM, watchdog);
    alarm(50);
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    CHECK(attr(FTMPI_COMM_MODE) == FTMPI_COMM_MODE_BLANK, "comm mode %d", attr(FTMPI_COMM_MODE));
    CHECK(attr(FTMPI_MSG_MODE) == FTMPI_MSG_MODE_RESET, "msg mode %d", attr(FTMPI_MSG_MODE));
    CHECK(attr(FTMPI_COLL_MODE) == FTMPI_COLL_MODE_ATOMIC, "coll mode %d", attr(FTMPI_COLL_MODE));
    CHECK(attr(FTMPI_RECOVERY_MODE) == FTMPI_RECOVERY_MODE_AUTO, "recovery %d",
          attr(FTMPI_RECOVERY_MODE));
    CHECK(attr(FTMPI_NUM_FAILED_PROCS) == 0, "failed %d", attr(FTMPI_NUM_FAILED_PROCS));

    /* Setting the modes. */
    int v = FTMPI_COMM_MODE_SHRINK;
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_COMM_MODE, &v) == MPI_SUCCESS, "set shrink");
    CHECK(attr(FTMPI_COMM_MODE) == FTMPI_COMM_MODE_SHRINK, "comm mode not changed");
    v = FTMPI_MSG_MODE_CONT;
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_MSG_MODE, &v) == MPI_SUCCESS, "set cont");
    CHECK(attr(FTMPI_MSG_MODE) == FTMPI_MSG_MODE_CONT, "msg mode not changed");
    v = FTMPI_COLL_MODE_NONATOMIC;
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_COLL_MODE, &v) == MPI_SUCCESS, "set nonatomic");
    v = FTMPI_RECOVERY_MODE_MANUAL;
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_RECOVERY_MODE, &v) == MPI_SUCCESS, "set manual");
    CHECK(attr(FTMPI_RECOVERY_MODE) == FTMPI_RECOVERY_MODE_MANUAL, "recovery not changed");
    v = FTMPI_MSG_MODE_CONT; /* the wrong family */
    CHECK(cls_of(MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_COLL_MODE, &v)) == MPI_ERR_ARG,
          "a message mode accepted as collective mode");
    v = FTMPI_COMM_MODE_REBUILD;
    CHECK(cls_of(MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_COMM_MODE, &v)) == MPI_ERR_ARG,
          "rebuild accepted at run time");
    v = 3;
    CHECK(cls_of(MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_NUM_FAILED_PROCS, &v)) == MPI_ERR_KEYVAL,
          "a read-only key was set");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    v = FTMPI_MSG_MODE_RESET;
    CHECK(cls_of(MPI_Comm_set_attr(MPI_COMM_SELF, FTMPI_MSG_MODE, &v)) == MPI_ERR_KEYVAL,
          "a mode was set on MPI_COMM_SELF");
    CHECK(cls_of(MPI_Comm_delete_attr(MPI_COMM_WORLD, FTMPI_MSG_MODE)) == MPI_ERR_KEYVAL,
          "an FT-MPI key was deleted");
    /* Back to ATOMIC for the collectives below. */
    v = FTMPI_COLL_MODE_ATOMIC;
    MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_COLL_MODE, &v);
    v = FTMPI_RECOVERY_MODE_AUTO;
    MPI_Comm_set_attr(MPI_COMM_WORLD, FTMPI_RECOVERY_MODE, &v);

    /* A recovery without a failure changes nothing. */
    CHECK(MPIX_Ftmpi_recover() == MPI_SUCCESS, "MPIX_Ftmpi_recover without a failure");
    int n2;
    MPI_Comm_size(MPI_COMM_WORLD, &n2);
    CHECK(n2 == size, "size %d after a recovery without failure", n2);
    CHECK(attr(FTMPI_NUM_FAILED_PROCS) == 0, "failed %d", attr(FTMPI_NUM_FAILED_PROCS));

    /* Ordinary work. */
    for (int i = 0; i < 50; ++i) {
        int x = me + i, sum = 0;
        CHECK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
                  sum == size * (size - 1) / 2 + size * i,
              "allreduce %d gave %d", i, sum);
        int token = i;
        const int right = (me + 1) % size, left = (me + size - 1) % size;
        CHECK(MPI_Sendrecv_replace(&token, 1, MPI_INT, right, 1, left, 1, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE) == MPI_SUCCESS,
              "sendrecv %d", i);
    }
    MPI_Comm half;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half) == MPI_SUCCESS, "split");
    int hs = 0, one = 1;
    CHECK(MPI_Allreduce(&one, &hs, 1, MPI_INT, MPI_SUM, half) == MPI_SUCCESS &&
              hs == (size + (me % 2 == 0 ? 1 : 0)) / 2,
          "allreduce on a split gave %d", hs);
    MPI_Comm_free(&half);

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
    }
    MPI_Finalize();
    return 0;
}
