// Topology entry points (topo.h): Cartesian (Cart_*, Dims_create), graph
// (Graph_*), distributed graph (Dist_graph_*), Topo_test.
//
// Error classes: MPI_ERR_COMM (invalid communicator, or an
// intercommunicator), MPI_ERR_TOPOLOGY (a communicator without the needed
// topology), MPI_ERR_DIMS (negative ndims, dimensions <= 0, or a
// Dims_create that cannot be satisfied), MPI_ERR_ARG (more processes than
// the communicator has, NULL arrays, directions or coordinates out of
// range, a malformed graph, negative degrees), MPI_ERR_RANK (a rank
// outside the communicator).
#include "mpi/checks.h"
#include "mpi/comm.h"
#include "mpi/comm_coll.h"
#include "mpi/comm_make.h"
#include "mpi/entry.h"
#include "mpi/state.h"
#include "mpi/topo.h"

#include <memory>
#include <vector>

using namespace ulmpi::mpi;

// The weight sentinels of mpi.h: two distinct addresses no program owns.
namespace {
int unweighted_anchor;
int weights_empty_anchor;
} // namespace
int* const MPI_UNWEIGHTED = &unweighted_anchor;
int* const MPI_WEIGHTS_EMPTY = &weights_empty_anchor;

namespace {

int get_intra(MPI_Comm comm, const char* fn, Comm** out)
{
    require_init(fn);
    if (int e = check_comm(comm, fn, out)) {
        return e;
    }
    if ((*out)->inter()) {
        return raise(*out, MPI_ERR_COMM, fn, "%s is an intercommunicator: topologies need an "
                     "intracommunicator", (*out)->display_name().c_str());
    }
    return MPI_SUCCESS;
}

const char* kind_name(int kind)
{
    switch (kind) {
    case MPI_CART: return "a Cartesian";
    case MPI_GRAPH: return "a graph";
    case MPI_DIST_GRAPH: return "a distributed graph";
    default: return "no";
    }
}

// The communicator's topology, which must be of `kind`.
int get_topo(MPI_Comm comm, int kind, const char* fn, Comm** c, const Topology** t)
{
    require_init(fn);
    if (int e = check_comm(comm, fn, c)) {
        return e;
    }
    const Topology* topo = comm_topology(*c);
    if (topo == nullptr || topo->kind != kind) {
        return raise(*c, MPI_ERR_TOPOLOGY, fn, "%s has %s topology, not %s one",
                     (*c)->display_name().c_str(), kind_name(topo != nullptr ? topo->kind : 0),
                     kind_name(kind));
    }
    *t = topo;
    return MPI_SUCCESS;
}

int need(Comm* c, const void* p, const char* what, const char* fn)
{
    if (p == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    return MPI_SUCCESS;
}

// ndims and dims of a Cartesian shape; *nnodes their product.
int check_shape(Comm* c, int ndims, const int* dims, const int* periods, const char* fn,
                long long* nnodes)
{
    if (ndims < 0) {
        return raise(c, MPI_ERR_DIMS, fn, "ndims = %d is negative", ndims);
    }
    if (ndims > 0) {
        if (int e = need(c, dims, "dims", fn)) {
            return e;
        }
        if (int e = need(c, periods, "periods", fn)) {
            return e;
        }
    }
    long long n = 1;
    for (int i = 0; i < ndims; ++i) {
        if (dims[i] <= 0) {
            return raise(c, MPI_ERR_DIMS, fn, "dims[%d] = %d is not positive", i, dims[i]);
        }
        n *= dims[i];
        if (n > c->size()) {
            break;
        }
    }
    if (n > c->size()) {
        return raise(c, MPI_ERR_ARG, fn, "the grid needs more processes than %s has (%d)",
                     c->display_name().c_str(), c->size());
    }
    *nnodes = n;
    return MPI_SUCCESS;
}

// The first n members of c's group, as the new group of the callers among them.
Group* prefix_group(Comm* c, int n)
{
    if (c->rank >= n) {
        return nullptr;
    }
    std::vector<int> w(c->local->world.begin(), c->local->world.begin() + n);
    return group_new(std::move(w));
}

int attach(Comm* n, std::shared_ptr<Topology> t, MPI_Comm* out)
{
    if (n == nullptr) {
        *out = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    n->topo = std::move(t);
    *out = n->handle;
    return MPI_SUCCESS;
}

// Graph arrays: index non-decreasing from >= 0, edges in [0, nnodes).
int check_graph(Comm* c, int nnodes, const int* index, const int* edges, const char* fn)
{
    if (nnodes < 0 || nnodes > c->size()) {
        return raise(c, MPI_ERR_ARG, fn, "nnodes = %d is not in 0..%d (the size of %s)", nnodes,
                     c->size(), c->display_name().c_str());
    }
    if (nnodes == 0) {
        return MPI_SUCCESS;
    }
    if (int e = need(c, index, "index", fn)) {
        return e;
    }
    if (!state().check_args) {
        return MPI_SUCCESS; // ULMPI_MPI_CHECK_ARGS=off: the arrays are trusted
    }
    for (int i = 0; i < nnodes; ++i) {
        if (index[i] < (i == 0 ? 0 : index[i - 1])) {
            return raise(c, MPI_ERR_ARG, fn, "index[%d] = %d is %s", i, index[i],
                         i == 0 ? "negative" : "below the previous entry");
        }
    }
    const int nedges = index[nnodes - 1];
    if (nedges > 0) {
        if (int e = need(c, edges, "edges", fn)) {
            return e;
        }
    }
    for (int i = 0; i < nedges; ++i) {
        if (edges[i] < 0 || edges[i] >= nnodes) {
            return raise(c, MPI_ERR_ARG, fn, "edges[%d] = %d is not a node (0..%d)", i, edges[i],
                         nnodes - 1);
        }
    }
    return MPI_SUCCESS;
}

int check_ranks(Comm* c, int n, const int* ranks, const char* what, const char* fn)
{
    if (n > 0) {
        if (int e = need(c, ranks, what, fn)) {
            return e;
        }
    }
    for (int i = 0; i < n && state().check_args; ++i) {
        if (ranks[i] < 0 || ranks[i] >= c->size()) {
            return raise(c, MPI_ERR_RANK, fn, "%s[%d] = %d is not a rank of %s (size %d)", what,
                         i, ranks[i], c->display_name().c_str(), c->size());
        }
    }
    return MPI_SUCCESS;
}

// A weights argument for `n` edges; *weighted unless MPI_UNWEIGHTED.
int check_weights(Comm* c, int n, const int* w, const char* what, const char* fn, bool* weighted)
{
    *weighted = w != MPI_UNWEIGHTED;
    if (n > 0 && (w == nullptr || w == MPI_WEIGHTS_EMPTY)) {
        return raise(c, MPI_ERR_ARG, fn, "%s is %s with %d edges", what,
                     w == nullptr ? "NULL" : "MPI_WEIGHTS_EMPTY", n);
    }
    return MPI_SUCCESS;
}

void copy_out(const std::vector<int>& v, int max, int* out)
{
    const int n = std::min<int>(max, static_cast<int>(v.size()));
    for (int i = 0; i < n; ++i) {
        out[i] = v[static_cast<std::size_t>(i)];
    }
}

} // namespace

// ---------------------------------------------------------------- Cartesian

int PMPI_Dims_create(int nnodes, int ndims, int dims[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Dims_create";
    require_init(fn);
    if (ndims < 0) {
        return raise(nullptr, MPI_ERR_DIMS, fn, "ndims = %d is negative", ndims);
    }
    if (nnodes <= 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "nnodes = %d is not positive", nnodes);
    }
    if (ndims > 0 && dims == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "dims is NULL");
    }
    for (int i = 0; i < ndims; ++i) {
        if (dims[i] < 0) {
            return raise(nullptr, MPI_ERR_DIMS, fn, "dims[%d] = %d is negative", i, dims[i]);
        }
    }
    if (!dims_create(nnodes, ndims, dims)) {
        return raise(nullptr, MPI_ERR_DIMS, fn, "%d nodes cannot be spread over %d dimensions "
                     "with the fixed entries given", nnodes, ndims);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Dims_create");
}
ULMPI_ALIAS(MPI_Dims_create)

int PMPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                     MPI_Comm* comm_cart) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cart_create";
    (void)reorder;
    Comm* c = nullptr;
    if (int e = get_intra(comm, fn, &c)) {
        return e;
    }
    if (int e = need(c, comm_cart, "comm_cart", fn)) {
        return e;
    }
    long long nnodes;
    if (int e = check_shape(c, ndims, dims, periods, fn, &nnodes)) {
        return e;
    }
    auto t = std::make_shared<Topology>();
    t->kind = MPI_CART;
    t->dims.assign(dims, dims + ndims);
    for (int i = 0; i < ndims; ++i) {
        t->periods.push_back(periods[i] != 0 ? 1 : 0);
    }
    Comm* n = nullptr;
    if (int e = comm_make_intra(c, prefix_group(c, static_cast<int>(nnodes)), &n, fn)) {
        return e;
    }
    return attach(n, std::move(t), comm_cart);
} catch (...) {
    return api_exception("MPI_Cart_create");
}
ULMPI_ALIAS(MPI_Cart_create)

int PMPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                  int* newrank) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cart_map";
    Comm* c = nullptr;
    if (int e = get_intra(comm, fn, &c)) {
        return e;
    }
    if (int e = need(c, newrank, "newrank", fn)) {
        return e;
    }
    long long nnodes;
    if (int e = check_shape(c, ndims, dims, periods != nullptr ? periods : dims, fn, &nnodes)) {
        return e;
    }
    *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Cart_map");
}
ULMPI_ALIAS(MPI_Cart_map)

int PMPI_Cartdim_get(MPI_Comm comm, int* ndims) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cartdim_get";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_CART, fn, &c, &t)) {
        return e;
    }
    if (int e = need(c, ndims, "ndims", fn)) {
        return e;
    }
    *ndims = t->ndims();
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Cartdim_get");
}
ULMPI_ALIAS(MPI_Cartdim_get)

int PMPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cart_get";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_CART, fn, &c, &t)) {
        return e;
    }
    if (maxdims < 0) {
        return raise(c, MPI_ERR_ARG, fn, "maxdims = %d is negative", maxdims);
    }
    const int n = std::min(maxdims, t->ndims());
    if (n > 0) {
        if (dims == nullptr || periods == nullptr || coords == nullptr) {
            return raise(c, MPI_ERR_ARG, fn, "an output array is NULL");
        }
    }
    std::vector<int> mine(static_cast<std::size_t>(t->ndims()));
    t->coords_of(c->rank, mine.data());
    for (int i = 0; i < n; ++i) {
        dims[i] = t->dims[static_cast<std::size_t>(i)];
        periods[i] = t->periods[static_cast<std::size_t>(i)];
        coords[i] = mine[static_cast<std::size_t>(i)];
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Cart_get");
}
ULMPI_ALIAS(MPI_Cart_get)

int PMPI_Cart_rank(MPI_Comm comm, const int coords[], int* rank) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cart_rank";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_CART, fn, &c, &t)) {
        return e;
    }
    if (int e = need(c, rank, "rank", fn)) {
        return e;
    }
    if (t->ndims() > 0) {
        if (int e = need(c, coords, "coords", fn)) {
            return e;
        }
    }
    std::vector<int> x(static_cast<std::size_t>(t->ndims()));
    for (int d = 0; d < t->ndims(); ++d) {
        const int n = t->dims[static_cast<std::size_t>(d)];
        int v = coords[d];
        if (t->periods[static_cast<std::size_t>(d)] != 0) {
            v = ((v % n) + n) % n;
        } else if (v < 0 || v >= n) {
            return raise(c, MPI_ERR_ARG, fn, "coords[%d] = %d is outside 0..%d of a non-periodic "
                         "dimension", d, coords[d], n - 1);
        }
        x[static_cast<std::size_t>(d)] = v;
    }
    *rank = t->rank_of(x.data());
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Cart_rank");
}
ULMPI_ALIAS(MPI_Cart_rank)

int PMPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cart_coords";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_CART, fn, &c, &t)) {
        return e;
    }
    if (rank < 0 || rank >= c->size()) {
        return raise(c, MPI_ERR_RANK, fn, "rank %d is not a rank of %s (size %d)", rank,
                     c->display_name().c_str(), c->size());
    }
    if (maxdims < t->ndims()) {
        return raise(c, MPI_ERR_ARG, fn, "maxdims = %d is below the number of dimensions (%d)",
                     maxdims, t->ndims());
    }
    if (t->ndims() > 0) {
        if (int e = need(c, coords, "coords", fn)) {
            return e;
        }
    }
    t->coords_of(rank, coords);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Cart_coords");
}
ULMPI_ALIAS(MPI_Cart_coords)

int PMPI_Cart_shift(MPI_Comm comm, int direction, int disp, int* rank_source,
                    int* rank_dest) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cart_shift";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_CART, fn, &c, &t)) {
        return e;
    }
    if (rank_source == nullptr || rank_dest == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL",
                     rank_source == nullptr ? "rank_source" : "rank_dest");
    }
    if (direction < 0 || direction >= t->ndims()) {
        return raise(c, MPI_ERR_ARG, fn, "direction %d is not a dimension (0..%d)", direction,
                     t->ndims() - 1);
    }
    t->shift(c->rank, direction, disp, rank_source, rank_dest);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Cart_shift");
}
ULMPI_ALIAS(MPI_Cart_shift)

int PMPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cart_sub";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_CART, fn, &c, &t)) {
        return e;
    }
    if (int e = need(c, newcomm, "newcomm", fn)) {
        return e;
    }
    const int nd = t->ndims();
    if (nd > 0) {
        if (int e = need(c, remain_dims, "remain_dims", fn)) {
            return e;
        }
    }
    // Keeping no dimension gives a zero-dimensional grid: one process, rank
    // 0 (as MPI_Cart_create with ndims = 0 does; MPICH's cartsuball checks
    // this reading); the others get MPI_COMM_NULL.
    bool keep_any = false;
    for (int d = 0; d < nd; ++d) {
        keep_any = keep_any || remain_dims[d] != 0;
    }
    if (!keep_any) {
        auto zero = std::make_shared<Topology>();
        zero->kind = MPI_CART;
        Comm* n = nullptr;
        if (int e = comm_make_intra(c, prefix_group(c, 1), &n, fn)) {
            return e;
        }
        return attach(n, std::move(zero), newcomm);
    }
    // My new group: the ranks whose coordinates equal mine in every dropped
    // dimension, in rank order (which is the row-major order of the kept ones).
    std::vector<int> mine(static_cast<std::size_t>(nd));
    std::vector<int> other(static_cast<std::size_t>(nd));
    t->coords_of(c->rank, mine.data());
    std::vector<int> world;
    for (int r = 0; r < c->size(); ++r) {
        t->coords_of(r, other.data());
        bool same = true;
        for (int d = 0; d < nd; ++d) {
            if (remain_dims[d] == 0 && other[static_cast<std::size_t>(d)] !=
                                           mine[static_cast<std::size_t>(d)]) {
                same = false;
                break;
            }
        }
        if (same) {
            world.push_back(c->local->world[static_cast<std::size_t>(r)]);
        }
    }
    auto sub = std::make_shared<Topology>();
    sub->kind = MPI_CART;
    for (int d = 0; d < nd; ++d) {
        if (remain_dims[d] != 0) {
            sub->dims.push_back(t->dims[static_cast<std::size_t>(d)]);
            sub->periods.push_back(t->periods[static_cast<std::size_t>(d)]);
        }
    }
    Comm* n = nullptr;
    if (int e = comm_make_intra(c, group_new(std::move(world)), &n, fn)) {
        return e;
    }
    return attach(n, std::move(sub), newcomm);
} catch (...) {
    return api_exception("MPI_Cart_sub");
}
ULMPI_ALIAS(MPI_Cart_sub)

// ---------------------------------------------------------------- graph

int PMPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                      int reorder, MPI_Comm* comm_graph) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Graph_create";
    (void)reorder;
    Comm* c = nullptr;
    if (int e = get_intra(comm, fn, &c)) {
        return e;
    }
    if (int e = need(c, comm_graph, "comm_graph", fn)) {
        return e;
    }
    if (int e = check_graph(c, nnodes, index, edges, fn)) {
        return e;
    }
    if (nnodes == 0) {
        *comm_graph = MPI_COMM_NULL; // the same on every process: nothing to agree on
        return MPI_SUCCESS;
    }
    auto t = std::make_shared<Topology>();
    t->kind = MPI_GRAPH;
    t->index.assign(index, index + nnodes);
    t->edges.assign(edges, edges + index[nnodes - 1]);
    Comm* n = nullptr;
    if (int e = comm_make_intra(c, prefix_group(c, nnodes), &n, fn)) {
        return e;
    }
    return attach(n, std::move(t), comm_graph);
} catch (...) {
    return api_exception("MPI_Graph_create");
}
ULMPI_ALIAS(MPI_Graph_create)

int PMPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                   int* newrank) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Graph_map";
    Comm* c = nullptr;
    if (int e = get_intra(comm, fn, &c)) {
        return e;
    }
    if (int e = need(c, newrank, "newrank", fn)) {
        return e;
    }
    if (int e = check_graph(c, nnodes, index, edges, fn)) {
        return e;
    }
    *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Graph_map");
}
ULMPI_ALIAS(MPI_Graph_map)

int PMPI_Graphdims_get(MPI_Comm comm, int* nnodes, int* nedges) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Graphdims_get";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_GRAPH, fn, &c, &t)) {
        return e;
    }
    if (nnodes == nullptr || nedges == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", nnodes == nullptr ? "nnodes" : "nedges");
    }
    *nnodes = static_cast<int>(t->index.size());
    *nedges = static_cast<int>(t->edges.size());
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Graphdims_get");
}
ULMPI_ALIAS(MPI_Graphdims_get)

int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Graph_get";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_GRAPH, fn, &c, &t)) {
        return e;
    }
    if (maxindex < 0 || maxedges < 0) {
        return raise(c, MPI_ERR_ARG, fn, "%s is negative", maxindex < 0 ? "maxindex" : "maxedges");
    }
    if ((maxindex > 0 && index == nullptr) || (maxedges > 0 && edges == nullptr)) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", index == nullptr ? "index" : "edges");
    }
    copy_out(t->index, maxindex, index);
    copy_out(t->edges, maxedges, edges);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Graph_get");
}
ULMPI_ALIAS(MPI_Graph_get)

int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int* nneighbors) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Graph_neighbors_count";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_GRAPH, fn, &c, &t)) {
        return e;
    }
    if (rank < 0 || rank >= static_cast<int>(t->index.size())) {
        return raise(c, MPI_ERR_RANK, fn, "rank %d is not a node of the graph (0..%zu)", rank,
                     t->index.size() - 1);
    }
    if (int e = need(c, nneighbors, "nneighbors", fn)) {
        return e;
    }
    const auto r = static_cast<std::size_t>(rank);
    *nneighbors = t->index[r] - (r == 0 ? 0 : t->index[r - 1]);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Graph_neighbors_count");
}
ULMPI_ALIAS(MPI_Graph_neighbors_count)

int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Graph_neighbors";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_GRAPH, fn, &c, &t)) {
        return e;
    }
    if (rank < 0 || rank >= static_cast<int>(t->index.size())) {
        return raise(c, MPI_ERR_RANK, fn, "rank %d is not a node of the graph (0..%zu)", rank,
                     t->index.size() - 1);
    }
    if (maxneighbors < 0) {
        return raise(c, MPI_ERR_ARG, fn, "maxneighbors = %d is negative", maxneighbors);
    }
    if (maxneighbors > 0) {
        if (int e = need(c, neighbors, "neighbors", fn)) {
            return e;
        }
    }
    std::vector<int> src;
    std::vector<int> dst;
    t->neighbors(rank, src, dst);
    copy_out(src, maxneighbors, neighbors);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Graph_neighbors");
}
ULMPI_ALIAS(MPI_Graph_neighbors)

int PMPI_Topo_test(MPI_Comm comm, int* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Topo_test";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = need(c, status, "status", fn)) {
        return e;
    }
    const Topology* t = comm_topology(c);
    *status = t != nullptr ? t->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Topo_test");
}
ULMPI_ALIAS(MPI_Topo_test)

// ---------------------------------------------------------------- distributed graph

int PMPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                    const int sourceweights[], int outdegree,
                                    const int destinations[], const int destweights[],
                                    MPI_Info info, int reorder, MPI_Comm* comm_dist_graph) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Dist_graph_create_adjacent";
    (void)info;
    (void)reorder;
    Comm* c = nullptr;
    if (int e = get_intra(comm, fn, &c)) {
        return e;
    }
    if (int e = need(c, comm_dist_graph, "comm_dist_graph", fn)) {
        return e;
    }
    if (indegree < 0 || outdegree < 0) {
        return raise(c, MPI_ERR_ARG, fn, "%s is negative", indegree < 0 ? "indegree" : "outdegree");
    }
    if (int e = check_ranks(c, indegree, sources, "sources", fn)) {
        return e;
    }
    if (int e = check_ranks(c, outdegree, destinations, "destinations", fn)) {
        return e;
    }
    bool w_in;
    bool w_out;
    if (int e = check_weights(c, indegree, sourceweights, "sourceweights", fn, &w_in)) {
        return e;
    }
    if (int e = check_weights(c, outdegree, destweights, "destweights", fn, &w_out)) {
        return e;
    }
    auto t = std::make_shared<Topology>();
    t->kind = MPI_DIST_GRAPH;
    t->weighted = w_in || w_out;
    t->sources.assign(sources, sources + indegree);
    t->destinations.assign(destinations, destinations + outdegree);
    if (w_in && indegree > 0) {
        t->source_weights.assign(sourceweights, sourceweights + indegree);
    }
    if (w_out && outdegree > 0) {
        t->dest_weights.assign(destweights, destweights + outdegree);
    }
    Comm* n = nullptr;
    if (int e = comm_make_dup(c, &n, fn)) {
        return e;
    }
    return attach(n, std::move(t), comm_dist_graph);
} catch (...) {
    return api_exception("MPI_Dist_graph_create_adjacent");
}
ULMPI_ALIAS(MPI_Dist_graph_create_adjacent)

int PMPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
                           const int destinations[], const int weights[], MPI_Info info,
                           int reorder, MPI_Comm* comm_dist_graph) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Dist_graph_create";
    (void)info;
    (void)reorder;
    Comm* c = nullptr;
    if (int e = get_intra(comm, fn, &c)) {
        return e;
    }
    if (int e = need(c, comm_dist_graph, "comm_dist_graph", fn)) {
        return e;
    }
    if (n < 0) {
        return raise(c, MPI_ERR_ARG, fn, "n = %d is negative", n);
    }
    if (int e = check_ranks(c, n, sources, "sources", fn)) {
        return e;
    }
    if (n > 0) {
        if (int e = need(c, degrees, "degrees", fn)) {
            return e;
        }
    }
    int nedges = 0;
    for (int i = 0; i < n; ++i) {
        if (degrees[i] < 0) {
            return raise(c, MPI_ERR_ARG, fn, "degrees[%d] = %d is negative", i, degrees[i]);
        }
        nedges += degrees[i];
    }
    if (int e = check_ranks(c, nedges, destinations, "destinations", fn)) {
        return e;
    }
    bool weighted;
    if (int e = check_weights(c, nedges, weights, "weights", fn, &weighted)) {
        return e;
    }
    // Every edge s -> d (weight w) becomes [0, d, w] for s (an out-edge) and
    // [1, s, w] for d (an in-edge); one alltoall of counts, one alltoallv.
    const int p = c->size();
    std::vector<std::vector<std::uint32_t>> to(static_cast<std::size_t>(p));
    int k = 0;
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < degrees[i]; ++j, ++k) {
            const int s = sources[i];
            const int d = destinations[k];
            const auto w = static_cast<std::uint32_t>(weighted && nedges > 0 ? weights[k] : 1);
            auto& ts = to[static_cast<std::size_t>(s)];
            ts.insert(ts.end(), {0u, static_cast<std::uint32_t>(d), w});
            auto& td = to[static_cast<std::size_t>(d)];
            td.insert(td.end(), {1u, static_cast<std::uint32_t>(s), w});
        }
    }
    std::vector<int> scounts(static_cast<std::size_t>(p));
    std::vector<int> sdispls(static_cast<std::size_t>(p));
    std::vector<std::uint32_t> sbuf;
    for (int r = 0; r < p; ++r) {
        const auto& v = to[static_cast<std::size_t>(r)];
        sdispls[static_cast<std::size_t>(r)] = static_cast<int>(sbuf.size());
        scounts[static_cast<std::size_t>(r)] = static_cast<int>(v.size());
        sbuf.insert(sbuf.end(), v.begin(), v.end());
    }
    std::vector<std::uint32_t> sc(scounts.begin(), scounts.end());
    std::vector<std::uint32_t> rc(static_cast<std::size_t>(p));
    {
        Phase ph(c);
        ph.alltoall(local_members(c), sc.data(), 1, rc.data());
        if (int e = ph.run()) {
            return raise(c, e, fn, "the exchange of edge counts failed");
        }
    }
    std::vector<int> rcounts(rc.begin(), rc.end());
    std::vector<int> rdispls(static_cast<std::size_t>(p));
    int total = 0;
    for (int r = 0; r < p; ++r) {
        rdispls[static_cast<std::size_t>(r)] = total;
        total += rcounts[static_cast<std::size_t>(r)];
    }
    std::vector<std::uint32_t> rbuf(static_cast<std::size_t>(total));
    {
        Phase ph(c);
        ph.alltoallv(local_members(c), sbuf.data(), scounts.data(), sdispls.data(), rbuf.data(),
                     rcounts.data(), rdispls.data());
        if (int e = ph.run()) {
            return raise(c, e, fn, "the exchange of edges failed");
        }
    }
    auto t = std::make_shared<Topology>();
    t->kind = MPI_DIST_GRAPH;
    t->weighted = weighted;
    for (std::size_t i = 0; i + 3 <= rbuf.size(); i += 3) {
        const int other = static_cast<int>(rbuf[i + 1]);
        const int w = static_cast<int>(rbuf[i + 2]);
        if (rbuf[i] == 0) {
            t->destinations.push_back(other);
            if (weighted) {
                t->dest_weights.push_back(w);
            }
        } else {
            t->sources.push_back(other);
            if (weighted) {
                t->source_weights.push_back(w);
            }
        }
    }
    Comm* nc = nullptr;
    if (int e = comm_make_dup(c, &nc, fn)) {
        return e;
    }
    return attach(nc, std::move(t), comm_dist_graph);
} catch (...) {
    return api_exception("MPI_Dist_graph_create");
}
ULMPI_ALIAS(MPI_Dist_graph_create)

int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int* indegree, int* outdegree,
                                    int* weighted) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Dist_graph_neighbors_count";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_DIST_GRAPH, fn, &c, &t)) {
        return e;
    }
    if (indegree == nullptr || outdegree == nullptr || weighted == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "an output pointer is NULL");
    }
    *indegree = static_cast<int>(t->sources.size());
    *outdegree = static_cast<int>(t->destinations.size());
    *weighted = t->weighted ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Dist_graph_neighbors_count");
}
ULMPI_ALIAS(MPI_Dist_graph_neighbors_count)

int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                              int maxoutdegree, int destinations[], int destweights[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Dist_graph_neighbors";
    Comm* c = nullptr;
    const Topology* t = nullptr;
    if (int e = get_topo(comm, MPI_DIST_GRAPH, fn, &c, &t)) {
        return e;
    }
    if (maxindegree < 0 || maxoutdegree < 0) {
        return raise(c, MPI_ERR_ARG, fn, "%s is negative",
                     maxindegree < 0 ? "maxindegree" : "maxoutdegree");
    }
    if ((maxindegree > 0 && sources == nullptr) || (maxoutdegree > 0 && destinations == nullptr)) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", sources == nullptr ? "sources"
                                                                          : "destinations");
    }
    copy_out(t->sources, maxindegree, sources);
    copy_out(t->destinations, maxoutdegree, destinations);
    if (t->weighted) {
        if (sourceweights != nullptr && sourceweights != MPI_UNWEIGHTED &&
            sourceweights != MPI_WEIGHTS_EMPTY) {
            copy_out(t->source_weights, maxindegree, sourceweights);
        }
        if (destweights != nullptr && destweights != MPI_UNWEIGHTED &&
            destweights != MPI_WEIGHTS_EMPTY) {
            copy_out(t->dest_weights, maxoutdegree, destweights);
        }
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Dist_graph_neighbors");
}
ULMPI_ALIAS(MPI_Dist_graph_neighbors)
