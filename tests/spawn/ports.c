/*
 * ports.c -- MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect /
 * MPI_Close_port and MPI_Comm_join between processes of one job
 * (docs/dynamic_processes.md, "Ports").
 *
 *   ports [rounds]   (at least 2 processes)
 *
 * MPI_COMM_WORLD splits into servers (even ranks) and clients (odd). The
 * servers' root opens a port and every round the two groups connect on it
 * (the root rotates among the clients), check the intercommunicator (sizes,
 * a message from every process to its counterpart, a merge and an
 * allreduce) and disconnect. Then the errors: a connect that nobody accepts
 * raises MPI_ERR_PORT after its timeout (info "timeout"), a connect to
 * names that are not ports, an accept on a port this process did not open
 * and a close of a closed port raise MPI_ERR_PORT at once. The name
 * service: rank 0 publishes the port, every process looks it up; a second
 * publish (MPI_ERR_SERVICE), an unknown name (MPI_ERR_NAME), unpublish, and
 * the lookup and unpublish after it fail. Last, ranks 0 and 1 join over a
 * loopback TCP socket and exchange a message.
 */
#include "mpitest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int err_class(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

/* Every process of `inter` sends its local rank to the remote process of
 * the same rank (when there is one) and checks what it gets. */
static void check_inter(MPI_Comm inter, int server, int nserv, int ncli, const char* what)
{
    int lsize = -1, rsize = -1, lrank = -1, flag = 0;
    MPI_Comm_test_inter(inter, &flag);
    MT_CHECK(flag, "%s: not an intercommunicator", what);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &lrank);
    MT_CHECK(lsize == (server ? nserv : ncli), "%s: local size %d", what, lsize);
    MT_CHECK(rsize == (server ? ncli : nserv), "%s: remote size %d", what, rsize);
    if (lrank < rsize) {
        int in = -1, out = 1000 * server + lrank;
        MT_OK(MPI_Sendrecv(&out, 1, MPI_INT, lrank, 7, &in, 1, MPI_INT, lrank, 7, inter,
                           MPI_STATUS_IGNORE));
        MT_CHECK(in == 1000 * !server + lrank, "%s: got %d from remote %d", what, in, lrank);
    }
    MPI_Comm merged;
    MT_OK(MPI_Intercomm_merge(inter, !server, &merged));
    int msize = 0, mrank = -1, total = -1;
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    MT_CHECK(msize == nserv + ncli, "%s: merged size %d", what, msize);
    MT_OK(MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, merged));
    MT_CHECK(total == msize * (msize - 1) / 2, "%s: merged allreduce %d", what, total);
    MT_OK(MPI_Comm_free(&merged));
}

static void name_service(const char* port)
{
    const char* svc = "ulmpi-ports-test";
    char got[MPI_MAX_PORT_NAME] = "";
    if (mt_rank == 0) {
        MT_OK(MPI_Publish_name(svc, MPI_INFO_NULL, port));
        int e = MPI_Publish_name(svc, MPI_INFO_NULL, port);
        MT_CHECK(err_class(e) == MPI_ERR_SERVICE, "second publish: class %d", err_class(e));
    }
    MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    MT_OK(MPI_Lookup_name(svc, MPI_INFO_NULL, got));
    MT_CHECK(strcmp(got, port) == 0, "lookup gave \"%s\", want \"%s\"", got, port);
    int e = MPI_Lookup_name("ulmpi-no-such-service", MPI_INFO_NULL, got);
    MT_CHECK(err_class(e) == MPI_ERR_NAME, "lookup of an unknown name: class %d", err_class(e));
    MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (mt_rank == 0) { /* the publisher: Open MPI's server lets no other process do it */
        MT_OK(MPI_Unpublish_name(svc, MPI_INFO_NULL, port));
        e = MPI_Unpublish_name(svc, MPI_INFO_NULL, port);
        MT_CHECK(err_class(e) == MPI_ERR_SERVICE, "second unpublish: class %d", err_class(e));
    }
    MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    e = MPI_Lookup_name(svc, MPI_INFO_NULL, got);
    MT_CHECK(err_class(e) == MPI_ERR_NAME, "lookup after unpublish: class %d", err_class(e));
}

static void join_pair(void)
{
    /* rank 0 listens on a loopback port, rank 1 connects to it */
    int fd = -1;
    if (mt_rank == 0) {
        int ls = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        MT_CHECK(bind(ls, (struct sockaddr*)&a, sizeof a) == 0, "bind");
        MT_CHECK(listen(ls, 1) == 0, "listen");
        getsockname(ls, (struct sockaddr*)&a, &len);
        int port = ntohs(a.sin_port);
        MT_OK(MPI_Send(&port, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
        fd = accept(ls, NULL, NULL);
        close(ls);
    } else if (mt_rank == 1) {
        int port = 0;
        MT_OK(MPI_Recv(&port, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((unsigned short)port);
        MT_CHECK(connect(fd, (struct sockaddr*)&a, sizeof a) == 0, "connect");
    }
    if (mt_rank > 1) {
        return;
    }
    MT_CHECK(fd >= 0, "no socket");
    for (int round = 0; round < 2; ++round) {
        MPI_Comm inter = MPI_COMM_NULL;
        MT_OK(MPI_Comm_join(fd, &inter));
        int rsize = -1, in = -1, out = 100 + mt_rank + round;
        MPI_Comm_remote_size(inter, &rsize);
        MT_CHECK(rsize == 1, "join: remote size %d", rsize);
        MT_OK(MPI_Sendrecv(&out, 1, MPI_INT, 0, 5, &in, 1, MPI_INT, 0, 5, inter,
                           MPI_STATUS_IGNORE));
        MT_CHECK(in == 100 + !mt_rank + round, "join round %d: got %d", round, in);
        MT_OK(MPI_Comm_disconnect(&inter));
    }
    close(fd);
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    MT_CHECK(mt_size >= 2, "needs at least 2 processes");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int server = mt_rank % 2 == 0;
    const int nserv = (mt_size + 1) / 2, ncli = mt_size / 2;
    MPI_Comm group;
    MT_OK(MPI_Comm_split(MPI_COMM_WORLD, server, mt_rank, &group));
    MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN);
    int grank = -1;
    MPI_Comm_rank(group, &grank);

    char port[MPI_MAX_PORT_NAME] = "";
    if (mt_rank == 0) {
        MT_OK(MPI_Open_port(MPI_INFO_NULL, port));
    }
    MT_OK(MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD));
    for (int r = 0; r < rounds; ++r) {
        MPI_Comm inter = MPI_COMM_NULL;
        char what[64];
        snprintf(what, sizeof what, "round %d", r);
        if (server) {
            MT_OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, group, &inter));
        } else {
            MT_OK(MPI_Comm_connect(port, MPI_INFO_NULL, r % ncli, group, &inter));
        }
        if (inter != MPI_COMM_NULL) {
            check_inter(inter, server, nserv, ncli, what);
            MT_OK(MPI_Comm_disconnect(&inter));
        }
    }

    /* Nobody accepts: MPI_ERR_PORT after the timeout (1 s), at every client. */
    if (!server) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "timeout", "1");
        MPI_Comm inter = MPI_COMM_NULL;
        double t0 = now_s();
        int e = MPI_Comm_connect(port, info, 0, group, &inter);
        double dt = now_s() - t0;
        MT_CHECK(err_class(e) == MPI_ERR_PORT, "unanswered connect: class %d", err_class(e));
        MT_CHECK(inter == MPI_COMM_NULL, "unanswered connect gave a communicator");
        MT_CHECK(dt > 0.5 && dt < 30, "unanswered connect took %.2f s (timeout 1 s)", dt);
        /* Names that are not ports: at once. */
        const char* bad[] = {"myhost:27", "ulmpi-port/0/0/0/another-job", "ulmpi-port/x/0/0/j"};
        for (int i = 0; i < 3; ++i) {
            e = MPI_Comm_connect(bad[i], MPI_INFO_NULL, 0, group, &inter);
            MT_CHECK(err_class(e) == MPI_ERR_PORT, "connect to \"%s\": class %d", bad[i],
                     err_class(e));
        }
        MPI_Info_free(&info);
    } else {
        /* A port not open here (a client's world rank in it): MPI_ERR_PORT. */
        char other[MPI_MAX_PORT_NAME];
        strcpy(other, port);
        other[strlen("ulmpi-port/")] = '1';
        MPI_Comm inter = MPI_COMM_NULL;
        int e = MPI_Comm_accept(other, MPI_INFO_NULL, 0, group, &inter);
        MT_CHECK(err_class(e) == MPI_ERR_PORT, "accept on a foreign port: class %d",
                 err_class(e));
    }
    MT_OK(MPI_Barrier(MPI_COMM_WORLD));
    name_service(port);
    if (mt_rank == 0) {
        MT_OK(MPI_Close_port(port));
        int e = MPI_Close_port(port);
        MT_CHECK(err_class(e) == MPI_ERR_PORT, "second close: class %d", err_class(e));
    }
    MT_OK(MPI_Comm_free(&group));
    join_pair();
    return mt_finalize();
}
