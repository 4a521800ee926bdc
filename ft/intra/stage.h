// The staging area of a replica's updates (docs/intra_parallelization.md,
// "Staging"). A sibling on another host receives an update as any message;
// one on this host reads it straight from this process's memory (ULM's
// single copy). From the program's memory that read is process_vm_readv,
// which pins every page it reads (with 4 KiB pages most of its cost). So a
// large update is first packed (one copy of just-computed, cache-hot bytes)
// into an area this library owns and sent from there. The area is a memfd
// mapped MAP_SHARED and registered as shared (runtime/shared_region.h): the
// sibling's shared-memory path maps the same pages once and reads every
// later update with memcpy (paths/shm/shm_peer_maps.h). Where no memfd can
// be made it is private memory, 2 MiB aligned and on transparent huge pages
// where the kernel allows (madvise): process_vm_readv then pins one page per
// 2 MiB. Either way the update is read only after its message (sent once
// the bytes are all written) arrived, and the area is reused only once every
// read of it is acknowledged: a section's sends all complete before it ends,
// so every section reuses the area from its start. A process forked from
// this one (a re-created replica) shares the memfd's pages: it makes an area
// of its own before it stages anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ulmpi::intra {

// Offset of an update sent from the program's memory (not staged).
inline constexpr std::uint64_t kDirect = ~std::uint64_t{0};
// Alignment of each staged update in the area.
inline constexpr std::uint64_t kStageAlign = 64;

// Where a section's updates go, in the order they are sent: an update of at
// least `min` bytes (min > 0) is staged at the next aligned offset if it
// ends within `max` bytes of the area; any other is sent from the
// program's memory (kDirect). `bytes`: the area the staged ones need.
struct StagePlan {
    std::vector<std::uint64_t> offset;
    std::uint64_t bytes = 0;
};
StagePlan plan_stage(const std::vector<std::uint64_t>& sizes, std::uint64_t min, std::uint64_t max);

class Stage {
public:
    Stage() = default;
    ~Stage();
    Stage(const Stage&) = delete;
    Stage& operator=(const Stage&) = delete;

    // At least `bytes` of area (its contents are not kept when it grows).
    // Only while no send from it is outstanding. `share`: a shared memfd
    // when one can be made (else, or false: private memory). False: no
    // memory (the caller sends from the program's memory instead).
    bool reserve(std::uint64_t bytes, bool share = true);
    std::byte* data() const { return base_; }
    std::uint64_t capacity() const { return cap_; }
    // Whether the kernel took the huge page advice for the area.
    bool huge() const { return huge_; }
    // Whether the area is a shared memfd a sibling on this host maps.
    bool shared() const { return fd_ >= 0; }
    // Whether this process can make a shared area (tried once).
    static bool can_share();

    static constexpr std::uint64_t kHuge = std::uint64_t{2} << 20;

    // Bytes sent from the area, for intra_profile (counted by the sender).
    void count_sent(std::uint64_t bytes) { sent_ += bytes; }
    std::uint64_t sent() const { return sent_; }

private:
    void release();
    bool map_shared(std::uint64_t cap);
    bool map_private(std::uint64_t cap);

    std::byte* base_ = nullptr; // kHuge aligned
    std::uint64_t cap_ = 0;     // a multiple of kHuge
    bool huge_ = false;
    int fd_ = -1;               // the memfd of a shared area, else -1
    int owner_ = 0;             // the pid that made the area (a fork's child did not)
    bool share_failed_ = false; // no shared area could be made: private from then on
    std::uint64_t sent_ = 0;
};

// Whether staging pays on this machine: transparent huge pages in
// "madvise" mode, where the program's memory is on 4 KiB pages unless it
// asked otherwise and the area's advice is taken. ("always": the program's
// large arrays are mostly on huge pages already, and staging would only add
// a copy; "never": the area would be on 4 KiB pages too.) `text`: the
// contents of /sys/kernel/mm/transparent_hugepage/enabled.
bool thp_madvise_mode(const char* text);

// The staging area of this process's sections (a process has one
// intra::Section, mpi/state.h's; its sends all complete within a section).
Stage& process_stage();

} // namespace ulmpi::intra
