// Allgather and Allgatherv, linear: every rank sends its block to every
// other rank and receives theirs, all 2 (p - 1) messages posted at once.
//
// Cost: (p - 1) * (alpha + n * beta) per rank, one round. Few ranks only;
// simple reference for Allgatherv.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int allgather_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    s.fence();
    Block mine = gathered_block(a, r);
    if (!a.in_place) {
        s.copy(a.sbuf, a.scount, a.stype, mine.mut(), mine.count, mine.type);
    }
    for (int i = 1; i < p; ++i) {
        int j = mod(r - i, p);
        Block in = gathered_block(a, j);
        if (in.bytes() > 0) {
            s.recv(t.w(j), in.mut(), in.count, in.type);
        }
    }
    Block out = my_send_block(a);
    if (out.bytes() > 0) {
        for (int i = 1; i < p; ++i) {
            s.send(t.w((r + i) % p), out.buf, out.count, out.type);
        }
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
