// Allgather, recursive doubling: in the step of distance d = 1, 2, 4, ...
// rank v exchanges with v ^ d everything it has gathered so far (the blocks
// of its aligned group of d ranks), straight into the receive buffer.
//
// When p is not a power of two (p = p2 + rem), rank p2 + i first hands its
// block to rank i, and gets the whole result from it at the end; during the
// doubling, rank i < rem owns two blocks (i and p2 + i), so a group's blocks
// are two contiguous runs and each exchange is one or two messages.
//
// Cost: lg * alpha + (p - 1) n * beta for a power of two, plus 2 alpha and
// p n beta otherwise. For short and medium blocks.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

#include <algorithm>

namespace ulmpi::mpi::coll {

int allgather_recursive_doubling(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const int p2 = pow2_floor(p);
    const int rem = p - p2;
    s.fence();
    if (!a.in_place) {
        // No fence: the steps that send my block alone send it from the
        // send buffer, so they neither wait for this copy nor read the
        // receive buffer it writes.
        Block mine = gathered_block(a, r);
        s.copy(a.sbuf, a.scount, a.stype, mine.mut(), mine.count, mine.type);
    }
    // A run of blocks [first, last) of the receive buffer as one typed piece.
    auto run = [&](int first, int last) {
        Block b = gathered_block(a, first);
        b.count *= static_cast<std::uint64_t>(last - first);
        return b;
    };
    if (a.rcount * a.rtype->size == 0) {
        return MPI_SUCCESS;
    }
    if (r >= p2) {
        Block mine = my_send_block(a);
        s.send(t.w(r - p2), mine.buf, mine.count, mine.type);
        s.fence();
        // Everything else comes back from r - p2: blocks [0, r) and [r + 1, p).
        Block lo = run(0, r);
        s.recv(t.w(r - p2), lo.mut(), lo.count, lo.type);
        if (r + 1 < p) {
            Block hi = run(r + 1, p);
            s.recv(t.w(r - p2), hi.mut(), hi.count, hi.type);
        }
        s.fence();
        return MPI_SUCCESS;
    }
    if (r < rem) {
        Block extra = gathered_block(a, r + p2);
        s.recv(t.w(r + p2), extra.mut(), extra.count, extra.type);
        s.fence();
    }
    for (int d = 1; d < p2; d <<= 1) {
        int partner = r ^ d;
        int mine_g = r & ~(d - 1);
        int theirs_g = partner & ~(d - 1);
        // My group's runs, then the partner's, each [g, g + d) and
        // [g + p2, min(g + d, rem) + p2).
        Block out1 = d == 1 ? my_send_block(a) : run(mine_g, mine_g + d);
        Block in1 = run(theirs_g, theirs_g + d);
        s.recv(t.w(partner), in1.mut(), in1.count, in1.type);
        int in2_end = std::min(theirs_g + d, rem);
        if (theirs_g < in2_end) {
            Block in2 = run(theirs_g + p2, in2_end + p2);
            s.recv(t.w(partner), in2.mut(), in2.count, in2.type);
        }
        s.send(t.w(partner), out1.buf, out1.count, out1.type);
        int out2_end = std::min(mine_g + d, rem);
        if (mine_g < out2_end) {
            Block out2 = run(mine_g + p2, out2_end + p2);
            s.send(t.w(partner), out2.buf, out2.count, out2.type);
        }
        s.fence();
    }
    if (r < rem) {
        int extra = r + p2;
        Block lo = run(0, extra);
        s.send(t.w(extra), lo.buf, lo.count, lo.type);
        if (extra + 1 < p) {
            Block hi = run(extra + 1, p);
            s.send(t.w(extra), hi.buf, hi.count, hi.type);
        }
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
