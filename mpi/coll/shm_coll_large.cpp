// One-host shared-memory collectives for per-member data above
// coll_shm_max (shm_coll.h has the segment, the flags and the rules): the
// data goes through the big slots in steps of at most a chunk per member,
// and every step takes a call number of its own (allreduce: two), so the
// ready / done counters and the slot-set rotation of the small calls carry
// over unchanged. A member reuses the big set of step k only when every
// member's done says step k - kBigSets (and the second number of an
// allreduce step) is over, so members run up to three steps apart and the
// copies of one overlap the waits of another. Every member counts the same
// steps: they depend only on the call's size, which all members agree on.
//
//   bcast           the root packs chunk after chunk into bcast's big ring
//                   (kBigRing chunks: it returns once all are published,
//                   up to that far ahead of the slowest reader); readers
//                   unpack each as its flag shows.
//   allgather       per step every member packs its chunk into its slot,
//                   then unpacks the others' in the order they are ready.
//   alltoall        per step every member packs chunk/p bytes of each block
//                   into its slot, block j at j chunk/p; member m reads
//                   block m of every slot.
//   allreduce       per step (two numbers): every member copies its chunk
//                   of the vector into its slot; member m reduces part m of
//                   the chunk (1/p of it) over all slots in rank order, x0
//                   op (x1 op (... op x(p-1))), and writes the result into
//                   part m of its own slot (nobody else reads that part);
//                   once all have, each copies the parts of the others.
//                   Every member reduces 1/p of the data: p - 1 op passes
//                   over n/p bytes where the small form does p - 1 over n.
//   reduce_scatter  per step: every member copies its chunk of the vector
//                   into its slot and reduces the part of the chunk that
//                   falls in its own block, in rank order.
// Non-contiguous datatypes are packed and unpacked by byte position
// (bcast, allgather, alltoall); the reductions take plain predefined
// types only, as the small ones do. Waits are those of the small calls:
// a failed member or a revoke ends them with an error class.
#include "mpi/coll/shm_coll.h"

#include "mpi/coll/util.h"
#include "mpi/op.h"

#include <algorithm>
#include <cstring>

namespace ulmpi::mpi::coll {

namespace {

ulm::DataRef block_ref(void* buf, int j, std::uint64_t count, const Datatype* t)
{
    return t->ref(elem(buf, static_cast<std::uint64_t>(j) * count, t), count);
}

} // namespace

int ShmColl::bcast_large(Comm* c, const Args& a)
{
    const ulm::DataRef ref = a.rtype->ref(a.rbuf, a.rcount);
    for (std::uint64_t off = 0; off < a.bytes; off += chunk_) {
        seq_ += off != 0 ? 1 : 0;
        const std::uint64_t len = std::min(chunk_, a.bytes - off);
        std::byte* at = big_ring_slot(seq_);
        if (me_ == a.root) {
            if (int e = wait_free(c, kBigRing)) {
                return e;
            }
            ulm::pack(ref, off, at, len);
            flag_store(ready(me_), seq_);
        } else {
            if (int e = wait_ready(c, a.root)) {
                return e;
            }
            ulm::unpack(ref, off, at, len);
        }
        finish();
    }
    return MPI_SUCCESS;
}

int ShmColl::allgather_large(Comm* c, const Args& a)
{
    const ulm::DataRef mine = a.in_place ? block_ref(a.rbuf, me_, a.rcount, a.rtype)
                                         : a.stype->ref(a.sbuf, a.scount);
    for (std::uint64_t off = 0; off < a.bytes; off += chunk_) {
        seq_ += off != 0 ? 1 : 0;
        const std::uint64_t len = std::min(chunk_, a.bytes - off);
        if (int e = wait_free(c, kBigSets - 1)) {
            return e;
        }
        ulm::pack(mine, off, big_slot(me_, seq_), len);
        flag_store(ready(me_), seq_);
        // From my right neighbour on: the members do not all read one
        // slot at once.
        for (int k = 1; k < p_; ++k) {
            const int j = (me_ + k) % p_;
            if (int e = wait_ready(c, j)) {
                return e;
            }
            ulm::unpack(block_ref(a.rbuf, j, a.rcount, a.rtype), off, big_slot(j, seq_), len);
        }
        if (!a.in_place) {
            ulm::unpack(block_ref(a.rbuf, me_, a.rcount, a.rtype), off, big_slot(me_, seq_), len);
        }
        finish();
    }
    return MPI_SUCCESS;
}

int ShmColl::alltoall_large(Comm* c, const Args& a)
{
    const auto p = static_cast<std::uint64_t>(p_);
    const std::uint64_t piece = chunk_ / p / 64 * 64; // per block and step (>= 64)
    for (std::uint64_t off = 0; off < a.bytes; off += piece) {
        seq_ += off != 0 ? 1 : 0;
        const std::uint64_t len = std::min(piece, a.bytes - off);
        if (int e = wait_free(c, kBigSets - 1)) {
            return e;
        }
        std::byte* mine = big_slot(me_, seq_);
        for (int j = 0; j < p_; ++j) {
            const ulm::DataRef src = a.in_place ? block_ref(a.rbuf, j, a.rcount, a.rtype)
                                                : block_ref(const_cast<void*>(a.sbuf), j,
                                                            a.scount, a.stype);
            ulm::pack(src, off, mine + static_cast<std::uint64_t>(j) * piece, len);
        }
        flag_store(ready(me_), seq_);
        for (int k = 0; k < p_; ++k) {
            const int j = (me_ + k) % p_;
            if (int e = wait_ready(c, j)) {
                return e;
            }
            ulm::unpack(block_ref(a.rbuf, j, a.rcount, a.rtype), off,
                        big_slot(j, seq_) + static_cast<std::uint64_t>(me_) * piece, len);
        }
        finish();
    }
    return MPI_SUCCESS;
}

// out = x0 op (x1 op (... op x(p-1))) over elements [lo, hi) of the big
// slots of step s, waiting for each member's data of step seq_ in turn; my
// own operand from `own` when given.
int ShmColl::reduce_big(Comm* c, std::uint64_t s, std::uint64_t lo, std::uint64_t hi, void* out,
                        const std::byte* own, const Args& a)
{
    const std::uint64_t es = a.rtype->size;
    auto operand = [&](int j) -> const std::byte* {
        return j == me_ && own != nullptr ? own : big_slot(j, s) + lo * es;
    };
    if (int e = wait_ready(c, p_ - 1)) {
        return e;
    }
    std::memcpy(out, operand(p_ - 1), (hi - lo) * es);
    for (int j = p_ - 2; j >= 0; --j) {
        if (int e = wait_ready(c, j)) {
            return e;
        }
        op_apply(a.op, operand(j), out, hi - lo, a.rtype);
    }
    return MPI_SUCCESS;
}

int ShmColl::allreduce_large(Comm* c, const Args& a)
{
    const std::uint64_t es = a.rtype->size;
    const std::uint64_t per = chunk_ / es; // elements per step
    const auto p = static_cast<std::uint64_t>(p_);
    const auto* in = static_cast<const std::byte*>(a.in_place ? a.rbuf : a.sbuf);
    auto* out = static_cast<std::byte*>(a.rbuf);
    auto part = [&](std::uint64_t n, int j) { return n * static_cast<std::uint64_t>(j) / p; };
    for (std::uint64_t e0 = 0; e0 < a.rcount; e0 += per) {
        seq_ += e0 != 0 ? 1 : 0;
        const std::uint64_t n = std::min(per, a.rcount - e0);
        const std::uint64_t s = seq_; // the step's set
        if (int e = wait_free(c, kBigSets - 1)) {
            return e;
        }
        std::byte* mine = big_slot(me_, s);
        const std::uint64_t lo = part(n, me_);
        const std::uint64_t hi = part(n, me_ + 1);
        // The others need all but my part; I read that from my input
        // (unless the input is the output: in place, all of it goes in).
        const std::byte* own = a.in_place ? nullptr : in + (e0 + lo) * es;
        if (own != nullptr) {
            std::memcpy(mine, in + e0 * es, lo * es);
            std::memcpy(mine + hi * es, in + (e0 + hi) * es, (n - hi) * es);
        } else {
            std::memcpy(mine, in + e0 * es, n * es);
        }
        flag_store(ready(me_), s);
        if (hi > lo) {
            if (int e = reduce_big(c, s, lo, hi, out + (e0 + lo) * es, own, a)) {
                return e;
            }
            std::memcpy(mine + lo * es, out + (e0 + lo) * es, (hi - lo) * es);
        }
        ++seq_; // the step's second number: the reduced parts are in place
        flag_store(ready(me_), seq_);
        for (int k = 1; k < p_; ++k) {
            const int j = (me_ + k) % p_;
            const std::uint64_t jl = part(n, j);
            const std::uint64_t jh = part(n, j + 1);
            if (int e = wait_ready(c, j)) {
                return e;
            }
            std::memcpy(out + (e0 + jl) * es, big_slot(j, s) + jl * es, (jh - jl) * es);
        }
        finish();
    }
    return MPI_SUCCESS;
}

int ShmColl::reduce_scatter_large(Comm* c, const Args& a)
{
    const std::uint64_t es = a.rtype->size;
    const std::uint64_t per = chunk_ / es;
    const std::uint64_t total = a.bytes / es;
    std::uint64_t first = 0; // my block's first element
    if (a.coll == Coll::reduce_scatter_block) {
        first = static_cast<std::uint64_t>(me_) * a.rcount;
    } else {
        for (int j = 0; j < me_; ++j) {
            first += static_cast<std::uint64_t>(a.rcounts[j]);
        }
    }
    const std::uint64_t last = first + a.rcount;
    const auto* in = static_cast<const std::byte*>(a.in_place ? a.rbuf : a.sbuf);
    auto* out = static_cast<std::byte*>(a.rbuf);
    for (std::uint64_t e0 = 0; e0 < total; e0 += per) {
        seq_ += e0 != 0 ? 1 : 0;
        const std::uint64_t n = std::min(per, total - e0);
        if (int e = wait_free(c, kBigSets - 1)) {
            return e;
        }
        // In place, the result overwrites the front of the vector: element
        // x of my block lands at x - first <= x, which this or an earlier
        // step has already copied into the slot. Otherwise the others need
        // all but my block's part, which I read from my input.
        const std::uint64_t lo = std::min(std::max(e0, first), e0 + n); // my part: [lo, hi)
        const std::uint64_t hi = std::max(lo, std::min(e0 + n, last));
        std::byte* mine = big_slot(me_, seq_);
        const std::byte* own = a.in_place ? nullptr : in + lo * es;
        if (own != nullptr) {
            std::memcpy(mine, in + e0 * es, (lo - e0) * es);
            std::memcpy(mine + (hi - e0) * es, in + hi * es, (e0 + n - hi) * es);
        } else {
            std::memcpy(mine, in + e0 * es, n * es);
        }
        flag_store(ready(me_), seq_);
        if (hi > lo) {
            if (int e = reduce_big(c, seq_, lo - e0, hi - e0, out + (lo - first) * es, own, a)) {
                return e;
            }
        }
        finish();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
