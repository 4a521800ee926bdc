// Alltoall, Alltoallv and Alltoallw, linear: all p - 1 receives, then all
// p - 1 sends (to r + 1, r + 2, ... so that receivers are spread), posted
// at once; the transport sorts them out.
//
// Cost: (p - 1) * (alpha + n * beta) per rank in one round: the most
// concurrency, at the price of many messages in flight. For medium blocks.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int alltoall_linear(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    s.fence();
    Block* out;
    Block* in;
    a2a_blocks(s, a, &out, &in);
    for (int k = 1; k < p; ++k) {
        int from = mod(r - k, p);
        if (in[from].bytes() > 0) {
            s.recv(t.w(from), in[from].mut(), in[from].count, in[from].type);
        }
    }
    for (int k = 1; k < p; ++k) {
        int to = (r + k) % p;
        if (out[to].bytes() > 0) {
            s.send(t.w(to), out[to].buf, out[to].count, out[to].type);
        }
    }
    s.copy(out[r].buf, out[r].count, out[r].type, in[r].mut(), in[r].count, in[r].type);
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
