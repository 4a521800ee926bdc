// The staging area of a replica's updates (docs/intra_parallelization.md,
// "Staging"). A sibling reads an update of a task straight from this
// process's memory (ULM's single copy, process_vm_readv on one host), and the
// kernel pins every page it reads: with the program's 4 KiB pages that
// pinning, not the copy, is most of the read's cost. So a large update is
// first packed (one copy of just-computed, cache-hot bytes) into an area this
// library owns, 2 MiB aligned and on transparent huge pages where the kernel
// allows (madvise), and sent from there: the sibling pins one page per 2 MiB.
// A section's sends all complete before it ends, so every section reuses
// the area from its start.
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
    // Only while no send from it is outstanding. False: no memory (the
    // caller sends from the program's memory instead).
    bool reserve(std::uint64_t bytes);
    std::byte* data() const { return base_; }
    std::uint64_t capacity() const { return cap_; }
    // Whether the kernel took the huge page advice for the area.
    bool huge() const { return huge_; }

    static constexpr std::uint64_t kHuge = std::uint64_t{2} << 20;

    // Bytes sent from the area, for intra_profile (counted by the sender).
    void count_sent(std::uint64_t bytes) { sent_ += bytes; }
    std::uint64_t sent() const { return sent_; }

private:
    void release();

    std::byte* base_ = nullptr; // kHuge aligned
    std::uint64_t cap_ = 0;     // a multiple of kHuge
    bool huge_ = false;
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
