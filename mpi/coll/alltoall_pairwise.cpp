// Alltoall, Alltoallv and Alltoallw, pairwise exchange: in step k = 1 .. p-1
// rank r sends its block for r + k and receives the block of r - k, one
// message each way per step; its own block is a local copy.
//
// Cost: (p - 1) * (alpha + n * beta). Bandwidth-friendly (one peer at a
// time, no congestion at any receiver); for long blocks.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int alltoall_pairwise(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    s.fence();
    Block* out;
    Block* in;
    a2a_blocks(s, a, &out, &in);
    s.copy(out[r].buf, out[r].count, out[r].type, in[r].mut(), in[r].count, in[r].type);
    s.fence();
    for (int k = 1; k < p; ++k) {
        int to = (r + k) % p;
        int from = mod(r - k, p);
        if (in[from].bytes() > 0) {
            s.recv(t.w(from), in[from].mut(), in[from].count, in[from].type);
        }
        if (out[to].bytes() > 0) {
            s.send(t.w(to), out[to].buf, out[to].count, out[to].type);
        }
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
