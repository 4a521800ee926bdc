// Allreduce as Reduce to rank 0 followed by Bcast from it, each with the
// algorithm the dispatch table picks for it.
//
// Cost: that of the two (binomial: 2 lg * (alpha + n beta) + lg n gamma).
// Works for every op; a fallback and a reference.
#include "mpi/coll/algos.h"

namespace ulmpi::mpi::coll {

int allreduce_reduce_bcast(Schedule& s, const Args& a)
{
    Args r = a;
    r.coll = Coll::reduce;
    r.root = 0;
    if (a.in_place) {
        r.sbuf = a.rbuf;
        r.in_place = a.team.rank == 0;
    }
    if (int e = build_flat(s, Coll::reduce, r)) {
        return e;
    }
    Args b = a;
    b.coll = Coll::bcast;
    b.root = 0;
    b.sbuf = nullptr;
    b.in_place = false;
    return build_flat(s, Coll::bcast, b);
}

} // namespace ulmpi::mpi::coll
