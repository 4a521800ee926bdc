// Gather, binomial tree (relative to the root): every rank gathers the
// blocks of its subtree [vr, vr + lowbit(vr)) in a packed scratch buffer
// (its own first) and sends them to its parent in one message. The root
// receives each child's run of blocks straight into the receive buffer
// (through scratch when the run wraps past rank p - 1).
//
// Cost: lg * alpha + (p - 1)/p * p n * beta at the root; every message
// carries a whole subtree. Latency-optimal; for short blocks.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

#include <algorithm>

namespace ulmpi::mpi::coll {

int gather_binomial(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const int vr = mod(r - a.root, p);
    const bool root = r == a.root;
    const std::uint64_t nb = root ? a.rcount * a.rtype->size : a.scount * a.stype->size;
    const Datatype* bt = byte_type();
    auto real = [&](int v) { return (v + a.root) % p; };
    s.fence();
    if (nb == 0) {
        return MPI_SUCCESS;
    }
    const int sub = vr == 0 ? pow2_floor(p) * 2 : (vr & -vr);
    const int nsub = std::min(sub, p - vr);
    if (root) {
        if (!a.in_place) {
            Block mine = gathered_block(a, r);
            s.copy(a.sbuf, a.scount, a.stype, mine.mut(), mine.count, mine.type);
        }
        struct Wrap {
            std::byte* tmp;
            int first;
            int blocks;
        };
        Wrap wraps[32];
        int nwraps = 0;
        for (int m = 1; m < sub && vr + m < p; m <<= 1) {
            int c = vr + m;
            int blocks = std::min(c + m, p) - c;
            int first = real(c);
            if (first + blocks <= p) {
                s.recv(t.w(first), elem(a.rbuf, static_cast<std::uint64_t>(first) * a.rcount, a.rtype),
                       static_cast<std::uint64_t>(blocks) * a.rcount, a.rtype);
            } else {
                auto* tmp = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(blocks) * nb));
                s.recv(t.w(first), tmp, static_cast<std::uint64_t>(blocks) * nb, bt);
                wraps[nwraps++] = Wrap{tmp, first, blocks};
            }
        }
        s.fence();
        for (int i = 0; i < nwraps; ++i) {
            const Wrap& w = wraps[i];
            int head = p - w.first; // blocks up to rank p - 1, then from rank 0
            s.copy(w.tmp, static_cast<std::uint64_t>(head) * nb, bt,
                   elem(a.rbuf, static_cast<std::uint64_t>(w.first) * a.rcount, a.rtype),
                   static_cast<std::uint64_t>(head) * a.rcount, a.rtype);
            s.copy(w.tmp + static_cast<std::uint64_t>(head) * nb,
                   static_cast<std::uint64_t>(w.blocks - head) * nb, bt, a.rbuf,
                   static_cast<std::uint64_t>(w.blocks - head) * a.rcount, a.rtype);
        }
        s.fence();
        return MPI_SUCCESS;
    }
    const int parent = t.w(real(vr - sub));
    if (nsub == 1) {
        s.send(parent, a.sbuf, a.scount, a.stype);
        s.fence();
        return MPI_SUCCESS;
    }
    auto* tmp = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(nsub) * nb));
    s.copy(a.sbuf, a.scount, a.stype, tmp, nb, bt);
    for (int m = 1; m < sub && vr + m < p; m <<= 1) {
        int c = vr + m;
        int blocks = std::min(c + m, p) - c;
        s.recv(t.w(real(c)), tmp + static_cast<std::uint64_t>(m) * nb,
               static_cast<std::uint64_t>(blocks) * nb, bt);
    }
    s.fence();
    s.send(parent, tmp, static_cast<std::uint64_t>(nsub) * nb, bt);
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
