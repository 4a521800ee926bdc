/*
 * Topologies: Dims_create factorisations (free and fixed entries, primes,
 * large counts, impossible ones), Cartesian communicators (periodic and
 * not, shifts by 0, +-1 and more than a dimension, MPI_PROC_NULL at
 * edges, data actually exchanged along every shift, coords <-> rank,
 * Cart_sub, zero dimensions, fewer nodes than processes, Cart_map), graph
 * communicators (a ring with its adjacency, self loops and repeated edges
 * at small sizes, Graph_map, nnodes 0), distributed graphs (adjacent and
 * general, weighted and not, edges named by a third process), Topo_test,
 * Comm_dup keeping the topology, and the error classes. Any size.
 */
#include "mpitest.h"

static void dims_case(int n, int nd, const int* in, const int* want)
{
    int d[8], i, ok = 1;
    memcpy(d, in, sizeof(int) * (size_t)nd);
    MT_OK(MPI_Dims_create(n, nd, d));
    for (i = 0; i < nd; ++i) {
        ok = ok && d[i] == want[i];
    }
    if (!ok) {
        char got[128] = "", exp[128] = "";
        for (i = 0; i < nd; ++i) {
            snprintf(got + strlen(got), sizeof got - strlen(got), " %d", d[i]);
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), " %d", want[i]);
        }
        mt_fail(__FILE__, __LINE__, "Dims_create(%d, %d):%s, expected%s", n, nd, got, exp);
    }
}

static void test_dims(void)
{
    static const int z[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int d[4];
    { int w[] = {3, 2}; dims_case(6, 2, z, w); }
    { int w[] = {4, 3}; dims_case(12, 2, z, w); }
    { int w[] = {4, 2, 2}; dims_case(16, 3, z, w); }
    { int w[] = {9, 8}; dims_case(72, 2, z, w); }
    { int w[] = {7, 1, 1}; dims_case(7, 3, z, w); }
    { int w[] = {1, 1, 1}; dims_case(1, 3, z, w); }
    { int w[] = {5, 3, 2}; dims_case(30, 3, z, w); }
    { int w[] = {4, 4, 2, 2}; dims_case(64, 4, z, w); }
    { int w[] = {1024, 1024}; dims_case(1 << 20, 2, z, w); }
    { int w[] = {2147483647, 1}; dims_case(2147483647, 2, z, w); }
    { int w[] = {16}; dims_case(16, 1, z, w); }
    { int in[] = {0, 3, 0}; int w[] = {4, 3, 2}; dims_case(24, 3, in, w); }
    { int in[] = {0, 0, 4}; int w[] = {3, 1, 4}; dims_case(12, 3, in, w); }
    { int in[] = {2, 2, 2}; int w[] = {2, 2, 2}; dims_case(8, 3, in, w); }
    { int in[] = {5, 0}; int w[] = {5, 1}; dims_case(5, 2, in, w); }
    MT_OK(MPI_Dims_create(1, 0, NULL));
    d[0] = 3;
    d[1] = 0;
    MT_ERR(MPI_ERR_DIMS, MPI_Dims_create(10, 2, d)); /* 3 does not divide 10 */
    d[0] = 2;
    d[1] = 2;
    d[2] = 3;
    MT_ERR(MPI_ERR_DIMS, MPI_Dims_create(8, 3, d));
    d[0] = -1;
    MT_ERR(MPI_ERR_DIMS, MPI_Dims_create(8, 1, d));
    MT_ERR(MPI_ERR_DIMS, MPI_Dims_create(8, -1, d));
    MT_ERR(MPI_ERR_ARG, MPI_Dims_create(-4, 1, d));
    /* every count up to 200 in 1..4 dimensions: non-increasing, product right */
    {
        int n, nd, i;
        for (n = 1; n <= 200; ++n) {
            for (nd = 1; nd <= 4; ++nd) {
                int prod = 1;
                for (i = 0; i < nd; ++i) {
                    d[i] = 0;
                }
                MT_OK(MPI_Dims_create(n, nd, d));
                for (i = 0; i < nd; ++i) {
                    prod *= d[i];
                    MT_CHECK(i == 0 || d[i] <= d[i - 1], "Dims_create(%d, %d) not ordered", n, nd);
                }
                MT_CHECK(prod == n, "Dims_create(%d, %d): product %d", n, nd, prod);
            }
        }
    }
}

/* Sends my rank to dest and receives from source along a shift; checks the
 * sender is `source` (or nothing came from MPI_PROC_NULL). */
static void shift_exchange(MPI_Comm c, int source, int dest, const char* what)
{
    int me, got = -7;
    MPI_Status st;
    MT_OK(MPI_Comm_rank(c, &me));
    MT_OK(MPI_Sendrecv(&me, 1, MPI_INT, dest, 4, &got, 1, MPI_INT, source, 4, c, &st));
    if (source == MPI_PROC_NULL) {
        MT_CHECK(got == -7 && st.MPI_SOURCE == MPI_PROC_NULL, "%s: data from MPI_PROC_NULL", what);
    } else {
        MT_CHECK(got == source, "%s: got %d, expected it from %d", what, got, source);
    }
}

static void test_cart(void)
{
    int p = mt_size, r = mt_rank;
    int dims[3] = {0, 0, 0}, periods[3] = {1, 0, 1}, coords[3], d2[3], p2[3], c2[3];
    int nd, rank, src, dst, i, status, size;
    MPI_Comm cart, sub, dup, c;

    MT_OK(MPI_Dims_create(p, 2, dims));
    MT_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart));
    MT_OK(MPI_Topo_test(cart, &status));
    MT_CHECK(status == MPI_CART, "Topo_test on a cart: %d", status);
    MT_OK(MPI_Cartdim_get(cart, &nd));
    MT_CHECK(nd == 2, "Cartdim_get: %d", nd);
    MT_OK(MPI_Comm_rank(cart, &rank));
    MT_CHECK(rank == r, "cart rank %d (no reordering)", rank);
    MT_OK(MPI_Cart_coords(cart, rank, 2, coords));
    MT_CHECK(coords[0] == r / dims[1] && coords[1] == r % dims[1], "coords (%d, %d) of %d",
             coords[0], coords[1], r);
    MT_OK(MPI_Cart_get(cart, 3, d2, p2, c2));
    MT_CHECK(d2[0] == dims[0] && d2[1] == dims[1] && p2[0] == 1 && p2[1] == 0 &&
                 c2[0] == coords[0] && c2[1] == coords[1], "Cart_get");
    for (i = 0; i < p; ++i) {
        int cc[2], back;
        MT_OK(MPI_Cart_coords(cart, i, 2, cc));
        MT_OK(MPI_Cart_rank(cart, cc, &back));
        MT_CHECK(back == i, "coords/rank round trip of %d gave %d", i, back);
    }
    /* periodic dimension 0 wraps; dimension 1 does not */
    {
        int cc[2];
        cc[0] = coords[0] + dims[0];
        cc[1] = coords[1];
        MT_OK(MPI_Cart_rank(cart, cc, &rank));
        MT_CHECK(rank == r, "wrapped coordinates gave rank %d", rank);
        cc[0] = -1;
        MT_OK(MPI_Cart_rank(cart, cc, &rank));
        MT_CHECK(rank == (dims[0] - 1) * dims[1] + coords[1], "coordinate -1 gave rank %d", rank);
        cc[0] = 0;
        cc[1] = dims[1];
        MT_ERR(MPI_ERR_ARG, MPI_Cart_rank(cart, cc, &rank));
    }
    /* shifts */
    MT_OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    MT_CHECK(dst == ((coords[0] + 1) % dims[0]) * dims[1] + coords[1], "shift +1 dest %d", dst);
    MT_CHECK(src == ((coords[0] - 1 + dims[0]) % dims[0]) * dims[1] + coords[1],
             "shift +1 source %d", src);
    shift_exchange(cart, src, dst, "periodic shift +1");
    MT_OK(MPI_Cart_shift(cart, 0, -1, &src, &dst));
    shift_exchange(cart, src, dst, "periodic shift -1");
    {
        int s2, d3;
        MT_OK(MPI_Cart_shift(cart, 0, dims[0] + 1, &s2, &d3));
        MT_OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
        MT_CHECK(s2 == src && d3 == dst, "shift by dims + 1 differs from shift by 1");
    }
    MT_OK(MPI_Cart_shift(cart, 0, 0, &src, &dst));
    MT_CHECK(src == r && dst == r, "shift by 0: %d %d", src, dst);
    MT_OK(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    MT_CHECK(dst == (coords[1] + 1 < dims[1] ? r + 1 : MPI_PROC_NULL), "edge shift dest %d", dst);
    MT_CHECK(src == (coords[1] > 0 ? r - 1 : MPI_PROC_NULL), "edge shift source %d", src);
    shift_exchange(cart, src, dst, "non-periodic shift +1");
    MT_OK(MPI_Cart_shift(cart, 1, dims[1], &src, &dst));
    MT_CHECK(src == MPI_PROC_NULL && dst == MPI_PROC_NULL, "shift off the edge: %d %d", src, dst);
    MT_ERR(MPI_ERR_ARG, MPI_Cart_shift(cart, 2, 1, &src, &dst));
    MT_ERR(MPI_ERR_ARG, MPI_Cart_shift(cart, -1, 1, &src, &dst));
    MT_ERR(MPI_ERR_RANK, MPI_Cart_coords(cart, p, 2, coords));
    MT_ERR(MPI_ERR_ARG, MPI_Cart_coords(cart, 0, 1, coords));

    /* Cart_sub: rows (keep dimension 1), columns, nothing */
    {
        int keep[2] = {0, 1};
        MT_OK(MPI_Cart_sub(cart, keep, &sub));
        MT_OK(MPI_Comm_size(sub, &size));
        MT_OK(MPI_Comm_rank(sub, &rank));
        MT_CHECK(size == dims[1] && rank == coords[1], "row: size %d rank %d", size, rank);
        MT_OK(MPI_Cartdim_get(sub, &nd));
        MT_CHECK(nd == 1, "row dimensions %d", nd);
        MT_OK(MPI_Cart_shift(sub, 0, 1, &src, &dst));
        shift_exchange(sub, src, dst, "row shift");
        MT_OK(MPI_Comm_free(&sub));
        keep[0] = 1;
        keep[1] = 0;
        MT_OK(MPI_Cart_sub(cart, keep, &sub));
        MT_OK(MPI_Comm_size(sub, &size));
        MT_OK(MPI_Comm_rank(sub, &rank));
        MT_CHECK(size == dims[0] && rank == coords[0], "column: size %d rank %d", size, rank);
        MT_OK(MPI_Cart_get(sub, 1, d2, p2, c2));
        MT_CHECK(d2[0] == dims[0] && p2[0] == 1 && c2[0] == coords[0], "column Cart_get");
        MT_OK(MPI_Cart_shift(sub, 0, 1, &src, &dst));
        shift_exchange(sub, src, dst, "column shift (periodic)");
        MT_OK(MPI_Comm_free(&sub));
        /* keeping nothing: a zero-dimensional grid of rank 0 alone */
        keep[0] = 0;
        keep[1] = 0;
        MT_OK(MPI_Cart_sub(cart, keep, &sub));
        if (r == 0) {
            MT_OK(MPI_Comm_size(sub, &size));
            MT_OK(MPI_Cartdim_get(sub, &nd));
            MT_OK(MPI_Comm_compare(sub, MPI_COMM_SELF, &status));
            MT_CHECK(size == 1 && nd == 0 && status == MPI_CONGRUENT,
                     "Cart_sub keeping nothing: size %d ndims %d compare %d", size, nd, status);
            MT_OK(MPI_Comm_free(&sub));
        } else {
            MT_CHECK(sub == MPI_COMM_NULL, "Cart_sub keeping nothing gave rank %d a communicator",
                     r);
        }
    }
    /* a dup keeps the topology */
    MT_OK(MPI_Comm_dup(cart, &dup));
    MT_OK(MPI_Topo_test(dup, &status));
    MT_CHECK(status == MPI_CART, "the dup of a cart has topology %d", status);
    MT_OK(MPI_Cart_shift(dup, 0, 1, &src, &dst));
    shift_exchange(dup, src, dst, "shift on the dup");
    MT_OK(MPI_Comm_free(&dup));
    MT_OK(MPI_Comm_free(&cart));

    /* 3-d, all periodic: exchange along every dimension both ways */
    dims[0] = dims[1] = dims[2] = 0;
    periods[0] = periods[1] = periods[2] = 1;
    MT_OK(MPI_Dims_create(p, 3, dims));
    MT_OK(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart));
    for (i = 0; i < 3; ++i) {
        MT_OK(MPI_Cart_shift(cart, i, 1, &src, &dst));
        shift_exchange(cart, src, dst, "3-d shift +1");
        MT_OK(MPI_Cart_shift(cart, i, -2, &src, &dst));
        shift_exchange(cart, src, dst, "3-d shift -2");
    }
    MT_OK(MPI_Comm_free(&cart));

    /* fewer nodes than processes: the last one is left out */
    if (p > 1) {
        int one = p - 1, per = 0;
        MT_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &one, &per, 0, &c));
        if (r == p - 1) {
            MT_CHECK(c == MPI_COMM_NULL, "the process left out got a communicator");
        } else {
            MT_OK(MPI_Cart_shift(c, 0, 1, &src, &dst));
            shift_exchange(c, src, dst, "1-d cart of p - 1");
            MT_OK(MPI_Comm_free(&c));
        }
        MT_OK(MPI_Cart_map(MPI_COMM_WORLD, 1, &one, &per, &rank));
        MT_CHECK(rank == (r == p - 1 ? MPI_UNDEFINED : r), "Cart_map gave %d", rank);
    }
    /* zero dimensions: one process */
    MT_OK(MPI_Cart_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &c));
    if (r == 0) {
        MT_CHECK(c != MPI_COMM_NULL, "0-d cart: rank 0 got MPI_COMM_NULL");
        if (c != MPI_COMM_NULL) {
            MT_OK(MPI_Comm_size(c, &size));
            MT_OK(MPI_Cartdim_get(c, &nd));
            MT_CHECK(size == 1 && nd == 0, "0-d cart: size %d ndims %d", size, nd);
            MT_OK(MPI_Comm_free(&c));
        }
    } else {
        MT_CHECK(c == MPI_COMM_NULL, "0-d cart: rank %d got a communicator", r);
    }

    /* errors */
    dims[0] = p + 1;
    periods[0] = 0;
    MT_ERR(MPI_ERR_ARG, MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
    MT_ERR(MPI_ERR_ARG, MPI_Cart_map(MPI_COMM_WORLD, 1, dims, periods, &rank));
    dims[0] = 0;
    MT_ERR(MPI_ERR_DIMS, MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
    MT_ERR(MPI_ERR_DIMS, MPI_Cart_create(MPI_COMM_WORLD, -1, dims, periods, 0, &c));
    MT_ERR(MPI_ERR_TOPOLOGY, MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst));
    MT_ERR(MPI_ERR_TOPOLOGY, MPI_Cartdim_get(MPI_COMM_WORLD, &nd));
    MT_ERR(MPI_ERR_COMM, MPI_Cart_create(MPI_COMM_NULL, 1, dims, periods, 0, &c));
    MT_OK(MPI_Topo_test(MPI_COMM_WORLD, &status));
    MT_CHECK(status == MPI_UNDEFINED, "Topo_test on the world: %d", status);
}

static void test_graph(void)
{
    int p = mt_size, r = mt_rank;
    int* index = (int*)malloc(sizeof(int) * (size_t)p);
    int* edges = (int*)malloc(sizeof(int) * 2 * (size_t)p);
    int i, status, nnodes, nedges, n, nb[4], rank;
    MPI_Comm g, c;

    /* a ring: node i is linked to i - 1 and i + 1 */
    for (i = 0; i < p; ++i) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + p - 1) % p;
        edges[2 * i + 1] = (i + 1) % p;
    }
    MT_OK(MPI_Graph_create(MPI_COMM_WORLD, p, index, edges, 0, &g));
    MT_OK(MPI_Topo_test(g, &status));
    MT_CHECK(status == MPI_GRAPH, "Topo_test on a graph: %d", status);
    MT_OK(MPI_Graphdims_get(g, &nnodes, &nedges));
    MT_CHECK(nnodes == p && nedges == 2 * p, "Graphdims_get: %d %d", nnodes, nedges);
    {
        int* gi = (int*)malloc(sizeof(int) * (size_t)p);
        int* ge = (int*)malloc(sizeof(int) * 2 * (size_t)p);
        MT_OK(MPI_Graph_get(g, p, 2 * p, gi, ge));
        for (i = 0; i < p; ++i) {
            MT_CHECK(gi[i] == index[i] && ge[2 * i] == edges[2 * i] &&
                         ge[2 * i + 1] == edges[2 * i + 1], "Graph_get entry %d", i);
        }
        free(gi);
        free(ge);
    }
    for (i = 0; i < p; ++i) {
        MT_OK(MPI_Graph_neighbors_count(g, i, &n));
        MT_CHECK(n == 2, "node %d has %d neighbours", i, n);
    }
    MT_OK(MPI_Graph_neighbors(g, r, 4, nb));
    MT_CHECK(nb[0] == (r + p - 1) % p && nb[1] == (r + 1) % p, "my neighbours %d %d", nb[0], nb[1]);
    /* talk to both neighbours */
    {
        int got[2] = {-1, -1};
        MPI_Request q[4];
        MT_OK(MPI_Irecv(&got[0], 1, MPI_INT, nb[0], 8, g, &q[0]));
        MT_OK(MPI_Irecv(&got[1], 1, MPI_INT, nb[1], 9, g, &q[1]));
        MT_OK(MPI_Isend(&r, 1, MPI_INT, nb[1], 8, g, &q[2]));
        MT_OK(MPI_Isend(&r, 1, MPI_INT, nb[0], 9, g, &q[3]));
        MT_OK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
        MT_CHECK(got[0] == nb[0] && got[1] == nb[1], "graph exchange: %d %d", got[0], got[1]);
    }
    MT_OK(MPI_Graph_map(MPI_COMM_WORLD, p, index, edges, &rank));
    MT_CHECK(rank == r, "Graph_map gave %d", rank);
    MT_ERR(MPI_ERR_RANK, MPI_Graph_neighbors_count(g, p, &n));
    MT_ERR(MPI_ERR_TOPOLOGY, MPI_Cart_get(g, 1, nb, nb, nb));
    MT_OK(MPI_Comm_free(&g));

    /* one node fewer than processes; no nodes */
    if (p > 1) {
        int idx1[1] = {1}, e1[1] = {0};
        MT_OK(MPI_Graph_create(MPI_COMM_WORLD, 1, idx1, e1, 0, &c)); /* a self loop */
        if (r == 0) {
            MT_OK(MPI_Graph_neighbors(c, 0, 4, nb));
            MT_CHECK(nb[0] == 0, "self loop neighbour %d", nb[0]);
            MT_OK(MPI_Comm_free(&c));
        } else {
            MT_CHECK(c == MPI_COMM_NULL, "rank %d got a one-node graph", r);
        }
    }
    MT_OK(MPI_Graph_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &c));
    MT_CHECK(c == MPI_COMM_NULL, "a graph of no nodes gave a communicator");

    /* errors */
    edges[0] = p;
    MT_ERR(MPI_ERR_ARG, MPI_Graph_create(MPI_COMM_WORLD, p, index, edges, 0, &c));
    edges[0] = (p - 1) % p;
    MT_ERR(MPI_ERR_ARG, MPI_Graph_create(MPI_COMM_WORLD, p + 1, index, edges, 0, &c));
    index[0] = -1;
    MT_ERR(MPI_ERR_ARG, MPI_Graph_create(MPI_COMM_WORLD, p, index, edges, 0, &c));
    free(index);
    free(edges);
}

static void test_dist_graph(void)
{
    int p = mt_size, r = mt_rank;
    int indeg, outdeg, weighted, status;
    int src[4], srcw[4], dst[4], dstw[4];
    MPI_Comm dg;

    /* adjacent: a ring, weighted */
    {
        int s = (r + p - 1) % p, d = (r + 1) % p, sw = 10 * s + r, dw = 10 * r + d;
        MT_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &s, &sw, 1, &d, &dw,
                                             MPI_INFO_NULL, 0, &dg));
        MT_OK(MPI_Topo_test(dg, &status));
        MT_CHECK(status == MPI_DIST_GRAPH, "Topo_test on a dist graph: %d", status);
        MT_OK(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        MT_CHECK(indeg == 1 && outdeg == 1 && weighted == 1, "adjacent counts %d %d %d", indeg,
                 outdeg, weighted);
        MT_OK(MPI_Dist_graph_neighbors(dg, 4, src, srcw, 4, dst, dstw));
        MT_CHECK(src[0] == s && srcw[0] == sw && dst[0] == d && dstw[0] == dw,
                 "adjacent neighbours");
        shift_exchange(dg, s, d, "dist graph ring");
        MT_OK(MPI_Comm_free(&dg));
    }
    /* adjacent, unweighted, no edges */
    MT_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_UNWEIGHTED, 0, NULL,
                                         MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
    MT_OK(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    MT_CHECK(indeg == 0 && outdeg == 0 && weighted == 0, "empty adjacent: %d %d %d", indeg, outdeg,
             weighted);
    MT_OK(MPI_Comm_free(&dg));

    /* general: every rank names its edges r -> r+1 (weight 100 r + 1) and
     * r -> r+2 (weight 100 r + 2) */
    {
        int degs[1] = {2}, me[1], dests[2], ws[2];
        me[0] = r;
        dests[0] = (r + 1) % p;
        dests[1] = (r + 2) % p;
        ws[0] = 100 * r + 1;
        ws[1] = 100 * r + 2;
        MT_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, me, degs, dests, ws, MPI_INFO_NULL, 0,
                                    &dg));
        MT_OK(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        MT_CHECK(indeg == 2 && outdeg == 2 && weighted == 1, "general counts %d %d %d", indeg,
                 outdeg, weighted);
        MT_OK(MPI_Dist_graph_neighbors(dg, 4, src, srcw, 4, dst, dstw));
        MT_CHECK(dst[0] == dests[0] && dst[1] == dests[1] && dstw[0] == ws[0] && dstw[1] == ws[1],
                 "general: out-edges %d(%d) %d(%d)", dst[0], dstw[0], dst[1], dstw[1]);
        {
            /* in-edges from r-1 (weight 100 (r-1) + 1) and r-2 (100 (r-2) + 2), as a set */
            int a = (r + p - 1) % p, b = (r + p - 2) % p, i, found_a = 0, found_b = 0;
            for (i = 0; i < 2; ++i) {
                found_a += src[i] == a && srcw[i] == 100 * a + 1;
                found_b += src[i] == b && srcw[i] == 100 * b + 2;
            }
            MT_CHECK(found_a >= 1 && found_b >= 1, "general: in-edges %d(%d) %d(%d)", src[0],
                     srcw[0], src[1], srcw[1]);
            /* grouped by the naming rank, in rank order */
            if (p >= 3) {
                MT_CHECK((src[0] < src[1]) == 1 || src[0] == src[1], "in-edges not in rank order");
            }
        }
        MT_OK(MPI_Comm_free(&dg));
    }
    /* general, unweighted, every edge named by rank 0 */
    {
        int* all = (int*)malloc(sizeof(int) * (size_t)p);
        int* ones = (int*)malloc(sizeof(int) * (size_t)p);
        int* next = (int*)malloc(sizeof(int) * (size_t)p);
        int i, n = r == 0 ? p : 0;
        for (i = 0; i < p; ++i) {
            all[i] = i;
            ones[i] = 1;
            next[i] = (i + 1) % p;
        }
        MT_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, n, all, ones, next, MPI_UNWEIGHTED,
                                    MPI_INFO_NULL, 0, &dg));
        MT_OK(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        MT_CHECK(indeg == 1 && outdeg == 1 && weighted == 0, "named by rank 0: %d %d %d", indeg,
                 outdeg, weighted);
        MT_OK(MPI_Dist_graph_neighbors(dg, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED));
        MT_CHECK(src[0] == (r + p - 1) % p && dst[0] == (r + 1) % p, "named by rank 0: %d %d",
                 src[0], dst[0]);
        shift_exchange(dg, src[0], dst[0], "dist graph named by rank 0");
        MT_OK(MPI_Comm_free(&dg));
        /* errors */
        ones[0] = -1;
        MT_ERR(MPI_ERR_ARG, MPI_Dist_graph_create(MPI_COMM_WORLD, 1, all, ones, next,
                                                  MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
        ones[0] = 1;
        next[0] = p;
        MT_ERR(MPI_ERR_RANK, MPI_Dist_graph_create(MPI_COMM_WORLD, 1, all, ones, next,
                                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
        MT_ERR(MPI_ERR_RANK, MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, next,
                                                            MPI_UNWEIGHTED, 0, NULL,
                                                            MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                                            &dg));
        free(all);
        free(ones);
        free(next);
    }
    MT_ERR(MPI_ERR_TOPOLOGY, MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &indeg, &outdeg,
                                                            &weighted));

    /* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY: distinct special addresses, not
     * NULL (MPI-3.0). MPI_WEIGHTS_EMPTY is for a process with no edges of a
     * weighted graph: the graph stays weighted. */
    MT_CHECK(MPI_UNWEIGHTED != NULL && MPI_WEIGHTS_EMPTY != NULL, "a weights sentinel is NULL");
    MT_CHECK((void*)MPI_UNWEIGHTED != (void*)MPI_WEIGHTS_EMPTY, "the weights sentinels are equal");
    {
        int* all = (int*)malloc(sizeof(int) * (size_t)p);
        int* ones = (int*)malloc(sizeof(int) * (size_t)p);
        int* next = (int*)malloc(sizeof(int) * (size_t)p);
        int* ws = (int*)malloc(sizeof(int) * (size_t)p);
        int i;
        for (i = 0; i < p; ++i) {
            all[i] = i;
            ones[i] = 1;
            next[i] = (i + 1) % p;
            ws[i] = 7 * i + 3;
        }
        /* rank 0 names every edge, weighted; the others pass no edges and
         * MPI_WEIGHTS_EMPTY */
        MT_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, r == 0 ? p : 0, all, ones, next,
                                    r == 0 ? ws : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
        MT_OK(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        MT_CHECK(indeg == 1 && outdeg == 1 && weighted == 1, "MPI_WEIGHTS_EMPTY: %d %d %d",
                 indeg, outdeg, weighted);
        MT_OK(MPI_Dist_graph_neighbors(dg, 1, src, srcw, 1, dst, dstw));
        MT_CHECK(src[0] == (r + p - 1) % p && srcw[0] == 7 * src[0] + 3 && dst[0] == (r + 1) % p &&
                     dstw[0] == 7 * r + 3,
                 "MPI_WEIGHTS_EMPTY: in %d(%d) out %d(%d)", src[0], srcw[0], dst[0], dstw[0]);
        MT_OK(MPI_Comm_free(&dg));
        /* adjacent with no edges, weighted by MPI_WEIGHTS_EMPTY */
        MT_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL,
                                             MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
        MT_OK(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        MT_CHECK(indeg == 0 && outdeg == 0 && weighted == 1, "empty, MPI_WEIGHTS_EMPTY: %d %d %d",
                 indeg, outdeg, weighted);
        MT_OK(MPI_Comm_free(&dg));
        /* MPI_WEIGHTS_EMPTY with edges is an error */
        MT_ERR(MPI_ERR_ARG, MPI_Dist_graph_create(MPI_COMM_WORLD, 1, all, ones, next,
                                                  MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
        free(all);
        free(ones);
        free(next);
        free(ws);
    }
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    test_dims();
    test_cart();
    test_graph();
    test_dist_graph();
    return mt_finalize();
}
