// Where each peer's piece lives in the buffers of the rooted, gather and
// alltoall families, for the plain, v and w forms alike.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

Block gathered_block(const Args& a, int j)
{
    Block b;
    b.type = a.rtype;
    if (a.rcounts != nullptr) {
        b.buf = elem(a.rbuf, static_cast<std::uint64_t>(a.rdispls[j]), a.rtype);
        b.count = static_cast<std::uint64_t>(a.rcounts[j]);
    } else {
        b.buf = elem(a.rbuf, static_cast<std::uint64_t>(j) * a.rcount, a.rtype);
        b.count = a.rcount;
    }
    return b;
}

Block scattered_block(const Args& a, int j)
{
    Block b;
    b.type = a.stype;
    if (a.scounts != nullptr) {
        b.buf = elem(a.sbuf, static_cast<std::uint64_t>(a.sdispls[j]), a.stype);
        b.count = static_cast<std::uint64_t>(a.scounts[j]);
    } else {
        b.buf = elem(a.sbuf, static_cast<std::uint64_t>(j) * a.scount, a.stype);
        b.count = a.scount;
    }
    return b;
}

Block my_send_block(const Args& a)
{
    if (a.in_place) {
        return gathered_block(a, a.team.rank);
    }
    return Block{a.sbuf, a.scount, a.stype};
}

void a2a_blocks(Schedule& s, const Args& a, Block** send, Block** recv)
{
    int n = a.inter ? a.remote.size : a.team.size;
    auto* sb = static_cast<Block*>(s.scratch(sizeof(Block) * static_cast<std::size_t>(n)));
    auto* rb = static_cast<Block*>(s.scratch(sizeof(Block) * static_cast<std::size_t>(n)));
    for (int j = 0; j < n; ++j) {
        Block r;
        Block x;
        switch (a.coll) {
        case Coll::alltoallw:
            r = Block{byte_at(a.rbuf, static_cast<std::uint64_t>(a.rdispls[j])),
                      static_cast<std::uint64_t>(a.rcounts[j]), a.rtypes[j]};
            if (!a.in_place) {
                x = Block{byte_at(a.sbuf, static_cast<std::uint64_t>(a.sdispls[j])),
                          static_cast<std::uint64_t>(a.scounts[j]), a.stypes[j]};
            }
            break;
        case Coll::alltoallv:
            r = Block{elem(a.rbuf, static_cast<std::uint64_t>(a.rdispls[j]), a.rtype),
                      static_cast<std::uint64_t>(a.rcounts[j]), a.rtype};
            if (!a.in_place) {
                x = Block{elem(a.sbuf, static_cast<std::uint64_t>(a.sdispls[j]), a.stype),
                          static_cast<std::uint64_t>(a.scounts[j]), a.stype};
            }
            break;
        default:
            r = Block{elem(a.rbuf, static_cast<std::uint64_t>(j) * a.rcount, a.rtype), a.rcount,
                      a.rtype};
            if (!a.in_place) {
                x = Block{elem(a.sbuf, static_cast<std::uint64_t>(j) * a.scount, a.stype),
                          a.scount, a.stype};
            }
            break;
        }
        if (a.in_place) {
            // The data to send is what the receive buffer holds now.
            std::uint64_t bytes = r.bytes();
            void* copy = s.scratch(bytes);
            s.copy(r.buf, r.count, r.type, copy, bytes, byte_type());
            x = Block{copy, bytes, byte_type()};
        }
        sb[j] = x;
        rb[j] = r;
    }
    if (a.in_place) {
        s.fence();
    }
    *send = sb;
    *recv = rb;
}

} // namespace ulmpi::mpi::coll
