// Reduce, binomial tree. A commutative op uses the tree relative to the
// root; a non-commutative one the tree rooted at rank 0, which keeps rank
// order (rank v combines its partial result for [v, v + 2^k) with its
// child's for [v + 2^k, ...) as acc op child), and rank 0 then sends the
// result to the root.
//
// Receives go into two alternating buffers so that no partial result is
// ever copied; at the root the last one is the receive buffer.
//
// Cost: lg * (alpha + n * beta + n * gamma). Latency-optimal; for short and
// medium messages.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int reduce_binomial(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const std::uint64_t count = a.rcount;
    const Datatype* type = a.rtype;
    const int troot = a.op->commutative ? a.root : 0;
    const int vr = mod(r - troot, p);
    const bool is_root = r == a.root;
    auto real = [&](int v) { return t.w((v + troot) % p); };
    s.fence();
    if (count == 0) {
        return MPI_SUCCESS;
    }
    const void* acc = is_root && a.in_place ? a.rbuf : a.sbuf;

    int children[32];
    int nchildren = 0;
    int mask = 1;
    while (mask < p && (vr & mask) == 0) {
        if (vr + mask < p) {
            children[nchildren++] = vr + mask;
        }
        mask <<= 1;
    }
    // Receive buffers: alternate between two, the last being the receive
    // buffer when this rank ends up with the final result.
    const bool final_here = r == troot && troot == a.root;
    void* bufs[2] = {nullptr, nullptr};
    bool last_is_rbuf = false;
    if (nchildren > 0) {
        bufs[0] = s.scratch_for(count, type);
        if (final_here && !(a.in_place && nchildren % 2 == 1)) {
            bufs[1] = a.rbuf;
            last_is_rbuf = true;
        } else {
            bufs[1] = nchildren > 1 ? s.scratch_for(count, type) : nullptr;
        }
    }
    for (int i = 0; i < nchildren; ++i) {
        // With last_is_rbuf, child nchildren-1 goes into bufs[1].
        void* x = last_is_rbuf ? bufs[(nchildren - 1 - i) % 2 == 0 ? 1 : 0] : bufs[i % 2];
        s.recv(real(children[i]), x, count, type);
        s.fence();
        s.reduce(acc, x, count, type, a.op);
        acc = x;
    }
    if (r != troot) {
        s.send(real(vr - (vr & -vr)), acc, count, type);
        s.fence();
        if (is_root) {
            s.recv(t.w(0), a.rbuf, count, type);
            s.fence();
        }
        return MPI_SUCCESS;
    }
    if (final_here) {
        s.copy(acc, count, type, a.rbuf, count, type);
    } else {
        s.send(t.w(a.root), acc, count, type);
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
