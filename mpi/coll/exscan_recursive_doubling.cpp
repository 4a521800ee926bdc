// Exscan, recursive doubling: as the recursive-doubling Scan, but the
// result gathers only what comes from partners below (the first such
// contribution is copied, later ones combined on the left). Rank 0's
// receive buffer is not touched.
//
// Cost: lg * (alpha + n * beta + 2 n * gamma). For short and medium vectors.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

#include <utility>

namespace ulmpi::mpi::coll {

int exscan_recursive_doubling(Schedule& s, const Args& a)
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
    const void* input = a.in_place ? a.rbuf : a.sbuf;
    void* partial = s.scratch_for(count, type);
    void* tmp = s.scratch_for(count, type);
    s.copy(input, count, type, partial, count, type);
    s.fence();
    bool have = false;
    for (int mask = 1; mask < p; mask <<= 1) {
        int dst = r ^ mask;
        if (dst >= p) {
            continue;
        }
        s.recv(t.w(dst), tmp, count, type);
        s.send(t.w(dst), partial, count, type);
        s.fence();
        if (dst < r) {
            if (have) {
                s.reduce(tmp, a.rbuf, count, type, a.op);
            } else {
                s.copy(tmp, count, type, a.rbuf, count, type);
                have = true;
            }
            s.reduce(tmp, partial, count, type, a.op);
        } else if (a.op->commutative) {
            s.reduce(tmp, partial, count, type, a.op);
        } else {
            s.reduce(partial, tmp, count, type, a.op);
            std::swap(partial, tmp);
        }
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
