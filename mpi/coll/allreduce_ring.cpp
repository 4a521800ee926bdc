// Allreduce, ring: the vector is cut into p blocks; a ring reduce-scatter
// (p - 1 steps: pass a block to the right, combine the one from the left)
// leaves block r + 1 complete at rank r, and a ring allgather (p - 1 more
// steps) spreads the blocks.
//
// Cost: 2 (p - 1) * alpha + 2 (p - 1)/p * n * beta + (p - 1)/p * n * gamma.
// Bandwidth-optimal for any p, latency linear in p; for long vectors.
// Commutative ops only (each block is combined in a different order).
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int allreduce_ring(Schedule& s, const Args& a)
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
        s.fence();
    }
    if (p == 1) {
        return MPI_SUCCESS;
    }
    const std::uint64_t base = count / static_cast<std::uint64_t>(p);
    const std::uint64_t extra = count % static_cast<std::uint64_t>(p);
    auto cnt = [&](int b) { return base + (static_cast<std::uint64_t>(b) < extra ? 1 : 0); };
    auto first = [&](int b) {
        auto ub = static_cast<std::uint64_t>(b);
        return ub * base + (ub < extra ? ub : extra);
    };
    auto at = [&](int b) { return elem(a.rbuf, first(b), type); };
    void* tmp = s.scratch_for(base + (extra > 0 ? 1 : 0), type);
    const int left = t.w(mod(r - 1, p));
    const int right = t.w((r + 1) % p);
    int pending = -1; // block whose incoming part sits in tmp
    for (int k = 0; k < p - 1; ++k) {
        if (pending >= 0) {
            s.reduce(tmp, at(pending), cnt(pending), type, a.op);
        }
        int out = mod(r - k, p);
        int in = mod(r - k - 1, p);
        if (cnt(in) > 0) {
            s.recv(left, tmp, cnt(in), type);
        }
        if (cnt(out) > 0) {
            s.send(right, at(out), cnt(out), type);
        }
        s.fence();
        pending = in;
    }
    s.reduce(tmp, at(pending), cnt(pending), type, a.op);
    s.fence();
    for (int k = 0; k < p - 1; ++k) {
        int out = mod(r + 1 - k, p);
        int in = mod(r - k, p);
        if (cnt(in) > 0) {
            s.recv(left, at(in), cnt(in), type);
        }
        if (cnt(out) > 0) {
            s.send(right, at(out), cnt(out), type);
        }
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
