/*
 * Neighbourhood collectives (MPI-3.1 7.6): Neighbor_allgather(v) and
 * Neighbor_alltoall(v, w), blocking and nonblocking, on
 *  - Cartesian communicators: 1-d periodic and not, 2-d and 3-d with mixed
 *    periods (dimensions of size 1 and 2 included, where one rank is both
 *    the - and the + neighbour, or the rank itself);
 *  - graph communicators (MPI_Graph_create: a symmetric multigraph with
 *    self-loops and repeated edges);
 *  - distributed graphs, from Dist_graph_create_adjacent (directed,
 *    neighbours in a scrambled order, a self-edge) and from Dist_graph_create
 *    (edges named by other ranks, a repeated edge);
 * with counts below and above the eager limit, v forms with uneven counts
 * and gaps, alltoallw with per-neighbour derived datatypes (strided) and
 * byte displacements, several nonblocking calls in flight at once, and a
 * duplicate of a Cartesian communicator.
 *
 * Expectations come from the topology, computed here: block k of the
 * receive buffer holds what in-neighbour k sent on the edge that ends in
 * slot k. For a Cartesian topology that is the neighbour's slot k ^ 1 (my
 * - neighbour sent to its + neighbour); for graphs the i-th edge from A to
 * B is B's i-th edge from A (every rank's out-list is gathered first). A
 * slot whose neighbour is MPI_PROC_NULL, and the gaps between blocks, keep
 * their sentinel.
 *
 * Errors (MPI_ERRORS_RETURN): a communicator without topology and an
 * intercommunicator give MPI_ERR_TOPOLOGY, MPI_COMM_NULL MPI_ERR_COMM,
 * MPI_IN_PLACE MPI_ERR_ARG, a negative count MPI_ERR_COUNT, a NULL count
 * array MPI_ERR_ARG, MPI_DATATYPE_NULL MPI_ERR_TYPE, a NULL request
 * MPI_ERR_REQUEST; and a call that failed its checks takes no tag (the
 * next call still matches).
 */
#include "mpitest.h"

#define SENTINEL (-7)
#define MAXDEG 64

enum { AG, AGV, A2A, A2AV, A2AW, NKINDS };
static const char* const kind_name[NKINDS] = {"allgather", "allgatherv", "alltoall", "alltoallv",
                                              "alltoallw"};

/* A topology as the test sees it. */
typedef struct {
    const char* name;
    MPI_Comm comm;
    int cart;          /* Cartesian: slot k is fed by the neighbour's slot k ^ 1 */
    int rank, size;
    int nin, nout;
    int src[MAXDEG], dst[MAXDEG];  /* comm ranks, MPI_PROC_NULL allowed */
    int peer_slot[MAXDEG];         /* the sender's out-slot feeding my in-slot k */
} Topo;

static int value(int sender, int slot, int e) { return sender * 100000 + slot * 1000 + e % 1000; }

/* Counts: plain n; v forms vary with the sender and its slot. */
static int scount_of(int kind, int n, int sender, int slot)
{
    switch (kind) {
    case AGV: return n + sender % 3;
    case A2AV:
    case A2AW: return n + (sender + 2 * slot) % 4;
    default: return n;
    }
}

/* The value of element e of the block sender sends on its out-slot. */
static int sent_value(int kind, int sender, int slot, int e)
{
    return value(sender, kind == AG || kind == AGV ? 0 : slot, e);
}

/* Gathers every rank's out-list and pairs my in-slots with the senders'
 * out-slots: the i-th edge from A to me is A's i-th edge to me. */
static void pair_by_order(Topo* t)
{
    int* all = malloc(sizeof(int) * (size_t)t->size * (MAXDEG + 1));
    int mine[MAXDEG + 1];
    int k;
    mine[0] = t->nout;
    for (k = 0; k < t->nout; ++k) {
        mine[k + 1] = t->dst[k];
    }
    MT_OK(MPI_Allgather(mine, MAXDEG + 1, MPI_INT, all, MAXDEG + 1, MPI_INT, t->comm));
    for (k = 0; k < t->nin; ++k) {
        int s = t->src[k], seen = 0, j, occ = 0, found = -1;
        const int* out;
        for (j = 0; j < k; ++j) {
            occ += t->src[j] == s;
        }
        out = all + (size_t)s * (MAXDEG + 1);
        for (j = 0; j < out[0]; ++j) {
            if (out[j + 1] == t->rank && seen++ == occ) {
                found = j;
                break;
            }
        }
        MT_CHECK(found >= 0, "%s: in-slot %d from %d has no matching edge at the sender", t->name, k,
                 s);
        t->peer_slot[k] = found;
    }
    free(all);
}

/* ---------------------------------------------------------------- topologies */

static void cart_neighbors(Topo* t, int ndims, const int* dims, const int* periods)
{
    int coords[8], d, r = t->rank;
    for (d = ndims - 1; d >= 0; --d) {
        coords[d] = r % dims[d];
        r /= dims[d];
    }
    t->nin = t->nout = 2 * ndims;
    for (d = 0; d < ndims; ++d) {
        int dir;
        for (dir = 0; dir < 2; ++dir) {
            int c[8], x, rank = 0, dd;
            memcpy(c, coords, sizeof c);
            x = coords[d] + (dir == 0 ? -1 : 1);
            if (x < 0 || x >= dims[d]) {
                if (!periods[d]) {
                    t->src[2 * d + dir] = t->dst[2 * d + dir] = MPI_PROC_NULL;
                    continue;
                }
                x = (x + dims[d]) % dims[d];
            }
            c[d] = x;
            for (dd = 0; dd < ndims; ++dd) {
                rank = rank * dims[dd] + c[dd];
            }
            t->src[2 * d + dir] = t->dst[2 * d + dir] = rank;
        }
    }
    for (d = 0; d < t->nin; ++d) {
        t->peer_slot[d] = d ^ 1;
    }
}

/* Returns 0 when this rank is not in the new communicator. */
static int make_cart(Topo* t, const char* name, int ndims, const int* periods, int fixed_dims)
{
    int dims[8] = {0, 0, 0, 0, 0, 0, 0, 0}, d;
    int cdims[8], cper[8], coords[8];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->cart = 1;
    if (fixed_dims) {
        dims[0] = mt_size; /* the others 1 */
        for (d = 1; d < ndims; ++d) {
            dims[d] = 1;
        }
    } else {
        MT_OK(MPI_Dims_create(mt_size, ndims, dims));
    }
    MT_OK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &t->comm));
    if (t->comm == MPI_COMM_NULL) {
        return 0;
    }
    MT_OK(MPI_Comm_rank(t->comm, &t->rank));
    MT_OK(MPI_Comm_size(t->comm, &t->size));
    MT_OK(MPI_Cart_get(t->comm, ndims, cdims, cper, coords));
    cart_neighbors(t, ndims, dims, periods);
    return 1;
}

/* Each rank r: r+1, r-1 (a repeated edge when they coincide), r itself, and
 * r + size/2 when size >= 4 (symmetric). */
static int make_graph(Topo* t)
{
    int p = mt_size, r, k, nedges = 0;
    int* index = malloc(sizeof(int) * (size_t)p);
    int* edges = malloc(sizeof(int) * (size_t)p * 4);
    int deg = p >= 4 && p % 2 == 0 ? 4 : 3;
    int nb[MAXDEG];
    memset(t, 0, sizeof *t);
    t->name = "graph";
    for (r = 0; r < p; ++r) {
        edges[nedges++] = (r + 1) % p;
        edges[nedges++] = (r + p - 1) % p;
        edges[nedges++] = r;
        if (deg == 4) {
            edges[nedges++] = (r + p / 2) % p;
        }
        index[r] = nedges;
    }
    MT_OK(MPI_Graph_create(MPI_COMM_WORLD, p, index, edges, 0, &t->comm));
    MT_OK(MPI_Comm_rank(t->comm, &t->rank));
    MT_OK(MPI_Comm_size(t->comm, &t->size));
    t->nin = t->nout = deg;
    for (k = 0; k < deg; ++k) {
        t->src[k] = t->dst[k] = edges[t->rank * deg + k];
    }
    {
        int n = -1;
        MT_OK(MPI_Graph_neighbors_count(t->comm, t->rank, &n));
        MT_CHECK(n == deg, "graph: %d neighbours, expected %d", n, deg);
        MT_OK(MPI_Graph_neighbors(t->comm, t->rank, MAXDEG, nb));
        for (k = 0; k < deg && k < n; ++k) {
            MT_CHECK(nb[k] == t->src[k], "graph: neighbour %d is %d, expected %d", k, nb[k],
                     t->src[k]);
        }
    }
    free(index);
    free(edges);
    pair_by_order(t);
    return 1;
}

/* Directed: r sends to r+1, r+3 and itself; the in-list is given scrambled. */
static int make_dist_adjacent(Topo* t)
{
    int p = mt_size, r = mt_rank;
    int src[3], dst[3], in = 0, out = 0, w = 0, k;
    int gs[MAXDEG], gd[MAXDEG];
    memset(t, 0, sizeof *t);
    t->name = "dist_graph_adjacent";
    dst[0] = (r + 1) % p;
    dst[1] = r;
    dst[2] = (r + 3) % p;
    src[0] = (r + p - 3 % p) % p;
    src[1] = (r + p - 1) % p;
    src[2] = r;
    MT_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, src, MPI_UNWEIGHTED, 3, dst,
                                         MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &t->comm));
    MT_OK(MPI_Comm_rank(t->comm, &t->rank));
    MT_OK(MPI_Comm_size(t->comm, &t->size));
    MT_OK(MPI_Dist_graph_neighbors_count(t->comm, &in, &out, &w));
    MT_CHECK(in == 3 && out == 3, "adjacent: degrees %d %d", in, out);
    MT_OK(MPI_Dist_graph_neighbors(t->comm, MAXDEG, gs, MPI_UNWEIGHTED, MAXDEG, gd,
                                   MPI_UNWEIGHTED));
    for (k = 0; k < 3; ++k) {
        MT_CHECK(gs[k] == src[k] && gd[k] == dst[k], "adjacent: neighbour %d is %d/%d", k, gs[k],
                 gd[k]);
    }
    t->nin = t->nout = 3;
    memcpy(t->src, src, sizeof src);
    memcpy(t->dst, dst, sizeof dst);
    pair_by_order(t);
    return 1;
}

/* Dist_graph_create: every rank names the edges r -> r+1 (twice) and
 * r -> r+2; rank 0 also names (p-1) -> 0. The order is the library's:
 * taken from Dist_graph_neighbors, checked as a multiset. */
static int make_dist(Topo* t)
{
    int p = mt_size, r = mt_rank;
    int srcs[2], degs[2], dsts[4], n = 1, in, out, w, k;
    int want_in[MAXDEG], nwant_in = 0, want_out[MAXDEG], nwant_out = 0;
    memset(t, 0, sizeof *t);
    t->name = "dist_graph";
    srcs[0] = r;
    degs[0] = 3;
    dsts[0] = (r + 1) % p;
    dsts[1] = (r + 2) % p;
    dsts[2] = (r + 1) % p;
    if (r == 0) {
        srcs[1] = p - 1;
        degs[1] = 1;
        dsts[3] = 0;
        n = 2;
    }
    MT_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, n, srcs, degs, dsts, MPI_UNWEIGHTED,
                                MPI_INFO_NULL, 0, &t->comm));
    MT_OK(MPI_Comm_rank(t->comm, &t->rank));
    MT_OK(MPI_Comm_size(t->comm, &t->size));
    MT_OK(MPI_Dist_graph_neighbors_count(t->comm, &in, &out, &w));
    MT_OK(MPI_Dist_graph_neighbors(t->comm, MAXDEG, t->src, MPI_UNWEIGHTED, MAXDEG, t->dst,
                                   MPI_UNWEIGHTED));
    t->nin = in;
    t->nout = out;
    /* the multisets this rank must see */
    want_out[nwant_out++] = (r + 1) % p;
    want_out[nwant_out++] = (r + 2) % p;
    want_out[nwant_out++] = (r + 1) % p;
    if (r == p - 1) {
        want_out[nwant_out++] = 0;
    }
    want_in[nwant_in++] = (r + p - 1) % p;
    want_in[nwant_in++] = (r + p - 2 % p) % p;
    want_in[nwant_in++] = (r + p - 1) % p;
    if (r == 0) {
        want_in[nwant_in++] = p - 1;
    }
    MT_CHECK(in == nwant_in && out == nwant_out, "dist_graph: degrees %d %d, expected %d %d", in,
             out, nwant_in, nwant_out);
    for (k = 0; k < p; ++k) {
        int a = 0, b = 0, j;
        for (j = 0; j < nwant_in; ++j) {
            a += want_in[j] == k;
        }
        for (j = 0; j < in; ++j) {
            b += t->src[j] == k;
        }
        MT_CHECK(a == b, "dist_graph: %d in-edges from %d, expected %d", b, k, a);
        a = b = 0;
        for (j = 0; j < nwant_out; ++j) {
            a += want_out[j] == k;
        }
        for (j = 0; j < out; ++j) {
            b += t->dst[j] == k;
        }
        MT_CHECK(a == b, "dist_graph: %d out-edges to %d, expected %d", b, k, a);
    }
    pair_by_order(t);
    return 1;
}

/* ---------------------------------------------------------------- one call */

/* Buffers and arguments of one call of `kind` with base count n. */
typedef struct {
    int kind, n;
    int *sbuf, *rbuf;
    int scount, rcount;
    int scounts[MAXDEG], sdispls[MAXDEG], rcounts[MAXDEG], rdispls[MAXDEG];
    MPI_Aint sdb[MAXDEG], rdb[MAXDEG];
    MPI_Datatype stypes[MAXDEG], rtypes[MAXDEG];
    size_t rlen;
} Call;

static MPI_Datatype g_strided; /* one int, extent two ints */

static void setup(Call* c, const Topo* t, int kind, int n)
{
    size_t slen = 0;
    int k, e;
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->n = n;
    /* send side */
    if (kind == AG || kind == AGV) {
        c->scount = scount_of(kind, n, t->rank, 0);
        slen = (size_t)c->scount;
    } else if (kind == A2A) {
        c->scount = n;
        slen = (size_t)n * (size_t)t->nout;
    } else {
        for (k = 0; k < t->nout; ++k) {
            c->scounts[k] = scount_of(kind, n, t->rank, k);
            c->sdispls[k] = (int)slen + 1; /* a gap before every block */
            /* alltoallw: odd slots strided (two ints per element) */
            slen += (size_t)c->scounts[k] * (kind == A2AW && k % 2 ? 2 : 1) + 2;
        }
    }
    c->sbuf = malloc(sizeof(int) * (slen + 1));
    for (e = 0; e < (int)slen; ++e) {
        c->sbuf[e] = -1;
    }
    if (kind == AG || kind == AGV) {
        for (e = 0; e < c->scount; ++e) {
            c->sbuf[e] = sent_value(kind, t->rank, 0, e);
        }
    } else if (kind == A2A) {
        for (k = 0; k < t->nout; ++k) {
            for (e = 0; e < n; ++e) {
                c->sbuf[k * n + e] = sent_value(kind, t->rank, k, e);
            }
        }
    } else {
        for (k = 0; k < t->nout; ++k) {
            int stride = kind == A2AW && k % 2 ? 2 : 1;
            int base = c->sdispls[k];
            if (kind == A2AW) {
                /* byte displacements; odd slots strided */
                c->sdb[k] = (MPI_Aint)base * (MPI_Aint)sizeof(int);
                c->stypes[k] = k % 2 ? g_strided : MPI_INT;
            }
            for (e = 0; e < c->scounts[k]; ++e) {
                c->sbuf[base + e * stride] = sent_value(kind, t->rank, k, e);
            }
        }
    }
    /* receive side */
    if (kind == AG || kind == A2A) {
        c->rcount = n;
        c->rlen = (size_t)n * (size_t)t->nin;
    } else {
        size_t off = 0;
        for (k = 0; k < t->nin; ++k) {
            int s = t->src[k];
            int stride = kind == A2AW && k % 2 ? 2 : 1;
            c->rcounts[k] = s == MPI_PROC_NULL ? n : scount_of(kind, n, s, t->peer_slot[k]);
            c->rdispls[k] = (int)off + 1; /* a gap before every block */
            c->rdb[k] = (MPI_Aint)(off + 1) * (MPI_Aint)sizeof(int);
            c->rtypes[k] = stride == 2 ? g_strided : MPI_INT;
            off += 1 + (size_t)c->rcounts[k] * (size_t)stride;
        }
        c->rlen = off + 1;
    }
    c->rbuf = malloc(sizeof(int) * (c->rlen + 1));
    for (e = 0; e < (int)c->rlen + 1; ++e) {
        c->rbuf[e] = SENTINEL;
    }
}

static int start(Call* c, const Topo* t, MPI_Request* req)
{
    MPI_Comm comm = t->comm;
    switch (c->kind) {
    case AG:
        return req ? MPI_Ineighbor_allgather(c->sbuf, c->scount, MPI_INT, c->rbuf, c->rcount,
                                             MPI_INT, comm, req)
                   : MPI_Neighbor_allgather(c->sbuf, c->scount, MPI_INT, c->rbuf, c->rcount,
                                            MPI_INT, comm);
    case AGV:
        return req ? MPI_Ineighbor_allgatherv(c->sbuf, c->scount, MPI_INT, c->rbuf, c->rcounts,
                                              c->rdispls, MPI_INT, comm, req)
                   : MPI_Neighbor_allgatherv(c->sbuf, c->scount, MPI_INT, c->rbuf, c->rcounts,
                                             c->rdispls, MPI_INT, comm);
    case A2A:
        return req ? MPI_Ineighbor_alltoall(c->sbuf, c->n, MPI_INT, c->rbuf, c->rcount, MPI_INT,
                                            comm, req)
                   : MPI_Neighbor_alltoall(c->sbuf, c->n, MPI_INT, c->rbuf, c->rcount, MPI_INT,
                                           comm);
    case A2AV:
        return req ? MPI_Ineighbor_alltoallv(c->sbuf, c->scounts, c->sdispls, MPI_INT, c->rbuf,
                                             c->rcounts, c->rdispls, MPI_INT, comm, req)
                   : MPI_Neighbor_alltoallv(c->sbuf, c->scounts, c->sdispls, MPI_INT, c->rbuf,
                                            c->rcounts, c->rdispls, MPI_INT, comm);
    default:
        return req ? MPI_Ineighbor_alltoallw(c->sbuf, c->scounts, c->sdb, c->stypes, c->rbuf,
                                             c->rcounts, c->rdb, c->rtypes, comm, req)
                   : MPI_Neighbor_alltoallw(c->sbuf, c->scounts, c->sdb, c->stypes, c->rbuf,
                                            c->rcounts, c->rdb, c->rtypes, comm);
    }
}

/* Checks the receive buffer against the topology; frees the buffers. */
static void verify(Call* c, const Topo* t, const char* how)
{
    int* expect = malloc(sizeof(int) * (c->rlen + 1));
    size_t i;
    int k, e, bad = 0;
    for (i = 0; i < c->rlen + 1; ++i) {
        expect[i] = SENTINEL;
    }
    for (k = 0; k < t->nin; ++k) {
        int s = t->src[k];
        int stride = c->kind == A2AW && k % 2 ? 2 : 1;
        int count = c->kind == AG || c->kind == A2A ? c->n : c->rcounts[k];
        int base = c->kind == AG || c->kind == A2A ? k * c->n : c->rdispls[k];
        if (s == MPI_PROC_NULL) {
            continue; /* untouched */
        }
        for (e = 0; e < count; ++e) {
            expect[base + e * stride] = sent_value(c->kind, s, t->peer_slot[k], e);
        }
    }
    for (i = 0; i < c->rlen + 1 && bad < 3; ++i) {
        if (c->rbuf[i] != expect[i]) {
            MT_CHECK(0, "%s %s (%s, n=%d): element %zu is %d, expected %d", t->name,
                     kind_name[c->kind], how, c->n, i, c->rbuf[i], expect[i]);
            ++bad;
        }
    }
    free(expect);
    free(c->sbuf);
    free(c->rbuf);
}

static void run_all(const Topo* t)
{
    static const int counts[] = {1, 3, 0, 2000};
    int kind, ci;
    for (ci = 0; ci < (int)(sizeof counts / sizeof counts[0]); ++ci) {
        for (kind = 0; kind < NKINDS; ++kind) {
            Call c;
            MPI_Request req;
            setup(&c, t, kind, counts[ci]);
            MT_OK(start(&c, t, NULL));
            verify(&c, t, "blocking");
            setup(&c, t, kind, counts[ci]);
            MT_OK(start(&c, t, &req));
            MT_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            verify(&c, t, "nonblocking");
        }
    }
    /* all five in flight at once, completed in reverse order */
    {
        Call c[NKINDS];
        MPI_Request req[NKINDS];
        for (kind = 0; kind < NKINDS; ++kind) {
            setup(&c[kind], t, kind, 5);
            MT_OK(start(&c[kind], t, &req[kind]));
        }
        for (kind = NKINDS - 1; kind >= 0; --kind) {
            MT_OK(MPI_Wait(&req[kind], MPI_STATUS_IGNORE));
        }
        for (kind = 0; kind < NKINDS; ++kind) {
            verify(&c[kind], t, "in flight");
        }
    }
}

static void errors(void)
{
    Topo t;
    int sb[4] = {0, 0, 0, 0}, rb[4];
    MPI_Request req;
    MPI_Comm plain;
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &plain));
    MT_ERR(MPI_ERR_TOPOLOGY, MPI_Neighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, plain));
    MT_ERR(MPI_ERR_TOPOLOGY,
           MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &req));
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MT_ERR(MPI_ERR_TOPOLOGY, MPI_Neighbor_alltoallw(sb, NULL, NULL, NULL, rb, NULL, NULL, NULL,
                                                    MPI_COMM_SELF));
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    MT_ERR(MPI_ERR_COMM, MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_NULL));
    if (mt_size >= 2) {
        MPI_Comm half, inter;
        int color = mt_rank % 2;
        MT_OK(MPI_Comm_split(MPI_COMM_WORLD, color, mt_rank, &half));
        MT_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 9, &inter));
        MT_OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
        MT_ERR(MPI_ERR_TOPOLOGY, MPI_Neighbor_alltoallv(sb, sb, sb, MPI_INT, rb, sb, sb, MPI_INT,
                                                        inter));
        MT_OK(MPI_Comm_free(&inter));
        MT_OK(MPI_Comm_free(&half));
    }
    MT_OK(MPI_Comm_free(&plain));

    if (make_cart(&t, "cart errors", 1, (int[]){1}, 0)) {
        MT_OK(MPI_Comm_set_errhandler(t.comm, MPI_ERRORS_RETURN));
        MT_ERR(MPI_ERR_ARG, MPI_Neighbor_allgather(MPI_IN_PLACE, 1, MPI_INT, rb, 1, MPI_INT, t.comm));
        MT_ERR(MPI_ERR_ARG, MPI_Neighbor_alltoall(sb, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, t.comm));
        MT_ERR(MPI_ERR_COUNT, MPI_Neighbor_alltoall(sb, -1, MPI_INT, rb, 1, MPI_INT, t.comm));
        MT_ERR(MPI_ERR_TYPE,
               MPI_Neighbor_allgather(sb, 1, MPI_DATATYPE_NULL, rb, 1, MPI_INT, t.comm));
        MT_ERR(MPI_ERR_ARG, MPI_Neighbor_alltoallv(sb, NULL, sb, MPI_INT, rb, sb, sb, MPI_INT,
                                                   t.comm));
        MT_ERR(MPI_ERR_ARG, MPI_Neighbor_allgatherv(sb, 1, MPI_INT, rb, NULL, sb, MPI_INT, t.comm));
        {
            int cnt[2] = {1, 1};
            MPI_Aint d[2] = {0, 4};
            MPI_Datatype bad[2] = {MPI_INT, MPI_DATATYPE_NULL};
            MPI_Datatype ok[2] = {MPI_INT, MPI_INT};
            MT_ERR(MPI_ERR_TYPE, MPI_Neighbor_alltoallw(sb, cnt, d, bad, rb, cnt, d, ok, t.comm));
            MT_ERR(MPI_ERR_ARG, MPI_Neighbor_alltoallw(sb, cnt, d, ok, rb, cnt, d, NULL, t.comm));
        }
        MT_ERR(MPI_ERR_REQUEST,
               MPI_Ineighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, t.comm, NULL));
        /* the failed calls took no tag: a real call still matches everywhere */
        {
            int s = mt_rank, r[2] = {-1, -1};
            MT_OK(MPI_Neighbor_allgather(&s, 1, MPI_INT, r, 1, MPI_INT, t.comm));
            MT_CHECK(r[0] == (mt_rank + mt_size - 1) % mt_size && r[1] == (mt_rank + 1) % mt_size,
                     "after the errors: %d %d", r[0], r[1]);
        }
        MT_OK(MPI_Comm_free(&t.comm));
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char** argv)
{
    Topo t;
    int per0[1] = {0}, per1[1] = {1};
    int per2[2] = {1, 0}, per3[3] = {0, 1, 1}, per3b[3] = {1, 1, 0};
    mt_init(&argc, &argv);
    MT_OK(MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &g_strided));
    MT_OK(MPI_Type_commit(&g_strided));

    if (make_cart(&t, "cart 1-d periodic", 1, per1, 0)) {
        run_all(&t);
        {
            /* a duplicate shares the topology */
            Topo d = t;
            MT_OK(MPI_Comm_dup(t.comm, &d.comm));
            d.name = "cart 1-d periodic (dup)";
            run_all(&d);
            MT_OK(MPI_Comm_free(&d.comm));
        }
        MT_OK(MPI_Comm_free(&t.comm));
    }
    if (make_cart(&t, "cart 1-d", 1, per0, 0)) {
        run_all(&t);
        MT_OK(MPI_Comm_free(&t.comm));
    }
    if (make_cart(&t, "cart 2-d (periodic, not)", 2, per2, 0)) {
        run_all(&t);
        MT_OK(MPI_Comm_free(&t.comm));
    }
    if (make_cart(&t, "cart 3-d (not, periodic, periodic)", 3, per3, 0)) {
        run_all(&t);
        MT_OK(MPI_Comm_free(&t.comm));
    }
    /* size x 1 x 1: periodic dimensions of size 1 (the rank is its own
     * - and + neighbour) */
    if (make_cart(&t, "cart p x 1 x 1", 3, per3b, 1)) {
        run_all(&t);
        MT_OK(MPI_Comm_free(&t.comm));
    }
    make_graph(&t);
    run_all(&t);
    MT_OK(MPI_Comm_free(&t.comm));
    make_dist_adjacent(&t);
    run_all(&t);
    MT_OK(MPI_Comm_free(&t.comm));
    make_dist(&t);
    run_all(&t);
    MT_OK(MPI_Comm_free(&t.comm));

    errors();
    MT_OK(MPI_Type_free(&g_strided));
    return mt_finalize();
}
