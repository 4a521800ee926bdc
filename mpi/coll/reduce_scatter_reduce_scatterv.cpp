// Reduce_scatter and Reduce_scatter_block as a Reduce of the whole vector
// to rank 0 followed by a Scatterv of the blocks, each with the algorithm
// the dispatch table picks.
//
// Cost: Reduce (binomial: lg (alpha + n beta + n gamma)) + linear Scatterv
// ((p - 1) alpha + n beta at rank 0). Every op, in rank order; the fallback
// for non-commutative ops.
#include "mpi/coll/algos.h"
#include "mpi/coll/rs_counts.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int reduce_then_scatterv(Schedule& s, const Args& a, const Team& team, std::uint64_t total,
                         const int* counts, const int* displs, std::uint64_t mine)
{
    const Datatype* type = a.rtype;
    const void* input = a.in_place ? a.rbuf : a.sbuf;
    void* result = team.rank == 0 ? s.scratch_for(total, type) : nullptr;
    Args r = a;
    r.coll = Coll::reduce;
    r.team = team;
    r.root = 0;
    r.sbuf = input;
    r.in_place = false;
    r.rbuf = result;
    r.rcount = total;
    r.rcounts = nullptr;
    r.bytes = total * type->size;
    if (int e = build_flat(s, Coll::reduce, r)) {
        return e;
    }
    Args v;
    v.coll = Coll::scatterv;
    v.team = team;
    v.sbuf = result;
    v.scounts = counts;
    v.sdispls = displs;
    v.stype = type;
    v.rbuf = a.rbuf;
    v.rcount = mine;
    v.rtype = type;
    v.root = 0;
    v.bytes = total * type->size / static_cast<std::uint64_t>(team.size);
    return build_flat(s, Coll::scatterv, v);
}

int reduce_scatter_reduce_scatterv(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    s.fence();
    RsBlocks b = rs_blocks(s, a, p);
    const std::uint64_t total = b.first[p];
    if (total == 0) {
        return MPI_SUCCESS;
    }
    auto* counts = static_cast<int*>(s.scratch(sizeof(int) * static_cast<std::size_t>(p)));
    auto* displs = static_cast<int*>(s.scratch(sizeof(int) * static_cast<std::size_t>(p)));
    for (int j = 0; j < p; ++j) {
        counts[j] = static_cast<int>(b.count[j]);
        displs[j] = static_cast<int>(b.first[j]);
    }
    return reduce_then_scatterv(s, a, t, total, counts, displs, b.count[t.rank]);
}

} // namespace ulmpi::mpi::coll
