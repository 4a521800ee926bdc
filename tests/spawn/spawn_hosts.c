/*
 * spawn_hosts: MPI_Comm_spawn_multiple with the "host" info key on every
 * host of the job (the multi-host suite runs it over network namespaces,
 * one parent per host; on one host it spawns there).
 *
 * Every parent tells its host (MPI_Get_processor_name: the job-map host);
 * the root spawns one child per parent with info host = that parent's host
 * and argv {"child", host}. Each child checks it runs on that host, its
 * MPI_COMM_WORLD works, exchanges a message with every parent and, merged
 * with them, sums ranks; parent 0 collects the children's error counts.
 */
#include "spawntest.h"

#define NAME 256

static int child_main(int argc, char** argv, MPI_Comm parent)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0, rsize = 0;
    const int wrank = mt_rank;
    MPI_Get_processor_name(name, &len);
    MPI_Comm_remote_size(parent, &rsize);
    MT_CHECK(argc == 3 && strcmp(argv[2], name) == 0, "child %d runs on %s, asked for %s", wrank,
             name, argc == 3 ? argv[2] : "?");
    sp_check_world("child");
    for (int p = 0; p < rsize; ++p) {
        int got = -1, back = wrank * 1000 + p;
        MT_OK(MPI_Recv(&got, 1, MPI_INT, p, 3, parent, MPI_STATUS_IGNORE));
        MT_CHECK(got == p, "child %d got %d from parent %d", wrank, got, p);
        MT_OK(MPI_Send(&back, 1, MPI_INT, p, 4, parent));
    }
    sp_merge_check(parent, 1, "child");
    return sp_child_end(&parent, 5);
}

int main(int argc, char** argv)
{
    MPI_Comm parent = sp_init(&argc, &argv);
    if (parent != MPI_COMM_NULL) {
        return child_main(argc, argv, parent);
    }
    char mine[NAME] = "";
    int len = 0;
    MPI_Get_processor_name(mine, &len);
    char* all = calloc((size_t)mt_size, NAME);
    MT_OK(MPI_Allgather(mine, NAME, MPI_CHAR, all, NAME, MPI_CHAR, MPI_COMM_WORLD));
    char** cmds = calloc((size_t)mt_size, sizeof(char*));
    char*** argvs = calloc((size_t)mt_size, sizeof(char**));
    int* maxprocs = calloc((size_t)mt_size, sizeof(int));
    MPI_Info* infos = calloc((size_t)mt_size, sizeof(MPI_Info));
    int* errcodes = calloc((size_t)mt_size, sizeof(int));
    for (int i = 0; i < mt_size; ++i) {
        cmds[i] = argv[0];
        argvs[i] = calloc(3, sizeof(char*));
        argvs[i][0] = "child";
        argvs[i][1] = all + (size_t)i * NAME;
        maxprocs[i] = 1;
        MPI_Info_create(&infos[i]);
        MPI_Info_set(infos[i], "host", all + (size_t)i * NAME);
    }
    MPI_Comm inter;
    MT_OK(MPI_Comm_spawn_multiple(mt_size, cmds, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &inter,
                                  errcodes));
    int rsize = 0;
    MT_OK(MPI_Comm_remote_size(inter, &rsize));
    MT_CHECK(rsize == mt_size, "remote size %d", rsize);
    for (int c = 0; c < rsize; ++c) {
        MT_OK(MPI_Send(&mt_rank, 1, MPI_INT, c, 3, inter));
    }
    for (int c = 0; c < rsize; ++c) {
        int got = -1;
        MT_OK(MPI_Recv(&got, 1, MPI_INT, c, 4, inter, MPI_STATUS_IGNORE));
        MT_CHECK(got == c * 1000 + mt_rank, "parent %d got %d from child %d", mt_rank, got, c);
    }
    sp_merge_check(inter, 0, "parent");
    sp_children_errors(inter, 5, "spawn_multiple with hosts");
    MPI_Comm_disconnect(&inter);
    for (int i = 0; i < mt_size; ++i) {
        MPI_Info_free(&infos[i]);
        free(argvs[i]);
    }
    free(all);
    free(cmds);
    free(argvs);
    free(maxprocs);
    free(infos);
    free(errcodes);
    return mt_finalize();
}
