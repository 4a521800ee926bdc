// Layout of the host's shared segment (one per host and job, named
// /dev/shm/ulmpi-<jobid>-<node>):
//
//   header page
//   region of local rank 0 | region of local rank 1 | ...
//   shared area (when the layers above reserved one: path.h)
//
// A region belongs to its rank (the sender): it holds the FIFOs towards every
// local receiver, the rank's doorbell (see below) and its fragment buffers in
// two size classes. The segment is sparse: a page exists only once someone
// touches it, and the owner touches its FIFOs and buffers first (it writes
// them before anyone reads), so they sit on the owner's NUMA node and a
// rank's resident memory grows with the peers it talks to, not with the job.
//
// Doorbell. A receiver does not poll the FIFO of every local rank (that
// would cost a cache line, and a page of resident memory, per rank of the
// host on every poll): it polls only the FIFOs of the peers that have
// announced themselves. Before its first fragment to a receiver, a sender
// sets its bit in the receiver's doorbell and bumps the doorbell's `rings`
// counter; the receiver reads `rings` on every poll (one line that changes
// only when a new sender comes) and, when it moved, adds the new bits'
// FIFOs to the ones it polls. Setting a bit twice is harmless, so a
// replaced process (FT-MPI REBUILD) just announces itself again. The
// doorbell's head also carries the owner's pid and the address of a word a
// peer reads to learn whether single copy works (no bootstrap key: every
// rank would otherwise receive every other rank's probe at the fence).
#pragma once

#include "paths/shm/shm_fifo.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ulmpi::path::shm {

inline constexpr std::uint64_t kSegMagic = 0x756c6d7069736d32ULL; // "ulmpism2"

struct alignas(kSlotBytes) DoorbellHead {
    std::atomic<std::uint64_t> rings; // bumped after a sender sets its bit
    // Written by the owner in connect(), read by a peer after the next
    // fence: where a peer tests whether it may read the owner's memory
    // (process_vm_readv; 0: no process holds this region).
    std::atomic<std::uint64_t> pid;
    std::atomic<std::uint64_t> probe_addr;
};
static_assert(sizeof(DoorbellHead) == kSlotBytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

struct SegHeader {
    std::uint64_t magic;
    std::uint32_t local_size;
    std::uint32_t fifo_slots;
    std::uint64_t region_bytes;
    std::uint64_t area_bytes;
};

struct SegmentLayout {
    std::uint32_t local_size = 0;
    std::uint32_t fifo_slots = 64;    // per FIFO, power of two
    std::uint32_t small_count = 128;  // fragment buffers per rank
    std::uint32_t small_bytes = 0;    // bytes per small buffer (header + payload)
    std::uint32_t large_count = 32;
    std::uint32_t large_bytes = 0;
    std::size_t area_bytes = 0;       // the shared area, whole pages (0: none)

    static constexpr std::size_t kPage = 4096;
    static constexpr std::size_t round(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

    std::size_t fifo_size() const { return fifo_bytes(fifo_slots); }
    std::size_t fifos_size() const { return round(fifo_size() * local_size, kPage); }
    // Doorbell: the head, then one bit per local rank in 64-bit words.
    std::size_t doorbell_words() const { return (std::size_t{local_size} + 63) / 64; }
    std::size_t doorbell_size() const
    {
        return round(sizeof(DoorbellHead) + doorbell_words() * sizeof(std::uint64_t), kPage);
    }
    std::size_t smalls_size() const { return round(std::size_t{small_bytes} * small_count, kPage); }
    std::size_t larges_size() const { return round(std::size_t{large_bytes} * large_count, kPage); }
    std::size_t region_size() const
    {
        return fifos_size() + doorbell_size() + smalls_size() + larges_size();
    }
    std::size_t header_size() const { return kPage; }
    std::size_t total_size() const
    {
        return header_size() + region_size() * local_size + area_bytes;
    }
    std::size_t area_offset() const { return header_size() + region_size() * local_size; }

    std::size_t region_offset(std::uint32_t local) const { return header_size() + region_size() * local; }
    // FIFO written by `sender`, read by `receiver` (lives in the sender's region).
    std::size_t fifo_offset(std::uint32_t sender, std::uint32_t receiver) const
    {
        return region_offset(sender) + fifo_size() * receiver;
    }
    // The doorbell of `receiver` (in its own region).
    std::size_t doorbell_offset(std::uint32_t receiver) const
    {
        return region_offset(receiver) + fifos_size();
    }
    // Fragment buffer `index` of class `cls` (0 small, 1 large) owned by `owner`.
    std::size_t frag_offset(std::uint32_t owner, std::uint32_t cls, std::uint32_t index) const
    {
        std::size_t base = region_offset(owner) + fifos_size() + doorbell_size();
        if (cls == 0) {
            return base + std::size_t{small_bytes} * index;
        }
        return base + smalls_size() + std::size_t{large_bytes} * index;
    }
};

// Slot payload of a frag_ref / frag_return entry.
struct FragRef {
    std::uint32_t cls;
    std::uint32_t index;
    std::uint32_t len;   // bytes used (frag_ref only)
    std::uint32_t pad;
};

} // namespace ulmpi::path::shm
