// Scatter and Scatterv, linear: the root sends every rank its block, all
// p - 1 sends posted at once (empty blocks skipped).
//
// Cost: (p - 1) * alpha + (p - 1) n * beta at the root, in one round. The
// only algorithm for Scatterv.
#include "mpi/coll/algos.h"

namespace ulmpi::mpi::coll {

int scatter_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    s.fence();
    if (t.rank == a.root) {
        for (int i = 1; i < t.size; ++i) {
            int j = (a.root + i) % t.size;
            Block b = scattered_block(a, j);
            if (b.bytes() > 0) {
                s.send(t.w(j), b.buf, b.count, b.type);
            }
        }
        if (!a.in_place) {
            Block mine = scattered_block(a, t.rank);
            s.copy(mine.buf, mine.count, mine.type, a.rbuf, a.rcount, a.rtype);
        }
    } else if (a.rcount * a.rtype->size > 0) {
        s.recv(t.w(a.root), a.rbuf, a.rcount, a.rtype);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
