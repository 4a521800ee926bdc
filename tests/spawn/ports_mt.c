/*
 * ports_mt.c -- MPI_Comm_connect from several threads at once to one port
 * (MPI_THREAD_MULTIPLE): the connections must not mix (each thread's
 * answer and context agreement are its own).
 *
 *   ports_mt [threads]   (2 processes)
 *
 * Rank 0 opens a port and accepts THREADS connections one after the other
 * on MPI_COMM_SELF; on each it receives the connecting thread's number and
 * sends it back plus 1000. Rank 1 starts THREADS threads, each connecting
 * on its own duplicate of MPI_COMM_SELF, sending its number and checking
 * the answer. Then every connection is disconnected.
 */
#include "mpitest.h"

#include <pthread.h>
#include <stdlib.h>

#define MAXT 8

static char port[MPI_MAX_PORT_NAME];
static MPI_Comm selfs[MAXT];

static void* client(void* arg)
{
    const int t = (int)(long)arg;
    MPI_Comm inter = MPI_COMM_NULL;
    MT_OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, selfs[t], &inter));
    if (inter == MPI_COMM_NULL) {
        return NULL;
    }
    int back = -1;
    MT_OK(MPI_Send(&t, 1, MPI_INT, 0, 11, inter));
    MT_OK(MPI_Recv(&back, 1, MPI_INT, 0, 12, inter, MPI_STATUS_IGNORE));
    MT_CHECK(back == t + 1000, "thread %d: answer %d", t, back);
    MT_OK(MPI_Comm_disconnect(&inter));
    return NULL;
}

int main(int argc, char** argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    int n = argc > 1 ? atoi(argv[1]) : 4;
    n = n < 1 ? 1 : n > MAXT ? MAXT : n;
    MT_CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MT_CHECK(mt_size == 2, "needs 2 processes");
    if (mt_rank == 0) {
        MT_OK(MPI_Open_port(MPI_INFO_NULL, port));
    }
    MT_OK(MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD));
    if (mt_rank == 0) {
        int seen[MAXT] = {0};
        for (int i = 0; i < n; ++i) {
            MPI_Comm inter = MPI_COMM_NULL;
            MT_OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter));
            int t = -1;
            MT_OK(MPI_Recv(&t, 1, MPI_INT, 0, 11, inter, MPI_STATUS_IGNORE));
            MT_CHECK(t >= 0 && t < n && !seen[t], "connection %d: thread %d", i, t);
            if (t >= 0 && t < n) {
                seen[t] = 1;
            }
            int back = t + 1000;
            MT_OK(MPI_Send(&back, 1, MPI_INT, 0, 12, inter));
            MT_OK(MPI_Comm_disconnect(&inter));
        }
        MT_OK(MPI_Close_port(port));
    } else {
        pthread_t th[MAXT];
        for (int t = 0; t < n; ++t) {
            MT_OK(MPI_Comm_dup(MPI_COMM_SELF, &selfs[t]));
        }
        for (int t = 0; t < n; ++t) {
            pthread_create(&th[t], NULL, client, (void*)(long)t);
        }
        for (int t = 0; t < n; ++t) {
            pthread_join(th[t], NULL);
        }
        for (int t = 0; t < n; ++t) {
            MT_OK(MPI_Comm_free(&selfs[t]));
        }
    }
    return mt_finalize();
}
