// Scatter, binomial tree (relative to the root), the mirror of the binomial
// gather: the root sends every child the run of blocks of its subtree (from
// the send buffer directly, or packed when the run wraps past rank p - 1),
// inner ranks receive their subtree packed and pass the children's parts
// on, largest subtree first.
//
// Cost: lg * alpha + (p - 1)/p * p n * beta at the root. For short blocks.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

#include <algorithm>

namespace ulmpi::mpi::coll {

int scatter_binomial(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const int vr = mod(r - a.root, p);
    const bool root = r == a.root;
    const std::uint64_t nb = root ? a.scount * a.stype->size : a.rcount * a.rtype->size;
    const Datatype* bt = byte_type();
    auto real = [&](int v) { return (v + a.root) % p; };
    s.fence();
    if (nb == 0) {
        return MPI_SUCCESS;
    }
    const int sub = vr == 0 ? pow2_floor(p) * 2 : (vr & -vr);
    const int nsub = std::min(sub, p - vr);
    int top = 1;
    while (top * 2 < sub) {
        top *= 2;
    }
    if (root) {
        for (int m = top; m >= 1; m >>= 1) {
            int c = vr + m;
            if (c >= p) {
                continue;
            }
            int blocks = std::min(c + m, p) - c;
            int first = real(c);
            if (first + blocks <= p) {
                s.send(t.w(first), elem(a.sbuf, static_cast<std::uint64_t>(first) * a.scount, a.stype),
                       static_cast<std::uint64_t>(blocks) * a.scount, a.stype);
            } else {
                auto* tmp = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(blocks) * nb));
                int head = p - first;
                s.copy(elem(a.sbuf, static_cast<std::uint64_t>(first) * a.scount, a.stype),
                       static_cast<std::uint64_t>(head) * a.scount, a.stype, tmp,
                       static_cast<std::uint64_t>(head) * nb, bt);
                s.copy(a.sbuf, static_cast<std::uint64_t>(blocks - head) * a.scount, a.stype,
                       tmp + static_cast<std::uint64_t>(head) * nb,
                       static_cast<std::uint64_t>(blocks - head) * nb, bt);
                s.send(t.w(first), tmp, static_cast<std::uint64_t>(blocks) * nb, bt);
            }
        }
        if (!a.in_place) {
            Block mine = scattered_block(a, r);
            s.copy(mine.buf, mine.count, mine.type, a.rbuf, a.rcount, a.rtype);
        }
        s.fence();
        return MPI_SUCCESS;
    }
    const int parent = t.w(real(vr - sub));
    if (nsub == 1) {
        s.recv(parent, a.rbuf, a.rcount, a.rtype);
        s.fence();
        return MPI_SUCCESS;
    }
    auto* tmp = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(nsub) * nb));
    s.recv(parent, tmp, static_cast<std::uint64_t>(nsub) * nb, bt);
    s.fence();
    for (int m = top; m >= 1; m >>= 1) {
        int c = vr + m;
        if (c >= p) {
            continue;
        }
        int blocks = std::min(c + m, p) - c;
        s.send(t.w(real(c)), tmp + static_cast<std::uint64_t>(m) * nb,
               static_cast<std::uint64_t>(blocks) * nb, bt);
    }
    s.copy(tmp, nb, bt, a.rbuf, a.rcount, a.rtype);
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
