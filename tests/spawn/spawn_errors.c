/*
 * spawn_errors: what a spawn that cannot start returns, at every parent,
 * through the error handler, and that the job goes on:
 *   - a command that does not exist: MPI_ERR_SPAWN, every entry of
 *     array_of_errcodes MPI_ERR_SPAWN, intercomm MPI_COMM_NULL;
 *   - the same in MPI_Comm_spawn_multiple next to a command that exists:
 *     nothing is started (all or nothing);
 *   - more processes than the job has spawn slots;
 *   - an info "host" that is not a host of the job, a "wdir" that is not a
 *     directory;
 *   - a handler that counts its calls sees each of them (MPI_ERRORS_RETURN
 *     on one, a user handler on another);
 *   - after all of that, a good spawn works (the children say hello).
 * Run with mpirun --spawn-slots 4 (one host).
 */
#include "mpitest.h"

static int handler_calls = 0;
static int handler_last = MPI_SUCCESS;

static void counting_handler(MPI_Comm* comm, int* code, ...)
{
    (void)comm;
    ++handler_calls;
    handler_last = *code;
}

static int err_class(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

static void expect_spawn_error(const char* what, int rc, MPI_Comm inter, const int* errcodes,
                               int n)
{
    MT_CHECK(err_class(rc) == MPI_ERR_SPAWN, "%s: %s, not MPI_ERR_SPAWN", what, mt_errname(rc));
    MT_CHECK(inter == MPI_COMM_NULL, "%s: intercomm is not MPI_COMM_NULL", what);
    for (int i = 0; i < n; ++i) {
        MT_CHECK(err_class(errcodes[i]) == MPI_ERR_SPAWN, "%s: errcodes[%d] = %d", what, i,
                 errcodes[i]);
    }
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        int wrank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
        MPI_Send(&wrank, 1, MPI_INT, 0, 5, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int errcodes[16];
    MPI_Comm inter = MPI_COMM_WORLD;
    int rc;

    rc = MPI_Comm_spawn("./no-such-program-ulmpi", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0,
                        MPI_COMM_WORLD, &inter, errcodes);
    expect_spawn_error("missing command", rc, inter, errcodes, 2);

    rc = MPI_Comm_spawn("no-such-program-in-path-ulmpi", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0,
                        MPI_COMM_WORLD, &inter, errcodes);
    expect_spawn_error("missing command in PATH", rc, inter, errcodes, 1);

    char* cmds[2] = {argv[0], "./no-such-program-ulmpi"};
    int maxprocs[2] = {1, 1};
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    inter = MPI_COMM_WORLD;
    rc = MPI_Comm_spawn_multiple(2, cmds, MPI_ARGVS_NULL, maxprocs, infos, 0, MPI_COMM_WORLD,
                                 &inter, errcodes);
    expect_spawn_error("spawn_multiple with a missing command", rc, inter, errcodes, 2);

    inter = MPI_COMM_WORLD;
    rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1000, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                        MPI_ERRCODES_IGNORE);
    MT_CHECK(err_class(rc) == MPI_ERR_SPAWN, "too many: %s", mt_errname(rc));
    MT_CHECK(inter == MPI_COMM_NULL, "too many: intercomm is not MPI_COMM_NULL");

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "host", "no-such-host.invalid");
    inter = MPI_COMM_WORLD;
    rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, info, 0, MPI_COMM_WORLD, &inter, errcodes);
    expect_spawn_error("unknown host", rc, inter, errcodes, 1);
    MPI_Info_free(&info);

    MPI_Info_create(&info);
    MPI_Info_set(info, "wdir", "/no/such/directory/ulmpi");
    inter = MPI_COMM_WORLD;
    rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, info, 0, MPI_COMM_WORLD, &inter,
                        MPI_ERRCODES_IGNORE);
    MT_CHECK(err_class(rc) == MPI_ERR_SPAWN, "bad wdir: %s", mt_errname(rc));
    MPI_Info_free(&info);

    /* A user handler sees the error too, at every parent. */
    MPI_Errhandler eh;
    MT_OK(MPI_Comm_create_errhandler(counting_handler, &eh));
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    inter = MPI_COMM_WORLD;
    rc = MPI_Comm_spawn("./no-such-program-ulmpi", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0,
                        MPI_COMM_WORLD, &inter, errcodes);
    MT_CHECK(handler_calls == 1 && err_class(handler_last) == MPI_ERR_SPAWN,
             "the error handler was called %d times (last %s)", handler_calls,
             mt_errname(handler_last));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    /* The job still spawns. */
    rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                        errcodes);
    MT_CHECK(rc == MPI_SUCCESS, "the good spawn failed: %s", mt_errname(rc));
    if (rc == MPI_SUCCESS) {
        if (mt_rank == 0) {
            for (int c = 0; c < 2; ++c) {
                int got = -1;
                MT_OK(MPI_Recv(&got, 1, MPI_INT, c, 5, inter, MPI_STATUS_IGNORE));
                MT_CHECK(got == c, "child %d said %d", c, got);
            }
        }
        MT_OK(MPI_Comm_disconnect(&inter));
    }
    return mt_finalize();
}
