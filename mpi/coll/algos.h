// Every collective algorithm's builder (one file each, named
// <collective>_<algorithm>.cpp, with its cost model in the header comment:
// alpha = latency per message, beta = time per byte moved, gamma = time per
// byte reduced; p = team size, n = bytes per rank (or per pair for the
// alltoalls), lg = ceil(log2 p)).
//
// A builder appends its steps to the schedule, starting and ending with a
// fence, and returns MPI_SUCCESS or an MPI error class. It may assume the
// arguments were checked by the entry point and that team.size >= 1.
#pragma once

#include "mpi/coll/coll.h"

namespace ulmpi::mpi::coll {

// A typed piece of a buffer.
struct Block {
    const void* buf = nullptr;
    std::uint64_t count = 0;
    const Datatype* type = nullptr;
    std::uint64_t bytes() const { return count * type->size; }
    void* mut() const { return const_cast<void*>(buf); }
};

// The alltoall family (alltoall, alltoallv, alltoallw): the blocks this rank
// sends to and receives from every team rank, as arrays of team.size in the
// schedule's scratch. With MPI_IN_PLACE, steps copying the receive buffer
// aside are added first and the send blocks point at that copy.
void a2a_blocks(Schedule& s, const Args& a, Block** send, Block** recv);
// The gather/allgather families: the block of team rank j in the receive
// buffer (rcount/rcounts, rdispls).
Block gathered_block(const Args& a, int j);
// The scatter family: the block of team rank j in the root's send buffer.
Block scattered_block(const Args& a, int j);
// My own contribution of a gather/allgather (sbuf, or my block of rbuf when
// MPI_IN_PLACE).
Block my_send_block(const Args& a);

// barrier
int barrier_dissemination(Schedule& s, const Args& a);
int barrier_tree(Schedule& s, const Args& a);
// bcast
int bcast_binomial(Schedule& s, const Args& a);
int bcast_scatter_allgather(Schedule& s, const Args& a);
int bcast_linear(Schedule& s, const Args& a);
int bcast_pipeline(Schedule& s, const Args& a);
// gather / scatter (v forms: linear; they also serve gather/scatter)
int gather_binomial(Schedule& s, const Args& a);
int gather_linear(Schedule& s, const Args& a);
int scatter_binomial(Schedule& s, const Args& a);
int scatter_linear(Schedule& s, const Args& a);
// allgather (allgatherv: ring and linear)
int allgather_ring(Schedule& s, const Args& a);
int allgather_recursive_doubling(Schedule& s, const Args& a);
int allgather_bruck(Schedule& s, const Args& a);
int allgather_linear(Schedule& s, const Args& a);
// alltoall (alltoallv / alltoallw: pairwise and linear)
int alltoall_bruck(Schedule& s, const Args& a);
int alltoall_pairwise(Schedule& s, const Args& a);
int alltoall_linear(Schedule& s, const Args& a);
// reduce
int reduce_binomial(Schedule& s, const Args& a);
int reduce_linear(Schedule& s, const Args& a);
// allreduce
int allreduce_recursive_doubling(Schedule& s, const Args& a);
int allreduce_rabenseifner(Schedule& s, const Args& a);
int allreduce_ring(Schedule& s, const Args& a);
int allreduce_reduce_bcast(Schedule& s, const Args& a);
// reduce_scatter and reduce_scatter_block
int reduce_scatter_recursive_halving(Schedule& s, const Args& a);
int reduce_scatter_ring(Schedule& s, const Args& a);
int reduce_scatter_reduce_scatterv(Schedule& s, const Args& a);
// Its two steps among `team` (a.team, or the live members of it): a Reduce
// of `total` elements to team member 0, then a Scatterv of member i's
// counts[i] elements from displs[i]; `mine` is the caller's block.
int reduce_then_scatterv(Schedule& s, const Args& a, const Team& team, std::uint64_t total,
                         const int* counts, const int* displs, std::uint64_t mine);
// scan / exscan
int scan_recursive_doubling(Schedule& s, const Args& a);
int scan_linear(Schedule& s, const Args& a);
int exscan_recursive_doubling(Schedule& s, const Args& a);
int exscan_linear(Schedule& s, const Args& a);

// Neighbourhood collectives (all five; neighbor_linear.cpp).
int neighbor_linear(Schedule& s, const Args& a);

// Intercommunicator forms (inter_*.cpp).
int inter_barrier(Schedule& s, const Args& a);
int inter_bcast(Schedule& s, const Args& a);
int inter_gather(Schedule& s, const Args& a);   // gather and gatherv
int inter_scatter(Schedule& s, const Args& a);  // scatter and scatterv
int inter_allgather(Schedule& s, const Args& a); // allgather and allgatherv
int inter_alltoall(Schedule& s, const Args& a);  // alltoall, alltoallv, alltoallw
int inter_reduce(Schedule& s, const Args& a);
int inter_allreduce(Schedule& s, const Args& a);
int inter_reduce_scatter(Schedule& s, const Args& a); // both forms

// Recursive halving over a power-of-two set of virtual ranks (shared by
// Rabenseifner allreduce and recursive-halving reduce_scatter), see
// rhalving.cpp.
struct Halving {
    int p2 = 1;         // power of two <= team size
    int rem = 0;        // team size - p2
    int vrank = -1;     // my virtual rank, -1 when folded away
    // Distances 1, 2, 4, ... (every partial result covers a contiguous range
    // of ranks: fine for non-commutative ops; virtual rank v ends with block
    // bit-reverse(v)) or p2/2, ..., 1 (v ends with block v; commutative ops
    // only).
    bool ascending = true;
    // element count and first element of every virtual rank's block
    const std::uint64_t* vcount = nullptr;
    const std::uint64_t* vdispl = nullptr;
    // Set when acc does not hold the data yet: the first message of this
    // rank is sent from `input` and input is copied into acc after it is
    // posted, so the copy overlaps the first exchange instead of delaying it.
    const void* input = nullptr;
};
// Virtual rank of team rank r (-1 for the even ranks below 2*rem) and back.
int halving_vrank(int r, int rem);
int halving_real(int v, int rem);
// Fold (even ranks below 2*rem hand their vector to the odd neighbour),
// then recursive halving: afterwards virtual rank v holds block v of the
// reduction in acc. acc holds my vector (count elements) on entry.
void halving_reduce_scatter(Schedule& s, const Args& a, const Halving& h, void* acc,
                            std::uint64_t count);
// Recursive doubling allgather of the virtual blocks in acc, then unfold
// (odd ranks below 2*rem send the whole result to their even neighbour,
// which receives it into `even_dst`).
void halving_allgather(Schedule& s, const Args& a, const Halving& h, void* acc,
                       std::uint64_t count, void* even_dst);

} // namespace ulmpi::mpi::coll
