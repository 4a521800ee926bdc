// Neighbourhood collectives (MPI-3.1 7.6): Neighbor_allgather(v) and
// Neighbor_alltoall(v, w), linear: one receive from every in-neighbour,
// then one send to every out-neighbour, all posted in one round. Block k of
// the receive buffer comes from in-neighbour k, block k of the send buffer
// (alltoall forms; allgather sends the same buffer) goes to out-neighbour k,
// in the order of topo.h. MPI_PROC_NULL neighbours (off the edge of a
// non-periodic Cartesian dimension) are skipped: their blocks stay as they
// were.
//
// Matching. Between two ranks, the messages of one call pair up in posting
// order, which is the neighbour order on both sides: the i-th edge from A
// to B is B's i-th edge from A (graph and distributed-graph topologies;
// repeated edges included). On a periodic Cartesian dimension of size 1 or
// 2 one rank is both the - and the + neighbour, and the message a rank
// sends to its - neighbour must land in that rank's + slot: messages
// travelling in the + direction carry their own tag (Args::nbr_tag_up),
// so the two streams cannot cross.
//
// Cost: (in + out) * alpha + (bytes in + bytes out) * beta per rank, in
// one round; the topology bounds the degree, so there is nothing to gain
// from a tree.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {
namespace {

Block recv_block(const Args& a, int k)
{
    switch (a.coll) {
    case Coll::neighbor_allgatherv:
    case Coll::neighbor_alltoallv:
        return Block{elem(a.rbuf, static_cast<std::uint64_t>(a.rdispls[k]), a.rtype),
                     static_cast<std::uint64_t>(a.rcounts[k]), a.rtype};
    case Coll::neighbor_alltoallw:
        return Block{byte_at(a.rbuf, static_cast<std::uint64_t>(a.rdispls_bytes[k])),
                     static_cast<std::uint64_t>(a.rcounts[k]), a.rtypes[k]};
    default:
        return Block{elem(a.rbuf, static_cast<std::uint64_t>(k) * a.rcount, a.rtype), a.rcount,
                     a.rtype};
    }
}

Block send_block(const Args& a, int k)
{
    switch (a.coll) {
    case Coll::neighbor_allgather:
    case Coll::neighbor_allgatherv:
        return Block{a.sbuf, a.scount, a.stype};
    case Coll::neighbor_alltoallv:
        return Block{elem(a.sbuf, static_cast<std::uint64_t>(a.sdispls[k]), a.stype),
                     static_cast<std::uint64_t>(a.scounts[k]), a.stype};
    case Coll::neighbor_alltoallw:
        return Block{byte_at(a.sbuf, static_cast<std::uint64_t>(a.sdispls_bytes[k])),
                     static_cast<std::uint64_t>(a.scounts[k]), a.stypes[k]};
    default:
        return Block{elem(a.sbuf, static_cast<std::uint64_t>(k) * a.scount, a.stype), a.scount,
                     a.stype};
    }
}

} // namespace

int neighbor_linear(Schedule& s, const Args& a)
{
    const bool cart = a.nbr_tag_up >= 0;
    const int down = s.tag();    // travelling in the - direction (or every message)
    const int up = a.nbr_tag_up; // travelling in the + direction
    s.fence();
    for (int k = 0; k < a.nbr_in; ++k) {
        Block b = recv_block(a, k);
        if (a.nbr_src[k] < 0 || b.bytes() == 0) {
            continue;
        }
        // Cartesian: slot 2d is the - neighbour, whose message travels up.
        s.recv(a.nbr_src[k], b.mut(), b.count, b.type, cart ? (k % 2 == 0 ? up : down) : -1);
    }
    for (int k = 0; k < a.nbr_out; ++k) {
        Block b = send_block(a, k);
        if (a.nbr_dst[k] < 0 || b.bytes() == 0) {
            continue;
        }
        s.send(a.nbr_dst[k], b.buf, b.count, b.type, cart ? (k % 2 == 0 ? down : up) : -1);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
