// Collectives on one host through shared memory (blocking calls with little
// data: barrier, bcast, allreduce, allgather, alltoall, reduce_scatter and
// reduce_scatter_block).
//
// A communicator whose members all live on this host gets, on its first
// eligible call, a segment of its own: per member a `ready` and a `done`
// counter on 64-byte lines of their own, and per member four lines and
// four slots of `slot` bytes (call k of the communicator uses the set
// k % 4; a member's data of up to 56 bytes goes in its line after the call
// number, which then serves as its ready flag, so that the data comes in
// the cache line that announces it; more goes in its slot), and for
// bcast two rings: 32 slots, and 256 slots of 256 bytes for small data
// (each slot: the call number, then up to 248 bytes of data, so that small
// data comes in the same cache line as the flag that announces it).
// Call k at member m:
//   publish  m waits until every member's done >= k - 4 (nobody still reads
//            the slots of this set), copies its data, packed, into its
//            slot and stores ready[m] = k (release);
//   gather   m waits for ready[j] >= k of the members whose data it needs
//            and reads their slots (acquire);
//   done     m stores done[m] = k.
// So a call costs one copy in, one copy out and a cache-line hand-off per
// member, where point-to-point costs a message (descriptor, match,
// fragment) per step. Bcast's root returns once it has published, and may
// run 31 calls (255 with up to 256 bytes) ahead of the slowest reader: on
// an oversubscribed host every process then does many calls per time
// slice, as with eager messages.
//
// Waiting runs the engine's progress loop: it spins, then yields or sleeps
// when the host is oversubscribed (then a collective's wait yields at every
// poll from the first), and reads failure notices on the way. A
// member that failed (its link is down, or fault tolerance knows it failed)
// or a revoke ends the wait with MPIX_ERR_PROC_FAILED / MPIX_ERR_REVOKED;
// nobody waits for a dead member forever.
//
// Reductions combine the members' data in rank order at every member,
// x0 op (x1 op (... op x(p-1))), so non-commutative and user-defined ops keep
// their order and every member computes the same bits.
//
// Larger data (per member above coll_shm_max, up to coll_shm_large_max)
// goes in steps of up to coll_shm_chunk bytes per member (with more
// members than the host has CPUs coll_shm_chunk_oversubscribed) through a second
// part of the segment: kBigSets sets of p chunks and, for bcast, a ring of
// kBigRing chunks; each step takes a call number of its own, so the
// counters above order the steps as they order calls (shm_coll_large.cpp).
//
// Which calls: blocking, intracommunicator, 2..64 members all on this host,
// no replication and no FT-MPI mode, per-member data up to coll_shm_large_max
// bytes (alltoall, reduce_scatter: all blocks of a member together), reductions on a
// predefined type without padding, and no algorithm forced for the
// collective (ULMPI_COLL_<NAME>). The choice depends only on what every
// member knows alike, so all members take the same road.
//
// Setup. MPI_COMM_WORLD, when all its ranks run on one host, takes an area
// of the host's segment that the shm path reserved during the wire-up
// (reserve_world; paths/path.h): it exists at every member and is zeroed,
// so its first call costs what the next ones do. Any other communicator
// (and a spawned process's MPI_COMM_WORLD) sets up its own segment on its
// first eligible call (collective, over point-to-point): member 0 creates the segment and
// broadcasts its name, every member attaches, all agree on success (a MIN
// reduction) and member 0 removes the name, so nothing is left in /dev/shm
// however the job ends. When setup fails anywhere, the communicator keeps
// using point-to-point.
#pragma once

#include "mpi/coll/coll.h"
#include "paths/path.h"
#include "runtime/shm_segment.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace ulmpi::mpi::coll {

// The flags of a segment: loads acquire, stores release.
inline std::uint64_t flag_load(const std::uint64_t* p)
{
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(p))
        .load(std::memory_order_acquire);
}

inline void flag_store(std::uint64_t* p, std::uint64_t v)
{
    std::atomic_ref<std::uint64_t>(*p).store(v, std::memory_order_release);
}

class ShmColl {
public:
    // Slot sets: call k uses set k % kSets, so a member may run kSets - 1
    // calls ahead of the slowest reader (bcast's root) before it waits.
    static constexpr std::uint64_t kSets = 4;
    // Big slot sets (step k of a large call uses set k % kBigSets) and
    // bcast's big ring (kBigRing chunks; its root may run that far ahead).
    static constexpr std::uint64_t kBigSets = 4;
    static constexpr std::uint64_t kBigRing = 16;

    ~ShmColl();
    ShmColl(const ShmColl&) = delete;
    ShmColl& operator=(const ShmColl&) = delete;

    // Whether this blocking call goes through shared memory on c (sets the
    // communicator up on first use; false when it cannot be set up).
    static bool takes(Comm* c, const Args& a);
    // Runs the call (takes() said yes); MPI_SUCCESS or an error class.
    static int run(Comm* c, const Args& a);
    // At MPI_Init, before the wire-up: asks the paths to reserve
    // MPI_COMM_WORLD's segment in the host's shared memory when the whole
    // job runs on this host (then its first collective needs no setup).
    static void reserve_world(const rt::JobInfo& job,
                              std::vector<std::unique_ptr<path::Path>>& paths);
    // After the wire-up: maps the pages of that area that every call
    // touches, so that the first calls take no page faults.
    static void map_world();
    // The end of MPI_Init, where that area exists: a barrier of
    // MPI_COMM_WORLD through it (as Open MPI and MPICH end MPI_Init with a
    // fence), so that the ranks leave MPI_Init together and the first
    // collective does not also wait for the last rank out of MPI_Init.
    static void world_barrier();

private:
    ShmColl() = default;
    static std::unique_ptr<ShmColl> create(Comm* c, std::uint64_t slot);
    static std::uint64_t slot_bytes(); // coll_shm_max, whole lines
    static std::byte* world_area(Comm* c, std::uint64_t size);
    static bool has_world_area();

    std::uint64_t* ready(int j) const;
    std::uint64_t* done(int j) const;
    std::byte* slot(int j) const; // of the current call's set
    // Member j's line of the current call's set: the call number, then up
    // to kLine - 8 bytes of data, so that small data comes in the cache
    // line of the flag that announces it.
    std::byte* line(int j) const;
    // The current call's data of member j and the flag that says it is
    // there: in j's line (in_line_) or in its slot and ready counter.
    std::byte* data(int j) const;
    std::uint64_t* flag(int j) const;
    void publish(); // my flag = seq_ (release): my data is there
    std::byte* ring_slot(std::uint64_t bytes) const; // bcast's slot of the current call
    // Large data (shm_coll_large.cpp): member j's chunk of the big slot set
    // of step `seq`, and bcast's big ring slot of step `seq`.
    std::byte* big_slot(int j, std::uint64_t seq) const;
    std::byte* big_ring_slot(std::uint64_t seq) const;
    // More members than the host has online CPUs: the same answer at every
    // member of a communicator on one host (and at every process that maps
    // MPI_COMM_WORLD's area), so that it may choose protocols and sizes.
    static bool crowded(std::uint64_t p);
    static std::uint64_t chunk_bytes(std::uint64_t p); // 0: no large calls
    static bool large(const Args& a); // per-member data above coll_shm_max
    // Waits until pred() holds; an error class when a member failed or c
    // was revoked meanwhile.
    template <class Pred> int wait(Comm* c, Pred&& pred);
    int wait_all_ready(Comm* c);
    // Every member's done >= seq_ - depth (the slot sets or a ring).
    int wait_free(Comm* c, std::uint64_t depth);
    void finish();          // done[me] = seq_

    int barrier(Comm* c);
    int bcast(Comm* c, const Args& a);
    int allreduce(Comm* c, const Args& a);
    int publish_vector(Comm* c, const Args& a);
    void reduce_slots(const Args& a, std::uint64_t off);
    int allgather(Comm* c, const Args& a);
    int alltoall(Comm* c, const Args& a);
    int reduce_scatter(Comm* c, const Args& a); // and _block
    // Waits until member j raised its ready counter to seq_.
    int wait_ready(Comm* c, int j);
    // Reduces elements [lo, hi) of the step's big slots (set of step s)
    // in rank order into out; my own operand from `own` when not nullptr
    // (then my slot need not hold that part).
    int reduce_big(Comm* c, std::uint64_t s, std::uint64_t lo, std::uint64_t hi, void* out,
                   const std::byte* own, const Args& a);
    int bcast_large(Comm* c, const Args& a);
    int allreduce_large(Comm* c, const Args& a);
    int allgather_large(Comm* c, const Args& a);
    int alltoall_large(Comm* c, const Args& a);
    int reduce_scatter_large(Comm* c, const Args& a);
    // Single copy (shm_coll_direct.cpp): allgather and alltoall read each
    // other's buffers through the shm path's get() (process_vm_readv).
    bool direct_size(const Args& a) const; // the same answer at every member
    int allgather_direct(Comm* c, const Args& a);
    int alltoall_direct(Comm* c, const Args& a);
    // Publishes a key to my `bytes` at `buf` (nullptr: not readable) and
    // waits for every member's; true in *all_ok when every member published one.
    int publish_key(Comm* c, const std::byte* buf, std::uint64_t bytes, bool* all_ok);
    int read_direct(Comm* c, int j, std::uint64_t off, std::byte* to, std::uint64_t bytes);
    int end_direct(Comm* c, int err); // nobody reads my buffer any more

    rt::ShmSegment seg_;
    std::byte* base_ = nullptr;
    std::uint64_t slot_ = 0;
    std::uint64_t chunk_ = 0; // per-member bytes of a big slot (0: none)
    path::Path* direct_ = nullptr; // the shm path when it offers get()
    int p_ = 0;
    int me_ = 0;
    std::uint64_t seq_ = 0; // calls so far (the current one while it runs)
    bool in_line_ = false;  // the current call's data goes in lines
    std::uint64_t free_upto_ = 0; // every member's done was >= this
};

} // namespace ulmpi::mpi::coll
