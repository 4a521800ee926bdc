// Allgather, Bruck's algorithm: blocks are kept in a packed scratch buffer
// rotated so that my own block comes first; in step k (distance 2^k) every
// rank sends the first min(2^k, p - 2^k) blocks it has to rank - 2^k and
// appends those of rank + 2^k. A final pass puts block i of the scratch
// (from rank r + i) in its place.
//
// Cost: lg * alpha + (p - 1) n * beta, plus p n of local copying. Any p in
// ceil(log2 p) rounds; for short blocks, notably when p is not a power of
// two.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

#include <algorithm>

namespace ulmpi::mpi::coll {

int allgather_bruck(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const Datatype* bt = byte_type();
    Block mine = my_send_block(a);
    const std::uint64_t nb = mine.bytes();
    s.fence();
    if (nb == 0) {
        return MPI_SUCCESS;
    }
    auto* tmp = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(p) * nb));
    s.copy(mine.buf, mine.count, mine.type, tmp, nb, bt);
    s.fence();
    for (int k = 1; k < p; k <<= 1) {
        std::uint64_t blocks = static_cast<std::uint64_t>(std::min(k, p - k));
        s.recv(t.w((r + k) % p), tmp + static_cast<std::uint64_t>(k) * nb, blocks * nb, bt);
        s.send(t.w(mod(r - k, p)), tmp, blocks * nb, bt);
        s.fence();
    }
    for (int i = 0; i < p; ++i) {
        if (i == 0 && a.in_place) {
            continue;
        }
        Block dst = gathered_block(a, (r + i) % p);
        s.copy(tmp + static_cast<std::uint64_t>(i) * nb, nb, bt, dst.mut(), dst.count, dst.type);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
