// Reduce, linear: every rank sends its vector to the root, which receives
// them all at once and reduces them in rank order from the right
// (v[p-1], then v[p-2] op that, ...), so any op is fine.
//
// Cost: (p - 1) * (alpha + n * beta + n * gamma) at the root, with p - 1
// scratch vectors. Few ranks only; the reference for rank order.
#include "mpi/coll/algos.h"

namespace ulmpi::mpi::coll {

int reduce_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const std::uint64_t count = a.rcount;
    const Datatype* type = a.rtype;
    s.fence();
    if (count == 0) {
        return MPI_SUCCESS;
    }
    if (t.rank != a.root) {
        s.send(t.w(a.root), a.sbuf, count, type);
        s.fence();
        return MPI_SUCCESS;
    }
    const void* mine = a.in_place ? a.rbuf : a.sbuf;
    auto** bufs = static_cast<const void**>(s.scratch(sizeof(void*) * static_cast<std::size_t>(p)));
    for (int j = 0; j < p; ++j) {
        if (j == a.root) {
            bufs[j] = mine;
            continue;
        }
        void* b = s.scratch_for(count, type);
        s.recv(t.w(j), b, count, type);
        bufs[j] = b;
    }
    s.fence();
    void* acc;
    if (p - 1 == a.root) {
        acc = s.scratch_for(count, type);
        s.copy(mine, count, type, acc, count, type);
    } else {
        acc = const_cast<void*>(bufs[p - 1]);
    }
    for (int j = p - 2; j >= 0; --j) {
        s.reduce(bufs[j], acc, count, type, a.op);
    }
    s.copy(acc, count, type, a.rbuf, count, type);
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
