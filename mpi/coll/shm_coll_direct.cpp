// One-host allgather and alltoall with large contiguous data in a single
// copy: every member publishes a key to its buffer (the shm path's
// make_rkey: its pid and the address) in its small slot, and every member
// reads the blocks it needs straight from the others' buffers with the shm
// path's get() (process_vm_readv), into its receive buffer. Then each
// raises its ready counter a second time (the call's second number: it
// reads nobody's buffer any more) and waits for everybody's before it
// returns, since the others may still be reading its buffer.
//
// Whether a call goes this way must be the same at every member, but the
// layout of the buffers is local (a derived type of the same signature may
// be strided at one member only), and so, in principle, is whether the
// kernel lets this process read the others: a member that cannot publishes
// no key, and when one key is missing every member falls back to the
// chunked copies of shm_coll_large.cpp after the first number. The size
// (coll_shm_direct_min per block and up) is known alike everywhere.
//
// A get() that fails (a member died under it) ends the call with an error
// class after the second number has been raised, so that nobody waits for
// this member.
#include "mpi/coll/shm_coll.h"

#include "mpi/coll/util.h"
#include "mpi/state.h"
#include "runtime/config.h"

#include <cstring>
#include <sys/uio.h>

namespace ulmpi::mpi::coll {

namespace {

const rt::SizeParam direct_min{
    "coll_shm_direct_min", 32u << 10,
    "one-host alltoall from 3 ranks with blocks of at least this many bytes (and above "
    "coll_shm_max per rank) reads the others' send buffers in a single copy "
    "(process_vm_readv) when the data is contiguous; 0: never"};

const rt::BoolParam allgather_direct_param{
    "coll_shm_allgather_direct", false,
    "one-host allgather above coll_shm_max and from coll_shm_direct_min per rank reads the "
    "others' buffers in a single copy (process_vm_readv) instead of copying through the "
    "shared segment (slower on the machine of docs/benchmarks.md)"};

const rt::BoolParam direct_crowded{
    "coll_shm_direct_crowded", false,
    "alltoall's single copy (coll_shm_direct_min) also on a communicator with more members "
    "than the host has online CPUs whose copies through the segment move at least "
    "coll_shm_direct_min per block and step, or take at most coll_shm_direct_crowded_steps "
    "steps (there the copies were faster)"};

const rt::SizeParam direct_crowded_steps{
    "coll_shm_direct_crowded_steps", 8,
    "on a communicator with more members than the host has online CPUs, alltoall copies "
    "through the segment instead of the single copy when that takes at most this many steps "
    "(0: only by coll_shm_direct_min per block and step)"};

// Address of a contiguous typed buffer, nullptr when it is not contiguous.
std::byte* contiguous(const void* buf, std::uint64_t count, const Datatype* t)
{
    return t->ref(buf, count).contiguous_base();
}

} // namespace

bool ShmColl::direct_size(const Args& a) const
{
    if (direct_min.get() == 0 || a.bytes < direct_min.get()) {
        return false;
    }
    // Measured (docs/benchmarks.md, 2026-11-28): at 2 ranks the copies
    // through the segment were faster up to 1 MiB, from 4 ranks on the single
    // copy was at 1 MiB (alltoall's copies take p times more steps); for
    // allgather the copies were faster everywhere. With more members than
    // CPUs the copies step by the larger oversubscribed chunk, and where
    // that gives each block at least coll_shm_direct_min per step they
    // were faster again (2 cores, 64 KiB - 1 MiB per pair: 4 ranks, 128
    // KiB per block and step, 0.27-0.59 of the single copy's time; 8
    // ranks, 32 KiB, 0.54-0.80 but one point 1.13). At 16 ranks (8 KiB
    // per block and step) the single copy is process_vm_readv's rate
    // (about 6 GB/s per core here, against 19 for memcpy), which the copies
    // beat while the call takes few steps, each of which needs every
    // member scheduled (OSU 5.3 under chrt, 12 and 16 ranks on 2 cores,
    // 32-64 KiB per pair, 4-8 steps: copies 0.60-0.81 of Open MPI's time,
    // the single copy 0.90-1.21; at 128 KiB, 16 steps, mixed; from 256
    // KiB both at about Open MPI's time, docs/benchmarks.md).
    if (a.coll == Coll::alltoall) {
        const auto p = static_cast<std::uint64_t>(p_);
        if (p_ < 3) {
            return false;
        }
        if (direct_crowded.get() || !crowded(p)) {
            return true;
        }
        const std::uint64_t piece = chunk_ / p / 64 * 64; // alltoall_large's step
        return piece < direct_min.get() && a.bytes > direct_crowded_steps.get() * piece;
    }
    return allgather_direct_param.get();
}

int ShmColl::publish_key(Comm* c, const std::byte* buf, std::uint64_t bytes, bool* all_ok)
{
    if (int e = wait_free(c, kSets)) {
        return e;
    }
    std::byte* at = slot(me_);
    std::uint64_t len = 0;
    if (buf != nullptr && direct_ != nullptr) {
        iovec iov{const_cast<std::byte*>(buf), bytes};
        len = direct_->make_rkey(&iov, 1, at + sizeof len, slot_ - sizeof len);
    }
    std::memcpy(at, &len, sizeof len);
    flag_store(ready(me_), seq_);
    if (int e = wait_all_ready(c)) {
        return e;
    }
    *all_ok = true;
    for (int j = 0; j < p_; ++j) {
        std::memcpy(&len, slot(j), sizeof len);
        *all_ok = *all_ok && len != 0;
    }
    return MPI_SUCCESS;
}

int ShmColl::read_direct(Comm* c, int j, std::uint64_t off, std::byte* to, std::uint64_t bytes)
{
    const std::byte* at = slot(j);
    std::uint64_t len = 0;
    std::memcpy(&len, at, sizeof len);
    iovec iov{to, bytes};
    const int w = c->local->world[static_cast<std::size_t>(j)];
    if (!direct_->get(w, at + sizeof len, len, off, &iov, 1).ok()) {
        return state().engine.peer_failed(w) ? MPIX_ERR_PROC_FAILED : MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

int ShmColl::end_direct(Comm* c, int err)
{
    ++seq_;
    flag_store(ready(me_), seq_);
    const int e = wait_all_ready(c);
    finish();
    return err != MPI_SUCCESS ? err : e;
}

int ShmColl::allgather_direct(Comm* c, const Args& a)
{
    const std::uint64_t n = a.bytes;
    auto block = [&](int j) {
        return contiguous(elem(a.rbuf, static_cast<std::uint64_t>(j) * a.rcount, a.rtype),
                          a.rcount, a.rtype);
    };
    std::byte* src = a.in_place ? block(me_) : contiguous(a.sbuf, a.scount, a.stype);
    std::byte* dst = contiguous(a.rbuf, a.rcount * static_cast<std::uint64_t>(p_), a.rtype);
    bool all = false;
    if (int e = publish_key(c, dst != nullptr ? src : nullptr, n, &all)) {
        return e;
    }
    if (!all) {
        ++seq_; // every member saw the same keys
        return allgather_large(c, a);
    }
    int err = MPI_SUCCESS;
    for (int k = 1; k < p_ && err == MPI_SUCCESS; ++k) {
        const int j = (me_ + k) % p_;
        err = read_direct(c, j, 0, block(j), n);
    }
    if (!a.in_place) {
        std::memcpy(block(me_), src, n);
    }
    return end_direct(c, err);
}

int ShmColl::alltoall_direct(Comm* c, const Args& a)
{
    const std::uint64_t n = a.bytes; // per block
    const auto p = static_cast<std::uint64_t>(p_);
    const auto um = static_cast<std::uint64_t>(me_);
    std::byte* src = contiguous(a.sbuf, a.scount * p, a.stype);
    std::byte* dst = contiguous(a.rbuf, a.rcount * p, a.rtype);
    bool all = false;
    if (int e = publish_key(c, dst != nullptr ? src : nullptr, n * p, &all)) {
        return e;
    }
    if (!all) {
        ++seq_;
        return alltoall_large(c, a);
    }
    int err = MPI_SUCCESS;
    for (int k = 1; k < p_ && err == MPI_SUCCESS; ++k) {
        const int j = (me_ + k) % p_;
        err = read_direct(c, j, um * n, dst + static_cast<std::uint64_t>(j) * n, n);
    }
    std::memcpy(dst + um * n, src + um * n, n);
    return end_direct(c, err);
}

} // namespace ulmpi::mpi::coll
