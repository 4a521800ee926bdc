// Reduce_scatter and Reduce_scatter_block, recursive halving: the fold of
// rhalving.cpp turns ranks 2i, 2i + 1 (i < rem) into virtual rank i owning
// both their blocks, then distances p2/2, ..., 1 halve the window until
// virtual rank v holds its own blocks, fully reduced; the odd rank of a pair
// finally hands the even one its block.
//
// Cost: lg * alpha + (p - 1)/p * n * (beta + gamma) for a power of two (+ a
// fold: alpha + n (beta + gamma)). For short and medium vectors;
// commutative ops only (distances go downwards).
#include "mpi/coll/algos.h"
#include "mpi/coll/rs_counts.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int reduce_scatter_recursive_halving(Schedule& s, const Args& a)
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
    void* acc = s.scratch_for(total, type);
    Halving h;
    h.input = input; // copied into acc beside the first exchange
    h.p2 = pow2_floor(p);
    h.rem = p - h.p2;
    h.vrank = halving_vrank(r, h.rem);
    h.ascending = false;
    auto* vcount = static_cast<std::uint64_t*>(s.scratch(sizeof(std::uint64_t) * static_cast<std::size_t>(h.p2)));
    auto* vdispl = static_cast<std::uint64_t*>(s.scratch(sizeof(std::uint64_t) * static_cast<std::size_t>(h.p2 + 1)));
    for (int v = 0; v < h.p2; ++v) {
        int lo = v < h.rem ? 2 * v : v + h.rem;
        int hi = v < h.rem ? 2 * v + 2 : v + h.rem + 1;
        vdispl[v] = b.first[lo];
        vcount[v] = b.first[hi] - b.first[lo];
    }
    vdispl[h.p2] = total;
    h.vcount = vcount;
    h.vdispl = vdispl;
    halving_reduce_scatter(s, a, h, acc, total);
    if (r < 2 * h.rem) {
        if (r % 2 == 1) {
            if (b.count[r - 1] > 0) {
                s.send(t.w(r - 1), elem(acc, b.first[r - 1], type), b.count[r - 1], type);
            }
        } else if (b.count[r] > 0) {
            s.recv(t.w(r + 1), a.rbuf, b.count[r], type);
        }
    }
    if (r >= 2 * h.rem || r % 2 == 1) {
        s.copy(elem(acc, b.first[r], type), b.count[r], type, a.rbuf, b.count[r], type);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
