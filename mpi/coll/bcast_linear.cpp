// Bcast, linear: the root sends the whole message to every other rank.
//
// Cost: (p - 1) * (alpha + n * beta) at the root, all messages posted at
// once. Only sensible for very few ranks; kept as a simple reference.
#include "mpi/coll/algos.h"

namespace ulmpi::mpi::coll {

int bcast_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    s.fence();
    if (t.rank == a.root) {
        for (int i = 1; i < t.size; ++i) {
            s.send(t.w((a.root + i) % t.size), a.rbuf, a.rcount, a.rtype);
        }
    } else {
        s.recv(t.w(a.root), a.rbuf, a.rcount, a.rtype);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
