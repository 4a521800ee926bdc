// Virtual topologies (MPI-3.1 chapter 7): Cartesian, graph and distributed
// graph. A topology is an immutable description attached to a
// communicator; MPI_Comm_dup shares it. Ranks are never reordered
// (`reorder` is accepted and ignored: Cart_map and Graph_map keep the
// identity), so process p of the parent is rank p of the new communicator
// when it is in it.
//
// Cartesian ranks are row-major: the last dimension varies fastest.
// Neighbour order, which neighbourhood collectives follow:
//   Cartesian   for each dimension d: the source/destination of a shift
//               by -1, then by +1 (MPI_PROC_NULL off a non-periodic edge);
//   graph       the adjacency list in the order given;
//   dist graph  sources and destinations in the order given to
//               Dist_graph_create_adjacent; for Dist_graph_create, edges
//               grouped by the rank that named them, in rank order, each
//               rank's edges in the order it gave them.
#pragma once

#include <vector>

namespace ulmpi::mpi {

struct Comm;

struct Topology {
    int kind = 0; // MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH
    // Cartesian
    std::vector<int> dims;
    std::vector<int> periods; // 0 or 1
    // Graph: MPI_Graph_create's index and edges arrays
    std::vector<int> index;
    std::vector<int> edges;
    // Distributed graph (this process's edges only)
    std::vector<int> sources;
    std::vector<int> source_weights;
    std::vector<int> destinations;
    std::vector<int> dest_weights;
    bool weighted = false;

    int ndims() const { return static_cast<int>(dims.size()); }
    int cart_size() const;
    // Coordinates of a rank (cart).
    void coords_of(int rank, int* coords) const;
    // Rank of in-range coordinates (cart).
    int rank_of(const int* coords) const;
    // The neighbour lists neighbourhood collectives use (see the top).
    void neighbors(int rank, std::vector<int>& sources, std::vector<int>& destinations) const;
    // Cart_shift in dimension d by disp for `rank`.
    void shift(int rank, int d, int disp, int* source, int* dest) const;
};

// The topology of a communicator, or nullptr.
const Topology* comm_topology(const Comm* c);

// Balanced factorisation for MPI_Dims_create: fills the zero entries of
// dims (ndims entries, positive entries fixed) so that the product is
// nnodes. Returns false when nnodes is not a multiple of the fixed ones.
bool dims_create(int nnodes, int ndims, int* dims);

} // namespace ulmpi::mpi
