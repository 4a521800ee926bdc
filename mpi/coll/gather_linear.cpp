// Gather and Gatherv, linear: every rank sends its block straight to the
// root, which posts all p - 1 receives at once (empty blocks skipped).
//
// Cost: (p - 1) * alpha + (p - 1) n * beta at the root, everything in one
// round. Fine for long blocks and few ranks; the only algorithm for Gatherv.
#include "mpi/coll/algos.h"

namespace ulmpi::mpi::coll {

int gather_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    s.fence();
    if (t.rank == a.root) {
        for (int i = 1; i < t.size; ++i) {
            int j = (a.root + i) % t.size;
            Block b = gathered_block(a, j);
            if (b.bytes() > 0) {
                s.recv(t.w(j), b.mut(), b.count, b.type);
            }
        }
        if (!a.in_place) {
            Block mine = gathered_block(a, t.rank);
            s.copy(a.sbuf, a.scount, a.stype, mine.mut(), mine.count, mine.type);
        }
    } else if (a.scount * a.stype->size > 0) {
        s.send(t.w(a.root), a.sbuf, a.scount, a.stype);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
