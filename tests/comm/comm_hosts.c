/*
 * Communicators over several hosts (the testlist starts fake hosts on this
 * machine: mpirun -H localhost:2,env:3 --launch-agent {host}, so "env"
 * is a host whose daemon runs here; ranks on different hosts talk over
 * udp). Argument: the number of hosts the job spans.
 *
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives exactly the ranks with my
 * processor name, ordered by key; context ids agree across hosts; an
 * intercommunicator between the first two hosts (local_comm: the host's
 * shared communicator) carries traffic and merges; a split by host of a
 * dup, a Cartesian grid host x rank-in-host where the hosts are even.
 */
#include "mpitest.h"

static char names[64][MPI_MAX_PROCESSOR_NAME];

static int ctxid(MPI_Comm c)
{
    MPI_Info info;
    char v[64];
    int flag = 0;
    MT_OK(MPI_Comm_get_info(c, &info));
    MT_OK(MPI_Info_get(info, "ulmpi_context_id", 63, v, &flag));
    MT_OK(MPI_Info_free(&info));
    return flag ? atoi(v) : -1;
}

static void same_everywhere(int v, const char* what)
{
    int lo = 0, hi = 0;
    MT_OK(MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    MT_OK(MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    MT_CHECK(lo == hi, "%s differs between ranks: %d .. %d", what, lo, hi);
}

int main(int argc, char** argv)
{
    char me[MPI_MAX_PROCESSOR_NAME];
    int len, i, p, r, hosts, want_hosts, size, rank, host_of_me = -1;
    int host_index[64];
    MPI_Comm shared, dup, x;

    mt_init(&argc, &argv);
    p = mt_size;
    r = mt_rank;
    want_hosts = argc > 1 ? atoi(argv[1]) : 1;
    if (p > 64) {
        if (r == 0) {
            printf("at most 64 ranks\n");
        }
        MPI_Finalize();
        return 1;
    }
    memset(me, 0, sizeof me);
    MT_OK(MPI_Get_processor_name(me, &len));
    MT_OK(MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME,
                        MPI_CHAR, MPI_COMM_WORLD));
    /* hosts in order of first appearance */
    hosts = 0;
    for (i = 0; i < p; ++i) {
        int j;
        host_index[i] = -1;
        for (j = 0; j < i; ++j) {
            if (strcmp(names[i], names[j]) == 0) {
                host_index[i] = host_index[j];
                break;
            }
        }
        if (host_index[i] < 0) {
            host_index[i] = hosts++;
        }
    }
    host_of_me = host_index[r];
    MT_CHECK(hosts == want_hosts, "the job spans %d hosts, expected %d", hosts, want_hosts);

    /* split_type: my host's ranks, key -r reverses them */
    MT_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -r, MPI_INFO_NULL, &shared));
    {
        int n = 0, above = 0;
        for (i = 0; i < p; ++i) {
            if (host_index[i] == host_of_me) {
                ++n;
                above += i > r;
            }
        }
        MT_OK(MPI_Comm_size(shared, &size));
        MT_OK(MPI_Comm_rank(shared, &rank));
        MT_CHECK(size == n && rank == above, "shared: size %d rank %d, expected %d %d", size, rank,
                 n, above);
    }
    {
        int sum = 0, want = 0;
        for (i = 0; i < p; ++i) {
            want += host_index[i] == host_of_me ? i : 0;
        }
        MT_OK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, shared));
        MT_CHECK(sum == want, "allreduce within the host: %d, expected %d", sum, want);
    }

    /* context ids agree across hosts */
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    same_everywhere(ctxid(dup), "the context id of a dup");
    same_everywhere(ctxid(shared), "the context id of the shared split");

    /* a split of the dup by host equals split_type */
    MT_OK(MPI_Comm_split(dup, host_of_me, -r, &x));
    {
        int res;
        MT_OK(MPI_Comm_compare(x, shared, &res));
        MT_CHECK(res == MPI_CONGRUENT, "split by host vs split_type: %d", res);
    }
    MT_OK(MPI_Comm_free(&x));

    /* an intercommunicator between the first two hosts */
    if (hosts >= 2) {
        int leader[2] = {-1, -1};
        for (i = p - 1; i >= 0; --i) { /* shared rank 0 is the highest world rank */
            if (host_index[i] < 2 && leader[host_index[i]] < 0) {
                leader[host_index[i]] = i;
            }
        }
        if (host_of_me < 2) {
            MPI_Comm inter, merged;
            int rsize, v = r, got, msize;
            MT_OK(MPI_Intercomm_create(shared, 0, MPI_COMM_WORLD, leader[1 - host_of_me], 17,
                                       &inter));
            MT_OK(MPI_Comm_remote_size(inter, &rsize));
            MT_OK(MPI_Comm_rank(inter, &rank));
            if (rank < rsize) {
                MT_OK(MPI_Sendrecv(&v, 1, MPI_INT, rank, 2, &got, 1, MPI_INT, rank, 2, inter,
                                   MPI_STATUS_IGNORE));
                MT_CHECK(strcmp(names[got], me) != 0, "the partner across is on my host");
            }
            MT_OK(MPI_Intercomm_merge(inter, host_of_me, &merged));
            MT_OK(MPI_Comm_size(merged, &msize));
            MT_OK(MPI_Allreduce(&v, &got, 1, MPI_INT, MPI_MAX, merged));
            MT_CHECK(msize == size + rsize, "merged size %d", msize);
            MT_OK(MPI_Comm_free(&merged));
            MT_OK(MPI_Comm_free(&inter));
        }
    }

    /* even hosts: a hosts x ranks-per-host grid, rows are hosts */
    {
        int even = p % hosts == 0, dims[2], periods[2] = {0, 1}, keep[2] = {0, 1};
        MPI_Comm cart, row;
        for (i = 0; i < p && even; ++i) {
            even = host_index[i] == i / (p / hosts);
        }
        if (even) {
            dims[0] = hosts;
            dims[1] = p / hosts;
            MT_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
            MT_OK(MPI_Cart_sub(cart, keep, &row));
            MT_OK(MPI_Comm_size(row, &size));
            MT_CHECK(size == p / hosts, "row size %d", size);
            {
                int res;
                MT_OK(MPI_Comm_compare(row, shared, &res));
                MT_CHECK(res == MPI_SIMILAR || (res == MPI_CONGRUENT && size == 1),
                         "a grid row vs the host: %d", res);
            }
            MT_OK(MPI_Comm_free(&row));
            MT_OK(MPI_Comm_free(&cart));
        }
    }

    MT_OK(MPI_Comm_free(&dup));
    MT_OK(MPI_Comm_free(&shared));
    return mt_finalize();
}
