// Bcast, binomial tree. Ranks are renumbered relative to the root
// (vr = rank - root mod p); vr receives the whole message from vr - 2^k,
// 2^k its lowest set bit, then forwards it to vr + 2^j for every 2^j below
// that bit, largest subtree first.
//
// Cost: lg * (alpha + n * beta). Latency-optimal; the default for short
// messages, and on a few cores for long ones too (it moves the fewest bytes:
// p - 1 copies of the message).
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int bcast_binomial(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int vr = mod(t.rank - a.root, p);
    auto real = [&](int v) { return t.w((v + a.root) % p); };
    s.fence();
    int mask = 1;
    while (mask < p) {
        if ((vr & mask) != 0) {
            s.recv(real(vr - mask), a.rbuf, a.rcount, a.rtype);
            s.fence();
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < p) {
            s.send(real(vr + mask), a.rbuf, a.rcount, a.rtype);
        }
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
