// Exscan, linear chain: rank r receives the prefix of ranks 0 .. r-1 from
// r - 1 into its receive buffer and passes prefix op mine to r + 1; rank 0
// passes its own vector.
//
// Cost: (p - 1) * (alpha + n * beta + n * gamma) end to end. Every op.
#include "mpi/coll/algos.h"

namespace ulmpi::mpi::coll {

int exscan_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const std::uint64_t count = a.rcount;
    const Datatype* type = a.rtype;
    s.fence();
    if (count == 0 || p == 1) {
        return MPI_SUCCESS;
    }
    const void* mine = a.sbuf;
    if (a.in_place) {
        void* copy = s.scratch_for(count, type);
        s.copy(a.rbuf, count, type, copy, count, type);
        mine = copy;
    }
    if (r == 0) {
        s.send(t.w(1), mine, count, type);
        s.fence();
        return MPI_SUCCESS;
    }
    s.recv(t.w(r - 1), a.rbuf, count, type);
    s.fence();
    if (r + 1 < p) {
        void* next = s.scratch_for(count, type);
        s.copy(mine, count, type, next, count, type);
        s.reduce(a.rbuf, next, count, type, a.op);
        s.send(t.w(r + 1), next, count, type);
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
