// Reduce_scatter and Reduce_scatter_block, ring: in step k = 0 .. p-2 rank
// r sends its partial block r - k - 1 to the right and combines block
// r - k - 2 from the left; after p - 1 steps block r is complete at rank r.
//
// Cost: (p - 1) * alpha + (p - 1)/p * n * (beta + gamma) for n the whole
// vector. Bandwidth-optimal for any p; commutative ops only.
#include "mpi/coll/algos.h"
#include "mpi/coll/rs_counts.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int reduce_scatter_ring(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const Datatype* type = a.rtype;
    s.fence();
    RsBlocks b = rs_blocks(s, a, p);
    const std::uint64_t total = b.first[p];
    if (total == 0) {
        return MPI_SUCCESS;
    }
    const void* input = a.in_place ? a.rbuf : a.sbuf;
    if (p == 1) {
        s.copy(input, total, type, a.rbuf, total, type);
        s.fence();
        return MPI_SUCCESS;
    }
    void* acc = s.scratch_for(total, type);
    s.copy(input, total, type, acc, total, type);
    std::uint64_t most = 0;
    for (int j = 0; j < p; ++j) {
        most = b.count[j] > most ? b.count[j] : most;
    }
    void* tmp = s.scratch_for(most, type);
    auto at = [&](int j) { return elem(acc, b.first[j], type); };
    const int left = t.w(mod(r - 1, p));
    const int right = t.w((r + 1) % p);
    int pending = -1;
    for (int k = 0; k < p - 1; ++k) {
        if (pending >= 0) {
            s.reduce(tmp, at(pending), b.count[pending], type, a.op);
        }
        int out = mod(r - k - 1, p);
        int in = mod(r - k - 2, p);
        if (b.count[in] > 0) {
            s.recv(left, tmp, b.count[in], type);
        }
        if (b.count[out] > 0) {
            s.send(right, at(out), b.count[out], type);
        }
        s.fence();
        pending = in;
    }
    s.reduce(tmp, at(pending), b.count[pending], type, a.op);
    s.copy(at(r), b.count[r], type, a.rbuf, b.count[r], type);
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
