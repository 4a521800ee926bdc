// Barrier, binomial fan-in to rank 0 then fan-out from it (empty messages).
//
// Cost: 2 * lg * alpha on the critical path; 2 (p - 1) messages in all
// (dissemination sends p * lg). Useful where messages are expensive
// relative to latency, and as the reference the dissemination barrier is
// tested against.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int barrier_tree(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const Datatype* b = byte_type();
    const int r = t.rank;
    s.fence();
    // Fan-in: hear from every child (r + mask for mask below my lowest set
    // bit), then tell the parent.
    int mask = 1;
    while (mask < t.size) {
        if ((r & mask) != 0) {
            break;
        }
        if (r + mask < t.size) {
            s.recv(t.w(r + mask), nullptr, 0, b);
        }
        mask <<= 1;
    }
    s.fence();
    if (r != 0) {
        s.send(t.w(r - mask), nullptr, 0, b);
        s.recv(t.w(r - mask), nullptr, 0, b);
        s.fence();
    }
    // Fan-out: release the children.
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (r + mask < t.size) {
            s.send(t.w(r + mask), nullptr, 0, b);
        }
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
