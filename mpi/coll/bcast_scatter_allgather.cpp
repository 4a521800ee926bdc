// Bcast, scatter + allgather (van de Geijn): the message is cut into p
// chunks, scattered down a binomial tree (relative to the root), and put
// back together everywhere by a ring allgather.
//
// Cost: (lg + p - 1) * alpha + 2 (p - 1)/p * n * beta. Bandwidth-optimal
// for long messages on many ranks with independent links; on a
// shared-memory host with few cores the extra copies can cost more than
// the pipelining wins (see docs/collectives.md).
//
// Works on the packed bytes of the message: in place for a contiguous
// datatype, else through a scratch copy (packed at the root first,
// unpacked everywhere else at the end).
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

#include <algorithm>

namespace ulmpi::mpi::coll {

int bcast_scatter_allgather(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int vr = mod(t.rank - a.root, p);
    const std::uint64_t n = a.rcount * a.rtype->size;
    auto real = [&](int v) { return t.w((v + a.root) % p); };
    const Datatype* bt = byte_type();
    s.fence();
    if (n == 0) {
        return MPI_SUCCESS;
    }
    ulm::DataRef ref = a.rtype->ref(a.rbuf, a.rcount);
    std::byte* buf = ref.contiguous_base();
    const bool packed = buf == nullptr;
    if (packed) {
        buf = static_cast<std::byte*>(s.scratch(n));
        if (vr == 0) {
            s.copy(a.rbuf, a.rcount, a.rtype, buf, n, bt);
            s.fence();
        }
    }
    const std::uint64_t chunk = (n + static_cast<std::uint64_t>(p) - 1) / static_cast<std::uint64_t>(p);
    // Bytes of chunks [first, last) (chunk indexes are relative ranks).
    auto span = [&](int first, int last) -> std::uint64_t {
        std::uint64_t lo = std::min(n, static_cast<std::uint64_t>(first) * chunk);
        std::uint64_t hi = std::min(n, static_cast<std::uint64_t>(std::min(last, p)) * chunk);
        return hi - lo;
    };
    auto at = [&](int first) { return buf + std::min(n, static_cast<std::uint64_t>(first) * chunk); };

    // Scatter: vr gets the chunks of its subtree [vr, vr + lowbit(vr)).
    int mask = 1;
    while (mask < p) {
        if ((vr & mask) != 0) {
            std::uint64_t len = span(vr, vr + mask);
            if (len > 0) {
                s.recv(real(vr - mask), at(vr), len, bt);
                s.fence();
            }
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        int child = vr + mask;
        if (child < p) {
            std::uint64_t len = span(child, child + mask);
            if (len > 0) {
                s.send(real(child), at(child), len, bt);
            }
        }
    }
    s.fence();

    // Ring allgather of the chunks.
    const int right = real(vr + 1);
    const int left = real(vr - 1 + p);
    for (int k = 0; k < p - 1; ++k) {
        int out = mod(vr - k, p);
        int in = mod(vr - k - 1, p);
        std::uint64_t out_len = span(out, out + 1);
        std::uint64_t in_len = span(in, in + 1);
        if (in_len > 0) {
            s.recv(left, at(in), in_len, bt);
        }
        if (out_len > 0) {
            s.send(right, at(out), out_len, bt);
        }
        s.fence();
    }
    if (packed && vr != 0) {
        s.copy(buf, n, bt, a.rbuf, a.rcount, a.rtype);
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
