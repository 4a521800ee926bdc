// Allgather and Allgatherv, ring: in step k every rank passes the block it
// received in step k - 1 (its own in step 0) to its right neighbour and
// receives the next one from its left, straight into the receive buffer.
//
// Cost: (p - 1) * (alpha + n * beta). Bandwidth-optimal, latency linear in
// p; for long blocks. Empty blocks (Allgatherv) are skipped.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int allgather_ring(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    s.fence();
    if (!a.in_place) {
        // In the first round, beside the exchange: that one sends my block
        // from the send buffer, so it neither waits for this copy nor
        // reads the receive buffer the copy writes.
        Block mine = gathered_block(a, r);
        s.copy(a.sbuf, a.scount, a.stype, mine.mut(), mine.count, mine.type);
    }
    const int left = t.w(mod(r - 1, p));
    const int right = t.w((r + 1) % p);
    for (int k = 0; k < p - 1; ++k) {
        Block out = k == 0 ? my_send_block(a) : gathered_block(a, mod(r - k, p));
        Block in = gathered_block(a, mod(r - k - 1, p));
        if (in.bytes() > 0) {
            s.recv(left, in.mut(), in.count, in.type);
        }
        if (out.bytes() > 0) {
            s.send(right, out.buf, out.count, out.type);
        }
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
