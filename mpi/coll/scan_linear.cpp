// Scan, linear chain: rank r receives the prefix of ranks 0 .. r-1 from
// r - 1, combines it with its own vector (prefix on the left) and passes
// the result to r + 1.
//
// Cost: (p - 1) * (alpha + n * beta + n * gamma) end to end. Every op; the
// reference for rank order, and fine for long vectors on few ranks.
#include "mpi/coll/algos.h"

namespace ulmpi::mpi::coll {

int scan_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const std::uint64_t count = a.rcount;
    const Datatype* type = a.rtype;
    s.fence();
    if (count == 0) {
        return MPI_SUCCESS;
    }
    if (!a.in_place) {
        s.copy(a.sbuf, count, type, a.rbuf, count, type);
    }
    if (r > 0) {
        void* prefix = s.scratch_for(count, type);
        s.recv(t.w(r - 1), prefix, count, type);
        s.fence();
        s.reduce(prefix, a.rbuf, count, type, a.op);
    }
    if (r + 1 < p) {
        s.send(t.w(r + 1), a.rbuf, count, type);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
