// Bcast, pipelined chain: the message is cut into segments of
// ULMPI_COLL_BCAST_SEGMENT bytes that flow down the chain root -> root+1 ->
// ... -> root-1; in round k a rank receives segment k and forwards segment
// k - 1, so all links are busy at once.
//
// Cost: (p - 2 + n/S) * (alpha + S * beta) for segment size S. Close to
// n * beta for long messages whatever p is, at the price of p - 1 rounds of
// start-up latency; for long messages on few ranks.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"
#include "runtime/config.h"

#include <algorithm>

namespace ulmpi::mpi::coll {
namespace {
const rt::SizeParam segment_param{"coll_bcast_segment", 128 * 1024,
                                  "segment size of the pipelined bcast (bytes)"};
} // namespace

int bcast_pipeline(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int vr = mod(t.rank - a.root, p);
    const std::uint64_t n = a.rcount * a.rtype->size;
    const Datatype* bt = byte_type();
    s.fence();
    if (n == 0 || p == 1) {
        return MPI_SUCCESS;
    }
    std::uint64_t seg = std::max<std::uint64_t>(segment_param.get(), 1024);
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
    const std::uint64_t nseg = (n + seg - 1) / seg;
    auto len = [&](std::uint64_t k) { return std::min(seg, n - k * seg); };
    const int left = t.w((mod(vr - 1, p) + a.root) % p);
    const int right = t.w((vr + 1 + a.root) % p);
    const bool last = vr == p - 1;
    if (vr == 0) {
        for (std::uint64_t k = 0; k < nseg; ++k) {
            s.send(right, buf + k * seg, len(k), bt);
            s.fence();
        }
    } else {
        for (std::uint64_t k = 0; k <= nseg; ++k) {
            if (k < nseg) {
                s.recv(left, buf + k * seg, len(k), bt);
            }
            if (k >= 1 && !last) {
                s.send(right, buf + (k - 1) * seg, len(k - 1), bt);
            }
            s.fence();
        }
    }
    if (packed && vr != 0) {
        s.copy(buf, n, bt, a.rbuf, a.rcount, a.rtype);
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
