/*
 * spawn_multiple: MPI_Comm_spawn_multiple with two commands that differ in
 * their arguments, process counts and info keys, and what the children see:
 * MPI_APPNUM (the index of their command), their argv, the working
 * directory from the "wdir" key, the host from the "host" key, one
 * MPI_COMM_WORLD for all of them in command order, MPI_INFO_ENV.
 *
 * The parents spawn this program twice: command 0 with "alpha 1", 2
 * processes, wdir=/tmp; command 1 with "beta 2 x", 1 process, host = the
 * root's host (MPI_INFO_ENV "host"). Each child checks itself and sends
 * its findings to parent 0 (appnum, argc, world rank, error count).
 */
#include "spawntest.h"

#include <unistd.h>

static int child_main(int argc, char** argv, MPI_Comm parent)
{
    const int wsize = mt_size, wrank = mt_rank;
    int flag = 0;
    int* appnum = NULL;
    MT_CHECK(wsize == 3, "children's MPI_COMM_WORLD has %d processes, not 3", wsize);
    MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
    MT_CHECK(flag, "MPI_APPNUM is not set in a spawned process");
    const int app = flag ? *appnum : -1;
    /* Command order: the first command's processes first. */
    MT_CHECK(app == (wrank < 2 ? 0 : 1), "world rank %d has MPI_APPNUM %d", wrank, app);
    char cwd[4096] = "";
    MT_CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd failed");
    if (app == 0) {
        MT_CHECK(argc == 3 && strcmp(argv[1], "alpha") == 0 && strcmp(argv[2], "1") == 0,
                 "command 0 got %d arguments (%s)", argc - 1, argc > 1 ? argv[1] : "");
        MT_CHECK(strcmp(cwd, "/tmp") == 0, "wdir /tmp not applied: cwd %s", cwd);
    } else {
        MT_CHECK(argc == 4 && strcmp(argv[1], "beta") == 0 && strcmp(argv[2], "2") == 0 &&
                     strcmp(argv[3], "x") == 0,
                 "command 1 got %d arguments (%s)", argc - 1, argc > 1 ? argv[1] : "");
    }
    char value[MPI_MAX_INFO_VAL + 1] = "";
    MT_OK(MPI_Info_get(MPI_INFO_ENV, "maxprocs", MPI_MAX_INFO_VAL, value, &flag));
    MT_CHECK(flag && atoi(value) == 3, "MPI_INFO_ENV maxprocs '%s'", value);
    int report[4] = {app, argc, wrank, mt_errors};
    MT_OK(MPI_Send(report, 4, MPI_INT, 0, 1, parent));
    MT_OK(MPI_Comm_disconnect(&parent));
    MPI_Finalize();
    return mt_errors != 0;
}

int main(int argc, char** argv)
{
    MPI_Comm parent = sp_init(&argc, &argv);
    if (parent != MPI_COMM_NULL) {
        return child_main(argc, argv, parent);
    }
    int flag = 0;
    char host[MPI_MAX_INFO_VAL + 1] = "";
    MT_OK(MPI_Info_get(MPI_INFO_ENV, "host", MPI_MAX_INFO_VAL, host, &flag));
    MT_CHECK(flag, "MPI_INFO_ENV has no host");
    char* cmds[2] = {argv[0], argv[0]};
    char* args0[] = {"alpha", "1", NULL};
    char* args1[] = {"beta", "2", "x", NULL};
    char** argvs[2] = {args0, args1};
    int maxprocs[2] = {2, 1};
    MPI_Info infos[2];
    MPI_Info_create(&infos[0]);
    MPI_Info_create(&infos[1]);
    MPI_Info_set(infos[0], "wdir", "/tmp");
    MPI_Info_set(infos[1], "host", host);
    int errcodes[3] = {-1, -1, -1};
    MPI_Comm inter;
    MT_OK(MPI_Comm_spawn_multiple(2, cmds, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &inter,
                                  errcodes));
    for (int i = 0; i < 3; ++i) {
        MT_CHECK(errcodes[i] == MPI_SUCCESS, "errcodes[%d] = %d", i, errcodes[i]);
    }
    int rsize = 0;
    MT_OK(MPI_Comm_remote_size(inter, &rsize));
    MT_CHECK(rsize == 3, "remote size %d", rsize);
    if (mt_rank == 0) {
        for (int c = 0; c < 3; ++c) {
            int r[4] = {-1, -1, -1, -1};
            MT_OK(MPI_Recv(r, 4, MPI_INT, c, 1, inter, MPI_STATUS_IGNORE));
            MT_CHECK(r[2] == c && r[3] == 0, "child %d: world rank %d, %d errors", c, r[2], r[3]);
            MT_CHECK(r[0] == (c < 2 ? 0 : 1) && r[1] == (c < 2 ? 3 : 4),
                     "child %d: appnum %d argc %d", c, r[0], r[1]);
        }
    }
    MPI_Info_free(&infos[0]);
    MPI_Info_free(&infos[1]);
    MT_OK(MPI_Comm_disconnect(&inter));
    return mt_finalize();
}
