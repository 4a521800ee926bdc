// Allreduce, Rabenseifner: a reduce-scatter by recursive halving (each step
// exchanges half of the current window with rank ^ d and combines the half
// kept) followed by an allgather by recursive doubling (the same steps
// backwards). Non-powers of two fold the first 2 rem ranks in pairs first
// (see rhalving.cpp). Distances go 1, 2, 4, ..., so every partial result
// covers a contiguous range of ranks and non-commutative ops keep rank
// order.
//
// Cost: 2 lg * alpha + 2 (p - 1)/p * n * beta + (p - 1)/p * n * gamma
// (+ alpha + n (beta + gamma) and alpha + n beta for the fold). For long
// vectors.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int allreduce_rabenseifner(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const std::uint64_t count = a.rcount;
    s.fence();
    if (count == 0) {
        return MPI_SUCCESS;
    }
    Halving h;
    h.input = a.in_place ? nullptr : a.sbuf; // copied into rbuf beside the first exchange
    h.p2 = pow2_floor(t.size);
    h.rem = t.size - h.p2;
    h.vrank = halving_vrank(t.rank, h.rem);
    h.ascending = true;
    auto* vcount = static_cast<std::uint64_t*>(s.scratch(sizeof(std::uint64_t) * static_cast<std::size_t>(h.p2)));
    auto* vdispl = static_cast<std::uint64_t*>(s.scratch(sizeof(std::uint64_t) * static_cast<std::size_t>(h.p2 + 1)));
    const std::uint64_t base = count / static_cast<std::uint64_t>(h.p2);
    const std::uint64_t extra = count % static_cast<std::uint64_t>(h.p2);
    vdispl[0] = 0;
    for (int v = 0; v < h.p2; ++v) {
        vcount[v] = base + (static_cast<std::uint64_t>(v) < extra ? 1 : 0);
        vdispl[v + 1] = vdispl[v] + vcount[v];
    }
    h.vcount = vcount;
    h.vdispl = vdispl;
    halving_reduce_scatter(s, a, h, a.rbuf, count);
    halving_allgather(s, a, h, a.rbuf, count, a.rbuf);
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
