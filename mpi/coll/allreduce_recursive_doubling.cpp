// Allreduce, recursive doubling: in the step of distance d = 1, 2, 4, ...
// every rank exchanges its whole partial result with rank ^ d and combines,
// lower ranks' data on the left (so non-commutative ops keep rank order).
// When p = p2 + rem is not a power of two, the first 2 rem ranks pair up
// first: even ones hand their vector to the odd neighbour and get the
// result back at the end.
//
// Cost: lg * (alpha + n * beta + n * gamma) (+ 2 alpha + n beta + n gamma
// when p is not a power of two). Latency-optimal; for short vectors.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

#include <utility>

namespace ulmpi::mpi::coll {

int allreduce_recursive_doubling(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const std::uint64_t count = a.rcount;
    const Datatype* type = a.rtype;
    const bool commutative = a.op->commutative;
    s.fence();
    if (count == 0) {
        return MPI_SUCCESS;
    }
    if (!a.in_place) {
        s.copy(a.sbuf, count, type, a.rbuf, count, type);
    }
    const int p2 = pow2_floor(p);
    const int rem = p - p2;
    void* cur = a.rbuf;
    void* other = s.scratch_for(count, type);
    int newrank;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            s.send(t.w(r + 1), cur, count, type);
            s.fence();
            s.recv(t.w(r + 1), a.rbuf, count, type);
            s.fence();
            return MPI_SUCCESS;
        }
        s.recv(t.w(r - 1), other, count, type);
        s.fence();
        s.reduce(other, cur, count, type, a.op);
        newrank = r / 2;
    } else {
        newrank = r - rem;
    }
    for (int mask = 1; mask < p2; mask <<= 1) {
        int np = newrank ^ mask;
        int peer = np < rem ? 2 * np + 1 : np + rem;
        s.recv(t.w(peer), other, count, type);
        s.send(t.w(peer), cur, count, type);
        s.fence();
        if (commutative || np < newrank) {
            s.reduce(other, cur, count, type, a.op);
        } else {
            s.reduce(cur, other, count, type, a.op);
            std::swap(cur, other);
        }
    }
    s.copy(cur, count, type, a.rbuf, count, type);
    s.fence();
    if (r < 2 * rem) {
        s.send(t.w(r - 1), a.rbuf, count, type);
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
