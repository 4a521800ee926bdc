// Barrier, dissemination algorithm (Hensgen, Finkel and Manber): in round k
// every rank signals rank + 2^k and waits for rank - 2^k (mod p). After
// ceil(log2 p) rounds every rank has heard, directly or not, from all.
//
// Cost: lg * alpha. Any p; every rank is busy in every round, no root.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int barrier_dissemination(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const Datatype* b = byte_type();
    s.fence();
    for (int k = 1; k < t.size; k <<= 1) {
        s.recv(t.w(mod(t.rank - k, t.size)), nullptr, 0, b);
        s.send(t.w((t.rank + k) % t.size), nullptr, 0, b);
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
